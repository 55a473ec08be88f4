//! The component side of [`RequestTable`]: a component implements the
//! safe [`Requests`] trait, its framework's export macro implements
//! [`Served`] (the one process-global instance and signals), and
//! [`request_table`] generates the `extern "C"` entry points, each with
//! exclusive entry checked ([`Instance::call`]), panics caught, and the
//! signals recorded after every entry that may complete a request.
//!
//! A refused entry answers the entry point's failure value with a
//! sentence `<framework> <component> <entry>: <why>`: `isend`/`irecv`
//! fail (`isend` with kind [`RequestError::Other`]), `test` reports the
//! request completed in error ([`BROKEN`]) so that no wait hangs,
//! `request_error` gives the sentence, `cancel`, `iprobe` and `improbe`
//! answer false, `imrecv` fails as `irecv` does, and `progress` answers
//! zero events.

use crate::table::RequestTable;
use crate::{
    Limits, Pieces, RecvArgs, RequestError, RequestStatus, SendArgs, Signals, ANY_SOURCE, ANY_TAG,
};
use abi_stable::std_types::RString;
use oxmpi_plugin_api::{ComponentContext, EntryError, Instance};
use std::mem::MaybeUninit;

/// The requests a component serves (one value per process). Every method
/// is called with exclusive access.
pub trait Requests: Send + Sized + 'static {
    /// Starts a send: the request handle, or 0 for a send that completed
    /// without error during the call (the adapter also turns a handle that
    /// `test` already answers complete without error into 0, and frees
    /// it); or why it cannot start with its kind: [`RequestError::Unreachable`] when no btl reaches the
    /// peer, [`RequestError::PeerFailed`] when the peer was lost,
    /// [`RequestError::Other`] for invalid arguments (a null buffer for
    /// more than 0 bytes among them: the MPI layer's common path hands
    /// such a call on unchecked and reports the refusal).
    ///
    /// # Safety
    ///
    /// `args.buf` is readable for `args.len` bytes and stays valid and
    /// unchanged until the request completes (the MPI layer's promise,
    /// passed on by the adapter).
    unsafe fn isend(&mut self, args: &SendArgs) -> Result<u64, (RequestError, String)>;

    /// Posts a receive, or completes it during the call: the request
    /// handle, or 0 when it matched an arrived message and completed
    /// without error (its status is then in `status`, and there is nothing
    /// to test or free); or why it cannot be posted. A component may
    /// always answer a handle (its caller then learns of the completion
    /// from `test`, `take` or the completion slot). A null buffer for more
    /// than 0 bytes is refused (as for `isend`).
    ///
    /// # Safety
    ///
    /// `args.buf` is writable for `args.len` bytes, and nothing else
    /// accesses it until the request completes (the MPI layer's promise).
    unsafe fn irecv(&mut self, args: &RecvArgs, status: &mut RequestStatus) -> Result<u64, String>;

    /// The request's status once it is complete; `None` while it runs.
    /// Makes no progress itself.
    fn test(&mut self, request: u64) -> Option<RequestStatus>;

    /// [`test`](Requests::test), and a request that completed without error is
    /// released as by [`free`](Requests::free), in one step (a request in error
    /// stays, for [`request_error`](Requests::request_error)). Default: `test`,
    /// then `free`.
    fn take(&mut self, request: u64) -> Option<RequestStatus> {
        let status = self.test(request)?;
        if status.error == RequestError::None {
            self.free(request);
        }
        Some(status)
    }

    /// The sentence describing a request (one that completed in error, or
    /// why the handle is unknown).
    fn request_error(&mut self, request: u64) -> String;

    /// Releases a handle (a completed request, or one the caller no longer
    /// watches: it still completes, and its completion slot, if it has
    /// one, is never written again).
    fn free(&mut self, request: u64);

    /// Cancels a receive that has not matched yet; true if it was
    /// cancelled (it then completes with `cancelled`).
    fn cancel(&mut self, request: u64) -> bool;

    /// Source, tag and length of a message a receive with these arguments
    /// would match, if one has arrived.
    fn iprobe(&mut self, context: u32, source: i32, tag: i32) -> Option<RequestStatus>;

    /// Matched probe: as [`iprobe`](Requests::iprobe), and the message leaves
    /// matching, kept under the returned handle (not 0) for
    /// [`imrecv`](Requests::imrecv).
    fn improbe(&mut self, context: u32, source: i32, tag: i32) -> Option<(u64, RequestStatus)>;

    /// Receives the message [`improbe`](Requests::improbe) claimed under
    /// `message` into `args.buf` (the message's source, tag and context
    /// stand; `args`'s are ignored). As [`irecv`](Requests::irecv): 0 with
    /// `status` when it completed during the call.
    ///
    /// # Errors
    /// A sentence when no message is kept under `message`.
    ///
    /// # Safety
    /// As for [`irecv`](Requests::irecv).
    unsafe fn imrecv(
        &mut self,
        message: u64,
        args: &RecvArgs,
        status: &mut RequestStatus,
    ) -> Result<u64, String>;

    /// Whether the component takes messages in pieces
    /// ([`isend_pieces`](Requests::isend_pieces),
    /// [`irecv_pieces`](Requests::irecv_pieces)). Default: false (the MPI
    /// layer packs non-contiguous messages into bytes).
    const TAKES_PIECES: bool = false;

    /// As [`isend`](Requests::isend), for the message `pieces` describes
    /// (`args.buf` is its origin, `args.len` its packed length). Called
    /// only when [`TAKES_PIECES`](Requests::TAKES_PIECES) is true; the
    /// default refuses.
    ///
    /// # Safety
    ///
    /// As for [`isend`](Requests::isend), for the elements `pieces`
    /// describes; its `layout` stays valid until the request completes.
    unsafe fn isend_pieces(
        &mut self,
        args: &SendArgs,
        pieces: &Pieces,
    ) -> Result<u64, (RequestError, String)> {
        let _ = (args, pieces);
        Err((RequestError::Other, NO_PIECES.to_string()))
    }

    /// As [`irecv`](Requests::irecv), into the elements `pieces` describes
    /// (`args.buf` is their origin, `args.len` their packed length). Called
    /// only when [`TAKES_PIECES`](Requests::TAKES_PIECES) is true; the
    /// default refuses.
    ///
    /// # Safety
    ///
    /// As for [`irecv`](Requests::irecv), for the elements `pieces`
    /// describes; its `layout` stays valid until the request completes.
    unsafe fn irecv_pieces(
        &mut self,
        args: &RecvArgs,
        pieces: &Pieces,
        status: &mut RequestStatus,
    ) -> Result<u64, String> {
        let _ = (args, pieces, status);
        Err(NO_PIECES.to_string())
    }

    /// The pml's own work (sending what btl callbacks queued). Returns the
    /// number of events.
    fn progress(&mut self) -> usize;

    /// Whether [`progress`](Requests::progress) has anything to do. The adapter
    /// asks after every entry that may change it and publishes the answer
    /// in the pml's [`Signals`]; the MPI layer skips `progress` while it
    /// is false. Default: true (always polled).
    fn has_work(&self) -> bool {
        true
    }

    /// The tags and context ids this component's requests can carry,
    /// asked once after `init`. Default: [`Limits::UNLIMITED`].
    fn limits(&self) -> Limits {
        Limits::UNLIMITED
    }

    /// Shuts down what the pml started (its btls). Default: dropping the
    /// value. Also runs after an internal error stopped the pml.
    fn finalize(self) {}
}

