//! Connections carrying data both ways: the acceptor sends on the
//! connection made to it when it has not connected itself; when both
//! connect at once each sends on its own socket and reads both.

use oxmpi_framework_btl::module::SendOutcome;

use super::harness::*;

/// Rank `to` receives fragment number `n` (1-based count reached).
fn wait_frags(ranks: &mut [&mut Rank<'_>], to: usize, n: usize, what: &str) {
    pump(ranks, what, |r| r[to].frags() >= n);
}

#[test]
fn a_ping_pong_uses_one_socket_per_link() {
    let ping = pattern(8, 1);
    let pong = pattern(8, 2);
    let (mut a, mut b, ab, ba) = pair("shared-pingpong", lo_config());
    for round in 0..200usize {
        let out = a.send(0, ab, &(round as u32).to_le_bytes(), &ping, 0);
        // The first one waits for the connection.
        let expected = if round == 0 {
            SendOutcome::Queued
        } else {
            SendOutcome::Done
        };
        assert_eq!(out, expected, "ping {round}");
        wait_frags(&mut [&mut a, &mut b], 1, round + 1, "the ping");
        // b answers only after a's fragment arrived: its endpoint takes
        // over the connection a made, which is up at once (Done).
        let out = b.send(0, ba, &(round as u32).to_le_bytes(), &pong, 0);
        assert_eq!(out, SendOutcome::Done, "pong {round}");
        wait_frags(&mut [&mut a, &mut b], 0, round + 1, "the pong");
    }
    for (rank, payload, from) in [(&a, &pong, 1u32), (&b, &ping, 0u32)] {
        rank.check();
        assert_eq!(rank.failed(), 0, "{:?}", rank.failures());
        for (i, f) in rank.fragments().iter().enumerate() {
            assert_eq!((f.module, f.peer), (0, from));
            assert_eq!(f.header, (i as u32).to_le_bytes(), "order");
            assert_eq!(&f.payload, payload);
        }
    }
    // One socket in each process: a made it, b accepted it and sends on
    // it too.
    assert_eq!(a.btl().socket_counts(), (1, 1, 0, 0));
    assert_eq!(b.btl().socket_counts(), (1, 0, 1, 0));
    assert!(a.btl().endpoint_fd(ab).is_some() && b.btl().endpoint_fd(ba).is_some());
    assert!(b.lines().iter().any(|(l, m)| *l == 30
        && m.starts_with("sending to rank 0 on the connection it made from 127.0.0.1:")
        && m.ends_with("(tcp lo link 0)")));
    // b never connected.
    assert!(!b
        .lines()
        .iter()
        .any(|(_, m)| m.starts_with("attempting to connect()")));
}

#[test]
fn a_connection_accepted_before_add_peer_is_shared() {
    let big = pattern(3 << 20, 4);
    let back = pattern(5 << 20, 5);
    let mut a = Rank::new("shared-late-0", lo_config(), 0, 2).unwrap();
    let mut b = Rank::new("shared-late-1", lo_config(), 1, 2).unwrap();
    let cb = b.card();
    let ab = a.add_peer(0, 1, &cb).unwrap();
    assert_ne!(a.send(0, ab, &[1], &big, 1), SendOutcome::Failed);
    wait_frags(&mut [&mut a, &mut b], 1, 1, "a's fragment");
    let ca = a.card();
    let ba = b.add_peer(0, 0, &ca).unwrap();
    // Large, so that it is queued and written by progress on the shared
    // socket.
    assert_ne!(b.send(0, ba, &[2], &back, 2), SendOutcome::Failed);
    wait_frags(&mut [&mut a, &mut b], 0, 1, "b's answer");
    assert!(a.fragments()[0].payload == back);
    assert!(b.fragments()[0].payload == big);
    assert_eq!(a.btl().socket_counts(), (1, 1, 0, 0));
    assert_eq!(b.btl().socket_counts(), (1, 0, 1, 0));
    a.check();
    b.check();
}

#[test]
fn simultaneous_first_sends_keep_two_sockets_and_order() {
    const N: usize = 10_000;
    // Mostly small, now and then a large one (queued sends in the mix).
    let size = |i: usize| if i % 1000 == 999 { 200_000 } else { i % 61 };
    let to_b: Vec<Vec<u8>> = (0..N).map(|i| pattern(size(i), i as u32)).collect();
    let to_a: Vec<Vec<u8>> = (0..N).map(|i| pattern(size(i), (N + i) as u32)).collect();
    let (mut a, mut b, ab, ba) = pair("shared-race", lo_config());
    a.rec().set_default_placement(Placement::Destination);
    // Both send before either has progressed: both connect.
    assert_ne!(
        a.send(0, ab, &0u32.to_le_bytes(), &to_b[0], 0),
        SendOutcome::Failed
    );
    assert_ne!(
        b.send(0, ba, &0u32.to_le_bytes(), &to_a[0], 0),
        SendOutcome::Failed
    );
    let (mut sa, mut sb) = (1usize, 1usize);
    pump(&mut [&mut a, &mut b], "10000 fragments each way", |r| {
        for _ in 0..200 {
            if sa < N {
                let out = r[0].send(0, ab, &(sa as u32).to_le_bytes(), &to_b[sa], sa as u64);
                assert_ne!(out, SendOutcome::Failed);
                sa += 1;
            }
            if sb < N {
                let out = r[1].send(0, ba, &(sb as u32).to_le_bytes(), &to_a[sb], sb as u64);
                assert_ne!(out, SendOutcome::Failed);
                sb += 1;
            }
        }
        r[0].frags() == N && r[1].frags() == N
    });
    for (rank, expect, from) in [(&a, &to_a, 1u32), (&b, &to_b, 0u32)] {
        rank.check();
        assert_eq!(rank.failed(), 0, "{:?}", rank.failures());
        for (i, f) in rank.fragments().iter().enumerate() {
            assert_eq!(f.peer, from);
            assert_eq!(
                f.header,
                (i as u32).to_le_bytes(),
                "fragment {i} out of order"
            );
            assert!(f.payload == expect[i], "fragment {i} payload");
        }
    }
    // Each made one connection and accepted the other's.
    assert_eq!(a.btl().socket_counts(), (1, 1, 1, 0));
    assert_eq!(b.btl().socket_counts(), (1, 1, 1, 0));
    // Each sends on the socket it made, and reads the other.
    assert!(a
        .lines()
        .iter()
        .any(|(_, m)| m.starts_with("attempting to connect()")));
    assert!(b
        .lines()
        .iter()
        .any(|(_, m)| m.starts_with("attempting to connect()")));
    assert!(!a
        .lines()
        .iter()
        .any(|(_, m)| m.starts_with("sending to rank")));
}

/// Two ranks sharing one socket (rank 0 made it, rank 1 answers on it).
fn shared_pair<'p>(tag: &str) -> (Rank<'p>, Rank<'p>, u64, u64) {
    let (mut a, mut b, ab, ba) = pair(tag, lo_config());
    assert_eq!(a.send(0, ab, &[1], &[], 0), SendOutcome::Done);
    wait_frags(&mut [&mut a, &mut b], 1, 1, "the first fragment");
    assert_eq!(b.send(0, ba, &[2], &[], 0), SendOutcome::Done);
    wait_frags(&mut [&mut a, &mut b], 0, 1, "the answer");
    assert_eq!(a.btl().socket_counts(), (1, 1, 0, 0));
    assert_eq!(b.btl().socket_counts(), (1, 0, 1, 0));
    (a, b, ab, ba)
}

