//! `MPI_Allgather` and `MPI_Allgatherv`: every rank gets every rank's
//! contribution, in rank order.
//!
//! `send` is this rank's contribution (`len` bytes) and `recv` has
//! `n × len` bytes at every rank (allgatherv: the regions given by
//! `counts` and `displs`). `SendBuf::InPlace` (`MPI_IN_PLACE`, allowed at
//! every rank): this rank's contribution is already in place in `recv`
//! (block `rank`, or its region) and `len` is `recv.len() / n`.

use crate::bcast::{bcast_binomial, ring_allgather_blocks, ring_allgather_blocks_from};
use crate::buffers::{check_comm, consecutive, disjoint_mut, mul, ranges_v, split_pair, SendBuf};
use crate::error::{invalid, CollError};
use crate::gather::{block_len, gather_linear};
use crate::topo::{ring_add, ring_sub};
use crate::transport::{exchange_with, sendrecv, Transport};

/// Allgather by a linear gather to rank 0 followed by a binomial broadcast
/// of the whole receive buffer.
///
/// Any size and length.
///
/// # Errors
///
/// [`CollError::InvalidArgument`] (a `recv` that is not `n` blocks of the
/// send length); the transport's.
pub async fn allgather_linear<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: SendBuf<'_>,
    recv_buf: &mut [u8],
    tag: i32,
) -> Result<(), CollError> {
    let (rank, size) = check_comm(t, None)?;
    let len = block_len(send_buf, recv_buf.len(), size)?;
    if rank == 0 {
        gather_linear(t, send_buf, recv_buf, 0, tag).await?;
    } else {
        let own = match send_buf {
            SendBuf::Buf(own) => own.to_vec(),
            SendBuf::InPlace => recv_buf[rank as usize * len..][..len].to_vec(),
        };
        gather_linear(t, SendBuf::Buf(&own), &mut [], 0, tag).await?;
    }
    bcast_binomial(t, recv_buf, 0, tag).await
}

/// Ring allgather: in step `s` each rank passes block `rank − s` to
/// `rank + 1` and receives block `rank − s − 1` from `rank − 1`, straight
/// into `recv`. `n − 1` steps, each rank sends `(n − 1) × len` bytes: good
/// for long messages.
///
/// Any size and length.
///
/// # Errors
///
/// As [`allgather_linear`].
pub async fn allgather_ring<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: SendBuf<'_>,
    recv_buf: &mut [u8],
    tag: i32,
) -> Result<(), CollError> {
    let (rank, size) = check_comm(t, None)?;
    if let (SendBuf::Buf(own), true) = (send_buf, size > 1) {
        // Step 0 sends the own block from `send` while copying it into
        // place.
        let len = block_len(send_buf, recv_buf.len(), size)?;
        let blocks = consecutive(vec![len; size as usize]);
        let (next, prev) = (ring_add(rank, 1, size), ring_sub(rank, 1, size));
        {
            let mut pieces = disjoint_mut(
                recv_buf,
                &[blocks[prev as usize].clone(), blocks[rank as usize].clone()],
                "receive",
            )?;
            let (theirs, mine) = pieces.split_at_mut(1);
            let (theirs, mine) = (&mut *theirs[0], &mut *mine[0]);
            exchange_with(t, tag, &[(next, own)], &mut [(prev, theirs)], || {
                mine.copy_from_slice(own);
            })
            .await?;
        }
        return ring_allgather_blocks_from(t, recv_buf, &blocks, rank, 1, tag).await;
    }
    let len = place_own(send_buf, recv_buf, rank, size)?;
    let blocks = consecutive(vec![len; size as usize]);
    ring_allgather_blocks(t, recv_buf, &blocks, rank, tag).await
}

