//! [`Cluster`]: several "ranks" of one btl component in one test thread,
//! each with its own [`Recorder`], driven in turn.
//!
//! A rank is either
//!
//! - the component's **exported table** (its `MODULE`, through a
//!   [`BtlHandle`], so the generated `extern "C"` layer, the entry checks
//!   and the panic guard run), at most one per process because a table has
//!   one process-global instance — rank 0 of [`Cluster::with_table`]; or
//! - a **value** of its [`Btl`] type made by [`Btl::init`], driven through
//!   the safe trait with a [`Pml`](crate::adapter::Pml) over the rank's recorder — every rank of
//!   [`Cluster::values`], and ranks 1… of [`Cluster::with_table`]. A value
//!   rank applies the same send checks as the generated table (a header
//!   longer than [`MAX_HEADER`] answers `Failed` without reaching the btl).
//!
//! Methods name a rank of the cluster by its index, which is its job rank
//! (except in [`Cluster::table_rank`], a single rank started as any job
//! rank); peers given to the btl are job ranks.
//!
//! Payloads are borrowed for the cluster's lifetime `'p`: a btl may keep
//! reading a queued payload until it finishes the send, and dropping the
//! cluster finalizes every rank first. Tests that use a table rank or set
//! parameters hold [`lock`](oxmpi_plugin_api::testkit::lock).

use super::recorder::Recorder;
use super::stamp::{first_mismatch, Stamp};
use crate::adapter::{Btl, GetBuffer, Payload, PutBuffer, Rdma, Sent, Started};
use crate::handle::{BtlHandle, BtlStart};
use crate::module::{
    flags, BtlComponentModule, BtlModuleInfo, JobIdentity, RdmaOutcome, SendOutcome, MAX_HEADER,
};
use oxmpi_plugin_api::testkit;
use std::marker::PhantomData;
use std::time::{Duration, Instant};

/// The longest a [`Cluster::pump`] waits.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// The identity of `rank` in a test job of `size` ranks (the same job id
/// and secret for every rank).
pub fn identity(rank: u32, size: u32) -> JobIdentity {
    JobIdentity {
        job_id: 0x7e57,
        secret: [0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210],
        rank,
        size,
    }
}

/// The identity of `rank` in cluster job `job` (each cluster is a job of
/// its own, so a btl that names shared files after its job keeps two
/// clusters of one test apart).
fn cluster_identity(job: u64, rank: u32, size: u32) -> JobIdentity {
    JobIdentity {
        job_id: job,
        ..identity(rank, size)
    }
}

/// A job id no other cluster of this process has.
fn next_job() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    0x7e57_0000 + NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

enum Engine<B> {
    Table(BtlHandle),
    Value(Option<B>),
}

struct Rank<B> {
    engine: Engine<B>,
    recorder: Recorder,
    modules: Vec<BtlModuleInfo>,
    identity: JobIdentity,
    /// Endpoints this rank resolved: module, endpoint, peer.
    peers: Vec<(u32, u64, u32)>,
}

/// One stamped stream: sender, module, endpoint, next sequence number.
struct Stream {
    rank: u32,
    module: u32,
    endpoint: u64,
    next: u64,
}

/// Ranks of one btl component; see the module docs.
pub struct Cluster<'p, B: Btl> {
    ranks: Vec<Rank<B>>,
    streams: Vec<Stream>,
    _payloads: PhantomData<&'p [u8]>,
}

fn start_value<B: Btl>(component: &str, identity: JobIdentity) -> Result<Rank<B>, String> {
    let context = testkit::context("btl", component);
    match B::init(&context, &identity) {
        Ok(Started::Ready(btl, modules)) => Ok(Rank {
            engine: Engine::Value(Some(btl)),
            recorder: Recorder::new(),
            modules,
            identity,
            peers: Vec::new(),
        }),
        Ok(Started::NothingUsable(why)) => Err(format!(
            "rank {}: the btl found nothing usable: {why}",
            identity.rank
        )),
        Err(why) => Err(format!("rank {}: init failed: {why}", identity.rank)),
    }
}

fn start_table<B>(
    table: &'static BtlComponentModule,
    component: &str,
    identity: JobIdentity,
) -> Result<Rank<B>, String> {
    let handle = BtlHandle::new(table, testkit::context("btl", component));
    let recorder = Recorder::new();
    match handle.init(&identity, recorder.receiver()) {
        Ok(BtlStart::Modules(modules)) => Ok(Rank {
            engine: Engine::Table(handle),
            recorder,
            modules,
            identity,
            peers: Vec::new(),
        }),
        Ok(BtlStart::NothingUsable(why)) => {
            handle.finalize();
            Err(format!(
                "rank {} (exported table): the btl found nothing usable: {why}",
                identity.rank
            ))
        }
        Err(why) => Err(format!(
            "rank {} (exported table): init failed: {why}",
            identity.rank
        )),
    }
}

