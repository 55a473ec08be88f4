//! Checked traffic patterns for the shared-memory btl's integration tests
//! (`tools/mpirun/tests/sm.rs`), though nothing here is specific to a
//! transport: `sm_check <scenario> [arguments]`.
//!
//! - `sizes`: ranks 0 and 1 exchange every size of [`SIZES`] (0 B to
//!   64 MiB, each boundary of the sm btl ±1) three ways: 0 to 1, 1 to 0,
//!   and both at once. Other ranks only initialize and finalize.
//! - `flood COUNT`: every rank but 0 sends COUNT messages of small and
//!   medium sizes to rank 0, up to [`WINDOW`] in flight at once; rank 0
//!   receives them from any source, [`WINDOW`] receives posted at once,
//!   and checks each message's size, tag, contents and its place in its
//!   sender's order.
//! - `allpairs SIZES`: for each size of the comma-separated list, every
//!   rank sends a distinct message to every rank (itself included) and
//!   receives one from each, all in flight at once, and checks them all;
//!   then a closing round of empty messages. After it, a rank of a job
//!   with a job directory (`OXMPI_JOB_DIR`) reports how many sm segment
//!   files (`sm-*`) are still in it.
//! - `busy MILLISECONDS`: rank 1 posts a receive of 4 MiB and tells rank 0,
//!   which sends the 4 MiB and then computes (makes no MPI call) for
//!   MILLISECONDS before it waits for the send; rank 1 reports how long
//!   its receive took, which must not depend on rank 0's computing (a
//!   transport whose large transfers need the sender's progress would
//!   take the whole time).
//! - `threads ITERATIONS`: initializes at `MPI_THREAD_MULTIPLE`; ranks
//!   pair up (0 with 1, 2 with 3, ...; an odd last rank idles) and
//!   [`THREADS`] threads of each rank talk to the same thread of the
//!   partner, one tag per thread, at once: even threads exchange both ways
//!   at once, odd threads ping-pong.
//!
//! Every message's bytes derive from its sender, receiver, size and
//! sequence, so a message delivered to the wrong receive fails its check;
//! receive buffers are 8 bytes longer than the message and those bytes
//! must stay untouched. Each rank prints `rank R: <scenario> ok (...)`
//! when all its checks passed; the first failure prints `sm_check: rank R:
//! <what>` and aborts the job.

#![forbid(unsafe_code)]

use oxmpi::point_to_point::Status;
use oxmpi::request::{scope, wait_all};
use oxmpi::topology::SimpleCommunicator;
use oxmpi::traits::*;
use oxmpi::{Tag, Threading};
use std::process::ExitCode;

type BoxError = Box<dyn std::error::Error>;

/// The sizes of `sizes`: both sides of every boundary of the sm btl with
/// its default and its smallest fast box (a fragment takes the box when
/// its 16-byte record head, the pml's 32-byte match header and the
/// payload fit in half the box: 80 bytes of payload in a 256-byte box,
/// 2000 in a 4 KiB one), the eager limit (4 KiB), the fragment size and
/// rendezvous limit (32 KiB), and large messages up to 64 MiB.
const SIZES: [usize; 34] = [
    0,
    1,
    7,
    8,
    63,
    64,
    79,
    80,
    81,
    127,
    128,
    129,
    1999,
    2000,
    2001,
    2047,
    2048,
    2049,
    4095,
    4096,
    4097,
    32767,
    32768,
    32769,
    65535,
    65536,
    65537,
    100_003,
    1 << 20,
    (1 << 20) + 1,
    (4 << 20) - 1,
    (4 << 20) + 3,
    (16 << 20) + 5,
    64 << 20,
];

/// The sizes of `flood` messages: mostly small (fast box and queue), some
/// past the eager limit, a few rendezvous of several fragments.
const FLOOD_SIZES: [usize; 16] = [
    0, 1, 8, 24, 80, 81, 100, 1000, 2000, 2001, 4096, 4097, 9000, 32769, 70_000, 3,
];

