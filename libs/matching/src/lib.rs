//! MPI message matching: which receive gets which message.
//!
//! [`Matcher`] is a pure data structure — no I/O, no threads, no locks —
//! that the pml drives: it calls [`Matcher::incoming`] with the header of
//! each message that arrives and [`Matcher::post_recv`] for each receive the
//! application posts, and delivers the data of the matches they return.
//!
//! # The rules (MPI 4.1 §3.5, §3.8)
//!
//! - A message matches a receive when they have the same **context id**
//!   (communicator), the receive's [`Source`] accepts the sender's rank and
//!   its [`Tag`] accepts the message's tag. [`Source::Any`] accepts every
//!   rank; [`Tag::Any`] accepts every tag ≥ 0 but **never a negative
//!   (internal) tag**.
//! - An arriving message matches the **oldest posted receive** that fits, in
//!   posting order; a receive being posted matches the **oldest unexpected
//!   message** that fits, in arrival order. Otherwise the message is queued
//!   as unexpected, or the receive as posted.
//! - **Non-overtaking:** messages from one sender on one context match in
//!   the order they were sent. Each carries a sequence number (0, 1, 2, …
//!   per sender and context, see [`Envelope::sequence`]); one that arrives
//!   early (a transport striping over several links can reorder) is held
//!   back, invisible to receives and probes, until all its predecessors have
//!   arrived. Then it is matched or queued, and the outcome is handed out
//!   by [`Matcher::next_released`].
//! - A message longer than the receive's buffer still matches; the
//!   [`Match`] says [`truncated`](Match::truncated) and its
//!   [`status`](Match::status) carries [`MatchError::Truncated`]
//!   (`MPI_ERR_TRUNCATE`).
//! - A probe ([`Matcher::probe`]) finds the message a receive would match,
//!   without taking it; a matched probe ([`Matcher::mprobe`]) takes it out
//!   of matching and leaves it to [`Matcher::take_unexpected`].
//! - Cancelling ([`Matcher::cancel_recv`]) removes a receive that has not
//!   matched yet; a matched receive cannot be cancelled.
//!
//! # Design
//!
//! Open MPI's ob1 keeps, per communicator and per peer, a queue of posted
//! receives and a queue of unexpected fragments, plus one queue of
//! wildcard receives per communicator. This matcher does the same, with
//! intrusive doubly-linked lists through four slabs (peers, contexts,
//! posted receives, unexpected messages), so that every node is removed in
//! O(1) and freed slots are reused — a steady state allocates nothing:
//!
//! - per (context, sender): the posted receives naming that sender, the
//!   unexpected messages from it (arrival order), the next expected
//!   sequence number and the held-back messages (sorted by sequence);
//! - per context: the `ANY_SOURCE` receives, and all its unexpected
//!   messages in arrival order (each unexpected message is in both lists);
//! - posted receives carry a posting stamp; an arriving message takes the
//!   first fitting receive of its sender's list and of the wildcard list
//!   and keeps the older of the two (the wildcard scan stops at the first
//!   stamp newer than the sender's candidate, and is skipped while no
//!   `ANY_SOURCE` receive is posted in any context);
//! - a receive naming its source scans that sender's unexpected list; an
//!   `ANY_SOURCE` receive scans the context's arrival list.
//!
//! (Context, sender) is found without hashing: the pair found last by one
//! compare, any other by two indexed loads (a context id below 4096, a
//! rank below 2^20; larger ones, and negative ranks, through an FxHash
//! map). The common cases — exact source and tag, a receive posted before
//! or after its message, no wildcards — cost that lookup and a few list
//! operations; a scan is as long as the number of
//! entries ahead that do not fit (other tags from the same sender, or
//! older wildcard receives with other tags).
//!
//! Costs: `incoming` and `post_recv` O(1) plus the scans above; `probe` and
//! `mprobe` the same as `post_recv`; `cancel_recv` O(posted receives) (it
//! searches by id, and cancelling is rare); `take_unexpected` O(1).

#![forbid(unsafe_code)]

mod queries;
mod slab;
#[cfg(test)]
mod tests;
mod types;

