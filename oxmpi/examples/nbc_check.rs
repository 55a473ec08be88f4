//! Checks the non-blocking collectives of the Rust API (`immediate_`
//! forms) against a sequential reference computed on every rank: each
//! round starts a barrier, a broadcast, a gather, a scatter, an
//! all-gather, an all-to-all, a reduce, an all-reduce (with a
//! non-commutative user operation, which checks the rank order), a
//! reduce-scatter-block, a scan and an exclusive scan, all at once, while
//! point-to-point messages go round a ring; then completes them in reverse
//! order and checks every result. A first check shows a barrier is really
//! non-blocking: every rank but 0 finds its barrier incomplete (rank 0 has
//! not started it) before rank 0 starts.
//!
//! Run: `mpirun -n 4 nbc_check [COUNT [ROUNDS]]` (any number of ranks;
//! COUNT elements per rank, default 1000; ROUNDS, default 20). Every rank
//! prints `nbc ok (<n> checks)` when all passed; otherwise the first
//! difference, and the job fails.

#![forbid(unsafe_code)]

use oxmpi::collective::{SystemOperation, UserOperation};
use oxmpi::request::{scope, wait_all, StaticScope};
use oxmpi::topology::SimpleCommunicator;
use oxmpi::traits::*;
use std::process::ExitCode;

type BoxError = Box<dyn std::error::Error>;

/// What rank `r` contributes in round `round`: element `i`.
fn data(r: i32, i: usize, round: i64) -> i64 {
    // Spread over all 64 bits, so both halves of `left`'s maps vary.
    ((i64::from(r) + 1) * 1_000_003 + i as i64 * 7919 + round * 13)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15_u64 as i64)
}

fn same(what: &str, got: &[i64], want: &[i64]) -> Result<(), BoxError> {
    if got.len() != want.len() {
        return Err(format!("{what}: {} elements, expected {}", got.len(), want.len()).into());
    }
    match got.iter().zip(want).position(|(g, w)| g != w) {
        None => Ok(()),
        Some(k) => Err(format!("{what}: element {k} is {}, expected {}", got[k], want[k]).into()),
    }
}

/// `a op b` for the non-commutative operation: each value packs an affine
/// map `x ↦ m·x + c` modulo 2^32 (`m` in the high half, `c` in the low
/// half), and `a op b` is their composition `a ∘ b`: associative, as MPI
/// requires, and not commutative.
fn left(a: i64, b: i64) -> i64 {
    let (am, ac) = ((a >> 32) as u32, a as u32);
    let (bm, bc) = ((b >> 32) as u32, b as u32);
    let m = am.wrapping_mul(bm);
    let c = am.wrapping_mul(bc).wrapping_add(ac);
    (i64::from(m) << 32) | i64::from(c)
}

/// Every rank but 0 starts a barrier and finds it incomplete, tells rank
/// 0, and only then does rank 0 start its own: a barrier that blocked, or
/// completed early, fails here.
fn barrier_does_not_block(world: &SimpleCommunicator) -> Result<usize, BoxError> {
    let (rank, size) = (world.rank(), world.size());
    if size == 1 {
        world.immediate_barrier(StaticScope)?.wait()?;
        return Ok(1);
    }
    if rank == 0 {
        for r in 1..size {
            let (seen, _) = world.process_at_rank(r).receive::<i32>()?;
            if seen != 0 {
                return Err(format!("rank {r}'s barrier completed before rank 0 started").into());
            }
        }
        world.immediate_barrier(StaticScope)?.wait()?;
    } else {
        let mut req = world.immediate_barrier(StaticScope)?;
        let done = match req.test() {
            Ok(done) => done.is_some(),
            Err(e) => return Err(e.into()),
        };
        world.process_at_rank(0).send(&i32::from(done))?;
        req.wait()?;
    }
    Ok(1)
}

