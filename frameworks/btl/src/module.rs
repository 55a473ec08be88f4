//! The btl module: what a btl component hands the pml (through
//! [`oxmpi_plugin_api::ModuleTable`], layout-checked).
//!
//! A btl component exports one [`BtlComponentModule`], a plain table of
//! `extern "C"` functions. [`init`](BtlComponentModule::init) creates the
//! component's *modules* (one per usable interface and link for tcp, one
//! for self) and describes each with a [`BtlModuleInfo`]; the pml then talks
//! to a module by its index.
//!
//! # The contract
//!
//! - **Threads.** The pml calls every function under the MPI layer's lock:
//!   never two at once. A btl needs no locking of its own.
//! - **Peers.** [`add_peer`](BtlComponentModule::add_peer) is called lazily,
//!   the first time the pml needs a peer, with the peer's contact card (the
//!   bytes the peer's instance of the component returned from
//!   [`contact_card`](BtlComponentModule::contact_card), exchanged through
//!   the modex). It answers an opaque endpoint, or that the module cannot
//!   reach the peer and why.
//! - **Sending.** [`send`](BtlComponentModule::send) takes a header (at most
//!   [`MAX_HEADER`] bytes, the pml's) and a payload. It returns
//!   [`SendOutcome::Done`] when it no longer needs either;
//!   [`SendOutcome::Queued`] when it copied the header but still reads the
//!   payload, and will call [`BtlReceiver::on_send_done`] with the cookie
//!   once it is finished with it (the payload must stay valid and unchanged
//!   until then); [`SendOutcome::WouldBlock`] when it took nothing (try
//!   again after progress); [`SendOutcome::Failed`] when the peer is lost
//!   ([`BtlReceiver::on_peer_failed`] says why). Fragments sent on one
//!   endpoint arrive in order.
//! - **Receiving.** Every callback of the [`BtlReceiver`] the pml registered
//!   at `init` is made from inside [`progress`](BtlComponentModule::progress)
//!   only — never from `send` or `add_peer` — so the pml's state is never
//!   entered twice. A btl that receives a fragment in pieces (a stream)
//!   calls [`on_header`](BtlReceiver::on_header) once the header is
//!   complete; the pml answers where the payload should go (a pointer to
//!   `payload_len` writable bytes, for data it can place directly) or null
//!   (the btl keeps the payload in its own memory). Then
//!   [`on_fragment`](BtlReceiver::on_fragment) delivers the fragment, with
//!   the payload pointer being the pml's destination or the btl's buffer
//!   (valid for the call only). A btl that has the whole fragment in
//!   memory when it delivers it (shared memory, one process) may skip
//!   `on_header` and call `on_fragment` alone with the payload in its
//!   memory: the pml's copy out of it is the one copy placing would have
//!   made. Such a btl may also hand over several whole fragments at once
//!   with [`on_fragments`](BtlReceiver::on_fragments): each is delivered
//!   exactly as by `on_fragment`, in the array's order (which keeps, per
//!   endpoint, the order they were sent in), and every payload stays in the
//!   btl's memory until the call returns. One call costs the pml one entry
//!   into its state instead of one per fragment.
//! - **No re-entry.** A pml never calls a btl entry point from inside one
//!   of its callbacks; work a callback causes (an acknowledgement, the next
//!   fragment) is queued and done from the pml's own progress function.
//! - **RDMA.** A module whose [`BtlModuleInfo::flags`] has
//!   [`flags::GET`] (or [`flags::PUT`]) reads (writes) peer memory without
//!   registration: [`get`](BtlComponentModule::get) copies `len` bytes from
//!   a remote address of the peer into a local buffer,
//!   [`put`](BtlComponentModule::put) copies a local buffer to a remote
//!   address. The remote address and its length come from the peer (its
//!   pml published them in a header); the peer keeps that range valid, and
//!   unchanged for a get, until it is told the transfer finished. `len` is
//!   at least 1 and at most [`BtlModuleInfo::max_rdma_size`]. The answer is
//!   an [`RdmaOutcome`]: `Done` (the bytes were moved; the btl holds
//!   nothing), `Queued` (the btl holds the local buffer, which must stay
//!   valid — and unchanged for a put — until it calls
//!   [`on_rdma_done`](BtlReceiver::on_rdma_done) with the cookie, from a
//!   progress call, exactly once), `WouldBlock` (nothing was done; try
//!   again after progress) or `Failed` (the peer is lost; `on_peer_failed`
//!   says why). `on_rdma_done` with [`RdmaStatus::Failed`] means the
//!   transfer did not happen and the peer is lost: the btl reports
//!   `on_peer_failed` for it before that progress call returns. A module
//!   without the flag is never asked (the generated entry points refuse
//!   the call without reaching the btl). Get/put order is not defined,
//!   neither among themselves nor with sends.
//! - **Failure.** A peer whose connection fails before `finalize` is
//!   reported once through [`on_peer_failed`](BtlReceiver::on_peer_failed);
//!   queued sends and get/puts to it are dropped without `on_send_done` or
//!   `on_rdma_done` (the btl holds none of their buffers once it reported
//!   the peer).
//!
//! - **Loopback.** A module with [`flags::LOOPBACK`] reaches only its own
//!   process; the pml may skip its `send` for a fragment it can deliver to
//!   itself at once (and still uses `send` for the others). Such a fragment
//!   overtakes those still queued in the btl, so the pml delivers to
//!   itself only fragments whose order it restores (ob1: eager MATCHes,
//!   ordered by their sequence numbers).
//!
//! Interface 3.0 added [`BtlReceiver::on_fragments`] (a batch of whole
//! fragments in one callback) to interface 2.1; 2.1 added
//! [`flags::LOOPBACK`]; 2.0 added get/put (the entry points,
//! `on_rdma_done` and the RDMA limits of [`BtlModuleInfo`]) to interface
//! 1.0, which moved every payload with `send`.

