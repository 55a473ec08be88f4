//! The job directory: private while the job runs, gone when it ends,
//! however it ends (normally, a failing or killed rank, `--timeout`, a
//! signal to mpirun, mpirun killed with SIGKILL), never a path mpirun did
//! not create; and a singleton's own directory. The sm btl's segment files
//! in it: private, unlinked once every rank of the node has mapped them,
//! and nothing of the job left in /dev/shm or `$TMPDIR` however it ends.

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

// The sm btl's segments: unlinked once every rank of the node has mapped
// them, so that however a job ends, nothing of it stays in /dev/shm or
// $TMPDIR. The ranks run `all_pairs` over btl self and sm.

/// Options that run a job over btl self and sm.
const SM: [&str; 3] = ["--mca", "btl", "self,sm"];

/// Limit for the ranks to start, exchange and say so, or for something
/// that follows a step of the test to happen.
const STEP: Duration = Duration::from_secs(30);

/// A running `all_pairs` job: mpirun in its own process group with
/// `TMPDIR` a fresh directory; its standard output as lines. Dropped
/// before [`SmJob::finish`] (a failed assertion), it stops mpirun with
/// SIGTERM (at most 10 s), then kills mpirun's group and every process of
/// the job that is left.
struct SmJob {
    child: Option<std::process::Child>,
    marker: String,
    lines: mpsc::Receiver<String>,
    /// The lines read so far, for messages.
    seen: Vec<String>,
    tmp: tempfile::TempDir,
}

/// What a rank said after its exchange.
struct Attached {
    rank: u32,
    pid: i32,
}

impl SmJob {
    fn start(n: u32, args: &[&str]) -> SmJob {
        let tmp = tempfile::tempdir().unwrap();
        let program = built("all_pairs").display().to_string();
        let n = n.to_string();
        let mut all = vec!["-n", &n];
        all.extend(SM);
        all.push(&program);
        all.extend(args);
        let (mut cmd, marker) = command(&all);
        cmd.env("TMPDIR", tmp.path())
            .env_remove("OXMPI_JOB_DIR_BASE");
        let mut child = cmd.spawn().expect("mpirun starts");
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        SmJob {
            child: Some(child),
            marker,
            lines,
            seen: Vec::new(),
            tmp,
        }
    }

    /// The next line starting with `prefix` (without it), within [`STEP`].
    fn line(&mut self, prefix: &str) -> String {
        let deadline = Instant::now() + STEP;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if let Some(rest) = line.strip_prefix(prefix) {
                        return rest.to_string();
                    }
                }
                Err(_) => panic!(
                    "no line \"{prefix}...\" within {STEP:?}; the job printed {:?}",
                    self.seen
                ),
            }
        }
    }

    /// Waits for every rank's `attached` line; returns the ranks and the
    /// job directory they all named.
    fn attached(&mut self, n: u32) -> (Vec<Attached>, PathBuf) {
        let mut ranks = Vec::new();
        let mut dirs = Vec::new();
        for _ in 0..n {
            let line = self.line("attached ");
            let words: Vec<&str> = line.split(' ').collect();
            match words[..] {
                [rank, "pid", pid, "dir", dir] => {
                    ranks.push(Attached {
                        rank: rank.parse().unwrap(),
                        pid: pid.parse().unwrap(),
                    });
                    dirs.push(PathBuf::from(dir));
                }
                _ => panic!("a malformed line: attached {line}"),
            }
        }
        assert!(
            dirs.iter().all(|d| *d == dirs[0]) && !dirs[0].as_os_str().is_empty(),
            "the ranks named different job directories: {dirs:?}"
        );
        ranks.sort_by_key(|a| a.rank);
        let order: Vec<u32> = ranks.iter().map(|a| a.rank).collect();
        assert_eq!(order, (0..n).collect::<Vec<_>>(), "{:?}", self.seen);
        (ranks, dirs.swap_remove(0))
    }

    /// Waits for mpirun to end (within the hard timeout).
    fn finish(mut self) -> Run {
        let child = self.child.take().unwrap();
        let run = wait_with_timeout(child, HARD_TIMEOUT, &self.marker);
        assert_no_survivors(&self.marker);
        run
    }
}

