//! Request checks: synchronous sends, cancel, iprobe, freed sends, stale
//! handles, `take`.

use super::{
    check_data, check_guard, check_sent, check_status, end, message, recv_buffer, start, Behaviour,
    Subject, CANARY,
};
use crate::module::{RequestError, SendMode, ANY_SOURCE, ANY_TAG};
use crate::testkit::loopback;
use crate::testkit::session::{KitPml, Session};

/// Check 5: A synchronous send completes only after a receive matched it
/// (under `behaviour`).
pub(super) fn synchronous(subject: &Subject, name: &str, behaviour: Behaviour) {
    let at = format!("pml {} (synchronous sends, {name})", subject.component);
    let mut s = start(subject, behaviour, &at);
    for (i, len) in [0usize, 10, 1000, 65_536].into_iter().enumerate() {
        let at = format!("{at}: {len} bytes");
        let tag = 40 + i as i32;
        // A receive for another tag is posted: it must not count.
        let other = recv_buffer(&mut s, 16);
        let ro = s.irecv(other, 16, 0, 99, 0).expect("irecv");
        let (sbuf, msg) = message(&mut s, len, 300 + i as u32);
        let sreq = s
            .isend(sbuf, 0, tag, 0, SendMode::Synchronous)
            .unwrap_or_else(|(k, e)| panic!("{at}: isend refused ({k:?}): {e}"));
        s.rounds(30);
        assert_eq!(
            s.pml().test(sreq),
            None,
            "{at}: the synchronous send completed while no receive matched it"
        );
        let probe = s.pml().iprobe(0, 0, tag);
        assert_eq!(
            probe.map(|p| (p.source, p.tag, p.count)),
            Some((0, tag, len)),
            "{at}: iprobe of the unmatched synchronous message"
        );
        assert_eq!(
            s.pml().test(sreq),
            None,
            "{at}: the synchronous send completed after a probe (a probe does not match)"
        );
        let rbuf = recv_buffer(&mut s, len);
        let rreq = s.irecv(rbuf, len, 0, tag, 0).expect("irecv");
        let got = s.wait(rreq, &format!("{at}: the receive"));
        check_status(got, tag, len, RequestError::None, &at);
        check_data(&s, rbuf, &msg, &at);
        check_guard(&s, rbuf, len, &at);
        let sent = s.wait(sreq, &format!("{at}: the synchronous send after the match"));
        check_sent(sent, &at);
        assert!(s.pml().cancel(ro), "{at}: cancel of the tag-99 receive");
        s.wait(ro, &format!("{at}: the cancelled receive"));
        check_guard(&s, other, 0, &at);
        for r in [sreq, rreq, ro] {
            s.pml().free(r);
        }

        // Posted first: completes once matched.
        let (sbuf, msg) = message(&mut s, len, 400 + i as u32);
        let rbuf = recv_buffer(&mut s, len);
        let rreq = s.irecv(rbuf, len, ANY_SOURCE, tag, 0).expect("irecv");
        let sreq = s
            .isend(sbuf, 0, tag, 0, SendMode::Synchronous)
            .unwrap_or_else(|(k, e)| panic!("{at}: isend refused ({k:?}): {e}"));
        let sent = s.wait(
            sreq,
            &format!("{at}: a synchronous send to a posted receive"),
        );
        check_sent(sent, &at);
        let got = s.wait(rreq, &format!("{at}: the posted receive"));
        check_status(got, tag, len, RequestError::None, &at);
        check_data(&s, rbuf, &msg, &at);
        s.pml().free(sreq);
        s.pml().free(rreq);
    }
    end(s, &at);
}

