//! Gets shared with the peer: the receiver of a large message reads the
//! first half of the sender's buffer (`process_vm_readv`) while the sender
//! writes the second half into the receiver's buffer
//! (`process_vm_writev`), so both processes' cores copy at once. A single
//! copy through cross-memory attach is bound by one core (page pinning and
//! copy); two run side by side at nearly twice the rate.
//!
//! The receiver offers the second half in a slot of its own segment
//! (destination, source, length, then a state word with release
//! ordering) and tells the sender with a control fragment naming the slot
//! and the offer's generation. Whoever moves the state word first owns
//! the half: the sender from "offered" to "taken" (then "done" or
//! "failed" when its copy ends), or the receiver, after its own half,
//! from "offered" to "kept" (it then copies the second half itself). So a
//! sender busy elsewhere never delays the receiver, and a control fragment
//! that arrives late finds the offer gone. The generation in the state
//! word keeps a late fragment from taking a later offer of the same slot.

use crate::cma;
use crate::segment::{Segment, ASSIST_SLOTS};
use std::sync::atomic::Ordering;

/// The slot is free.
const FREE: u64 = 0;
/// The receiver offers the half.
const OFFERED: u64 = 1;
/// The sender took it and is copying.
const TAKEN: u64 = 2;
/// The sender copied it.
const DONE: u64 = 3;
/// The sender's copy failed.
const FAILED: u64 = 4;
/// The receiver kept it (copies it itself).
const KEPT: u64 = 5;

/// The state word of generation `generation` in `state`.
fn word(generation: u64, state: u64) -> u64 {
    generation << 8 | state
}

/// One offer: its slot and generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offer {
    /// The slot in the receiver's segment.
    pub slot: u32,
    /// The offer's generation (unique in the process).
    pub generation: u64,
}

/// Bytes of the control fragment that announces an offer.
pub const MESSAGE: usize = 12;

impl Offer {
    /// The control fragment's bytes.
    pub fn encode(&self) -> [u8; MESSAGE] {
        let mut out = [0; MESSAGE];
        out[..4].copy_from_slice(&self.slot.to_le_bytes());
        out[4..].copy_from_slice(&self.generation.to_le_bytes());
        out
    }

    /// Reads a control fragment; `None` when it is not an offer.
    pub fn decode(bytes: &[u8]) -> Option<Offer> {
        let bytes: &[u8; MESSAGE] = bytes.try_into().ok()?;
        let slot = u32::from_le_bytes(bytes[..4].try_into().ok()?);
        let generation = u64::from_le_bytes(bytes[4..].try_into().ok()?);
        (slot < ASSIST_SLOTS).then_some(Offer { slot, generation })
    }
}

/// How an offer the sender took ended, seen by the receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Still copying.
    Copying,
    /// Copied.
    Done,
    /// The sender's copy failed: the receiver copies the half itself.
    Failed,
}

/// The receiver's side: which of its slots are in use.
#[derive(Default)]
pub struct Offers {
    busy: u64,
    generation: u64,
}

impl Offers {
    /// Offers `len` bytes at `source` (the peer's address) to be written
    /// at `destination` (this process's), in a free slot of this
    /// process's `own` segment; `None` when every slot is in use.
    pub fn offer(
        &mut self,
        own: &Segment,
        destination: u64,
        source: u64,
        len: u64,
    ) -> Option<Offer> {
        let slot = (!self.busy).trailing_zeros();
        if slot >= ASSIST_SLOTS {
            return None;
        }
        self.busy |= 1 << slot;
        self.generation += 1;
        let (state, [d, s, l]) = own.assist(slot);
        d.store(destination, Ordering::Relaxed);
        s.store(source, Ordering::Relaxed);
        l.store(len, Ordering::Relaxed);
        state.store(word(self.generation, OFFERED), Ordering::Release);
        Some(Offer {
            slot,
            generation: self.generation,
        })
    }

    /// Takes an offer back if the peer has not taken it: true means the
    /// receiver copies the half itself.
    pub fn keep(&self, own: &Segment, offer: Offer) -> bool {
        own.assist(offer.slot)
            .0
            .compare_exchange(
                word(offer.generation, OFFERED),
                word(offer.generation, KEPT),
                Ordering::Acquire,
                Ordering::Acquire,
            )
            .is_ok()
    }

    /// How an offer the peer took is going.
    pub fn outcome(&self, own: &Segment, offer: Offer) -> Outcome {
        match own.assist(offer.slot).0.load(Ordering::Acquire) & 0xff {
            DONE => Outcome::Done,
            FAILED => Outcome::Failed,
            _ => Outcome::Copying,
        }
    }

