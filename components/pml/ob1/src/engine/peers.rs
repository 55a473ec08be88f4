//! Peers and routes: resolving a peer on first use (its cards, each btl
//! module's `add_peer`), choosing the modules by exclusivity, latency and
//! bandwidth (the eager list and the striping weights), and failing a
//! peer with what depends on it.

use std::collections::hash_map::HashMap;

use oxmpi_framework_btl::module::flags;
use oxmpi_framework_pml::module::{RequestError, RequestStatus};
use oxmpi_matching::RecvId;
use oxmpi_plugin_api::verbosity;

use super::{clause, Engine, Transport};
use crate::requests::{Failure, Op, RecvPhase};

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
    /// Its largest get/put (`max_rdma_size`; 0 when it offers neither).
    pub rdma: usize,
    /// Whether it offers get.
    pub get: bool,
    /// Whether it offers put.
    pub put: bool,
    /// Bytes of gets/puts striped onto this lane so far.
    pub rdma_striped: u64,
    /// The lane reaches this process through a module with
    /// [`flags::LOOPBACK`]: eager messages are delivered during the send,
    /// without the btl.
    pub loopback: bool,
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
    /// Every lane offers get (RGET may be used).
    pub all_get: bool,
    /// Every lane offers put (RPUT may be offered).
    pub all_put: bool,
    /// Smallest message moved with get/put (the largest
    /// `min_rdma_message` of the lanes).
    pub min_rdma: usize,
}

