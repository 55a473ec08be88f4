//! The protocol engine: requests, matching, the eager and rendezvous
//! protocols, per-peer btl choice and striping (see the crate docs for the
//! protocol).
//!
//! [`Engine`] is a plain struct over a [`Transport`] (the btl entry points,
//! the modex and logging), so tests run several engines in one process
//! over an in-memory transport; the component wraps one engine over the
//! real btl tables.

use std::collections::hash_map::HashMap;
use std::collections::VecDeque;
use std::ptr::{self, NonNull};

use oxmpi_framework_btl::module::{BtlModuleInfo, SendOutcome};
use oxmpi_framework_pml::module::{
    RecvArgs, RequestError, RequestStatus, SendArgs, SendMode, ANY_SOURCE, ANY_TAG,
};
use oxmpi_matching::{
    ContextId, Envelope, Incoming, Match, Matcher, PostedRecv, RecvId, Source, Tag,
};
use oxmpi_plugin_api::verbosity;

use crate::pool::Pool;
use crate::requests::{Failure, Op, Protocol, RecvPhase, RecvReq, Request, Requests, SendReq};
use crate::wire::{Header, MatchInfo, FLAG_SYNC, FRAG};

/// Fragment size used for a module that reports a `max_send_size` of 0.
pub(crate) const FALLBACK_MAX_SEND: usize = 128 << 10;

/// What the engine needs from below: the btls' entry points, the modex and
/// a log.
pub(crate) trait Transport {
    /// `rank`'s card published under `name` (`btl_<component>`): `Ok(None)`
    /// if it published none, `Err` with the reason if the lookup failed.
    fn modex_get(&mut self, rank: u32, name: &str) -> Result<Option<Vec<u8>>, String>;
    /// `add_peer` of btl `btl` (the index among the engine's btls) for its
    /// module `module`: an endpoint, or why the module cannot reach `peer`.
    fn add_peer(&mut self, btl: usize, module: u32, peer: u32, card: &[u8]) -> Result<u64, String>;
    /// `send` of btl `btl` (see `BtlComponentModule::send`). `payload` is
    /// never null (dangling when `payload_len` is 0).
    #[allow(clippy::too_many_arguments)]
    fn send(
        &mut self,
        btl: usize,
        module: u32,
        endpoint: u64,
        header: &[u8],
        payload: *const u8,
        payload_len: usize,
        cookie: u64,
    ) -> SendOutcome;
    /// Logs at the pml framework's verbosity `level`.
    fn log(&self, level: i32, message: &str);
}

/// A btl as the engine sees it.
#[derive(Clone, Debug)]
pub(crate) struct BtlDesc {
    /// Component name (`self`, `tcp`).
    pub name: String,
    /// Its modules, as its `init` described them (empty if unusable).
    pub modules: Vec<BtlModuleInfo>,
    /// Why it offers nothing here (its `init` failed or found no module),
    /// for the unreachable-peer sentence; `None` when it has modules.
    pub unusable: Option<String>,
}

/// The engine's parameters.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Config {
    /// Fragments of one rendezvous send a btl may hold at once
    /// (`pml_ob1_send_pipeline_depth`, at least 1).
    pub send_pipeline_depth: u32,
}

/// One module that reaches a peer.
#[derive(Clone, Debug)]
pub(crate) struct Lane {
    /// Global module index (into `Engine::modules`).
    pub module: usize,
    /// The btl's endpoint for the peer.
    pub endpoint: u64,
    /// Share of the large-message bytes: bandwidth / Σ bandwidth (equal
    /// shares when every bandwidth is 0).
    pub weight: f64,
    /// Payload bytes of FRAGs striped onto this lane so far.
    pub striped: u64,
    /// Its FRAG size (`max_send_size`).
    pub frag: usize,
}

/// The modules used for one peer.
#[derive(Clone, Debug)]
pub(crate) struct Route {
    /// The modules of the highest exclusivity that reach the peer, highest
    /// bandwidth first.
    pub lanes: Vec<Lane>,
    /// The lanes of the lowest latency (eager sends and control messages,
    /// round-robin).
    pub eager: Vec<usize>,
    eager_next: usize,
}

impl Route {
    /// The next eager lane (round-robin).
    #[inline]
    fn next_eager(&mut self) -> usize {
        let lane = self.eager[self.eager_next];
        self.eager_next += 1;
        if self.eager_next == self.eager.len() {
            self.eager_next = 0;
        }
        lane
    }

    /// The lane for the next FRAG: the one that would finish it earliest
    /// in proportion to its weight, so bytes spread as the weights.
    #[inline]
    fn next_stripe(&self) -> usize {
        let mut best = 0;
        let mut best_score = f64::INFINITY;
        for (i, l) in self.lanes.iter().enumerate() {
            if l.weight <= 0.0 {
                continue;
            }
            let score = (l.striped as f64 + l.frag as f64) / l.weight;
            if score < best_score {
                best = i;
                best_score = score;
            }
        }
        best
    }
}

enum Link {
    Unresolved,
    Unreachable(String),
    Reachable(Route),
}

struct Peer {
    link: Link,
    /// Why the peer was lost, once it is.
    failed: Option<String>,
    /// The reason is a placeholder ("a send failed") until the btl's
    /// `on_peer_failed` gives the real one.
    failed_provisional: bool,
    /// Next sequence number per context, for messages to this peer.
    sequences: HashMap<u32, u64, rustc_hash::FxBuildHasher>,
}

/// A module as the engine keeps it.
struct ModuleEntry {
    btl: usize,
    index: u32,
    info: BtlModuleInfo,
}

struct BtlEntry {
    name: String,
    unusable: Option<String>,
    first_module: usize,
    modules: usize,
}

