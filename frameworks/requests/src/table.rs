//! The request entry points as a table: what a component that serves
//! requests exports (inside its framework's module table) and its caller
//! calls through [`crate::handle::RequestHandle`].

use crate::{Pieces, RecvArgs, RequestError, RequestStatus, SendArgs, Signals};
use abi_stable::std_types::RString;
use abi_stable::StableAbi;
use std::mem::MaybeUninit;

/// The request entry points of a component (see the crate docs for the
/// contract of handles, completion slots and signals).
#[repr(C)]
#[derive(StableAbi)]
pub struct RequestTable {
    /// Starts a send. False (with `kind`, and `error` written) if it
    /// cannot start: `Unreachable` when no btl reaches the peer (the
    /// sentence names the peer and each btl's reason), `PeerFailed` when
    /// the peer was lost, `Other` for invalid arguments. `request` 0: the
    /// send completed without error during the call (nothing to test or
    /// free). `error` is uninitialized on entry and written only when the
    /// call answers false (the caller then owns the sentence): a send that
    /// starts costs no sentence to build or drop.
    pub isend: unsafe extern "C" fn(
        args: &SendArgs,
        request: &mut u64,
        kind: &mut RequestError,
        error: &mut MaybeUninit<RString>,
    ) -> bool,
    /// Posts a receive. False (with `error` written, as for `isend`) if it
    /// cannot be posted. `request` 0: the receive completed without error
    /// during the call (a message had arrived) and `status` holds its
    /// outcome; nothing to test or free.
    pub irecv: unsafe extern "C" fn(
        args: &RecvArgs,
        request: &mut u64,
        status: &mut RequestStatus,
        error: &mut MaybeUninit<RString>,
    ) -> bool,
    /// Whether the request is complete; if so, fills `status`. Makes no
    /// progress itself.
    pub test: unsafe extern "C" fn(request: u64, status: &mut RequestStatus) -> bool,
    /// As `test`, and a request that completed without error is released
    /// (its handle becomes unknown); one that completed in error stays
    /// until `free`, so that `request_error` can describe it.
    pub take: unsafe extern "C" fn(request: u64, status: &mut RequestStatus) -> bool,
    /// The sentence describing a request that completed in error.
    pub request_error: unsafe extern "C" fn(request: u64, error: &mut RString),
    /// Releases a handle (see the module docs).
    pub free: unsafe extern "C" fn(request: u64),
    /// Cancels a receive that has not matched yet; true if it was cancelled
    /// (it then completes with `cancelled`). Sends cannot be cancelled.
    pub cancel: unsafe extern "C" fn(request: u64) -> bool,
    /// Whether a message that a receive with these arguments would match has
    /// arrived; if so, fills `status` (source, tag, length).
    pub iprobe: unsafe extern "C" fn(
        context: u32,
        source: i32,
        tag: i32,
        status: &mut RequestStatus,
    ) -> bool,
    /// Matched probe: as `iprobe`, and the message found leaves matching
    /// (no receive or probe sees it again) and waits under `message` for
    /// `imrecv`.
    pub improbe: unsafe extern "C" fn(
        context: u32,
        source: i32,
        tag: i32,
        message: &mut u64,
        status: &mut RequestStatus,
    ) -> bool,
    /// Receives the message `improbe` claimed into `args.buf` (`args`'s
    /// source, tag and context are ignored: the message's own are used).
    /// Answers as `irecv`; false (with `error` written) for a message
    /// handle the pml does not know (already received, or never claimed).
    pub imrecv: unsafe extern "C" fn(
        message: u64,
        args: &RecvArgs,
        request: &mut u64,
        status: &mut RequestStatus,
        error: &mut MaybeUninit<RString>,
    ) -> bool,
    /// Whether the component takes messages in pieces (`isend_pieces`,
    /// `irecv_pieces`). While false the MPI layer packs the elements of a
    /// non-contiguous datatype into bytes and never calls those two.
    pub takes_pieces: bool,
    /// As `isend`, for the message `pieces` describes: `args.buf` is its
    /// origin and `args.len` its packed length.
    pub isend_pieces: unsafe extern "C" fn(
        args: &SendArgs,
        pieces: &Pieces,
        request: &mut u64,
        kind: &mut RequestError,
        error: &mut MaybeUninit<RString>,
    ) -> bool,
    /// As `irecv`, into the elements `pieces` describes: `args.buf` is
    /// their origin and `args.len` their packed length (a longer message
    /// is truncated to it).
    pub irecv_pieces: unsafe extern "C" fn(
        args: &RecvArgs,
        pieces: &Pieces,
        request: &mut u64,
        status: &mut RequestStatus,
        error: &mut MaybeUninit<RString>,
    ) -> bool,
    /// Work the pml does itself (retrying sends a btl could not take).
    /// Returns the number of events.
    pub progress: unsafe extern "C" fn() -> usize,
    /// Shuts down what the component started (a pml's btls). Called once,
    /// after every request completed and all ranks reached finalize.
    pub finalize: unsafe extern "C" fn(),
    /// The pml's [`Signals`] (valid while the library is loaded; reset
    /// by `init`).
    pub signals: unsafe extern "C" fn() -> &'static Signals,
}
