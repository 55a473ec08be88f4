//! The allocation: which hosts a job may use, with how many slots.
//!
//! [`resolve`] takes it from, in order:
//!
//! 1. a batch scheduler's environment (Slurm, see [`crate::slurm`]). Then
//!    each app's `--hostfile` and `--host` are *exclusionary filters*: they
//!    pick hosts of the allocation, and a host outside it is an error (so
//!    nothing is launched);
//! 2. otherwise the apps' `--hostfile`/`--host` lists (*inclusionary*: they
//!    are the allocation). Within one app, `--host` given together with
//!    `--hostfile` filters the hostfile's hosts;
//! 3. otherwise the local host, with one slot per core (per hardware thread
//!    with `:HWTCPUS`).
//!
//! Slots of a host picked by a filter: the filter's explicit count (`--host
//! NAME:N`, where no `:N` means 1, or `slots=N` in a hostfile) capped at
//! what the allocation gives; a hostfile line without `slots=` takes the
//! allocation's count. When several apps of an MPMD job list the same host,
//! their slots add up (capped at the scheduler's count, if any).
//!
//! Everything here is pure: the caller reads hostfiles and passes the
//! environment in, so tests can fake a scheduler.

use crate::hostfile::Hostfile;
use crate::hosts::{same_host, HostIndex, HostItem};
use crate::topology::Topology;
use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;

/// One host of an allocation.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NodeSpec {
    /// Host name.
    pub name: String,
    /// Slots: processes that fit without oversubscribing.
    pub slots: u32,
    /// Hard limit on processes; `None` for unlimited (the default unless a
    /// hostfile gives `max_slots`).
    pub max_slots: Option<u32>,
    /// Whether someone gave the slot count (scheduler, `slots=`, `--host`),
    /// rather than it being the host's processor count.
    pub slots_given: bool,
    /// The host's hardware, when known; `None` means "assume the local
    /// host's" ([`crate::MapRequest::default_topology`]).
    pub topology: Option<Topology>,
}

/// Where the allocation came from (for messages and for the default
/// oversubscription rule).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum AllocationSource {
    /// A batch scheduler.
    Scheduler {
        /// Its name (`Slurm`).
        name: String,
        /// The variable that gave the host list, as `NAME=value`.
        detail: String,
    },
    /// A hostfile (the first one, in an MPMD job).
    Hostfile {
        /// Its path as given.
        path: PathBuf,
    },
    /// `--host` options.
    HostOption,
    /// No host list: the local host.
    Local,
}

impl fmt::Display for AllocationSource {
    /// A phrase for messages: `the Slurm allocation (SLURM_JOB_NODELIST=n[1-4])`,
    /// `hostfile my-hosts`, `--host`, `the local host`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AllocationSource::Scheduler { name, detail } => {
                write!(f, "the {name} allocation ({detail})")
            }
            AllocationSource::Hostfile { path } => write!(f, "hostfile {}", path.display()),
            AllocationSource::HostOption => f.write_str("--host"),
            AllocationSource::Local => f.write_str("the local host"),
        }
    }
}

/// The hosts a job may use.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Allocation {
    /// Hosts, each once, in order.
    pub nodes: Vec<NodeSpec>,
    /// Where they came from.
    pub source: AllocationSource,
    /// Host of every hostfile line / `--host` item / scheduler node, in
    /// order, repeats kept: what the seq mapper walks for apps without a
    /// host list of their own.
    pub sequence: Vec<String>,
}

impl Allocation {
    /// The local host alone: slots = its cores (hardware threads with
    /// `hwtcpus`), unlimited `max_slots`, its topology.
    pub fn local(host: &LocalHost, hwtcpus: bool) -> Allocation {
        Allocation {
            nodes: vec![NodeSpec {
                name: host.name.clone(),
                slots: host.topology.default_slots(hwtcpus),
                max_slots: None,
                slots_given: false,
                topology: Some(host.topology),
            }],
            source: AllocationSource::Local,
            sequence: vec![host.name.clone()],
        }
    }