/// `rank` reports `peer` failed once, without a goodbye, and sends to it
/// fail.
fn reports_death(rank: &mut Rank<'_>, ep: u64, peer: u32) {
    pump(&mut [&mut *rank], "the failure report", |r| {
        r[0].failed() > 0
    });
    spin(&mut [&mut *rank], 2000);
    let failed = rank.failures();
    assert_eq!(failed.len(), 1, "{failed:?}");
    let (module, who, why) = &failed[0];
    assert_eq!((*module, *who), (0, peer));
    assert!(why.contains("without saying goodbye"), "{why}");
    assert_eq!(rank.send(0, ep, &[3], &[1], 0), SendOutcome::Failed);
    assert_eq!(
        rank.btl().socket_counts().1 + rank.btl().socket_counts().2,
        0
    );
    rank.check();
}

#[test]
fn the_death_of_the_connector_on_a_shared_socket_is_reported_once() {
    let (mut a, mut b, _, ba) = shared_pair("shared-death-connector");
    drop(a.btl.take());
    reports_death(&mut b, ba, 0);
}

#[test]
fn the_death_of_the_acceptor_on_a_shared_socket_is_reported_once() {
    let (mut a, mut b, ab, _) = shared_pair("shared-death-acceptor");
    drop(b.btl.take());
    reports_death(&mut a, ab, 1);
}

/// `rank` sees `peer` finish cleanly: no failure, no sockets left, and a
/// send to it fails saying it finalized.
fn sees_goodbye(rank: &mut Rank<'_>, ep: u64) {
    pump(&mut [&mut *rank], "the connection to end", |r| {
        let c = r[0].btl().socket_counts();
        c.1 + c.2 == 0
    });
    spin(&mut [&mut *rank], 2000);
    assert_eq!(rank.failed(), 0, "{:?}", rank.failures());
    assert_eq!(rank.btl().socket_counts(), (1, 0, 0, 0));
    assert_eq!(rank.send(0, ep, &[3], &[1], 0), SendOutcome::Failed);
    spin(&mut [&mut *rank], 1);
    let failed = rank.failures();
    assert_eq!(failed.len(), 1);
    assert!(failed[0].2.contains("already finalized"), "{failed:?}");
    rank.check();
}

