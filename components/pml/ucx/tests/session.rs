//! pml ucx through its exported table, as rank 0 of a one-rank job over
//! the pml test kit's fake MPI layer (`Session`): UCX's self transport
//! carries the messages. Every test holds the kit's lock (the pml's
//! instance is process-global).

use mca_pml_ucx::tag::{MAX_CONTEXT, MAX_TAG, MIN_TAG};
use mca_pml_ucx::MODULE;
use oxmpi_framework_pml::handle::PmlHandle;
use oxmpi_framework_pml::module::{
    Completed, Completion, RecvArgs, RequestError, RequestStatus, SendArgs, SendMode, ANY_SOURCE,
    ANY_TAG,
};
use oxmpi_framework_pml::testkit::{services, Buf, KitCore, Session, Strided, IDENTITY};
use oxmpi_plugin_api::{testkit, ParamValue};

fn start() -> Session {
    Session::start_over(&MODULE, "ucx", &[]).expect("pml ucx starts over UCX")
}

/// A message of `len` bytes that depends on `seed`.
fn pattern(len: usize, seed: u32) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) as u8 ^ (i >> 8) as u8)
        .collect()
}

const CANARY: u8 = 0xA5;
const GUARD: usize = 64;

fn recv_buffer(s: &mut Session, len: usize) -> Buf {
    s.buffer(vec![CANARY; len + GUARD])
}

fn check(s: &Session, buf: Buf, want: &[u8], at: &str) {
    let got = &s.bytes(buf)[..want.len()];
    if let Some(i) = got.iter().zip(want).position(|(a, b)| a != b) {
        panic!("{at}: byte {i} of {} differs", want.len());
    }
}

fn check_guard(s: &Session, buf: Buf, from: usize, at: &str) {
    if let Some(i) = s.bytes(buf)[from..].iter().position(|&b| b != CANARY) {
        panic!("{at}: byte {} past the receive was written", from + i);
    }
}

fn status(tag: i32, count: usize, error: RequestError) -> RequestStatus {
    RequestStatus {
        source: 0,
        tag,
        count,
        cancelled: false,
        error,
    }
}

const SIZES: [usize; 7] = [0, 1, 1000, 8 << 10, 64 << 10, 1 << 20, 4 << 20];

#[test]
fn messages_to_itself_arrive_intact_posted_first_and_arriving_first() {
    let _lock = services::lock();
    let mut s = start();
    for (i, &len) in SIZES.iter().enumerate() {
        let tag = i as i32;
        let data = pattern(len, tag as u32);
        // The receive first.
        let rbuf = recv_buffer(&mut s, len);
        let r = s.irecv(rbuf, len, 0, tag, 0).unwrap();
        let sbuf = s.buffer(data.clone());
        let q = s.isend(sbuf, 0, tag, 0, SendMode::Standard).unwrap();
        let at = format!("{len} bytes, receive posted first");
        assert_eq!(s.wait(r, &at), status(tag, len, RequestError::None), "{at}");
        assert_eq!(s.wait(q, &at).error, RequestError::None, "{at}");
        check(&s, rbuf, &data, &at);
        check_guard(&s, rbuf, len, &at);
        // The message first.
        let sbuf = s.buffer(data.clone());
        let q = s.isend(sbuf, 0, tag, 7, SendMode::Standard).unwrap();
        s.rounds(20);
        let rbuf = recv_buffer(&mut s, len);
        let r = s.irecv(rbuf, len, ANY_SOURCE, tag, 7).unwrap();
        let at = format!("{len} bytes, message arrived first");
        assert_eq!(s.wait(r, &at), status(tag, len, RequestError::None), "{at}");
        assert_eq!(s.wait(q, &at).error, RequestError::None, "{at}");
        check(&s, rbuf, &data, &at);
        check_guard(&s, rbuf, len, &at);
    }
    s.assert_clean("sizes");
    s.finalize();
}

