//! What a job of N ranks needs from this machine, checked before anything
//! starts: open descriptors in mpirun (it raises its soft limit to the hard
//! one first, as the shell's `ulimit -n` would allow) and processes (each
//! rank is two: the program and its supervisor).

use std::sync::atomic::{AtomicU64, Ordering};

/// Descriptors mpirun holds for every rank: the PMI socket, standard output
/// and error, standard input when forwarded, and two output files with
/// `--output-filename`.
pub fn descriptors_per_rank(forwards_stdin: bool, output_files: bool) -> u64 {
    3 + u64::from(forwards_stdin) + if output_files { 2 } else { 0 }
}

/// Descriptors mpirun needs besides the ranks' (standard streams, the
/// signalfd, the guardian, loaded libraries, the pipes of the rank being
/// started).
pub const BASE_DESCRIPTORS: u64 = 64;

/// Processes per rank: the program and its supervisor.
pub const PROCESSES_PER_RANK: u64 = 2;

/// The soft descriptor limit mpirun started with, which every rank gets
/// back before its program starts (0 until [`raise_descriptor_limit`] ran).
static ORIGINAL_SOFT_DESCRIPTORS: AtomicU64 = AtomicU64::new(0);

/// Raises the soft limit on open descriptors to the hard limit; returns the
/// limit now in force. The ranks get the original soft limit back
/// ([`restore_descriptor_limit_in_child`]).
pub fn raise_descriptor_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid rlimit struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 1024;
        }
        ORIGINAL_SOFT_DESCRIPTORS.store(limit.rlim_cur, Ordering::Relaxed);
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit.rlim_cur = limit.rlim_max;
            }
        }
    }
    limit.rlim_cur
}

/// Gives a child (between fork and exec) the soft descriptor limit mpirun
/// started with; only async-signal-safe calls.
pub fn restore_descriptor_limit_in_child() {
    let original = ORIGINAL_SOFT_DESCRIPTORS.load(Ordering::Relaxed);
    if original == 0 {
        return;
    }
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid rlimit struct; both are
    // async-signal-safe system calls.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur = original as libc::rlim_t;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// The machine's process limits that a job must fit in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessLimits {
    /// `kernel.pid_max`.
    pub pid_max: u64,
    /// `kernel.threads-max`.
    pub threads_max: u64,
    /// Threads running on the machine now.
    pub threads_now: u64,
    /// The soft `RLIMIT_NPROC` of this user, unless unlimited (or root,
    /// for whom the kernel does not apply it).
    pub user_max: Option<u64>,
}

impl ProcessLimits {
    /// Reads the limits of this machine; `None` where a value is unknown.
    pub fn read() -> Option<ProcessLimits> {
        let number =
            |path: &str| -> Option<u64> { std::fs::read_to_string(path).ok()?.trim().parse().ok() };
        // /proc/loadavg: "0.49 0.52 0.30 1/93 18339", the fourth field is
        // running/total scheduling entities (threads).
        let threads_now = std::fs::read_to_string("/proc/loadavg")
            .ok()?
            .split_whitespace()
            .nth(3)?
            .split_once('/')?
            .1
            .parse()
            .ok()?;
        let mut nproc = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit with a valid rlimit struct; geteuid has no
        // preconditions.
        let user_max = unsafe {
            (libc::getrlimit(libc::RLIMIT_NPROC, &mut nproc) == 0
                && nproc.rlim_cur != libc::RLIM_INFINITY
                && libc::geteuid() != 0)
                .then_some(nproc.rlim_cur)
        };
        Some(ProcessLimits {
            pid_max: number("/proc/sys/kernel/pid_max")?,
            threads_max: number("/proc/sys/kernel/threads-max")?,
            threads_now,
            user_max,
        })
    }
}

/// Checks that `ranks` ranks fit in `descriptor_limit` and `processes`.
///
/// # Errors
/// One message naming the limit, what the job needs and what to do.
pub fn check_capacity(
    ranks: u64,
    per_rank_descriptors: u64,
    descriptor_limit: u64,
    processes: Option<ProcessLimits>,
) -> Result<(), String> {
    let descriptors = BASE_DESCRIPTORS + ranks * per_rank_descriptors;
    if descriptors > descriptor_limit {
        let fit = descriptor_limit.saturating_sub(BASE_DESCRIPTORS) / per_rank_descriptors;
        return Err(format!(
            "-n {ranks}: mpirun needs about {descriptors} open files for {ranks} ranks ({per_rank_descriptors} per rank), but this process may open only {descriptor_limit} (the hard limit of `ulimit -n`); at most about {fit} ranks fit: run fewer ranks, or have the administrator raise the hard limit (limits.conf nofile)"
        ));
    }
    if let Some(p) = processes {
        let needed = ranks * PROCESSES_PER_RANK;
        let system_room = p.pid_max.min(p.threads_max).saturating_sub(p.threads_now);
        if needed > system_room {
            return Err(format!(
                "-n {ranks}: the job needs {needed} processes (each rank and its supervisor), but this machine has room for only {system_room} more (kernel.pid_max {}, kernel.threads-max {}, {} in use); run fewer ranks",
                p.pid_max, p.threads_max, p.threads_now
            ));
        }
        if let Some(user_max) = p.user_max {
            if needed > user_max {
                return Err(format!(
                    "-n {ranks}: the job needs {needed} processes (each rank and its supervisor), but this user may run at most {user_max} (the soft limit of `ulimit -u`); run fewer ranks or raise the limit"
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOMY: ProcessLimits = ProcessLimits {
        pid_max: 4_194_304,
        threads_max: 1_000_000,
        threads_now: 100,
        user_max: None,
    };

    #[test]
    fn descriptors_bound_the_job_size() {
        assert!(check_capacity(200, 3, 1024, Some(ROOMY)).is_ok());
        let e = check_capacity(1000, 3, 1024, Some(ROOMY)).unwrap_err();
        assert!(
            e.contains("-n 1000") && e.contains("3064 open files"),
            "{e}"
        );
        assert!(e.contains("at most about 320 ranks"), "{e}");
        assert!(check_capacity(1000, 6, 20_000, Some(ROOMY)).is_ok());
    }

    #[test]
    fn processes_bound_the_job_size() {
        let small = ProcessLimits {
            pid_max: 32_768,
            threads_now: 93,
            ..ROOMY
        };
        let e = check_capacity(100_000, 3, u64::MAX, Some(small)).unwrap_err();
        assert!(
            e.contains("200000 processes") && e.contains("32675 more"),
            "{e}"
        );
        let user = ProcessLimits {
            user_max: Some(100),
            ..ROOMY
        };
        let e = check_capacity(64, 3, 4096, Some(user)).unwrap_err();
        assert!(e.contains("at most 100") && e.contains("ulimit -u"), "{e}");
        assert!(check_capacity(50, 3, 4096, Some(user)).is_ok());
        assert!(check_capacity(50, 3, 4096, None).is_ok());
    }

    #[test]
    fn this_machine_reports_its_limits() {
        let p = ProcessLimits::read().expect("Linux /proc");
        assert!(p.pid_max > 0 && p.threads_max > 0 && p.threads_now > 0);
        assert!(raise_descriptor_limit() >= 3);
    }
}