/// What travels with a message through the matcher.
#[derive(Debug)]
pub(crate) struct Stored {
    kind: Kind,
    /// The bytes that came with the message (`None` while they are still
    /// in the btl's memory, during the call that delivered them).
    data: Option<Vec<u8>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Eager,
    Rendezvous { sender: u64 },
}

/// An ACK to send.
#[derive(Clone, Copy, Debug)]
struct Ctrl {
    peer: u32,
    sender: u64,
    receiver: u64,
    wanted: usize,
}

enum Push {
    /// A btl took nothing: try again at the next progress.
    Blocked,
    /// The pipeline is full: wait for completions.
    Waiting,
    /// Nothing more to send.
    Finished,
}

/// Counters for tests and diagnostics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Stats {
    /// Live request records.
    pub live_requests: usize,
    /// Buffers the unexpected-message pool allocated so far.
    pub pool_allocations: u64,
    /// Unexpected messages waiting for a receive.
    pub unexpected: usize,
    /// Sends with work left for `progress`.
    pub active_sends: usize,
    /// ACKs waiting to be sent.
    pub pending_acks: usize,
}

/// A non-null pointer for empty payloads.
#[inline]
fn nonnull(p: *const u8, len: usize) -> *const u8 {
    if len == 0 || p.is_null() {
        NonNull::<u8>::dangling().as_ptr()
    } else {
        p
    }
}

/// A btl's reason as a clause (no trailing period).
fn clause(reason: &str) -> &str {
    let r = reason.trim();
    r.strip_suffix('.').unwrap_or(r)
}

fn tag_text(tag: i32) -> String {
    if tag == ANY_TAG {
        "any tag".to_string()
    } else {
        format!("tag {tag}")
    }
}

/// The protocol engine of one process.
pub(crate) struct Engine<T: Transport> {
    transport: T,
    rank: u32,
    size: u32,
    depth: u32,
    btls: Vec<BtlEntry>,
    modules: Vec<ModuleEntry>,
    peers: Vec<Peer>,
    matcher: Matcher<Stored>,
    requests: Requests,
    pool: Pool,
    ctrl: VecDeque<Ctrl>,
    active: VecDeque<u64>,
    /// What kind of failure the last `isend` error was.
    last_send_error: RequestError,
}

impl<T: Transport> Engine<T> {
    /// An engine for `rank` of a job of `size` ranks over `btls` (in the
    /// order the MPI layer gave them).
    pub(crate) fn new(
        config: Config,
        rank: u32,
        size: u32,
        btls: Vec<BtlDesc>,
        transport: T,
    ) -> Engine<T> {
        let mut modules = Vec::new();
        let mut entries = Vec::new();
        for (b, desc) in btls.into_iter().enumerate() {
            let first_module = modules.len();
            let count = desc.modules.len();
            for (i, mut info) in desc.modules.into_iter().enumerate() {
                if info.max_send_size == 0 {
                    transport.log(
                        verbosity::COMPONENT,
                        &format!(
                            "btl module {} reports a max_send_size of 0; fragments of {} bytes are used",
                            info.label, FALLBACK_MAX_SEND
                        ),
                    );
                    info.max_send_size = FALLBACK_MAX_SEND;
                }
                modules.push(ModuleEntry {
                    btl: b,
                    index: i as u32,
                    info,
                });
            }
            entries.push(BtlEntry {
                name: desc.name,
                unusable: desc.unusable,
                first_module,
                modules: count,
            });
        }
        let peers = (0..size)
            .map(|_| Peer {
                link: Link::Unresolved,
                failed: None,
                failed_provisional: false,
                sequences: HashMap::default(),
            })
            .collect();
        Engine {
            transport,
            rank,
            size,
            depth: config.send_pipeline_depth.max(1),
            btls: entries,
            modules,
            peers,
            matcher: Matcher::new(),
            requests: Requests::default(),
            pool: Pool::default(),
            ctrl: VecDeque::new(),
            active: VecDeque::new(),
            last_send_error: RequestError::Other,
        }
    }

    /// The kind of the last `isend` error (`Unreachable`, `PeerFailed`, or
    /// `Other` for invalid arguments).
    pub(crate) fn last_send_error(&self) -> RequestError {
        self.last_send_error
    }

    /// The transport (for tests and finalize).
    #[allow(dead_code)]
    pub(crate) fn transport(&self) -> &T {
        &self.transport
    }

    /// Counters.
    pub(crate) fn stats(&self) -> Stats {
        Stats {
            live_requests: self.requests.live(),
            pool_allocations: self.pool.allocations,
            unexpected: self.matcher.unexpected_len(),
            active_sends: self.active.len(),
            pending_acks: self.ctrl.len(),
        }
    }

    /// The route to `peer`, if resolved and reachable (tests).
    #[cfg(test)]
    pub(crate) fn route(&self, peer: u32) -> Option<&Route> {
        match &self.peers.get(peer as usize)?.link {
            Link::Reachable(r) => Some(r),
            _ => None,
        }
    }

    /// Label of global module `m`.
    #[cfg(test)]
    pub(crate) fn module_label(&self, m: usize) -> &str {
        self.modules[m].info.label.as_str()
    }

    fn label(&self, btl: usize, module: u32) -> String {
        match self.btls.get(btl) {
            Some(b) if (module as usize) < b.modules => self.modules
                [b.first_module + module as usize]
                .info
                .label
                .to_string(),
            Some(b) => format!("{} module {module}", b.name),
            None => format!("btl {btl} module {module}"),
        }
    }

    // ----- peers -----

    /// Resolves `peer` on first use: reads each btl's card, asks each of
    /// its modules, and keeps the best (see the crate docs).
    fn resolve(&mut self, peer: u32) -> Result<(), String> {
        match &self.peers[peer as usize].link {
            Link::Reachable(_) => return Ok(()),
            Link::Unreachable(s) => return Err(s.clone()),
            Link::Unresolved => {}
        }
        let link = self.compute_route(peer);
        let result = match &link {
            Link::Unreachable(s) => Err(s.clone()),
            _ => Ok(()),
        };
        self.peers[peer as usize].link = link;
        result
    }

