//! The machine's topology as plain data: packages → cores → hardware threads
//! (PUs), and NUMA nodes with their CPUs.
//!
//! It is read once through hwloc (the `hwlocality` crate over the system's
//! libhwloc) and copied into the types below, so no hwloc type leaks out and
//! the summary is `Send + Sync` and cheap to clone.
//!
//! Discovery skips what binding does not need: I/O devices (PCI, OS devices;
//! the slow part of hwloc start-up, see Open MPI issue 12943), caches and
//! Misc objects are filtered out. hwloc's usual environment variables still
//! apply: `HWLOC_XMLFILE` or `HWLOC_SYNTHETIC` replace the discovery of the
//! real machine (useful for tests of a launcher on a pretend machine).

use std::collections::BTreeMap;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use hwlocality::object::types::ObjectType;
use hwlocality::topology::builder::{TopologyBuilder, TypeFilter};
use thiserror::Error;

use crate::cpulist::CpuList;

/// The largest number of PUs a synthetic description may ask for (65536);
/// above it [`Topology::synthetic`] fails rather than allocating without
/// bound.
pub const MAX_SYNTHETIC_PUS: usize = 65_536;

/// A level of the hierarchy that processes can be mapped or bound to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObjectLevel {
    /// A hardware thread (hwloc PU).
    HwThread,
    /// A core.
    Core,
    /// A package (socket).
    Package,
    /// A NUMA node.
    Numa,
}

impl fmt::Display for ObjectLevel {
    /// The `--bind-to` word: `hwthread`, `core`, `package`, `numa`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ObjectLevel::HwThread => "hwthread",
            ObjectLevel::Core => "core",
            ObjectLevel::Package => "package",
            ObjectLevel::Numa => "numa",
        })
    }
}

/// A hardware thread (hwloc PU).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct HwThread {
    /// hwloc's logical index: 0.. in topology order, over the whole machine
    /// (what `--cpu-set` and `hwloc-ls` `L#` use).
    pub logical_index: usize,
    /// The OS index: the Linux CPU number (what `sched_setaffinity`,
    /// `taskset` and `Cpus_allowed_list` use; `P#` in `hwloc-ls`).
    pub os_index: usize,
}

/// A core and its hardware threads.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Core {
    /// hwloc's logical index of the core over the whole machine (Open MPI's
    /// reports print this one: `socket 1[core 14[...]]`). For a machine
    /// that reports no cores, each PU is its own pseudo-core and this is the
    /// PU's logical index.
    pub logical_index: usize,
    /// The OS's core number, when known.
    pub os_index: Option<usize>,
    /// The hardware threads, in logical order; the position in this vector
    /// is the thread's rank within the core (`hwt N` in reports).
    pub hwthreads: Vec<HwThread>,
}

/// A package (socket) and its cores.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Package {
    /// hwloc's logical index. For a machine that reports no packages, one
    /// pseudo-package with index 0 holds every core.
    pub logical_index: usize,
    /// The OS's package number, when known.
    pub os_index: Option<usize>,
    /// The cores, in logical order.
    pub cores: Vec<Core>,
}

/// A NUMA node and the CPUs close to it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct NumaNode {
    /// hwloc's logical index.
    pub logical_index: usize,
    /// The OS's node number, when known.
    pub os_index: Option<usize>,
    /// The PUs local to this node, as OS indexes (empty for a memory-only
    /// node).
    pub cpus: CpuList,
}

/// Where a PU sits: used by reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PuLocation {
    /// The package's position in [`Topology::packages`] (= its logical index).
    pub package: usize,
    /// The core's position within that package's [`Package::cores`].
    pub core_in_package: usize,
    /// The core's logical index over the machine ([`Core::logical_index`]).
    pub core_logical_index: usize,
    /// The thread's rank within its core (position in [`Core::hwthreads`]).
    pub hwthread_in_core: usize,
}

