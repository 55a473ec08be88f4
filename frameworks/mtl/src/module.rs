//! The mtl module: what an mtl component hands its pml (through
//! [`oxmpi_plugin_api::ModuleTable`], layout-checked), and what the pml
//! hands it.
//!
//! # The contract
//!
//! - **Threads.** Every entry point is called under the MPI layer's lock
//!   (the pml's entry points run under it): never two at once.
//! - **Init.** [`init`](MtlModule::init) receives the MPI layer's services
//!   (the pml passes its own on), opens the network, publishes this
//!   process's address through the modex and answers the [`Limits`] of
//!   its tag layout: the largest tag and context id it can carry. Peers'
//!   addresses are read lazily when a peer is first used.
//! - **Requests.** The table of [`oxmpi_framework_requests::table`], with
//!   the contract the crate documents (handles, handle 0, completion
//!   slots, signals, errors). Job ranks and context ids, as for a pml.
//! - **Finalize.** `requests.finalize` closes the network; called once,
//!   after every request completed and all ranks reached finalize.
//!
//! Nobody writes these tables by hand: a component implements
//! [`crate::adapter::Mtl`] and exports it with
//! [`export_mtl_component!`](crate::export_mtl_component); the pml calls
//! it through [`crate::handle::MtlHandle`].

use abi_stable::std_types::{RStr, RString};
use abi_stable::StableAbi;
use oxmpi_framework_btl::module::JobIdentity;
use oxmpi_plugin_api::ComponentContext;

pub use oxmpi_framework_requests::table::RequestTable;
pub use oxmpi_framework_requests::{Limits, MpiServices};

/// Entry points of an mtl component.
#[repr(C)]
#[derive(StableAbi)]
pub struct MtlModule {
    /// Opens the network (see the module docs) and writes its `limits`.
    /// Returns false with `error` set if it cannot run.
    pub init: unsafe extern "C" fn(
        context: &ComponentContext,
        identity: &JobIdentity,
        core: MpiServices,
        limits: &mut Limits,
        error: &mut RString,
    ) -> bool,
    /// The request entry points (see the module docs).
    pub requests: RequestTable,
}

/// The mtl component the MPI layer selected, for the pml that drives one.
#[repr(C)]
#[derive(StableAbi, Copy, Clone)]
pub struct MtlCandidate {
    /// The component's name (`ofi`, …).
    pub name: RStr<'static>,
    /// Its entry points.
    pub module: &'static MtlModule,
    /// Its context (parameters and logging), for its `init`.
    pub context: ComponentContext,
}
