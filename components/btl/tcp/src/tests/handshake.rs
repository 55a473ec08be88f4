//! Connections that fail the handshake are closed, logged, and deliver
//! nothing; a legitimate peer keeps working.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use oxmpi_framework_btl::module::{JobIdentity, SendOutcome};

use super::harness::*;
use crate::wire::{self, FRAME_HEADER_LEN};
use crate::Config;

/// Connects to `target`'s listener, sends `bytes` (then half-closes if
/// `shutdown`), and pumps `target` until it logs a refusal of this
/// connection at level 0. Returns that line; checks the socket was closed
/// and nothing was delivered.
fn refused(target: &mut Rank<'_>, bytes: &[u8], shutdown: bool) -> String {
    let addr = target.btl().listen_addrs()[0];
    let mut s = TcpStream::connect(addr).expect("connect to the listener");
    let me = s.local_addr().unwrap().to_string();
    if !bytes.is_empty() {
        s.write_all(bytes).unwrap();
    }
    if shutdown {
        s.shutdown(Shutdown::Write).unwrap();
    }
    let before = target.frags();
    let tag = target.tag().to_owned();
    let needle = format!("refused a tcp connection from {me} ");
    let mut line = None;
    pump(&mut [target], "the refusal to be logged", |_| {
        line = lines_of(&tag)
            .into_iter()
            .find(|(l, m)| *l == 0 && m.starts_with(&needle))
            .map(|(_, m)| m);
        line.is_some()
    });
    // The connection is closed: reading gives end of stream (or a reset).
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut buf = [0u8; 64];
    match s.read(&mut buf) {
        Ok(0) => {}
        Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
        other => panic!("the refused connection is still open: {other:?}"),
    }
    spin(&mut [target], 50);
    assert_eq!(
        target.frags(),
        before,
        "a refused connection delivered something"
    );
    assert_eq!(target.failed(), 0, "{:?}", target.failures());
    target.check();
    let line = line.unwrap();
    assert!(
        line.ends_with("; closed it without delivering anything"),
        "{line}"
    );
    line
}

/// After the refusals, a legitimate rank 0 still reaches `b` (rank 1).
fn legit_peer_still_works(tag: &str, b: &mut Rank<'_>) {
    let mut a = Rank::new(tag, lo_config(), 0, 2).unwrap();
    let ep = a.add_peer(0, 1, &b.card()).unwrap();
    let before = b.frags();
    assert_ne!(a.send(0, ep, &[7, 7], &[1, 2, 3], 5), SendOutcome::Failed);
    pump(&mut [&mut a, b], "the legitimate fragment", |r| {
        r[1].frags() == before + 1
    });
    let frags = b.fragments();
    let f = frags.last().unwrap();
    assert_eq!(
        (f.peer, &f.header[..], &f.payload[..]),
        (0, &[7u8, 7][..], &[1u8, 2, 3][..])
    );
    a.check();
    b.check();
}

#[test]
fn garbage_is_refused() {
    let mut b = Rank::new("hs-garbage", lo_config(), 1, 2).unwrap();
    let line = refused(&mut b, &[b'x'; 48], false);
    assert!(
        line.contains("did not start with the oxmpi tcp handshake"),
        "{line}"
    );
    // More than a hello's worth of text (say, an HTTP request).
    let line = refused(
        &mut b,
        b"GET / HTTP/1.1\r\nHost: example\r\nUser-Agent: probe\r\n\r\n",
        false,
    );
    assert!(
        line.contains("did not start with the oxmpi tcp handshake"),
        "{line}"
    );
    legit_peer_still_works("hs-garbage-a", &mut b);
}

#[test]
fn wrong_secret_job_and_rank_are_refused() {
    let mut b = Rank::new("hs-secret", lo_config(), 1, 2).unwrap();
    let good = identity(0, 2);
    let wrong_secret = JobIdentity {
        secret: [good.secret[0], good.secret[1] ^ 1],
        ..good
    };
    let line = refused(&mut b, &wire::hello(&wrong_secret, 0, 0), false);
    assert!(line.contains("did not present this job's secret"), "{line}");
    let other_job = JobIdentity {
        job_id: good.job_id + 1,
        ..good
    };
    let line = refused(&mut b, &wire::hello(&other_job, 0, 0), false);
    assert!(line.contains("belongs to another job"), "{line}");
    let bad_rank = JobIdentity { rank: 5, ..good };
    let line = refused(&mut b, &wire::hello(&bad_rank, 0, 0), false);
    assert!(line.contains("claims rank 5"), "{line}");
    let own_rank = JobIdentity { rank: 1, ..good };
    let line = refused(&mut b, &wire::hello(&own_rank, 0, 0), false);
    assert!(line.contains("claims rank 1"), "{line}");
    let line = refused(&mut b, &wire::hello(&good, 3, 0), false);
    assert!(line.contains("asked for link 3"), "{line}");
    let line = refused(&mut b, &wire::hello(&good, 0, 4), false);
    assert!(line.contains("addressed interface 4"), "{line}");
    legit_peer_still_works("hs-secret-a", &mut b);
}

