//! The job directory: private while the job runs, gone when it ends,
//! however it ends (normally, a failing or killed rank, `--timeout`, a
//! signal to mpirun, mpirun killed with SIGKILL), never a path mpirun did
//! not create; and a singleton's own directory.

mod common;

use common::*;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A rank's script: print the job directory, then its `stat` (mode, owner,
/// type), then put a file and a subdirectory with a file in it.
const SHOW_AND_FILL: &str = r#"D="$OXMPI_JOB_DIR"; echo "dir $D"; stat -c "stat %a %u %F" "$D"; mkdir "$D/sub$OXMPI_COMM_WORLD_RANK" && echo x > "$D/sub$OXMPI_COMM_WORLD_RANK/segment" && echo x > "$D/file$OXMPI_COMM_WORLD_RANK""#;

fn uid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// The one job directory the ranks printed (`dir PATH` lines).
fn printed_dir(stdout: &str) -> PathBuf {
    let dirs: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("dir "))
        .collect();
    assert!(
        !dirs.is_empty(),
        "no rank printed its job directory: {stdout}"
    );
    assert!(
        dirs.iter().all(|d| *d == dirs[0]),
        "ranks got different job directories: {dirs:?}"
    );
    assert!(!dirs[0].is_empty(), "OXMPI_JOB_DIR was empty");
    PathBuf::from(dirs[0])
}

fn assert_gone(dir: &Path, context: &str) {
    assert!(
        std::fs::symlink_metadata(dir).is_err(),
        "{context}: the job directory {} is still there",
        dir.display()
    );
}

/// Waits until `dir` is gone, at most `limit`.
fn wait_gone(dir: &Path, limit: Duration, context: &str) {
    let start = Instant::now();
    while std::fs::symlink_metadata(dir).is_ok() && start.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_gone(dir, context);
}

#[test]
fn private_while_the_job_runs_and_gone_with_its_files_after() {
    let run = mpirun(&["-n", "2", "sh", "-c", SHOW_AND_FILL]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    let dir = printed_dir(&run.stdout);
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with(&format!("oxmpi-{}-", uid())),
        "the name {name} names the user"
    );
    let stats: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("stat "))
        .collect();
    assert_eq!(
        stats,
        vec![format!("stat 700 {} directory", uid()); 2],
        "{}",
        run.stdout
    );
    assert_gone(&dir, "after a normal end");
}

#[test]
fn under_dev_shm_when_it_is_a_writable_tmpfs() {
    let shm_usable = nix::sys::statfs::statfs("/dev/shm")
        .is_ok_and(|s| s.filesystem_type() == nix::sys::statfs::TMPFS_MAGIC)
        && nix::unistd::access("/dev/shm", nix::unistd::AccessFlags::W_OK).is_ok();
    let tmpdir = tempfile::tempdir().unwrap();
    let run = mpirun_in(
        &["-n", "1", "sh", "-c", "echo dir $OXMPI_JOB_DIR"],
        &["OXMPI_JOB_DIR_BASE"],
        &[("TMPDIR", tmpdir.path())],
    );
    assert_eq!(run.code(), 0, "{}", run.stderr);
    let dir = printed_dir(&run.stdout);
    let expected = if shm_usable {
        Path::new("/dev/shm")
    } else {
        tmpdir.path()
    };
    assert_eq!(dir.parent().unwrap(), expected);
    assert_gone(&dir, "after the job");
}

#[test]
fn gone_after_a_failing_rank_and_after_a_killed_rank() {
    for (code, end) in [(3, "exit 3"), (128 + 9, "kill -9 $$")] {
        let script =
            format!("{SHOW_AND_FILL}; if [ $OXMPI_COMM_WORLD_RANK = 1 ]; then {end}; fi; sleep 30");
        let run = mpirun(&["-n", "2", "sh", "-c", &script]);
        assert_eq!(run.code(), code, "{end}: {}", run.stderr);
        assert_gone(&printed_dir(&run.stdout), end);
    }
}

#[test]
fn gone_after_the_timeout() {
    let script = format!("{SHOW_AND_FILL}; sleep 30");
    let run = mpirun(&["--timeout", "1", "-n", "2", "sh", "-c", &script]);
    assert_eq!(run.code(), 124, "{}", run.stderr);
    assert_gone(&printed_dir(&run.stdout), "after --timeout");
}

