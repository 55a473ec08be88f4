//! Peers that die, finalize, cannot be reached, and a btl stopped after an
//! internal error.

use std::net::TcpListener;

use oxmpi_framework_btl::module::SendOutcome;
use oxmpi_netif::interfaces::Interface;

use super::harness::*;
use crate::card::{Card, CardInterface};

#[test]
fn a_peer_that_dies_is_reported_once() {
    let (mut a, mut b, ab, ba) = pair("death", lo_config());
    assert_eq!(a.send(0, ab, &[1], &[], 0), SendOutcome::Done);
    assert_eq!(b.send(0, ba, &[2], &[], 0), SendOutcome::Done);
    pump(&mut [&mut a, &mut b], "both connections", |r| {
        r[0].frags() == 1 && r[1].frags() == 1
    });
    // Rank 0 dies without finalizing.
    drop(a.btl.take());
    pump(&mut [&mut b], "the failure report", |r| r[0].failed() > 0);
    // Both of b's sockets to rank 0 fail; the peer is reported once.
    spin(&mut [&mut b], 3000);
    let failed = b.failures();
    assert_eq!(failed.len(), 1, "{failed:?}");
    let (module, peer, why) = &failed[0];
    assert_eq!((*module, *peer), (0, 0));
    assert!(why.contains("rank 0 via tcp lo link 0"), "{why}");
    assert!(why.contains("without saying goodbye"), "{why}");
    assert_eq!(b.send(0, ba, &[3], &[1], 0), SendOutcome::Failed);
    a.check();
    b.check();
}

#[test]
fn a_peer_that_finalizes_is_not_a_failure() {
    let (mut a, mut b, ab, ba) = pair("finalize", lo_config());
    assert_eq!(a.send(0, ab, &[1], &[], 0), SendOutcome::Done);
    assert_eq!(b.send(0, ba, &[2], &[], 0), SendOutcome::Done);
    pump(&mut [&mut a, &mut b], "both connections", |r| {
        r[0].frags() == 1 && r[1].frags() == 1
    });
    a.btl.take().unwrap().finalize();
    // Long enough for the idle check of b's outgoing connection.
    spin(&mut [&mut b], 5000);
    assert_eq!(b.failed(), 0, "{:?}", b.failures());
    assert_eq!(b.btl().socket_counts(), (1, 0, 0, 0));
    // Sending to a finalized peer fails, with a reason.
    assert_eq!(b.send(0, ba, &[3], &[1], 0), SendOutcome::Failed);
    spin(&mut [&mut b], 1);
    let failed = b.failures();
    assert_eq!(failed.len(), 1);
    assert!(failed[0].2.contains("already finalized"), "{failed:?}");
    a.check();
    b.check();
}

#[test]
fn a_refused_connect_fails_the_peer() {
    // A card pointing at a port nobody listens on.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    let card = Card {
        links: 1,
        interfaces: vec![CardInterface {
            iface: Interface::parse("lo", 1, "127.0.0.1/8").unwrap(),
            port,
        }],
    }
    .encode();
    let payload = [5u8; 10];
    let mut a = Rank::new("refused-connect", lo_config(), 0, 2).unwrap();
    let ep = a.add_peer(0, 1, &card).unwrap();
    let out = a.send(0, ep, &[1], &payload, 9);
    assert!(
        matches!(out, SendOutcome::Queued | SendOutcome::Failed),
        "{out:?}"
    );
    pump(&mut [&mut a], "the failure", |r| r[0].failed() > 0);
    let failed = a.failures();
    assert!(failed[0].2.contains("Connection refused"), "{failed:?}");
    assert!(a.done().is_empty(), "dropped sends get no on_send_done");
    a.check();
    let lines = a.lines();
    assert!(
        lines.iter().any(|(l, m)| *l == 30
            && m.starts_with(&format!(
                "connect() to address 127.0.0.1 on port {port} (rank 1) failed"
            ))),
        "{lines:?}"
    );
}

#[test]
fn an_internal_error_in_progress_fails_each_peer_once_and_stops() {
    let (mut a, mut b, ab, ba) = pair("stopped", lo_config());
    assert_eq!(a.send(0, ab, &[1], &[], 0), SendOutcome::Done);
    assert_eq!(b.send(0, ba, &[2], &[], 0), SendOutcome::Done);
    pump(&mut [&mut a, &mut b], "both connections", |r| {
        r[0].frags() == 1 && r[1].frags() == 1
    });
    b.stop_after_internal_error("'boom' at somewhere.rs:1");
    b.stop_after_internal_error("'again' at somewhere.rs:2");
    spin(&mut [&mut b], 100);
    assert_eq!(b.progress(), 0);
    let failed = b.failures();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!((failed[0].0, failed[0].1), (0, 0));
    assert!(failed[0].2.contains("internal error"), "{failed:?}");
    assert!(failed[0].2.contains("'boom'"), "{failed:?}");
    assert_eq!(b.send(0, ba, &[3], &[], 0), SendOutcome::Failed);
    let card = a.card();
    assert!(b.btl().add_peer(0, 0, &card).is_err());
    let stopped = b
        .lines()
        .into_iter()
        .filter(|(_, l)| l.contains("stopped after an internal error"))
        .count();
    assert_eq!(stopped, 1);
    // The peer sees the connection end (no goodbye) and fails rank 1.
    pump(&mut [&mut a], "rank 0 noticing", |r| r[0].failed() > 0);
    a.check();
    b.check();
}
