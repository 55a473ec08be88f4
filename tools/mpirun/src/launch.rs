//! Starting one rank: mpirun forks the rank's supervisor
//! ([`crate::supervisor`]), which starts the program (fork/exec) with its
//! environment, its own process group, pipes for standard I/O, and one end
//! of a socket pair as `PMI_FD`, then reports the program's pid (or why it
//! could not start) back to mpirun over a pipe.

use crate::job::{Job, Proc};
use crate::supervisor;
use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};
use nix::unistd::{fork, pipe2, ForkResult};
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

/// The parent's ends of a started rank.
pub struct Started {
    /// The program's process id (also its process group id).
    pub pid: i32,
    /// The supervisor's process id: mpirun's child, whose exit status is
    /// the program's.
    pub supervisor: i32,
    /// mpirun's end of the PMI socket.
    pub pmi: OwnedFd,
    /// Read end of the rank's standard output.
    pub stdout: OwnedFd,
    /// Read end of the rank's standard error.
    pub stderr: OwnedFd,
    /// Write end of the rank's standard input, if it reads mpirun's.
    pub stdin: Option<OwnedFd>,
}

/// The rank's ends of its descriptors, handed to the supervisor.
struct ChildEnds {
    pmi: OwnedFd,
    stdin: Option<OwnedFd>,
    stdout: OwnedFd,
    stderr: OwnedFd,
    report: OwnedFd,
}

/// A rank whose supervisor was forked and has not reported yet.
pub struct Pending {
    rank: u32,
    argv0: std::ffi::OsString,
    wdir: Option<std::path::PathBuf>,
    supervisor: nix::unistd::Pid,
    report: OwnedFd,
    pmi: OwnedFd,
    stdout: OwnedFd,
    stderr: OwnedFd,
    stdin: Option<OwnedFd>,
}

/// Starts `proc` of `job` with `env` added to mpirun's environment: forks
/// its supervisor and returns without waiting for the program to start,
/// so that mpirun can fork the next rank's supervisor while this one
/// execs; [`Pending::wait`] collects the outcome. Call only while mpirun
/// is single-threaded (it forks).
pub fn start(
    job: &Job,
    proc: &Proc,
    env: &[(String, String)],
    reads_stdin: bool,
    binding: Option<oxmpi_topology::PreparedBinding>,
    guardian_fd: Option<RawFd>,
) -> Result<Pending, String> {
    let app = &job.apps[proc.app as usize];
    let rank = proc.rank;
    let cannot =
        |what: &str, e: nix::errno::Errno| format!("cannot create the {what} for rank {rank}: {e}");
    let (pmi_ours, pmi_theirs) = socketpair(
        AddressFamily::Unix,
        SockType::Stream,
        None,
        SockFlag::SOCK_CLOEXEC,
    )
    .map_err(|e| cannot("PMI socket", e))?;
    let pipe = || pipe2(nix::fcntl::OFlag::O_CLOEXEC);
    let (out_r, out_w) = pipe().map_err(|e| cannot("output pipe", e))?;
    let (err_r, err_w) = pipe().map_err(|e| cannot("error pipe", e))?;
    let stdin_pipe = if reads_stdin {
        Some(pipe().map_err(|e| cannot("input pipe", e))?)
    } else {
        None
    };
    let (report_r, report_w) = pipe().map_err(|e| cannot("report pipe", e))?;
    let (stdin_r, stdin_w) = match stdin_pipe {
        Some((r, w)) => (Some(r), Some(w)),
        None => (None, None),
    };
    let ends = ChildEnds {
        pmi: pmi_theirs,
        stdin: stdin_r,
        stdout: out_w,
        stderr: err_w,
        report: report_w,
    };
    let mpirun = std::process::id() as i32;
    // SAFETY: fork is sound in a single-threaded process (no lock can be
    // held by a thread missing from the child), and mpirun is
    // single-threaded while it launches (the topology thread was joined);
    // the child only runs `run_supervisor`, which never returns into
    // mpirun's code.
    match unsafe { fork() } {
        Ok(ForkResult::Child) => run_supervisor(job, proc, env, ends, binding, guardian_fd, mpirun),
        Ok(ForkResult::Parent { child }) => {
            drop(ends);
            Ok(Pending {
                rank,
                argv0: app.argv[0].clone(),
                wdir: app.wdir.clone(),
                supervisor: child,
                report: report_r,
                pmi: pmi_ours,
                stdout: out_r,
                stderr: err_r,
                stdin: stdin_w,
            })
        }
        Err(e) => Err(format!(
            "cannot start rank {rank}: fork failed: {e}{}",
            if e == nix::errno::Errno::EAGAIN {
                " (the limit on processes was reached; run fewer ranks)"
            } else {
                ""
            }
        )),
    }
}

