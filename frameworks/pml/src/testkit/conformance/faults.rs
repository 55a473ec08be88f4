//! Lifecycle and failure checks: entry before init, init twice, a btl
//! without modules, a btl failing the peer, finalize then init again.

use super::{
    check_data, check_guard, check_sent, check_status, end, message, recv_buffer, start, Behaviour,
    Subject,
};
use crate::handle::PmlHandle;
use crate::module::{RecvArgs, RequestError, SendArgs, SendMode};
use crate::testkit::loopback::{self, RdmaAnswer, RdmaOffer};
use crate::testkit::session::{Session, IDENTITY};
use oxmpi_plugin_api::testkit;

/// Check 1: Entry before init, init, init twice, a btl without modules.
pub(super) fn lifecycle(subject: &Subject) {
    let at = format!("pml {} (lifecycle)", subject.component);
    let pml = PmlHandle::new(subject.table, testkit::context("pml", subject.component));
    // Before init: refused, and a `test` does not hang.
    let data = [1u8; 8];
    let args = SendArgs {
        buf: data.as_ptr(),
        len: data.len(),
        dest: 0,
        tag: 0,
        context: 0,
        mode: SendMode::Standard,
        done: std::ptr::null(),
    };
    // SAFETY: the buffer outlives the call; a refused send keeps nothing.
    match unsafe { pml.isend(&args) } {
        Ok(h) => panic!("{at}: isend before init answered request {h:#x}"),
        Err((_, why)) => assert!(
            !why.trim().is_empty(),
            "{at}: isend before init: no sentence"
        ),
    }
    let mut into = [0u8; 8];
    let rargs = RecvArgs {
        buf: into.as_mut_ptr(),
        len: into.len(),
        source: 0,
        tag: 0,
        context: 0,
        done: std::ptr::null(),
    };
    // SAFETY: as above; a refused receive writes nothing.
    match unsafe { pml.irecv(&rargs) } {
        Ok((h, _)) => panic!("{at}: irecv before init answered request {h:#x}"),
        Err(why) => assert!(
            !why.trim().is_empty(),
            "{at}: irecv before init: no sentence"
        ),
    }
    assert!(
        pml.test(1).is_some_and(|st| st.error != RequestError::None),
        "{at}: test before init must answer complete in error"
    );
    assert_eq!(pml.progress(), 0, "{at}: progress before init");
    pml.finalize();

    // Init over the loopback; a second init is refused.
    let s = start(subject, Behaviour::DEFAULT, &at);
    assert!(
        !s.core().progress_functions().is_empty(),
        "{at}: init registered no progress function (the btl's messages would never arrive)"
    );
    match pml.init(&IDENTITY, s.core(), &[loopback::candidate()]) {
        Ok(_) => panic!("{at}: a second init without finalize succeeded"),
        Err(why) => assert!(!why.trim().is_empty(), "{at}: second init refused silently"),
    }
    end(s, &at);

    // A btl that describes no module: init fails with a sentence, or
    // sends to the rank fail as unreachable with one.
    loopback::set_behaviour(Behaviour {
        modules: 0,
        ..Behaviour::DEFAULT
    });
    let at_none = format!("{at}: over a btl with no module");
    match Session::start(subject.table, subject.component) {
        Err(why) => assert!(
            !why.trim().is_empty(),
            "{at_none}: init failed without a sentence"
        ),
        Ok(mut s) => {
            let (buf, _) = message(&mut s, 10, 1);
            match s.isend(buf, 0, 0, 0, SendMode::Standard) {
                Ok(h) => panic!("{at_none}: a send to the rank started (request {h:#x})"),
                Err((kind, why)) => {
                    assert_eq!(kind, RequestError::Unreachable, "{at_none}: {why}");
                    assert!(!why.trim().is_empty(), "{at_none}: no sentence");
                }
            }
            s.finalize();
        }
    }
    assert!(
        !loopback::is_started(),
        "{at_none}: the btl is still started"
    );
    loopback::set_behaviour(Behaviour::DEFAULT);
}