use std::cell::Cell;
use std::collections::hash_map::HashMap;
use std::collections::VecDeque;
use std::fmt;

use slab::{Links, List, Slab, NIL};
pub use types::{
    ContextId, Envelope, InOrder, Incoming, Match, MatchError, PostedRecv, RecvId, Source, Status,
    Tag, UnexpectedId, ANY_SOURCE, ANY_SOURCE_RAW, ANY_TAG, ANY_TAG_RAW,
};

/// The matcher's integer keys are not chosen by an adversary, so they are
/// hashed with FxHash (`rustc-hash`), much cheaper than SipHash.
type BuildKeyHasher = rustc_hash::FxBuildHasher;

/// Context ids below this are found by index (larger ones by hash).
const DIRECT_CONTEXTS: u32 = 4096;

/// Ranks below this are found by index in their context (larger and
/// negative ones by hash).
const DIRECT_RANKS: i32 = 1 << 20;

/// Whether `rank`'s peer is found by index.
#[inline]
fn direct_rank(rank: i32) -> bool {
    (0..DIRECT_RANKS).contains(&rank)
}

#[inline]
fn peer_key(context: ContextId, rank: i32) -> u64 {
    (u64::from(context.0) << 32) | u64::from(rank as u32)
}

/// One (context, sender) pair.
struct Peer {
    /// The context's slot.
    context: u32,
    rank: i32,
    /// The sequence number the next in-order message carries.
    expected: u64,
    /// Receives naming this sender, oldest first.
    posted: List,
    /// Unexpected messages from this sender, in arrival order.
    unexpected: List,
    /// Messages that arrived early: (sequence, unexpected slot), sorted by
    /// sequence, **highest first** (the next to release is at the end).
    held: Vec<(u64, u32)>,
}

/// One communicator (context id).
struct Context {
    /// `ANY_SOURCE` receives, oldest first.
    wild: List,
    /// All unexpected messages of the context, in arrival order.
    unexpected: List,
    /// The peers' slots (for [`Matcher::remove_context`]).
    peers: Vec<u32>,
    /// The slot of the peer of each rank below [`DIRECT_RANKS`] (NIL: none
    /// yet), found by index.
    ranks: Vec<u32>,
}

struct PostedNode {
    recv: PostedRecv,
    /// Posting order across all lists.
    stamp: u64,
    links: Links,
    /// The peer's slot (a receive naming its source) or the context's slot
    /// (an `ANY_SOURCE` receive).
    owner: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// In the peer's and the context's unexpected lists.
    Queued,
    /// Waiting for its predecessors; in the peer's `held`, in no list.
    Held,
    /// Taken out of matching by `mprobe`; in no list.
    Claimed,
}

struct UnexpectedNode<T> {
    envelope: Envelope,
    payload: T,
    /// The peer's slot.
    peer: u32,
    state: State,
    peer_links: Links,
    context_links: Links,
}

fn posted_links(n: &mut PostedNode) -> &mut Links {
    &mut n.links
}

fn peer_links<T>(n: &mut UnexpectedNode<T>) -> &mut Links {
    &mut n.peer_links
}

fn context_links<T>(n: &mut UnexpectedNode<T>) -> &mut Links {
    &mut n.context_links
}

/// What [`Matcher::remove_context`] discarded.
#[derive(Debug, PartialEq, Eq)]
pub struct RemovedContext<T> {
    /// The receives that were still posted, in posting order.
    pub posted: Vec<PostedRecv>,
    /// The messages that were waiting: the unexpected queue in arrival
    /// order, then held-back messages (per sender, by sequence). Messages
    /// claimed by [`Matcher::mprobe`] are not included: their handles stay
    /// valid.
    pub unexpected: Vec<(Envelope, T)>,
}

