//! The rank supervisor: a small child of mpirun that is the parent of one
//! rank's program and a child subreaper, so every process the program
//! starts (even one that leaves its process group or session) stays its
//! descendant and is stopped with the rank.
//!
//! It exists so that no process of a job survives the job, whatever is
//! killed: when mpirun dies (even together with its guardian, both with
//! SIGKILL), each supervisor learns it from its parent-death signal and
//! stops its program and everything the program started. When the program
//! ends, the supervisor gives what it left running [`DRAIN`] to finish (a
//! background writer flushing its last lines), stops the rest, and exits
//! with the program's status (the same exit code, or death by the same
//! signal), which is what mpirun sees.
//!
//! The supervisor prepares on itself what the program inherits (descriptor
//! numbers, limit, CPU binding) and starts it with `posix_spawn`, which
//! does not copy the address space again.
//!
//! The supervisor runs as a forked copy of mpirun (no exec), so it is
//! named `oxmpi-rank` (see `ps -o comm`): `pkill mpirun` leaves it to
//! clean up after mpirun.

use nix::sys::signal::{killpg, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

/// How long a rank's leftover processes may run after the program exited.
pub const DRAIN: Duration = Duration::from_secs(1);

/// How long leftover processes get between SIGTERM and SIGKILL when
/// mpirun is gone.
const GRACE_WITHOUT_MPIRUN: Duration = Duration::from_millis(500);

/// Prepares the current process (just forked from mpirun, single-threaded)
/// to supervise: process name, subreaper, parent-death signal. Returns
/// false if mpirun is already gone.
pub fn become_supervisor(mpirun: i32) -> bool {
    // SAFETY: PR_SET_NAME reads the NUL-terminated static name; the other
    // two options take integers. prctl writes no memory of ours.
    unsafe {
        libc::prctl(libc::PR_SET_NAME, c"oxmpi-rank".as_ptr());
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1);
        // SIGHUP is blocked (inherited from mpirun's signal mask), so it
        // stays pending until `supervise` collects it.
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGHUP);
    }
    std::os::unix::process::parent_id() == mpirun as u32
}

/// Closes every descriptor from 3 up except those in `keep`.
pub fn close_other_descriptors(keep: &[i32]) {
    let mut keep: Vec<i32> = keep.iter().copied().filter(|&fd| fd >= 3).collect();
    keep.sort_unstable();
    let mut from: u32 = 3;
    for fd in keep {
        let fd = fd as u32;
        if fd > from {
            // SAFETY: called in the forked supervisor before it starts the
            // program: the descriptors closed here are copies of mpirun's,
            // and the only ones the supervisor uses afterwards are those
            // in `keep`, so no Rust object that owns a closed number reads,
            // writes or closes it again (the supervisor ends with _exit).
            unsafe { libc::close_range(from, fd - 1, 0) };
        }
        from = fd + 1;
    }
    // SAFETY: the descriptors above the last kept one, by the same
    // argument.
    unsafe { libc::close_range(from, u32::MAX, 0) };
}

/// Moves `fd` to the lowest free descriptor number from 3 up (keeping it
/// close-on-exec); returns it as is if it cannot be moved.
pub fn renumber_low(fd: OwnedFd) -> OwnedFd {
    // SAFETY: fcntl(F_DUPFD_CLOEXEC) on the open descriptor `fd` makes a
    // new descriptor nobody owns yet; it is either closed here at once or
    // handed to the returned OwnedFd as its only owner (the old one closes
    // when `fd` drops).
    unsafe {
        let low = libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3);
        if low < 0 || low > fd.as_raw_fd() {
            if low >= 0 {
                libc::close(low);
            }
            return fd;
        }
        OwnedFd::from_raw_fd(low)
    }
}

/// As [`renumber_low`] for a descriptor held by number (the guardian's
/// pipe, which mpirun's `Guardian` owns); the old number is closed.
pub fn renumber_raw_low(fd: RawFd) -> RawFd {
    // SAFETY: `fd` is open in this forked process and nothing else here
    // uses it; ownership moves to the returned number.
    renumber_low(unsafe { OwnedFd::from_raw_fd(fd) }).into_raw_fd()
}

/// Points standard input, output and error at /dev/null, so the supervisor
/// holds none of mpirun's terminal or pipes.
pub fn detach_standard_streams() {
    // SAFETY: open reads a static NUL-terminated path and returns a
    // descriptor only this function uses and closes; dup2 onto 0, 1 and 2
    // replaces standard streams no Rust object owns (std's handles refer to
    // the numbers, which stay open).
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if null >= 0 {
            for fd in 0..3 {
                libc::dup2(null, fd);
            }
            if null > 2 {
                libc::close(null);
            }
        }
    }
}

