//! `MPI_Scatter` and `MPI_Scatterv`: each rank gets its block of the root's
//! send buffer.
//!
//! `send` is significant at the root only (other ranks may pass an empty
//! slice); `recv` receives this rank's block. `RecvBuf::InPlace` is
//! allowed at the root only (`MPI_IN_PLACE`): the root's own block stays
//! where it is in `send` and is not copied anywhere.

use crate::buffers::{check_comm, consecutive, mul, ranges_v, RecvBuf};
use crate::error::{invalid, CollError};
use crate::topo::{ring_add, Binomial};
use crate::transport::{exchange, recv, Transport};

/// Linear scatter: the root sends block `i` (`len` bytes at `i × len`) of
/// `send` to every rank `i` at once; `send` at the root has `n × len`
/// bytes, `len` being the length of `recv` (with `IN_PLACE`,
/// `send.len() / n`).
///
/// Any size, root and length.
///
/// # Errors
///
/// [`CollError::InvalidArgument`] (root out of range, a `send` of the
/// wrong length at the root, `IN_PLACE` off the root); the transport's
/// ([`CollError::Length`] when ranks disagree on the length).
pub async fn scatter_linear<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: &[u8],
    recv_buf: RecvBuf<'_>,
    root: u32,
    tag: i32,
) -> Result<(), CollError> {
    let (rank, size) = check_comm(t, Some(root))?;
    if rank != root {
        return recv(t, root, tag, destination(recv_buf)?).await;
    }
    let len = root_block_len(send_buf.len(), &recv_buf, size)?;
    let ranges = consecutive(vec![len; size as usize]);
    scatter_from_root(t, send_buf, &ranges, recv_buf, tag).await
}

/// Linear scatterv: the root sends `counts[i]` bytes at byte offset
/// `displs[i]` of `send` to rank `i` (all sends started at once; regions
/// may overlap). `counts` and `displs` (in bytes, one per rank) are
/// significant at the root only; every rank's `recv` has its count's
/// length.
///
/// Any size, root and counts.
///
/// # Errors
///
/// [`CollError::InvalidArgument`] (root out of range, counts and
/// displacements that leave `send`, a root `recv` of another length than
/// `counts[root]`, `IN_PLACE` off the root); the transport's.
pub async fn scatterv_linear<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: &[u8],
    counts: &[usize],
    displs: &[usize],
    recv_buf: RecvBuf<'_>,
    root: u32,
    tag: i32,
) -> Result<(), CollError> {
    let (rank, size) = check_comm(t, Some(root))?;
    if rank != root {
        return recv(t, root, tag, destination(recv_buf)?).await;
    }
    let ranges = ranges_v(counts, displs, size, send_buf.len(), "send")?;
    scatter_from_root(t, send_buf, &ranges, recv_buf, tag).await
}

/// Scatter down a binomial tree rooted at `root`: the root reorders `send`
/// into relative rank order, and each rank receives the blocks of its
/// whole subtree from its parent, keeps the first and passes each child
/// its subtree's range (largest first). `⌈log2 n⌉` rounds; intermediate
/// ranks need scratch space for their subtree.
///
/// Any size, root and length. Lengths as in [`scatter_linear`].
///
/// # Errors
///
/// As [`scatter_linear`].
pub async fn scatter_binomial<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: &[u8],
    recv_buf: RecvBuf<'_>,
    root: u32,
    tag: i32,
) -> Result<(), CollError> {
    let (rank, size) = check_comm(t, Some(root))?;
    let tree = Binomial::new(rank, root, size);
    let abs = |v: u32| ring_add(v, u64::from(root), size);
    let (sub, len) = match tree.parent() {
        None => {
            let len = root_block_len(send_buf.len(), &recv_buf, size)?;
            // Relative rank j is rank root + j.
            let split = root as usize * len;
            let mut sub = Vec::with_capacity(send_buf.len());
            sub.extend_from_slice(&send_buf[split..]);
            sub.extend_from_slice(&send_buf[..split]);
            (sub, len)
        }
        Some(parent) => {
            let len = match &recv_buf {
                RecvBuf::Buf(buf) => buf.len(),
                RecvBuf::InPlace => {
                    return invalid("MPI_IN_PLACE is only allowed at the root of a scatter")
                }
            };
            let span = (tree.subtree_end(tree.vrank) - tree.vrank) as usize;
            let mut sub = vec![0u8; mul(span, len, "the scatter's size")?];
            recv(t, abs(parent), tag, &mut sub).await?;
            (sub, len)
        }
    };
    let sends: Vec<(u32, &[u8])> = tree
        .children()
        .into_iter()
        .rev()
        .map(|c| {
            let from = (c - tree.vrank) as usize * len;
            let to = (tree.subtree_end(c) - tree.vrank) as usize * len;
            (abs(c), &sub[from..to])
        })
        .collect();
    exchange(t, tag, &sends, &mut []).await?;
    if let RecvBuf::Buf(buf) = recv_buf {
        buf.copy_from_slice(&sub[..len]);
    }
    Ok(())
}

/// The root's part of a linear scatter(v): sends `send[ranges[i]]` to each
/// other rank `i`, copies its own range into `recv` unless `IN_PLACE`.
async fn scatter_from_root<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: &[u8],
    ranges: &[std::ops::Range<usize>],
    recv_buf: RecvBuf<'_>,
    tag: i32,
) -> Result<(), CollError> {
    let (rank, size) = (t.rank(), t.size());
    if let RecvBuf::Buf(own) = recv_buf {
        let mine = &send_buf[ranges[rank as usize].clone()];
        if own.len() != mine.len() {
            return invalid(format!(
                "the root's receive buffer has {} bytes but its block {}",
                own.len(),
                mine.len()
            ));
        }
        own.copy_from_slice(mine);
    }
    let sends: Vec<(u32, &[u8])> = (1..size)
        .map(|d| ring_add(rank, u64::from(d), size))
        .map(|r| (r, &send_buf[ranges[r as usize].clone()]))
        .collect();
    exchange(t, tag, &sends, &mut []).await
}

/// The receive buffer of a rank that is not the root.
fn destination<'r>(recv_buf: RecvBuf<'r>) -> Result<&'r mut [u8], CollError> {
    match recv_buf {
        RecvBuf::Buf(buf) => Ok(buf),
        RecvBuf::InPlace => invalid("MPI_IN_PLACE is only allowed at the root of a scatter"),
    }
}

/// The block length at the root: the length of `recv`, or with `IN_PLACE`
/// the send length over `size`; checks that `send` holds `size` blocks.
fn root_block_len(send_len: usize, recv_buf: &RecvBuf<'_>, size: u32) -> Result<usize, CollError> {
    let len = match recv_buf {
        RecvBuf::Buf(buf) => buf.len(),
        RecvBuf::InPlace => send_len / size as usize,
    };
    if mul(len, size as usize, "the send length")? != send_len {
        return invalid(format!(
            "the root's send buffer has {send_len} bytes, not {size} blocks of {len} bytes"
        ));
    }
    Ok(len)
}