#[test]
fn init_answers_the_tag_layouts_limits() {
    let _lock = services::lock();
    let pml = PmlHandle::new(&MODULE, testkit::context("pml", "ucx"));
    let limits = pml
        .init(&IDENTITY, KitCore::leak(0), &[])
        .expect("pml ucx starts");
    assert_eq!(limits.max_tag, MAX_TAG);
    assert_eq!(limits.max_tag, 8_388_607);
    assert_eq!(limits.min_tag(), MIN_TAG);
    assert_eq!(limits.max_context, MAX_CONTEXT);
    pml.finalize();
}

#[test]
fn the_extreme_tags_and_contexts_of_the_layout_are_carried() {
    let _lock = services::lock();
    let mut s = start();
    for (tag, context) in [
        (MAX_TAG, MAX_CONTEXT),
        (MIN_TAG, 0),
        (-500_000, 3),
        (0, MAX_CONTEXT),
    ] {
        let data = pattern(100, 9);
        let rbuf = recv_buffer(&mut s, 100);
        let r = s.irecv(rbuf, 100, 0, tag, context).unwrap();
        let sbuf = s.buffer(data.clone());
        s.isend(sbuf, 0, tag, context, SendMode::Standard).unwrap();
        let at = format!("tag {tag}, context {context}");
        assert_eq!(s.wait(r, &at), status(tag, 100, RequestError::None), "{at}");
        check(&s, rbuf, &data, &at);
    }
    s.finalize();
}

#[test]
fn any_tag_skips_internal_tags_and_contexts_stay_apart() {
    let _lock = services::lock();
    let mut s = start();
    // An internal tag and a message of another context wait first.
    let internal = s.buffer(pattern(8, 1));
    s.isend(internal, 0, -5, 0, SendMode::Standard).unwrap();
    let other = s.buffer(pattern(8, 2));
    s.isend(other, 0, 4, 1, SendMode::Standard).unwrap();
    let wanted = s.buffer(pattern(8, 3));
    s.isend(wanted, 0, 6, 0, SendMode::Standard).unwrap();
    s.rounds(20);
    assert_eq!(
        s.pml().iprobe(0, ANY_SOURCE, ANY_TAG).map(|st| st.tag),
        Some(6),
        "a wildcard probe skips the internal tag"
    );
    let rbuf = recv_buffer(&mut s, 8);
    let r = s.irecv(rbuf, 8, ANY_SOURCE, ANY_TAG, 0).unwrap();
    assert_eq!(s.wait(r, "any tag"), status(6, 8, RequestError::None));
    check(&s, rbuf, &pattern(8, 3), "any tag");
    assert!(
        s.pml().iprobe(0, ANY_SOURCE, ANY_TAG).is_none(),
        "the internal tag is never matched by ANY_TAG"
    );
    let rbuf = recv_buffer(&mut s, 8);
    let r = s.irecv(rbuf, 8, 0, -5, 0).unwrap();
    assert_eq!(s.wait(r, "internal tag"), status(-5, 8, RequestError::None));
    check(&s, rbuf, &pattern(8, 1), "internal tag");
    let rbuf = recv_buffer(&mut s, 8);
    let r = s.irecv(rbuf, 8, 0, ANY_TAG, 1).unwrap();
    assert_eq!(s.wait(r, "context 1"), status(4, 8, RequestError::None));
    check(&s, rbuf, &pattern(8, 2), "context 1");
    s.finalize();
}

#[test]
fn messages_of_one_envelope_keep_their_order() {
    let _lock = services::lock();
    let mut s = start();
    let sizes = [10usize, 100_000, 3, 2 << 20, 0, 5000];
    for (i, &len) in sizes.iter().enumerate() {
        let b = s.buffer(pattern(len, i as u32));
        let mode = if i % 2 == 0 {
            SendMode::Standard
        } else {
            SendMode::Synchronous
        };
        // Synchronous sends complete only once received; not waited here.
        s.isend(b, 0, 2, 0, mode).unwrap();
    }
    for (i, &len) in sizes.iter().enumerate() {
        let rbuf = recv_buffer(&mut s, 2 << 20);
        let (source, tag) = if i % 2 == 0 {
            (ANY_SOURCE, ANY_TAG)
        } else {
            (0, 2)
        };
        let r = s.irecv(rbuf, 2 << 20, source, tag, 0).unwrap();
        let at = format!("message {i}");
        assert_eq!(s.wait(r, &at), status(2, len, RequestError::None), "{at}");
        check(&s, rbuf, &pattern(len, i as u32), &at);
    }
    s.finalize();
}

