//! The protocol over a segment, as one member runs it.
//!
//! A collective is a sequence of **steps**, numbered from 1 per
//! communicator and counted alike by every member (every member takes
//! the same steps for the same call). Step `s` uses slot `s % buffers` of
//! each member that writes in it:
//!
//! 1. A writer **claims** its slot ([`Step::claim`]): it waits until every
//!    other member finished reading the step that used the slot last
//!    (`s − buffers`), fills the data and **publishes** `arrived = s`
//!    (release).
//! 2. A reader **waits** for the writers it reads ([`Step::wait_for`],
//!    [`Step::wait_all`]): `arrived == s` (acquire), then reads their
//!    data.
//! 3. When the step ends (the [`Step`] is dropped, also on an error) the
//!    member publishes `done = s`.
//!
//! What a member knows of the others' `done` it keeps ([`Member`]'s
//! `known`), learnt from their `done` words and from their slots: a member
//! that published `arrived = t` finished step `t − 1`. So in operations
//! where every member waits for every other (allreduce, allgather,
//! alltoall, barrier) a writer never reads a `done` word, and a small
//! call costs one cache-line transfer each way.
//!
//! The tokens ([`Step`], [`Out`], [`In`]) borrow the member, so the
//! borrow checker keeps the hand-overs in order: a slot's data is
//! reachable for writing only between its claim and its publication, and
//! for reading only after its arrival and before the step's `done`.

use crate::segment::{Segment, SMALL_DATA};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How a member waits for a flag.
#[derive(Clone, Copy)]
pub struct Waiter<'a> {
    /// Checks before the wait starts yielding the core.
    pub spins: u32,
    /// Yields between two rounds of progress.
    pub progress_every: u32,
    /// One round of the MPI layer's progress engine.
    pub progress: &'a dyn Fn(),
    /// Fail after this long (tests; `None` waits for as long as it takes).
    pub give_up: Option<Duration>,
}

impl Waiter<'_> {
    /// Waits until `ready` is true: checks it `spins` times, then yields
    /// between checks, with a round of progress every `progress_every`
    /// yields.
    ///
    /// # Errors
    ///
    /// `what()` when `give_up` passed first.
    #[inline]
    pub fn until(
        &self,
        mut ready: impl FnMut() -> bool,
        what: impl Fn() -> String,
    ) -> Result<(), String> {
        for _ in 0..self.spins {
            if ready() {
                return Ok(());
            }
            std::hint::spin_loop();
        }
        self.slow(&mut ready, &what)
    }

    #[cold]
    #[inline(never)]
    fn slow(
        &self,
        ready: &mut dyn FnMut() -> bool,
        what: &dyn Fn() -> String,
    ) -> Result<(), String> {
        let start = self.give_up.map(|limit| (Instant::now(), limit));
        let mut yields = 0u32;
        loop {
            if ready() {
                return Ok(());
            }
            std::thread::yield_now();
            yields = yields.wrapping_add(1);
            if yields.is_multiple_of(self.progress_every.max(1)) {
                (self.progress)();
                if let Some((t0, limit)) = start {
                    if t0.elapsed() > limit {
                        return Err(format!("gave up after {limit:?} waiting for {}", what()));
                    }
                }
            }
        }
    }
}

/// One member's side of a segment.
pub struct Member {
    seg: Arc<Segment>,
    rank: usize,
    /// The last step begun.
    seq: u64,
    /// `seq % buffers` and `seq % small_buffers`: the slot and the small
    /// slot of the last step begun, kept as the steps go (no division
    /// per step).
    slot: usize,
    small_slot: usize,
    /// Per member: the last step it is known to have finished.
    known: Vec<u64>,
}

impl Member {
    /// Member `rank` of `seg`, before its first step.
    ///
    /// # Panics
    ///
    /// When `rank` is not a member of `seg` (a bug of the caller).
    pub fn new(seg: Arc<Segment>, rank: usize) -> Member {
        assert!(rank < seg.members());
        let known = vec![0; seg.members()];
        Member {
            rank,
            seq: 0,
            slot: 0,
            small_slot: 0,
            known,
            seg,
        }
    }

