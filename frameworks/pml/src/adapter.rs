//! The component side of the pml interface: a pml implements the safe
//! [`Requests`] trait (the request entry points, shared with every
//! interface that serves requests; see [`oxmpi_framework_requests::serve`])
//! and the [`Pml`] trait (`init` and the btl callbacks), and
//! [`export_pml_component!`](crate::export_pml_component) generates the
//! rest — the `extern "C"` [`PmlModule`] table, the one process-global
//! state ([`oxmpi_plugin_api::Instance`]: exclusive entry checked in every
//! build profile, panics caught and the component stopped after one), the
//! [`BtlReceiver`] callbacks of a pml over btls, and the component's root
//! module.
//!
//! # The contract, as the adapter applies it
//!
//! - **One entry at a time.** Every entry point of the table and every btl
//!   callback runs through [`Instance::call`](oxmpi_plugin_api::Instance::call): an entry that finds another
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
//!   fail (`isend` with kind [`RequestError::Other`](crate::module::RequestError::Other)), `test` reports the
//!   request completed in error ([`RequestError::Other`](crate::module::RequestError::Other), source
//!   `ANY_SOURCE`, tag `ANY_TAG`) so that no wait hangs on a pml that
//!   cannot answer, `request_error` gives the sentence, `cancel`,
//!   `iprobe` and `improbe` answer false, `imrecv` fails as `irecv` does,
//!   `progress` answers zero events, and a callback does nothing
//!   (`on_header` answers null: the btl keeps the payload).
//! - **Panics.** A panic in any entry point is caught, logged once through
//!   the pml's context at [`verbosity::ERROR`](oxmpi_plugin_api::verbosity::ERROR),
//!   and *poisons* the state: every later entry is refused with a sentence
//!   naming the first internal error (`the component stopped after an
//!   internal error (isend panicked: '…' at file:line)`), until `finalize`
//!   drops the state, which still runs [`Requests::finalize`] (to close the
//!   btls the pml started).

use crate::module::{BtlCandidate, Limits, MtlCandidate, PmlCore, PmlModule, PmlTransport};
use abi_stable::std_types::{ROption, RSlice, RStr, RString};
use oxmpi_framework_btl::handle::{BtlHandle, BtlStart};
use oxmpi_framework_btl::module::{BtlReceiver, FragmentRef, JobIdentity, RdmaStatus};
pub use oxmpi_framework_mtl::handle::MtlHandle;
use oxmpi_framework_requests::serve::{install, record};
pub use oxmpi_framework_requests::serve::{request_table, Requests, Served, BROKEN};
use oxmpi_plugin_api::ComponentContext;
use std::ffi::c_void;

/// What a pml component implements (one value per process, created by
/// [`Pml::init`]). Every method is called with exclusive access; see the
/// module docs for the contract.
pub trait Pml: Requests {
    /// What the pml moves messages over (the table's `transport`).
    /// Default: the btls.
    const TRANSPORT: PmlTransport = PmlTransport::Btls;

    /// Creates the pml's state over the MPI layer's `core` and what it
    /// selected for the pml's [`TRANSPORT`](Pml::TRANSPORT): the btl
    /// `btls` (a pml over btls starts those it uses with
    /// [`CandidateBtl::init`], publishes their cards and registers their
    /// progress), or the `mtl` (a pml over an MTL starts it with
    /// [`MtlHandle::init`]). `Err`: the pml cannot run, in one sentence or
    /// more. Its [`Requests::limits`] are asked right after.
    fn init(
        context: &ComponentContext,
        identity: &JobIdentity,
        core: Core,
        btls: &[CandidateBtl],
        mtl: Option<MtlHandle>,
    ) -> Result<Self, String>;

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

/// An exported pml: its [`Pml`] and the [`Served`] state
/// [`export_pml_component!`](crate::export_pml_component) implements.
pub trait Exported: Pml + Served {}

impl<P: Pml + Served> Exported for P {}

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

/// The `extern "C"` table for `P` (what
/// [`export_pml_component!`](crate::export_pml_component) exports).
pub const fn table<P: Exported>() -> PmlModule {
    PmlModule {
        transport: P::TRANSPORT,
        init: init::<P>,
        requests: request_table::<P>(),
    }
}

unsafe extern "C" fn init<P: Exported>(
    context: &ComponentContext,
    identity: &JobIdentity,
    core: PmlCore,
    btls: RSlice<'_, BtlCandidate>,
    mtl: ROption<MtlCandidate>,
    limits: &mut Limits,
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
    let mtl = mtl.as_ref().map(MtlHandle::new).into_option();
    install::<P>(context, limits, error, || {
        P::init(context, identity, Core::new(core), &candidates, mtl)
    })
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

        $crate::__requests::impl_served!($pml, framework: "pml", component: $comp);

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
