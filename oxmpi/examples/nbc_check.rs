//! Checks the non-blocking collectives of the Rust API (`immediate_`
//! forms) against a sequential reference computed on every rank: each
//! round starts a barrier, a broadcast, a gather, a scatter, an
//! all-gather, an all-to-all, a reduce, an all-reduce (with a
//! non-commutative user operation, which checks the rank order), a
//! reduce-scatter-block, a scan and an exclusive scan, all at once, while
//! point-to-point messages go round a ring; then completes them in reverse
//! order and checks every result; then the same for the varying-count
//! forms (all-gather, all-to-all, gather, scatter, reduce-scatter) and the
//! in-place forms (all-reduce, scan, all-gather, reduce and gather at the
//! root); each round also on a split communicator (odd and even ranks,
//! in reverse order) and on a duplicate of the world. A first check shows
//! a barrier is really
//! non-blocking: every rank but 0 finds its barrier incomplete (rank 0 has
//! not started it) before rank 0 starts.
//!
//! Run: `mpirun -n 4 nbc_check [COUNT [ROUNDS [threads]]]` (any number of
//! ranks; COUNT elements per rank, default 1000; ROUNDS, default 20; with
//! `threads`, two threads per rank run the rounds at once, each on its own
//! duplicate of the world, at MPI_THREAD_MULTIPLE). Every rank
//! prints `nbc ok (<n> checks)` when all passed; otherwise the first
//! difference, and the job fails.

#![forbid(unsafe_code)]

use oxmpi::collective::{Partition, PartitionMut, SystemOperation, UserOperation};
use oxmpi::request::{scope, wait_all, StaticScope};
use oxmpi::topology::{Color, SimpleCommunicator};
use oxmpi::traits::*;
use oxmpi::Threading;
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

/// Rank `r`'s block length in the varying-count forms.
fn varying(r: i32, count: usize) -> usize {
    count / 2 + r as usize * 3
}

/// The varying-count and in-place forms, all in flight at once.
fn round_varcount_in_place(
    world: &SimpleCommunicator,
    count: usize,
    round: i64,
) -> Result<usize, BoxError> {
    let (rank, size) = (world.rank(), world.size());
    let root = (round as i32 + 1) % size;
    let at_root = rank == root;
    let root_proc = world.process_at_rank(root);
    let lens: Vec<usize> = (0..size).map(|r| varying(r, count)).collect();
    let displs: Vec<usize> = lens
        .iter()
        .scan(0, |at, &l| {
            let d = *at;
            *at += l + 1;
            Some(d)
        })
        .collect();
    let total = displs.last().map_or(0, |d| d + lens[size as usize - 1]);
    let block =
        |r: i32| -> Vec<i64> { (0..varying(r, count)).map(|i| data(r, i, round)).collect() };
    let mine = block(rank);
    let sum = SystemOperation::sum();
    // Outputs.
    let mut allgathered = vec![-1i64; total];
    let mut gathered = vec![-1i64; total];
    let scatter_src: Vec<i64> = (0..total).map(|i| i as i64 * 11 + round).collect();
    let mut scattered = vec![0i64; lens[rank as usize]];
    // All-to-all: rank r sends `lens[d]` elements to rank d.
    let a2a_send: Vec<i64> = (0..total)
        .map(|i| i64::from(rank) * 1_000_000 + i as i64)
        .collect();
    let mut a2a_recv = vec![0i64; lens[rank as usize] * size as usize];
    let a2a_rdispls: Vec<usize> = (0..size as usize)
        .map(|s| s * lens[rank as usize])
        .collect();
    let a2a_rcounts = vec![lens[rank as usize]; size as usize];
    let rs_send: Vec<i64> = (0..lens.iter().sum::<usize>())
        .map(|i| data(rank, i, round))
        .collect();
    let mut rs_recv = vec![0i64; lens[rank as usize]];
    let mut ar_in_place: Vec<i64> = (0..count).map(|i| data(rank, i, round)).collect();
    let mut scan_in_place = ar_in_place.clone();
    let mut ag_in_place = vec![0i64; count * size as usize];
    ag_in_place[rank as usize * count..][..count].copy_from_slice(&ar_in_place);
    let mut red_in_place = ar_in_place.clone();
    let mut gat_in_place = vec![0i64; count * size as usize];
    gat_in_place[rank as usize * count..][..count].copy_from_slice(&ar_in_place);
    let gat_send = ar_in_place.clone();
    {
        let mut ag_part = PartitionMut::new(&mut allgathered, &lens, &displs)?;
        let mut g_part = PartitionMut::new(&mut gathered, &lens, &displs)?;
        let s_part = Partition::new(&scatter_src, &lens, &displs)?;
        let a2a_s = Partition::new(&a2a_send, &lens, &displs)?;
        let mut a2a_r = PartitionMut::new(&mut a2a_recv, &a2a_rcounts, &a2a_rdispls)?;
        scope(|sc| -> Result<(), BoxError> {
            let mut reqs =
                vec![world.immediate_all_gather_varcount_into(sc, &mine[..], &mut ag_part)?];
            reqs.push(world.immediate_all_to_all_varcount_into(sc, &a2a_s, &mut a2a_r)?);
            reqs.push(if at_root {
                root_proc.immediate_gather_varcount_into_root(sc, &mine[..], &mut g_part)?
            } else {
                root_proc.immediate_gather_varcount_into(sc, &mine[..])?
            });
            reqs.push(if at_root {
                root_proc.immediate_scatter_varcount_into_root(sc, &s_part, &mut scattered[..])?
            } else {
                root_proc.immediate_scatter_varcount_into(sc, &mut scattered[..])?
            });
            reqs.push(world.immediate_reduce_scatter_into(
                sc,
                &rs_send[..],
                &mut rs_recv[..],
                &lens,
                &sum,
            )?);
            reqs.push(world.immediate_all_reduce_in_place(sc, &mut ar_in_place[..], &sum)?);
            reqs.push(world.immediate_scan_in_place(sc, &mut scan_in_place[..], &sum)?);
            reqs.push(world.immediate_all_gather_in_place(sc, &mut ag_in_place[..])?);
            reqs.push(if at_root {
                root_proc.immediate_reduce_into_root_in_place(sc, &mut red_in_place[..], &sum)?
            } else {
                root_proc.immediate_reduce_into(sc, &red_in_place[..], &sum)?
            });
            reqs.push(if at_root {
                root_proc.immediate_gather_into_root_in_place(sc, &mut gat_in_place[..])?
            } else {
                root_proc.immediate_gather_into(sc, &gat_send[..])?
            });
            reqs.reverse();
            wait_all(reqs)?;
            Ok(())
        })?;
    }
    let mut checks = 0;
    let mut check = |what: &str, got: &[i64], want: &[i64]| -> Result<(), BoxError> {
        checks += 1;
        same(
            &format!("varying/in-place round {round} (root {root}): {what}"),
            got,
            want,
        )
    };
    let mut want = vec![-1i64; total];
    for r in 0..size {
        want[displs[r as usize]..][..lens[r as usize]].copy_from_slice(&block(r));
    }
    check("all-gather (varying)", &allgathered, &want)?;
    if at_root {
        check("gather (varying)", &gathered, &want)?;
    }
    check(
        "scatter (varying)",
        &scattered,
        &scatter_src[displs[rank as usize]..][..lens[rank as usize]],
    )?;
    let me = rank as usize;
    let (dm, lm) = (displs[me], lens[me]);
    let want: Vec<i64> = (0..size as usize)
        .flat_map(|s| (0..lm).map(move |i| s as i64 * 1_000_000 + (dm + i) as i64))
        .collect();
    check("all-to-all (varying)", &a2a_recv, &want)?;
    let offset: usize = lens[..me].iter().sum();
    let want: Vec<i64> = (0..lens[me])
        .map(|i| {
            (0..size)
                .map(|r| data(r, offset + i, round))
                .fold(0i64, i64::wrapping_add)
        })
        .collect();
    check("reduce-scatter (varying)", &rs_recv, &want)?;
    let upto = |n: i32| -> Vec<i64> {
        (0..count)
            .map(|i| {
                (0..n)
                    .map(|r| data(r, i, round))
                    .fold(0i64, i64::wrapping_add)
            })
            .collect()
    };
    check("all-reduce in place", &ar_in_place, &upto(size))?;
    check("scan in place", &scan_in_place, &upto(rank + 1))?;
    let all: Vec<i64> = (0..size)
        .flat_map(|r| (0..count).map(move |i| data(r, i, round)))
        .collect();
    check("all-gather in place", &ag_in_place, &all)?;
    if at_root {
        check("reduce in place", &red_in_place, &upto(size))?;
        check("gather in place", &gat_in_place, &all)?;
    }
    Ok(checks)
}

