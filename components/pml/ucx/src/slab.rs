//! The requests pml ucx serves, in a slab of slots that never move, and
//! the callbacks UCP calls when one of its requests finishes.
//!
//! A slot's address is the `user_data` of the UCP request it watches: the
//! callback (which UCP runs inside `ucp_worker_progress` or
//! `ucp_request_cancel`, never during the call that starts the request)
//! writes the outcome into the slot and appends the slot's index to the
//! [`Events`] list, which the pml drains after that call. Slots come in
//! chunks allocated once and kept until the slab drops, so their
//! addresses stay valid while UCP holds them; every access goes through
//! raw pointers, never through a reference that a callback could alias.
//!
//! Handles: `generation << 32 | (index + 1)`, never 0; the generation
//! (31 bits, so the top bit stays clear) moves on each time a slot is
//! released, so a stale handle is refused.

use oxmpi_framework_pml::module::{Completion, Pieces, RequestStatus};
use oxmpi_ucx_sys as sys;
use std::ffi::c_void;
use std::ptr;

/// Slots per chunk.
const CHUNK: usize = 256;
/// The generation's bits (the handle's top bit stays clear).
const GENERATION_MASK: u32 = (1 << 31) - 1;

/// What a slot holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Free (on the free list).
    Free,
    /// A UCP request runs.
    Running,
    /// Complete; the status stays until `take` or `free`.
    Complete,
    /// A message claimed by `improbe`, waiting for `imrecv`.
    Message,
}

/// A send or a receive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A send to this job rank.
    Send(u32),
    /// A receive (its source, or `ANY_SOURCE`).
    Recv(i32),
}

/// Where UCP callbacks report what finished (drained by the pml after
/// every call that may run them).
#[derive(Debug, Default)]
pub struct Events {
    /// Indices of slots whose UCP request finished.
    pub finished: Vec<u32>,
    /// Job ranks whose endpoint failed, with UCX's status.
    pub failed: Vec<(u32, sys::ucs_status_t)>,
}

/// One request.
pub struct Slot {
    /// Moves on at each release.
    pub generation: u32,
    /// What the slot holds.
    pub state: State,
    /// Send or receive.
    pub kind: Kind,
    /// The UCP request while running.
    pub ucx: *mut c_void,
    /// UCP's message while [`State::Message`].
    pub message: sys::ucp_tag_message_h,
    /// The caller's completion slot, or null.
    pub done: *const Completion,
    /// The caller freed it while running: released when it finishes.
    pub detached: bool,
    /// The receive is being cancelled because its sender failed.
    pub peer_lost: bool,
    /// The receive buffer.
    pub buf: *mut u8,
    /// The receive buffer's capacity (for truncation), or a send's length.
    pub capacity: usize,
    /// The elements a request of the slot datatype moves, when they lie
    /// in pieces (else `buf` holds the bytes). Written by every request
    /// that uses the slot datatype, before UCP sees it; read by nothing
    /// else, so `alloc` leaves it as it was.
    pub pieces: Option<Pieces>,
    /// The length UCP is told a request of the slot datatype moves: the
    /// capacity, or [`UNBOUNDED`] for a receive that keeps the first bytes
    /// of a longer message.
    pub packed_size: usize,
    /// Written by the callback: UCP's status.
    pub outcome: sys::ucs_status_t,
    /// Written by the receive callback: the sender's tag and length.
    pub info: sys::ucp_tag_recv_info_t,
    /// The status once complete (and the probed message's).
    pub status: RequestStatus,
    /// The sentence of a request that completed in error.
    pub error: String,
    /// This slot's index (for the callback).
    index: u32,
    /// The slab's events (for the callback).
    events: *mut Events,
    /// Next free slot (index + 1; 0: none).
    next_free: u32,
}

/// The slab (see the module docs).
pub struct Slab {
    chunks: Vec<*mut [Slot]>,
    events: *mut Events,
    free_head: u32,
    live: usize,
}

impl Slab {
    /// An empty slab.
    pub fn new() -> Slab {
        let events = Box::into_raw(Box::new(Events {
            finished: Vec::with_capacity(CHUNK),
            failed: Vec::new(),
        }));
        Slab {
            chunks: Vec::new(),
            events,
            free_head: 0,
            live: 0,
        }
    }

    /// The events list (for the endpoints' error handler).
    pub fn events(&self) -> *mut Events {
        self.events
    }

    /// Requests not released.
    pub fn live(&self) -> usize {
        self.live
    }

    /// The slot at `index`.
    #[inline]
    pub fn at(&self, index: u32) -> *mut Slot {
        let i = index as usize;
        // SAFETY: indices come from this slab, so the chunk exists and
        // the offset is within it.
        unsafe { self.chunks[i / CHUNK].cast::<Slot>().add(i % CHUNK) }
    }

