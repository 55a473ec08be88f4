//! `MPI_Bcast`: the root's buffer is copied to every rank. `buf` has the
//! same length at every rank: the data at the root, the destination
//! elsewhere.

use std::ops::Range;

use crate::buffers::{check_comm, even_blocks, split_pair};
use crate::error::CollError;
use crate::topo::{ring_add, ring_sub, Binomial};
use crate::transport::{exchange, recv, send, sendrecv, Transport};

/// Broadcast by the root sending the whole buffer to every other rank
/// (all sends started at once). `n − 1` messages from the root.
///
/// Any size, any root, any length.
///
/// # Errors
///
/// [`CollError::InvalidArgument`] for a root out of range; the
/// transport's.
pub async fn bcast_linear<T: Transport + ?Sized>(
    t: &mut T,
    buf: &mut [u8],
    root: u32,
    tag: i32,
) -> Result<(), CollError> {
    let (rank, size) = check_comm(t, Some(root))?;
    if rank == root {
        let sends: Vec<(u32, &[u8])> = (0..size)
            .filter(|&r| r != root)
            .map(|r| (r, &*buf))
            .collect();
        exchange(t, tag, &sends, &mut []).await
    } else {
        recv(t, root, tag, buf).await
    }
}

/// Broadcast down a binomial tree rooted at `root`: each rank receives the
/// whole buffer from its parent and forwards it to its children, the
/// largest subtree first. `⌈log2 n⌉` rounds.
///
/// Any size, any root, any length.
///
/// # Errors
///
/// [`CollError::InvalidArgument`] for a root out of range; the
/// transport's.
pub async fn bcast_binomial<T: Transport + ?Sized>(
    t: &mut T,
    buf: &mut [u8],
    root: u32,
    tag: i32,
) -> Result<(), CollError> {
    let (rank, size) = check_comm(t, Some(root))?;
    let tree = Binomial::new(rank, root, size);
    let abs = |v: u32| ring_add(v, u64::from(root), size);
    if let Some(parent) = tree.parent() {
        recv(t, abs(parent), tag, buf).await?;
    }
    let sends: Vec<(u32, &[u8])> = tree
        .children()
        .into_iter()
        .rev()
        .map(|c| (abs(c), &*buf))
        .collect();
    exchange(t, tag, &sends, &mut []).await
}

/// Pipelined broadcast along a chain `root → root+1 → … → root−1`: the
/// buffer is cut into segments of `segment_size` bytes (the last one
/// shorter; `0` means a single segment) and each rank forwards segment `k`
/// while it receives segment `k + 1`. `n − 1 + segments − 1` steps: good
/// for long messages, slow for short ones.
///
/// Any size, any root, any length (an empty buffer sends nothing).
///
/// # Errors
///
/// [`CollError::InvalidArgument`] for a root out of range; the
/// transport's.
pub async fn bcast_pipeline<T: Transport + ?Sized>(
    t: &mut T,
    buf: &mut [u8],
    root: u32,
    segment_size: usize,
    tag: i32,
) -> Result<(), CollError> {
    let (rank, size) = check_comm(t, Some(root))?;
    let segments = segments(buf.len(), segment_size);
    let vrank = ring_sub(rank, u64::from(root), size);
    let next = (vrank + 1 < size).then(|| ring_add(rank, 1, size));
    let prev = ring_sub(rank, 1, size);
    if vrank == 0 {
        // One segment at a time: the chain moves at the pace of its
        // slowest link anyway, and this bounds the requests in flight.
        if let Some(next) = next {
            for seg in &segments {
                send(t, next, tag, &buf[seg.clone()]).await?;
            }
        }
        return Ok(());
    }
    let Some(first) = segments.first() else {
        return Ok(());
    };
    recv(t, prev, tag, &mut buf[first.clone()]).await?;
    for pair in segments.windows(2) {
        let (done, coming) = split_pair(buf, pair[0].clone(), pair[1].clone());
        match next {
            Some(next) => sendrecv(t, next, done, prev, coming, tag).await?,
            None => recv(t, prev, tag, coming).await?,
        }
    }
    if let (Some(next), Some(last)) = (next, segments.last()) {
        send(t, next, tag, &buf[last.clone()]).await?;
    }
    Ok(())
}

