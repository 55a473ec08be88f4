//! The software path of a message, without a wire: one rank sends to
//! itself through the `oxmpi` Rust API, `immediate_send` +
//! `immediate_receive_into` + `wait` on both, in a fresh request scope per
//! message (as a program that sends one message at a time writes it).
//!
//! Usage: `oxmpi_selfsend [--quick] [--sizes LIST]` (default sizes 0 and
//! 8 B), as a singleton or under `mpirun -n 1`; with more ranks every rank
//! sends to itself and rank 0 reports.
//!
//! Each size has an untimed checked message before the warm-up and one
//! after the timed loop (patterned payload, cleared receive buffer, every
//! byte and the received byte count compared).
//!
//! Output (rank 0): `self <bytes> <ns per message>`; comments start with
//! `#`. Errors on stderr, exit status 1.

#![forbid(unsafe_code)]

use std::process::ExitCode;
use std::time::Instant;

use oxmpi::traits::*;
use oxmpi_bench_p2p::{fill, seed, selfsend_line, selfsend_schedule, verify, Options, CLEAR_BYTE};

type BoxError = Box<dyn std::error::Error>;

/// The sizes measured when `--sizes` is not given.
const DEFAULT_SIZES: [usize; 2] = [0, 8];

fn main() -> ExitCode {
    let opts = match Options::parse(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("oxmpi_selfsend: {e}; usage: oxmpi_selfsend [--quick] [--sizes LIST]");
            return ExitCode::FAILURE;
        }
    };
    match run(&opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("oxmpi_selfsend: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(opts: &Options) -> Result<(), BoxError> {
    let universe = oxmpi::initialize()?;
    let world = universe.world();
    if let Err(e) = measure(&world, opts) {
        eprintln!("oxmpi_selfsend: rank {}: {e}", world.rank());
        world.abort(1);
    }
    universe.finalize()?;
    Ok(())
}

fn measure<C: Communicator>(world: &C, opts: &Options) -> Result<(), BoxError> {
    let rank = world.rank();
    let me = world.process_at_rank(rank);
    let sizes = opts.sizes.clone().unwrap_or_else(|| DEFAULT_SIZES.to_vec());
    let max = sizes.iter().copied().max().unwrap_or(0);
    let mut sbuf = vec![CLEAR_BYTE; max];
    let mut rbuf = vec![CLEAR_BYTE; max];
    if rank == 0 {
        println!(
            "# oxmpi_selfsend: oxmpi {}, {} rank(s); immediate_send + immediate_receive_into + wait to self",
            env!("CARGO_PKG_VERSION"),
            world.size()
        );
    }
    let sched = selfsend_schedule(opts.quick);
    for &size in &sizes {
        let (sbuf, rbuf) = (&mut sbuf[..size], &mut rbuf[..size]);
        check(&me, sbuf, rbuf, true).map_err(|e| format!("{size} B: {e}"))?;
        let mut start = Instant::now();
        for i in 0..sched.warmup + sched.iters {
            if i == sched.warmup {
                start = Instant::now();
            }
            self_message(&me, sbuf, rbuf)?;
        }
        let elapsed = start.elapsed().as_secs_f64();
        check(&me, sbuf, rbuf, false).map_err(|e| format!("{size} B: {e}"))?;
        if rank == 0 {
            println!("{}", selfsend_line(size, elapsed, sched.iters));
        }
    }
    Ok(())
}

/// One message to self: start the send, post the receive, wait for both;
/// the number of bytes received.
#[inline]
fn self_message<P: Destination + Source>(
    me: &P,
    sbuf: &[u8],
    rbuf: &mut [u8],
) -> Result<usize, BoxError> {
    oxmpi::request::scope(|s| -> Result<usize, BoxError> {
        let send = me.immediate_send(s, sbuf)?;
        let recv = me.immediate_receive_into(s, rbuf)?;
        send.wait()?;
        Ok(recv.wait()?.byte_count())
    })
}

/// One untimed message with patterned data, every byte compared.
fn check<P: Destination + Source>(
    me: &P,
    sbuf: &mut [u8],
    rbuf: &mut [u8],
    before: bool,
) -> Result<(), BoxError> {
    let when = if before { "before" } else { "after" };
    let size = sbuf.len();
    let seed = seed(before, size, 0);
    fill(sbuf, seed);
    rbuf.fill(CLEAR_BYTE);
    let got = self_message(me, sbuf, rbuf)?;
    if got != size {
        return Err(
            format!("check {when} the timed loop: {got} bytes arrived, {size} sent").into(),
        );
    }
    verify(rbuf, seed).map_err(|m| format!("check {when} the timed loop: {m}"))?;
    Ok(())
}
