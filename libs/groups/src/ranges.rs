//! Rank ranges: the `(first, last, stride)` triplets of
//! `MPI_Group_range_incl` and `MPI_Group_range_excl` (MPI 3.1 §6.3.2),
//! expanded to the list of ranks they name.

use crate::bits::Bits;
use crate::error::{GroupError, RangeAt};

/// The ranks the triplets `ranges` name in a group of `size` processes, in
/// order: for each triplet `(first, last, stride)`, the ranks `first`,
/// `first + stride`, … up to `first + ⌊(last − first) / stride⌋ · stride`
/// (so `last` itself only when the stride lands on it).
///
/// `first == last` names one rank, whatever the (non-zero) stride. `last`
/// need not be a rank of the group when the stride never reaches it:
/// `(0, 10, 4)` in a group of 10 names 0, 4 and 8. `MPI_Group_range_incl`
/// is `MPI_Group_incl` of this list, `MPI_Group_range_excl` is
/// `MPI_Group_excl` of it. Takes O(`size` / 8) bytes for the set of ranks
/// already named, plus the list.
///
/// # Errors
///
/// The first problem found, scanning the triplets in order:
/// - [`GroupError::ZeroStride`]: a stride of 0;
/// - [`GroupError::WrongDirection`]: `first < last` with a negative stride,
///   or `first > last` with a positive one (MPI leaves this undefined; we
///   refuse it rather than guess, as Open MPI and MPICH do);
/// - [`GroupError::RangeOutOfRange`]: a computed rank is not in
///   `0..size` (the error names the first such rank);
/// - [`GroupError::RangeDuplicate`]: a rank computed by two triplets.
pub fn expand_ranges(ranges: &[(i32, i32, i32)], size: u32) -> Result<Vec<u32>, GroupError> {
    let mut seen = Bits::new(size as usize);
    let mut out = Vec::new();
    for (index, &triplet) in ranges.iter().enumerate() {
        let range = RangeAt::new(index, triplet);
        let (first, end) = endpoints(range, size)?;
        let stride = i64::from(range.stride);
        let mut rank = i64::from(first);
        loop {
            // In 0..size (checked by `endpoints`), so it fits a u32.
            let r = rank as u32;
            if seen.test_and_set(r as usize) {
                let earlier = ranges[..index]
                    .iter()
                    .enumerate()
                    .map(|(i, &t)| RangeAt::new(i, t))
                    .find(|&e| computes(e, r))
                    .unwrap_or(range);
                return Err(GroupError::RangeDuplicate {
                    range,
                    rank: r as i32,
                    earlier,
                });
            }
            out.push(r);
            if rank == i64::from(end) {
                break;
            }
            rank += stride;
        }
    }
    Ok(out)
}

/// The first and the last rank a triplet computes, both checked to be in
/// `0..size`; or why the triplet is invalid.
fn endpoints(range: RangeAt, size: u32) -> Result<(i32, i32), GroupError> {
    let RangeAt {
        first,
        last,
        stride,
        ..
    } = range;
    if stride == 0 {
        return Err(GroupError::ZeroStride { range });
    }
    if (first < last && stride < 0) || (first > last && stride > 0) {
        return Err(GroupError::WrongDirection { range });
    }
    let span = i64::from(last) - i64::from(first);
    let stride64 = i64::from(stride);
    // Same signs (or span 0), so truncating division is the floor.
    let end = i64::from(first) + span / stride64 * stride64;
    // Between first and last, so it fits an i32.
    let end = end as i32;
    let outside = |r: i64| r < 0 || r >= i64::from(size);
    let (first64, end64) = (i64::from(first), i64::from(end));
    let bad = if outside(first64) {
        Some(first64)
    } else if outside(end64) {
        // The ranks move monotonically from `first` (inside) to `end`
        // (outside): report the first one that leaves the group.
        Some(if stride64 > 0 {
            let steps = (i64::from(size) - first64 + stride64 - 1) / stride64;
            first64 + steps * stride64
        } else {
            let steps = first64 / -stride64 + 1;
            first64 + steps * stride64
        })
    } else {
        None
    };
    match bad {
        // Between first and end, so it fits an i32.
        Some(rank) => Err(GroupError::RangeOutOfRange {
            range,
            rank: rank as i32,
            size,
        }),
        None => Ok((first, end)),
    }
}

/// Whether a valid triplet computes `rank`.
fn computes(range: RangeAt, rank: u32) -> bool {
    let (first, last, stride) = (
        i64::from(range.first),
        i64::from(range.last),
        i64::from(range.stride),
    );
    let offset = i64::from(rank) - first;
    let (lo, hi) = if stride > 0 {
        (first, last)
    } else {
        (last, first)
    };
    (lo..=hi).contains(&i64::from(rank)) && offset % stride == 0
}
