//! Context-id agreement: one process's pool of context ids, and the mask
//! protocol by which the members of a new communicator agree on an id that
//! is free at every one of them.
//!
//! # Masks
//!
//! A mask has [`ContextIds::mask_words`] `u64` words; bit `b` of word `w`
//! stands for id `64·w + b`. Ids 0 and 1 are never handed out, so their two
//! bits carry flags instead:
//!
//! | bit | set when |
//! |---|---|
//! | 0 ([`MASK_COMPLETE`]) | the process contributed its free ids (it did not yield to another creation) |
//! | 1 ([`MASK_SETTLED`]) | the process held no tentative reservation when it took the mask |
//! | `id` ≥ 2 | `id` is free at the process |
//!
//! AND-ing the members' masks keeps the ids free everywhere, and each flag
//! only if every member set it.
//!
//! # Serialized protocol
//!
//! When a process never runs two communicator creations at once (no
//! threads, or the caller holds a per-process lock around the whole
//! creation), every member does:
//!
//! 1. `mask = ids.free_mask()`;
//! 2. `anded = allreduce(mask, BAND)` over the parent communicator;
//! 3. `id = ContextIds::lowest_common(&anded)` — the same at every member;
//!    `None` means no id is free at every member (every member sees it:
//!    the creation fails);
//! 4. `ids.claim(id)`.
//!
//! ```
//! use oxmpi_groups::ContextIds;
//!
//! // Three processes; the second already uses ids 2 and 3, the third 4.
//! let mut procs: Vec<ContextIds> = (0..3).map(|_| ContextIds::new()).collect();
//! procs[1].claim(2)?;
//! procs[1].claim(3)?;
//! procs[2].claim(4)?;
//! // The allreduce (BAND) every member takes part in.
//! let masks: Vec<Vec<u64>> = procs.iter().map(|p| p.free_mask()).collect();
//! let anded: Vec<u64> = (0..masks[0].len())
//!     .map(|w| masks.iter().fold(u64::MAX, |acc, m| acc & m[w]))
//!     .collect();
//! // Every member computes the same id from the same AND.
//! let id = ContextIds::lowest_common(&anded).expect("ids left");
//! assert_eq!(id, 5);
//! for p in &mut procs {
//!     p.claim(id)?;
//! }
//! # Ok::<(), oxmpi_groups::ContextError>(())
//! ```
//!
//! This breaks when two creations run concurrently in different threads of
//! one process over overlapping groups: both can take their masks before
//! either claims, pick the same id, and then one of the claims fails at one
//! process but not at another, so the members disagree.
//!
//! # Retry protocol
//!
//! For concurrent creations, every member runs rounds until one succeeds
//! everywhere, holding the process's lock around each call on
//! [`ContextIds`] but never across a collective:
//!
//! ```text
//! ids.begin_creation(priority)                // unique per process; see below
//! loop {
//!     mask  = ids.round_mask(priority)        // (1) mask, or zeros to yield
//!     anded = allreduce(mask, BAND)           //     over the parent
//!     match ids.reserve_tentative(&anded) {   // (2) pick and tentatively claim
//!         Exhausted => { ids.end_creation(priority); fail }   // everyone agrees
//!         Contended => continue,              //     everyone agrees: no vote
//!         Reserved(id) | Busy(id) => {
//!             ok = allreduce(reservation.vote(), LAND)    // (3) did all reserve?
//!             if ok { ids.confirm(id); ids.end_creation(priority); return id }
//!             if Reserved { ids.abandon(id) }             // (4) and retry
//!         }
//!     }
//! }
//! ```
//!
//! **Safety.** A tentative reservation takes the id out of this process's
//! free ids at once, so a concurrent creation can neither reserve nor claim
//! it: no two communicators of one process get the same id. Every member
//! computes its candidate from the same AND, so all members name the same
//! id, and they confirm it only if the vote says every one of them reserved
//! it; otherwise all drop it.
//!
//! **Progress.** Without priorities, two creations that share two
//! processes can reserve the same id in opposite orders at the two, both
//! votes fail, and the same interleaving can repeat for ever. So each
//! creation has a priority, and at each process only the creation with the
//! lowest priority among those in progress there contributes its free ids;
//! the others contribute zeros ([`round_mask`](ContextIds::round_mask)),
//! which makes their round [`Reservation::Contended`] at every member. The
//! creation with the lowest priority in the whole job is then the only one
//! that can reserve at its members once earlier rounds have drained, so it
//! succeeds; then the next one. The priority must order creations the same
//! way at every process and be unique among one process's concurrent
//! creations: the parent communicator's context id does both (MPI forbids
//! concurrent collectives on one communicator); `MPI_Comm_create_group`
//! can use `parent_id << 32 | tag`. The guarantee is for the job as a
//! whole: one creation can still be overtaken again and again by newer
//! creations of lower priority.
//!
//! Within one process, use one protocol for every creation: a
//! [`claim`](ContextIds::claim) refuses an id another thread holds
//! tentatively, so mixing the two turns a race into an error.
//!
//! **Exhaustion.** The round is [`Reservation::Exhausted`] only when no id
//! is free at every member, every member contributed its free ids, and no
//! member held a tentative reservation (which might still be abandoned);
//! otherwise it is `Contended` and the next round looks again.

