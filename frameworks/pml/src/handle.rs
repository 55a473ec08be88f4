//! The caller side of the pml interface, for the MPI layer:
//!
//! - [`PmlHandle`]: a pml component's layout-checked table with safe
//!   methods that return `Result`s and `Option`s (`isend` and `irecv` stay
//!   `unsafe`: the pml reads and writes the buffers after they return);
//! - [`MpiCore`]: what the MPI layer offers the pml (the modex, progress
//!   registration) as a safe trait; [`PmlHandle::init`] generates the
//!   [`PmlCore`](crate::module::PmlCore) table of `extern "C"` functions over it, with the panic
//!   guard (a panic in the MPI layer's code answers a failure instead of
//!   unwinding into the component).

use crate::module::{BtlCandidate, Limits, MtlCandidate, PmlModule, PmlTransport};
use abi_stable::std_types::{ROption, RSlice, RString};
use oxmpi_framework_btl::module::JobIdentity;
use oxmpi_plugin_api::ComponentContext;

pub use oxmpi_framework_requests::handle::RequestHandle;
use oxmpi_framework_requests::sentence_or;
pub use oxmpi_framework_requests::services::{core_table, MpiCore};

/// One pml component as the MPI layer uses it.
#[derive(Clone, Copy)]
pub struct PmlHandle {
    table: &'static PmlModule,
    context: ComponentContext,
    requests: RequestHandle,
}

impl PmlHandle {
    /// Wraps a pml component's table (layout-checked by the core) and its
    /// context (parameters and logging).
    pub fn new(table: &'static PmlModule, context: ComponentContext) -> Self {
        PmlHandle {
            table,
            context,
            requests: RequestHandle::new(&table.requests),
        }
    }

    /// The component's context.
    pub fn context(&self) -> &ComponentContext {
        &self.context
    }

    /// What the pml moves messages over.
    pub fn transport(&self) -> PmlTransport {
        self.table.transport
    }

    /// Starts the pml over the btl components `btls`, with `core` as the
    /// MPI layer's services (for a pml over btls; see
    /// [`init_with`](PmlHandle::init_with)).
    ///
    /// # Errors
    ///
    /// As [`init_with`](PmlHandle::init_with).
    pub fn init<C: MpiCore>(
        &self,
        identity: &JobIdentity,
        core: &'static C,
        btls: &[BtlCandidate],
    ) -> Result<Limits, String> {
        self.init_with(identity, core, btls, None)
    }

    /// Starts the pml over the btl components `btls` or the MTL `mtl`
    /// (what its [`transport`](PmlHandle::transport) asks for), with
    /// `core` as the MPI layer's services; answers the limits of the tags
    /// and context ids it carries.
    ///
    /// # Errors
    ///
    /// The pml's sentence when it cannot run (`"its init failed without a
    /// reason"` if it gave none).
    pub fn init_with<C: MpiCore>(
        &self,
        identity: &JobIdentity,
        core: &'static C,
        btls: &[BtlCandidate],
        mtl: Option<MtlCandidate>,
    ) -> Result<Limits, String> {
        let mut limits = Limits::UNLIMITED;
        let mut error = RString::new();
        // SAFETY: a layout-checked table; the arguments are valid for the
        // call and the core's context is 'static. The generated entry
        // points check exclusive entry themselves.
        let ok = unsafe {
            (self.table.init)(
                &self.context,
                identity,
                core_table(core),
                RSlice::from_slice(btls),
                ROption::from(mtl),
                &mut limits,
                &mut error,
            )
        };
        if ok {
            Ok(limits)
        } else {
            Err(sentence_or(error, "its init failed without a reason"))
        }
    }
}

impl std::ops::Deref for PmlHandle {
    type Target = RequestHandle;

    /// The pml's request entry points.
    fn deref(&self) -> &RequestHandle {
        &self.requests
    }
}
