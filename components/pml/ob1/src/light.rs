//! Light receives: a posted receive that has a completion slot is kept as
//! only what an eager message needs to complete it (buffer, capacity,
//! slot, and the source and tag asked for), in a slab of its own.
//!
//! Most receives end that way: an eager message that fits is copied into
//! the buffer, its status published in the slot, and the entry released,
//! with no request record ever made. Anything else — a rendezvous, a
//! truncation, a lost sender, a cancel, a free before completion — first
//! *promotes* the receive: a full request record is made from the entry,
//! and the entry turns into an alias naming that record. The caller and
//! the matcher keep using the light handle; both resolve through the alias
//! until the record is released, which releases the alias with it.
//!
//! A light handle is `LIGHT_BIT | generation << 32 | index`; generations
//! stay below 2^30, so it never collides with a full handle (see
//! `requests`) and its top bit is clear.

use oxmpi_framework_pml::module::{Completion, RecvArgs};

/// The bit that marks a light handle.
pub(crate) const LIGHT_BIT: u64 = 1 << 62;

/// Generations of both slabs wrap within 30 bits.
pub(crate) const GENERATION_MASK: u32 = (1 << 30) - 1;

/// Whether `handle` names a light receive.
#[inline(always)]
pub(crate) fn is_light(handle: u64) -> bool {
    handle & LIGHT_BIT != 0
}

/// A posted receive, light.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Light {
    /// The buffer (writable for `capacity` bytes until it completes).
    pub buf: *mut u8,
    /// Its capacity.
    pub capacity: usize,
    /// The completion slot (never null).
    pub done: *const Completion,
    /// Source asked for (job rank or `ANY_SOURCE`).
    pub source: i32,
    /// Tag asked for (or `ANY_TAG`).
    pub tag: i32,
}

impl Light {
    /// The light receive of `args` (whose `done` is not null).
    #[inline(always)]
    pub(crate) fn of(args: &RecvArgs) -> Light {
        Light {
            buf: args.buf,
            capacity: args.len,
            done: args.done,
            source: args.source,
            tag: args.tag,
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum State {
    /// Free.
    Vacant,
    /// Posted, light.
    Posted(Light),
    /// Promoted to the full request with this handle.
    Promoted(u64),
}

struct Slot {
    generation: u32,
    state: State,
}

/// What a light handle names now.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Named {
    /// A light receive still posted, at slab index `index`.
    Posted {
        /// Its index (for [`Lights::vacate_at`]).
        index: usize,
        /// The receive.
        light: Light,
    },
    /// The full request it was promoted to.
    Promoted(u64),
    /// Nothing: released, stale, or never issued.
    Unknown,
}

/// The slab of light receives. (It keeps no counts: the hot paths stay
/// free of them; [`Lights::used`] and [`Lights::posted`] count on demand.)
#[derive(Default)]
pub(crate) struct Lights {
    slots: Vec<Slot>,
    free: Vec<u32>,
}

#[inline(always)]
fn split(handle: u64) -> (usize, u32) {
    (
        (handle & 0xffff_ffff) as usize,
        ((handle >> 32) as u32) & GENERATION_MASK,
    )
}

impl Lights {
    /// Stores a posted light receive; returns its handle.
    #[inline(always)]
    pub(crate) fn insert(&mut self, light: Light) -> u64 {
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                let i = u32::try_from(self.slots.len()).expect("more than 2^32 light receives");
                self.slots.push(Slot {
                    generation: 1,
                    state: State::Vacant,
                });
                i
            }
        };
        let slot = &mut self.slots[index as usize];
        slot.state = State::Posted(light);
        LIGHT_BIT | (u64::from(slot.generation) << 32) | u64::from(index)
    }

    /// What light handle `handle` names.
    #[inline(always)]
    pub(crate) fn named(&self, handle: u64) -> Named {
        let (i, g) = split(handle);
        match self.slots.get(i) {
            Some(slot) if slot.generation == g => match slot.state {
                State::Posted(light) => Named::Posted { index: i, light },
                State::Promoted(full) => Named::Promoted(full),
                State::Vacant => Named::Unknown,
            },
            _ => Named::Unknown,
        }
    }

