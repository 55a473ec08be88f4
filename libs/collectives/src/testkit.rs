//! An in-memory [`Transport`] for tests: `n` ranks as `n` threads of one
//! process (feature `testkit`; always built for this crate's own tests).
//!
//! ```
//! use oxmpi_collectives::{bcast_binomial, block_on, testkit, Transport};
//!
//! let results = testkit::run(4, |t| {
//!     let mut buf = if t.rank() == 2 { vec![7u8; 5] } else { vec![0u8; 5] };
//!     block_on(bcast_binomial(t, &mut buf, 2, -1)).unwrap();
//!     buf
//! });
//! assert!(results.iter().all(|b| b == &[7u8; 5]));
//! ```
//!
//! # Semantics
//!
//! - Matching follows MPI: exact source and tag; messages from one rank to
//!   another with one tag match in the order they were sent, receives in
//!   the order they were posted.
//! - A send copies its data at once. By default it completes only when a
//!   receive has matched it (**synchronous** sends, MPI's `MPI_Ssend`), the
//!   strictest mode: an algorithm that relies on buffering deadlocks here.
//!   [`Options::synchronous_sends`] `= false` makes sends complete at once
//!   (eager).
//! - Receives are matched while their rank waits in
//!   [`wait_all`](Transport::wait_all) (for any request); a receive of
//!   another length than the message completes with
//!   [`CollError::Length`].
//! - A `wait_all` that is not done after [`Options::timeout`] panics with
//!   the rank, what it waits for and the messages that arrived but match
//!   nothing, so a deadlock fails the test instead of hanging it. When a
//!   rank panics, the others give up (panic) at their next wait, and
//!   [`run`] re-raises the first panic.
//! - At the end of a run, [`run`] panics if a rank left a request
//!   unwaited or a message was never received.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt::Write as _;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::error::CollError;
use crate::transport::{Request, Transport};

/// How [`run_with`] runs the ranks.
#[derive(Debug, Clone)]
pub struct Options {
    /// How long a [`wait_all`](Transport::wait_all) may block before it
    /// panics (default 20 s).
    pub timeout: Duration,
    /// Whether a send completes only once a receive matched it (default
    /// `true`); otherwise it completes when started.
    pub synchronous_sends: bool,
    /// Whether the transports are non-blocking (default `false`): then
    /// [`Transport::blocking`] is false, so the algorithms poll with
    /// [`test_all`](Transport::test_all) and their futures give control
    /// back while messages are in flight; drive them with [`drive`].
    pub nonblocking: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            timeout: Duration::from_secs(20),
            synchronous_sends: true,
            nonblocking: false,
        }
    }
}

/// Runs `f` on `size` ranks (threads), each with its own [`TestTransport`],
/// with the default [`Options`]; returns the results in rank order.
///
/// # Panics
///
/// If `size` is 0, if a rank panics (the first panic is re-raised), if a
/// wait times out, or if a request or a message is left over at the end.
pub fn run<R, F>(size: u32, f: F) -> Vec<R>
where
    R: Send,
    F: Fn(&mut TestTransport) -> R + Sync,
{
    run_with(&Options::default(), size, f)
}