#[test]
fn with_keeping_a_truncated_receive_keeps_the_first_bytes_and_says_so() {
    let _lock = services::lock();
    testkit::set_param("pml_ucx_keep_truncated", ParamValue::Bool(true));
    let mut s = start();
    for (len, cap) in [(100usize, 64usize), (1 << 20, 300_000), (5000, 0)] {
        for posted_first in [true, false] {
            let at = format!("{len} bytes into {cap}, posted first: {posted_first}");
            let data = pattern(len, len as u32);
            let rbuf = recv_buffer(&mut s, cap);
            let sbuf = s.buffer(data.clone());
            let (r, q) = if posted_first {
                let r = s.irecv(rbuf, cap, 0, 1, 0).unwrap();
                (r, s.isend(sbuf, 0, 1, 0, SendMode::Standard).unwrap())
            } else {
                let q = s.isend(sbuf, 0, 1, 0, SendMode::Standard).unwrap();
                s.rounds(20);
                (s.irecv(rbuf, cap, 0, 1, 0).unwrap(), q)
            };
            assert_eq!(
                s.wait(r, &at),
                status(1, cap, RequestError::Truncated),
                "{at}"
            );
            assert_eq!(s.wait(q, &at).error, RequestError::None, "{at}");
            check(&s, rbuf, &data[..cap], &at);
            check_guard(&s, rbuf, cap, &at);
            let why = s.pml().request_error(r);
            assert!(
                why.contains(&format!("message of {len} bytes from rank 0 (tag 1)"))
                    && why.contains(&format!("{cap}-byte receive buffer")),
                "{at}: {why}"
            );
            s.pml().free(r);
        }
    }
    s.finalize();
    testkit::clear_param("pml_ucx_keep_truncated");
}

#[test]
fn by_default_a_truncated_receive_is_reported_and_keeps_nothing() {
    let _lock = services::lock();
    testkit::clear_param("pml_ucx_keep_truncated");
    let mut s = start();
    let data = pattern(100, 4);
    let rbuf = recv_buffer(&mut s, 64);
    let r = s.irecv(rbuf, 64, 0, 1, 0).unwrap();
    let sbuf = s.buffer(data.clone());
    s.isend(sbuf, 0, 1, 0, SendMode::Standard).unwrap();
    let st = s.wait(r, "truncated, not kept");
    assert_eq!(st.error, RequestError::Truncated);
    assert_eq!(st.count, 64);
    check_guard(&s, rbuf, 64, "truncated, not kept");
    let why = s.pml().request_error(r);
    assert!(why.contains("pml_ucx_keep_truncated"), "{why}");
    // Contiguous receives carry large messages too.
    let big = pattern(3 << 20, 5);
    let rbuf = recv_buffer(&mut s, 3 << 20);
    let r = s.irecv(rbuf, 3 << 20, 0, 2, 0).unwrap();
    let sbuf = s.buffer(big.clone());
    s.isend(sbuf, 0, 2, 0, SendMode::Standard).unwrap();
    assert_eq!(
        s.wait(r, "contiguous"),
        status(2, 3 << 20, RequestError::None)
    );
    check(&s, rbuf, &big, "contiguous");
    s.finalize();
    testkit::clear_param("pml_ucx_keep_truncated");
}

/// Checks that the first `count` blocks of `layout` in `buf` hold
/// `packed` in order, and that every byte between and after them still
/// holds the canary.
fn check_scattered(s: &Session, buf: Buf, layout: &Strided, count: usize, packed: &[u8], at: &str) {
    let bytes = s.bytes(buf);
    let mut next = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if layout.covers(i, count) && next < packed.len() {
            assert_eq!(
                b, packed[next],
                "{at}: packed byte {next} (buffer byte {i})"
            );
            next += 1;
        } else {
            assert_eq!(b, CANARY, "{at}: byte {i} outside the blocks was written");
        }
    }
    assert_eq!(
        next,
        packed.len(),
        "{at}: the blocks hold fewer bytes than the message"
    );
}

