//! End-to-end checks of point-to-point messaging, run under mpirun by the
//! tests in `tools/mpirun/tests/p2p.rs`: `p2p_check <scenario>`.
//!
//! Every scenario checks what it receives and exits 0 only on success;
//! failures print `p2p_check: rank R: <what>` and exit 1.
//!
//! - `sizes [max]`: ranks 0 and 1 exchange every size from 0 B to `max`
//!   (default 64 MiB): powers of two, their neighbours ±1, and odd sizes,
//!   both directions, data checked.
//! - `wildcard`: ranks 1.. send numbered messages with varying tags to rank
//!   0, which receives them with ANY_SOURCE/ANY_TAG and checks each sender's
//!   order.
//! - `flood`: rank 1 sends 10,000 small messages before rank 0 posts any
//!   receive; rank 0 then receives them in order.
//! - `truncate`: eager and rendezvous messages into too-small buffers.
//! - `ssend`: a synchronous send does not complete before its receive is
//!   posted, and does after.
//! - `self`: send-to-self on WORLD and SELF, small and large.
//! - `noself`: expects a send to self to fail (run with `--mca btl ^self`);
//!   prints the error.
//! - `stream`: rank 0 streams large messages to rank 1 (for striping).
//! - `killed`: rank 1 kills itself while rank 0 sends it 64 MiB messages.
//! - `stdin_go`: rank 0 waits for a line on stdin, then ranks exchange
//!   messages; rank 0 checks that nothing else arrived (the stranger test).
//! - `errors`: a bad rank and a bad tag are refused with their classes; an
//!   unmatched receive is cancelled.
//! - `funneled`: at FUNNELED, a call from another thread is refused.
//! - `threads`: at MULTIPLE, four threads per rank ping-pong at once.

use oxmpi_mpi_core::{self as mpi, Comm, ErrorClass, Runtime, SendMode, ANY_SOURCE, ANY_TAG};
use std::process::exit;

fn fail(rank: i32, what: impl std::fmt::Display) -> ! {
    eprintln!("p2p_check: rank {rank}: {what}");
    exit(1)
}

/// Fills `buf` with a pattern that depends on `seed` and the position.
fn fill(buf: &mut [u8], seed: u64) {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut chunks = buf.chunks_exact_mut(8);
    for c in &mut chunks {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c.copy_from_slice(&x.to_le_bytes());
    }
    for (i, b) in chunks.into_remainder().iter_mut().enumerate() {
        *b = (seed as u8).wrapping_add(i as u8);
    }
}

fn check(rank: i32, buf: &[u8], seed: u64, what: &str) {
    let mut want = vec![0u8; buf.len()];
    fill(&mut want, seed);
    if let Some(i) = buf.iter().zip(&want).position(|(a, b)| a != b) {
        fail(rank, format!("{what}: byte {i} of {} is wrong", buf.len()));
    }
}

fn send(rt: &Runtime, comm: Comm, dest: i32, tag: i32, buf: &[u8]) {
    // SAFETY: the buffer outlives the wait below.
    let r = unsafe { rt.isend(comm, dest, tag, buf.as_ptr(), buf.len(), SendMode::Standard) };
    let r = r.unwrap_or_else(|e| fail(rt.rank(), format!("send to {dest}: {e}")));
    rt.wait(r)
        .unwrap_or_else(|e| fail(rt.rank(), format!("send to {dest}: {e}")));
}

fn recv(rt: &Runtime, comm: Comm, source: i32, tag: i32, buf: &mut [u8]) -> mpi::Status {
    // SAFETY: the buffer outlives the wait below.
    let r = unsafe { rt.irecv(comm, source, tag, buf.as_mut_ptr(), buf.len()) };
    let r = r.unwrap_or_else(|e| fail(rt.rank(), format!("receive from {source}: {e}")));
    rt.wait(r)
        .unwrap_or_else(|e| fail(rt.rank(), format!("receive from {source}: {e}")))
}