/// Check 6: The btl fails the peer.
pub(super) fn peer_failure(subject: &Subject) {
    let at = format!("pml {} (peer failure)", subject.component);
    let reason = "the kit cut the loopback cable (fault 7431)";
    let mut s = start(subject, Behaviour::DEFAULT, &at);
    // A receive from the peer that nothing matches.
    let rb = recv_buffer(&mut s, 64);
    let recv = s.irecv(rb, 64, 0, 1, 0).expect("irecv");
    // A rendezvous send waiting for its match.
    let (big, _) = message(&mut s, 1 << 20, 2);
    let rndv = s
        .isend(big, 0, 2, 0, SendMode::Standard)
        .unwrap_or_else(|(k, e)| panic!("{at}: isend refused ({k:?}): {e}"));
    s.rounds(4);
    // An eager send whose payload the btl holds when the peer fails.
    let (small, _) = message(&mut s, 100, 3);
    let eager = s
        .isend(small, 0, 3, 0, SendMode::Standard)
        .unwrap_or_else(|(k, e)| panic!("{at}: isend refused ({k:?}): {e}"));
    assert!(
        loopback::stats().outstanding() > 0,
        "{at}: the btl holds no payload before the failure"
    );
    loopback::fail_peer(reason);
    s.round();
    let stats = loopback::stats();
    assert!(
        stats.peer_failures > 0 && stats.dropped > 0,
        "{at}: the btl did not report the failure or drop what it held: {stats:?}"
    );
    for (req, what) in [
        (recv, "a receive from the lost rank"),
        (rndv, "a rendezvous send waiting for its match"),
        (eager, "an eager send the btl held"),
    ] {
        let st = s.wait(req, &format!("{at}: {what}"));
        assert_eq!(
            st.error,
            RequestError::PeerFailed,
            "{at}: {what} completed with {st:?}"
        );
        let why = s.pml().request_error(req);
        assert!(
            !why.trim().is_empty(),
            "{at}: {what}: request_error gave no sentence"
        );
        s.pml().free(req);
    }
    // Later sends fail at once, with the btl's reason.
    let (later, _) = message(&mut s, 10, 4);
    match s.isend(later, 0, 4, 0, SendMode::Standard) {
        Ok(h) => panic!("{at}: a send to the lost rank started (request {h:#x})"),
        Err((kind, why)) => {
            assert_eq!(
                kind,
                RequestError::PeerFailed,
                "{at}: a send to the lost rank: {why}"
            );
            assert!(
                why.contains("fault 7431"),
                "{at}: the refusal of a send to the lost rank does not give the btl's reason ({reason:?}): {why:?}"
            );
        }
    }
    // A later receive from it is refused or fails.
    let lb = recv_buffer(&mut s, 8);
    match s.irecv(lb, 8, 0, 5, 0) {
        Err(why) => assert!(!why.trim().is_empty(), "{at}: a later receive: no sentence"),
        Ok(r) => {
            let st = s.wait(r, &format!("{at}: a receive posted after the failure"));
            assert_eq!(
                st.error,
                RequestError::PeerFailed,
                "{at}: a receive posted after the failure completed with {st:?}"
            );
            s.pml().free(r);
        }
    }
    end(s, &at);
}

/// Check 6: The btl fails the peer in the middle of a rendezvous (the receive
/// matched, fragments still coming) and while a send waits because the
/// btl answered `WouldBlock`.
pub(super) fn peer_failure_mid_transfer(subject: &Subject) {
    let at = format!(
        "pml {} (peer failure during a transfer, btl delivers one fragment per progress)",
        subject.component
    );
    let reason = "the kit cut the loopback cable (fault 7432)";
    let behaviour = Behaviour {
        deliver_per_progress: 1,
        ..Behaviour::DEFAULT
    };
    let mut s = start(subject, behaviour, &at);
    let len = 4 << 20;
    let (big, _) = message(&mut s, len, 9);
    let rb = recv_buffer(&mut s, len);
    let recv = s.irecv(rb, len, 0, 1, 0).expect("irecv");
    let send = s
        .isend(big, 0, 1, 0, SendMode::Standard)
        .unwrap_or_else(|(k, e)| panic!("{at}: isend refused ({k:?}): {e}"));
    s.wait_until(&format!("{at}: part of the message placed"), |_| {
        loopback::stats().delivered >= 6
    });
    assert_eq!(
        s.pml().test(recv),
        None,
        "{at}: the 4 MiB receive completed after a few fragments"
    );
    // Every send from now on is refused until the failure.
    loopback::set_behaviour(Behaviour {
        would_block_every: 1,
        ..behaviour
    });
    let (small, _) = message(&mut s, 10, 10);
    let waiting = s
        .isend(small, 0, 2, 0, SendMode::Standard)
        .unwrap_or_else(|(k, e)| panic!("{at}: isend refused ({k:?}): {e}"));
    s.rounds(3);
    loopback::fail_peer(reason);
    for (req, what) in [
        (recv, "a receive in the middle of a rendezvous"),
        (send, "a rendezvous send in the middle of its fragments"),
        (waiting, "a send the btl answered WouldBlock"),
    ] {
        let st = s.wait(req, &format!("{at}: {what}"));
        assert_eq!(
            st.error,
            RequestError::PeerFailed,
            "{at}: {what} completed with {st:?}"
        );
        let why = s.pml().request_error(req);
        assert!(
            !why.trim().is_empty(),
            "{at}: {what}: request_error gave no sentence"
        );
        s.pml().free(req);
    }
    check_guard(&s, rb, len, &at);
    end(s, &at);
}