impl Drop for SmJob {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SIGTERM first: mpirun then stops the ranks and removes the
            // job directory itself.
            let pid = Pid::from_raw(child.id() as i32);
            let _ = kill(pid, Signal::SIGTERM);
            let deadline = Instant::now() + Duration::from_secs(10);
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = nix::sys::signal::killpg(pid, Signal::SIGKILL);
            let _ = child.wait();
        }
        for pid in marked_pids(&self.marker) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

/// The job id in the name of job directory `dir` (its last 16 hex
/// digits), as the segments' names spell it (`sm-<id in hex>-<rank>`).
fn segment_prefix(dir: &Path) -> String {
    let name = dir.file_name().unwrap().to_string_lossy();
    let hex = name.rsplit('-').next().unwrap();
    let id = u64::from_str_radix(hex, 16)
        .unwrap_or_else(|_| panic!("no job id at the end of the job directory's name {name}"));
    format!("sm-{id:x}-")
}

/// Names in `dir` (none if it cannot be read) that start with `prefix`.
fn names_with(dir: &Path, prefix: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(prefix))
                .collect()
        })
        .unwrap_or_default()
}

/// The segment files each rank has mapped, from its `/proc/<pid>/maps`:
/// (path, unlinked) per segment.
fn mapped_segments(pid: i32, dir: &Path) -> Vec<(String, bool)> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    let under = format!("{}/sm-", dir.display());
    let mut found: Vec<(String, bool)> = maps
        .lines()
        .filter_map(|l| l.find(&under).map(|at| &l[at..]))
        .map(|path| match path.strip_suffix(" (deleted)") {
            Some(path) => (path.to_string(), true),
            None => (path.to_string(), false),
        })
        .collect();
    found.sort();
    found.dedup();
    found
}

