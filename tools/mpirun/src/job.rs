//! The job: its programs (app contexts), the allocation, and where each
//! rank runs, as mapped by an rmaps component.
//!
//! Allocation (scheduler environment, hostfiles, `--host`, else this
//! machine) and the policy (`rmaps_base_mapping_policy` merged with
//! `--map-by`) come from the rmaps framework crate; the mapping is done by
//! the rmaps component selected for the job by the framework's selection
//! ([`selection::select`]): the usable components are tried from the
//! highest priority down (ppr 90, seq 60, round_robin 10 by default) and
//! the first that accepts the policy maps the job. `--map-by` also accepts
//! the policy names the usable components declare. Only local hosts can be
//! launched on; `--do-not-launch` maps any host names.

use crate::cli::{AppOptions, Cli};
use oxmpi_framework_rmaps::module::RmapsModuleRef;
use oxmpi_framework_rmaps::selection::{self, Candidate, DeclaredPolicy, PassedOver};
use oxmpi_framework_rmaps::{
    allocation, hosts, policy, AppHosts, Hostfile, JobMap, LocalHost, MapErrorKind, MapPolicy,
    MapRequest, ObjectRef, Resource, Topology,
};
use oxmpi_mca::log;
use oxmpi_mca::Mca;
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// One program of the job.
#[derive(Clone, Debug)]
pub struct App {
    /// Index in the MPMD list (0 for the first program).
    pub index: u32,
    /// Program and arguments, as given (not necessarily UTF-8).
    pub argv: Vec<OsString>,
    /// `-x` exports resolved to (name, value).
    pub exports: Vec<(OsString, OsString)>,
    /// Working directory.
    pub wdir: Option<PathBuf>,
}

/// A host of the job.
#[derive(Clone, Debug)]
pub struct Node {
    /// Host name.
    pub name: String,
    /// Whether it is this machine.
    pub local: bool,
    /// More ranks than slots on it (ranks there yield when idle).
    pub oversubscribed: bool,
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
    /// The object (core, package, ...) the mapper placed it on, if any.
    pub object: Option<ObjectRef>,
}

/// A mapped job.
#[derive(Debug)]
pub struct Job {
    /// Programs.
    pub apps: Vec<App>,
    /// Hosts with ranks.
    pub nodes: Vec<Node>,
    /// Ranks, in rank order.
    pub procs: Vec<Proc>,
    /// The map as the rmaps component returned it.
    pub map: JobMap,
}

impl Job {
    /// Total ranks.
    pub fn size(&self) -> u32 {
        self.procs.len() as u32
    }

    /// Processes of the job on `node`.
    pub fn local_size(&self, node: usize) -> u32 {
        self.procs.iter().filter(|p| p.node == node).count() as u32
    }

    /// Whether `node` has more of the job's ranks than slots.
    pub fn node_oversubscribed(&self, node: usize) -> bool {
        self.nodes[node].oversubscribed
    }
}

/// Resolves `-x VAR` (copied from mpirun's environment) and `-x VAR=VALUE`.
/// Names and values need not be UTF-8; they are passed on as given.
pub fn resolve_exports<S: AsRef<OsStr>>(specs: &[S]) -> Result<Vec<(OsString, OsString)>, String> {
    specs
        .iter()
        .map(|spec| {
            let spec = spec.as_ref();
            let bytes = spec.as_bytes();
            let shown = spec.to_string_lossy();
            match bytes.iter().position(|&b| b == b'=') {
                Some(0) => Err(format!("-x {shown}: missing the variable name before =")),
                Some(eq) => Ok((
                    OsStr::from_bytes(&bytes[..eq]).to_os_string(),
                    OsStr::from_bytes(&bytes[eq + 1..]).to_os_string(),
                )),
                None => std::env::var_os(spec).map(|v| (spec.to_os_string(), v)).ok_or_else(|| {
                    format!("-x {shown}: {shown} is not set in mpirun's environment; set it, or give a value with -x {shown}=VALUE")
                }),
            }
        })
        .collect()
}

/// The rmaps view of this machine's topology.
pub fn topology_summary(t: &oxmpi_topology::Topology) -> Topology {
    Topology::new(
        t.num_packages() as u32,
        t.num_numa_nodes() as u32,
        t.num_cores() as u32,
        t.num_hwthreads() as u32,
    )
}

