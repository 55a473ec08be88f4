//! The collectives over a segment, and which calls sm takes.
//!
//! Every operation moves its data through the slots in pieces of at most
//! a slot (operations that send a block to each member: a slot divided by
//! the members), one step per piece, so a large call is pipelined
//! through the slots of each member:
//!
//! The operations where a writer does not wait for its readers (bcast,
//! gather, reduce) use the small slots for pieces that fit
//! ([`Member::step_for`]): there are many of them, so a bcast root or the
//! senders of a reduce can run far ahead. The operations where every
//! member waits for every other in each step use the slots, whose `done`
//! is never waited for.
//!
//! | operation | one step |
//! |---|---|
//! | barrier | every member publishes an empty slot and waits for all |
//! | bcast | the root writes a piece, the others copy it out |
//! | gather | the others write a piece of their block, the root copies them out |
//! | scatter | the root writes a piece of each member's block, each copies its own out |
//! | allgather | every member writes a piece of its block, then copies the others' |
//! | alltoall | every member writes a piece of each block it sends, then copies the ones sent to it |
//! | reduce, allreduce | see [`crate::reduce`] |

use crate::member::{Member, Waiter};
use crate::params::Limits;
use crate::reduce;
use oxmpi_collectives::{RecvBuf, SendBuf};
use oxmpi_framework_coll::buffers::{bcast_buffer, buffers, message_bytes, Buffers};
use oxmpi_framework_coll::module::{CollCall, CollKind, OpSet};

/// The operations sm provides.
pub const PROVIDED: OpSet = oxmpi_framework_coll::adapter::op_set(&[
    CollKind::Barrier,
    CollKind::Bcast,
    CollKind::Reduce,
    CollKind::Allreduce,
    CollKind::Gather,
    CollKind::Scatter,
    CollKind::Allgather,
    CollKind::Alltoall,
]);

/// The bytes per process that [`takes`] compares with the limit: bcast's
/// buffer, a reduction's vector, and for gather, scatter, allgather and
/// alltoall the bytes a process sends or receives in all (its block times
/// the members). The same at every member of a call.
pub fn call_bytes(call: &CollCall<'_>, members: usize) -> usize {
    match call.kind {
        CollKind::Gather | CollKind::Scatter | CollKind::Allgather | CollKind::Alltoall => {
            call.count.saturating_mul(members)
        }
        _ => message_bytes(call),
    }
}

/// Whether sm takes `call` on a communicator of `members` within
/// `limits` (every member answers the same for the same call).
pub fn takes(call: &CollCall<'_>, members: usize, limits: &Limits) -> bool {
    match call.kind {
        CollKind::Barrier => true,
        // A slot holds at least one element of a reduction.
        CollKind::Reduce | CollKind::Allreduce => {
            let elem = call.elem_size();
            elem <= limits.slots.size && call.count.saturating_mul(elem) <= limits.max_size
        }
        kind => PROVIDED.contains(kind) && call_bytes(call, members) <= limits.max_size,
    }
}

/// Runs `call` as member `m` of its communicator.
///
/// # Safety
///
/// The call's buffers are valid for what its fields say (read for `send`,
/// written for `recv`) during the call, and every member makes the same
/// call.
///
/// # Errors
///
/// An inconsistent call (before any step), a failed user operation, or a
/// waiter that gave up.
pub unsafe fn run(
    m: &mut Member,
    wait: &Waiter<'_>,
    scratch: &mut Vec<u8>,
    call: &CollCall<'_>,
) -> Result<(), String> {
    let (rank, n) = (m.rank(), m.size());
    if call.kind.rooted() && call.root as usize >= n {
        return Err(format!(
            "the root {} is not a rank of the communicator of {n} processes",
            call.root
        ));
    }
    let root = call.root as usize;
    // The calls whose small sizes are timed per call take their buffers
    // straight from the call, without the match on every operation's
    // buffer shapes.
    match call.kind {
        CollKind::Barrier => return barrier(m, wait),
        // SAFETY: the caller's promise.
        CollKind::Allreduce => return unsafe { reduce::allreduce(m, wait, scratch, call) },
        // SAFETY: the caller's promise.
        CollKind::Reduce => return unsafe { reduce::reduce(m, wait, call, root) },
        // SAFETY: the caller's promise.
        CollKind::Bcast => return bcast(m, wait, unsafe { bcast_buffer(call) }, root),
        _ => {}
    }
    // SAFETY: the caller's promise.
    let bufs = unsafe { buffers(call, rank as u32, n) }?;
    match (call.kind, bufs) {
        (CollKind::Gather, Buffers::SendRecv(send, recv)) => {
            gather(m, wait, send, recv, root, call.count)
        }
        (CollKind::Scatter, Buffers::Scatter(send, recv)) => {
            scatter(m, wait, send, recv, root, call.count)
        }
        (CollKind::Allgather, Buffers::SendRecv(send, recv)) => {
            allgather(m, wait, send, recv, call.count)
        }
        (CollKind::Alltoall, Buffers::SendRecv(send, recv)) => {
            alltoall(m, wait, send, recv, call.count)
        }
        (kind, _) => Err(format!(
            "internal error: coll sm does not run {} (or got buffers of another shape)",
            kind.name()
        )),
    }
}

