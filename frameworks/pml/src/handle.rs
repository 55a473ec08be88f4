//! The caller side of the pml interface, for the MPI layer:
//!
//! - [`PmlHandle`]: a pml component's layout-checked table with safe
//!   methods that return `Result`s and `Option`s (`isend` and `irecv` stay
//!   `unsafe`: the pml reads and writes the buffers after they return);
//! - [`MpiCore`]: what the MPI layer offers the pml (the modex, progress
//!   registration) as a safe trait; [`PmlHandle::init`] generates the
//!   [`PmlCore`] table of `extern "C"` functions over it, with the panic
//!   guard (a panic in the MPI layer's code answers a failure instead of
//!   unwinding into the component).

use crate::module::{
    BtlCandidate, PmlModule, PmlSignals, RecvArgs, RequestError, RequestStatus, SendArgs,
};
use abi_stable::std_types::{RSlice, RString};
use oxmpi_framework_btl::module::JobIdentity;
use oxmpi_plugin_api::ComponentContext;
use std::mem::MaybeUninit;

pub use oxmpi_framework_requests::services::{core_table, MpiCore};

/// One pml component as the MPI layer uses it.
#[derive(Clone, Copy)]
pub struct PmlHandle {
    table: &'static PmlModule,
    context: ComponentContext,
}

/// Drops the sentence of a refusal nobody reads (kept out of line: a
/// refusal is rare).
#[cold]
#[inline(never)]
fn drop_reason(text: RString) {
    drop(text);
}

fn reason(text: RString, otherwise: &str) -> String {
    if text.is_empty() {
        otherwise.to_string()
    } else {
        text.into_string()
    }
}

impl PmlHandle {
    /// Wraps a pml component's table (layout-checked by the core) and its
    /// context (parameters and logging).
    pub fn new(table: &'static PmlModule, context: ComponentContext) -> Self {
        PmlHandle { table, context }
    }

    /// The component's context.
    pub fn context(&self) -> &ComponentContext {
        &self.context
    }