/// Requests in flight at once in `flood`, per sender and at the receiver.
const WINDOW: usize = 64;

/// Threads per rank in `threads`.
const THREADS: usize = 4;

/// The sizes `threads` cycles through.
const THREAD_SIZES: [usize; 7] = [0, 8, 1500, 4097, 40_000, 300_001, 64];

/// Bytes after a message in its receive buffer that must stay untouched.
const GUARD: usize = 8;

/// The guard bytes' value.
const GUARD_BYTE: u8 = 0xA5;

/// The generator behind every message's bytes.
fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

fn start(seed: u64) -> u64 {
    seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1
}

/// Fills `buf` with the pattern of `seed`.
fn fill(buf: &mut [u8], seed: u64) {
    let mut x = start(seed);
    let mut chunks = buf.chunks_exact_mut(8);
    for c in &mut chunks {
        c.copy_from_slice(&next(&mut x).to_le_bytes());
    }
    let tail = next(&mut x).to_le_bytes();
    let rest = chunks.into_remainder();
    let n = rest.len();
    rest.copy_from_slice(&tail[..n]);
}

/// The first byte of `buf` that differs from the pattern of `seed`.
fn first_wrong(buf: &[u8], seed: u64) -> Option<usize> {
    let mut x = start(seed);
    let mut chunks = buf.chunks_exact(8);
    for (i, c) in (&mut chunks).enumerate() {
        let want = next(&mut x).to_le_bytes();
        if c != want {
            return Some(i * 8 + c.iter().zip(&want).position(|(a, b)| a != b).unwrap_or(0));
        }
    }
    let tail = next(&mut x).to_le_bytes();
    let rest = chunks.remainder();
    rest.iter()
        .zip(&tail)
        .position(|(a, b)| a != b)
        .map(|k| buf.len() - rest.len() + k)
}

/// Checks a received message: its status (source, tag, size), its bytes
/// against the pattern of `seed`, and that the guard after it is intact.
/// `buf` is the whole receive buffer (message and guard).
fn check(
    status: &Status,
    buf: &[u8],
    source: i32,
    tag: Tag,
    size: usize,
    seed: u64,
    what: &str,
) -> Result<(), BoxError> {
    if status.source_rank() != source || status.tag() != tag {
        return Err(format!(
            "{what}: came from rank {} with tag {}, expected rank {source} with tag {tag}",
            status.source_rank(),
            status.tag()
        )
        .into());
    }
    if status.byte_count() != size {
        return Err(format!(
            "{what}: {} bytes arrived, expected {size}",
            status.byte_count()
        )
        .into());
    }
    if let Some(k) = first_wrong(&buf[..size], seed) {
        return Err(format!("{what}: byte {k} of {size} is wrong").into());
    }
    if let Some(k) = buf[size..].iter().position(|&b| b != GUARD_BYTE) {
        return Err(format!(
            "{what}: byte {} after the {size}-byte message was overwritten",
            k
        )
        .into());
    }
    Ok(())
}

/// A receive buffer for `size` bytes: the message, then the guard.
fn receive_buffer(size: usize) -> Vec<u8> {
    vec![GUARD_BYTE; size + GUARD]
}

/// The seed of a message from `from` to `to` of `size` bytes, number
/// `sequence` between them.
fn seed(from: i32, to: i32, size: usize, sequence: u64) -> u64 {
    (from as u64) << 56 ^ (to as u64) << 48 ^ (size as u64) << 8 ^ sequence.rotate_left(28)
}

/// The partner of ranks 0 and 1 in a two-rank scenario (each other's);
/// `None` for the other ranks, which only take part in init and finalize.
///
/// # Errors
/// The job has fewer than 2 ranks.
fn partner(world: &SimpleCommunicator, scenario: &str) -> Result<Option<i32>, BoxError> {
    if world.size() < 2 {
        return Err(format!("{scenario} needs 2 ranks or more").into());
    }
    let rank = world.rank();
    Ok((rank <= 1).then_some(1 - rank))
}

