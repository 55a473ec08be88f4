//! Per-peer btl choice, striping, unreachable peers.

use oxmpi_framework_pml::module::{SendMode, ANY_SOURCE};

use super::fake::{btl, module, pattern, World};
use crate::engine::BtlDesc;

/// A `self` btl (exclusivity 65536, reaches only its own rank) beats a
/// `tcp` btl that reaches everyone, for one's own rank only.
#[test]
fn self_module_with_higher_exclusivity_wins() {
    let mut w = World::new(
        2,
        vec![
            btl("tcp", vec![module("tcp0", 100, 100, 1000)]),
            btl("self", vec![module("self", 65536, 0, 100_000)]),
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
    let small = pattern(100, 1);
    let big = pattern(100_000, 2);
    for (to, m) in [(0u32, &small), (0, &big), (1, &small), (1, &big)] {
        let mut buf = vec![0u8; m.len()];
        let r = w.irecv(to, &mut buf, 0, 1);
        let s = w.isend(0, to, m, 1, SendMode::Standard).unwrap();
        w.run_until("message", |w| w.done(0, s) && w.done(to, r));
        assert_eq!(&buf, m);
    }
    let e = &w.engines[0];
    let to_self: Vec<&str> = e
        .route(0)
        .unwrap()
        .lanes
        .iter()
        .map(|l| e.module_label(l.module))
        .collect();
    assert_eq!(to_self, ["self"]);
    let to_one: Vec<&str> = e
        .route(1)
        .unwrap()
        .lanes
        .iter()
        .map(|l| e.module_label(l.module))
        .collect();
    assert_eq!(to_one, ["tcp0"]);
    let net = w.net.borrow();
    let (tcp, slf) = (net.stat(0, 0, 0), net.stat(0, 1, 0));
    assert_eq!(slf.match_bytes + slf.rndv_bytes + slf.frag_bytes, 100_100);
    assert_eq!(tcp.match_bytes + tcp.rndv_bytes + tcp.frag_bytes, 100_100);
}

/// Two modules with bandwidth 2:1 carry FRAG bytes about 2:1; eager
/// messages use only the lower-latency module.
#[test]
fn striping_follows_bandwidth_and_eager_uses_lowest_latency() {
    let fast = module("fast", 100, 10, 2000);
    let slow = module("slow", 100, 20, 1000);
    let mut w = World::new(2, vec![btl("tcp", vec![slow, fast])], 8);
    let big = pattern(8 << 20, 3);
    let mut buf = vec![0u8; big.len()];
    let r = w.irecv(1, &mut buf, 0, 0);
    let s = w.isend(0, 1, &big, 0, SendMode::Standard).unwrap();
    w.run_until("8 MiB", |w| w.done(0, s) && w.done(1, r));
    assert!(buf == big);
    let small = pattern(500, 4);
    for _ in 0..100 {
        let s = w.isend(0, 1, &small, 1, SendMode::Standard).unwrap();
        let mut b = [0u8; 500];
        let r = w.irecv(1, &mut b, 0, 1);
        w.run_until("small", |w| w.done(0, s) && w.done(1, r));
    }
    // Lanes are ordered by bandwidth, fast first.
    let e = &w.engines[0];
    let route = e.route(1).unwrap();
    assert_eq!(e.module_label(route.lanes[0].module), "fast");
    assert!((route.lanes[0].weight - 2.0 / 3.0).abs() < 1e-9);
    assert_eq!(route.eager, vec![0]);
    let net = w.net.borrow();
    let (slow, fast) = (net.stat(0, 0, 0), net.stat(0, 0, 1));
    let ratio = fast.frag_bytes as f64 / slow.frag_bytes as f64;
    assert!(
        (1.95..=2.05).contains(&ratio),
        "FRAG bytes {fast:?} vs {slow:?}: ratio {ratio}"
    );
    assert_eq!(
        slow.matches + slow.rndvs,
        0,
        "eager traffic on the slow module"
    );
    assert_eq!(fast.matches, 100);
    // ACKs went back over rank 1's fast module.
    assert_eq!(net.stat(1, 0, 1).acks, 1);
}

/// With every bandwidth 0, lanes share FRAGs equally.
#[test]
fn equal_weights_when_bandwidth_is_unknown() {
    let mut w = World::new(
        2,
        vec![btl(
            "tcp",
            vec![
                module("a", 100, 10, 0),
                module("b", 100, 10, 0),
                module("c", 100, 10, 0),
            ],
        )],
        8,
    );
    let big = pattern(3 << 20, 5);
    let mut buf = vec![0u8; big.len()];
    let r = w.irecv(1, &mut buf, 0, 0);
    let s = w.isend(0, 1, &big, 0, SendMode::Standard).unwrap();
    w.run_until("3 MiB", |w| w.done(0, s) && w.done(1, r));
    assert!(buf == big);
    let net = w.net.borrow();
    let bytes: Vec<usize> = (0..3).map(|m| net.stat(0, 0, m).frag_bytes).collect();
    let max = *bytes.iter().max().unwrap();
    let min = *bytes.iter().min().unwrap();
    assert!(max - min <= 8192, "{bytes:?}");
}

/// A lower-exclusivity btl is not used when a higher one reaches the
/// peer, even if it is faster.
#[test]
fn exclusivity_outranks_bandwidth() {
    let mut w = World::new(
        2,
        vec![
            btl("fast", vec![module("fast0", 10, 1, 100_000)]),
            btl("sm", vec![module("sm0", 1000, 5, 10)]),
        ],
        8,
    );
    let m = pattern(50_000, 6);
    let mut buf = vec![0u8; m.len()];
    let r = w.irecv(1, &mut buf, 0, 0);
    let s = w.isend(0, 1, &m, 0, SendMode::Standard).unwrap();
    w.run_until("message", |w| w.done(0, s) && w.done(1, r));
    assert!(buf == m);
    let net = w.net.borrow();
    assert_eq!(net.stat(0, 0, 0), Default::default());
    assert!(net.stat(0, 1, 0).frag_bytes > 0);
}

fn unreachable_world() -> World {
    let w = World::new(
        2,
        vec![
            btl(
                "tcp",
                vec![
                    module("tcp eth0", 100, 100, 1000),
                    module("tcp eth1", 100, 100, 1000),
                ],
            ),
            btl("sm", vec![module("sm", 1000, 5, 10_000)]),
            BtlDesc {
                name: "openib".into(),
                modules: Vec::new(),
                unusable: Some("init failed here: no InfiniBand device.".into()),
            },
        ],
        8,
    );
    {
        let mut net = w.net.borrow_mut();
        net.reach = Box::new(|src, b, _, dst| {
            if b == 0 && src != dst {
                Err("no local interface shares a network with the peer's.".into())
            } else {
                Ok(())
            }
        });
        net.cards.insert((1, "btl_sm".into()), None);
    }
    w
}

/// A peer no btl reaches: the sentence names both ranks and every btl with
/// its reason; it is remembered.
#[test]
fn unreachable_peer_sentence_lists_every_btl() {
    let mut w = unreachable_world();
    let expected = "rank 0 cannot reach rank 1: \
        tcp: no local interface shares a network with the peer's; \
        sm: rank 1 published no btl_sm contact card (the btl does not run there); \
        openib: init failed here: no InfiniBand device";
    for mode in [SendMode::Standard, SendMode::Synchronous] {
        let err = w.isend(0, 1, b"hi", 0, mode).unwrap_err();
        assert_eq!(err, expected);
    }
    // Rank 0 itself is reachable (tcp loopback, and sm's card is there).
    let mut buf = [0u8; 2];
    let r = w.irecv(0, &mut buf, 0, 0);
    let s = w.isend(0, 0, b"hi", 0, SendMode::Standard).unwrap();
    w.run_until("self", |w| w.done(0, s) && w.done(0, r));
    assert_eq!(&buf, b"hi");
}

/// Different reasons of one btl's modules are listed per module; a failed
/// modex lookup is reported.
#[test]
fn per_module_reasons_and_modex_failures() {
    let w = World::new(
        2,
        vec![btl(
            "tcp",
            vec![
                module("tcp eth0", 100, 100, 1000),
                module("tcp eth1", 100, 100, 1000),
            ],
        )],
        8,
    );
    w.net.borrow_mut().reach = Box::new(|_, _, m, _| Err(format!("reason {m}")));
    let mut w = w;
    let err = w.isend(0, 1, b"x", 0, SendMode::Standard).unwrap_err();
    assert_eq!(
        err,
        "rank 0 cannot reach rank 1: tcp: tcp eth0: reason 0, tcp eth1: reason 1"
    );
    let mut w2 = World::new(2, vec![btl("tcp", vec![module("tcp0", 100, 100, 1000)])], 8);
    w2.net
        .borrow_mut()
        .cards
        .insert((1, "btl_tcp".into()), Some(b"garbage".to_vec()));
    let err = w2.isend(0, 1, b"x", 0, SendMode::Standard).unwrap_err();
    assert!(
        err.starts_with("rank 0 cannot reach rank 1: tcp: card "),
        "{err}"
    );
}

/// Receives from an unreachable peer stay posted and harm nothing: other
/// traffic flows, they can be cancelled.
#[test]
fn receive_from_unreachable_peer_stays_posted() {
    let mut w = World::new(3, vec![btl("tcp", vec![module("tcp0", 100, 100, 1000)])], 8);
    w.net.borrow_mut().reach = Box::new(|src, _, _, dst| {
        if (src, dst) == (0, 1) || (src, dst) == (1, 0) {
            Err("firewalled".into())
        } else {
            Ok(())
        }
    });
    let mut b1 = [0u8; 4];
    let mut b2 = [0u8; 4];
    let from1 = w.irecv(0, &mut b1, 1, 0);
    let any = w.irecv(0, &mut b2, ANY_SOURCE, 0);
    let s = w.isend(2, 0, b"abcd", 0, SendMode::Standard).unwrap();
    w.run_until("message from 2", |w| w.done(2, s) && w.done(0, any));
    assert_eq!(&b2, b"abcd");
    for _ in 0..100 {
        w.step();
    }
    assert!(!w.done(0, from1));
    assert!(w.engines[0].cancel(from1));
    assert!(w.test(0, from1).unwrap().cancelled);
    assert!(w.isend(1, 0, b"x", 0, SendMode::Standard).is_err());
}