    /// The slot a handle names, if it is live with that generation.
    #[inline]
    pub fn lookup(&self, handle: u64) -> Option<*mut Slot> {
        let index = (handle & 0xffff_ffff) as u32;
        if index == 0 || (index as usize - 1) >= self.chunks.len() * CHUNK {
            return None;
        }
        let slot = self.at(index - 1);
        // SAFETY: a slot of this slab; read through the raw pointer.
        let (generation, state) = unsafe { ((*slot).generation, (*slot).state) };
        (generation == (handle >> 32) as u32 && state != State::Free).then_some(slot)
    }

    /// The handle of a slot.
    #[inline]
    pub fn handle(slot: *const Slot) -> u64 {
        // SAFETY: a slot of a live slab.
        let (generation, index) = unsafe { ((*slot).generation, (*slot).index) };
        (u64::from(generation) << 32) | u64::from(index + 1)
    }

    /// The slot the next [`alloc`](Slab::alloc) hands out (a chunk is
    /// added when none is free). It stays free, and its fields as they
    /// are, until that `alloc`.
    #[inline]
    pub fn next_free(&mut self) -> *mut Slot {
        if self.free_head == 0 {
            self.grow();
        }
        self.at(self.free_head - 1)
    }

    /// A fresh slot for a request of `kind` with completion slot `done`,
    /// in state [`State::Running`].
    #[inline]
    pub fn alloc(&mut self, kind: Kind, done: *const Completion) -> *mut Slot {
        let slot = self.next_free();
        // SAFETY: a free slot of this slab; no UCP request refers to it.
        unsafe {
            self.free_head = (*slot).next_free;
            (*slot).state = State::Running;
            (*slot).kind = kind;
            (*slot).ucx = ptr::null_mut();
            (*slot).message = ptr::null_mut();
            (*slot).done = done;
            (*slot).detached = false;
            (*slot).peer_lost = false;
            (*slot).buf = ptr::null_mut();
            (*slot).capacity = 0;
            (*slot).outcome = sys::UCS_INPROGRESS;
            (*slot).status = RequestStatus::default();
            (*slot).error.clear();
        }
        self.live += 1;
        slot
    }

    /// Releases a slot (its handle goes stale).
    #[inline]
    pub fn release(&mut self, slot: *mut Slot) {
        // SAFETY: a live slot of this slab whose UCP request, if any, has
        // finished and been freed.
        unsafe {
            (*slot).state = State::Free;
            (*slot).generation = ((*slot).generation + 1) & GENERATION_MASK;
            (*slot).next_free = self.free_head;
            self.free_head = (*slot).index + 1;
        }
        self.live -= 1;
    }

    /// Adds a chunk of free slots.
    #[cold]
    fn grow(&mut self) {
        let base = (self.chunks.len() * CHUNK) as u32;
        let chunk: Box<[Slot]> = (0..CHUNK as u32)
            .map(|i| Slot {
                generation: 1,
                state: State::Free,
                kind: Kind::Recv(0),
                ucx: ptr::null_mut(),
                message: ptr::null_mut(),
                done: ptr::null(),
                detached: false,
                peer_lost: false,
                buf: ptr::null_mut(),
                capacity: 0,
                pieces: None,
                packed_size: 0,
                outcome: sys::UCS_OK,
                info: sys::ucp_tag_recv_info_t::default(),
                status: RequestStatus::default(),
                error: String::new(),
                index: base + i,
                events: self.events,
                // Each links to the next; the last to the old head.
                next_free: if i + 1 < CHUNK as u32 {
                    base + i + 2
                } else {
                    self.free_head
                },
            })
            .collect();
        self.chunks.push(Box::into_raw(chunk));
        self.free_head = base + 1;
    }

    /// Every slot index in use (for finalize).
    pub fn in_use(&self) -> Vec<u32> {
        (0..(self.chunks.len() * CHUNK) as u32)
            // SAFETY: every index below the chunks' total is a slot.
            .filter(|&i| unsafe { (*self.at(i)).state } != State::Free)
            .collect()
    }
}

impl Drop for Slab {
    fn drop(&mut self) {
        for chunk in self.chunks.drain(..) {
            // SAFETY: made by `Box::into_raw` in `grow`, freed once; the
            // pml destroys its worker before its slab, so no UCP request
            // points into it any more.
            drop(unsafe { Box::from_raw(chunk) });
        }
        // SAFETY: made by `Box::into_raw` in `new`, freed once, after the
        // worker (whose error handlers held it) is gone.
        drop(unsafe { Box::from_raw(self.events) });
    }
}

