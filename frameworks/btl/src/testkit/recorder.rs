//! [`Recorder`]: a pml stand-in whose [`BtlReceiver`] records every
//! callback a btl makes and checks it against the btl contract
//! ([`crate::module`]).
//!
//! Checked, each breach recorded as a sentence in
//! [`violations`](Recorder::violations):
//!
//! - every callback is made inside a progress call the kit drives
//!   ([`Recorder::during_progress`]);
//! - `on_fragment` follows an `on_header` of the same module, peer, header
//!   and payload length, and an endpoint announces one fragment at a time;
//! - a destination the recorder handed out is not written outside its
//!   `payload_len` bytes (guard bytes on both sides);
//! - `on_send_done` comes once for each cookie the btl answered `Queued`
//!   for ([`Recorder::queued`] tells the recorder), never for another;
//!   `on_rdma_done` likewise for queued gets and puts
//!   ([`Recorder::rdma_queued`]);
//! - stamped fragments ([`super::stamp`]) arrive complete, with the
//!   pattern they were sent with, in order within their stream;
//! - after `on_peer_failed` for a module and peer, no callback names that
//!   pair again (and the queued sends and get/puts to it are dropped, not
//!   finished);
//!   the reason is not empty;
//! - pointers are not null where bytes are promised, headers are at most
//!   [`MAX_HEADER`] bytes.
//!
//! Where payloads go is set per fragment: [`Placement::Destination`]
//! answers `on_header` with a buffer of the recorder's,
//! [`Placement::BtlHeld`] with null (the btl keeps the payload).
//!
//! With recording off ([`Recorder::set_recording`]) the recorder keeps only
//! counts and checks, and reuses its buffers: a btl's steady state can be
//! checked for allocations.

use super::stamp::{first_mismatch, Stamp};
use crate::adapter::Pml;
use crate::module::{BtlReceiver, FragmentRef, RdmaStatus, MAX_HEADER};
use abi_stable::std_types::RStr;
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Where the recorder asks a btl to put one fragment's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// A buffer of the recorder's (`on_header` answers its address).
    Destination,
    /// Nowhere: `on_header` answers null and the btl keeps the payload.
    BtlHeld,
}

/// One delivered fragment, as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fragment {
    /// The module that delivered it.
    pub module: u32,
    /// The peer it came from.
    pub peer: u32,
    /// Its header.
    pub header: Vec<u8>,
    /// Its payload (copied from wherever it arrived).
    pub payload: Vec<u8>,
    /// What `on_header` answered.
    pub placement: Placement,
    /// Whether `on_fragment`'s payload pointer was the destination
    /// `on_header` answered (false for [`Placement::BtlHeld`]).
    pub landed: bool,
    /// The address `on_fragment` passed for the payload (to tell a payload
    /// handed over in place).
    pub payload_addr: usize,
}

/// One callback, as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// `on_header`.
    Header {
        /// Module index.
        module: u32,
        /// Peer rank.
        peer: u32,
        /// The header bytes.
        header: Vec<u8>,
        /// The announced payload length.
        payload_len: usize,
    },
    /// `on_fragment`.
    Fragment(Fragment),
    /// `on_send_done` with its cookie.
    SendDone(u64),
    /// `on_rdma_done` with its cookie and status.
    RdmaDone(u64, RdmaStatus),
    /// `on_peer_failed`.
    PeerFailed {
        /// Module index.
        module: u32,
        /// Peer rank.
        peer: u32,
        /// The btl's reason.
        reason: String,
    },
}

/// How many callbacks of each kind arrived (also with recording off).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// `on_header` calls.
    pub headers: usize,
    /// Fragments delivered: `on_fragment` calls, plus the fragments of
    /// `on_fragments` batches.
    pub fragments: usize,
    /// `on_fragments` calls (batches).
    pub batches: usize,
    /// `on_send_done` calls.
    pub send_done: usize,
    /// `on_rdma_done` calls.
    pub rdma_done: usize,
    /// `on_peer_failed` calls.
    pub peer_failed: usize,
}