/// Check 5: `cancel`.
pub(super) fn cancel(subject: &Subject) {
    let at = format!("pml {} (cancel)", subject.component);
    let mut s = start(subject, Behaviour::DEFAULT, &at);
    let cap = 100;
    let b = recv_buffer(&mut s, cap);
    let r = s.irecv(b, cap, 0, 31, 0).expect("irecv");
    s.rounds(2);
    assert!(
        s.pml().cancel(r),
        "{at}: cancel of an unmatched receive answered false"
    );
    let st = s
        .pml()
        .test(r)
        .unwrap_or_else(|| panic!("{at}: a cancelled receive is not complete"));
    assert!(st.cancelled, "{at}: the cancelled receive's status: {st:?}");
    // A message for the cancelled receive's tag does not land in it.
    let (sbuf, msg) = message(&mut s, 50, 31);
    let sreq = s
        .isend(sbuf, 0, 31, 0, SendMode::Standard)
        .unwrap_or_else(|(k, e)| panic!("{at}: isend refused ({k:?}): {e}"));
    s.rounds(6);
    check_guard(&s, b, 0, &format!("{at}: after a cancelled receive"));
    let probe = s.pml().iprobe(0, 0, 31);
    assert_eq!(
        probe.map(|p| p.count),
        Some(50),
        "{at}: the message sent after the cancel is not waiting"
    );
    s.pml().free(r);
    let b2 = recv_buffer(&mut s, cap);
    let r2 = s.irecv(b2, cap, 0, 31, 0).expect("irecv");
    let got = s.wait(r2, &format!("{at}: the receive after the cancel"));
    check_status(got, 31, 50, RequestError::None, &at);
    check_data(&s, b2, &msg, &at);
    assert!(
        !s.pml().cancel(r2),
        "{at}: cancel of a completed receive answered true"
    );
    let again = s.pml().test(r2).expect("complete");
    assert!(
        !again.cancelled && again.count == 50,
        "{at}: a cancel that failed changed the status: {again:?}"
    );
    let sent = s.wait(sreq, &format!("{at}: the send"));
    check_sent(sent, &at);
    s.pml().free(r2);
    s.pml().free(sreq);

    // A send cannot be cancelled (a rendezvous waiting for its match).
    let (sbuf, msg) = message(&mut s, 65_536, 32);
    let sreq = s
        .isend(sbuf, 0, 32, 0, SendMode::Standard)
        .unwrap_or_else(|(k, e)| panic!("{at}: isend refused ({k:?}): {e}"));
    s.rounds(4);
    assert!(
        !s.pml().cancel(sreq),
        "{at}: cancel of a send answered true (sends cannot be cancelled)"
    );
    let b3 = recv_buffer(&mut s, 65_536);
    let r3 = s.irecv(b3, 65_536, 0, 32, 0).expect("irecv");
    let got = s.wait(r3, &format!("{at}: the receive of a send cancel refused"));
    check_status(got, 32, 65_536, RequestError::None, &at);
    check_data(&s, b3, &msg, &at);
    let sent = s.wait(sreq, &format!("{at}: the send cancel refused"));
    check_sent(sent, &at);
    s.pml().free(r3);
    s.pml().free(sreq);
    end(s, &at);
}

/// The sends of the probe checks and the bytes they carry.
struct Probed {
    s7: u64,
    s8: u64,
    m7: Vec<u8>,
    m8: Vec<u8>,
}

/// Sends an eager message of 1000 bytes with tag 7 and a rendezvous of
/// 1 MiB with tag 8 to this process, and progresses until both arrived
/// (tag 8 is probed: the order of arrival is the order of sending).
fn send_two(s: &mut Session, at: &str) -> Probed {
    let (b7, m7) = message(s, 1000, 7);
    let (b8, m8) = message(s, 1 << 20, 8);
    let s7 = s.isend(b7, 0, 7, 0, SendMode::Standard).expect("isend");
    let s8 = s.isend(b8, 0, 8, 0, SendMode::Standard).expect("isend");
    s.wait_until(&format!("{at}: iprobe of tag 8"), |s| {
        s.pml().iprobe(0, 0, 8).is_some()
    });
    Probed { s7, s8, m7, m8 }
}

