//! The component side of the pml interface: a pml implements the safe
//! [`Pml`] trait and [`export_pml_component!`](crate::export_pml_component)
//! generates the rest — the `extern "C"` [`PmlModule`] table, the one
//! process-global state ([`oxmpi_plugin_api::Instance`]: exclusive entry
//! checked in every build profile, panics caught and the component stopped
//! after one), the [`BtlReceiver`] callbacks of a pml over btls, and the
//! component's root module.
//!
//! # The contract, as the adapter applies it
//!
//! - **One entry at a time.** Every entry point of the table and every btl
//!   callback runs through [`Instance::call`]: an entry that finds another
//!   one running (a nested call, or a second thread) is refused, in every
//!   build profile, instead of aliasing the pml's state. The MPI layer
//!   calls under its lock, so a refusal means a caller broke the contract.
//! - **Init.** [`Pml::init`] runs with the state entered: it receives the
//!   MPI layer's [`Core`] (modex and progress registration) and the btl
//!   components the MPI layer selected ([`CandidateBtl`]: a name, a
//!   [`BtlHandle`] and the receiver the adapter made for it). A pml over
//!   btls runs their `init` from its own; no callback may come from a btl
//!   during its `init` (the btl contract), and one that did would be
//!   refused. Init before a `finalize` of the previous one is refused.
//! - **Callbacks.** A btl calls the pml back from inside its own
//!   `progress`, which the MPI layer runs between pml entry points; the
//!   adapter turns each call into [`Pml::on_header`], [`Pml::on_fragment`]
//!   (once per fragment of an `on_fragments` batch, all in one entry),
//!   [`Pml::on_send_done`], [`Pml::on_rdma_done`] or [`Pml::on_peer_failed`] with the index of the
//!   btl among the candidates (the receiver's `ctx` carries it, nothing is
//!   allocated for it). A pml never runs a btl's `progress` from one of its
//!   own entry points: the callbacks would find the state entered and be
//!   refused.
//! - **Errors.** A refused entry answers the entry point's failure value
//!   with a sentence `pml <component> <entry>: <why>`: `isend`/`irecv`
//!   fail (`isend` with kind [`RequestError::Other`]), `test` reports the
//!   request completed in error ([`RequestError::Other`], source
//!   [`ANY_SOURCE`], tag [`ANY_TAG`]) so that no wait hangs on a pml that
//!   cannot answer, `request_error` gives the sentence, `cancel`,
//!   `iprobe` and `improbe` answer false, `imrecv` fails as `irecv` does,
//!   `progress` answers zero events, and a callback does nothing
//!   (`on_header` answers null: the btl keeps the payload).
//! - **Panics.** A panic in any entry point is caught, logged once through
//!   the pml's context at [`verbosity::ERROR`](oxmpi_plugin_api::verbosity::ERROR),
//!   and *poisons* the state: every later entry is refused with a sentence
//!   naming the first internal error (`the component stopped after an
//!   internal error (isend panicked: '…' at file:line)`), until `finalize`
//!   drops the state, which still runs [`Pml::finalize`] (to close the
//!   btls the pml started).

use crate::module::{
    BtlCandidate, PmlCore, PmlModule, PmlSignals, RecvArgs, RequestError, RequestStatus, SendArgs,
    ANY_SOURCE, ANY_TAG,
};
use abi_stable::std_types::{RSlice, RStr, RString};
use oxmpi_framework_btl::handle::{BtlHandle, BtlStart};
use oxmpi_framework_btl::module::{BtlReceiver, FragmentRef, JobIdentity, RdmaStatus};
use oxmpi_plugin_api::{ComponentContext, EntryError, Instance};
use std::ffi::c_void;
use std::mem::MaybeUninit;