    /// Sum of the nodes' slots.
    pub fn total_slots(&self) -> u64 {
        self.nodes.iter().map(|n| u64::from(n.slots)).sum()
    }

    /// Index of the node with exactly this name.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }
}

/// The machine mpirun runs on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalHost {
    /// Its host name.
    pub name: String,
    /// Its hardware (also assumed for hosts whose hardware is unknown).
    pub topology: Topology,
}

impl LocalHost {
    /// Whether `name` is this host (`localhost`, a loopback address, or the
    /// host name in short or long form).
    pub fn is(&self, name: &str) -> bool {
        matches!(name, "localhost" | "127.0.0.1" | "::1") || same_host(name, &self.name)
    }
}

/// One app's host options (each app of an MPMD job has its own).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AppHosts {
    /// `--hostfile`, already parsed.
    pub hostfile: Option<Hostfile>,
    /// `--host` items, in order ([`crate::hosts::parse_host_items`]).
    pub hosts: Vec<HostItem>,
}

impl AppHosts {
    /// Whether the app gave no host option.
    pub fn is_empty(&self) -> bool {
        self.hostfile.is_none() && self.hosts.is_empty()
    }
}

/// The hosts one app may use, out of the allocation.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HostFilter {
    /// Allocation node names, each once, in the order the app listed them.
    pub nodes: Vec<String>,
    /// Slots the app's own list gives each of `nodes` (what its `-n`
    /// defaults to); the node's slots in the allocation may be more when
    /// other apps list it too.
    pub slots: Vec<u32>,
    /// Allocation node name of every line/item of the app's list, in order
    /// (for the seq mapper).
    pub sequence: Vec<String>,
    /// Where this app's own list came from (its hostfile or `--host`), for
    /// messages; `None` under a scheduler, whose allocation is named.
    #[serde(default)]
    pub source: Option<AllocationSource>,
}

/// Everything [`resolve`] needs.
#[derive(Clone, Debug)]
pub struct AllocationRequest<'a> {
    /// The environment (scheduler variables are read from it).
    pub env: &'a HashMap<String, String>,
    /// This machine.
    pub local: LocalHost,
    /// `:HWTCPUS`: hosts without a slot count get one slot per hardware
    /// thread instead of per core.
    pub hwtcpus: bool,
    /// Host options of each app, in order (at least one app).
    pub apps: Vec<AppHosts>,
}

/// The allocation and what each app may use of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedHosts {
    /// The job's hosts.
    pub allocation: Allocation,
    /// Per app: its hosts, or `None` for all of the allocation.
    pub app_hosts: Vec<Option<HostFilter>>,
    /// Hardware to assume for nodes whose topology is unknown: the local
    /// host's.
    pub default_topology: Topology,
}

/// An allocation error: a host outside the allocation, a bad scheduler
/// variable, an empty host list. The message says where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllocError(pub String);

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for AllocError {}

/// A host an option asks for, with its explicit slot count.
struct Wanted {
    name: String,
    slots: Option<u32>,
    max_slots: Option<u32>,
    origin: String,
}

fn hostfile_wanted(hf: &Hostfile) -> Vec<Wanted> {
    hf.lines
        .iter()
        .map(|l| Wanted {
            name: l.name.clone(),
            slots: l.slots.or(l.max_slots),
            max_slots: l.max_slots,
            origin: format!("{}:{}", hf.path.display(), l.line),
        })
        .collect()
}

fn host_wanted(items: &[HostItem]) -> Vec<Wanted> {
    items
        .iter()
        .map(|i| Wanted {
            name: i.name.clone(),
            slots: Some(i.slots.unwrap_or(1)),
            max_slots: None,
            origin: "--host".into(),
        })
        .collect()
}