impl<B: Btl> Rank<B> {
    fn finalize(&mut self) {
        match &mut self.engine {
            Engine::Table(handle) => handle.finalize(),
            Engine::Value(btl) => {
                if let Some(btl) = btl.take() {
                    btl.finalize();
                }
            }
        }
    }
}

impl<'p, B: Btl> Cluster<'p, B> {
    /// `ranks` values of `B` (ranks 0… of a job of that size, with a job
    /// id of its own), each
    /// initialized with the fake services' parameters for `component`.
    ///
    /// # Errors
    ///
    /// A rank's init failed or found nothing usable (the sentence names
    /// the rank).
    pub fn values(component: &str, ranks: u32) -> Result<Self, String> {
        let mut cluster = Cluster {
            ranks: Vec::new(),
            streams: Vec::new(),
            _payloads: PhantomData,
        };
        let job = next_job();
        for rank in 0..ranks {
            cluster.ranks.push(start_value::<B>(
                component,
                cluster_identity(job, rank, ranks),
            )?);
        }
        Ok(cluster)
    }

    /// Rank 0 through `table` (the component's exported `MODULE`, whose
    /// instance must be free: hold the kit lock), ranks 1… as values.
    ///
    /// # Errors
    ///
    /// As [`Cluster::values`]; also when the table's instance is already
    /// initialized.
    pub fn with_table(
        table: &'static BtlComponentModule,
        component: &str,
        ranks: u32,
    ) -> Result<Self, String> {
        let mut cluster = Cluster {
            ranks: Vec::new(),
            streams: Vec::new(),
            _payloads: PhantomData,
        };
        let job = next_job();
        cluster.ranks.push(start_table::<B>(
            table,
            component,
            cluster_identity(job, 0, ranks),
        )?);
        for rank in 1..ranks {
            cluster.ranks.push(start_value::<B>(
                component,
                cluster_identity(job, rank, ranks),
            )?);
        }
        Ok(cluster)
    }

    /// One rank through `table`, started as `identity` (say rank 3 of a
    /// job of 4). Its index in the cluster is 0; peers are named by their
    /// job rank as always.
    ///
    /// # Errors
    ///
    /// As [`Cluster::with_table`].
    pub fn table_rank(
        table: &'static BtlComponentModule,
        component: &str,
        identity: JobIdentity,
    ) -> Result<Self, String> {
        Ok(Cluster {
            ranks: vec![start_table::<B>(table, component, identity)?],
            streams: Vec::new(),
            _payloads: PhantomData,
        })
    }

    /// The index of the rank whose job rank is `peer`.
    fn index_of(&self, peer: u32) -> Option<usize> {
        self.ranks.iter().position(|r| r.identity.rank == peer)
    }

    fn rank(&self, rank: u32) -> &Rank<B> {
        &self.ranks[rank as usize]
    }

    fn rank_mut(&mut self, rank: u32) -> &mut Rank<B> {
        &mut self.ranks[rank as usize]
    }

    /// Number of ranks.
    pub fn size(&self) -> u32 {
        self.ranks.len() as u32
    }

    /// The identity `rank` was started with.
    pub fn identity(&self, rank: u32) -> JobIdentity {
        self.rank(rank).identity
    }

    /// The modules `rank`'s init described.
    pub fn modules(&self, rank: u32) -> &[BtlModuleInfo] {
        &self.rank(rank).modules
    }

    /// `rank`'s recorder (its pml stand-in).
    pub fn recorder(&self, rank: u32) -> &Recorder {
        &self.rank(rank).recorder
    }

    /// `rank`'s handle, if it is the table rank.
    pub fn handle(&self, rank: u32) -> Option<&BtlHandle> {
        match &self.rank(rank).engine {
            Engine::Table(h) => Some(h),
            Engine::Value(_) => None,
        }
    }

    /// `rank`'s btl value, if it is a value rank (and not finalized).
    pub fn value_mut(&mut self, rank: u32) -> Option<&mut B> {
        match &mut self.rank_mut(rank).engine {
            Engine::Table(_) => None,
            Engine::Value(b) => b.as_mut(),
        }
    }