    /// This member's rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of members.
    pub fn size(&self) -> usize {
        self.seg.members()
    }

    /// Bytes of each slot's data.
    pub fn slot_size(&self) -> usize {
        self.seg.slot_size()
    }

    /// The segment.
    pub fn segment(&self) -> &Segment {
        &self.seg
    }

    /// The last step begun.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Begins the next step, with the members' slots.
    #[inline]
    pub fn step(&mut self) -> Step<'_> {
        self.advance();
        Step {
            s: self.seq,
            buffer: self.slot,
            small: false,
            m: self,
        }
    }

    /// Counts the next step and its slot and small slot.
    #[inline]
    fn advance(&mut self) {
        self.seq += 1;
        self.slot += 1;
        if self.slot == self.seg.buffers() {
            self.slot = 0;
        }
        self.small_slot += 1;
        if self.small_slot == self.seg.small_buffers() {
            self.small_slot = 0;
        }
    }

    /// Begins the next step for data of `len` bytes from each member that
    /// writes (the same at every member): with the small slots when it
    /// fits in one ([`SMALL_DATA`] bytes), else with the slots.
    #[inline]
    pub fn step_for(&mut self, len: usize) -> Step<'_> {
        self.advance();
        let small = len <= SMALL_DATA;
        Step {
            s: self.seq,
            buffer: if small { self.small_slot } else { self.slot },
            small,
            m: self,
        }
    }
}

/// A step in progress; publishes `done` when dropped.
pub struct Step<'m> {
    m: &'m mut Member,
    s: u64,
    /// The slot (or small slot) of the step: `s` modulo their number.
    buffer: usize,
    /// Whether the step uses the small slots.
    small: bool,
}

