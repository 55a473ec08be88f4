//! Checks communicators and groups: dup, split (by parity with reversed
//! keys, with an undefined color), split by node, create from a group,
//! compare, free, the group operations, and point-to-point messages and
//! collectives on the new communicators (ranks and sources are theirs,
//! traffic stays apart from the parent's). With `threads`, two threads
//! per rank (`MPI_THREAD_MULTIPLE`) each duplicate and split the world at
//! once, many times, and check that every communicator works.
//!
//! Run: `mpirun -n 4 comm_check [threads]`. Every rank prints
//! `comm ok (<n> checks)`; on a failure it prints what differed and the
//! job is aborted.

#![forbid(unsafe_code)]

use oxmpi::collective::SystemOperation;
use oxmpi::group::GroupRelation;
use oxmpi::topology::{Color, CommunicatorRelation, SimpleCommunicator};
use oxmpi::traits::*;
use oxmpi::Threading;
use std::process::ExitCode;

type BoxError = Box<dyn std::error::Error>;

fn ensure(cond: bool, what: impl FnOnce() -> String) -> Result<(), BoxError> {
    if cond {
        Ok(())
    } else {
        Err(what().into())
    }
}

/// The sum over ranks `0..n` of `r + 1`.
fn triangle(n: i32) -> i64 {
    i64::from(n) * i64::from(n + 1) / 2
}

/// Collectives and a ring of messages on `comm`, whose rank `r` is world
/// rank `world_of(r)`.
fn exercise<C: Communicator + std::ops::Deref<Target = SimpleCommunicator>>(
    comm: &C,
    world_of: impl Fn(i32) -> i32,
    what: &str,
) -> Result<(), BoxError> {
    let (rank, size) = (comm.rank(), comm.size());
    let mut sum = 0i64;
    comm.all_reduce_into(&i64::from(rank + 1), &mut sum, SystemOperation::sum())?;
    ensure(sum == triangle(size), || {
        format!("{what}: allreduce gave {sum}, expected {}", triangle(size))
    })?;
    let mut all = vec![0i32; size as usize];
    comm.all_gather_into(&world_of(rank), &mut all[..])?;
    let want: Vec<i32> = (0..size).map(&world_of).collect();
    ensure(all == want, || {
        format!("{what}: allgather gave {all:?}, expected {want:?}")
    })?;
    // A ring: send to the next rank, receive from the previous; the
    // status names the previous rank of this communicator.
    let next = comm.process_at_rank((rank + 1) % size);
    let previous = comm.process_at_rank((rank + size - 1) % size);
    let token = [world_of(rank) * 100 + 7];
    let mut got = [0i32];
    let status =
        oxmpi::point_to_point::send_receive_into(&token[..], &next, &mut got[..], &previous)?;
    let expect = world_of((rank + size - 1) % size) * 100 + 7;
    ensure(got[0] == expect, || {
        format!("{what}: ring token {}, expected {expect}", got[0])
    })?;
    ensure(status.source_rank() == previous.rank(), || {
        format!(
            "{what}: status source {} where rank {} sent",
            status.source_rank(),
            previous.rank()
        )
    })?;
    Ok(())
}