use abi_stable::std_types::{RSlice, RStr, RString, RVec};
use abi_stable::StableAbi;
use oxmpi_plugin_api::ComponentContext;
use std::ffi::c_void;

/// Largest header a pml passes to [`BtlComponentModule::send`], in bytes.
pub const MAX_HEADER: usize = 64;

/// Capability flags of a module ([`BtlModuleInfo::flags`]), as Open MPI's
/// `btl_<c>_flags` bits.
pub mod flags {
    /// The module sends fragments (every module does).
    pub const SEND: u32 = 0x1;
    /// The module can write remote memory (RDMA put).
    pub const PUT: u32 = 0x2;
    /// The module can read remote memory (RDMA get).
    pub const GET: u32 = 0x4;
    /// The module reaches only the process it runs in, and delivering a
    /// fragment it was sent would hand the pml the same header and payload,
    /// in sending order: the pml may deliver such a fragment to itself
    /// during the send instead of calling [`send`](super::BtlComponentModule::send)
    /// (what a self btl's synchronous delivery amounts to). A pml honours
    /// it only for the endpoint of its own rank. Not one of Open MPI's
    /// `btl_<c>_flags` bits: a btl declares it, users do not set it.
    pub const LOOPBACK: u32 = 0x4000_0000;
}

/// What [`BtlComponentModule::send`] did with a fragment.
#[repr(u8)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq)]
pub enum SendOutcome {
    /// Sent; the btl holds neither header nor payload.
    Done = 0,
    /// Accepted; the btl reads the payload until it calls `on_send_done`.
    Queued = 1,
    /// Not accepted; call `send` again after progress.
    WouldBlock = 2,
    /// The peer is lost; nothing will be delivered.
    Failed = 3,
}