/// [`run`] with explicit [`Options`].
///
/// # Panics
///
/// As [`run`].
pub fn run_with<R, F>(options: &Options, size: u32, f: F) -> Vec<R>
where
    R: Send,
    F: Fn(&mut TestTransport) -> R + Sync,
{
    assert!(size > 0, "testkit: a communicator needs at least one rank");
    let world = Arc::new(World::new(size));
    let outcomes: Vec<std::thread::Result<R>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..size)
            .map(|rank| {
                let world = Arc::clone(&world);
                let f = &f;
                std::thread::Builder::new()
                    .name(format!("rank {rank}"))
                    .spawn_scoped(scope, move || {
                        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
                            let mut t = TestTransport::new(Arc::clone(&world), rank, size, options);
                            let result = f(&mut t);
                            t.check_idle();
                            result
                        }));
                        if outcome.is_err() {
                            world.fail(rank);
                        }
                        outcome
                    })
                    .expect("testkit: cannot spawn a rank thread")
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(Err))
            .collect()
    });
    let first_failure = world.lock().failed;
    let mut results = Vec::with_capacity(outcomes.len());
    let mut payloads: Vec<Option<Box<dyn std::any::Any + Send>>> = Vec::new();
    for outcome in outcomes {
        match outcome {
            Ok(r) => {
                results.push(r);
                payloads.push(None);
            }
            Err(payload) => payloads.push(Some(payload)),
        }
    }
    if let Some(rank) = first_failure {
        let payload = payloads[rank as usize]
            .take()
            .or_else(|| payloads.iter_mut().find_map(Option::take))
            .expect("testkit: a failed rank left no panic");
        panic::resume_unwind(payload);
    }
    let leftovers = world.lock().describe_all_unreceived();
    assert!(
        leftovers.is_empty(),
        "testkit: messages never received:{leftovers}"
    );
    results
}

/// One rank's [`Transport`] in a [`run`]: an in-memory mailbox shared with
/// the other ranks' threads.
pub struct TestTransport {
    world: Arc<World>,
    rank: u32,
    size: u32,
    timeout: Duration,
    synchronous: bool,
    nonblocking: bool,
    next_req: u64,
    /// Receives not matched yet, in posting order.
    posted: Vec<PostedRecv>,
    /// Synchronous sends not matched yet, by request.
    unmatched_sends: HashMap<u64, SentMessage>,
    /// The same, by message id → request.
    send_of_message: HashMap<u64, u64>,
    /// Completed requests not waited yet.
    done: HashMap<u64, Result<(), CollError>>,
    messages_sent: u64,
    bytes_sent: u64,
}

impl std::fmt::Debug for TestTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestTransport")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

struct PostedRecv {
    req: u64,
    source: u32,
    tag: i32,
    buf: *mut u8,
    len: usize,
}

struct SentMessage {
    dest: u32,
    tag: i32,
    len: usize,
}

impl TestTransport {
    fn new(world: Arc<World>, rank: u32, size: u32, options: &Options) -> Self {
        TestTransport {
            world,
            rank,
            size,
            timeout: options.timeout,
            synchronous: options.synchronous_sends,
            nonblocking: options.nonblocking,
            next_req: 0,
            posted: Vec::new(),
            unmatched_sends: HashMap::new(),
            send_of_message: HashMap::new(),
            done: HashMap::new(),
            messages_sent: 0,
            bytes_sent: 0,
        }
    }

    /// A second transport of the same rank (same mailbox, requests of its
    /// own), as each non-blocking collective of an MPI process has: several
    /// collectives can then be in flight on one rank at once (with
    /// different tags). The fork must be idle when dropped, as the
    /// original at the end of [`run`].
    pub fn fork(&self) -> TestTransport {
        let options = Options {
            timeout: self.timeout,
            synchronous_sends: self.synchronous,
            nonblocking: self.nonblocking,
        };
        TestTransport::new(Arc::clone(&self.world), self.rank, self.size, &options)
    }

    /// Panics unless every request of this transport was completed (for a
    /// [`fork`](TestTransport::fork) at its end).
    pub fn assert_idle(&self) {
        self.check_idle();
    }

    /// The number of messages this rank has sent so far.
    pub fn messages_sent(&self) -> u64 {
        self.messages_sent
    }

    /// The number of bytes this rank has sent so far.
    pub fn bytes_sent(&self) -> u64 {
        self.bytes_sent
    }

    fn new_request(&mut self) -> u64 {
        self.next_req += 1;
        self.next_req
    }

    fn check_peer(&self, peer: u32, role: &str) -> Result<(), CollError> {
        if peer < self.size {
            Ok(())
        } else {
            Err(CollError::Transport(format!(
                "rank {}: {role} rank {peer} is not in a communicator of {}",
                self.rank, self.size
            )))
        }
    }

