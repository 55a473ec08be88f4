//! The component side of the btl interface: a btl implements the safe
//! [`Btl`] trait and [`export_btl_component!`](crate::export_btl_component)
//! generates the rest — the `extern "C"` [`BtlComponentModule`] table, the
//! one process-global state ([`oxmpi_plugin_api::Instance`]: exclusive
//! entry checked in every build, panics caught and the component stopped
//! after one), and the component's root module.
//!
//! The trait's types carry the interface contract (see [`crate::module`]),
//! so a btl written against it needs no `unsafe` of its own for it:
//!
//! - a [`Payload`] is the pml's payload of one send, valid while the btl
//!   holds the token: [`Btl::send`] either gives it back with the outcome
//!   ([`Sent::Done`], [`Sent::WouldBlock`], [`Sent::Failed`]) or keeps it
//!   ([`Sent::Queued`]) until it hands it to [`Pml::send_done`];
//! - the pml's callbacks ([`Pml`]) exist only inside [`Btl::progress`], so
//!   a btl cannot call back from `send` or `add_peer`;
//! - a [`Destination`] is where the pml wants a payload written, valid
//!   until the btl delivers the fragment with [`Arrived::Placed`];
//! - a [`GetBuffer`] / [`PutBuffer`] is the pml's local buffer of one get
//!   or put, valid while the btl holds the token: [`Btl::get`] and
//!   [`Btl::put`] give it back with the outcome ([`Rdma`]) or keep it
//!   ([`Rdma::Queued`]) until they hand it to [`Pml::get_done`] /
//!   [`Pml::put_done`]. The generated entry points call them only for a
//!   module whose description offers the operation ([`flags::GET`] /
//!   [`flags::PUT`]), with 1 to
//!   `max_rdma_size` bytes and a non-null buffer; anything else is refused
//!   (`Failed`, logged) without reaching the btl.

use crate::module::{
    BtlComponentModule, BtlModuleInfo, BtlReceiver, JobIdentity, RdmaStatus, SendOutcome,
    MAX_HEADER,
};
use abi_stable::std_types::{RSlice, RStr, RString, RVec};
use oxmpi_plugin_api::{verbosity, ComponentContext, EntryError, Instance};
use std::marker::PhantomData;

mod batch;
mod rdma;

#[cfg(doc)]
use crate::module::flags;
pub use batch::{Fragments, Refused};
use rdma::RdmaLimits;
pub use rdma::{GetBuffer, Rdma};

/// What a btl component implements (one value per process, created by
/// [`Btl::init`]). Every method is called with exclusive access; see the
/// module docs for the types that carry the contract.
pub trait Btl: Send + Sized + 'static {
    /// Creates the component's state and modules. `Err` means the
    /// component cannot run (a bad parameter value, a failed system call):
    /// one sentence saying why. [`Started::NothingUsable`] is a normal
    /// answer (no device here).
    fn init(context: &ComponentContext, identity: &JobIdentity) -> Result<Started<Self>, String>;

    /// This process's contact card (published under `btl_<component>`).
    /// Default: empty (the btl needs none).
    fn contact_card(&self) -> Vec<u8> {
        Vec::new()
    }

    /// Resolves `peer` for `module` from its card: an endpoint, or why the
    /// module cannot reach it (one sentence).
    fn add_peer(&mut self, module: u32, peer: u32, card: &[u8]) -> Result<u64, String>;

    /// Sends one fragment: `header` (at most [`MAX_HEADER`] bytes, checked
    /// by the adapter) and `payload`. See [`Sent`].
    fn send(&mut self, module: u32, endpoint: u64, header: &[u8], payload: Payload) -> Sent;

    /// Reads `local.len()` bytes at `remote` in the peer's memory (the
    /// peer of `endpoint` on `module`) into `local` (see [`Rdma`]). Called
    /// only for a module described with [`flags::GET`]. Default: refused
    /// (`Failed`), for a btl that offers no get.
    fn get(
        &mut self,
        module: u32,
        endpoint: u64,
        remote: u64,
        local: GetBuffer,
    ) -> Rdma<GetBuffer> {
        let _ = (module, endpoint, remote);
        Rdma::Failed(local)
    }

    /// Writes `local` at `remote` in the peer's memory (see [`Rdma`]).
    /// Called only for a module described with
    /// [`flags::PUT`]. Default: refused
    /// (`Failed`), for a btl that offers no put.
    fn put(
        &mut self,
        module: u32,
        endpoint: u64,
        remote: u64,
        local: PutBuffer,
    ) -> Rdma<PutBuffer> {
        let _ = (module, endpoint, remote);
        Rdma::Failed(local)
    }

    /// Makes progress on every module, delivering through `pml`. Returns
    /// the number of events (fragments delivered, sends and get/puts
    /// finished, peers reported).
    fn progress(&mut self, pml: &Pml<'_>) -> usize;

    /// Closes every module. Default: dropping the value.
    fn finalize(self) {}

    /// Called once, from a later progress call, after an entry point of
    /// this btl panicked: the state may be inconsistent and no other
    /// method will run. A btl reports its peers failed here
    /// ([`Pml::peer_failed`]) so that no request waits forever. Default:
    /// nothing.
    fn stop_after_internal_error(&mut self, pml: &Pml<'_>, message: &str) {
        let _ = (pml, message);
    }
}

