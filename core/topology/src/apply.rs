//! Applying a binding: to the current process, or to a child between fork
//! and exec; and reading a process's binding back from `/proc`.
//!
//! CPU numbers here are OS indexes (Linux CPU numbers), as
//! [`compute_bindings`](crate::binding::compute_bindings) returns them.
//!
//! For a child, build a [`PreparedBinding`] before forking and call
//! [`PreparedBinding::apply_in_child`] in the child (e.g. from
//! `std::os::unix::process::CommandExt::pre_exec`): it only makes one system
//! call on memory prepared earlier, so it is async-signal-safe and does not
//! allocate. The binding then holds before the program's first instruction
//! and is inherited by every thread it creates.

use std::io;

use thiserror::Error;

use crate::cpulist::{CpuList, CpuListError, MAX_CPU_INDEX};

const WORD_BITS: usize = libc::c_ulong::BITS as usize;

/// The smallest mask passed to the kernel: glibc's `cpu_set_t` (1024 CPUs).
const MIN_WORDS: usize =
    std::mem::size_of::<libc::cpu_set_t>() / std::mem::size_of::<libc::c_ulong>();

/// Why a binding could not be applied or read.
#[derive(Debug, Error)]
pub enum ApplyError {
    /// Binding to no CPU at all is impossible.
    #[error("cannot bind to an empty CPU set")]
    EmptySet,
    /// A CPU number above [`MAX_CPU_INDEX`].
    #[error("cannot bind to CPU {cpu}: above the maximum {max}")]
    CpuTooLarge {
        /// The CPU number.
        cpu: usize,
        /// [`MAX_CPU_INDEX`].
        max: usize,
    },
    /// The kernel refused the binding (`EINVAL` when none of the CPUs is
    /// online or allowed by the cgroup).
    #[error("sched_setaffinity failed: {0}")]
    SetAffinity(#[source] io::Error),
    /// The kernel refused to tell this process's binding.
    #[error("sched_getaffinity failed: {0}")]
    GetAffinity(#[source] io::Error),
    /// `/proc/PID/status` could not be read (no such process, no /proc).
    #[error("cannot read /proc/{pid}/status: {source}")]
    ReadStatus {
        /// The process.
        pid: u32,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// `/proc/PID/status` has no `Cpus_allowed_list:` line.
    #[error("/proc/{pid}/status has no Cpus_allowed_list line")]
    NoCpusAllowedList {
        /// The process.
        pid: u32,
    },
    /// The `Cpus_allowed_list:` line could not be parsed.
    #[error("/proc/{pid}/status: bad Cpus_allowed_list: {source}")]
    BadCpusAllowedList {
        /// The process.
        pid: u32,
        /// The parse error.
        #[source]
        source: CpuListError,
    },
}

/// A CPU mask ready for `sched_setaffinity`, built before `fork` so the
/// child needs no allocation. Sized for the largest CPU in the set (at least
/// glibc's 1024-CPU `cpu_set_t`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreparedBinding {
    mask: Box<[libc::c_ulong]>,
}

impl PreparedBinding {
    /// Build the mask for these CPUs (OS indexes).
    ///
    /// # Errors
    ///
    /// [`ApplyError::EmptySet`] for an empty list, [`ApplyError::CpuTooLarge`]
    /// for a CPU above [`MAX_CPU_INDEX`].
    pub fn new(cpus: &CpuList) -> Result<PreparedBinding, ApplyError> {
        let Some(&max) = cpus.as_slice().last() else {
            return Err(ApplyError::EmptySet);
        };
        if max > MAX_CPU_INDEX {
            return Err(ApplyError::CpuTooLarge {
                cpu: max,
                max: MAX_CPU_INDEX,
            });
        }
        let words = (max / WORD_BITS + 1).max(MIN_WORDS);
        let mut mask = vec![0 as libc::c_ulong; words].into_boxed_slice();
        for cpu in cpus.iter() {
            mask[cpu / WORD_BITS] |= 1 << (cpu % WORD_BITS);
        }
        Ok(PreparedBinding { mask })
    }

    /// Bind the calling thread (in a freshly forked child: the whole
    /// process, which has one thread). Async-signal-safe, allocation-free:
    /// safe between `fork` and `exec`.
    ///
    /// # Errors
    ///
    /// The OS error of `sched_setaffinity` (an `io::Error` built from
    /// `errno`, without allocating).
    pub fn apply_in_child(&self) -> io::Result<()> {
        self.apply_to(0)
    }

    fn apply_to(&self, tid: libc::pid_t) -> io::Result<()> {
        // SAFETY: the pointer and byte length describe our own live mask;
        // the kernel only reads it (any length is accepted: shorter masks
        // are zero-extended, longer ones truncated to the kernel's size).
        let rc = unsafe {
            libc::sched_setaffinity(
                tid,
                std::mem::size_of_val(&*self.mask),
                self.mask.as_ptr().cast::<libc::cpu_set_t>(),
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

/// Bind every thread of the current process to these CPUs (OS indexes);
/// threads created later inherit the binding from their creator. Threads
/// that exit meanwhile are skipped.
///
/// # Errors
///
/// As [`PreparedBinding::new`], and [`ApplyError::SetAffinity`] when the
/// kernel refuses (the first refusal; threads handled before it stay bound).
pub fn bind_current_process(cpus: &CpuList) -> Result<(), ApplyError> {
    let prepared = PreparedBinding::new(cpus)?;
    let tids: Vec<libc::pid_t> = std::fs::read_dir("/proc/self/task")
        .map(|dir| {
            dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    if tids.is_empty() {
        // No /proc: at least the calling thread.
        return prepared.apply_to(0).map_err(ApplyError::SetAffinity);
    }
    for tid in tids {
        match prepared.apply_to(tid) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
            Err(e) => return Err(ApplyError::SetAffinity(e)),
        }
    }
    Ok(())
}

/// The calling thread's binding (OS indexes), from `sched_getaffinity`.
///
/// # Errors
///
/// [`ApplyError::GetAffinity`] when the kernel refuses.
pub fn current_binding() -> Result<CpuList, ApplyError> {
    let mut mask = vec![0 as libc::c_ulong; (MAX_CPU_INDEX + 1) / WORD_BITS];
    // SAFETY: the kernel writes at most the given number of bytes into our
    // buffer.
    let rc = unsafe {
        libc::sched_getaffinity(
            0,
            std::mem::size_of_val(&*mask),
            mask.as_mut_ptr().cast::<libc::cpu_set_t>(),
        )
    };
    if rc != 0 {
        return Err(ApplyError::GetAffinity(io::Error::last_os_error()));
    }
    Ok(mask
        .iter()
        .enumerate()
        .flat_map(|(w, &word)| {
            (0..WORD_BITS)
                .filter(move |b| word & (1 << b) != 0)
                .map(move |b| w * WORD_BITS + b)
        })
        .collect())
}

/// A process's binding as the kernel reports it: the `Cpus_allowed_list:`
/// line of `/proc/PID/status` (OS indexes; for a multi-threaded process,
/// its main thread's).
///
/// # Errors
///
/// [`ApplyError::ReadStatus`] (no such process, no `/proc`),
/// [`ApplyError::NoCpusAllowedList`], [`ApplyError::BadCpusAllowedList`].
pub fn read_cpus_allowed(pid: u32) -> Result<CpuList, ApplyError> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|source| ApplyError::ReadStatus { pid, source })?;
    parse_cpus_allowed(&status, pid)
}

fn parse_cpus_allowed(status: &str, pid: u32) -> Result<CpuList, ApplyError> {
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .ok_or(ApplyError::NoCpusAllowedList { pid })?;
    CpuList::parse(line).map_err(|source| ApplyError::BadCpusAllowedList { pid, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepared_mask_bits() {
        let p = PreparedBinding::new(&CpuList::parse("0,2,65").unwrap()).unwrap();
        assert_eq!(p.mask.len(), MIN_WORDS);
        assert_eq!(p.mask[0], 0b101);
        assert_eq!(p.mask[65 / WORD_BITS], 1 << (65 % WORD_BITS));
        let p = PreparedBinding::new(&CpuList::parse("4000").unwrap()).unwrap();
        assert_eq!(p.mask.len(), 4000 / WORD_BITS + 1);
        assert!(matches!(
            PreparedBinding::new(&CpuList::new()),
            Err(ApplyError::EmptySet)
        ));
        let huge: CpuList = [MAX_CPU_INDEX + 1].into_iter().collect();
        assert!(matches!(
            PreparedBinding::new(&huge),
            Err(ApplyError::CpuTooLarge { cpu, .. }) if cpu == MAX_CPU_INDEX + 1
        ));
    }

    #[test]
    fn parses_status_text() {
        let status = "Name:\tsleep\nCpus_allowed:\t2\nCpus_allowed_list:\t1\nMems_allowed:\t1\n";
        assert_eq!(parse_cpus_allowed(status, 7).unwrap().to_string(), "1");
        let status = "Cpus_allowed_list:\t0-3,8\n";
        assert_eq!(parse_cpus_allowed(status, 7).unwrap().to_string(), "0-3,8");
        assert!(matches!(
            parse_cpus_allowed("Name:\tx\n", 7),
            Err(ApplyError::NoCpusAllowedList { pid: 7 })
        ));
        assert!(matches!(
            parse_cpus_allowed("Cpus_allowed_list:\tzz\n", 7),
            Err(ApplyError::BadCpusAllowedList { pid: 7, .. })
        ));
    }

    #[test]
    fn reads_own_binding() {
        let own = read_cpus_allowed(std::process::id()).unwrap();
        assert!(!own.is_empty());
        // Nothing in this test binary binds its threads.
        assert_eq!(current_binding().unwrap(), own);
        assert!(matches!(
            read_cpus_allowed(u32::MAX),
            Err(ApplyError::ReadStatus { .. })
        ));
    }
}
