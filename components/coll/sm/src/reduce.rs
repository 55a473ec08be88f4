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

use crate::member::{In, Member, Step, Waiter};
use crate::ops::{in_place_refused, pieces};
use oxmpi_collectives::{Reducer, Reduction, SendBuf};
use oxmpi_framework_coll::buffers::{predefined, reduction, user_closure, vector_buffers, Apply};
use oxmpi_framework_coll::module::{CollCall, OpCode};

/// Pieces of at least this many bytes are allreduced in two steps, each
/// member folding its share (on 3 or more members).
pub const SPLIT_MIN: usize = 2048;

/// `dest = src(0) op src(1) op … op src(n − 1)` (each `src(q)` at least
/// as long as `dest`), folded from the last: `acc = src(q) op acc`.
///
/// # Errors
///
/// The operation's error (one that does not apply, a user operation that
/// failed).
pub fn fold<'s>(
    red: &mut Reduction<'_>,
    n: usize,
    src: impl Fn(usize) -> &'s [u8],
    dest: &mut [u8],
) -> Result<(), String> {
    match red {
        Reduction::Predefined { op, ty } => {
            let reducer = Reducer::new(*op, *ty).map_err(|e| e.to_string())?;
            fold_predefined(&reducer, n, src, dest)
        }
        Reduction::User { .. } => {
            let len = dest.len();
            dest.copy_from_slice(&src(n - 1)[..len]);
            for q in (0..n - 1).rev() {
                red.combine(&src(q)[..len], dest)
                    .map_err(|e| e.to_string())?;
            }
            Ok(())
        }
    }
}

/// [`fold`] with a predefined operation's reducer.
///
/// # Errors
///
/// Buffers the reducer refuses (not a whole number of elements).
#[inline]
pub fn fold_predefined<'s>(
    reducer: &Reducer,
    n: usize,
    src: impl Fn(usize) -> &'s [u8],
    dest: &mut [u8],
) -> Result<(), String> {
    let len = dest.len();
    if n == 1 {
        dest.copy_from_slice(&src(0)[..len]);
        return Ok(());
    }
    reducer
        .reduce_into(&src(n - 2)[..len], &src(n - 1)[..len], dest)
        .map_err(|e| e.to_string())?;
    for q in (0..n - 2).rev() {
        reducer
            .reduce_local(&src(q)[..len], dest)
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// How a piece is folded: with a predefined operation's [`Reducer`] (its
/// loop looked up once per call) or with any [`Reduction`].
trait Fold {
    /// `dest = src(0) op … op src(n − 1)`, as [`fold`].
    fn fold<'s>(
        &mut self,
        n: usize,
        src: impl Fn(usize) -> &'s [u8],
        dest: &mut [u8],
    ) -> Result<(), String>;
}

impl Fold for Reducer {
    #[inline]
    fn fold<'s>(
        &mut self,
        n: usize,
        src: impl Fn(usize) -> &'s [u8],
        dest: &mut [u8],
    ) -> Result<(), String> {
        fold_predefined(self, n, src, dest)
    }
}

impl Fold for Reduction<'_> {
    fn fold<'s>(
        &mut self,
        n: usize,
        src: impl Fn(usize) -> &'s [u8],
        dest: &mut [u8],
    ) -> Result<(), String> {
        fold(self, n, src, dest)
    }
}