/// The index of a slot (the value its callbacks append to the events).
pub fn index_of(slot: *const Slot) -> u32 {
    // SAFETY: a slot of a live slab.
    unsafe { (*slot).index }
}

/// UCP's callback for a finished send.
///
/// # Safety
///
/// `user_data` is the [`Slot`] the send was started with, in a live slab.
pub unsafe extern "C" fn send_done(
    _request: *mut c_void,
    status: sys::ucs_status_t,
    user_data: *mut c_void,
) {
    let slot = user_data.cast::<Slot>();
    // SAFETY: the caller's promise; no reference to the slot or the events
    // is live while UCP runs its callbacks.
    unsafe {
        (*slot).outcome = status;
        (*(*slot).events).finished.push((*slot).index);
    }
}

/// UCP's callback for a finished receive.
///
/// # Safety
///
/// `user_data` is the [`Slot`] the receive was started with, in a live
/// slab; `info` is null or readable.
pub unsafe extern "C" fn recv_done(
    _request: *mut c_void,
    status: sys::ucs_status_t,
    info: *const sys::ucp_tag_recv_info_t,
    user_data: *mut c_void,
) {
    let slot = user_data.cast::<Slot>();
    // SAFETY: as in `send_done`; UCP's info is valid for the call.
    unsafe {
        (*slot).outcome = status;
        if !info.is_null() {
            (*slot).info = *info;
        }
        (*(*slot).events).finished.push((*slot).index);
    }
}

/// The operations of the slot datatype: the "buffer" UCP hands
/// `start_pack` and `start_unpack` is a request's [`Slot`], which says
/// where the bytes are (its buffer, or the pieces of a non-contiguous
/// message) and how long UCP is to take the message to be
/// ([`Slot::packed_size`]). A receive told [`UNBOUNDED`] is never
/// truncated by UCP (which would drop the data): the unpacking writes what
/// fits the receive's capacity, so a truncated receive keeps the message's
/// first bytes.
pub static SLOT_OPS: sys::ucp_generic_dt_ops_t = sys::ucp_generic_dt_ops_t {
    start_pack: Some(slot_start_pack),
    start_unpack: Some(slot_start),
    packed_size: Some(slot_size),
    pack: Some(slot_pack),
    unpack: Some(slot_unpack),
    finish: Some(slot_finish),
};

/// The length a receive that keeps truncated messages tells UCP.
pub const UNBOUNDED: usize = isize::MAX as usize;

unsafe extern "C" fn slot_start(
    _context: *mut c_void,
    buffer: *mut c_void,
    _count: usize,
) -> *mut c_void {
    buffer
}

unsafe extern "C" fn slot_start_pack(
    _context: *mut c_void,
    buffer: *const c_void,
    _count: usize,
) -> *mut c_void {
    buffer.cast_mut()
}

/// The length of the slot's message.
///
/// # Safety
///
/// `state` is a request's [`Slot`] (what the start functions answered).
unsafe extern "C" fn slot_size(state: *mut c_void) -> usize {
    // SAFETY: the caller's promise.
    unsafe { (*state.cast::<Slot>()).packed_size }
}

/// Packs up to `max_length` bytes of a send's message from `offset` into
/// `dest`; answers how many.
///
/// # Safety
///
/// `state` is a send's [`Slot`] whose bytes or pieces are readable;
/// `dest` is writable for `max_length` bytes.
unsafe extern "C" fn slot_pack(
    state: *mut c_void,
    offset: usize,
    dest: *mut c_void,
    max_length: usize,
) -> usize {
    let slot = state.cast::<Slot>();
    // SAFETY: the caller's promise; UCP packs only while the send runs,
    // inside a call on the worker.
    let (buf, capacity, pieces) = unsafe { ((*slot).buf, (*slot).capacity, (*slot).pieces) };
    let n = max_length.min(capacity.saturating_sub(offset));
    match pieces {
        // SAFETY: the pieces stay valid while the send runs (the MPI
        // layer's promise); `dest` holds `n` bytes.
        Some(p) => unsafe { p.pack_into(offset, dest.cast(), n) },
        None => {
            // SAFETY: `offset + n <= capacity` bytes of the send's buffer;
            // UCP's `dest` is another buffer.
            unsafe { ptr::copy_nonoverlapping(buf.add(offset), dest.cast::<u8>(), n) };
            n
        }
    }
}