    /// Turns posted entry `index` into an alias of full request `full`.
    #[inline]
    pub(crate) fn promote_at(&mut self, index: usize, full: u64) {
        self.slots[index].state = State::Promoted(full);
    }

    /// Releases entry `index` (posted or alias); its handle becomes stale.
    #[inline(always)]
    pub(crate) fn vacate_at(&mut self, index: usize) {
        let slot = &mut self.slots[index];
        slot.state = State::Vacant;
        slot.generation = ((slot.generation + 1) & GENERATION_MASK).max(1);
        self.free.push(index as u32);
    }

    /// Releases the entry of `handle` if it is live.
    #[inline]
    pub(crate) fn vacate(&mut self, handle: u64) {
        let (i, g) = split(handle);
        if self
            .slots
            .get(i)
            .is_some_and(|s| s.generation == g && !matches!(s.state, State::Vacant))
        {
            self.vacate_at(i);
        }
    }

    /// Handles of the posted light receives whose source is `source` (for
    /// the rare walk when a peer is lost).
    pub(crate) fn posted_from(&self, source: i32) -> Vec<u64> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s.state, State::Posted(l) if l.source == source))
            .map(|(i, s)| LIGHT_BIT | (u64::from(s.generation) << 32) | i as u64)
            .collect()
    }

    /// Entries in use: posted light receives and aliases (counted now).
    pub(crate) fn used(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| !matches!(s.state, State::Vacant))
            .count()
    }

    /// Posted light receives, not aliases (counted now).
    pub(crate) fn posted(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| matches!(s.state, State::Posted(_)))
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn light(source: i32) -> Light {
        Light {
            buf: std::ptr::null_mut(),
            capacity: 8,
            done: std::ptr::NonNull::dangling().as_ptr(),
            source,
            tag: 0,
        }
    }

    #[test]
    fn handles_are_marked_generation_checked_and_resolve_through_aliases() {
        let mut l = Lights::default();
        let a = l.insert(light(1));
        assert!(is_light(a));
        assert_eq!(a >> 63, 0, "the top bit stays clear");
        assert!(matches!(l.named(a), Named::Posted { light, .. } if light.source == 1));
        assert_eq!(l.used(), 1);
        let b = l.insert(light(2));
        assert_eq!(l.posted_from(2), vec![b]);
        let Named::Posted { index, .. } = l.named(b) else {
            panic!("b is posted");
        };
        l.promote_at(index, 77);
        assert!(matches!(l.named(b), Named::Promoted(77)));
        assert_eq!(l.used(), 2, "an alias is in use");
        assert_eq!(l.posted(), 1, "an alias is not posted");
        assert!(l.posted_from(2).is_empty(), "an alias is not posted");
        l.vacate(b);
        assert!(matches!(l.named(b), Named::Unknown));
        l.vacate(b);
        assert_eq!(l.used(), 1, "a stale handle releases nothing");
        let c = l.insert(light(3));
        assert_eq!(c & 0xffff_ffff, b & 0xffff_ffff, "the slot is reused");
        assert_ne!(c, b, "under a new generation");
        assert!(matches!(l.named(b), Named::Unknown));
        l.vacate(a);
        l.vacate(c);
        assert_eq!(l.used(), 0);
        assert!(matches!(l.named(0), Named::Unknown));
        assert!(matches!(l.named(LIGHT_BIT | 5), Named::Unknown));
    }

    #[test]
    fn generations_wrap_within_thirty_bits_and_skip_zero() {
        let mut l = Lights::default();
        let a = l.insert(light(0));
        l.slots[0].generation = GENERATION_MASK;
        l.vacate_at(0);
        assert_eq!(l.slots[0].generation, 1);
        assert!(
            matches!(l.named(a), Named::Unknown),
            "the vacated slot names nothing"
        );
        let b = l.insert(light(0));
        assert_eq!(b >> 32 & u64::from(GENERATION_MASK), 1);
        assert!(is_light(b));
    }
}
