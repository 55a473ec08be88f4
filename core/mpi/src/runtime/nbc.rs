//! Non-blocking collectives: starting one with the component chosen for
//! it, the table of those in flight, and their progress.
//!
//! A started collective is an operation of its component (a future of its
//! algorithm over non-blocking point-to-point messages). The progress
//! engine advances every operation in flight: [`Runtime::progress`], each
//! test and each turn of a wait (of any request, point-to-point or
//! collective) polls them once. Polling happens without the runtime's lock
//! (the operations send and receive through the services, which enter the
//! runtime themselves) and by one thread at a time (the table's lock,
//! taken with `try_lock`: a thread that finds another polling goes on, and
//! a poll that reaches a wait does not poll again from inside).
//!
//! Requests of non-blocking collectives carry [`NB_BIT`] in their handle
//! (pml handles never do), so wait, test, wait-any and free tell them
//! apart.

use super::{Comm, Error, ErrorClass, RequestId, Runtime, Status, ANY_SOURCE, ANY_TAG};
use oxmpi_framework_coll::handle::CollHandle;
use oxmpi_framework_coll::module::{CollCall, TAG_LAST, TAG_NB_FIRST};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// The bit that marks a request handle as a non-blocking collective's.
pub(crate) const NB_BIT: u64 = 1 << 63;

/// How many tags non-blocking collectives cycle through.
const NB_TAGS: u32 = (TAG_NB_FIRST - TAG_LAST) as u32 + 1;

/// The tag of the `n`th non-blocking collective of a communicator.
pub(crate) fn nb_tag(n: u32) -> i32 {
    TAG_NB_FIRST - (n % NB_TAGS) as i32
}

/// One non-blocking collective in flight (or finished, until its request
/// is completed).
struct NbOp {
    id: u64,
    handle: CollHandle,
    /// The component's operation handle (released once it finished).
    op: u64,
    /// Set once it finished.
    outcome: Option<Result<(), String>>,
    /// For messages: `non-blocking allreduce on MPI_COMM_WORLD (coll
    /// tuned)`.
    what: String,
    /// The application freed its request: dropped once it finishes.
    detached: bool,
}

/// The non-blocking collectives of this process.
#[derive(Default)]
pub(crate) struct NbOps {
    ops: Mutex<Vec<NbOp>>,
    /// Operations not finished yet (read without the lock).
    running: AtomicUsize,
    next_id: AtomicU64,
}

impl NbOps {
    /// Polls every unfinished operation once, unless another thread (or
    /// this one, further up) is polling them; the number that finished.
    pub(crate) fn advance(&self) -> usize {
        if self.running.load(Ordering::Acquire) == 0 {
            return 0;
        }
        let Ok(mut ops) = self.ops.try_lock() else {
            return 0;
        };
        let mut finished = 0;
        for op in ops.iter_mut().filter(|o| o.outcome.is_none()) {
            // SAFETY: a live operation of that component (polled until it
            // finishes, never after), polled by one thread at a time (the
            // table's lock).
            if let Some(outcome) = unsafe { op.handle.poll(op.op) } {
                op.outcome = Some(outcome);
                finished += 1;
            }
        }
        if finished > 0 {
            self.running.fetch_sub(finished, Ordering::Release);
            ops.retain(|o| !(o.detached && o.outcome.is_some()));
        }
        finished
    }

    /// The outcome of operation `id` if it finished (then it is gone);
    /// `None` while it runs.
    fn take(&self, id: u64) -> Option<Result<Status, Error>> {
        let mut ops = self.ops.lock().unwrap_or_else(|e| e.into_inner());
        let i = match ops.iter().position(|o| o.id == id) {
            Some(i) => i,
            None => {
                return Some(Err(Error::new(
                    ErrorClass::Request,
                    "the request of a non-blocking collective is not known (completed or freed already)",
                )))
            }
        };
        ops[i].outcome.as_ref()?;
        let op = ops.swap_remove(i);
        Some(match op.outcome {
            Some(Err(why)) => Err(Error::new(ErrorClass::Other, format!("{}: {why}", op.what))),
            _ => Ok(empty_status()),
        })
    }

    /// Whether any operation is unfinished.
    pub(crate) fn running(&self) -> bool {
        self.running.load(Ordering::Acquire) > 0
    }

    /// Forgets operation `id` once it finishes (its request was freed).
    fn detach(&self, id: u64) {
        let mut ops = self.ops.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = ops.iter().position(|o| o.id == id) {
            if ops[i].outcome.is_some() {
                ops.swap_remove(i);
            } else {
                ops[i].detached = true;
            }
        }
    }