/// What a pml component implements (one value per process, created by
/// [`Pml::init`]). Every method is called with exclusive access; see the
/// module docs for the contract.
pub trait Pml: Send + Sized + 'static {
    /// Creates the pml's state over the MPI layer's `core` and the btl
    /// `btls` it selected (a pml over btls starts those it uses with
    /// [`CandidateBtl::init`], publishes their cards and registers their
    /// progress). `Err`: the pml cannot run, in one sentence or more.
    fn init(
        context: &ComponentContext,
        identity: &JobIdentity,
        core: Core,
        btls: &[CandidateBtl],
    ) -> Result<Self, String>;

    /// Starts a send: the request handle, or 0 for a send that completed
    /// without error during the call (the adapter also turns a handle that
    /// `test` already answers complete without error into 0, and frees
    /// it); or why it cannot start with its kind: [`RequestError::Unreachable`] when no btl reaches the
    /// peer, [`RequestError::PeerFailed`] when the peer was lost,
    /// [`RequestError::Other`] for invalid arguments.
    ///
    /// # Safety
    ///
    /// `args.buf` is readable for `args.len` bytes and stays valid and
    /// unchanged until the request completes (the MPI layer's promise,
    /// passed on by the adapter).
    unsafe fn isend(&mut self, args: &SendArgs) -> Result<u64, (RequestError, String)>;

    /// Posts a receive: the request handle (never 0), or why it cannot be
    /// posted.
    ///
    /// # Safety
    ///
    /// `args.buf` is writable for `args.len` bytes, and nothing else
    /// accesses it until the request completes (the MPI layer's promise).
    unsafe fn irecv(&mut self, args: &RecvArgs) -> Result<u64, String>;

    /// Posts a receive or completes it during the call: 0 when it matched
    /// an arrived message and completed without error (its status is then
    /// in `status`, and there is nothing to test or free), otherwise what
    /// [`irecv`](Pml::irecv) answers. The generated `irecv` entry calls
    /// this. Default: `irecv`, and a request that [`take`](Pml::take)
    /// answers complete without error at once is answered as 0; a pml
    /// overrides it to complete a receive from an arrived message without
    /// making a request.
    ///
    /// # Safety
    ///
    /// As for [`irecv`](Pml::irecv).
    unsafe fn irecv_or_complete(
        &mut self,
        args: &RecvArgs,
        status: &mut RequestStatus,
    ) -> Result<u64, String> {
        // SAFETY: this method's requirement is `irecv`'s.
        let handle = unsafe { self.irecv(args) }?;
        Ok(match released_at_start(self, handle) {
            Some(st) => {
                *status = st;
                0
            }
            None => handle,
        })
    }

    /// The request's status once it is complete; `None` while it runs.
    /// Makes no progress itself.
    fn test(&mut self, request: u64) -> Option<RequestStatus>;

    /// [`test`](Pml::test), and a request that completed without error is
    /// released as by [`free`](Pml::free), in one step (a request in error
    /// stays, for [`request_error`](Pml::request_error)). Default: `test`,
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

    /// Matched probe: as [`iprobe`](Pml::iprobe), and the message leaves
    /// matching, kept under the returned handle (not 0) for
    /// [`imrecv`](Pml::imrecv).
    fn improbe(&mut self, context: u32, source: i32, tag: i32) -> Option<(u64, RequestStatus)>;

    /// Receives the message [`improbe`](Pml::improbe) claimed under
    /// `message` into `args.buf` (the message's source, tag and context
    /// stand; `args`'s are ignored). As
    /// [`irecv_or_complete`](Pml::irecv_or_complete): 0 with `status` when
    /// it completed during the call.
    ///
    /// # Errors
    /// A sentence when no message is kept under `message`.
    ///
    /// # Safety
    /// As for [`irecv`](Pml::irecv).
    unsafe fn imrecv(
        &mut self,
        message: u64,
        args: &RecvArgs,
        status: &mut RequestStatus,
    ) -> Result<u64, String>;

    /// The pml's own work (sending what btl callbacks queued). Returns the
    /// number of events.
    fn progress(&mut self) -> usize;

    /// Whether [`progress`](Pml::progress) has anything to do. The adapter
    /// asks after every entry that may change it and publishes the answer
    /// in the pml's [`PmlSignals`]; the MPI layer skips `progress` while it
    /// is false. Default: true (always polled).
    fn has_work(&self) -> bool {
        true
    }

    /// Shuts down what the pml started (its btls). Default: dropping the
    /// value. Also runs after an internal error stopped the pml.
    fn finalize(self) {}

    /// A btl callback: a fragment's header arrived from `peer` on `module`
    /// of btl `btl` (its index among the candidates) with `payload_len`
    /// bytes to follow. Returns where the btl should write the payload
    /// (`payload_len` writable bytes, valid until the fragment is
    /// delivered) or null to let the btl keep it. Default: null.
    fn on_header(
        &mut self,
        btl: usize,
        module: u32,
        peer: u32,
        header: &[u8],
        payload_len: usize,
    ) -> *mut u8 {
        let _ = (btl, module, peer, header, payload_len);
        std::ptr::null_mut()
    }

    /// A btl callback: a whole fragment arrived (its header again, and the
    /// payload: at the destination `on_header` gave, or in the btl's
    /// memory for this call). Default: ignored.
    fn on_fragment(&mut self, btl: usize, module: u32, peer: u32, header: &[u8], payload: &[u8]) {
        let _ = (btl, module, peer, header, payload);
    }

    /// A btl callback: a send the btl answered `Queued` (with this
    /// `cookie`) is finished; its payload is the pml's again. Default:
    /// ignored.
    fn on_send_done(&mut self, btl: usize, cookie: u64) {
        let _ = (btl, cookie);
    }

    /// A btl callback: the connection to `peer` on `module` failed;
    /// `reason` says how. Default: ignored.
    fn on_peer_failed(&mut self, btl: usize, module: u32, peer: u32, reason: &str) {
        let _ = (btl, module, peer, reason);
    }

    /// A btl callback: a get or put the btl answered `Queued` (with this
    /// `cookie`) ended with `status`; its local buffer is the pml's again.
    /// Default: ignored (a pml that never calls get/put gets none).
    fn on_rdma_done(&mut self, btl: usize, cookie: u64, status: RdmaStatus) {
        let _ = (btl, cookie, status);
    }
}

