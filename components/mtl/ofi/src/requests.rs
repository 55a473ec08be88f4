//! The MTL's requests: slots at stable addresses (libfabric holds a
//! pointer to each running operation's context block, the slot's first
//! field), reused through a free list, named by handles that carry a
//! generation so a stale handle is refused instead of reaching a reused
//! slot.

use crate::fabric::{new_context, FiAddr, OpContext, NO_ADDRESS};
use oxmpi_framework_requests::{Completion, RequestStatus};

/// What a slot is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Not in use.
    Free,
    /// A send; a synchronous one also waits for its acknowledgement.
    Send {
        /// The send's own completion was read.
        sent: bool,
        /// The acknowledgement arrived (always true for a standard send).
        acked: bool,
        /// Job rank of the receiver (for sentences).
        dest: u32,
    },
    /// The receive of a synchronous send's acknowledgement, for the send
    /// whose handle is `owner` (a handle, not an index: a send that failed
    /// or was released meanwhile is not mistaken for a reuse of its slot).
    AckRecv {
        /// The send's handle.
        owner: u64,
    },
    /// A receive (or the receive of a claimed message).
    Recv,
    /// A probe in flight (`FI_PEEK`, with `FI_CLAIM` for a matched probe).
    Peek {
        /// Whether the message is claimed when found.
        claim: bool,
    },
    /// A probe's answer: found (with the status) or not.
    Probed {
        /// Whether a message was found.
        found: bool,
    },
    /// A message a matched probe claimed, waiting for its receive.
    Claimed,
}

/// One request. `#[repr(C)]` with the context block first: the context
/// pointer libfabric hands back is the slot's address.
#[repr(C)]
pub struct Slot {
    /// libfabric's context block for the running operation.
    pub context: OpContext,
    /// The slot's index (what the context pointer leads back to).
    pub index: u32,
    /// Bumped on every release: part of the handle.
    pub generation: u32,
    /// What the slot is doing.
    pub kind: Kind,
    /// Whether the request is complete.
    pub complete: bool,
    /// The caller freed the running request: released when it completes,
    /// its completion slot never written.
    pub freed: bool,
    /// Where to publish the completion, or null.
    pub done: *const Completion,
    /// The status (receives: source, tag, count; any: error, cancelled).
    pub status: RequestStatus,
    /// The sentence of a request that completed in error.
    pub error: Option<String>,
    /// A receive's buffer (for a matched probe's claimed message: none).
    pub buf: *mut u8,
    /// Its capacity.
    pub len: usize,
    /// The endpoint lane its operation runs on (its communicator's).
    pub lane: usize,
    /// A claimed message's match (source, tag, ignore bits), which some
    /// providers (sockets) check again when it is received.
    pub claim: (FiAddr, u64, u64),
}

// SAFETY: a slot's pointers (its buffer, its completion slot, libfabric's
// use of its context block) are only used under the MTL's exclusive entry,
// by one thread at a time; the MPI layer's promise keeps them valid.
unsafe impl Send for Slot {}

/// The request slots.
pub struct Slots {
    /// Boxed: libfabric holds the address of a running operation's
    /// context block while more slots are made.
    #[allow(clippy::vec_box)]
    slots: Vec<Box<Slot>>,
    free: Vec<u32>,
    /// Requests in use (not free).
    live: usize,
}

/// The largest generation, so a handle's top bit stays clear.
const GENERATION_MASK: u32 = 0x7fff_ffff;

impl Slots {
    /// No slots yet.
    pub fn new() -> Slots {
        Slots {
            slots: Vec::new(),
            free: Vec::new(),
            live: 0,
        }
    }

