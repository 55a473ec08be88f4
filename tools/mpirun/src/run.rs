//! The job's event loop: one `poll` over the PMI sockets, the ranks' output
//! pipes, mpirun's standard input and a signalfd (SIGCHLD, SIGINT, SIGTERM,
//! SIGHUP). It serves wire-up, forwards I/O, notices failures and tears the
//! job down: SIGTERM to every remaining rank's process group, SIGKILL a
//! second later.

use crate::guardian::Guardian;
use crate::output::{LineBuffer, Sink, Stream, Trouble};
use crate::report::Failure;
use nix::sys::signal::{killpg, SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use oxmpi_pmi::server::{Action, PmiServer};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

/// How long ranks get between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(1);
/// How long output pipes may stay open after every rank exited (held by
/// processes the ranks started) before those are killed.
const DRAIN: Duration = Duration::from_secs(1);

/// The longest `--timeout` accepted, in seconds (about 31 years).
pub const MAX_TIMEOUT_SECONDS: f64 = 1e9;

/// Checks a `--timeout` value: a positive, finite number of seconds, at most
/// [`MAX_TIMEOUT_SECONDS`].
pub fn timeout_from_seconds(seconds: f64) -> Result<f64, String> {
    if seconds > 0.0 && seconds <= MAX_TIMEOUT_SECONDS {
        Ok(seconds)
    } else {
        Err(format!(
            "--timeout {seconds}: expected a positive number of seconds, at most {MAX_TIMEOUT_SECONDS:e}"
        ))
    }
}

/// One running rank.
pub struct Rank {
    /// Rank number.
    pub rank: u32,
    /// The program's process (and process group) id.
    pub pid: i32,
    /// Its supervisor's process id (mpirun's child; its exit status is the
    /// program's).
    pub supervisor: i32,
    pmi: Option<OwnedFd>,
    out: Option<OwnedFd>,
    err: Option<OwnedFd>,
    stdin: Option<OwnedFd>,
    stdin_pending: Vec<u8>,
    /// PMI replies not yet taken by the rank.
    pmi_pending: Vec<u8>,
    out_lines: LineBuffer,
    err_lines: LineBuffer,
    exited: bool,
}

impl Rank {
    /// A started rank.
    pub fn new(rank: u32, started: crate::launch::Started) -> Rank {
        set_nonblocking(started.pmi.as_raw_fd());
        if let Some(fd) = &started.stdin {
            set_nonblocking(fd.as_raw_fd());
        }
        Rank {
            rank,
            pid: started.pid,
            supervisor: started.supervisor,
            pmi: Some(started.pmi),
            out: Some(started.stdout),
            err: Some(started.stderr),
            stdin: started.stdin,
            stdin_pending: Vec::new(),
            pmi_pending: Vec::new(),
            out_lines: LineBuffer::default(),
            err_lines: LineBuffer::default(),
            exited: false,
        }
    }
}

fn set_nonblocking(fd: RawFd) {
    // SAFETY: F_GETFL and F_SETFL read and set the status flags of `fd`;
    // they touch no memory of ours, whatever the descriptor.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
}

enum Read {
    Data(usize),
    Again,
    Eof,
}

fn read_fd(fd: RawFd, buf: &mut [u8]) -> Read {
    loop {
        // SAFETY: the kernel writes at most `buf.len()` bytes at
        // `buf.as_mut_ptr()`, which `buf` (borrowed mutably for the call)
        // holds.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n > 0 {
            return Read::Data(n as usize);
        }
        if n == 0 {
            return Read::Eof;
        }
        match io::Error::last_os_error().kind() {
            io::ErrorKind::Interrupted => continue,
            io::ErrorKind::WouldBlock => return Read::Again,
            _ => return Read::Eof,
        }
    }
}

/// The most PMI reply bytes a rank may leave unread. PMI-1 is a
/// request-reply protocol with short replies, so only a rank that keeps
/// sending without reading gets near it; it is stopped rather than let it
/// grow mpirun's memory or stall its event loop.
pub const MAX_PMI_BACKLOG: usize = 1 << 20;

