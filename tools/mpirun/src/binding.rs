//! Binding ranks to processors: the policy (`--bind-to`, or Open MPI's
//! default: core for up to 2 ranks on a node, package above, none when the
//! node is oversubscribed), `--cpu-set`, the computed CPU sets, the masks
//! applied in each child before it runs the program, and the
//! `--report-bindings` lines.

use crate::job::Job;
use oxmpi_topology::{
    binding_report, compute_bindings_with, report_line, BindPolicy, BindRequest, BindingReport,
    CpuList, PreparedBinding, ProcPlacement, Topology,
};

/// What to apply to each rank, and what to report.
pub struct Plan {
    /// Per rank (by rank number): the mask to apply, or `None` to leave the
    /// rank as mpirun is.
    pub masks: Vec<Option<PreparedBinding>>,
    /// Per rank: the CPUs it is bound to (all CPUs when unbound).
    pub cpus: Vec<CpuList>,
}

/// Computes the bindings of the local ranks of `job`.
pub fn plan(
    job: &Job,
    topology: &Topology,
    bind_to: Option<&str>,
    cpu_set: Option<&str>,
) -> Result<Plan, String> {
    let cpu_set = match cpu_set {
        Some(text) => Some(CpuList::parse(text).map_err(|e| format!("--cpu-set {text}: {e}"))?),
        None => own_cpus_if_restricted(topology),
    };
    let explicit = bind_to
        .map(|text| BindRequest::parse(text).map_err(|e| format!("--bind-to {text}: {e}")))
        .transpose()?;
    let size = job.procs.len();
    let mut masks: Vec<Option<PreparedBinding>> = vec![None; size];
    let mut cpus: Vec<CpuList> = vec![topology.cpus().clone(); size];
    for (node_index, node) in job.nodes.iter().enumerate() {
        if !node.local {
            continue;
        }
        let procs: Vec<&crate::job::Proc> =
            job.procs.iter().filter(|p| p.node == node_index).collect();
        if procs.is_empty() {
            continue;
        }
        let request = explicit.unwrap_or_else(|| {
            BindRequest::default_for(procs.len(), job.node_oversubscribed(node_index))
        });
        let placements: Vec<ProcPlacement> = procs
            .iter()
            .map(|p| ProcPlacement {
                local_rank: p.local_rank as usize,
                mapped_object: p.object.as_ref().and_then(crate::job::object_level),
            })
            .collect();
        let sets = compute_bindings_with(
            topology,
            &placements,
            request.policy,
            cpu_set.as_ref(),
            request.options,
        )
        .map_err(|e| format!("cannot bind the ranks on {}: {e}", node.name))?;
        for (p, set) in procs.iter().zip(sets) {
            let unbound = request.policy == BindPolicy::None && cpu_set.is_none();
            if !unbound && &set != topology.cpus() {
                masks[p.rank as usize] = Some(
                    PreparedBinding::new(&set)
                        .map_err(|e| format!("cannot bind rank {}: {e}", p.rank))?,
                );
            }
            cpus[p.rank as usize] = set;
        }
    }
    Ok(Plan { masks, cpus })
}

/// mpirun's own CPUs as logical indexes, when it may not use all of the
/// machine's (started under `taskset` or a restricted cpuset): ranks stay
/// within them.
fn own_cpus_if_restricted(topology: &Topology) -> Option<CpuList> {
    let own = oxmpi_topology::current_binding().ok()?;
    if own.includes(topology.cpus()) {
        return None;
    }
    let logical: CpuList = topology
        .hwthreads()
        .iter()
        .filter(|t| own.contains(t.os_index))
        .map(|t| t.logical_index)
        .collect();
    (!logical.is_empty()).then_some(logical)
}

/// Writes each local rank's binding into the job map (for `--display-map`):
/// `socket 0[core 1[hwt 0]]`, or `unbound`.
pub fn annotate(job: &mut Job, topology: &Topology, plan: &Plan) {
    for node in job.map.nodes.iter_mut() {
        for p in node.procs.iter_mut() {
            let local = job
                .procs
                .get(p.rank as usize)
                .is_some_and(|q| job.nodes[q.node].local);
            if !local {
                continue;
            }
            p.binding = Some(
                match binding_report(topology, &plan.cpus[p.rank as usize]) {
                    BindingReport::NotBound => "unbound".to_string(),
                    BindingReport::Bound { description, .. } => description,
                },
            );
        }
    }
}

/// The `--report-bindings` line of `rank`.
pub fn report(topology: &Topology, host: &str, rank: u32, cpus: &CpuList) -> String {
    report_line(host, std::process::id(), rank as usize, topology, cpus)
}