/// What a hook ([`Recorder::set_hook`]) is told after each callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Callback {
    /// After `on_header`.
    Header {
        /// Module index.
        module: u32,
        /// Peer rank.
        peer: u32,
    },
    /// After `on_fragment`.
    Fragment {
        /// Module index.
        module: u32,
        /// Peer rank.
        peer: u32,
    },
    /// After `on_send_done`.
    SendDone(u64),
    /// After `on_rdma_done`.
    RdmaDone(u64),
    /// After `on_peer_failed`.
    PeerFailed {
        /// Module index.
        module: u32,
        /// Peer rank.
        peer: u32,
    },
}

/// Guard bytes on each side of a destination buffer.
const GUARD: usize = 16;
/// What guard bytes (and unwritten destination bytes) hold.
const CANARY: u8 = 0xC5;

/// A fragment announced by `on_header` and not yet delivered.
struct Open {
    module: u32,
    peer: u32,
    header: [u8; MAX_HEADER],
    header_len: usize,
    payload_len: usize,
    placement: Placement,
    /// The destination: `GUARD + payload_len + GUARD` bytes.
    dest: Option<Vec<u8>>,
}

struct Log {
    in_progress: bool,
    record: bool,
    default_placement: Placement,
    next_placements: VecDeque<Placement>,
    open: Vec<Open>,
    pool: Vec<Vec<u8>>,
    /// Cookies answered `Queued`, with the module and peer of the send.
    outstanding: HashMap<u64, (u32, u32)>,
    /// Cookies of gets/puts answered `Queued`, with their module and peer.
    rdma_outstanding: HashMap<u64, (u32, u32)>,
    failed: Vec<(u32, u32)>,
    /// Per stream: the next sequence number expected.
    streams: Vec<(u32, u64)>,
    events: Vec<Event>,
    counts: Counts,
    violations: Vec<String>,
}

/// A test's reaction to callbacks ([`Recorder::set_hook`]).
type Hook = Box<dyn FnMut(Callback)>;

struct Shared {
    log: RefCell<Log>,
    hook: RefCell<Option<Hook>>,
    /// Callbacks that could not be checked (the recorder was busy or a
    /// check panicked).
    lost: Cell<usize>,
}

/// The contract-checking recording receiver; see the module docs.
///
/// The receiver it hands out ([`Recorder::receiver`]) points into the
/// recorder: the recorder must outlive every btl that holds it (the kit's
/// drivers finalize their btls before dropping their recorders).
pub struct Recorder {
    shared: Box<Shared>,
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

/// A slice from a btl's pointer and length; `None` for a null pointer with
/// a non-zero length.
///
/// # Safety
///
/// A non-null `ptr` is readable for `len` bytes for `'a` (the btl's side of
/// the contract).
unsafe fn bytes<'a>(ptr: *const u8, len: usize) -> Option<&'a [u8]> {
    if len == 0 {
        return Some(&[]);
    }
    if ptr.is_null() {
        return None;
    }
    // SAFETY: non-null, and the caller's promise covers `len` bytes.
    Some(unsafe { std::slice::from_raw_parts(ptr, len) })
}

impl Log {
    fn violation(&mut self, text: String) {
        self.violations.push(text);
    }

    fn common(&mut self, what: &str, module: u32, peer: u32) {
        if !self.in_progress {
            self.violation(format!(
                "{what} (module {module}, peer {peer}) was called outside a progress call"
            ));
        }
        if self.failed.contains(&(module, peer)) {
            self.violation(format!(
                "{what} named module {module}, peer {peer} after on_peer_failed reported that pair failed"
            ));
        }
    }