/// The matching engine of one process: posted receives, unexpected
/// messages and per-sender sequence state of every communicator. See the
/// [module documentation](self) for the rules and the design.
///
/// `T` is what the caller keeps with each unexpected message (its eager
/// data, a rendezvous handle, a fragment index…); the matcher hands it back
/// with the match. It defaults to `()`.
///
/// Communicators need no registration: the first receive or message
/// naming a context creates its state (probes and queries create nothing).
/// [`Matcher::remove_context`] drops it when the communicator is freed.
///
/// # Example
///
/// ```
/// use oxmpi_matching::*;
///
/// let mut m: Matcher<Vec<u8>> = Matcher::new();
/// let world = ContextId(0);
/// // Rank 1 sent two messages; the second arrives first (another link).
/// let msg = |sequence, tag: i32, data: &[u8]| {
///     let len = data.len();
///     let e = Envelope { context: world, source: 1, tag, sequence, len, sync: false };
///     (e, data.to_vec())
/// };
/// let (e1, p1) = msg(1, 7, b"second");
/// assert_eq!(m.incoming(e1, p1), Incoming::HeldBack);
/// // A receive for tag 7 from anyone, with a 4-byte buffer.
/// let r = PostedRecv {
///     context: world,
///     source: ANY_SOURCE,
///     tag: Tag::Value(7),
///     capacity: 4,
///     id: RecvId(42),
/// };
/// assert!(m.post_recv(r).is_none()); // nothing visible yet: posted
/// let (e0, p0) = msg(0, 7, b"first");
/// let Incoming::Matched(got) = m.incoming(e0, p0) else { panic!() };
/// assert_eq!((got.recv, got.payload.as_slice()), (RecvId(42), &b"first"[..]));
/// assert!(got.truncated()); // 5 bytes for a 4-byte buffer: MPI_ERR_TRUNCATE
/// assert_eq!(got.status().count, 4);
/// // Sequence 0 released sequence 1: it is queued as unexpected now.
/// let Some(Incoming::Queued(_)) = m.next_released() else { panic!() };
/// assert_eq!(m.probe(world, Source::Rank(1), ANY_TAG).unwrap().sequence, 1);
/// ```
pub struct Matcher<T = ()> {
    /// Peers of ranks outside `0..DIRECT_RANKS` (the others are found by
    /// index in their context's `ranks`).
    peer_index: HashMap<u64, u32, BuildKeyHasher>,
    /// The slot of each context id below [`DIRECT_CONTEXTS`] (NIL: none),
    /// found by index.
    context_table: Vec<u32>,
    /// Contexts of ids from [`DIRECT_CONTEXTS`] up.
    context_index: HashMap<u32, u32, BuildKeyHasher>,
    /// The ([`peer_key`], slot) of the peer found last: receives and
    /// messages come in runs from one sender, and one compare costs less
    /// than the indexed loads. `None` after a context is removed.
    last_peer: Cell<Option<(u64, u32)>>,
    peers: Slab<Peer>,
    contexts: Slab<Context>,
    posted: Slab<PostedNode>,
    unexpected: Slab<UnexpectedNode<T>>,
    next_stamp: u64,
    /// `ANY_SOURCE` receives posted, in all contexts: while there are
    /// none, an arriving message skips the wildcard list.
    wild_posted: usize,
    released: VecDeque<Incoming<T>>,
    queued: usize,
    held: usize,
    claimed: usize,
}

impl<T> Default for Matcher<T> {
    fn default() -> Self {
        Matcher::new()
    }
}

impl<T> fmt::Debug for Matcher<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Matcher")
            .field("contexts", &self.contexts.len())
            .field("peers", &self.peers.len())
            .field("posted", &self.posted.len())
            .field("unexpected", &self.queued)
            .field("held_back", &self.held)
            .field("claimed", &self.claimed)
            .field("released", &self.released.len())
            .finish()
    }
}

impl<T> Matcher<T> {
    /// An empty matcher: no communicators, nothing posted or queued.
    pub fn new() -> Matcher<T> {
        Matcher {
            peer_index: HashMap::default(),
            context_table: Vec::new(),
            context_index: HashMap::default(),
            last_peer: Cell::new(None),
            peers: Slab::new(),
            contexts: Slab::new(),
            posted: Slab::new(),
            unexpected: Slab::new(),
            next_stamp: 0,
            wild_posted: 0,
            released: VecDeque::new(),
            queued: 0,
            held: 0,
            claimed: 0,
        }
    }

    // ----- the two matching operations -----

