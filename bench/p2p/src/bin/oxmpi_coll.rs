//! Collective latency through the `oxmpi` Rust API, with the method,
//! sizes, schedule, data check and output lines of the C program run
//! under Open MPI and MPICH (`bench/p2p/c/coll.c`).
//!
//! Usage: `mpirun -n N oxmpi_coll [--quick] [--sizes LIST] [--ops LIST] [--repeat K]`
//! (`--ops` runs only the operations listed; `--repeat` multiplies the
//! timed calls, for profiling).
//!
//! For each operation (allreduce, bcast, reduce, barrier, alltoall,
//! allgather) and size (bytes per rank; the reductions sum `f64`s): one
//! checked call, warm-up calls, a barrier, then timed calls; rank 0 prints
//! `coll <op> <bytes> <usec per call>` (the mean on rank 0). Comments
//! start with `#`; errors go to stderr with exit status 1.

#![forbid(unsafe_code)]

use std::process::ExitCode;

use oxmpi::collective::SystemOperation;
use oxmpi::topology::SimpleCommunicator;
use oxmpi::traits::*;

type BoxError = Box<dyn std::error::Error>;

const DEFAULT_SIZES: [usize; 6] = [8, 64, 512, 4096, 65536, 1 << 20];
const OPS: [&str; 6] = [
    "allreduce",
    "bcast",
    "reduce",
    "barrier",
    "alltoall",
    "allgather",
];

fn schedule(size: usize, quick: bool) -> (usize, usize) {
    let (w, i) = if size <= 4096 {
        (200, 2000)
    } else if size <= 65536 {
        (20, 200)
    } else {
        (5, 30)
    };
    if quick {
        (w / 10 + 1, i / 10 + 2)
    } else {
        (w, i)
    }
}

