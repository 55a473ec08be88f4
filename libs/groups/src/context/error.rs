//! [`ContextError`]: why a [`ContextIds`] call refused.

#[cfg(doc)]
use super::ContextIds;
use super::{COMM_WORLD_CONTEXT, FIRST_FREE, MAX_LIMIT};

/// Why a [`ContextIds`] call refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ContextError {
    /// Ids 0 and 1 belong to `MPI_COMM_WORLD` and `MPI_COMM_SELF`.
    #[error(
        "context id {id} belongs to {}; ids 0 and 1 are never handed out, claimed or released",
        if *id == COMM_WORLD_CONTEXT { "MPI_COMM_WORLD" } else { "MPI_COMM_SELF" }
    )]
    Predefined {
        /// The id.
        id: u32,
    },
    /// The id is not below the pool's limit.
    #[error(
        "context id {id} is outside the pool (ids {FIRST_FREE} to {})",
        limit.saturating_sub(1)
    )]
    OutOfPool {
        /// The id.
        id: u32,
        /// The pool's limit.
        limit: u32,
    },
    /// [`ContextIds::claim`]: the id is already in use here.
    #[error("context id {id} is already in use in this process; agree on an id from fresh masks")]
    InUse {
        /// The id.
        id: u32,
    },
    /// [`ContextIds::claim`], [`ContextIds::release`]: the id is held by a
    /// creation in progress.
    #[error(
        "context id {id} is tentatively reserved by a communicator creation in progress; only \
         confirm or abandon apply to it"
    )]
    Tentative {
        /// The id.
        id: u32,
    },
    /// [`ContextIds::release`]: the id is free already.
    #[error("context id {id} is not in use, so it cannot be released (released twice?)")]
    NotInUse {
        /// The id.
        id: u32,
    },
    /// [`ContextIds::confirm`], [`ContextIds::abandon`]: the id is not
    /// tentatively reserved.
    #[error(
        "context id {id} is not tentatively reserved; confirm and abandon take the id \
         reserve_tentative reserved, once"
    )]
    NotTentative {
        /// The id.
        id: u32,
    },
    /// [`ContextIds::with_limit`]: the pool would have no id to hand out.
    #[error(
        "a pool limit of {limit} leaves no id to hand out; it must be at least {} (ids 0 and 1 \
         are MPI_COMM_WORLD's and MPI_COMM_SELF's)",
        FIRST_FREE + 1
    )]
    LimitTooSmall {
        /// The limit asked for.
        limit: u32,
    },
    /// [`ContextIds::with_limit`]: the pool would be above [`MAX_LIMIT`].
    #[error("a pool limit of {limit} is above the maximum of {MAX_LIMIT}")]
    LimitTooLarge {
        /// The limit asked for.
        limit: u32,
    },
    /// [`ContextIds::reserve_tentative`]: the mask has the wrong length.
    #[error(
        "the AND-ed mask has {got} words but this pool's masks have {expected}; every member \
         must use the same pool limit"
    )]
    MaskLength {
        /// The words given.
        got: usize,
        /// The pool's mask length.
        expected: usize,
    },
    /// [`ContextIds::begin_creation`]: the priority is taken.
    #[error(
        "a communicator creation with priority {priority} is already in progress in this \
         process; priorities must be unique among concurrent creations (MPI forbids concurrent \
         collectives on one communicator)"
    )]
    CreationActive {
        /// The priority.
        priority: u64,
    },
    /// [`ContextIds::round_mask`], [`ContextIds::end_creation`]: no
    /// creation with that priority is in progress.
    #[error(
        "no communicator creation with priority {priority} is in progress in this process; \
         call begin_creation first"
    )]
    NoCreation {
        /// The priority.
        priority: u64,
    },
}