fn sizes(max: usize) -> Vec<usize> {
    let mut v = vec![
        0, 1, 2, 3, 7, 13, 100, 1000, 4095, 65_535, 65_537, 100_003, 1_000_003,
    ];
    let mut p = 1usize;
    while p <= max {
        v.extend([p.saturating_sub(1), p, p + 1]);
        p *= 2;
    }
    v.retain(|&s| s <= max);
    v.sort_unstable();
    v.dedup();
    v
}

fn scenario_sizes(rt: &Runtime, max: usize) {
    let me = rt.rank();
    if me > 1 {
        return;
    }
    let peer = 1 - me;
    let mut out = vec![0u8; max];
    let mut inn = vec![0u8; max];
    for (i, &s) in sizes(max).iter().enumerate() {
        let seed_out = (s as u64) * 2 + me as u64;
        let seed_in = (s as u64) * 2 + peer as u64;
        fill(&mut out[..s], seed_out);
        // Both directions at once: post the receive, then send.
        // SAFETY: both buffers outlive the waits below.
        let rr = unsafe { rt.irecv(Comm::World, peer, i as i32, inn.as_mut_ptr(), s) }
            .unwrap_or_else(|e| fail(me, e));
        // SAFETY: as for the receive: `out` outlives the wait below.
        let sr = unsafe {
            rt.isend(
                Comm::World,
                peer,
                i as i32,
                out.as_ptr(),
                s,
                SendMode::Standard,
            )
        }
        .unwrap_or_else(|e| fail(me, format!("size {s}: {e}")));
        rt.wait(sr)
            .unwrap_or_else(|e| fail(me, format!("size {s}: {e}")));
        let st = rt
            .wait(rr)
            .unwrap_or_else(|e| fail(me, format!("size {s}: {e}")));
        if st.count != s || st.source != peer || st.tag != i as i32 {
            fail(me, format!("size {s}: status {st:?}"));
        }
        check(me, &inn[..s], seed_in, &format!("size {s}"));
    }
    println!(
        "rank {me}: sizes ok ({} sizes up to {max} bytes)",
        sizes(max).len()
    );
}

fn scenario_wildcard(rt: &Runtime) {
    const PER_SENDER: u32 = 200;
    let me = rt.rank();
    if me != 0 {
        for i in 0..PER_SENDER {
            let msg = [me as u32, i];
            let bytes: Vec<u8> = msg.iter().flat_map(|v| v.to_le_bytes()).collect();
            send(rt, Comm::World, 0, (i % 7) as i32, &bytes);
        }
        return;
    }
    let mut next = vec![0u32; rt.size() as usize];
    let total = PER_SENDER * (rt.size() as u32 - 1);
    let mut buf = [0u8; 8];
    for _ in 0..total {
        let st = recv(rt, Comm::World, ANY_SOURCE, ANY_TAG, &mut buf);
        let sender = u32::from_le_bytes(buf[..4].try_into().unwrap());
        let seq = u32::from_le_bytes(buf[4..].try_into().unwrap());
        if sender as i32 != st.source || st.tag != (seq % 7) as i32 {
            fail(
                0,
                format!("status {st:?} does not match message ({sender}, {seq})"),
            );
        }
        if seq != next[sender as usize] {
            fail(
                0,
                format!(
                    "from rank {sender}: got message {seq}, expected {}",
                    next[sender as usize]
                ),
            );
        }
        next[sender as usize] += 1;
    }
    println!("rank 0: wildcard ok ({total} messages in order)");
}

fn scenario_flood(rt: &Runtime) {
    const N: u32 = 10_000;
    let me = rt.rank();
    if me == 1 {
        for i in 0..N {
            send(rt, Comm::World, 0, 1, &i.to_le_bytes());
        }
        send(rt, Comm::World, 0, 2, &[]);
    } else if me == 0 {
        // Everything arrives unexpected: wait for the end marker first.
        let st = rt.probe(Comm::World, 1, 2).unwrap_or_else(|e| fail(0, e));
        if st.count != 0 {
            fail(0, "the end marker should be empty");
        }
        let mut buf = [0u8; 4];
        for i in 0..N {
            recv(rt, Comm::World, 1, 1, &mut buf);
            if u32::from_le_bytes(buf) != i {
                fail(
                    0,
                    format!("message {i} came as {}", u32::from_le_bytes(buf)),
                );
            }
        }
        recv(rt, Comm::World, 1, 2, &mut []);
        println!("rank 0: flood ok ({N} unexpected messages)");
    }
}