    fn compute_route(&mut self, peer: u32) -> Link {
        let mut reached: Vec<(usize, u64)> = Vec::new();
        let mut reasons: Vec<String> = Vec::new();
        for b in 0..self.btls.len() {
            let name = self.btls[b].name.clone();
            if let Some(why) = &self.btls[b].unusable {
                reasons.push(format!("{name}: {}", clause(why)));
                continue;
            }
            let card = match self.transport.modex_get(peer, &format!("btl_{name}")) {
                Ok(Some(card)) => card,
                Ok(None) => {
                    reasons.push(format!(
                        "{name}: rank {peer} published no btl_{name} contact card (the btl does not run there)"
                    ));
                    continue;
                }
                Err(e) => {
                    reasons.push(format!(
                        "{name}: reading rank {peer}'s btl_{name} contact card failed: {}",
                        clause(&e)
                    ));
                    continue;
                }
            };
            let mut failures: Vec<(String, String)> = Vec::new();
            let before = reached.len();
            let first = self.btls[b].first_module;
            for i in 0..self.btls[b].modules {
                let m = first + i;
                match self
                    .transport
                    .add_peer(b, self.modules[m].index, peer, &card)
                {
                    Ok(endpoint) => reached.push((m, endpoint)),
                    Err(reason) => failures.push((
                        self.modules[m].info.label.to_string(),
                        clause(&reason).to_string(),
                    )),
                }
            }
            if reached.len() == before {
                let same = failures.windows(2).all(|w| w[0].1 == w[1].1);
                let text = if failures.is_empty() {
                    "it has no module".to_string()
                } else if same {
                    failures[0].1.clone()
                } else {
                    failures
                        .iter()
                        .map(|(l, r)| format!("{l}: {r}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                reasons.push(format!("{name}: {text}"));
            }
        }
        if reached.is_empty() {
            let why = if reasons.is_empty() {
                "no btl is in use".to_string()
            } else {
                reasons.join("; ")
            };
            return Link::Unreachable(format!(
                "rank {} cannot reach rank {peer}: {why}",
                self.rank
            ));
        }
        let route = self.select(reached);
        let text = self.describe_route(peer, &route);
        self.transport.log(verbosity::INFO, &text);
        Link::Reachable(route)
    }

    /// Builds a route from the modules that reach a peer (see the crate
    /// docs: exclusivity, then bandwidth weights and the eager list).
    fn select(&self, reached: Vec<(usize, u64)>) -> Route {
        let info = |m: usize| &self.modules[m].info;
        let top = reached
            .iter()
            .map(|&(m, _)| info(m).exclusivity)
            .max()
            .unwrap_or(0);
        let mut kept: Vec<(usize, u64)> = reached
            .into_iter()
            .filter(|&(m, _)| info(m).exclusivity == top)
            .collect();
        kept.sort_by_key(|&(m, _)| std::cmp::Reverse(info(m).bandwidth));
        let total: u64 = kept
            .iter()
            .map(|&(m, _)| u64::from(info(m).bandwidth))
            .sum();
        let n = kept.len() as f64;
        let lanes: Vec<Lane> = kept
            .iter()
            .map(|&(m, endpoint)| Lane {
                module: m,
                endpoint,
                weight: if total == 0 {
                    1.0 / n
                } else {
                    f64::from(info(m).bandwidth) / total as f64
                },
                striped: 0,
                frag: info(m).max_send_size,
            })
            .collect();
        let fastest = lanes
            .iter()
            .map(|l| info(l.module).latency)
            .min()
            .unwrap_or(0);
        let eager = (0..lanes.len())
            .filter(|&i| info(lanes[i].module).latency == fastest)
            .collect();
        Route {
            lanes,
            eager,
            eager_next: 0,
        }
    }

    fn describe_route(&self, peer: u32, route: &Route) -> String {
        let lanes: Vec<String> = route
            .lanes
            .iter()
            .enumerate()
            .map(|(i, l)| {
                format!(
                    "{} (weight {:.2}{})",
                    self.modules[l.module].info.label,
                    l.weight,
                    if route.eager.contains(&i) {
                        ", eager"
                    } else {
                        ""
                    }
                )
            })
            .collect();
        format!(
            "rank {} reaches rank {peer} through {}",
            self.rank,
            lanes.join(", ")
        )
    }

    /// Marks `peer` lost and fails what depends on it (see the crate
    /// docs). A provisional reason (a send failed) is replaced by the
    /// btl's own when it arrives.
    fn fail_peer(&mut self, peer: u32, reason: String, provisional: bool) {
        let p = &mut self.peers[peer as usize];
        if p.failed.is_some() {
            if p.failed_provisional && !provisional {
                p.failed = Some(reason);
                p.failed_provisional = false;
            }
            return;
        }
        p.failed = Some(reason.clone());
        p.failed_provisional = provisional;
        self.transport.log(
            verbosity::COMPONENT,
            &format!(
                "rank {} lost rank {peer} ({}); its pending sends and receives fail",
                self.rank,
                clause(&reason)
            ),
        );
        for h in self.requests.handles() {
            let Some(r) = self.requests.get(h) else {
                continue;
            };
            if r.complete {
                continue;
            }
            let affected = match &r.op {
                Op::Send(s) => s.dest == peer,
                Op::Recv(q) => match q.phase {
                    RecvPhase::Posted => {
                        q.source == peer as i32 && self.matcher.cancel_recv(RecvId(h))
                    }
                    RecvPhase::Rendezvous { peer: p, .. } => p == peer,
                    RecvPhase::Done => false,
                },
            };
            if affected {
                self.fail_request(h, peer);
            }
        }
        self.ctrl.retain(|c| c.peer != peer);
    }

    /// Completes request `h` with `PeerFailed` because of `peer`.
    fn fail_request(&mut self, h: u64, peer: u32) {
        let Some(r) = self.requests.get_mut(h) else {
            return;
        };
        match &mut r.op {
            Op::Send(s) => {
                r.status = RequestStatus {
                    source: s.dest as i32,
                    tag: s.tag,
                    count: 0,
                    cancelled: false,
                    error: RequestError::PeerFailed,
                };
            }
            Op::Recv(q) => {
                if q.phase == RecvPhase::Posted {
                    r.status.source = peer as i32;
                    r.status.tag = q.tag;
                    r.status.count = 0;
                }
                r.status.error = RequestError::PeerFailed;
                q.phase = RecvPhase::Done;
            }
        }
        r.failure = Failure::PeerFailed { peer };
        self.finish(h);
    }

    /// A btl answered `Failed` for a send to `peer` on module `m`.
    fn send_failed(&mut self, peer: u32, m: usize) {
        let reason = format!("{} could not send to it", self.modules[m].info.label);
        self.fail_peer(peer, reason, true);
    }

    // ----- completion -----

    /// Marks `h` complete; releases it if the caller already freed it.
    #[inline]
    fn finish(&mut self, h: u64) {
        if let Some(r) = self.requests.get_mut(h) {
            r.complete = true;
            if r.detached {
                self.requests.remove(h);
            }
        }
    }

    /// Completes send `h` if nothing of it is left.
    #[inline]
    fn check_send(&mut self, h: u64) {
        let Some(r) = self.requests.get_mut(h) else {
            return;
        };
        if r.complete {
            return;
        }
        let Op::Send(s) = &r.op else {
            return;
        };
        let done = s.started
            && s.outstanding == 0
            && match s.protocol {
                Protocol::Eager => true,
                Protocol::Rendezvous => s.acked && s.next >= s.end,
            };
        if done {
            r.status = RequestStatus {
                source: s.dest as i32,
                tag: s.tag,
                count: s.len,
                cancelled: false,
                error: RequestError::None,
            };
            self.finish(h);
        }
    }

    // ----- sends -----

    /// Starts a send (`PmlModule::isend`): the request handle, or the
    /// sentence saying why it cannot start.
    ///
    /// # Safety
    ///
    /// `args.buf` must be readable for `args.len` bytes until the request
    /// completes.
    pub(crate) unsafe fn isend(&mut self, args: &SendArgs) -> Result<u64, String> {
        self.last_send_error = RequestError::Other;
        let dest = args.dest;
        if dest >= self.size {
            return Err(format!(
                "rank {} cannot send to rank {dest}: the job has {} ranks (0 to {})",
                self.rank,
                self.size,
                self.size - 1
            ));
        }
        if args.buf.is_null() && args.len > 0 {
            return Err(format!(
                "rank {} cannot send {} bytes to rank {dest}: the buffer is a null pointer",
                self.rank, args.len
            ));
        }
        if args.tag == ANY_TAG {
            return Err(format!(
                "rank {} cannot send to rank {dest} with tag {ANY_TAG}: that is MPI_ANY_TAG, which no receive can match",
                self.rank
            ));
        }
        if let Err(e) = self.resolve(dest) {
            self.last_send_error = RequestError::Unreachable;
            return Err(e);
        }
        let peer = &mut self.peers[dest as usize];
        if let Some(reason) = &peer.failed {
            self.last_send_error = RequestError::PeerFailed;
            return Err(format!(
                "rank {} cannot send to rank {dest}: rank {dest} was lost ({})",
                self.rank,
                clause(reason)
            ));
        }
        let Link::Reachable(route) = &mut peer.link else {
            return Err(format!(
                "rank {} cannot send to rank {dest}: no route was resolved",
                self.rank
            ));
        };
        let lane = route.next_eager();
        let info = &self.modules[route.lanes[lane].module].info;
        let sync = args.mode == SendMode::Synchronous;
        let (protocol, first_len) = if !sync && args.len <= info.eager_limit {
            (Protocol::Eager, args.len)
        } else {
            (Protocol::Rendezvous, args.len.min(info.rndv_eager_limit))
        };
        let sequence = {
            let next = peer.sequences.entry(args.context).or_insert(0);
            let s = *next;
            *next += 1;
            s
        };
        let h = self.requests.insert(Request::new(Op::Send(SendReq {
            buf: args.buf,
            len: args.len,
            dest,
            tag: args.tag,
            context: args.context,
            sync,
            sequence,
            protocol,
            lane,
            first_len,
            started: false,
            acked: false,
            receiver: 0,
            end: args.len,
            next: first_len,
            outstanding: 0,
        })));
        if !self.start(h) {
            self.active.push_back(h);
        }
        Ok(h)
    }

    /// Sends the first fragment of send `h` (MATCH or RNDV). False if the
    /// btl would block.
    #[inline]
    fn start(&mut self, h: u64) -> bool {
        let Some(r) = self.requests.get_mut(h) else {
            return true;
        };
        if r.complete {
            return true;
        }
        let Op::Send(s) = &mut r.op else {
            return true;
        };
        let info = MatchInfo {
            context: s.context,
            source: self.rank,
            tag: s.tag,
            sequence: s.sequence,
            len: s.len as u64,
        };
        let header = match s.protocol {
            Protocol::Eager => Header::Match(info),
            Protocol::Rendezvous => Header::Rndv {
                info,
                flags: if s.sync { FLAG_SYNC } else { 0 },
                sender: h,
            },
        };
        let mut bytes = [0u8; 64];
        let n = header.encode(&mut bytes);
        let dest = s.dest;
        let Link::Reachable(route) = &self.peers[dest as usize].link else {
            return true;
        };
        let lane = &route.lanes[s.lane];
        let m = &self.modules[lane.module];
        let outcome = self.transport.send(
            m.btl,
            m.index,
            lane.endpoint,
            &bytes[..n],
            nonnull(s.buf, s.first_len),
            s.first_len,
            h,
        );
        match outcome {
            SendOutcome::WouldBlock => false,
            SendOutcome::Done | SendOutcome::Queued => {
                s.started = true;
                if outcome == SendOutcome::Queued {
                    s.outstanding += 1;
                }
                self.check_send(h);
                true
            }
            SendOutcome::Failed => {
                let module = lane.module;
                self.send_failed(dest, module);
                true
            }
        }
    }

    /// Sends FRAGs of rendezvous send `h` while the pipeline has room.
    /// Returns what stopped it and the number of FRAGs sent.
    fn push_frags(&mut self, h: u64) -> (Push, usize) {
        let mut sent = 0;
        loop {
            let Some(r) = self.requests.get_mut(h) else {
                return (Push::Finished, sent);
            };
            if r.complete {
                return (Push::Finished, sent);
            }
            let Op::Send(s) = &mut r.op else {
                return (Push::Finished, sent);
            };
            if s.next >= s.end {
                self.check_send(h);
                return (Push::Finished, sent);
            }
            if s.outstanding >= self.depth {
                return (Push::Waiting, sent);
            }
            let dest = s.dest;
            let Link::Reachable(route) = &mut self.peers[dest as usize].link else {
                return (Push::Finished, sent);
            };
            let li = route.next_stripe();
            let lane = &mut route.lanes[li];
            let m = &self.modules[lane.module];
            let size = lane.frag.min(s.end - s.next);
            let mut bytes = [0u8; 64];
            let n = Header::Frag {
                receiver: s.receiver,
                offset: s.next as u64,
            }
            .encode(&mut bytes);
            // SAFETY: `next < end <= len`: inside the caller's buffer.
            let payload = unsafe { s.buf.add(s.next) };
            let outcome =
                self.transport
                    .send(m.btl, m.index, lane.endpoint, &bytes[..n], payload, size, h);
            match outcome {
                SendOutcome::Done | SendOutcome::Queued => {
                    s.next += size;
                    lane.striped += size as u64;
                    if outcome == SendOutcome::Queued {
                        s.outstanding += 1;
                    }
                    sent += 1;
                }
                SendOutcome::WouldBlock => return (Push::Blocked, sent),
                SendOutcome::Failed => {
                    let module = lane.module;
                    self.send_failed(dest, module);
                    return (Push::Finished, sent);
                }
            }
        }
    }

    /// Sends queued ACKs; returns how many went out.
    fn flush_ctrl(&mut self) -> usize {
        let mut sent = 0;
        while let Some(&c) = self.ctrl.front() {
            if self.peers[c.peer as usize].failed.is_some() {
                self.ctrl.pop_front();
                continue;
            }
            if let Err(sentence) = self.resolve(c.peer) {
                self.ctrl.pop_front();
                self.transport.log(verbosity::COMPONENT, &sentence);
                if let Some(r) = self.requests.get_mut(c.receiver) {
                    if !r.complete {
                        r.status.error = RequestError::Other;
                        r.failure = Failure::Message(format!(
                            "receive of a message from rank {} failed: its rendezvous cannot be answered: {sentence}",
                            c.peer
                        ));
                        if let Op::Recv(q) = &mut r.op {
                            q.phase = RecvPhase::Done;
                        }
                        self.finish(c.receiver);
                    }
                }
                continue;
            }
            let Link::Reachable(route) = &mut self.peers[c.peer as usize].link else {
                self.ctrl.pop_front();
                continue;
            };
            let li = route.next_eager();
            let lane = &route.lanes[li];
            let m = &self.modules[lane.module];
            let mut bytes = [0u8; 64];
            let n = Header::Ack {
                sender: c.sender,
                receiver: c.receiver,
                wanted: c.wanted as u64,
            }
            .encode(&mut bytes);
            let outcome = self.transport.send(
                m.btl,
                m.index,
                lane.endpoint,
                &bytes[..n],
                nonnull(ptr::null(), 0),
                0,
                0,
            );
            match outcome {
                SendOutcome::WouldBlock => break,
                SendOutcome::Done | SendOutcome::Queued => {
                    self.ctrl.pop_front();
                    sent += 1;
                }
                SendOutcome::Failed => {
                    self.ctrl.pop_front();
                    let module = lane.module;
                    self.send_failed(c.peer, module);
                }
            }
        }
        sent
    }

    /// The pml's own progress (`PmlModule::progress`): sends queued ACKs,
    /// first fragments the btls refused before, and the FRAGs of acked
    /// rendezvous sends. Returns the number of fragments sent.
    pub(crate) fn progress(&mut self) -> usize {
        let mut events = self.flush_ctrl();
        let n = self.active.len();
        for _ in 0..n {
            let Some(h) = self.active.pop_front() else {
                break;
            };
            let Some(r) = self.requests.get(h) else {
                continue;
            };
            if r.complete {
                continue;
            }
            let Op::Send(s) = &r.op else {
                continue;
            };
            if !s.started {
                if self.start(h) {
                    events += 1;
                } else {
                    self.active.push_back(h);
                }
                // A started rendezvous waits for its ACK, which re-queues it.
                continue;
            }
            if s.protocol == Protocol::Rendezvous && s.acked {
                let (why, sent) = self.push_frags(h);
                events += sent;
                match why {
                    Push::Blocked | Push::Waiting => self.active.push_back(h),
                    Push::Finished => {}
                }
            }
        }
        events
    }

    // ----- receives -----

    /// Posts a receive (`PmlModule::irecv`).
    ///
    /// # Safety
    ///
    /// `args.buf` must be writable for `args.len` bytes until the request
    /// completes.
    pub(crate) unsafe fn irecv(&mut self, args: &RecvArgs) -> Result<u64, String> {
        if args.source != ANY_SOURCE && (args.source < 0 || args.source as u32 >= self.size) {
            return Err(format!(
                "rank {} cannot receive from rank {}: the job has {} ranks (0 to {}; -1 for any source)",
                self.rank,
                args.source,
                self.size,
                self.size - 1
            ));
        }
        if args.buf.is_null() && args.len > 0 {
            return Err(format!(
                "rank {} cannot post a receive of {} bytes: the buffer is a null pointer",
                self.rank, args.len
            ));
        }
        let h = self.requests.insert(Request::new(Op::Recv(RecvReq {
            buf: args.buf,
            capacity: args.len,
            source: args.source,
            tag: args.tag,
            phase: RecvPhase::Posted,
        })));
        let posted = PostedRecv {
            context: ContextId(args.context),
            source: Source::from_raw(args.source),
            tag: Tag::from_raw(args.tag),
            capacity: args.len,
            id: RecvId(h),
        };
        match self.matcher.post_recv(posted) {
            Some(m) => {
                self.deliver(m, &[]);
                if !self.ctrl.is_empty() {
                    self.flush_ctrl();
                }
            }
            None => {
                if args.source >= 0 && self.peers[args.source as usize].failed.is_some() {
                    let peer = args.source as u32;
                    if self.matcher.cancel_recv(RecvId(h)) {
                        self.fail_request(h, peer);
                    }
                }
            }
        }
        Ok(h)
    }

    /// Hands a matched message to its receive: copies the bytes that came
    /// with it (`m.payload.data`, or `inline` when still in the btl's
    /// memory), then completes an eager receive, or queues the ACK of a
    /// rendezvous.
    fn deliver(&mut self, m: Match<Stored>, inline: &[u8]) {
        let Match {
            recv,
            envelope,
            payload: Stored { kind, data },
            ..
        } = m;
        let h = recv.0;
        let bytes: &[u8] = match &data {
            Some(v) => v,
            None => inline,
        };
        let Some(r) = self.requests.get_mut(h) else {
            self.transport.log(
                verbosity::ERROR,
                &format!("internal error: a message matched request {h:#x}, which does not exist"),
            );
            if let Some(v) = data {
                self.pool.give(v);
            }
            return;
        };
        let Op::Recv(q) = &mut r.op else {
            return;
        };
        let len = envelope.len;
        let wanted = len.min(q.capacity);
        let n = bytes.len().min(wanted);
        if n > 0 {
            // SAFETY: the receive buffer holds `capacity >= wanted >= n`
            // bytes (irecv's contract); `bytes` is ours or the btl's.
            unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), q.buf, n) };
        }
        let truncated = len > q.capacity;
        r.status = RequestStatus {
            source: envelope.source,
            tag: envelope.tag,
            count: wanted,
            cancelled: false,
            error: if truncated {
                RequestError::Truncated
            } else {
                RequestError::None
            },
        };
        r.failure = if truncated {
            Failure::Truncated { len }
        } else {
            Failure::None
        };
        match kind {
            Kind::Eager => {
                q.phase = RecvPhase::Done;
                self.finish(h);
            }
            Kind::Rendezvous { sender } => {
                let peer = envelope.source as u32;
                if self.peers[peer as usize].failed.is_some() {
                    r.status.count = n;
                    r.status.error = RequestError::PeerFailed;
                    r.failure = Failure::PeerFailed { peer };
                    q.phase = RecvPhase::Done;
                    self.finish(h);
                } else {
                    self.ctrl.push_back(Ctrl {
                        peer,
                        sender,
                        receiver: h,
                        wanted,
                    });
                    if n >= wanted {
                        q.phase = RecvPhase::Done;
                        self.finish(h);
                    } else {
                        q.phase = RecvPhase::Rendezvous {
                            peer,
                            wanted,
                            received: n,
                        };
                    }
                }
            }
        }
        if let Some(v) = data {
            self.pool.give(v);
        }
    }

