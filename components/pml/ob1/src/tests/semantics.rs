//! MPI semantics: truncation, synchronous sends, cancel, probe, free,
//! handles, arguments, peer failure, the pipeline depth.

use oxmpi_framework_pml::module::{RequestError, SendMode, ANY_SOURCE, ANY_TAG};

use super::fake::{btl, module, pattern, World};

fn world(size: u32) -> World {
    World::new(
        size,
        vec![btl("tcp", vec![module("tcp0", 100, 10, 1000)])],
        8,
    )
}

/// An eager message longer than the buffer: the buffer holds its first
/// bytes, nothing beyond is written, the status and sentence say so —
/// whether the receive was posted before or after the message arrived.
#[test]
fn eager_truncation_keeps_first_bytes_and_says_so() {
    for posted_first in [true, false] {
        let mut w = world(2);
        let msg = pattern(100, 1);
        let mut buf = vec![0xEEu8; 80];
        let mut r = 0;
        if posted_first {
            r = w.irecv_into(1, buf.as_mut_ptr(), 64, 0, 5);
        }
        let s = w.isend(0, 1, &msg, 5, SendMode::Standard).unwrap();
        w.settle();
        if !posted_first {
            r = w.irecv_into(1, buf.as_mut_ptr(), 64, 0, 5);
        }
        let st = w.wait(1, r);
        assert_eq!((st.source, st.tag, st.count), (0, 5, 64));
        assert_eq!(st.error, RequestError::Truncated);
        assert_eq!(&buf[..64], &msg[..64]);
        assert!(buf[64..].iter().all(|&b| b == 0xEE));
        assert_eq!(
            w.engines[1].request_error(r),
            "message of 100 bytes from rank 0 (tag 5) truncated to the 64-byte receive buffer"
        );
        assert_eq!(w.wait(0, s).error, RequestError::None);
    }
}

/// A rendezvous message longer than the buffer: the ACK asks for what
/// fits, the sender sends no more and completes normally.
#[test]
fn rendezvous_truncation_sends_only_what_fits() {
    for (capacity, posted_first) in [(300_001usize, true), (300_001, false), (100, true)] {
        let mut w = world(2);
        w.net.borrow_mut().queue_payloads = true;
        let msg = pattern(1 << 20, 2);
        let mut buf = vec![0xEEu8; capacity + 32];
        let mut r = 0;
        if posted_first {
            r = w.irecv_into(1, buf.as_mut_ptr(), capacity, 0, 9);
        }
        let s = w.isend(0, 1, &msg, 9, SendMode::Standard).unwrap();
        w.settle();
        if !posted_first {
            r = w.irecv_into(1, buf.as_mut_ptr(), capacity, 0, 9);
        }
        let st = w.wait(1, r);
        assert_eq!((st.count, st.error), (capacity, RequestError::Truncated));
        assert!(buf[..capacity] == msg[..capacity]);
        assert!(buf[capacity..].iter().all(|&b| b == 0xEE));
        assert_eq!(
            w.engines[1].request_error(r),
            format!(
                "message of 1048576 bytes from rank 0 (tag 9) truncated to the {capacity}-byte receive buffer"
            )
        );
        let sst = w.wait(0, s);
        assert_eq!((sst.error, sst.count), (RequestError::None, 1 << 20));
        let sent = w.net.borrow().stat(0, 0, 0);
        assert_eq!(sent.rndv_bytes, 1024);
        assert_eq!(sent.frag_bytes, capacity.saturating_sub(1024));
    }
}

/// A synchronous send does not complete before the matching receive is
/// posted, and completes after; a standard eager send completes at once.
#[test]
fn synchronous_send_completes_only_after_the_match() {
    for size in [10usize, 1024, 50_000] {
        let mut w = world(2);
        let msg = pattern(size, 3);
        let s = w.isend(0, 1, &msg, 2, SendMode::Synchronous).unwrap();
        for _ in 0..200 {
            w.step();
        }
        assert!(
            !w.done(0, s),
            "ssend of {size} bytes completed without a receive"
        );
        assert_eq!(w.engines[1].stats().unexpected, 1);
        let mut buf = vec![0u8; size];
        let r = w.irecv(1, &mut buf, 0, 2);
        w.run_until("ssend", |w| w.done(0, s) && w.done(1, r));
        assert_eq!(buf, msg);
    }
    let mut w = world(2);
    let s = w.isend(0, 1, b"eager", 2, SendMode::Standard).unwrap();
    assert!(w.done(0, s), "a standard eager send waits for nothing");
}