/// Two threads per rank (MPI_THREAD_MULTIPLE), each running the rounds
/// on its own duplicate of the world at the same time as the other.
fn concurrent(world: &SimpleCommunicator, count: usize, rounds: i64) -> Result<usize, BoxError> {
    let comms = [world.duplicate()?, world.duplicate()?];
    std::thread::scope(|s| -> Result<usize, BoxError> {
        let handles: Vec<_> = comms
            .iter()
            .map(|comm| {
                s.spawn(move || -> Result<usize, String> {
                    let mut checks = 0;
                    for r in 0..rounds {
                        checks += round(comm, count, r).map_err(|e| e.to_string())?;
                        checks +=
                            round_varcount_in_place(comm, count, r).map_err(|e| e.to_string())?;
                    }
                    Ok(checks)
                })
            })
            .collect();
        let mut checks = 0;
        for h in handles {
            checks += h.join().map_err(|_| "a thread panicked")??;
        }
        Ok(checks)
    })
}

fn run() -> Result<(i32, usize), BoxError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let count: usize = args.first().map_or(Ok(1000), |a| a.parse())?;
    let rounds: i64 = args.get(1).map_or(Ok(20), |a| a.parse())?;
    let threads = args.get(2).map(String::as_str) == Some("threads");
    let (universe, _) = oxmpi::initialize_with_threading(Threading::Multiple)?;
    let world = universe.world();
    if threads {
        let checks = barrier_does_not_block(&world)? + concurrent(&world, count, rounds)?;
        return Ok((world.rank(), checks));
    }
    let mut checks = barrier_does_not_block(&world)?;
    // A split communicator (odd and even ranks, in reverse order) and a
    // duplicate of the world: their own context ids, ranks and tags.
    let halves = world
        .split_by_color_with_key(Color::with_value(world.rank() % 2), -world.rank())?
        .ok_or("split gave no communicator")?;
    let twin = world.duplicate()?;
    for r in 0..rounds {
        checks += round(&world, count, r)?;
        checks += round_varcount_in_place(&world, count, r)?;
        checks += round(&halves, count, r)?;
        checks += round_varcount_in_place(&twin, count, r)?;
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
