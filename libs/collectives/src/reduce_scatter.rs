//! `MPI_Reduce_scatter_block` and `MPI_Reduce_scatter`: the element-wise
//! reduction of every rank's input vector, cut into consecutive blocks,
//! block `i` to rank `i`.
//!
//! `send` is this rank's input: the whole vector (`n × count` elements for
//! the block variants, `sum(counts)` elements otherwise); `recv` receives
//! this rank's block (`count` or `counts[rank]` elements).
//! `SendBuf::InPlace` (`MPI_IN_PLACE`, allowed at every rank): the input
//! vector is taken from `recv`, which must hold the whole vector, and the
//! result goes to its start (the first `count` or `counts[rank]`
//! elements; the rest of `recv` is left with unspecified contents).

use std::ops::Range;

use crate::allreduce::ring_reduce_scatter;
use crate::buffers::{check_comm, consecutive, mul, SendBuf};
use crate::error::{invalid, CollError};
use crate::reduce::binomial_to;
use crate::reduction::Reduction;
use crate::transport::{exchange, recv, Transport};

/// Reduce-scatter-block by a binomial reduce of the whole vector to rank 0
/// (order-preserving) and a linear scatter of the blocks from rank 0.
/// `recv` has `count` elements (`n × count` with `IN_PLACE`), `send`
/// `n × count`.
///
/// Any size and count; correct for non-commutative operations.
///
/// # Errors
///
/// [`CollError::InvalidArgument`] (buffers of inconsistent lengths or not
/// whole elements), [`CollError::Reduce`] for an operation that does not
/// apply to its type, the user operation's and the transport's.
pub async fn reduce_scatter_block_via_reduce<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: SendBuf<'_>,
    recv_buf: &mut [u8],
    op: &mut Reduction<'_>,
    tag: i32,
) -> Result<(), CollError> {
    let blocks = block_layout(t, send_buf, recv_buf, op)?;
    via_reduce(t, send_buf, recv_buf, &blocks, op, tag).await
}

/// Reduce-scatter-block by a ring reduce-scatter over the whole vector
/// (`n − 1` steps of one block each, as the first half of
/// [`allreduce_ring`](crate::allreduce_ring)). Lengths as in
/// [`reduce_scatter_block_via_reduce`].
///
/// Any size and count. Commutative operations only: a non-commutative
/// one runs [`reduce_scatter_block_via_reduce`] instead.
///
/// # Errors
///
/// As [`reduce_scatter_block_via_reduce`].
pub async fn reduce_scatter_block_ring<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: SendBuf<'_>,
    recv_buf: &mut [u8],
    op: &mut Reduction<'_>,
    tag: i32,
) -> Result<(), CollError> {
    let blocks = block_layout(t, send_buf, recv_buf, op)?;
    ring(t, send_buf, recv_buf, &blocks, op, tag).await
}

/// Reduce-scatter by a binomial reduce of the whole vector to rank 0
/// (order-preserving) and a linear scatterv from rank 0: rank `i` gets
/// `counts[i]` elements (`counts` in elements, one per rank, the same at
/// every rank). `send` has `sum(counts)` elements; `recv` has
/// `counts[rank]` (`sum(counts)` with `IN_PLACE`).
///
/// Any size and counts; correct for non-commutative operations.
///
/// # Errors
///
/// As [`reduce_scatter_block_via_reduce`], and for `counts` without one
/// entry per rank.
pub async fn reduce_scatter_via_reduce<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: SendBuf<'_>,
    recv_buf: &mut [u8],
    counts: &[usize],
    op: &mut Reduction<'_>,
    tag: i32,
) -> Result<(), CollError> {
    let blocks = counts_layout(t, send_buf, recv_buf, counts, op)?;
    via_reduce(t, send_buf, recv_buf, &blocks, op, tag).await
}

/// Reduce-scatter by a ring over blocks of `counts[i]` elements (as
/// [`reduce_scatter_block_ring`]). Lengths as in
/// [`reduce_scatter_via_reduce`].
///
/// Any size and counts. Commutative operations only: a non-commutative
/// one runs [`reduce_scatter_via_reduce`] instead.
///
/// # Errors
///
/// As [`reduce_scatter_via_reduce`].
pub async fn reduce_scatter_ring<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: SendBuf<'_>,
    recv_buf: &mut [u8],
    counts: &[usize],
    op: &mut Reduction<'_>,
    tag: i32,
) -> Result<(), CollError> {
    let blocks = counts_layout(t, send_buf, recv_buf, counts, op)?;
    ring(t, send_buf, recv_buf, &blocks, op, tag).await
}

