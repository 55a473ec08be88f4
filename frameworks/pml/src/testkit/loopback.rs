//! [`Loopback`]: the kit's btl, a small in-process btl that reaches only
//! its own rank, implemented on the safe
//! [`Btl`] trait and exported as the
//! table [`LOOPBACK`] (component name [`COMPONENT`]), so a pml under test
//! drives it through the generated `extern "C"` layer like any btl.
//!
//! How it behaves is set with [`set_behaviour`] before the pml starts it
//! (the module count and limits are read at `init`, the rest at every
//! call); see [`Behaviour`]. It can
//!
//! - answer `Done` (copying the payload into its own memory) or `Queued`
//!   (reading the pml's payload when it delivers, then `on_send_done`), or
//!   alternate between the two;
//! - answer `WouldBlock` every n-th send;
//! - deliver on a later progress call, all queued fragments or a few per
//!   call, and with several modules deliver the last module's queue first
//!   (order holds per endpoint only, as the btl contract says);
//! - write a payload at the destination the pml gives in `on_header`, or
//!   keep it (deliver from its own memory, or the sender's payload in
//!   place);
//! - offer get, put, both or neither ([`RdmaOffer`]), copying in memory
//!   between the two addresses (the pml under test is one rank talking to
//!   itself, so the "remote" address is one of this process), at once
//!   (`Done`) or on a later progress call (`Queued`, then `on_rdma_done`),
//!   or failing each get/put ([`RdmaAnswer::Fail`]: `on_rdma_done` with a
//!   failed status, then the peer reported lost);
//! - fail its peer on demand ([`fail_peer`]): the next progress reports
//!   `on_peer_failed` on every module, drops the fragments and get/puts it
//!   holds without `on_send_done`/`on_rdma_done`, and answers `Failed` from
//!   then on.
//!
//! It also checks the pml's side of the btl contract and records each
//! breach as a sentence ([`violations`]): a card that is not the one it
//! published, a module or endpoint it never gave out, a payload (or a
//! put's buffer) changed while the btl held it (before `on_send_done` /
//! `on_rdma_done`), a `send`, `get` or `put` from inside a btl callback, and its `progress` run outside the MPI layer's progress
//! round (by the pml itself). Counters of what happened are in [`stats`].
//!
//! The settings, counters and violations are process-global (the btl's
//! state is, too): tests that use the kit hold
//! [`lock`](oxmpi_plugin_api::testkit::lock).

use abi_stable::std_types::RStr;
use oxmpi_framework_btl::adapter::{
    table, Adapted, Arrived, Btl, Exported, GetBuffer, Payload, Pml, PutBuffer, Rdma, Sent, Started,
};
use oxmpi_framework_btl::module::{
    flags, BtlComponentModule, BtlModuleInfo, JobIdentity, RdmaOutcome, RdmaStatus, SendOutcome,
    MAX_HEADER,
};
use oxmpi_plugin_api::{testkit, ComponentContext, Instance};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use crate::module::BtlCandidate;

/// The kit btl's component name (its card is published under
/// `btl_loopback` by pmls that follow ob1's naming).
pub const COMPONENT: &str = "loopback";

/// How the btl answers `send`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// `Done`: the btl copies the payload into its own memory at once.
    Done,
    /// `Queued`: the btl reads the pml's payload when it delivers, then
    /// calls `on_send_done`.
    Queued,
    /// `Done` and `Queued` in turn, starting with `Queued`.
    Alternating,
}

/// Where the btl puts a payload when it delivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// At the destination the pml answers from `on_header` (when it gives
    /// one); otherwise from the btl's memory or the sender's payload.
    Destination,
    /// Never at a destination: the payload is delivered from the btl's
    /// memory (`Done` sends) or the sender's payload in place (`Queued`
    /// sends), even when the pml gave a destination (the contract lets
    /// `on_fragment` pass either).
    Keep,
}

/// Which of get and put the btl's modules offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RdmaOffer {
    /// Neither: the modules only send.
    Neither,
    /// Get only ([`flags::GET`]).
    Get,
    /// Put only ([`flags::PUT`]).
    Put,
    /// Both.
    Both,
}

