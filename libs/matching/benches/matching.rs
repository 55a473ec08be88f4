//! Matching engine benchmark: ns per operation for the common cases.
//!
//! `cargo bench -p oxmpi-matching --bench matching` (add `-- --quick` for
//! 100k pairs instead of 1M). Each scenario runs a number of pairs — one
//! receive posted plus one message arriving, which match each other — and
//! reports ns per pair and per operation (half a pair), the best and the
//! median of several runs. Single-threaded and in-process: where the VM
//! places its vCPUs (bench/p2p/README.md, "Rounds") does not matter here.

use std::hint::black_box;
use std::time::Instant;

use oxmpi_matching::{ContextId, Envelope, Incoming, Matcher, PostedRecv, RecvId};
use oxmpi_matching::{Source, Tag};

const CTX: ContextId = ContextId(3);
/// Senders, round robin (so the per-peer lookup is not always the same).
const PEERS: u64 = 16;
const RUNS: usize = 7;

struct Senders {
    next: Vec<u64>,
}

impl Senders {
    fn new() -> Senders {
        Senders {
            next: vec![0; PEERS as usize],
        }
    }

    #[inline]
    fn msg(&mut self, source: i32, tag: i32) -> Envelope {
        let seq = &mut self.next[source as usize];
        let sequence = *seq;
        *seq += 1;
        Envelope {
            context: CTX,
            source,
            tag,
            sequence,
            len: 64,
            sync: false,
        }
    }
}

#[inline]
fn recv(source: Source, tag: Tag, id: u64) -> PostedRecv {
    PostedRecv {
        context: CTX,
        source,
        tag,
        capacity: 64,
        id: RecvId(id),
    }
}

#[inline]
fn expect_match(outcome: Incoming<u64>) -> u64 {
    match outcome {
        Incoming::Matched(m) => m.recv.0 ^ m.payload,
        _ => panic!("the benchmark expected a match"),
    }
}

/// One scenario: runs `pairs` pairs on a fresh matcher and returns the
/// elapsed seconds. The matcher is warmed up first (peers known, slots
/// allocated), as in a running job.
type Scenario = fn(&mut Matcher<u64>, &mut Senders, u64) -> u64;

fn exact_recv_first(m: &mut Matcher<u64>, s: &mut Senders, pairs: u64) -> u64 {
    let mut acc = 0;
    for i in 0..pairs {
        let src = (i % PEERS) as i32;
        let tag = (i & 3) as i32;
        assert!(m
            .post_recv(recv(Source::Rank(src), Tag::Value(tag), i))
            .is_none());
        acc ^= expect_match(m.incoming(s.msg(src, tag), i));
    }
    acc
}

fn exact_msg_first(m: &mut Matcher<u64>, s: &mut Senders, pairs: u64) -> u64 {
    let mut acc = 0;
    for i in 0..pairs {
        let src = (i % PEERS) as i32;
        let tag = (i & 3) as i32;
        let _ = black_box(m.incoming(s.msg(src, tag), i));
        let got = m
            .post_recv(recv(Source::Rank(src), Tag::Value(tag), i))
            .unwrap();
        acc ^= got.payload;
    }
    acc
}

fn any_source_recv_first(m: &mut Matcher<u64>, s: &mut Senders, pairs: u64) -> u64 {
    let mut acc = 0;
    for i in 0..pairs {
        let src = (i % PEERS) as i32;
        let tag = (i & 3) as i32;
        assert!(m.post_recv(recv(Source::Any, Tag::Value(tag), i)).is_none());
        acc ^= expect_match(m.incoming(s.msg(src, tag), i));
    }
    acc
}

fn any_source_msg_first(m: &mut Matcher<u64>, s: &mut Senders, pairs: u64) -> u64 {
    let mut acc = 0;
    for i in 0..pairs {
        let src = (i % PEERS) as i32;
        let tag = (i & 3) as i32;
        let _ = black_box(m.incoming(s.msg(src, tag), i));
        acc ^= m
            .post_recv(recv(Source::Any, Tag::Value(tag), i))
            .unwrap()
            .payload;
    }
    acc
}

fn any_any_recv_first(m: &mut Matcher<u64>, s: &mut Senders, pairs: u64) -> u64 {
    let mut acc = 0;
    for i in 0..pairs {
        let src = (i % PEERS) as i32;
        assert!(m.post_recv(recv(Source::Any, Tag::Any, i)).is_none());
        acc ^= expect_match(m.incoming(s.msg(src, (i & 3) as i32), i));
    }
    acc
}

