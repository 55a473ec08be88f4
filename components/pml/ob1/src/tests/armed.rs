//! The armed receive (`engine::armed`): the message that completes the
//! only posted receive lands at once, and MPI's matching order, cancel,
//! free, truncation and peer failure are what they are without it.

use oxmpi_framework_pml::module::{RequestError, SendMode, ANY_SOURCE, ANY_TAG};

use super::fake::{btl, loopback_module, module, pattern, Order, World};

fn world(size: u32) -> World {
    World::new(
        size,
        vec![btl("tcp", vec![module("tcp0", 100, 10, 1000)])],
        8,
    )
}

fn armed_deliveries(w: &World, rank: u32) -> u64 {
    w.engines[rank as usize].stats().armed_deliveries
}

/// A ping-pong of eager messages of every small size: each lands through
/// the armed receive, is released by `take` before the matcher learns it
/// (as the MPI layer's wait does), and the next receive matches the next
/// message in sequence. Nothing is left behind.
#[test]
fn ping_pong_lands_through_the_armed_receive_and_matching_keeps_step() {
    let mut w = world(2);
    let mut buf = vec![0u8; 4096];
    let mut back = vec![0u8; 64];
    for (i, len) in (0..=4096usize).step_by(97).chain([0, 1, 4096]).enumerate() {
        let msg = pattern(len, i as u64);
        let tag = if i % 2 == 0 { ANY_TAG } else { i as i32 };
        let r = w.irecv(1, &mut buf, 0, tag);
        let s = w.isend(0, 1, &msg, i as i32, SendMode::Standard).unwrap();
        assert!(w.deliver_one());
        let st = w.engines[1].take(r).expect("landed at once");
        assert_eq!((st.source, st.tag, st.count), (0, i as i32, len));
        assert_eq!(st.error, RequestError::None);
        assert_eq!(&buf[..len], &msg[..]);
        assert_eq!(armed_deliveries(&w, 1), i as u64 + 1);
        // The answer, which settles rank 1's receive after it is sent.
        let answer = pattern(8, 1000 + i as u64);
        let ar = w.irecv(0, &mut back, 1, ANY_TAG);
        let a = w.isend(1, 0, &answer, 3, SendMode::Standard).unwrap();
        assert_eq!(w.wait(0, ar).count, 8);
        assert_eq!(&back[..8], &answer[..]);
        w.engines[0].take(ar);
        w.settle();
        for (rank, h) in [(0, s), (1, a)] {
            if h != 0 {
                w.engines[rank].take(h);
            }
        }
    }
    w.settle();
    for e in &w.engines {
        assert_eq!(e.stats().live_requests, 0);
    }
}

/// `test` reports a fired receive as complete before anything settles
/// it; after settling, it is an ordinary complete request.
#[test]
fn a_fired_receive_tests_complete_before_and_after_settling() {
    let mut w = world(2);
    let mut buf = vec![0u8; 16];
    let msg = pattern(16, 7);
    let r = w.irecv(1, &mut buf, 0, 4);
    w.isend(0, 1, &msg, 4, SendMode::Standard).unwrap();
    assert!(w.deliver_one());
    assert_eq!(armed_deliveries(&w, 1), 1);
    let st = w.test(1, r).expect("complete");
    assert_eq!((st.source, st.tag, st.count), (0, 4, 16));
    w.settle();
    assert_eq!(w.test(1, r), Some(st));
    assert_eq!(w.engines[1].take(r), Some(st));
    assert_eq!(w.engines[1].stats().live_requests, 0);
}

/// A message from the armed receive's sender with another tag is queued
/// as unexpected; the armed receive takes the later one it matches, and
/// the first goes to the receive posted for it afterwards.
#[test]
fn a_message_the_armed_receive_does_not_match_goes_to_the_matcher() {
    let mut w = world(2);
    let mut want5 = vec![0u8; 32];
    let mut want6 = vec![0u8; 32];
    let (m6, m5) = (pattern(20, 6), pattern(24, 5));
    let r5 = w.irecv(1, &mut want5, 0, 5);
    w.isend(0, 1, &m6, 6, SendMode::Standard).unwrap();
    w.isend(0, 1, &m5, 5, SendMode::Standard).unwrap();
    w.settle();
    let st = w.wait(1, r5);
    assert_eq!((st.tag, st.count), (5, 24));
    assert_eq!(&want5[..24], &m5[..]);
    assert_eq!(w.engines[1].stats().unexpected, 1);
    let r6 = w.irecv(1, &mut want6, 0, 6);
    assert_eq!(w.wait(1, r6).count, 20);
    assert_eq!(&want6[..20], &m6[..]);
    assert_eq!(armed_deliveries(&w, 1), 0);
}