/// A 4 MiB message to itself over a btl offering `offer`: the receive,
/// the send and the session (the send's completion is not awaited).
fn big_transfer(s: &mut Session, at: &str, len: usize) -> (u64, u64, super::Buf) {
    let (big, _) = message(s, len, 11);
    let rb = recv_buffer(s, len);
    let recv = s.irecv(rb, len, 0, 3, 0).expect("irecv");
    let send = s
        .isend(big, 0, 3, 0, SendMode::Standard)
        .unwrap_or_else(|(k, e)| panic!("{at}: isend refused ({k:?}): {e}"));
    (recv, send, rb)
}

/// Both requests of a transfer complete with `PeerFailed` and a sentence.
fn both_fail(s: &mut Session, at: &str, recv: u64, send: u64) {
    for (req, what) in [(recv, "the receive"), (send, "the send")] {
        let st = s.wait(req, &format!("{at}: {what}"));
        assert_eq!(
            st.error,
            RequestError::PeerFailed,
            "{at}: {what} completed with {st:?}"
        );
        assert!(
            !s.pml().request_error(req).trim().is_empty(),
            "{at}: {what}: request_error gave no sentence"
        );
        s.pml().free(req);
    }
}

/// Check 6: The btl fails the peer while gets (or puts) of a 4 MiB
/// message are under way, finishing one per progress call.
pub(super) fn peer_failure_during_rdma(subject: &Subject, offer: RdmaOffer) {
    let at = format!(
        "pml {} (peer failure during a transfer, btl offers {offer:?} and finishes one per progress)",
        subject.component
    );
    let behaviour = Behaviour {
        rdma: offer,
        rdma_answer: RdmaAnswer::Queued,
        max_rdma_size: 64 << 10,
        deliver_per_progress: 1,
        ..Behaviour::DEFAULT
    };
    let mut s = start(subject, behaviour, &at);
    let len = 4 << 20;
    let (recv, send, rb) = big_transfer(&mut s, &at, len);
    s.wait_until(&format!("{at}: part of the message moved"), |_| {
        let st = loopback::stats();
        st.rdma_done + st.delivered >= 6
    });
    assert_eq!(
        s.pml().test(recv),
        None,
        "{at}: the 4 MiB receive completed after a few operations"
    );
    loopback::fail_peer("the kit cut the loopback cable (fault 7433)");
    both_fail(&mut s, &at, recv, send);
    check_guard(&s, rb, len, &at);
    end(s, &at);
}

/// Check 6: A btl whose gets (or puts) fail: `on_rdma_done` with a failed
/// status, then the peer reported lost.
pub(super) fn failed_rdma(subject: &Subject, offer: RdmaOffer) {
    let at = format!(
        "pml {} (btl offers {offer:?}, every get/put fails)",
        subject.component
    );
    let behaviour = Behaviour {
        rdma: offer,
        rdma_answer: RdmaAnswer::Fail,
        ..Behaviour::DEFAULT
    };
    let mut s = start(subject, behaviour, &at);
    let len = 1 << 20;
    let (recv, send, rb) = big_transfer(&mut s, &at, len);
    s.rounds(4);
    if loopback::stats().rdma_queued == 0 {
        // The pml does not use get/put: the message arrives by sends.
        let st = s.wait(recv, &format!("{at}: the receive"));
        check_status(st, 3, len, RequestError::None, &at);
        check_sent(s.wait(send, &at), &at);
        s.pml().free(recv);
        s.pml().free(send);
    } else {
        both_fail(&mut s, &at, recv, send);
    }
    check_guard(&s, rb, len, &at);
    end(s, &at);
}

/// Check 1: `finalize` then `init` again, with traffic each time.
pub(super) fn finalize_then_init_again(subject: &Subject) {
    for round in 0..3 {
        let at = format!("pml {} (init number {})", subject.component, round + 1);
        let mut s = start(subject, Behaviour::DEFAULT, &at);
        for (i, len) in [100usize, 200_000].into_iter().enumerate() {
            let (sbuf, msg) = message(&mut s, len, 700 + i as u32);
            let rbuf = recv_buffer(&mut s, len);
            let r = s.irecv(rbuf, len, 0, 9, 0).expect("irecv");
            let sreq = s
                .isend(sbuf, 0, 9, 0, SendMode::Standard)
                .unwrap_or_else(|(k, e)| panic!("{at}: isend refused ({k:?}): {e}"));
            let got = s.wait(r, &format!("{at}: {len} bytes"));
            check_status(got, 9, len, RequestError::None, &at);
            check_data(&s, rbuf, &msg, &at);
            check_sent(s.wait(sreq, &at), &at);
            s.pml().free(r);
            s.pml().free(sreq);
        }
        end(s, &at);
    }
}
