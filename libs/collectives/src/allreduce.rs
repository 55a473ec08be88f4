//! `MPI_Allreduce`: every rank gets `x0 op x1 op … op x(n−1)`.
//!
//! Arguments of every allreduce: `send` is this rank's input (`count`
//! elements) and `recv` (the same length) receives the result.
//! `SendBuf::InPlace` (`MPI_IN_PLACE`, allowed at every rank): the input
//! is taken from `recv`, which the result overwrites.

use std::ops::Range;

use crate::bcast::{bcast_binomial, ring_allgather_blocks};
use crate::buffers::{check_comm, even_blocks, split_pair, SendBuf};
use crate::error::{invalid, CollError};
use crate::reduce::binomial_to;
use crate::reduction::Reduction;
use crate::topo::{prev_power_of_two, ring_add, ring_sub};
use crate::transport::{recv, send, sendrecv, Transport};

/// Allreduce by a binomial reduce to rank 0 (order-preserving: subtrees
/// rooted at 0 are ranges of ranks) followed by a binomial broadcast.
/// `2⌈log2 n⌉` rounds of whole messages.
///
/// Any size and count; correct for non-commutative operations.
///
/// # Errors
///
/// [`CollError::InvalidArgument`] (buffers of different lengths or not
/// whole elements), [`CollError::Reduce`] for an operation that does not
/// apply to its type, the user operation's and the transport's.
pub async fn allreduce_reduce_bcast<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: SendBuf<'_>,
    recv_buf: &mut [u8],
    op: &mut Reduction<'_>,
    tag: i32,
) -> Result<(), CollError> {
    place_input(t, send_buf, recv_buf, op)?;
    if let Some(result) = binomial_to(t, recv_buf.to_vec(), 0, op, tag).await? {
        recv_buf.copy_from_slice(&result);
    }
    bcast_binomial(t, recv_buf, 0, tag).await
}

/// Allreduce by recursive doubling: in round `k` each rank exchanges its
/// whole partial result with the rank whose number differs in bit `k` and
/// folds it in, the lower ranks' partial as the left operand, so every
/// partial is a range of ranks in rank order. For a size that is not a
/// power of two `p`, the first `2(n − p)` ranks first pair up (rank `2i`
/// sends its input to `2i + 1`, which folds it in as the left operand and
/// takes part for both) and get the result back at the end. `⌈log2 n⌉`
/// rounds (plus 2 for the extra ranks) of whole messages: good for short
/// messages.
///
/// Any size and count; correct for non-commutative operations.
///
/// # Errors
///
/// As [`allreduce_reduce_bcast`].
pub async fn allreduce_recursive_doubling<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: SendBuf<'_>,
    recv_buf: &mut [u8],
    op: &mut Reduction<'_>,
    tag: i32,
) -> Result<(), CollError> {
    place_input(t, send_buf, recv_buf, op)?;
    recursive_doubling_in_place(t, recv_buf, op, tag).await
}

/// Ring allreduce: the count is cut into `n` blocks of whole elements (as
/// evenly as possible; counts need not divide), a ring reduce-scatter
/// (`n − 1` steps, each rank passing one block to `rank + 1` and folding in
/// the one from `rank − 1`) leaves block `r` reduced at rank `r`, and a ring
/// allgather (`n − 1` steps) spreads the blocks. Each rank sends about
/// `2 × len` bytes whatever `n`: good for long messages.
///
/// Any size and count. Commutative operations only (the ring folds
/// contributions out of rank order): a non-commutative operation runs
/// [`allreduce_recursive_doubling`] instead.
///
/// # Errors
///
/// As [`allreduce_reduce_bcast`].
pub async fn allreduce_ring<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: SendBuf<'_>,
    recv_buf: &mut [u8],
    op: &mut Reduction<'_>,
    tag: i32,
) -> Result<(), CollError> {
    allreduce_segmented_ring(t, send_buf, recv_buf, op, 0, tag).await
}

/// [`allreduce_ring`] with the reduce-scatter cut into phases: each block
/// is cut into segments of `segment_size` bytes (rounded down to whole
/// elements, at least one; `0`: no segmentation) and phase `p` runs the
/// ring reduce-scatter over segment `p` of every block, so the scratch
/// buffer and each message are at most one segment. The allgather then
/// moves whole blocks.
///
/// Any size and count. Commutative operations only: a non-commutative one
/// runs [`allreduce_recursive_doubling`] instead.
///
/// # Errors
///
/// As [`allreduce_reduce_bcast`].
pub async fn allreduce_segmented_ring<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: SendBuf<'_>,
    recv_buf: &mut [u8],
    op: &mut Reduction<'_>,
    segment_size: usize,
    tag: i32,
) -> Result<(), CollError> {
    let count = place_input(t, send_buf, recv_buf, op)?;
    if !op.is_commutative() {
        return recursive_doubling_in_place(t, recv_buf, op, tag).await;
    }
    let (rank, size) = (t.rank(), t.size());
    let elem = op.elem_size();
    let blocks = even_blocks(count, size as usize, elem);
    let longest = blocks[0].len();
    let seg = if segment_size == 0 {
        longest.max(elem)
    } else {
        (segment_size / elem).max(1) * elem
    };
    let phases = longest.div_ceil(seg).max(1);
    for phase in 0..phases {
        let parts: Vec<Range<usize>> = blocks
            .iter()
            .map(|b| {
                let start = (b.start + phase * seg).min(b.end);
                start..(start + seg).min(b.end)
            })
            .collect();
        ring_reduce_scatter(t, recv_buf, &parts, op, tag).await?;
    }
    ring_allgather_blocks(t, recv_buf, &blocks, rank, tag).await
}

