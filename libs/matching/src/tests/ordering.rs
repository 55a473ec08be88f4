//! Which receive and which message match, and in what order: exact
//! matches, the oldest receive and the oldest message winning, wildcards
//! and internal tags, contexts, and non-overtaking (out-of-order arrivals
//! held back, duplicate sequence numbers refused).

use super::*;

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
    assert!(!got.truncated());
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

#[test]
fn incoming_keeping_asks_to_keep_only_a_payload_held_back() {
    let mut m: Matcher<String> = Matcher::new();
    let mut s = Senders::default();
    let first = s.msg(C0, 1, 5, 4);
    let second = s.msg(C0, 1, 5, 4);
    let mut kept = 0;
    // The second arrives first: held back, and kept.
    let out = m.incoming_keeping(second, "borrowed".to_string(), |p| {
        kept += 1;
        *p = "copied".to_string();
    });
    assert!(matches!(out, Incoming::HeldBack));
    assert_eq!(kept, 1);
    // The first is in order: queued as is, without a call to keep.
    let out = m.incoming_keeping(first, "inline".to_string(), |_| kept += 1);
    assert!(matches!(out, Incoming::Queued(_)));
    assert_eq!(kept, 1);
    let Some(Incoming::Queued(id)) = m.next_released() else {
        panic!("the held-back message is released")
    };
    assert_eq!(
        m.unexpected_payload_mut(id).map(|p| p.as_str()),
        Some("copied")
    );
    m.check();
}

#[test]
fn arrive_in_order_matches_or_queues_as_incoming_would() {
    let mut m: Matcher<u32> = Matcher::new();
    let mut s = Senders::default();
    let e = |seq: u64| Envelope {
        context: C0,
        source: 2,
        tag: 5,
        sequence: seq,
        len: 8,
        sync: false,
    };
    // Nothing posted: queued with the payload `store` makes.
    let first = s.msg(C0, 2, 5, 8);
    let InOrder::Queued(id) = m.arrive_in_order(&first, || 7) else {
        panic!("an in-order message with nothing posted is queued");
    };
    assert_eq!(m.unexpected(id).map(|(_, p)| *p), Some(7));
    assert_eq!(m.expected_sequence(C0, 2), 1);
    let taken = m.post_recv(recv(C0, Source::Any, Tag::Any, 8, 19)).unwrap();
    assert_eq!((taken.envelope.sequence, taken.payload), (0, 7));
    // An older wildcard receive wins over a later specific one, as in
    // incoming; `store` is not called for a match.
    m.post_recv(recv(C0, Source::Any, Tag::Any, 8, 20));
    m.post_recv(recv(C0, Source::Rank(2), Tag::Value(5), 4, 21));
    let second = s.msg(C0, 2, 5, 8);
    let never = || -> u32 { panic!("a matched message stores nothing") };
    assert_eq!(
        m.arrive_in_order(&second, never),
        InOrder::Matched {
            recv: RecvId(20),
            capacity: 8
        }
    );
    assert_eq!(m.expected_sequence(C0, 2), 2);
    assert_eq!(
        m.arrive_in_order(&s.msg(C0, 2, 5, 8), never),
        InOrder::Matched {
            recv: RecvId(21),
            capacity: 4
        }
    );
    assert_eq!(m.posted_len(), 0);
    m.check();
    // Out of order, or with an earlier message held back: no change.
    m.post_recv(recv(C0, Source::Rank(2), Tag::Any, 8, 22));
    assert_eq!(m.arrive_in_order(&e(4), never), InOrder::NotInOrder);
    assert_eq!(m.incoming(e(4), 4), Incoming::HeldBack);
    assert_eq!(
        m.arrive_in_order(&e(3), never),
        InOrder::NotInOrder,
        "a message is held back"
    );
    assert_eq!(m.expected_sequence(C0, 2), 3);
    assert_eq!(m.posted_len(), 1);
    let got = matched(m.incoming(e(3), 3));
    assert_eq!(got.recv, RecvId(22));
    m.check();
}