impl RdmaOffer {
    fn flags(self) -> u32 {
        match self {
            RdmaOffer::Neither => 0,
            RdmaOffer::Get => flags::GET,
            RdmaOffer::Put => flags::PUT,
            RdmaOffer::Both => flags::GET | flags::PUT,
        }
    }
}

/// How the btl answers a get or put.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RdmaAnswer {
    /// Copies at once and answers `Done`.
    Done,
    /// Answers `Queued`, copies on a later progress call, then calls
    /// `on_rdma_done`.
    Queued,
    /// Answers `Queued`; the next progress calls `on_rdma_done` with
    /// [`RdmaStatus::Failed`] without copying, then reports the peer lost
    /// (as a btl whose transfer failed does).
    Fail,
}

/// The kit btl's behaviour (see the module docs); [`Behaviour::DEFAULT`]
/// unless a test sets another with [`set_behaviour`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Behaviour {
    /// How `send` answers (default [`Answer::Queued`]).
    pub answer: Answer,
    /// Where payloads go (default [`Placement::Destination`]).
    pub placement: Placement,
    /// Every n-th `send` answers `WouldBlock` (0, the default: never).
    pub would_block_every: u32,
    /// Fragments delivered per progress call (0, the default: all that
    /// are queued).
    pub deliver_per_progress: usize,
    /// Modules the btl describes at `init` (at least 1; default 1). With
    /// several, progress delivers the last module's queue first.
    pub modules: u32,
    /// Each module's `eager_limit` (default 4096).
    pub eager_limit: usize,
    /// Each module's `rndv_eager_limit` (default 4096).
    pub rndv_eager_limit: usize,
    /// Each module's `max_send_size` (default 65536).
    pub max_send_size: usize,
    /// Which of get and put the modules offer (default
    /// [`RdmaOffer::Neither`]).
    pub rdma: RdmaOffer,
    /// How get/put answer (default [`RdmaAnswer::Queued`]).
    pub rdma_answer: RdmaAnswer,
    /// Each module's `max_rdma_size` when it offers get or put (default
    /// 256 KiB).
    pub max_rdma_size: usize,
    /// Each module's `min_rdma_message` (default 0).
    pub min_rdma_message: usize,
}

impl Behaviour {
    /// Queued sends, payloads at the pml's destinations, one module with
    /// an eager limit of 4 KiB and 64 KiB fragments, no `WouldBlock`.
    pub const DEFAULT: Behaviour = Behaviour {
        answer: Answer::Queued,
        placement: Placement::Destination,
        would_block_every: 0,
        deliver_per_progress: 0,
        modules: 1,
        eager_limit: 4096,
        rndv_eager_limit: 4096,
        max_send_size: 65536,
        rdma: RdmaOffer::Neither,
        rdma_answer: RdmaAnswer::Queued,
        max_rdma_size: 256 << 10,
        min_rdma_message: 0,
    };
}

impl Default for Behaviour {
    fn default() -> Self {
        Behaviour::DEFAULT
    }
}

/// What the kit btl did since the last [`reset`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// `init` calls that started the btl.
    pub inits: usize,
    /// `finalize` calls.
    pub finalizes: usize,
    /// `send` calls that reached the btl.
    pub sends: usize,
    /// Sends answered `Done`.
    pub done: usize,
    /// Sends answered `Queued`.
    pub queued: usize,
    /// Sends answered `WouldBlock`.
    pub would_block: usize,
    /// Sends answered `Failed`.
    pub failed: usize,
    /// Fragments delivered.
    pub delivered: usize,
    /// Fragments written at the pml's destination.
    pub placed: usize,
    /// `on_send_done` calls.
    pub send_done: usize,
    /// Queued fragments dropped when the peer failed.
    pub dropped: usize,
    /// `on_peer_failed` calls.
    pub peer_failures: usize,
    /// `get` calls that reached the btl.
    pub gets: usize,
    /// `put` calls that reached the btl.
    pub puts: usize,
    /// Gets and puts answered `Queued`.
    pub rdma_queued: usize,
    /// `on_rdma_done` calls (any status).
    pub rdma_done: usize,
    /// Queued gets and puts dropped when the peer failed.
    pub rdma_dropped: usize,
    /// Bytes moved by gets and puts.
    pub rdma_bytes: usize,
}

