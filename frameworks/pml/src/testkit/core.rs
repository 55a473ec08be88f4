//! [`KitCore`]: the MPI layer's side of a pml for the kit — the modex in
//! memory, the progress engine, and checks of the pml's use of them.
//!
//! A job of one rank: `modex_get` answers the cards this process
//! published for rank 0 and refuses other ranks with a sentence. The kit
//! [`fence`](KitCore::fence)s the modex when the pml's `init` returns, as
//! the MPI layer does; a `modex_put` after the fence or a `modex_get`
//! before it is refused and recorded as a violation
//! ([`KitCore::violations`]). [`KitCore::round`] is one progress round in
//! the MPI layer's order: every registered progress function, in
//! registration order, then the pml's own `progress` when its signals
//! say it has work. Requests the pml completed during `isend`/`irecv`
//! (handle 0) are kept here under the kit's own handles, so that a test
//! treats every request alike ([`super::session::KitPml`]).

use super::loopback::IN_ROUND;
use crate::handle::{MpiCore, PmlHandle};
use crate::module::{ProgressFn, RequestStatus};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// The kit's MPI layer (see the module docs). One is made (and leaked:
/// the pml keeps a `'static` reference) for each pml start.
pub struct KitCore {
    rank: u32,
    cards: Mutex<Vec<(String, Vec<u8>)>>,
    progress: Mutex<Vec<ProgressFn>>,
    fenced: AtomicBool,
    violations: Mutex<Vec<String>>,
    /// Requests that completed during `isend`/`irecv` (the pml answered
    /// handle 0), under the kit's own handles.
    immediate: Mutex<Vec<(u64, RequestStatus)>>,
    next_immediate: AtomicU64,
}

/// The top bit marks the kit's own handles of requests that completed
/// during `isend`/`irecv`.
pub(crate) const KIT_HANDLE: u64 = 1 << 63;

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl KitCore {
    /// A fresh core for rank `rank` of a one-rank job, leaked (the
    /// pml's `init` takes a `'static` reference).
    pub fn leak(rank: u32) -> &'static KitCore {
        Box::leak(Box::new(KitCore {
            rank,
            cards: Mutex::new(Vec::new()),
            progress: Mutex::new(Vec::new()),
            fenced: AtomicBool::new(false),
            violations: Mutex::new(Vec::new()),
            immediate: Mutex::new(Vec::new()),
            next_immediate: AtomicU64::new(1),
        }))
    }

    /// Fences the modex (after the pml's `init`): puts are refused from
    /// now on, gets answered.
    pub fn fence(&self) {
        self.fenced.store(true, Ordering::Relaxed);
    }

    /// The cards published so far, by name, in publication order.
    pub fn cards(&self) -> Vec<(String, Vec<u8>)> {
        locked(&self.cards).clone()
    }

    /// The progress functions registered so far.
    pub fn progress_functions(&self) -> Vec<ProgressFn> {
        locked(&self.progress).clone()
    }

    /// The pml's breaches of the MPI layer's contract seen so far.
    pub fn violations(&self) -> Vec<String> {
        locked(&self.violations).clone()
    }

    pub(crate) fn violation(&self, text: String) {
        locked(&self.violations).push(text);
    }

    /// Keeps the status of a request that completed during `isend` or
    /// `irecv` under a new kit handle, which it returns.
    pub(crate) fn keep_immediate(&self, status: RequestStatus) -> u64 {
        let h = KIT_HANDLE | self.next_immediate.fetch_add(1, Ordering::Relaxed);
        locked(&self.immediate).push((h, status));
        h
    }

    /// The status kept under kit handle `h`; with `release`, forgets it.
    pub(crate) fn immediate(&self, h: u64, release: bool) -> Option<RequestStatus> {
        let mut kept = locked(&self.immediate);
        let i = kept.iter().position(|(k, _)| *k == h)?;
        let status = kept[i].1;
        if release {
            kept.swap_remove(i);
        }
        Some(status)
    }

    /// One progress round, as the MPI layer runs it: every registered
    /// progress function (in registration order), then `pml`'s `progress`
    /// if its signals say it has work. Returns the number of events all of
    /// them reported.
    pub fn round(&self, pml: &PmlHandle) -> usize {
        let mut events = 0;
        let count = locked(&self.progress).len();
        IN_ROUND.store(true, Ordering::Relaxed);
        for i in 0..count {
            // Copied out so that no lock is held while the btl runs.
            let poll = locked(&self.progress)[i];
            events += poll.run();
        }
        IN_ROUND.store(false, Ordering::Relaxed);
        if pml.signals().has_work() {
            events += pml.progress();
        }
        events
    }
}

impl MpiCore for KitCore {
    fn modex_put(&self, name: &str, card: &[u8]) -> Result<(), String> {
        if self.fenced.load(Ordering::Relaxed) {
            self.violation(format!(
                "the pml published the modex card {name:?} after the fence (after its init returned)"
            ));
            return Err(format!(
                "the modex was already fenced: the card {name:?} cannot be published after init"
            ));
        }
        let mut cards = locked(&self.cards);
        match cards.iter_mut().find(|(n, _)| n == name) {
            Some((_, old)) => *old = card.to_vec(),
            None => cards.push((name.to_string(), card.to_vec())),
        }
        Ok(())
    }

    fn modex_get(&self, rank: u32, name: &str) -> Result<Option<Vec<u8>>, String> {
        if !self.fenced.load(Ordering::Relaxed) {
            self.violation(format!(
                "the pml read rank {rank}'s modex card {name:?} before the fence (during its init)"
            ));
            return Err(format!(
                "the modex is not fenced yet: rank {rank}'s card {name:?} cannot be read during init"
            ));
        }
        if rank != self.rank {
            return Err(format!(
                "rank {rank} is not in the job (the test job has one rank, {})",
                self.rank
            ));
        }
        Ok(locked(&self.cards)
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| c.clone()))
    }

    fn register_progress(&self, poll: ProgressFn) {
        locked(&self.progress).push(poll);
    }
}