    fn header(
        &mut self,
        module: u32,
        peer: u32,
        header: Option<&[u8]>,
        payload_len: usize,
    ) -> *mut u8 {
        self.counts.headers += 1;
        self.common("on_header", module, peer);
        let header = header.unwrap_or_else(|| {
            self.violation(format!(
                "on_header (module {module}, peer {peer}) passed a null header with a non-zero length"
            ));
            &[]
        });
        if header.len() > MAX_HEADER {
            self.violation(format!(
                "on_header (module {module}, peer {peer}) passed a {}-byte header; at most {MAX_HEADER} are allowed",
                header.len()
            ));
        }
        let header = &header[..header.len().min(MAX_HEADER)];
        if let Some(stamp) = Stamp::parse(header) {
            if stamp.payload_len != payload_len as u64 {
                self.violation(format!(
                    "on_header announced {payload_len} payload bytes for stream {} fragment {}, which was sent with {}",
                    stamp.stream, stamp.seq, stamp.payload_len
                ));
            }
        }
        if let Some(i) = self
            .open
            .iter()
            .position(|o| o.module == module && o.peer == peer)
        {
            self.violation(format!(
                "on_header (module {module}, peer {peer}) announced a fragment before the previous one of that endpoint was delivered"
            ));
            let stale = self.open.swap_remove(i);
            self.recycle(stale.dest);
        }
        let placement = self
            .next_placements
            .pop_front()
            .unwrap_or(self.default_placement);
        let mut dest = match placement {
            Placement::Destination => {
                let mut buf = self.pool.pop().unwrap_or_default();
                buf.clear();
                buf.resize(payload_len + 2 * GUARD, CANARY);
                Some(buf)
            }
            Placement::BtlHeld => None,
        };
        let answer = dest
            .as_mut()
            .map_or(std::ptr::null_mut(), |b| b[GUARD..].as_mut_ptr());
        if self.record {
            self.events.push(Event::Header {
                module,
                peer,
                header: header.to_vec(),
                payload_len,
            });
        }
        let mut copy = [0u8; MAX_HEADER];
        copy[..header.len()].copy_from_slice(header);
        self.open.push(Open {
            module,
            peer,
            header: copy,
            header_len: header.len(),
            payload_len,
            placement,
            dest,
        });
        answer
    }

    fn recycle(&mut self, dest: Option<Vec<u8>>) {
        if let Some(buf) = dest {
            self.pool.push(buf);
        }
    }

    /// # Safety
    ///
    /// A non-null `payload` is readable for `payload_len` bytes during the
    /// call (the btl's side of the contract).
    unsafe fn fragment(
        &mut self,
        module: u32,
        peer: u32,
        header: Option<&[u8]>,
        payload: *const u8,
        payload_len: usize,
    ) {
        self.counts.fragments += 1;
        self.common("on_fragment", module, peer);
        let header = header.unwrap_or_else(|| {
            self.violation(format!(
                "on_fragment (module {module}, peer {peer}) passed a null header with a non-zero length"
            ));
            &[]
        });
        let header = &header[..header.len().min(MAX_HEADER)];
        let open = match self
            .open
            .iter()
            .position(|o| o.module == module && o.peer == peer)
        {
            Some(i) => Some(self.open.swap_remove(i)),
            // Delivered without `on_header`: the payload is in the btl's
            // memory (allowed to a btl that has the whole fragment).
            None => None,
        };
        let (placement, dest) = match open {
            Some(o) => {
                if o.header[..o.header_len] != *header {
                    self.violation(format!(
                        "on_fragment (module {module}, peer {peer}) passed a header that differs from its on_header's"
                    ));
                }
                if o.payload_len != payload_len {
                    self.violation(format!(
                        "on_fragment (module {module}, peer {peer}) delivered {payload_len} payload bytes after on_header announced {}",
                        o.payload_len
                    ));
                }
                (o.placement, o.dest)
            }
            None => (Placement::BtlHeld, None),
        };
        let landed = dest
            .as_ref()
            .is_some_and(|b| std::ptr::eq(payload, b[GUARD..].as_ptr()));
        if let Some(buf) = &dest {
            let end = buf.len() - GUARD;
            if buf[..GUARD].iter().chain(&buf[end..]).any(|&b| b != CANARY) {
                self.violation(format!(
                    "the btl wrote outside the {}-byte destination of a fragment from module {module}, peer {peer}",
                    end - GUARD
                ));
            }
        }
        // SAFETY: the btl's promise for `payload` (this function's
        // contract); a landed payload is the recorder's own buffer.
        let data = match unsafe { bytes(payload, payload_len) } {
            Some(d) => d,
            None => {
                self.violation(format!(
                    "on_fragment (module {module}, peer {peer}) passed a null payload with length {payload_len}"
                ));
                &[]
            }
        };
        if let Some(stamp) = Stamp::parse(header) {
            self.check_stamped(&stamp, data);
        }
        if self.record {
            self.events.push(Event::Fragment(Fragment {
                module,
                peer,
                header: header.to_vec(),
                payload: data.to_vec(),
                placement,
                landed,
                payload_addr: payload as usize,
            }));
        }
        self.recycle(dest);
    }