/// The refusal of a component that takes contiguous bytes only.
const NO_PIECES: &str = "it takes contiguous bytes only (its TAKES_PIECES is false), so the MPI layer packs non-contiguous messages for it";

/// The process-global state of a component that serves requests:
/// implemented by its framework's export macro, never by hand.
pub trait Served: Requests {
    /// The framework (`pml`, `mtl`), for the sentences of refused entries.
    const FRAMEWORK: &'static str;

    /// The component's name (for the same sentences).
    const COMPONENT: &'static str;

    /// The instance the generated entry points use.
    fn instance() -> &'static Instance<Self>;

    /// The signals the generated entry points keep current.
    fn signals() -> &'static Signals;
}

/// Implements [`Served`] for a component's type: its one process-global
/// [`Instance`] and [`Signals`], and the framework and component names of
/// its refusal sentences. The export macros of the frameworks that serve
/// requests (`export_pml_component!`, `export_mtl_component!`) use it.
///
/// ```ignore
/// oxmpi_framework_requests::impl_served!(MyPml, framework: "pml", component: "mine");
/// ```
#[macro_export]
macro_rules! impl_served {
    ($ty:ty, framework: $framework:expr, component: $comp:expr) => {
        impl $crate::serve::Served for $ty {
            const FRAMEWORK: &'static str = $framework;
            const COMPONENT: &'static str = $comp;

            fn instance() -> &'static $crate::__plugin_api::Instance<$ty> {
                static INSTANCE: $crate::__plugin_api::Instance<$ty> =
                    $crate::__plugin_api::Instance::new();
                &INSTANCE
            }

            fn signals() -> &'static $crate::Signals {
                static SIGNALS: $crate::Signals = $crate::Signals::new();
                &SIGNALS
            }
        }
    };
}

