//! The guardian: a small child of mpirun that outlives it. mpirun tells it
//! the process group of every rank; if mpirun dies without dismissing it
//! (killed with SIGKILL, say), the pipe from mpirun reaches end-of-file and
//! the guardian terminates every rank's process group, so no process of the
//! job is left behind. It is one of two safeguards: each rank's supervisor
//! ([`crate::supervisor`]) also stops its rank and everything the rank
//! started when mpirun dies, so killing mpirun and the guardian together
//! leaves nothing behind either.
//!
//! It also knows the job directory (given at fork): when mpirun dies, the
//! guardian removes it once the ranks are gone, so no file of the job is
//! left behind either.

use nix::sys::signal::{killpg, Signal};
use nix::unistd::{fork, pipe2, ForkResult, Pid};
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How long the guardian waits for the ranks' process groups to be gone
/// before it removes the job directory anyway.
const GROUPS_GONE_LIMIT: Duration = Duration::from_secs(3);
/// How long after the first removal the guardian removes the job
/// directory again, in case a process the supervisors were still stopping
/// (one that left its rank's process group) wrote into it meanwhile.
const SECOND_SWEEP: Duration = Duration::from_millis(600);

/// mpirun's handle on its guardian.
pub struct Guardian {
    pipe: std::fs::File,
    pid: i32,
}

/// Forks the guardian, which removes `job_dir` (with everything in it) if
/// mpirun dies. Call before any thread exists.
pub fn start(job_dir: Option<PathBuf>) -> Result<Guardian, String> {
    let (read_end, write_end) = pipe2(nix::fcntl::OFlag::O_CLOEXEC)
        .map_err(|e| format!("cannot create the guardian pipe: {e}"))?;
    // SAFETY: fork is sound in a single-threaded process (no lock can be
    // held by a thread that does not exist in the child), and the caller
    // calls this before mpirun starts any thread. The child only runs
    // `guard`, which never returns into mpirun's code.
    match unsafe { fork() } {
        Ok(ForkResult::Child) => {
            drop(write_end);
            guard(read_end, job_dir)
        }
        Ok(ForkResult::Parent { child }) => {
            drop(read_end);
            Ok(Guardian {
                pipe: std::fs::File::from(write_end),
                pid: child.as_raw(),
            })
        }
        Err(e) => Err(format!("cannot start the guardian process: {e}")),
    }
}

impl Guardian {
    /// Its process id.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The write end of the guardian's pipe. A rank writes its own process
    /// group there (`<pgid>\n`) between fork and exec, so the guardian knows
    /// it before the rank can start processes of its own; the descriptor is
    /// close-on-exec, so the rank's program never holds it.
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        self.pipe.as_raw_fd()
    }

    /// Asks the guardian to kill process group `pgid` if mpirun dies.
    pub fn watch(&mut self, pgid: i32) {
        let _ = writeln!(self.pipe, "{pgid}");
    }

    /// The job is over: the guardian exits without killing anything.
    pub fn dismiss(mut self) {
        let _ = writeln!(self.pipe, "done");
        drop(self.pipe);
        let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(self.pid), None);
    }
}

fn guard(pipe: OwnedFd, job_dir: Option<PathBuf>) -> ! {
    // SAFETY: prctl(PR_SET_NAME) reads the NUL-terminated static name;
    // setting SIG_IGN installs no handler code; open reads a static
    // NUL-terminated path; dup2 onto 0, 1 and 2 replaces standard streams
    // that no Rust object of this child owns (std's handles refer to the
    // numbers, which stay open). No memory of ours is written.
    unsafe {
        // Its own name (`ps -o comm`), so `pkill mpirun` leaves it to clean up.
        libc::prctl(libc::PR_SET_NAME, c"oxmpi-guardian".as_ptr());
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGPIPE] {
            libc::signal(sig, libc::SIG_IGN);
        }
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        for fd in 0..3 {
            libc::dup2(null, fd);
        }
    }
    let mut groups: Vec<i32> = Vec::new();
    let mut line: Vec<u8> = Vec::new();
    let mut buf = [0u8; 512];
    loop {
        let n = match nix::unistd::read(&pipe, &mut buf) {
            Err(nix::errno::Errno::EINTR) => continue,
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for &b in &buf[..n] {
            if b != b'\n' {
                line.push(b);
                continue;
            }
            if line == b"done" {
                exit_child(0);
            }
            if let Some(pgid) = std::str::from_utf8(&line)
                .ok()
                .and_then(|s| s.parse::<i32>().ok())
            {
                if pgid > 1 {
                    groups.push(pgid);
                }
            }
            line.clear();
        }
    }
    // mpirun is gone: stop the job.
    for &g in &groups {
        let _ = killpg(Pid::from_raw(g), Signal::SIGTERM);
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    for &g in &groups {
        let _ = killpg(Pid::from_raw(g), Signal::SIGKILL);
    }
    if let Some(dir) = job_dir {
        // Once no rank can write into it any more.
        let start = Instant::now();
        while groups
            .iter()
            .any(|&g| killpg(Pid::from_raw(g), None).is_ok())
            && start.elapsed() < GROUPS_GONE_LIMIT
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = oxmpi_pmi::jobdir::remove_tree(&dir);
        std::thread::sleep(SECOND_SWEEP);
        let _ = oxmpi_pmi::jobdir::remove_tree(&dir);
    }
    exit_child(0)
}

/// Ends the guardian at once: no destructor or exit handler of mpirun's
/// (which the forked child carries copies of) runs twice.
fn exit_child(code: i32) -> ! {
    // SAFETY: _exit only ends the calling process; skipping destructors is
    // the point (they belong to mpirun's state, which the child must not
    // flush or tear down a second time).
    unsafe { libc::_exit(code) }
}
