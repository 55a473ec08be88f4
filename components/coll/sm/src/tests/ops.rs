//! Every data-movement operation against a sequential reference, on 1 to
//! 8 ranks (threads), every root, sizes from 0 to past several slots (and
//! up to the largest call sm takes with the default slots), `MPI_IN_PLACE`
//! where MPI allows it, and many calls in a row on one segment (both
//! slots reused, pieces pipelined).

use super::{all_ok, ranks, ranks_in};
use crate::member::{Member, Waiter};
use crate::ops;
use oxmpi_framework_coll::module::{CollCall, CollKind};

/// Byte `i` of rank `r`'s data for call `salt`.
pub fn byte(r: usize, i: usize, salt: usize) -> u8 {
    (r * 131 + i * 7 + salt * 29 + (i >> 8)) as u8
}

fn data(r: usize, len: usize, salt: usize) -> Vec<u8> {
    (0..len).map(|i| byte(r, i, salt)).collect()
}

/// A call of `kind`; `send`/`recv` null when `None` (`MPI_IN_PLACE`).
pub fn call(
    kind: CollKind,
    send: Option<&[u8]>,
    recv: Option<&mut [u8]>,
    count: usize,
    root: usize,
) -> CollCall<'static> {
    let mut c = CollCall::new(kind);
    c.send = send.map_or(std::ptr::null(), <[u8]>::as_ptr);
    c.recv = recv.map_or(std::ptr::null_mut(), <[u8]>::as_mut_ptr);
    c.count = count;
    c.root = root as u32;
    c
}

/// Runs `c` as `m`.
pub fn run(m: &mut Member, w: &Waiter<'_>, c: &CollCall<'_>) -> Result<(), String> {
    let mut scratch = Vec::new();
    // SAFETY: every test call's buffers have the lengths its fields give
    // and live across the call.
    unsafe { ops::run(m, w, &mut scratch, c) }
}

fn check(what: &str, got: &[u8], want: &[u8]) -> Result<(), String> {
    if got == want {
        return Ok(());
    }
    let k = got.iter().zip(want).position(|(a, b)| a != b);
    Err(format!(
        "{what}: {} bytes, expected {}; first difference at {k:?}",
        got.len(),
        want.len()
    ))
}

/// One of each data-movement operation with `count` bytes per block,
/// root `root` and salt `salt`, checked, as rank `m`.
fn one_of_each(
    m: &mut Member,
    w: &Waiter<'_>,
    count: usize,
    root: usize,
    salt: usize,
) -> Result<(), String> {
    let (me, n) = (m.rank(), m.size());
    let at = |what: &str| format!("{what} n {n} count {count} root {root} rank {me}");
    // bcast
    let mut buf = if me == root {
        data(root, count, salt)
    } else {
        vec![0; count]
    };
    let c = call(CollKind::Bcast, None, Some(&mut buf), count, root);
    run(m, w, &c)?;
    check(&at("bcast"), &buf, &data(root, count, salt))?;
    // gather, also in place at the root
    for in_place in [false, true] {
        let mine = data(me, count, salt + 1);
        let mut recv = vec![0; if me == root { count * n } else { 0 }];
        if in_place && me == root {
            recv[me * count..(me + 1) * count].copy_from_slice(&mine);
        }
        let send = (!(in_place && me == root)).then_some(&mine[..]);
        let c = call(CollKind::Gather, send, Some(&mut recv), count, root);
        run(m, w, &c)?;
        if me == root {
            let want: Vec<u8> = (0..n).flat_map(|q| data(q, count, salt + 1)).collect();
            check(&at("gather"), &recv, &want)?;
        }
    }
    // scatter, also in place at the root
    for in_place in [false, true] {
        let all: Vec<u8> = (0..n).flat_map(|q| data(q, count, salt + 2)).collect();
        let send = (me == root).then_some(&all[..]);
        let mut recv = vec![0; count];
        let recv_arg = (!(in_place && me == root)).then_some(&mut recv[..]);
        let c = call(CollKind::Scatter, send, recv_arg, count, root);
        run(m, w, &c)?;
        if !(in_place && me == root) {
            check(&at("scatter"), &recv, &data(me, count, salt + 2))?;
        }
    }
    // allgather and alltoall, also in place
    for in_place in [false, true] {
        let mine = data(me, count, salt + 3);
        let mut recv = vec![0; count * n];
        if in_place {
            recv[me * count..(me + 1) * count].copy_from_slice(&mine);
        }
        let c = call(
            CollKind::Allgather,
            (!in_place).then_some(&mine[..]),
            Some(&mut recv),
            count,
            0,
        );
        run(m, w, &c)?;
        let want: Vec<u8> = (0..n).flat_map(|q| data(q, count, salt + 3)).collect();
        check(&at("allgather"), &recv, &want)?;

        // Block q of rank r's send buffer: data(r, count, salt + 4 + q).
        let sent: Vec<u8> = (0..n).flat_map(|q| data(me, count, salt + 4 + q)).collect();
        let mut recv = if in_place {
            sent.clone()
        } else {
            vec![0; count * n]
        };
        let c = call(
            CollKind::Alltoall,
            (!in_place).then_some(&sent[..]),
            Some(&mut recv),
            count,
            0,
        );
        run(m, w, &c)?;
        let want: Vec<u8> = (0..n).flat_map(|q| data(q, count, salt + 4 + me)).collect();
        check(&at("alltoall"), &recv, &want)?;
    }
    Ok(())
}

