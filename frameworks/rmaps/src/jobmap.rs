//! A mapped job: which rank runs where.

use crate::policy::{MapPolicy, RankBy};
use crate::topology::Resource;
use std::fmt;

/// An object of a node's hardware a process was placed on (the binding
/// layer turns it into a cpu set).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct ObjectRef {
    /// Object kind.
    pub kind: Resource,
    /// Logical index among the node's objects of that kind.
    pub index: u32,
}

impl fmt::Display for ObjectRef {
    /// `package:1`, `core:5`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind, self.index)
    }
}

/// One process.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MappedProc {
    /// Rank in `MPI_COMM_WORLD`.
    pub rank: u32,
    /// Index of its app.
    pub app: u32,
    /// Rank among its app's processes.
    pub app_rank: u32,
    /// Rank among the job's processes on this node, by rank order
    /// (`OMPI_COMM_WORLD_LOCAL_RANK`).
    pub local_rank: u32,
    /// Rank among all processes on this node; with one job per mpirun, the
    /// same as `local_rank`.
    pub node_rank: u32,
    /// The object the mapper placed it on (by-object policies and ppr), if
    /// any.
    pub object: Option<ObjectRef>,
    /// With `:PE=n`: the logical indexes of the n cores (hardware threads
    /// with `:HWTCPUS`) reserved for it; empty otherwise.
    pub cpus: Vec<u32>,
    /// Binding description, filled by the binding layer (not by mappers);
    /// shown by the map display when present.
    pub binding: Option<String>,
}

/// One node of the map.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MappedNode {
    /// Host name.
    pub name: String,
    /// Its slots.
    pub slots: u32,
    /// Its hard limit, `None` for unlimited.
    pub max_slots: Option<u32>,
    /// More processes than slots on it: its ranks must run in degraded
    /// mode (`mpi_yield_when_idle=1`).
    pub oversubscribed: bool,
    /// Its processes, by rank.
    pub procs: Vec<MappedProc>,
}

impl MappedNode {
    /// Value of `mpi_yield_when_idle` its ranks get unless the user set
    /// it: 1 (degraded, yield the processor while waiting) when the node
    /// is oversubscribed, otherwise 0 (aggressive).
    pub fn yield_when_idle(&self) -> u32 {
        u32::from(self.oversubscribed)
    }
}

/// The job map.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct JobMap {
    /// Nodes that got processes, in allocation order.
    pub nodes: Vec<MappedNode>,
    /// Name of the mapper component that made it (`round_robin`, `seq`,
    /// `ppr`).
    pub mapper: String,
    /// The policy it followed.
    pub policy: MapPolicy,
    /// The ranking asked for (`None`: placement order).
    pub rank_by: Option<RankBy>,
    /// Processes per app.
    pub app_sizes: Vec<u32>,
}

impl JobMap {
    /// Number of processes.
    pub fn size(&self) -> u32 {
        self.app_sizes.iter().sum()
    }

    /// `(node index, process)` for every rank, in rank order.
    pub fn by_rank(&self) -> Vec<(usize, &MappedProc)> {
        let mut out: Vec<(usize, &MappedProc)> = self
            .nodes
            .iter()
            .enumerate()
            .flat_map(|(i, n)| n.procs.iter().map(move |p| (i, p)))
            .collect();
        out.sort_by_key(|(_, p)| p.rank);
        out
    }

    /// Node name of every rank, in rank order (handy in tests).
    pub fn rank_hosts(&self) -> Vec<&str> {
        self.by_rank()
            .into_iter()
            .map(|(i, _)| self.nodes[i].name.as_str())
            .collect()
    }

    /// Whether any node is oversubscribed.
    pub fn oversubscribed(&self) -> bool {
        self.nodes.iter().any(|n| n.oversubscribed)
    }
}