/// Two receives posted for one sender: the first is armed and takes the
/// first message; the second message settles the first receive before it
/// matches the second receive.
#[test]
fn a_second_message_after_a_fired_one_matches_the_next_receive() {
    let mut w = world(2);
    let (mut a, mut b) = (vec![0u8; 8], vec![0u8; 8]);
    let (m1, m2) = (pattern(8, 1), pattern(8, 2));
    let ra = w.irecv(1, &mut a, 0, 1);
    let rb = w.irecv(1, &mut b, 0, 1);
    w.isend(0, 1, &m1, 1, SendMode::Standard).unwrap();
    w.isend(0, 1, &m2, 1, SendMode::Standard).unwrap();
    assert!(w.deliver_one());
    assert_eq!(armed_deliveries(&w, 1), 1);
    assert!(w.deliver_one());
    assert_eq!(w.wait(1, ra).count, 8);
    assert_eq!(w.wait(1, rb).count, 8);
    assert_eq!((a, b), (m1, m2));
    assert_eq!(armed_deliveries(&w, 1), 1);
}

/// A wildcard receive posted after the armed one does not take the
/// message the armed one matches; it takes the next.
#[test]
fn a_wildcard_posted_later_comes_after_the_armed_receive() {
    let mut w = world(3);
    let (mut a, mut any) = (vec![0u8; 8], vec![0u8; 8]);
    let (m1, m2) = (pattern(8, 11), pattern(8, 12));
    let ra = w.irecv(1, &mut a, 0, 2);
    let rw = w.irecv(1, &mut any, ANY_SOURCE, ANY_TAG);
    w.isend(0, 1, &m1, 2, SendMode::Standard).unwrap();
    w.settle();
    assert!(w.done(1, ra));
    assert!(!w.done(1, rw));
    w.isend(2, 1, &m2, 9, SendMode::Standard).unwrap();
    let st = w.wait(1, rw);
    assert_eq!((st.source, st.tag), (2, 9));
    assert_eq!((a, any), (m1, m2));
}

/// A wildcard receive posted first is never armed, nor is a receive
/// posted behind it: the wildcard takes the first message.
#[test]
fn nothing_is_armed_behind_an_earlier_receive() {
    let mut w = world(2);
    let (mut any, mut a) = (vec![0u8; 8], vec![0u8; 8]);
    let (m1, m2) = (pattern(8, 21), pattern(8, 22));
    let rw = w.irecv(1, &mut any, ANY_SOURCE, ANY_TAG);
    let ra = w.irecv(1, &mut a, 0, 3);
    w.isend(0, 1, &m1, 3, SendMode::Standard).unwrap();
    w.isend(0, 1, &m2, 3, SendMode::Standard).unwrap();
    w.settle();
    assert_eq!(w.wait(1, rw).count, 8);
    assert_eq!(w.wait(1, ra).count, 8);
    assert_eq!((any, a), (m1, m2));
    assert_eq!(armed_deliveries(&w, 1), 0);
}

/// A message longer than the armed receive's buffer takes the usual
/// truncation path.
#[test]
fn a_message_too_long_for_the_armed_receive_is_truncated_as_usual() {
    let mut w = world(2);
    let mut buf = vec![0xEEu8; 48];
    let msg = pattern(40, 3);
    let r = w.irecv_into(1, buf.as_mut_ptr(), 32, 0, 1);
    w.isend(0, 1, &msg, 1, SendMode::Standard).unwrap();
    w.settle();
    let st = w.wait(1, r);
    assert_eq!((st.count, st.error), (32, RequestError::Truncated));
    assert_eq!(&buf[..32], &msg[..32]);
    assert!(buf[32..].iter().all(|&b| b == 0xEE));
    assert_eq!(armed_deliveries(&w, 1), 0);
}

/// A cancelled armed receive takes nothing: the message waits for the
/// next receive, and the cancelled buffer is untouched.
#[test]
fn a_cancelled_armed_receive_takes_nothing() {
    let mut w = world(2);
    let mut gone = vec![0xEEu8; 8];
    let mut next = vec![0u8; 8];
    let msg = pattern(8, 31);
    let r = w.irecv(1, &mut gone, 0, 1);
    assert!(w.engines[1].cancel(r));
    assert!(w.test(1, r).unwrap().cancelled);
    w.isend(0, 1, &msg, 1, SendMode::Standard).unwrap();
    w.settle();
    assert!(gone.iter().all(|&b| b == 0xEE));
    let n = w.irecv(1, &mut next, 0, 1);
    assert_eq!(w.wait(1, n).count, 8);
    assert_eq!(next, msg);
    assert_eq!(armed_deliveries(&w, 1), 0);
}