/// Only receives that have not matched can be cancelled; a cancelled
/// receive takes no message.
#[test]
fn cancel_only_unmatched_receives() {
    let mut w = world(2);
    let mut b1 = [0u8; 8];
    let mut b2 = [0u8; 8];
    let r1 = w.irecv(1, &mut b1, 0, 1);
    assert!(w.engines[1].cancel(r1));
    let st = w.test(1, r1).unwrap();
    assert!(st.cancelled);
    assert_eq!((st.source, st.tag, st.count), (ANY_SOURCE, ANY_TAG, 0));
    assert_eq!(
        w.engines[1].request_error(r1),
        format!("request {r1:#x} was cancelled")
    );
    assert!(!w.engines[1].cancel(r1), "cancelled twice");
    let s = w.isend(0, 1, b"12345678", 1, SendMode::Standard).unwrap();
    w.settle();
    assert_eq!(b1, [0; 8], "a cancelled receive took data");
    assert!(w.engines[1].iprobe(0, 0, 1).is_some());
    let r2 = w.irecv(1, &mut b2, 0, 1);
    assert!(w.done(1, r2));
    assert!(!w.engines[1].cancel(r2), "a matched receive was cancelled");
    assert!(!w.engines[0].cancel(s), "a send was cancelled");
}

/// iprobe reports source, tag and the full length, for eager and
/// rendezvous messages, and leaves them in place.
#[test]
fn probe_reports_full_length() {
    let mut w = world(2);
    let big = pattern(1 << 20, 4);
    let s1 = w.isend(0, 1, b"0123456789", 3, SendMode::Standard).unwrap();
    let s2 = w.isend(0, 1, &big, 4, SendMode::Standard).unwrap();
    w.settle();
    let e = &w.engines[1];
    let p = e.iprobe(0, 0, 4).unwrap();
    assert_eq!((p.source, p.tag, p.count), (0, 4, 1 << 20));
    let p = e.iprobe(0, ANY_SOURCE, ANY_TAG).unwrap();
    assert_eq!((p.source, p.tag, p.count), (0, 3, 10));
    assert!(e.iprobe(0, 1, ANY_TAG).is_none());
    assert!(e.iprobe(1, ANY_SOURCE, ANY_TAG).is_none());
    assert!(e.iprobe(0, 0, -5).is_none());
    let mut small = [0u8; 10];
    let r = w.irecv(1, &mut small, 0, 3);
    assert!(w.done(1, r));
    let p = w.engines[1].iprobe(0, ANY_SOURCE, ANY_TAG).unwrap();
    assert_eq!((p.tag, p.count), (4, 1 << 20));
    let mut buf = vec![0u8; 1 << 20];
    let r = w.irecv(1, &mut buf, 0, 4);
    w.run_until("big", |w| w.done(1, r) && w.done(0, s2));
    assert!(buf == big);
    assert!(w.done(0, s1));
    assert!(w.engines[1].iprobe(0, ANY_SOURCE, ANY_TAG).is_none());
}