    fn check_stamped(&mut self, stamp: &Stamp, data: &[u8]) {
        if data.len() as u64 != stamp.payload_len {
            self.violation(format!(
                "stream {} fragment {} arrived with {} payload bytes; it was sent with {}",
                stamp.stream,
                stamp.seq,
                data.len(),
                stamp.payload_len
            ));
        } else if let Some(at) = first_mismatch(data, stamp.seed) {
            self.violation(format!(
                "the payload of stream {} fragment {} ({} bytes) differs from what was sent at byte {at}",
                stamp.stream, stamp.seq, stamp.payload_len
            ));
        }
        let slot = match self.streams.iter().position(|s| s.0 == stamp.stream) {
            Some(i) => i,
            None => {
                self.streams.push((stamp.stream, 0));
                self.streams.len() - 1
            }
        };
        let expected = self.streams[slot].1;
        if stamp.seq != expected {
            self.violation(format!(
                "stream {} delivered fragment {} where fragment {expected} was next (fragments of one endpoint out of order, lost or repeated)",
                stamp.stream, stamp.seq
            ));
        }
        self.streams[slot].1 = stamp.seq.max(expected) + 1;
    }

    fn send_done(&mut self, cookie: u64) {
        self.counts.send_done += 1;
        if !self.in_progress {
            self.violation(format!(
                "on_send_done (cookie {cookie}) was called outside a progress call"
            ));
        }
        if self.outstanding.remove(&cookie).is_none() {
            self.violation(format!(
                "on_send_done for cookie {cookie}, which is not a queued send in flight (never answered Queued, already finished, or dropped with its failed peer)"
            ));
        }
        if self.record {
            self.events.push(Event::SendDone(cookie));
        }
    }

    fn rdma_done(&mut self, cookie: u64, status: RdmaStatus) {
        self.counts.rdma_done += 1;
        if !self.in_progress {
            self.violation(format!(
                "on_rdma_done (cookie {cookie}) was called outside a progress call"
            ));
        }
        if self.rdma_outstanding.remove(&cookie).is_none() {
            self.violation(format!(
                "on_rdma_done for cookie {cookie}, which is not a queued get/put in flight (never answered Queued, already finished, or dropped with its failed peer)"
            ));
        }
        if self.record {
            self.events.push(Event::RdmaDone(cookie, status));
        }
    }

    fn peer_failed(&mut self, module: u32, peer: u32, reason: &str) {
        self.counts.peer_failed += 1;
        self.common("on_peer_failed", module, peer);
        if reason.trim().is_empty() {
            self.violation(format!(
                "on_peer_failed (module {module}, peer {peer}) gave no reason"
            ));
        }
        if !self.failed.contains(&(module, peer)) {
            self.failed.push((module, peer));
        }
        let mut i = 0;
        while i < self.open.len() {
            if self.open[i].module == module && self.open[i].peer == peer {
                let o = self.open.swap_remove(i);
                self.recycle(o.dest);
            } else {
                i += 1;
            }
        }
        self.outstanding.retain(|_, to| *to != (module, peer));
        self.rdma_outstanding.retain(|_, to| *to != (module, peer));
        if self.record {
            self.events.push(Event::PeerFailed {
                module,
                peer,
                reason: reason.to_string(),
            });
        }
    }
}

impl Shared {
    /// Runs a check on the log; a busy log or a panicking check counts as
    /// a lost callback (nothing unwinds into the btl).
    fn with_log<R>(&self, f: impl FnOnce(&mut Log) -> R) -> Option<R> {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            self.log.try_borrow_mut().ok().map(|mut log| f(&mut log))
        }));
        match outcome {
            Ok(Some(r)) => Some(r),
            _ => {
                self.lost.set(self.lost.get() + 1);
                None
            }
        }
    }

    /// Tells the hook, if any (a nested callback from inside the hook is
    /// not told again).
    fn tell(&self, what: Callback) {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            if let Ok(mut hook) = self.hook.try_borrow_mut() {
                if let Some(hook) = hook.as_mut() {
                    hook(what);
                }
            }
        }));
        if outcome.is_err() {
            self.with_log(|log| log.violation(format!("the test's hook panicked after {what:?}")));
        }
    }
}