/// What [`BtlComponentModule::get`] or [`BtlComponentModule::put`] did.
#[repr(u8)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq)]
pub enum RdmaOutcome {
    /// The bytes were moved; the btl holds nothing.
    Done = 0,
    /// Accepted; the btl uses the local buffer until it calls
    /// `on_rdma_done`.
    Queued = 1,
    /// Not accepted; try again after progress.
    WouldBlock = 2,
    /// The peer is lost (or the module offers no such operation); nothing
    /// was moved.
    Failed = 3,
}

/// How a queued get/put ended ([`BtlReceiver::on_rdma_done`]).
#[repr(u8)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq)]
pub enum RdmaStatus {
    /// Every byte was moved.
    Done = 0,
    /// Nothing usable was moved, and the peer is lost (the btl reports
    /// `on_peer_failed` before its progress call returns).
    Failed = 1,
}

/// Description and limits of one module, as its component's parameters set
/// them (`btl_<c>_eager_limit`, `_rndv_eager_limit`, `_max_send_size`,
/// `_exclusivity`, `_latency`, `_bandwidth`, `_flags`).
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct BtlModuleInfo {
    /// Short label for messages, e.g. `tcp eth0 link 1` or `self`.
    pub label: RString,
    /// Largest message (payload bytes) the pml sends eagerly.
    pub eager_limit: usize,
    /// Payload bytes sent with a rendezvous header.
    pub rndv_eager_limit: usize,
    /// Largest payload of one fragment of a pipelined message.
    pub max_send_size: usize,
    /// Exclusivity: for each peer, the pml uses only the modules with the
    /// highest exclusivity among those that reach it.
    pub exclusivity: u32,
    /// Latency rating (lower is faster); eager sends use the lowest.
    pub latency: u32,
    /// Bandwidth in Mbit/s; large messages are striped in proportion.
    pub bandwidth: u32,
    /// Capability bits of [`flags`].
    pub flags: u32,
    /// Largest length of one get or put, in bytes (0 when the module
    /// offers neither; the pml splits larger transfers).
    pub max_rdma_size: usize,
    /// Smallest message, in bytes, the pml moves with get/put rather than
    /// the send pipeline (below it, RDMA costs more than it saves; 0: any
    /// message past the eager limit).
    pub min_rdma_message: usize,
}

/// Who the process is, for btls that authenticate their peers.
#[repr(C)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq)]
pub struct JobIdentity {
    /// The job's id (the same in every rank of a job).
    pub job_id: u64,
    /// The job's secret, 128 random bits shared by the ranks of the job
    /// (from mpirun; a singleton makes its own). Never logged.
    pub secret: [u64; 2],
    /// This process's rank in the job.
    pub rank: u32,
    /// Number of ranks in the job.
    pub size: u32,
}