    /// Posts a receive. If an unexpected message fits (the **oldest** one in
    /// arrival order), the receive matches it at once: the message leaves
    /// the unexpected queue and the match (with its payload, and
    /// `truncated` if it is longer than `recv.capacity`) is returned, and
    /// the receive is not posted. Otherwise the receive is posted (after
    /// every receive posted before it) and `None` is returned.
    ///
    /// Held-back messages (which arrived before their predecessors) are not
    /// candidates.
    pub fn post_recv(&mut self, recv: PostedRecv) -> Option<Match<T>> {
        match recv.source {
            Source::Rank(rank) => {
                let p = self.peer_slot(recv.context, rank);
                let found = self.scan_peer_unexpected(p, recv.tag);
                if found != NIL {
                    let (envelope, payload) = self.remove_queued(found);
                    return Some(Match::new(&recv, envelope, payload));
                }
                let stamp = self.stamp();
                let (i, _) = self.posted.insert(PostedNode {
                    recv,
                    stamp,
                    links: self.peers[p].posted.tail_links(),
                    owner: p,
                });
                self.peers[p]
                    .posted
                    .link_last(&mut self.posted, i, posted_links);
                None
            }
            Source::Any => {
                let c = self.context_slot(recv.context);
                let found = self.scan_context_unexpected(c, recv.tag);
                if found != NIL {
                    let (envelope, payload) = self.remove_queued(found);
                    return Some(Match::new(&recv, envelope, payload));
                }
                let stamp = self.stamp();
                let (i, _) = self.posted.insert(PostedNode {
                    recv,
                    stamp,
                    links: self.contexts[c].wild.tail_links(),
                    owner: c,
                });
                self.contexts[c]
                    .wild
                    .link_last(&mut self.posted, i, posted_links);
                self.wild_posted += 1;
                None
            }
        }
    }

    /// Handles an arriving message (its header and the caller's `payload`).
    ///
    /// - In order (`envelope.sequence` is the sequence expected from that
    ///   sender on that context): it matches the **oldest** posted receive
    ///   that fits, in posting order ([`Incoming::Matched`]; the receive is
    ///   no longer posted), or is queued as unexpected
    ///   ([`Incoming::Queued`]). Then any held-back messages it was the
    ///   missing predecessor of are matched or queued in sequence order,
    ///   and their outcomes wait in [`Matcher::next_released`] — **drain it
    ///   after every call**.
    /// - Early (a higher sequence): held back ([`Incoming::HeldBack`]).
    /// - Already seen (a lower sequence, or one already held back):
    ///   [`Incoming::Duplicate`], nothing stored.
    pub fn incoming(&mut self, envelope: Envelope, payload: T) -> Incoming<T> {
        self.incoming_keeping(envelope, payload, |_| {})
    }

    /// [`Matcher::incoming`], calling `keep` on the payload first when the
    /// message is not in order (it is then stored, so a payload that only
    /// borrowed the caller's bytes must take a copy of them): the caller
    /// learns whether to copy without a second lookup of the sender.
    #[inline]
    pub fn incoming_keeping(
        &mut self,
        envelope: Envelope,
        mut payload: T,
        keep: impl FnOnce(&mut T),
    ) -> Incoming<T> {
        let p = self.peer_slot(envelope.context, envelope.source);
        let peer = &mut self.peers[p];
        if envelope.sequence != peer.expected {
            keep(&mut payload);
            return self.out_of_order(p, envelope, payload);
        }
        peer.expected += 1;
        let outcome = self.deliver(p, envelope, payload);
        if !self.peers[p].held.is_empty() {
            self.release(p);
        }
        outcome
    }