/// The process-global state of an exported pml: implemented by
/// [`export_pml_component!`](crate::export_pml_component), never by hand.
pub trait Exported: Pml {
    /// The component's name (for the sentences of refused entries).
    const COMPONENT: &'static str;

    /// The instance the generated entry points use.
    fn instance() -> &'static Instance<Self>;

    /// The signals the generated entry points keep current.
    fn signals() -> &'static PmlSignals;
}

/// Records in `P`'s signals an entry that may have completed requests or
/// queued work (see [`PmlSignals`]).
#[inline(always)]
fn record<P: Exported>(p: &mut P) {
    P::signals().record(p.has_work());
}

/// The status of request `handle`, just started, if it is complete
/// without error already; `take` has then released it (one in error stays
/// for its caller's `take`).
#[inline]
fn released_at_start<P: Pml>(p: &mut P, handle: u64) -> Option<RequestStatus> {
    p.take(handle).filter(|st| st.error == RequestError::None)
}

pub use oxmpi_framework_requests::services::Core;

/// One btl component the MPI layer selected, as the pml's `init` sees it.
#[derive(Clone, Copy)]
pub struct CandidateBtl {
    name: &'static str,
    index: usize,
    handle: BtlHandle,
    receiver: BtlReceiver,
}

impl CandidateBtl {
    /// The component's name (`self`, `tcp`, …).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Its index among the candidates: the `btl` argument of the
    /// callbacks it makes.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Its entry points.
    pub fn handle(&self) -> &BtlHandle {
        &self.handle
    }

    /// The receiver whose callbacks reach [`Pml`]'s methods with this
    /// btl's index.
    pub fn receiver(&self) -> BtlReceiver {
        self.receiver
    }

    /// Starts the btl with this receiver ([`BtlHandle::init`]).
    ///
    /// # Errors
    ///
    /// The btl's sentence when it cannot run.
    pub fn init(&self, identity: &JobIdentity) -> Result<BtlStart, String> {
        self.handle.init(identity, self.receiver)
    }
}

/// The receiver for btl number `btl` (its index among the candidates):
/// every callback reaches `P`'s instance with that index, carried in the
/// receiver's `ctx`.
pub fn receiver<P: Exported>(btl: usize) -> BtlReceiver {
    BtlReceiver {
        ctx: btl as *mut c_void,
        on_header: on_header::<P>,
        on_fragment: on_fragment::<P>,
        on_fragments: on_fragments::<P>,
        on_send_done: on_send_done::<P>,
        on_peer_failed: on_peer_failed::<P>,
        on_rdma_done: on_rdma_done::<P>,
    }
}

unsafe extern "C" fn on_header<P: Exported>(
    ctx: *mut c_void,
    module: u32,
    peer: u32,
    header: *const u8,
    header_len: usize,
    payload_len: usize,
) -> *mut u8 {
    // SAFETY: the btl contract: the header is readable during the call.
    let header = unsafe { slice_of(header, header_len) };
    P::instance()
        .call("on_header", |p| {
            let at = p.on_header(ctx as usize, module, peer, header, payload_len);
            record(p);
            at
        })
        .unwrap_or(std::ptr::null_mut())
}