use std::collections::BTreeSet;
use std::fmt;

mod error;

pub use error::ContextError;

/// The context id of `MPI_COMM_WORLD`; never handed out.
pub const COMM_WORLD_CONTEXT: u32 = 0;
/// The context id of `MPI_COMM_SELF`; never handed out.
pub const COMM_SELF_CONTEXT: u32 = 1;
/// The lowest id the pool hands out.
pub const FIRST_FREE: u32 = 2;
/// The pool size of [`ContextIds::new`]: ids `FIRST_FREE..65536`, a mask of
/// 1024 words (8 KiB).
pub const DEFAULT_LIMIT: u32 = 65536;
/// The largest pool [`ContextIds::with_limit`] accepts (a 2 MiB mask).
pub const MAX_LIMIT: u32 = 1 << 24;
/// Mask bit 0 (id 0's bit): the contributor listed its free ids.
pub const MASK_COMPLETE: u64 = 1 << COMM_WORLD_CONTEXT;
/// Mask bit 1 (id 1's bit): the contributor held no tentative reservation.
pub const MASK_SETTLED: u64 = 1 << COMM_SELF_CONTEXT;

/// What [`ContextIds::reserve_tentative`] made of a round's AND-ed mask.
/// Every member of the round gets the same variant and id, except that
/// `Reserved(id)` at one member can be `Busy(id)` at another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reservation {
    /// `id` is now tentatively reserved here: vote yes, then
    /// [`confirm`](ContextIds::confirm) or [`abandon`](ContextIds::abandon)
    /// it.
    Reserved(u32),
    /// `id` is free at every member by the masks, but a concurrent creation
    /// took it here since: vote no (nothing to abandon).
    Busy(u32),
    /// No agreement this round (a member yielded to a higher-priority
    /// creation, or no id was free everywhere while some member held a
    /// tentative reservation): every member sees this; start the next round
    /// without a vote.
    Contended,
    /// No id is free at every member, and none will be until communicators
    /// are freed: every member sees this; the creation fails
    /// (`MPI_ERR_INTERN`).
    Exhausted,
}

impl Reservation {
    /// This member's vote for step (3): `Some(true)` for `Reserved`,
    /// `Some(false)` for `Busy`, `None` when there is no vote this round.
    pub fn vote(self) -> Option<bool> {
        match self {
            Reservation::Reserved(_) => Some(true),
            Reservation::Busy(_) => Some(false),
            Reservation::Contended | Reservation::Exhausted => None,
        }
    }
}

/// One process's context ids: which are free, in use, or tentatively
/// reserved by a creation in progress; and which creations are in progress
/// (for [`round_mask`](ContextIds::round_mask)). Pure data: the caller
/// keeps one per process behind a lock and runs the collectives (see the
/// module documentation for both protocols).
#[derive(Clone)]
pub struct ContextIds {
    limit: u32,
    /// Bit set: the id is free (neither in use nor tentative). Bits 0 and 1
    /// and those at or above `limit` are always clear.
    free: Vec<u64>,
    /// Bit set: the id is tentatively reserved.
    tentative: Vec<u64>,
    tentative_count: u32,
    creations: BTreeSet<u64>,
}

impl ContextIds {
    /// A pool of ids [`FIRST_FREE`]`..`[`DEFAULT_LIMIT`], all free.
    pub fn new() -> ContextIds {
        ContextIds::build(DEFAULT_LIMIT)
    }

    /// A pool of ids [`FIRST_FREE`]`..limit`, all free. Every process of a
    /// job must use the same limit.
    ///
    /// # Errors
    ///
    /// [`ContextError::LimitTooSmall`] below `FIRST_FREE + 1`,
    /// [`ContextError::LimitTooLarge`] above [`MAX_LIMIT`].
    pub fn with_limit(limit: u32) -> Result<ContextIds, ContextError> {
        if limit <= FIRST_FREE {
            Err(ContextError::LimitTooSmall { limit })
        } else if limit > MAX_LIMIT {
            Err(ContextError::LimitTooLarge { limit })
        } else {
            Ok(ContextIds::build(limit))
        }
    }