/// Records in `P`'s signals an entry that may have completed requests or
/// queued work (see [`Signals`]).
#[inline(always)]
pub fn record<P: Served>(p: &mut P) {
    P::signals().record(p.has_work());
}

/// The status of request `handle`, just started, if it is complete
/// without error already; `take` has then released it (one in error stays
/// for its caller's `take`).
#[inline]
fn released_at_start<P: Requests>(p: &mut P, handle: u64) -> Option<RequestStatus> {
    p.take(handle).filter(|st| st.error == RequestError::None)
}

/// The body of a framework's generated `init` entry: forgets `P`'s
/// signals, installs the value `make` builds as `P`'s one instance, and
/// answers its [`Limits`] in `limits`; false with `error` written when
/// `make` fails or the instance cannot be installed (already initialized,
/// a panic).
pub fn install<P: Served>(
    context: &ComponentContext,
    limits: &mut Limits,
    error: &mut RString,
    make: impl FnOnce() -> Result<P, String>,
) -> bool {
    P::signals().reset();
    let installed = P::instance().install(context, || {
        let p = make()?;
        *limits = p.limits();
        Ok::<P, String>(p)
    });
    match installed {
        Ok(Ok(())) => true,
        Ok(Err(why)) => {
            *error = why.into();
            false
        }
        Err(entry) => {
            *error = refused::<P>("init", entry).into();
            false
        }
    }
}

/// The sentence of a refused entry.
#[cold]
pub fn refused<P: Served>(what: &str, why: EntryError) -> String {
    format!("{} {} {what}: {why}", P::FRAMEWORK, P::COMPONENT)
}

/// The status `test` answers when the pml cannot answer for a request: the
/// request completed in error (`request_error` gives the sentence).
pub const BROKEN: RequestStatus = RequestStatus {
    source: ANY_SOURCE,
    tag: ANY_TAG,
    count: 0,
    cancelled: false,
    error: RequestError::Other,
};

