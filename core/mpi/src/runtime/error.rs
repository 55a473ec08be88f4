//! Errors of the MPI layer.

use std::fmt;

use super::Status;

/// The kind of an [`Error`] (after MPI's error classes).
#[non_exhaustive]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ErrorClass {
    /// A message was longer than the receive buffer (`MPI_ERR_TRUNCATE`).
    Truncate,
    /// A peer failed or its connection broke (`MPI_ERR_PROC_FAILED`).
    ProcFailed,
    /// No transport reaches the peer (`MPI_ERR_UNREACH`-like).
    Unreachable,
    /// A rank outside the communicator (`MPI_ERR_RANK`).
    Rank,
    /// A tag outside `0..=TAG_UB` (`MPI_ERR_TAG`).
    Tag,
    /// A collective called on the wrong side of its root (`MPI_ERR_ROOT`).
    Root,
    /// A communicator that does not exist (`MPI_ERR_COMM`).
    Comm,
    /// A group argument that does not fit (`MPI_ERR_GROUP`).
    Group,
    /// Another invalid argument (`MPI_ERR_ARG`).
    Arg,
    /// A buffer that cannot be used (`MPI_ERR_BUFFER`).
    Buffer,
    /// A request that is unknown or unusable (`MPI_ERR_REQUEST`).
    Request,
    /// Initialization failed or was repeated.
    Init,
    /// A call the thread level does not allow.
    ThreadLevel,
    /// A call after finalize.
    Finalized,
    /// Anything else (`MPI_ERR_OTHER`).
    Other,
}

/// An error of the MPI layer: its class and a message that says what went
/// wrong and, where it helps, what to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// The class.
    pub class: ErrorClass,
    /// The message (one or more sentences).
    pub message: String,
    /// The status of the request that failed, when it has one (a receive
    /// that was truncated, or whose sender failed): its source, tag and
    /// the bytes received. `None` for every other error.
    pub status: Option<Status>,
}

impl Error {
    /// An error of `class` with `message` (and no status).
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Error {
        Error {
            class,
            message: message.into(),
            status: None,
        }
    }

    /// This error, with the status of the request that failed.
    pub fn with_status(self, status: Status) -> Error {
        Error {
            status: Some(status),
            ..self
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}