    /// Frees the slot of an offer that ended (kept, done or failed).
    pub fn release(&mut self, own: &Segment, offer: Offer) {
        own.assist(offer.slot)
            .0
            .store(word(offer.generation, FREE), Ordering::Relaxed);
        self.busy &= !(1 << offer.slot);
    }

    /// Offers in use.
    pub fn in_use(&self) -> u32 {
        self.busy.count_ones()
    }
}

/// The sender's side: takes `offer` in the receiver's segment if it is
/// still offered, and copies the half from this process's memory into
/// the receiver's (process id `requester.pid()`). `None` when the offer
/// was gone (kept by the receiver, or a later one in the slot).
pub fn serve(requester: &Segment, offer: Offer) -> Option<std::io::Result<()>> {
    let (state, [d, s, l]) = requester.assist(offer.slot);
    state
        .compare_exchange(
            word(offer.generation, OFFERED),
            word(offer.generation, TAKEN),
            Ordering::Acquire,
            Ordering::Relaxed,
        )
        .ok()?;
    let (destination, source, len) = (
        d.load(Ordering::Relaxed),
        s.load(Ordering::Relaxed),
        l.load(Ordering::Relaxed),
    );
    // The source is this process's own send buffer (its pml published
    // the address and keeps the bytes until the receiver's FIN); the
    // kernel reads it with fault-checked copies, so a bad address from a
    // damaged slot is an error, not a fault.
    let result = cma::write(
        requester.pid(),
        source as *const u8,
        len as usize,
        destination,
    );
    let end = if result.is_ok() { DONE } else { FAILED };
    state.store(word(offer.generation, end), Ordering::Release);
    Some(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment::small_for_tests;

    #[test]
    fn the_peer_copies_an_offered_half_once() {
        let dir = tempfile::tempdir().unwrap();
        let own = small_for_tests(dir.path(), "a", 16, 0);
        let source: Vec<u8> = (0..10_000u32).map(|i| (i * 13) as u8).collect();
        let mut destination = vec![0u8; source.len()];
        let mut offers = Offers::default();
        let offer = offers
            .offer(
                &own,
                destination.as_mut_ptr() as u64,
                source.as_ptr() as u64,
                source.len() as u64,
            )
            .unwrap();
        assert_eq!(Offer::decode(&offer.encode()), Some(offer));
        assert_eq!(offers.outcome(&own, offer), Outcome::Copying);
        // The peer (this process, through the same calls) takes it.
        assert!(serve(&own, offer).unwrap().is_ok());
        assert!(serve(&own, offer).is_none(), "taken once");
        assert!(!offers.keep(&own, offer), "the peer has it");
        assert_eq!(offers.outcome(&own, offer), Outcome::Done);
        assert_eq!(destination, source);
        offers.release(&own, offer);
        assert_eq!(offers.in_use(), 0);
    }

    #[test]
    fn a_kept_or_later_offer_is_not_taken_by_a_late_message() {
        let dir = tempfile::tempdir().unwrap();
        let own = small_for_tests(dir.path(), "a", 16, 0);
        let mut offers = Offers::default();
        let first = offers.offer(&own, 1, 2, 3).unwrap();
        assert!(offers.keep(&own, first));
        assert!(serve(&own, first).is_none());
        offers.release(&own, first);
        let second = offers.offer(&own, 4, 5, 6).unwrap();
        assert_eq!(second.slot, first.slot);
        assert!(serve(&own, first).is_none(), "the old generation");
        assert!(offers.keep(&own, second));
        offers.release(&own, second);
        let all: Vec<Offer> = (0..ASSIST_SLOTS)
            .map(|_| offers.offer(&own, 1, 2, 3).unwrap())
            .collect();
        assert!(offers.offer(&own, 1, 2, 3).is_none(), "every slot in use");
        assert_eq!(all.len() as u32, offers.in_use());
        assert!(Offer::decode(&[0; 5]).is_none());
        let mut bad = first.encode();
        bad[..4].copy_from_slice(&ASSIST_SLOTS.to_le_bytes());
        assert!(Offer::decode(&bad).is_none());
    }

    #[test]
    fn a_failed_copy_is_reported_to_the_receiver() {
        let dir = tempfile::tempdir().unwrap();
        let own = small_for_tests(dir.path(), "a", 16, 0);
        let mut offers = Offers::default();
        let mut destination = [0u8; 8];
        // Source address 8 is not mapped: the kernel refuses.
        let offer = offers
            .offer(&own, destination.as_mut_ptr() as u64, 8, 8)
            .unwrap();
        assert!(serve(&own, offer).unwrap().is_err());
        assert_eq!(offers.outcome(&own, offer), Outcome::Failed);
    }
}