fn scenario_sizes(world: &SimpleCommunicator) -> Result<String, BoxError> {
    let rank = world.rank();
    let Some(other) = partner(world, "sizes")? else {
        return Ok("sizes ok (idle)".into());
    };
    let peer = world.process_at_rank(other);
    let max = SIZES[SIZES.len() - 1];
    let mut send = vec![0u8; max];
    let mut recv = receive_buffer(max);
    for (index, &size) in SIZES.iter().enumerate() {
        let tag = index as Tag;
        // One way, then the other: 0 to 1, 1 to 0.
        for (way, from) in [(0u64, 0), (1, 1)] {
            let what = format!("{size} B from rank {from} (one way)");
            if rank == from {
                fill(&mut send[..size], seed(rank, other, size, way));
                peer.send_with_tag(&send[..size], tag)
                    .map_err(|e| format!("{what}: send: {e}"))?;
            } else {
                recv[..size + GUARD].fill(GUARD_BYTE);
                let status = peer
                    .receive_into_with_tag(&mut recv[..size + GUARD], tag)
                    .map_err(|e| format!("{what}: receive: {e}"))?;
                check(
                    &status,
                    &recv[..size + GUARD],
                    other,
                    tag,
                    size,
                    seed(other, rank, size, way),
                    &what,
                )?;
            }
        }
        // Both ways at once.
        let what = format!("{size} B both ways at once");
        fill(&mut send[..size], seed(rank, other, size, 2));
        recv[..size + GUARD].fill(GUARD_BYTE);
        let status = scope(|s| -> Result<Status, BoxError> {
            let r = peer.immediate_receive_into_with_tag(s, &mut recv[..size + GUARD], tag)?;
            let w = peer.immediate_send_with_tag(s, &send[..size], tag)?;
            w.wait()?;
            Ok(r.wait()?)
        })
        .map_err(|e| format!("{what}: {e}"))?;
        check(
            &status,
            &recv[..size + GUARD],
            other,
            tag,
            size,
            seed(other, rank, size, 2),
            &what,
        )?;
    }
    Ok(format!(
        "sizes ok ({} sizes from 0 to {max} bytes, each both ways)",
        SIZES.len()
    ))
}

/// The size and tag of message `k` of sender `s` in `flood`.
fn flood_message(s: i32, k: u64) -> (usize, Tag) {
    let size = FLOOD_SIZES[((k * 7 + s as u64) % FLOOD_SIZES.len() as u64) as usize];
    (size, (k % 1000) as Tag)
}

