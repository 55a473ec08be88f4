//! `MPI_Gather` and `MPI_Gatherv`: the root gets every rank's contribution,
//! in rank order.
//!
//! `send` is this rank's contribution; `recv` is significant at the root
//! only (other ranks may pass an empty slice). `SendBuf::InPlace` is
//! allowed at the root only (`MPI_IN_PLACE`): the root's contribution is
//! already in place in `recv` (block `root`, or its `counts`/`displs`
//! region) and is neither sent nor copied.

use crate::buffers::{check_comm, consecutive, disjoint_mut, mul, ranges_v, SendBuf};
use crate::error::{invalid, CollError};
use crate::topo::{ring_add, Binomial};
use crate::transport::{exchange, send, Transport};

/// Linear gather: every rank sends its block to the root, which posts
/// all receives at once, straight into `recv`. `recv` at the root has
/// `n × len` bytes (`len` the length of each contribution; with
/// `IN_PLACE`, `recv.len() / n`).
///
/// Any size, root and length.
///
/// # Errors
///
/// [`CollError::InvalidArgument`] (root out of range, a `recv` of the
/// wrong length at the root, `IN_PLACE` off the root); the transport's
/// ([`CollError::Length`] when ranks disagree on the length).
pub async fn gather_linear<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: SendBuf<'_>,
    recv_buf: &mut [u8],
    root: u32,
    tag: i32,
) -> Result<(), CollError> {
    let (rank, size) = check_comm(t, Some(root))?;
    if rank != root {
        return send(t, root, tag, contribution(send_buf, "gather")?).await;
    }
    let len = block_len(send_buf, recv_buf.len(), size)?;
    let ranges = consecutive(vec![len; size as usize]);
    let mut pieces = disjoint_mut(recv_buf, &ranges, "receive")?;
    if let SendBuf::Buf(own) = send_buf {
        pieces[root as usize].copy_from_slice(own);
    }
    let mut recvs: Vec<(u32, &mut [u8])> = pieces
        .into_iter()
        .enumerate()
        .filter(|&(r, _)| r != root as usize)
        .map(|(r, piece)| (r as u32, piece))
        .collect();
    exchange(t, tag, &[], &mut recvs).await
}

/// Linear gatherv: every rank sends its contribution to the root, which
/// receives rank `i`'s `counts[i]` bytes at byte offset `displs[i]` of
/// `recv` (all receives posted at once). `counts` and `displs` (in bytes,
/// one per rank) are significant at the root only. The regions must not
/// overlap (MPI forbids writing a location twice); bytes of `recv` outside
/// them are left alone.
///
/// Any size, root and counts.
///
/// # Errors
///
/// [`CollError::InvalidArgument`] (root out of range, counts or
/// displacements that do not fit `recv` or overlap, a send length other
/// than `counts[root]` at the root, `IN_PLACE` off the root); the
/// transport's ([`CollError::Length`] when a rank sends another length than
/// the root expects).
pub async fn gatherv_linear<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: SendBuf<'_>,
    recv_buf: &mut [u8],
    counts: &[usize],
    displs: &[usize],
    root: u32,
    tag: i32,
) -> Result<(), CollError> {
    let (rank, size) = check_comm(t, Some(root))?;
    if rank != root {
        return send(t, root, tag, contribution(send_buf, "gatherv")?).await;
    }
    let ranges = ranges_v(counts, displs, size, recv_buf.len(), "receive")?;
    let mut pieces = disjoint_mut(recv_buf, &ranges, "receive")?;
    if let SendBuf::Buf(own) = send_buf {
        let slot = &mut pieces[root as usize];
        if own.len() != slot.len() {
            return invalid(format!(
                "the root sends {} bytes but its counts say {}",
                own.len(),
                slot.len()
            ));
        }
        slot.copy_from_slice(own);
    }
    let mut recvs: Vec<(u32, &mut [u8])> = pieces
        .into_iter()
        .enumerate()
        .filter(|&(r, _)| r != root as usize)
        .map(|(r, piece)| (r as u32, piece))
        .collect();
    exchange(t, tag, &[], &mut recvs).await
}

/// Gather up a binomial tree rooted at `root`: each rank receives its
/// children's subtrees (contiguous ranges of ranks relative to the root)
/// into one scratch buffer after its own block and sends the whole to its
/// parent; the root then rotates the blocks into rank order. `⌈log2 n⌉`
/// rounds; intermediate ranks need scratch space for their subtree.
///
/// Any size, root and length. Lengths as in [`gather_linear`].
///
/// # Errors
///
/// As [`gather_linear`].
pub async fn gather_binomial<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: SendBuf<'_>,
    recv_buf: &mut [u8],
    root: u32,
    tag: i32,
) -> Result<(), CollError> {
    let (rank, size) = check_comm(t, Some(root))?;
    let len = if rank == root {
        block_len(send_buf, recv_buf.len(), size)?
    } else {
        contribution(send_buf, "gather")?.len()
    };
    let tree = Binomial::new(rank, root, size);
    let abs = |v: u32| ring_add(v, u64::from(root), size);
    let span = tree.subtree_end(tree.vrank) - tree.vrank;
    let mut sub = vec![0u8; mul(span as usize, len, "the gather's size")?];
    match send_buf {
        SendBuf::Buf(own) => sub[..len].copy_from_slice(own),
        SendBuf::InPlace => {
            let at = root as usize * len;
            sub[..len].copy_from_slice(&recv_buf[at..at + len]);
        }
    }
    let children = tree.children();
    let ranges = consecutive(
        std::iter::once(len).chain(
            children
                .iter()
                .map(|&c| (tree.subtree_end(c) - c) as usize * len),
        ),
    );
    let mut pieces = disjoint_mut(&mut sub, &ranges, "scratch")?;
    let mut recvs: Vec<(u32, &mut [u8])> = children
        .iter()
        .map(|&c| abs(c))
        .zip(pieces.drain(1..))
        .collect();
    exchange(t, tag, &[], &mut recvs).await?;
    match tree.parent() {
        Some(parent) => send(t, abs(parent), tag, &sub).await,
        None => {
            // Relative rank j is rank root + j: blocks 0..n−root go to
            // root.., the rest to 0..root.
            let split = (size - root) as usize * len;
            recv_buf[root as usize * len..].copy_from_slice(&sub[..split]);
            recv_buf[..root as usize * len].copy_from_slice(&sub[split..]);
            Ok(())
        }
    }
}

/// The contribution of a rank that is not the root.
pub(crate) fn contribution<'s>(send_buf: SendBuf<'s>, what: &str) -> Result<&'s [u8], CollError> {
    match send_buf {
        SendBuf::Buf(own) => Ok(own),
        SendBuf::InPlace => invalid(format!(
            "MPI_IN_PLACE is only allowed at the root of a {what}"
        )),
    }
}

/// The length of each rank's block given the root's send buffer and a
/// receive buffer of `total` bytes for `size` blocks.
pub(crate) fn block_len(
    send_buf: SendBuf<'_>,
    total: usize,
    size: u32,
) -> Result<usize, CollError> {
    let len = match send_buf {
        SendBuf::Buf(own) => own.len(),
        SendBuf::InPlace => total / size as usize,
    };
    if mul(len, size as usize, "the receive length")? != total {
        return invalid(format!(
            "the receive buffer has {total} bytes, not {size} blocks of {len} bytes"
        ));
    }
    Ok(len)
}