/// Names for a message, at most 8, then "and N more".
pub(crate) fn name_list<'a>(names: impl ExactSizeIterator<Item = &'a str>) -> String {
    let total = names.len();
    let shown: Vec<&str> = names.take(8).collect();
    let more = total - shown.len();
    let mut text = shown.join(", ");
    if more > 0 {
        text.push_str(&format!(" and {more} more"));
    }
    text
}

/// An app's hosts: nodes (with the app's slots) and its sequence.
struct AppList {
    nodes: Vec<NodeSpec>,
    sequence: Vec<String>,
    source: Option<AllocationSource>,
}

/// Picks the `wanted` hosts out of `base` (exclusionary filter).
fn filter(base: &AppList, base_desc: &str, wanted: &[Wanted]) -> Result<AppList, AllocError> {
    let mut index = HostIndex::default();
    for (i, n) in base.nodes.iter().enumerate() {
        index.insert(&n.name, i);
    }
    let mut picked: Vec<(usize, Option<u32>, Option<u32>)> = Vec::new();
    let mut picked_at: HashMap<usize, usize> = HashMap::new();
    let mut sequence = Vec::with_capacity(wanted.len());
    for w in wanted {
        let Some(b) = index.find(&w.name) else {
            return Err(AllocError(format!(
                "{}: host {} is not in {base_desc}, so nothing was launched; use hosts of {base_desc}: {}",
                w.origin,
                w.name,
                name_list(base.nodes.iter().map(|n| n.name.as_str()))
            )));
        };
        sequence.push(base.nodes[b].name.clone());
        match picked_at.get(&b) {
            Some(&k) => {
                let p = &mut picked[k];
                p.1 = p.1.zip(w.slots).map(|(a, b)| a.saturating_add(b));
                p.2 = p.2.zip(w.max_slots).map(|(a, b)| a.saturating_add(b));
            }
            None => {
                picked_at.insert(b, picked.len());
                picked.push((b, w.slots, w.max_slots));
            }
        }
    }
    let nodes = picked
        .into_iter()
        .map(|(b, slots, max)| {
            let mut node = base.nodes[b].clone();
            if let Some(s) = slots {
                node.slots = s.min(node.slots);
            }
            if let Some(m) = max {
                node.max_slots = Some(node.max_slots.map_or(m, |old| old.min(m)).max(node.slots));
            }
            node
        })
        .collect();
    Ok(AppList {
        nodes,
        sequence,
        source: None,
    })
}

/// Nodes with an index by host name.
#[derive(Default)]
struct NodeList {
    nodes: Vec<NodeSpec>,
    index: HostIndex,
}

impl NodeList {
    /// Adds `node`'s slots (merging a host already there).
    fn merge(&mut self, node: &NodeSpec) {
        match self.index.find(&node.name) {
            Some(i) => {
                let n = &mut self.nodes[i];
                n.slots = n.slots.saturating_add(node.slots);
                n.max_slots = n
                    .max_slots
                    .zip(node.max_slots)
                    .map(|(a, b)| a.saturating_add(b));
                n.slots_given |= node.slots_given;
                n.topology = n.topology.or(node.topology);
            }
            None => {
                self.index.insert(&node.name, self.nodes.len());
                self.nodes.push(node.clone());
            }
        }
    }
}

