//! The recorder catches each breach of the contract it checks, and keeps
//! quiet for a btl that keeps it. The callbacks are called by hand here,
//! as a misbehaving btl would.

use super::*;
use crate::testkit::stamp::{pattern, Stamp, STAMP_LEN};

/// Calls the receiver's callbacks as a btl would.
struct FakeBtl(BtlReceiver);

impl FakeBtl {
    fn header(&self, module: u32, peer: u32, header: &[u8], payload_len: usize) -> *mut u8 {
        // SAFETY: the recorder's receiver, alive; the header is a live slice.
        unsafe {
            (self.0.on_header)(
                self.0.ctx,
                module,
                peer,
                header.as_ptr(),
                header.len(),
                payload_len,
            )
        }
    }

    fn fragment(&self, module: u32, peer: u32, header: &[u8], payload: *const u8, len: usize) {
        // SAFETY: as in `header`; the tests pass readable payloads.
        unsafe {
            (self.0.on_fragment)(
                self.0.ctx,
                module,
                peer,
                header.as_ptr(),
                header.len(),
                payload,
                len,
            )
        }
    }

    fn deliver(&self, module: u32, peer: u32, header: &[u8], payload: &[u8]) -> bool {
        let dest = self.header(module, peer, header, payload.len());
        if dest.is_null() {
            self.fragment(module, peer, header, payload.as_ptr(), payload.len());
            false
        } else {
            // SAFETY: the recorder's destination has `payload.len()` bytes.
            unsafe { std::ptr::copy_nonoverlapping(payload.as_ptr(), dest, payload.len()) };
            self.fragment(module, peer, header, dest, payload.len());
            true
        }
    }

    fn batch(&self, module: u32, fragments: &[FragmentRef]) {
        // SAFETY: as in `header`; the tests pass readable descriptions.
        unsafe { (self.0.on_fragments)(self.0.ctx, module, fragments.as_ptr(), fragments.len()) }
    }

    fn done(&self, cookie: u64) {
        // SAFETY: as in `header`.
        unsafe { (self.0.on_send_done)(self.0.ctx, cookie) }
    }

    fn failed(&self, module: u32, peer: u32, reason: &str) {
        // SAFETY: as in `header`.
        unsafe { (self.0.on_peer_failed)(self.0.ctx, module, peer, RStr::from_str(reason)) }
    }
}

fn setup() -> (Recorder, FakeBtl) {
    let r = Recorder::new();
    let btl = FakeBtl(r.receiver());
    (r, btl)
}

fn has(r: &Recorder, needle: &str) -> bool {
    r.violations().iter().any(|v| v.contains(needle))
}

#[test]
fn a_btl_that_keeps_the_contract_leaves_no_violation() {
    let (r, btl) = setup();
    r.queued(7, 0, 3);
    r.place_next([Placement::Destination]);
    let data = pattern(100, 1);
    r.during_progress(|| {
        assert!(
            btl.deliver(0, 3, b"hdr", &data),
            "first fragment to a destination"
        );
        assert!(!btl.deliver(0, 3, b"h2", &data), "then the default: held");
        btl.done(7);
    });
    r.assert_clean("a clean run");
    let frags = r.fragments();
    assert!(frags[0].landed && frags[0].placement == Placement::Destination);
    assert!(!frags[1].landed && frags[1].payload_addr == data.as_ptr() as usize);
    assert_eq!(frags[1].payload, data);
    assert_eq!(r.send_dones(), [7]);
    assert_eq!(r.outstanding(), 0);
    assert_eq!(
        r.counts(),
        Counts {
            headers: 2,
            fragments: 2,
            batches: 0,
            send_done: 1,
            rdma_done: 0,
            peer_failed: 0
        }
    );
}