/// The seed of message `index` from `sender` in the storm scenario.
fn storm_seed(sender: i32, index: usize) -> u64 {
    (u64::from(sender as u32) << 32) | index as u64
}

/// Floods messages of `len` bytes, each carrying its sender and index in
/// its bytes (checked on arrival). `all`: every rank sends `count` to
/// every other rank, in windows of nonblocking receives and sends. `one`:
/// every other rank streams `count` to rank 0, which takes them from the
/// senders in turn.
fn scenario_storm(rt: &Runtime, len: usize, count: usize, mode: &str) {
    const WINDOW: usize = 64;
    const TAG: i32 = 7;
    let me = rt.rank();
    let peers: Vec<i32> = (0..rt.size()).filter(|&p| p != me).collect();
    match mode {
        "all" => {
            let mut out = vec![vec![0u8; len]; WINDOW];
            let mut inb = vec![vec![0u8; len]; WINDOW * peers.len()];
            for base in (0..count).step_by(WINDOW) {
                let k = WINDOW.min(count - base);
                let mut reqs = Vec::with_capacity(2 * k * peers.len());
                for (pi, &p) in peers.iter().enumerate() {
                    for j in 0..k {
                        let b = &mut inb[pi * WINDOW + j];
                        // SAFETY: the buffer outlives the waits below.
                        let r = unsafe { rt.irecv(Comm::World, p, TAG, b.as_mut_ptr(), len) };
                        reqs.push(r.unwrap_or_else(|e| fail(me, format!("receive from {p}: {e}"))));
                    }
                }
                for (j, b) in out.iter_mut().enumerate().take(k) {
                    fill(b, storm_seed(me, base + j));
                }
                for &p in &peers {
                    for b in out.iter().take(k) {
                        // SAFETY: the buffer outlives the waits below.
                        let r = unsafe {
                            rt.isend(Comm::World, p, TAG, b.as_ptr(), len, SendMode::Standard)
                        };
                        reqs.push(r.unwrap_or_else(|e| fail(me, format!("send to {p}: {e}"))));
                    }
                }
                for r in reqs {
                    if let Err(e) = rt.wait(r) {
                        fail(me, format!("storm window at {base}: {e}"));
                    }
                }
                for (pi, &p) in peers.iter().enumerate() {
                    for j in 0..k {
                        let what = format!("message {} from rank {p}", base + j);
                        check(me, &inb[pi * WINDOW + j], storm_seed(p, base + j), &what);
                    }
                }
            }
        }
        "one" if me == 0 => {
            let mut buf = vec![0u8; len];
            for i in 0..count {
                for &p in &peers {
                    recv(rt, Comm::World, p, TAG, &mut buf);
                    check(
                        me,
                        &buf,
                        storm_seed(p, i),
                        &format!("message {i} from rank {p}"),
                    );
                }
            }
        }
        "one" => {
            let mut buf = vec![0u8; len];
            for i in 0..count {
                fill(&mut buf, storm_seed(me, i));
                send(rt, Comm::World, 0, TAG, &buf);
            }
        }
        other => fail(me, format!("storm mode \"{other}\" (all, one)")),
    }
    println!("rank {me}: storm ok ({count} messages of {len} bytes, {mode})");
}

fn expect_truncated(rt: &Runtime, len: usize, cap: usize, tag: i32) {
    let mut buf = vec![0u8; cap];
    // SAFETY: the buffer outlives the wait.
    let r = unsafe { rt.irecv(Comm::World, 1, tag, buf.as_mut_ptr(), cap) }
        .unwrap_or_else(|e| fail(0, e));
    match rt.wait(r) {
        Err(e) if e.class == ErrorClass::Truncate => {
            println!("rank 0: truncated as expected: {e}");
            // ob1 keeps the first bytes. MPI leaves the buffer undefined
            // after an overflow, and the network libraries under cm and
            // ucx discard the whole message.
            if rt.pml_name() == "ob1" {
                check(0, &buf, len as u64, "the kept part of a truncated message");
            }
        }
        Err(e) => fail(0, format!("expected a truncation error, got: {e}")),
        Ok(st) => fail(
            0,
            format!("a {len}-byte message fit a {cap}-byte buffer: {st:?}"),
        ),
    }
}