impl Route {
    /// The next eager lane (round-robin).
    #[inline]
    pub(super) fn next_eager(&mut self) -> usize {
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
    pub(super) fn next_stripe(&self) -> usize {
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

impl Route {
    /// The lane for the next get (`get`) or put: among the lanes that
    /// offer it, the one that would finish it earliest in proportion to
    /// its weight (as [`Route::next_stripe`]); `None` when none offers it.
    #[inline]
    pub(super) fn next_rdma(&self, get: bool) -> Option<usize> {
        let mut best = None;
        let mut best_score = f64::INFINITY;
        for (i, l) in self.lanes.iter().enumerate() {
            let offers = if get { l.get } else { l.put };
            if !offers || l.rdma == 0 {
                continue;
            }
            let weight = if l.weight > 0.0 { l.weight } else { 1e-9 };
            let score = (l.rdma_striped as f64 + l.rdma as f64) / weight;
            if score < best_score {
                best = Some(i);
                best_score = score;
            }
        }
        best
    }
}

/// What is known of the way to a peer.
pub(super) enum Link {
    /// Not asked yet (resolved on first use).
    Unresolved,
    /// No module reaches it: the sentence saying why.
    Unreachable(String),
    /// The modules used for it.
    Reachable(Route),
}

/// One rank of the job, as this process sees it.
pub(super) struct Peer {
    /// How to reach it.
    pub(super) link: Link,
    /// Why the peer was lost, once it is.
    pub(super) failed: Option<String>,
    /// The reason is a placeholder ("a send failed") until the btl's
    /// `on_peer_failed` gives the real one.
    pub(super) failed_provisional: bool,
    /// Next sequence number of contexts `0..LOW_CONTEXTS` (the predefined
    /// communicators), for messages to this peer: no lookup per send.
    low_sequences: [u64; LOW_CONTEXTS],
    /// Next sequence number of the other contexts.
    sequences: HashMap<u32, u64, rustc_hash::FxBuildHasher>,
}

/// Contexts whose sequence numbers a [`Peer`] keeps in an array.
const LOW_CONTEXTS: usize = 2;

impl Peer {
    /// A peer not resolved yet.
    pub(super) fn new() -> Peer {
        Peer {
            link: Link::Unresolved,
            failed: None,
            failed_provisional: false,
            low_sequences: [0; LOW_CONTEXTS],
            sequences: HashMap::default(),
        }
    }

    /// The sequence number of the next message to this peer on `context`
    /// (0, 1, 2, … per context).
    #[inline]
    pub(super) fn next_sequence(&mut self, context: u32) -> u64 {
        let next = match self.low_sequences.get_mut(context as usize) {
            Some(next) => next,
            None => self.sequences.entry(context).or_insert(0),
        };
        let s = *next;
        *next += 1;
        s
    }
}

impl<T: Transport> Engine<T> {
    /// Resolves `peer` on first use: reads each btl's card, asks each of
    /// its modules, and keeps the best (see the crate docs).
    #[inline]
    pub(super) fn resolve(&mut self, peer: u32) -> Result<(), String> {
        match &self.peers[peer as usize].link {
            Link::Reachable(_) => Ok(()),
            _ => self.resolve_first(peer),
        }
    }

    /// [`Engine::resolve`] for a peer not known to be reachable.
    #[cold]
    #[inline(never)]
    fn resolve_first(&mut self, peer: u32) -> Result<(), String> {
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

    pub(super) fn compute_route(&mut self, peer: u32) -> Link {
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
        let mut route = self.select(reached);
        if peer == self.rank {
            for lane in &mut route.lanes {
                lane.loopback = self.modules[lane.module].info.flags & flags::LOOPBACK != 0;
            }
        }
        let text = self.describe_route(peer, &route);
        self.transport.log(verbosity::INFO, &text);
        Link::Reachable(route)
    }

    /// Builds a route from the modules that reach a peer (see the crate
    /// docs: exclusivity, then bandwidth weights and the eager list).
    pub(super) fn select(&self, reached: Vec<(usize, u64)>) -> Route {
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
                rdma: info(m).max_rdma_size,
                get: info(m).flags & flags::GET != 0 && info(m).max_rdma_size > 0,
                put: info(m).flags & flags::PUT != 0 && info(m).max_rdma_size > 0,
                rdma_striped: 0,
                loopback: false,
            })
            .collect();
        let all_get = lanes.iter().all(|l| l.get);
        let all_put = lanes.iter().all(|l| l.put);
        let min_rdma = lanes
            .iter()
            .map(|l| info(l.module).min_rdma_message)
            .max()
            .unwrap_or(0);
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
            all_get,
            all_put,
            min_rdma,
        }
    }

    pub(super) fn describe_route(&self, peer: u32, route: &Route) -> String {
        let lanes: Vec<String> = route
            .lanes
            .iter()
            .enumerate()
            .map(|(i, l)| {
                format!(
                    "{} (weight {:.2}{}{})",
                    self.modules[l.module].info.label,
                    l.weight,
                    if route.eager.contains(&i) {
                        ", eager"
                    } else {
                        ""
                    },
                    if l.loopback {
                        ", eager messages delivered during the send"
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
    pub(super) fn fail_peer(&mut self, peer: u32, reason: String, provisional: bool) {
        self.clear_for(peer);
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
                        q.source == peer as i32 && self.matcher.cancel_recv(RecvId(q.matcher_id(h)))
                    }
                    RecvPhase::Rendezvous { peer: p, .. } | RecvPhase::Get { peer: p, .. } => {
                        p == peer
                    }
                    RecvPhase::Done => false,
                },
            };
            if affected {
                self.fail_request(h, peer);
            }
        }
        for h in self.requests.light_posted_from(peer as i32) {
            if self.matcher.cancel_recv(RecvId(h)) {
                if let Some(full) = self.requests.promote(h) {
                    self.fail_request(full, peer);
                }
            }
        }
        self.ctrl.retain(|c| c.peer() != peer);
    }

    /// Completes request `h` with `PeerFailed` because of `peer`.
    pub(super) fn fail_request(&mut self, h: u64, peer: u32) {
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
    pub(super) fn send_failed(&mut self, peer: u32, m: usize) {
        let reason = format!("{} could not send to it", self.modules[m].info.label);
        self.fail_peer(peer, reason, true);
    }

    /// A btl answered `Failed` for a get/put (`what`) with `peer` on
    /// module `m`.
    pub(super) fn rdma_failed(&mut self, peer: u32, m: usize, what: &str) {
        let reason = format!("{} could not {what} its memory", self.modules[m].info.label);
        self.fail_peer(peer, reason, true);
    }
}

#[cfg(test)]
mod tests {
    use super::Peer;

    #[test]
    fn sequence_numbers_count_per_context_in_the_array_and_the_map() {
        let mut p = Peer::new();
        let got: Vec<u64> = [0, 0, 1, 7, 0, 7, 1, u32::MAX, 7]
            .iter()
            .map(|&c| p.next_sequence(c))
            .collect();
        assert_eq!(got, vec![0, 1, 0, 0, 2, 1, 1, 0, 2]);
    }
}