#[test]
fn a_batch_is_recorded_fragment_by_fragment_and_an_empty_one_is_a_violation() {
    let (r, btl) = setup();
    let a = pattern(40, 2);
    let refs = [
        FragmentRef {
            peer: 1,
            header_len: 3,
            header: b"one".as_ptr(),
            payload: a.as_ptr(),
            payload_len: a.len(),
        },
        FragmentRef {
            peer: 2,
            header_len: 3,
            header: b"two".as_ptr(),
            payload: std::ptr::null(),
            payload_len: 0,
        },
    ];
    r.during_progress(|| btl.batch(0, &refs));
    r.assert_clean("a batch");
    let frags = r.fragments();
    assert_eq!(frags.len(), 2);
    assert_eq!((frags[0].peer, &frags[0].header[..]), (1, &b"one"[..]));
    assert_eq!(frags[0].payload, a);
    assert_eq!((frags[1].peer, &frags[1].header[..]), (2, &b"two"[..]));
    assert!(frags[1].payload.is_empty());
    let counts = r.counts();
    assert_eq!((counts.fragments, counts.batches), (2, 1));
    r.during_progress(|| btl.batch(0, &[]));
    assert!(has(&r, "empty batch"), "{:?}", r.violations());
    btl.batch(0, &refs[..1]);
    assert!(has(&r, "outside a progress call"), "{:?}", r.violations());
}

#[test]
fn callbacks_outside_progress_are_violations() {
    let (r, btl) = setup();
    btl.deliver(0, 0, b"x", &[1]);
    assert!(has(
        &r,
        "on_header (module 0, peer 0) was called outside a progress call"
    ));
    assert!(has(&r, "on_fragment (module 0, peer 0) was called outside"));
}

#[test]
fn a_fragment_delivered_without_a_header_is_the_btls_bytes() {
    let (r, btl) = setup();
    let payload = [7u8, 8, 9];
    r.during_progress(|| btl.fragment(2, 1, b"whole", payload.as_ptr(), payload.len()));
    assert!(r.violations().is_empty(), "{:?}", r.violations());
    let got = r.fragments();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].header, b"whole");
    assert_eq!(got[0].payload, payload);
    assert_eq!(got[0].placement, Placement::BtlHeld);
    assert!(!got[0].landed);
}

#[test]
fn fragments_must_follow_their_header() {
    let (r, btl) = setup();
    r.during_progress(|| {
        btl.fragment(0, 1, b"a", std::ptr::null(), 0);
        btl.header(0, 1, b"a", 4);
        btl.fragment(0, 1, b"b", [0u8; 4].as_ptr(), 4);
        btl.header(1, 1, b"c", 4);
        btl.fragment(1, 1, b"c", [0u8; 3].as_ptr(), 3);
        btl.header(2, 1, b"d", 0);
        btl.header(2, 1, b"d", 0);
    });
    assert!(has(&r, "differs from its on_header's"));
    assert!(has(
        &r,
        "delivered 3 payload bytes after on_header announced 4"
    ));
    assert!(has(
        &r,
        "before the previous one of that endpoint was delivered"
    ));
}

#[test]
fn send_done_must_match_one_queued_send() {
    let (r, btl) = setup();
    r.queued(1, 0, 0);
    r.during_progress(|| {
        btl.done(1);
        btl.done(1);
        btl.done(2);
    });
    let v = r.violations();
    assert_eq!(v.len(), 2, "{v:?}");
    assert!(v[0].contains("cookie 1, which is not a queued send in flight"));
    assert!(v[1].contains("cookie 2"));
}

#[test]
fn stamped_fragments_are_checked_for_content_and_order() {
    let (r, btl) = setup();
    let payload = pattern(64, 9);
    let stamp = |seq| Stamp {
        stream: 4,
        seq,
        payload_len: 64,
        seed: 9,
    };
    let mut bad = payload.clone();
    bad[10] ^= 0xFF;
    r.during_progress(|| {
        let (h, n) = stamp(0).header(STAMP_LEN);
        btl.deliver(0, 0, &h[..n], &payload);
        let (h, n) = stamp(2).header(40);
        btl.deliver(0, 0, &h[..n], &payload);
        let (h, n) = stamp(3).header(40);
        btl.deliver(0, 0, &h[..n], &bad);
    });
    assert!(has(
        &r,
        "stream 4 delivered fragment 2 where fragment 1 was next"
    ));
    assert!(has(&r, "differs from what was sent at byte 10"));
    assert_eq!(r.received(4), 4);
}