/// The recorder behind a receiver's context.
///
/// # Safety
///
/// `ctx` is the context of a receiver made by [`Recorder::receiver`] whose
/// recorder is alive.
unsafe fn shared<'a>(ctx: *mut c_void) -> &'a Shared {
    // SAFETY: the caller's promise; the pointer came from a `Box<Shared>`.
    unsafe { &*ctx.cast::<Shared>() }
}

unsafe extern "C" fn on_header(
    ctx: *mut c_void,
    module: u32,
    peer: u32,
    header: *const u8,
    header_len: usize,
    payload_len: usize,
) -> *mut u8 {
    // SAFETY: the btl passes back the context of the recorder's receiver.
    let s = unsafe { shared(ctx) };
    // SAFETY: the btl's header is readable for `header_len` bytes.
    let header = unsafe { bytes(header, header_len) };
    let answer = s
        .with_log(|log| log.header(module, peer, header, payload_len))
        .unwrap_or(std::ptr::null_mut());
    s.tell(Callback::Header { module, peer });
    answer
}

unsafe extern "C" fn on_fragment(
    ctx: *mut c_void,
    module: u32,
    peer: u32,
    header: *const u8,
    header_len: usize,
    payload: *const u8,
    payload_len: usize,
) {
    // SAFETY: as in `on_header`.
    let s = unsafe { shared(ctx) };
    // SAFETY: as in `on_header`.
    let header = unsafe { bytes(header, header_len) };
    // SAFETY: the btl's payload is readable for the call.
    s.with_log(|log| unsafe { log.fragment(module, peer, header, payload, payload_len) });
    s.tell(Callback::Fragment { module, peer });
}

unsafe extern "C" fn on_fragments(
    ctx: *mut c_void,
    module: u32,
    fragments: *const FragmentRef,
    count: usize,
) {
    // SAFETY: as in `on_header`.
    let s = unsafe { shared(ctx) };
    let batch = if count == 0 {
        s.with_log(|log| {
            log.violation(format!(
                "on_fragments (module {module}) delivered an empty batch"
            ))
        });
        &[][..]
    } else if fragments.is_null() {
        s.with_log(|log| {
            log.violation(format!(
                "on_fragments (module {module}) passed a null array of {count} fragments"
            ))
        });
        &[][..]
    } else {
        // SAFETY: the btl's array holds `count` descriptions, readable for
        // the call.
        unsafe { std::slice::from_raw_parts(fragments, count) }
    };
    s.with_log(|log| log.counts.batches += 1);
    for f in batch {
        let peer = f.peer;
        // SAFETY: each header and payload of the batch is readable for the
        // call.
        let header = unsafe { bytes(f.header, f.header_len as usize) };
        // SAFETY: as above.
        s.with_log(|log| unsafe { log.fragment(module, peer, header, f.payload, f.payload_len) });
        s.tell(Callback::Fragment { module, peer });
    }
}

unsafe extern "C" fn on_send_done(ctx: *mut c_void, cookie: u64) {
    // SAFETY: as in `on_header`.
    let s = unsafe { shared(ctx) };
    s.with_log(|log| log.send_done(cookie));
    s.tell(Callback::SendDone(cookie));
}

unsafe extern "C" fn on_rdma_done(ctx: *mut c_void, cookie: u64, status: RdmaStatus) {
    // SAFETY: as in `on_header`.
    let s = unsafe { shared(ctx) };
    s.with_log(|log| log.rdma_done(cookie, status));
    s.tell(Callback::RdmaDone(cookie));
}

unsafe extern "C" fn on_peer_failed(ctx: *mut c_void, module: u32, peer: u32, reason: RStr<'_>) {
    // SAFETY: as in `on_header`.
    let s = unsafe { shared(ctx) };
    s.with_log(|log| log.peer_failed(module, peer, reason.as_str()));
    s.tell(Callback::PeerFailed { module, peer });
}