    /// A slot for a new request of `kind` (reused, or made when none is
    /// free), reset; answers its index.
    pub fn take(&mut self, kind: Kind, done: *const Completion) -> u32 {
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                let i = self.slots.len() as u32;
                self.slots.push(Box::new(Slot {
                    context: new_context(),
                    index: i,
                    generation: 0,
                    kind: Kind::Free,
                    complete: false,
                    freed: false,
                    done: std::ptr::null(),
                    status: RequestStatus::default(),
                    error: None,
                    buf: std::ptr::null_mut(),
                    len: 0,
                    lane: 0,
                    claim: (NO_ADDRESS, 0, 0),
                }));
                i
            }
        };
        let s = &mut self.slots[index as usize];
        s.kind = kind;
        s.complete = false;
        s.freed = false;
        s.done = done;
        s.status = RequestStatus::default();
        s.error = None;
        s.buf = std::ptr::null_mut();
        s.len = 0;
        self.live += 1;
        index
    }

    /// Releases slot `index`: its handle becomes stale.
    pub fn release(&mut self, index: u32) {
        let s = &mut self.slots[index as usize];
        if s.kind == Kind::Free {
            return;
        }
        s.kind = Kind::Free;
        s.error = None;
        s.generation = (s.generation + 1) & GENERATION_MASK;
        self.free.push(index);
        self.live -= 1;
    }

    /// The handle of slot `index` (never 0, top bit clear).
    pub fn handle(&self, index: u32) -> u64 {
        (u64::from(self.slots[index as usize].generation) << 32) | (u64::from(index) + 1)
    }

    /// The index of the live slot `handle` names, if it names one.
    pub fn find(&self, handle: u64) -> Option<u32> {
        let low = (handle & 0xffff_ffff) as u32;
        let index = low.checked_sub(1)?;
        let s = self.slots.get(index as usize)?;
        (s.kind != Kind::Free && u64::from(s.generation) == handle >> 32).then_some(index)
    }

    /// Slot `index`.
    pub fn get(&mut self, index: u32) -> &mut Slot {
        &mut self.slots[index as usize]
    }

    /// The context block of slot `index`, for libfabric.
    pub fn context(&mut self, index: u32) -> *mut OpContext {
        &mut self.slots[index as usize].context
    }

    /// The index of the slot whose context block is at `context` (a
    /// completion's), if it is one of these slots.
    ///
    /// # Safety
    ///
    /// `context` is null or a context block libfabric handed back: the
    /// address of one this value gave out with
    /// [`context`](Slots::context), whose slot is never freed while this
    /// value lives.
    pub unsafe fn of_context(&self, context: *mut OpContext) -> Option<u32> {
        if context.is_null() {
            return None;
        }
        // SAFETY: the caller's promise: the context block is the first
        // field of a live `Slot` (`#[repr(C)]`), so the pointer is the
        // slot's.
        let index = unsafe { (*context.cast::<Slot>()).index };
        let s = self.slots.get(index as usize)?;
        std::ptr::eq(&s.context, context.cast_const()).then_some(index)
    }

    /// Requests in use.
    pub fn live(&self) -> usize {
        self.live
    }
}

impl Default for Slots {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_never_zero_and_stale_ones_are_refused() {
        let mut s = Slots::new();
        let a = s.take(Kind::Recv, std::ptr::null());
        let h = s.handle(a);
        assert_ne!(h, 0);
        assert_eq!(h >> 63, 0);
        assert_eq!(s.find(h), Some(a));
        s.release(a);
        assert_eq!(s.find(h), None, "a released handle is stale");
        let b = s.take(Kind::Recv, std::ptr::null());
        assert_eq!(b, a, "the slot is reused");
        assert_ne!(s.handle(b), h, "with a new generation");
        assert_eq!(s.find(h), None);
        assert_eq!(s.find(0), None);
        assert_eq!(s.find(u64::MAX >> 1), None);
        assert_eq!(s.live(), 1);
    }

    #[test]
    fn slots_keep_their_address_when_more_are_made() {
        let mut s = Slots::new();
        let first = s.take(Kind::Recv, std::ptr::null());
        let at = s.context(first);
        for _ in 0..1000 {
            s.take(Kind::Recv, std::ptr::null());
        }
        assert_eq!(s.context(first), at);
        // SAFETY: `at` is a context block this value gave out.
        assert_eq!(unsafe { s.of_context(at) }, Some(first));
        // SAFETY: null is allowed.
        assert_eq!(unsafe { s.of_context(std::ptr::null_mut()) }, None);
    }

    #[test]
    fn generations_wrap_without_setting_the_top_bit() {
        let mut s = Slots::new();
        let a = s.take(Kind::Recv, std::ptr::null());
        s.get(a).generation = GENERATION_MASK;
        s.release(a);
        let b = s.take(Kind::Recv, std::ptr::null());
        assert_eq!(s.get(b).generation, 0);
        assert_eq!(s.handle(b) >> 63, 0);
    }
}
