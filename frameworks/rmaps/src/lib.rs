//! The `rmaps` framework: resource mapping places a job's processes on
//! nodes and slots.
//!
//! This crate is what both sides of the component boundary need, as Open
//! MPI's rmaps base is: the interface ([`module`], [`Mapper`],
//! [`export_mapper_component!`] on the component side, [`RmapsHandle`] on
//! the caller side, the request and map types, the policy grammar), the helpers every mapper uses ([`base`]: per-node usage and
//! limits, oversubscription, capacity messages, `:PE` reservation, building
//! the [`JobMap`]), the one selection path ([`selection`]), and the pure
//! helpers mpirun uses around mapping (allocation, hostfiles, `--host`,
//! Slurm, display). The mapping algorithms live in the components
//! (`components/rmaps/{round_robin,seq,ppr}`). No I/O beyond the hostfile
//! text handed in, no process spawning, the environment passed in as a map
//! (so tests can fake a scheduler). The pipeline `mpirun` runs:
//!
//! 1. parse options: [`policy::parse_map_by`], [`policy::parse_rank_by`],
//!    [`policy::parse_default_mapping_policy`] →
//!    [`MapPolicy::resolve`]; [`hosts::parse_host_items`] (`--host`),
//!    [`Hostfile::parse`] (`--hostfile`);
//! 2. the allocation: [`allocation::resolve`] (scheduler environment,
//!    hostfiles, `--host`, else the local host; per-app host lists);
//! 3. map: [`MapRequest::new`], then [`selection::select`] over the usable
//!    components (round_robin, seq, ppr and any other installed) by
//!    priority, and [`RmapsHandle::map`];
//! 4. show it: [`display::text`], [`display::json`]; every node's
//!    [`MappedNode::yield_when_idle`] gives its ranks'
//!    `mpi_yield_when_idle`.
//!
//! **Oversubscription** (more processes on a node than slots) follows the
//! reference text, with two decisions written down here:
//!
//! - With no host list and no scheduler, the implicit local host may be
//!   oversubscribed (as with MPICH); `:NOOVERSUBSCRIBE` refuses.
//! - With an explicit host list, nodes take at most their slots unless
//!   `:OVERSUBSCRIBE` is given — except that a hostfile's `max_slots`
//!   above `slots` is itself permission to go up to `max_slots`. This is
//!   what makes the reference's worked examples (`node0 slots=2
//!   max_slots=20`, `-n 8` by slot and by node, without `:OVERSUBSCRIBE`)
//!   map as shown there. `:NOOVERSUBSCRIBE` refuses that too.
//!
//! A node with more processes than slots is marked oversubscribed and its
//! ranks run in degraded mode (`mpi_yield_when_idle=1`).
//!
//! Selection: one mapper per job, the usable one with the highest priority.
//! The core declares the selection parameter `rmaps` and
//! `rmaps_base_verbose`.
//!
//! With the feature `testkit`, [`testkit::conformance`] is the suite every
//! mapper component's tests run.

// The workspace lints, written in the crate: component authors build this
// crate outside the workspace (docs/writing-a-component.md).
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs, rust_2018_idioms)]

pub mod allocation;
pub mod base;
pub mod display;
pub mod error;
pub mod handle;
pub mod hostfile;
pub mod hosts;
pub mod jobmap;
pub mod mapper;
pub mod module;
pub mod policy;
pub mod request;
pub mod selection;
pub mod slurm;
#[cfg(feature = "testkit")]
pub mod testkit;
pub mod topology;

pub use allocation::{
    AllocError, Allocation, AllocationRequest, AllocationSource, AppHosts, HostFilter, LocalHost,
    NodeSpec, ResolvedHosts,
};
pub use base::MAX_PROCS;
pub use error::{MapError, MapErrorKind};
pub use handle::RmapsHandle;
pub use hostfile::{HostLine, Hostfile};
pub use jobmap::{JobMap, MappedNode, MappedProc, ObjectRef};
pub use mapper::{Mapper, MapperParams};
pub use module::{PolicyName, RmapsModule, RmapsModuleRef};
pub use policy::{MapBy, MapDirective, MapPolicy, PolicyError, RankBy};
pub use request::{AppRequest, MapRequest};
pub use selection::Candidate;
pub use topology::{Resource, Topology};

use oxmpi_plugin_api::{FrameworkInfo, ParamDecl, ParamType, SelectionKind, Synonym, Version};

/// Version of the interface between the rmaps framework and its components.
/// 2.0: the module became a prefix type with the appended `policies`
/// field (components declare `--map-by` names). 2.1: the appended
/// `accepts_checked` (a panic or unreadable input in `accepts` is an error,
/// not a "no"; components built against 2.0 still load and are read the
/// old way). Later fields are appended in minor versions.
pub const INTERFACE_VERSION: Version = Version::new(2, 1, 0);

const MAPPING_POLICY_ALIAS: &[Synonym] = &[Synonym::alias(DEFAULT_MAPPING_POLICY_PARAM)];
const RANKING_POLICY_ALIAS: &[Synonym] = &[Synonym::alias(DEFAULT_RANKING_POLICY_PARAM)];

/// Framework-wide parameters beyond the selection and verbosity ones:
/// `rmaps_base_mapping_policy` (also named `rmaps_default_mapping_policy`)
/// and `rmaps_base_ranking_policy` (also `rmaps_default_ranking_policy`).
pub const BASE_PARAMS: &[ParamDecl] = &[
    ParamDecl::new(
        "mapping_policy",
        ParamType::String,
        "",
        3,
        "Default mapping policy, in the grammar of mpirun --map-by: slot, node, core, hwthread, package, numa, seq or ppr:N:RESOURCE, with modifiers such as :OVERSUBSCRIBE, :NOOVERSUBSCRIBE, :PE=n, :HWTCPUS, :SPAN; a modifier alone (\":oversubscribe\") changes the default policy. --map-by wins where both say something. Empty: by slot.",
    )
    .with_synonyms(MAPPING_POLICY_ALIAS),
    ParamDecl::new(
        "ranking_policy",
        ParamType::String,
        "",
        3,
        "Default ranking policy, in the grammar of mpirun --rank-by (slot, node, or an object such as core); empty: ranks follow the mapping.",
    )
    .with_synonyms(RANKING_POLICY_ALIAS),
];

/// Name of the parameter giving the default mapping policy (same grammar
/// as `--map-by`, parsed by [`policy::parse_default_mapping_policy`]).
pub const DEFAULT_MAPPING_POLICY_PARAM: &str = "rmaps_default_mapping_policy";

/// Name of the parameter giving the default ranking policy (parsed by
/// [`policy::parse_default_ranking_policy`]).
pub const DEFAULT_RANKING_POLICY_PARAM: &str = "rmaps_default_ranking_policy";

/// Description of the rmaps framework for the core.
pub static FRAMEWORK: FrameworkInfo = FrameworkInfo {
    name: "rmaps",
    description: "Resource mapping: places a job's processes on nodes and slots",
    interface_version: INTERFACE_VERSION,
    selection: SelectionKind::Single,
    base_params: BASE_PARAMS,
    component_aliases: &[],
};