static NARROW: Strided = Strided::new(24, 40);
static TINY: Strided = Strided::new(8, 24);

#[test]
fn messages_in_pieces_move_through_the_generic_datatype_either_side() {
    let _lock = services::lock();
    testkit::clear_param("pml_ucx_keep_truncated");
    let mut s = start();
    assert!(s.pml().takes_pieces(), "pml ucx takes messages in pieces");
    // 50,000 blocks of 24 bytes pack into 1.2 MB: UCX's rendezvous.
    for (i, count) in [0usize, 1, 3, 700, 50_000].into_iter().enumerate() {
        for posted_first in [true, false] {
            let tag = i as i32;
            let at = format!("{count} blocks, receive posted first: {posted_first}");
            let source = pattern(NARROW.reach(count), count as u32);
            let packed = NARROW.gather(&source, count);
            // Blocks out, contiguous bytes in.
            let sbuf = s.buffer(source.clone());
            let rbuf = recv_buffer(&mut s, packed.len());
            let (r, q) = if posted_first {
                let r = s.irecv(rbuf, packed.len(), 0, tag, 0).unwrap();
                let q = s.isend_pieces(sbuf, &NARROW, count, 0, tag, 0, SendMode::Standard);
                (r, q.unwrap())
            } else {
                let q = s.isend_pieces(sbuf, &NARROW, count, 0, tag, 0, SendMode::Standard);
                s.rounds(20);
                (s.irecv(rbuf, packed.len(), 0, tag, 0).unwrap(), q.unwrap())
            };
            assert_eq!(
                s.wait(r, &at),
                status(tag, packed.len(), RequestError::None),
                "{at}"
            );
            assert_eq!(s.wait(q, &at).error, RequestError::None, "{at}");
            check(&s, rbuf, &packed, &at);
            check_guard(&s, rbuf, packed.len(), &at);
            // Contiguous bytes out, blocks of another layout in.
            let blocks = packed.len() / TINY.block;
            let sbuf = s.buffer(packed.clone());
            let rbuf = s.buffer(vec![CANARY; TINY.reach(blocks) + GUARD]);
            let (r, q) = if posted_first {
                let r = s.irecv_pieces(rbuf, &TINY, blocks, 0, tag, 1).unwrap();
                (r, s.isend(sbuf, 0, tag, 1, SendMode::Synchronous).unwrap())
            } else {
                let q = s.isend(sbuf, 0, tag, 1, SendMode::Synchronous).unwrap();
                s.rounds(20);
                (
                    s.irecv_pieces(rbuf, &TINY, blocks, ANY_SOURCE, tag, 1)
                        .unwrap(),
                    q,
                )
            };
            assert_eq!(
                s.wait(r, &at),
                status(tag, packed.len(), RequestError::None),
                "{at}"
            );
            assert_eq!(s.wait(q, &at).error, RequestError::None, "{at}");
            check_scattered(&s, rbuf, &TINY, blocks, &packed, &at);
        }
    }
    s.assert_clean("pieces");
    s.finalize();
}

#[test]
fn a_receive_in_pieces_too_small_is_truncated_and_keeps_the_first_bytes_when_asked() {
    let _lock = services::lock();
    for keep in [false, true] {
        if keep {
            testkit::set_param("pml_ucx_keep_truncated", ParamValue::Bool(true));
        } else {
            testkit::clear_param("pml_ucx_keep_truncated");
        }
        let mut s = start();
        for len in [200usize, 1 << 20] {
            let at = format!("{len} bytes into 5 blocks of 8, keeping: {keep}");
            let data = pattern(len, 3);
            let rbuf = s.buffer(vec![CANARY; TINY.reach(5) + GUARD]);
            let r = s.irecv_pieces(rbuf, &TINY, 5, 0, 4, 0).unwrap();
            let sbuf = s.buffer(data.clone());
            let q = s.isend(sbuf, 0, 4, 0, SendMode::Standard).unwrap();
            let st = s.wait(r, &at);
            assert_eq!((st.error, st.count), (RequestError::Truncated, 40), "{at}");
            assert_eq!(s.wait(q, &at).error, RequestError::None, "{at}");
            if keep {
                check_scattered(&s, rbuf, &TINY, 5, &data[..40], &at);
            } else {
                check_guard(&s, rbuf, TINY.reach(5), &at);
            }
            s.pml().free(r);
        }
        s.finalize();
    }
    testkit::clear_param("pml_ucx_keep_truncated");
}

