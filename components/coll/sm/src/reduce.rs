//! Reduce and allreduce over a segment, folding the members'
//! contributions in rank order (`x0 op x1 op … op xn−1`), so
//! non-commutative operations get MPI's result.
//!
//! - **reduce**: per piece, the other members write their input into
//!   their slots; the root folds the slots (and its own input) into its
//!   receive buffer.
//! - **allreduce**, pieces below [`SPLIT_MIN`] bytes (or 2 members):
//!   every member writes its input piece into its slot and folds all the
//!   slots into its receive buffer: one step, one transfer each way.
//! - **allreduce**, larger pieces: every member writes its input piece,
//!   folds only its share (1/n of the elements) of all the slots, writes
//!   that share into its slot in a second step, and copies every share
//!   out: each member reads about 2 pieces instead of n.

use crate::member::{Member, Waiter};
use crate::ops::{in_place_refused, pieces};
use oxmpi_collectives::{Reduction, SendBuf};
use oxmpi_framework_coll::buffers::{reduction, user_closure, Apply};
use oxmpi_framework_coll::module::CollCall;
use oxmpi_reduce::{reduce_into, reduce_local};

/// Pieces of at least this many bytes are allreduced in two steps, each
/// member folding its share (on 3 or more members).
pub const SPLIT_MIN: usize = 2048;

/// `dest = src(0) op src(1) op … op src(n − 1)` (each `src(q)` at least
/// as long as `dest`), folded from the last: `acc = src(q) op acc`.
///
/// # Errors
///
/// The operation's error (a user operation that failed).
pub fn fold<'s>(
    red: &mut Reduction<'_>,
    n: usize,
    src: impl Fn(usize) -> &'s [u8],
    dest: &mut [u8],
) -> Result<(), String> {
    let len = dest.len();
    if n == 1 {
        dest.copy_from_slice(&src(0)[..len]);
        return Ok(());
    }
    match red {
        Reduction::Predefined { op, ty } => {
            let (op, ty) = (*op, *ty);
            reduce_into(op, ty, &src(n - 2)[..len], &src(n - 1)[..len], dest)
                .map_err(|e| e.to_string())?;
            for q in (0..n - 2).rev() {
                reduce_local(op, ty, &src(q)[..len], dest).map_err(|e| e.to_string())?;
            }
        }
        Reduction::User { .. } => {
            dest.copy_from_slice(&src(n - 1)[..len]);
            for q in (0..n - 1).rev() {
                red.combine(&src(q)[..len], dest)
                    .map_err(|e| e.to_string())?;
            }
        }
    }
    Ok(())
}

/// A reduction call, checked: its operation, element size, bytes and
/// piece.
struct Prepared<'a> {
    red: Reduction<'a>,
    elem: usize,
    total: usize,
    piece: usize,
}

/// Checks the call's operation (`apply` runs a user operation) and sizes
/// its pieces.
#[inline(always)]
fn prepare<'a>(
    m: &Member,
    call: &CollCall<'_>,
    apply: &'a mut Apply<'_>,
) -> Result<Prepared<'a>, String> {
    let red = reduction(call, apply)?;
    let elem = red.elem_size();
    Ok(Prepared {
        red,
        elem,
        total: call.count * elem,
        piece: piece_of(m, elem, call.count * elem)?,
    })
}

/// The piece of a reduction of `total` bytes: the most whole elements of
/// `elem` bytes a slot holds (a call that fits in a slot is one piece,
/// without a division).
#[inline(always)]
fn piece_of(m: &Member, elem: usize, total: usize) -> Result<usize, String> {
    let slot = m.slot_size();
    if total <= slot {
        return Ok(slot);
    }
    whole_elements(slot, elem)
}