/// A machine's topology, summarized. Build it with [`Topology::load`] (this
/// machine), [`Topology::local`] (this machine, loaded once per process) or
/// [`Topology::synthetic`] (an imagined machine, for tests).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Topology {
    packages: Vec<Package>,
    numa_nodes: Vec<NumaNode>,
    has_packages: bool,
    has_cores: bool,
    hwthreads: Vec<HwThread>,
    cpus: CpuList,
}

/// Why a topology could not be loaded or built.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum TopologyError {
    /// hwloc failed to discover this machine (the reason is hwloc's).
    #[error("hwloc could not load this machine's topology: {0}")]
    Load(String),
    /// hwloc rejected a synthetic description, or it asks for more than
    /// [`MAX_SYNTHETIC_PUS`] PUs.
    #[error("bad synthetic topology `{spec}`: {reason} (expected a description like `package:2 core:4 pu:2`)")]
    Synthetic {
        /// The description as given.
        spec: String,
        /// What was wrong.
        reason: String,
    },
    /// The topology holds no processing unit at all.
    #[error("the topology has no processing units")]
    NoProcessingUnits,
}

impl Topology {
    /// Discover this machine with hwloc, without I/O devices, caches or Misc
    /// objects. Only the PUs this process is allowed to use (its cgroup's
    /// cpuset) are included — not restricted to the calling process's own
    /// affinity mask.
    ///
    /// Each call asks hwloc again; prefer [`Topology::local`], which loads
    /// once per process.
    ///
    /// # Errors
    ///
    /// [`TopologyError::Load`] when hwloc fails (or panics inside the
    /// bindings), [`TopologyError::NoProcessingUnits`] for an empty result.
    pub fn load() -> Result<Topology, TopologyError> {
        build(None)
    }

    /// This machine's topology, loaded by the first call and shared by every
    /// later one (a failure is remembered too). Discovery is cached per boot
    /// (see [`crate::cache`]), so only the first process after a change of
    /// the machine pays for it.
    ///
    /// # Errors
    ///
    /// As [`Topology::load`].
    pub fn local() -> Result<&'static Topology, TopologyError> {
        static LOCAL: OnceLock<Result<Topology, TopologyError>> = OnceLock::new();
        LOCAL
            .get_or_init(crate::cache::load_local)
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Build an imagined machine from an hwloc synthetic description, such as
    /// `package:2 core:4 pu:2` or `package:2 numa:2 core:4 pu:1` (see
    /// hwloc's "Synthetic topologies"; OS indexes equal logical indexes).
    ///
    /// # Errors
    ///
    /// [`TopologyError::Synthetic`] when hwloc rejects the description or it
    /// asks for more than [`MAX_SYNTHETIC_PUS`] PUs.
    pub fn synthetic(spec: &str) -> Result<Topology, TopologyError> {
        let bad = |reason: String| TopologyError::Synthetic {
            spec: spec.to_string(),
            reason,
        };
        if synthetic_size(spec) > MAX_SYNTHETIC_PUS {
            return Err(bad(format!("more than {MAX_SYNTHETIC_PUS} PUs")));
        }
        build(Some(spec)).map_err(|e| match e {
            TopologyError::Load(reason) => bad(reason),
            other => other,
        })
    }

    /// The packages in logical order (at least one: a pseudo-package when
    /// the machine reports none, see [`Topology::has_level`]).
    pub fn packages(&self) -> &[Package] {
        &self.packages
    }

    /// The NUMA nodes in logical order (hwloc always reports at least one).
    pub fn numa_nodes(&self) -> &[NumaNode] {
        &self.numa_nodes
    }

    /// Every PU in logical order (position = logical index).
    pub fn hwthreads(&self) -> &[HwThread] {
        &self.hwthreads
    }

    /// Every PU's OS index.
    pub fn cpus(&self) -> &CpuList {
        &self.cpus
    }

    /// The number of packages the machine reports (0 when it reports none).
    pub fn num_packages(&self) -> usize {
        if self.has_packages {
            self.packages.len()
        } else {
            0
        }
    }

