//! The MPI layer's services as an `oxmpi-collectives` transport (feature
//! `collectives`): a component that runs that crate's algorithms makes a
//! [`CommTransport`] for each call over a [`Scratch`] it keeps per
//! communicator, so a call allocates nothing once the scratch has grown
//! to its needs.

use crate::adapter::{Core, CoreRequest};
use oxmpi_collectives::{CollError, Request, Transport};

/// What a [`CommTransport`] keeps between calls (one per communicator).
#[derive(Default)]
pub struct Scratch {
    /// Started requests by index: the MPI layer's request, and for a
    /// receive its source, tag and expected length.
    started: Vec<Started>,
    /// The requests and counts of one `wait_all`.
    waiting: Vec<CoreRequest>,
    counts: Vec<usize>,
    picked: Vec<usize>,
    /// Buffers the algorithms gave back, for their next calls.
    pool: Vec<Vec<u8>>,
}

/// Buffers a [`Scratch`] keeps at most.
const POOL: usize = 4;

#[derive(Clone, Copy)]
struct Started {
    request: CoreRequest,
    receive: Option<(u32, i32, usize)>,
}

/// One communicator's point-to-point messages over [`Core`]: ranks are
/// the communicator's, translated to job ranks; every message goes on the
/// communicator's context.
pub struct CommTransport<'a> {
    core: &'a Core,
    context: u32,
    rank: u32,
    members: &'a [u32],
    scratch: &'a mut Scratch,
    /// Started requests not waited for yet.
    outstanding: usize,
    /// Whether the algorithms may block in `wait_all`.
    blocking: bool,
}

/// What a non-blocking collective owns to make its [`CommTransport`]: the
/// services, the communicator's context and members, and a scratch of its
/// own (several may be in flight on one communicator).
pub struct OwnedComm {
    core: Core,
    context: u32,
    rank: u32,
    members: Vec<u32>,
    scratch: Scratch,
}

impl OwnedComm {
    /// Copies what a transport on the communicator needs.
    pub fn new(core: Core, context: u32, rank: u32, members: &[u32]) -> Self {
        OwnedComm {
            core,
            context,
            rank,
            members: members.to_vec(),
            scratch: Scratch::default(),
        }
    }

    /// A non-blocking transport over it (see [`CommTransport::nonblocking`]).
    pub fn transport(&mut self) -> CommTransport<'_> {
        CommTransport::new(
            &self.core,
            self.context,
            self.rank,
            &self.members,
            &mut self.scratch,
        )
        .nonblocking()
    }
}

impl<'a> CommTransport<'a> {
    /// The transport of rank `rank` of the communicator of job ranks
    /// `members` on `context`, over `scratch`.
    pub fn new(
        core: &'a Core,
        context: u32,
        rank: u32,
        members: &'a [u32],
        scratch: &'a mut Scratch,
    ) -> Self {
        scratch.started.clear();
        CommTransport {
            core,
            context,
            rank,
            members,
            scratch,
            outstanding: 0,
            blocking: true,
        }
    }

    /// The transport of a non-blocking collective: the algorithms poll its
    /// requests ([`Transport::test_all`]) and give control back instead of
    /// waiting.
    #[must_use]
    pub fn nonblocking(mut self) -> Self {
        self.blocking = false;
        self
    }

    /// The error of a receive that completed with `got` bytes, if it
    /// expected another length.
    fn length_error(&self, index: usize, got: usize) -> Option<CollError> {
        let (source, tag, expected) = self.scratch.started[index].receive?;
        (got != expected).then_some(CollError::Length {
            from: source,
            tag,
            expected,
            actual: got,
        })
    }

    /// Fills the scratch's `picked` (indices), `waiting` (the MPI layer's
    /// requests) and `counts` (the lengths expected) for `reqs`. A request
    /// the MPI layer completed at once (0) keeps its expected count.
    fn pick(&mut self, reqs: &[Request]) {
        let s = &mut *self.scratch;
        s.picked.clear();
        s.picked.extend(
            reqs.iter()
                .map(|r| r.0 as usize)
                .filter(|&i| i < s.started.len()),
        );
        s.waiting.clear();
        s.waiting
            .extend(s.picked.iter().map(|&i| s.started[i].request));
        s.counts.clear();
        s.counts.extend(
            s.picked
                .iter()
                .map(|&i| s.started[i].receive.map_or(0, |(_, _, len)| len)),
        );
    }

    /// Notes that `done` requests completed; the indices start over once
    /// nothing is outstanding.
    fn completed(&mut self, done: usize) {
        self.outstanding = self.outstanding.saturating_sub(done);
        if self.outstanding == 0 {
            self.scratch.started.clear();
        }
    }

