//! The job: its programs (app contexts), the allocation, and where each
//! rank runs.
//!
//! Until the rmaps framework lands, mapping is by slot (or by node with
//! `--map-by node`) over the hosts of `--host`/`--hostfile`, or the local
//! host with one slot per processor. Only local hosts can be launched on;
//! `--do-not-launch` maps any host names.
//!
//! Oversubscription: a host list given with `--host` or `--hostfile`
//! follows Open MPI (more ranks than slots is an error unless
//! `--oversubscribe` or `--map-by :OVERSUBSCRIBE`). With no host list the
//! local host may be oversubscribed (`mpirun -n 8 ./app` works on a
//! 2-core laptop, as with MPICH); `--map-by :NOOVERSUBSCRIBE` refuses it.
//! Oversubscribed ranks are told so (`mpi_yield_when_idle`, later).

use crate::cli::{AppOptions, Cli};
use oxmpi_framework_rmaps::hosts::{parse_host_option, parse_hostfile, HostEntry};
use std::path::PathBuf;

/// One program of the job.
#[derive(Clone, Debug)]
pub struct App {
    /// Index in the MPMD list (0 for the first program).
    pub index: u32,
    /// Program and arguments.
    pub argv: Vec<String>,
    /// Number of ranks.
    pub np: u32,
    /// `-x` exports resolved to (name, value).
    pub exports: Vec<(String, String)>,
    /// Working directory.
    pub wdir: Option<PathBuf>,
}

/// A host of the allocation.
#[derive(Clone, Debug)]
pub struct Node {
    /// Host name.
    pub name: String,
    /// Slots.
    pub slots: u32,
    /// Hard limit, `None` for unlimited.
    pub max_slots: Option<u32>,
    /// Whether it is this machine.
    pub local: bool,
}

/// Where one rank runs.
#[derive(Clone, Debug)]
pub struct Proc {
    /// Rank in MPI_COMM_WORLD.
    pub rank: u32,
    /// Its program.
    pub app: u32,
    /// Index into [`Job::nodes`].
    pub node: usize,
    /// Rank among the job's processes on that node.
    pub local_rank: u32,
}

/// A mapped job.
#[derive(Debug)]
pub struct Job {
    /// Programs.
    pub apps: Vec<App>,
    /// Hosts.
    pub nodes: Vec<Node>,
    /// Ranks, in rank order.
    pub procs: Vec<Proc>,
    /// Whether some node has more ranks than slots.
    pub oversubscribed: bool,
}

impl Job {
    /// Total ranks.
    pub fn size(&self) -> u32 {
        self.procs.len() as u32
    }

    /// Whether `node` has more of the job's ranks than slots.
    pub fn node_oversubscribed(&self, node: usize) -> bool {
        self.local_size(node) > self.nodes[node].slots
    }

    /// Processes of the job on `node`.
    pub fn local_size(&self, node: usize) -> u32 {
        self.procs.iter().filter(|p| p.node == node).count() as u32
    }
}

/// Names this machine answers to.
pub fn is_local_host(name: &str) -> bool {
    if matches!(name, "localhost" | "127.0.0.1" | "::1") {
        return true;
    }
    let me = gethostname::gethostname().to_string_lossy().into_owned();
    name == me || me.split('.').next() == Some(name) || name.split('.').next() == Some(me.as_str())
}

fn processors() -> u32 {
    std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1)
}

fn allocation(app: &AppOptions) -> Result<Option<Vec<HostEntry>>, String> {
    let mut hosts = Vec::new();
    if let Some(path) = &app.hostfile {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read hostfile {}: {e}", path.display()))?;
        hosts.extend(parse_hostfile(path, &text, processors()).map_err(|e| e.to_string())?);
    }
    if !app.host.is_empty() {
        hosts.extend(parse_host_option(&app.host).map_err(|e| e.to_string())?);
    }
    Ok((!hosts.is_empty()).then_some(hosts))
}

