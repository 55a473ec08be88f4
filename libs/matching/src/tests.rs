//! Unit tests of every matching rule, and the property test against a naive
//! reference model. This module holds the helpers they share (receives,
//! messages with their senders' sequence numbers, outcome checks and the
//! matcher's consistency check); the tests are in [`ordering`] (which
//! receive and which message match, and in what order), [`operations`]
//! (probe, cancel, truncation, volume, contexts) and [`model`] (the
//! property test).

mod model;
mod operations;
mod ordering;

use std::collections::HashMap;
use std::fmt::Debug;

use super::*;

const C0: ContextId = ContextId(0);
const C1: ContextId = ContextId(1);

fn recv(context: ContextId, source: Source, tag: Tag, capacity: usize, id: u64) -> PostedRecv {
    PostedRecv {
        context,
        source,
        tag,
        capacity,
        id: RecvId(id),
    }
}

/// Numbers messages per (context, source), as senders do.
#[derive(Default)]
struct Senders {
    next: HashMap<(ContextId, i32), u64>,
}

impl Senders {
    fn msg(&mut self, context: ContextId, source: i32, tag: i32, len: usize) -> Envelope {
        let seq = self.next.entry((context, source)).or_insert(0);
        let sequence = *seq;
        *seq += 1;
        Envelope {
            context,
            source,
            tag,
            sequence,
            len,
            sync: false,
        }
    }
}

#[track_caller]
fn matched<T: Debug>(outcome: Incoming<T>) -> Match<T> {
    match outcome {
        Incoming::Matched(m) => m,
        other => panic!("expected a match, got {other:?}"),
    }
}

#[track_caller]
fn queued<T: Debug>(outcome: Incoming<T>) -> UnexpectedId {
    match outcome {
        Incoming::Queued(id) => id,
        other => panic!("expected the message to be queued, got {other:?}"),
    }
}

impl<T> Matcher<T> {
    /// Checks every structural invariant; panics on the first broken one.
    fn check(&self) {
        fn walk<N>(list: &List, slab: &Slab<N>, links: fn(&N) -> Links) -> Vec<u32> {
            let mut out = Vec::new();
            let mut prev = NIL;
            let mut i = list.head;
            while i != NIL {
                assert_eq!(links(&slab[i]).prev, prev, "broken prev link");
                out.push(i);
                prev = i;
                i = links(&slab[i]).next;
            }
            assert_eq!(list.tail, prev, "tail is not the last node");
            out
        }
        let (mut posted, mut queued, mut held, mut wild_posted) = (0, 0, 0, 0);
        let contexts: Vec<(u32, u32)> = self
            .context_table
            .iter()
            .enumerate()
            .filter(|&(_, &c)| c != NIL)
            .map(|(id, &c)| (id as u32, c))
            .chain(self.context_index.iter().map(|(&id, &c)| (id, c)))
            .collect();
        assert_eq!(contexts.len(), self.contexts.len());
        let indexed: usize = contexts
            .iter()
            .map(|&(_, c)| self.contexts[c].ranks.iter().filter(|&&p| p != NIL).count())
            .sum();
        assert_eq!(indexed + self.peer_index.len(), self.peers.len());
        for &(ctx_id, c) in &contexts {
            let ctx = &self.contexts[c];
            let wild = walk(&ctx.wild, &self.posted, |n| n.links);
            for w in wild.windows(2) {
                assert!(self.posted[w[0]].stamp < self.posted[w[1]].stamp);
            }
            for &i in &wild {
                let n = &self.posted[i];
                assert_eq!(n.recv.source, Source::Any);
                assert_eq!(n.recv.context.0, ctx_id);
                assert_eq!(n.owner, c);
            }
            posted += wild.len();
            wild_posted += wild.len();
            let unex = walk(&ctx.unexpected, &self.unexpected, |n| n.context_links);
            for &i in &unex {
                let n = &self.unexpected[i];
                assert_eq!(n.state, State::Queued);
                assert_eq!(n.envelope.context.0, ctx_id);
                assert_eq!(self.peers[n.peer].context, c);
            }
            queued += unex.len();
            let mut per_peer = 0;
            for &p in &ctx.peers {
                let peer = &self.peers[p];
                assert_eq!(peer.context, c);
                assert_eq!(self.find_peer(ContextId(ctx_id), peer.rank), Some(p));
                let list = walk(&peer.posted, &self.posted, |n| n.links);
                for w in list.windows(2) {
                    assert!(self.posted[w[0]].stamp < self.posted[w[1]].stamp);
                }
                for &i in &list {
                    let n = &self.posted[i];
                    assert_eq!(n.recv.source, Source::Rank(peer.rank));
                    assert_eq!(n.recv.context.0, ctx_id);
                    assert_eq!(n.owner, p);
                }
                posted += list.len();
                let list = walk(&peer.unexpected, &self.unexpected, |n| n.peer_links);
                for &i in &list {
                    assert_eq!(self.unexpected[i].peer, p);
                    assert_eq!(self.unexpected[i].state, State::Queued);
                    assert_eq!(self.unexpected[i].envelope.source, peer.rank);
                }
                per_peer += list.len();
                for w in peer.held.windows(2) {
                    assert!(w[0].0 > w[1].0, "held back not sorted highest first");
                }
                for &(seq, i) in &peer.held {
                    assert!(seq > peer.expected);
                    let n = &self.unexpected[i];
                    assert_eq!(n.state, State::Held);
                    assert_eq!(n.envelope.sequence, seq);
                }
                held += peer.held.len();
            }
            assert_eq!(per_peer, unex.len(), "peer and context queues disagree");
        }
        assert_eq!(posted, self.posted.len(), "a posted receive is in no list");
        assert_eq!(
            wild_posted, self.wild_posted,
            "the count of ANY_SOURCE receives is off"
        );
        assert_eq!(queued, self.queued);
        assert_eq!(held, self.held);
        assert_eq!(
            self.unexpected.len(),
            self.queued + self.held + self.claimed,
            "an unexpected node is lost"
        );
    }
}
