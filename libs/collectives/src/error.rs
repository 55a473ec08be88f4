//! Why a collective failed.

use oxmpi_reduce::ReduceError;

/// Why a collective (or a transport operation under it) failed.
///
/// Errors found in the arguments ([`CollError::InvalidArgument`],
/// [`CollError::Reduce`] for an operation that does not apply to a type)
/// are detected before this rank sends or receives anything. An error
/// from the transport or from a user operation in the middle of a
/// collective leaves the other ranks in an undefined state (they may wait
/// for messages that never come), as MPI does for errors in collectives.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CollError {
    /// A receive got a message of another length than it was posted for.
    /// Every collective knows the size of each of its messages, so this
    /// means the ranks disagree on counts (or the transport is broken).
    #[error(
        "a message from rank {from} with tag {tag} has {actual} bytes but {expected} were expected \
         (do all ranks pass the same counts?)"
    )]
    Length {
        /// The sending rank.
        from: u32,
        /// The tag of the message.
        tag: i32,
        /// The length the receive was posted with.
        expected: usize,
        /// The length of the message.
        actual: usize,
    },
    /// The transport failed (its own words).
    #[error("transport error: {0}")]
    Transport(String),
    /// An argument is inconsistent: a root or rank out of range, buffers of
    /// the wrong length, counts that do not fit the buffers, `IN_PLACE`
    /// where MPI does not allow it.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A predefined reduction refused to run (the operation is not defined
    /// on the element type, or the buffers are not whole elements).
    #[error(transparent)]
    Reduce(#[from] ReduceError),
    /// A user-defined reduction operation failed (its own words).
    #[error("user-defined operation failed: {0}")]
    User(String),
}

/// Shorthand for `Err(CollError::InvalidArgument(..))`.
pub(crate) fn invalid<T>(msg: impl Into<String>) -> Result<T, CollError> {
    Err(CollError::InvalidArgument(msg.into()))
}