/// Writes what `pending` holds to a non-blocking descriptor, as far as it
/// takes it now; `Err` when the descriptor is broken.
fn write_some(fd: RawFd, pending: &mut Vec<u8>) -> io::Result<()> {
    while !pending.is_empty() {
        // SAFETY: the kernel reads at most `pending.len()` bytes at
        // `pending.as_ptr()`, all of which the vector holds.
        let n = unsafe { libc::write(fd, pending.as_ptr().cast(), pending.len()) };
        if n >= 0 {
            pending.drain(..n as usize);
            continue;
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::Interrupted => {}
            io::ErrorKind::WouldBlock => return Ok(()),
            _ => return Err(e),
        }
    }
    Ok(())
}

/// Blocks the signals the loop handles; call before starting any rank.
pub fn block_signals() -> Result<SignalFd, String> {
    let mut set = SigSet::empty();
    for s in [
        Signal::SIGCHLD,
        Signal::SIGINT,
        Signal::SIGTERM,
        Signal::SIGHUP,
    ] {
        set.add(s);
    }
    set.thread_block()
        .map_err(|e| format!("cannot block signals: {e}"))?;
    SignalFd::with_flags(&set, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
        .map_err(|e| format!("cannot create a signalfd: {e}"))
}

#[derive(Copy, Clone)]
enum Slot {
    Signal,
    Stdin,
    Pmi(usize),
    Out(usize),
    Err(usize),
    RankStdin(usize),
}

/// The running job.
pub struct Runner {
    /// The ranks.
    pub ranks: Vec<Rank>,
    server: PmiServer,
    sink: Sink,
    signals: SignalFd,
    guardian: Option<Guardian>,
    job_dir: Option<oxmpi_pmi::jobdir::JobDir>,
    host: String,
    failure: Option<Failure>,
    /// Ranks killed by a signal mpirun did not send, after the first
    /// failure (a second cause worth reporting).
    also: Vec<Failure>,
    stopped: usize,
    term_sent: Option<Instant>,
    kill_sent: bool,
    deadline: Option<(Instant, f64)>,
    all_exited: Option<Instant>,
    forward_stdin: bool,
    stdin_open: bool,
    buf: Vec<u8>,
}

impl Runner {
    /// A runner for started ranks. It removes `job_dir` when the job ends
    /// (before it dismisses the guardian, which removes it if mpirun dies
    /// first).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        server: PmiServer,
        sink: Sink,
        signals: SignalFd,
        guardian: Option<Guardian>,
        job_dir: Option<oxmpi_pmi::jobdir::JobDir>,
        host: String,
        timeout: Option<f64>,
        forward_stdin: bool,
    ) -> Runner {
        Runner {
            ranks: Vec::new(),
            server,
            sink,
            signals,
            guardian,
            job_dir,
            host,
            failure: None,
            also: Vec::new(),
            stopped: 0,
            term_sent: None,
            kill_sent: false,
            deadline: timeout.map(|s| (Instant::now() + Duration::from_secs_f64(s), s)),
            all_exited: None,
            forward_stdin,
            stdin_open: forward_stdin,
            buf: vec![0u8; 64 * 1024],
        }
    }

    /// Adds a started rank and tells the guardian about it.
    pub fn add(&mut self, rank: Rank) {
        if let Some(g) = &mut self.guardian {
            g.watch(rank.pid);
        }
        self.ranks.push(rank);
    }

    /// Records the first failure and starts the teardown.
    pub fn fail(&mut self, failure: Failure) {
        if self.failure.is_some() {
            return;
        }
        let culprit = failure.rank();
        self.failure = Some(failure);
        let now = Instant::now();
        for r in self.ranks.iter().filter(|r| !r.exited) {
            if Some(r.rank) != culprit {
                self.stopped += 1;
            }
            let _ = killpg(Pid::from_raw(r.pid), Signal::SIGTERM);
        }
        self.term_sent = Some(now);
    }

    fn done(&self) -> bool {
        self.ranks
            .iter()
            .all(|r| r.exited && r.out.is_none() && r.err.is_none())
    }

    /// Runs the job to its end; returns mpirun's exit status.
    pub fn run(mut self) -> i32 {
        let mut fds: Vec<libc::pollfd> = Vec::with_capacity(3 * self.ranks.len() + 2);
        let mut slots: Vec<Slot> = Vec::with_capacity(fds.capacity());
        while !self.done() {
            fds.clear();
            slots.clear();
            let mut add = |fd: RawFd, events: libc::c_short, slot: Slot| {
                fds.push(libc::pollfd {
                    fd,
                    events,
                    revents: 0,
                });
                slots.push(slot);
            };
            for (i, r) in self.ranks.iter().enumerate() {
                if let Some(fd) = &r.pmi {
                    let out = if r.pmi_pending.is_empty() {
                        0
                    } else {
                        libc::POLLOUT
                    };
                    add(fd.as_raw_fd(), libc::POLLIN | out, Slot::Pmi(i));
                }
                if let Some(fd) = &r.out {
                    add(fd.as_raw_fd(), libc::POLLIN, Slot::Out(i));
                }
                if let Some(fd) = &r.err {
                    add(fd.as_raw_fd(), libc::POLLIN, Slot::Err(i));
                }
                if let (Some(fd), false) = (&r.stdin, r.stdin_pending.is_empty()) {
                    add(fd.as_raw_fd(), libc::POLLOUT, Slot::RankStdin(i));
                }
            }
            let stdin_room = self.ranks.iter().all(|r| r.stdin_pending.is_empty());
            if self.stdin_open && stdin_room {
                add(0, libc::POLLIN, Slot::Stdin);
            }
            add(self.signals.as_raw_fd(), libc::POLLIN, Slot::Signal);

            let timeout = self.next_timer_ms();
            // SAFETY: `fds` holds `fds.len()` initialized pollfd entries,
            // which poll reads and whose `revents` it writes, nothing more.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
            if n < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                eprintln!("mpirun: poll failed: {}", io::Error::last_os_error());
                self.fail(Failure::Launch {
                    message: "mpirun's event loop failed".into(),
                });
            }
            // Signals last: a rank's final PMI message (abort) and output
            // are handled before its exit.
            for k in 0..fds.len() {
                if fds[k].revents == 0 {
                    continue;
                }
                match slots[k] {
                    Slot::Pmi(i) => {
                        if fds[k].revents & libc::POLLOUT != 0 {
                            self.flush_pmi(i);
                        }
                        self.on_pmi(i);
                    }
                    Slot::Out(i) => self.on_output(i, Stream::Stdout),
                    Slot::Err(i) => self.on_output(i, Stream::Stderr),
                    Slot::RankStdin(i) => self.flush_stdin(i),
                    Slot::Stdin => self.on_stdin(),
                    Slot::Signal => {}
                }
            }
            if fds.last().is_some_and(|f| f.revents != 0) {
                self.on_signals();
            }
            self.on_timers();
            self.flush_output();
        }
        self.sink.flush();
        // Every supervisor was reaped, and a supervisor ends only after
        // every process its rank started: nothing writes into the job
        // directory any more.
        if let Some(dir) = self.job_dir.take() {
            if let Err(e) = dir.remove() {
                eprintln!("mpirun: warning: {e}");
            }
        }
        if let Some(g) = self.guardian.take() {
            g.dismiss();
        }
        match &self.failure {
            None => 0,
            Some(f) => {
                let other = if f.rank().is_some() { " other" } else { "" };
                let others = match self.stopped {
                    0 => format!("no{other} rank was running"),
                    1 => format!("the 1{other} rank still running was stopped"),
                    n => format!("the {n}{other} ranks still running were stopped"),
                };
                eprintln!("mpirun: {}; {others}.", f.describe(&self.host));
                for a in &self.also {
                    eprintln!("mpirun: also, {}.", a.describe(&self.host));
                }
                f.exit_status()
            }
        }
    }

    /// Writes collected output; output that cannot be delivered stops the
    /// job (a reader of standard output that went away, as `| head` does,
    /// or an output file that cannot be written).
    fn flush_output(&mut self) {
        self.sink.flush();
        if let Some(trouble) = self.sink.take_trouble() {
            self.fail(match trouble {
                Trouble::StdoutClosed => Failure::OutputClosed,
                Trouble::FileWrite { path, reason } => Failure::Launch {
                    message: format!(
                        "the output of the job could not be written to {}: {reason}",
                        path.display()
                    ),
                },
            });
        }
    }

    fn next_timer_ms(&self) -> i32 {
        let now = Instant::now();
        let mut next: Option<Instant> = None;
        let mut consider = |t: Instant| next = Some(next.map_or(t, |n: Instant| n.min(t)));
        if let Some((d, _)) = self.deadline {
            if self.failure.is_none() {
                consider(d);
            }
        }
        if let (Some(t), false) = (self.term_sent, self.kill_sent) {
            consider(t + GRACE);
        }
        if let Some(t) = self.all_exited {
            consider(t + DRAIN);
        }
        match next {
            None => -1,
            Some(t) => {
                t.saturating_duration_since(now)
                    .as_millis()
                    .min(i32::MAX as u128 - 1) as i32
                    + 1
            }
        }
    }

    fn on_timers(&mut self) {
        let now = Instant::now();
        if let Some((d, seconds)) = self.deadline {
            if now >= d && self.failure.is_none() {
                self.fail(Failure::Timeout { seconds });
            }
        }
        if let (Some(t), false) = (self.term_sent, self.kill_sent) {
            if now >= t + GRACE {
                self.kill_sent = true;
                for r in self.ranks.iter().filter(|r| !r.exited) {
                    let _ = killpg(Pid::from_raw(r.pid), Signal::SIGKILL);
                }
            }
        }
        if self.all_exited.is_none() && self.ranks.iter().all(|r| r.exited) {
            self.all_exited = Some(now);
        }
        if let Some(t) = self.all_exited {
            if now >= t + DRAIN {
                // Processes the ranks started still hold the output pipes.
                for i in 0..self.ranks.len() {
                    let _ = killpg(Pid::from_raw(self.ranks[i].pid), Signal::SIGKILL);
                    self.close_output(i, Stream::Stdout);
                    self.close_output(i, Stream::Stderr);
                }
            }
        }
    }

    fn on_pmi(&mut self, i: usize) {
        let Some(fd) = self.ranks[i].pmi.as_ref().map(AsRawFd::as_raw_fd) else {
            return;
        };
        let rank = self.ranks[i].rank;
        loop {
            match read_fd(fd, &mut self.buf) {
                Read::Data(n) => {
                    let actions = self.server.on_bytes(rank, &self.buf[..n]);
                    self.apply(actions);
                }
                Read::Again => return,
                Read::Eof => {
                    self.ranks[i].pmi = None;
                    let actions = self.server.on_disconnect(rank);
                    self.apply(actions);
                    return;
                }
            }
        }
    }

    fn apply(&mut self, actions: Vec<Action>) {
        for action in actions {
            match action {
                Action::Send { rank, bytes } => {
                    // Ranks are started, and so stored, in rank order.
                    let i = rank as usize;
                    if self
                        .ranks
                        .get(i)
                        .is_some_and(|r| r.rank == rank && r.pmi.is_some())
                    {
                        self.ranks[i].pmi_pending.extend_from_slice(&bytes);
                        self.flush_pmi(i);
                    }
                }
                Action::Abort {
                    rank,
                    exit_code,
                    message,
                } => {
                    let pid = self.ranks.get(rank as usize).map_or(0, |r| r.pid);
                    self.fail(Failure::Aborted {
                        rank,
                        pid,
                        code: exit_code,
                        message,
                    });
                }
                Action::ProtocolError { rank, message } => {
                    eprintln!("mpirun: rank {rank} sent a PMI message mpirun does not understand: {message}");
                }
            }
        }
    }

    /// Writes rank `i`'s pending PMI replies as far as its socket takes
    /// them; a rank that leaves more than [`MAX_PMI_BACKLOG`] unread stops
    /// the job.
    fn flush_pmi(&mut self, i: usize) {
        let r = &mut self.ranks[i];
        let Some(fd) = r.pmi.as_ref().map(AsRawFd::as_raw_fd) else {
            r.pmi_pending.clear();
            return;
        };
        if write_some(fd, &mut r.pmi_pending).is_err() {
            // The rank closed its end; its exit is handled when reaped.
            r.pmi_pending.clear();
            return;
        }
        if r.pmi_pending.len() > MAX_PMI_BACKLOG {
            let (rank, pid) = (r.rank, r.pid);
            r.pmi_pending.clear();
            r.pmi = None;
            self.fail(Failure::Launch {
                message: format!(
                    "rank {rank} (pid {pid}) on host {} kept sending PMI requests without reading the replies (more than {MAX_PMI_BACKLOG} bytes of replies waited); mpirun closed its PMI connection",
                    self.host
                ),
            });
        }
    }

    fn on_output(&mut self, i: usize, stream: Stream) {
        let fd = match stream {
            Stream::Stdout => self.ranks[i].out.as_ref(),
            Stream::Stderr => self.ranks[i].err.as_ref(),
        }
        .map(AsRawFd::as_raw_fd);
        let Some(fd) = fd else { return };
        let rank = self.ranks[i].rank;
        match read_fd(fd, &mut self.buf) {
            Read::Data(n) => {
                let r = &mut self.ranks[i];
                let lines = if stream == Stream::Stdout {
                    &mut r.out_lines
                } else {
                    &mut r.err_lines
                };
                lines.push(&mut self.sink, rank, stream, &self.buf[..n]);
            }
            Read::Again => {}
            Read::Eof => self.close_output(i, stream),
        }
    }

    fn close_output(&mut self, i: usize, stream: Stream) {
        let rank = self.ranks[i].rank;
        let r = &mut self.ranks[i];
        let (slot, lines) = match stream {
            Stream::Stdout => (&mut r.out, &mut r.out_lines),
            Stream::Stderr => (&mut r.err, &mut r.err_lines),
        };
        if slot.take().is_some() {
            lines.finish(&mut self.sink, rank, stream);
        }
    }

    fn on_stdin(&mut self) {
        match read_fd(0, &mut self.buf) {
            Read::Data(n) => {
                for r in self.ranks.iter_mut().filter(|r| r.stdin.is_some()) {
                    r.stdin_pending.extend_from_slice(&self.buf[..n]);
                }
                for i in 0..self.ranks.len() {
                    self.flush_stdin(i);
                }
            }
            Read::Again => {}
            Read::Eof => {
                self.stdin_open = false;
                for i in 0..self.ranks.len() {
                    self.flush_stdin(i);
                }
            }
        }
    }

    fn flush_stdin(&mut self, i: usize) {
        let r = &mut self.ranks[i];
        if let Some(fd) = &r.stdin {
            while !r.stdin_pending.is_empty() {
                // SAFETY: the kernel reads at most `stdin_pending.len()`
                // bytes at its start, all of which the vector holds.
                let n = unsafe {
                    libc::write(
                        fd.as_raw_fd(),
                        r.stdin_pending.as_ptr().cast(),
                        r.stdin_pending.len(),
                    )
                };
                if n > 0 {
                    r.stdin_pending.drain(..n as usize);
                    continue;
                }
                if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock {
                    return;
                }
                // The rank closed its standard input.
                r.stdin_pending.clear();
                r.stdin = None;
                return;
            }
        }
        if !self.stdin_open || !self.forward_stdin {
            r.stdin = None;
        }
    }

    fn on_signals(&mut self) {
        while let Ok(Some(info)) = self.signals.read_signal() {
            match info.ssi_signo as i32 {
                libc::SIGCHLD => self.reap(),
                sig => self.fail(Failure::Interrupted { signal: sig }),
            }
        }
    }

    fn reap(&mut self) {
        // Collect every exit first: when ranks end together (one killed,
        // its peer failing because of it), the killed one is the cause.
        let mut ended = Vec::new();
        loop {
            let (pid, exit) = match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(pid, code)) => (pid.as_raw(), Ok(code)),
                Ok(WaitStatus::Signaled(pid, sig, _)) => (pid.as_raw(), Err(sig as i32)),
                Ok(WaitStatus::StillAlive) => break,
                Ok(_) => continue,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(_) => break,
            };
            if self.guardian.as_ref().is_some_and(|g| g.pid() == pid) {
                self.guardian = None;
                eprintln!("mpirun: warning: the guardian process exited early; if mpirun is killed, ranks may be left running");
                continue;
            }
            ended.push((pid, exit));
        }
        ended.sort_by_key(|(_, exit)| exit.is_ok());
        for (pid, exit) in ended {
            let Some(i) = self.ranks.iter().position(|r| r.supervisor == pid) else {
                continue;
            };
            // Take in the rank's last PMI messages (an abort) first.
            self.on_pmi(i);
            let r = &mut self.ranks[i];
            r.exited = true;
            r.pmi = None;
            r.stdin = None;
            let (rank, pid) = (r.rank, r.pid);
            match exit {
                Ok(0) if self.server.initialized(rank) && !self.server.finalized(rank) => {
                    self.fail(Failure::NoFinalize { rank, pid, code: 0 })
                }
                Ok(0) => {}
                Ok(code) => self.fail(Failure::Exited { rank, pid, code }),
                Err(signal) => {
                    let ours = (signal == libc::SIGTERM && self.term_sent.is_some())
                        || (signal == libc::SIGKILL && self.kill_sent);
                    if self.failure.is_some() && !ours {
                        self.also.push(Failure::Signaled { rank, pid, signal });
                    } else {
                        self.fail(Failure::Signaled { rank, pid, signal });
                    }
                }
            }
        }
    }
}