#[test]
fn short_and_silent_connections_are_refused() {
    let cfg = Config {
        handshake_timeout: Duration::from_millis(300),
        ..lo_config()
    };
    let mut b = Rank::new("hs-short", cfg, 1, 2).unwrap();
    let hello = wire::hello(&identity(0, 2), 0, 0);
    let line = refused(&mut b, &hello[..10], true);
    assert!(
        line.contains("closed the connection after 10 of the 48 handshake bytes"),
        "{line}"
    );
    let started = Instant::now();
    let line = refused(&mut b, &[], false);
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(
        line.contains("sent no complete handshake within 0.3 s (0 of 48 bytes)"),
        "{line}"
    );
    legit_peer_still_works("hs-short-a", &mut b);
}

#[test]
fn a_second_connection_for_the_same_rank_is_refused() {
    let (mut a, mut b, ab, _) = pair("hs-dup", lo_config());
    assert_eq!(a.send(0, ab, &[1], &[], 0), SendOutcome::Done);
    pump(&mut [&mut a, &mut b], "first fragment", |r| {
        r[1].frags() == 1
    });
    // Someone with the secret claims to be rank 0 again.
    let line = refused(&mut b, &wire::hello(&identity(0, 2), 0, 0), false);
    assert!(
        line.contains("rank 0 already has a connection to tcp lo link 0"),
        "{line}"
    );
    // The real rank 0 is unaffected.
    assert_eq!(a.send(0, ab, &[2], &[9], 0), SendOutcome::Done);
    pump(&mut [&mut a, &mut b], "second fragment", |r| {
        r[1].frags() == 2
    });
    a.check();
    b.check();
}

#[test]
fn a_raw_client_with_the_right_hello_gets_an_ack_and_delivers() {
    // The wire format as documented: hello, ack, frame header + pml
    // header + payload.
    let mut b = Rank::new("hs-raw", lo_config(), 1, 2).unwrap();
    let mut s = TcpStream::connect(b.btl().listen_addrs()[0]).unwrap();
    s.write_all(&wire::hello(&identity(0, 2), 0, 0)).unwrap();
    s.set_nonblocking(true).unwrap();
    let mut ack = [0u8; wire::ACK_LEN];
    let mut got = 0;
    pump(&mut [&mut b], "the acknowledgement", |_| {
        match s.read(&mut ack[got..]) {
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(e) => panic!("{e}"),
        }
        got == wire::ACK_LEN
    });
    wire::check_ack(&ack, 1).unwrap();
    let mut frame = vec![0u8; FRAME_HEADER_LEN + 2];
    wire::put_frame_header(&mut frame, &[4, 2], 5);
    frame.extend_from_slice(b"hello");
    s.set_nonblocking(false).unwrap();
    s.write_all(&frame).unwrap();
    pump(&mut [&mut b], "the raw fragment", |r| r[0].frags() == 1);
    let frags = b.fragments();
    assert_eq!(frags[0].header, [4, 2]);
    assert_eq!(frags[0].payload, b"hello");
    assert_eq!(frags[0].peer, 0);
    b.check();
}

#[test]
fn a_damaged_stream_after_the_handshake_fails_the_peer() {
    let mut b = Rank::new("hs-damaged", lo_config(), 1, 2).unwrap();
    let mut s = TcpStream::connect(b.btl().listen_addrs()[0]).unwrap();
    s.write_all(&wire::hello(&identity(0, 2), 0, 0)).unwrap();
    let mut frame = vec![0u8; FRAME_HEADER_LEN];
    wire::put_frame_header(&mut frame, &[], 1);
    frame.push(b'!');
    frame.extend_from_slice(&[0xde; FRAME_HEADER_LEN]);
    s.write_all(&frame).unwrap();
    pump(&mut [&mut b], "the failure", |r| r[0].failed() > 0);
    assert_eq!(
        b.frags(),
        1,
        "the good fragment before the damage is delivered"
    );
    let failed = b.failures();
    let (module, peer, why) = &failed[0];
    assert_eq!((*module, *peer), (0, 0));
    assert!(why.contains("the byte stream is damaged"), "{why}");
    b.check();
}

#[test]
fn strangers_holding_many_idle_connections_cannot_crowd_out_the_job() {
    let mut b = Rank::new("hs-crowd", lo_config(), 1, 2).unwrap();
    let addr = b.btl().listen_addrs()[0];
    // More idle connections than may be in their handshake at once, all
    // accepted before the job's own connection arrives.
    let held = crate::btl::MAX_HANDSHAKES + 44;
    let mut strangers = Vec::new();
    for _ in 0..held {
        strangers.push(TcpStream::connect(addr).expect("connect to the listener"));
        spin(&mut [&mut b], 8);
    }
    pump(&mut [&mut b], "every stranger to be taken in", |r| {
        r[0].btl().socket_counts().3 == crate::btl::MAX_HANDSHAKES
    });
    legit_peer_still_works("hs-crowd-a", &mut b);
    // The refusals (the dropped strangers) are logged one by one only up
    // to a burst, the rest counted for a summary.
    let refusals = b
        .lines()
        .into_iter()
        .filter(|(l, m)| *l == 0 && m.starts_with("refused a tcp connection"))
        .count();
    assert!(
        (1..=crate::refusals::BURST as usize).contains(&refusals),
        "{refusals} refusals logged one by one"
    );
    b.btl.take().unwrap().finalize();
    let summary = lines_of("hs-crowd")
        .into_iter()
        .find(|(_, m)| m.starts_with("refused ") && m.contains("more tcp connections"))
        .map(|(_, m)| m)
        .expect("a summary of the refusals at finalize");
    assert!(summary.contains("from 127.0.0.1"), "{summary}");
    assert!(summary.contains("dropped to make room"), "{summary}");
    b.check();
    drop(strangers);
}