async fn via_reduce<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: SendBuf<'_>,
    recv_buf: &mut [u8],
    blocks: &[Range<usize>],
    op: &mut Reduction<'_>,
    tag: i32,
) -> Result<(), CollError> {
    let rank = t.rank();
    let mine = blocks[rank as usize].len();
    let whole = input_vector(send_buf, recv_buf);
    match binomial_to(t, whole, 0, op, tag).await? {
        Some(result) => {
            let sends: Vec<(u32, &[u8])> = (1..t.size())
                .map(|r| (r, &result[blocks[r as usize].clone()]))
                .collect();
            recv_buf[..mine].copy_from_slice(&result[blocks[0].clone()]);
            exchange(t, tag, &sends, &mut []).await
        }
        None => recv(t, 0, tag, &mut recv_buf[..mine]).await,
    }
}

async fn ring<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: SendBuf<'_>,
    recv_buf: &mut [u8],
    blocks: &[Range<usize>],
    op: &mut Reduction<'_>,
    tag: i32,
) -> Result<(), CollError> {
    if !op.is_commutative() {
        return via_reduce(t, send_buf, recv_buf, blocks, op, tag).await;
    }
    let mine = blocks[t.rank() as usize].clone();
    let mut whole = input_vector(send_buf, recv_buf);
    ring_reduce_scatter(t, &mut whole, blocks, op, tag).await?;
    recv_buf[..mine.len()].copy_from_slice(&whole[mine]);
    Ok(())
}

/// A copy of the whole input vector.
fn input_vector(send_buf: SendBuf<'_>, recv_buf: &[u8]) -> Vec<u8> {
    match send_buf {
        SendBuf::Buf(input) => input.to_vec(),
        SendBuf::InPlace => recv_buf.to_vec(),
    }
}

/// Byte ranges of the blocks for the block variants, after checking the
/// lengths.
fn block_layout<T: Transport + ?Sized>(
    t: &T,
    send_buf: SendBuf<'_>,
    recv_buf: &[u8],
    op: &Reduction<'_>,
) -> Result<Vec<Range<usize>>, CollError> {
    let (_, size) = check_comm(t, None)?;
    let block = match send_buf {
        SendBuf::Buf(_) => recv_buf.len(),
        SendBuf::InPlace => recv_buf.len() / size as usize,
    };
    op.count_of(block, "block")?;
    let total = mul(block, size as usize, "the input length")?;
    check_lengths(send_buf, recv_buf, total, block)?;
    Ok(consecutive(vec![block; size as usize]))
}

/// Byte ranges of the blocks of `counts` elements, after checking the
/// lengths.
fn counts_layout<T: Transport + ?Sized>(
    t: &T,
    send_buf: SendBuf<'_>,
    recv_buf: &[u8],
    counts: &[usize],
    op: &Reduction<'_>,
) -> Result<Vec<Range<usize>>, CollError> {
    let (rank, size) = check_comm(t, None)?;
    op.validate()?;
    if counts.len() != size as usize {
        return invalid(format!("{} counts for {size} ranks", counts.len()));
    }
    let elem = op.elem_size();
    let lens = counts
        .iter()
        .map(|&c| mul(c, elem, "a count"))
        .collect::<Result<Vec<_>, _>>()?;
    let total = lens
        .iter()
        .try_fold(0usize, |acc, &l| acc.checked_add(l))
        .ok_or_else(|| CollError::InvalidArgument("the counts overflow".into()))?;
    check_lengths(send_buf, recv_buf, total, lens[rank as usize])?;
    Ok(consecutive(lens))
}

/// `send` has `total` bytes and `recv` `mine`, or `recv` has `total` with
/// `IN_PLACE`.
fn check_lengths(
    send_buf: SendBuf<'_>,
    recv_buf: &[u8],
    total: usize,
    mine: usize,
) -> Result<(), CollError> {
    let ok = match send_buf {
        SendBuf::Buf(input) => input.len() == total && recv_buf.len() == mine,
        SendBuf::InPlace => recv_buf.len() == total,
    };
    if ok {
        Ok(())
    } else {
        let send_len = match send_buf {
            SendBuf::Buf(input) => input.len().to_string(),
            SendBuf::InPlace => "IN_PLACE".into(),
        };
        invalid(format!(
            "reduce-scatter buffers: send {send_len}, receive {} bytes; expected an input of {total} \
             bytes and a result of {mine}",
            recv_buf.len()
        ))
    }
}