/// While the job runs: every rank has mapped every rank's segment, and no
/// segment file is left in the job directory (they are unlinked once all
/// have mapped them, which completes asynchronously: polled within
/// [`STEP`]).
fn assert_mapped_and_unlinked(ranks: &[Attached], dir: &Path) {
    let prefix = segment_prefix(dir);
    let want: Vec<(String, bool)> = (0..ranks.len())
        .map(|r| (format!("{}/{prefix}{r}", dir.display()), true))
        .collect();
    let deadline = Instant::now() + STEP;
    loop {
        let files = names_with(dir, "sm-");
        let maps: Vec<Vec<(String, bool)>> =
            ranks.iter().map(|a| mapped_segments(a.pid, dir)).collect();
        if files.is_empty() && maps.iter().all(|m| *m == want) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} ranks: within {STEP:?} the job directory {} still holds {files:?}, or a rank does not map every segment, unlinked (want {want:?}; the ranks map {maps:?})",
            ranks.len(),
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// After the job: its directory is gone (within [`STEP`]: the guardian
/// removes it when mpirun was killed), nothing named after it or its
/// segments is in /dev/shm or the job's `TMPDIR`, which is empty.
fn assert_nothing_left(dir: &Path, tmp: &Path, context: &str) {
    wait_gone(dir, STEP, context);
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    let prefix = segment_prefix(dir);
    for place in [Path::new("/dev/shm"), tmp] {
        let left: Vec<String> = names_with(place, "")
            .into_iter()
            .filter(|n| *n == name || n.starts_with(&prefix))
            .collect();
        assert!(
            left.is_empty(),
            "{context}: {} still holds {left:?}",
            place.display()
        );
    }
    assert_eq!(
        names_with(tmp, ""),
        Vec::<String>::new(),
        "{context}: the job's TMPDIR is not empty"
    );
}

#[test]
fn sm_segments_are_unlinked_once_all_ranks_mapped_them_and_a_normal_run_leaves_nothing() {
    for n in [2, 3, 4] {
        let release = tempfile::tempdir().unwrap();
        let go = release.path().join("go").display().to_string();
        let mut job = SmJob::start(n, &["hold", &go]);
        let (ranks, dir) = job.attached(n);
        assert_mapped_and_unlinked(&ranks, &dir);
        std::fs::write(&go, b"").unwrap();
        let tmp = job.tmp.path().to_path_buf();
        let run = job.finish();
        assert_eq!(run.code(), 0, "{n} ranks: {}", run.stderr);
        assert_nothing_left(&dir, &tmp, &format!("{n} ranks, a normal end"));
    }
}

#[test]
fn sm_leaves_nothing_after_a_rank_panics_or_aborts() {
    for (end, code) in [("panic", 101), ("abort", 128 + 6)] {
        let crash = tempfile::tempdir().unwrap();
        let go = crash.path().join("go").display().to_string();
        let mut job = SmJob::start(3, &[end, &go]);
        let (ranks, dir) = job.attached(3);
        assert_mapped_and_unlinked(&ranks, &dir);
        std::fs::write(&go, b"").unwrap();
        let tmp = job.tmp.path().to_path_buf();
        let run = job.finish();
        assert_eq!(run.code(), code, "{end}: {}", run.stderr);
        assert_nothing_left(&dir, &tmp, &format!("after a rank's {end}"));
    }
}

#[test]
fn sm_leaves_nothing_after_a_rank_is_killed() {
    let mut job = SmJob::start(3, &["block"]);
    let (ranks, dir) = job.attached(3);
    assert_mapped_and_unlinked(&ranks, &dir);
    kill(Pid::from_raw(ranks[1].pid), Signal::SIGKILL).unwrap();
    let tmp = job.tmp.path().to_path_buf();
    let run = job.finish();
    assert_eq!(run.code(), 128 + 9, "{}", run.stderr);
    assert_nothing_left(&dir, &tmp, "after SIGKILL of rank 1");
}

#[test]
fn sm_leaves_nothing_after_mpirun_is_killed() {
    let mut job = SmJob::start(3, &["block"]);
    let (ranks, dir) = job.attached(3);
    assert_mapped_and_unlinked(&ranks, &dir);
    let mut child = job.child.take().unwrap();
    child.kill().unwrap(); // SIGKILL: the guardian ends the ranks
    child.wait().unwrap();
    assert_nothing_left(&dir, job.tmp.path(), "after SIGKILL of mpirun");
    assert_no_survivors(&job.marker);
}

#[test]
fn sm_segment_files_are_private_while_they_exist_and_the_last_to_map_unlinks_them() {
    // Rank 2 waits before initializing, so ranks 0 and 1 have created
    // their segments and wait for it in the wire-up: rank 2 has not
    // mapped them, so they are still there.
    let release = tempfile::tempdir().unwrap();
    let go = release.path().join("go").display().to_string();
    let end = release.path().join("end").display().to_string();
    let mut job = SmJob::start(3, &["--late", "2", &go, "hold", &end]);
    let dir = PathBuf::from(job.line("late 2 dir "));
    let prefix = segment_prefix(&dir);
    let deadline = Instant::now() + STEP;
    let mut names = names_with(&dir, "sm-");
    while names.len() < 2 {
        assert!(
            Instant::now() < deadline,
            "ranks 0 and 1 made no segments in {} within {STEP:?}: {names:?}",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(10));
        names = names_with(&dir, "sm-");
    }
    names.sort();
    assert_eq!(names, [format!("{prefix}0"), format!("{prefix}1")]);
    for name in &names {
        let meta = std::fs::symlink_metadata(dir.join(name)).unwrap();
        assert!(meta.is_file(), "{name} is not a regular file");
        assert_eq!(meta.mode() & 0o7777, 0o600, "{name}'s mode");
        assert_eq!(meta.uid(), uid(), "{name}'s owner");
        assert!(meta.len() > 0, "{name} is empty");
    }
    std::fs::write(&go, b"").unwrap();
    // Rank 2, mapping them last, unlinked them.
    let (ranks, dir_after) = job.attached(3);
    assert_eq!(dir_after, dir);
    assert_mapped_and_unlinked(&ranks, &dir);
    std::fs::write(&end, b"").unwrap();
    let tmp = job.tmp.path().to_path_buf();
    let run = job.finish();
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_nothing_left(&dir, &tmp, "after a normal end");
}