impl Stats {
    /// Payloads and get/put buffers the btl holds now (queued, not
    /// finished or dropped).
    pub fn outstanding(&self) -> usize {
        self.queued.saturating_sub(self.send_done + self.dropped)
            + self
                .rdma_queued
                .saturating_sub(self.rdma_done + self.rdma_dropped)
    }
}

struct Control {
    behaviour: Behaviour,
    failure: Option<String>,
    stats: Stats,
    violations: Vec<String>,
}

static CONTROL: Mutex<Control> = Mutex::new(Control {
    behaviour: Behaviour::DEFAULT,
    failure: None,
    stats: Stats {
        inits: 0,
        finalizes: 0,
        sends: 0,
        done: 0,
        queued: 0,
        would_block: 0,
        failed: 0,
        delivered: 0,
        placed: 0,
        send_done: 0,
        dropped: 0,
        peer_failures: 0,
        gets: 0,
        puts: 0,
        rdma_queued: 0,
        rdma_done: 0,
        rdma_dropped: 0,
        rdma_bytes: 0,
    },
    violations: Vec::new(),
});

fn control() -> MutexGuard<'static, Control> {
    CONTROL.lock().unwrap_or_else(|e| e.into_inner())
}

fn count(f: impl FnOnce(&mut Stats)) {
    f(&mut control().stats);
}

fn violation(text: String) {
    control().violations.push(text);
}

/// Sets the behaviour (module count and limits apply at the next `init`).
pub fn set_behaviour(behaviour: Behaviour) {
    control().behaviour = behaviour;
}

/// The behaviour set now.
pub fn behaviour() -> Behaviour {
    control().behaviour
}

/// Makes the btl lose its peer: the next progress reports `reason`
/// through `on_peer_failed` on every module and drops what it holds.
pub fn fail_peer(reason: &str) {
    control().failure = Some(reason.to_string());
}

/// The counters since the last [`reset`].
pub fn stats() -> Stats {
    control().stats
}

/// The pml's breaches of the btl contract seen since the last [`reset`].
pub fn violations() -> Vec<String> {
    control().violations.clone()
}

/// Clears counters, violations and a pending [`fail_peer`]; sets the
/// default behaviour.
pub fn reset() {
    let mut c = control();
    c.behaviour = Behaviour::DEFAULT;
    c.failure = None;
    c.stats = Stats::default();
    c.violations.clear();
}

/// Whether the btl is started (between its `init` and `finalize`).
pub fn is_started() -> bool {
    <Loopback as Exported>::instance()
        .is_installed()
        .unwrap_or(true)
}

/// Set while the MPI layer's progress round runs the registered progress
/// functions ([`KitCore::round`](super::core::KitCore::round)).
pub(crate) static IN_ROUND: AtomicBool = AtomicBool::new(false);
/// Set while the btl's progress body runs (its callbacks into the pml).
static IN_CALLBACKS: AtomicBool = AtomicBool::new(false);
/// Bumped at every `init`, so a card of an earlier start is told apart.
static GENERATION: AtomicU32 = AtomicU32::new(0);

