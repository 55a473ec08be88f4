//! The caller side of [`RequestTable`]: [`RequestHandle`], a component's
//! layout-checked request entry points with safe methods that return
//! `Result`s and `Option`s (`isend`, `irecv` and `imrecv` stay `unsafe`:
//! the component reads and writes the buffers after they return).

use crate::table::RequestTable;
use crate::{sentence_or, Pieces, RecvArgs, RequestError, RequestStatus, SendArgs, Signals};
use abi_stable::std_types::RString;
use std::mem::MaybeUninit;

/// The request entry points of one component as its caller uses them.
#[derive(Clone, Copy)]
pub struct RequestHandle {
    table: &'static RequestTable,
}

/// Drops the sentence of a refusal nobody reads (kept out of line: a
/// refusal is rare).
#[cold]
#[inline(never)]
fn drop_reason(text: RString) {
    drop(text);
}

impl RequestHandle {
    /// Wraps a component's request table (layout-checked with its
    /// framework's module table).
    pub fn new(table: &'static RequestTable) -> Self {
        RequestHandle { table }
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
        // SAFETY: a layout-checked table whose entries check exclusive
        // entry themselves; the buffer is the caller's promise.
        let ok = unsafe { (self.table.isend)(args, &mut request, &mut kind, &mut error) };
        // SAFETY: `error` as the entry left it.
        unsafe { sent(ok, request, kind, error) }
    }

    /// Whether the component takes messages in pieces
    /// ([`isend_pieces`](Self::isend_pieces),
    /// [`irecv_pieces`](Self::irecv_pieces)); when not, the caller packs
    /// non-contiguous messages into bytes.
    pub fn takes_pieces(&self) -> bool {
        self.table.takes_pieces
    }

    /// As [`isend`](Self::isend), for the message `pieces` describes
    /// (`args.buf` is its origin, `args.len` its packed length).
    ///
    /// # Safety
    ///
    /// The elements `pieces` describes are readable and, with its
    /// `layout`, stay valid and unchanged until the request completes.
    pub unsafe fn isend_pieces(
        &self,
        args: &SendArgs,
        pieces: &Pieces,
    ) -> Result<u64, (RequestError, String)> {
        let mut request = 0u64;
        let mut kind = RequestError::None;
        let mut error = MaybeUninit::uninit();
        // SAFETY: a layout-checked table whose entries check exclusive
        // entry themselves; the elements are the caller's promise.
        let ok =
            unsafe { (self.table.isend_pieces)(args, pieces, &mut request, &mut kind, &mut error) };
        // SAFETY: `error` as the entry left it.
        unsafe { sent(ok, request, kind, error) }
    }

    /// As [`irecv`](Self::irecv), into the elements `pieces` describes
    /// (`args.buf` is their origin, `args.len` their packed length).
    ///
    /// # Safety
    ///
    /// The elements `pieces` describes are writable and, with its
    /// `layout`, stay valid and untouched by anything else until the
    /// request completes.
    pub unsafe fn irecv_pieces(
        &self,
        args: &RecvArgs,
        pieces: &Pieces,
    ) -> Result<(u64, RequestStatus), String> {
        let mut request = 0u64;
        let mut status = RequestStatus::default();
        let mut error = MaybeUninit::uninit();
        // SAFETY: a layout-checked table whose entries check exclusive
        // entry themselves; the elements are the caller's promise.
        let ok = unsafe {
            (self.table.irecv_pieces)(args, pieces, &mut request, &mut status, &mut error)
        };
        // SAFETY: `error` as the entry left it.
        unsafe { posted(ok, (request, status), error, "receive") }
    }

    /// [`RequestHandle::isend`] for a caller that asks `isend` again for the
    /// reason of a refusal: the request handle as `isend` answers it, or
    /// `None` when the pml refused (its sentence is dropped). Inlined
    /// whole into the caller.
    ///
    /// # Safety
    ///
    /// As [`RequestHandle::isend`].
    #[inline(always)]
    pub unsafe fn isend_quiet(&self, args: &SendArgs) -> Option<u64> {
        let mut request = 0u64;
        let mut kind = RequestError::None;
        let mut error = MaybeUninit::uninit();
        // SAFETY: a layout-checked table whose entries check exclusive
        // entry themselves; the buffer is the caller's promise.
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
        // SAFETY: a layout-checked table whose entries check exclusive
        // entry themselves; the buffer is the caller's promise.
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
        // SAFETY: a layout-checked table; the generated entry points check
        // exclusive entry themselves.
        unsafe { (self.table.test)(request, &mut status) }.then_some(status)
    }