fn scenario_flood(world: &SimpleCommunicator, count: u64) -> Result<String, BoxError> {
    let (rank, n) = (world.rank(), world.size());
    if n < 2 {
        return Err("flood needs 2 ranks or more".into());
    }
    if rank != 0 {
        let root = world.process_at_rank(0);
        let mut k = 0;
        while k < count {
            let batch: Vec<(Vec<u8>, Tag)> = (k..count.min(k + WINDOW as u64))
                .map(|j| {
                    let (size, tag) = flood_message(rank, j);
                    let mut buf = vec![0u8; size];
                    fill(&mut buf, seed(rank, 0, size, j));
                    (buf, tag)
                })
                .collect();
            scope(|s| -> Result<(), BoxError> {
                let mut requests = Vec::with_capacity(batch.len());
                for (buf, tag) in &batch {
                    requests.push(root.immediate_send_with_tag(s, &buf[..], *tag)?);
                }
                wait_all(requests)?;
                Ok(())
            })
            .map_err(|e| format!("sending messages {k}.. to rank 0: {e}"))?;
            k += batch.len() as u64;
        }
        return Ok(format!("flood ok ({count} messages sent to rank 0)"));
    }
    let largest = FLOOD_SIZES.iter().copied().max().unwrap_or(0);
    let total = count * (n as u64 - 1);
    let mut expected = vec![0u64; n as usize];
    let mut buffers: Vec<Vec<u8>> = (0..WINDOW).map(|_| receive_buffer(largest)).collect();
    let mut received = 0;
    while received < total {
        let batch = (total - received).min(WINDOW as u64) as usize;
        for b in &mut buffers[..batch] {
            b.fill(GUARD_BYTE);
        }
        let statuses = scope(|s| -> Result<Vec<Status>, BoxError> {
            let any = world.any_process();
            let mut requests = Vec::with_capacity(batch);
            for b in &mut buffers[..batch] {
                requests.push(any.immediate_receive_into(s, &mut b[..])?);
            }
            // Receives posted in order match each sender's messages in
            // order; waiting for them in order keeps that order visible.
            Ok(wait_all(requests)?)
        })
        .map_err(|e| format!("receiving messages {received}..: {e}"))?;
        for (status, buf) in statuses.iter().zip(&buffers) {
            let s = status.source_rank();
            if s <= 0 || s >= n {
                return Err(format!("a message came from rank {s}, which sends nothing").into());
            }
            let k = expected[s as usize];
            if k >= count {
                return Err(format!("rank {s} sent more than {count} messages").into());
            }
            let (size, tag) = flood_message(s, k);
            let what = format!("message {k} of rank {s}");
            let bytes = &buf[..status.byte_count().min(buf.len() - GUARD) + GUARD];
            check(status, bytes, s, tag, size, seed(s, 0, size, k), &what)?;
            expected[s as usize] += 1;
        }
        received += batch as u64;
    }
    Ok(format!(
        "flood ok ({total} messages from {} ranks, each sender's order kept)",
        n - 1
    ))
}

/// Sends a distinct `size`-byte message with `tag` to every rank (itself
/// included) while receiving one from each, all in flight at once, and
/// checks what arrived.
fn exchange_all(world: &SimpleCommunicator, size: usize, tag: Tag) -> Result<(), BoxError> {
    let (rank, n) = (world.rank(), world.size());
    let sequence = tag as u64;
    let sends: Vec<Vec<u8>> = (0..n)
        .map(|to| {
            let mut buf = vec![0u8; size];
            fill(&mut buf, seed(rank, to, size, sequence));
            buf
        })
        .collect();
    let mut recvs: Vec<Vec<u8>> = (0..n).map(|_| receive_buffer(size)).collect();
    let statuses = scope(|s| -> Result<Vec<Status>, BoxError> {
        let mut receives = Vec::with_capacity(n as usize);
        for (from, buf) in recvs.iter_mut().enumerate() {
            let source = world.process_at_rank(from as i32);
            receives.push(source.immediate_receive_into_with_tag(s, &mut buf[..], tag)?);
        }
        // Each rank starts with its next neighbour, so no rank is
        // everybody's first destination.
        let mut sending = Vec::with_capacity(n as usize);
        for step in 0..n {
            let to = (rank + 1 + step) % n;
            let dest = world.process_at_rank(to);
            sending.push(dest.immediate_send_with_tag(s, &sends[to as usize][..], tag)?);
        }
        wait_all(sending)?;
        Ok(wait_all(receives)?)
    })
    .map_err(|e| format!("{size} B among all pairs: {e}"))?;
    for (from, (status, buf)) in statuses.iter().zip(&recvs).enumerate() {
        let from = from as i32;
        check(
            status,
            buf,
            from,
            tag,
            size,
            seed(from, rank, size, sequence),
            &format!("{size} B from rank {from}"),
        )?;
    }
    Ok(())
}

/// The number of sm segment files (`sm-*`) in the job directory mpirun
/// made (`OXMPI_JOB_DIR`), if there is one.
fn segment_files() -> Result<Option<usize>, BoxError> {
    let Some(dir) = std::env::var_os("OXMPI_JOB_DIR") else {
        return Ok(None);
    };
    let entries = std::fs::read_dir(&dir)
        .map_err(|e| format!("cannot list the job directory {dir:?}: {e}"))?;
    let mut count = 0;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list the job directory {dir:?}: {e}"))?;
        if entry.file_name().to_string_lossy().starts_with("sm-") {
            count += 1;
        }
    }
    Ok(Some(count))
}

