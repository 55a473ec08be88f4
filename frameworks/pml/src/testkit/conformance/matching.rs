//! Matching checks: tags and wildcards, non-overtaking order, contexts.

use super::{check_data, check_guard, check_sent, check_status, end, message, recv_buffer, start};
use super::{Behaviour, Subject};
use crate::module::{RequestError, SendMode, ANY_SOURCE, ANY_TAG};
use crate::testkit::session::Session;

/// Sends `len` bytes with `tag` on `context`; the request.
fn send(
    s: &mut Session,
    at: &str,
    len: usize,
    seed: u32,
    tag: i32,
    context: u32,
) -> (u64, Vec<u8>) {
    let (buf, msg) = message(s, len, seed);
    let r = s
        .isend(buf, 0, tag, context, SendMode::Standard)
        .unwrap_or_else(|(k, e)| panic!("{at}: isend (tag {tag}) refused ({k:?}): {e}"));
    (r, msg)
}

/// Waits for a receive and checks it got `msg` with `tag`.
#[allow(clippy::too_many_arguments)]
fn expect(s: &mut Session, at: &str, req: u64, buf: super::Buf, cap: usize, tag: i32, msg: &[u8]) {
    let got = s.wait(req, at);
    check_status(got, tag, msg.len(), RequestError::None, at);
    check_data(s, buf, msg, at);
    check_guard(s, buf, cap, at);
    s.pml().free(req);
}

/// Check 3: Tags, `ANY_TAG`, `ANY_SOURCE`.
pub(super) fn tags_and_wildcards(subject: &Subject) {
    let at = format!("pml {} (tags and wildcards)", subject.component);
    let mut s = start(subject, Behaviour::DEFAULT, &at);
    let cap = 70_000;

    // Arriving first: tags 3, 1 (rendezvous), 2.
    let (s3, m3) = send(&mut s, &at, 10, 3, 3, 0);
    let (s1, m1) = send(&mut s, &at, 65_536, 1, 1, 0);
    let (s2, m2) = send(&mut s, &at, 20, 2, 2, 0);
    s.rounds(6);
    let b = recv_buffer(&mut s, cap);
    let r = s.irecv(b, cap, 0, 2, 0).expect("irecv");
    expect(
        &mut s,
        &format!("{at}: a receive for tag 2 with tags 3 and 1 waiting"),
        r,
        b,
        cap,
        2,
        &m2,
    );
    let b = recv_buffer(&mut s, cap);
    let r = s.irecv(b, cap, ANY_SOURCE, ANY_TAG, 0).expect("irecv");
    expect(
        &mut s,
        &format!("{at}: ANY_SOURCE/ANY_TAG with tags 3 then 1 waiting"),
        r,
        b,
        cap,
        3,
        &m3,
    );
    let b = recv_buffer(&mut s, cap);
    let r = s.irecv(b, cap, 0, ANY_TAG, 0).expect("irecv");
    expect(
        &mut s,
        &format!("{at}: ANY_TAG from rank 0 with the rendezvous of tag 1 waiting"),
        r,
        b,
        cap,
        1,
        &m1,
    );
    for (req, what) in [(s1, "tag 1"), (s2, "tag 2"), (s3, "tag 3")] {
        let st = s.wait(req, &format!("{at}: the send of {what}"));
        check_sent(st, &format!("{at}: the send of {what}"));
        s.pml().free(req);
    }

    // Posted first: a receive for tag 7 (any source), then one for any
    // tag from rank 0; a message of tag 9 takes the second, one of tag 7
    // the first.
    let b7 = recv_buffer(&mut s, cap);
    let r7 = s.irecv(b7, cap, ANY_SOURCE, 7, 0).expect("irecv");
    let bany = recv_buffer(&mut s, cap);
    let rany = s.irecv(bany, cap, 0, ANY_TAG, 0).expect("irecv");
    let (s9, m9) = send(&mut s, &at, 30, 9, 9, 0);
    expect(
        &mut s,
        &format!("{at}: tag 9 with receives for tag 7 and ANY_TAG posted"),
        rany,
        bany,
        cap,
        9,
        &m9,
    );
    s.rounds(4);
    assert_eq!(
        s.pml().test(r7),
        None,
        "{at}: the receive for tag 7 completed without a message of tag 7"
    );
    let (s7, m7) = send(&mut s, &at, 5000, 7, 7, 0);
    expect(
        &mut s,
        &format!("{at}: tag 7 into the receive posted for it"),
        r7,
        b7,
        cap,
        7,
        &m7,
    );
    for req in [s9, s7] {
        let st = s.wait(req, &format!("{at}: a send"));
        check_sent(st, &at);
        s.pml().free(req);
    }

    // An internal (negative) tag is matched by its own tag only, never by
    // ANY_TAG; the largest tag is an ordinary one.
    let internal = -7;
    let (si, mi) = send(&mut s, &at, 12, 21, internal, 0);
    let bany = recv_buffer(&mut s, cap);
    let rany = s.irecv(bany, cap, 0, ANY_TAG, 0).expect("irecv");
    s.rounds(6);
    assert_eq!(
        s.pml().test(rany),
        None,
        "{at}: ANY_TAG matched a message of the internal tag {internal}"
    );
    assert_eq!(
        s.pml().iprobe(0, ANY_SOURCE, ANY_TAG),
        None,
        "{at}: iprobe with ANY_TAG reported a message of the internal tag {internal}"
    );
    let bi = recv_buffer(&mut s, cap);
    let ri = s.irecv(bi, cap, ANY_SOURCE, internal, 0).expect("irecv");
    expect(
        &mut s,
        &format!("{at}: a receive for the internal tag {internal}"),
        ri,
        bi,
        cap,
        internal,
        &mi,
    );
    let (smax, mmax) = send(&mut s, &at, 15, 22, i32::MAX, 0);
    expect(
        &mut s,
        &format!("{at}: ANY_TAG and a message of tag {}", i32::MAX),
        rany,
        bany,
        cap,
        i32::MAX,
        &mmax,
    );
    for req in [si, smax] {
        let st = s.wait(req, &format!("{at}: a send"));
        check_sent(st, &at);
        s.pml().free(req);
    }
    end(s, &at);
}

