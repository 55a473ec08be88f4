//! The error type of every fallible call.

use crate::ErrorClass;
use std::fmt;

/// An MPI error: its class (after MPI's error classes) and a message that
/// says what went wrong and, where it helps, what to do. `Display` prints
/// the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    inner: oxmpi_mpi_core::Error,
}

impl Error {
    /// An error of `class` with `message`.
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Error {
        Error {
            inner: oxmpi_mpi_core::Error::new(class, message),
        }
    }

    /// The error class (`Truncate`, `ProcFailed`, `Unreachable`, `Rank`,
    /// `Tag`, `Buffer`, `Request`, `Init`, `ThreadLevel`, `Finalized`,
    /// `Other`).
    pub fn class(&self) -> ErrorClass {
        self.inner.class
    }

    /// The message (the same text as `Display`).
    pub fn message(&self) -> &str {
        &self.inner.message
    }

    /// The same error with `context` put in front of its message
    /// (`"<context>: <message>"`).
    pub fn context(self, context: impl fmt::Display) -> Error {
        Error::new(self.class(), format!("{context}: {}", self.message()))
    }

    /// The MPI layer's error this one wraps.
    pub fn into_inner(self) -> oxmpi_mpi_core::Error {
        self.inner
    }
}

impl From<oxmpi_mpi_core::Error> for Error {
    fn from(inner: oxmpi_mpi_core::Error) -> Error {
        Error { inner }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_the_message_and_class_is_kept() {
        let e = Error::from(oxmpi_mpi_core::Error::new(
            ErrorClass::Rank,
            "destination rank 7 is not in MPI_COMM_WORLD (ranks 0 to 3)",
        ));
        assert_eq!(e.class(), ErrorClass::Rank);
        assert_eq!(
            e.to_string(),
            "destination rank 7 is not in MPI_COMM_WORLD (ranks 0 to 3)"
        );
        let c = e.clone().context("ring, lap 2");
        assert_eq!(
            c.to_string(),
            "ring, lap 2: destination rank 7 is not in MPI_COMM_WORLD (ranks 0 to 3)"
        );
        assert_eq!(c.class(), ErrorClass::Rank);
        assert_eq!(e.into_inner().class, ErrorClass::Rank);
    }

    #[test]
    fn is_a_std_error_that_boxes() {
        fn boxed() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
            Err(Error::new(ErrorClass::Tag, "tag -5 is not valid"))?
        }
        assert_eq!(boxed().unwrap_err().to_string(), "tag -5 is not valid");
    }
}