/// Check 5: matched probes: `improbe` claims a message (eager, then
/// rendezvous) that no probe or receive sees again, `imrecv` receives it
/// whole or truncated, and a handle received once is refused.
pub(super) fn improbe(subject: &Subject) {
    let at = format!("pml {} (improbe)", subject.component);
    let mut s = start(subject, Behaviour::DEFAULT, &at);
    assert_eq!(
        s.pml().improbe(0, ANY_SOURCE, ANY_TAG),
        None,
        "{at}: improbe found a message before any was sent"
    );
    let Probed { s7, s8, m7, m8 } = send_two(&mut s, &at);
    let (h8, st8) = s.pml().improbe(0, ANY_SOURCE, 8).expect("improbe of tag 8");
    assert_eq!(
        (st8.source, st8.tag, st8.count),
        (0, 8, 1 << 20),
        "{at}: improbe of a rendezvous message reports its full length"
    );
    assert_eq!(
        s.pml().iprobe(0, 0, 8),
        None,
        "{at}: iprobe of a claimed message"
    );
    // The eager message, claimed by wildcards, received into a short
    // buffer.
    let (h7, st7) = s
        .pml()
        .improbe(0, ANY_SOURCE, ANY_TAG)
        .expect("wildcard improbe");
    assert_eq!(
        st7.tag, 7,
        "{at}: a wildcard improbe after tag 8 was claimed"
    );
    assert_eq!(
        s.pml().iprobe(0, ANY_SOURCE, ANY_TAG),
        None,
        "{at}: iprobe after both messages were claimed"
    );
    let r7 = recv_buffer(&mut s, 600);
    let q7 = s.imrecv(h7, r7, 600).expect("imrecv");
    let got = s.wait(q7, &format!("{at}: the matched eager message"));
    check_status(got, 7, 600, RequestError::Truncated, &at);
    check_data(&s, r7, &m7[..600], &at);
    check_guard(&s, r7, 600, &at);
    let r8 = recv_buffer(&mut s, 1 << 20);
    let q8 = s.imrecv(h8, r8, 1 << 20).expect("imrecv");
    let got = s.wait(q8, &format!("{at}: the matched rendezvous"));
    check_status(got, 8, 1 << 20, RequestError::None, &at);
    check_data(&s, r8, &m8, &at);
    check_guard(&s, r8, 1 << 20, &at);
    assert!(
        s.imrecv(h8, r8, 1 << 20).is_err(),
        "{at}: a second imrecv of one message was accepted"
    );
    for r in [s7, s8] {
        let st = s.wait(r, &format!("{at}: a send"));
        check_sent(st, &at);
        s.pml().free(r);
    }
    end(s, &at);
}

/// Check 5: `iprobe` before the receive.
pub(super) fn iprobe(subject: &Subject) {
    let at = format!("pml {} (iprobe)", subject.component);
    let mut s = start(subject, Behaviour::DEFAULT, &at);
    assert_eq!(
        s.pml().iprobe(0, ANY_SOURCE, ANY_TAG),
        None,
        "{at}: iprobe found a message before any was sent"
    );
    let Probed { s7, s8, m7, m8 } = send_two(&mut s, &at);
    let summary = |p: Option<crate::module::RequestStatus>| p.map(|p| (p.source, p.tag, p.count));
    let pml = s.pml();
    assert_eq!(
        summary(pml.iprobe(0, 0, 7)),
        Some((0, 7, 1000)),
        "{at}: iprobe of an eager message"
    );
    assert_eq!(
        summary(pml.iprobe(0, ANY_SOURCE, 8)),
        Some((0, 8, 1 << 20)),
        "{at}: iprobe of a rendezvous message reports its full length"
    );
    assert_eq!(
        summary(pml.iprobe(0, ANY_SOURCE, ANY_TAG)),
        Some((0, 7, 1000)),
        "{at}: iprobe with wildcards reports the first message that arrived"
    );
    assert_eq!(
        summary(pml.iprobe(0, 0, 7)),
        Some((0, 7, 1000)),
        "{at}: a second iprobe (a probe does not consume the message)"
    );
    assert_eq!(pml.iprobe(0, 0, 9), None, "{at}: iprobe of tag 9");
    assert_eq!(pml.iprobe(1, 0, 7), None, "{at}: iprobe on context 1");
    let r8 = recv_buffer(&mut s, 1 << 20);
    let q8 = s.irecv(r8, 1 << 20, 0, 8, 0).expect("irecv");
    let got = s.wait(q8, &format!("{at}: the probed rendezvous"));
    check_status(got, 8, 1 << 20, RequestError::None, &at);
    check_data(&s, r8, &m8, &at);
    assert_eq!(
        summary(s.pml().iprobe(0, ANY_SOURCE, ANY_TAG)),
        Some((0, 7, 1000)),
        "{at}: iprobe after the rendezvous was received"
    );
    let r7 = recv_buffer(&mut s, 1000);
    let q7 = s.irecv(r7, 1000, ANY_SOURCE, ANY_TAG, 0).expect("irecv");
    let got = s.wait(q7, &format!("{at}: the probed eager message"));
    check_status(got, 7, 1000, RequestError::None, &at);
    check_data(&s, r7, &m7, &at);
    assert_eq!(
        s.pml().iprobe(0, ANY_SOURCE, ANY_TAG),
        None,
        "{at}: iprobe after every message was received"
    );
    for r in [s7, s8] {
        let st = s.wait(r, &format!("{at}: a send"));
        check_sent(st, &at);
        s.pml().free(r);
    }
    s.pml().free(q7);
    s.pml().free(q8);
    end(s, &at);
}

