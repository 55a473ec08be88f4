//! [`Group`]: an ordered set of processes named by their world ranks, and
//! the MPI group operations (MPI 3.1 §6.3).

use std::fmt;
use std::sync::Arc;

use crate::bits::Bits;
use crate::error::GroupError;
use crate::index::RankIndex;
use crate::ranges::expand_ranges;
use crate::{MAX_WORLD_RANK, PROC_NULL, UNDEFINED};

/// An MPI process group: an ordered list of distinct processes, each named
/// by its rank in `MPI_COMM_WORLD`; a process's position in the list is its
/// rank in the group.
///
/// Cloning is cheap (the list and its index are shared). Every group keeps
/// a world rank → rank index built once, at construction, so
/// [`rank_of`](Group::rank_of) is a table load when the group is dense
/// (its largest world rank is below twice its size) and a binary search
/// otherwise.
///
/// Two groups are `==` when they have the same members in the same order
/// ([`Comparison::Ident`]).
#[derive(Clone)]
pub struct Group {
    inner: Arc<Inner>,
}

struct Inner {
    members: Box<[u32]>,
    index: RankIndex,
}

/// The result of [`Group::compare`] (`MPI_Group_compare`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Comparison {
    /// `MPI_IDENT`: the same members in the same order.
    Ident,
    /// `MPI_SIMILAR`: the same members in a different order.
    Similar,
    /// `MPI_UNEQUAL`: different members.
    Unequal,
}

/// One result of [`Group::translate_ranks`]
/// (`MPI_Group_translate_ranks`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Translated {
    /// The process's rank in the target group.
    Rank(u32),
    /// The process is not in the target group (`MPI_UNDEFINED`).
    Undefined,
    /// The rank given was [`PROC_NULL`]; it translates to itself.
    ProcNull,
}

impl Translated {
    /// The value MPI returns: the rank, [`UNDEFINED`] or [`PROC_NULL`].
    pub fn to_mpi(self) -> i32 {
        match self {
            // Ranks are below the group size, at most 2^31 (see
            // `MAX_WORLD_RANK`), so they fit.
            Translated::Rank(r) => r as i32,
            Translated::Undefined => UNDEFINED,
            Translated::ProcNull => PROC_NULL,
        }
    }
}

impl Group {
    /// The group whose rank `i` is the process with world rank
    /// `world_ranks[i]`.
    ///
    /// # Errors
    ///
    /// [`GroupError::DuplicateWorldRank`] if a world rank appears twice;
    /// [`GroupError::WorldRankTooLarge`] if one is above
    /// [`MAX_WORLD_RANK`].
    pub fn new(world_ranks: Vec<u32>) -> Result<Group, GroupError> {
        if let Some(index) = world_ranks.iter().position(|&w| w > MAX_WORLD_RANK) {
            return Err(GroupError::WorldRankTooLarge {
                index,
                world_rank: world_ranks[index],
            });
        }
        let index = RankIndex::build(&world_ranks).map_err(|(first, second)| {
            GroupError::DuplicateWorldRank {
                world_rank: world_ranks[first],
                first,
                second,
            }
        })?;
        Ok(Group {
            inner: Arc::new(Inner {
                members: world_ranks.into_boxed_slice(),
                index,
            }),
        })
    }

    /// A group built from members that are distinct and in range by
    /// construction (taken from existing groups).
    fn from_members(members: Vec<u32>) -> Group {
        Group::new(members).expect("members taken from groups are distinct")
    }

    /// `MPI_GROUP_EMPTY`: no processes.
    pub fn empty() -> Group {
        Group::from_members(Vec::new())
    }

    /// The group of `MPI_COMM_WORLD` in a job of `size` processes: world
    /// ranks `0..size` in order.
    ///
    /// # Panics
    ///
    /// If `size` exceeds `MAX_WORLD_RANK + 1` (2^31): MPI ranks are C
    /// `int`s, no job is that large.
    pub fn world(size: u32) -> Group {
        assert!(
            size <= MAX_WORLD_RANK + 1,
            "a world of {size} processes has ranks beyond the MPI int range"
        );
        Group::from_members((0..size).collect())
    }

