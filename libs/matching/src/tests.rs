//! Unit tests of every matching rule, and the property test against a naive
//! reference model.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;

use proptest::prelude::*;

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
        let (mut posted, mut queued, mut held) = (0, 0, 0);
        assert_eq!(self.context_index.len(), self.contexts.len());
        assert_eq!(self.peer_index.len(), self.peers.len());
        for (&ctx_id, &c) in &self.context_index {
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
                assert_eq!(
                    self.peer_index.get(&peer_key(ContextId(ctx_id), peer.rank)),
                    Some(&p)
                );
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
        assert_eq!(queued, self.queued);
        assert_eq!(held, self.held);
        assert_eq!(
            self.unexpected.len(),
            self.queued + self.held + self.claimed,
            "an unexpected node is lost"
        );
    }
}

// ----- basic matching -----

#[test]
fn exact_match_receive_posted_first() {
    let mut m = Matcher::new();
    let mut s = Senders::default();
    assert!(m
        .post_recv(recv(C0, Source::Rank(1), Tag::Value(5), 64, 7))
        .is_none());
    assert_eq!(m.posted_len(), 1);
    let got = matched(m.incoming(s.msg(C0, 1, 5, 64), "data"));
    assert_eq!(got.recv, RecvId(7));
    assert_eq!(got.payload, "data");
    assert_eq!((got.envelope.source, got.envelope.tag), (1, 5));
    assert!(!got.truncated);
    assert_eq!(
        got.status(),
        Status {
            source: 1,
            tag: 5,
            count: 64,
            error: None,
            cancelled: false
        }
    );
    assert_eq!(m.posted_len(), 0);
    assert_eq!(m.unexpected_len(), 0);
    m.check();
}

#[test]
fn exact_match_message_first() {
    let mut m = Matcher::new();
    let mut s = Senders::default();
    let id = queued(m.incoming(s.msg(C0, 3, 9, 10), 42u32));
    assert_eq!(m.unexpected_len(), 1);
    assert_eq!(m.unexpected(id).map(|(e, p)| (e.tag, *p)), Some((9, 42)));
    let got = m
        .post_recv(recv(C0, Source::Rank(3), Tag::Value(9), 10, 1))
        .expect("the unexpected message matches");
    assert_eq!((got.recv, got.payload), (RecvId(1), 42));
    assert_eq!(m.unexpected_len(), 0);
    assert_eq!(m.posted_len(), 0);
    assert!(
        m.unexpected(id).is_none(),
        "the handle is stale once matched"
    );
    assert!(m.take_unexpected(id).is_none());
    m.check();
}

#[test]
fn a_receive_for_another_source_or_tag_does_not_match() {
    let mut m = Matcher::new();
    let mut s = Senders::default();
    m.post_recv(recv(C0, Source::Rank(1), Tag::Value(5), 8, 1));
    queued(m.incoming(s.msg(C0, 2, 5, 8), ()));
    queued(m.incoming(s.msg(C0, 1, 6, 8), ()));
    assert_eq!(m.posted_len(), 1);
    assert_eq!(m.unexpected_len(), 2);
    m.check();
}

// ----- oldest wins on both sides -----

#[test]
fn oldest_posted_receive_wins_in_posting_order() {
    let mut m = Matcher::new();
    let mut s = Senders::default();
    // Specific, wildcard, specific, wildcard: all fit a message from 0 tag 1.
    m.post_recv(recv(C0, Source::Rank(0), Tag::Value(1), 8, 1));
    m.post_recv(recv(C0, Source::Any, Tag::Any, 8, 2));
    m.post_recv(recv(C0, Source::Rank(0), Tag::Any, 8, 3));
    m.post_recv(recv(C0, Source::Any, Tag::Value(1), 8, 4));
    let order: Vec<u64> = (0..4)
        .map(|_| matched(m.incoming(s.msg(C0, 0, 1, 8), ())).recv.0)
        .collect();
    assert_eq!(order, [1, 2, 3, 4]);
    m.check();
}

#[test]
fn an_older_wildcard_receive_beats_a_newer_exact_one() {
    let mut m = Matcher::new();
    let mut s = Senders::default();
    m.post_recv(recv(C0, Source::Any, Tag::Any, 8, 1));
    m.post_recv(recv(C0, Source::Rank(4), Tag::Value(2), 8, 2));
    assert_eq!(matched(m.incoming(s.msg(C0, 4, 2, 8), ())).recv, RecvId(1));
    assert_eq!(matched(m.incoming(s.msg(C0, 4, 2, 8), ())).recv, RecvId(2));
}

#[test]
fn the_oldest_fitting_receive_is_found_past_non_fitting_ones() {
    let mut m = Matcher::new();
    let mut s = Senders::default();
    m.post_recv(recv(C0, Source::Any, Tag::Value(7), 8, 1));
    m.post_recv(recv(C0, Source::Rank(0), Tag::Value(7), 8, 2));
    m.post_recv(recv(C0, Source::Rank(0), Tag::Value(3), 8, 3));
    m.post_recv(recv(C0, Source::Any, Tag::Value(3), 8, 4));
    assert_eq!(matched(m.incoming(s.msg(C0, 0, 3, 8), ())).recv, RecvId(3));
    assert_eq!(matched(m.incoming(s.msg(C0, 0, 3, 8), ())).recv, RecvId(4));
    assert_eq!(matched(m.incoming(s.msg(C0, 0, 7, 8), ())).recv, RecvId(1));
    assert_eq!(matched(m.incoming(s.msg(C0, 0, 7, 8), ())).recv, RecvId(2));
    m.check();
}