    /// Matches posted receives with arrived messages, in posting order, and
    /// notes the synchronous sends that were matched.
    fn progress(&mut self, state: &mut State) {
        let me = self.rank as usize;
        let mut i = 0;
        while i < self.posted.len() {
            let recv = &self.posted[i];
            let Some(msg) = state.mailboxes[me]
                .get_mut(&(recv.source, recv.tag))
                .and_then(VecDeque::pop_front)
            else {
                i += 1;
                continue;
            };
            let recv = self.posted.remove(i);
            let result = if msg.data.len() == recv.len {
                if recv.len > 0 {
                    // SAFETY: `irecv`'s contract: `recv.buf` is writable for
                    // `recv.len` bytes and untouched by anyone else until
                    // the request is waited, which has not happened (it is
                    // still posted); `msg.data` is our own vector.
                    unsafe { std::ptr::copy_nonoverlapping(msg.data.as_ptr(), recv.buf, recv.len) };
                }
                Ok(())
            } else {
                Err(CollError::Length {
                    from: recv.source,
                    tag: recv.tag,
                    expected: recv.len,
                    actual: msg.data.len(),
                })
            };
            self.done.insert(recv.req, result);
            state.matched[recv.source as usize].insert(msg.id);
            self.world.signal(recv.source);
        }
        // Only this transport's sends: a fork of the rank keeps its own.
        let mine = &mut self.send_of_message;
        let (unmatched, done) = (&mut self.unmatched_sends, &mut self.done);
        state.matched[me].retain(|id| match mine.remove(id) {
            Some(req) => {
                unmatched.remove(&req);
                done.insert(req, Ok(()));
                false
            }
            None => true,
        });
    }

    fn describe_wait(&self, reqs: &[Request], state: &State) -> String {
        const SHOWN: usize = 12;
        let mut out = String::new();
        let outstanding: Vec<&u64> = reqs
            .iter()
            .map(|Request(req)| req)
            .filter(|req| !self.done.contains_key(req))
            .collect();
        if outstanding.len() > SHOWN {
            let _ = write!(out, " {} requests, the first {SHOWN}:", outstanding.len());
        }
        for req in outstanding.into_iter().take(SHOWN) {
            if let Some(recv) = self.posted.iter().find(|r| r.req == *req) {
                let _ = write!(
                    out,
                    "\n  receive from rank {} tag {} ({} bytes)",
                    recv.source, recv.tag, recv.len
                );
            } else if let Some(sent) = self.unmatched_sends.get(req) {
                let _ = write!(
                    out,
                    "\n  send to rank {} tag {} ({} bytes), not received yet",
                    sent.dest, sent.tag, sent.len
                );
            }
        }
        let unreceived = state.describe_unreceived(self.rank);
        if !unreceived.is_empty() {
            let _ = write!(
                out,
                "\nmessages that arrived but match no receive:{unreceived}"
            );
        }
        out
    }

    /// Abandons every outstanding request of this rank (so no buffer is
    /// touched any more) and panics with `why`, or, when the thread is
    /// already unwinding (a wait from a destructor), returns it as an error
    /// instead of panicking again.
    fn give_up(&mut self, reqs: &mut Vec<Request>, why: String) -> Result<(), CollError> {
        self.posted.clear();
        self.unmatched_sends.clear();
        self.send_of_message.clear();
        self.done.clear();
        reqs.clear();
        if std::thread::panicking() {
            Err(CollError::Transport(why))
        } else {
            panic!("testkit: {why}");
        }
    }

    /// Panics if requests were left unwaited.
    fn check_idle(&self) {
        let left = self.posted.len() + self.unmatched_sends.len() + self.done.len();
        assert!(
            left == 0,
            "testkit: rank {} finished with {left} request(s) never waited",
            self.rank
        );
    }
}

impl Transport for TestTransport {
    fn rank(&self) -> u32 {
        self.rank
    }

    fn size(&self) -> u32 {
        self.size
    }