    /// The number of NUMA nodes.
    pub fn num_numa_nodes(&self) -> usize {
        self.numa_nodes.len()
    }

    /// The number of cores the machine reports (0 when it reports none).
    pub fn num_cores(&self) -> usize {
        if self.has_cores {
            self.packages.iter().map(|p| p.cores.len()).sum()
        } else {
            0
        }
    }

    /// The number of hardware threads (PUs).
    pub fn num_hwthreads(&self) -> usize {
        self.hwthreads.len()
    }

    /// Whether the machine reports objects of this level (hardware threads
    /// always exist; packages, cores and NUMA nodes may be missing, e.g. in
    /// a synthetic `core:4 pu:1` there is no package).
    pub fn has_level(&self, level: ObjectLevel) -> bool {
        match level {
            ObjectLevel::HwThread => true,
            ObjectLevel::Core => self.has_cores,
            ObjectLevel::Package => self.has_packages,
            ObjectLevel::Numa => !self.numa_nodes.is_empty(),
        }
    }

    /// The PUs (OS indexes) of every object of a level, in logical order
    /// (position = the object's logical index); `None` when the machine has
    /// no such level ([`Topology::has_level`]).
    pub fn objects(&self, level: ObjectLevel) -> Option<Vec<CpuList>> {
        if !self.has_level(level) {
            return None;
        }
        let cores = || self.packages.iter().flat_map(|p| p.cores.iter());
        Some(match level {
            ObjectLevel::HwThread => self
                .hwthreads
                .iter()
                .map(|t| std::iter::once(t.os_index).collect())
                .collect(),
            ObjectLevel::Core => cores()
                .map(|c| c.hwthreads.iter().map(|t| t.os_index).collect())
                .collect(),
            ObjectLevel::Package => self
                .packages
                .iter()
                .map(|p| {
                    p.cores
                        .iter()
                        .flat_map(|c| c.hwthreads.iter().map(|t| t.os_index))
                        .collect()
                })
                .collect(),
            ObjectLevel::Numa => self.numa_nodes.iter().map(|n| n.cpus.clone()).collect(),
        })
    }

    /// The OS index of the PU with this logical index.
    pub fn os_index_of(&self, logical_index: usize) -> Option<usize> {
        self.hwthreads.get(logical_index).map(|t| t.os_index)
    }

    /// Where the PU with this OS index sits; `None` if the topology has no
    /// such PU.
    pub fn locate(&self, os_index: usize) -> Option<PuLocation> {
        for (p, package) in self.packages.iter().enumerate() {
            for (c, core) in package.cores.iter().enumerate() {
                if let Some(t) = core.hwthreads.iter().position(|t| t.os_index == os_index) {
                    return Some(PuLocation {
                        package: p,
                        core_in_package: c,
                        core_logical_index: core.logical_index,
                        hwthread_in_core: t,
                    });
                }
            }
        }
        None
    }
}

/// An upper bound of the PUs a synthetic description creates: the product
/// of the arities (`type:N`), saturating.
fn synthetic_size(spec: &str) -> usize {
    spec.split_whitespace()
        .filter_map(|tok| tok.split_once(':'))
        .map(|(_, rest)| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse::<usize>().unwrap_or(usize::MAX)
        })
        .fold(1usize, usize::saturating_mul)
}

fn build(synthetic: Option<&str>) -> Result<Topology, TopologyError> {
    let loaded = catch_unwind(AssertUnwindSafe(|| -> Result<Topology, String> {
        let mut builder = TopologyBuilder::new();
        if let Some(spec) = synthetic {
            builder = builder.from_synthetic(spec).map_err(|e| e.to_string())?;
        }
        let builder = builder
            .with_io_type_filter(TypeFilter::KeepNone)
            .map_err(|e| e.to_string())?
            .with_cpu_cache_type_filter(TypeFilter::KeepNone)
            .map_err(|e| e.to_string())?
            .with_cpu_icache_type_filter(TypeFilter::KeepNone)
            .map_err(|e| e.to_string())?
            .with_type_filter(ObjectType::Misc, TypeFilter::KeepNone)
            .map_err(|e| e.to_string())?;
        let topology = builder.build().map_err(|e| e.to_string())?;
        Ok(summarize(&topology))
    }));
    match loaded {
        Ok(Ok(t)) if t.hwthreads.is_empty() => Err(TopologyError::NoProcessingUnits),
        Ok(Ok(t)) => Ok(t),
        Ok(Err(reason)) => Err(TopologyError::Load(reason)),
        Err(_) => Err(TopologyError::Load("the hwloc bindings panicked".into())),
    }
}