#[test]
fn oldest_unexpected_message_wins_in_arrival_order() {
    let mut m = Matcher::new();
    let mut s = Senders::default();
    m.incoming(s.msg(C0, 2, 1, 8), "a");
    m.incoming(s.msg(C0, 0, 1, 8), "b");
    m.incoming(s.msg(C0, 2, 2, 8), "c");
    m.incoming(s.msg(C0, 1, 1, 8), "d");
    m.incoming(s.msg(C0, 0, 2, 8), "e");
    let take = |m: &mut Matcher<&'static str>, source, tag| {
        m.post_recv(recv(C0, source, tag, 8, 0)).unwrap().payload
    };
    // ANY_SOURCE + tag 2: the oldest tag-2 message over all senders.
    assert_eq!(take(&mut m, Source::Any, Tag::Value(2)), "c");
    // Rank 0 + ANY_TAG: rank 0's oldest.
    assert_eq!(take(&mut m, Source::Rank(0), Tag::Any), "b");
    // ANY + ANY: the oldest left.
    assert_eq!(take(&mut m, Source::Any, Tag::Any), "a");
    assert_eq!(take(&mut m, Source::Any, Tag::Any), "d");
    assert_eq!(take(&mut m, Source::Any, Tag::Any), "e");
    assert!(m.post_recv(recv(C0, Source::Any, Tag::Any, 8, 0)).is_none());
    m.check();
}

// ----- wildcards and internal tags -----

#[test]
fn wildcards_match_as_mpi_says() {
    let mut m = Matcher::new();
    let mut s = Senders::default();
    m.post_recv(recv(C0, Source::Any, Tag::Value(3), 8, 1));
    m.post_recv(recv(C0, Source::Rank(2), Tag::Any, 8, 2));
    m.post_recv(recv(C0, Source::Any, Tag::Any, 8, 3));
    // rank 5 tag 4: only ANY/ANY fits.
    assert_eq!(matched(m.incoming(s.msg(C0, 5, 4, 8), ())).recv, RecvId(3));
    // rank 2 tag 4: rank 2/ANY_TAG.
    assert_eq!(matched(m.incoming(s.msg(C0, 2, 4, 8), ())).recv, RecvId(2));
    // rank 9 tag 3: ANY_SOURCE/3.
    assert_eq!(matched(m.incoming(s.msg(C0, 9, 3, 8), ())).recv, RecvId(1));
    m.check();
}

#[test]
fn any_tag_never_matches_internal_negative_tags() {
    let mut m = Matcher::new();
    let mut s = Senders::default();
    // A posted ANY_TAG receive does not take an internal message…
    m.post_recv(recv(C0, Source::Any, Tag::Any, 8, 1));
    m.post_recv(recv(C0, Source::Rank(0), Tag::Any, 8, 2));
    queued(m.incoming(s.msg(C0, 0, -10, 8), ()));
    assert_eq!(m.posted_len(), 2);
    // …nor does a new ANY_TAG receive or probe see it…
    assert!(m.probe(C0, Source::Any, Tag::Any).is_none());
    assert!(m.probe(C0, Source::Rank(0), Tag::Any).is_none());
    assert!(m.post_recv(recv(C0, Source::Any, Tag::Any, 8, 3)).is_none());
    // …but a receive for exactly that tag does, from any source too.
    assert_eq!(m.probe(C0, Source::Any, Tag::Value(-10)).unwrap().tag, -10);
    let got = m
        .post_recv(recv(C0, Source::Any, Tag::Value(-10), 8, 4))
        .unwrap();
    assert_eq!(got.envelope.tag, -10);
    // And a posted internal receive takes the next internal message.
    m.post_recv(recv(C0, Source::Rank(0), Tag::Value(-11), 8, 5));
    assert_eq!(
        matched(m.incoming(s.msg(C0, 0, -11, 8), ())).recv,
        RecvId(5)
    );
    // A user message goes to the oldest ANY_TAG receive.
    assert_eq!(matched(m.incoming(s.msg(C0, 0, 0, 8), ())).recv, RecvId(1));
    m.check();
}

#[test]
fn contexts_isolate_communicators() {
    let mut m = Matcher::new();
    let mut s = Senders::default();
    m.post_recv(recv(C0, Source::Any, Tag::Any, 8, 1));
    m.post_recv(recv(C0, Source::Rank(0), Tag::Value(1), 8, 2));
    // Same source, tag and sequence 0 on another context: no match.
    queued(m.incoming(s.msg(C1, 0, 1, 8), ()));
    assert_eq!(m.posted_len(), 2);
    assert!(m.probe(C0, Source::Any, Tag::Any).is_none());
    assert!(m.probe(C1, Source::Any, Tag::Any).is_some());
    // Sequence numbers are per context: C0's first message is 0 again.
    assert_eq!(m.expected_sequence(C1, 0), 1);
    assert_eq!(m.expected_sequence(C0, 0), 0);
    assert_eq!(matched(m.incoming(s.msg(C0, 0, 1, 8), ())).recv, RecvId(1));
    let got = m
        .post_recv(recv(C1, Source::Rank(0), Tag::Value(1), 8, 3))
        .unwrap();
    assert_eq!(got.envelope.context, C1);
    m.check();
}

// ----- non-overtaking -----

