//! Process groups (`MPI_Group`), in rsmpi's shape: [`UserGroup`] from
//! [`Communicator::group`](crate::topology::Communicator::group), with the
//! set operations, inclusion and exclusion, rank translation and
//! comparison. A group is a value of this process (no communication).

use crate::error::Error;
use crate::topology::Rank;
use crate::ErrorClass;
use oxmpi_groups::{Comparison, Group, Translated};

/// How two groups relate (`MPI_Group_compare`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum GroupRelation {
    /// The same processes in the same order (`MPI_IDENT`).
    Identical,
    /// The same processes in another order (`MPI_SIMILAR`).
    Similar,
    /// Different processes (`MPI_UNEQUAL`).
    Unequal,
}

/// An ordered set of processes; `rank` is this process's rank in it, if
/// it is a member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserGroup {
    pub(crate) group: Group,
    pub(crate) me: u32,
}

fn group_error(e: oxmpi_groups::GroupError) -> Error {
    Error::new(ErrorClass::Group, e.to_string())
}

impl UserGroup {
    /// The number of processes.
    pub fn size(&self) -> Rank {
        self.group.size() as Rank
    }

    /// This process's rank in the group (`None`: not a member,
    /// `MPI_UNDEFINED`).
    pub fn rank(&self) -> Option<Rank> {
        self.group.rank_of(self.me).map(|r| r as Rank)
    }

    fn with(&self, group: Group) -> UserGroup {
        UserGroup { group, me: self.me }
    }

    /// The members of `self`, then those of `other` not in `self`.
    pub fn union(&self, other: &UserGroup) -> UserGroup {
        self.with(self.group.union(&other.group))
    }

    /// The members of `self` also in `other`, in `self`'s order.
    pub fn intersection(&self, other: &UserGroup) -> UserGroup {
        self.with(self.group.intersection(&other.group))
    }

    /// The members of `self` not in `other`, in `self`'s order.
    pub fn difference(&self, other: &UserGroup) -> UserGroup {
        self.with(self.group.difference(&other.group))
    }

    /// The members of the given ranks, in that order (`MPI_Group_incl`).
    ///
    /// # Errors
    /// `Group` for a rank outside the group or listed twice.
    pub fn include(&self, ranks: &[Rank]) -> Result<UserGroup, Error> {
        Ok(self.with(self.group.incl(ranks).map_err(group_error)?))
    }

    /// The members but the given ranks (`MPI_Group_excl`).
    ///
    /// # Errors
    /// As [`include`](Self::include).
    pub fn exclude(&self, ranks: &[Rank]) -> Result<UserGroup, Error> {
        Ok(self.with(self.group.excl(ranks).map_err(group_error)?))
    }

    /// The members of the `(first, last, stride)` ranges
    /// (`MPI_Group_range_incl`).
    ///
    /// # Errors
    /// `Group` for a stride of 0, a range going the wrong way, a rank
    /// outside the group or one met twice.
    pub fn include_ranges(&self, ranges: &[(Rank, Rank, Rank)]) -> Result<UserGroup, Error> {
        Ok(self.with(self.group.range_incl(ranges).map_err(group_error)?))
    }

    /// The members but those of the ranges (`MPI_Group_range_excl`).
    ///
    /// # Errors
    /// As [`include_ranges`](Self::include_ranges).
    pub fn exclude_ranges(&self, ranges: &[(Rank, Rank, Rank)]) -> Result<UserGroup, Error> {
        Ok(self.with(self.group.range_excl(ranges).map_err(group_error)?))
    }

    /// The ranks in `other` of the processes of the given ranks of `self`
    /// (`None`: not in `other`).
    ///
    /// # Errors
    /// `Group` for a rank outside `self`.
    pub fn translate_ranks(
        &self,
        ranks: &[Rank],
        other: &UserGroup,
    ) -> Result<Vec<Option<Rank>>, Error> {
        let t = self
            .group
            .translate_ranks(ranks, &other.group)
            .map_err(group_error)?;
        Ok(t.into_iter()
            .map(|x| match x {
                Translated::Rank(r) => Some(r as Rank),
                Translated::Undefined | Translated::ProcNull => None,
            })
            .collect())
    }

    /// How `self` and `other` relate.
    pub fn compare(&self, other: &UserGroup) -> GroupRelation {
        match self.group.compare(&other.group) {
            Comparison::Ident => GroupRelation::Identical,
            Comparison::Similar => GroupRelation::Similar,
            Comparison::Unequal => GroupRelation::Unequal,
        }
    }
}