struct Options {
    quick: bool,
    sizes: Vec<usize>,
    ops: Vec<&'static str>,
    repeat: usize,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        quick: false,
        sizes: DEFAULT_SIZES.to_vec(),
        ops: OPS.to_vec(),
        repeat: 1,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--quick" => o.quick = true,
            "--sizes" => {
                let list = args.next().ok_or("--sizes needs a list")?;
                o.sizes = list
                    .split(',')
                    .map(|s| s.trim().parse().map_err(|e| format!("size {s:?}: {e}")))
                    .collect::<Result<_, _>>()?;
            }
            "--ops" => {
                let list = args.next().ok_or("--ops needs a list")?;
                o.ops = list
                    .split(',')
                    .map(|name| {
                        OPS.iter()
                            .copied()
                            .find(|op| *op == name.trim())
                            .ok_or_else(|| format!("unknown operation {name:?} (known: {OPS:?})"))
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--repeat" => {
                let k = args.next().ok_or("--repeat needs a number")?;
                o.repeat = match k.parse() {
                    Ok(k) if k > 0 => k,
                    _ => return Err(format!("--repeat {k:?}: a whole number from 1")),
                };
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(o)
}

struct Buffers {
    d: Vec<f64>,
    dout: Vec<f64>,
    b: Vec<u8>,
    bout: Vec<u8>,
}

fn call(
    world: &SimpleCommunicator,
    op: &str,
    size: usize,
    n: usize,
    bufs: &mut Buffers,
) -> Result<(), BoxError> {
    let count = size / 8;
    let root = world.process_at_rank(0);
    match op {
        "allreduce" => world.all_reduce_into(
            &bufs.d[..count],
            &mut bufs.dout[..count],
            SystemOperation::sum(),
        )?,
        "bcast" => root.broadcast_into(&mut bufs.b[..size])?,
        "reduce" => {
            if world.rank() == 0 {
                root.reduce_into_root(
                    &bufs.d[..count],
                    &mut bufs.dout[..count],
                    SystemOperation::sum(),
                )?
            } else {
                root.reduce_into(&bufs.d[..count], SystemOperation::sum())?
            }
        }
        "barrier" => world.barrier()?,
        "alltoall" => world.all_to_all_into(&bufs.b[..size * n], &mut bufs.bout[..size * n])?,
        "allgather" => world.all_gather_into(&bufs.b[..size], &mut bufs.bout[..size * n])?,
        _ => unreachable!("the operations are OPS"),
    }
    Ok(())
}

fn check(
    world: &SimpleCommunicator,
    op: &str,
    size: usize,
    n: usize,
    bufs: &mut Buffers,
) -> Result<(), BoxError> {
    let (rank, count) = (world.rank() as usize, size / 8);
    let sum = |i: usize| (n * (n + 1) / 2) as f64 + (n * i) as f64;
    let wrong = || format!("{op} of {size} bytes: wrong result at rank {rank}");
    match op {
        "allreduce" | "reduce" => {
            for (i, x) in bufs.d[..count].iter_mut().enumerate() {
                *x = (rank + 1) as f64 + i as f64;
            }
            call(world, op, size, n, bufs)?;
            if (op == "allreduce" || rank == 0) && (0..count).any(|i| bufs.dout[i] != sum(i)) {
                return Err(wrong().into());
            }
        }
        "bcast" => {
            for (i, b) in bufs.b[..size].iter_mut().enumerate() {
                *b = if rank == 0 { (i * 7) as u8 } else { 0 };
            }
            call(world, op, size, n, bufs)?;
            if (0..size).any(|i| bufs.b[i] != (i * 7) as u8) {
                return Err(wrong().into());
            }
        }
        "alltoall" | "allgather" => {
            let all = op == "alltoall";
            for j in 0..if all { n } else { 1 } {
                for i in 0..size {
                    bufs.b[j * size + i] = (rank * 31 + j * 7 + i) as u8;
                }
            }
            call(world, op, size, n, bufs)?;
            for r in 0..n {
                for i in 0..size {
                    if bufs.bout[r * size + i]
                        != (r * 31 + if all { rank } else { 0 } * 7 + i) as u8
                    {
                        return Err(wrong().into());
                    }
                }
            }
        }
        _ => {}
    }
    Ok(())
}

fn measure(world: &SimpleCommunicator, o: &Options) -> Result<(), BoxError> {
    let n = world.size() as usize;
    let largest = o.sizes.iter().copied().max().unwrap_or(8).max(8);
    let mut bufs = Buffers {
        d: vec![0.0; largest / 8 + 1],
        dout: vec![0.0; largest / 8 + 1],
        b: vec![0; largest * n + 1],
        bout: vec![0; largest * n + 1],
    };
    if world.rank() == 0 {
        println!("# coll: oxmpi {}, {n} ranks", env!("CARGO_PKG_VERSION"));
    }
    for op in OPS.into_iter().filter(|op| o.ops.contains(op)) {
        for (k, &size) in o.sizes.iter().enumerate() {
            if op == "barrier" && k > 0 {
                break;
            }
            check(world, op, size, n, &mut bufs)?;
            // A barrier moves no data: the schedule of the smallest calls.
            let moved = if op == "barrier" { 0 } else { size };
            let (warmup, iters) = schedule(moved, o.quick);
            let iters = iters * o.repeat;
            for _ in 0..warmup {
                call(world, op, size, n, &mut bufs)?;
            }
            world.barrier()?;
            let t0 = oxmpi::time();
            for _ in 0..iters {
                call(world, op, size, n, &mut bufs)?;
            }
            let t = (oxmpi::time() - t0) / iters as f64;
            if world.rank() == 0 {
                println!("coll {op} {moved} {:.3}", t * 1e6);
            }
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let o = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("oxmpi_coll: {e}; usage: mpirun -n N oxmpi_coll [--quick] [--sizes LIST] [--ops LIST] [--repeat K]");
            return ExitCode::from(2);
        }
    };
    let run = || -> Result<(), BoxError> {
        let universe = oxmpi::initialize()?;
        let world = universe.world();
        if let Err(e) = measure(&world, &o) {
            eprintln!("oxmpi_coll: rank {}: {e}", world.rank());
            world.abort(1);
        }
        universe.finalize()?;
        Ok(())
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("oxmpi_coll: {e}");
            ExitCode::FAILURE
        }
    }
}
