//! The send-side and receive-side buffer arguments (`MPI_IN_PLACE`) and the
//! buffer arithmetic the algorithms share.

use std::ops::Range;

use crate::error::{invalid, CollError};
use crate::transport::Transport;

/// The send-side buffer of a collective: the data, or `MPI_IN_PLACE`.
///
/// What `InPlace` means depends on the operation (the MPI meaning, see
/// each function and the [crate documentation](crate#mpi_in_place)):
/// in general this rank's input is already in the receive buffer (at the
/// place its own result or contribution goes).
#[derive(Debug, Clone, Copy)]
pub enum SendBuf<'a> {
    /// `MPI_IN_PLACE`: the input is taken from the receive buffer.
    InPlace,
    /// An ordinary send buffer.
    Buf(&'a [u8]),
}

/// The receive-side buffer of a collective where MPI allows
/// `MPI_IN_PLACE` on the receive side (the root of scatter and scatterv).
#[derive(Debug)]
pub enum RecvBuf<'a> {
    /// `MPI_IN_PLACE`: the root keeps its own block where it is in the
    /// send buffer and receives nothing.
    InPlace,
    /// An ordinary receive buffer.
    Buf(&'a mut [u8]),
}

/// Checks the transport's rank and size, and `root` if given; returns
/// `(rank, size)`.
pub(crate) fn check_comm<T: Transport + ?Sized>(
    t: &T,
    root: Option<u32>,
) -> Result<(u32, u32), CollError> {
    let (rank, size) = (t.rank(), t.size());
    if size == 0 || rank >= size {
        return invalid(format!("the transport says rank {rank} of {size}"));
    }
    if let Some(root) = root {
        if root >= size {
            return invalid(format!(
                "root {root} is not a rank of a communicator of {size}"
            ));
        }
    }
    Ok((rank, size))
}

/// The number of whole elements of `elem_size` bytes in `len` bytes.
pub(crate) fn whole_elements(len: usize, elem_size: usize, what: &str) -> Result<usize, CollError> {
    if elem_size == 0 {
        return invalid("the element size of the reduction is 0");
    }
    if len.checked_rem(elem_size) != Some(0) {
        return invalid(format!(
            "the {what} has {len} bytes, not a whole number of {elem_size}-byte elements"
        ));
    }
    Ok(len / elem_size)
}

/// `a × b`, or an error naming `what` on overflow.
pub(crate) fn mul(a: usize, b: usize, what: &str) -> Result<usize, CollError> {
    a.checked_mul(b)
        .ok_or_else(|| CollError::InvalidArgument(format!("{what} overflows")))
}

/// Splits `count` items into `parts` blocks as evenly as possible (the first
/// `count % parts` blocks have one more) and returns each block's range in
/// units of `unit` bytes.
pub(crate) fn even_blocks(count: usize, parts: usize, unit: usize) -> Vec<Range<usize>> {
    let (base, extra) = (count / parts, count % parts);
    let mut start = 0;
    (0..parts)
        .map(|i| {
            let len = (base + usize::from(i < extra)) * unit;
            let range = start..start + len;
            start += len;
            range
        })
        .collect()
}

/// Consecutive ranges of the given lengths, starting at 0.
pub(crate) fn consecutive(lens: impl IntoIterator<Item = usize>) -> Vec<Range<usize>> {
    let mut start = 0;
    lens.into_iter()
        .map(|len| {
            let range = start..start + len;
            start += len;
            range
        })
        .collect()
}

/// `buf[send]` to read and `buf[recv]` to write, for disjoint ranges (an
/// empty range is disjoint from everything).
///
/// # Panics
///
/// If the ranges overlap or leave `buf` (a bug in an algorithm).
pub(crate) fn split_pair(
    buf: &mut [u8],
    send: Range<usize>,
    recv: Range<usize>,
) -> (&[u8], &mut [u8]) {
    if recv.is_empty() {
        return (&buf[send], &mut []);
    }
    if send.is_empty() {
        return (&[], &mut buf[recv]);
    }
    if send.end <= recv.start {
        let (low, high) = buf.split_at_mut(recv.start);
        (&low[send], &mut high[..recv.len()])
    } else {
        assert!(
            recv.end <= send.start,
            "overlapping ranges {send:?} and {recv:?}"
        );
        let (low, high) = buf.split_at_mut(send.start);
        (&high[..send.len()], &mut low[recv])
    }
}