    /// The number of processes (`MPI_Group_size`).
    pub fn size(&self) -> u32 {
        // At most 2^31 members (distinct world ranks up to MAX_WORLD_RANK).
        self.inner.members.len() as u32
    }

    /// Whether the group has no processes.
    pub fn is_empty(&self) -> bool {
        self.inner.members.is_empty()
    }

    /// The world rank of the process with rank `rank`, or `None` if the
    /// group has no such rank.
    pub fn world_rank(&self, rank: u32) -> Option<u32> {
        self.inner.members.get(rank as usize).copied()
    }

    /// The rank of the process with world rank `world_rank`, or `None` if
    /// it is not a member. O(1) for a dense group, O(log n) otherwise.
    pub fn rank_of(&self, world_rank: u32) -> Option<u32> {
        self.inner.index.get(world_rank)
    }

    /// Whether the process with world rank `world_rank` is a member.
    pub fn contains(&self, world_rank: u32) -> bool {
        self.rank_of(world_rank).is_some()
    }

    /// The members' world ranks, by rank.
    pub fn members(&self) -> &[u32] {
        &self.inner.members
    }

    /// `ranks[index]` as a rank of this group.
    fn check_rank(&self, index: usize, rank: i32) -> Result<u32, GroupError> {
        match u32::try_from(rank) {
            Ok(r) if r < self.size() => Ok(r),
            _ => Err(GroupError::RankOutOfRange {
                index,
                rank,
                size: self.size(),
            }),
        }
    }

    /// `ranks` checked to be distinct ranks of this group, with the set of
    /// them.
    fn check_distinct(&self, ranks: &[i32]) -> Result<(Vec<u32>, Bits), GroupError> {
        let mut seen = Bits::new(self.inner.members.len());
        let mut checked = Vec::with_capacity(ranks.len());
        for (index, &rank) in ranks.iter().enumerate() {
            let r = self.check_rank(index, rank)?;
            if seen.test_and_set(r as usize) {
                let first_index = ranks.iter().position(|&x| x == rank).unwrap_or(index);
                return Err(GroupError::DuplicateRank {
                    index,
                    rank,
                    first_index,
                });
            }
            checked.push(r);
        }
        Ok((checked, seen))
    }

    /// `MPI_Group_incl`: the processes with ranks `ranks`, in that order
    /// (rank `i` of the result is rank `ranks[i]` here). No ranks gives
    /// the empty group.
    ///
    /// # Errors
    ///
    /// [`GroupError::RankOutOfRange`] for a rank not in `0..size`,
    /// [`GroupError::DuplicateRank`] for a rank listed twice.
    pub fn incl(&self, ranks: &[i32]) -> Result<Group, GroupError> {
        let (ranks, _) = self.check_distinct(ranks)?;
        Ok(self.pick(&ranks))
    }

    /// `MPI_Group_excl`: the processes whose ranks are not in `ranks`, in
    /// this group's order.
    ///
    /// # Errors
    ///
    /// [`GroupError::RankOutOfRange`] for a rank not in `0..size`,
    /// [`GroupError::DuplicateRank`] for a rank listed twice.
    pub fn excl(&self, ranks: &[i32]) -> Result<Group, GroupError> {
        let (_, excluded) = self.check_distinct(ranks)?;
        Ok(self.drop_ranks(&excluded))
    }

    /// `MPI_Group_range_incl`: [`incl`](Group::incl) of the ranks the
    /// `(first, last, stride)` triplets name, in order (see
    /// [`expand_ranges`] for the exact semantics).
    ///
    /// # Errors
    ///
    /// Those of [`expand_ranges`]: a zero stride, a stride pointing away
    /// from `last`, a computed rank outside the group, a rank computed
    /// twice.
    pub fn range_incl(&self, ranges: &[(i32, i32, i32)]) -> Result<Group, GroupError> {
        let ranks = expand_ranges(ranges, self.size())?;
        Ok(self.pick(&ranks))
    }

