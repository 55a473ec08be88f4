//! The generated table's checks, through `Echo` btls with quirks (see
//! `testkit::echo`): re-entry refused, a panic answers the entry point's
//! failure value and stops the component, entry before init refused.

use crate::handle::BtlHandle;
use crate::module::SendOutcome;
use crate::testkit::echo::{
    table_of, Echo, NESTED_ANSWER, PANICS_IN_INIT, PANICS_IN_SEND, PROGRESS_RUNS, REENTERS, STOPS,
    WELL,
};
use crate::testkit::{identity, pattern, services, Callback, Cluster, Recorder};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::Ordering;

#[test]
fn a_btl_entering_its_own_table_from_send_is_refused() {
    let _lock = services::lock();
    let data = pattern(10, 1);
    let mut c = Cluster::<Echo<REENTERS>>::with_table(table_of::<REENTERS>(), "echo", 1).unwrap();
    let ep = c.connect(0, 0, 0).unwrap();
    NESTED_ANSWER.store(0, Ordering::Relaxed);
    let runs = PROGRESS_RUNS.load(Ordering::Relaxed);
    assert_eq!(c.send(0, 0, ep, b"h", &data, 1), SendOutcome::Queued);
    assert_eq!(
        NESTED_ANSWER.load(Ordering::Relaxed),
        1,
        "the nested progress answered 0 events"
    );
    assert_eq!(
        PROGRESS_RUNS.load(Ordering::Relaxed),
        runs,
        "the nested progress did not run the btl's body"
    );
    assert_eq!(c.progress(0), 1, "the component still works");
    c.assert_clean("re-entry from send");
}

#[test]
fn a_pml_sending_from_a_callback_is_refused() {
    let _lock = services::lock();
    static DATA: [u8; 4] = [1, 2, 3, 4];
    let mut c = Cluster::<Echo<WELL>>::with_table(table_of::<WELL>(), "echo", 1).unwrap();
    let ep = c.connect(0, 0, 0).unwrap();
    let handle: BtlHandle = *c.handle(0).unwrap();
    let nested = Rc::new(RefCell::new(Vec::new()));
    let into = nested.clone();
    c.recorder(0).set_hook(move |cb| {
        if let Callback::Fragment { .. } = cb {
            // SAFETY: a static payload; a refused send keeps nothing.
            let outcome = unsafe { handle.send(0, ep, b"n", DATA.as_ptr(), DATA.len(), 99) };
            into.borrow_mut().push(outcome);
        }
    });
    assert_eq!(c.send(0, 0, ep, b"h", &DATA, 1), SendOutcome::Queued);
    assert_eq!(c.progress(0), 1);
    assert_eq!(*nested.borrow(), [SendOutcome::Failed]);
    assert_eq!(c.recorder(0).send_dones(), [1]);
    assert_eq!(c.progress(0), 0, "the refused send was not queued");
    c.assert_clean("a send from a callback");
}

#[test]
fn a_panic_in_send_fails_it_and_stops_the_component_once() {
    let _lock = services::lock();
    let good = pattern(4, 0);
    let trigger = pattern(13, 0);
    let logged = services::log_lines().len();
    let mut c =
        Cluster::<Echo<PANICS_IN_SEND>>::with_table(table_of::<PANICS_IN_SEND>(), "echo-panics", 1)
            .unwrap();
    let ep = c.connect(0, 0, 0).unwrap();
    let stops = STOPS.load(Ordering::Relaxed);
    assert_eq!(c.send(0, 0, ep, b"a", &good, 1), SendOutcome::Queued);
    assert_eq!(c.send(0, 0, ep, b"b", &trigger, 2), SendOutcome::Failed);
    let errors: Vec<String> = services::log_lines()[logged..]
        .iter()
        .filter(|l| l.component == "echo-panics")
        .map(|l| l.message.clone())
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("internal error: send panicked: 'boom in send'"),
        "{errors:?}"
    );
    // Later calls are refused, naming the first error.
    assert_eq!(c.send(0, 0, ep, b"c", &good, 3), SendOutcome::Failed);
    let why = c.add_peer(0, 0, 0, &[]).unwrap_err();
    assert!(
        why.contains("stopped after an internal error") && why.contains("boom in send"),
        "{why}"
    );
    assert!(c.contact_card(0).is_empty());
    assert_eq!(STOPS.load(Ordering::Relaxed), stops, "not before progress");
    // The next progress runs the stop once, which fails the peer; the
    // queued send is dropped with it.
    assert_eq!(c.progress(0), 1);
    assert_eq!(c.progress(0), 0);
    assert_eq!(STOPS.load(Ordering::Relaxed), stops + 1);
    let failures = c.recorder(0).peer_failures();
    assert_eq!(failures.len(), 1);
    assert!(failures[0].2.contains("boom in send"), "{failures:?}");
    assert!(c.recorder(0).send_dones().is_empty());
    c.assert_clean("a panic in send");
}