/// Check 3, probe then receive: under a btl that reorders across modules
/// and delivers one fragment per progress call, whatever `iprobe` reports
/// is what a receive with the same arguments then gets, in the order the
/// messages were sent.
pub(super) fn probe_then_receive(subject: &Subject) {
    let name = "btl has two modules delivered last-first, one fragment per progress, alternates Done and Queued";
    let at = format!("pml {} (probe then receive, {name})", subject.component);
    let behaviour = Behaviour {
        modules: 2,
        deliver_per_progress: 1,
        answer: super::Answer::Alternating,
        placement: super::Placement::Keep,
        ..Behaviour::DEFAULT
    };
    let mut s = start(subject, behaviour, &at);
    let count = 40;
    let mut sends = Vec::new();
    let mut msgs = Vec::new();
    for i in 0..count {
        let len = [3usize, 40, 5000, 0][i % 4];
        let tag = (i % 2) as i32 + 1;
        let (r, msg) = send(&mut s, &at, len, 800 + i as u32, tag, 0);
        sends.push(r);
        msgs.push((tag, msg));
    }
    let cap = 5000;
    for (i, (tag, msg)) in msgs.iter().enumerate() {
        let what = format!("{at}: message {i} of {count}");
        let mut probed = None;
        s.wait_until(&format!("{what}: iprobe"), |s| {
            probed = s.pml().iprobe(0, ANY_SOURCE, ANY_TAG);
            probed.is_some()
        });
        let p = probed.expect("probed");
        assert_eq!(
            (p.source, p.tag, p.count),
            (0, *tag, msg.len()),
            "{what}: iprobe with wildcards reported another message than the next one sent"
        );
        let b = recv_buffer(&mut s, cap);
        let r = s.irecv(b, cap, ANY_SOURCE, ANY_TAG, 0).expect("irecv");
        expect(&mut s, &what, r, b, cap, *tag, msg);
    }
    for r in sends {
        let st = s.wait(r, &format!("{at}: a send"));
        check_sent(st, &at);
        s.pml().free(r);
    }
    end(s, &at);
}

/// Messages of the ordering check.
const ORDERED: usize = 120;
/// Their sizes, in turn (eager and rendezvous mixed).
const ORDER_SIZES: [usize; 6] = [0, 1, 100, 5000, 70_000, 3];