#[test]
fn a_synchronous_send_completes_only_after_its_receive_is_posted() {
    let _lock = services::lock();
    let mut s = start();
    for len in [8usize, 1 << 20] {
        let sbuf = s.buffer(pattern(len, 1));
        let q = s.isend(sbuf, 0, 3, 0, SendMode::Synchronous).unwrap();
        s.rounds(200);
        assert_eq!(
            s.pml().test(q),
            None,
            "{len} bytes: ssend completed unmatched"
        );
        let other = recv_buffer(&mut s, len);
        let o = s.irecv(other, len, 0, 4, 0).unwrap();
        s.rounds(200);
        assert_eq!(
            s.pml().test(q),
            None,
            "{len} bytes: completed by another tag's receive"
        );
        let rbuf = recv_buffer(&mut s, len);
        let r = s.irecv(rbuf, len, 0, 3, 0).unwrap();
        s.wait(r, "the matching receive");
        assert_eq!(s.wait(q, "the ssend").error, RequestError::None);
        assert!(s.pml().cancel(o));
        assert!(s.pml().take(o).unwrap().cancelled);
    }
    s.finalize();
}

#[test]
fn probes_report_and_matched_probes_claim_messages() {
    let _lock = services::lock();
    let mut s = start();
    assert!(s.pml().iprobe(0, ANY_SOURCE, ANY_TAG).is_none());
    assert!(s.pml().improbe(0, ANY_SOURCE, ANY_TAG).is_none());
    for (i, len) in [(0u32, 40usize), (1, 2 << 20)] {
        let b = s.buffer(pattern(len, i));
        s.isend(b, 0, 10 + i as i32, 0, SendMode::Standard).unwrap();
    }
    s.rounds(50);
    let seen = s
        .pml()
        .iprobe(0, 0, 11)
        .expect("the large message is there");
    assert_eq!(seen, status(11, 2 << 20, RequestError::None));
    assert_eq!(
        s.pml().iprobe(0, 0, 11),
        Some(seen),
        "iprobe leaves it there"
    );
    let (m, st) = s.pml().improbe(0, ANY_SOURCE, ANY_TAG).expect("a message");
    assert_eq!(st, status(10, 40, RequestError::None));
    assert_ne!(m, 0);
    assert_eq!(m >> 63, 0);
    assert_eq!(
        s.pml().iprobe(0, ANY_SOURCE, 10),
        None,
        "a claimed message is seen by no probe"
    );
    let rbuf = recv_buffer(&mut s, 40);
    let r = s.imrecv(m, rbuf, 40).unwrap();
    assert_eq!(s.wait(r, "imrecv"), status(10, 40, RequestError::None));
    check(&s, rbuf, &pattern(40, 0), "imrecv");
    let again = recv_buffer(&mut s, 40);
    let refused = s.imrecv(m, again, 40).unwrap_err();
    assert!(
        refused.contains("no message is kept under handle"),
        "{refused}"
    );
    // The large one, claimed and received into a short buffer.
    let (m, st) = s.pml().improbe(0, 0, 11).expect("the large message");
    assert_eq!(st.count, 2 << 20);
    let rbuf = recv_buffer(&mut s, 1000);
    let r = s.imrecv(m, rbuf, 1000).unwrap();
    assert_eq!(
        s.wait(r, "short imrecv"),
        status(11, 1000, RequestError::Truncated)
    );
    // By default a truncated receive keeps nothing of the message; it
    // never writes past the buffer.
    check_guard(&s, rbuf, 1000, "short imrecv");
    s.finalize();
}