/// Starts a job whose ranks print their directory and sleep; returns
/// mpirun, its marker and the directory once a rank printed it.
fn start_sleeping_job() -> (std::process::Child, String, PathBuf) {
    let script = format!("{SHOW_AND_FILL}; sleep 30 & sleep 30; wait");
    let (mut cmd, marker) = command(&["-n", "2", "sh", "-c", &script]);
    let mut child = cmd.spawn().unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if let Some(d) = line.strip_prefix("dir ") {
                let _ = tx.send(PathBuf::from(d));
            }
        }
    });
    let dir = match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(d) => d,
        Err(_) => {
            let _ = nix::sys::signal::killpg(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
            let _ = child.wait();
            panic!("no rank printed its job directory within 20 s");
        }
    };
    // Both ranks filled it.
    let start = Instant::now();
    while !(dir.join("file0").exists() && dir.join("file1").exists()) {
        if start.elapsed() > Duration::from_secs(20) {
            let _ = nix::sys::signal::killpg(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
            let _ = child.wait();
            panic!("the ranks did not fill {} within 20 s", dir.display());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    (child, marker, dir)
}

#[test]
fn gone_after_mpirun_is_signalled() {
    let (child, marker, dir) = start_sleeping_job();
    assert!(dir.join("sub0").is_dir() || dir.join("sub1").is_dir());
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    let run = wait_with_timeout(child, Duration::from_secs(20), &marker);
    assert_eq!(run.code(), 128 + 15, "{}", run.stderr);
    assert_no_survivors(&marker);
    assert_gone(&dir, "after SIGTERM to mpirun");
}

#[test]
fn the_guardian_removes_it_when_mpirun_is_killed() {
    let (mut child, marker, dir) = start_sleeping_job();
    let meta = std::fs::symlink_metadata(&dir).expect("the job directory exists while it runs");
    assert!(meta.is_dir());
    assert_eq!(meta.mode() & 0o777, 0o700);
    child.kill().unwrap(); // SIGKILL: mpirun cannot clean up
    child.wait().unwrap();
    wait_gone(&dir, Duration::from_secs(10), "after SIGKILL of mpirun");
    assert_no_survivors(&marker);
}

#[test]
fn an_existing_symlink_at_the_path_is_refused_and_not_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("target");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("precious"), b"keep").unwrap();
    let link = tmp.path().join("job");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let ran = tmp.path().join("ran");
    let script = format!("touch {}", ran.display());
    let run = mpirun_in(
        &["-n", "1", "sh", "-c", &script],
        &[],
        &[("OXMPI_TEST_JOB_DIR", &link)],
    );
    assert_eq!(run.code(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "cannot create the job directory {}",
            link.display()
        )) && run.stderr.contains("symbolic link"),
        "{}",
        run.stderr
    );
    assert!(!ran.exists(), "the job ran anyway");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read(target.join("precious")).unwrap(), b"keep");
    assert_eq!(std::fs::read_dir(&target).unwrap().count(), 1);
}

#[test]
fn an_existing_directory_at_the_path_is_refused_and_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("job");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("theirs"), b"x").unwrap();
    let run = mpirun_in(&["-n", "1", "true"], &[], &[("OXMPI_TEST_JOB_DIR", &dir)]);
    assert_eq!(run.code(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("already exists"), "{}", run.stderr);
    assert!(dir.join("theirs").exists());
}

#[test]
fn mpi_ranks_get_mpiruns_directory_and_mpirun_removes_it() {
    let program = built("job_dir_check").display().to_string();
    let run = mpirun(&["-n", "2", &program, "finalize"]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    let dirs: Vec<&str> = run
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("job dir: "))
        .collect();
    assert_eq!(dirs.len(), 2, "{}", run.stdout);
    assert_eq!(dirs[0], dirs[1]);
    assert_eq!(
        run.stdout.matches("after finalize: kept").count(),
        2,
        "a rank's finalize leaves mpirun's directory to mpirun: {}",
        run.stdout
    );
    assert_gone(Path::new(dirs[0]), "after the MPI job");
}

/// Runs `job_dir_check MODE` alone (a singleton) with its job directories
/// under `base`; returns its exit status, output and directory.
fn singleton(mode: &str, base: &Path) -> (i32, String, PathBuf) {
    let program = built("job_dir_check");
    let mut cmd = Command::new(&program);
    cmd.arg(mode)
        .env("OXMPI_JOB_DIR_BASE", base)
        .env_remove("OXMPI_JOB_DIR")
        .env_remove("OXMPI_JOB_ID")
        .env_remove("OXMPI_JOB_SECRET")
        .env_remove("PMI_FD")
        .env_remove("PMI_PORT")
        .env_remove("OXMPI_PREFIX")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let marker = format!("oxmpi-test-singleton-{}-{mode}", std::process::id());
    cmd.env("OXMPI_TEST_MARKER", &marker).process_group(0);
    let child = cmd.spawn().expect("job_dir_check starts");
    let run = wait_with_timeout(child, HARD_TIMEOUT, &marker);
    assert_no_survivors(&marker);
    let dir = run
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("job dir: "))
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("{mode}: no job dir printed: {} {}", run.stdout, run.stderr));
    assert_eq!(dir.parent(), Some(base), "{mode}: made under the base");
    (run.code(), run.stdout, dir)
}

#[test]
fn a_singleton_removes_its_own_directory_at_finalize_exit_and_abort() {
    let base = tempfile::tempdir().unwrap();
    let (code, out, dir) = singleton("finalize", base.path());
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("after finalize: gone"), "{out}");
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with(&format!("oxmpi-{}-", uid())),
        "the name {name} names the user and the pid"
    );
    let (code, out, dir) = singleton("exit", base.path());
    assert_eq!(code, 0, "{out}");
    assert_gone(&dir, "after exit without finalize");
    let (code, out, dir) = singleton("abort", base.path());
    assert_eq!(code, 3, "{out}");
    assert_gone(&dir, "after abort");
    assert_eq!(std::fs::read_dir(base.path()).unwrap().count(), 0);
}

#[test]
fn a_singleton_removes_directories_of_dead_singletons() {
    let base = tempfile::tempdir().unwrap();
    let mut gone = Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let stale = base
        .path()
        .join(format!("oxmpi-{}-{dead}-00000000000000aa", uid()));
    std::fs::create_dir(&stale).unwrap();
    std::fs::write(stale.join("segment"), b"x").unwrap();
    // Our own process is alive: its directory stays.
    let alive = base.path().join(format!(
        "oxmpi-{}-{}-00000000000000bb",
        uid(),
        std::process::id()
    ));
    std::fs::create_dir(&alive).unwrap();
    let (code, out, _) = singleton("finalize", base.path());
    assert_eq!(code, 0, "{out}");
    assert_gone(&stale, "a dead singleton's directory");
    assert!(alive.is_dir(), "a live process's directory was removed");
}
