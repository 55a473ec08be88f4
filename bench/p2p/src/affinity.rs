//! CPU pinning for the two-process floors: which CPUs this process may run
//! on, and binding it to one of them (as `mpirun --bind-to core` places
//! two ranks on the first two cores).

use std::io;

/// The CPUs this process may run on, in increasing order.
///
/// # Errors
/// A sentence naming the failed `sched_getaffinity` call and its cause.
pub fn allowed_cpus() -> Result<Vec<usize>, String> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity
    // writes at most the size passed, the set's own; CPU_ISSET reads bits
    // below CPU_SETSIZE, inside the set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(format!(
                "cannot read the CPU affinity: {} (use --no-bind)",
                io::Error::last_os_error()
            ));
        }
        Ok((0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect())
    }
}

/// Binds the calling thread to `cpu` (the whole process, for the
/// single-threaded benchmark programs).
///
/// # Errors
/// `cpu` beyond the affinity mask, or refused by `sched_setaffinity` (not
/// an allowed CPU, for instance), as a sentence.
pub fn pin_to(cpu: usize) -> Result<(), String> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(format!("cpu {cpu} is beyond the affinity mask"));
    }
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes the
    // bit of `cpu`, checked above to be below CPU_SETSIZE, inside it; the
    // size passed to sched_setaffinity is the set's own, which it only
    // reads.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(format!(
                "cannot bind to cpu {cpu}: {} (use --no-bind)",
                io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

/// Parses the value of `--cpu`, as a sentence on error.
pub fn parse_cpu(text: &str) -> Result<usize, String> {
    text.parse()
        .map_err(|_| format!("--cpu {text}: not a CPU number"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_may_run_somewhere_and_can_pin_there() {
        let cpus = allowed_cpus().expect("affinity readable");
        assert!(!cpus.is_empty());
        // Pin a helper thread only (the affinity call binds the calling
        // thread), so the test harness keeps its placement.
        let first = cpus[0];
        std::thread::spawn(move || {
            pin_to(first).expect("pin to an allowed cpu");
            assert_eq!(allowed_cpus().unwrap(), vec![first]);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn bad_cpus_are_refused_with_a_sentence() {
        assert!(pin_to(libc::CPU_SETSIZE as usize)
            .unwrap_err()
            .contains("beyond"));
        assert!(parse_cpu("x").unwrap_err().contains("--cpu x"));
        assert_eq!(parse_cpu("3"), Ok(3));
    }
}