impl Pending {
    /// Waits for the supervisor's report: the started rank, or why the
    /// program could not start (the supervisor is then reaped).
    pub fn wait(self) -> Result<Started, String> {
        let mut report = String::new();
        let _ = std::fs::File::from(self.report).read_to_string(&mut report);
        match parse_report(&report) {
            Report::Started(pid) => Ok(Started {
                pid,
                supervisor: self.supervisor.as_raw(),
                pmi: self.pmi,
                stdout: self.stdout,
                stderr: self.stderr,
                stdin: self.stdin,
            }),
            failed => {
                let _ = nix::sys::wait::waitpid(self.supervisor, None);
                let rank = self.rank;
                Err(match failed {
                    Report::Failed(e) => {
                        describe_spawn_error(&self.argv0, rank, self.wdir.as_deref(), &e)
                    }
                    _ => format!(
                        "cannot start rank {rank}: its supervisor process ended before starting the program"
                    ),
                })
            }
        }
    }

    /// Ends a rank that will not be run (an earlier rank failed to start):
    /// waits for its report, kills its program's process group, and reaps
    /// its supervisor.
    pub fn abandon(self) {
        let supervisor = self.supervisor;
        if let Ok(started) = self.wait() {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(started.pid),
                nix::sys::signal::Signal::SIGKILL,
            );
            let _ = nix::sys::wait::waitpid(supervisor, None);
        }
    }
}

/// What the supervisor reports about starting the program.
#[derive(Debug)]
enum Report {
    Started(i32),
    Failed(io::Error),
    Nothing,
}

fn parse_report(text: &str) -> Report {
    let text = text.trim();
    if let Some(pid) = text.strip_prefix("started ") {
        if let Ok(pid) = pid.parse() {
            return Report::Started(pid);
        }
    }
    if let Some(errno) = text.strip_prefix("failed ") {
        if let Ok(errno) = errno.parse() {
            return Report::Failed(io::Error::from_raw_os_error(errno));
        }
    }
    Report::Nothing
}

/// The supervisor's life: start the program, report, supervise.
fn run_supervisor(
    job: &Job,
    proc: &Proc,
    env: &[(String, String)],
    ends: ChildEnds,
    binding: Option<oxmpi_topology::PreparedBinding>,
    guardian_fd: Option<RawFd>,
    mpirun: i32,
) -> ! {
    let ChildEnds {
        pmi,
        stdin,
        stdout,
        stderr,
        report,
    } = ends;
    let mut keep = vec![
        pmi.as_raw_fd(),
        stdout.as_raw_fd(),
        stderr.as_raw_fd(),
        report.as_raw_fd(),
    ];
    keep.extend(stdin.as_ref().map(AsRawFd::as_raw_fd));
    keep.extend(guardian_fd);
    // Descriptors of mpirun (other ranks' pipes and sockets) must not stay
    // open here: a rank would never see the end of its input.
    supervisor::close_other_descriptors(&keep);
    // Renumber what is left to the lowest descriptors: the program gets
    // mpirun's original (possibly much lower) descriptor limit, and
    // posix_spawn refuses descriptors above the limit in force.
    let (pmi, stdout, stderr, report) = (
        supervisor::renumber_low(pmi),
        supervisor::renumber_low(stdout),
        supervisor::renumber_low(stderr),
        supervisor::renumber_low(report),
    );
    let stdin = stdin.map(supervisor::renumber_low);
    let guardian_fd = guardian_fd.map(supervisor::renumber_raw_low);
    if !supervisor::become_supervisor(mpirun) {
        // SAFETY: _exit only ends this forked child; the destructors it
        // skips belong to mpirun's state, which the child must not tear
        // down a second time.
        unsafe { libc::_exit(1) };
    }
    let pmi_fd = pmi.as_raw_fd();
    let mut report = std::fs::File::from(report);
    // What the program inherits is set up on the supervisor itself, so the
    // program can be started with posix_spawn (no second copy of mpirun's
    // memory): the PMI socket without close-on-exec, the descriptor limit
    // mpirun was given, and the binding.
    let prepared = prepare_inheritance(pmi_fd, binding.as_ref());
    if let Err(e) = prepared {
        let _ = write!(report, "failed {}", e.raw_os_error().unwrap_or(libc::EIO));
        // SAFETY: as for the _exit above: it only ends this forked child.
        unsafe { libc::_exit(127) };
    }
    let mut cmd = command(job, proc, env, pmi_fd);
    cmd.stdin(stdin.map_or_else(Stdio::null, Stdio::from))
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr));
    let spawned = cmd.spawn();
    drop(cmd);
    drop(pmi);
    let program = match spawned {
        Ok(child) => {
            let pid = child.id() as libc::pid_t;
            // Tell the guardian the program's process group (its pid).
            if let Some(fd) = guardian_fd {
                let mut line = [0u8; 24];
                let len = format_pid_line(pid, &mut line);
                // SAFETY: the kernel reads `len` bytes at the start of
                // `line`, and `format_pid_line` returns at most its 24.
                unsafe { libc::write(fd, line.as_ptr().cast(), len) };
            }
            let _ = write!(report, "started {pid}");
            nix::unistd::Pid::from_raw(pid)
        }
        Err(e) => {
            let _ = write!(report, "failed {}", e.raw_os_error().unwrap_or(libc::EIO));
            // SAFETY: as for the _exit above: it only ends this forked child.
            unsafe { libc::_exit(127) };
        }
    };
    drop(report);
    supervisor::close_other_descriptors(&[]);
    supervisor::detach_standard_streams();
    supervisor::supervise(program, mpirun)
}