/// The request entry points for `P` (what its framework's module table
/// holds).
pub const fn request_table<P: Served>() -> RequestTable {
    RequestTable {
        isend: isend::<P>,
        irecv: irecv::<P>,
        test: test::<P>,
        take: take::<P>,
        request_error: request_error::<P>,
        free: free::<P>,
        cancel: cancel::<P>,
        iprobe: iprobe::<P>,
        improbe: improbe::<P>,
        imrecv: imrecv::<P>,
        takes_pieces: P::TAKES_PIECES,
        isend_pieces: isend_pieces::<P>,
        irecv_pieces: irecv_pieces::<P>,
        progress: progress::<P>,
        finalize: finalize::<P>,
        signals: signals::<P>,
    }
}

unsafe extern "C" fn isend<P: Served>(
    args: &SendArgs,
    request: &mut u64,
    kind: &mut RequestError,
    error: &mut MaybeUninit<RString>,
) -> bool {
    send_entry::<P>("isend", request, kind, error, |p| {
        // SAFETY: the MPI layer keeps the buffer valid and unchanged until
        // the request completes (the interface contract), which is
        // `isend`'s requirement.
        unsafe { p.isend(args) }
    })
}

unsafe extern "C" fn isend_pieces<P: Served>(
    args: &SendArgs,
    pieces: &Pieces,
    request: &mut u64,
    kind: &mut RequestError,
    error: &mut MaybeUninit<RString>,
) -> bool {
    send_entry::<P>("isend_pieces", request, kind, error, |p| {
        // SAFETY: the MPI layer keeps the elements and their layout valid
        // and unchanged until the request completes (the interface
        // contract), `isend_pieces`'s requirement.
        unsafe { p.isend_pieces(args, pieces) }
    })
}

/// The body of `isend` and `isend_pieces`: `start` answers the request
/// handle (0: complete) or the refusal with its kind.
#[inline(always)]
fn send_entry<P: Served>(
    what: &'static str,
    request: &mut u64,
    kind: &mut RequestError,
    error: &mut MaybeUninit<RString>,
    start: impl FnOnce(&mut P) -> Result<u64, (RequestError, String)>,
) -> bool {
    let started = P::instance().call(what, |p| {
        let started = start(p);
        record(p);
        let handle = started?;
        // A send that is already complete without error is handed back as
        // handle 0: the caller has nothing to test or free.
        *request = match handle {
            0 => 0,
            _ if released_at_start(p, handle).is_some() => 0,
            _ => handle,
        };
        Ok(())
    });
    match started {
        Ok(Ok(())) => true,
        Ok(Err((k, why))) => {
            *kind = k;
            error.write(why.into());
            false
        }
        Err(entry) => {
            *kind = RequestError::Other;
            error.write(refused::<P>(what, entry).into());
            false
        }
    }
}

unsafe extern "C" fn irecv<P: Served>(
    args: &RecvArgs,
    request: &mut u64,
    status: &mut RequestStatus,
    error: &mut MaybeUninit<RString>,
) -> bool {
    recv_entry::<P>("irecv", request, error, |p| {
        // SAFETY: the MPI layer keeps the buffer valid and untouched until
        // the request completes (the interface contract), `irecv`'s
        // requirement.
        unsafe { p.irecv(args, status) }
    })
}

unsafe extern "C" fn irecv_pieces<P: Served>(
    args: &RecvArgs,
    pieces: &Pieces,
    request: &mut u64,
    status: &mut RequestStatus,
    error: &mut MaybeUninit<RString>,
) -> bool {
    recv_entry::<P>("irecv_pieces", request, error, |p| {
        // SAFETY: the MPI layer keeps the elements and their layout valid
        // and untouched until the request completes (the interface
        // contract), `irecv_pieces`'s requirement.
        unsafe { p.irecv_pieces(args, pieces, status) }
    })
}

/// The body of `irecv`, `irecv_pieces` and `imrecv`: `post` answers the request handle
/// (0: complete, its status written) or the refusal.
#[inline(always)]
fn recv_entry<P: Served>(
    what: &'static str,
    request: &mut u64,
    error: &mut MaybeUninit<RString>,
    post: impl FnOnce(&mut P) -> Result<u64, String>,
) -> bool {
    let posted = P::instance().call(what, |p| {
        let posted = post(p);
        record(p);
        *request = posted?;
        Ok::<(), String>(())
    });
    match posted {
        Ok(Ok(())) => true,
        Ok(Err(why)) => {
            error.write(why.into());
            false
        }
        Err(entry) => {
            error.write(refused::<P>(what, entry).into());
            false
        }
    }
}

