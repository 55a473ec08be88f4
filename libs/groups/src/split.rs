//! Communicator split order (`MPI_Comm_split`, MPI 3.1 §6.4.2): which
//! processes share a color, and in which order they are ranked.

use std::collections::BTreeMap;

use crate::{Group, UNDEFINED};

/// One process's arguments to `MPI_Comm_split`. The caller allgathers them
/// over the parent communicator; the slice is indexed by rank in the
/// parent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SplitEntry {
    /// The new communicator this process joins: a color ≥ 0, or
    /// [`UNDEFINED`] for none (it gets `MPI_COMM_NULL`).
    pub color: i32,
    /// The process's place in its new communicator: ranks follow the keys,
    /// equal keys follow the parent ranks.
    pub key: i32,
}

/// Why split arguments are invalid.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    /// [`validate_color`]: a negative color other than [`UNDEFINED`]
    /// (`MPI_ERR_ARG`).
    #[error(
        "color {color} is negative; a color must be 0 or more, or UNDEFINED ({UNDEFINED}) for \
         a process that joins no new communicator"
    )]
    InvalidColor {
        /// The color.
        color: i32,
    },
    /// [`split_group`], [`split_groups`]: a process gave a negative color
    /// other than [`UNDEFINED`].
    #[error(
        "entries[{index}]: color {color} is negative; a color must be 0 or more, or UNDEFINED \
         ({UNDEFINED}) for a process that joins no new communicator"
    )]
    InvalidColorAt {
        /// The process's rank in the parent.
        index: usize,
        /// The color.
        color: i32,
    },
    /// [`split_group`], [`split_groups`]: not one entry per process of the
    /// parent.
    #[error(
        "there are {entries} split entries for a parent group of {size} processes; give one \
         (color, key) entry per process, indexed by its rank in the parent"
    )]
    EntryCount {
        /// The number of entries given.
        entries: usize,
        /// The size of the parent group.
        size: u32,
    },
}

/// Whether `color` is a valid `MPI_Comm_split` color: 0 or more, or
/// [`UNDEFINED`].
///
/// # Errors
///
/// [`SplitError::InvalidColor`] for any other negative value.
pub fn validate_color(color: i32) -> Result<(), SplitError> {
    if color >= 0 || color == UNDEFINED {
        Ok(())
    } else {
        Err(SplitError::InvalidColor { color })
    }
}

/// The parent ranks of the processes that chose `color`, in their new rank
/// order: by key, then by parent rank. Empty for [`UNDEFINED`] (those
/// processes join no communicator) and for a color no one chose. The
/// entries are not checked; see [`split_group`].
pub fn split_members(entries: &[SplitEntry], color: i32) -> Vec<u32> {
    if color == UNDEFINED {
        return Vec::new();
    }
    let mut chosen: Vec<(i32, u32)> = (entries.iter().enumerate())
        .filter(|(_, e)| e.color == color)
        .map(|(rank, e)| (e.key, rank as u32))
        .collect();
    // Parent ranks are distinct, so (key, rank) orders totally.
    chosen.sort_unstable();
    chosen.into_iter().map(|(_, rank)| rank).collect()
}

/// Checks that there is one entry per process of `parent` and that every
/// color is valid.
fn check_entries(parent: &Group, entries: &[SplitEntry]) -> Result<(), SplitError> {
    if entries.len() != parent.size() as usize {
        return Err(SplitError::EntryCount {
            entries: entries.len(),
            size: parent.size(),
        });
    }
    match entries
        .iter()
        .position(|e| validate_color(e.color).is_err())
    {
        Some(index) => Err(SplitError::InvalidColorAt {
            index,
            color: entries[index].color,
        }),
        None => Ok(()),
    }
}

/// The group of the new communicator for `color` (a process passes its own
/// color), or `None` for [`UNDEFINED`]: the members of `parent` that chose
/// `color`, ordered as [`split_members`] orders them.
///
/// Every entry is checked, not just this color's, so that every process of
/// the parent reaches the same verdict.
///
/// # Errors
///
/// [`SplitError::EntryCount`] unless there is one entry per process of
/// `parent`; [`SplitError::InvalidColorAt`] for an invalid color among the
/// entries; [`SplitError::InvalidColor`] if `color` itself is invalid.
pub fn split_group(
    parent: &Group,
    entries: &[SplitEntry],
    color: i32,
) -> Result<Option<Group>, SplitError> {
    validate_color(color)?;
    check_entries(parent, entries)?;
    if color == UNDEFINED {
        return Ok(None);
    }
    let ranks = split_members(entries, color);
    Ok(Some(members_of(parent, &ranks)))
}

/// Every new communicator's group, by color ([`UNDEFINED`] is left out):
/// what `MPI_Comm_split` creates from these entries.
///
/// # Errors
///
/// [`SplitError::EntryCount`] unless there is one entry per process of
/// `parent`; [`SplitError::InvalidColorAt`] for an invalid color.
pub fn split_groups(
    parent: &Group,
    entries: &[SplitEntry],
) -> Result<BTreeMap<i32, Group>, SplitError> {
    check_entries(parent, entries)?;
    let mut by_color: BTreeMap<i32, Vec<(i32, u32)>> = BTreeMap::new();
    for (rank, e) in entries.iter().enumerate() {
        if e.color != UNDEFINED {
            by_color
                .entry(e.color)
                .or_default()
                .push((e.key, rank as u32));
        }
    }
    Ok(by_color
        .into_iter()
        .map(|(color, mut chosen)| {
            chosen.sort_unstable();
            let ranks: Vec<u32> = chosen.into_iter().map(|(_, r)| r).collect();
            (color, members_of(parent, &ranks))
        })
        .collect())
}

/// The subgroup of `parent` with these distinct, valid ranks, in order.
fn members_of(parent: &Group, ranks: &[u32]) -> Group {
    let members = parent.members();
    Group::new(ranks.iter().map(|&r| members[r as usize]).collect())
        .expect("distinct ranks of a group name distinct processes")
}
