//! The operations around matching: probe and mprobe, taking and cancelling,
//! truncation, large volumes and slot reuse, removing a context, and the
//! conversion of raw MPI values.

use super::*;

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
    // The handle survives a trip through one word.
    assert_ne!(id.to_bits(), 0);
    assert_eq!(UnexpectedId::from_bits(id.to_bits()), Some(id));
    assert_eq!(UnexpectedId::from_bits(id.to_bits() & !0xffff_ffff), None);
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

#[test]
fn take_matching_takes_the_oldest_fit_and_posts_nothing() {
    let mut m = Matcher::new();
    let mut s = Senders::default();
    assert!(m.take_matching(C0, Source::Any, Tag::Any).is_none());
    assert_eq!(m.posted_len(), 0, "nothing is posted when nothing fits");
    queued(m.incoming(s.msg(C0, 0, 5, 8), 1));
    queued(m.incoming(s.msg(C0, 1, 6, 8), 2));
    queued(m.incoming(s.msg(C0, 0, 6, 8), 3));
    assert!(m.take_matching(C1, Source::Any, Tag::Any).is_none());
    assert!(m.take_matching(C0, Source::Rank(2), Tag::Any).is_none());
    let (e, p) = m.take_matching(C0, Source::Any, Tag::Value(6)).unwrap();
    assert_eq!((e.source, e.tag, p), (1, 6, 2), "oldest arrival with tag 6");
    let (_, p) = m.take_matching(C0, Source::Rank(0), Tag::Any).unwrap();
    assert_eq!(p, 1);
    assert_eq!(m.unexpected_len(), 1);
    assert_eq!(m.posted_len(), 0);
    m.check();
}

#[test]
fn contexts_and_ranks_beyond_the_direct_tables_match_by_hash() {
    let mut m = Matcher::new();
    let mut s = Senders::default();
    let far = ContextId(DIRECT_CONTEXTS + 7);
    let big = DIRECT_RANKS + 3;
    for (context, rank) in [(far, 2), (C0, big), (far, big), (C1, -5)] {
        queued(m.incoming(s.msg(context, rank, 1, 8), 10));
        assert_eq!(m.expected_sequence(context, rank), 1);
        let got = m
            .post_recv(recv(context, Source::Rank(rank), Tag::Any, 8, 1))
            .expect("the queued message matches");
        assert_eq!((got.envelope.context, got.envelope.source), (context, rank));
        m.post_recv(recv(context, Source::Rank(rank), Tag::Any, 8, 2));
        let got = matched(m.incoming(s.msg(context, rank, 1, 8), 11));
        assert_eq!(got.recv, RecvId(2));
        m.check();
    }
    let removed = m.remove_context(far);
    assert!(removed.posted.is_empty() && removed.unexpected.is_empty());
    assert_eq!(
        m.expected_sequence(far, 2),
        0,
        "the removed context starts afresh"
    );
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
    assert!(got.truncated());
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
    assert!(got.truncated());
    // An exact fit and a shorter message are not truncated.
    m.incoming(s.msg(C0, 0, 1, 10), ());
    m.incoming(s.msg(C0, 0, 1, 3), ());
    let fit = m.post_recv(recv(C0, Source::Any, Tag::Any, 10, 3)).unwrap();
    let short = m.post_recv(recv(C0, Source::Any, Tag::Any, 10, 4)).unwrap();
    assert!(!fit.truncated() && !short.truncated());
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
