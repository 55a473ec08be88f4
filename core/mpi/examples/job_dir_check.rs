//! Checks of the job directory, run by `tools/mpirun/tests/job_dir.rs`:
//! `job_dir_check <finalize|exit|abort>`.
//!
//! Initializes, prints `job dir: <path>` (the path of
//! `Runtime::job_dir`), checks that it is a private directory, creates a
//! file and a subdirectory in it, and then ends: `finalize` finalizes and
//! prints `after finalize: gone` if the directory no longer exists (a
//! singleton's) or `after finalize: kept` (mpirun's, which mpirun
//! removes); `exit` exits with status 0 without finalizing (the exit
//! handler removes a singleton's directory); `abort` calls abort.

use oxmpi_mpi_core::{self as mpi, ThreadLevel};
use std::os::unix::fs::MetadataExt;
use std::process::exit;

fn fail(what: impl std::fmt::Display) -> ! {
    eprintln!("job_dir_check: {what}");
    exit(1)
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    if !matches!(mode.as_str(), "finalize" | "exit" | "abort") {
        fail(format!(
            "unknown mode {mode:?}: expected finalize, exit or abort"
        ));
    }
    let rt = mpi::init(ThreadLevel::Single).unwrap_or_else(|e| fail(e));
    let dir = rt.job_dir().unwrap_or_else(|e| fail(e)).to_path_buf();
    let again = rt.job_dir().unwrap_or_else(|e| fail(e));
    if again != dir {
        fail(format!(
            "job_dir changed: {} then {}",
            dir.display(),
            again.display()
        ));
    }
    let meta = std::fs::symlink_metadata(&dir).unwrap_or_else(|e| fail(e));
    if !meta.is_dir() || meta.mode() & 0o777 != 0o700 {
        fail(format!(
            "{} is not a directory of mode 700 (mode {:o})",
            dir.display(),
            meta.mode()
        ));
    }
    println!("job dir: {}", dir.display());
    let rank = rt.rank();
    std::fs::create_dir(dir.join(format!("sub{rank}"))).unwrap_or_else(|e| fail(e));
    std::fs::write(dir.join(format!("sub{rank}/segment")), b"data").unwrap_or_else(|e| fail(e));
    match mode.as_str() {
        "finalize" => {
            rt.finalize().unwrap_or_else(|e| fail(e));
            let state = if dir.exists() { "kept" } else { "gone" };
            println!("after finalize: {state}");
        }
        "exit" => exit(0),
        _ => rt.abort(3, "job_dir_check abort"),
    }
}