/// Builds the allocation and each app's hosts, as the module docs describe.
pub fn resolve(req: &AllocationRequest<'_>) -> Result<ResolvedHosts, AllocError> {
    if req.apps.is_empty() {
        return Err(AllocError("the job has no app".into()));
    }
    let local_topology = |name: &str| req.local.is(name).then_some(req.local.topology);
    let default_slots = req.local.topology.default_slots(req.hwtcpus);

    if let Some(sched) = crate::slurm::allocation_from_env(req.env)? {
        let base = AppList {
            source: None,
            nodes: sched.nodes.clone(),
            sequence: sched.sequence.clone(),
        };
        let base_desc = sched.source.to_string();
        let mut lists: Vec<Option<AppList>> = Vec::new();
        for app in &req.apps {
            let mut list: Option<AppList> = None;
            let mut desc = base_desc.clone();
            if let Some(hf) = &app.hostfile {
                list = Some(filter(&base, &base_desc, &hostfile_wanted(hf))?);
                desc = format!("hostfile {}", hf.path.display());
            }
            if !app.hosts.is_empty() {
                let within = list.as_ref().unwrap_or(&base);
                let picked = filter(within, &desc, &host_wanted(&app.hosts))?;
                list = Some(narrow_sequence(list.as_ref(), picked));
            }
            lists.push(list);
        }
        let any_unfiltered = lists.iter().any(Option::is_none);
        let mut nodes = sched.nodes.clone();
        if !any_unfiltered {
            let sched_index: HashMap<&str, usize> = sched
                .nodes
                .iter()
                .enumerate()
                .map(|(i, n)| (n.name.as_str(), i))
                .collect();
            let mut used = NodeList::default();
            for list in lists.iter().flatten() {
                for n in &list.nodes {
                    used.merge(n);
                }
            }
            nodes = used
                .nodes
                .into_iter()
                .map(|mut n| {
                    if let Some(b) = sched_index.get(n.name.as_str()).map(|&i| &sched.nodes[i]) {
                        n.slots = n.slots.min(b.slots);
                        n.max_slots = b.max_slots;
                    }
                    n
                })
                .collect();
        }
        for n in &mut nodes {
            n.topology = n.topology.or_else(|| local_topology(&n.name));
        }
        let allocation = Allocation {
            nodes,
            source: sched.source.clone(),
            sequence: sched.sequence.clone(),
        };
        return Ok(finish(allocation, lists, req.local.topology));
    }

    if req.apps.iter().all(AppHosts::is_empty) {
        return Ok(ResolvedHosts {
            allocation: Allocation::local(&req.local, req.hwtcpus),
            app_hosts: vec![None; req.apps.len()],
            default_topology: req.local.topology,
        });
    }

    let mut lists: Vec<Option<AppList>> = Vec::new();
    let mut source: Option<AllocationSource> = None;
    for app in &req.apps {
        let mut list: Option<AppList> = None;
        if let Some(hf) = &app.hostfile {
            let nodes = hf.nodes(default_slots);
            if nodes.is_empty() {
                return Err(AllocError(format!(
                    "hostfile {} lists no host; add one host per line (NAME [slots=N])",
                    hf.path.display()
                )));
            }
            list = Some(AppList {
                nodes,
                sequence: hf.lines.iter().map(|l| l.name.clone()).collect(),
                source: Some(AllocationSource::Hostfile {
                    path: hf.path.clone(),
                }),
            });
            source.get_or_insert(AllocationSource::Hostfile {
                path: hf.path.clone(),
            });
        }
        if !app.hosts.is_empty() {
            list = Some(match list {
                Some(hf_list) => {
                    let desc = format!(
                        "hostfile {}",
                        app.hostfile
                            .as_ref()
                            .map(|h| h.path.display().to_string())
                            .unwrap_or_default()
                    );
                    let picked = filter(&hf_list, &desc, &host_wanted(&app.hosts))?;
                    narrow_sequence(Some(&hf_list), picked)
                }
                None => {
                    let mut nodes = NodeList::default();
                    for item in &app.hosts {
                        nodes.merge(&NodeSpec {
                            name: item.name.clone(),
                            slots: item.slots.unwrap_or(1),
                            max_slots: None,
                            slots_given: true,
                            topology: None,
                        });
                    }
                    AppList {
                        nodes: nodes.nodes,
                        sequence: app.hosts.iter().map(|i| i.name.clone()).collect(),
                        source: Some(AllocationSource::HostOption),
                    }
                }
            });
            source.get_or_insert(AllocationSource::HostOption);
        }
        lists.push(list);
    }
    let mut union = NodeList::default();
    let mut sequence = Vec::new();
    for list in lists.iter().flatten() {
        for n in &list.nodes {
            union.merge(n);
        }
        sequence.extend(list.sequence.iter().cloned());
    }
    let mut nodes = union.nodes;
    for n in &mut nodes {
        n.topology = n.topology.or_else(|| local_topology(&n.name));
    }
    let allocation = Allocation {
        nodes,
        source: source.unwrap_or(AllocationSource::HostOption),
        sequence,
    };
    Ok(finish(allocation, lists, req.local.topology))
}

