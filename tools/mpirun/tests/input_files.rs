//! Files given to mpirun that are not small regular text files: a device
//! (`/dev/zero`), a FIFO, a huge file, a 5 MB line — as `--hostfile`,
//! `--tune` or in `mca_base_param_files`. mpirun must refuse each at once
//! with a short error naming the file, never block, never read without
//! end. Every run gets 30 s and at most 2 GiB of address space, so a
//! regression fails the test instead of filling the machine's memory.

mod common;

use common::*;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);

/// Runs `mpirun --do-not-launch ARGS` with `env` added; returns the run.
fn run(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut full = vec!["--do-not-launch"];
    full.extend_from_slice(args);
    let (mut cmd, marker) = command(&full);
    for (key, _) in std::env::vars() {
        if key.starts_with("SLURM_") || key.starts_with("OXMPI_MCA_") {
            cmd.env_remove(&key);
        }
    }
    for (key, value) in env {
        cmd.env(key, value);
    }
    // SAFETY: between fork and exec the closure only calls setrlimit, which
    // is async-signal-safe and reads a local struct, and on failure builds
    // an io::Error from errno, which allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 2 << 30,
                rlim_max: 2 << 30,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn().expect("mpirun starts");
    let run = wait_with_timeout(child, LIMIT, &marker);
    assert_no_survivors(&marker);
    run
}

/// A run that must fail: exit 1, nothing on stdout; returns stderr.
fn fails(args: &[&str], env: &[(&str, &str)]) -> String {
    let r = run(args, env);
    assert_eq!(r.code(), 1, "mpirun {args:?}: {}", r.stderr);
    assert_eq!(r.stdout, "");
    assert!(
        r.stderr.len() < 2000,
        "{} bytes on stderr: {}",
        r.stderr.len(),
        &r.stderr[..2000]
    );
    r.stderr
}

fn mkfifo(path: &Path) -> PathBuf {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c` is a NUL-terminated path that lives across the call.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(rc, 0, "mkfifo {}", path.display());
    path.to_path_buf()
}

#[test]
fn hostfile_dev_zero() {
    let stderr = fails(&["--hostfile", "/dev/zero", "-n", "1", "true"], &[]);
    assert_eq!(
        stderr,
        "mpirun: error: hostfile /dev/zero is a character device, not a regular file, and was not read (reading a device or a pipe may block or never end); give the path of a regular text file; the path was given with --hostfile\n"
    );
}

#[test]
fn hostfile_fifo_does_not_block() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = mkfifo(&dir.path().join("hosts"));
    let stderr = fails(
        &["--hostfile", fifo.to_str().unwrap(), "-n", "1", "true"],
        &[],
    );
    assert!(
        stderr.contains(&format!(
            "hostfile {} is a FIFO (named pipe), not a regular file",
            fifo.display()
        )),
        "{stderr}"
    );
}

#[test]
fn hostfile_too_large() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hosts");
    std::fs::write(&path, "#".repeat(2 << 20)).unwrap();
    let stderr = fails(
        &["--hostfile", path.to_str().unwrap(), "-n", "1", "true"],
        &[],
    );
    assert!(
        stderr.contains(
            "is 2097152 bytes (2 MiB), more than such a file may hold (1048576 bytes (1 MiB))"
        ),
        "{stderr}"
    );
}

#[test]
fn hostfile_long_line_is_quoted_short() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hosts");
    // Under the size limit, one bad line of 900 KB.
    std::fs::write(&path, format!("a {}\n", "x".repeat(900_000))).unwrap();
    let stderr = fails(
        &["--hostfile", path.to_str().unwrap(), "-n", "1", "true"],
        &[],
    );
    assert!(
        stderr.starts_with(&format!(
            "mpirun: error: {}:1: unexpected \"x",
            path.display()
        )),
        "{stderr}"
    );
    assert!(stderr.contains("…(900000 bytes)"), "{stderr}");
}

#[test]
fn tune_dev_zero() {
    let stderr = fails(&["--tune", "/dev/zero", "-n", "1", "true"], &[]);
    assert!(
        stderr.starts_with(
            "mpirun: error: tune file /dev/zero is a character device, not a regular file"
        ),
        "{stderr}"
    );
}

#[test]
fn tune_fifo_does_not_block() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = mkfifo(&dir.path().join("job.tune"));
    let stderr = fails(&["--tune", fifo.to_str().unwrap(), "-n", "1", "true"], &[]);
    assert!(stderr.contains("is a FIFO (named pipe)"), "{stderr}");
}

#[test]
fn param_files_dev_zero() {
    let stderr = fails(
        &["-n", "1", "true"],
        &[("OXMPI_MCA_mca_base_param_files", "/dev/zero")],
    );
    assert!(
        stderr.starts_with(
            "mpirun: error: parameter file /dev/zero is a character device, not a regular file"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("mca_base_param_files lists it (set by environment)"),
        "{stderr}"
    );
}