/// The most whole elements of `elem` bytes in `slot` bytes.
#[inline(never)]
fn whole_elements(slot: usize, elem: usize) -> Result<usize, String> {
    let piece = slot / elem.max(1) * elem;
    if piece == 0 {
        return Err(format!(
            "the segment's slots ({slot} bytes) are smaller than one element of {elem} bytes"
        ));
    }
    Ok(piece)
}

/// Reduce to `root`.
///
/// # Errors
///
/// An operation that does not apply, `MPI_IN_PLACE` off the root, a
/// failed user operation, a waiter that gave up.
pub fn reduce(
    m: &mut Member,
    wait: &Waiter<'_>,
    call: &CollCall<'_>,
    send: SendBuf<'_>,
    recv: &mut [u8],
    root: usize,
) -> Result<(), String> {
    let mut apply = user_closure(call);
    let Prepared {
        mut red,
        total,
        piece,
        ..
    } = prepare(m, call, &mut apply)?;
    let (me, n) = (m.rank(), m.size());
    if me != root {
        let SendBuf::Buf(mine) = send else {
            return Err(in_place_refused("reduce at a rank other than the root"));
        };
        for (o, len) in pieces(total, piece) {
            let mut step = m.step_for(len);
            let mut out = step.claim(wait)?;
            out.data()[..len].copy_from_slice(&mine[o..o + len]);
            out.publish();
        }
        return Ok(());
    }
    for (o, len) in pieces(total, piece) {
        let mut step = m.step_for(len);
        if matches!(send, SendBuf::InPlace) {
            // The root's input is in `recv`, which the result overwrites:
            // it goes to the root's own slot first.
            let mut out = step.claim(wait)?;
            out.data()[..len].copy_from_slice(&recv[o..o + len]);
            out.publish();
        }
        let arrived = step.wait_all(wait)?;
        let src = |q: usize| match (&send, q == me) {
            (SendBuf::Buf(mine), true) => &mine[o..o + len],
            _ => arrived.slot(q),
        };
        fold(&mut red, n, src, &mut recv[o..o + len])?;
    }
    Ok(())
}

/// Allreduce.
///
/// # Errors
///
/// An operation that does not apply, a failed user operation, a waiter
/// that gave up.
pub fn allreduce(
    m: &mut Member,
    wait: &Waiter<'_>,
    scratch: &mut Vec<u8>,
    call: &CollCall<'_>,
    send: SendBuf<'_>,
    recv: &mut [u8],
) -> Result<(), String> {
    let mut apply = user_closure(call);
    let Prepared {
        mut red,
        elem,
        total,
        piece,
    } = prepare(m, call, &mut apply)?;
    let (me, n) = (m.rank(), m.size());
    for (o, len) in pieces(total, piece) {
        let split = n > 2 && len >= SPLIT_MIN && len / elem >= n;
        let mut step = m.step();
        let mut out = step.claim(wait)?;
        let input = match &send {
            SendBuf::Buf(mine) => &mine[o..o + len],
            SendBuf::InPlace => &recv[o..o + len],
        };
        out.data()[..len].copy_from_slice(input);
        out.publish();
        let arrived = step.wait_all(wait)?;
        if !split {
            fold(&mut red, n, |q| arrived.slot(q), &mut recv[o..o + len])?;
            continue;
        }
        // This member's share of the piece, in whole elements.
        let share = |q: usize| {
            let k = len / elem;
            (q * k / n * elem, (q + 1) * k / n * elem)
        };
        let (a, b) = share(me);
        scratch.clear();
        scratch.resize(b - a, 0);
        fold(&mut red, n, |q| &arrived.slot(q)[a..b], scratch)?;
        drop(step);
        let mut step = m.step();
        let mut out = step.claim(wait)?;
        out.data()[a..b].copy_from_slice(scratch);
        out.publish();
        let arrived = step.wait_all(wait)?;
        for q in 0..n {
            let (a, b) = share(q);
            recv[o + a..o + b].copy_from_slice(&arrived.slot(q)[a..b]);
        }
    }
    Ok(())
}