/// A freed armed receive still lands (MPI completes a freed receive) and
/// its record goes once settled.
#[test]
fn a_freed_armed_receive_still_lands_and_is_released() {
    let mut w = world(2);
    let mut buf = vec![0u8; 8];
    let msg = pattern(8, 41);
    let r = w.irecv(1, &mut buf, 0, 1);
    w.free(1, r);
    w.isend(0, 1, &msg, 1, SendMode::Standard).unwrap();
    w.settle();
    assert_eq!(buf, msg);
    assert_eq!(armed_deliveries(&w, 1), 1);
    assert_eq!(w.engines[1].stats().live_requests, 0);
}

/// The loss of the armed receive's sender fails the receive; nothing
/// lands in its buffer afterwards.
#[test]
fn losing_the_sender_fails_the_armed_receive() {
    let mut w = world(2);
    let mut buf = vec![0xEEu8; 8];
    let r = w.irecv(1, &mut buf, 0, 1);
    w.engines[1].on_peer_failed(0, 0, 0, "connection reset");
    let st = w.test(1, r).expect("failed at once");
    assert_eq!(st.error, RequestError::PeerFailed);
    let msg = pattern(8, 51);
    let _ = w.isend(0, 1, &msg, 1, SendMode::Standard);
    w.settle();
    assert!(buf.iter().all(|&b| b == 0xEE));
    assert_eq!(armed_deliveries(&w, 1), 0);
}

/// With a message held back (it overtook its predecessor on another
/// module), a receive is not armed, and both messages match in sequence.
#[test]
fn nothing_is_armed_while_a_message_is_held_back() {
    let mut w = World::new(
        2,
        vec![btl(
            "tcp",
            vec![module("tcp0", 100, 10, 1000), module("tcp1", 100, 10, 1000)],
        )],
        8,
    );
    w.order(Order::HighModuleFirst);
    let (m1, m2) = (pattern(8, 61), pattern(8, 62));
    w.isend(0, 1, &m1, 1, SendMode::Standard).unwrap();
    w.isend(0, 1, &m2, 1, SendMode::Standard).unwrap();
    assert!(w.deliver_one());
    let (mut a, mut b) = (vec![0u8; 8], vec![0u8; 8]);
    let ra = w.irecv(1, &mut a, 0, 1);
    let rb = w.irecv(1, &mut b, 0, 1);
    w.settle();
    assert_eq!(w.wait(1, ra).count, 8);
    assert_eq!(w.wait(1, rb).count, 8);
    assert_eq!((a, b), (m1, m2));
    assert_eq!(armed_deliveries(&w, 1), 0);
    assert_eq!(
        w.net.borrow().arrivals[0].2,
        1,
        "the second message arrived first"
    );
}

/// A rendezvous from the armed receive's sender goes the usual way.
#[test]
fn a_rendezvous_goes_the_usual_way() {
    let mut w = world(2);
    let msg = pattern(100_000, 71);
    let mut buf = vec![0u8; 100_000];
    let r = w.irecv(1, &mut buf, 0, 1);
    let s = w.isend(0, 1, &msg, 1, SendMode::Standard).unwrap();
    w.settle();
    assert_eq!(w.wait(1, r).count, 100_000);
    assert_eq!(w.wait(0, s).error, RequestError::None);
    assert!(buf == msg);
    assert_eq!(armed_deliveries(&w, 1), 0);
}

/// A message to oneself through a loopback module goes the usual way and
/// matches the receive armed for oneself.
#[test]
fn a_message_to_oneself_goes_the_usual_way() {
    let mut w = World::new(2, vec![btl("self", vec![loopback_module("self")])], 8);
    let msg = pattern(64, 81);
    let mut buf = vec![0u8; 64];
    let r = w.irecv(0, &mut buf, 0, 1);
    w.isend(0, 0, &msg, 1, SendMode::Standard).unwrap();
    assert_eq!(w.wait(0, r).count, 64);
    assert_eq!(buf, msg);
    assert_eq!(armed_deliveries(&w, 0), 0);
}