    /// A MATCH or RNDV arrived: match it, queue it or hold it back.
    fn incoming(&mut self, peer: u32, info: MatchInfo, kind: Kind, payload: &[u8]) {
        let len = usize::try_from(info.len).unwrap_or(usize::MAX);
        let consistent = info.source == peer
            && match kind {
                Kind::Eager => payload.len() == len,
                Kind::Rendezvous { .. } => payload.len() <= len,
            };
        if !consistent {
            self.transport.log(
                verbosity::ERROR,
                &format!(
                    "dropped a malformed message header from rank {peer}: source {}, length {}, {} payload bytes",
                    info.source,
                    info.len,
                    payload.len()
                ),
            );
            return;
        }
        let envelope = Envelope {
            context: ContextId(info.context),
            source: peer as i32,
            tag: info.tag,
            sequence: info.sequence,
            len,
            sync: matches!(kind, Kind::Rendezvous { .. }),
        };
        if self
            .matcher
            .expected_sequence(envelope.context, envelope.source)
            == envelope.sequence
        {
            // In order: match now, copying straight from the btl's memory.
            match self.matcher.incoming(envelope, Stored { kind, data: None }) {
                Incoming::Matched(m) => self.deliver(m, payload),
                Incoming::Queued(id) => {
                    let copy = self.pool.copy(payload);
                    if let Some(p) = self.matcher.unexpected_payload_mut(id) {
                        p.data = Some(copy);
                    }
                }
                other => self.odd_outcome(peer, other),
            }
        } else {
            let copy = self.pool.copy(payload);
            match self.matcher.incoming(
                envelope,
                Stored {
                    kind,
                    data: Some(copy),
                },
            ) {
                Incoming::HeldBack | Incoming::Queued(_) => {}
                Incoming::Matched(m) => self.deliver(m, &[]),
                other => self.odd_outcome(peer, other),
            }
        }
        while let Some(released) = self.matcher.next_released() {
            if let Incoming::Matched(m) = released {
                self.deliver(m, &[]);
            }
        }
    }