    /// `rank`'s contact card.
    pub fn contact_card(&self, rank: u32) -> Vec<u8> {
        match &self.rank(rank).engine {
            Engine::Table(h) => h.contact_card(),
            Engine::Value(Some(b)) => b.contact_card(),
            Engine::Value(None) => Vec::new(),
        }
    }

    /// `rank`'s add_peer for job rank `peer` on `module` with `card`.
    ///
    /// # Errors
    ///
    /// The btl's sentence.
    pub fn add_peer(
        &mut self,
        rank: u32,
        module: u32,
        peer: u32,
        card: &[u8],
    ) -> Result<u64, String> {
        let r = self.rank_mut(rank);
        let answer = match &mut r.engine {
            Engine::Table(h) => h.add_peer(module, peer, card),
            Engine::Value(Some(b)) => b.add_peer(module, peer, card),
            Engine::Value(None) => Err("the rank is finalized".to_string()),
        };
        if let Ok(endpoint) = answer {
            if !r.peers.contains(&(module, endpoint, peer)) {
                r.peers.push((module, endpoint, peer));
            }
        }
        answer
    }

    /// `rank` resolves job rank `peer` on `module` with the peer's own
    /// card (an empty card when the peer is not in the cluster).
    ///
    /// # Errors
    ///
    /// The btl's sentence.
    pub fn connect(&mut self, rank: u32, module: u32, peer: u32) -> Result<u64, String> {
        let card = self
            .index_of(peer)
            .map_or_else(Vec::new, |i| self.contact_card(i as u32));
        self.add_peer(rank, module, peer, &card)
    }

    /// One send from `rank`; a `Queued` answer is told to the rank's
    /// recorder (which then expects one `on_send_done`).
    pub fn send(
        &mut self,
        rank: u32,
        module: u32,
        endpoint: u64,
        header: &[u8],
        payload: &'p [u8],
        cookie: u64,
    ) -> SendOutcome {
        let r = self.rank_mut(rank);
        let outcome = match &mut r.engine {
            // SAFETY: the payload is borrowed for `'p`, which outlives the
            // cluster, and dropping the cluster finalizes this btl first.
            Engine::Table(h) => unsafe {
                h.send(
                    module,
                    endpoint,
                    header,
                    payload.as_ptr(),
                    payload.len(),
                    cookie,
                )
            },
            Engine::Value(Some(b)) if header.len() <= MAX_HEADER => {
                // SAFETY: as above: the bytes outlive every holder of the
                // token.
                let token = unsafe { Payload::from_raw(payload.as_ptr(), payload.len(), cookie) };
                match b.send(module, endpoint, header, token) {
                    Sent::Done(_) => SendOutcome::Done,
                    Sent::Queued => SendOutcome::Queued,
                    Sent::WouldBlock(_) => SendOutcome::WouldBlock,
                    Sent::Failed(_) => SendOutcome::Failed,
                }
            }
            Engine::Value(_) => SendOutcome::Failed,
        };
        if outcome == SendOutcome::Queued {
            let peer = r
                .peers
                .iter()
                .find(|p| p.0 == module && p.1 == endpoint)
                .map_or(u32::MAX, |p| p.2);
            r.recorder.queued(cookie, module, peer);
        }
        outcome
    }

    /// A send retried after progress of every rank while it answers
    /// `WouldBlock` (until [`DEADLINE`]); the last answer.
    pub fn send_accepted(
        &mut self,
        rank: u32,
        module: u32,
        endpoint: u64,
        header: &[u8],
        payload: &'p [u8],
        cookie: u64,
    ) -> SendOutcome {
        let start = Instant::now();
        loop {
            let outcome = self.send(rank, module, endpoint, header, payload, cookie);
            if outcome != SendOutcome::WouldBlock || start.elapsed() > DEADLINE {
                return outcome;
            }
            self.progress_all();
        }
    }

