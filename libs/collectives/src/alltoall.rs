//! `MPI_Alltoall` and `MPI_Alltoallv`: block `j` of rank `i`'s send buffer
//! becomes block `i` of rank `j`'s receive buffer.
//!
//! `send` and `recv` have `n × len` bytes (`len` the block length).
//! `SendBuf::InPlace` (`MPI_IN_PLACE`, allowed at every rank): the blocks
//! to send are taken from `recv` and replaced by the blocks received (for
//! alltoallv, with `recv`'s counts and displacements; the send counts and
//! displacements are ignored). In-place runs work on a copy of `recv`.

use std::borrow::Cow;
use std::ops::Range;

use crate::buffers::{check_comm, consecutive, disjoint_mut, ranges_v, SendBuf};
use crate::error::{invalid, CollError};
use crate::topo::{ring_add, ring_sub};
use crate::transport::{exchange_with, sendrecv, Transport};

/// Linear alltoall: every rank posts all its receives and all its sends
/// at once (in ring order from `rank + 1`) and waits for everything.
/// `n − 1` messages per rank, all in flight together.
///
/// Any size and length.
///
/// # Errors
///
/// [`CollError::InvalidArgument`] (buffers that are not `n` blocks of one
/// length, send and receive lengths that differ); the transport's.
pub async fn alltoall_linear<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: SendBuf<'_>,
    recv_buf: &mut [u8],
    tag: i32,
) -> Result<(), CollError> {
    let (rank, size) = check_comm(t, None)?;
    let (input, len) = alltoall_input(send_buf, recv_buf, size)?;
    let ranges = consecutive(vec![len; size as usize]);
    linear_exchange(t, &input, &ranges, recv_buf, &ranges, rank, tag).await
}

/// Pairwise alltoall: in step `s = 1 … n − 1` each rank sends its block for
/// `rank + s` and receives the block of `rank − s` (one sendrecv per step),
/// so each rank has one message in flight at a time.
///
/// Any size and length.
///
/// # Errors
///
/// As [`alltoall_linear`].
pub async fn alltoall_pairwise<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: SendBuf<'_>,
    recv_buf: &mut [u8],
    tag: i32,
) -> Result<(), CollError> {
    let (rank, size) = check_comm(t, None)?;
    let (input, len) = alltoall_input(send_buf, recv_buf, size)?;
    let block = |r: u32| r as usize * len..(r as usize + 1) * len;
    if size == 1 {
        recv_buf.copy_from_slice(&input);
        return Ok(());
    }
    for step in 1..u64::from(size) {
        let to = ring_add(rank, step, size);
        let from = ring_sub(rank, step, size);
        if step == 1 {
            // The own block is copied while the first messages move.
            let mut pieces = disjoint_mut(recv_buf, &[block(from), block(rank)], "receive")?;
            let (theirs, mine) = pieces.split_at_mut(1);
            let (theirs, mine) = (&mut *theirs[0], &mut *mine[0]);
            exchange_with(
                t,
                tag,
                &[(to, &input[block(to)])],
                &mut [(from, theirs)],
                || {
                    mine.copy_from_slice(&input[block(rank)]);
                },
            )
            .await?;
            continue;
        }
        sendrecv(
            t,
            to,
            &input[block(to)],
            from,
            &mut recv_buf[block(from)],
            tag,
        )
        .await?;
    }
    Ok(())
}

/// Bruck's alltoall: the blocks are first rotated so that index `i` holds
/// the block for `rank + i`; in round `k` every block whose index has bit
/// `k` set is sent (packed into one message) to `rank + 2^k`, and the same
/// indices are replaced by the blocks from `rank − 2^k`. After `⌈log2 n⌉`
/// rounds index `i` holds the block from `rank − i`, which an inverse
/// rotation puts in place. Fewer, larger messages than the others
/// (each block travels up to `log2 n` times): good for short blocks.
///
/// Any size and length.
///
/// # Errors
///
/// As [`alltoall_linear`].
pub async fn alltoall_bruck<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: SendBuf<'_>,
    recv_buf: &mut [u8],
    tag: i32,
) -> Result<(), CollError> {
    let (rank, size) = check_comm(t, None)?;
    let (input, len) = alltoall_input(send_buf, recv_buf, size)?;
    let n = size as usize;
    let block = |i: usize| i * len..(i + 1) * len;
    // work[i] = the block for rank + i.
    let mut work = vec![0u8; input.len()];
    for i in 0..n {
        let dest = ring_add(rank, i as u64, size) as usize;
        work[block(i)].copy_from_slice(&input[block(dest)]);
    }
    let mut packed = Vec::new();
    let mut unpacked = Vec::new();
    let mut dist = 1usize;
    while dist < n {
        let moving: Vec<usize> = (0..n).filter(|i| i & dist != 0).collect();
        packed.clear();
        for &i in &moving {
            packed.extend_from_slice(&work[block(i)]);
        }
        unpacked.resize(packed.len(), 0);
        let to = ring_add(rank, dist as u64, size);
        let from = ring_sub(rank, dist as u64, size);
        sendrecv(t, to, &packed, from, &mut unpacked, tag).await?;
        for (k, &i) in moving.iter().enumerate() {
            work[block(i)].copy_from_slice(&unpacked[block(k)]);
        }
        dist <<= 1;
    }
    // work[i] now holds the block from rank − i.
    for j in 0..n {
        let i = ring_sub(rank, j as u64, size) as usize;
        recv_buf[block(j)].copy_from_slice(&work[block(i)]);
    }
    Ok(())
}