    #[cold]
    fn odd_outcome(&mut self, peer: u32, outcome: Incoming<Stored>) {
        match outcome {
            Incoming::Duplicate {
                envelope,
                payload,
                expected,
            } => {
                self.transport.log(
                    verbosity::ERROR,
                    &format!(
                        "dropped a duplicate message from rank {peer} (context {}, sequence {}, expected {expected}): a btl delivered it twice",
                        envelope.context, envelope.sequence
                    ),
                );
                if let Some(v) = payload.data {
                    self.pool.give(v);
                }
            }
            other => self.transport.log(
                verbosity::ERROR,
                &format!("internal error: unexpected matching outcome {other:?} for a message from rank {peer}"),
            ),
        }
    }

    /// An ACK arrived for send `sender`.
    fn on_ack(&mut self, peer: u32, sender: u64, receiver: u64, wanted: u64) {
        let Some(r) = self.requests.get_mut(sender) else {
            self.transport.log(
                verbosity::COMPONENT,
                &format!(
                    "dropped an ACK from rank {peer} for send {sender:#x}, which no longer exists"
                ),
            );
            return;
        };
        if r.complete {
            return;
        }
        let Op::Send(s) = &mut r.op else {
            self.transport.log(
                verbosity::ERROR,
                &format!("dropped an ACK from rank {peer} naming a receive ({sender:#x})"),
            );
            return;
        };
        if s.dest != peer || s.protocol != Protocol::Rendezvous || s.acked {
            self.transport.log(
                verbosity::ERROR,
                &format!("dropped an unexpected ACK from rank {peer} for send {sender:#x}"),
            );
            return;
        }
        s.acked = true;
        s.receiver = receiver;
        let wanted = usize::try_from(wanted).unwrap_or(usize::MAX).min(s.len);
        s.end = wanted.max(s.first_len);
        s.next = s.first_len;
        if s.next < s.end {
            self.active.push_back(sender);
        } else {
            self.check_send(sender);
        }
    }