fn policies(
    cli: &Cli,
    mca: &Mca,
    extra: &[&str],
) -> Result<(MapPolicy, Option<policy::RankBy>), String> {
    let text = |name: &str| {
        mca.value(name)
            .map(|r| r.text.clone())
            .filter(|t| !t.trim().is_empty())
    };
    let param = text("rmaps_base_mapping_policy")
        .map(|t| {
            policy::parse_default_mapping_policy_with(&t, extra)
                .map_err(|e| format!("rmaps_base_mapping_policy: {}", e.0))
        })
        .transpose()?;
    let from_cli = cli
        .map_by
        .as_deref()
        .map(|t| policy::parse_map_by_with(t, extra).map_err(|e| e.0))
        .transpose()?;
    let mut map_policy = MapPolicy::resolve(param.as_ref(), from_cli.as_ref());
    if cli.oversubscribe {
        map_policy.oversubscribe = Some(true);
    }
    let rank_by = match cli.rank_by.as_deref() {
        Some(t) => Some(policy::parse_rank_by(t).map_err(|e| e.0)?),
        None => text("rmaps_base_ranking_policy")
            .map(|t| {
                policy::parse_default_ranking_policy(&t)
                    .map_err(|e| format!("rmaps_base_ranking_policy: {}", e.0))
            })
            .transpose()?,
    };
    Ok((map_policy, rank_by))
}

fn app_hosts(app: &AppOptions) -> Result<AppHosts, String> {
    let hostfile = match &app.hostfile {
        Some(path) => {
            // Bounded: a FIFO, a device or a huge file is refused, not read.
            let text = oxmpi_mca::input_file::read_input_file(path, "hostfile")
                .map_err(|e| format!("{e}; the path was given with --hostfile"))?;
            Some(Hostfile::parse(path, &text).map_err(|e| e.0)?)
        }
        None => None,
    };
    let hosts = hosts::parse_host_items(&app.host).map_err(|e| e.0)?;
    Ok(AppHosts { hostfile, hosts })
}

/// Checks `--wdir` before anything starts, so a bad directory is blamed,
/// not the program.
fn check_wdir(dir: &std::path::Path) -> Result<(), String> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(format!(
            "--wdir {}: not a directory; give the directory the ranks should start in",
            dir.display()
        )),
        Err(e) => Err(format!(
            "--wdir {}: cannot use it as the working directory: {e}",
            dir.display()
        )),
    }
}

/// The usable rmaps components (the core's query, so the `rmaps`
/// selection parameter applies) and the policy names they declare.
pub struct Mappers {
    /// Usable components whose module could be read.
    pub candidates: Vec<Candidate>,
    /// Usable components whose module could not be read (already warned
    /// about).
    pub unusable: Vec<String>,
    /// The `--map-by` names the candidates declare.
    pub policies: Vec<DeclaredPolicy>,
}

impl Mappers {
    /// Opens the rmaps framework and queries its components; warns about
    /// a module that cannot be read and a policy name that is left out.
    pub fn query(mca: &Mca) -> Result<Mappers, String> {
        let mut fw = mca.open_framework("rmaps").map_err(|e| e.to_string())?;
        let mut candidates = Vec::new();
        let mut unusable = Vec::new();
        for c in fw.query() {
            let Some(priority) = c.priority else { continue };
            let component = mca
                .repository()
                .components
                .iter()
                .find(|l| l.framework == "rmaps" && l.name == c.name)
                .expect("queried components are loaded");
            match component.module::<RmapsModuleRef>() {
                Ok(module) => candidates.push(
                    Candidate::new(c.name.clone(), priority, *module)
                        .with_library(component.path.clone()),
                ),
                Err(e) => {
                    eprintln!("mpirun: warning: {e}");
                    unusable.push(c.name.clone());
                }
            }
        }
        fw.close();
        let (policies, problems) = selection::policy_names(&candidates);
        for p in problems {
            eprintln!("mpirun: warning: {p}");
        }
        Ok(Mappers {
            candidates,
            unusable,
            policies,
        })
    }

    /// The declared policy names.
    pub fn policy_names(&self) -> Vec<&str> {
        self.policies
            .iter()
            .map(|p| p.policy.name.as_str())
            .collect()
    }
}