#[test]
fn cancel_completes_an_unmatched_receive_and_nothing_lands_in_it() {
    let _lock = services::lock();
    let mut s = start();
    let rbuf = recv_buffer(&mut s, 16);
    let r = s.irecv(rbuf, 16, 0, 5, 0).unwrap();
    assert!(s.pml().cancel(r));
    let st = s.wait(r, "cancelled");
    assert!(st.cancelled && st.error == RequestError::None, "{st:?}");
    s.pml().free(r);
    let sbuf = s.buffer(pattern(16, 5));
    let q = s.isend(sbuf, 0, 5, 0, SendMode::Standard).unwrap();
    s.wait(q, "the send");
    s.rounds(50);
    check_guard(&s, rbuf, 0, "a cancelled receive's buffer");
    // The message is still there for the next receive; a matched
    // receive is not cancelled, and neither is a send.
    let rbuf = recv_buffer(&mut s, 16);
    let r = s.irecv(rbuf, 16, 0, 5, 0).unwrap();
    s.wait(r, "the next receive");
    assert!(!s.pml().cancel(r));
    let sbuf = s.buffer(pattern(1 << 20, 1));
    let q = s.isend(sbuf, 0, 6, 0, SendMode::Synchronous).unwrap();
    assert!(!s.pml().cancel(q));
    let rbuf = recv_buffer(&mut s, 1 << 20);
    let r = s.irecv(rbuf, 1 << 20, 0, 6, 0).unwrap();
    s.wait(r, "the ssend's receive");
    s.wait(q, "the ssend");
    s.finalize();
}

#[test]
fn completion_slots_are_published_and_freed_requests_never_touch_theirs() {
    let _lock = services::lock();
    let mut s = start();
    static RECV: Completion = Completion::new();
    static FREED: Completion = Completion::new();
    static SEND: Completion = Completion::new();
    RECV.arm();
    let rbuf = recv_buffer(&mut s, 3 << 20);
    let (r, _) = s
        .irecv_published(rbuf, 3 << 20, ANY_SOURCE, 8, &RECV)
        .unwrap();
    assert_ne!(r, 0);
    assert!(RECV.is_running());
    SEND.arm();
    let sbuf = s.buffer(pattern(3 << 20, 8));
    let q = s
        .isend_published(sbuf, 0, 8, SendMode::Standard, &SEND)
        .unwrap();
    s.wait_until("the receive's slot", |_| !RECV.is_running());
    assert_eq!(
        RECV.read(),
        Completed::Released(status(8, 3 << 20, RequestError::None))
    );
    assert!(
        s.pml().test(r).unwrap().error != RequestError::None,
        "released: stale"
    );
    if q != 0 {
        s.wait_until("the send's slot", |_| !SEND.is_running());
        assert!(matches!(SEND.read(), Completed::Released(_)));
    }
    // A receive freed while it runs never writes its slot.
    FREED.arm();
    let fbuf = recv_buffer(&mut s, 8);
    let (f, _) = s.irecv_published(fbuf, 8, 0, 9, &FREED).unwrap();
    s.pml().free(f);
    let sbuf = s.buffer(pattern(8, 9));
    s.isend(sbuf, 0, 9, 0, SendMode::Standard).unwrap();
    s.rounds(100);
    assert!(FREED.is_running(), "a freed request's slot was written");
    check(
        &s,
        fbuf,
        &pattern(8, 9),
        "the freed receive still got its message",
    );
    // A truncated receive's slot says failed, and the request stays.
    RECV.arm();
    let tbuf = recv_buffer(&mut s, 4);
    let (t, _) = s.irecv_published(tbuf, 4, 0, 10, &RECV).unwrap();
    let sbuf = s.buffer(pattern(8, 10));
    s.isend(sbuf, 0, 10, 0, SendMode::Standard).unwrap();
    s.wait_until("the truncated receive's slot", |_| !RECV.is_running());
    assert_eq!(RECV.read(), Completed::Failed);
    assert_eq!(s.pml().take(t).unwrap().error, RequestError::Truncated);
    s.pml().free(t);
    s.finalize();
}

