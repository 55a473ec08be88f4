//! `MPI_Reduce`: the root gets `x0 op x1 op … op x(n−1)`, element by
//! element, of every rank's input `x(r)`.
//!
//! Arguments of every reduce: `send` is this rank's input (`count`
//! elements); `recv` receives the result at the root and is ignored
//! elsewhere (it may be empty). `SendBuf::InPlace` is allowed at the root
//! only: the root's input is then taken from `recv`, which the result
//! overwrites (`MPI_IN_PLACE` of `MPI_Reduce`).

use std::borrow::Cow;
use std::ops::Range;

use crate::bcast::segments;
use crate::buffers::{check_comm, SendBuf};
use crate::error::{invalid, CollError};
use crate::reduction::Reduction;
use crate::topo::{ring_add, ring_sub, Binomial};
use crate::transport::{recv, send, sendrecv, Transport};

/// Linear reduce: every rank sends its input to the root, which receives
/// them one by one, from rank `n − 1` down to 0, and folds each in as the
/// left operand (`acc = x(i) op acc`), which is `x0 op … op x(n−1)` in rank
/// order. `n − 1` messages into the root, one scratch buffer.
///
/// Any size, root and count; correct for non-commutative operations.
///
/// # Errors
///
/// [`CollError::InvalidArgument`] (root out of range, buffers that are not
/// whole elements, send and receive lengths that differ at the root,
/// `IN_PLACE` off the root), [`CollError::Reduce`] for an operation that
/// does not apply to its type, the user operation's and the transport's.
pub async fn reduce_linear<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: SendBuf<'_>,
    recv_buf: &mut [u8],
    root: u32,
    op: &mut Reduction<'_>,
    tag: i32,
) -> Result<(), CollError> {
    let (rank, size) = check_comm(t, Some(root))?;
    let own = reduce_input(send_buf, recv_buf, rank == root, op)?;
    if rank != root {
        return send(t, root, tag, &own).await;
    }
    let last = size - 1;
    if last == root {
        recv_buf.copy_from_slice(&own);
    } else {
        recv(t, last, tag, recv_buf).await?;
    }
    let mut scratch = t.scratch(own.len());
    for i in (0..last).rev() {
        if i == root {
            op.combine(&own, recv_buf)?;
        } else {
            recv(t, i, tag, &mut scratch).await?;
            op.combine(&scratch, recv_buf)?;
        }
    }
    t.recycle(scratch);
    Ok(())
}

/// Reduce up a binomial tree: each rank receives the partial results of
/// its children's subtrees (smallest first), folds them into its own
/// (`acc = acc op child`) and sends the result to its parent. `⌈log2 n⌉`
/// rounds.
///
/// For a commutative operation the tree is rooted at `root`. A
/// non-commutative one needs the subtrees to be ranges of ranks in rank
/// order, so the tree is rooted at rank 0 (where relative and absolute
/// ranks agree) and rank 0 then sends the result to `root` (one more
/// message when `root ≠ 0`).
///
/// Any size, root and count.
///
/// # Errors
///
/// As [`reduce_linear`].
pub async fn reduce_binomial<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: SendBuf<'_>,
    recv_buf: &mut [u8],
    root: u32,
    op: &mut Reduction<'_>,
    tag: i32,
) -> Result<(), CollError> {
    let (rank, _) = check_comm(t, Some(root))?;
    let own = reduce_input(send_buf, recv_buf, rank == root, op)?;
    let tree_root = if op.is_commutative() { root } else { 0 };
    let acc = binomial_to(t, own.into_owned(), tree_root, op, tag).await?;
    deliver(t, acc, tree_root, root, recv_buf, tag).await
}

