//! Work done during the call: receives completed from an arrived message
//! without a request, and eager messages a process sends itself through a
//! loopback module, delivered during the send.

use oxmpi_framework_pml::module::{RequestError, SendMode, ANY_SOURCE, ANY_TAG};

use super::alloc::allocations;
use super::fake::{btl, loopback_module, module, pattern, World};

fn world(size: u32) -> World {
    World::new(
        size,
        vec![btl("tcp", vec![module("tcp0", 100, 10, 1000)])],
        8,
    )
}

/// Two ranks; besides tcp, a loopback `self` btl that reaches only its own
/// process.
fn world_with_self() -> World {
    let w = World::new(
        2,
        vec![
            btl("tcp", vec![module("tcp0", 100, 10, 1000)]),
            btl("self", vec![loopback_module("self")]),
        ],
        8,
    );
    w.net.borrow_mut().reach = Box::new(|src, b, _, dst| {
        if b == 1 && src != dst {
            Err("only reaches its own process".into())
        } else {
            Ok(())
        }
    });
    w
}

/// An eager message that arrived before its receive: the receive copies
/// it and completes in the call, with no request to test or free; the
/// oldest fitting message is the one taken.
#[test]
fn an_arrived_eager_message_completes_the_receive_at_once() {
    let mut w = world(2);
    let a = pattern(100, 1);
    let b = pattern(40, 2);
    w.isend(0, 1, &a, 7, SendMode::Standard).unwrap();
    w.isend(0, 1, &b, 8, SendMode::Standard).unwrap();
    w.settle();
    let live = w.engines[1].stats().live_requests;
    let mut buf = vec![0u8; 200];
    let (h, st) = w.irecv_or_complete(1, &mut buf, ANY_SOURCE, 8);
    assert_eq!(h, 0, "completed in the call");
    assert_eq!(
        (st.source, st.tag, st.count, st.error),
        (0, 8, 40, RequestError::None)
    );
    assert_eq!(&buf[..40], &b[..]);
    assert_eq!(
        w.engines[1].stats().live_requests,
        live,
        "no request was made"
    );
    let (h, st) = w.irecv_or_complete(1, &mut buf, 0, ANY_TAG);
    assert_eq!((h, st.tag, st.count), (0, 7, 100));
    assert_eq!(&buf[..100], &a[..]);
    // Nothing arrived: the receive is posted and completes later.
    let mut small = [0u8; 3];
    let (h, _) = w.irecv_or_complete(1, &mut small, 0, 9);
    assert_ne!(h, 0);
    w.isend(0, 1, b"abc", 9, SendMode::Standard).unwrap();
    assert_eq!(w.wait(1, h).count, 3);
    assert_eq!(&small, b"abc");
}

/// The steady state of receives completed at once allocates nothing.
#[test]
fn receives_completed_at_once_do_not_allocate() {
    let mut w = world(2);
    let msg = pattern(64, 3);
    let mut buf = vec![0u8; 64];
    for round in 0..50 {
        w.isend(0, 1, &msg, 1, SendMode::Standard).unwrap();
        w.settle();
        let before = allocations();
        let (h, st) = w.irecv_or_complete(1, &mut buf, 0, 1);
        assert_eq!((h, st.count), (0, 64));
        if round > 2 {
            assert_eq!(allocations(), before, "round {round} allocated");
        }
    }
}

/// An arrived message that does not fit, or a rendezvous: the receive
/// gets a request, as a posted one would, with the same outcome.
#[test]
fn a_truncated_or_rendezvous_arrival_still_makes_a_request() {
    let mut w = world(2);
    let long = pattern(100, 4);
    w.isend(0, 1, &long, 1, SendMode::Standard).unwrap();
    let big = pattern(300_000, 5);
    let s = w.isend(0, 1, &big, 2, SendMode::Standard).unwrap();
    w.settle();
    let mut buf = [0xEEu8; 80];
    let (h, _) = w.irecv_or_complete(1, &mut buf[..64], 0, 1);
    assert_ne!(h, 0, "a truncated message is reported through its request");
    let st = w.wait(1, h);
    assert_eq!((st.count, st.error), (64, RequestError::Truncated));
    assert_eq!(&buf[..64], &long[..64]);
    assert!(buf[64..].iter().all(|&x| x == 0xEE));
    assert_eq!(
        w.engines[1].request_error(h),
        "message of 100 bytes from rank 0 (tag 1) truncated to the 64-byte receive buffer"
    );
    let mut got = vec![0u8; big.len()];
    let (h, _) = w.irecv_or_complete(1, &mut got, 0, 2);
    assert_ne!(h, 0, "a rendezvous still has bytes to fetch");
    assert_eq!(w.wait(1, h).count, big.len());
    assert_eq!(w.wait(0, s).error, RequestError::None);
    assert_eq!(got, big);
}