/// The process-global state of an exported btl: implemented by
/// [`export_btl_component!`](crate::export_btl_component) (by hand only
/// for a btl whose table is not a component's, such as a test kit's
/// in-process btl).
pub trait Exported: Btl {
    /// The instance the generated entry points use.
    fn instance() -> &'static Instance<Adapted<Self>>;
}

/// The answer of [`Btl::init`].
pub enum Started<B> {
    /// The btl runs with these modules (indices 0, 1, … in this order).
    Ready(B, Vec<BtlModuleInfo>),
    /// Nothing usable here; the sentence says why (no module is created).
    NothingUsable(String),
}

/// What a btl holds between calls: its value, the pml's callbacks, its
/// modules' RDMA flags and limits, and whether it was stopped after an
/// internal error.
pub struct Adapted<B> {
    btl: B,
    receiver: BtlReceiver,
    rdma: Vec<RdmaLimits>,
    stopped: bool,
}

// SAFETY: the receiver's `ctx` is the pml's pointer, used only to call the
// pml back from inside `progress`, which the pml expects on whichever
// thread calls `progress` (the framework contract).
unsafe impl<B: Send> Send for Adapted<B> {}

/// The pml's bytes lent to the btl to read, valid and unchanged while
/// the token exists: the payload of a send ([`Payload`]) or the local
/// buffer of a put ([`PutBuffer`]). The kind `K` keeps the two apart, so
/// a payload cannot finish a put or the reverse.
pub struct Lent<K> {
    ptr: *const u8,
    len: usize,
    cookie: u64,
    _kind: PhantomData<fn() -> K>,
}

/// The kind of [`Payload`].
pub enum ForSend {}

/// The kind of [`PutBuffer`].
pub enum ForPut {}

/// The payload of one send: valid and unchanged while this token exists
/// (the pml keeps it so until the btl answers `Done`/`WouldBlock`/`Failed`
/// or calls `on_send_done`, which is what giving the token back means).
pub type Payload = Lent<ForSend>;

/// What a put reads: `len()` bytes of the pml's, valid and unchanged while
/// the token exists (until the btl answers, or gives it back through
/// [`Pml::put_done`]).
pub type PutBuffer = Lent<ForPut>;

// SAFETY: the token is a read-only view of memory the pml keeps valid
// while it exists; moving it to another thread does not change that.
unsafe impl<K> Send for Lent<K> {}

impl<K> Lent<K> {
    /// The token the generated entry point makes from its arguments.
    #[inline]
    pub(crate) fn new(ptr: *const u8, len: usize, cookie: u64) -> Self {
        Lent {
            ptr,
            len,
            cookie,
            _kind: PhantomData,
        }
    }