    /// Whether a freed operation is still running.
    fn detached_running(&self) -> bool {
        self.ops
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .any(|o| o.detached && o.outcome.is_none())
    }
}

/// The status of a completed non-blocking collective (MPI's empty status).
fn empty_status() -> Status {
    Status {
        source: ANY_SOURCE,
        tag: ANY_TAG,
        count: 0,
        cancelled: false,
    }
}

impl Runtime {
    /// Starts the collective `call` on `comm` non-blocking, with the
    /// component chosen for its non-blocking form; complete the request
    /// with [`Runtime::wait`] or [`Runtime::test`] (or free it).
    ///
    /// # Safety
    ///
    /// The call's buffers are valid for what its fields say (read for
    /// `send`, written for `recv`) until the request completes; every rank
    /// of `comm` starts the same collectives on it in the same order.
    ///
    /// # Errors
    ///
    /// `Other` with the component's sentence, or why no component provides
    /// the operation non-blocking; `Finalized`.
    pub unsafe fn start_collective(
        &self,
        comm: Comm,
        call: &CollCall<'_>,
    ) -> Result<RequestId, Error> {
        if super::PHASE.load(Ordering::Acquire) != super::PHASE_RUNNING {
            return Err(Error::new(
                ErrorClass::Finalized,
                "oxmpi is finalized; no MPI call may follow finalize",
            ));
        }
        let entry = self.entry(comm)?;
        // Claimed before the tag is taken, so a refused call leaves the
        // tags in step with the other members.
        let running = self.claim_for_collective(&entry, call.kind)?;
        let (provider, tag) = {
            let mut coll = entry.coll.lock().unwrap_or_else(|e| e.into_inner());
            let Some(provider) = coll.nb_provider(call.kind) else {
                return Err(Error::new(
                    ErrorClass::Other,
                    coll.no_nb_provider(call.kind),
                ));
            };
            (provider, coll.next_nb_tag())
        };
        let what = format!(
            "non-blocking {} on {} (coll {})",
            call.kind.name(),
            entry.name,
            self.coll_name(provider.index)
        );
        // SAFETY: a live handle of that component (released only when the
        // communicator is freed, and operations do not depend on it); the
        // buffers are the caller's promise; the claim keeps any other
        // collective off the communicator meanwhile.
        let op = unsafe { provider.handle.start(provider.module, call, tag) }
            .map_err(|why| Error::new(ErrorClass::Other, format!("{what}: {why}")))?;
        drop(running);
        let id = self.nb.next_id.fetch_add(1, Ordering::Relaxed) & !NB_BIT;
        self.nb
            .ops
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(NbOp {
                id,
                handle: provider.handle,
                op,
                outcome: None,
                what,
                detached: false,
            });
        self.nb.running.fetch_add(1, Ordering::Release);
        // The first poll sends what the algorithm starts with.
        self.nb.advance();
        Ok(RequestId::pending(NB_BIT | id))
    }

    /// [`Runtime::test`] for a non-blocking collective's request.
    pub(crate) fn nb_test(&self, req: RequestId) -> Option<Result<Status, Error>> {
        let id = req.handle() & !NB_BIT;
        self.nb.advance();
        if let Some(done) = self.nb.take(id) {
            return Some(done);
        }
        self.progress();
        self.nb.take(id)
    }

    /// The outcome of a non-blocking collective's request if it finished
    /// (without advancing anything).
    pub(crate) fn nb_taken(&self, req: RequestId) -> Option<Result<Status, Error>> {
        self.nb.take(req.handle() & !NB_BIT)
    }

    /// [`Runtime::wait`] for a non-blocking collective's request.
    pub(crate) fn nb_wait(&self, req: RequestId) -> Result<Status, Error> {
        loop {
            if let Some(done) = self.nb_test(req) {
                return done;
            }
            if self.yield_when_idle {
                std::thread::yield_now();
            }
        }
    }

    /// [`Runtime::free`] for a non-blocking collective's request: it runs
    /// on and is forgotten when it finishes; finalize waits for it.
    pub(crate) fn nb_free(&self, req: RequestId) {
        self.nb.detach(req.handle() & !NB_BIT);
    }

    /// Runs the non-blocking collectives whose requests were freed to
    /// their end (at finalize).
    pub(crate) fn nb_finish_detached(&self) {
        while self.nb.detached_running() {
            if self.progress() == 0 && self.yield_when_idle {
                std::thread::yield_now();
            }
        }
    }

    /// Advances the non-blocking collectives (part of every round of the
    /// progress engine; call without being entered).
    #[inline]
    pub(crate) fn nb_advance(&self) -> usize {
        self.nb.advance()
    }
}