    unsafe fn isend(
        &mut self,
        dest: u32,
        tag: i32,
        buf: *const u8,
        len: usize,
    ) -> Result<Request, CollError> {
        self.check_peer(dest, "destination")?;
        let data = if len == 0 {
            Vec::new()
        } else {
            // SAFETY: the caller guarantees `buf` is readable for `len`
            // bytes (and unchanged) until the request is waited; we copy it
            // right now.
            unsafe { std::slice::from_raw_parts(buf, len) }.to_vec()
        };
        let req = self.new_request();
        let id = {
            let mut state = self.world.lock();
            state.next_msg += 1;
            let id = state.next_msg;
            state.mailboxes[dest as usize]
                .entry((self.rank, tag))
                .or_default()
                .push_back(Message { id, data });
            self.world.signal(dest);
            id
        };
        self.messages_sent += 1;
        self.bytes_sent += len as u64;
        if self.synchronous {
            self.unmatched_sends
                .insert(req, SentMessage { dest, tag, len });
            self.send_of_message.insert(id, req);
        } else {
            self.done.insert(req, Ok(()));
        }
        Ok(Request(req))
    }

    unsafe fn irecv(
        &mut self,
        source: u32,
        tag: i32,
        buf: *mut u8,
        len: usize,
    ) -> Result<Request, CollError> {
        self.check_peer(source, "source")?;
        let req = self.new_request();
        self.posted.push(PostedRecv {
            req,
            source,
            tag,
            buf,
            len,
        });
        Ok(Request(req))
    }

    fn blocking(&self) -> bool {
        !self.nonblocking
    }

    fn test_all(&mut self, reqs: &mut Vec<Request>) -> Result<bool, CollError> {
        {
            let world = Arc::clone(&self.world);
            let mut state = world.lock();
            if let Some(failed) = state.failed {
                drop(state);
                self.give_up(
                    reqs,
                    format!("rank {} gives up: rank {failed} panicked", self.rank),
                )?;
                return Ok(true);
            }
            self.progress(&mut state);
        }
        let mut first_error = None;
        reqs.retain(|Request(req)| match self.done.remove(req) {
            Some(Err(e)) => {
                first_error.get_or_insert(e);
                false
            }
            Some(Ok(())) => false,
            None => true,
        });
        match first_error {
            // The trait's contract: on an error every request is complete.
            Some(e) => {
                let _ = self.wait_all(reqs);
                Err(e)
            }
            None => Ok(reqs.is_empty()),
        }
    }