/// Restores the progress flag when a progress call ends (also by a panic).
struct Leave<'a>(&'a Shared, bool);

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        let was = self.1;
        self.0.with_log(|log| log.in_progress = was);
    }
}

impl Recorder {
    /// An empty recorder: recording on, payloads to
    /// [`Placement::BtlHeld`] unless set otherwise.
    pub fn new() -> Recorder {
        Recorder {
            shared: Box::new(Shared {
                log: RefCell::new(Log {
                    in_progress: false,
                    record: true,
                    default_placement: Placement::BtlHeld,
                    next_placements: VecDeque::new(),
                    open: Vec::with_capacity(16),
                    pool: Vec::with_capacity(16),
                    outstanding: HashMap::with_capacity(1024),
                    rdma_outstanding: HashMap::with_capacity(64),
                    failed: Vec::new(),
                    streams: Vec::with_capacity(16),
                    events: Vec::new(),
                    counts: Counts::default(),
                    violations: Vec::new(),
                }),
                hook: RefCell::new(None),
                lost: Cell::new(0),
            }),
        }
    }

    /// The receiver to register with a btl (valid while the recorder
    /// lives).
    pub fn receiver(&self) -> BtlReceiver {
        BtlReceiver {
            ctx: std::ptr::from_ref::<Shared>(&self.shared).cast_mut().cast(),
            on_header,
            on_fragment,
            on_fragments,
            on_send_done,
            on_peer_failed,
            on_rdma_done,
        }
    }

    fn log<R>(&self, f: impl FnOnce(&mut Log) -> R) -> R {
        f(&mut self
            .shared
            .log
            .try_borrow_mut()
            .expect("the recorder is in use by a callback (a test called it from its hook)"))
    }

    /// Runs `f` (a btl's progress call) with callbacks allowed; callbacks
    /// at any other time are violations.
    pub fn during_progress<R>(&self, f: impl FnOnce() -> R) -> R {
        let was = self.log(|log| std::mem::replace(&mut log.in_progress, true));
        let _leave = Leave(&self.shared, was);
        f()
    }

