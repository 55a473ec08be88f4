//! MPI process groups, communicator split order and context-id agreement
//! (MPI 3.1 §6.3–6.4): the pure logic the MPI layer uses when it creates
//! communicators. No process state, no I/O, no `unsafe`.
//!
//! # Groups
//!
//! A [`Group`] is an ordered list of distinct processes, each named by its
//! rank in `MPI_COMM_WORLD` (a `u32`, at most [`MAX_WORLD_RANK`]); a
//! process's position is its rank in the group. Groups are immutable and
//! cheap to clone. Each builds a world rank → rank index once, so
//! [`Group::rank_of`] is O(1) for dense groups and O(log n) otherwise.
//!
//! | MPI | here | result order |
//! |---|---|---|
//! | `MPI_Group_incl` | [`Group::incl`] | as listed |
//! | `MPI_Group_excl` | [`Group::excl`] | this group's |
//! | `MPI_Group_range_incl` | [`Group::range_incl`] | as the ranges compute |
//! | `MPI_Group_range_excl` | [`Group::range_excl`] | this group's |
//! | `MPI_Group_union` | [`Group::union`] | this group's, then the other's extras in its order |
//! | `MPI_Group_intersection` | [`Group::intersection`] | this group's |
//! | `MPI_Group_difference` | [`Group::difference`] | this group's |
//! | `MPI_Group_translate_ranks` | [`Group::translate_ranks`] | [`Translated`] per rank |
//! | `MPI_Group_compare` | [`Group::compare`] | [`Comparison`] |
//!
//! Ranks arrive as `i32`, as in the C API. Erroneous arguments (MPI: "the
//! program is erroneous") are reported, never ignored: a rank outside the
//! group, a rank listed twice, a zero stride, … Each [`GroupError`] names
//! the offending argument (`ranks[3]`, `range 2 (first 0, last 9, stride
//! 0)`) and says what is allowed.
//!
//! ## Ranges
//!
//! A triplet `(first, last, stride)` names `first`, `first + stride`, … up
//! to `first + ⌊(last − first)/stride⌋·stride` ([`expand_ranges`]); `last`
//! itself only when the stride lands on it, and it need not be a rank of
//! the group if it is not reached. Every computed rank must be in the group
//! and no rank may be computed twice, across all triplets. `first == last`
//! names one rank. The stride must not be 0, and it must point from
//! `first` towards `last`: `(5, 2, 1)` is refused
//! ([`GroupError::WrongDirection`]) rather than read as an empty range. The
//! standard's formula gives no meaning to such a triplet (its last term
//! comes before its first), and Open MPI and MPICH both reject it, so a
//! portable program cannot rely on anything else.
//!
//! # Communicator split
//!
//! `MPI_Comm_split` allgathers one [`SplitEntry`] `{ color, key }` per
//! process of the parent. The processes with one color form a new
//! communicator, ranked by key, ties by parent rank ([`split_members`],
//! [`split_group`], [`split_groups`]). A color is ≥ 0 or [`UNDEFINED`] (no
//! new communicator); any other negative color is an error
//! ([`validate_color`]), checked over all entries so every process reaches
//! the same verdict.
//!
//! # Context ids
//!
//! Communicators are told apart on the wire by a `u32` context id on which
//! all their members agree. [`ContextIds`] is one process's pool
//! ([`FIRST_FREE`]`..limit`; 0 and 1 are `MPI_COMM_WORLD` and
//! `MPI_COMM_SELF`). Members agree through a bit mask of free ids,
//! AND-reduced over the parent communicator: the lowest id free everywhere
//! ([`ContextIds::lowest_common`]) is the same at every member. When a
//! process may run two creations at once (threads), the plain protocol can
//! hand the same id to both; the retry protocol (tentative reservation, a
//! vote, confirm or abandon, and priorities so that it cannot livelock)
//! prevents that. The [`context`] module documents both protocols step by
//! step.
//!
//! # Example
//!
//! ```
//! use oxmpi_groups::{split_group, Group, SplitEntry, Translated, PROC_NULL};
//!
//! let world = Group::world(6);
//! let evens = world.range_incl(&[(0, 5, 2)])?; // world ranks 0, 2, 4
//! let odds_down = world.range_incl(&[(5, 0, -2)])?; // 5, 3, 1
//! assert_eq!(evens.members(), &[0, 2, 4]);
//! assert_eq!(evens.union(&odds_down).members(), &[0, 2, 4, 5, 3, 1]);
//! assert_eq!(
//!     evens.translate_ranks(&[2, PROC_NULL], &world)?,
//!     [Translated::Rank(4), Translated::ProcNull]
//! );
//! assert_eq!(
//!     world.incl(&[0, 9]).unwrap_err().to_string(),
//!     "ranks[1]: rank 9 is outside the group of 6 processes (ranks 0 to 5)"
//! );
//!
//! // MPI_Comm_split over `evens`: its ranks 0 and 1 choose color 1, and
//! // key 3 ranks before key 7.
//! let entries = [
//!     SplitEntry { color: 1, key: 7 },
//!     SplitEntry { color: 1, key: 3 },
//!     SplitEntry { color: 0, key: 0 },
//! ];
//! let mine = split_group(&evens, &entries, 1)?.unwrap();
//! assert_eq!(mine.members(), &[2, 0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Special values
//!
//! [`PROC_NULL`] (−2) and [`UNDEFINED`] (−32766) are our values for
//! `MPI_PROC_NULL` and `MPI_UNDEFINED`; the standard fixes none, these are
//! the ones Open MPI's `mpi.h` uses.

#![forbid(unsafe_code)]

mod bits;
pub mod context;
mod error;
mod group;
mod index;
mod ranges;
mod split;

pub use context::{
    ContextError, ContextIds, Reservation, COMM_SELF_CONTEXT, COMM_WORLD_CONTEXT, DEFAULT_LIMIT,
    FIRST_FREE, MASK_COMPLETE, MASK_SETTLED, MAX_LIMIT,
};
pub use error::{GroupError, RangeAt};
pub use group::{Comparison, Group, Translated};
pub use ranges::expand_ranges;
pub use split::{split_group, split_groups, split_members, validate_color, SplitEntry, SplitError};

/// `MPI_PROC_NULL`: the rank of no process; communication with it completes
/// at once. Our value (−2, as in Open MPI); the standard fixes none.
pub const PROC_NULL: i32 = -2;

/// `MPI_UNDEFINED`: "no such rank" in [`Translated::to_mpi`], and the
/// split color of a process that joins no new communicator. Our value
/// (−32766, as in Open MPI); the standard fixes none.
pub const UNDEFINED: i32 = -32766;

/// The largest world rank a group accepts: MPI ranks are C `int`s, so a job
/// has at most 2^31 processes, and every group rank fits an `i32`.
pub const MAX_WORLD_RANK: u32 = i32::MAX as u32;