unsafe extern "C" fn on_fragment<P: Exported>(
    ctx: *mut c_void,
    module: u32,
    peer: u32,
    header: *const u8,
    header_len: usize,
    payload: *const u8,
    payload_len: usize,
) {
    // SAFETY: the btl contract: header and payload are readable during the
    // call (the payload at the pml's destination, or in the btl's memory).
    let (header, payload) =
        unsafe { (slice_of(header, header_len), slice_of(payload, payload_len)) };
    let _ = P::instance().call("on_fragment", |p| {
        p.on_fragment(ctx as usize, module, peer, header, payload);
        record(p);
    });
}

unsafe extern "C" fn on_fragments<P: Exported>(
    ctx: *mut c_void,
    module: u32,
    fragments: *const FragmentRef,
    count: usize,
) {
    // SAFETY: the btl contract: `count` fragment descriptions at
    // `fragments`, readable during the call.
    let fragments = unsafe { slice_of(fragments, count) };
    let _ = P::instance().call("on_fragments", |p| {
        for f in fragments {
            // SAFETY: the btl contract: each header and payload is readable
            // during the call.
            let (header, payload) = unsafe {
                (
                    slice_of(f.header, f.header_len as usize),
                    slice_of(f.payload, f.payload_len),
                )
            };
            p.on_fragment(ctx as usize, module, f.peer, header, payload);
        }
        record(p);
    });
}

/// A slice of `count` values at `ptr` (null or 0: empty).
///
/// # Safety
///
/// When `count > 0` and `ptr` is not null, `ptr` points to `count`
/// initialized values readable for `'a`.
#[inline]
unsafe fn slice_of<'a, T>(ptr: *const T, count: usize) -> &'a [T] {
    if count == 0 || ptr.is_null() {
        &[]
    } else {
        // SAFETY: the caller's promise.
        unsafe { std::slice::from_raw_parts(ptr, count) }
    }
}

unsafe extern "C" fn on_send_done<P: Exported>(ctx: *mut c_void, cookie: u64) {
    let _ = P::instance().call("on_send_done", |p| {
        p.on_send_done(ctx as usize, cookie);
        record(p);
    });
}

unsafe extern "C" fn on_peer_failed<P: Exported>(
    ctx: *mut c_void,
    module: u32,
    peer: u32,
    reason: RStr<'_>,
) {
    let _ = P::instance().call("on_peer_failed", |p| {
        p.on_peer_failed(ctx as usize, module, peer, reason.as_str());
        record(p);
    });
}

unsafe extern "C" fn on_rdma_done<P: Exported>(ctx: *mut c_void, cookie: u64, status: RdmaStatus) {
    let _ = P::instance().call("on_rdma_done", |p| {
        p.on_rdma_done(ctx as usize, cookie, status);
        record(p);
    });
}

