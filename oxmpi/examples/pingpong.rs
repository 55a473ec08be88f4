//! Ranks 0 and 1 bounce messages of 0 B, 1 B, 8 B, 1 KiB, 64 KiB, 1 MiB
//! and 4 MiB back and forth, check the data, and rank 0 prints the
//! one-way latency and the bandwidth of each size. Other ranks only take
//! part in initialization and finalization. With one rank, rank 0 pings
//! itself.
//!
//! For each size: one untimed exchange whose whole contents both sides
//! check, then a timed loop in which every message carries the iteration
//! number in its first and last bytes (checked on arrival) and the last
//! echo is checked in full.
//!
//! Run: `mpirun -n 2 pingpong` (any number of ranks, including 1). Exits 0
//! only if every check passed; otherwise prints why and aborts the job.

#![forbid(unsafe_code)]

use oxmpi::point_to_point::{send_receive_into_with_tags, Process};
use oxmpi::topology::SimpleCommunicator;
use oxmpi::traits::*;
use std::process::ExitCode;

type BoxError = Box<dyn std::error::Error>;

const SIZES: [usize; 7] = [0, 1, 8, 1 << 10, 64 << 10, 1 << 20, 4 << 20];
const PING: i32 = 1;
const PONG: i32 = 2;

fn iterations(size: usize) -> usize {
    match size {
        0..=1024 => 200,
        1025..=65536 => 50,
        65537..=1048576 => 10,
        _ => 4,
    }
}

/// Deterministic contents for (size, seed).
fn fill(buf: &mut [u8], seed: u64) {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for b in buf {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
}

fn compare(got: &[u8], want: &[u8], what: &str) -> Result<(), BoxError> {
    match got.iter().zip(want).position(|(g, w)| g != w) {
        None => Ok(()),
        Some(k) => Err(format!(
            "{what}: byte {k} of {} is {:#04x}, expected {:#04x}",
            got.len(),
            got[k],
            want[k]
        )
        .into()),
    }
}

fn mark(buf: &mut [u8], i: usize) {
    if let Some(first) = buf.first_mut() {
        *first = i as u8;
    }
    if let Some(last) = buf.last_mut() {
        *last = (i as u8) ^ 0x5A;
    }
}

fn check_mark(buf: &[u8], i: usize, what: &str) -> Result<(), BoxError> {
    let last = (i as u8) ^ 0x5A;
    let first = if buf.len() == 1 { last } else { i as u8 };
    if buf.first().is_some_and(|&b| b != first) || buf.last().is_some_and(|&b| b != last) {
        return Err(
            format!("{what}: iteration {i} received the message of another iteration").into(),
        );
    }
    Ok(())
}

/// The checked exchange before the timed loop.
fn checked_round(
    rank: i32,
    peer: &Process<'_>,
    sbuf: &mut [u8],
    rbuf: &mut [u8],
) -> Result<(), BoxError> {
    let size = sbuf.len();
    let seed = |r: i32| (size as u64) << 8 | r as u64;
    fill(sbuf, seed(rank));
    rbuf.fill(0);
    let mut want = vec![0; size];
    if peer.is_self() {
        send_receive_into_with_tags(&*sbuf, peer, PING, rbuf, peer, PING)?;
        fill(&mut want, seed(rank));
        return compare(rbuf, &want, "self ping");
    }
    fill(&mut want, seed(peer.rank()));
    if rank == 0 {
        peer.send_with_tag(&*sbuf, PING)?;
        let st = peer.receive_into_with_tag(rbuf, PONG)?;
        if st.byte_count() != size {
            return Err(format!("pong of {} bytes, expected {size}", st.byte_count()).into());
        }
        compare(rbuf, &want, "pong")
    } else {
        let st = peer.receive_into_with_tag(rbuf, PING)?;
        if st.byte_count() != size {
            return Err(format!("ping of {} bytes, expected {size}", st.byte_count()).into());
        }
        compare(rbuf, &want, "ping")?;
        peer.send_with_tag(&*sbuf, PONG)?;
        Ok(())
    }
}

/// The timed loop; returns seconds per round trip (rank 0's view).
fn timed(rank: i32, peer: &Process<'_>, sbuf: &mut [u8], rbuf: &mut [u8]) -> Result<f64, BoxError> {
    let n = iterations(sbuf.len());
    let start = oxmpi::time();
    for i in 0..n {
        if rank == 0 {
            mark(sbuf, i);
            if peer.is_self() {
                send_receive_into_with_tags(&*sbuf, peer, PING, rbuf, peer, PING)?;
            } else {
                peer.send_with_tag(&*sbuf, PING)?;
                peer.receive_into_with_tag(rbuf, PONG)?;
            }
            check_mark(rbuf, i, "echo")?;
        } else {
            peer.receive_into_with_tag(rbuf, PING)?;
            check_mark(rbuf, i, "ping")?;
            peer.send_with_tag(&*rbuf, PONG)?;
        }
    }
    let elapsed = oxmpi::time() - start;
    if rank == 0 {
        compare(rbuf, sbuf, "last echo")?;
    }
    Ok(elapsed / n as f64)
}

fn run(world: &SimpleCommunicator) -> Result<(), BoxError> {
    let (rank, size) = (world.rank(), world.size());
    if rank > 1 {
        return Ok(());
    }
    let peer = world.process_at_rank(if size == 1 { 0 } else { 1 - rank });
    let max = SIZES[SIZES.len() - 1];
    let mut sbuf = vec![0u8; max];
    let mut rbuf = vec![0u8; max];
    if rank == 0 {
        println!(
            "pingpong: rank 0 with rank {}{}",
            peer.rank(),
            if peer.is_self() { " (itself)" } else { "" }
        );
        println!("{:>10} {:>12} {:>12}", "bytes", "latency us", "MB/s");
    }
    for &n in &SIZES {
        let (s, r) = (&mut sbuf[..n], &mut rbuf[..n]);
        checked_round(rank, &peer, s, r).map_err(|e| format!("{n} B, checked round: {e}"))?;
        let round_trip = timed(rank, &peer, s, r).map_err(|e| format!("{n} B, timed loop: {e}"))?;
        if rank == 0 {
            let one_way = round_trip / 2.0;
            let bandwidth = if one_way > 0.0 {
                n as f64 / one_way / 1e6
            } else {
                0.0
            };
            println!("{n:>10} {:>12.2} {bandwidth:>12.1}", one_way * 1e6);
        }
    }
    if rank == 0 {
        println!("pingpong: ok, {} sizes checked", SIZES.len());
    }
    Ok(())
}

fn main() -> ExitCode {
    let universe = match oxmpi::initialize() {
        Ok(u) => u,
        Err(e) => {
            eprintln!("pingpong: cannot initialize MPI: {e}");
            return ExitCode::FAILURE;
        }
    };
    let world = universe.world();
    if let Err(e) = run(&world) {
        eprintln!("pingpong: rank {}: {e}", world.rank());
        world.abort(1);
    }
    match universe.finalize() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pingpong: rank {}: finalize failed: {e}", world.rank());
            ExitCode::FAILURE
        }
    }
}