/// Eager messages to oneself through a loopback module are delivered in
/// the send: the btl carries none of them, the send completes at once,
/// and a receive posted before or after gets the bytes.
#[test]
fn eager_sends_to_oneself_are_delivered_during_the_send() {
    let mut w = world_with_self();
    let msg = pattern(500, 6);
    // Posted first: matched during the send.
    let mut buf = vec![0u8; 500];
    let r = w.irecv(0, &mut buf, 0, 3);
    let s = w.isend(0, 0, &msg, 3, SendMode::Standard).unwrap();
    assert_eq!(s, 0, "the send completed in the call");
    assert_eq!(w.test(0, r).map(|st| st.count), Some(500));
    assert_eq!(buf, msg);
    // Posted after: kept as unexpected, and completed at once.
    let s = w.isend(0, 0, &msg, 4, SendMode::Standard).unwrap();
    assert_eq!(s, 0);
    let mut later = vec![0u8; 500];
    let (h, st) = w.irecv_or_complete(0, &mut later, 0, 4);
    assert_eq!((h, st.count), (0, 500));
    assert_eq!(later, msg);
    let net = w.net.borrow();
    assert_eq!(
        net.stat(0, 1, 0).matches,
        0,
        "the self btl carried no MATCH"
    );
    assert_eq!(net.in_flight(), 0);
}

/// Larger messages to oneself still go through the loopback btl, and an
/// eager message sent after one of them, though delivered first, matches
/// after it: receives see them in sending order.
#[test]
fn loopback_delivery_keeps_sending_order() {
    let mut w = world_with_self();
    let big = pattern(5000, 7);
    let small = pattern(10, 8);
    let s1 = w.isend(0, 0, &big, 5, SendMode::Standard).unwrap();
    let s2 = w.isend(0, 0, &small, 5, SendMode::Standard).unwrap();
    assert_ne!(s1, 0, "a rendezvous through the btl");
    assert_eq!(s2, 0);
    let mut first = vec![0u8; 5000];
    let mut second = vec![0u8; 5000];
    let r1 = w.irecv(0, &mut first, 0, 5);
    let r2 = w.irecv(0, &mut second, 0, 5);
    let (st1, st2) = (w.wait(0, r1), w.wait(0, r2));
    assert_eq!((st1.count, st2.count), (5000, 10));
    assert_eq!(first, big);
    assert_eq!(&second[..10], &small[..]);
    assert_eq!(w.wait(0, s1).error, RequestError::None);
    assert!(
        w.net.borrow().stat(0, 1, 0).rndvs > 0,
        "the btl carried the rendezvous"
    );
    // Synchronous sends to oneself are not eager: they go through the btl.
    let mut buf = [0u8; 2];
    let r = w.irecv(0, &mut buf, 0, 6);
    let s = w.isend(0, 0, b"hi", 6, SendMode::Synchronous).unwrap();
    assert_ne!(s, 0);
    w.run_until("synchronous send to oneself", |w| {
        w.done(0, s) && w.done(0, r)
    });
    assert_eq!(&buf, b"hi");
}

/// A loopback module is used only for one's own rank: sends to others go
/// over tcp as before.
#[test]
fn loopback_applies_to_ones_own_rank_only() {
    let mut w = world_with_self();
    let msg = pattern(20, 9);
    let mut buf = vec![0u8; 20];
    let r = w.irecv(1, &mut buf, 0, 1);
    w.isend(0, 1, &msg, 1, SendMode::Standard).unwrap();
    w.wait(1, r);
    assert_eq!(buf, msg);
    assert_eq!(w.net.borrow().stat(0, 0, 0).matches, 1, "tcp carried it");
    assert_eq!(w.isend(0, 0, &msg, 2, SendMode::Standard), Ok(0));
    let e = &w.engines[0];
    assert!(e.route(0).unwrap().lanes[0].loopback);
    assert!(!e.route(1).unwrap().lanes[0].loopback);
}