fn checks(world: &SimpleCommunicator) -> Result<usize, BoxError> {
    let (me, n) = (world.rank(), world.size());
    let mut count = 0;
    // dup: same members, its own context; congruent with the world.
    let dup = world.duplicate()?;
    ensure(dup.rank() == me && dup.size() == n, || {
        "dup has other ranks".into()
    })?;
    ensure(
        world.compare(&*dup)? == CommunicatorRelation::Congruent,
        || "dup is not congruent".into(),
    )?;
    ensure(
        world.compare(world)? == CommunicatorRelation::Identical,
        || "world is not identical to itself".into(),
    )?;
    exercise(&dup, |r| r, "dup")?;
    count += 1;
    // Messages on the dup do not match receives on the world.
    if n > 1 {
        if me == 0 {
            world.process_at_rank(1).send(&1i32)?;
            dup.process_at_rank(1).send(&2i32)?;
        } else if me == 1 {
            let (x, _) = dup.process_at_rank(0).receive::<i32>()?;
            let (y, _) = world.process_at_rank(0).receive::<i32>()?;
            ensure((x, y) == (2, 1), || {
                format!("contexts mixed: dup got {x}, world got {y}")
            })?;
        }
        count += 1;
    }
    // split by parity, keys reversed: rank order is the reverse of the world's.
    let color = me % 2;
    let half = world
        .split_by_color_with_key(Color::with_value(color), -me)?
        .ok_or("split left this process out")?;
    let members: Vec<i32> = (0..n).filter(|r| r % 2 == color).rev().collect();
    ensure(half.size() as usize == members.len(), || {
        format!("split has {} members", half.size())
    })?;
    ensure(members[half.rank() as usize] == me, || {
        "split rank order".into()
    })?;
    exercise(&half, |r| members[r as usize], "split by parity")?;
    count += 1;
    // An undefined color leaves rank 0 out.
    let color = if me == 0 {
        Color::undefined()
    } else {
        Color::with_value(7)
    };
    let rest = world.split_by_color(color)?;
    ensure(rest.is_some() == (me != 0), || "undefined color".into())?;
    if let Some(rest) = &rest {
        exercise(rest, |r| r + 1, "split without rank 0")?;
    }
    count += 1;
    // The node's processes: every rank here, in world order.
    let node = world.split_shared(0)?;
    ensure(node.size() == n, || {
        format!("shared split has {} of {n} ranks", node.size())
    })?;
    exercise(&node, |r| r, "split by node")?;
    count += 1;
    // Groups: the even ranks, created as a communicator.
    let group = world.group()?;
    ensure(group.size() == n && group.rank() == Some(me), || {
        "world group".into()
    })?;
    let evens: Vec<i32> = (0..n).step_by(2).collect();
    let even_group = group.include(&evens)?;
    let odd_group = group.difference(&even_group);
    ensure(
        even_group.union(&odd_group).compare(&group) == GroupRelation::Similar || n < 3,
        || "union of evens and odds is not similar to the world".into(),
    )?;
    ensure(even_group.intersection(&odd_group).size() == 0, || {
        "evens and odds intersect".into()
    })?;
    let translated = group.translate_ranks(&[0, 1.min(n - 1)], &even_group)?;
    ensure(translated[0] == Some(0), || {
        format!("translate gave {translated:?}")
    })?;
    let evens_comm = world.split_by_subgroup_collective(&even_group)?;
    ensure(evens_comm.is_some() == (me % 2 == 0), || {
        "create from group".into()
    })?;
    if let Some(c) = &evens_comm {
        exercise(c, |r| evens[r as usize], "created from the even ranks")?;
        ensure(
            c.compare(&*half)? != CommunicatorRelation::Identical,
            || "compare".into(),
        )?;
    }
    count += 1;
    // A negative color fails the split at every member alike.
    match world.split_by_color(Color::with_value(-5)) {
        Err(e) if e.class() == oxmpi::ErrorClass::Arg && e.to_string().contains("-5") => {}
        other => return Err(format!("a negative color gave {other:?}").into()),
    }
    // A group with processes outside the communicator is refused.
    if n > 1 {
        match half.split_by_subgroup_collective(&group) {
            Err(e) if e.class() == oxmpi::ErrorClass::Group => {}
            other => {
                return Err(format!("a group wider than the communicator gave {other:?}").into())
            }
        }
    }
    count += 1;
    // Many communicators made and freed in turn reuse context ids.
    for _ in 0..50 {
        let d = dup.duplicate()?;
        exercise(&d, |r| r, "a dup of a dup")?;
    }
    count += 1;
    Ok(count)
}

/// Two threads per rank, each with its own duplicate of the world (MPI
/// forbids concurrent collectives on one communicator), duplicating and
/// splitting it at once with the other thread, many times.
fn concurrent(world: &SimpleCommunicator) -> Result<usize, BoxError> {
    let rounds = 20;
    let parents = [world.duplicate()?, world.duplicate()?];
    std::thread::scope(|s| -> Result<(), BoxError> {
        let handles: Vec<_> = parents
            .iter()
            .enumerate()
            .map(|(t, parent)| {
                s.spawn(move || -> Result<(), String> {
                    let t = t as i32;
                    for i in 0..rounds {
                        let mine = parent.duplicate().map_err(|e| e.to_string())?;
                        let parts = mine
                            .split_by_color(Color::with_value((mine.rank() + t + i) % 2))
                            .map_err(|e| e.to_string())?
                            .ok_or("split left this process out")?;
                        let mut sum = 0i64;
                        parts
                            .all_reduce_into(&1i64, &mut sum, SystemOperation::sum())
                            .map_err(|e| e.to_string())?;
                        if sum != i64::from(parts.size()) {
                            return Err(format!("thread {t} round {i}: allreduce gave {sum}"));
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        for h in handles {
            h.join().map_err(|_| "a thread panicked")??;
        }
        Ok(())
    })?;
    Ok(rounds as usize * 2)
}

fn main() -> ExitCode {
    let threads = std::env::args().nth(1).as_deref() == Some("threads");
    let universe = match oxmpi::initialize_with_threading(Threading::Multiple) {
        Ok((u, _)) => u,
        Err(e) => {
            eprintln!("comm_check: {e}");
            return ExitCode::FAILURE;
        }
    };
    let world = universe.world();
    let outcome = if threads {
        concurrent(&world)
    } else {
        checks(&world)
    };
    match outcome {
        Ok(n) => {
            println!("rank {}: comm ok ({n} checks)", world.rank());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("rank {}: {e}", world.rank());
            world.abort(1)
        }
    }
}