fn scenario_truncate(rt: &Runtime) {
    let cases = [(100usize, 64usize), (1 << 20, 300_000)];
    if rt.rank() == 1 {
        for (i, &(len, _)) in cases.iter().enumerate() {
            let mut b = vec![0u8; len];
            fill(&mut b, len as u64);
            send(rt, Comm::World, 0, i as i32, &b);
        }
        // Still usable afterwards.
        send(rt, Comm::World, 0, 9, b"after");
    } else if rt.rank() == 0 {
        for (i, &(len, cap)) in cases.iter().enumerate() {
            expect_truncated(rt, len, cap, i as i32);
        }
        let mut b = [0u8; 5];
        recv(rt, Comm::World, 1, 9, &mut b);
        if &b != b"after" {
            fail(0, "message after the truncations is wrong");
        }
        println!("rank 0: truncate ok");
    }
}

fn scenario_ssend(rt: &Runtime) {
    let me = rt.rank();
    for &len in &[8usize, 4 << 20] {
        let mut data = vec![0u8; len];
        fill(&mut data, 7);
        if me == 0 {
            // SAFETY: `data` outlives the wait.
            let r =
                unsafe { rt.isend(Comm::World, 1, 1, data.as_ptr(), len, SendMode::Synchronous) }
                    .unwrap_or_else(|e| fail(0, e));
            // Rank 1 cannot have posted its receive yet: it waits for "go".
            for _ in 0..2000 {
                if let Some(res) = rt.test(r) {
                    fail(
                        0,
                        format!(
                            "the synchronous send completed before its receive was posted: {res:?}"
                        ),
                    );
                }
            }
            send(rt, Comm::World, 1, 2, b"go");
            rt.wait(r).unwrap_or_else(|e| fail(0, e));
            println!("rank 0: ssend of {len} bytes completed only after the receive");
        } else if me == 1 {
            let mut go = [0u8; 2];
            recv(rt, Comm::World, 0, 2, &mut go);
            let mut buf = vec![0u8; len];
            recv(rt, Comm::World, 0, 1, &mut buf);
            check(1, &buf, 7, "ssend data");
        }
    }
}

fn scenario_self(rt: &Runtime) {
    let me = rt.rank();
    for comm in [Comm::World, Comm::SelfComm] {
        let dest = rt.comm_rank(comm);
        for &len in &[0usize, 5, 70_000, 3 << 20] {
            let mut out = vec![0u8; len];
            fill(&mut out, len as u64 + 1);
            let mut inn = vec![0u8; len];
            // SAFETY: buffers outlive the waits.
            let r = unsafe { rt.irecv(comm, dest, 3, inn.as_mut_ptr(), len) }
                .unwrap_or_else(|e| fail(me, e));
            // SAFETY: as for the receive: `out` outlives the wait.
            let s = unsafe { rt.isend(comm, dest, 3, out.as_ptr(), len, SendMode::Standard) }
                .unwrap_or_else(|e| fail(me, e));
            rt.wait(s).unwrap_or_else(|e| fail(me, e));
            let st = rt.wait(r).unwrap_or_else(|e| fail(me, e));
            if st.source != dest || st.count != len {
                fail(me, format!("self status {st:?}"));
            }
            check(me, &inn, len as u64 + 1, "send-to-self");
        }
    }
    println!("rank {me}: self ok");
}

fn scenario_noself(rt: &Runtime) {
    let me = rt.rank();
    let data = [1u8; 4];
    // SAFETY: `data` outlives the call; no wait follows a failure.
    match unsafe { rt.isend(Comm::World, me, 0, data.as_ptr(), 4, SendMode::Standard) } {
        Err(e) => {
            println!("rank {me}: send to self refused ({:?}): {e}", e.class);
        }
        Ok(r) => {
            let _ = rt.wait(r);
            fail(me, "a send to self worked without the self btl");
        }
    }
}

