//! [`Cm`]: the pml over the MTL the MPI layer selected; every request
//! entry passes on to the MTL's.

use oxmpi_framework_btl::module::JobIdentity;
use oxmpi_framework_mtl::handle::MtlHandle;
use oxmpi_framework_pml::adapter::{CandidateBtl, Core, Pml, Requests};
use oxmpi_framework_pml::module::{
    Limits, PmlTransport, RecvArgs, RequestError, RequestStatus, SendArgs,
};
use oxmpi_plugin_api::{verbosity, ComponentContext};

/// The pml's state: the started MTL and its limits.
pub struct Cm {
    mtl: MtlHandle,
    limits: Limits,
}

impl Pml for Cm {
    const TRANSPORT: PmlTransport = PmlTransport::Mtl;

    /// Starts the MTL with the MPI layer's services and keeps its limits.
    ///
    /// # Errors
    ///
    /// No MTL was given (the MPI layer gives one to a pml over an MTL), or
    /// the MTL's sentence when it cannot start.
    fn init(
        context: &ComponentContext,
        identity: &JobIdentity,
        core: Core,
        _btls: &[CandidateBtl],
        mtl: Option<MtlHandle>,
    ) -> Result<Self, String> {
        let mtl = mtl.ok_or_else(|| {
            "pml cm runs over an MTL, and none was selected (check the mtl parameter)".to_string()
        })?;
        let limits = mtl
            .init(identity, core.raw())
            .map_err(|e| format!("mtl {} could not start: {e}", mtl.name()))?;
        context.log(
            verbosity::COMPONENT,
            &format!(
                "running over mtl {}: tags up to {}, context ids up to {}",
                mtl.name(),
                limits.max_tag,
                limits.max_context
            ),
        );
        Ok(Cm { mtl, limits })
    }
}

impl Requests for Cm {
    #[inline]
    unsafe fn isend(&mut self, args: &SendArgs) -> Result<u64, (RequestError, String)> {
        // SAFETY: the buffer's promise is this method's own requirement,
        // passed on.
        unsafe { self.mtl.isend(args) }
    }

    #[inline]
    unsafe fn irecv(&mut self, args: &RecvArgs, status: &mut RequestStatus) -> Result<u64, String> {
        // SAFETY: as in `isend`.
        let (handle, st) = unsafe { self.mtl.irecv(args) }?;
        if handle == 0 {
            *status = st;
        }
        Ok(handle)
    }

    #[inline]
    fn test(&mut self, request: u64) -> Option<RequestStatus> {
        self.mtl.test(request)
    }

    #[inline]
    fn take(&mut self, request: u64) -> Option<RequestStatus> {
        self.mtl.take(request)
    }

    fn request_error(&mut self, request: u64) -> String {
        self.mtl.request_error(request)
    }

    #[inline]
    fn free(&mut self, request: u64) {
        self.mtl.free(request)
    }

    fn cancel(&mut self, request: u64) -> bool {
        self.mtl.cancel(request)
    }

    fn iprobe(&mut self, context: u32, source: i32, tag: i32) -> Option<RequestStatus> {
        self.mtl.iprobe(context, source, tag)
    }

    fn improbe(&mut self, context: u32, source: i32, tag: i32) -> Option<(u64, RequestStatus)> {
        self.mtl.improbe(context, source, tag)
    }

    unsafe fn imrecv(
        &mut self,
        message: u64,
        args: &RecvArgs,
        status: &mut RequestStatus,
    ) -> Result<u64, String> {
        // SAFETY: as in `isend`.
        let (handle, st) = unsafe { self.mtl.imrecv(message, args) }?;
        if handle == 0 {
            *status = st;
        }
        Ok(handle)
    }

    #[inline]
    fn progress(&mut self) -> usize {
        self.mtl.progress()
    }

    /// The MTL's: it decides when it has work (its signals are not the
    /// MPI layer's, so cm asks).
    #[inline]
    fn has_work(&self) -> bool {
        self.mtl.signals().has_work()
    }

    fn limits(&self) -> Limits {
        self.limits
    }

    /// Closes the MTL.
    fn finalize(self) {
        self.mtl.finalize();
    }
}