#[derive(Default)]
struct CoreAcc {
    logical_index: usize,
    os_index: Option<usize>,
    hwthreads: Vec<HwThread>,
}

#[derive(Default)]
struct PackageAcc {
    os_index: Option<usize>,
    // Keyed by (pseudo?, logical index) so pseudo-cores never collide.
    cores: BTreeMap<(bool, usize), CoreAcc>,
}

fn summarize(topology: &hwlocality::Topology) -> Topology {
    // Keyed by (pseudo?, logical index): PUs outside any package go last.
    let mut packages: BTreeMap<(bool, usize), PackageAcc> = BTreeMap::new();
    let mut hwthreads = Vec::new();
    for pu in topology.objects_with_type(ObjectType::PU) {
        let Some(os_index) = pu.os_index() else {
            continue;
        };
        let thread = HwThread {
            logical_index: pu.logical_index(),
            os_index,
        };
        hwthreads.push(thread);
        let package = pu.first_ancestor_with_type(ObjectType::Package);
        let package_key = match package {
            Some(p) => (false, p.logical_index()),
            None => (true, 0),
        };
        let package_acc = packages.entry(package_key).or_default();
        package_acc.os_index = package.and_then(|p| p.os_index());
        let core = pu.first_ancestor_with_type(ObjectType::Core);
        let core_key = match core {
            Some(c) => (false, c.logical_index()),
            None => (true, thread.logical_index),
        };
        let core_acc = package_acc.cores.entry(core_key).or_default();
        core_acc.logical_index = core_key.1;
        core_acc.os_index = core.and_then(|c| c.os_index());
        core_acc.hwthreads.push(thread);
    }
    hwthreads.sort_by_key(|t| t.logical_index);
    let has_packages = packages.keys().any(|(pseudo, _)| !pseudo);
    let has_cores = packages
        .values()
        .any(|p| p.cores.keys().any(|(pseudo, _)| !pseudo));
    let real_packages = packages.keys().filter(|(pseudo, _)| !pseudo).count();
    let packages: Vec<Package> = packages
        .into_iter()
        .map(|((pseudo, index), acc)| Package {
            logical_index: if pseudo { real_packages } else { index },
            os_index: acc.os_index,
            cores: acc
                .cores
                .into_values()
                .map(|mut c| {
                    c.hwthreads.sort_by_key(|t| t.logical_index);
                    Core {
                        logical_index: c.logical_index,
                        os_index: c.os_index,
                        hwthreads: c.hwthreads,
                    }
                })
                .collect(),
        })
        .collect();
    let cpus: CpuList = hwthreads.iter().map(|t| t.os_index).collect();
    let max_cpu = cpus.as_slice().last().copied().unwrap_or(0);
    let numa_nodes = topology
        .objects_with_type(ObjectType::NUMANode)
        .map(|node| NumaNode {
            logical_index: node.logical_index(),
            os_index: node.os_index(),
            cpus: node
                .cpuset()
                .map(|set| {
                    // Ascending; stop at the last PU (an infinite set ends too).
                    set.iter_set()
                        .map(usize::from)
                        .take_while(|&c| c <= max_cpu)
                        .filter(|&c| cpus.contains(c))
                        .collect()
                })
                .unwrap_or_default(),
        })
        .collect::<Vec<_>>();
    Topology {
        packages,
        numa_nodes,
        has_packages,
        has_cores,
        hwthreads,
        cpus,
    }
}
