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
//!
//! Measured (singleton, release profile, 2-CPU AMD EPYC VM shared with
//! other work; 7 runs of each build, interleaved; ns per message, range
//! and median):
//!
//! | build | 0 B | 8 B |
//! |---|---|---|
//! | before the lean message path | 401–415 (404) | 403–419 (409) |
//! | after | 211–228 (214) | 215–222 (219) |
//! | pml interface 3.0 (a later series, against the row above) | 127–140 (130) | 128–174 (130) |
//! | loopback delivery and immediate receives (against the row above, rebuilt) | 80–84 (83) | 81–89 (85) |
//! | and inlined message starts in the Rust API (`scripts/bench-shm.sh`, three runs) | 68–70 | 71–74 |
//!
//! (An earlier series on a busier machine: before 379–417 and 385–413,
//! after 212–224 and 214–227, before the last change of about 6 ns. The
//! last row's series ran the previous build alongside: 193–243 (202) and
//! 197–270 (203).)
//!
//! What the first lean path removed per message: the request scope's mutex and
//! its two allocations (a scope keeps its creating thread's first four
//! requests in atomic slots, written with plain loads and stores); one
//! atomic swap per component entry (about fourteen entries per message:
//! the components' exclusive-entry flag is biased to the thread that uses
//! it, see `oxmpi_plugin_api::serial`); store-forwarding stalls in the
//! adapters (results and tokens moved through the guard's nested `Result`s
//! in pieces); a ~200-byte move per request into ob1's slab; a hash lookup
//! per send for the sequence number; a copy of each outcome kept in a
//! request that `wait` consumes; a call to `pthread_self` per entry. What
//! was left then (by profile): ob1's protocol and matching (about half: the
//! matcher's post, match and removal about 15 %), fourteen guarded
//! component entries of about 3 ns each (the MPI layer's `wait` tests,
//! polls every registered progress function — self, tcp — and the pml's,
//! tests again and frees), and the Rust API's request objects.
//!
//! What the pml interface 3.0 removed per message: the send's request
//! (self copies the 8 bytes and answers Done, ob1 sends the MATCH before
//! making a request, and the send completes as it starts: no test, no
//! free); the test before the message arrived (the pml's event counter had
//! not moved); the test and the release after it (the pml released the
//! watched receive and published its status); `on_header` and
//! `on_send_done` of the self btl; the pml's `progress` (no work); and
//! stalls where a value written in narrow stores was read back wide (the
//! MATCH header as an enum, the match's truncation flag, the request id).
//! Left then: five guarded entries (isend, the btl's send, irecv, the
//! btl's progress, its callback), ob1's matching (posting the receive,
//! then matching the arrival), and the Rust API's scope and requests.
//!
//! What the next series removed: the btl's send, progress and callback
//! (ob1 delivers an eager message to its own rank during `isend`, the
//! self btl being a loopback module), the receive's request (ob1 copies
//! the arrived message and completes the receive in `irecv`), both waits'
//! calls (both operations come back complete), a second search of the
//! posted receives and a hash per message in the matcher, and about a
//! fifth of the instructions by moving error branches out of hot
//! functions (the MPI layer's entry and argument checks, ob1's send).
//! Then inlining the Rust API's message starts removed a stalled load per
//! message (their request ids came back through memory in pieces the
//! caller read back whole). Left: two guarded entries (isend, irecv), the
//! unexpected queue (queue, copy, take), and the Rust API's scope and
//! requests: about 1,450 instructions by callgrind.

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