    /// The common case of [`Matcher::incoming`] without moving a payload:
    /// when the message is the next in order from its sender and nothing
    /// of that sender is held back, it is matched with the oldest posted
    /// receive that fits ([`InOrder::Matched`]: that receive's id and
    /// capacity) or queued with the payload `store` makes
    /// ([`InOrder::Queued`]), as `incoming` would. Otherwise nothing
    /// changes ([`InOrder::NotInOrder`]): the caller then hands the message
    /// to [`Matcher::incoming`] (or [`Matcher::incoming_keeping`]).
    #[inline]
    pub fn arrive_in_order(&mut self, envelope: &Envelope, store: impl FnOnce() -> T) -> InOrder {
        let p = self.peer_slot(envelope.context, envelope.source);
        let peer = &mut self.peers[p];
        if envelope.sequence != peer.expected || !peer.held.is_empty() {
            return InOrder::NotInOrder;
        }
        peer.expected += 1;
        let r = self.find_posted(p, envelope);
        if r == NIL {
            return InOrder::Queued(self.queue(p, *envelope, store()));
        }
        let recv = self.remove_posted(r);
        InOrder::Matched {
            recv: recv.id,
            capacity: recv.capacity,
        }
    }

    /// The next outcome of a held-back message that became in order
    /// (only [`Incoming::Matched`] or [`Incoming::Queued`]), oldest first;
    /// `None` when there is none. The matcher's queues already reflect
    /// these outcomes; this only reports them.
    pub fn next_released(&mut self) -> Option<Incoming<T>> {
        self.released.pop_front()
    }

    /// How many released outcomes wait in [`Matcher::next_released`].
    pub fn released_len(&self) -> usize {
        self.released.len()
    }

    // ----- internals -----

    #[inline]
    fn stamp(&mut self) -> u64 {
        let s = self.next_stamp;
        self.next_stamp += 1;
        s
    }

    /// The slot of `context`, created if new.
    #[inline]
    fn context_slot(&mut self, context: ContextId) -> u32 {
        match self.find_context(context) {
            Some(c) => c,
            None => self.new_context(context),
        }
    }

    #[cold]
    fn new_context(&mut self, context: ContextId) -> u32 {
        let (c, _) = self.contexts.insert(Context {
            wild: List::EMPTY,
            unexpected: List::EMPTY,
            peers: Vec::new(),
            ranks: Vec::new(),
        });
        if context.0 < DIRECT_CONTEXTS {
            let i = context.0 as usize;
            if self.context_table.len() <= i {
                self.context_table.resize(i + 1, NIL);
            }
            self.context_table[i] = c;
        } else {
            self.context_index.insert(context.0, c);
        }
        c
    }

    /// The slot of `context`, if it exists: by index below
    /// [`DIRECT_CONTEXTS`], by hash above.
    #[inline]
    fn find_context(&self, context: ContextId) -> Option<u32> {
        match self.context_table.get(context.0 as usize) {
            Some(&c) => (c != NIL).then_some(c),
            None if context.0 < DIRECT_CONTEXTS => None,
            None => self.context_index.get(&context.0).copied(),
        }
    }

    /// The slot of (`context`, `rank`), created if new.
    #[inline]
    fn peer_slot(&mut self, context: ContextId, rank: i32) -> u32 {
        match self.find_peer(context, rank) {
            Some(p) => p,
            None => self.new_peer(context, rank),
        }
    }

    /// The slot of (`context`, `rank`), if it exists: the peer found last
    /// by one compare, any other by two indexed loads (a rank in
    /// `0..DIRECT_RANKS` of a context below [`DIRECT_CONTEXTS`]; no
    /// hashing).
    #[inline(always)]
    fn find_peer(&self, context: ContextId, rank: i32) -> Option<u32> {
        let key = peer_key(context, rank);
        if let Some((k, p)) = self.last_peer.get() {
            if k == key {
                return Some(p);
            }
        }
        let p = self.index_peer(context, rank)?;
        self.last_peer.set(Some((key, p)));
        Some(p)
    }

    /// [`Matcher::find_peer`] without the last-peer cache.
    #[inline(never)]
    fn index_peer(&self, context: ContextId, rank: i32) -> Option<u32> {
        let c = self.find_context(context)?;
        if direct_rank(rank) {
            let p = *self.contexts[c].ranks.get(rank as usize)?;
            (p != NIL).then_some(p)
        } else {
            self.peer_index.get(&peer_key(context, rank)).copied()
        }
    }