/// Rabenseifner's allreduce: a reduce-scatter by recursive halving (in
/// round `k` each rank sends half of its current range of blocks to the
/// rank at distance `p/2^(k+1)` and folds in the other half it gets back)
/// followed by an allgather by recursive doubling (the ranges grow back).
/// The count is cut into `p` blocks of whole elements, `p` the largest
/// power of two not above `n`; the extra ranks are folded in first and
/// served last as in [`allreduce_recursive_doubling`]. About `2 × len`
/// bytes per rank in `2 log2 p` rounds: good for long messages.
///
/// Any size and count. Commutative operations only: a non-commutative
/// one runs [`allreduce_recursive_doubling`] instead.
///
/// # Errors
///
/// As [`allreduce_reduce_bcast`].
pub async fn allreduce_rabenseifner<T: Transport + ?Sized>(
    t: &mut T,
    send_buf: SendBuf<'_>,
    recv_buf: &mut [u8],
    op: &mut Reduction<'_>,
    tag: i32,
) -> Result<(), CollError> {
    let count = place_input(t, send_buf, recv_buf, op)?;
    if !op.is_commutative() {
        return recursive_doubling_in_place(t, recv_buf, op, tag).await;
    }
    let folded = Folded::new(t.rank(), t.size());
    let Some(nr) = folded.enter(t, recv_buf, op, tag).await? else {
        return folded.leave(t, recv_buf, tag).await;
    };
    let p2 = folded.p2;
    let blocks = even_blocks(count, p2 as usize, op.elem_size());
    let bytes = |lo: u32, hi: u32| blocks[lo as usize].start..blocks[hi as usize - 1].end;
    let mut scratch = vec![0u8; bytes(0, p2.div_ceil(2).max(1)).len()];
    let (mut lo, mut hi) = (0u32, p2);
    let mut dist = p2 / 2;
    while dist >= 1 {
        let peer = folded.rank_of(nr ^ dist);
        let mid = lo + (hi - lo) / 2;
        let (keep, give) = if nr & dist == 0 {
            ((lo, mid), (mid, hi))
        } else {
            ((mid, hi), (lo, mid))
        };
        let keep_bytes = bytes(keep.0, keep.1);
        let part = &mut scratch[..keep_bytes.len()];
        sendrecv(t, peer, &recv_buf[bytes(give.0, give.1)], peer, part, tag).await?;
        op.combine(part, &mut recv_buf[keep_bytes])?;
        (lo, hi) = keep;
        dist /= 2;
    }
    let mut dist = 1;
    while dist < p2 {
        let peer = folded.rank_of(nr ^ dist);
        let theirs = if nr & dist == 0 {
            (hi, hi + dist)
        } else {
            (lo - dist, lo)
        };
        let (mine, inc) = split_pair(recv_buf, bytes(lo, hi), bytes(theirs.0, theirs.1));
        sendrecv(t, peer, mine, peer, inc, tag).await?;
        (lo, hi) = (lo.min(theirs.0), hi.max(theirs.1));
        dist *= 2;
    }
    folded.leave(t, recv_buf, tag).await
}

/// Copies the input into `recv` (unless `IN_PLACE`), checks the operation
/// and lengths, returns the element count.
pub(crate) fn place_input<T: Transport + ?Sized>(
    t: &T,
    send_buf: SendBuf<'_>,
    recv_buf: &mut [u8],
    op: &Reduction<'_>,
) -> Result<usize, CollError> {
    check_comm(t, None)?;
    if let SendBuf::Buf(input) = send_buf {
        if input.len() != recv_buf.len() {
            return invalid(format!(
                "the send buffer has {} bytes but the receive buffer {}",
                input.len(),
                recv_buf.len()
            ));
        }
        op.count_of(input.len(), "send buffer")?;
        recv_buf.copy_from_slice(input);
    }
    op.count_of(recv_buf.len(), "receive buffer")
}