/// Messages of each pair of a sender arrive swapped (seq n+1 before n):
/// half the arrivals are held back and released by the next.
fn exact_out_of_order(m: &mut Matcher<u64>, s: &mut Senders, pairs: u64) -> u64 {
    let mut acc = 0;
    let mut i = 0;
    while i < pairs {
        let src = ((i / 2) % PEERS) as i32;
        m.post_recv(recv(Source::Rank(src), Tag::Value(0), i));
        m.post_recv(recv(Source::Rank(src), Tag::Value(0), i + 1));
        let first = s.msg(src, 0);
        let second = s.msg(src, 0);
        assert!(matches!(m.incoming(second, i + 1), Incoming::HeldBack));
        acc ^= expect_match(m.incoming(first, i));
        acc ^= expect_match(m.next_released().unwrap());
        i += 2;
    }
    acc
}

/// 10,000 unexpected messages from the 16 senders, then exact receives for
/// them in sending order (each receive finds its message at the head of its
/// sender's queue).
fn flood_then_exact(m: &mut Matcher<u64>, s: &mut Senders, pairs: u64) -> u64 {
    const FLOOD: u64 = 10_000;
    let mut acc = 0;
    let mut done = 0;
    while done < pairs {
        let n = FLOOD.min(pairs - done);
        for i in 0..n {
            let _ = black_box(m.incoming(s.msg((i % PEERS) as i32, 0), i));
        }
        for i in 0..n {
            acc ^= m
                .post_recv(recv(Source::Rank((i % PEERS) as i32), Tag::Value(0), i))
                .unwrap()
                .payload;
        }
        done += n;
    }
    acc
}

/// Each sender has 8 receives with other tags posted ahead (never matched):
/// every arrival scans past them.
fn exact_behind_8_other_tags(m: &mut Matcher<u64>, s: &mut Senders, pairs: u64) -> u64 {
    if m.posted_len() == 0 {
        for src in 0..PEERS as i32 {
            for t in 0..8 {
                m.post_recv(recv(Source::Rank(src), Tag::Value(1000 + t), u64::MAX));
            }
        }
    }
    let mut acc = 0;
    for i in 0..pairs {
        let src = (i % PEERS) as i32;
        m.post_recv(recv(Source::Rank(src), Tag::Value(1), i));
        acc ^= expect_match(m.incoming(s.msg(src, 1), i));
    }
    acc
}

fn measure(scenario: Scenario, pairs: u64) -> (f64, f64) {
    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let mut m = Matcher::new();
        let mut s = Senders::new();
        // Warm up: peers known, slabs and queues at their working size.
        black_box(scenario(&mut m, &mut s, 20_000));
        let start = Instant::now();
        black_box(scenario(&mut m, &mut s, pairs));
        times.push(start.elapsed().as_secs_f64() * 1e9 / pairs as f64);
    }
    times.sort_by(f64::total_cmp);
    (times[0], times[RUNS / 2])
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let pairs: u64 = if quick { 100_000 } else { 1_000_000 };
    let scenarios: [(&str, Scenario); 8] = [
        ("exact, receive posted first", exact_recv_first),
        ("exact, message first (unexpected)", exact_msg_first),
        ("ANY_SOURCE, receive posted first", any_source_recv_first),
        ("ANY_SOURCE, message first", any_source_msg_first),
        ("ANY_SOURCE+ANY_TAG, receive first", any_any_recv_first),
        ("exact, pairs arrive swapped", exact_out_of_order),
        ("exact, after a 10k unexpected flood", flood_then_exact),
        (
            "exact, 8 other-tag receives ahead",
            exact_behind_8_other_tags,
        ),
    ];
    println!(
        "matching engine: {pairs} pairs per run (1 receive + 1 message), {PEERS} senders, \
         best and median of {RUNS} runs"
    );
    println!(
        "{:<38} {:>12} {:>12} {:>12}",
        "scenario", "ns/pair best", "ns/pair med", "ns/op best"
    );
    for (name, scenario) in scenarios {
        let (best, median) = measure(scenario, pairs);
        println!(
            "{:<38} {:>12.1} {:>12.1} {:>12.1}",
            name,
            best,
            median,
            best / 2.0
        );
    }
}