fn scenario_allpairs(world: &SimpleCommunicator, sizes: &[usize]) -> Result<String, BoxError> {
    let n = world.size();
    for (index, &size) in sizes.iter().enumerate() {
        exchange_all(world, size, index as Tag)?;
    }
    // A closing round: once it is complete here, every rank has finished
    // the rounds before it, so every rank has sent to every rank.
    exchange_all(world, 0, sizes.len() as Tag)?;
    let files = match segment_files()? {
        Some(count) => format!("; {count} sm segment files in the job directory"),
        None => String::new(),
    };
    Ok(format!(
        "allpairs ok ({} sizes with each of {n} ranks){files}",
        sizes.len()
    ))
}

/// Thread `t`'s traffic with the same thread of rank `other`.
fn thread_traffic(
    world: &SimpleCommunicator,
    other: i32,
    t: usize,
    iterations: u64,
) -> Result<(), BoxError> {
    let rank = world.rank();
    let peer = world.process_at_rank(other);
    let tag = t as Tag;
    let largest = THREAD_SIZES.iter().copied().max().unwrap_or(0);
    let mut send = vec![0u8; largest];
    let mut recv = receive_buffer(largest);
    for i in 0..iterations {
        let size = THREAD_SIZES[(i as usize + t) % THREAD_SIZES.len()];
        let sequence = i << 4 | t as u64;
        let what = format!("thread {t}, iteration {i}, {size} B from rank {other}");
        fill(&mut send[..size], seed(rank, other, size, sequence));
        recv[..size + GUARD].fill(GUARD_BYTE);
        let status = if t.is_multiple_of(2) {
            scope(|s| -> Result<Status, BoxError> {
                let r = peer.immediate_receive_into_with_tag(s, &mut recv[..size + GUARD], tag)?;
                let w = peer.immediate_send_with_tag(s, &send[..size], tag)?;
                w.wait()?;
                Ok(r.wait()?)
            })
        } else if rank < other {
            peer.send_with_tag(&send[..size], tag)
                .and_then(|()| peer.receive_into_with_tag(&mut recv[..size + GUARD], tag))
                .map_err(BoxError::from)
        } else {
            peer.receive_into_with_tag(&mut recv[..size + GUARD], tag)
                .and_then(|st| peer.send_with_tag(&send[..size], tag).map(|()| st))
                .map_err(BoxError::from)
        }
        .map_err(|e| format!("{what}: {e}"))?;
        check(
            &status,
            &recv[..size + GUARD],
            other,
            tag,
            size,
            seed(other, rank, size, sequence),
            &what,
        )?;
    }
    Ok(())
}

fn scenario_threads(
    world: &SimpleCommunicator,
    provided: Threading,
    iterations: u64,
) -> Result<String, BoxError> {
    if provided != Threading::Multiple {
        return Err(
            format!("asked for MPI_THREAD_MULTIPLE but the runtime provides {provided:?}").into(),
        );
    }
    let (rank, n) = (world.rank(), world.size());
    let other = rank ^ 1;
    if other >= n {
        return Ok("threads ok (idle: no partner)".into());
    }
    let results: Vec<Result<(), String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                s.spawn(move || {
                    thread_traffic(world, other, t, iterations).map_err(|e| e.to_string())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a thread panicked".to_string()))
            })
            .collect()
    });
    for result in results {
        result?;
    }
    Ok(format!(
        "threads ok ({THREADS} threads, {iterations} messages each way per thread, with rank {other})"
    ))
}

fn parse_count(text: Option<&str>, what: &str) -> Result<u64, BoxError> {
    let text = text.ok_or_else(|| format!("give the {what}"))?;
    text.parse()
        .map_err(|_| format!("the {what} \"{text}\" is not a number").into())
}

fn parse_sizes(text: Option<&str>) -> Result<Vec<usize>, BoxError> {
    let text = text.ok_or("give the sizes, comma-separated")?;
    text.split(',')
        .map(|s| {
            s.trim()
                .parse::<usize>()
                .map_err(|_| format!("the size \"{s}\" is not a number").into())
        })
        .collect()
}