/// Recursive doubling over `buf`, which holds this rank's input and
/// receives the result.
pub(crate) async fn recursive_doubling_in_place<T: Transport + ?Sized>(
    t: &mut T,
    buf: &mut [u8],
    op: &mut Reduction<'_>,
    tag: i32,
) -> Result<(), CollError> {
    let folded = Folded::new(t.rank(), t.size());
    let Some(nr) = folded.enter(t, buf, op, tag).await? else {
        return folded.leave(t, buf, tag).await;
    };
    let mut acc = t.scratch(buf.len());
    acc.copy_from_slice(buf);
    let mut scratch = t.scratch(acc.len());
    let mut mask = 1;
    while mask < folded.p2 {
        let peer_nr = nr ^ mask;
        let peer = folded.rank_of(peer_nr);
        sendrecv(t, peer, &acc, peer, &mut scratch, tag).await?;
        if peer_nr < nr {
            op.combine(&scratch, &mut acc)?;
        } else {
            op.fold_high_into_low(&mut acc, &mut scratch)?;
        }
        mask <<= 1;
    }
    buf.copy_from_slice(&acc);
    t.recycle(acc);
    t.recycle(scratch);
    folded.leave(t, buf, tag).await
}

/// A size folded to the largest power of two `p2 ≤ n`: the first
/// `2 × extra` ranks pair up (`2i` gives its input to `2i + 1`), and the
/// remaining ranks are the "new ranks" `0..p2` in rank order (so a range of
/// new ranks is a range of ranks).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Folded {
    rank: u32,
    /// The power of two.
    pub(crate) p2: u32,
    /// `n − p2`.
    extra: u32,
}

impl Folded {
    pub(crate) fn new(rank: u32, size: u32) -> Self {
        let p2 = prev_power_of_two(size);
        Folded {
            rank,
            p2,
            extra: size - p2,
        }
    }

    /// The rank that plays new rank `nr`.
    pub(crate) fn rank_of(self, nr: u32) -> u32 {
        if nr < self.extra {
            2 * nr + 1
        } else {
            nr + self.extra
        }
    }

    fn paired(self) -> bool {
        u64::from(self.rank) < 2 * u64::from(self.extra)
    }

    /// The first step: a rank `2i` below `2 × extra` sends `buf` to `2i + 1`
    /// and gets `None`; `2i + 1` folds it into `buf` (`buf = x(2i) op buf`).
    /// Returns this rank's new rank.
    pub(crate) async fn enter<T: Transport + ?Sized>(
        self,
        t: &mut T,
        buf: &mut [u8],
        op: &mut Reduction<'_>,
        tag: i32,
    ) -> Result<Option<u32>, CollError> {
        if !self.paired() {
            return Ok(Some(self.rank - self.extra));
        }
        if self.rank & 1 == 0 {
            send(t, self.rank + 1, tag, buf).await?;
            return Ok(None);
        }
        let mut lower = t.scratch(buf.len());
        recv(t, self.rank - 1, tag, &mut lower).await?;
        op.combine(&lower, buf)?;
        t.recycle(lower);
        Ok(Some(self.rank / 2))
    }

    /// The last step: `2i + 1` sends the result in `buf` to `2i`.
    pub(crate) async fn leave<T: Transport + ?Sized>(
        self,
        t: &mut T,
        buf: &mut [u8],
        tag: i32,
    ) -> Result<(), CollError> {
        if !self.paired() {
            return Ok(());
        }
        if self.rank & 1 == 0 {
            recv(t, self.rank + 1, tag, buf).await
        } else {
            send(t, self.rank - 1, tag, buf).await
        }
    }
}

/// Ring reduce-scatter over `blocks` of `buf` (one per rank): in step `s`
/// rank `r` sends block `r − s − 1` to `r + 1` and folds block `r − s − 2`
/// from `r − 1` into its own; after `n − 1` steps block `r` of rank `r`
/// holds the reduction of every rank's block `r` (other blocks hold
/// partial results). Folds out of rank order: commutative operations only.
pub(crate) async fn ring_reduce_scatter<T: Transport + ?Sized>(
    t: &mut T,
    buf: &mut [u8],
    blocks: &[Range<usize>],
    op: &mut Reduction<'_>,
    tag: i32,
) -> Result<(), CollError> {
    let (rank, size) = (t.rank(), t.size());
    let (next, prev) = (ring_add(rank, 1, size), ring_sub(rank, 1, size));
    let longest = blocks.iter().map(|b| b.len()).max().unwrap_or(0);
    let mut scratch = t.scratch(longest);
    for step in 0..u64::from(size) - 1 {
        let out = blocks[ring_sub(rank, step + 1, size) as usize].clone();
        let inc = blocks[ring_sub(rank, step + 2, size) as usize].clone();
        let part = &mut scratch[..inc.len()];
        sendrecv(t, next, &buf[out], prev, part, tag).await?;
        op.combine(part, &mut buf[inc])?;
    }
    t.recycle(scratch);
    Ok(())
}