/// Allgather by recursive doubling: in round `k` each rank exchanges all
/// the blocks it has (an aligned range of `2^k` blocks) with the rank
/// whose number differs in bit `k`, straight into `recv`. `log2 n` rounds:
/// good for short messages.
///
/// Any length; for a size that is not a power of two this runs
/// [`allgather_bruck`] instead (which has the same number of rounds).
///
/// # Errors
///
/// As [`allgather_linear`].
pub async fn allgather_recursive_doubling<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: SendBuf<'_>,
    recv_buf: &mut [u8],
    tag: i32,
) -> Result<(), CollError> {
    let (rank, size) = check_comm(t, None)?;
    if !size.is_power_of_two() {
        return allgather_bruck(t, send_buf, recv_buf, tag).await;
    }
    let len = place_own(send_buf, recv_buf, rank, size)?;
    let bytes = |lo: u32, hi: u32| lo as usize * len..hi as usize * len;
    let (mut lo, mut hi) = (rank, rank + 1);
    let mut dist = 1;
    while dist < size {
        let peer = rank ^ dist;
        let theirs = if rank & dist == 0 {
            (hi, hi + dist)
        } else {
            (lo - dist, lo)
        };
        let (mine, inc) = split_pair(recv_buf, bytes(lo, hi), bytes(theirs.0, theirs.1));
        sendrecv(t, peer, mine, peer, inc, tag).await?;
        (lo, hi) = (lo.min(theirs.0), hi.max(theirs.1));
        dist <<= 1;
    }
    Ok(())
}

/// Bruck's allgather: each rank keeps the blocks it has in a scratch
/// buffer starting with its own; in round `k` (distance `d = 2^k`) it
/// sends its first `min(d, n − d)` blocks to `rank − d` and appends as many
/// from `rank + d`. After `⌈log2 n⌉` rounds the scratch holds blocks
/// `rank, rank + 1, …` and is rotated into `recv`.
///
/// Any size and length.
///
/// # Errors
///
/// As [`allgather_linear`].
pub async fn allgather_bruck<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: SendBuf<'_>,
    recv_buf: &mut [u8],
    tag: i32,
) -> Result<(), CollError> {
    let (rank, size) = check_comm(t, None)?;
    let len = place_own(send_buf, recv_buf, rank, size)?;
    let own = rank as usize * len;
    let mut scratch = vec![0u8; recv_buf.len()];
    scratch[..len].copy_from_slice(&recv_buf[own..own + len]);
    let mut dist = 1u32;
    while dist < size {
        let blocks = dist.min(size - dist) as usize;
        let to = ring_sub(rank, u64::from(dist), size);
        let from = ring_add(rank, u64::from(dist), size);
        let start = dist as usize * len;
        let (out, inc) = split_pair(&mut scratch, 0..blocks * len, start..start + blocks * len);
        sendrecv(t, to, out, from, inc, tag).await?;
        dist = dist.saturating_mul(2);
    }
    let split = recv_buf.len() - own;
    recv_buf[own..].copy_from_slice(&scratch[..split]);
    recv_buf[..own].copy_from_slice(&scratch[split..]);
    Ok(())
}

/// Ring allgatherv: rank `i` contributes `counts[i]` bytes, placed at byte
/// offset `displs[i]` of every rank's `recv` (`counts` and `displs` are
/// the same at every rank, one per rank, and their regions must not
/// overlap; bytes outside them are left alone). `n − 1` ring steps as in
/// [`allgather_ring`].
///
/// Any size and counts.
///
/// # Errors
///
/// [`CollError::InvalidArgument`] (counts or displacements that do not fit
/// `recv` or overlap, a send length other than `counts[rank]`); the
/// transport's.
pub async fn allgatherv_ring<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: SendBuf<'_>,
    recv_buf: &mut [u8],
    counts: &[usize],
    displs: &[usize],
    tag: i32,
) -> Result<(), CollError> {
    let (rank, size) = check_comm(t, None)?;
    let blocks = ranges_v(counts, displs, size, recv_buf.len(), "receive")?;
    // Checks that the regions are disjoint.
    disjoint_mut(recv_buf, &blocks, "receive")?;
    if let SendBuf::Buf(own) = send_buf {
        let slot = &mut recv_buf[blocks[rank as usize].clone()];
        if own.len() != slot.len() {
            return invalid(format!(
                "rank {rank} sends {} bytes but the counts say {}",
                own.len(),
                slot.len()
            ));
        }
        slot.copy_from_slice(own);
    }
    ring_allgather_blocks(t, recv_buf, &blocks, rank, tag).await
}

/// Checks the lengths and copies this rank's contribution to block `rank`
/// of `recv` (unless `IN_PLACE`); returns the block length.
fn place_own(
    send_buf: SendBuf<'_>,
    recv_buf: &mut [u8],
    rank: u32,
    size: u32,
) -> Result<usize, CollError> {
    let len = block_len(send_buf, recv_buf.len(), size)?;
    if let SendBuf::Buf(own) = send_buf {
        let at = mul(rank as usize, len, "the receive offset")?;
        recv_buf[at..at + len].copy_from_slice(own);
    }
    Ok(len)
}