#[test]
fn data_movement_is_right_for_every_size_root_and_communicator_of_1_to_8() {
    const SLOT: usize = 256;
    for (n, buffers) in (1..=8).flat_map(|n| [(n, 2), (n, 5)]) {
        let results = ranks_in(n, SLOT, buffers, |m, w| {
            let mut salt = 0;
            for count in [0, 1, 7, 56, 57, 255, 256, 257, 1000, 3 * SLOT + 5] {
                for root in 0..n {
                    salt += 1;
                    one_of_each(m, w, count, root, salt)?;
                }
            }
            Ok(())
        });
        all_ok(results, &format!("{n} ranks, {buffers} buffers"));
    }
}

#[test]
fn the_largest_calls_sm_takes_are_right_with_the_default_slots() {
    let defaults = crate::params::SmParams::default();
    for n in [2, 3, 5] {
        let buffers = defaults.buffers as usize;
        let results = ranks_in(n, defaults.slot_size, buffers, |m, w| {
            // bcast of max_size bytes; blocks of max_size / n bytes.
            let mut buf = if m.rank() == 1 {
                data(1, defaults.max_size, 9)
            } else {
                vec![0; defaults.max_size]
            };
            let c = call(CollKind::Bcast, None, Some(&mut buf), defaults.max_size, 1);
            run(m, w, &c)?;
            check("bcast", &buf, &data(1, defaults.max_size, 9))?;
            one_of_each(m, w, defaults.max_size / n, n - 1, 3)
        });
        all_ok(results, &format!("{n} ranks"));
    }
}

#[test]
fn in_place_where_mpi_forbids_it_is_refused_before_any_step() {
    // Scatter with MPI_IN_PLACE at rank 1, not the root: refused there
    // before any step (the root's scatter waits for nobody).
    let results = ranks(2, 256, |m, w| {
        let all = [1u8, 2, 3, 4];
        let c = call(CollKind::Scatter, Some(&all), None, 2, 0);
        let out = run(m, w, &c);
        (out.err(), m.seq())
    });
    assert_eq!(results[0], (None, 1));
    assert_eq!(
        results[1],
        (
            Some("MPI_IN_PLACE is not allowed for scatter at a rank other than the root".into()),
            0
        )
    );
}

#[test]
fn a_root_outside_the_communicator_is_refused() {
    let results = ranks(2, 256, |m, w| {
        let mut buf = vec![0u8; 4];
        let c = call(CollKind::Bcast, None, Some(&mut buf), 4, 2);
        run(m, w, &c).unwrap_err()
    });
    assert!(
        results[0].contains("root 2 is not a rank"),
        "{}",
        results[0]
    );
}
