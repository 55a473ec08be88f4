//! Check 5, completion slots: requests started with a [`Completion`] are
//! published there and released as they complete without error, kept and
//! marked failed when in error, and their slots left alone once freed or
//! when they complete during the call that starts them.

use super::{
    check_data, check_guard, check_sent, check_status, end, message, recv_buffer, start, Behaviour,
    Session, Subject,
};
use crate::module::{Completed, Completion, RequestError, RequestStatus, SendMode, ANY_SOURCE};
use crate::testkit::session::KitPml;

/// A fresh slot, valid for the rest of the process (a pml may write it
/// until the request completes).
fn slot() -> &'static Completion {
    Box::leak(Box::new(Completion::new()))
}

/// Progresses until `done` leaves "running"; what it then says.
fn wait_slot(s: &mut Session, done: &Completion, at: &str) -> Completed {
    s.wait_until(at, |_| !done.is_running());
    done.read()
}

/// The published status of `done`, which must say "released".
fn released(s: &mut Session, done: &Completion, at: &str) -> RequestStatus {
    match wait_slot(s, done, at) {
        Completed::Released(st) => st,
        other => panic!("{at}: the slot says {other:?}, not a released status"),
    }
}

/// A handle the pml released through its slot: test must not answer it
/// "not complete" (nor with another request's status), cancel answers
/// false, and free does nothing.
fn stale(pml: &KitPml, handle: u64, at: &str) {
    match pml.test(handle) {
        None => panic!(
            "{at}: test of handle {handle:#x}, released through its slot, answered \"not complete\""
        ),
        Some(st) => assert!(
            st.error != RequestError::None,
            "{at}: test of handle {handle:#x}, released through its slot, answered {st:?}"
        ),
    }
    assert!(
        !pml.cancel(handle),
        "{at}: cancel of a released handle answered true"
    );
    pml.free(handle);
}