/// Broadcast by scatter then allgather (van de Geijn): the buffer is cut
/// into `n` nearly equal blocks, the root scatters them down a binomial
/// tree (each rank gets its subtree's blocks and passes them on), and a
/// ring allgather (`n − 1` steps, neighbours in rank order starting from
/// the root) assembles the whole buffer everywhere. Each rank sends and
/// receives about `2 × len` bytes instead of `len × log2 n`: good for long
/// messages at larger sizes.
///
/// Any size, any root, any length; a buffer shorter than `n` bytes is
/// broadcast with [`bcast_binomial`] instead (some blocks would be empty).
///
/// # Errors
///
/// [`CollError::InvalidArgument`] for a root out of range; the
/// transport's.
pub async fn bcast_scatter_allgather<T: Transport + ?Sized>(
    t: &mut T,
    buf: &mut [u8],
    root: u32,
    tag: i32,
) -> Result<(), CollError> {
    let (rank, size) = check_comm(t, Some(root))?;
    if buf.len() < size as usize {
        return bcast_binomial(t, buf, root, tag).await;
    }
    // Block j belongs to relative rank j.
    let blocks = even_blocks(buf.len(), size as usize, 1);
    let span = |from: u32, to: u32| blocks[from as usize].start..blocks[to as usize - 1].end;
    let tree = Binomial::new(rank, root, size);
    let abs = |v: u32| ring_add(v, u64::from(root), size);
    if let Some(parent) = tree.parent() {
        let mine = span(tree.vrank, tree.subtree_end(tree.vrank));
        recv(t, abs(parent), tag, &mut buf[mine]).await?;
    }
    let sends: Vec<(u32, &[u8])> = tree
        .children()
        .into_iter()
        .rev()
        .map(|c| (abs(c), &buf[span(c, tree.subtree_end(c))]))
        .collect();
    exchange(t, tag, &sends, &mut []).await?;
    ring_allgather_blocks(t, buf, &blocks, tree.vrank, tag).await
}

/// Ring allgather over `blocks` of `buf`: this rank holds block `vrank`,
/// and the ranks `rank + 1`, `rank + 2`, … hold blocks `vrank + 1`,
/// `vrank + 2`, … (all modulo the size). In step `s` each rank passes
/// block `vrank − s` to the next rank and receives block `vrank − s − 1`
/// from the previous one; after `n − 1` steps it has every block.
pub(crate) async fn ring_allgather_blocks<T: Transport + ?Sized>(
    t: &mut T,
    buf: &mut [u8],
    blocks: &[Range<usize>],
    vrank: u32,
    tag: i32,
) -> Result<(), CollError> {
    ring_allgather_blocks_from(t, buf, blocks, vrank, 0, tag).await
}

/// [`ring_allgather_blocks`] from step `first` on (the earlier steps done
/// by the caller).
pub(crate) async fn ring_allgather_blocks_from<T: Transport + ?Sized>(
    t: &mut T,
    buf: &mut [u8],
    blocks: &[Range<usize>],
    vrank: u32,
    first: u64,
    tag: i32,
) -> Result<(), CollError> {
    let (rank, size) = (t.rank(), t.size());
    let (next, prev) = (ring_add(rank, 1, size), ring_sub(rank, 1, size));
    for step in first..u64::from(size) - 1 {
        let out = ring_sub(vrank, step, size) as usize;
        let inc = ring_sub(vrank, step + 1, size) as usize;
        let (out, inc) = split_pair(buf, blocks[out].clone(), blocks[inc].clone());
        sendrecv(t, next, out, prev, inc, tag).await?;
    }
    Ok(())
}

/// The byte ranges of `len` bytes cut into segments of `segment_size`
/// (`0`: one segment; no segment for an empty buffer).
pub(crate) fn segments(len: usize, segment_size: usize) -> Vec<Range<usize>> {
    let step = if segment_size == 0 {
        len.max(1)
    } else {
        segment_size
    };
    (0..len)
        .step_by(step)
        .map(|s| s..(s + step).min(len))
        .collect()
}
