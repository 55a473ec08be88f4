//! Running mpirun in tests: a hard timeout that kills the whole process
//! group, a per-run marker in the environment, and a check that no process
//! carrying the marker survives the job.

#![allow(dead_code)]

pub mod pmls;
pub mod rmaps;

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Hard limit for one mpirun run in a test.
pub const HARD_TIMEOUT: Duration = Duration::from_secs(60);

/// The result of a run.
pub struct Run {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub marker: String,
}

impl Run {
    pub fn code(&self) -> i32 {
        self.status.code().unwrap_or(-1)
    }

    /// Lines of stdout, sorted.
    pub fn sorted_lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.stdout.lines().map(String::from).collect();
        lines.sort();
        lines
    }
}

fn new_marker() -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    format!(
        "oxmpi-test-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// Path of the mpirun under test, once the workspace's programs, examples
/// and component libraries are built next to it (mpirun runs from a dev
/// tree load their components from there).
pub fn mpirun_path() -> PathBuf {
    oxmpi_test_support::build_workspace();
    PathBuf::from(env!("CARGO_BIN_EXE_mpirun"))
}

/// A built example or binary of the workspace (target/<profile>/examples/NAME
/// or target/<profile>/NAME).
pub fn built(name: &str) -> PathBuf {
    let artifacts = oxmpi_test_support::build_workspace();
    let example = artifacts.dir().join("examples").join(name);
    if example.is_file() {
        return example;
    }
    artifacts.program(name)
}

/// The PMI test program.
pub fn pmi_hello() -> String {
    built("pmi_hello").display().to_string()
}

/// An mpirun command with a marker variable and its own process group.
pub fn command(args: &[&str]) -> (Command, String) {
    let marker = new_marker();
    let mut cmd = Command::new(mpirun_path());
    cmd.args(args)
        .env("OXMPI_TEST_MARKER", &marker)
        .env_remove("OXMPI_PREFIX")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    (cmd, marker)
}

/// Waits for `child` at most `limit`; on expiry kills its process group
/// and panics.
pub fn wait_with_timeout(mut child: Child, limit: Duration, marker: &str) -> Run {
    let start = Instant::now();
    let pid = child.id() as i32;
    // Read pipes in threads so a chatty job cannot block on a full pipe.
    // A test may have taken standard output to read it itself.
    let out = child.stdout.take();
    let mut err = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut out) = out {
            std::io::Read::read_to_string(&mut out, &mut s).ok();
        }
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut err, &mut s).ok();
        s
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > limit {
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
            kill_marked(marker);
            let _ = child.wait();
            panic!("mpirun did not finish within {limit:?}; its process group was killed");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Run {
        status,
        stdout: out_t.join().unwrap(),
        stderr: err_t.join().unwrap(),
        marker: marker.to_string(),
    }
}

/// Options that run a job over btl self and tcp on loopback.
pub const TCP: [&str; 6] = [
    "--mca",
    "btl",
    "self,tcp",
    "--mca",
    "btl_tcp_if_include",
    "lo",
];

/// Runs mpirun with `args` (any bytes) to completion, with the variables
/// whose names start with one of `cleared` removed from its environment and
/// `env` added.
pub fn mpirun_in<A: AsRef<OsStr>, V: AsRef<OsStr>>(
    args: &[A],
    cleared: &[&str],
    env: &[(&str, V)],
) -> Run {
    let (mut cmd, marker) = command(&[]);
    cmd.args(args);
    for (key, _) in std::env::vars_os() {
        let name = key.to_string_lossy();
        if cleared.iter().any(|prefix| name.starts_with(prefix)) {
            cmd.env_remove(&key);
        }
    }
    for (key, value) in env {
        cmd.env(key, value);
    }
    let child = cmd.spawn().expect("mpirun starts");
    let run = wait_with_timeout(child, HARD_TIMEOUT, &marker);
    assert_no_survivors(&marker);
    run
}

/// Runs mpirun with `args` to completion.
pub fn mpirun(args: &[&str]) -> Run {
    let (mut cmd, marker) = command(args);
    let child = cmd.spawn().expect("mpirun starts");
    let run = wait_with_timeout(child, HARD_TIMEOUT, &marker);
    assert_no_survivors(&marker);
    run
}

/// Runs mpirun with `input` on its standard input.
pub fn mpirun_with_stdin(args: &[&str], input: &[u8]) -> Run {
    let (mut cmd, marker) = command(args);
    cmd.stdin(Stdio::piped());
    let mut child = cmd.spawn().expect("mpirun starts");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let run = wait_with_timeout(child, HARD_TIMEOUT, &marker);
    writer.join().unwrap();
    assert_no_survivors(&marker);
    run
}

/// Pids of live processes whose environment carries `marker`.
pub fn marked_pids(marker: &str) -> Vec<i32> {
    let needle = format!("OXMPI_TEST_MARKER={marker}\0");
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(env) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if env.windows(needle.len()).any(|w| w == needle.as_bytes()) {
            // Zombies are gone as far as resources go, but still count them
            // only if not yet reaped by anyone: check the state.
            let state = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            let zombie = state
                .rsplit(')')
                .next()
                .is_some_and(|s| s.trim_start().starts_with('Z'));
            if !zombie {
                pids.push(pid);
            }
        }
    }
    pids
}

fn kill_marked(marker: &str) {
    for pid in marked_pids(marker) {
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
}

/// Fails (after killing them) if processes of the run are still alive
/// 3 seconds after it ended.
pub fn assert_no_survivors(marker: &str) {
    let start = Instant::now();
    loop {
        let left = marked_pids(marker);
        if left.is_empty() {
            return;
        }
        if start.elapsed() > Duration::from_secs(3) {
            let names: Vec<String> = left
                .iter()
                .map(|p| {
                    std::fs::read_to_string(format!("/proc/{p}/cmdline"))
                        .unwrap_or_default()
                        .replace('\0', " ")
                })
                .collect();
            kill_marked(marker);
            panic!("processes survived the job: {left:?} {names:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until `n` processes carry the marker (the ranks are running).
pub fn wait_for_ranks(marker: &str, n: usize) {
    let start = Instant::now();
    while marked_pids(marker).len() < n {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "ranks did not start"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs `program` (an example or binary of the workspace) on `n` ranks,
/// oversubscribed and unbound, with `extra` options and `args`; asserts it
/// succeeded and that every rank printed `ok_mark`.
pub fn example_passes(
    n: usize,
    extra: &[&str],
    program: &str,
    args: &[&str],
    ok_mark: &str,
) -> Run {
    let program = built(program).display().to_string();
    let ranks = n.to_string();
    let mut all = vec!["-n", ranks.as_str(), "--oversubscribe", "--bind-to", "none"];
    all.extend(extra);
    all.push(program.as_str());
    all.extend(args);
    let run = mpirun(&all);
    assert_eq!(
        run.code(),
        0,
        "{program} on {n} ranks failed:\n{}\n{}",
        run.stdout,
        run.stderr
    );
    let ok = run.stdout.lines().filter(|l| l.contains(ok_mark)).count();
    assert_eq!(ok, n, "every rank reports success:\n{}", run.stdout);
    run
}