    /// A FRAG arrived for receive `receiver`.
    ///
    /// # Safety
    ///
    /// `payload` is readable for `len` bytes.
    unsafe fn on_frag(
        &mut self,
        peer: u32,
        receiver: u64,
        offset: u64,
        payload: *const u8,
        len: usize,
    ) {
        let Some(r) = self.requests.get_mut(receiver) else {
            self.transport.log(
                verbosity::COMPONENT,
                &format!("dropped a FRAG from rank {peer} for receive {receiver:#x}, which no longer exists"),
            );
            return;
        };
        let Op::Recv(q) = &mut r.op else {
            self.transport.log(
                verbosity::ERROR,
                &format!("dropped a FRAG from rank {peer} naming a send ({receiver:#x})"),
            );
            return;
        };
        let RecvPhase::Rendezvous {
            peer: from,
            wanted,
            received,
        } = &mut q.phase
        else {
            self.transport.log(
                verbosity::COMPONENT,
                &format!("dropped a FRAG from rank {peer} for receive {receiver:#x}, which is not receiving a rendezvous"),
            );
            return;
        };
        if *from != peer {
            self.transport.log(
                verbosity::ERROR,
                &format!("dropped a FRAG from rank {peer} for receive {receiver:#x}, which receives from rank {from}"),
            );
            return;
        }
        let offset = usize::try_from(offset).unwrap_or(usize::MAX);
        let start = offset.min(*wanted);
        let end = offset.saturating_add(len).min(*wanted);
        let useful = end - start;
        if useful > 0 {
            let dst = q.buf.add(start);
            if !ptr::eq(dst, payload) {
                ptr::copy_nonoverlapping(payload, dst, useful);
            }
        }
        *received += useful;
        if *received >= *wanted {
            q.phase = RecvPhase::Done;
            self.finish(receiver);
        }
    }

