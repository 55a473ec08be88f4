//! Helpers of the process-level tests: finding the built `pmi_hello`,
//! finding MPICH's tools (skipping, or failing under
//! `OXMPI_REQUIRE_MPICH=1`, when they are missing), compiling the C test
//! program, and running processes with a hard timeout that kills their
//! whole process group and checks that nothing is left behind.

#![allow(dead_code)]

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

/// The per-test hard timeout.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// `target/<profile>/examples/pmi_hello`, built for this test run.
pub fn pmi_hello() -> PathBuf {
    oxmpi_test_support::build_workspace().example("pmi_hello")
}

fn in_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// MPICH's `program` (e.g. `mpiexec.mpich`), or `None` after printing why
/// the test is skipped. Panics instead when `OXMPI_REQUIRE_MPICH=1` (CI
/// installs Debian's `mpich` and `libmpich-dev`).
pub fn mpich_tool(program: &str) -> Option<PathBuf> {
    if let Some(p) = in_path(program) {
        return Some(p);
    }
    if std::env::var("OXMPI_REQUIRE_MPICH").as_deref() == Ok("1") {
        panic!(
            "{program} is not installed but OXMPI_REQUIRE_MPICH=1: install Debian's mpich and \
             libmpich-dev packages"
        );
    }
    eprintln!(
        "skipped: {program} is not installed (install Debian's mpich and libmpich-dev to run \
         this test; set OXMPI_REQUIRE_MPICH=1 to make its absence a failure)"
    );
    None
}

/// `tests/c/mpi_hello.c` compiled with `mpicc.mpich` (once per test
/// binary, into cargo's per-target temporary directory), or `None` when
/// MPICH is not installed (see [`mpich_tool`]).
pub fn mpi_hello_c() -> Option<PathBuf> {
    compile_c(
        "mpi_hello",
        &std::fs::read_to_string(c_source("mpi_hello.c")).unwrap(),
    )
}

/// The path of a file under `tests/c/`.
pub fn c_source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("c")
        .join(name)
}

/// Compiles `source` with `mpicc.mpich` into `<CARGO_TARGET_TMPDIR>/<name>`
/// (once per name and test binary).
pub fn compile_c(name: &'static str, source: &str) -> Option<PathBuf> {
    static BUILT: OnceLock<std::sync::Mutex<Vec<(&'static str, PathBuf)>>> = OnceLock::new();
    let mpicc = mpich_tool("mpicc.mpich")?;
    let built = BUILT.get_or_init(Default::default);
    let mut built = built.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, p)) = built.iter().find(|(n, _)| *n == name) {
        return Some(p.clone());
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("oxmpi-pmi-c");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let exe = dir.join(name);
    let out = Command::new(mpicc)
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .output()
        .expect("running mpicc.mpich");
    assert!(
        out.status.success(),
        "mpicc.mpich failed on {}:\n{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    built.push((name, exe.clone()));
    Some(exe)
}

/// What a finished process produced.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Finished {
    /// Panics with the whole output unless the exit code is `code`.
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.status.code(),
            Some(code),
            "exit status {:?}\n--- stdout\n{}--- stderr\n{}",
            self.status,
            self.stdout,
            self.stderr
        );
        self
    }
}

/// A child started in a process group of its own, with its output
/// captured.
pub struct Running {
    child: Child,
    pgid: i32,
    out: thread::JoinHandle<String>,
    err: thread::JoinHandle<String>,
    started: Instant,
}

/// Starts `cmd` in a new process group with stdout and stderr captured.
pub fn start(mut cmd: Command) -> Running {
    cmd.process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("spawning {cmd:?}: {e}"));
    let pgid = child.id() as i32;
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err = thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    Running {
        child,
        pgid,
        out,
        err,
        started: Instant::now(),
    }
}

fn group_alive(pgid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(-pgid, 0) == 0 }
}

fn kill_group(pgid: i32) {
    // SAFETY: the group was created by `start` for this child.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
}

impl Running {
    /// Waits for the process; after [`TIMEOUT`] kills its whole group and
    /// panics with its output. Then checks that no process of the group is
    /// left (killing and failing if one is).
    pub fn finish(mut self) -> Finished {
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("waiting for the child") {
                break status;
            }
            if self.started.elapsed() > TIMEOUT {
                kill_group(self.pgid);
                let _ = self.child.wait();
                panic!(
                    "timed out after {TIMEOUT:?}; killed the process group\n--- stdout\n{}--- stderr\n{}",
                    self.out.join().unwrap_or_default(),
                    self.err.join().unwrap_or_default()
                );
            }
            thread::sleep(Duration::from_millis(5));
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        while group_alive(self.pgid) && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
        let left_behind = group_alive(self.pgid);
        if left_behind {
            kill_group(self.pgid);
        }
        let finished = Finished {
            status,
            stdout: self.out.join().unwrap_or_default(),
            stderr: self.err.join().unwrap_or_default(),
        };
        assert!(
            !left_behind,
            "processes of the job were left behind (killed now)\n{finished:?}"
        );
        finished
    }

    /// Kills the whole group at once (for a child a test gives up on).
    pub fn kill(self) -> Finished {
        kill_group(self.pgid);
        let mut me = self;
        let status = me.child.wait().unwrap();
        Finished {
            status,
            stdout: me.out.join().unwrap_or_default(),
            stderr: me.err.join().unwrap_or_default(),
        }
    }
}

/// Runs `cmd` to completion under the hard timeout.
pub fn run(cmd: Command) -> Finished {
    start(cmd).finish()
}