/// A cheap checksum (FNV-1a) of a payload, to see it unchanged.
fn checksum(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

enum Body {
    /// The pml's payload, held until `on_send_done` (with its checksum).
    Held { payload: Payload, sum: u64 },
    /// The btl's own copy.
    Copied(Vec<u8>),
}

/// A queued get or put.
enum RdmaOp {
    /// Copy from `remote` into the pml's buffer.
    Get { remote: u64, local: GetBuffer },
    /// Copy the pml's buffer (with its checksum) to `remote`.
    Put {
        remote: u64,
        local: PutBuffer,
        sum: u64,
    },
}

struct Frag {
    header: [u8; MAX_HEADER],
    header_len: usize,
    body: Body,
}

/// The kit btl's state (see the module docs).
pub struct Loopback {
    rank: u32,
    card: Vec<u8>,
    queues: Vec<VecDeque<Frag>>,
    /// Queued gets and puts, per module.
    rdma: Vec<VecDeque<RdmaOp>>,
    /// Why the peer was lost, once reported.
    failed: Option<String>,
    sends: u64,
    next_queued: bool,
}

/// The first byte of a header, for messages (`-` when empty).
fn kind_of(header: &[u8]) -> String {
    header
        .first()
        .map_or_else(|| "-".to_string(), |b| b.to_string())
}

impl Loopback {
    fn endpoint(&self, module: u32) -> u64 {
        0x1b_0000_0000 | (u64::from(module) << 16) | u64::from(self.rank)
    }

    fn deliver(&mut self, module: u32, frag: Frag, placement: Placement, pml: &Pml<'_>) {
        let header = &frag.header[..frag.header_len];
        let rank = self.rank;
        let len = match &frag.body {
            Body::Held { payload, sum } => {
                if checksum(payload.as_slice()) != *sum {
                    violation(format!(
                        "the pml changed a {}-byte payload (header type {}) on module {module} while the btl held it (before on_send_done)",
                        payload.len(),
                        kind_of(header)
                    ));
                }
                payload.len()
            }
            Body::Copied(v) => v.len(),
        };
        let dest = pml.header(module, rank, header, len);
        match (dest, placement) {
            (Some(mut dest), Placement::Destination) => {
                match &frag.body {
                    Body::Held { payload, .. } => dest.copy_from_payload(payload),
                    Body::Copied(v) => dest.write_at(0, v),
                }
                count(|s| s.placed += 1);
                pml.fragment(module, rank, header, Arrived::Placed(dest));
            }
            _ => match &frag.body {
                Body::Held { payload, .. } => {
                    pml.fragment(module, rank, header, Arrived::InPlace(payload))
                }
                Body::Copied(v) => pml.fragment(module, rank, header, Arrived::Bytes(v)),
            },
        }
        count(|s| s.delivered += 1);
        if let Body::Held { payload, .. } = frag.body {
            count(|s| s.send_done += 1);
            pml.send_done(payload);
        }
    }

    fn report_failure(&mut self, reason: String, pml: &Pml<'_>) -> usize {
        let mut dropped = 0;
        let mut rdma_dropped = 0;
        for (m, q) in self.queues.iter_mut().enumerate() {
            dropped += q
                .iter()
                .filter(|f| matches!(f.body, Body::Held { .. }))
                .count();
            q.clear();
            rdma_dropped += self.rdma[m].len();
            self.rdma[m].clear();
            pml.peer_failed(m as u32, self.rank, &reason);
        }
        let modules = self.queues.len();
        count(|s| {
            s.dropped += dropped;
            s.rdma_dropped += rdma_dropped;
            s.peer_failures += modules;
        });
        self.failed = Some(reason);
        modules
    }
}

impl Loopback {
    /// Whether a get/put may go ahead: a module and endpoint the btl gave
    /// out (a violation otherwise), and a peer not lost.
    fn rdma_target_ok(&self, what: &str, module: u32, endpoint: u64) -> bool {
        if module as usize >= self.queues.len() || endpoint != self.endpoint(module) {
            violation(format!(
                "the pml called {what} on module {module}, endpoint {endpoint:#x}, which add_peer never answered"
            ));
            count(|s| s.failed += 1);
            return false;
        }
        if self.failed.is_some() {
            count(|s| s.failed += 1);
            return false;
        }
        true
    }
}

/// A get in memory: the peer (this process) published `remote`.
fn copy_get(remote: u64, local: &mut GetBuffer) {
    let n = local.len();
    // SAFETY: `remote` is the address of `n` readable bytes the pml under
    // test published for its peer, which is this process, and keeps valid
    // and unchanged until it learns the get finished (the btl contract's
    // side of the pml); `copy` allows overlap.
    unsafe { std::ptr::copy(remote as *const u8, local.as_mut_ptr(), n) };
    count(|s| s.rdma_bytes += n);
}

/// A put in memory: the peer (this process) published `remote`.
fn copy_put(local: &PutBuffer, remote: u64) {
    let n = local.len();
    // SAFETY: `remote` is the address of `n` writable bytes the pml under
    // test published for its peer (this process) and writes nothing else
    // to until it learns the put finished; `copy` allows overlap.
    unsafe { std::ptr::copy(local.as_ptr(), remote as *mut u8, n) };
    count(|s| s.rdma_bytes += n);
}

/// Checks that a queued put's buffer did not change while the btl held it.
fn check_put(module: u32, local: &PutBuffer, sum: u64) {
    if checksum(local.as_slice()) != sum {
        violation(format!(
            "the pml changed the {}-byte buffer of a put on module {module} while the btl held it (before on_rdma_done)",
            local.len()
        ));
    }
}

impl Btl for Loopback {
    fn init(_context: &ComponentContext, identity: &JobIdentity) -> Result<Started<Self>, String> {
        let b = behaviour();
        if b.modules == 0 {
            return Ok(Started::NothingUsable(
                "the kit's loopback btl was set to describe no module".to_string(),
            ));
        }
        let generation = GENERATION.fetch_add(1, Ordering::Relaxed);
        let mut card = b"loopback card ".to_vec();
        card.extend_from_slice(&generation.to_le_bytes());
        card.extend_from_slice(&identity.rank.to_le_bytes());
        let infos = (0..b.modules)
            .map(|m| BtlModuleInfo {
                label: format!("loopback module {m}").into(),
                eager_limit: b.eager_limit,
                rndv_eager_limit: b.rndv_eager_limit,
                max_send_size: b.max_send_size,
                exclusivity: 1,
                latency: 0,
                bandwidth: 1000,
                flags: flags::SEND | b.rdma.flags(),
                max_rdma_size: if b.rdma == RdmaOffer::Neither {
                    0
                } else {
                    b.max_rdma_size
                },
                min_rdma_message: b.min_rdma_message,
            })
            .collect();
        count(|s| s.inits += 1);
        Ok(Started::Ready(
            Loopback {
                rank: identity.rank,
                card,
                queues: (0..b.modules).map(|_| VecDeque::new()).collect(),
                rdma: (0..b.modules).map(|_| VecDeque::new()).collect(),
                failed: None,
                sends: 0,
                next_queued: true,
            },
            infos,
        ))
    }

    fn contact_card(&self) -> Vec<u8> {
        self.card.clone()
    }

    fn add_peer(&mut self, module: u32, peer: u32, card: &[u8]) -> Result<u64, String> {
        if module as usize >= self.queues.len() {
            violation(format!(
                "the pml asked for module {module} of the loopback btl, which described {} module(s)",
                self.queues.len()
            ));
            return Err(format!(
                "the loopback btl has no module {module} (it has {})",
                self.queues.len()
            ));
        }
        if card != self.card.as_slice() {
            violation(format!(
                "the pml passed add_peer (module {module}, rank {peer}) a card of {} bytes that is not the one the btl published this run",
                card.len()
            ));
            return Err(format!(
                "the card given for rank {peer} is not a loopback card of this run"
            ));
        }
        if peer != self.rank {
            return Err(format!(
                "the loopback btl reaches only its own rank ({}), not rank {peer}",
                self.rank
            ));
        }
        if let Some(why) = &self.failed {
            return Err(format!("rank {peer} was lost: {why}"));
        }
        Ok(self.endpoint(module))
    }

    fn send(&mut self, module: u32, endpoint: u64, header: &[u8], payload: Payload) -> Sent {
        count(|s| s.sends += 1);
        if module as usize >= self.queues.len() || endpoint != self.endpoint(module) {
            violation(format!(
                "the pml sent on module {module}, endpoint {endpoint:#x}, which add_peer never answered"
            ));
            count(|s| s.failed += 1);
            return Sent::Failed(payload);
        }
        if self.failed.is_some() {
            count(|s| s.failed += 1);
            return Sent::Failed(payload);
        }
        let b = behaviour();
        self.sends += 1;
        if b.would_block_every > 0 && self.sends % u64::from(b.would_block_every) == 0 {
            count(|s| s.would_block += 1);
            return Sent::WouldBlock(payload);
        }
        let queued = match b.answer {
            Answer::Done => false,
            Answer::Queued => true,
            Answer::Alternating => {
                self.next_queued = !self.next_queued;
                !self.next_queued
            }
        };
        let mut h = [0u8; MAX_HEADER];
        h[..header.len()].copy_from_slice(header);
        let queue = &mut self.queues[module as usize];
        if queued {
            let sum = checksum(payload.as_slice());
            queue.push_back(Frag {
                header: h,
                header_len: header.len(),
                body: Body::Held { payload, sum },
            });
            count(|s| s.queued += 1);
            Sent::Queued
        } else {
            queue.push_back(Frag {
                header: h,
                header_len: header.len(),
                body: Body::Copied(payload.as_slice().to_vec()),
            });
            count(|s| s.done += 1);
            Sent::Done(payload)
        }
    }

    fn get(
        &mut self,
        module: u32,
        endpoint: u64,
        remote: u64,
        mut local: GetBuffer,
    ) -> Rdma<GetBuffer> {
        count(|s| s.gets += 1);
        if !self.rdma_target_ok("get", module, endpoint) {
            return Rdma::Failed(local);
        }
        match behaviour().rdma_answer {
            RdmaAnswer::Done => {
                copy_get(remote, &mut local);
                Rdma::Done(local)
            }
            RdmaAnswer::Queued | RdmaAnswer::Fail => {
                self.rdma[module as usize].push_back(RdmaOp::Get { remote, local });
                count(|s| s.rdma_queued += 1);
                Rdma::Queued
            }
        }
    }

    fn put(
        &mut self,
        module: u32,
        endpoint: u64,
        remote: u64,
        local: PutBuffer,
    ) -> Rdma<PutBuffer> {
        count(|s| s.puts += 1);
        if !self.rdma_target_ok("put", module, endpoint) {
            return Rdma::Failed(local);
        }
        match behaviour().rdma_answer {
            RdmaAnswer::Done => {
                copy_put(&local, remote);
                Rdma::Done(local)
            }
            RdmaAnswer::Queued | RdmaAnswer::Fail => {
                let sum = checksum(local.as_slice());
                self.rdma[module as usize].push_back(RdmaOp::Put { remote, local, sum });
                count(|s| s.rdma_queued += 1);
                Rdma::Queued
            }
        }
    }

    fn progress(&mut self, pml: &Pml<'_>) -> usize {
        IN_CALLBACKS.store(true, Ordering::Relaxed);
        let (b, failure) = {
            let mut c = control();
            (c.behaviour, c.failure.take())
        };
        let mut events = 0;
        if let Some(reason) = failure {
            if self.failed.is_none() {
                events += self.report_failure(reason, pml);
            }
        }
        let limit = match b.deliver_per_progress {
            0 => usize::MAX,
            n => n,
        };
        for m in (0..self.queues.len()).rev() {
            while events < limit {
                let Some(frag) = self.queues[m].pop_front() else {
                    break;
                };
                self.deliver(m as u32, frag, b.placement, pml);
                events += 1;
            }
        }
        let mut rdma_failed = false;
        for m in 0..self.rdma.len() {
            while events < limit {
                let Some(op) = self.rdma[m].pop_front() else {
                    break;
                };
                if b.rdma_answer == RdmaAnswer::Fail {
                    rdma_failed = true;
                    match op {
                        RdmaOp::Get { local, .. } => pml.get_done(local, RdmaStatus::Failed),
                        RdmaOp::Put { local, .. } => pml.put_done(local, RdmaStatus::Failed),
                    }
                } else {
                    match op {
                        RdmaOp::Get { remote, mut local } => {
                            copy_get(remote, &mut local);
                            pml.get_done(local, RdmaStatus::Done);
                        }
                        RdmaOp::Put { remote, local, sum } => {
                            check_put(m as u32, &local, sum);
                            copy_put(&local, remote);
                            pml.put_done(local, RdmaStatus::Done);
                        }
                    }
                }
                count(|s| s.rdma_done += 1);
                events += 1;
            }
        }
        if rdma_failed && self.failed.is_none() {
            events += self.report_failure(
                "a get/put of the kit's loopback btl failed (RdmaAnswer::Fail)".to_string(),
                pml,
            );
        }
        IN_CALLBACKS.store(false, Ordering::Relaxed);
        events
    }

    fn finalize(self) {
        count(|s| s.finalizes += 1);
    }

    fn stop_after_internal_error(&mut self, pml: &Pml<'_>, message: &str) {
        IN_CALLBACKS.store(false, Ordering::Relaxed);
        violation(format!(
            "the loopback btl stopped after an internal error: {message}"
        ));
        if self.failed.is_none() {
            self.report_failure(format!("internal error in the btl: {message}"), pml);
        }
    }
}

impl Exported for Loopback {
    fn instance() -> &'static Instance<Adapted<Self>> {
        static INSTANCE: Instance<Adapted<Loopback>> = Instance::new();
        &INSTANCE
    }
}

