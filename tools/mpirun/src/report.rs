//! Why a job ended, and the one report mpirun prints about it.

use nix::sys::signal::Signal;

/// The first thing that went wrong in a job.
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    /// A rank exited with a non-zero status.
    Exited {
        /// The rank (in MPI_COMM_WORLD).
        rank: u32,
        /// Its process id.
        pid: i32,
        /// Its exit status.
        code: i32,
    },
    /// A rank was killed by a signal.
    Signaled {
        /// The rank (in MPI_COMM_WORLD).
        rank: u32,
        /// Its process id.
        pid: i32,
        /// The signal's number.
        signal: i32,
    },
    /// A rank exited before finalizing its PMI session.
    NoFinalize {
        /// The rank (in MPI_COMM_WORLD).
        rank: u32,
        /// Its process id.
        pid: i32,
        /// Its exit status (possibly 0).
        code: i32,
    },
    /// A rank called abort.
    Aborted {
        /// The rank (in MPI_COMM_WORLD).
        rank: u32,
        /// Its process id.
        pid: i32,
        /// The error code the rank passed to abort.
        code: i32,
        /// The message the rank gave with it, if any.
        message: Option<String>,
    },
    /// `--timeout` expired.
    Timeout {
        /// The `--timeout` value.
        seconds: f64,
    },
    /// mpirun received a terminating signal.
    Interrupted {
        /// The signal's number.
        signal: i32,
    },
    /// A rank could not be started, or the job could not go on (the
    /// message says why).
    Launch {
        /// What went wrong, as one sentence.
        message: String,
    },
    /// The reader of mpirun's standard output went away (`mpirun ... |
    /// head`): the job is stopped as a pipeline's writer would be.
    OutputClosed,
}

/// `SIGSEGV (Segmentation fault)`.
pub fn signal_name(signal: i32) -> String {
    let name = Signal::try_from(signal)
        .map(|s| s.as_str().to_string())
        .unwrap_or_else(|_| format!("signal {signal}"));
    // SAFETY: strsignal returns null or a NUL-terminated string that stays
    // valid until this thread calls it again (glibc keeps the buffer per
    // thread); it is copied out before anything else runs here.
    let text = unsafe {
        let p = libc::strsignal(signal);
        if p.is_null() {
            String::new()
        } else {
            std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    if text.is_empty() {
        name
    } else {
        format!("{name} ({text})")
    }
}

impl Failure {
    /// The rank that failed, if a rank did.
    pub fn rank(&self) -> Option<u32> {
        match self {
            Failure::Exited { rank, .. }
            | Failure::Signaled { rank, .. }
            | Failure::NoFinalize { rank, .. }
            | Failure::Aborted { rank, .. } => Some(*rank),
            _ => None,
        }
    }

    /// mpirun's exit status for this failure.
    pub fn exit_status(&self) -> i32 {
        match self {
            Failure::Exited { code, .. } => *code,
            Failure::Signaled { signal, .. } | Failure::Interrupted { signal } => 128 + signal,
            Failure::NoFinalize { code, .. } => {
                if *code != 0 {
                    *code
                } else {
                    1
                }
            }
            Failure::Aborted { code, .. } => {
                if *code != 0 {
                    *code
                } else {
                    1
                }
            }
            Failure::Timeout { .. } => 124,
            Failure::Launch { .. } => 1,
            Failure::OutputClosed => 128 + libc::SIGPIPE,
        }
    }

    /// The report: what happened, to which rank, where.
    pub fn describe(&self, host: &str) -> String {
        match self {
            Failure::Exited { rank, pid, code } => {
                format!("rank {rank} (pid {pid}) on host {host} exited with status {code}")
            }
            Failure::Signaled { rank, pid, signal } => format!(
                "rank {rank} (pid {pid}) on host {host} was killed by signal {signal}, {}",
                signal_name(*signal)
            ),
            Failure::NoFinalize { rank, pid, code } => format!(
                "rank {rank} (pid {pid}) on host {host} exited with status {code} without finalizing MPI (it never called MPI_Finalize)"
            ),
            Failure::Aborted { rank, pid, code, message } => match message {
                Some(m) if !m.is_empty() => format!(
                    "rank {rank} (pid {pid}) on host {host} called MPI_Abort with error code {code}: {m}"
                ),
                _ => format!("rank {rank} (pid {pid}) on host {host} called MPI_Abort with error code {code}"),
            },
            Failure::Timeout { seconds } => format!("the job ran longer than --timeout {seconds} seconds"),
            Failure::Interrupted { signal } => format!("mpirun received {}", signal_name(*signal)),
            Failure::Launch { message } => message.clone(),
            Failure::OutputClosed => {
                "the reader of mpirun's standard output closed it (broken pipe)".to_string()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_statuses() {
        assert_eq!(signal_name(11), "SIGSEGV (Segmentation fault)");
        assert_eq!(
            Failure::Signaled {
                rank: 0,
                pid: 1,
                signal: 11
            }
            .exit_status(),
            139
        );
        assert_eq!(
            Failure::Exited {
                rank: 0,
                pid: 1,
                code: 7
            }
            .exit_status(),
            7
        );
        assert_eq!(
            Failure::Aborted {
                rank: 0,
                pid: 1,
                code: 3,
                message: None
            }
            .exit_status(),
            3
        );
        assert_eq!(Failure::Timeout { seconds: 1.0 }.exit_status(), 124);
        let d = Failure::Aborted {
            rank: 2,
            pid: 9,
            code: 5,
            message: Some("bad input".into()),
        }
        .describe("h");
        assert_eq!(
            d,
            "rank 2 (pid 9) on host h called MPI_Abort with error code 5: bad input"
        );
    }
}