    /// `MPI_Group_range_excl`: [`excl`](Group::excl) of the ranks the
    /// `(first, last, stride)` triplets name (see [`expand_ranges`]).
    ///
    /// # Errors
    ///
    /// Those of [`expand_ranges`].
    pub fn range_excl(&self, ranges: &[(i32, i32, i32)]) -> Result<Group, GroupError> {
        let ranks = expand_ranges(ranges, self.size())?;
        let mut excluded = Bits::new(self.inner.members.len());
        for &r in &ranks {
            excluded.test_and_set(r as usize);
        }
        Ok(self.drop_ranks(&excluded))
    }

    /// The processes with these (valid, distinct) ranks, in that order.
    fn pick(&self, ranks: &[u32]) -> Group {
        let members = &self.inner.members;
        Group::from_members(ranks.iter().map(|&r| members[r as usize]).collect())
    }

    /// The processes whose ranks are not in `excluded`, in order.
    fn drop_ranks(&self, excluded: &Bits) -> Group {
        let kept = (self.inner.members.iter().enumerate())
            .filter(|&(r, _)| !excluded.get(r))
            .map(|(_, &w)| w);
        Group::from_members(kept.collect())
    }

    /// `MPI_Group_union`: all of this group in order, then the members of
    /// `other` that are not in this group, in `other`'s order.
    pub fn union(&self, other: &Group) -> Group {
        let extra = other.members().iter().filter(|&&w| !self.contains(w));
        let members: Vec<u32> = self.members().iter().chain(extra).copied().collect();
        Group::from_members(members)
    }

    /// `MPI_Group_intersection`: the members of this group that are also in
    /// `other`, in this group's order.
    pub fn intersection(&self, other: &Group) -> Group {
        let both = self.members().iter().filter(|&&w| other.contains(w));
        Group::from_members(both.copied().collect())
    }

    /// `MPI_Group_difference`: the members of this group that are not in
    /// `other`, in this group's order.
    pub fn difference(&self, other: &Group) -> Group {
        let only = self.members().iter().filter(|&&w| !other.contains(w));
        Group::from_members(only.copied().collect())
    }

    /// `MPI_Group_translate_ranks`: for each rank of this group in
    /// `ranks`, the same process's rank in `to`, [`Translated::Undefined`]
    /// if it is not a member of `to`; [`PROC_NULL`] translates to
    /// [`Translated::ProcNull`]. Ranks may repeat.
    ///
    /// # Errors
    ///
    /// [`GroupError::RankOutOfRange`] for a rank that is neither in
    /// `0..size` nor [`PROC_NULL`].
    pub fn translate_ranks(
        &self,
        ranks: &[i32],
        to: &Group,
    ) -> Result<Vec<Translated>, GroupError> {
        let members = &self.inner.members;
        (ranks.iter().enumerate())
            .map(|(index, &rank)| {
                if rank == PROC_NULL {
                    return Ok(Translated::ProcNull);
                }
                let r = self.check_rank(index, rank)?;
                Ok(match to.rank_of(members[r as usize]) {
                    Some(t) => Translated::Rank(t),
                    None => Translated::Undefined,
                })
            })
            .collect()
    }

    /// `MPI_Group_compare`: [`Comparison::Ident`] for the same members in
    /// the same order, [`Comparison::Similar`] for the same members in
    /// another order, [`Comparison::Unequal`] otherwise.
    pub fn compare(&self, other: &Group) -> Comparison {
        if Arc::ptr_eq(&self.inner, &other.inner) || self.members() == other.members() {
            Comparison::Ident
        } else if self.size() == other.size() && self.members().iter().all(|&w| other.contains(w)) {
            Comparison::Similar
        } else {
            Comparison::Unequal
        }
    }
}

impl PartialEq for Group {
    fn eq(&self, other: &Group) -> bool {
        self.members() == other.members()
    }
}

impl Eq for Group {}

impl fmt::Debug for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Group").field(&self.members()).finish()
    }
}

impl Default for Group {
    /// The empty group.
    fn default() -> Group {
        Group::empty()
    }
}
