//! Starting one rank: fork/exec with its environment, its own process
//! group, pipes for standard I/O, and one end of a socket pair as `PMI_FD`.

use crate::job::{Job, Proc};
use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

/// The parent's ends of a started rank.
pub struct Started {
    /// Process id (also its process group id).
    pub pid: i32,
    /// mpirun's end of the PMI socket.
    pub pmi: OwnedFd,
    /// Read end of the rank's standard output.
    pub stdout: OwnedFd,
    /// Read end of the rank's standard error.
    pub stderr: OwnedFd,
    /// Write end of the rank's standard input, if it reads mpirun's.
    pub stdin: Option<OwnedFd>,
}

/// Starts `proc` of `job` with `env` added to mpirun's environment.
pub fn start(
    job: &Job,
    proc: &Proc,
    env: &[(String, String)],
    reads_stdin: bool,
    binding: Option<oxmpi_topology::PreparedBinding>,
    guardian_fd: Option<RawFd>,
) -> Result<Started, String> {
    let app = &job.apps[proc.app as usize];
    let (ours, theirs) = socketpair(
        AddressFamily::Unix,
        SockType::Stream,
        None,
        SockFlag::SOCK_CLOEXEC,
    )
    .map_err(|e| format!("cannot create the PMI socket for rank {}: {e}", proc.rank))?;
    let child_fd = theirs.as_raw_fd();

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
        .env("PMI_FD", child_fd.to_string())
        .env("PMI_RANK", proc.rank.to_string())
        .env("PMI_SIZE", job.size().to_string())
        .stdin(if reads_stdin {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
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
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure only makes async-signal-safe system calls.
    unsafe {
        cmd.pre_exec(move || {
            // Keep this rank's PMI socket open across exec (and no other).
            if libc::fcntl(child_fd, libc::F_SETFD, 0) == -1 {
                return Err(io::Error::last_os_error());
            }
            // Die with mpirun (the guardian also covers grandchildren).
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            // Register this rank's process group with the guardian before
            // the program can start children (one atomic pipe write).
            if let Some(fd) = guardian_fd {
                let mut line = [0u8; 24];
                let len = format_pid_line(libc::getpid(), &mut line);
                libc::write(fd, line.as_ptr().cast(), len);
            }
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            // Bind before the program starts.
            if let Some(b) = &binding {
                b.apply_in_child()?;
            }
            Ok(())
        });
    }
    let child = cmd
        .spawn()
        .map_err(|e| describe_spawn_error(&app.argv[0], proc.rank, app.wdir.as_deref(), &e))?;
    drop(theirs);
    let pid = child.id() as i32;
    let stdout: OwnedFd = child.stdout.expect("piped").into();
    let stderr: OwnedFd = child.stderr.expect("piped").into();
    let stdin: Option<OwnedFd> = child.stdin.map(Into::into);
    Ok(Started {
        pid,
        pmi: ours,
        stdout,
        stderr,
        stdin,
    })
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
    program: &str,
    rank: u32,
    wdir: Option<&std::path::Path>,
    e: &io::Error,
) -> String {
    let what = match e.kind() {
        io::ErrorKind::NotFound if wdir.is_some_and(|d| !d.is_dir()) => format!(
            "the working directory {} does not exist",
            wdir.map(|d| d.display().to_string()).unwrap_or_default()
        ),
        io::ErrorKind::NotFound if program.contains('/') => format!("{program} does not exist"),
        io::ErrorKind::NotFound => format!(
            "{program} was not found in PATH ({})",
            std::env::var("PATH").unwrap_or_default()
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