/// Check 5: A send freed before it completed still completes.
pub(super) fn freed_sends_complete(subject: &Subject) {
    let at = format!("pml {} (freed sends)", subject.component);
    let mut s = start(subject, Behaviour::DEFAULT, &at);
    let cases = [
        (1000, SendMode::Standard),
        (1 << 20, SendMode::Standard),
        (100, SendMode::Synchronous),
    ];
    let mut pending = Vec::new();
    for (i, &(len, mode)) in cases.iter().enumerate() {
        let (buf, msg) = message(&mut s, len, 500 + i as u32);
        let tag = 60 + i as i32;
        let r = s
            .isend(buf, 0, tag, 0, mode)
            .unwrap_or_else(|(k, e)| panic!("{at}: isend refused ({k:?}): {e}"));
        s.pml().free(r);
        pending.push((tag, msg, r));
    }
    s.rounds(4);
    for (tag, msg, freed) in pending {
        let what = format!("{at}: the {}-byte message of a freed send", msg.len());
        let b = recv_buffer(&mut s, msg.len());
        let r = s.irecv(b, msg.len(), 0, tag, 0).expect("irecv");
        let got = s.wait(r, &what);
        check_status(got, tag, msg.len(), RequestError::None, &what);
        check_data(&s, b, &msg, &what);
        check_guard(&s, b, msg.len(), &what);
        s.pml().free(r);
        refused(&s.pml(), freed, &format!("{what}: its freed handle"));
    }
    // `end` checks the btl got every payload back.
    end(s, &at);
}

/// Checks that `handle` is refused without a panic.
fn refused(pml: &KitPml, handle: u64, at: &str) {
    match pml.test(handle) {
        None => panic!(
            "{at}: test of handle {handle:#x} answered \"not complete\" (a wait on it would hang)"
        ),
        Some(st) => assert!(
            st.error != RequestError::None,
            "{at}: test of handle {handle:#x} answered a status without error: {st:?}"
        ),
    }
    let why = pml.request_error(handle);
    assert!(
        !why.trim().is_empty(),
        "{at}: request_error of handle {handle:#x} gave no sentence"
    );
    assert!(
        !pml.cancel(handle),
        "{at}: cancel of handle {handle:#x} answered true"
    );
    pml.free(handle);
}

