//! Resolving peers from their contact cards, and sends the btl refuses.

use oxmpi_framework_btl::module::SendOutcome;
use oxmpi_netif::interfaces::Interface;

use super::harness::*;
use crate::card::{Card, CardInterface};
use crate::Config;

#[test]
fn add_peer_reasons() {
    let mut a = Rank::new("peers", lo_config(), 0, 4).unwrap();
    let own = a.card();
    let err = a.btl().add_peer(0, 0, &own).unwrap_err();
    assert_eq!(
        err,
        "tcp does not connect a process to itself (the self btl does)"
    );
    let err = a.btl().add_peer(0, 4, &own).unwrap_err();
    assert!(
        err.contains("rank 4 is not in this job (it has 4 ranks)"),
        "{err}"
    );
    let err = a.btl().add_peer(3, 1, &own).unwrap_err();
    assert!(err.contains("there is no tcp module 3"), "{err}");
    let err = a.btl().add_peer(0, 1, &[]).unwrap_err();
    assert!(
        err.contains("rank 1 published no tcp contact card"),
        "{err}"
    );
    let err = a.btl().add_peer(0, 1, &own[..5]).unwrap_err();
    assert!(
        err.starts_with("rank 1's tcp contact card cannot be used: the card ends after 5 bytes"),
        "{err}"
    );
    let mut bad = own.clone();
    bad[0] = 7;
    let err = a.btl().add_peer(0, 1, &bad).unwrap_err();
    assert!(err.contains("format version 7"), "{err}");
    // A peer on a network only: loopback does not reach it.
    let remote = Card {
        links: 1,
        interfaces: vec![CardInterface {
            iface: Interface::parse("eth0", 2, "10.0.0.2/24").unwrap(),
            port: 5000,
        }],
    }
    .encode();
    let err = a.btl().add_peer(0, 2, &remote).unwrap_err();
    assert!(
        err.starts_with(
            "no tcp interface of this process reaches rank 2's interfaces (eth0 10.0.0.2/24)"
        ),
        "{err}"
    );
    assert!(err.contains("this process has lo 127.0.0.1/8"), "{err}");
    // A peer with fewer links.
    let two = Rank::new(
        "peers-links",
        Config {
            links: 2,
            ..lo_config()
        },
        1,
        4,
    )
    .unwrap();
    let card_two = two.card();
    drop(two);
    let mut one = Card::decode(&card_two).unwrap();
    one.links = 1;
    let mut b = Rank::new(
        "peers-links-b",
        Config {
            links: 2,
            ..lo_config()
        },
        0,
        4,
    )
    .unwrap();
    assert!(b.btl().add_peer(0, 3, &one.encode()).is_ok());
    let err = b.btl().add_peer(1, 3, &one.encode()).unwrap_err();
    assert!(
        err.contains("is link 1, but rank 3 runs only 1 tcp link(s) per interface"),
        "{err}"
    );
}

#[test]
fn an_interface_left_out_of_the_pairing_says_so() {
    // Two local loopback addresses (127.0.0.1 on lo, 127.0.0.2 as an
    // alias), one remote: one of the local modules is unpaired.
    let lo_index = crate::sys::if_index("lo");
    let candidates = vec![
        Interface::parse("lo", lo_index, "127.0.0.1/8").unwrap(),
        Interface::parse("lo:two", lo_index + 1000, "127.0.0.2/8").unwrap(),
    ];
    let cfg = Config {
        if_include: "lo,lo:two".into(),
        port_min_v4: 0,
        ..Config::default()
    };
    let mut a = crate::TcpBtl::new(cfg, identity(0, 2), context("unpaired"), &candidates).unwrap();
    assert_eq!(a.modules().len(), 2);
    let remote = Card {
        links: 1,
        interfaces: vec![CardInterface {
            iface: Interface::parse("lo", 1, "127.0.0.1/8").unwrap(),
            port: 5000,
        }],
    }
    .encode();
    let results: Vec<Result<u64, String>> = (0..2).map(|m| a.add_peer(m, 1, &remote)).collect();
    assert_eq!(
        results.iter().filter(|r| r.is_ok()).count(),
        1,
        "{results:?}"
    );
    let err = results.iter().find_map(|r| r.clone().err()).unwrap();
    assert!(
        err.contains("is not paired with any interface of rank 1"),
        "{err}"
    );
    assert!(err.contains("one connection per interface"), "{err}");
}

#[test]
fn bad_sends_are_refused() {
    let (mut a, _b, ab, _) = pair("bad-send", lo_config());
    assert_eq!(a.send(0, ab + 5, &[1], &[], 0), SendOutcome::Failed);
    assert_eq!(a.send(0, ab, &[0; 65], &[], 0), SendOutcome::Failed);
    assert!(a
        .lines()
        .iter()
        .any(|(l, m)| *l == 0 && m.starts_with("send refused")));
    a.check();
}