/// The pieces `(offset, len)` of `total` bytes in pieces of `piece` (none
/// for 0 bytes).
pub(crate) fn pieces(total: usize, piece: usize) -> Pieces {
    debug_assert!(piece > 0);
    Pieces {
        at: 0,
        total,
        piece: piece.max(1),
    }
}

/// The iterator of [`pieces`] (a plain counter: one comparison and one
/// `min` a piece).
pub(crate) struct Pieces {
    at: usize,
    total: usize,
    piece: usize,
}

impl Iterator for Pieces {
    type Item = (usize, usize);

    #[inline]
    fn next(&mut self) -> Option<(usize, usize)> {
        if self.at >= self.total {
            return None;
        }
        let at = self.at;
        let len = self.piece.min(self.total - at);
        self.at += len;
        Some((at, len))
    }
}

/// The piece of each block when a slot holds one per member.
fn block_piece(m: &Member) -> Result<usize, String> {
    let piece = m.slot_size() / m.size();
    if piece == 0 {
        return Err(format!(
            "the segment's slots ({} bytes) cannot hold a byte for each of {} processes",
            m.slot_size(),
            m.size()
        ));
    }
    Ok(piece)
}

/// The sentence of `MPI_IN_PLACE` where MPI does not allow it.
pub(crate) fn in_place_refused(what: &str) -> String {
    format!("MPI_IN_PLACE is not allowed for {what}")
}

/// Barrier: every member publishes its slot (no data) and waits for all.
pub fn barrier(m: &mut Member, wait: &Waiter<'_>) -> Result<(), String> {
    let mut step = m.step();
    step.claim(wait)?.publish();
    step.wait_all(wait)?;
    Ok(())
}

/// Bcast of `buf` from `root`.
pub fn bcast(m: &mut Member, wait: &Waiter<'_>, buf: &mut [u8], root: usize) -> Result<(), String> {
    let me = m.rank();
    for (o, len) in pieces(buf.len(), m.slot_size()) {
        let mut step = m.step_for(len);
        if me == root {
            let mut out = step.claim(wait)?;
            out.data()[..len].copy_from_slice(&buf[o..o + len]);
            out.publish();
        } else {
            let arrived = step.wait_for(root, wait)?;
            buf[o..o + len].copy_from_slice(&arrived.slot(root)[..len]);
        }
    }
    Ok(())
}

/// Gather of `count` bytes per member to `root`.
pub fn gather(
    m: &mut Member,
    wait: &Waiter<'_>,
    send: SendBuf<'_>,
    recv: &mut [u8],
    root: usize,
    count: usize,
) -> Result<(), String> {
    let (me, n) = (m.rank(), m.size());
    if me != root && matches!(send, SendBuf::InPlace) {
        return Err(in_place_refused("gather at a rank other than the root"));
    }
    if let (true, SendBuf::Buf(mine)) = (me == root, &send) {
        recv[me * count..(me + 1) * count].copy_from_slice(&mine[..count]);
    }
    for (o, len) in pieces(count, m.slot_size()) {
        let mut step = m.step_for(len);
        if me == root {
            let arrived = step.wait_all(wait)?;
            for q in (0..n).filter(|&q| q != me) {
                recv[q * count + o..q * count + o + len].copy_from_slice(&arrived.slot(q)[..len]);
            }
        } else if let SendBuf::Buf(mine) = &send {
            let mut out = step.claim(wait)?;
            out.data()[..len].copy_from_slice(&mine[o..o + len]);
            out.publish();
        }
    }
    Ok(())
}