    fn build(limit: u32) -> ContextIds {
        let words = (limit as usize).div_ceil(64);
        let mut free = vec![u64::MAX; words];
        // Ids in the last word: 1 to 64.
        let tail = limit as usize - (words - 1) * 64;
        if tail < 64 {
            free[words - 1] = (1u64 << tail) - 1;
        }
        free[0] &= !(MASK_COMPLETE | MASK_SETTLED);
        ContextIds {
            limit,
            free,
            tentative: vec![0; words],
            tentative_count: 0,
            creations: BTreeSet::new(),
        }
    }

    /// The pool's limit: ids are below it.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// The length of this pool's masks, in words.
    pub fn mask_words(&self) -> usize {
        self.free.len()
    }

    /// The number of ids free here (neither in use nor tentative).
    pub fn available(&self) -> u32 {
        self.free.iter().map(|w| w.count_ones()).sum()
    }

    /// This process's mask: a bit set for every free id, with
    /// [`MASK_COMPLETE`] set and [`MASK_SETTLED`] set unless a tentative
    /// reservation is held here.
    pub fn free_mask(&self) -> Vec<u64> {
        let mut mask = self.free.clone();
        mask[0] |= MASK_COMPLETE;
        if self.tentative_count == 0 {
            mask[0] |= MASK_SETTLED;
        }
        mask
    }

    /// The lowest id set in an AND of masks (flag bits 0 and 1 are not
    /// ids), or `None` if there is none. Deterministic, so every member
    /// that has the same AND gets the same id.
    pub fn lowest_common(masks_anded: &[u64]) -> Option<u32> {
        masks_anded.iter().enumerate().find_map(|(w, &word)| {
            let word = if w == 0 {
                word & !(MASK_COMPLETE | MASK_SETTLED)
            } else {
                word
            };
            (word != 0).then(|| w as u32 * 64 + word.trailing_zeros())
        })
    }

    /// The word and bit of `id`, if it is one the pool hands out.
    fn locate(&self, id: u32) -> Result<(usize, u64), ContextError> {
        if id < FIRST_FREE {
            Err(ContextError::Predefined { id })
        } else if id >= self.limit {
            Err(ContextError::OutOfPool {
                id,
                limit: self.limit,
            })
        } else {
            Ok(((id / 64) as usize, 1u64 << (id % 64)))
        }
    }

    /// Whether `id` is taken here: ids 0 and 1, ids in use, and tentatively
    /// reserved ones. Ids outside the pool are not.
    pub fn in_use(&self, id: u32) -> bool {
        match self.locate(id) {
            Ok((w, bit)) => self.free[w] & bit == 0,
            Err(ContextError::Predefined { .. }) => true,
            Err(_) => false,
        }
    }

    /// Whether `id` is tentatively reserved here.
    pub fn is_tentative(&self, id: u32) -> bool {
        self.locate(id)
            .is_ok_and(|(w, bit)| self.tentative[w] & bit != 0)
    }

    /// Marks a free `id` in use (step 4 of the serialized protocol).
    ///
    /// # Errors
    ///
    /// [`ContextError::Predefined`], [`ContextError::OutOfPool`],
    /// [`ContextError::Tentative`] if a creation in progress holds it,
    /// [`ContextError::InUse`] if it is in use.
    pub fn claim(&mut self, id: u32) -> Result<(), ContextError> {
        let (w, bit) = self.locate(id)?;
        if self.tentative[w] & bit != 0 {
            Err(ContextError::Tentative { id })
        } else if self.free[w] & bit == 0 {
            Err(ContextError::InUse { id })
        } else {
            self.free[w] &= !bit;
            Ok(())
        }
    }

    /// Frees an id in use (the communicator was freed here).
    ///
    /// # Errors
    ///
    /// [`ContextError::Predefined`], [`ContextError::OutOfPool`],
    /// [`ContextError::Tentative`] (use [`abandon`](Self::abandon)),
    /// [`ContextError::NotInUse`] if it is free.
    pub fn release(&mut self, id: u32) -> Result<(), ContextError> {
        let (w, bit) = self.locate(id)?;
        if self.tentative[w] & bit != 0 {
            Err(ContextError::Tentative { id })
        } else if self.free[w] & bit != 0 {
            Err(ContextError::NotInUse { id })
        } else {
            self.free[w] |= bit;
            Ok(())
        }
    }