/// Maps the job with the first usable rmaps component that accepts the
/// policy, trying them from the highest priority down. A component whose
/// `accepts` panicked is passed over with a warning naming it, its library
/// and the panic; one that could not read the policy (built against an
/// older interface) is passed over with a line at verbose level.
fn map_with_components(mappers: &Mappers, request: &MapRequest) -> Result<JobMap, String> {
    let chosen = selection::select(&mappers.candidates, &request.policy, |c, why| match why {
        PassedOver::Declined => log::log(
            "rmaps",
            &c.name,
            log::COMPONENT,
            &format!("declined: does not map by {}", request.policy.map_by),
        ),
        PassedOver::Failed(e) if e.kind == MapErrorKind::BadRequest => log::log(
            "rmaps",
            &c.name,
            log::COMPONENT,
            &format!(
                "declined: {}",
                selection::accepts_failure(c, &request.policy, e)
            ),
        ),
        PassedOver::Failed(e) => eprintln!(
            "mpirun: warning: {}",
            selection::accepts_failure(c, &request.policy, e)
        ),
    });
    let chosen = match chosen {
        Ok(c) => c,
        Err(e) => {
            let mut tried: Vec<String> = mappers
                .unusable
                .iter()
                .map(|n| format!("{n} (unusable)"))
                .collect();
            if !e.tried.is_empty() {
                tried.push(e.tried_list());
            }
            return Err(if tried.is_empty() {
                "no rmaps component is available to map the job; check `oxmpi_info --show-failed` and the rmaps parameter".into()
            } else {
                format!(
                    "no rmaps component maps by {} (tried: {})",
                    request.policy.map_by,
                    tried.join(", ")
                )
            });
        }
    };
    let name = &chosen.name;
    log::log(
        "rmaps",
        name,
        log::COMPONENT,
        &format!(
            "selected (priority {}) for --map-by {}",
            chosen.priority, request.policy.map_by
        ),
    );
    chosen.handle.map(request).map_err(|e| {
        if e.kind == MapErrorKind::ComponentFailed {
            format!(
                "rmaps component {} failed in map, so the job was not started: {}. This is a bug in the component: report it to its authors; --mca rmaps ^{name} maps the job with another component.",
                chosen.label(),
                e.message
            )
        } else {
            e.message
        }
    })
}

/// Builds and maps the job.
pub fn build(
    cli: &Cli,
    extra_apps: &[AppOptions],
    tune_exports: &[(OsString, OsString)],
    mca: &Mca,
    local_topology: Topology,
) -> Result<Job, String> {
    let all: Vec<&AppOptions> = std::iter::once(&cli.app).chain(extra_apps).collect();
    let mpmd = all.len() > 1;
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
        if app.np.is_none() && mpmd {
            return Err(format!(
                "give -n for each program of an MPMD job ({} has none)",
                app.command[0].to_string_lossy()
            ));
        }
        let mut exports = tune_exports.to_vec();
        exports.extend(resolve_exports(&all[0].export)?);
        if i > 0 {
            exports.extend(resolve_exports(&app.export)?);
        }
        let wdir = app.wdir.clone().or_else(|| all[0].wdir.clone());
        if let Some(dir) = &wdir {
            check_wdir(dir)?;
        }
        apps.push(App {
            index: i as u32,
            argv: app.command.clone(),
            exports,
            wdir,
        });
    }

    let mappers = Mappers::query(mca)?;
    let (map_policy, rank_by) = policies(cli, mca, &mappers.policy_names())?;
    let hosts: Vec<AppHosts> = all.iter().map(|a| app_hosts(a)).collect::<Result<_, _>>()?;
    // Scheduler variables are text; a variable that is not UTF-8 is none of them.
    let env: HashMap<String, String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let local = LocalHost {
        name: gethostname::gethostname().to_string_lossy().into_owned(),
        topology: local_topology,
    };
    let local_for_check = local.clone();
    let resolved = allocation::resolve(&allocation::AllocationRequest {
        env: &env,
        local,
        hwtcpus: map_policy.hwtcpus,
        apps: hosts,
    })
    .map_err(|e| e.0)?;
    let nps: Vec<Option<u32>> = all.iter().map(|a| a.np).collect();
    let mut request = MapRequest::new(resolved, &nps, map_policy);
    request.rank_by = rank_by;
    let map = map_with_components(&mappers, &request)?;

    let mut nodes = Vec::new();
    let mut procs = Vec::new();
    for mapped in map.nodes.iter().filter(|n| !n.procs.is_empty()) {
        let index = nodes.len();
        nodes.push(Node {
            name: mapped.name.clone(),
            local: local_for_check.is(&mapped.name),
            oversubscribed: mapped.oversubscribed,
        });
        for p in &mapped.procs {
            procs.push(Proc {
                rank: p.rank,
                app: p.app,
                node: index,
                local_rank: p.local_rank,
                object: p.object,
            });
        }
    }
    procs.sort_by_key(|p| p.rank);
    Ok(Job {
        apps,
        nodes,
        procs,
        map,
    })
}

/// The binding level of a mapped object.
pub fn object_level(object: &ObjectRef) -> Option<(oxmpi_topology::ObjectLevel, usize)> {
    use oxmpi_topology::ObjectLevel;
    let level = match object.kind {
        Resource::Hwthread => ObjectLevel::HwThread,
        Resource::Core => ObjectLevel::Core,
        Resource::Package => ObjectLevel::Package,
        Resource::Numa => ObjectLevel::Numa,
        Resource::Node => return None,
    };
    Some((level, object.index as usize))
}