/// Supervises `program` until it and every process it started are gone,
/// then exits with the program's status. Never returns.
pub fn supervise(program: Pid, mpirun: i32) -> ! {
    let mut status: Option<WaitStatus> = None;
    let mut mpirun_gone = false;
    let mut term_sent = false;
    let mut kill_at: Option<Instant> = None;
    loop {
        // Reap whatever ended: the program, or orphans that came to us.
        let no_children = loop {
            match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) => break false,
                Ok(s @ (WaitStatus::Exited(pid, _) | WaitStatus::Signaled(pid, _, _))) => {
                    if pid == program {
                        status = Some(s);
                    }
                }
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => {}
                Err(_) => break true,
            }
        };
        if no_children {
            finish(status);
        }
        if !mpirun_gone && std::os::unix::process::parent_id() != mpirun as u32 {
            mpirun_gone = true;
        }
        let now = Instant::now();
        if mpirun_gone && !term_sent {
            term_sent = true;
            signal_descendants(program, Signal::SIGTERM);
            let deadline = now + GRACE_WITHOUT_MPIRUN;
            kill_at = Some(kill_at.map_or(deadline, |k| k.min(deadline)));
        }
        if status.is_some() && kill_at.is_none() {
            kill_at = Some(now + DRAIN);
        }
        if kill_at.is_some_and(|k| now >= k) {
            signal_descendants(program, Signal::SIGKILL);
        }
        let wait = kill_at.map_or(Duration::from_millis(100), |k| {
            k.saturating_duration_since(now)
                .clamp(Duration::from_millis(1), Duration::from_millis(100))
        });
        wait_for_signal(wait);
    }
}

/// Sends `signal` to the program's process group and to every child of
/// this process (the program and orphans reparented to the subreaper).
/// Grandchildren become children as their parents die, so repeated calls
/// reach every descendant.
fn signal_descendants(program: Pid, signal: Signal) {
    let _ = killpg(program, signal);
    let me = std::process::id();
    let children =
        std::fs::read_to_string(format!("/proc/{me}/task/{me}/children")).unwrap_or_default();
    for pid in children
        .split_whitespace()
        .filter_map(|p| p.parse::<i32>().ok())
    {
        let _ = nix::sys::signal::kill(Pid::from_raw(pid), signal);
        // Its own process group too, if it leads one.
        let _ = killpg(Pid::from_raw(pid), signal);
    }
}

/// Waits at most `limit` for SIGCHLD or SIGHUP (both blocked, so they
/// wait pending).
fn wait_for_signal(limit: Duration) {
    // SAFETY: an all-zero sigset_t is a valid value that sigemptyset then
    // initializes; sigaddset writes only into that local set; sigtimedwait
    // reads the set and the timeout through valid pointers and is allowed
    // a null siginfo pointer (it then stores nothing).
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        libc::sigaddset(&mut set, libc::SIGHUP);
        let timeout = libc::timespec {
            tv_sec: limit.as_secs() as libc::time_t,
            tv_nsec: limit.subsec_nanos() as libc::c_long,
        };
        libc::sigtimedwait(&set, std::ptr::null_mut(), &timeout);
    }
}

/// Exits the way the program did.
fn finish(status: Option<WaitStatus>) -> ! {
    let code = match status {
        Some(WaitStatus::Exited(_, code)) => code,
        Some(WaitStatus::Signaled(_, signal, _)) => {
            let signal = signal as i32;
            // SAFETY: setrlimit reads a local struct; SIG_DFL installs no
            // handler code; the set is a local sigset_t, zeroed then
            // initialized by sigemptyset, that sigprocmask only reads (a
            // null old-set pointer is allowed); raise takes an integer.
            // Nothing writes memory we do not own. The raised signal ends
            // the process with the program's signal, without a core file
            // of the supervisor.
            unsafe {
                let no_core = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                libc::setrlimit(libc::RLIMIT_CORE, &no_core);
                libc::signal(signal, libc::SIG_DFL);
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, signal);
                libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
                libc::raise(signal);
            }
            128 + signal
        }
        // The program never ran, or mpirun went before it ended.
        _ => 1,
    };
    // SAFETY: _exit only ends the calling process; skipping destructors
    // and exit handlers is the point (they belong to mpirun's state, which
    // this forked copy must not flush or tear down a second time).
    unsafe { libc::_exit(code) }
}