    #[cold]
    fn new_peer(&mut self, context: ContextId, rank: i32) -> u32 {
        let c = self.context_slot(context);
        let (p, _) = self.peers.insert(Peer {
            context: c,
            rank,
            expected: 0,
            posted: List::EMPTY,
            unexpected: List::EMPTY,
            held: Vec::new(),
        });
        let ctx = &mut self.contexts[c];
        ctx.peers.push(p);
        if direct_rank(rank) {
            let i = rank as usize;
            if ctx.ranks.len() <= i {
                ctx.ranks.resize(i + 1, NIL);
            }
            ctx.ranks[i] = p;
        } else {
            self.peer_index.insert(peer_key(context, rank), p);
        }
        p
    }

    /// The oldest queued message from peer `p` whose tag `tag` accepts, or NIL.
    #[inline]
    fn scan_peer_unexpected(&self, p: u32, tag: Tag) -> u32 {
        let mut i = self.peers[p].unexpected.head;
        while i != NIL {
            let node = &self.unexpected[i];
            if tag.matches(node.envelope.tag) {
                return i;
            }
            i = node.peer_links.next;
        }
        NIL
    }

    /// The oldest queued message of context `c` whose tag `tag` accepts, or NIL.
    #[inline]
    fn scan_context_unexpected(&self, c: u32, tag: Tag) -> u32 {
        let mut i = self.contexts[c].unexpected.head;
        while i != NIL {
            let node = &self.unexpected[i];
            if tag.matches(node.envelope.tag) {
                return i;
            }
            i = node.context_links.next;
        }
        NIL
    }

    /// The oldest queued message fitting (`context`, `source`, `tag`),
    /// creating nothing.
    fn find_unexpected(&self, context: ContextId, source: Source, tag: Tag) -> Option<u32> {
        let i = match source {
            Source::Rank(rank) => {
                let p = self.find_peer(context, rank)?;
                self.scan_peer_unexpected(p, tag)
            }
            Source::Any => {
                let c = self.find_context(context)?;
                self.scan_context_unexpected(c, tag)
            }
        };
        (i != NIL).then_some(i)
    }

    /// The oldest posted receive that fits `envelope` (from peer `p`), or NIL.
    #[inline(always)]
    fn find_posted(&self, p: u32, envelope: &Envelope) -> u32 {
        let peer = &self.peers[p];
        let mut best = NIL;
        let mut best_stamp = u64::MAX;
        let mut i = peer.posted.head;
        while i != NIL {
            let node = &self.posted[i];
            if node.recv.tag.matches(envelope.tag) {
                best = i;
                best_stamp = node.stamp;
                break;
            }
            i = node.links.next;
        }
        if self.wild_posted == 0 {
            return best;
        }
        let mut i = self.contexts[peer.context].wild.head;
        while i != NIL {
            let node = &self.posted[i];
            if node.stamp > best_stamp {
                break;
            }
            if node.recv.tag.matches(envelope.tag) {
                return i;
            }
            i = node.links.next;
        }
        best
    }

    /// Unlinks and frees posted receive `i`.
    #[inline(always)]
    fn remove_posted(&mut self, i: u32) -> PostedRecv {
        // Out of the slab first, then out of its list: one look-up of the
        // node instead of three.
        let node = self.posted.remove(i);
        match node.recv.source {
            Source::Rank(_) => {
                self.peers[node.owner]
                    .posted
                    .close_gap(&mut self.posted, node.links, posted_links)
            }
            Source::Any => {
                self.contexts[node.owner].wild.close_gap(
                    &mut self.posted,
                    node.links,
                    posted_links,
                );
                self.wild_posted -= 1;
            }
        }
        node.recv
    }

    /// Matches an in-order message from peer `p`, or queues it.
    #[inline]
    fn deliver(&mut self, p: u32, envelope: Envelope, payload: T) -> Incoming<T> {
        let r = self.find_posted(p, &envelope);
        if r != NIL {
            let recv = self.remove_posted(r);
            return Incoming::Matched(Match::new(&recv, envelope, payload));
        }
        Incoming::Queued(self.queue(p, envelope, payload))
    }