/// The table the adapter generates for [`Loopback`].
static GENERATED: BtlComponentModule = table::<Loopback>();

/// `send` checked for a call from inside a btl callback, then the
/// generated one (which refuses it: the btl is entered).
unsafe extern "C" fn checked_send(
    module: u32,
    endpoint: u64,
    header: *const u8,
    header_len: usize,
    payload: *const u8,
    payload_len: usize,
    cookie: u64,
) -> SendOutcome {
    if IN_CALLBACKS.load(Ordering::Relaxed) {
        violation(format!(
            "the pml called the btl's send ({payload_len}-byte payload) from inside a btl callback"
        ));
    }
    // SAFETY: the caller's arguments, passed on unchanged to the generated
    // entry point with the same contract.
    unsafe {
        (GENERATED.send)(
            module,
            endpoint,
            header,
            header_len,
            payload,
            payload_len,
            cookie,
        )
    }
}

/// `get` checked for a call from inside a btl callback, then the
/// generated one.
unsafe extern "C" fn checked_get(
    module: u32,
    endpoint: u64,
    local: *mut u8,
    remote: u64,
    len: usize,
    cookie: u64,
) -> RdmaOutcome {
    if IN_CALLBACKS.load(Ordering::Relaxed) {
        violation(format!(
            "the pml called the btl's get ({len} bytes) from inside a btl callback"
        ));
    }
    // SAFETY: the caller's arguments, passed on unchanged to the generated
    // entry point with the same contract.
    unsafe { (GENERATED.get)(module, endpoint, local, remote, len, cookie) }
}