/// The body of `test` and `take`: `ask` answers for the request; a
/// refused entry answers complete in error ([`BROKEN`]) so no wait hangs.
#[inline(always)]
fn status_entry<P: Served>(
    what: &str,
    status: &mut RequestStatus,
    ask: impl FnOnce(&mut P) -> Option<RequestStatus>,
) -> bool {
    // The status is written where the caller wants it from inside the
    // entry, so only a flag travels back through the guard's layers.
    let answered = P::instance().call(what, |p| match ask(p) {
        Some(st) => {
            *status = st;
            true
        }
        None => false,
    });
    match answered {
        Ok(done) => done,
        Err(_) => {
            *status = BROKEN;
            true
        }
    }
}

unsafe extern "C" fn test<P: Served>(request: u64, status: &mut RequestStatus) -> bool {
    status_entry::<P>("test", status, |p| p.test(request))
}

unsafe extern "C" fn take<P: Served>(request: u64, status: &mut RequestStatus) -> bool {
    status_entry::<P>("take", status, |p| p.take(request))
}

unsafe extern "C" fn request_error<P: Served>(request: u64, error: &mut RString) {
    let text = P::instance()
        .call("request_error", |p| p.request_error(request))
        .unwrap_or_else(|entry| refused::<P>("request_error", entry));
    *error = text.into();
}

unsafe extern "C" fn free<P: Served>(request: u64) {
    let _ = P::instance().call("free", |p| {
        p.free(request);
        record(p);
    });
}

unsafe extern "C" fn cancel<P: Served>(request: u64) -> bool {
    P::instance()
        .call("cancel", |p| {
            let cancelled = p.cancel(request);
            record(p);
            cancelled
        })
        .unwrap_or(false)
}

unsafe extern "C" fn iprobe<P: Served>(
    context: u32,
    source: i32,
    tag: i32,
    status: &mut RequestStatus,
) -> bool {
    match P::instance().call("iprobe", |p| p.iprobe(context, source, tag)) {
        Ok(Some(st)) => {
            *status = st;
            true
        }
        _ => false,
    }
}

unsafe extern "C" fn improbe<P: Served>(
    context: u32,
    source: i32,
    tag: i32,
    message: &mut u64,
    status: &mut RequestStatus,
) -> bool {
    match P::instance().call("improbe", |p| p.improbe(context, source, tag)) {
        Ok(Some((m, st))) => {
            *message = m;
            *status = st;
            true
        }
        _ => false,
    }
}

unsafe extern "C" fn imrecv<P: Served>(
    message: u64,
    args: &RecvArgs,
    request: &mut u64,
    status: &mut RequestStatus,
    error: &mut MaybeUninit<RString>,
) -> bool {
    recv_entry::<P>("imrecv", request, error, |p| {
        // SAFETY: the MPI layer keeps the buffer valid and untouched until
        // the request completes (the interface contract), `imrecv`'s
        // requirement.
        unsafe { p.imrecv(message, args, status) }
    })
}

unsafe extern "C" fn progress<P: Served>() -> usize {
    P::instance()
        .call("progress", |p| {
            let events = p.progress();
            record(p);
            events
        })
        .unwrap_or(0)
}

unsafe extern "C" fn signals<P: Served>() -> &'static Signals {
    P::signals()
}

unsafe extern "C" fn finalize<P: Served>() {
    if let Ok(Some(p)) = P::instance().take() {
        let _ = oxmpi_plugin_api::guard::call(|| {
            p.finalize();
            Ok(())
        });
    }
}