    /// Length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the bytes are empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: non-null with `len` readable bytes (checked when the
        // token was made), valid and unchanged while the token exists.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The first byte's address (for gathered system calls such as
    /// `sendmsg` or `process_vm_writev`; the bytes stay valid while the
    /// token exists).
    #[inline]
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr
    }

    /// A token for `len` bytes at `ptr`, finished with `cookie` (the test
    /// kit's stand-in for the generated `send` or `put`, which make the
    /// tokens a btl sees).
    ///
    /// # Safety
    ///
    /// `ptr` is non-null (when `len > 0`) and readable for `len` bytes,
    /// valid and unchanged while the token exists.
    #[doc(hidden)]
    #[cfg(any(test, feature = "testkit"))]
    pub unsafe fn from_raw(ptr: *const u8, len: usize, cookie: u64) -> Self {
        Lent::new(ptr, len, cookie)
    }
}

/// Where the pml wants one fragment's payload written: `len()` writable
/// bytes, valid until the btl delivers the fragment with
/// [`Arrived::Placed`] (or drops the token when the peer fails).
pub struct Destination {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the token is the only writer of memory the pml keeps valid while
// the fragment is in flight; moving it between threads changes nothing.
unsafe impl Send for Destination {}

impl Destination {
    /// Length in bytes (the fragment's payload length).
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the destination is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies `bytes` to `offset`.
    ///
    /// # Panics
    ///
    /// When `offset + bytes.len()` passes the end (a bug in the btl).
    #[inline]
    pub fn write_at(&mut self, offset: usize, bytes: &[u8]) {
        let end = offset.checked_add(bytes.len()).expect("offset overflows");
        assert!(
            end <= self.len,
            "write of {} bytes at {offset} passes the {}-byte destination",
            bytes.len(),
            self.len
        );
        if bytes.is_empty() {
            return;
        }
        // SAFETY: in bounds (checked); `bytes` is a shared slice, which
        // cannot overlap the pml's destination it has no reference to.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr.add(offset), bytes.len()) }
    }

    /// Copies as much of `payload` as fits (the pml may hand a receive
    /// buffer that overlaps a send of the same process: the copy is a
    /// `memmove`, and nothing is copied when both are the same bytes).
    pub fn copy_from_payload(&mut self, payload: &Payload) {
        let n = self.len.min(payload.len);
        if n == 0 || std::ptr::eq(self.ptr.cast_const(), payload.ptr) {
            return;
        }
        // SAFETY: both ranges are valid for `n` bytes (the tokens'
        // guarantees); `copy` allows overlap.
        unsafe { std::ptr::copy(payload.ptr, self.ptr, n) }
    }