#[test]
fn a_goodbye_on_a_shared_socket_is_clean_either_way() {
    let (mut a, mut b, _, ba) = shared_pair("shared-bye-connector");
    a.btl.take().unwrap().finalize();
    sees_goodbye(&mut b, ba);
    b.btl.take().unwrap().finalize();

    let (mut a, mut b, ab, _) = shared_pair("shared-bye-acceptor");
    b.btl.take().unwrap().finalize();
    sees_goodbye(&mut a, ab);
}

#[test]
fn goodbyes_crossing_on_a_shared_socket_are_clean() {
    // b's fragment (standing in for its goodbye) is still unread at a when
    // a finalizes, so a's close resets the connection after a's goodbye:
    // b must still see a clean end.
    let p = pattern(100, 7);
    let (mut a, mut b, _, ba) = shared_pair("shared-bye-crossing");
    assert_eq!(b.send(0, ba, &[4], &p, 0), SendOutcome::Done);
    spin(&mut [&mut b], 10);
    a.btl.take().unwrap().finalize();
    sees_goodbye(&mut b, ba);
}

#[test]
fn a_rank_answering_many_peers_shares_every_socket() {
    // Seven connections to rank 0, read through epoll, each carrying rank
    // 0's answer back.
    const N: u32 = 8;
    let p = pattern(3000, 8);
    let mut ranks: Vec<Rank<'_>> = (0..N)
        .map(|r| Rank::new(&format!("shared-fan-{r}"), lo_config(), r, N).unwrap())
        .collect();
    let card0 = ranks[0].card();
    let cards: Vec<Vec<u8>> = ranks.iter().map(Rank::card).collect();
    let to0: Vec<u64> = (1..N as usize)
        .map(|r| ranks[r].add_peer(0, 0, &card0).unwrap())
        .collect();
    let from0: Vec<u64> = (1..N as usize)
        .map(|r| ranks[0].add_peer(0, r as u32, &cards[r]).unwrap())
        .collect();
    for (k, r) in (1..N as usize).enumerate() {
        assert_ne!(
            ranks[r].send(0, to0[k], &[r as u8], &p, 0),
            SendOutcome::Failed
        );
    }
    {
        let mut refs: Vec<&mut Rank<'_>> = ranks.iter_mut().collect();
        pump(&mut refs, "a fragment from everyone", |r| {
            r[0].frags() == N as usize - 1
        });
    }
    for (k, r) in (1..N as usize).enumerate() {
        assert_ne!(
            ranks[0].send(0, from0[k], &[0, r as u8], &p, k as u64),
            SendOutcome::Failed
        );
    }
    {
        let mut refs: Vec<&mut Rank<'_>> = ranks.iter_mut().collect();
        pump(&mut refs, "the answers", |r| {
            r[1..].iter().all(|x| x.frags() == 1)
        });
    }
    assert_eq!(ranks[0].btl().socket_counts(), (1, 0, N as usize - 1, 0));
    for (k, r) in ranks.iter().enumerate().skip(1) {
        r.check();
        assert_eq!(r.fragments()[0].header, [0, k as u8]);
        assert_eq!(r.btl.as_ref().unwrap().socket_counts(), (1, 1, 0, 0));
    }
    // One of them dies: rank 0 reports it once (epoll path), the others
    // still answer.
    drop(ranks[4].btl.take());
    {
        let mut refs: Vec<&mut Rank<'_>> = ranks.iter_mut().collect();
        pump(&mut refs, "the failure of rank 4", |r| r[0].failed() > 0);
    }
    let failed = ranks[0].failures();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].1, 4);
    assert_ne!(
        ranks[0].send(0, from0[1], &[9], &p, 100),
        SendOutcome::Failed
    );
    let mut refs: Vec<&mut Rank<'_>> = ranks.iter_mut().collect();
    pump(&mut refs, "an answer after the failure", |r| {
        r[2].frags() == 2
    });
    for r in &ranks {
        r.check();
    }
}

#[test]
fn nagle_stays_off_on_an_accepted_socket_used_for_sending() {
    let (_a, mut b, _, ba) = shared_pair("shared-nodelay");
    let fd = b.btl().endpoint_fd(ba).unwrap();
    let nodelay = crate::sys::get_int(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY).unwrap();
    assert_eq!(nodelay, 1);
    b.check();
}
