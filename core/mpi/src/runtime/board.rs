//! The completion board: one [`Completion`] slot per request this layer
//! starts, where the pml publishes the request's completion (so a wait or
//! test reads a word instead of calling the pml), with the communicator
//! the request runs on (whose ranks its status's source is translated to)
//! and the pml's handle of it (so the slot's number alone names the
//! request, and a slot given back is told from one in use).
//!
//! Slots are handed to the pml by address, so they never move: they come
//! in chunks of [`CHUNK`] that live as long as the process (the runtime
//! does), and are reused through a free list. Each slot's use keeps its
//! address, so finding a slot by number is one bounds-checked load.

use super::Comm;
use oxmpi_framework_pml::module::Completion;

/// Slots per chunk.
const CHUNK: usize = 256;

/// The slots and their communicators; see the module docs.
#[derive(Default)]
pub(super) struct Board {
    /// What each slot's request is, and where the slot is.
    uses: Vec<SlotUse>,
    /// Slots not in use.
    free: Vec<u32>,
}

/// The request of a slot: its communicator and the pml's handle of it.
#[derive(Clone, Copy)]
struct SlotUse {
    comm: Comm,
    /// 0 while the slot is free (or taken and its request not started).
    handle: u64,
    /// The slot (in a chunk of [`CHUNK`] that is never moved or freed).
    slot: &'static Completion,
}

impl Board {
    /// A slot, armed, for a request on `comm`: its index, and the slot.
    #[inline]
    pub(super) fn take(&mut self, comm: Comm) -> (u32, &'static Completion) {
        let i = match self.free.pop() {
            Some(i) => i,
            None => self.grow(),
        };
        let used = &mut self.uses[i as usize];
        used.comm = comm;
        used.slot.arm();
        (i, used.slot)
    }

    /// The slot the next [`Board::take`] answers, armed but still free: for
    /// a request that usually completes as it starts (a send), which then
    /// leaves the board untouched; [`Board::claim`] takes it when the
    /// request did not complete.
    #[inline(always)]
    pub(super) fn peek(&mut self) -> (u32, &'static Completion) {
        let i = match self.free.last() {
            Some(&i) => i,
            None => {
                let i = self.grow();
                self.free.push(i);
                i
            }
        };
        let slot = self.slot(i);
        slot.arm();
        (i, slot)
    }

    /// Takes slot `i`, the one [`Board::peek`] answered last (nothing
    /// took a slot since), for a request on `comm`.
    #[inline]
    pub(super) fn claim(&mut self, i: u32, comm: Comm) {
        debug_assert_eq!(self.free.last(), Some(&i));
        self.free.pop();
        self.uses[i as usize].comm = comm;
    }

    /// Slot `i` (taken) holds the request the pml calls `handle` (not 0).
    #[inline]
    pub(super) fn started(&mut self, i: u32, handle: u64) {
        self.uses[i as usize].handle = handle;
    }

    /// Slot `i` (one [`Board::take`] answered).
    #[inline]
    pub(super) fn slot(&self, i: u32) -> &'static Completion {
        self.uses[i as usize].slot
    }

    /// The communicator of slot `i`'s request.
    #[inline]
    pub(super) fn comm(&self, i: u32) -> Comm {
        self.uses[i as usize].comm
    }

    /// The pml's handle of slot `i`'s request: 0 when the slot is free
    /// (or `i` is no slot).
    #[inline]
    pub(super) fn handle(&self, i: u32) -> u64 {
        self.uses.get(i as usize).map_or(0, |u| u.handle)
    }

    /// Slot `i` is free again (the pml writes it no more: its request was
    /// published, freed, or never started).
    #[inline]
    pub(super) fn give_back(&mut self, i: u32) {
        self.uses[i as usize].handle = 0;
        self.free.push(i);
    }

    /// Slots in use (for tests).
    #[cfg(test)]
    fn in_use(&self) -> usize {
        self.uses.len() - self.free.len()
    }

    /// Adds a chunk; answers one of its slots and frees the others.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) -> u32 {
        let first = u32::try_from(self.uses.len()).expect("more than 2^32 requests at once");
        let chunk: &'static [Completion; CHUNK] =
            Box::leak(Box::new(std::array::from_fn(|_| Completion::new())));
        self.uses.extend(chunk.iter().map(|slot| SlotUse {
            comm: Comm::World,
            handle: 0,
            slot,
        }));
        // Lowest indices first out, so a program with few requests keeps
        // to the first slots.
        self.free.extend((first + 1..first + CHUNK as u32).rev());
        first
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxmpi_framework_pml::module::{Completed, RequestError, RequestStatus};

    #[test]
    fn slots_are_reused_stay_in_place_and_come_armed() {
        let mut b = Board::default();
        let (a, a_slot) = b.take(Comm::World);
        assert!(std::ptr::eq(a_slot, b.slot(a)), "take answers the slot");
        b.started(a, 77);
        assert_eq!(b.handle(a), 77);
        let at = b.slot(a) as *const Completion;
        let status = RequestStatus {
            source: 3,
            tag: 9,
            count: 12,
            cancelled: false,
            error: RequestError::None,
        };
        b.slot(a).publish(&status);
        assert_eq!(b.slot(a).read(), Completed::Released(status));
        // Enough slots to need more chunks: the first one does not move.
        let many: Vec<u32> = (0..3 * CHUNK).map(|_| b.take(Comm::SelfComm).0).collect();
        assert!(std::ptr::eq(at, b.slot(a)));
        assert_eq!(b.in_use(), 3 * CHUNK + 1);
        assert_eq!(b.comm(many[700]), Comm::SelfComm);
        for i in many {
            b.give_back(i);
        }
        b.give_back(a);
        assert_eq!(b.in_use(), 0);
        assert_eq!(b.handle(a), 0, "a slot given back holds no request");
        assert_eq!(b.handle(1 << 30), 0, "no such slot");
        // Taken again: armed, with its new communicator.
        let (again, _) = b.take(Comm::World);
        assert_eq!(again, a, "the slot given back last comes out first");
        assert_eq!(b.slot(again).read(), Completed::Running);
        assert_eq!(b.comm(again), Comm::World);
        b.slot(again).fail();
        assert_eq!(b.slot(again).read(), Completed::Failed);
    }

    #[test]
    fn a_peeked_slot_stays_free_until_claimed() {
        let mut b = Board::default();
        let (p, p_slot) = b.peek();
        assert!(std::ptr::eq(p_slot, b.slot(p)), "peek answers the slot");
        assert_eq!(b.in_use(), 0, "peeking takes nothing");
        assert_eq!(b.slot(p).read(), Completed::Running, "and arms the slot");
        b.slot(p).fail();
        assert_eq!(b.peek().0, p, "the same slot until one is taken");
        assert_eq!(b.slot(p).read(), Completed::Running, "armed again");
        b.claim(p, Comm::SelfComm);
        b.started(p, 5);
        assert_eq!(b.in_use(), 1);
        assert_eq!(b.comm(p), Comm::SelfComm);
        assert_eq!(b.handle(p), 5);
        let (next, _) = b.peek();
        assert_ne!(next, p, "a claimed slot is not answered again");
        assert_eq!(b.take(Comm::World).0, next, "take answers the peeked slot");
        b.give_back(p);
        b.give_back(next);
        assert_eq!(b.in_use(), 0);
    }
}