/// Freeing an incomplete send detaches it: the handle is gone at once, the
/// message still arrives, the record is released when it completes. The
/// same for a receive.
#[test]
fn free_of_incomplete_requests_detaches_them() {
    let mut w = world(2);
    w.net.borrow_mut().queue_payloads = true;
    let big = pattern(1 << 20, 5);
    let s = w.isend(0, 1, &big, 0, SendMode::Standard).unwrap();
    w.engines[0].free(s);
    assert_eq!(w.test(0, s).unwrap().error, RequestError::Other);
    assert_eq!(
        w.engines[0].request_error(s),
        format!("pml ob1 has no request {s:#x}: it was freed, or never issued")
    );
    assert_eq!(w.engines[0].stats().live_requests, 1);
    let mut buf = vec![0u8; 1 << 20];
    let r = w.irecv(1, &mut buf, 0, 0);
    w.run_until("detached send", |w| w.done(1, r));
    w.settle();
    assert!(buf == big);
    assert_eq!(w.engines[0].stats().live_requests, 0);
    w.engines[1].free(r);

    let mut small = [0u8; 4];
    let r = w.irecv(1, &mut small, 0, 1);
    w.engines[1].free(r);
    let s = w.isend(0, 1, b"abcd", 1, SendMode::Standard).unwrap();
    w.settle();
    assert_eq!(&small, b"abcd");
    assert!(w.done(0, s));
    w.engines[0].free(s);
    w.engines[1].free(r); // already gone: no effect
    assert_eq!(w.engines[1].stats().live_requests, 0);
    assert_eq!(w.engines[0].stats().live_requests, 0);
}

/// Unknown handles are refused everywhere, with a sentence.
#[test]
fn stale_handles_are_refused() {
    let mut w = world(2);
    let e = &mut w.engines[0];
    for h in [0u64, 12345, u64::MAX] {
        let st = e.test(h).unwrap();
        assert_eq!(st.error, RequestError::Other);
        assert_eq!(
            e.request_error(h),
            format!("pml ob1 has no request {h:#x}: it was freed, or never issued")
        );
        assert!(!e.cancel(h));
        e.free(h);
        e.on_send_done(h);
    }
    // A synchronous send (it waits for the match, so it has a handle).
    let mut one = [0u8; 1];
    w.irecv(1, &mut one, 0, 0);
    let s = w.isend(0, 1, b"x", 0, SendMode::Synchronous).unwrap();
    assert_ne!(s, 0);
    w.settle();
    assert!(w.done(0, s));
    assert_eq!(
        w.engines[0].request_error(s),
        format!("request {s:#x} completed without error")
    );
    w.engines[0].free(s);
    assert_eq!(w.test(0, s).unwrap().error, RequestError::Other);
}

/// Bad ranks and null buffers are refused with sentences.
#[test]
fn invalid_arguments_are_refused() {
    let mut w = world(2);
    assert_eq!(
        w.isend(0, 5, b"x", 0, SendMode::Standard).unwrap_err(),
        "rank 0 cannot send to rank 5: the job has 2 ranks (0 to 1)"
    );
    assert_eq!(
        w.isend(0, 1, b"x", ANY_TAG, SendMode::Standard)
            .unwrap_err(),
        "rank 0 cannot send to rank 1 with tag -1: that is MPI_ANY_TAG, which no receive can match"
    );
    let args = oxmpi_framework_pml::module::SendArgs {
        buf: std::ptr::null(),
        len: 3,
        dest: 1,
        tag: 0,
        context: 0,
        mode: SendMode::Standard,
        done: std::ptr::null(),
    };
    // SAFETY: refused before any read.
    let err = unsafe { w.engines[0].isend(&args) }.unwrap_err();
    assert_eq!(
        err,
        (
            oxmpi_framework_pml::module::RequestError::Other,
            "rank 0 cannot send 3 bytes to rank 1: the buffer is a null pointer".to_string()
        )
    );
    for source in [2, -2] {
        let args = oxmpi_framework_pml::module::RecvArgs {
            buf: std::ptr::null_mut(),
            len: 0,
            source,
            tag: 0,
            context: 0,
            done: std::ptr::null(),
        };
        // SAFETY: refused before any write.
        let err = unsafe { w.engines[0].irecv(&args) }.unwrap_err();
        assert_eq!(
            err,
            format!("rank 0 cannot receive from rank {source}: the job has 2 ranks (0 to 1; -1 for any source)")
        );
    }
    let args = oxmpi_framework_pml::module::RecvArgs {
        buf: std::ptr::null_mut(),
        len: 8,
        source: 0,
        tag: 0,
        context: 0,
        done: std::ptr::null(),
    };
    // SAFETY: refused before any write.
    let err = unsafe { w.engines[1].irecv(&args) }.unwrap_err();
    assert_eq!(
        err,
        "rank 1 cannot post a receive of 8 bytes: the buffer is a null pointer"
    );
}