    /// Registers a creation in progress with `priority` (lower goes first;
    /// see the module documentation for what to use).
    ///
    /// # Errors
    ///
    /// [`ContextError::CreationActive`] if one with that priority is in
    /// progress here.
    pub fn begin_creation(&mut self, priority: u64) -> Result<(), ContextError> {
        if self.creations.insert(priority) {
            Ok(())
        } else {
            Err(ContextError::CreationActive { priority })
        }
    }

    /// Ends the creation with `priority` (it confirmed an id or failed).
    ///
    /// # Errors
    ///
    /// [`ContextError::NoCreation`] if none with that priority is in
    /// progress here.
    pub fn end_creation(&mut self, priority: u64) -> Result<(), ContextError> {
        if self.creations.remove(&priority) {
            Ok(())
        } else {
            Err(ContextError::NoCreation { priority })
        }
    }

    /// Step (1) of a retry round: [`free_mask`](Self::free_mask) if the
    /// creation has the lowest priority of those in progress here, else all
    /// zeros (it yields; its round will be `Contended`).
    ///
    /// # Errors
    ///
    /// [`ContextError::NoCreation`] if the creation has not begun here.
    pub fn round_mask(&self, priority: u64) -> Result<Vec<u64>, ContextError> {
        match self.creations.first() {
            _ if !self.creations.contains(&priority) => Err(ContextError::NoCreation { priority }),
            Some(&lowest) if lowest == priority => Ok(self.free_mask()),
            _ => Ok(vec![0; self.free.len()]),
        }
    }

    /// Step (2) of a retry round: from the AND of every member's round
    /// mask, the lowest common id, tentatively reserved here if it is still
    /// free (see [`Reservation`]).
    ///
    /// # Errors
    ///
    /// [`ContextError::MaskLength`] unless the mask has
    /// [`mask_words`](Self::mask_words) words.
    pub fn reserve_tentative(&mut self, masks_anded: &[u64]) -> Result<Reservation, ContextError> {
        if masks_anded.len() != self.free.len() {
            return Err(ContextError::MaskLength {
                got: masks_anded.len(),
                expected: self.free.len(),
            });
        }
        let flags = masks_anded[0];
        if flags & MASK_COMPLETE == 0 {
            return Ok(Reservation::Contended);
        }
        let candidate = ContextIds::lowest_common(masks_anded).filter(|&id| id < self.limit);
        let Some(id) = candidate else {
            return Ok(if flags & MASK_SETTLED != 0 {
                Reservation::Exhausted
            } else {
                Reservation::Contended
            });
        };
        let (w, bit) = self.locate(id)?;
        if self.free[w] & bit == 0 {
            return Ok(Reservation::Busy(id));
        }
        self.free[w] &= !bit;
        self.tentative[w] |= bit;
        self.tentative_count += 1;
        Ok(Reservation::Reserved(id))
    }

    /// Step (4) after a unanimous vote: the tentative `id` is now in use.
    ///
    /// # Errors
    ///
    /// [`ContextError::NotTentative`] unless `id` is tentatively reserved
    /// here (and the errors of an id outside the pool).
    pub fn confirm(&mut self, id: u32) -> Result<(), ContextError> {
        let (w, bit) = self.take_tentative(id)?;
        debug_assert_eq!(self.free[w] & bit, 0);
        Ok(())
    }

    /// Step (4) after a failed vote: the tentative `id` is free again.
    ///
    /// # Errors
    ///
    /// [`ContextError::NotTentative`] unless `id` is tentatively reserved
    /// here (and the errors of an id outside the pool).
    pub fn abandon(&mut self, id: u32) -> Result<(), ContextError> {
        let (w, bit) = self.take_tentative(id)?;
        self.free[w] |= bit;
        Ok(())
    }

    /// Clears `id`'s tentative bit, which must be set.
    fn take_tentative(&mut self, id: u32) -> Result<(usize, u64), ContextError> {
        let (w, bit) = self.locate(id)?;
        if self.tentative[w] & bit == 0 {
            return Err(ContextError::NotTentative { id });
        }
        self.tentative[w] &= !bit;
        self.tentative_count -= 1;
        Ok((w, bit))
    }
}

impl Default for ContextIds {
    /// [`ContextIds::new`].
    fn default() -> ContextIds {
        ContextIds::new()
    }
}

impl fmt::Debug for ContextIds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContextIds")
            .field("limit", &self.limit)
            .field("available", &self.available())
            .field("tentative", &self.tentative_count)
            .field("creations", &self.creations)
            .finish()
    }
}