/// Disjoint mutable pieces `buf[range]` for each of `ranges`, in the
/// order of `ranges`. Empty ranges are allowed anywhere (they get an empty
/// slice).
///
/// # Errors
///
/// When a range leaves `buf` or two non-empty ranges overlap (MPI forbids
/// writing a location of a receive buffer twice); `what` names the buffer.
pub(crate) fn disjoint_mut<'b>(
    buf: &'b mut [u8],
    ranges: &[Range<usize>],
    what: &str,
) -> Result<Vec<&'b mut [u8]>, CollError> {
    let mut order: Vec<usize> = (0..ranges.len())
        .filter(|&i| !ranges[i].is_empty())
        .collect();
    order.sort_by_key(|&i| ranges[i].start);
    let mut pieces: Vec<&'b mut [u8]> = ranges.iter().map(|_| <&mut [u8]>::default()).collect();
    let mut rest = buf;
    let mut offset = 0;
    for i in order {
        let range = &ranges[i];
        if range.start < offset {
            return invalid(format!(
                "the {what} regions of ranks overlap (bytes {}..{} of rank {i} and an earlier one)",
                range.start, range.end
            ));
        }
        if range.end > offset + rest.len() {
            return invalid(format!(
                "the {what} region {}..{} of rank {i} leaves the buffer of {} bytes",
                range.start,
                range.end,
                offset + rest.len()
            ));
        }
        let tail = std::mem::take(&mut rest);
        let (_, tail) = tail.split_at_mut(range.start - offset);
        let (piece, tail) = tail.split_at_mut(range.len());
        pieces[i] = piece;
        rest = tail;
        offset = range.end;
    }
    Ok(pieces)
}

/// Byte ranges from `counts` and `displs` (both in bytes, one per rank),
/// checked to have one entry per rank and to fit in `len` bytes.
pub(crate) fn ranges_v(
    counts: &[usize],
    displs: &[usize],
    size: u32,
    len: usize,
    what: &str,
) -> Result<Vec<Range<usize>>, CollError> {
    if counts.len() != size as usize || displs.len() != size as usize {
        return invalid(format!(
            "the {what} counts and displacements need one entry per rank ({size}), not {} and {}",
            counts.len(),
            displs.len()
        ));
    }
    counts
        .iter()
        .zip(displs)
        .enumerate()
        .map(|(i, (&count, &displ))| match displ.checked_add(count) {
            Some(end) if count == 0 || end <= len => Ok(displ..end),
            _ => invalid(format!(
                "the {what} region of rank {i} ({count} bytes at {displ}) leaves the buffer of {len} bytes"
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_blocks_cover_everything() {
        assert_eq!(even_blocks(7, 3, 2), vec![0..6, 6..10, 10..14]);
        assert_eq!(even_blocks(1, 3, 4), vec![0..4, 4..4, 4..4]);
        assert_eq!(even_blocks(0, 2, 4), vec![0..0, 0..0]);
    }

    #[test]
    fn split_pair_both_ways() {
        let mut buf = [0u8, 1, 2, 3, 4, 5];
        let (s, r) = split_pair(&mut buf, 4..6, 0..2);
        assert_eq!(s, &[4, 5]);
        r.copy_from_slice(&[9, 9]);
        let (s, r) = split_pair(&mut buf, 0..2, 3..4);
        assert_eq!(s, &[9, 9]);
        assert_eq!(r, &[3]);
        let (s, r) = split_pair(&mut buf, 2..2, 2..2);
        assert!(s.is_empty() && r.is_empty());
    }

    #[test]
    fn disjoint_mut_orders_and_rejects_overlap() {
        let mut buf = [0u8; 10];
        let pieces = disjoint_mut(&mut buf, &[6..8, 0..3, 3..3, 3..6], "test").unwrap();
        assert_eq!(
            pieces.iter().map(|p| p.len()).collect::<Vec<_>>(),
            vec![2, 3, 0, 3]
        );
        assert!(disjoint_mut(&mut buf, &[0..4, 3..5], "test").is_err());
        assert!(disjoint_mut(&mut buf, &[0..1, 8..11], "test").is_err());
    }
}
