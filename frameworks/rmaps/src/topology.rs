//! What the mappers need to know about a node's hardware: how many
//! packages, NUMA domains, cores and hardware threads it has.
//!
//! This is a summary, not a tree: objects of each kind are assumed to be
//! spread evenly (a node with 2 packages and 8 cores has cores 0–3 in
//! package 0 and 4–7 in package 1). The hwloc side fills it for the local
//! host; for a remote or unknown host the mappers assume the local host's
//! counts.

use std::fmt;

/// Kinds of hardware objects a mapping can be expressed in (`--map-by
/// package`, `ppr:2:numa`, `--rank-by core`, …).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum Resource {
    /// The whole node.
    Node,
    /// A processor package (socket).
    Package,
    /// A NUMA domain.
    Numa,
    /// A processor core.
    Core,
    /// A hardware thread (a PU in hwloc terms).
    Hwthread,
}

impl Resource {
    /// The name used on the command line (`package`, not `socket`).
    pub fn name(self) -> &'static str {
        match self {
            Resource::Node => "node",
            Resource::Package => "package",
            Resource::Numa => "numa",
            Resource::Core => "core",
            Resource::Hwthread => "hwthread",
        }
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Object counts of one node. Zero counts are read as one, so a partly
/// filled summary never divides by zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Topology {
    /// Processor packages (sockets).
    pub packages: u32,
    /// NUMA domains.
    pub numas: u32,
    /// Processor cores.
    pub cores: u32,
    /// Hardware threads.
    pub hwthreads: u32,
}

impl Default for Topology {
    /// One package, one NUMA domain, one core, one hardware thread.
    fn default() -> Self {
        Topology::new(1, 1, 1, 1)
    }
}

impl Topology {
    /// A summary with these counts.
    pub const fn new(packages: u32, numas: u32, cores: u32, hwthreads: u32) -> Self {
        Topology {
            packages,
            numas,
            cores,
            hwthreads,
        }
    }

    /// A node with `cores` cores and no more detail: one package, one NUMA
    /// domain, one hardware thread per core.
    pub const fn flat(cores: u32) -> Self {
        Topology::new(1, 1, cores, cores)
    }

    /// How many objects of `kind` the node has (at least 1; `Node` is 1).
    pub fn count(&self, kind: Resource) -> u32 {
        let n = match kind {
            Resource::Node => 1,
            Resource::Package => self.packages,
            Resource::Numa => self.numas,
            Resource::Core => self.cores,
            Resource::Hwthread => self.hwthreads,
        };
        n.max(1)
    }

    /// Processors a process can be given: hardware threads when
    /// `hwtcpus` (`--map-by :HWTCPUS`), otherwise cores.
    pub fn cpus(&self, hwtcpus: bool) -> u32 {
        self.count(if hwtcpus {
            Resource::Hwthread
        } else {
            Resource::Core
        })
    }

    /// Slots of a host whose slot count nobody gave (a hostfile line
    /// without `slots=`, or the local host with no host list): its cores,
    /// or its hardware threads with `:HWTCPUS`.
    pub fn default_slots(&self, hwtcpus: bool) -> u32 {
        self.cpus(hwtcpus)
    }

    /// Index of the object of kind `to` that holds the first hardware
    /// thread of object `index` of kind `from` (objects spread evenly).
    /// For example, with 2 packages and 8 cores, core 5 is in package 1.
    pub fn convert(&self, from: Resource, index: u32, to: Resource) -> u32 {
        let threads = u64::from(self.count(Resource::Hwthread));
        let n_from = u64::from(self.count(from));
        let n_to = u64::from(self.count(to));
        let index = u64::from(index) % n_from;
        let first_thread = index * threads / n_from;
        (first_thread * n_to / threads) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_at_least_one() {
        let t = Topology::new(0, 0, 0, 0);
        for kind in [
            Resource::Node,
            Resource::Package,
            Resource::Numa,
            Resource::Core,
            Resource::Hwthread,
        ] {
            assert_eq!(t.count(kind), 1);
        }
        assert_eq!(Topology::default().cpus(true), 1);
    }

    #[test]
    fn default_slots_are_cores_or_hwthreads() {
        let t = Topology::new(2, 2, 8, 16);
        assert_eq!(t.default_slots(false), 8);
        assert_eq!(t.default_slots(true), 16);
        assert_eq!(Topology::flat(4), Topology::new(1, 1, 4, 4));
    }

    #[test]
    fn conversion_assumes_even_spread() {
        let t = Topology::new(2, 4, 8, 16);
        assert_eq!(t.convert(Resource::Core, 3, Resource::Package), 0);
        assert_eq!(t.convert(Resource::Core, 4, Resource::Package), 1);
        assert_eq!(t.convert(Resource::Core, 5, Resource::Numa), 2);
        assert_eq!(t.convert(Resource::Hwthread, 15, Resource::Core), 7);
        assert_eq!(t.convert(Resource::Package, 1, Resource::Core), 4);
        assert_eq!(t.convert(Resource::Node, 0, Resource::Core), 0);
    }
}