/// Runs the slot checks under `behaviour` (named `name`).
pub(super) fn completion_slots(subject: &Subject, name: &str, behaviour: Behaviour) {
    let at = format!("pml {} (completion slots; {name})", subject.component);
    let mut s = start(subject, behaviour, &at);
    let pml = s.pml();

    // Posted first from a named source (the only posted receive), then
    // from any source: each published with its status and released.
    for (source, tag) in [(0, 41), (ANY_SOURCE, 42)] {
        let done = slot();
        let b = recv_buffer(&mut s, 100);
        let (r, _) = s
            .irecv_published(b, 100, source, tag, done)
            .unwrap_or_else(|e| panic!("{at}: irecv refused: {e}"));
        assert_ne!(r, 0, "{at}: a receive with no message completed at once");
        s.rounds(2);
        assert_eq!(
            done.read(),
            Completed::Running,
            "{at}: the slot of a receive with no message"
        );
        let (sbuf, msg) = message(&mut s, 60, tag as u32);
        let sreq = s.isend(sbuf, 0, tag, 0, SendMode::Standard).expect("isend");
        let got = released(&mut s, done, &format!("{at}: receive from {source}"));
        check_status(got, tag, 60, RequestError::None, &at);
        check_data(&s, b, &msg, &at);
        check_guard(&s, b, 60, &at);
        stale(&pml, r, &format!("{at}: receive from {source}"));
        check_sent(s.wait(sreq, &format!("{at}: its send")), &at);
        pml.free(sreq);
    }

    // A rendezvous send waits for its match: running until received.
    let done = slot();
    let (sbuf, msg) = message(&mut s, 256 << 10, 43);
    let sreq = s
        .isend_published(sbuf, 0, 43, SendMode::Standard, done)
        .unwrap_or_else(|(k, e)| panic!("{at}: isend refused ({k:?}): {e}"));
    assert_ne!(sreq, 0, "{at}: a 256 KiB send completed before its receive");
    s.rounds(4);
    assert_eq!(
        done.read(),
        Completed::Running,
        "{at}: the slot of an unmatched rendezvous send"
    );
    let b = recv_buffer(&mut s, 256 << 10);
    let r = s.irecv(b, 256 << 10, 0, 43, 0).expect("irecv");
    check_status(
        s.wait(r, &format!("{at}: the rendezvous receive")),
        43,
        256 << 10,
        RequestError::None,
        &at,
    );
    check_data(&s, b, &msg, &at);
    pml.free(r);
    check_sent(released(&mut s, done, &format!("{at}: the send")), &at);
    stale(&pml, sreq, &format!("{at}: the rendezvous send"));

    // Truncated: in error, so kept; the slot says it failed.
    let done = slot();
    let b = recv_buffer(&mut s, 4);
    let (r, _) = s.irecv_published(b, 4, 0, 44, done).expect("irecv");
    let (sbuf, _) = message(&mut s, 16, 44);
    let sreq = s.isend(sbuf, 0, 44, 0, SendMode::Standard).expect("isend");
    assert_eq!(
        wait_slot(&mut s, done, &format!("{at}: the truncated receive")),
        Completed::Failed,
        "{at}: the slot of a truncated receive"
    );
    let got = pml
        .take(r)
        .unwrap_or_else(|| panic!("{at}: a receive whose slot says failed is not complete"));
    assert_eq!(got.error, RequestError::Truncated, "{at}: {got:?}");
    assert!(
        !pml.request_error(r).trim().is_empty(),
        "{at}: no sentence for the truncated receive"
    );
    pml.free(r);
    check_guard(&s, b, 4, &at);
    check_sent(
        s.wait(sreq, &format!("{at}: the truncated message's send")),
        &at,
    );
    pml.free(sreq);

    // Cancelled: published as cancelled, released.
    let done = slot();
    let b = recv_buffer(&mut s, 10);
    let (r, _) = s.irecv_published(b, 10, 0, 45, done).expect("irecv");
    assert!(pml.cancel(r), "{at}: cancel of an unmatched receive");
    let got = released(&mut s, done, &format!("{at}: the cancelled receive"));
    assert!(got.cancelled, "{at}: the cancelled receive's slot: {got:?}");
    stale(&pml, r, &format!("{at}: the cancelled receive"));

    // Freed while running: the slot is never written again, though the
    // receive still takes its message and the send still completes.
    let (recv_done, send_done) = (slot(), slot());
    let b = recv_buffer(&mut s, 300 << 10);
    let (r, _) = s
        .irecv_published(b, 300 << 10, 0, 46, recv_done)
        .expect("irecv");
    pml.free(r);
    let (sbuf, msg) = message(&mut s, 300 << 10, 46);
    let sreq = s
        .isend_published(sbuf, 0, 46, SendMode::Standard, send_done)
        .expect("isend");
    pml.free(sreq);
    s.wait_until(&format!("{at}: the freed receive's message"), |s| {
        s.bytes(b)[..msg.len()] == msg[..]
    });
    s.rounds(8);
    assert_eq!(
        (recv_done.read(), send_done.read()),
        (Completed::Running, Completed::Running),
        "{at}: slots of freed requests were written"
    );

    // Arrived first: a receive that completes during irecv answers 0 and
    // leaves its slot alone; one that does not is published as usual.
    let (sbuf, msg) = message(&mut s, 70, 47);
    let sreq = s.isend(sbuf, 0, 47, 0, SendMode::Standard).expect("isend");
    s.wait_until(&format!("{at}: the message to probe"), |s| {
        s.pml().iprobe(0, 0, 47).is_some()
    });
    let done = slot();
    let b = recv_buffer(&mut s, 70);
    let (r, st) = s.irecv_published(b, 70, 0, 47, done).expect("irecv");
    let got = if r == 0 {
        assert_eq!(
            done.read(),
            Completed::Running,
            "{at}: the slot of a receive complete at once was written"
        );
        st
    } else {
        released(
            &mut s,
            done,
            &format!("{at}: the receive of an arrived message"),
        )
    };
    check_status(got, 47, 70, RequestError::None, &at);
    check_data(&s, b, &msg, &at);
    check_sent(s.wait(sreq, &format!("{at}: its send")), &at);
    pml.free(sreq);
    end(s, &at);
}