/// The sentence of a refused entry.
#[cold]
fn refused<P: Exported>(what: &str, why: EntryError) -> String {
    format!("pml {} {what}: {why}", P::COMPONENT)
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

/// The `extern "C"` table for `P` (what
/// [`export_pml_component!`](crate::export_pml_component) exports).
pub const fn table<P: Exported>() -> PmlModule {
    PmlModule {
        init: init::<P>,
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
        progress: progress::<P>,
        finalize: finalize::<P>,
        signals: signals::<P>,
    }
}

unsafe extern "C" fn init<P: Exported>(
    context: &ComponentContext,
    identity: &JobIdentity,
    core: PmlCore,
    btls: RSlice<'_, BtlCandidate>,
    error: &mut RString,
) -> bool {
    let candidates: Vec<CandidateBtl> = btls
        .as_slice()
        .iter()
        .enumerate()
        .map(|(index, c)| CandidateBtl {
            name: c.name.as_str(),
            index,
            handle: BtlHandle::new(c.module, c.context),
            receiver: receiver::<P>(index),
        })
        .collect();
    P::signals().reset();
    let installed = P::instance().install(context, || {
        P::init(context, identity, Core::new(core), &candidates)
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

unsafe extern "C" fn isend<P: Exported>(
    args: &SendArgs,
    request: &mut u64,
    kind: &mut RequestError,
    error: &mut MaybeUninit<RString>,
) -> bool {
    let started = P::instance().call("isend", |p| {
        // SAFETY: the MPI layer keeps the buffer valid and unchanged until
        // the request completes (the interface contract), which is
        // `isend`'s requirement.
        let started = unsafe { p.isend(args) };
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
            error.write(refused::<P>("isend", entry).into());
            false
        }
    }
}

unsafe extern "C" fn irecv<P: Exported>(
    args: &RecvArgs,
    request: &mut u64,
    status: &mut RequestStatus,
    error: &mut MaybeUninit<RString>,
) -> bool {
    recv_entry::<P>("irecv", request, error, |p| {
        // SAFETY: the MPI layer keeps the buffer valid and untouched until
        // the request completes (the interface contract), `irecv`'s
        // requirement.
        // A receive that matched an arrived message and completed without
        // error is handed back as handle 0 with its status.
        unsafe { p.irecv_or_complete(args, status) }
    })
}

/// The body of `irecv` and `imrecv`: `post` answers the request handle
/// (0: complete, its status written) or the refusal.
#[inline(always)]
fn recv_entry<P: Exported>(
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
fn status_entry<P: Exported>(
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

unsafe extern "C" fn test<P: Exported>(request: u64, status: &mut RequestStatus) -> bool {
    status_entry::<P>("test", status, |p| p.test(request))
}

unsafe extern "C" fn take<P: Exported>(request: u64, status: &mut RequestStatus) -> bool {
    status_entry::<P>("take", status, |p| p.take(request))
}

unsafe extern "C" fn request_error<P: Exported>(request: u64, error: &mut RString) {
    let text = P::instance()
        .call("request_error", |p| p.request_error(request))
        .unwrap_or_else(|entry| refused::<P>("request_error", entry));
    *error = text.into();
}

unsafe extern "C" fn free<P: Exported>(request: u64) {
    let _ = P::instance().call("free", |p| {
        p.free(request);
        record(p);
    });
}

unsafe extern "C" fn cancel<P: Exported>(request: u64) -> bool {
    P::instance()
        .call("cancel", |p| {
            let cancelled = p.cancel(request);
            record(p);
            cancelled
        })
        .unwrap_or(false)
}

unsafe extern "C" fn iprobe<P: Exported>(
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

unsafe extern "C" fn improbe<P: Exported>(
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

unsafe extern "C" fn imrecv<P: Exported>(
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

unsafe extern "C" fn progress<P: Exported>() -> usize {
    P::instance()
        .call("progress", |p| {
            let events = p.progress();
            record(p);
            events
        })
        .unwrap_or(0)
}

unsafe extern "C" fn signals<P: Exported>() -> &'static PmlSignals {
    P::signals()
}

unsafe extern "C" fn finalize<P: Exported>() {
    if let Ok(Some(p)) = P::instance().take() {
        let _ = oxmpi_plugin_api::guard::call(|| {
            p.finalize();
            Ok(())
        });
    }
}

/// Exports a pml component: the [`Pml`] implementation's instance and
/// [`PmlModule`] table (as `MODULE`), and the component's root module
/// (through [`oxmpi_plugin_api::export_component!`]).
///
/// ```ignore
/// oxmpi_framework_pml::export_pml_component! {
///     pml: MyPml,                 // impl Pml for MyPml { … }
///     lifecycle: MyComponent,     // impl Lifecycle for MyComponent { … }
///     component: "mine",
///     version: Version::new(1, 0, 0),
///     description: "What it does",
///     params: <MyParams as oxmpi_plugin_api::Params>::DECLS,
/// }
/// ```
///
/// The component crate depends on `abi_stable` too (the root module's
/// export names it by path).
#[macro_export]
macro_rules! export_pml_component {
    (
        pml: $pml:ty,
        lifecycle: $lifecycle:ty,
        component: $comp:expr,
        version: $ver:expr,
        description: $desc:expr,
        params: $params:expr $(,)?
    ) => {
        /// The component's pml module table (generated from its `Pml`).
        pub static MODULE: $crate::module::PmlModule = $crate::adapter::table::<$pml>();

        impl $crate::adapter::Exported for $pml {
            const COMPONENT: &'static str = $comp;

            fn instance() -> &'static $crate::__plugin_api::Instance<$pml> {
                static INSTANCE: $crate::__plugin_api::Instance<$pml> =
                    $crate::__plugin_api::Instance::new();
                &INSTANCE
            }

            fn signals() -> &'static $crate::module::PmlSignals {
                static SIGNALS: $crate::module::PmlSignals = $crate::module::PmlSignals::new();
                &SIGNALS
            }
        }

        $crate::__plugin_api::export_component! {
            lifecycle: $lifecycle,
            framework: "pml",
            component: $comp,
            version: $ver,
            interface: $crate::INTERFACE_VERSION,
            description: $desc,
            params: $params,
            module: &MODULE,
        }
    };
}

#[cfg(test)]
mod tests;
