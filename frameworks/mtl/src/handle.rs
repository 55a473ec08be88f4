//! The caller side of the mtl interface, for the pml that drives an MTL:
//! [`MtlHandle`], the component's layout-checked table with safe methods
//! (its requests through [`RequestHandle`], which it dereferences to).

use crate::module::{Limits, MpiServices, MtlCandidate, MtlModule};
use abi_stable::std_types::RString;
use oxmpi_framework_btl::module::JobIdentity;
use oxmpi_framework_requests::sentence_or;
use oxmpi_plugin_api::ComponentContext;

pub use oxmpi_framework_requests::handle::RequestHandle;

/// One mtl component as its pml uses it.
#[derive(Clone, Copy)]
pub struct MtlHandle {
    name: &'static str,
    table: &'static MtlModule,
    context: ComponentContext,
    requests: RequestHandle,
}

impl MtlHandle {
    /// Wraps the component the MPI layer selected (its table is
    /// layout-checked by the core).
    pub fn new(candidate: &MtlCandidate) -> Self {
        MtlHandle {
            name: candidate.name.as_str(),
            table: candidate.module,
            context: candidate.context,
            requests: RequestHandle::new(&candidate.module.requests),
        }
    }

    /// The component's name (`ofi`, …).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The component's context.
    pub fn context(&self) -> &ComponentContext {
        &self.context
    }

    /// Opens the network with `core` as the MPI layer's services (a pml
    /// passes on its own: `Core::raw`); answers the limits of its tag
    /// layout.
    ///
    /// # Errors
    ///
    /// The component's sentence when it cannot run (`"its init failed
    /// without a reason"` if it gave none).
    pub fn init(&self, identity: &JobIdentity, core: MpiServices) -> Result<Limits, String> {
        let mut limits = Limits::UNLIMITED;
        let mut error = RString::new();
        // SAFETY: a layout-checked table; the arguments are valid for the
        // call. The generated entry points check exclusive entry
        // themselves.
        let ok =
            unsafe { (self.table.init)(&self.context, identity, core, &mut limits, &mut error) };
        if ok {
            Ok(limits)
        } else {
            Err(sentence_or(error, "its init failed without a reason"))
        }
    }
}

impl std::ops::Deref for MtlHandle {
    type Target = RequestHandle;

    /// The component's request entry points.
    fn deref(&self) -> &RequestHandle {
        &self.requests
    }
}