#[test]
fn out_of_order_arrivals_are_held_back_until_their_predecessors_arrive() {
    let mut m = Matcher::new();
    let e = |seq, tag| Envelope {
        context: C0,
        source: 1,
        tag,
        sequence: seq,
        len: 4,
        sync: false,
    };
    m.post_recv(recv(C0, Source::Rank(1), Tag::Any, 4, 10));
    m.post_recv(recv(C0, Source::Any, Tag::Any, 4, 11));
    // Sent 0, 1, 2, 3; delivered 2, 3, 1, 0 (striped over links).
    assert_eq!(m.incoming(e(2, 0), 2), Incoming::HeldBack);
    assert_eq!(m.incoming(e(3, 0), 3), Incoming::HeldBack);
    assert_eq!(m.incoming(e(1, 0), 1), Incoming::HeldBack);
    assert_eq!(m.held_back(C0, 1), 3);
    assert_eq!(m.held_back_len(), 3);
    assert_eq!(m.expected_sequence(C0, 1), 0);
    // Held-back messages are invisible and match nothing.
    assert_eq!(m.posted_len(), 2);
    assert!(m.probe(C0, Source::Any, Tag::Any).is_none());
    assert_eq!(m.released_len(), 0);
    m.check();
    // The missing first message releases the rest, in sending order.
    let first = matched(m.incoming(e(0, 0), 0));
    assert_eq!((first.payload, first.recv), (0, RecvId(10)));
    let second = matched(m.next_released().unwrap());
    assert_eq!((second.payload, second.recv), (1, RecvId(11)));
    let third = queued(m.next_released().unwrap());
    let fourth = queued(m.next_released().unwrap());
    assert!(m.next_released().is_none());
    assert_eq!(m.unexpected(third).map(|(_, p)| *p), Some(2));
    assert_eq!(m.unexpected(fourth).map(|(_, p)| *p), Some(3));
    assert_eq!(m.expected_sequence(C0, 1), 4);
    assert_eq!(m.held_back_len(), 0);
    // The queued ones come out in order too.
    let r = |m: &mut Matcher<i32>| m.post_recv(recv(C0, Source::Any, Tag::Any, 4, 0));
    assert_eq!(r(&mut m).unwrap().payload, 2);
    assert_eq!(r(&mut m).unwrap().payload, 3);
    m.check();
}

#[test]
fn a_partial_release_stops_at_the_next_gap() {
    let mut m = Matcher::new();
    let e = |seq| Envelope {
        context: C0,
        source: 0,
        tag: 0,
        sequence: seq,
        len: 0,
        sync: false,
    };
    assert_eq!(m.incoming(e(3), ()), Incoming::HeldBack);
    assert_eq!(m.incoming(e(1), ()), Incoming::HeldBack);
    queued(m.incoming(e(0), ()));
    queued(m.next_released().unwrap());
    assert!(m.next_released().is_none());
    assert_eq!(m.expected_sequence(C0, 0), 2);
    assert_eq!(m.held_back(C0, 0), 1);
    queued(m.incoming(e(2), ()));
    queued(m.next_released().unwrap());
    assert_eq!(m.expected_sequence(C0, 0), 4);
    assert_eq!(m.unexpected_len(), 4);
    m.check();
}

#[test]
fn other_senders_are_not_held_back_by_one_senders_gap() {
    let mut m = Matcher::new();
    let mut s = Senders::default();
    let late = Envelope {
        context: C0,
        source: 1,
        tag: 0,
        sequence: 1,
        len: 0,
        sync: false,
    };
    assert_eq!(m.incoming(late, 'b'), Incoming::HeldBack);
    m.post_recv(recv(C0, Source::Any, Tag::Any, 0, 1));
    assert_eq!(matched(m.incoming(s.msg(C0, 2, 0, 0), 'x')).recv, RecvId(1));
    m.check();
}

#[test]
fn duplicate_sequences_are_refused_with_their_payload() {
    let mut m = Matcher::new();
    let e = |seq| Envelope {
        context: C0,
        source: 0,
        tag: 0,
        sequence: seq,
        len: 0,
        sync: true,
    };
    queued(m.incoming(e(0), 1));
    assert_eq!(
        m.incoming(e(0), 2),
        Incoming::Duplicate {
            envelope: e(0),
            payload: 2,
            expected: 1
        }
    );
    assert_eq!(m.incoming(e(5), 3), Incoming::HeldBack);
    assert_eq!(
        m.incoming(e(5), 4),
        Incoming::Duplicate {
            envelope: e(5),
            payload: 4,
            expected: 1
        }
    );
    assert_eq!(m.unexpected_len(), 1);
    assert_eq!(m.held_back_len(), 1);
    m.check();
}

// ----- probe -----

#[test]
fn probe_finds_what_a_receive_would_match_without_consuming_it() {
    let mut m = Matcher::new();
    let mut s = Senders::default();
    assert!(
        m.probe(C0, Source::Any, Tag::Any).is_none(),
        "unknown context"
    );
    assert!(
        m.probe(C0, Source::Rank(3), Tag::Any).is_none(),
        "unknown peer"
    );
    m.incoming(s.msg(C0, 3, 1, 100), ());
    m.incoming(s.msg(C0, 4, 2, 200), ());
    for _ in 0..3 {
        let e = *m.probe(C0, Source::Any, Tag::Any).unwrap();
        assert_eq!((e.source, e.tag), (3, 1));
    }
    let e = *m.probe(C0, Source::Any, Tag::Value(2)).unwrap();
    assert_eq!(
        e.probe_status(),
        Status {
            source: 4,
            tag: 2,
            count: 200,
            error: None,
            cancelled: false
        }
    );
    assert!(m.probe(C0, Source::Rank(4), Tag::Value(1)).is_none());
    assert!(m.probe(C1, Source::Any, Tag::Any).is_none());
    assert_eq!(m.unexpected_len(), 2);
    // The receive then gets the probed message.
    let got = m
        .post_recv(recv(C0, Source::Any, Tag::Any, 100, 1))
        .unwrap();
    assert_eq!((got.envelope.source, got.envelope.tag), (3, 1));
    m.check();
}

