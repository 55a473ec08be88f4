//! Progress, completion, waits and tests: the progress engine's round,
//! reading a request's completion slot, and the waits, tests, cancels and
//! frees built on them.

use super::*;

/// The runtime entered once, for a wait or test on many requests:
/// [`Sweep::take`] releases the requests that completed already without
/// entering again. [`Runtime::sweep`] makes one.
pub struct Sweep<'a> {
    runtime: &'a Runtime,
    state: Entered<'a>,
}

impl Sweep<'_> {
    /// If `req` has a completion slot ([`RequestId::slot_number`]) and
    /// completed without error: releases it and answers its status.
    /// `None` for every other request (still running, in error, released
    /// already, without a slot, or complete at its start), which stays as
    /// it was: [`Runtime::wait`] and [`Runtime::test`] answer those.
    #[inline(always)]
    pub fn take(&mut self, req: RequestId) -> Option<Status> {
        let slot = req.slot()?;
        if self.state.board.handle(slot) == 0 {
            return None;
        }
        let Completed::Released(st) = self.state.board.slot(slot).read() else {
            return None;
        };
        Some(self.runtime.released(&mut self.state, slot, &st, true))
    }
}

impl Runtime {
    /// Enters the runtime once and runs `f` with a [`Sweep`] of it (for a
    /// wait on many requests, which answers those that completed already
    /// without entering the runtime for each).
    ///
    /// # Errors
    /// `Finalized`, `ThreadLevel` (as every call that enters); `f` does not
    /// run then.
    #[inline(always)]
    pub fn sweep<R>(&self, f: impl FnOnce(&mut Sweep<'_>) -> R) -> Result<R, Error> {
        let state = self.enter()?;
        Ok(f(&mut Sweep {
            runtime: self,
            state,
        }))
    }

    /// One round of the progress engine (under the lock).
    ///
    /// Inlined into the wait loops: an idle round is the btls' progress
    /// calls and two checks, without a frame of its own.
    #[inline(always)]
    pub(super) fn poll(&self, state: &mut State) -> usize {
        let events = state.pollers.poll();
        if self.signals.has_work() || !state.detached.is_empty() {
            return events + self.poll_pml(state);
        }
        events
    }

    /// The part of [`Runtime::poll`] that runs when there is more to do:
    /// the pml's own progress, and the requests the application let go of
    /// (completed ones are released; an error goes unreported).
    #[inline(never)]
    fn poll_pml(&self, state: &mut State) -> usize {
        let mut events = 0;
        if self.signals.has_work() {
            events += self.pml.progress();
        }
        if !state.detached.is_empty() {
            let mut detached = std::mem::take(&mut state.detached);
            detached.retain(|&id| self.complete(state, id).is_none());
            state.detached = detached;
        }
        events
    }

    /// One round of the progress engine; returns the number of events.
    pub fn progress(&self) -> usize {
        let events = match self.enter() {
            Ok(mut state) => self.poll(&mut state),
            Err(_) => 0,
        };
        events + self.nb_advance()
    }

    /// If `req` (pending, not a collective's) is complete: releases it
    /// and returns its outcome. A request with a completion slot is
    /// answered from the slot; one without, by the pml's `take`.
    ///
    /// Inlined into each caller, which then builds the outcome in its own
    /// result: returned from a call, the outcome came back through memory
    /// in pieces and was reloaded whole (a store-forwarding stall).
    #[inline(always)]
    pub(super) fn complete(
        &self,
        state: &mut State,
        req: RequestId,
    ) -> Option<Result<Status, Error>> {
        self.complete_or_keep(state, req, true)
    }

    /// [`Runtime::complete`]; without `release`, a request with a
    /// completion slot that completed without error stays held (its slot
    /// keeps the status for the wait or test that releases it).
    #[inline(always)]
    fn complete_or_keep(
        &self,
        state: &mut State,
        req: RequestId,
        release: bool,
    ) -> Option<Result<Status, Error>> {
        let Some(slot) = req.slot() else {
            return self.complete_unslotted(req.handle());
        };
        // No request in the slot (or no such slot): an id of
        // `RequestId::in_slot` named a released request, or none.
        let handle = state.board.handle(slot);
        if handle == 0 {
            return Some(Err(Self::released_already(slot)));
        }
        match state.board.slot(slot).read() {
            Completed::Running => None,
            Completed::Released(st) => Some(Ok(self.released(state, slot, &st, release))),
            Completed::Failed => {
                let comm = state.board.comm(slot);
                state.board.give_back(slot);
                Some(self.failed(comm, handle))
            }
        }
    }

    /// The status of the request in completion slot `slot`, which the
    /// slot says completed without error with `st`; with `release`, the
    /// slot is given back.
    #[inline(always)]
    fn released(&self, state: &mut State, slot: u32, st: &RequestStatus, release: bool) -> Status {
        let comm = state.board.comm(slot);
        if release {
            state.board.give_back(slot);
        }
        Status::of_request(st, self.source_in(comm, st.source))
    }

    /// The error of a wait, test or cancel of a request named by
    /// completion slot `slot` ([`RequestId::in_slot`]) after it was
    /// released, or of a slot that does not exist.
    #[cold]
    #[inline(never)]
    fn released_already(slot: u32) -> Error {
        Error::new(
            ErrorClass::Request,
            format!(
                "the request of completion slot {slot} is not active (already completed or \
                 freed?)"
            ),
        )
    }

    /// [`Runtime::complete`] for a request without a completion slot:
    /// tests and releases an error-free request in one call to the pml.
    #[inline(never)]
    fn complete_unslotted(&self, handle: u64) -> Option<Result<Status, Error>> {
        let st = self.pml.take(handle)?;
        Some(self.outcome(Comm::World, handle, st))
    }

    /// The error of request `handle` on `comm`, whose completion slot
    /// said it failed (the pml kept it; it is released here).
    #[cold]
    #[inline(never)]
    fn failed(&self, comm: Comm, handle: u64) -> Result<Status, Error> {
        match self.pml.take(handle) {
            Some(st) => self.outcome(comm, handle, st),
            None => Err(self.request_failed(handle, RequestError::Other)),
        }
    }

    /// The outcome of request `handle` on `comm`, which completed with
    /// `st` (and was released, unless in error: then it is released here,
    /// and the error carries the status).
    fn outcome(&self, comm: Comm, handle: u64, st: RequestStatus) -> Result<Status, Error> {
        let status = Status::of_request(&st, self.source_in(comm, st.source));
        match st.error {
            RequestError::None => Ok(status),
            other => Err(self.request_failed(handle, other).with_status(status)),
        }
    }

    /// The error of request `handle`, which completed with `error`; the
    /// request is released (`take` keeps one in error for its sentence).
    #[cold]
    #[inline(never)]
    fn request_failed(&self, handle: u64, error: RequestError) -> Error {
        let text = self.pml.request_error(handle);
        let class = match error {
            RequestError::Truncated => ErrorClass::Truncate,
            RequestError::PeerFailed => ErrorClass::ProcFailed,
            _ => ErrorClass::Other,
        };
        self.pml.free(handle);
        Error::new(class, text)
    }

    /// Checks `req` once (after one round of progress); `Some` once it is
    /// complete, and then the request is released.
    #[inline]
    pub fn test(&self, req: RequestId) -> Option<Result<Status, Error>> {
        match req.outcome() {
            Some(done) => Some(Ok(done)),
            None if req.handle() & nbc::NB_BIT != 0 => self.nb_test(req),
            None => self.test_pending(req, true),
        }
    }

    /// Checks `req` once, as [`Runtime::test`], but a request with a
    /// [`RequestId::slot_number`] that completed without error stays
    /// held: the next wait or test answers the same status and releases
    /// it (`MPI_Testall` and `MPI_Request_get_status` look without
    /// releasing). One in error is released with its error. Any other
    /// request is released as by [`Runtime::test`].
    #[inline]
    pub fn test_kept(&self, req: RequestId) -> Option<Result<Status, Error>> {
        if req.slot().is_none() {
            return self.test(req);
        }
        self.test_pending(req, false)
    }

    /// [`Runtime::test`] for a request the pml holds; `release` as in
    /// [`Runtime::complete_or_keep`].
    fn test_pending(&self, req: RequestId, release: bool) -> Option<Result<Status, Error>> {
        let mut state = match self.enter() {
            Ok(s) => s,
            Err(e) => return Some(Err(e)),
        };
        if let Some(r) = self.complete_or_keep(&mut state, req, release) {
            return Some(r);
        }
        let seen = self.signals.events();
        self.poll(&mut state);
        if self.signals.events() == seen {
            drop(state);
            self.nb_advance();
            return None;
        }
        self.complete_or_keep(&mut state, req, release)
    }

    /// Waits for `req` and releases it. The check for an operation
    /// complete at its start (every eager send that found room) is
    /// inlined into the caller; the rest is a call.
    ///
    /// # Errors
    /// The request's error (`Truncate`: the buffer holds the message's
    /// first bytes; `ProcFailed`; …), or `Finalized`/`ThreadLevel`.
    #[inline(always)]
    pub fn wait(&self, req: RequestId) -> Result<Status, Error> {
        match req.outcome() {
            Some(done) => Ok(done),
            None => self.wait_started(req),
        }
    }

    /// [`Runtime::wait`] for a request that did not complete at its start.
    #[inline]
    fn wait_started(&self, req: RequestId) -> Result<Status, Error> {
        if req.handle() & nbc::NB_BIT != 0 {
            self.nb_wait(req)
        } else {
            self.wait_pending(req)
        }
    }

    /// [`Runtime::wait`] for a request the pml holds.
    ///
    /// Inlined, so that the outcome of a request found complete at once
    /// (in a wait for several, most are) is built in the caller's own
    /// result; only a wait that polls returns its outcome through memory.
    #[inline(always)]
    fn wait_pending(&self, req: RequestId) -> Result<Status, Error> {
        let mut state = self.enter()?;
        // A request may complete during the call that starts it (in error,
        // or as a pml without immediate completion reports it, or before
        // this wait): ask once before polling.
        if let Some(r) = self.complete(&mut state, req) {
            return r;
        }
        // Entered again there: moving the entry (with its optional lock
        // guard) into the call cost a copy in odd-sized pieces, reloaded
        // whole, on every wait.
        drop(state);
        self.wait_polling(req)
    }

    /// [`Runtime::wait_pending`] once the request was found incomplete:
    /// polls until it completes.
    #[inline(never)]
    fn wait_polling(&self, req: RequestId) -> Result<Status, Error> {
        let mut state = self.enter()?;
        // Below MULTIPLE/SERIALIZED there is no lock to let go of between
        // polls: the thread stays entered until the request completes.
        let relock = state.lock.is_some();
        // The counter when the request was last found incomplete: until it
        // moves, nothing can have completed it.
        let mut seen = self.signals.events();
        loop {
            let events = self.poll(&mut state);
            let now = self.signals.events();
            if now != seen {
                if let Some(r) = self.complete(&mut state, req) {
                    return r;
                }
                seen = now;
            }
            if relock || self.nb.running() {
                // Between polls: the lock goes, and the non-blocking
                // collectives (which enter the runtime) advance.
                drop(state);
                let events = events + self.nb_advance();
                if events == 0 && self.yield_when_idle {
                    std::thread::yield_now();
                }
                state = self.enter()?;
            } else if events == 0 && self.yield_when_idle {
                std::thread::yield_now();
            }
        }
    }

    /// Waits until one of `reqs` completes; returns its index and outcome
    /// (that request is released, the others are not).
    ///
    /// # Errors
    /// `Request` for an empty slice; `Finalized`/`ThreadLevel`.
    pub fn wait_any(&self, reqs: &[RequestId]) -> Result<(usize, Result<Status, Error>), Error> {
        if reqs.is_empty() {
            return Err(Error::new(
                ErrorClass::Request,
                "wait_any needs at least one request",
            ));
        }
        if let Some((i, done)) = reqs
            .iter()
            .enumerate()
            .find_map(|(i, r)| Some((i, r.outcome()?)))
        {
            return Ok((i, Ok(done)));
        }
        loop {
            let mut state = self.enter()?;
            for (i, &r) in reqs.iter().enumerate() {
                if r.handle() & nbc::NB_BIT != 0 {
                    continue;
                }
                if let Some(result) = self.complete(&mut state, r) {
                    return Ok((i, result));
                }
            }
            let events = self.poll(&mut state);
            drop(state);
            let events = events + self.nb_advance();
            if let Some((i, result)) = reqs
                .iter()
                .enumerate()
                .filter(|(_, r)| r.handle() & nbc::NB_BIT != 0)
                .find_map(|(i, &r)| Some((i, self.nb_taken(r)?)))
            {
                return Ok((i, result));
            }
            if events == 0 && self.yield_when_idle {
                std::thread::yield_now();
            }
        }
    }

    /// Cancels a receive that has not matched yet: `Ok(true)` if cancelled
    /// (complete it with wait or test; its status says `cancelled`).
    /// `Ok(false)` when too late, or for a send.
    ///
    /// # Errors
    /// `Request` for an id of [`RequestId::in_slot`] whose request was
    /// released (or a slot that does not exist); `Finalized`,
    /// `ThreadLevel`.
    pub fn cancel(&self, req: RequestId) -> Result<bool, Error> {
        if req.outcome().is_some() || req.handle() & nbc::NB_BIT != 0 {
            // A collective cannot be cancelled.
            return Ok(false);
        }
        let state = self.enter()?;
        let handle = match req.slot() {
            Some(slot) => {
                let handle = state.board.handle(slot);
                if handle == 0 {
                    return Err(Self::released_already(slot));
                }
                if !state.board.slot(slot).is_running() {
                    // Complete already (and held, or in error).
                    return Ok(false);
                }
                handle
            }
            None => req.handle(),
        };
        Ok(self.pml.cancel(handle))
    }

    /// Stops watching a send: it still completes, and finalize waits for it.
    pub fn free(&self, req: RequestId) {
        if req.outcome().is_some() {
            return;
        }
        if req.handle() & nbc::NB_BIT != 0 {
            return self.nb_free(req);
        }
        if let Ok(mut state) = self.enter() {
            if let Some(r) = self.complete(&mut state, req) {
                drop(r);
            } else {
                state.detached.push(req);
            }
        }
    }
}