#[test]
fn a_panic_in_init_answers_false_with_the_panic_text() {
    let _lock = services::lock();
    let handle = BtlHandle::new(
        table_of::<PANICS_IN_INIT>(),
        services::context("btl", "echo-init"),
    );
    let recorder = Recorder::new();
    let why = handle
        .init(&identity(0, 1), recorder.receiver())
        .unwrap_err();
    assert!(why.contains("boom in init"), "{why}");
    // Nothing was installed.
    assert_eq!(handle.progress(), 0);
    let refused = handle.add_peer(0, 0, &[]).unwrap_err();
    assert!(refused.contains("not initialized"), "{refused}");
    handle.finalize();
    recorder.assert_clean("a panic in init");
}

#[test]
fn entry_before_init_and_after_finalize_is_refused() {
    let _lock = services::lock();
    let handle = BtlHandle::new(table_of::<WELL>(), services::context("btl", "echo"));
    let data = [0u8; 3];
    for phase in ["before init", "after finalize"] {
        assert_eq!(handle.progress(), 0, "{phase}");
        assert!(handle.contact_card().is_empty(), "{phase}");
        let why = handle.add_peer(0, 0, &[]).unwrap_err();
        assert_eq!(why, "the component is not initialized", "{phase}");
        // SAFETY: a live payload; a refused send keeps nothing.
        let outcome = unsafe { handle.send(0, 0, b"h", data.as_ptr(), data.len(), 1) };
        assert_eq!(outcome, SendOutcome::Failed, "{phase}");
        handle.finalize();
        let recorder = Recorder::new();
        handle.init(&identity(0, 1), recorder.receiver()).unwrap();
        handle.finalize();
    }
}

#[test]
fn bad_sends_are_refused_before_the_btl_sees_them() {
    let _lock = services::lock();
    let data = pattern(8, 8);
    let logged = services::log_lines().len();
    let mut c = Cluster::<Echo<WELL>>::with_table(table_of::<WELL>(), "echo-bad", 1).unwrap();
    let ep = c.connect(0, 0, 0).unwrap();
    assert_eq!(c.send(0, 0, ep, &[0; 65], &data, 1), SendOutcome::Failed);
    let handle = c.handle(0).unwrap();
    // SAFETY: a null header with a length is what the check refuses.
    let outcome =
        unsafe { (table_of::<WELL>().send)(0, ep, std::ptr::null(), 4, data.as_ptr(), 8, 2) };
    assert_eq!(outcome, SendOutcome::Failed);
    // SAFETY: as above, for the payload.
    let outcome = unsafe { handle.send(0, ep, b"h", std::ptr::null(), 8, 3) };
    assert_eq!(outcome, SendOutcome::Failed);
    let lines: Vec<String> = services::log_lines()[logged..]
        .iter()
        .filter(|l| l.component == "echo-bad")
        .map(|l| l.message.clone())
        .collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(lines[0].contains("a 65-byte header"), "{lines:?}");
    // The btl was not stopped: a good send still works.
    assert_eq!(c.send(0, 0, ep, b"ok", &data, 4), SendOutcome::Queued);
    assert_eq!(c.progress(0), 1);
    c.assert_clean("bad sends");
}