#[test]
fn mprobe_claims_a_message_for_take_unexpected() {
    let mut m = Matcher::new();
    let mut s = Senders::default();
    m.incoming(s.msg(C0, 0, 1, 8), "first");
    m.incoming(s.msg(C0, 0, 1, 8), "second");
    let (id, e) = m.mprobe(C0, Source::Rank(0), Tag::Value(1)).unwrap();
    assert_eq!(e.sequence, 0);
    assert_eq!((m.unexpected_len(), m.claimed_len()), (1, 1));
    // Claimed: no probe or receive sees it any more.
    assert_eq!(m.probe(C0, Source::Any, Tag::Any).unwrap().sequence, 1);
    let got = m.post_recv(recv(C0, Source::Any, Tag::Any, 8, 1)).unwrap();
    assert_eq!(got.payload, "second");
    assert!(m.post_recv(recv(C0, Source::Any, Tag::Any, 8, 2)).is_none());
    m.check();
    assert_eq!(m.unexpected(id).map(|(_, p)| *p), Some("first"));
    *m.unexpected_payload_mut(id).unwrap() = "changed";
    assert_eq!(m.take_unexpected(id), Some((e, "changed")));
    assert_eq!(m.take_unexpected(id), None, "taken once");
    assert_eq!(m.claimed_len(), 0);
    assert!(m.mprobe(C0, Source::Any, Tag::Any).is_none());
    m.check();
}

#[test]
fn take_unexpected_removes_a_queued_message() {
    let mut m = Matcher::new();
    let mut s = Senders::default();
    let a = queued(m.incoming(s.msg(C0, 0, 1, 8), 1));
    let b = queued(m.incoming(s.msg(C0, 0, 1, 8), 2));
    assert_eq!(m.take_unexpected(b).map(|(_, p)| p), Some(2));
    assert!(m.unexpected(b).is_none());
    assert_eq!(m.unexpected_len(), 1);
    // A new message reuses b's slot; b's handle stays stale.
    let c = queued(m.incoming(s.msg(C0, 0, 1, 8), 3));
    assert_ne!(b, c);
    assert!(m.take_unexpected(b).is_none());
    assert_eq!(m.take_unexpected(a).map(|(_, p)| p), Some(1));
    m.check();
}

// ----- cancel -----

#[test]
fn cancel_removes_only_unmatched_receives() {
    let mut m = Matcher::new();
    let mut s = Senders::default();
    m.post_recv(recv(C0, Source::Rank(0), Tag::Value(1), 8, 1));
    m.post_recv(recv(C0, Source::Any, Tag::Any, 8, 2));
    m.post_recv(recv(C0, Source::Rank(0), Tag::Value(1), 8, 3));
    assert!(m.cancel_recv(RecvId(1)));
    assert!(!m.cancel_recv(RecvId(1)), "already cancelled");
    assert!(!m.cancel_recv(RecvId(99)), "never posted");
    m.check();
    // The cancelled receive never matches: the message goes to the next.
    assert_eq!(matched(m.incoming(s.msg(C0, 0, 1, 8), ())).recv, RecvId(2));
    assert!(!m.cancel_recv(RecvId(2)), "already matched");
    assert!(m.cancel_recv(RecvId(3)));
    queued(m.incoming(s.msg(C0, 0, 1, 8), ()));
    assert_eq!(m.posted_len(), 0);
    assert!(Status::cancelled().cancelled);
    m.check();
}

#[test]
fn cancel_with_a_duplicate_id_cancels_the_oldest() {
    let mut m = Matcher::<()>::new();
    m.post_recv(recv(C0, Source::Rank(0), Tag::Value(1), 8, 5));
    m.post_recv(recv(C0, Source::Rank(0), Tag::Value(2), 8, 5));
    assert!(m.cancel_recv(RecvId(5)));
    let left = m
        .remove_context(C0)
        .posted
        .into_iter()
        .map(|r| r.tag)
        .collect::<Vec<_>>();
    assert_eq!(left, [Tag::Value(2)]);
}

// ----- truncation -----