    /// As [`test`](Self::test), and a request that completed without error
    /// is released; one that completed in error stays until
    /// [`free`](Self::free), so [`request_error`](Self::request_error) can
    /// describe it.
    #[inline]
    pub fn take(&self, request: u64) -> Option<RequestStatus> {
        let mut status = RequestStatus::default();
        // SAFETY: a layout-checked table; the generated entry points check
        // exclusive entry themselves.
        unsafe { (self.table.take)(request, &mut status) }.then_some(status)
    }

    /// The pml's signals (see [`Signals`]): valid while its library is
    /// loaded.
    pub fn signals(&self) -> &'static Signals {
        // SAFETY: a layout-checked table; the generated entry points check
        // exclusive entry themselves.
        unsafe { (self.table.signals)() }
    }

    /// The sentence describing a request that completed in error.
    pub fn request_error(&self, request: u64) -> String {
        let mut text = RString::new();
        // SAFETY: a layout-checked table; the generated entry points check
        // exclusive entry themselves.
        unsafe { (self.table.request_error)(request, &mut text) };
        sentence_or(text, "the pml gave no reason")
    }

    /// Releases a handle (a completed request, or one the caller no longer
    /// watches: it still completes).
    #[inline]
    pub fn free(&self, request: u64) {
        // SAFETY: a layout-checked table; the generated entry points check
        // exclusive entry themselves.
        unsafe { (self.table.free)(request) }
    }

    /// Cancels a receive that has not matched; true if it was cancelled.
    pub fn cancel(&self, request: u64) -> bool {
        // SAFETY: a layout-checked table; the generated entry points check
        // exclusive entry themselves.
        unsafe { (self.table.cancel)(request) }
    }

    /// Source, tag and length of a message that a receive with these
    /// arguments would match, if one has arrived.
    pub fn iprobe(&self, context: u32, source: i32, tag: i32) -> Option<RequestStatus> {
        let mut status = RequestStatus::default();
        // SAFETY: a layout-checked table; the generated entry points check
        // exclusive entry themselves.
        unsafe { (self.table.iprobe)(context, source, tag, &mut status) }.then_some(status)
    }

    /// Matched probe: the message handle and status (source, tag,
    /// length) of a message a receive with these arguments would match,
    /// taken out of matching for [`imrecv`](Self::imrecv); `None` if none
    /// has arrived.
    pub fn improbe(&self, context: u32, source: i32, tag: i32) -> Option<(u64, RequestStatus)> {
        let mut status = RequestStatus::default();
        let mut message = 0u64;
        // SAFETY: a layout-checked table; the generated entry points check
        // exclusive entry themselves.
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
        // SAFETY: a layout-checked table whose entries check exclusive
        // entry themselves; the buffer is the caller's promise.
        let ok =
            unsafe { (self.table.imrecv)(message, args, &mut request, &mut status, &mut error) };
        // SAFETY: `error` as the entry left it.
        unsafe { posted(ok, (request, status), error, "matched receive") }
    }

    /// The pml's own progress; returns the number of events.
    #[inline]
    pub fn progress(&self) -> usize {
        // SAFETY: a layout-checked table; the generated entry points check
        // exclusive entry themselves.
        unsafe { (self.table.progress)() }
    }

    /// Shuts the pml down (and the btls it started); no call may follow
    /// but a new `init`.
    pub fn finalize(&self) {
        // SAFETY: a layout-checked table; the generated entry points check
        // exclusive entry themselves.
        unsafe { (self.table.finalize)() }
    }
}

/// The answer of a send entry point: the request when `ok`, else the
/// refusal's kind (`Other` when the pml gave none) and sentence.
///
/// # Safety
///
/// `error` is what the entry left: written when it answered false.
#[inline(always)]
unsafe fn sent(
    ok: bool,
    request: u64,
    kind: RequestError,
    error: MaybeUninit<RString>,
) -> Result<u64, (RequestError, String)> {
    if ok {
        return Ok(request);
    }
    // SAFETY: a refusing entry writes the sentence (the caller's promise,
    // from the table's contract).
    let error = unsafe { error.assume_init() };
    let kind = if kind == RequestError::None {
        RequestError::Other
    } else {
        kind
    };
    Err((
        kind,
        sentence_or(error, "the pml refused the send without a reason"),
    ))
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
        Err(sentence_or(
            error,
            &format!("the pml refused the {what} without a reason"),
        ))
    }
}