    /// The spare range `[offset, len)` as a pointer and length, for a
    /// system call that writes into it (`recv`); the caller writes at most
    /// that many bytes.
    ///
    /// # Panics
    ///
    /// When `offset > len()`.
    #[inline]
    pub fn tail_ptr(&mut self, offset: usize) -> (*mut u8, usize) {
        assert!(
            offset <= self.len,
            "offset {offset} passes the {}-byte destination",
            self.len
        );
        // SAFETY: in bounds (checked).
        (unsafe { self.ptr.add(offset) }, self.len - offset)
    }
}

/// The payload of a delivered fragment.
pub enum Arrived<'a> {
    /// The btl's own bytes (valid for the call).
    Bytes(&'a [u8]),
    /// Written at the destination the pml gave in [`Pml::header`] (all of
    /// it).
    Placed(Destination),
    /// The sender's payload, handed over in place (a btl that moves
    /// fragments inside one process); the send is *not* finished by this:
    /// the btl still calls [`Pml::send_done`].
    InPlace(&'a Payload),
}

/// What [`Btl::send`] did.
pub enum Sent {
    /// Sent: the btl holds neither header nor payload.
    Done(Payload),
    /// Accepted: the btl keeps the payload and gives it back through
    /// [`Pml::send_done`] when finished.
    Queued,
    /// Not taken: the pml tries again after progress.
    WouldBlock(Payload),
    /// The peer is lost (reported through [`Pml::peer_failed`] from a
    /// progress call).
    Failed(Payload),
}

/// The pml's callbacks, available inside [`Btl::progress`] only.
pub struct Pml<'a> {
    receiver: &'a BtlReceiver,
    _not_send: PhantomData<*const ()>,
}

impl<'a> Pml<'a> {
    /// The callbacks of `receiver` (the test kit drives a [`Btl`] value
    /// directly, without the generated table, with a receiver it made).
    ///
    /// # Safety
    ///
    /// The receiver's callbacks may be called with its `ctx` while the
    /// `Pml` exists, from the thread that holds it.
    #[doc(hidden)]
    #[cfg(any(test, feature = "testkit"))]
    pub unsafe fn from_receiver(receiver: &'a BtlReceiver) -> Pml<'a> {
        Pml {
            receiver,
            _not_send: PhantomData,
        }
    }
}

impl Pml<'_> {
    /// A fragment's header arrived from `peer` on `module` with
    /// `payload_len` bytes to follow. `Some` is where the pml wants the
    /// payload (`payload_len` bytes); `None` means the btl keeps it and
    /// delivers [`Arrived::Bytes`].
    #[inline]
    pub fn header(
        &self,
        module: u32,
        peer: u32,
        header: &[u8],
        payload_len: usize,
    ) -> Option<Destination> {
        let rx = self.receiver;
        // SAFETY: the pml's callback with its own context, from inside the
        // btl's progress (the only place a `Pml` exists); the header is a
        // live slice.
        let dest = unsafe {
            (rx.on_header)(
                rx.ctx,
                module,
                peer,
                header.as_ptr(),
                header.len(),
                payload_len,
            )
        };
        (!dest.is_null()).then_some(Destination {
            ptr: dest,
            len: payload_len,
        })
    }

    /// Delivers a whole fragment (its header again, and the payload).
    #[inline]
    pub fn fragment(&self, module: u32, peer: u32, header: &[u8], payload: Arrived<'_>) {
        let (ptr, len) = match &payload {
            Arrived::Bytes(b) => (b.as_ptr(), b.len()),
            Arrived::Placed(d) => (d.ptr.cast_const(), d.len),
            Arrived::InPlace(p) => (p.ptr, p.len),
        };
        let rx = self.receiver;
        // SAFETY: as in `header`; the payload is valid for the call.
        unsafe {
            (rx.on_fragment)(
                rx.ctx,
                module,
                peer,
                header.as_ptr(),
                header.len(),
                ptr,
                len,
            )
        };
    }

    /// Delivers the fragments of `batch` in one callback, in the order
    /// they were pushed (each as [`Pml::fragment`] with [`Arrived::Bytes`]
    /// would), and empties the batch; nothing when it is empty.
    #[inline]
    pub fn fragments(&self, module: u32, batch: &mut Fragments<'_>) {
        if batch.is_empty() {
            return;
        }
        let refs = batch.as_refs();
        let rx = self.receiver;
        // SAFETY: as in `header`; every header and payload of the batch is
        // readable for its lifetime, which outlasts the call.
        unsafe { (rx.on_fragments)(rx.ctx, module, refs.as_ptr(), refs.len()) };
        batch.clear();
    }

    /// A send the btl answered [`Sent::Queued`] is finished.
    #[inline]
    pub fn send_done(&self, payload: Payload) {
        let rx = self.receiver;
        // SAFETY: as in `header`.
        unsafe { (rx.on_send_done)(rx.ctx, payload.cookie) };
    }