#[test]
fn a_longer_message_still_matches_and_reports_truncation() {
    let mut m = Matcher::new();
    let mut s = Senders::default();
    // Posted first.
    m.post_recv(recv(C0, Source::Rank(0), Tag::Value(1), 10, 1));
    let got = matched(m.incoming(s.msg(C0, 0, 1, 100), ()));
    assert!(got.truncated);
    assert_eq!(got.count(), 10);
    assert_eq!(
        got.status(),
        Status {
            source: 0,
            tag: 1,
            count: 10,
            error: Some(MatchError::Truncated {
                len: 100,
                capacity: 10
            }),
            cancelled: false
        }
    );
    let text = got.status().error.unwrap().to_string();
    assert!(
        text.contains("MPI_ERR_TRUNCATE") && text.contains("100"),
        "{text}"
    );
    // Message first.
    m.incoming(s.msg(C0, 0, 1, 11), ());
    let got = m.post_recv(recv(C0, Source::Any, Tag::Any, 10, 2)).unwrap();
    assert!(got.truncated);
    // An exact fit and a shorter message are not truncated.
    m.incoming(s.msg(C0, 0, 1, 10), ());
    m.incoming(s.msg(C0, 0, 1, 3), ());
    let fit = m.post_recv(recv(C0, Source::Any, Tag::Any, 10, 3)).unwrap();
    let short = m.post_recv(recv(C0, Source::Any, Tag::Any, 10, 4)).unwrap();
    assert!(!fit.truncated && !short.truncated);
    assert_eq!((fit.count(), short.count()), (10, 3));
    assert_eq!(short.status().error, None);
}

// ----- volume -----

#[test]
fn a_flood_of_10000_unexpected_messages_is_received_in_order() {
    let mut m = Matcher::new();
    let mut s = Senders::default();
    const N: u64 = 10_000;
    for i in 0..N {
        let source = (i % 4) as i32;
        queued(m.incoming(s.msg(C0, source, (i % 7) as i32, 8), i));
    }
    assert_eq!(m.unexpected_len(), N as usize);
    m.check();
    // Rank 3, tag 3 receives first: those messages, in their sending order.
    let mut seen = Vec::new();
    while let Some(got) = m.post_recv(recv(C0, Source::Rank(3), Tag::Value(3), 8, 0)) {
        seen.push(got.payload);
    }
    let expected: Vec<u64> = (0..N).filter(|i| i % 4 == 3 && i % 7 == 3).collect();
    assert_eq!(seen, expected);
    // Then ANY_SOURCE/ANY_TAG receives get the rest in arrival order.
    let rest: Vec<u64> = (0..N)
        .map(|_| m.post_recv(recv(C0, Source::Any, Tag::Any, 8, 0)))
        .take_while(Option::is_some)
        .map(|got| got.unwrap().payload)
        .collect();
    let expected: Vec<u64> = (0..N).filter(|i| !(i % 4 == 3 && i % 7 == 3)).collect();
    assert_eq!(rest, expected);
    assert_eq!(m.unexpected_len(), 0);
    m.check();
}

#[test]
fn the_steady_state_reuses_its_slots() {
    let mut m = Matcher::new();
    let mut s = Senders::default();
    for round in 0..3 {
        for i in 0..1000u64 {
            let source = (i % 8) as i32;
            m.post_recv(recv(C0, Source::Rank(source), Tag::Value(0), 8, i));
            matched(m.incoming(s.msg(C0, source, 0, 8), ()));
            m.incoming(s.msg(C0, source, 1, 8), ());
            m.post_recv(recv(C0, Source::Any, Tag::Any, 8, i)).unwrap();
        }
        assert_eq!(m.posted.capacity_used(), 1, "round {round}");
        assert_eq!(m.unexpected.capacity_used(), 1, "round {round}");
        assert_eq!(m.peers.len(), 8);
    }
}

// ----- contexts, raw values -----

#[test]
fn remove_context_hands_back_everything_and_resets_sequences() {
    let mut m = Matcher::new();
    let e = |context, seq| Envelope {
        context,
        source: 0,
        tag: 0,
        sequence: seq,
        len: 0,
        sync: false,
    };
    m.post_recv(recv(C0, Source::Rank(1), Tag::Value(0), 0, 1));
    m.post_recv(recv(C0, Source::Any, Tag::Value(9), 0, 2));
    m.post_recv(recv(C1, Source::Any, Tag::Any, 0, 3));
    queued(m.incoming(e(C0, 0), "q0"));
    queued(m.incoming(e(C0, 1), "q1"));
    let (claimed, _) = m.mprobe(C0, Source::Any, Tag::Any).unwrap();
    assert_eq!(m.incoming(e(C0, 5), "h5"), Incoming::HeldBack);
    assert_eq!(m.incoming(e(C0, 3), "h3"), Incoming::HeldBack);
    let removed = m.remove_context(C0);
    assert_eq!(
        removed.posted.iter().map(|r| r.id.0).collect::<Vec<_>>(),
        [1, 2]
    );
    assert_eq!(
        removed
            .unexpected
            .iter()
            .map(|(e, p)| (e.sequence, *p))
            .collect::<Vec<_>>(),
        [(1, "q1"), (3, "h3"), (5, "h5")]
    );
    assert_eq!(m.posted_len(), 1);
    assert_eq!((m.unexpected_len(), m.held_back_len()), (0, 0));
    assert_eq!(m.expected_sequence(C0, 0), 0);
    assert_eq!(m.take_unexpected(claimed).map(|(_, p)| p), Some("q0"));
    m.check();
    // The context id can be used again from sequence 0.
    assert_eq!(matched(m.incoming(e(C1, 0), "c1")).recv, RecvId(3));
    queued(m.incoming(e(C0, 0), "new"));
    assert!(m.remove_context(ContextId(77)).posted.is_empty());
    m.check();
}

