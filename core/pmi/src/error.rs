//! The errors of the PMI client.

use std::io;

/// What went wrong in [`crate::PmiClient`]. Each message says what failed,
/// which variable or message was involved, and what to do.
#[derive(Debug, thiserror::Error)]
pub enum PmiError {
    /// A PMI environment variable has a value that cannot be used.
    #[error(
        "{var}={value:?} is not usable: {reason}. It is set by the launcher (mpirun or \
         mpiexec); unset it to run this program alone, as a singleton"
    )]
    BadEnv {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// `PMI_FD` names a descriptor that is not open in this process.
    #[error(
        "PMI_FD={fd} names a file descriptor that is not open in this process: the launcher's \
         socket was not inherited (was the program started through a wrapper that closes \
         descriptors?). Unset PMI_FD to run alone, as a singleton"
    )]
    FdNotOpen {
        /// The descriptor number.
        fd: i32,
    },
    /// The process's `PMI_FD` connection belongs to a client created
    /// earlier.
    #[error(
        "the PMI connection PMI_FD={fd} is already in use by another PmiClient of this process; \
         create one client per process and share it"
    )]
    AlreadyConnected {
        /// The descriptor number.
        fd: i32,
    },
    /// Connecting to `PMI_PORT` failed.
    #[error("cannot connect to the PMI server at PMI_PORT={addr}: {source}. Is the launcher still running?")]
    Connect {
        /// The address.
        addr: String,
        /// The system's reason.
        source: io::Error,
    },
    /// Reading from or writing to the PMI connection failed.
    #[error("PMI {during} failed: {source}")]
    Io {
        /// The request in progress, e.g. `barrier (cmd=barrier_in)`.
        during: String,
        /// The system's reason.
        source: io::Error,
    },
    /// The launcher closed the connection while the client waited for an
    /// answer (the launcher exited or killed the job).
    #[error(
        "the PMI server closed the connection during {during}: the launcher (mpirun or mpiexec) \
         exited or gave up on this job; look at its output for the reason"
    )]
    Closed {
        /// The request in progress.
        during: String,
    },
    /// The launcher answered something the protocol does not allow here.
    #[error("unexpected PMI reply during {during}: {detail}")]
    Protocol {
        /// The request in progress.
        during: String,
        /// What was wrong, quoting the reply.
        detail: String,
    },
    /// The launcher refused a request (`rc` other than 0).
    #[error("the PMI server refused {during}: rc={rc}, {msg}")]
    Refused {
        /// The request.
        during: String,
        /// Its return code.
        rc: String,
        /// Its explanation (the `msg=` field), or `no reason given`.
        msg: String,
    },
    /// A key or value the protocol or the server's limits cannot carry.
    #[error("cannot put {what} {text:?}: {reason}")]
    Invalid {
        /// `key` or `value`.
        what: &'static str,
        /// The offending text (an excerpt, see [`crate::wire::excerpt`]).
        text: String,
        /// What is wrong with it and what to do.
        reason: String,
    },
    /// A request after [`crate::PmiClient::finalize`] or
    /// [`crate::PmiClient::abort`].
    #[error("PMI {operation} after PMI {ended_by}: the client is closed")]
    Ended {
        /// The request.
        operation: &'static str,
        /// `finalize` or `abort`.
        ended_by: &'static str,
    },
}