/// Whether a call of `total` bytes runs in one step with its predefined
/// operation's [`Reducer`]: it fits in a slot, and (`split`) an allreduce
/// would not split it.
#[inline(always)]
fn in_one_step(m: &Member, call: &CollCall<'_>, total: usize, split: bool) -> bool {
    call.op != OpCode::User && total <= m.slot_size() && !split
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

/// Reduce of `call` to `root` (a rank of the communicator): a vector
/// that fits in a slot, with a predefined operation, in one step; any
/// other in pieces.
///
/// # Safety
///
/// The call's buffers are valid for its vector (read for `send`, written
/// for `recv` at the root) during the call.
///
/// # Errors
///
/// An operation that does not apply, `MPI_IN_PLACE` off the root, a
/// failed user operation, a waiter that gave up.
pub unsafe fn reduce(
    m: &mut Member,
    wait: &Waiter<'_>,
    call: &CollCall<'_>,
    root: usize,
) -> Result<(), String> {
    let me = m.rank();
    // SAFETY: the caller's promise.
    let (send, recv) = unsafe { vector_buffers(call, me == root) }?;
    if me != root && matches!(send, SendBuf::InPlace) {
        return Err(in_place_refused("reduce at a rank other than the root"));
    }
    let total = call.count.saturating_mul(call.elem_size());
    if in_one_step(m, call, total, false) {
        let mut reducer = predefined(call)?;
        return reduce_piece(m, wait, &mut reducer, &send, recv, root, (0, total));
    }
    reduce_in_pieces(m, wait, call, send, recv, root)
}

/// Reduce in pieces of at most a slot.
///
/// # Errors
///
/// As [`reduce`].
#[inline(never)]
fn reduce_in_pieces(
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
    for at in pieces(total, piece) {
        reduce_piece(m, wait, &mut red, &send, recv, root, at)?;
    }
    Ok(())
}

/// One step of a reduce: the piece `(offset, len)` of the vector. The
/// other members write their input piece into their slots; the root
/// folds the slots (and its own input) into its receive buffer.
///
/// # Errors
///
/// A failed fold, a waiter that gave up.
#[inline(always)]
fn reduce_piece(
    m: &mut Member,
    wait: &Waiter<'_>,
    red: &mut impl Fold,
    send: &SendBuf<'_>,
    recv: &mut [u8],
    root: usize,
    (o, len): (usize, usize),
) -> Result<(), String> {
    let (me, n) = (m.rank(), m.size());
    let mut step = m.step_for(len);
    if me != root {
        if let SendBuf::Buf(mine) = send {
            let mut out = step.claim(wait)?;
            out.data()[..len].copy_from_slice(&mine[o..o + len]);
            out.publish();
        }
        return Ok(());
    }
    if matches!(send, SendBuf::InPlace) {
        // The root's input is in `recv`, which the result overwrites: it
        // goes to the root's own slot first.
        let mut out = step.claim(wait)?;
        out.data()[..len].copy_from_slice(&recv[o..o + len]);
        out.publish();
    }
    // The senders run ahead: their slots are usually full already.
    step.prefetch_others(len);
    let arrived = step.wait_all(wait)?;
    let src = |q: usize| match (send, q == me) {
        (SendBuf::Buf(mine), true) => &mine[o..o + len],
        _ => arrived.slot(q),
    };
    red.fold(n, src, &mut recv[o..o + len])
}

/// Allreduce of `call`: a vector that fits in a slot, with a predefined
/// operation, in one step ([`allreduce_in_one_step`]); any other in
/// pieces.
///
/// # Safety
///
/// The call's buffers are valid for its vector (read for `send`, written
/// for `recv`) during the call.
///
/// # Errors
///
/// An operation that does not apply, a failed user operation, a waiter
/// that gave up.
pub unsafe fn allreduce(
    m: &mut Member,
    wait: &Waiter<'_>,
    scratch: &mut Vec<u8>,
    call: &CollCall<'_>,
) -> Result<(), String> {
    // SAFETY: the caller's promise.
    let (send, recv) = unsafe { vector_buffers(call, true) }?;
    // One piece below `SPLIT_MIN` (or on 2 members) is not split.
    let total = recv.len();
    if in_one_step(m, call, total, m.size() > 2 && total >= SPLIT_MIN) {
        let mut reducer = predefined(call)?;
        let mut step = m.step();
        return allreduce_piece(&mut step, wait, &mut reducer, &send, recv);
    }
    allreduce_in_pieces(m, wait, scratch, call, send, recv)
}

/// One step of an allreduce that does not split: every member writes its
/// input into its slot and folds every slot into `recv`.
///
/// # Errors
///
/// A failed fold, a waiter that gave up.
#[inline(always)]
fn allreduce_piece(
    step: &mut Step<'_>,
    wait: &Waiter<'_>,
    red: &mut impl Fold,
    send: &SendBuf<'_>,
    recv: &mut [u8],
) -> Result<(), String> {
    let input = match send {
        SendBuf::Buf(mine) => mine,
        SendBuf::InPlace => &*recv,
    };
    let n = step.members();
    let arrived = publish_and_wait(step, wait, input)?;
    red.fold(n, |q| arrived.slot(q), recv)
}

/// Writes `input` at the start of this member's slot for `step`,
/// publishes it and waits for every other member's.
#[inline(always)]
fn publish_and_wait<'s>(
    step: &'s mut Step<'_>,
    wait: &Waiter<'_>,
    input: &[u8],
) -> Result<In<'s>, String> {
    let mut out = step.claim(wait)?;
    out.data()[..input.len()].copy_from_slice(input);
    out.publish();
    step.wait_all(wait)
}

/// Allreduce in pieces of at most a slot; pieces of [`SPLIT_MIN`] bytes
/// or more on 3 or more members in two steps, each member folding its
/// share.
///
/// # Errors
///
/// As [`allreduce`].
#[inline(never)]
fn allreduce_in_pieces(
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
        let send_piece = match &send {
            SendBuf::Buf(mine) => SendBuf::Buf(&mine[o..o + len]),
            SendBuf::InPlace => SendBuf::InPlace,
        };
        if !split {
            allreduce_piece(
                &mut step,
                wait,
                &mut red,
                &send_piece,
                &mut recv[o..o + len],
            )?;
            continue;
        }
        let input = match send_piece {
            SendBuf::Buf(mine) => mine,
            SendBuf::InPlace => &recv[o..o + len],
        };
        let arrived = publish_and_wait(&mut step, wait, input)?;
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