    // ----- btl callbacks -----

    /// `BtlReceiver::on_header`: for a FRAG of a matched rendezvous that
    /// fits the receive buffer, where its payload goes (the user buffer at
    /// its offset); null otherwise.
    #[inline]
    pub(crate) fn on_header(&mut self, peer: u32, header: &[u8], payload_len: usize) -> *mut u8 {
        if header.first() != Some(&FRAG) || payload_len == 0 {
            return ptr::null_mut();
        }
        let Ok(Header::Frag { receiver, offset }) = Header::decode(header) else {
            return ptr::null_mut();
        };
        let Some(r) = self.requests.get(receiver) else {
            return ptr::null_mut();
        };
        let Op::Recv(q) = &r.op else {
            return ptr::null_mut();
        };
        let RecvPhase::Rendezvous {
            peer: from, wanted, ..
        } = q.phase
        else {
            return ptr::null_mut();
        };
        let Ok(offset) = usize::try_from(offset) else {
            return ptr::null_mut();
        };
        let fits = match offset.checked_add(payload_len) {
            Some(end) => end <= wanted,
            None => false,
        };
        if from != peer || !fits {
            return ptr::null_mut();
        }
        // SAFETY: offset + payload_len <= wanted <= capacity.
        unsafe { q.buf.add(offset) }
    }