/// Scatter of `count` bytes per member from `root`.
pub fn scatter(
    m: &mut Member,
    wait: &Waiter<'_>,
    send: &[u8],
    mut recv: RecvBuf<'_>,
    root: usize,
    count: usize,
) -> Result<(), String> {
    let (me, n) = (m.rank(), m.size());
    let piece = block_piece(m)?;
    if me == root {
        if let RecvBuf::Buf(mine) = &mut recv {
            mine[..count].copy_from_slice(&send[me * count..(me + 1) * count]);
        }
    } else if matches!(recv, RecvBuf::InPlace) {
        return Err(in_place_refused("scatter at a rank other than the root"));
    }
    for (o, len) in pieces(count, piece) {
        let mut step = m.step();
        if me == root {
            let mut out = step.claim(wait)?;
            let data = out.data();
            for q in (0..n).filter(|&q| q != me) {
                data[q * piece..q * piece + len]
                    .copy_from_slice(&send[q * count + o..q * count + o + len]);
            }
            out.publish();
        } else if let RecvBuf::Buf(mine) = &mut recv {
            let arrived = step.wait_for(root, wait)?;
            mine[o..o + len].copy_from_slice(&arrived.slot(root)[me * piece..me * piece + len]);
        }
    }
    Ok(())
}

/// Allgather of `count` bytes per member.
pub fn allgather(
    m: &mut Member,
    wait: &Waiter<'_>,
    send: SendBuf<'_>,
    recv: &mut [u8],
    count: usize,
) -> Result<(), String> {
    let (me, n) = (m.rank(), m.size());
    if let SendBuf::Buf(mine) = send {
        recv[me * count..(me + 1) * count].copy_from_slice(&mine[..count]);
    }
    for (o, len) in pieces(count, m.slot_size()) {
        let mut step = m.step();
        let mut out = step.claim(wait)?;
        let at = me * count + o;
        out.data()[..len].copy_from_slice(&recv[at..at + len]);
        out.publish();
        let arrived = step.wait_all(wait)?;
        for q in (0..n).filter(|&q| q != me) {
            recv[q * count + o..q * count + o + len].copy_from_slice(&arrived.slot(q)[..len]);
        }
    }
    Ok(())
}

/// Alltoall of `count` bytes from each member to each.
pub fn alltoall(
    m: &mut Member,
    wait: &Waiter<'_>,
    send: SendBuf<'_>,
    recv: &mut [u8],
    count: usize,
) -> Result<(), String> {
    let (me, n) = (m.rank(), m.size());
    let piece = block_piece(m)?;
    if let SendBuf::Buf(mine) = &send {
        recv[me * count..(me + 1) * count].copy_from_slice(&mine[me * count..(me + 1) * count]);
    }
    for (o, len) in pieces(count, piece) {
        let mut step = m.step();
        let mut out = step.claim(wait)?;
        let data = out.data();
        // In place, the blocks to send are in `recv`: each piece goes to
        // the slot before the same piece of `recv` is overwritten below.
        let source: &[u8] = match &send {
            SendBuf::Buf(s) => s,
            SendBuf::InPlace => recv,
        };
        for q in (0..n).filter(|&q| q != me) {
            data[q * piece..q * piece + len]
                .copy_from_slice(&source[q * count + o..q * count + o + len]);
        }
        out.publish();
        let arrived = step.wait_all(wait)?;
        for q in (0..n).filter(|&q| q != me) {
            recv[q * count + o..q * count + o + len]
                .copy_from_slice(&arrived.slot(q)[me * piece..me * piece + len]);
        }
    }
    Ok(())
}