fn scenario_stream(rt: &Runtime) {
    let me = rt.rank();
    let len = 8 << 20;
    let rounds = 8;
    let mut buf = vec![0u8; len];
    if me == 0 {
        fill(&mut buf, 99);
        for _ in 0..rounds {
            send(rt, Comm::World, 1, 5, &buf);
        }
    } else if me == 1 {
        for _ in 0..rounds {
            buf.fill(0);
            recv(rt, Comm::World, 0, 5, &mut buf);
            check(1, &buf, 99, "streamed message");
        }
        println!("rank 1: stream ok");
    }
}

fn scenario_killed(rt: &Runtime) {
    let me = rt.rank();
    let len = 64 << 20;
    let mut buf = vec![0u8; len];
    if me == 0 {
        for _ in 0..1000 {
            send(rt, Comm::World, 1, 1, &buf);
        }
        fail(0, "the peer was supposed to die");
    } else if me == 1 {
        recv(rt, Comm::World, 0, 1, &mut buf);
        // Post the next receive, let part of it arrive, then die.
        // SAFETY: the process ends before the buffer is dropped.
        let _r = unsafe { rt.irecv(Comm::World, 0, 1, buf.as_mut_ptr(), len) };
        for _ in 0..50 {
            rt.progress();
        }
        // SAFETY: raising a signal on ourselves.
        unsafe { libc::raise(libc::SIGKILL) };
    }
}

fn scenario_stdin_go(rt: &Runtime) {
    let me = rt.rank();
    let mut token = [0u8; 8];
    if me == 0 {
        let mut line = String::new();
        std::io::stdin()
            .read_line(&mut line)
            .unwrap_or_else(|e| fail(0, e));
        for peer in 1..rt.size() {
            send(rt, Comm::World, peer, 1, b"ping-ok!");
            recv(rt, Comm::World, peer, 2, &mut token);
            if &token != b"pong-ok!" {
                fail(0, "wrong reply");
            }
        }
        for _ in 0..1000 {
            if let Some(st) = rt
                .iprobe(Comm::World, ANY_SOURCE, ANY_TAG)
                .unwrap_or_else(|e| fail(0, e))
            {
                fail(0, format!("an unexpected message arrived: {st:?}"));
            }
        }
        println!("rank 0: only the job's messages arrived");
    } else {
        recv(rt, Comm::World, 0, 1, &mut token);
        send(rt, Comm::World, 0, 2, b"pong-ok!");
    }
}

fn scenario_errors(rt: &Runtime) {
    let me = rt.rank();
    let data = [0u8; 4];
    let size = rt.size();
    // SAFETY: no request is created on these error paths.
    let bad_rank = unsafe { rt.isend(Comm::World, size, 0, data.as_ptr(), 4, SendMode::Standard) };
    match bad_rank {
        Err(e) if e.class == ErrorClass::Rank => println!("rank {me}: bad rank refused: {e}"),
        other => fail(me, format!("a send to rank {size} gave {other:?}")),
    }
    // SAFETY: as above.
    let bad_tag = unsafe { rt.isend(Comm::World, 0, -5, data.as_ptr(), 4, SendMode::Standard) };
    match bad_tag {
        Err(e) if e.class == ErrorClass::Tag => println!("rank {me}: bad tag refused: {e}"),
        other => fail(me, format!("a send with tag -5 gave {other:?}")),
    }
    // Cancel a receive nobody will match.
    let mut buf = [0u8; 4];
    // SAFETY: `buf` outlives the wait.
    let r = unsafe { rt.irecv(Comm::World, ANY_SOURCE, 77, buf.as_mut_ptr(), 4) }
        .unwrap_or_else(|e| fail(me, e));
    if !rt.cancel(r).unwrap_or_else(|e| fail(me, e)) {
        fail(me, "an unmatched receive could not be cancelled");
    }
    let st = rt.wait(r).unwrap_or_else(|e| fail(me, e));
    if !st.cancelled {
        fail(me, "the cancelled receive's status does not say so");
    }
    println!("rank {me}: errors ok");
}