/// Check 3: Non-overtaking order with one (context, source, tag).
pub(super) fn non_overtaking(subject: &Subject, name: &str, behaviour: Behaviour) {
    let at = format!("pml {} (non-overtaking order, {name})", subject.component);
    let mut s = start(subject, behaviour, &at);
    let cap = 70_000;
    let tag = 5;
    let bufs: Vec<_> = (0..ORDERED).map(|_| recv_buffer(&mut s, cap)).collect();
    let post = |s: &mut Session, i: usize| {
        let (source, t) = match i % 3 {
            0 => (0, tag),
            1 => (ANY_SOURCE, tag),
            _ => (0, ANY_TAG),
        };
        s.irecv(bufs[i], cap, source, t, 0)
            .unwrap_or_else(|e| panic!("{at}: irecv {i} refused: {e}"))
    };
    let mut recvs: Vec<u64> = (0..ORDERED / 3).map(|i| post(&mut s, i)).collect();
    let mut sends = Vec::new();
    let mut msgs = Vec::new();
    for i in 0..ORDERED {
        let len = ORDER_SIZES[i % ORDER_SIZES.len()];
        let (buf, msg) = message(&mut s, len, 1000 + i as u32);
        let mode = if i % 7 == 3 {
            SendMode::Synchronous
        } else {
            SendMode::Standard
        };
        let r = s
            .isend(buf, 0, tag, 0, mode)
            .unwrap_or_else(|(k, e)| panic!("{at}: isend {i} refused ({k:?}): {e}"));
        sends.push(r);
        msgs.push(msg);
        if i % 10 == 9 {
            s.round();
        }
    }
    s.rounds(4);
    recvs.extend((ORDERED / 3..ORDERED).map(|i| post(&mut s, i)));
    for (i, &r) in recvs.iter().enumerate() {
        let what = format!("{at}: receive {i} of {ORDERED}");
        let got = s.wait(r, &what);
        assert_eq!(
            (got.count, got.error),
            (msgs[i].len(), RequestError::None),
            "{what}: got {got:?}, expected message {i} ({} bytes): a message overtook another",
            msgs[i].len()
        );
        check_status(got, tag, msgs[i].len(), RequestError::None, &what);
        check_data(&s, bufs[i], &msgs[i], &what);
        check_guard(&s, bufs[i], msgs[i].len(), &what);
        s.pml().free(r);
    }
    for (i, &r) in sends.iter().enumerate() {
        let st = s.wait(r, &format!("{at}: send {i}"));
        check_sent(st, &format!("{at}: send {i}"));
        s.pml().free(r);
    }
    end(s, &at);
}

/// The largest context id.
const BIG_CONTEXT: u32 = u32::MAX;

/// Check 3: Distinct contexts do not match each other.
pub(super) fn contexts(subject: &Subject) {
    let at = format!("pml {} (contexts)", subject.component);
    let mut s = start(subject, Behaviour::DEFAULT, &at);
    let cap = 70_000;
    // A message on context 1 (eager) and one (rendezvous) on the largest
    // context id.
    let (a, ma) = send(&mut s, &at, 40, 11, 5, 1);
    let (c, mc) = send(&mut s, &at, 65_536, 13, 5, BIG_CONTEXT);
    let b2 = recv_buffer(&mut s, cap);
    let r2 = s.irecv(b2, cap, ANY_SOURCE, ANY_TAG, 2).expect("irecv");
    s.rounds(8);
    assert_eq!(
        s.pml().test(r2),
        None,
        "{at}: a receive on context 2 matched a message sent on context 1 or {BIG_CONTEXT}"
    );
    assert_eq!(
        s.pml().iprobe(2, ANY_SOURCE, ANY_TAG),
        None,
        "{at}: iprobe on context 2 reported a message of another context"
    );
    let on1 = s.pml().iprobe(1, ANY_SOURCE, ANY_TAG);
    assert_eq!(
        on1.map(|p| (p.source, p.tag, p.count)),
        Some((0, 5, 40)),
        "{at}: iprobe on context 1"
    );
    let big = s.pml().iprobe(BIG_CONTEXT, 0, 5);
    assert_eq!(
        big.map(|p| (p.source, p.tag, p.count)),
        Some((0, 5, 65_536)),
        "{at}: iprobe on context {BIG_CONTEXT}"
    );
    // Context 2's own message goes to its receive; sequence numbers of
    // one context do not hold back another's.
    let (b, mb) = send(&mut s, &at, 25, 12, 5, 2);
    expect(
        &mut s,
        &format!("{at}: the message of context 2"),
        r2,
        b2,
        cap,
        5,
        &mb,
    );
    let b3 = recv_buffer(&mut s, cap);
    let r3 = s.irecv(b3, cap, 0, 5, BIG_CONTEXT).expect("irecv");
    expect(
        &mut s,
        &format!("{at}: the message of context {BIG_CONTEXT}"),
        r3,
        b3,
        cap,
        5,
        &mc,
    );
    let b1 = recv_buffer(&mut s, cap);
    let r1 = s.irecv(b1, cap, 0, ANY_TAG, 1).expect("irecv");
    expect(
        &mut s,
        &format!("{at}: the message of context 1"),
        r1,
        b1,
        cap,
        5,
        &ma,
    );
    for req in [a, b, c] {
        let st = s.wait(req, &format!("{at}: a send"));
        check_sent(st, &at);
        s.pml().free(req);
    }
    end(s, &at);
}