/// Resolves `-x VAR` (copied from mpirun's environment) and `-x VAR=VALUE`.
pub fn resolve_exports(specs: &[String]) -> Result<Vec<(String, String)>, String> {
    specs
        .iter()
        .map(|spec| match spec.split_once('=') {
            Some((name, value)) if !name.is_empty() => Ok((name.to_string(), value.to_string())),
            Some(_) => Err(format!("-x {spec}: missing the variable name before =")),
            None => std::env::var(spec).map(|v| (spec.clone(), v)).map_err(|_| {
                format!("-x {spec}: {spec} is not set in mpirun's environment; set it, or give a value with -x {spec}=VALUE")
            }),
        })
        .collect()
}

/// Builds and maps the job.
pub fn build(
    cli: &Cli,
    extra_apps: &[AppOptions],
    tune_exports: &[(String, String)],
) -> Result<Job, String> {
    let all: Vec<&AppOptions> = std::iter::once(&cli.app).chain(extra_apps).collect();
    let mpmd = all.len() > 1;

    // The allocation: the first app's hosts, then hosts of later apps.
    let mut nodes: Vec<Node> = Vec::new();
    for app in &all {
        for h in allocation(app)?.unwrap_or_default() {
            match nodes.iter_mut().find(|n| n.name == h.name) {
                Some(n) => {
                    n.slots = n.slots.max(h.slots);
                }
                None => nodes.push(Node {
                    local: is_local_host(&h.name),
                    name: h.name,
                    slots: h.slots,
                    max_slots: h.max_slots,
                }),
            }
        }
    }
    // With no host list the job runs on this machine, one slot per
    // processor, and may oversubscribe it (see docs/decisions.md).
    let implicit = nodes.is_empty();
    if implicit {
        nodes.push(Node {
            name: gethostname::gethostname().to_string_lossy().into_owned(),
            slots: processors(),
            max_slots: None,
            local: true,
        });
    }
    let total_slots: u32 = nodes.iter().map(|n| n.slots).sum();

    let mut apps = Vec::new();
    for (i, app) in all.iter().enumerate() {
        if app.command.is_empty() {
            return Err(if mpmd {
                format!(
                    "program {} of the MPMD job (after the {} ':') has no command",
                    i + 1,
                    i
                )
            } else {
                "no program given: usage is mpirun [OPTIONS] PROGRAM [ARGS...] (see mpirun --help)"
                    .into()
            });
        }
        let np = match app.np {
            Some(0) => {
                return Err(format!(
                    "-n 0 for {}: a program needs at least one rank",
                    app.command[0]
                ))
            }
            Some(n) => n,
            None if !mpmd => total_slots,
            None => {
                return Err(format!(
                    "give -n for each program of an MPMD job ({} has none)",
                    app.command[0]
                ))
            }
        };
        let mut exports = tune_exports.to_vec();
        exports.extend(resolve_exports(&all[0].export)?);
        if i > 0 {
            exports.extend(resolve_exports(&app.export)?);
        }
        apps.push(App {
            index: i as u32,
            argv: app.command.clone(),
            np,
            exports,
            wdir: app.wdir.clone().or_else(|| all[0].wdir.clone()),
        });
    }

    let requested: u32 = apps.iter().map(|a| a.np).sum();
    let (by_node, mut oversubscribe) = match cli.map_by.as_deref().map(str::to_ascii_lowercase) {
        None => (false, cli.oversubscribe || implicit),
        Some(policy) => {
            let mut parts = policy.split(':');
            let by_node = match parts.next().unwrap_or("") {
                "" | "slot" => false,
                "node" => true,
                other => {
                    return Err(format!(
                        "--map-by {other}: only slot and node mapping are available until the rmaps framework lands"
                    ))
                }
            };
            let mut over = cli.oversubscribe || implicit;
            for modifier in parts {
                match modifier {
                    "oversubscribe" => over = true,
                    "nooversubscribe" => over = false,
                    other => return Err(format!("--map-by {policy}: unknown modifier :{other}")),
                }
            }
            (by_node, over)
        }
    };
    if requested > total_slots && !oversubscribe {
        let hosts: Vec<String> = nodes
            .iter()
            .map(|n| format!("{} ({} slots)", n.name, n.slots))
            .collect();
        return Err(format!(
            "not enough slots: the job asks for {requested} ranks and the allocation has {total_slots} slots ({}). \
Give fewer ranks with -n, more slots with --host NAME:SLOTS or a hostfile, or allow more ranks than slots with --oversubscribe (or --map-by :OVERSUBSCRIBE).",
            hosts.join(", ")
        ));
    }
    let hard_limit: Option<u32> = nodes.iter().map(|n| n.max_slots).sum();
    if let Some(limit) = hard_limit {
        if requested > limit {
            return Err(format!(
                "the job asks for {requested} ranks but the hosts' max_slots allow only {limit}"
            ));
        }
    }
    oversubscribe |= requested > total_slots;

    // Map: by slot fills each node's slots in order; by node deals ranks
    // round-robin. Ranks beyond the slots go round-robin over the nodes.
    let mut count = vec![0u32; nodes.len()];
    let mut procs = Vec::with_capacity(requested as usize);
    let mut next_node = 0usize;
    for app in &apps {
        for _ in 0..app.np {
            let rank = procs.len() as u32;
            let node = if by_node {
                let n = next_node % nodes.len();
                next_node += 1;
                n
            } else {
                match (0..nodes.len()).find(|&i| count[i] < nodes[i].slots) {
                    Some(i) => i,
                    None => {
                        let n = next_node % nodes.len();
                        next_node += 1;
                        n
                    }
                }
            };
            procs.push(Proc {
                rank,
                app: app.index,
                node,
                local_rank: count[node],
            });
            count[node] += 1;
        }
    }
    let oversubscribed = oversubscribe && (0..nodes.len()).any(|i| count[i] > nodes[i].slots);
    Ok(Job {
        apps,
        nodes,
        procs,
        oversubscribed,
    })
}