#[test]
fn raw_mpi_values_convert() {
    assert_eq!(Source::from_raw(-1), ANY_SOURCE);
    assert_eq!(Source::from_raw(3), Source::Rank(3));
    assert_eq!(Source::Rank(3).to_raw(), 3);
    assert_eq!(ANY_SOURCE.to_raw(), ANY_SOURCE_RAW);
    assert_eq!(Tag::from_raw(-1), ANY_TAG);
    assert_eq!(Tag::from_raw(-10), Tag::Value(-10));
    assert_eq!(ANY_TAG.to_raw(), ANY_TAG_RAW);
    assert!(Tag::is_internal(-10) && !Tag::is_internal(0));
    assert!(!Source::Rank(-3).matches(3));
    let r = recv(C0, Source::Any, Tag::Value(4), 0, 0);
    let e = Envelope {
        context: C0,
        source: 9,
        tag: 4,
        sequence: 0,
        len: 99,
        sync: false,
    };
    assert!(r.accepts(&e));
    assert!(!r.accepts(&Envelope { context: C1, ..e }));
}

// ----- the reference model -----

/// A message's identity: (context, source, sequence).
type Key = (u32, i32, u64);

fn key(e: &Envelope) -> Key {
    (e.context.0, e.source, e.sequence)
}

/// What happened to a message, in a form both sides produce.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Event {
    Matched(RecvId, Key, bool),
    Queued(Key),
    HeldBack,
    Duplicate(Key),
}

/// MPI's matching predicate, written independently of `Source::matches`,
/// `Tag::matches` and `PostedRecv::accepts`.
fn fits(r: &PostedRecv, e: &Envelope) -> bool {
    let source = match r.source {
        Source::Any => true,
        Source::Rank(s) => s == e.source,
    };
    let tag = match r.tag {
        Tag::Any => e.tag >= 0,
        Tag::Value(t) => t == e.tag,
    };
    r.context == e.context && source && tag
}

/// MPI matching written the obvious way: vectors scanned from the front.
#[derive(Default)]
struct Model {
    posted: Vec<PostedRecv>,
    unexpected: Vec<Envelope>,
    claimed: Vec<Envelope>,
    expected: HashMap<(u32, i32), u64>,
    held: HashMap<(u32, i32), BTreeMap<u64, Envelope>>,
}

impl Model {
    fn post(&mut self, r: PostedRecv) -> Option<Event> {
        match self.unexpected.iter().position(|e| fits(&r, e)) {
            Some(pos) => {
                let e = self.unexpected.remove(pos);
                Some(Event::Matched(r.id, key(&e), e.len > r.capacity))
            }
            None => {
                self.posted.push(r);
                None
            }
        }
    }

    fn deliver(&mut self, e: Envelope) -> Event {
        match self.posted.iter().position(|r| fits(r, &e)) {
            Some(pos) => {
                let r = self.posted.remove(pos);
                Event::Matched(r.id, key(&e), e.len > r.capacity)
            }
            None => {
                self.unexpected.push(e);
                Event::Queued(key(&e))
            }
        }
    }

    fn arrive(&mut self, e: Envelope) -> Vec<Event> {
        let pair = (e.context.0, e.source);
        let expected = *self.expected.get(&pair).unwrap_or(&0);
        let held = self.held.entry(pair).or_default();
        if e.sequence < expected || held.contains_key(&e.sequence) {
            return vec![Event::Duplicate(key(&e))];
        }
        if e.sequence > expected {
            held.insert(e.sequence, e);
            return vec![Event::HeldBack];
        }
        let mut events = vec![self.deliver(e)];
        let mut next = expected + 1;
        while let Some(e) = self.held.get_mut(&pair).unwrap().remove(&next) {
            events.push(self.deliver(e));
            next += 1;
        }
        self.expected.insert(pair, next);
        events
    }

    fn probe(&self, context: u32, source: Source, tag: Tag) -> Option<Key> {
        let r = recv(ContextId(context), source, tag, 0, 0);
        self.unexpected.iter().find(|e| fits(&r, e)).map(key)
    }

    fn mprobe(&mut self, context: u32, source: Source, tag: Tag) -> Option<Key> {
        let r = recv(ContextId(context), source, tag, 0, 0);
        let pos = self.unexpected.iter().position(|e| fits(&r, e))?;
        let e = self.unexpected.remove(pos);
        self.claimed.push(e);
        Some(key(&e))
    }