/// A lost peer: sends to it, receives naming it and receives in rendezvous
/// with it fail; ANY_SOURCE receives and other peers' traffic go on; eager
/// data that already arrived from it can still be received; later sends
/// fail at once.
#[test]
fn peer_failure_fails_the_right_requests() {
    let mut w = world(3);
    let big = pattern(100_000, 6);
    // Rank 1 sends a small eager message that arrives before the failure.
    let early = w.isend(1, 0, b"early", 8, SendMode::Standard).unwrap();
    w.settle();
    assert!(w.done(1, early));
    // A rendezvous send from 0 to 1, unmatched there: waits for the ACK.
    let s_big = w.isend(0, 1, &big, 3, SendMode::Standard).unwrap();
    let mut b_from1 = [0u8; 8];
    let mut b_any = [0u8; 8];
    let mut b_from2 = [0u8; 8];
    let r_from1 = w.irecv(0, &mut b_from1, 1, 4);
    let r_any = w.irecv(0, &mut b_any, ANY_SOURCE, 9);
    let r_from2 = w.irecv(0, &mut b_from2, 2, 0);
    // A rendezvous from 1 that rank 0 matched, its ACK not yet sent.
    let mut b_rndv = vec![0u8; 100_000];
    let r_rndv = w.irecv(0, &mut b_rndv, 1, 7);
    let s_from1 = w.isend(1, 0, &big, 7, SendMode::Standard).unwrap();
    w.settle();
    let _ = s_from1;
    assert!(!w.done(0, s_big));
    // Make rank 0 match a second rendezvous from 1 and stop before the ACK
    // leaves: deliver without progress.
    let mut b_rndv2 = vec![0u8; 100_000];
    let r_rndv2 = w.irecv(0, &mut b_rndv2, 1, 10);
    let _s2 = w.isend(1, 0, &big, 10, SendMode::Standard).unwrap();
    while w.deliver_one() {}
    assert_eq!(w.engines[0].stats().pending_acks, 1);
    assert!(
        w.done(0, r_rndv),
        "the first rendezvous completed before the failure"
    );

    w.engines[0].on_peer_failed(0, 0, 1, "connection reset by peer.");
    let reason = "tcp0: connection reset by peer";
    assert_eq!(
        w.engines[0].stats().pending_acks,
        0,
        "ACK to a lost peer kept"
    );
    let e = &w.engines[0];
    assert_eq!(e.test(s_big).unwrap().error, RequestError::PeerFailed);
    assert_eq!(
        e.request_error(s_big),
        format!("send of 100000 bytes to rank 1 (tag 3) failed: rank 1 was lost ({reason})")
    );
    assert_eq!(e.test(r_from1).unwrap().error, RequestError::PeerFailed);
    assert_eq!(
        e.request_error(r_from1),
        format!("receive from rank 1 (tag 4) failed: rank 1 was lost ({reason})")
    );
    let st = e.test(r_rndv2).unwrap();
    assert_eq!(
        (st.error, st.source, st.tag),
        (RequestError::PeerFailed, 1, 10)
    );
    assert!(e.test(r_any).is_none());
    assert!(e.test(r_from2).is_none());
    assert!(e.test(r_rndv).unwrap().error == RequestError::None);
    assert!(b_rndv == big);
    // Later sends fail at once; eager data already here is delivered.
    assert_eq!(
        w.isend(0, 1, b"x", 0, SendMode::Standard).unwrap_err(),
        format!("rank 0 cannot send to rank 1: rank 1 was lost ({reason})")
    );
    let mut b_early = [0u8; 5];
    let r_early = w.irecv(0, &mut b_early, 1, 8);
    assert_eq!(w.test(0, r_early).unwrap().error, RequestError::None);
    assert_eq!(&b_early, b"early");
    let mut b_late = [0u8; 5];
    let r_late = w.irecv(0, &mut b_late, 1, 8);
    assert_eq!(w.test(0, r_late).unwrap().error, RequestError::PeerFailed);
    // Rank 2 is unaffected.
    let s3 = w.isend(2, 0, b"any", 9, SendMode::Standard).unwrap();
    let s4 = w.isend(2, 0, b"two", 0, SendMode::Standard).unwrap();
    w.run_until("rank 2", |w| w.done(0, r_any) && w.done(0, r_from2));
    assert_eq!((&b_any[..3], &b_from2[..3]), (&b"any"[..], &b"two"[..]));
    assert!(w.done(2, s3) && w.done(2, s4));
    // A second report does not log again.
    w.engines[0].on_peer_failed(0, 0, 1, "again");
    let logs = w
        .net
        .borrow()
        .logs
        .iter()
        .filter(|l| l.0 == 0 && l.2.contains("lost rank 1"))
        .count();
    assert_eq!(logs, 1);
}

