//! Checks derived datatypes between ranks: a struct with padding (packed
//! on the wire) and one without (sent as its bytes), through blocking,
//! immediate and synchronous point-to-point messages, `receive_vec`,
//! `send_receive`, matched probes and receives, a dropped immediate receive finished by its scope,
//! broadcast, gather, scatter, all-gather, all-to-all, a `v` form and
//! an immediate broadcast; a user reduction on the struct without
//! padding, and the refusals of reductions the types cannot take.
//!
//! Run: `mpirun -n 4 derive_check`. Every rank prints
//! `derive ok (<n> checks)`; on a failure it prints what differed and
//! the job is aborted.

#![forbid(unsafe_code)]

use oxmpi::collective::{PartitionMut, SystemOperation, UserOperation};
use oxmpi::topology::SimpleCommunicator;
use oxmpi::traits::*;
use std::process::ExitCode;

#[path = "support/checks.rs"]
mod checks;

use checks::{BoxError, Checks};

/// Padding after `tag` and at the end (C layout: 24 bytes, 17 of data).
#[derive(Equivalence, Clone, Copy, Debug, PartialEq)]
#[repr(C)]
struct Padded {
    tag: u8,
    value: f64,
    count: i32,
    pair: [i16; 2],
}

/// No padding: 8 + 4 + 4 bytes.
#[derive(Equivalence, Clone, Copy, Debug, PartialEq)]
struct Dense {
    weight: f64,
    id: i32,
    hits: u32,
}

/// A struct holding a padded one and an array of them.
#[derive(Equivalence, Clone, Copy, Debug, PartialEq)]
struct Nested {
    head: Padded,
    rest: [Padded; 2],
    flag: u8,
}

fn padded(rank: i32, i: usize) -> Padded {
    Padded {
        tag: (rank as u8).wrapping_mul(31).wrapping_add(i as u8),
        value: f64::from(rank) * 1000.5 + i as f64,
        count: -(rank * 100 + i as i32),
        pair: [rank as i16, -(i as i16)],
    }
}

fn dense(rank: i32, i: usize) -> Dense {
    Dense {
        weight: f64::from(rank) - i as f64 / 4.0,
        id: rank * 10 + i as i32,
        hits: (rank as u32) << 16 | i as u32,
    }
}

fn nested(rank: i32) -> Nested {
    Nested {
        head: padded(rank, 7),
        rest: [padded(rank, 8), padded(rank, 9)],
        flag: 0xA0 | rank as u8,
    }
}