fn scenario_funneled(rt: &Runtime) {
    let me = rt.rank();
    let err = std::thread::scope(|s| {
        s.spawn(|| rt.iprobe(Comm::World, ANY_SOURCE, ANY_TAG))
            .join()
            .unwrap_or_else(|_| fail(me, "the thread panicked"))
    });
    match err {
        Err(e) if e.class == ErrorClass::ThreadLevel => {
            println!("rank {me}: funneled refused: {e}")
        }
        other => fail(
            me,
            format!("a call from another thread at FUNNELED gave {other:?}"),
        ),
    }
}

fn scenario_threads(rt: &Runtime) {
    // Ranks 0 and 1 ping-pong on four threads at once, one tag each.
    let me = rt.rank();
    if me > 1 {
        return;
    }
    let peer = 1 - me;
    std::thread::scope(|s| {
        for t in 0..4i32 {
            s.spawn(move || {
                let mut buf = [0u8; 8];
                for i in 0..200u64 {
                    let v = (i * 4 + t as u64).to_le_bytes();
                    if me == 0 {
                        send(rt, Comm::World, peer, t, &v);
                        recv(rt, Comm::World, peer, t, &mut buf);
                    } else {
                        recv(rt, Comm::World, peer, t, &mut buf);
                        send(rt, Comm::World, peer, t, &buf.clone());
                    }
                    if me == 0 && buf != v {
                        fail(me, format!("thread {t}: echo {i} is wrong"));
                    }
                }
            });
        }
    });
    println!("rank {me}: threads ok");
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let scenario = args.first().map(String::as_str).unwrap_or("");
    let level = match scenario {
        "threads" => mpi::ThreadLevel::Multiple,
        "funneled" => mpi::ThreadLevel::Funneled,
        _ => mpi::ThreadLevel::Single,
    };
    let rt = match mpi::init(level) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("p2p_check: init failed: {e}");
            exit(1);
        }
    };
    let needs_two = !matches!(scenario, "self" | "noself" | "errors" | "funneled");
    if needs_two && rt.size() < 2 {
        fail(rt.rank(), "this scenario needs at least 2 ranks");
    }
    match scenario {
        "sizes" => {
            let max = args
                .get(1)
                .and_then(|m| m.parse().ok())
                .unwrap_or(64 << 20);
            scenario_sizes(rt, max)
        }
        "wildcard" => scenario_wildcard(rt),
        "flood" => scenario_flood(rt),
        "storm" => {
            let number = |i: usize, default: usize| {
                args.get(i).map_or(default, |a| {
                    a.parse()
                        .unwrap_or_else(|_| fail(rt.rank(), format!("storm: bad number {a}")))
                })
            };
            let mode = args.get(3).map_or("all", String::as_str);
            let sizes = args.get(1).map_or("6", String::as_str);
            for len in sizes.split(',') {
                let len = len
                    .parse()
                    .unwrap_or_else(|_| fail(rt.rank(), format!("storm: bad size {len}")));
                scenario_storm(rt, len, number(2, 1000), mode);
            }
        }
        "truncate" => scenario_truncate(rt),
        "ssend" => scenario_ssend(rt),
        "self" => scenario_self(rt),
        "noself" => scenario_noself(rt),
        "stream" => scenario_stream(rt),
        "killed" => scenario_killed(rt),
        "stdin_go" => scenario_stdin_go(rt),
        "errors" => scenario_errors(rt),
        "funneled" => scenario_funneled(rt),
        "threads" => scenario_threads(rt),
        other => fail(
            rt.rank(),
            format!(
                "unknown scenario \"{other}\" (sizes, wildcard, flood, storm, truncate, ssend, self, noself, stream, killed, stdin_go, errors, funneled, threads)"
            ),
        ),
    }
    if let Err(e) = rt.finalize() {
        fail(rt.rank(), format!("finalize: {e}"));
    }
}
