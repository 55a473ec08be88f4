//! The local machine's hardware topology and process binding for oxmpi.
//!
//! - [`topology`]: load the machine's topology once through hwloc (or build
//!   a synthetic one) as plain data: packages → cores → hardware threads,
//!   and NUMA nodes.
//! - [`cpulist`]: CPU lists such as `0,2-3` (`--cpu-set`, `Cpus_allowed_list`).
//! - [`binding`]: `--bind-to` policies, the default policy rule, and which
//!   PUs each local rank is bound to.
//! - [`report`]: `--report-bindings` lines in Open MPI's format.
//! - [`apply`]: binding the current process, or a child between fork and
//!   exec; reading a process's binding back from `/proc`.
//!
//! Nothing here panics on user input; every error says what was wrong.

pub mod apply;
pub mod binding;
pub mod cache;
pub mod cpulist;
pub mod report;
pub mod topology;

pub use apply::{
    bind_current_process, current_binding, read_cpus_allowed, ApplyError, PreparedBinding,
};
pub use binding::{
    compute_bindings, compute_bindings_with, default_policy, BindError, BindOptions, BindPolicy,
    BindPolicyError, BindRequest, ProcPlacement,
};
pub use cpulist::{CpuList, CpuListError};
pub use report::{binding_report, report_line, BindingReport};
pub use topology::{
    Core, HwThread, NumaNode, ObjectLevel, Package, PuLocation, Topology, TopologyError,
};