fn point_to_point(world: &impl Communicator, c: &mut Checks) -> Result<(), BoxError> {
    let (rank, size) = (world.rank(), world.size());
    let next = world.process_at_rank((rank + 1) % size);
    let prev_rank = (rank + size - 1) % size;
    let previous = world.process_at_rank(prev_rank);

    // Blocking send of a slice, receive into a slice, in a ring.
    let out: Vec<Padded> = (0..5).map(|i| padded(rank, i)).collect();
    let mut inbox = [Padded::ZERO; 5];
    let status =
        oxmpi::point_to_point::send_receive_into(&out[..], &next, &mut inbox[..], &previous)?;
    let want: Vec<Padded> = (0..5).map(|i| padded(prev_rank, i)).collect();
    c.same("padded ring", &inbox.to_vec(), &want)?;
    c.same("padded ring bytes", &status.byte_count(), &(5 * 17))?;
    c.same("padded ring count", &status.count::<Padded>(), &Some(5))?;

    // One value each way with send_receive.
    let (got, _) =
        oxmpi::point_to_point::send_receive::<Nested, _, _, _>(&nested(rank), &next, &previous)?;
    c.same("nested send_receive", &got, &nested(prev_rank))?;
    let (got, _) =
        oxmpi::point_to_point::send_receive::<Dense, _, _, _>(&dense(rank, 1), &next, &previous)?;
    c.same("dense send_receive", &got, &dense(prev_rank, 1))?;

    // Immediate sends and receives, with a receive_vec and a synchronous
    // send in between; tags keep the messages apart.
    let dense_out: Vec<Dense> = (0..3).map(|i| dense(rank, i)).collect();
    let mut dense_in = vec![Dense::ZERO; 3];
    let mut padded_in = [Padded::ZERO; 4];
    let st = oxmpi::request::scope(|scope| -> Result<_, BoxError> {
        let r1 = previous.immediate_receive_into_with_tag(scope, &mut dense_in[..], 1)?;
        let r2 = previous.immediate_receive_into_with_tag(scope, &mut padded_in[..], 2)?;
        let s1 = next.immediate_send_with_tag(scope, &dense_out[..], 1)?;
        let s2 = next.immediate_synchronous_send_with_tag(scope, &out[..4], 2)?;
        let st = r2.wait()?;
        r1.wait()?;
        s1.wait()?;
        s2.wait()?;
        Ok(st)
    })?;
    c.same("immediate padded", &padded_in.to_vec(), &want[..4].to_vec())?;
    c.same("immediate padded count", &st.count::<Padded>(), &Some(4))?;
    c.same(
        "immediate dense",
        &dense_in,
        &(0..3).map(|i| dense(prev_rank, i)).collect::<Vec<_>>(),
    )?;
    next.send_with_tag(&out[1..], 3)?;
    let (v, _) = previous.receive_vec_with_tag::<Padded>(3)?;
    c.same("receive_vec", &v, &want[1..].to_vec())?;

    // A receive whose request is dropped unfinished: the scope waits for
    // it and unpacks at its end.
    let mut late = [Padded::ZERO; 2];
    oxmpi::request::scope(|scope| -> Result<(), BoxError> {
        let r = previous.immediate_receive_into_with_tag(scope, &mut late[..], 4)?;
        drop(r);
        next.send_with_tag(&out[..2], 4)?;
        Ok(())
    })?;
    c.same(
        "dropped receive finished by its scope",
        &late.to_vec(),
        &want[..2].to_vec(),
    )?;

    // Matched probes: the later message is claimed first; a claimed
    // message is invisible to probes; a dropped one is discarded.
    next.send_with_tag(&out[..3], 6)?;
    next.send_with_tag(&dense_out[..], 7)?;
    next.send_with_tag(&dense_out[..1], 8)?;
    let claimed = loop {
        if let Some(found) = previous.immediate_matched_probe_with_tag(7)? {
            break found;
        }
    };
    let (dense_message, dense_status) = claimed;
    c.same("matched probe tag", &dense_status.tag(), &7)?;
    c.same(
        "a claimed message is not probed again",
        &previous.immediate_probe_with_tag(7)?.is_some(),
        &false,
    )?;
    let (padded_message, st) = previous.matched_probe_with_tag(6)?;
    c.same("matched probe bytes", &st.byte_count(), &(3 * 17))?;
    let mut three = [Padded::ZERO; 3];
    padded_message.matched_receive_into(&mut three[..])?;
    c.same(
        "matched padded receive",
        &three.to_vec(),
        &want[..3].to_vec(),
    )?;
    let (dense_got, _) = dense_message.matched_receive_vec::<Dense>()?;
    c.same(
        "matched dense receive_vec",
        &dense_got,
        &(0..3).map(|i| dense(prev_rank, i)).collect::<Vec<_>>(),
    )?;
    let (dropped, _) = previous.matched_probe_with_tag(8)?;
    drop(dropped);
    c.same(
        "a dropped message is discarded",
        &previous.immediate_probe_with_tag(8)?.is_some(),
        &false,
    )?;

    // A message that is not a whole number of elements is refused.
    next.send_with_tag(&[1u8; 20][..], 5)?;
    let mut one = [Padded::ZERO; 2];
    let e = previous.receive_into_with_tag(&mut one[..], 5).unwrap_err();
    c.same(
        "partial element class",
        &e.class(),
        &oxmpi::ErrorClass::Buffer,
    )?;
    Ok(())
}

