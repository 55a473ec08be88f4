//! Point-to-point latency and bandwidth through the `oxmpi` Rust API, with
//! the method, sizes, schedule, data check and output lines of the C program
//! run under Open MPI and MPICH (`bench/p2p/c/pt2pt.c`) and of the raw TCP
//! floor (see the crate documentation and `bench/p2p/README.md`).
//!
//! Usage: `mpirun -n 2 oxmpi_pt2pt [--quick] [--sizes LIST]`
//!
//! - latency: blocking `send` / `receive_into` ping-pong;
//! - bandwidth: rank 0 starts [`WINDOW`] `immediate_send`s of one buffer,
//!   rank 1 starts [`WINDOW`] `immediate_receive_into`s, one per consecutive
//!   slice of one buffer; both wait for all of them, then rank 1 sends a
//!   1-byte acknowledgement;
//! - an untimed checked round before the warm-up and after the timed loop.
//!
//! Output (rank 0): `lat <bytes> <usec>`, `bw <bytes> <MB/s>`; comments
//! start with `#`. Errors on stderr, exit status 1 (which stops the job).

#![forbid(unsafe_code)]

use std::process::ExitCode;

use oxmpi::traits::*;
use oxmpi_bench_p2p::{
    bandwidth_line, bandwidth_schedule, fill, latency_line, latency_schedule, seed, verify,
    Options, CLEAR_BYTE, WINDOW,
};

type BoxError = Box<dyn std::error::Error>;