    fn wait_all(&mut self, reqs: &mut Vec<Request>) -> Result<(), CollError> {
        for Request(req) in reqs.iter() {
            let known = self.done.contains_key(req)
                || self.unmatched_sends.contains_key(req)
                || self.posted.iter().any(|r| r.req == *req);
            assert!(
                known,
                "testkit: rank {} waits for unknown request {req}",
                self.rank
            );
        }
        let world = Arc::clone(&self.world);
        let deadline = Instant::now() + self.timeout;
        let events = &world.events[self.rank as usize];
        let mut state = world.lock();
        loop {
            let seen = events.load(Ordering::SeqCst);
            if let Some(failed) = state.failed {
                drop(state);
                return self.give_up(
                    reqs,
                    format!("rank {} gives up: rank {failed} panicked", self.rank),
                );
            }
            self.progress(&mut state);
            if reqs.iter().all(|Request(req)| self.done.contains_key(req)) {
                break;
            }
            let now = Instant::now();
            if now >= deadline {
                let what = self.describe_wait(reqs, &state);
                drop(state);
                let why = format!(
                    "rank {} waited {:?} (deadlock?) for:{what}",
                    self.rank, self.timeout
                );
                return self.give_up(reqs, why);
            }
            // Handing a message from thread to thread through the condition
            // variable alone is slow (tens of µs); yield a little first.
            drop(state);
            for _ in 0..SPINS {
                if events.load(Ordering::SeqCst) != seen {
                    break;
                }
                std::thread::yield_now();
            }
            state = world.lock();
            if events.load(Ordering::SeqCst) != seen {
                continue;
            }
            state = world.wake[self.rank as usize]
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        drop(state);
        let mut first_error = None;
        for Request(req) in reqs.drain(..) {
            if let Some(Err(e)) = self.done.remove(&req) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

struct Message {
    id: u64,
    data: Vec<u8>,
}

/// How many times a waiting rank yields before it sleeps on its condition
/// variable.
const SPINS: usize = 64;

/// The shared part: every rank's mailbox under one lock, one condition
/// variable per rank, and per rank a count of the events that concern it
/// (changed only under the lock, read without it while spinning).
struct World {
    state: Mutex<State>,
    wake: Vec<Condvar>,
    events: Vec<AtomicU64>,
}

struct State {
    /// Per destination rank: arrived, unmatched messages per (source, tag),
    /// in sending order.
    mailboxes: Vec<HashMap<(u32, i32), VecDeque<Message>>>,
    /// Per sending rank: ids of its messages that were matched.
    matched: Vec<HashSet<u64>>,
    next_msg: u64,
    /// The first rank that panicked.
    failed: Option<u32>,
}

impl World {
    fn new(size: u32) -> Self {
        World {
            state: Mutex::new(State {
                mailboxes: (0..size).map(|_| HashMap::new()).collect(),
                matched: (0..size).map(|_| HashSet::new()).collect(),
                next_msg: 0,
                failed: None,
            }),
            wake: (0..size).map(|_| Condvar::new()).collect(),
            events: (0..size).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Tells `rank` that something concerning it happened (call with the
    /// lock held).
    fn signal(&self, rank: u32) {
        self.events[rank as usize].fetch_add(1, Ordering::SeqCst);
        self.wake[rank as usize].notify_all();
    }

    fn fail(&self, rank: u32) {
        let mut state = self.lock();
        state.failed.get_or_insert(rank);
        for r in 0..self.wake.len() as u32 {
            self.signal(r);
        }
        drop(state);
    }
}

impl State {
    fn describe_unreceived(&self, dest: u32) -> String {
        let mut keys: Vec<_> = self.mailboxes[dest as usize]
            .iter()
            .filter(|(_, q)| !q.is_empty())
            .collect();
        keys.sort_by_key(|(k, _)| **k);
        let mut out = String::new();
        for ((source, tag), queue) in keys {
            let lens: Vec<usize> = queue.iter().take(8).map(|m| m.data.len()).collect();
            let more = if queue.len() > lens.len() {
                ", …"
            } else {
                ""
            };
            let _ = write!(
                out,
                "\n  to rank {dest} from rank {source} tag {tag}: {} message(s) of {lens:?}{more} bytes",
                queue.len()
            );
        }
        out
    }

    fn describe_all_unreceived(&self) -> String {
        (0..self.mailboxes.len() as u32)
            .map(|dest| self.describe_unreceived(dest))
            .collect()
    }
}

/// Polls `futures` in turn until every one is ready and returns their
/// outputs in order: how a rank of a [`run`] drives several non-blocking
/// collectives at once (each over its own [`TestTransport::fork`], with
/// [`Options::nonblocking`]).
///
/// # Panics
///
/// If they are not all ready after `timeout` (a deadlock).
pub fn drive<T>(
    mut futures: Vec<std::pin::Pin<Box<dyn std::future::Future<Output = T> + '_>>>,
    timeout: Duration,
) -> Vec<T> {
    let deadline = Instant::now() + timeout;
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let mut outputs: Vec<Option<T>> = futures.iter().map(|_| None).collect();
    loop {
        let mut pending = 0;
        for (future, out) in futures.iter_mut().zip(outputs.iter_mut()) {
            if out.is_some() {
                continue;
            }
            match future.as_mut().poll(&mut cx) {
                std::task::Poll::Ready(v) => *out = Some(v),
                std::task::Poll::Pending => pending += 1,
            }
        }
        if pending == 0 {
            return outputs.into_iter().flatten().collect();
        }
        assert!(
            Instant::now() < deadline,
            "testkit: {pending} non-blocking collective(s) not done after {timeout:?} (deadlock?)"
        );
        std::thread::yield_now();
    }
}