impl Step<'_> {
    /// The step's number.
    pub fn number(&self) -> u64 {
        self.s
    }

    /// The number of members.
    pub fn members(&self) -> usize {
        self.m.size()
    }

    /// The number of slots of the kind the step uses.
    #[inline]
    fn depth(&self) -> u64 {
        if self.small {
            self.m.seg.small_buffers() as u64
        } else {
            self.m.seg.buffers() as u64
        }
    }

    /// Claims this member's slot for the step: waits until every member
    /// finished the step that used it last.
    ///
    /// # Errors
    ///
    /// The waiter gave up.
    pub fn claim(&mut self, wait: &Waiter<'_>) -> Result<Out<'_>, String> {
        let need = self.s.saturating_sub(self.depth());
        let (s, buffer, small) = (self.s, self.buffer, self.small);
        let m = &mut *self.m;
        if need > 0 {
            for q in 0..m.known.len() {
                if q == m.rank || m.known[q] >= need {
                    continue;
                }
                let done = m.seg.done(q);
                let mut seen = 0;
                wait.until(
                    || {
                        seen = done.load(Ordering::Acquire);
                        seen >= need
                    },
                    || format!("rank {q} to finish step {need}"),
                )?;
                m.known[q] = seen;
            }
        }
        Ok(Out {
            // SAFETY: this member's own slot; every member finished reading
            // its previous contents (just checked); the slice is the only one
            // (the token borrows the step) and `Out::publish` consumes it
            // before storing `arrived`.
            data: unsafe { m.seg.data_mut(m.rank, buffer, small) },
            seg: &m.seg,
            rank: m.rank,
            buffer,
            small,
            s,
        })
    }

    fn wait_one(
        m: &mut Member,
        q: usize,
        (s, buffer, small): (u64, usize, bool),
        wait: &Waiter<'_>,
    ) -> Result<(), String> {
        let arrived = m.seg.arrived(q, buffer, small);
        wait.until(
            || arrived.load(Ordering::Acquire) == s,
            || format!("rank {q}'s data of step {s}"),
        )?;
        // A member that began step `s` finished step `s − 1`.
        m.known[q] = m.known[q].max(s - 1);
        Ok(())
    }

    /// Asks the processor for the lines of every other member's slot for
    /// the step that hold data past the flag's line, up to `len` bytes
    /// ([`Segment::prefetch_data`]); for a reader whose writers run
    /// ahead.
    #[inline]
    pub fn prefetch_others(&self, len: usize) {
        let m = &*self.m;
        for q in (0..m.size()).filter(|&q| q != m.rank) {
            m.seg.prefetch_data(q, self.buffer, self.small, len);
        }
    }

    /// Waits until member `q` published its slot for the step.
    ///
    /// # Errors
    ///
    /// The waiter gave up.
    pub fn wait_for(&mut self, q: usize, wait: &Waiter<'_>) -> Result<In<'_>, String> {
        self.wait_members(Some(q), wait)
    }

    /// Waits until every other member published its slot for the step.
    ///
    /// # Errors
    ///
    /// The waiter gave up.
    pub fn wait_all(&mut self, wait: &Waiter<'_>) -> Result<In<'_>, String> {
        self.wait_members(None, wait)
    }

    /// Waits for member `only`, or for every other member.
    #[inline(always)]
    fn wait_members(&mut self, only: Option<usize>, wait: &Waiter<'_>) -> Result<In<'_>, String> {
        let at = (self.s, self.buffer, self.small);
        let members = match only {
            Some(q) => q..q + 1,
            None => 0..self.m.known.len(),
        };
        let me = self.m.rank;
        for q in members.filter(|&q| q != me) {
            Self::wait_one(self.m, q, at, wait)?;
        }
        Ok(In {
            seg: &self.m.seg,
            buffer: at.1,
            small: at.2,
            rank: self.m.rank,
            only,
        })
    }
}

impl Drop for Step<'_> {
    fn drop(&mut self) {
        let m = &mut *self.m;
        m.seg.done(m.rank).store(self.s, Ordering::Release);
        m.known[m.rank] = self.s;
    }
}

/// This member's slot for a step, claimed: fill [`Out::data`], then
/// [`Out::publish`].
pub struct Out<'a> {
    data: &'a mut [u8],
    seg: &'a Segment,
    rank: usize,
    buffer: usize,
    small: bool,
    s: u64,
}

impl Out<'_> {
    /// The slot's data (the segment's slot size, or [`SMALL_DATA`] bytes
    /// for a small slot).
    pub fn data(&mut self) -> &mut [u8] {
        self.data
    }

    /// Publishes the slot: its readers may read it from now on.
    pub fn publish(self) {
        let Out {
            data,
            seg,
            rank,
            buffer,
            small,
            s,
        } = self;
        let _ = data;
        seg.arrived(rank, buffer, small).store(s, Ordering::Release);
    }
}

/// The slots that arrived for a step, readable until the step ends.
pub struct In<'a> {
    seg: &'a Segment,
    buffer: usize,
    small: bool,
    rank: usize,
    /// The one other member waited for (`None`: all of them).
    only: Option<usize>,
}

impl In<'_> {
    /// Member `q`'s slot data (the segment's slot size, or [`SMALL_DATA`]
    /// bytes for a small slot): a member the step waited for, or this
    /// member.
    ///
    /// # Panics
    ///
    /// For another member (a bug of the caller: its slot may be changing).
    pub fn slot(&self, q: usize) -> &[u8] {
        assert!(
            q == self.rank || self.only.is_none_or(|o| o == q),
            "coll sm: read rank {q}'s slot without waiting for it"
        );
        // SAFETY: the step saw `q`'s `arrived` at this step (or `q` is this
        // member, whose `Out` is gone); `q` writes the slot again only
        // after this member's `done` passes the step, which happens when
        // the step (borrowed by `self`) is dropped.
        unsafe { self.seg.data(q, self.buffer, self.small) }
    }
}