/// Sets up, on the supervisor, what the program inherits: the PMI socket
/// stays open across exec, the soft descriptor limit mpirun started with,
/// and the rank's binding.
fn prepare_inheritance(
    pmi_fd: RawFd,
    binding: Option<&oxmpi_topology::PreparedBinding>,
) -> io::Result<()> {
    // SAFETY: F_SETFD sets the descriptor flags of `pmi_fd`; it touches
    // no memory of ours, whatever the descriptor.
    if unsafe { libc::fcntl(pmi_fd, libc::F_SETFD, 0) } == -1 {
        return Err(io::Error::last_os_error());
    }
    crate::limits::restore_descriptor_limit_in_child();
    if let Some(b) = binding {
        b.apply_in_child()?;
    }
    Ok(())
}

/// The program's command: argv, environment, working directory, its own
/// process group.
fn command(job: &Job, proc: &Proc, env: &[(String, String)], pmi_fd: RawFd) -> Command {
    let app = &job.apps[proc.app as usize];
    let mut cmd = Command::new(&app.argv[0]);
    cmd.args(&app.argv[1..])
        .envs(env.iter().map(|(k, v)| (k, v)))
        .envs(app.exports.iter().map(|(k, v)| (k, v)))
        .env("OXMPI_COMM_WORLD_RANK", proc.rank.to_string())
        .env("OXMPI_COMM_WORLD_SIZE", job.size().to_string())
        .env("OXMPI_COMM_WORLD_LOCAL_RANK", proc.local_rank.to_string())
        .env(
            "OXMPI_COMM_WORLD_LOCAL_SIZE",
            job.local_size(proc.node).to_string(),
        )
        .env("OXMPI_COMM_WORLD_NODE_RANK", proc.local_rank.to_string())
        .env("OXMPI_APPNUM", proc.app.to_string())
        .env("PMI_FD", pmi_fd.to_string())
        .env("PMI_RANK", proc.rank.to_string())
        .env("PMI_SIZE", job.size().to_string())
        .process_group(0);
    if let Some(dir) = &app.wdir {
        cmd.current_dir(dir);
    }
    // Degraded mode on an oversubscribed node, unless the user chose.
    let yield_var = "OXMPI_MCA_mpi_yield_when_idle";
    let user_chose =
        std::env::var_os(yield_var).is_some() || env.iter().any(|(k, _)| k == yield_var);
    if !user_chose && job.node_oversubscribed(proc.node) {
        cmd.env(yield_var, "1");
    }
    cmd
}

/// Writes `<pid>\n` into `buf` without allocating (safe between fork and
/// exec); returns its length.
fn format_pid_line(pid: libc::pid_t, buf: &mut [u8; 24]) -> usize {
    let mut digits = [0u8; 20];
    let mut n = pid.unsigned_abs() as u64;
    let mut k = 0;
    loop {
        digits[k] = b'0' + (n % 10) as u8;
        k += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..k {
        buf[i] = digits[k - 1 - i];
    }
    buf[k] = b'\n';
    k + 1
}

fn describe_spawn_error(
    program: &std::ffi::OsStr,
    rank: u32,
    wdir: Option<&std::path::Path>,
    e: &io::Error,
) -> String {
    let has_slash = program.as_encoded_bytes().contains(&b'/');
    let program = program.to_string_lossy();
    let what = match e.kind() {
        io::ErrorKind::NotFound if wdir.is_some_and(|d| !d.is_dir()) => format!(
            "the working directory {} does not exist",
            wdir.map(|d| d.display().to_string()).unwrap_or_default()
        ),
        io::ErrorKind::NotFound if has_slash => format!("{program} does not exist"),
        io::ErrorKind::NotFound => format!(
            "{program} was not found in PATH ({})",
            std::env::var_os("PATH")
                .unwrap_or_default()
                .to_string_lossy()
        ),
        io::ErrorKind::PermissionDenied => {
            format!("{program} is not executable (permission denied)")
        }
        _ => format!("{program}: {e}"),
    };
    format!("cannot start rank {rank}: {what}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn pid_lines_are_decimal_with_a_newline() {
        let mut buf = [0u8; 24];
        for (pid, text) in [(1, "1\n"), (42, "42\n"), (4_194_304, "4194304\n")] {
            let n = super::format_pid_line(pid, &mut buf);
            assert_eq!(&buf[..n], text.as_bytes());
        }
    }
}