    /// A stamped send (see [`super::stamp`]) on `rank`'s stream for
    /// `module` and `endpoint`, with a `header_len`-byte header (clamped to
    /// the stamp's length and [`MAX_HEADER`]), retried while it would
    /// block. `payload` must be [`pattern`](super::pattern)`(len, seed)`.
    /// Returns the stamp and the answer.
    ///
    /// # Panics
    ///
    /// When `payload` is not the pattern with `seed` (a mistake in the
    /// test).
    #[allow(clippy::too_many_arguments)]
    pub fn send_stamped(
        &mut self,
        rank: u32,
        module: u32,
        endpoint: u64,
        payload: &'p [u8],
        seed: u32,
        header_len: usize,
        cookie: u64,
    ) -> (Stamp, SendOutcome) {
        assert_eq!(
            first_mismatch(payload, seed),
            None,
            "send_stamped needs the payload pattern(len, {seed})"
        );
        let at = match self
            .streams
            .iter()
            .position(|s| s.rank == rank && s.module == module && s.endpoint == endpoint)
        {
            Some(i) => i,
            None => {
                self.streams.push(Stream {
                    rank,
                    module,
                    endpoint,
                    next: 0,
                });
                self.streams.len() - 1
            }
        };
        let stamp = Stamp {
            stream: at as u32,
            seq: self.streams[at].next,
            payload_len: payload.len() as u64,
            seed,
        };
        let (header, len) = stamp.header(header_len);
        let outcome = self.send_accepted(rank, module, endpoint, &header[..len], payload, cookie);
        if matches!(outcome, SendOutcome::Done | SendOutcome::Queued) {
            self.streams[at].next += 1;
        }
        (stamp, outcome)
    }

    /// Fragments sent so far on the stream of `rank`, `module`,
    /// `endpoint`.
    pub fn sent(&self, rank: u32, module: u32, endpoint: u64) -> u64 {
        self.streams
            .iter()
            .find(|s| s.rank == rank && s.module == module && s.endpoint == endpoint)
            .map_or(0, |s| s.next)
    }

    /// The stream id of `rank`, `module`, `endpoint` (as stamped), if it
    /// sent anything.
    pub fn stream(&self, rank: u32, module: u32, endpoint: u64) -> Option<u32> {
        self.streams
            .iter()
            .position(|s| s.rank == rank && s.module == module && s.endpoint == endpoint)
            .map(|i| i as u32)
    }

    /// The peer `rank` resolved `endpoint` on `module` for (`u32::MAX` if
    /// none).
    fn peer_of(&self, rank: u32, module: u32, endpoint: u64) -> u32 {
        self.rank(rank)
            .peers
            .iter()
            .find(|p| p.0 == module && p.1 == endpoint)
            .map_or(u32::MAX, |p| p.2)
    }

    /// Whether a value rank may pass a get/put to its btl: the checks of
    /// the generated table (the module offers `flag`, 1 to `max_rdma_size`
    /// bytes, a non-null buffer).
    fn rdma_allowed(&self, rank: u32, module: u32, flag: u32, null: bool, len: usize) -> bool {
        self.modules(rank)
            .get(module as usize)
            .is_some_and(|m| m.flags & flag != 0 && !null && len >= 1 && len <= m.max_rdma_size)
    }