#[test]
fn writes_outside_a_destination_are_caught() {
    let (r, btl) = setup();
    r.set_default_placement(Placement::Destination);
    r.during_progress(|| {
        let dest = btl.header(0, 0, b"h", 8);
        // SAFETY: the recorder's buffer has guard bytes past the 8.
        unsafe { dest.add(8).write(1) };
        btl.fragment(0, 0, b"h", dest, 8);
    });
    assert!(has(&r, "wrote outside the 8-byte destination"));
}

#[test]
fn nothing_may_name_a_failed_peer_and_its_sends_are_dropped() {
    let (r, btl) = setup();
    r.queued(5, 1, 2);
    r.queued(6, 1, 3);
    r.during_progress(|| {
        btl.failed(1, 2, "connection reset");
        btl.deliver(1, 2, b"late", &[]);
        btl.done(5);
        btl.done(6);
        btl.failed(0, 0, " ");
    });
    assert!(has(
        &r,
        "on_header named module 1, peer 2 after on_peer_failed"
    ));
    assert!(has(&r, "cookie 5, which is not a queued send in flight"));
    assert!(!has(&r, "cookie 6"));
    assert!(has(&r, "(module 0, peer 0) gave no reason"));
    assert_eq!(r.peer_failures()[0], (1, 2, "connection reset".to_string()));
}

#[test]
fn without_recording_only_counts_and_checks_remain() {
    let (r, btl) = setup();
    r.set_recording(false);
    r.during_progress(|| btl.deliver(0, 0, b"h", &[1, 2]));
    assert!(r.events().is_empty());
    assert_eq!(r.counts().fragments, 1);
    r.assert_clean("counting");
}

#[test]
fn a_hook_sees_every_callback_and_may_not_panic() {
    let (r, btl) = setup();
    let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let into = seen.clone();
    r.set_hook(move |c| {
        into.borrow_mut().push(c);
        if let Callback::SendDone(9) = c {
            panic!("hook trouble");
        }
    });
    r.queued(9, 0, 0);
    r.during_progress(|| {
        btl.deliver(0, 0, b"h", &[]);
        btl.done(9);
    });
    assert_eq!(
        *seen.borrow(),
        [
            Callback::Header { module: 0, peer: 0 },
            Callback::Fragment { module: 0, peer: 0 },
            Callback::SendDone(9)
        ]
    );
    assert!(has(&r, "the test's hook panicked after SendDone(9)"));
}

#[test]
fn progress_with_hands_a_pml_over_the_recorder_during_progress() {
    let r = Recorder::new();
    r.queued(4, 0, 1);
    let placed = r.progress_with(|pml| {
        let dest = pml.header(0, 1, b"hd", 3);
        pml.fragment(0, 1, b"hd", crate::adapter::Arrived::Bytes(b"abc"));
        dest.is_some()
    });
    assert!(!placed, "the default placement is btl-held");
    // SAFETY: a token over a live static slice.
    let token = unsafe { crate::adapter::Payload::from_raw(b"x".as_ptr(), 1, 4) };
    r.progress_with(|pml| pml.send_done(token));
    assert_eq!(r.fragments()[0].payload, b"abc");
    assert_eq!(r.send_dones(), [4]);
    assert!(r.violations().is_empty(), "{:?}", r.violations());
    // Outside it, the same callbacks are violations again.
    let btl = FakeBtl(r.receiver());
    btl.header(0, 1, b"hd", 0);
    assert!(has(&r, "outside a progress call"));
}