/// The job map as text (`--display-map`).
pub fn display_map(job: &Job) -> String {
    let mut out = String::from(" ========================   JOB MAP   ========================\n");
    for (i, node) in job.nodes.iter().enumerate() {
        let max = node
            .max_slots
            .map(|m| m.to_string())
            .unwrap_or_else(|| "unlimited".into());
        out.push_str(&format!(
            "\n Data for node: {}\tslots: {}\tmax slots: {}\tnum procs: {}\n",
            node.name,
            node.slots,
            max,
            job.local_size(i)
        ));
        for p in job.procs.iter().filter(|p| p.node == i) {
            let app = &job.apps[p.app as usize];
            out.push_str(&format!(
                " \tProcess rank: {}\tapp: {} ({})\tlocal rank: {}\tbound: unbound\n",
                p.rank, p.app, app.argv[0], p.local_rank
            ));
        }
    }
    out.push_str("\n =============================================================\n");
    out
}

/// The job map as one JSON object (`--display-map=json`): `nodes`, each
/// with `name`, `slots`, `max_slots` (null when unlimited) and `procs`
/// (`rank`, `app`, `local_rank`).
pub fn display_map_json(job: &Job) -> String {
    let nodes: Vec<serde_json::Value> = job
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let procs: Vec<serde_json::Value> = job
                .procs
                .iter()
                .filter(|p| p.node == i)
                .map(|p| serde_json::json!({"rank": p.rank, "app": p.app, "local_rank": p.local_rank}))
                .collect();
            serde_json::json!({"name": n.name, "slots": n.slots, "max_slots": n.max_slots, "procs": procs})
        })
        .collect();
    let mut text = serde_json::json!({ "nodes": nodes }).to_string();
    text.push('\n');
    text
}
