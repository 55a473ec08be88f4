//! The progress functions the runtime polls (one per btl, registered by
//! the pml at init), split by how recently they found anything.
//!
//! A *busy* function runs on every poll. One that has found nothing for
//! [`QUIET_AFTER`] polls (tcp in a job on one host, self without sends to
//! oneself) becomes *quiet*: every [`QUIET_EVERY`]th poll runs one quiet
//! function, each in turn, until it finds something again: each run is a call into its library,
//! and skipping it shortens every other btl's wait loop. The busy set is a
//! short list of its own, so an idle poll costs one call per busy
//! function and no per-function bookkeeping; which function turns quiet
//! is worked out on the quiet turns.

use oxmpi_framework_pml::module::ProgressFn;

/// Polls without an event after which a progress function turns quiet.
pub(super) const QUIET_AFTER: u32 = 1024;

/// How often one quiet progress function runs (every this many polls, the
/// quiet ones in turn), and busy ones are checked for quiet.
pub(super) const QUIET_EVERY: u32 = 16;

/// The registered progress functions; see the module docs.
#[derive(Default)]
pub(super) struct Pollers {
    /// Every function, in registration order.
    all: Vec<ProgressFn>,
    /// The poll at which each function (same order) last found an event
    /// (or turned busy).
    last_event: Vec<u32>,
    /// The busy ones: the function and its index in `all`, in
    /// registration order.
    busy: Vec<(ProgressFn, u32)>,
    /// The quiet function that ran last (an index into `all`).
    quiet_next: usize,
    /// Polls so far (wrapping).
    polls: u32,
}

impl Pollers {
    /// All of `all` busy.
    pub(super) fn new(all: Vec<ProgressFn>) -> Pollers {
        let busy = all
            .iter()
            .enumerate()
            .map(|(i, &f)| (f, i as u32))
            .collect();
        Pollers {
            last_event: vec![0; all.len()],
            all,
            busy,
            quiet_next: 0,
            polls: 0,
        }
    }

    /// Runs the busy functions, and on a quiet turn the quiet ones too;
    /// returns the number of events they reported.
    #[inline]
    pub(super) fn poll(&mut self) -> usize {
        self.polls = self.polls.wrapping_add(1);
        let mut events = 0;
        for &(f, i) in &self.busy {
            let n = f.run();
            if n != 0 {
                self.last_event[i as usize] = self.polls;
                events += n;
            }
        }
        if self.polls.is_multiple_of(QUIET_EVERY) {
            events += self.quiet_turn();
        }
        events
    }

    /// Every [`QUIET_EVERY`]th poll: runs the next quiet function in
    /// turn (busy again if it finds something), and turns the busy ones
    /// that found nothing for [`QUIET_AFTER`] polls quiet.
    #[cold]
    #[inline(never)]
    fn quiet_turn(&mut self) -> usize {
        let now = self.polls;
        let is_busy =
            |busy: &[(ProgressFn, u32)], i: usize| busy.iter().any(|&(_, b)| b as usize == i);
        let mut changed = self
            .busy
            .iter()
            .any(|&(_, i)| now.wrapping_sub(self.last_event[i as usize]) >= QUIET_AFTER);
        let mut events = 0;
        let n = self.all.len();
        for step in 1..=n {
            let i = (self.quiet_next + step) % n;
            if is_busy(&self.busy, i) {
                continue;
            }
            self.quiet_next = i;
            events = self.all[i].run();
            if events != 0 {
                self.last_event[i] = now;
                changed = true;
            }
            break;
        }
        if changed {
            let last_event = &self.last_event;
            self.busy = self
                .all
                .iter()
                .enumerate()
                .filter(|&(i, _)| now.wrapping_sub(last_event[i]) < QUIET_AFTER)
                .map(|(i, &f)| (f, i as u32))
                .collect();
        }
        events
    }

    /// How many functions are busy (for tests).
    #[cfg(test)]
    fn busy_len(&self) -> usize {
        self.busy.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static RUNS_A: AtomicUsize = AtomicUsize::new(0);
    static RUNS_B: AtomicUsize = AtomicUsize::new(0);
    static RUNS_C: AtomicUsize = AtomicUsize::new(0);
    /// Events the next run of `b` reports.
    static EVENTS_B: AtomicUsize = AtomicUsize::new(0);

    unsafe extern "C" fn a() -> usize {
        RUNS_A.fetch_add(1, Ordering::Relaxed);
        1
    }

    unsafe extern "C" fn b() -> usize {
        RUNS_B.fetch_add(1, Ordering::Relaxed);
        EVENTS_B.swap(0, Ordering::Relaxed)
    }

    unsafe extern "C" fn c() -> usize {
        RUNS_C.fetch_add(1, Ordering::Relaxed);
        0
    }

    fn runs() -> [usize; 3] {
        [&RUNS_A, &RUNS_B, &RUNS_C].map(|r| r.load(Ordering::Relaxed))
    }

    #[test]
    fn idle_functions_turn_quiet_take_turns_and_wake_on_an_event() {
        let mut p = Pollers::new(vec![
            ProgressFn { poll: a },
            ProgressFn { poll: b },
            ProgressFn { poll: c },
        ]);
        let mut events = 0;
        for _ in 0..QUIET_AFTER - 1 {
            events += p.poll();
        }
        assert_eq!(events, (QUIET_AFTER - 1) as usize, "a reports one each");
        assert_eq!(p.busy_len(), 3, "not idle long enough yet");
        for _ in 0..2 * QUIET_EVERY {
            p.poll();
        }
        assert_eq!(p.busy_len(), 1, "b and c went quiet");
        // Quiet ones run one per quiet turn, in turn.
        let before = runs();
        for _ in 0..8 * QUIET_EVERY {
            p.poll();
        }
        let after = runs();
        assert_eq!(
            after[0] - before[0],
            8 * QUIET_EVERY as usize,
            "a runs every poll"
        );
        assert_eq!(after[1] - before[1], 4, "b every other quiet turn");
        assert_eq!(after[2] - before[2], 4, "c every other quiet turn");
        // An event wakes b: it runs on every poll again; c stays quiet.
        EVENTS_B.store(3, Ordering::Relaxed);
        let mut events = 0;
        for _ in 0..2 * QUIET_EVERY {
            events += p.poll();
        }
        assert_eq!(events, 2 * QUIET_EVERY as usize + 3);
        assert_eq!(p.busy_len(), 2);
        let before = runs();
        for _ in 0..2 * QUIET_EVERY {
            p.poll();
        }
        let after = runs();
        assert_eq!(after[1] - before[1], 2 * QUIET_EVERY as usize, "b busy");
        assert_eq!(after[2] - before[2], 2, "c alone in the quiet turns");
    }
}