    /// A get the btl answered [`Rdma::Queued`] ended with `status`
    /// ([`RdmaStatus::Failed`]: the peer is lost, and the btl reports it
    /// with [`Pml::peer_failed`] before its progress call returns).
    #[inline]
    pub fn get_done(&self, local: GetBuffer, status: RdmaStatus) {
        let rx = self.receiver;
        // SAFETY: as in `header`.
        unsafe { (rx.on_rdma_done)(rx.ctx, local.cookie, status) };
    }

    /// A put the btl answered [`Rdma::Queued`] ended with `status` (as for
    /// [`Pml::get_done`]).
    #[inline]
    pub fn put_done(&self, local: PutBuffer, status: RdmaStatus) {
        let rx = self.receiver;
        // SAFETY: as in `header`.
        unsafe { (rx.on_rdma_done)(rx.ctx, local.cookie, status) };
    }

    /// The connection to `peer` on `module` failed; `reason` says how.
    pub fn peer_failed(&self, module: u32, peer: u32, reason: &str) {
        let rx = self.receiver;
        // SAFETY: as in `header`.
        unsafe { (rx.on_peer_failed)(rx.ctx, module, peer, RStr::from_str(reason)) };
    }
}

/// The `extern "C"` table for `B` (what
/// [`export_btl_component!`](crate::export_btl_component) exports).
pub const fn table<B: Exported>() -> BtlComponentModule {
    BtlComponentModule {
        init: init::<B>,
        contact_card: contact_card::<B>,
        add_peer: add_peer::<B>,
        send: send::<B>,
        get: rdma::get::<B>,
        put: rdma::put::<B>,
        progress: progress::<B>,
        finalize: finalize::<B>,
    }
}

unsafe extern "C" fn init<B: Exported>(
    context: &ComponentContext,
    identity: &JobIdentity,
    receiver: BtlReceiver,
    modules: &mut RVec<BtlModuleInfo>,
    error: &mut RString,
) -> bool {
    let mut answer: Result<(Vec<BtlModuleInfo>, Option<String>), String> = Ok((Vec::new(), None));
    let installed = B::instance().install(context, || match B::init(context, identity) {
        Ok(Started::Ready(btl, infos)) => {
            let rdma = RdmaLimits::of(&infos);
            answer = Ok((infos, None));
            Ok(Adapted {
                btl,
                receiver,
                rdma,
                stopped: false,
            })
        }
        Ok(Started::NothingUsable(why)) => {
            answer = Ok((Vec::new(), Some(why)));
            Err(())
        }
        Err(why) => {
            answer = Err(why);
            Err(())
        }
    });
    if let Err(entry) = installed {
        answer = Err(entry.to_string());
    }
    match answer {
        Ok((infos, why)) => {
            *modules = infos.into();
            if let Some(why) = why {
                *error = why.into();
            }
            true
        }
        Err(why) => {
            *error = why.into();
            false
        }
    }
}

unsafe extern "C" fn contact_card<B: Exported>(card: &mut RVec<u8>) {
    *card = B::instance()
        .call("contact_card", |a| a.btl.contact_card())
        .unwrap_or_default()
        .into();
}

unsafe extern "C" fn add_peer<B: Exported>(
    module: u32,
    peer: u32,
    card: RSlice<'_, u8>,
    endpoint: &mut u64,
    reason: &mut RString,
) -> bool {
    let outcome = B::instance().call("add_peer", |a| {
        a.btl.add_peer(module, peer, card.as_slice())
    });
    match outcome {
        Ok(Ok(e)) => {
            *endpoint = e;
            true
        }
        Ok(Err(why)) => {
            *reason = why.into();
            false
        }
        Err(entry) => {
            *reason = entry.to_string().into();
            false
        }
    }
}

unsafe extern "C" fn send<B: Exported>(
    module: u32,
    endpoint: u64,
    header: *const u8,
    header_len: usize,
    payload: *const u8,
    payload_len: usize,
    cookie: u64,
) -> SendOutcome {
    if header_len > MAX_HEADER
        || (header.is_null() && header_len > 0)
        || (payload.is_null() && payload_len > 0)
    {
        return bad_send::<B>(header_len, payload_len);
    }
    let header = if header_len == 0 {
        &[][..]
    } else {
        // SAFETY: non-null (checked) and readable for `header_len` bytes
        // during the call (the interface contract).
        unsafe { std::slice::from_raw_parts(header, header_len) }
    };
    // The token is built inside the entry and only the outcome comes
    // back: built outside, it was stored in words and reloaded in wider
    // pieces when moved into the closure (a store-forwarding stall).
    let sent = B::instance().call("send", |a| {
        let token = Payload::new(payload, payload_len, cookie);
        match a.btl.send(module, endpoint, header, token) {
            Sent::Done(_) => SendOutcome::Done,
            Sent::Queued => SendOutcome::Queued,
            Sent::WouldBlock(_) => SendOutcome::WouldBlock,
            Sent::Failed(_) => SendOutcome::Failed,
        }
    });
    sent.unwrap_or(SendOutcome::Failed)
}

#[cold]
fn bad_send<B: Exported>(header_len: usize, payload_len: usize) -> SendOutcome {
    let why = format!(
        "the pml broke the btl interface: a send with a {header_len}-byte header (at most {MAX_HEADER}) or a null pointer (payload {payload_len} bytes); refused"
    );
    B::instance().log(verbosity::ERROR, &why);
    SendOutcome::Failed
}

unsafe extern "C" fn progress<B: Exported>() -> usize {
    let instance = B::instance();
    let outcome = instance.call("progress", |a| {
        let pml = Pml {
            receiver: &a.receiver,
            _not_send: PhantomData,
        };
        a.btl.progress(&pml)
    });
    match outcome {
        Ok(events) => events,
        Err(EntryError::Panicked(why)) | Err(EntryError::Stopped(why)) => {
            let mut reported = 0;
            let _ = instance.recover(|a| {
                if !a.stopped {
                    a.stopped = true;
                    let pml = Pml {
                        receiver: &a.receiver,
                        _not_send: PhantomData,
                    };
                    a.btl.stop_after_internal_error(&pml, &why);
                    reported = 1;
                }
            });
            reported
        }
        Err(_) => 0,
    }
}

unsafe extern "C" fn finalize<B: Exported>() {
    if let Ok(Some(a)) = B::instance().take() {
        let _ = oxmpi_plugin_api::guard::call(|| {
            a.btl.finalize();
            Ok(())
        });
    }
}

/// Exports a btl component: the [`Btl`] implementation's instance and
/// [`BtlComponentModule`] table (as `MODULE`), and the component's root
/// module (through [`oxmpi_plugin_api::export_component!`]).
///
/// ```ignore
/// oxmpi_framework_btl::export_btl_component! {
///     btl: MyBtl,                 // impl Btl for MyBtl { … }
///     lifecycle: MyComponent,     // impl Lifecycle for MyComponent { … }
///     component: "mine",
///     version: Version::new(1, 0, 0),
///     description: "What it does",
///     params: <MyParams as oxmpi_plugin_api::Params>::DECLS,
/// }
/// ```
///
#[macro_export]
macro_rules! export_btl_component {
    (
        btl: $btl:ty,
        lifecycle: $lifecycle:ty,
        component: $comp:expr,
        version: $ver:expr,
        description: $desc:expr,
        params: $params:expr $(,)?
    ) => {
        /// The component's btl module table (generated from its `Btl`).
        pub static MODULE: $crate::module::BtlComponentModule = $crate::adapter::table::<$btl>();

        impl $crate::adapter::Exported for $btl {
            fn instance() -> &'static $crate::__plugin_api::Instance<$crate::adapter::Adapted<$btl>>
            {
                static INSTANCE: $crate::__plugin_api::Instance<$crate::adapter::Adapted<$btl>> =
                    $crate::__plugin_api::Instance::new();
                &INSTANCE
            }
        }

        $crate::__plugin_api::export_component! {
            lifecycle: $lifecycle,
            framework: "btl",
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
