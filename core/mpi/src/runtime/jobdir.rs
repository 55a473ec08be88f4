//! The job directory ([`Runtime::job_dir`](super::Runtime::job_dir)):
//! mpirun's, checked, or a singleton's own, made on first use and removed
//! at finalize and at exit.

use oxmpi_pmi::jobdir::{self, JobDir};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once};

/// The singleton's own directory, until finalize or exit removes it.
static OWNED: Mutex<Option<JobDir>> = Mutex::new(None);

/// Finds the job directory: `OXMPI_JOB_DIR` if the launcher set it
/// (checked), else, for a process alone in its job, a new directory of its
/// own (and directories other singletons killed with SIGKILL left are
/// removed).
///
/// # Errors
/// The launcher's directory cannot be used, a job of several processes
/// has none (a launcher other than mpirun), or a singleton's cannot be
/// created; the message says which and what to do.
pub(super) fn resolve(size: u32, job_id: u64) -> Result<PathBuf, String> {
    if let Some(given) = std::env::var_os(jobdir::JOB_DIR_VAR) {
        let path = PathBuf::from(given);
        jobdir::check_given(&path)?;
        return Ok(path);
    }
    if size != 1 {
        return Err(format!(
            "this job has no job directory: its launcher did not set {} (mpirun does); run it with oxmpi's mpirun to use components that share files between its processes",
            jobdir::JOB_DIR_VAR
        ));
    }
    let path = jobdir::default_path(job_id);
    let dir = JobDir::create(&path)?;
    jobdir::sweep_stale(path.parent().unwrap_or(Path::new("/")), Some(&path));
    *OWNED.lock().unwrap_or_else(|e| e.into_inner()) = Some(dir);
    static AT_EXIT: Once = Once::new();
    AT_EXIT.call_once(|| {
        // SAFETY: `remove_at_exit` is an `extern "C" fn()` that lives for
        // the whole program and never unwinds; registering it has no other
        // precondition. If registration fails, finalize still removes the
        // directory.
        unsafe { libc::atexit(remove_at_exit) };
    });
    Ok(path)
}

/// Removes the singleton's own directory, if it made one.
pub(super) fn remove_own() -> Result<(), String> {
    let dir = OWNED.lock().unwrap_or_else(|e| e.into_inner()).take();
    dir.map_or(Ok(()), JobDir::remove)
}

/// At process exit: removes the singleton's directory, unless another
/// thread holds the lock (it is then removing it itself).
extern "C" fn remove_at_exit() {
    let dir = match OWNED.try_lock() {
        Ok(mut owned) => owned.take(),
        Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner().take(),
        Err(std::sync::TryLockError::WouldBlock) => None,
    };
    if let Some(dir) = dir {
        let _ = dir.remove();
    }
}