const USAGE: &str = "usage: sm_check sizes | flood COUNT | allpairs SIZE[,SIZE...] | busy MILLISECONDS | threads ITERATIONS";

/// Bytes of the `busy` scenario's message.
const BUSY_SIZE: usize = 4 << 20;

/// `busy`: see the crate docs.
fn scenario_busy(world: &SimpleCommunicator, millis: u64) -> Result<String, BoxError> {
    let rank = world.rank();
    let Some(other) = partner(world, "busy")? else {
        return Ok("busy ok (idle)".into());
    };
    let peer = world.process_at_rank(other);
    let what = format!("{BUSY_SIZE} B to a receive posted first");
    if rank == 0 {
        let mut send = vec![0u8; BUSY_SIZE];
        fill(&mut send, seed(0, 1, BUSY_SIZE, 7));
        peer.receive_into_with_tag(&mut [0u8; 0][..], 1)
            .map_err(|e| format!("{what}: the go message: {e}"))?;
        scope(|s| -> Result<(), BoxError> {
            let w = peer.immediate_send_with_tag(s, &send, 2)?;
            std::thread::sleep(std::time::Duration::from_millis(millis));
            w.wait()?;
            Ok(())
        })
        .map_err(|e| format!("{what}: {e}"))?;
        return Ok(format!(
            "busy ok (sent {BUSY_SIZE} B, then computed for {millis} ms)"
        ));
    }
    let mut recv = receive_buffer(BUSY_SIZE);
    let (status, took) = scope(|s| -> Result<(Status, std::time::Duration), BoxError> {
        let r = peer.immediate_receive_into_with_tag(s, &mut recv, 2)?;
        peer.send_with_tag(&[0u8; 0][..], 1)?;
        let started = std::time::Instant::now();
        let status = r.wait()?;
        Ok((status, started.elapsed()))
    })
    .map_err(|e| format!("{what}: {e}"))?;
    check(
        &status,
        &recv,
        0,
        2,
        BUSY_SIZE,
        seed(0, 1, BUSY_SIZE, 7),
        &what,
    )?;
    Ok(format!(
        "busy ok (received {BUSY_SIZE} B in {} ms while the sender computed)",
        took.as_millis()
    ))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let scenario = args.first().map(String::as_str).unwrap_or("");
    let level = match scenario {
        "sizes" | "flood" | "allpairs" | "busy" => Threading::Single,
        "threads" => Threading::Multiple,
        _ => {
            eprintln!("sm_check: unknown scenario \"{scenario}\"; {USAGE}");
            return ExitCode::FAILURE;
        }
    };
    let (universe, provided) = match oxmpi::initialize_with_threading(level) {
        Ok(u) => u,
        Err(e) => {
            eprintln!("sm_check: cannot initialize MPI: {e}");
            return ExitCode::FAILURE;
        }
    };
    let world = universe.world();
    let arg = args.get(1).map(String::as_str);
    let outcome = match scenario {
        "sizes" => scenario_sizes(&world),
        "flood" => parse_count(arg, "number of messages per sender")
            .and_then(|count| scenario_flood(&world, count)),
        "allpairs" => parse_sizes(arg).and_then(|sizes| scenario_allpairs(&world, &sizes)),
        "busy" => parse_count(arg, "number of milliseconds")
            .and_then(|millis| scenario_busy(&world, millis)),
        _ => parse_count(arg, "number of iterations")
            .and_then(|iterations| scenario_threads(&world, provided, iterations)),
    };
    match outcome {
        Ok(line) => println!("rank {}: {line}", world.rank()),
        Err(e) => {
            eprintln!("sm_check: rank {}: {e}", world.rank());
            world.abort(1);
        }
    }
    match universe.finalize() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sm_check: rank {}: finalize failed: {e}", world.rank());
            ExitCode::FAILURE
        }
    }
}