#[test]
fn stale_and_unknown_handles_are_refused_with_a_sentence() {
    let _lock = services::lock();
    let mut s = start();
    let rbuf = recv_buffer(&mut s, 8);
    let r = s.irecv(rbuf, 8, 0, 1, 0).unwrap();
    let sbuf = s.buffer(pattern(8, 1));
    s.isend(sbuf, 0, 1, 0, SendMode::Standard).unwrap();
    s.wait(r, "receive");
    s.pml().take(r).unwrap();
    for h in [r, 12_345, 1 << 40 | 1] {
        let st = s.pml().test(h).expect("answered complete");
        assert_ne!(st.error, RequestError::None, "handle {h:#x}");
        let why = s.pml().request_error(h);
        assert!(why.contains("pml ucx has no request"), "{why}");
        assert!(!s.pml().cancel(h));
        s.pml().free(h);
    }
    let sbuf = s.buffer(pattern(8, 1));
    let (kind, why) = s.isend(sbuf, 3, 1, 0, SendMode::Standard).unwrap_err();
    assert_eq!(kind, RequestError::Other);
    assert!(why.contains("rank 3 is not in the job of 1 ranks"), "{why}");
    let (kind, why) = s
        .isend(sbuf, 0, ANY_TAG, 0, SendMode::Standard)
        .unwrap_err();
    assert_eq!(kind, RequestError::Other);
    assert!(why.contains("MPI_ANY_TAG"), "{why}");
    s.finalize();
}

#[test]
fn null_buffers_are_refused_for_messages_of_more_than_0_bytes() {
    let _lock = services::lock();
    let s = start();
    let pml = PmlHandle::new(&MODULE, testkit::context("pml", "ucx"));
    let send = SendArgs {
        buf: std::ptr::null(),
        len: 4,
        dest: 0,
        tag: 1,
        context: 0,
        mode: SendMode::Standard,
        done: std::ptr::null(),
    };
    // SAFETY: the pml refuses the null buffer without touching it.
    let (kind, why) = unsafe { pml.isend(&send) }.unwrap_err();
    assert_eq!(kind, RequestError::Other);
    assert!(
        why.contains("cannot send 4 bytes to rank 0: the buffer is a null pointer"),
        "{why}"
    );
    let recv = RecvArgs {
        buf: std::ptr::null_mut(),
        len: 4,
        source: 0,
        tag: 1,
        context: 0,
        done: std::ptr::null(),
    };
    // SAFETY: as above.
    let why = unsafe { pml.irecv(&recv) }.unwrap_err();
    assert!(
        why.contains("cannot post a receive of 4 bytes: the buffer is a null pointer"),
        "{why}"
    );
    // 0 bytes from a null buffer are a message.
    let empty = SendArgs { len: 0, ..send };
    // SAFETY: no byte is read.
    let q = unsafe { pml.isend(&empty) }.expect("an empty message from a null buffer");
    let recv0 = RecvArgs { len: 0, ..recv };
    // SAFETY: no byte is written.
    let (r, _) = unsafe { pml.irecv(&recv0) }.expect("an empty receive into a null buffer");
    let mut s = s;
    if r != 0 {
        s.wait(r, "the empty receive");
    }
    if q != 0 {
        s.wait(q, "the empty send");
    }
    s.finalize();
}

#[test]
fn finalize_then_init_again_works_three_times() {
    let _lock = services::lock();
    for round in 0..3u32 {
        let mut s = start();
        let data = pattern(70_000, round);
        let rbuf = recv_buffer(&mut s, 70_000);
        let r = s.irecv(rbuf, 70_000, 0, 0, 0).unwrap();
        let sbuf = s.buffer(data.clone());
        s.isend(sbuf, 0, 0, 0, SendMode::Standard).unwrap();
        s.wait(r, "after a restart");
        check(&s, rbuf, &data, "after a restart");
        // A receive left running is dropped by finalize.
        let left = recv_buffer(&mut s, 8);
        s.irecv(left, 8, 0, 99, 0).unwrap();
        s.finalize();
    }
    let logged = testkit::logged_by("pml", "ucx");
    assert!(
        logged.iter().any(|(_, m)| m.contains("uses UCX 1.")),
        "{logged:?}"
    );
}