    /// One get from `rank`: `len` bytes at `remote` into `local`; a
    /// `Queued` answer is told to the rank's recorder (which then expects
    /// one `on_rdma_done`). A value rank refuses what the generated table
    /// refuses (`Failed` without reaching the btl).
    ///
    /// # Safety
    ///
    /// `local` is writable for `len` bytes and `remote` (an address of this
    /// process: every rank of a cluster lives in it) readable for `len`
    /// bytes, neither used by anything else, until the get is finished:
    /// the answer is not `Queued`, or `on_rdma_done` came, or the pair
    /// failed, or the cluster was dropped.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn get(
        &mut self,
        rank: u32,
        module: u32,
        endpoint: u64,
        local: *mut u8,
        remote: u64,
        len: usize,
        cookie: u64,
    ) -> RdmaOutcome {
        let allowed = self.rdma_allowed(rank, module, flags::GET, local.is_null(), len);
        let peer = self.peer_of(rank, module, endpoint);
        let r = self.rank_mut(rank);
        let outcome = match &mut r.engine {
            // SAFETY: the caller's promise.
            Engine::Table(h) => unsafe { h.get(module, endpoint, local, remote, len, cookie) },
            Engine::Value(Some(b)) if allowed => {
                // SAFETY: the caller's promise covers the token's life.
                let token = unsafe { GetBuffer::from_raw(local, len, cookie) };
                outcome_of(b.get(module, endpoint, remote, token))
            }
            Engine::Value(_) => RdmaOutcome::Failed,
        };
        if outcome == RdmaOutcome::Queued {
            r.recorder.rdma_queued(cookie, module, peer);
        }
        outcome
    }

    /// One put from `rank`: `len` bytes of `local` to `remote` (as
    /// [`Cluster::get`]).
    ///
    /// # Safety
    ///
    /// `local` is readable for `len` bytes and unchanged, and `remote` (an
    /// address of this process) writable for `len` bytes and used by
    /// nothing else, until the put is finished (as for [`Cluster::get`]).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn put(
        &mut self,
        rank: u32,
        module: u32,
        endpoint: u64,
        local: *const u8,
        remote: u64,
        len: usize,
        cookie: u64,
    ) -> RdmaOutcome {
        let allowed = self.rdma_allowed(rank, module, flags::PUT, local.is_null(), len);
        let peer = self.peer_of(rank, module, endpoint);
        let r = self.rank_mut(rank);
        let outcome = match &mut r.engine {
            // SAFETY: the caller's promise.
            Engine::Table(h) => unsafe { h.put(module, endpoint, local, remote, len, cookie) },
            Engine::Value(Some(b)) if allowed => {
                // SAFETY: the caller's promise covers the token's life.
                let token = unsafe { PutBuffer::from_raw(local, len, cookie) };
                outcome_of(b.put(module, endpoint, remote, token))
            }
            Engine::Value(_) => RdmaOutcome::Failed,
        };
        if outcome == RdmaOutcome::Queued {
            r.recorder.rdma_queued(cookie, module, peer);
        }
        outcome
    }

    /// One progress call of `rank`, with its recorder accepting callbacks.
    pub fn progress(&mut self, rank: u32) -> usize {
        let r = self.rank_mut(rank);
        let recorder = &r.recorder;
        match &mut r.engine {
            Engine::Table(h) => recorder.during_progress(|| h.progress()),
            Engine::Value(Some(b)) => recorder.progress_with(|pml| b.progress(pml)),
            Engine::Value(None) => 0,
        }
    }

    /// One progress call of every rank; the sum of their events.
    pub fn progress_all(&mut self) -> usize {
        (0..self.size()).map(|r| self.progress(r)).sum()
    }

    /// Progresses every rank in turn until `done` holds.
    ///
    /// # Panics
    ///
    /// After [`DEADLINE`], naming `what`.
    pub fn pump(&mut self, what: &str, mut done: impl FnMut(&Self) -> bool) {
        let start = Instant::now();
        while !done(self) {
            assert!(
                start.elapsed() < DEADLINE,
                "timed out after {} s waiting for {what}",
                DEADLINE.as_secs()
            );
            if self.progress_all() == 0 {
                std::thread::yield_now();
            }
        }
    }

    /// Progresses until every stamped stream has been delivered whole to
    /// its peer and no rank has a queued send or get/put in flight.
    ///
    /// # Panics
    ///
    /// After [`DEADLINE`].
    pub fn drain(&mut self) {
        self.pump("every stamped fragment and send_done", |c| {
            c.streams.iter().enumerate().all(|(id, s)| {
                let to = c
                    .rank(s.rank)
                    .peers
                    .iter()
                    .find(|p| p.0 == s.module && p.1 == s.endpoint);
                match to.and_then(|p| c.index_of(p.2)) {
                    Some(i) => c.recorder(i as u32).received(id as u32) >= s.next,
                    None => true,
                }
            }) && (0..c.size())
                .all(|r| c.recorder(r).outstanding() == 0 && c.recorder(r).rdma_outstanding() == 0)
        });
    }

    /// Every rank's contract violations, each prefixed with its rank.
    pub fn violations(&self) -> Vec<String> {
        (0..self.size())
            .flat_map(|r| {
                self.recorder(r)
                    .violations()
                    .into_iter()
                    .map(move |v| format!("rank {r}: {v}"))
            })
            .collect()
    }

    /// Panics with every rank's violations, if any, naming `what`.
    pub fn assert_clean(&self, what: &str) {
        let v = self.violations();
        assert!(
            v.is_empty(),
            "{what}: the btl broke its contract:\n  {}",
            v.join("\n  ")
        );
    }

    /// Finalizes `rank` (later calls on it do nothing or fail).
    pub fn finalize_rank(&mut self, rank: u32) {
        self.rank_mut(rank).finalize();
    }
}

fn outcome_of<L>(answer: Rdma<L>) -> RdmaOutcome {
    match answer {
        Rdma::Done(_) => RdmaOutcome::Done,
        Rdma::Queued => RdmaOutcome::Queued,
        Rdma::WouldBlock(_) => RdmaOutcome::WouldBlock,
        Rdma::Failed(_) => RdmaOutcome::Failed,
    }
}

impl<B: Btl> Drop for Cluster<'_, B> {
    fn drop(&mut self) {
        for r in &mut self.ranks {
            r.finalize();
        }
    }
}