/// Pipelined reduce along a chain: the input is cut into segments of
/// `segment_size` bytes (rounded down to whole elements, at least one
/// element; `0` means a single segment). The last rank of the chain sends
/// its segments to the one before it, which folds in its own input as the
/// left operand and passes each segment on while it receives the next.
/// `n − 1 + segments − 1` steps: good for long messages.
///
/// For a commutative operation the chain is `root+n−1 → … → root+1 →
/// root`; for a non-commutative one it runs `n−1 → … → 1 → 0` in rank
/// order and rank 0 sends the result to `root` (one more message when
/// `root ≠ 0`).
///
/// Any size, root and count.
///
/// # Errors
///
/// As [`reduce_linear`].
pub async fn reduce_pipeline<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: SendBuf<'_>,
    recv_buf: &mut [u8],
    root: u32,
    op: &mut Reduction<'_>,
    segment_size: usize,
    tag: i32,
) -> Result<(), CollError> {
    let (rank, size) = check_comm(t, Some(root))?;
    let own = reduce_input(send_buf, recv_buf, rank == root, op)?;
    let chain_root = if op.is_commutative() { root } else { 0 };
    let segs = element_segments(own.len(), op.elem_size(), segment_size);
    let vrank = ring_sub(rank, u64::from(chain_root), size);
    let up = ring_sub(rank, 1, size);
    let down = ring_add(rank, 1, size);
    let has_down = vrank + 1 < size;

    if vrank == 0 {
        let mut acc = own.into_owned();
        if has_down {
            let mut scratch = vec![0u8; acc.len()];
            for seg in &segs {
                let part = &mut scratch[seg.clone()];
                recv(t, down, tag, part).await?;
                op.combine(&acc[seg.clone()], part)?;
                acc[seg.clone()].copy_from_slice(part);
            }
        }
        return deliver(t, Some(acc), chain_root, root, recv_buf, tag).await;
    }
    if !has_down {
        for seg in &segs {
            send(t, up, tag, &own[seg.clone()]).await?;
        }
        return deliver(t, None, chain_root, root, recv_buf, tag).await;
    }
    // A middle rank: receive segment k+1 while segment k goes up.
    let longest = segs.first().map_or(0, |s| s.len());
    let (mut ready, mut coming) = (vec![0u8; longest], vec![0u8; longest]);
    if let Some(first) = segs.first() {
        recv(t, down, tag, &mut ready[..first.len()]).await?;
        op.combine(&own[first.clone()], &mut ready[..first.len()])?;
    }
    for pair in segs.windows(2) {
        let (done, next) = (&pair[0], &pair[1]);
        sendrecv(
            t,
            up,
            &ready[..done.len()],
            down,
            &mut coming[..next.len()],
            tag,
        )
        .await?;
        op.combine(&own[next.clone()], &mut coming[..next.len()])?;
        std::mem::swap(&mut ready, &mut coming);
    }
    if let Some(last) = segs.last() {
        send(t, up, tag, &ready[..last.len()]).await?;
    }
    deliver(t, None, chain_root, root, recv_buf, tag).await
}

/// This rank's input of a reduce: `send`, or a copy of `recv` for
/// `IN_PLACE` at the root. Checks the operation and the lengths.
pub(crate) fn reduce_input<'s>(
    send_buf: SendBuf<'s>,
    recv_buf: &[u8],
    is_root: bool,
    op: &Reduction<'_>,
) -> Result<Cow<'s, [u8]>, CollError> {
    let own = match send_buf {
        SendBuf::InPlace if is_root => Cow::Owned(recv_buf.to_vec()),
        SendBuf::InPlace => return invalid("MPI_IN_PLACE is only allowed at the root of a reduce"),
        SendBuf::Buf(buf) => {
            if is_root && buf.len() != recv_buf.len() {
                return invalid(format!(
                    "the root's send buffer has {} bytes but its receive buffer {}",
                    buf.len(),
                    recv_buf.len()
                ));
            }
            Cow::Borrowed(buf)
        }
    };
    op.count_of(own.len(), "send buffer")?;
    Ok(own)
}

/// Reduces `own` up a binomial tree rooted at `tree_root` (subtrees are
/// ranges of relative ranks, folded in order); the result at the tree
/// root, `None` elsewhere.
pub(crate) async fn binomial_to<T: Transport + ?Sized>(
    t: &mut T,
    own: Vec<u8>,
    tree_root: u32,
    op: &mut Reduction<'_>,
    tag: i32,
) -> Result<Option<Vec<u8>>, CollError> {
    let (rank, size) = (t.rank(), t.size());
    let tree = Binomial::new(rank, tree_root, size);
    let abs = |v: u32| ring_add(v, u64::from(tree_root), size);
    let mut acc = own;
    let mut scratch = t.scratch(acc.len());
    for child in tree.children() {
        recv(t, abs(child), tag, &mut scratch).await?;
        op.fold_high_into_low(&mut acc, &mut scratch)?;
    }
    t.recycle(scratch);
    match tree.parent() {
        Some(parent) => {
            send(t, abs(parent), tag, &acc).await?;
            Ok(None)
        }
        None => Ok(Some(acc)),
    }
}

/// Moves the result from `from` (which holds it in `result`) to `root`'s
/// `recv_buf`: a copy when they are the same rank, a message otherwise.
async fn deliver<T: Transport + ?Sized>(
    t: &mut T,
    result: Option<Vec<u8>>,
    from: u32,
    root: u32,
    recv_buf: &mut [u8],
    tag: i32,
) -> Result<(), CollError> {
    let rank = t.rank();
    match result {
        Some(result) if from == root => recv_buf.copy_from_slice(&result),
        Some(result) => send(t, root, tag, &result).await?,
        None if rank == root => recv(t, from, tag, recv_buf).await?,
        None => {}
    }
    Ok(())
}

/// The byte ranges of `len` bytes of `elem_size`-byte elements cut into
/// segments of `segment_size` bytes rounded down to whole elements (at
/// least one; `0`: one segment).
pub(crate) fn element_segments(
    len: usize,
    elem_size: usize,
    segment_size: usize,
) -> Vec<Range<usize>> {
    let seg = if segment_size == 0 {
        0
    } else {
        (segment_size / elem_size).max(1) * elem_size
    };
    segments(len, seg)
}