fn main() -> ExitCode {
    let opts = match Options::parse(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("oxmpi_pt2pt: {e}; usage: mpirun -n 2 oxmpi_pt2pt [--quick] [--sizes LIST]");
            return ExitCode::from(2);
        }
    };
    match run(&opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("oxmpi_pt2pt: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(opts: &Options) -> Result<(), BoxError> {
    let universe = oxmpi::initialize()?;
    let world = universe.world();
    if let Err(e) = measure(&world, opts) {
        // Abort rather than return: the peer may be blocked in a receive
        // this rank will never match, and finalize would wait for it.
        eprintln!("oxmpi_pt2pt: rank {}: {e}", world.rank());
        world.abort(1);
    }
    universe.finalize()?;
    Ok(())
}

fn measure<C: Communicator>(world: &C, opts: &Options) -> Result<(), BoxError> {
    let rank = world.rank();
    if world.size() != 2 {
        return Err(format!("needs exactly 2 ranks, got {} (mpirun -n 2)", world.size()).into());
    }
    let peer = world.process_at_rank(1 - rank);
    let sizes = opts.sizes();
    let max = sizes.iter().copied().max().unwrap_or(0);
    // Written (not zeroed) so that every page is touched before measuring.
    let mut sbuf = vec![CLEAR_BYTE; max];
    let mut rbuf = vec![CLEAR_BYTE; max];
    let mut window = if rank == 1 {
        vec![CLEAR_BYTE; WINDOW * max]
    } else {
        Vec::new()
    };
    if rank == 0 {
        println!("# oxmpi_pt2pt: oxmpi {}", env!("CARGO_PKG_VERSION"));
    }
    let ctx = Ctx {
        rank: rank as u32,
        quick: opts.quick,
    };
    for &size in &sizes {
        ctx.latency(&peer, &mut sbuf[..size], &mut rbuf[..size])
            .map_err(|e| format!("latency, {size} B: {e}"))?;
    }
    for &size in sizes.iter().filter(|&&s| s > 0) {
        let window = if rank == 1 {
            &mut window[..WINDOW * size]
        } else {
            &mut window[..0]
        };
        ctx.bandwidth(&peer, &mut sbuf[..size], window)
            .map_err(|e| format!("bandwidth, {size} B: {e}"))?;
    }
    Ok(())
}

struct Ctx {
    rank: u32,
    quick: bool,
}

impl Ctx {
    fn pingpong<P: Destination + Source>(
        &self,
        peer: &P,
        sbuf: &[u8],
        rbuf: &mut [u8],
    ) -> Result<(), BoxError> {
        if self.rank == 0 {
            peer.send(sbuf)?;
            peer.receive_into(rbuf)?;
        } else {
            peer.receive_into(rbuf)?;
            peer.send(sbuf)?;
        }
        Ok(())
    }

    fn latency<P: Destination + Source>(
        &self,
        peer: &P,
        sbuf: &mut [u8],
        rbuf: &mut [u8],
    ) -> Result<(), BoxError> {
        let size = sbuf.len();
        let sched = latency_schedule(size, self.quick);
        self.latency_check(peer, sbuf, rbuf, true)?;
        let mut start = oxmpi::time();
        for i in 0..sched.warmup + sched.iters {
            if i == sched.warmup {
                start = oxmpi::time();
            }
            self.pingpong(peer, sbuf, rbuf)?;
        }
        let elapsed = oxmpi::time() - start;
        self.latency_check(peer, sbuf, rbuf, false)?;
        if self.rank == 0 {
            println!("{}", latency_line(size, elapsed, sched.iters));
        }
        Ok(())
    }

    fn latency_check<P: Destination + Source>(
        &self,
        peer: &P,
        sbuf: &mut [u8],
        rbuf: &mut [u8],
        before: bool,
    ) -> Result<(), BoxError> {
        let size = sbuf.len();
        fill(sbuf, seed(before, size, self.rank));
        rbuf.fill(CLEAR_BYTE);
        self.pingpong(peer, sbuf, rbuf)?;
        verify(rbuf, seed(before, size, 1 - self.rank)).map_err(|m| {
            format!(
                "check {} the timed loop: {m}",
                if before { "before" } else { "after" }
            )
            .into()
        })
    }

    /// One window: rank 0 sends [`WINDOW`] messages from `sbuf`, rank 1
    /// receives them into consecutive slices of `window` and acknowledges.
    fn window<P: Destination + Source>(
        &self,
        peer: &P,
        sbuf: &[u8],
        window: &mut [u8],
    ) -> Result<(), BoxError> {
        let mut ack = [0u8; 1];
        if self.rank == 0 {
            oxmpi::request::scope(|s| -> Result<(), BoxError> {
                let mut reqs = Vec::with_capacity(WINDOW);
                for _ in 0..WINDOW {
                    reqs.push(peer.immediate_send(s, sbuf)?);
                }
                oxmpi::request::wait_all(reqs)?;
                Ok(())
            })?;
            peer.receive_into(&mut ack[..])?;
        } else {
            let size = window.len() / WINDOW;
            oxmpi::request::scope(|s| -> Result<(), BoxError> {
                let mut reqs = Vec::with_capacity(WINDOW);
                for slot in window.chunks_mut(size) {
                    reqs.push(peer.immediate_receive_into(s, slot)?);
                }
                oxmpi::request::wait_all(reqs)?;
                Ok(())
            })?;
            peer.send(&ack[..])?;
        }
        Ok(())
    }

    fn bandwidth<P: Destination + Source>(
        &self,
        peer: &P,
        sbuf: &mut [u8],
        window: &mut [u8],
    ) -> Result<(), BoxError> {
        let size = sbuf.len();
        let sched = bandwidth_schedule(size, self.quick);
        self.bandwidth_check(peer, sbuf, window, true)?;
        let mut start = oxmpi::time();
        for w in 0..sched.warmup + sched.iters {
            if w == sched.warmup {
                start = oxmpi::time();
            }
            self.window(peer, sbuf, window)?;
        }
        let elapsed = oxmpi::time() - start;
        self.bandwidth_check(peer, sbuf, window, false)?;
        if self.rank == 0 {
            println!("{}", bandwidth_line(size, elapsed, sched.iters));
        }
        Ok(())
    }

    fn bandwidth_check<P: Destination + Source>(
        &self,
        peer: &P,
        sbuf: &mut [u8],
        window: &mut [u8],
        before: bool,
    ) -> Result<(), BoxError> {
        let size = sbuf.len();
        if self.rank == 0 {
            fill(sbuf, seed(before, size, 0));
        } else {
            window.fill(CLEAR_BYTE);
        }
        self.window(peer, sbuf, window)?;
        if self.rank == 1 {
            for (k, msg) in window.chunks(size).enumerate() {
                verify(msg, seed(before, size, 0)).map_err(|m| {
                    format!(
                        "check {} the timed loop, message {k}: {m}",
                        if before { "before" } else { "after" }
                    )
                })?;
            }
        }
        Ok(())
    }
}