    fn cancel(&mut self, id: RecvId) -> bool {
        match self.posted.iter().position(|r| r.id == id) {
            Some(pos) => {
                self.posted.remove(pos);
                true
            }
            None => false,
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    /// Post a receive (None = wildcard).
    Post {
        context: u32,
        source: Option<i32>,
        tag: Option<i32>,
        capacity: usize,
    },
    /// A sender sends: the message is numbered and put in flight.
    Send {
        context: u32,
        source: i32,
        tag: i32,
        len: usize,
    },
    /// The oldest message in flight arrives.
    DeliverOldest,
    /// Some message in flight arrives (out of order).
    DeliverAny(usize),
    /// An already delivered message arrives again.
    Redeliver(usize),
    Probe {
        context: u32,
        source: Option<i32>,
        tag: Option<i32>,
    },
    Mprobe {
        context: u32,
        source: Option<i32>,
        tag: Option<i32>,
    },
    /// Take a claimed message.
    Take(usize),
    /// Cancel a receive posted earlier (or one never posted).
    Cancel(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let context = 0u32..2;
    let source = 0i32..3;
    // -2 is an internal tag: only exact receives take it.
    let tag = prop_oneof![Just(-2i32), 0i32..3];
    let wild_source = prop_oneof![1 => Just(None), 3 => source.clone().prop_map(Some)];
    let wild_tag = prop_oneof![1 => Just(None), 3 => tag.clone().prop_map(Some)];
    prop_oneof![
        6 => (context.clone(), wild_source.clone(), wild_tag.clone(), 0usize..6).prop_map(
            |(context, source, tag, capacity)| Op::Post { context, source, tag, capacity }
        ),
        6 => (context.clone(), source, tag, 0usize..6)
            .prop_map(|(context, source, tag, len)| Op::Send { context, source, tag, len }),
        5 => Just(Op::DeliverOldest),
        3 => any::<usize>().prop_map(Op::DeliverAny),
        1 => any::<usize>().prop_map(Op::Redeliver),
        2 => (context.clone(), wild_source.clone(), wild_tag.clone())
            .prop_map(|(context, source, tag)| Op::Probe { context, source, tag }),
        1 => (context, wild_source, wild_tag)
            .prop_map(|(context, source, tag)| Op::Mprobe { context, source, tag }),
        1 => any::<usize>().prop_map(Op::Take),
        1 => any::<usize>().prop_map(Op::Cancel),
    ]
}

fn source_of(s: Option<i32>) -> Source {
    s.map_or(Source::Any, Source::Rank)
}

fn tag_of(t: Option<i32>) -> Tag {
    t.map_or(Tag::Any, Tag::Value)
}

/// The matcher's outcome as an event (looking up queued messages' keys).
fn event(m: &Matcher<Key>, outcome: Incoming<Key>) -> Event {
    match outcome {
        Incoming::Matched(got) => {
            assert_eq!(
                got.payload,
                key(&got.envelope),
                "payload travels with its message"
            );
            assert_eq!(got.truncated, got.envelope.len > got.capacity);
            Event::Matched(got.recv, got.payload, got.truncated)
        }
        Incoming::Queued(id) => {
            let (e, p) = m.unexpected(id).expect("a fresh queued handle is valid");
            assert_eq!(*p, key(e));
            Event::Queued(*p)
        }
        Incoming::HeldBack => Event::HeldBack,
        Incoming::Duplicate {
            envelope, payload, ..
        } => {
            assert_eq!(payload, key(&envelope));
            Event::Duplicate(payload)
        }
    }
}

/// How often each kind of outcome happened in a run (to check that the
/// generated cases exercise them all).
#[derive(Debug, Default)]
struct Coverage {
    matched_on_arrival: usize,
    matched_on_post: usize,
    queued: usize,
    held_back: usize,
    released: usize,
    duplicates: usize,
    truncated: usize,
    wildcard_matches: usize,
    probe_hits: usize,
    mprobe_hits: usize,
    cancelled: usize,
}

fn run(ops: &[Op]) -> Result<Coverage, TestCaseError> {
    let mut cov = Coverage::default();
    let mut m: Matcher<Key> = Matcher::new();
    let mut model = Model::default();
    let mut senders = Senders::default();
    let mut in_flight: Vec<Envelope> = Vec::new();
    let mut delivered: Vec<Envelope> = Vec::new();
    let mut claimed: Vec<(UnexpectedId, Key)> = Vec::new();
    let mut next_id = 0u64;

    for op in ops {
        match *op {
            Op::Post {
                context,
                source,
                tag,
                capacity,
            } => {
                next_id += 1;
                let r = recv(
                    ContextId(context),
                    source_of(source),
                    tag_of(tag),
                    capacity,
                    next_id,
                );
                let got = m.post_recv(r).map(|got| {
                    assert_eq!(got.payload, key(&got.envelope));
                    cov.matched_on_post += 1;
                    cov.truncated += usize::from(got.truncated);
                    cov.wildcard_matches += usize::from(source.is_none() || tag.is_none());
                    Event::Matched(got.recv, got.payload, got.truncated)
                });
                prop_assert_eq!(got, model.post(r), "post {:?}", r);
            }
            Op::Send {
                context,
                source,
                tag,
                len,
            } => in_flight.push(senders.msg(ContextId(context), source, tag, len)),
            Op::DeliverOldest | Op::DeliverAny(_) | Op::Redeliver(_) => {
                let e = match *op {
                    Op::DeliverOldest if !in_flight.is_empty() => in_flight.remove(0),
                    Op::DeliverAny(i) if !in_flight.is_empty() => {
                        in_flight.remove(i % in_flight.len())
                    }
                    Op::Redeliver(i) if !delivered.is_empty() => delivered[i % delivered.len()],
                    _ => continue,
                };
                if !matches!(op, Op::Redeliver(_)) {
                    delivered.push(e);
                }
                let first = m.incoming(e, key(&e));
                let mut got = vec![event(&m, first)];
                while let Some(r) = m.next_released() {
                    got.push(event(&m, r));
                    cov.released += 1;
                }
                for e in &got {
                    match e {
                        Event::Matched(_, _, truncated) => {
                            cov.matched_on_arrival += 1;
                            cov.truncated += usize::from(*truncated);
                        }
                        Event::Queued(_) => cov.queued += 1,
                        Event::HeldBack => cov.held_back += 1,
                        Event::Duplicate(_) => cov.duplicates += 1,
                    }
                }
                prop_assert_eq!(got, model.arrive(e), "arrival of {:?}", e);
            }
            Op::Probe {
                context,
                source,
                tag,
            } => {
                let (s, t) = (source_of(source), tag_of(tag));
                let got = m.probe(ContextId(context), s, t).map(key);
                cov.probe_hits += usize::from(got.is_some());
                prop_assert_eq!(got, model.probe(context, s, t));
            }
            Op::Mprobe {
                context,
                source,
                tag,
            } => {
                let (s, t) = (source_of(source), tag_of(tag));
                let got = m.mprobe(ContextId(context), s, t);
                if let Some((id, e)) = got {
                    claimed.push((id, key(&e)));
                    cov.mprobe_hits += 1;
                }
                prop_assert_eq!(got.map(|(_, e)| key(&e)), model.mprobe(context, s, t));
            }
            Op::Take(i) => {
                if claimed.is_empty() {
                    continue;
                }
                let (id, k) = claimed.remove(i % claimed.len());
                let got = m.take_unexpected(id).map(|(e, p)| (key(&e), p));
                prop_assert_eq!(got, Some((k, k)));
                prop_assert_eq!(m.take_unexpected(id), None);
                model.claimed.retain(|e| key(e) != k);
            }
            Op::Cancel(i) => {
                // Ids 1..=next_id were posted; next_id + 1 never was.
                let id = RecvId(i as u64 % (next_id + 1) + 1);
                let cancelled = m.cancel_recv(id);
                cov.cancelled += usize::from(cancelled);
                prop_assert_eq!(cancelled, model.cancel(id), "cancel {:?}", id);
            }
        }
        m.check();
        prop_assert_eq!(m.posted_len(), model.posted.len());
        prop_assert_eq!(m.unexpected_len(), model.unexpected.len());
        prop_assert_eq!(m.claimed_len(), model.claimed.len());
        prop_assert_eq!(
            m.held_back_len(),
            model.held.values().map(BTreeMap::len).sum::<usize>()
        );
    }

    // The final queues agree too, in order.
    for context in 0..2 {
        let expected_seq: Vec<u64> = (0..3)
            .map(|s| *model.expected.get(&(context, s)).unwrap_or(&0))
            .collect();
        let got_seq: Vec<u64> = (0..3)
            .map(|s| m.expected_sequence(ContextId(context), s))
            .collect();
        prop_assert_eq!(got_seq, expected_seq);
        let removed = m.remove_context(ContextId(context));
        let posted: Vec<PostedRecv> = model
            .posted
            .iter()
            .filter(|r| r.context.0 == context)
            .copied()
            .collect();
        prop_assert_eq!(removed.posted, posted);
        let mut unexpected: Vec<Key> = model
            .unexpected
            .iter()
            .filter(|e| e.context.0 == context)
            .map(key)
            .collect();
        let queued = unexpected.len();
        let got: Vec<Key> = removed.unexpected.iter().map(|(e, _)| key(e)).collect();
        prop_assert_eq!(&got[..queued.min(got.len())], &unexpected[..]);
        let mut held_got = got[queued.min(got.len())..].to_vec();
        held_got.sort_unstable();
        unexpected = model
            .held
            .iter()
            .filter(|((c, _), _)| *c == context)
            .flat_map(|(_, h)| h.values().map(key))
            .collect();
        unexpected.sort_unstable();
        prop_assert_eq!(held_got, unexpected);
    }
    m.check();
    prop_assert_eq!(m.posted_len() + m.unexpected_len() + m.held_back_len(), 0);
    Ok(cov)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// The key correctness test: any interleaving of posts, sends,
    /// in-order and out-of-order arrivals, duplicates, probes, matched
    /// probes and cancels gives exactly the outcomes of the naive model.
    #[test]
    fn matches_the_reference_model(ops in proptest::collection::vec(op(), 0..300)) {
        let cov = run(&ops)?;
        if std::env::var_os("OXMPI_MATCHING_COVERAGE").is_some() {
            eprintln!("{cov:?}");
        }
    }
}

#[test]
fn the_model_test_sees_every_outcome() {
    // A fixed run through `run` that exercises each event kind, so a model
    // bug that hides a kind cannot pass silently.
    let ops = [
        Op::Post {
            context: 0,
            source: Some(1),
            tag: Some(0),
            capacity: 1,
        },
        Op::Send {
            context: 0,
            source: 1,
            tag: 0,
            len: 4,
        },
        Op::Send {
            context: 0,
            source: 1,
            tag: 2,
            len: 0,
        },
        Op::Send {
            context: 0,
            source: 1,
            tag: 1,
            len: 0,
        },
        Op::DeliverAny(2),
        Op::DeliverOldest,
        Op::DeliverOldest,
        Op::Redeliver(0),
        Op::Probe {
            context: 0,
            source: None,
            tag: None,
        },
        Op::Mprobe {
            context: 0,
            source: None,
            tag: Some(2),
        },
        Op::Take(0),
        Op::Cancel(0),
        Op::Post {
            context: 1,
            source: None,
            tag: None,
            capacity: 0,
        },
        Op::Cancel(1),
    ];
    let cov = run(&ops).unwrap();
    assert_eq!(cov.matched_on_arrival, 1, "{cov:?}");
    assert_eq!(cov.truncated, 1, "{cov:?}");
    assert_eq!(cov.held_back, 1, "{cov:?}");
    assert_eq!(cov.released, 1, "{cov:?}");
    assert_eq!(cov.queued, 2, "{cov:?}");
    assert_eq!(cov.duplicates, 1, "{cov:?}");
    assert_eq!((cov.probe_hits, cov.mprobe_hits), (1, 1), "{cov:?}");
    // Cancel(0) names receive 1 (matched), Cancel(1) receive 2 (posted).
    assert_eq!(cov.cancelled, 1, "{cov:?}");
}