fn round(world: &SimpleCommunicator, count: usize, round: i64) -> Result<usize, BoxError> {
    let (rank, size) = (world.rank(), world.size());
    let n = size as usize;
    let root = (round as i32) % size;
    let mine: Vec<i64> = (0..count).map(|i| data(rank, i, round)).collect();
    let all: Vec<Vec<i64>> = (0..size)
        .map(|r| (0..count).map(|i| data(r, i, round)).collect())
        .collect();
    let sum = SystemOperation::sum();
    let order = UserOperation::non_commutative(|input: &[i64], inout: &mut [i64]| {
        for (a, b) in input.iter().zip(inout.iter_mut()) {
            *b = left(*a, *b);
        }
    });
    let mut bcast = if rank == root {
        mine.clone()
    } else {
        vec![0; count]
    };
    let mut gathered = vec![0i64; count * n];
    let scatter_src: Vec<i64> = (0..count * n).map(|i| i as i64 * 5 + round).collect();
    let mut scattered = vec![0i64; count];
    let mut allgathered = vec![0i64; count * n];
    let to_all: Vec<i64> = (0..count * n)
        .map(|i| i64::from(rank) * 1_000_000 + i as i64)
        .collect();
    let mut from_all = vec![0i64; count * n];
    let mut reduced = vec![0i64; count];
    let mut all_reduced = vec![0i64; count];
    let block_src: Vec<i64> = (0..count * n).map(|i| data(rank, i, round)).collect();
    let mut block = vec![0i64; count];
    let mut scanned = vec![0i64; count];
    let mut exscanned = vec![7i64; count];
    let (mut ring_in, ring_out) = (0i64, i64::from(rank) + round);
    let at_root = rank == root;
    let root_proc = world.process_at_rank(root);
    scope(|sc| -> Result<(), BoxError> {
        let mut reqs = vec![world.immediate_barrier(sc)?];
        reqs.push(root_proc.immediate_broadcast_into(sc, &mut bcast[..])?);
        reqs.push(if at_root {
            root_proc.immediate_gather_into_root(sc, &mine[..], &mut gathered[..])?
        } else {
            root_proc.immediate_gather_into(sc, &mine[..])?
        });
        reqs.push(if at_root {
            root_proc.immediate_scatter_into_root(sc, &scatter_src[..], &mut scattered[..])?
        } else {
            root_proc.immediate_scatter_into(sc, &mut scattered[..])?
        });
        reqs.push(world.immediate_all_gather_into(sc, &mine[..], &mut allgathered[..])?);
        reqs.push(world.immediate_all_to_all_into(sc, &to_all[..], &mut from_all[..])?);
        reqs.push(if at_root {
            root_proc.immediate_reduce_into_root(sc, &mine[..], &mut reduced[..], &sum)?
        } else {
            root_proc.immediate_reduce_into(sc, &mine[..], &sum)?
        });
        reqs.push(world.immediate_all_reduce_into(sc, &mine[..], &mut all_reduced[..], &order)?);
        reqs.push(world.immediate_reduce_scatter_block_into(
            sc,
            &block_src[..],
            &mut block[..],
            &sum,
        )?);
        reqs.push(world.immediate_scan_into(sc, &mine[..], &mut scanned[..], &sum)?);
        reqs.push(world.immediate_exclusive_scan_into(sc, &mine[..], &mut exscanned[..], &sum)?);
        // Point-to-point traffic while they are in flight.
        let next = world.process_at_rank((rank + 1) % size);
        let prev = world.process_at_rank((rank + size - 1) % size);
        let recv = prev.immediate_receive_into(sc, &mut ring_in)?;
        let send = next.immediate_send(sc, &ring_out)?;
        recv.wait()?;
        send.wait()?;
        // Complete them in reverse order of starting.
        reqs.reverse();
        wait_all(reqs)?;
        Ok(())
    })?;
    let mut checks = 0;
    let mut check = |what: &str, got: &[i64], want: &[i64]| -> Result<(), BoxError> {
        checks += 1;
        same(&format!("round {round} (root {root}): {what}"), got, want)
    };
    check("broadcast", &bcast, &all[root as usize])?;
    if at_root {
        check("gather", &gathered, &all.concat())?;
    }
    check(
        "scatter",
        &scattered,
        &(0..count)
            .map(|i| (rank as usize * count + i) as i64 * 5 + round)
            .collect::<Vec<_>>(),
    )?;
    check("all-gather", &allgathered, &all.concat())?;
    let want: Vec<i64> = (0..n)
        .flat_map(|src| {
            (0..count).map(move |i| src as i64 * 1_000_000 + (rank as usize * count + i) as i64)
        })
        .collect();
    check("all-to-all", &from_all, &want)?;
    let fold = |ranks: std::ops::Range<usize>, op: fn(i64, i64) -> i64| -> Vec<i64> {
        (0..count)
            .map(|i| {
                all[ranks.start + 1..ranks.end]
                    .iter()
                    .fold(all[ranks.start][i], |acc, x| op(acc, x[i]))
            })
            .collect()
    };
    let add = |a: i64, b: i64| a.wrapping_add(b);
    if at_root {
        check("reduce", &reduced, &fold(0..n, add))?;
    }
    check("all-reduce (rank order)", &all_reduced, &fold(0..n, left))?;
    let want: Vec<i64> = (0..count)
        .map(|i| {
            (0..size)
                .map(|r| data(r, rank as usize * count + i, round))
                .fold(0i64, i64::wrapping_add)
        })
        .collect();
    check("reduce-scatter-block", &block, &want)?;
    check("scan", &scanned, &fold(0..rank as usize + 1, add))?;
    if rank > 0 {
        check("exclusive scan", &exscanned, &fold(0..rank as usize, add))?;
    }
    check(
        "ring",
        &[ring_in],
        &[i64::from((rank + size - 1) % size) + round],
    )?;
    Ok(checks)
}

fn run() -> Result<(i32, usize), BoxError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let count: usize = args.first().map_or(Ok(1000), |a| a.parse())?;
    let rounds: i64 = args.get(1).map_or(Ok(20), |a| a.parse())?;
    let universe = oxmpi::initialize()?;
    let world = universe.world();
    let mut checks = barrier_does_not_block(&world)?;
    for r in 0..rounds {
        checks += round(&world, count, r)?;
    }
    Ok((world.rank(), checks))
}

fn main() -> ExitCode {
    match run() {
        Ok((rank, checks)) => {
            println!("rank {rank}: nbc ok ({checks} checks)");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("nbc_check: {e}");
            ExitCode::FAILURE
        }
    }
}