/// Callbacks of the pml, made by a btl from inside its `progress` only.
#[repr(C)]
#[derive(StableAbi, Copy, Clone)]
pub struct BtlReceiver {
    /// Opaque pointer passed back to every callback.
    pub ctx: *mut c_void,
    /// A fragment's header (`header_len` bytes) arrived from `peer` on
    /// `module`; `payload_len` bytes follow. Returns where to write the
    /// payload (`payload_len` writable bytes) or null to keep it in the
    /// btl's memory.
    pub on_header: unsafe extern "C" fn(
        ctx: *mut c_void,
        module: u32,
        peer: u32,
        header: *const u8,
        header_len: usize,
        payload_len: usize,
    ) -> *mut u8,
    /// A whole fragment arrived: the header again, and the payload (at the
    /// pointer `on_header` returned, or in the btl's memory for this call).
    pub on_fragment: unsafe extern "C" fn(
        ctx: *mut c_void,
        module: u32,
        peer: u32,
        header: *const u8,
        header_len: usize,
        payload: *const u8,
        payload_len: usize,
    ),
    /// Whole fragments arrived (`count` of them, at `fragments`): each is
    /// delivered as [`on_fragment`](BtlReceiver::on_fragment) would
    /// deliver it, in the array's order, with its payload in the btl's
    /// memory for this call.
    pub on_fragments: unsafe extern "C" fn(
        ctx: *mut c_void,
        module: u32,
        fragments: *const FragmentRef,
        count: usize,
    ),
    /// A send that returned [`SendOutcome::Queued`] is finished.
    pub on_send_done: unsafe extern "C" fn(ctx: *mut c_void, cookie: u64),
    /// The connection to `peer` on `module` failed; `reason` says how.
    pub on_peer_failed:
        unsafe extern "C" fn(ctx: *mut c_void, module: u32, peer: u32, reason: RStr<'_>),
    /// A get or put that returned [`RdmaOutcome::Queued`] ended (its local
    /// buffer is the pml's again).
    pub on_rdma_done: unsafe extern "C" fn(ctx: *mut c_void, cookie: u64, status: RdmaStatus),
}

/// One whole fragment of a [`BtlReceiver::on_fragments`] call: who sent
/// it, its header and its payload (both in the btl's memory, readable for
/// the call; a null pointer only with a zero length).
#[repr(C)]
#[derive(StableAbi, Copy, Clone, Debug)]
pub struct FragmentRef {
    /// The sender's rank.
    pub peer: u32,
    /// Header bytes (at most [`MAX_HEADER`]).
    pub header_len: u32,
    /// The header.
    pub header: *const u8,
    /// The payload.
    pub payload: *const u8,
    /// Payload bytes.
    pub payload_len: usize,
}

/// Entry points of a btl component.
#[repr(C)]
#[derive(StableAbi)]
pub struct BtlComponentModule {
    /// Creates the component's modules and registers the pml's callbacks;
    /// `context` reads the component's parameters and logs. Returns false
    /// with `error` set if the component cannot run (then no other entry
    /// point is called). Zero modules is a valid answer (nothing usable,
    /// `error` says why).
    pub init: unsafe extern "C" fn(
        context: &ComponentContext,
        identity: &JobIdentity,
        receiver: BtlReceiver,
        modules: &mut RVec<BtlModuleInfo>,
        error: &mut RString,
    ) -> bool,
    /// This process's contact card, published through the modex under
    /// `btl_<component>`; empty if the component needs none.
    pub contact_card: unsafe extern "C" fn(card: &mut RVec<u8>),
    /// Resolves `peer` for `module` from its contact card (empty if the peer
    /// published none). Returns true with `endpoint` set, or false with
    /// `reason` set (one sentence: why the module cannot reach the peer).
    pub add_peer: unsafe extern "C" fn(
        module: u32,
        peer: u32,
        card: RSlice<'_, u8>,
        endpoint: &mut u64,
        reason: &mut RString,
    ) -> bool,
    /// Sends one fragment to an endpoint (see the module docs).
    pub send: unsafe extern "C" fn(
        module: u32,
        endpoint: u64,
        header: *const u8,
        header_len: usize,
        payload: *const u8,
        payload_len: usize,
        cookie: u64,
    ) -> SendOutcome,
    /// Reads `len` bytes at `remote` (an address in the peer's memory the
    /// peer published) into `local` (see the module docs; only for a module
    /// with [`flags::GET`]).
    pub get: unsafe extern "C" fn(
        module: u32,
        endpoint: u64,
        local: *mut u8,
        remote: u64,
        len: usize,
        cookie: u64,
    ) -> RdmaOutcome,
    /// Writes `len` bytes of `local` at `remote` in the peer's memory (see
    /// the module docs; only for a module with [`flags::PUT`]).
    pub put: unsafe extern "C" fn(
        module: u32,
        endpoint: u64,
        local: *const u8,
        remote: u64,
        len: usize,
        cookie: u64,
    ) -> RdmaOutcome,
    /// Makes progress on every module: sends queued data, accepts
    /// connections, delivers arrived fragments. Returns the number of
    /// events (fragments delivered, sends and get/puts finished).
    pub progress: unsafe extern "C" fn() -> usize,
    /// Closes every module (connections, listeners). No call follows.
    pub finalize: unsafe extern "C" fn(),
}