    fn job_rank(&self, rank: u32) -> Result<u32, CollError> {
        self.members.get(rank as usize).copied().ok_or_else(|| {
            CollError::InvalidArgument(format!(
                "rank {rank} is not in the communicator of {} processes",
                self.members.len()
            ))
        })
    }

    fn start(&mut self, request: CoreRequest, receive: Option<(u32, i32, usize)>) -> Request {
        self.scratch.started.push(Started { request, receive });
        self.outstanding += 1;
        Request(self.scratch.started.len() as u64 - 1)
    }
}

impl Transport for CommTransport<'_> {
    fn rank(&self) -> u32 {
        self.rank
    }

    fn size(&self) -> u32 {
        self.members.len() as u32
    }

    unsafe fn isend(
        &mut self,
        dest: u32,
        tag: i32,
        buf: *const u8,
        len: usize,
    ) -> Result<Request, CollError> {
        let to = self.job_rank(dest)?;
        // SAFETY: the caller's promise (the buffer outlives the wait).
        let r = unsafe { self.core.isend(self.context, to, tag, buf, len) }
            .map_err(CollError::Transport)?;
        Ok(self.start(r, None))
    }

    unsafe fn irecv(
        &mut self,
        source: u32,
        tag: i32,
        buf: *mut u8,
        len: usize,
    ) -> Result<Request, CollError> {
        let from = self.job_rank(source)?;
        // SAFETY: as in `isend`.
        let r = unsafe { self.core.irecv(self.context, from, tag, buf, len) }
            .map_err(CollError::Transport)?;
        Ok(self.start(r, Some((source, tag, len))))
    }

    fn scratch(&mut self, len: usize) -> Vec<u8> {
        let pool = &mut self.scratch.pool;
        // The smallest kept buffer that holds `len` bytes, else the largest
        // (grown), else a new one.
        let fit = pool
            .iter()
            .enumerate()
            .filter(|(_, b)| b.capacity() >= len)
            .min_by_key(|(_, b)| b.capacity())
            .map(|(i, _)| i)
            .or_else(|| (0..pool.len()).max_by_key(|&i| pool[i].capacity()));
        let mut buf = fit.map_or_else(Vec::new, |i| pool.swap_remove(i));
        buf.resize(len, 0);
        buf
    }

    fn recycle(&mut self, buf: Vec<u8>) {
        let pool = &mut self.scratch.pool;
        if pool.len() < POOL {
            pool.push(buf);
        } else if let Some(i) = (0..pool.len()).min_by_key(|&i| pool[i].capacity()) {
            if pool[i].capacity() < buf.capacity() {
                pool[i] = buf;
            }
        }
    }

    fn wait_all(&mut self, reqs: &mut Vec<Request>) -> Result<(), CollError> {
        self.pick(reqs);
        reqs.clear();
        let s = &mut *self.scratch;
        let waited = self.core.wait_all(&s.waiting, &mut s.counts);
        let short = (0..s.picked.len())
            .find_map(|k| self.length_error(self.scratch.picked[k], self.scratch.counts[k]));
        let done = self.scratch.picked.len();
        self.completed(done);
        waited.map_err(CollError::Transport)?;
        short.map_or(Ok(()), Err)
    }

    fn blocking(&self) -> bool {
        self.blocking
    }

    fn test_all(&mut self, reqs: &mut Vec<Request>) -> Result<bool, CollError> {
        self.pick(reqs);
        let s = &mut *self.scratch;
        let tested = self.core.test_all(&mut s.waiting, &mut s.counts);
        let mut first = tested.err().map(CollError::Transport);
        let mut done = 0;
        for k in 0..self.scratch.picked.len() {
            if self.scratch.waiting[k] == CoreRequest(0) {
                done += 1;
                if first.is_none() {
                    first = self.length_error(self.scratch.picked[k], self.scratch.counts[k]);
                }
            }
        }
        if let Some(error) = first {
            // The contract: on an error every request is complete. Wait for
            // those still in flight (their errors are not the first).
            let rest: Vec<CoreRequest> = self
                .scratch
                .waiting
                .iter()
                .copied()
                .filter(|&r| r != CoreRequest(0))
                .collect();
            let mut counts = vec![0; rest.len()];
            let _ = self.core.wait_all(&rest, &mut counts);
            let all = self.scratch.picked.len();
            reqs.clear();
            self.completed(all);
            return Err(error);
        }
        reqs.clear();
        let s = &*self.scratch;
        reqs.extend(
            (0..s.picked.len())
                .filter(|&k| s.waiting[k] != CoreRequest(0))
                .map(|k| Request(s.picked[k] as u64)),
        );
        // Indices restart only when nothing is outstanding: requests still
        // in `reqs` keep theirs.
        self.completed(done);
        Ok(reqs.is_empty())
    }
}