    /// `BtlReceiver::on_fragment`.
    ///
    /// # Safety
    ///
    /// `payload` is readable for `payload_len` bytes (or dangling/null
    /// when 0).
    #[inline]
    pub(crate) unsafe fn on_fragment(
        &mut self,
        btl: usize,
        module: u32,
        peer: u32,
        header: &[u8],
        payload: *const u8,
        payload_len: usize,
    ) {
        if peer >= self.size {
            let label = self.label(btl, module);
            self.transport.log(
                verbosity::ERROR,
                &format!(
                    "dropped a fragment that {label} says came from rank {peer}, outside the job of {} ranks",
                    self.size
                ),
            );
            return;
        }
        let decoded = match Header::decode(header) {
            Ok(h) => h,
            Err(e) => {
                let label = self.label(btl, module);
                self.transport.log(
                    verbosity::ERROR,
                    &format!("dropped {e} from rank {peer} on {label}"),
                );
                return;
            }
        };
        let data: &[u8] = if payload_len == 0 || payload.is_null() {
            &[]
        } else {
            std::slice::from_raw_parts(payload, payload_len)
        };
        match decoded {
            Header::Match(info) => self.incoming(peer, info, Kind::Eager, data),
            Header::Rndv { info, sender, .. } => {
                self.incoming(peer, info, Kind::Rendezvous { sender }, data)
            }
            Header::Ack {
                sender,
                receiver,
                wanted,
            } => self.on_ack(peer, sender, receiver, wanted),
            Header::Frag { receiver, offset } => {
                self.on_frag(peer, receiver, offset, payload, payload_len)
            }
        }
    }

    /// `BtlReceiver::on_send_done`: a fragment of send `cookie` (0: a
    /// control message) is finished.
    #[inline]
    pub(crate) fn on_send_done(&mut self, cookie: u64) {
        if cookie == 0 {
            return;
        }
        let Some(r) = self.requests.get_mut(cookie) else {
            return;
        };
        if let Op::Send(s) = &mut r.op {
            s.outstanding = s.outstanding.saturating_sub(1);
            self.check_send(cookie);
        }
    }

    /// `BtlReceiver::on_peer_failed`.
    pub(crate) fn on_peer_failed(&mut self, btl: usize, module: u32, peer: u32, reason: &str) {
        let label = self.label(btl, module);
        if peer >= self.size {
            self.transport.log(
                verbosity::ERROR,
                &format!("{label} reported rank {peer} lost, outside the job; ignored"),
            );
            return;
        }
        self.fail_peer(peer, format!("{label}: {}", clause(reason)), false);
    }

    // ----- requests -----

    /// `PmlModule::test`: the status once complete; an unknown handle is
    /// "complete" with error `Other` (see [`Engine::request_error`]).
    #[inline]
    pub(crate) fn test(&self, h: u64) -> Option<RequestStatus> {
        match self.requests.get(h) {
            Some(r) if !r.detached => r.complete.then_some(r.status),
            _ => Some(RequestStatus {
                source: ANY_SOURCE,
                tag: ANY_TAG,
                count: 0,
                cancelled: false,
                error: RequestError::Other,
            }),
        }
    }

    /// `PmlModule::free`.
    #[inline]
    pub(crate) fn free(&mut self, h: u64) {
        let Some(r) = self.requests.get_mut(h) else {
            return;
        };
        if r.detached {
            return;
        }
        if r.complete {
            self.requests.remove(h);
        } else {
            r.detached = true;
        }
    }

    /// `PmlModule::cancel`: cancels a receive not matched yet.
    pub(crate) fn cancel(&mut self, h: u64) -> bool {
        let Some(r) = self.requests.get_mut(h) else {
            return false;
        };
        if r.complete || r.detached {
            return false;
        }
        let Op::Recv(q) = &mut r.op else {
            return false;
        };
        if q.phase != RecvPhase::Posted || !self.matcher.cancel_recv(RecvId(h)) {
            return false;
        }
        q.phase = RecvPhase::Done;
        r.status = RequestStatus {
            source: ANY_SOURCE,
            tag: ANY_TAG,
            count: 0,
            cancelled: true,
            error: RequestError::None,
        };
        self.finish(h);
        true
    }

    /// `PmlModule::iprobe`: source, tag and full length of the message a
    /// receive would match.
    pub(crate) fn iprobe(&self, context: u32, source: i32, tag: i32) -> Option<RequestStatus> {
        self.matcher
            .probe(
                ContextId(context),
                Source::from_raw(source),
                Tag::from_raw(tag),
            )
            .map(|e| RequestStatus {
                source: e.source,
                tag: e.tag,
                count: e.len,
                cancelled: false,
                error: RequestError::None,
            })
    }

    /// `PmlModule::request_error`: the sentence for a request.
    pub(crate) fn request_error(&self, h: u64) -> String {
        let r = match self.requests.get(h) {
            Some(r) if !r.detached => r,
            _ => return format!("pml ob1 has no request {h:#x}: it was freed, or never issued"),
        };
        if !r.complete {
            return format!("request {h:#x} has not completed");
        }
        match (&r.failure, &r.op) {
            (Failure::None, _) if r.status.cancelled => format!("request {h:#x} was cancelled"),
            (Failure::None, _) => format!("request {h:#x} completed without error"),
            (Failure::Truncated { len }, Op::Recv(q)) => format!(
                "message of {len} bytes from rank {} (tag {}) truncated to the {}-byte receive buffer",
                r.status.source, r.status.tag, q.capacity
            ),
            (Failure::Truncated { len }, Op::Send(_)) => {
                format!("message of {len} bytes truncated")
            }
            (Failure::PeerFailed { peer }, op) => {
                let reason = self.peers[*peer as usize]
                    .failed
                    .as_deref()
                    .map(clause)
                    .unwrap_or("reason unknown");
                match op {
                    Op::Send(s) => format!(
                        "send of {} bytes to rank {peer} ({}) failed: rank {peer} was lost ({reason})",
                        s.len,
                        tag_text(s.tag)
                    ),
                    Op::Recv(_) => format!(
                        "receive from rank {peer} ({}) failed: rank {peer} was lost ({reason})",
                        tag_text(r.status.tag)
                    ),
                }
            }
            (Failure::Message(s), _) => s.clone(),
        }
    }
}