/// Check 5: Stale and unknown handles are refused.
pub(super) fn stale_handles(subject: &Subject) {
    let at = format!("pml {} (stale handles)", subject.component);
    let mut s = start(subject, Behaviour::DEFAULT, &at);
    let pml = s.pml();
    for h in [0, u64::MAX, 0xdead_beef] {
        refused(&pml, h, &format!("{at}: a handle never issued"));
    }
    // Complete and free a receive and its send.
    let (sbuf, _) = message(&mut s, 20, 1);
    let b = recv_buffer(&mut s, 20);
    let old_r = s.irecv(b, 20, 0, 1, 0).expect("irecv");
    let old_s = s.isend(sbuf, 0, 1, 0, SendMode::Standard).expect("isend");
    s.wait(old_r, &format!("{at}: the first receive"));
    s.wait(old_s, &format!("{at}: the first send"));
    pml.free(old_r);
    pml.free(old_s);
    refused(&pml, old_r, &format!("{at}: a freed receive"));
    refused(&pml, old_s, &format!("{at}: a freed send"));
    // New requests (which may reuse the slots) are not disturbed by the
    // old handles.
    let b2 = recv_buffer(&mut s, 30);
    let new_r = s.irecv(b2, 30, 0, 2, 0).expect("irecv");
    refused(
        &pml,
        old_r,
        &format!("{at}: a freed receive after a new receive"),
    );
    refused(
        &pml,
        old_s,
        &format!("{at}: a freed send after a new receive"),
    );
    assert_eq!(
        pml.test(new_r),
        None,
        "{at}: the new receive completed without a message (a stale handle touched it)"
    );
    let (sbuf2, msg2) = message(&mut s, 30, 2);
    let new_s = s.isend(sbuf2, 0, 2, 0, SendMode::Standard).expect("isend");
    refused(
        &pml,
        old_r,
        &format!("{at}: a freed receive after a new send"),
    );
    refused(&pml, old_s, &format!("{at}: a freed send after a new send"));
    let got = s.wait(new_r, &format!("{at}: the new receive"));
    check_status(got, 2, 30, RequestError::None, &at);
    check_data(&s, b2, &msg2, &at);
    let sent = s.wait(new_s, &format!("{at}: the new send"));
    check_sent(sent, &at);
    // Freeing twice is refused too.
    pml.free(new_r);
    refused(&pml, new_r, &format!("{at}: a receive freed twice"));
    pml.free(new_s);
    assert!(
        s.bytes(b2)[30..].iter().all(|&x| x == CANARY),
        "{at}: the new receive wrote past its length"
    );
    let stats = loopback::stats();
    assert!(stats.delivered > 0, "{at}: nothing went through the btl");
    end(s, &at);
}

/// Check 5: `take` answers like `test`, releases a request that completed
/// without error, and keeps one that completed in error until `free`.
pub(super) fn take(subject: &Subject) {
    let at = format!("pml {} (take)", subject.component);
    let mut s = start(subject, Behaviour::DEFAULT, &at);
    let pml = s.pml();
    // Posted first, so the pml cannot complete it during `irecv`.
    let b = recv_buffer(&mut s, 40);
    let r = s.irecv(b, 40, 0, 7, 0).expect("irecv");
    assert_eq!(pml.take(r), None, "{at}: take of a receive with no message");
    let (sbuf, msg) = message(&mut s, 40, 9);
    let sreq = s.isend(sbuf, 0, 7, 0, SendMode::Standard).expect("isend");
    s.wait(r, &format!("{at}: the receive"));
    let got = pml
        .take(r)
        .unwrap_or_else(|| panic!("{at}: take of a complete receive answered \"not complete\""));
    check_status(got, 7, 40, RequestError::None, &at);
    check_data(&s, b, &msg, &at);
    refused(&pml, r, &format!("{at}: a receive released by take"));
    s.wait(sreq, &format!("{at}: the send"));
    check_sent(pml.take(sreq).expect("take of a complete send"), &at);
    refused(&pml, sreq, &format!("{at}: a send released by take"));

    // Truncated: in error, so kept for request_error until free.
    let b = recv_buffer(&mut s, 4);
    let r = s.irecv(b, 4, 0, 8, 0).expect("irecv");
    let (sbuf, _) = message(&mut s, 16, 10);
    let sreq = s.isend(sbuf, 0, 8, 0, SendMode::Standard).expect("isend");
    s.wait(r, &format!("{at}: the truncated receive"));
    let got = pml.take(r).expect("take of a truncated receive");
    assert_eq!(got.error, RequestError::Truncated, "{at}: {got:?}");
    let again = pml.take(r);
    assert_eq!(
        again.map(|st| st.error),
        Some(RequestError::Truncated),
        "{at}: a receive in error must stay until free"
    );
    assert!(
        !pml.request_error(r).trim().is_empty(),
        "{at}: no sentence for the truncated receive"
    );
    pml.free(r);
    refused(&pml, r, &format!("{at}: a truncated receive after free"));
    s.wait(sreq, &format!("{at}: the truncated message's send"));
    pml.free(sreq);
    end(s, &at);
}