fn collectives(world: &SimpleCommunicator, c: &mut Checks) -> Result<(), BoxError> {
    let (rank, size) = (world.rank(), world.size());
    let n = size as usize;
    let root = world.process_at_rank(size - 1);
    let at_root = rank == size - 1;

    // Broadcast from the last rank.
    let mut b: Vec<Nested> = if at_root {
        (0..3).map(|i| nested(100 + i)).collect()
    } else {
        vec![Nested::ZERO; 3]
    };
    root.broadcast_into(&mut b[..])?;
    c.same(
        "broadcast",
        &b,
        &(0..3).map(|i| nested(100 + i)).collect::<Vec<_>>(),
    )?;

    // Gather two elements from each rank.
    let mine = [padded(rank, 0), padded(rank, 1)];
    let all: Vec<Padded> = (0..size)
        .flat_map(|r| [padded(r, 0), padded(r, 1)])
        .collect();
    if at_root {
        let mut g = vec![Padded::ZERO; 2 * n];
        root.gather_into_root(&mine[..], &mut g[..])?;
        c.same("gather", &g, &all)?;
    } else {
        root.gather_into(&mine[..])?;
    }

    // Scatter: rank r gets element r of the root's list.
    let mut one = Padded::ZERO;
    if at_root {
        let list: Vec<Padded> = (0..size).map(|r| padded(r, 5)).collect();
        root.scatter_into_root(&list[..], &mut one)?;
    } else {
        root.scatter_into(&mut one)?;
    }
    c.same("scatter", &one, &padded(rank, 5))?;

    // All-gather of both kinds.
    let mut ag = vec![Padded::ZERO; 2 * n];
    world.all_gather_into(&mine[..], &mut ag[..])?;
    c.same("all_gather padded", &ag, &all)?;
    let mut agd = vec![Dense::ZERO; n];
    world.all_gather_into(&dense(rank, 2), &mut agd[..])?;
    c.same(
        "all_gather dense",
        &agd,
        &(0..size).map(|r| dense(r, 2)).collect::<Vec<_>>(),
    )?;

    // All-to-all: block j goes to rank j, tagged with sender and receiver.
    let send: Vec<Padded> = (0..n).map(|j| padded(rank, 10 + j)).collect();
    let mut recv = vec![Padded::ZERO; n];
    world.all_to_all_into(&send[..], &mut recv[..])?;
    let want: Vec<Padded> = (0..size).map(|i| padded(i, 10 + rank as usize)).collect();
    c.same("all_to_all padded", &recv, &want)?;
    let send: Vec<Dense> = (0..n).map(|j| dense(rank, j)).collect();
    let mut recv = vec![Dense::ZERO; n];
    world.all_to_all_into(&send[..], &mut recv[..])?;
    let want: Vec<Dense> = (0..size).map(|i| dense(i, rank as usize)).collect();
    c.same("all_to_all dense", &recv, &want)?;

    // All-gather v: rank r gives r + 1 elements, stored with one free
    // element between blocks (which keeps its value).
    let counts: Vec<usize> = (1..=n).collect();
    let displs: Vec<usize> = counts
        .iter()
        .scan(0, |at, &k| {
            let d = *at;
            *at += k + 1;
            Some(d)
        })
        .collect();
    let len = displs[n - 1] + counts[n - 1] + 1;
    let marker = padded(-1, 0);
    let mut buf = vec![marker; len];
    let mine: Vec<Padded> = (0..=rank as usize).map(|i| padded(rank, i)).collect();
    {
        let mut part = PartitionMut::new(&mut buf[..], &counts, &displs)?;
        world.all_gather_varcount_into(&mine[..], &mut part)?;
    }
    let mut want = vec![marker; len];
    for r in 0..n {
        for i in 0..counts[r] {
            want[displs[r] + i] = padded(r as i32, i);
        }
    }
    c.same("all_gather_varcount padded", &buf, &want)?;

    // An immediate broadcast of a padded struct.
    let mut ib = if at_root { padded(42, 1) } else { Padded::ZERO };
    oxmpi::request::scope(|scope| -> Result<(), BoxError> {
        root.immediate_broadcast_into(scope, &mut ib)?.wait()?;
        Ok(())
    })?;
    c.same("immediate broadcast", &ib, &padded(42, 1))?;

    // A user reduction on the struct without padding.
    let op = UserOperation::commutative(|a: &[Dense], b: &mut [Dense]| {
        for (x, y) in a.iter().zip(b) {
            y.weight += x.weight;
            y.id = y.id.max(x.id);
            y.hits += x.hits;
        }
    });
    let mut total = Dense::ZERO;
    world.all_reduce_into(&dense(rank, 1), &mut total, op)?;
    let want = Dense {
        weight: (0..size).map(|r| dense(r, 1).weight).sum(),
        id: dense(size - 1, 1).id,
        hits: (0..size).map(|r| dense(r, 1).hits).sum(),
    };
    c.same("user reduction of a struct", &total, &want)?;

    // Refusals (every rank alike, before anything is sent).
    let mut p = Padded::ZERO;
    let e = world
        .all_reduce_into(&padded(rank, 0), &mut p, SystemOperation::sum())
        .unwrap_err();
    c.same(
        "padded reduction refused",
        &e.class(),
        &oxmpi::ErrorClass::Arg,
    )?;
    let e = world
        .all_reduce_into(&dense(rank, 0), &mut total, SystemOperation::max())
        .unwrap_err();
    c.same(
        "predefined op on a struct refused",
        &e.class(),
        &oxmpi::ErrorClass::Arg,
    )?;
    Ok(())
}

fn main() -> ExitCode {
    checks::main_with("derive_check", "derive", |world, c| {
        point_to_point(world, c).and_then(|()| collectives(world, c))
    })
}