    /// Queues an in-order message from peer `p` that matched nothing.
    #[inline]
    fn queue(&mut self, p: u32, envelope: Envelope, payload: T) -> UnexpectedId {
        let (i, generation) = self.unexpected.insert(UnexpectedNode {
            envelope,
            payload,
            peer: p,
            state: State::Queued,
            peer_links: Links::UNLINKED,
            context_links: Links::UNLINKED,
        });
        self.link_queued(p, i);
        UnexpectedId {
            index: i,
            generation,
        }
    }

    /// Appends unexpected node `i` (from peer `p`) to its two queues.
    #[inline]
    fn link_queued(&mut self, p: u32, i: u32) {
        let peer = &mut self.peers[p];
        peer.unexpected
            .push_back(&mut self.unexpected, i, peer_links::<T>);
        self.contexts[peer.context].unexpected.push_back(
            &mut self.unexpected,
            i,
            context_links::<T>,
        );
        self.queued += 1;
    }

    /// Takes queued node `i` out of its two queues (the node stays).
    #[inline]
    fn unlink_queued(&mut self, i: u32) {
        let p = self.unexpected[i].peer;
        let peer = &mut self.peers[p];
        peer.unexpected
            .unlink(&mut self.unexpected, i, peer_links::<T>);
        self.contexts[peer.context]
            .unexpected
            .unlink(&mut self.unexpected, i, context_links::<T>);
        self.queued -= 1;
    }

    /// Unlinks and frees queued node `i`.
    #[inline]
    fn remove_queued(&mut self, i: u32) -> (Envelope, T) {
        // As `unlink_queued`, with the node out of the slab first.
        let node = self.unexpected.remove(i);
        let peer = &mut self.peers[node.peer];
        peer.unexpected
            .close_gap(&mut self.unexpected, node.peer_links, peer_links::<T>);
        self.contexts[peer.context].unexpected.close_gap(
            &mut self.unexpected,
            node.context_links,
            context_links::<T>,
        );
        self.queued -= 1;
        (node.envelope, node.payload)
    }

    /// A message whose sequence is not the expected one: hold it back or
    /// refuse it.
    #[cold]
    fn out_of_order(&mut self, p: u32, envelope: Envelope, payload: T) -> Incoming<T> {
        let peer = &self.peers[p];
        let expected = peer.expected;
        if envelope.sequence < expected {
            return Incoming::Duplicate {
                envelope,
                payload,
                expected,
            };
        }
        // `held` is sorted highest sequence first.
        match peer
            .held
            .binary_search_by(|&(s, _)| envelope.sequence.cmp(&s))
        {
            Ok(_) => Incoming::Duplicate {
                envelope,
                payload,
                expected,
            },
            Err(pos) => {
                let (i, _) = self.unexpected.insert(UnexpectedNode {
                    envelope,
                    payload,
                    peer: p,
                    state: State::Held,
                    peer_links: Links::UNLINKED,
                    context_links: Links::UNLINKED,
                });
                self.peers[p].held.insert(pos, (envelope.sequence, i));
                self.held += 1;
                Incoming::HeldBack
            }
        }
    }

    /// Delivers peer `p`'s held-back messages that are now in order.
    fn release(&mut self, p: u32) {
        loop {
            let peer = &mut self.peers[p];
            let Some(&(sequence, i)) = peer.held.last() else {
                return;
            };
            if sequence != peer.expected {
                return;
            }
            peer.held.pop();
            peer.expected += 1;
            self.held -= 1;
            let envelope = self.unexpected[i].envelope;
            let r = self.find_posted(p, &envelope);
            let outcome = if r != NIL {
                let recv = self.remove_posted(r);
                let node = self.unexpected.remove(i);
                Incoming::Matched(Match::new(&recv, node.envelope, node.payload))
            } else {
                self.unexpected[i].state = State::Queued;
                self.link_queued(p, i);
                Incoming::Queued(UnexpectedId {
                    index: i,
                    generation: self.unexpected.generation(i),
                })
            };
            self.released.push_back(outcome);
        }
    }
}

/// Appends the slots of `list` (following `links`) to `out`.
fn collect_list<N>(list: &List, slab: &Slab<N>, links: fn(&N) -> Links, out: &mut Vec<u32>) {
    let mut i = list.head;
    while i != NIL {
        out.push(i);
        i = links(&slab[i]).next;
    }
}