    /// Runs `f` as a progress call of a btl the test drives directly (a
    /// [`Btl`](crate::adapter::Btl) value, or a part of one, such as a
    /// connection's reader): with a [`Pml`] over this recorder's receiver
    /// and callbacks allowed, as in [`during_progress`](Recorder::during_progress).
    pub fn progress_with<R>(&self, f: impl FnOnce(&Pml<'_>) -> R) -> R {
        let receiver = self.receiver();
        self.during_progress(|| {
            // SAFETY: the receiver's callbacks take this recorder's state,
            // which `&self` keeps alive for the call; the `Pml` cannot leave
            // `f` and is not `Send`, so every callback is made on this
            // thread while the recorder lives.
            let pml = unsafe { Pml::from_receiver(&receiver) };
            f(&pml)
        })
    }

    /// Where payloads go when no per-fragment placement is queued.
    pub fn set_default_placement(&self, placement: Placement) {
        self.log(|log| log.default_placement = placement);
    }

    /// Where the payloads of the next fragments go, one placement per
    /// `on_header`, before the default applies again.
    pub fn place_next(&self, placements: impl IntoIterator<Item = Placement>) {
        self.log(|log| log.next_placements.extend(placements));
    }

    /// Whether callbacks are kept as [`Event`]s (default true). Off, only
    /// [`counts`](Recorder::counts) and the checks remain, and nothing is
    /// allocated once the buffers have grown.
    pub fn set_recording(&self, on: bool) {
        self.log(|log| log.record = on);
    }

    /// Calls `hook` after every callback (outside the recorder's own
    /// state, so the hook may call the btl); a panic in it is a
    /// violation.
    pub fn set_hook(&self, hook: impl FnMut(Callback) + 'static) {
        *self.shared.hook.borrow_mut() = Some(Box::new(hook));
    }

    /// Removes the hook.
    pub fn clear_hook(&self) {
        *self.shared.hook.borrow_mut() = None;
    }

    /// The btl answered `Queued` for `cookie`, a send on `module` to
    /// `peer`: one `on_send_done` must follow (unless the pair fails).
    pub fn queued(&self, cookie: u64, module: u32, peer: u32) {
        self.log(|log| {
            if log.outstanding.insert(cookie, (module, peer)).is_some() {
                log.violation(format!(
                    "the test reused cookie {cookie} while its send was still queued"
                ));
            }
        });
    }

    /// The btl answered `Queued` for get/put `cookie` on `module` to
    /// `peer`: one `on_rdma_done` must follow (unless the pair fails).
    pub fn rdma_queued(&self, cookie: u64, module: u32, peer: u32) {
        self.log(|log| {
            if log
                .rdma_outstanding
                .insert(cookie, (module, peer))
                .is_some()
            {
                log.violation(format!(
                    "the test reused cookie {cookie} while its get/put was still queued"
                ));
            }
        });
    }

    /// Queued gets/puts without `on_rdma_done` yet (those to failed pairs
    /// are not counted).
    pub fn rdma_outstanding(&self) -> usize {
        self.log(|log| log.rdma_outstanding.len())
    }

    /// The recorded `on_rdma_done` calls: cookie and status, oldest first.
    pub fn rdma_dones(&self) -> Vec<(u64, RdmaStatus)> {
        self.log(|log| {
            log.events
                .iter()
                .filter_map(|e| match e {
                    Event::RdmaDone(c, s) => Some((*c, *s)),
                    _ => None,
                })
                .collect()
        })
    }

    /// Queued sends without `on_send_done` yet (sends to failed pairs are
    /// not counted).
    pub fn outstanding(&self) -> usize {
        self.log(|log| log.outstanding.len())
    }

    /// Stamped fragments of `stream` delivered so far (the next sequence
    /// number expected).
    pub fn received(&self, stream: u32) -> u64 {
        self.log(|log| {
            log.streams
                .iter()
                .find(|s| s.0 == stream)
                .map_or(0, |s| s.1)
        })
    }

    /// Callbacks by kind.
    pub fn counts(&self) -> Counts {
        self.log(|log| log.counts)
    }

    /// The recorded events, oldest first, leaving none.
    pub fn take_events(&self) -> Vec<Event> {
        self.log(|log| std::mem::take(&mut log.events))
    }

    /// The recorded events, oldest first.
    pub fn events(&self) -> Vec<Event> {
        self.log(|log| log.events.clone())
    }

    /// The recorded fragments, oldest first.
    pub fn fragments(&self) -> Vec<Fragment> {
        self.log(|log| {
            log.events
                .iter()
                .filter_map(|e| match e {
                    Event::Fragment(f) => Some(f.clone()),
                    _ => None,
                })
                .collect()
        })
    }

    /// The cookies of the recorded `on_send_done` calls, oldest first.
    pub fn send_dones(&self) -> Vec<u64> {
        self.log(|log| {
            log.events
                .iter()
                .filter_map(|e| match e {
                    Event::SendDone(c) => Some(*c),
                    _ => None,
                })
                .collect()
        })
    }

    /// The recorded `on_peer_failed` calls: module, peer, reason.
    pub fn peer_failures(&self) -> Vec<(u32, u32, String)> {
        self.log(|log| {
            log.events
                .iter()
                .filter_map(|e| match e {
                    Event::PeerFailed {
                        module,
                        peer,
                        reason,
                    } => Some((*module, *peer, reason.clone())),
                    _ => None,
                })
                .collect()
        })
    }

    /// Every breach of the contract seen so far, as sentences (empty for a
    /// btl that kept it).
    pub fn violations(&self) -> Vec<String> {
        let mut all = self.log(|log| log.violations.clone());
        let lost = self.shared.lost.get();
        if lost > 0 {
            all.push(format!(
                "{lost} callback(s) arrived while the recorder was busy (a nested callback) and could not be checked"
            ));
        }
        all
    }

    /// Panics with the list of violations, if any, naming `what`.
    pub fn assert_clean(&self, what: &str) {
        let v = self.violations();
        assert!(
            v.is_empty(),
            "{what}: the btl broke its contract:\n  {}",
            v.join("\n  ")
        );
    }
}

#[cfg(test)]
#[path = "recorder_tests.rs"]
mod tests;