/// `put` checked as [`checked_get`].
unsafe extern "C" fn checked_put(
    module: u32,
    endpoint: u64,
    local: *const u8,
    remote: u64,
    len: usize,
    cookie: u64,
) -> RdmaOutcome {
    if IN_CALLBACKS.load(Ordering::Relaxed) {
        violation(format!(
            "the pml called the btl's put ({len} bytes) from inside a btl callback"
        ));
    }
    // SAFETY: as in `checked_get`.
    unsafe { (GENERATED.put)(module, endpoint, local, remote, len, cookie) }
}

/// `progress` checked for a call outside the MPI layer's progress round
/// or from inside a btl callback, then the generated one.
unsafe extern "C" fn checked_progress() -> usize {
    if IN_CALLBACKS.load(Ordering::Relaxed) {
        violation("the pml ran the btl's progress from inside a btl callback".to_string());
    } else if !IN_ROUND.load(Ordering::Relaxed) {
        violation(
            "the btl's progress ran outside the MPI layer's progress round (the pml called it itself)"
                .to_string(),
        );
    }
    // SAFETY: the generated entry point takes no argument.
    unsafe { (GENERATED.progress)() }
}

/// The kit btl's exported table: the generated one, with `send`, `get`,
/// `put` and `progress` checked as the module docs say.
pub static LOOPBACK: BtlComponentModule = BtlComponentModule {
    send: checked_send,
    get: checked_get,
    put: checked_put,
    progress: checked_progress,
    ..table::<Loopback>()
};

/// The kit btl as the MPI layer hands it to a pml's `init`.
pub fn candidate() -> BtlCandidate {
    static CONTEXT: OnceLock<ComponentContext> = OnceLock::new();
    BtlCandidate {
        name: RStr::from_str(COMPONENT),
        module: &LOOPBACK,
        context: *CONTEXT.get_or_init(|| testkit::context("btl", COMPONENT)),
    }
}