    /// Starts the pml over the btl components `btls`, with `core` as the
    /// MPI layer's services.
    ///
    /// # Errors
    ///
    /// The pml's sentence when it cannot run (`"its init failed without a
    /// reason"` if it gave none).
    pub fn init<C: MpiCore>(
        &self,
        identity: &JobIdentity,
        core: &'static C,
        btls: &[BtlCandidate],
    ) -> Result<(), String> {
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
                &mut error,
            )
        };
        if ok {
            Ok(())
        } else {
            Err(reason(error, "its init failed without a reason"))
        }
    }

    /// Starts a send: the request handle (0: the send completed without
    /// error already; nothing to test or free), or why it cannot start with
    /// its kind (`Unreachable`, `PeerFailed`, or `Other`).
    ///
    /// # Safety
    ///
    /// `args.buf` is readable for `args.len` bytes and stays valid and
    /// unchanged until the request completes (a `test` answers its
    /// status).
    #[inline]
    pub unsafe fn isend(&self, args: &SendArgs) -> Result<u64, (RequestError, String)> {
        let mut request = 0u64;
        let mut kind = RequestError::None;
        let mut error = MaybeUninit::uninit();
        // SAFETY: as in `init`; the buffer is the caller's promise.
        let ok = unsafe { (self.table.isend)(args, &mut request, &mut kind, &mut error) };
        if ok {
            Ok(request)
        } else {
            // SAFETY: a refusing entry writes the sentence (the table's
            // contract).
            let error = unsafe { error.assume_init() };
            let kind = if kind == RequestError::None {
                RequestError::Other
            } else {
                kind
            };
            Err((
                kind,
                reason(error, "the pml refused the send without a reason"),
            ))
        }
    }

    /// [`PmlHandle::isend`] for a caller that asks `isend` again for the
    /// reason of a refusal: the request handle as `isend` answers it, or
    /// `None` when the pml refused (its sentence is dropped). Inlined
    /// whole into the caller.
    ///
    /// # Safety
    ///
    /// As [`PmlHandle::isend`].
    #[inline(always)]
    pub unsafe fn isend_quiet(&self, args: &SendArgs) -> Option<u64> {
        let mut request = 0u64;
        let mut kind = RequestError::None;
        let mut error = MaybeUninit::uninit();
        // SAFETY: as in `init`; the buffer is the caller's promise.
        let ok = unsafe { (self.table.isend)(args, &mut request, &mut kind, &mut error) };
        if ok {
            Some(request)
        } else {
            // SAFETY: a refusing entry writes the sentence (the table's
            // contract).
            drop_reason(unsafe { error.assume_init() });
            None
        }
    }

    /// Posts a receive: the request handle, or 0 and the status of a
    /// receive that completed without error already (nothing to test or
    /// free); or why it cannot be posted.
    ///
    /// # Safety
    ///
    /// `args.buf` is writable for `args.len` bytes and nothing else
    /// accesses it until the request completes.
    #[inline]
    pub unsafe fn irecv(&self, args: &RecvArgs) -> Result<(u64, RequestStatus), String> {
        let mut request = 0u64;
        let mut status = RequestStatus::default();
        let mut error = MaybeUninit::uninit();
        // SAFETY: as in `init`; the buffer is the caller's promise.
        let ok = unsafe { (self.table.irecv)(args, &mut request, &mut status, &mut error) };
        // SAFETY: `error` as the entry left it.
        unsafe { posted(ok, (request, status), error, "receive") }
    }

    /// The request's status once complete (then
    /// [`request_error`](Self::request_error) explains an error); `None`
    /// while it runs.
    #[inline]
    pub fn test(&self, request: u64) -> Option<RequestStatus> {
        let mut status = RequestStatus::default();
        // SAFETY: as in `init`.
        unsafe { (self.table.test)(request, &mut status) }.then_some(status)
    }

    /// As [`test`](Self::test), and a request that completed without error
    /// is released; one that completed in error stays until
    /// [`free`](Self::free), so [`request_error`](Self::request_error) can
    /// describe it.
    #[inline]
    pub fn take(&self, request: u64) -> Option<RequestStatus> {
        let mut status = RequestStatus::default();
        // SAFETY: as in `init`.
        unsafe { (self.table.take)(request, &mut status) }.then_some(status)
    }

    /// The pml's signals (see [`PmlSignals`]): valid while its library is
    /// loaded.
    pub fn signals(&self) -> &'static PmlSignals {
        // SAFETY: as in `init`.
        unsafe { (self.table.signals)() }
    }

    /// The sentence describing a request that completed in error.
    pub fn request_error(&self, request: u64) -> String {
        let mut text = RString::new();
        // SAFETY: as in `init`.
        unsafe { (self.table.request_error)(request, &mut text) };
        reason(text, "the pml gave no reason")
    }

    /// Releases a handle (a completed request, or one the caller no longer
    /// watches: it still completes).
    #[inline]
    pub fn free(&self, request: u64) {
        // SAFETY: as in `init`.
        unsafe { (self.table.free)(request) }
    }

    /// Cancels a receive that has not matched; true if it was cancelled.
    pub fn cancel(&self, request: u64) -> bool {
        // SAFETY: as in `init`.
        unsafe { (self.table.cancel)(request) }
    }

    /// Source, tag and length of a message that a receive with these
    /// arguments would match, if one has arrived.
    pub fn iprobe(&self, context: u32, source: i32, tag: i32) -> Option<RequestStatus> {
        let mut status = RequestStatus::default();
        // SAFETY: as in `init`.
        unsafe { (self.table.iprobe)(context, source, tag, &mut status) }.then_some(status)
    }

    /// Matched probe: the message handle and status (source, tag,
    /// length) of a message a receive with these arguments would match,
    /// taken out of matching for [`imrecv`](Self::imrecv); `None` if none
    /// has arrived.
    pub fn improbe(&self, context: u32, source: i32, tag: i32) -> Option<(u64, RequestStatus)> {
        let mut status = RequestStatus::default();
        let mut message = 0u64;
        // SAFETY: as in `init`.
        unsafe { (self.table.improbe)(context, source, tag, &mut message, &mut status) }
            .then_some((message, status))
    }

    /// Receives a message [`improbe`](Self::improbe) claimed, as
    /// [`irecv`](Self::irecv) answers (request 0: complete, with its
    /// status).
    ///
    /// # Errors
    /// The pml's sentence for a message handle it does not know.
    ///
    /// # Safety
    /// As for [`irecv`](Self::irecv).
    pub unsafe fn imrecv(
        &self,
        message: u64,
        args: &RecvArgs,
    ) -> Result<(u64, RequestStatus), String> {
        let mut request = 0u64;
        let mut status = RequestStatus::default();
        let mut error = MaybeUninit::uninit();
        // SAFETY: as in `init`; the buffer is the caller's promise.
        let ok =
            unsafe { (self.table.imrecv)(message, args, &mut request, &mut status, &mut error) };
        // SAFETY: `error` as the entry left it.
        unsafe { posted(ok, (request, status), error, "matched receive") }
    }

    /// The pml's own progress; returns the number of events.
    #[inline]
    pub fn progress(&self) -> usize {
        // SAFETY: as in `init`.
        unsafe { (self.table.progress)() }
    }

    /// Shuts the pml down (and the btls it started); no call may follow
    /// but a new `init`.
    pub fn finalize(&self) {
        // SAFETY: as in `init`.
        unsafe { (self.table.finalize)() }
    }
}

/// The answer of a receive entry point: the request and status when `ok`,
/// else the pml's sentence (or one saying it gave none, naming `what`).
///
/// # Safety
///
/// `error` is what the entry left: written when it answered false.
#[inline(always)]
unsafe fn posted(
    ok: bool,
    answer: (u64, RequestStatus),
    error: MaybeUninit<RString>,
    what: &str,
) -> Result<(u64, RequestStatus), String> {
    if ok {
        Ok(answer)
    } else {
        // SAFETY: a refusing entry writes the sentence (the caller's
        // promise, from the table's contract).
        let error = unsafe { error.assume_init() };
        Err(reason(
            error,
            &format!("the pml refused the {what} without a reason"),
        ))
    }
}