/// Places the part of `length` bytes at `offset` of the message that
/// falls within the receive's capacity.
///
/// # Safety
///
/// `state` is a receive's [`Slot`] whose buffer or pieces are writable
/// for its capacity; `src` is readable for `length`.
unsafe extern "C" fn slot_unpack(
    state: *mut c_void,
    offset: usize,
    src: *const c_void,
    length: usize,
) -> sys::ucs_status_t {
    let slot = state.cast::<Slot>();
    // SAFETY: the caller's promise; UCP unpacks only while the receive
    // runs, inside a call on the worker.
    let (buf, capacity, pieces) = unsafe { ((*slot).buf, (*slot).capacity, (*slot).pieces) };
    if offset < capacity {
        let n = length.min(capacity - offset);
        match pieces {
            // SAFETY: the pieces stay valid while the receive runs (the
            // MPI layer's promise); `src` holds `n` bytes.
            Some(p) => unsafe {
                p.unpack_from(offset, src.cast(), n);
            },
            // SAFETY: `offset + n <= capacity` bytes of the receive's
            // buffer, and `n <= length` bytes of UCP's source; they do
            // not overlap.
            None => unsafe { ptr::copy_nonoverlapping(src.cast::<u8>(), buf.add(offset), n) },
        }
    }
    sys::UCS_OK
}

unsafe extern "C" fn slot_finish(_state: *mut c_void) {}

/// What an endpoint's error handler is given: the peer's rank and the
/// events list (one per peer, kept until the pml's worker is destroyed).
pub struct PeerArg {
    /// The peer's job rank.
    pub rank: u32,
    /// The slab's events.
    pub events: *mut Events,
}

/// UCP's error handler of an endpoint.
///
/// # Safety
///
/// `arg` is the endpoint's [`PeerArg`], alive with its slab.
pub unsafe extern "C" fn peer_failed(
    arg: *mut c_void,
    _ep: sys::ucp_ep_h,
    status: sys::ucs_status_t,
) {
    let peer = arg.cast::<PeerArg>();
    // SAFETY: the caller's promise; no reference to the events is live
    // while UCP runs its callbacks.
    unsafe { (*(*peer).events).failed.push(((*peer).rank, status)) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_never_zero_keep_the_top_bit_clear_and_go_stale() {
        let mut slab = Slab::new();
        let a = slab.alloc(Kind::Send(1), ptr::null());
        let ha = Slab::handle(a);
        assert_ne!(ha, 0);
        assert_eq!(ha >> 63, 0);
        assert_eq!(slab.lookup(ha), Some(a));
        slab.release(a);
        assert_eq!(slab.lookup(ha), None, "a released handle is stale");
        let b = slab.alloc(Kind::Recv(0), ptr::null());
        assert_eq!(a, b, "the slot is reused");
        let hb = Slab::handle(b);
        assert_ne!(ha, hb);
        assert_eq!(slab.lookup(ha), None, "the old handle stays stale");
        assert_eq!(slab.lookup(hb), Some(b));
        assert_eq!(slab.lookup(0), None);
        assert_eq!(slab.lookup(1 << 40 | 9999), None);
        assert_eq!(slab.live(), 1);
    }

    #[test]
    fn slots_do_not_move_when_the_slab_grows() {
        let mut slab = Slab::new();
        let first = slab.alloc(Kind::Send(0), ptr::null());
        let h = Slab::handle(first);
        let more: Vec<*mut Slot> = (0..3 * CHUNK)
            .map(|_| slab.alloc(Kind::Send(0), ptr::null()))
            .collect();
        assert_eq!(slab.lookup(h), Some(first));
        assert_eq!(slab.live(), 3 * CHUNK + 1);
        assert_eq!(slab.in_use().len(), 3 * CHUNK + 1);
        for s in more {
            slab.release(s);
        }
        assert_eq!(slab.in_use(), vec![0]);
    }

    #[test]
    fn the_callbacks_record_the_outcome_and_the_slot() {
        let mut slab = Slab::new();
        let s = slab.alloc(Kind::Recv(2), ptr::null());
        let info = sys::ucp_tag_recv_info_t {
            sender_tag: 0x1234,
            length: 77,
        };
        // SAFETY: a live slot of a live slab, as the callback requires.
        unsafe { recv_done(ptr::null_mut(), sys::UCS_OK, &info, s.cast()) };
        // SAFETY: as above.
        let (outcome, tag, len) = unsafe { ((*s).outcome, (*s).info.sender_tag, (*s).info.length) };
        assert_eq!((outcome, tag, len), (sys::UCS_OK, 0x1234, 77));
        let t = slab.alloc(Kind::Send(1), ptr::null());
        // SAFETY: as above.
        unsafe { send_done(ptr::null_mut(), sys::UCS_ERR_CANCELED, t.cast()) };
        // SAFETY: the slab's events, not otherwise borrowed.
        let finished = unsafe { (*slab.events()).finished.clone() };
        assert_eq!(finished, vec![0, 1]);
    }
}
