//! Data checks: every size in both orders under a btl behaviour, and
//! truncation.

use super::{
    check_data, check_guard, check_sent, check_status, end, message, recv_buffer, start, Subject,
    SCRIBBLE, SIZES,
};
use crate::module::{RequestError, SendMode, ANY_SOURCE};
use crate::testkit::loopback::{self, Answer, Behaviour};
use crate::testkit::session::Session;

/// One message of `len` bytes to itself, the receive posted first or the
/// message arriving first; the send buffer is overwritten as soon as the
/// send completes.
#[allow(clippy::too_many_arguments)]
fn transfer(
    s: &mut Session,
    at: &str,
    len: usize,
    seed: u32,
    tag: i32,
    posted_first: bool,
    mode: SendMode,
) {
    let at = format!(
        "{at}: {len}-byte {} send, {}",
        match mode {
            SendMode::Standard => "standard",
            SendMode::Synchronous => "synchronous",
        },
        if posted_first {
            "receive posted first"
        } else {
            "message arriving first"
        }
    );
    let (sbuf, msg) = message(s, len, seed);
    let rbuf = recv_buffer(s, len);
    let posted = posted_first.then(|| {
        s.irecv(rbuf, len, 0, tag, 0)
            .unwrap_or_else(|e| panic!("{at}: irecv refused: {e}"))
    });
    let sreq = s
        .isend(sbuf, 0, tag, 0, mode)
        .unwrap_or_else(|(k, e)| panic!("{at}: isend refused ({k:?}): {e}"));
    let rreq = match posted {
        Some(r) => r,
        None => {
            s.rounds(4);
            s.irecv(rbuf, len, ANY_SOURCE, tag, 0)
                .unwrap_or_else(|e| panic!("{at}: irecv refused: {e}"))
        }
    };
    let sent = s.wait(sreq, &format!("{at}: the send"));
    check_sent(sent, &at);
    s.bytes_mut(sbuf).fill(SCRIBBLE);
    let got = s.wait(rreq, &format!("{at}: the receive"));
    check_status(got, tag, len, RequestError::None, &at);
    check_data(s, rbuf, &msg, &at);
    check_guard(s, rbuf, len, &at);
    s.pml().free(sreq);
    s.pml().free(rreq);
}

/// Check 2: Every size of [`SIZES`], both orders, under `behaviour`.
pub(super) fn sizes(subject: &Subject, name: &str, behaviour: Behaviour) {
    let at = format!("pml {} ({name})", subject.component);
    let mut s = start(subject, behaviour, &at);
    for (i, &len) in SIZES.iter().enumerate() {
        for posted_first in [true, false] {
            let seed = (i as u32) << 1 | u32::from(posted_first);
            transfer(
                &mut s,
                &at,
                len,
                seed,
                i as i32,
                posted_first,
                SendMode::Standard,
            );
        }
    }
    let stats = loopback::stats();
    if behaviour.would_block_every > 0 {
        assert!(
            stats.would_block > 0,
            "{at}: the btl never answered WouldBlock: {stats:?}"
        );
    }
    if behaviour.answer != Answer::Done {
        assert!(
            stats.queued > 0 && stats.send_done == stats.queued,
            "{at}: the btl's Queued sends were not all finished: {stats:?}"
        );
    }
    if behaviour.answer != Answer::Queued {
        assert!(stats.done > 0, "{at}: no send answered Done: {stats:?}");
    }
    end(s, &at);
}

/// One truncated message: `len` bytes into a receive of `cap`.
#[allow(clippy::too_many_arguments)]
fn truncated(
    s: &mut Session,
    at: &str,
    len: usize,
    cap: usize,
    seed: u32,
    posted_first: bool,
    mode: SendMode,
) {
    let at = format!(
        "{at}: {len}-byte {} message into a {cap}-byte receive, {}",
        match mode {
            SendMode::Standard => "standard",
            SendMode::Synchronous => "synchronous",
        },
        if posted_first {
            "receive posted first"
        } else {
            "message arriving first"
        }
    );
    let tag = 77;
    let (sbuf, msg) = message(s, len, seed);
    let rbuf = recv_buffer(s, cap);
    let posted = posted_first.then(|| s.irecv(rbuf, cap, 0, tag, 0).expect("irecv"));
    let sreq = s
        .isend(sbuf, 0, tag, 0, mode)
        .unwrap_or_else(|(k, e)| panic!("{at}: isend refused ({k:?}): {e}"));
    let rreq = match posted {
        Some(r) => r,
        None => {
            s.rounds(4);
            s.irecv(rbuf, cap, 0, tag, 0).expect("irecv")
        }
    };
    let got = s.wait(rreq, &format!("{at}: the receive"));
    check_status(got, tag, cap, RequestError::Truncated, &at);
    check_data(s, rbuf, &msg[..cap], &at);
    check_guard(s, rbuf, cap, &at);
    let why = s.pml().request_error(rreq);
    assert!(
        !why.trim().is_empty(),
        "{at}: request_error gave no sentence for the truncation"
    );
    let sent = s.wait(sreq, &format!("{at}: the send"));
    check_sent(sent, &at);
    // Nothing more may land in the receive buffer later.
    s.rounds(8);
    check_guard(s, rbuf, cap, &at);
    s.pml().free(sreq);
    s.pml().free(rreq);
}

/// Check 4: Truncation, eager and rendezvous, both orders, under `behaviour`.
pub(super) fn truncation(subject: &Subject, name: &str, behaviour: Behaviour) {
    let at = format!("pml {} (truncation, {name})", subject.component);
    let mut s = start(subject, behaviour, &at);
    let cases = [
        (1000, 100, SendMode::Standard),
        (10, 0, SendMode::Standard),
        (64 << 10, 4096, SendMode::Standard),
        (1 << 20, 100_000, SendMode::Standard),
        (5000, 10, SendMode::Synchronous),
    ];
    for (i, &(len, cap, mode)) in cases.iter().enumerate() {
        for posted_first in [true, false] {
            let seed = 100 + (i as u32) * 2 + u32::from(posted_first);
            truncated(&mut s, &at, len, cap, seed, posted_first, mode);
        }
    }
    end(s, &at);
}