/// After `--host` filtered an app's hostfile: keep the hostfile's line
/// order for the seq mapper, limited to the hosts `--host` kept.
fn narrow_sequence(before: Option<&AppList>, picked: AppList) -> AppList {
    match before {
        None => picked,
        Some(b) => {
            let kept: std::collections::HashSet<&str> =
                picked.nodes.iter().map(|n| n.name.as_str()).collect();
            AppList {
                source: b.source.clone(),
                sequence: b
                    .sequence
                    .iter()
                    .filter(|s| kept.contains(s.as_str()))
                    .cloned()
                    .collect(),
                nodes: picked.nodes,
            }
        }
    }
}

/// Turns app lists into filters naming allocation nodes.
fn finish(
    mut allocation: Allocation,
    lists: Vec<Option<AppList>>,
    default_topology: Topology,
) -> ResolvedHosts {
    let mut index = HostIndex::default();
    for (i, n) in allocation.nodes.iter().enumerate() {
        index.insert(&n.name, i);
    }
    let nodes = &allocation.nodes;
    let canonical = |name: &str| -> String {
        index
            .find(name)
            .map_or_else(|| name.to_string(), |i| nodes[i].name.clone())
    };
    let sequence: Vec<String> = allocation.sequence.iter().map(|s| canonical(s)).collect();
    let app_hosts = lists
        .into_iter()
        .map(|list| {
            list.map(|l| HostFilter {
                nodes: l.nodes.iter().map(|n| canonical(&n.name)).collect(),
                slots: l.nodes.iter().map(|n| n.slots).collect(),
                sequence: l.sequence.iter().map(|s| canonical(s)).collect(),
                source: l.source,
            })
        })
        .collect();
    allocation.sequence = sequence;
    ResolvedHosts {
        allocation,
        app_hosts,
        default_topology,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hosts::parse_host_items;
    use std::path::Path;

    fn local() -> LocalHost {
        LocalHost {
            name: "laptop".into(),
            topology: Topology::new(1, 1, 2, 4),
        }
    }

    fn hostfile(path: &str, text: &str) -> Hostfile {
        Hostfile::parse(Path::new(path), text).unwrap()
    }

    fn hosts(value: &str) -> Vec<HostItem> {
        parse_host_items(&[value.to_string()]).unwrap()
    }

    fn resolve_with(
        env: &[(&str, &str)],
        hwtcpus: bool,
        apps: Vec<AppHosts>,
    ) -> Result<ResolvedHosts, AllocError> {
        let env: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        resolve(&AllocationRequest {
            env: &env,
            local: local(),
            hwtcpus,
            apps,
        })
    }

    fn slots(r: &ResolvedHosts) -> Vec<(&str, u32)> {
        r.allocation
            .nodes
            .iter()
            .map(|n| (n.name.as_str(), n.slots))
            .collect()
    }

    const SLURM: &[(&str, &str)] = &[
        ("SLURM_JOB_ID", "7"),
        ("SLURM_JOB_NODELIST", "node[01-04]"),
        ("SLURM_TASKS_PER_NODE", "4(x4)"),
    ];

    #[test]
    fn local_host_without_host_list() {
        let r = resolve_with(&[], false, vec![AppHosts::default()]).unwrap();
        assert_eq!(r.allocation.source, AllocationSource::Local);
        assert_eq!(slots(&r), [("laptop", 2)]);
        assert_eq!(r.allocation.nodes[0].max_slots, None);
        assert!(!r.allocation.nodes[0].slots_given);
        assert_eq!(r.app_hosts, [None]);
        // :HWTCPUS counts hardware threads.
        let r = resolve_with(&[], true, vec![AppHosts::default()]).unwrap();
        assert_eq!(slots(&r), [("laptop", 4)]);
    }

    #[test]
    fn inclusionary_hostfile_and_hwtcpus_default() {
        let hf = hostfile("my-hosts", "foo.example.com\nbar.example.com slots=2\n");
        let app = AppHosts {
            hostfile: Some(hf),
            hosts: vec![],
        };
        let r = resolve_with(&[], false, vec![app.clone()]).unwrap();
        assert_eq!(
            r.allocation.source,
            AllocationSource::Hostfile {
                path: "my-hosts".into()
            }
        );
        assert_eq!(slots(&r), [("foo.example.com", 2), ("bar.example.com", 2)]);
        let r = resolve_with(&[], true, vec![app]).unwrap();
        assert_eq!(slots(&r), [("foo.example.com", 4), ("bar.example.com", 2)]);
    }

    #[test]
    fn inclusionary_host_option() {
        let app = AppHosts {
            hostfile: None,
            hosts: hosts("a,b:2,c:3,a"),
        };
        let r = resolve_with(&[], false, vec![app]).unwrap();
        assert_eq!(r.allocation.source, AllocationSource::HostOption);
        assert_eq!(slots(&r), [("a", 2), ("b", 2), ("c", 3)]);
        assert_eq!(r.allocation.sequence, ["a", "b", "c", "a"]);
        let f = r.app_hosts[0].as_ref().unwrap();
        assert_eq!(f.nodes, ["a", "b", "c"]);
        assert_eq!(f.slots, [2, 2, 3]);
    }

    #[test]
    fn host_filters_a_hostfile() {
        let hf = hostfile("my_hosts", "node1\nnode2\nnode3\nnode4\n");
        let r = resolve_with(
            &[],
            false,
            vec![AppHosts {
                hostfile: Some(hf.clone()),
                hosts: hosts("node3"),
            }],
        )
        .unwrap();
        assert_eq!(slots(&r), [("node3", 1)]);
        let e = resolve_with(
            &[],
            false,
            vec![AppHosts {
                hostfile: Some(hf),
                hosts: hosts("node17"),
            }],
        )
        .unwrap_err()
        .0;
        assert!(
            e.starts_with("--host: host node17 is not in hostfile my_hosts"),
            "{e}"
        );
        assert!(e.contains("node1, node2, node3, node4"), "{e}");
    }

    #[test]
    fn exclusionary_under_slurm() {
        // No host option: the whole Slurm allocation.
        let r = resolve_with(SLURM, false, vec![AppHosts::default()]).unwrap();
        assert_eq!(r.allocation.nodes.len(), 4);
        assert!(matches!(
            r.allocation.source,
            AllocationSource::Scheduler { .. }
        ));
        // A hostfile line without slots keeps the scheduler's count.
        let hf = hostfile("my_hosts", "node03\n");
        let r = resolve_with(
            SLURM,
            false,
            vec![AppHosts {
                hostfile: Some(hf),
                hosts: vec![],
            }],
        )
        .unwrap();
        assert_eq!(slots(&r), [("node03", 4)]);
        // --host counts cap the scheduler's (no :N is 1); more than the
        // scheduler gives is capped.
        let r = resolve_with(
            SLURM,
            false,
            vec![AppHosts {
                hostfile: None,
                hosts: hosts("node02,node04:2,node01:9"),
            }],
        )
        .unwrap();
        assert_eq!(slots(&r), [("node02", 1), ("node04", 2), ("node01", 4)]);
        // Short and long names match.
        let r = resolve_with(
            SLURM,
            false,
            vec![AppHosts {
                hostfile: None,
                hosts: hosts("node03.cluster.example"),
            }],
        )
        .unwrap();
        assert_eq!(r.app_hosts[0].as_ref().unwrap().nodes, ["node03"]);
    }

    #[test]
    fn exclusionary_rejects_hosts_outside_the_allocation() {
        let hf = hostfile("my_hosts", "# job\nnode17\n");
        let e = resolve_with(
            SLURM,
            false,
            vec![AppHosts {
                hostfile: Some(hf),
                hosts: vec![],
            }],
        )
        .unwrap_err()
        .0;
        assert!(
            e.starts_with("my_hosts:2: host node17 is not in the Slurm allocation (SLURM_JOB_NODELIST=node[01-04])"),
            "{e}"
        );
        assert!(e.contains("nothing was launched"), "{e}");
        let e = resolve_with(
            SLURM,
            false,
            vec![AppHosts {
                hostfile: None,
                hosts: hosts("node05"),
            }],
        )
        .unwrap_err()
        .0;
        assert!(
            e.starts_with("--host: host node05 is not in the Slurm"),
            "{e}"
        );
    }

    #[test]
    fn mpmd_per_app_lists() {
        let r = resolve_with(
            &[],
            false,
            vec![
                AppHosts {
                    hostfile: Some(hostfile("hostfile_1", "node01.example.com\n")),
                    hosts: vec![],
                },
                AppHosts {
                    hostfile: Some(hostfile("hostfile_2", "node02.example.com\n")),
                    hosts: vec![],
                },
            ],
        )
        .unwrap();
        assert_eq!(
            slots(&r),
            [("node01.example.com", 2), ("node02.example.com", 2)]
        );
        assert_eq!(
            r.app_hosts[0].as_ref().unwrap().nodes,
            ["node01.example.com"]
        );
        assert_eq!(
            r.app_hosts[1].as_ref().unwrap().nodes,
            ["node02.example.com"]
        );
        // The same host in two apps' lists adds up; an app without a list
        // may use every host.
        let r = resolve_with(
            &[],
            false,
            vec![
                AppHosts {
                    hostfile: None,
                    hosts: hosts("a"),
                },
                AppHosts {
                    hostfile: None,
                    hosts: hosts("a,b"),
                },
                AppHosts::default(),
            ],
        )
        .unwrap();
        assert_eq!(slots(&r), [("a", 2), ("b", 1)]);
        assert_eq!(r.app_hosts[2], None);
        // Under a scheduler the sum is capped by the scheduler's count.
        let r = resolve_with(
            SLURM,
            false,
            vec![
                AppHosts {
                    hostfile: None,
                    hosts: hosts("node01:3"),
                },
                AppHosts {
                    hostfile: None,
                    hosts: hosts("node01:3"),
                },
            ],
        )
        .unwrap();
        assert_eq!(slots(&r), [("node01", 4)]);
    }

    #[test]
    fn local_hosts_get_the_local_topology() {
        let r = resolve_with(
            &[],
            false,
            vec![AppHosts {
                hostfile: None,
                hosts: hosts("localhost,other"),
            }],
        )
        .unwrap();
        assert_eq!(r.allocation.nodes[0].topology, Some(local().topology));
        assert_eq!(r.allocation.nodes[1].topology, None);
    }

    #[test]
    fn empty_hostfile_is_an_error() {
        let e = resolve_with(
            &[],
            false,
            vec![AppHosts {
                hostfile: Some(hostfile("empty", "# nothing\n")),
                hosts: vec![],
            }],
        )
        .unwrap_err()
        .0;
        assert!(e.contains("hostfile empty lists no host"), "{e}");
    }

    #[test]
    fn name_lists_are_shortened() {
        let names: Vec<String> = (0..10).map(|i| format!("n{i}")).collect();
        assert_eq!(
            name_list(names.iter().map(String::as_str)),
            "n0, n1, n2, n3, n4, n5, n6, n7 and 2 more"
        );
    }
}
