//! [`GroupError`]: what was wrong with the arguments of a group operation,
//! and how to put it right.

use std::fmt;

use crate::{PROC_NULL, UNDEFINED};

/// One `(first, last, stride)` triplet of a range argument, with its index
/// in the argument slice; its `Display` is `range 3 (first 0, last 9,
/// stride 2)`, the way every range error names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RangeAt {
    /// The triplet's index in the `ranges` argument.
    pub index: usize,
    /// The first rank of the range.
    pub first: i32,
    /// The bound the range goes towards (reached only if the stride lands
    /// on it).
    pub last: i32,
    /// The step between ranks (never 0 in a valid range).
    pub stride: i32,
}

impl RangeAt {
    /// The triplet `ranges[index]`.
    pub fn new(index: usize, (first, last, stride): (i32, i32, i32)) -> Self {
        RangeAt {
            index,
            first,
            last,
            stride,
        }
    }
}

impl fmt::Display for RangeAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "range {} (first {}, last {}, stride {})",
            self.index, self.first, self.last, self.stride
        )
    }
}

/// Why a group could not be built or a group operation refused its
/// arguments. Every message names the offending argument (`ranks[3]`,
/// `range 2 (…)`, `members[5]`), says what was wrong and what is allowed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GroupError {
    /// [`Group::new`](crate::Group::new): a process is listed twice.
    #[error(
        "world rank {world_rank} is listed twice (members[{first}] and members[{second}]); \
         a group names each process once"
    )]
    DuplicateWorldRank {
        /// The repeated world rank.
        world_rank: u32,
        /// Where it appears first.
        first: usize,
        /// Where it appears again.
        second: usize,
    },
    /// [`Group::new`](crate::Group::new): a world rank above
    /// [`MAX_WORLD_RANK`](crate::MAX_WORLD_RANK) (MPI ranks are C `int`s).
    #[error(
        "members[{index}]: world rank {world_rank} is above {max}, the largest rank an MPI \
         int can hold",
        max = crate::MAX_WORLD_RANK
    )]
    WorldRankTooLarge {
        /// Where it appears.
        index: usize,
        /// The world rank.
        world_rank: u32,
    },
    /// A rank argument is not a rank of the group (`MPI_ERR_RANK`).
    #[error("ranks[{index}]: rank {} is outside {}", describe_rank(*rank), group_extent(*size))]
    RankOutOfRange {
        /// The offending entry's index in the `ranks` argument.
        index: usize,
        /// The rank given.
        rank: i32,
        /// The size of the group the rank refers to.
        size: u32,
    },
    /// [`Group::incl`](crate::Group::incl) or
    /// [`Group::excl`](crate::Group::excl): a rank is listed twice
    /// (`MPI_ERR_RANK`).
    #[error(
        "ranks[{index}]: rank {rank} is listed twice (first at ranks[{first_index}]); \
         list each rank once"
    )]
    DuplicateRank {
        /// The index of the second occurrence.
        index: usize,
        /// The repeated rank.
        rank: i32,
        /// The index of the first occurrence.
        first_index: usize,
    },
    /// A range has stride 0 (`MPI_ERR_ARG`).
    #[error(
        "{range} has stride 0; use a positive stride to go up from first to last, or a \
         negative one to go down"
    )]
    ZeroStride {
        /// The range.
        range: RangeAt,
    },
    /// A range's stride points away from its last rank: `first < last`
    /// with a negative stride, or `first > last` with a positive one
    /// (`MPI_ERR_ARG`). See the crate documentation for why this is an
    /// error and not an empty range.
    #[error("{}", wrong_direction(range))]
    WrongDirection {
        /// The range.
        range: RangeAt,
    },
    /// A range computes a rank that is not a rank of the group
    /// (`MPI_ERR_RANK`).
    #[error("{range} includes rank {}, which is outside {}", describe_rank(*rank), group_extent(*size))]
    RangeOutOfRange {
        /// The range.
        range: RangeAt,
        /// The first rank it computes that is outside the group.
        rank: i32,
        /// The size of the group.
        size: u32,
    },
    /// Two ranges compute the same rank (`MPI_ERR_RANK`).
    #[error(
        "{range} includes rank {rank}, which {earlier} already includes; each rank may be \
         included once"
    )]
    RangeDuplicate {
        /// The later range.
        range: RangeAt,
        /// The rank both compute.
        rank: i32,
        /// The earlier range that computes it too.
        earlier: RangeAt,
    },
}

/// `the group of 4 processes (ranks 0 to 3)`, and the special cases.
fn group_extent(size: u32) -> String {
    match size {
        0 => "the empty group (it has no ranks)".to_owned(),
        1 => "the group of 1 process (rank 0)".to_owned(),
        n => format!("the group of {n} processes (ranks 0 to {})", n - 1),
    }
}

/// A rank, with the name of the special value it is, if it is one.
fn describe_rank(rank: i32) -> String {
    match rank {
        PROC_NULL => format!("{rank} (PROC_NULL)"),
        UNDEFINED => format!("{rank} (UNDEFINED)"),
        _ => rank.to_string(),
    }
}

fn wrong_direction(range: &RangeAt) -> String {
    if range.stride > 0 {
        format!(
            "{range} has a positive stride but last is below first; use a negative stride \
             (e.g. -{}) to go down from {} to {}",
            range.stride, range.first, range.last
        )
    } else {
        format!(
            "{range} has a negative stride but last is above first; use a positive stride \
             (e.g. {}) to go up from {} to {}",
            range.stride.unsigned_abs(),
            range.first,
            range.last
        )
    }
}