/// A send the btl answers `Failed`: the peer is lost with a placeholder
/// reason, which the btl's own reason then replaces.
#[test]
fn failed_send_loses_the_peer_until_the_btl_says_why() {
    let mut w = world(2);
    w.net.borrow_mut().cut.insert((0, 1));
    let s = w.isend(0, 1, b"hello", 0, SendMode::Standard).unwrap();
    assert_eq!(w.test(0, s).unwrap().error, RequestError::PeerFailed);
    assert_eq!(
        w.engines[0].request_error(s),
        "send of 5 bytes to rank 1 (tag 0) failed: rank 1 was lost (tcp0 could not send to it)"
    );
    w.engines[0].on_peer_failed(0, 0, 1, "connection refused");
    assert_eq!(
        w.engines[0].request_error(s),
        "send of 5 bytes to rank 1 (tag 0) failed: rank 1 was lost (tcp0: connection refused)"
    );
    assert!(w.isend(0, 1, b"x", 0, SendMode::Standard).is_err());
}

/// At most `send_pipeline_depth` fragments of one send are held by the
/// btls at once, and the pipeline does fill.
#[test]
fn pipeline_depth_bounds_fragments_in_flight() {
    let mut w = World::new(2, vec![btl("tcp", vec![module("tcp0", 100, 10, 1000)])], 3);
    {
        let mut net = w.net.borrow_mut();
        net.queue_payloads = true;
        net.burst = 1;
    }
    let big = pattern(1 << 20, 7);
    let mut buf = vec![0u8; 1 << 20];
    let r = w.irecv(1, &mut buf, 0, 0);
    let s = w.isend(0, 1, &big, 0, SendMode::Standard).unwrap();
    w.run_until("1 MiB", |w| w.done(0, s) && w.done(1, r));
    assert!(buf == big);
    assert_eq!(w.net.borrow().max_queued, 3);
}

/// Messages on different contexts never match each other, and sequence
/// numbers are per context.
#[test]
fn contexts_are_separate() {
    let mut w = world(2);
    let mut buf = [0u8; 3];
    let args = |ctx: u32| oxmpi_framework_pml::module::SendArgs {
        buf: b"abc".as_ptr(),
        len: 3,
        dest: 1,
        tag: 0,
        context: ctx,
        mode: SendMode::Standard,
        done: std::ptr::null(),
    };
    // SAFETY: static data.
    let s = unsafe { w.engines[0].isend(&args(7)) }.unwrap();
    w.settle();
    assert!(w.done(0, s));
    let r = w.irecv(1, &mut buf, 0, 0); // context 0
    w.settle();
    assert!(!w.done(1, r));
    assert_eq!(w.engines[1].iprobe(7, 0, 0).unwrap().count, 3);
    // SAFETY: static data.
    let s = unsafe { w.engines[0].isend(&args(0)) }.unwrap();
    w.run_until("context 0", |w| w.done(1, r) && w.done(0, s));
    assert_eq!(&buf, b"abc");
}