/// Linear alltoallv: rank `i` sends `send_counts[j]` bytes at byte offset
/// `send_displs[j]` of `send` to each rank `j`, and receives `recv_counts[j]`
/// bytes from rank `j` at offset `recv_displs[j]` of `recv` (all in bytes,
/// one per rank; `send_counts[j]` at rank `i` must equal `recv_counts[i]`
/// at rank `j`). All receives and sends are posted at once. Receive regions
/// must not overlap; bytes outside them are left alone. With `IN_PLACE`
/// the send layout is `recv_counts` and `recv_displs` and the send counts
/// and displacements are ignored.
///
/// Any size and counts.
///
/// # Errors
///
/// [`CollError::InvalidArgument`] (counts and displacements that leave the
/// buffers, overlapping receive regions, a send count to itself that
/// differs from the receive count from itself); the transport's
/// ([`CollError::Length`] when two ranks disagree on a count).
#[allow(clippy::too_many_arguments)]
pub async fn alltoallv_linear<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: SendBuf<'_>,
    send_counts: &[usize],
    send_displs: &[usize],
    recv_buf: &mut [u8],
    recv_counts: &[usize],
    recv_displs: &[usize],
    tag: i32,
) -> Result<(), CollError> {
    let (rank, size) = check_comm(t, None)?;
    let recv_ranges = ranges_v(recv_counts, recv_displs, size, recv_buf.len(), "receive")?;
    let (input, send_ranges) = match send_buf {
        SendBuf::Buf(input) => (
            Cow::Borrowed(input),
            ranges_v(send_counts, send_displs, size, input.len(), "send")?,
        ),
        SendBuf::InPlace => (Cow::Owned(recv_buf.to_vec()), recv_ranges.clone()),
    };
    linear_exchange(t, &input, &send_ranges, recv_buf, &recv_ranges, rank, tag).await
}

/// Copies `input[send[rank]]` into `recv[recv_ranges[rank]]`, then
/// exchanges everything else at once.
async fn linear_exchange<T: Transport + ?Sized>(
    t: &mut T,
    input: &[u8],
    send_ranges: &[Range<usize>],
    recv_buf: &mut [u8],
    recv_ranges: &[Range<usize>],
    rank: u32,
    tag: i32,
) -> Result<(), CollError> {
    let size = t.size();
    let pieces = disjoint_mut(recv_buf, recv_ranges, "receive")?;
    let me = rank as usize;
    let own = &input[send_ranges[me].clone()];
    if own.len() != pieces[me].len() {
        return invalid(format!(
            "rank {rank} sends itself {} bytes but receives {} from itself",
            own.len(),
            pieces[me].len()
        ));
    }
    let peers: Vec<u32> = (1..u64::from(size))
        .map(|d| ring_add(rank, d, size))
        .collect();
    let sends: Vec<(u32, &[u8])> = peers
        .iter()
        .map(|&r| (r, &input[send_ranges[r as usize].clone()]))
        .collect();
    let mut slots: Vec<Option<&mut [u8]>> = pieces.into_iter().map(Some).collect();
    let mine = slots[me].take();
    let mut recvs: Vec<(u32, &mut [u8])> = peers
        .iter()
        .rev()
        .filter_map(|&r| slots[r as usize].take().map(|piece| (r, piece)))
        .collect();
    // The own block is copied while the messages move.
    exchange_with(t, tag, &sends, &mut recvs, || {
        if let Some(piece) = mine {
            piece.copy_from_slice(own);
        }
    })
    .await
}

/// The data to send (a copy of `recv` for `IN_PLACE`) and the block length,
/// after checking that both buffers hold `size` blocks of one length.
fn alltoall_input<'s>(
    send_buf: SendBuf<'s>,
    recv_buf: &[u8],
    size: u32,
) -> Result<(Cow<'s, [u8]>, usize), CollError> {
    let input = match send_buf {
        SendBuf::Buf(input) => Cow::Borrowed(input),
        SendBuf::InPlace => Cow::Owned(recv_buf.to_vec()),
    };
    if input.len() != recv_buf.len() || recv_buf.len().checked_rem(size as usize) != Some(0) {
        return invalid(format!(
            "alltoall buffers of {} and {} bytes are not {size} blocks of one length each",
            input.len(),
            recv_buf.len()
        ));
    }
    Ok((input, recv_buf.len() / size as usize))
}
