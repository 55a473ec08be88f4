//! A small host for [`PmiServer`] on this machine: one reader thread per
//! rank over connected Unix sockets. Tests use it to run PMI clients (in
//! threads or as processes, including MPICH programs) without `mpirun`,
//! and it shows in a few lines what a launcher does with the server (see
//! the crate documentation, "For launchers").
//!
//! It is not `mpirun`: it does not start, watch or kill processes; on an
//! abort request it closes every rank's connection (each blocked client
//! then gets [`crate::PmiError::Closed`]) and reports the request in the
//! [`Outcome`].

use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use crate::server::{Action, JobInfo, PmiServer};

/// What happened during a job served by [`LocalServer`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The first abort request: `(rank, exit_code, message)`.
    pub abort: Option<(u32, i32, Option<String>)>,
    /// Every [`Action::ProtocolError`], in order: `(rank, message)`.
    pub protocol_errors: Vec<(u32, String)>,
    /// Whether each rank completed `init`.
    pub initialized: Vec<bool>,
    /// Whether each rank completed `finalize`.
    pub finalized: Vec<bool>,
}

struct Inner {
    server: PmiServer,
    writers: Vec<UnixStream>,
    outcome: Outcome,
}

/// Serves one job over one connected socket per rank until every rank has
/// closed its end.
pub struct LocalServer {
    inner: Arc<Mutex<Inner>>,
    threads: Vec<JoinHandle<()>>,
}

impl LocalServer {
    /// Starts serving `job`; `streams[r]` is the server's end of rank
    /// `r`'s connection (`streams.len()` should equal `job.size`; extra
    /// streams are served as ranks outside the job and get no replies).
    ///
    /// Errors: cloning a stream for writing failed (out of descriptors).
    pub fn start(job: JobInfo, streams: Vec<UnixStream>) -> io::Result<LocalServer> {
        let writers = streams
            .iter()
            .map(UnixStream::try_clone)
            .collect::<io::Result<Vec<_>>>()?;
        let inner = Arc::new(Mutex::new(Inner {
            server: PmiServer::new(job),
            writers,
            outcome: Outcome::default(),
        }));
        let threads = streams
            .into_iter()
            .enumerate()
            .map(|(rank, stream)| {
                let inner = Arc::clone(&inner);
                std::thread::spawn(move || serve_rank(&inner, rank as u32, stream))
            })
            .collect();
        Ok(LocalServer { inner, threads })
    }

    /// Waits until every rank's connection has closed, then returns what
    /// happened.
    pub fn wait(self) -> Outcome {
        for t in self.threads {
            let _ = t.join();
        }
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let size = inner.server.job().size;
        let mut outcome = inner.outcome.clone();
        outcome.initialized = (0..size).map(|r| inner.server.initialized(r)).collect();
        outcome.finalized = (0..size).map(|r| inner.server.finalized(r)).collect();
        outcome
    }
}

fn serve_rank(inner: &Mutex<Inner>, rank: u32, mut stream: UnixStream) {
    let mut buf = [0u8; 4096];
    loop {
        let n = match stream.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => 0,
        };
        let mut inner = inner.lock().unwrap_or_else(PoisonError::into_inner);
        let actions = if n == 0 {
            inner.server.on_disconnect(rank)
        } else {
            inner.server.on_bytes(rank, &buf[..n])
        };
        for action in actions {
            match action {
                Action::Send { rank, bytes } => {
                    if let Some(w) = inner.writers.get_mut(rank as usize) {
                        // A rank that went away cannot be answered; its
                        // own reader thread sees the end of file.
                        let _ = w.write_all(&bytes);
                    }
                }
                Action::Abort {
                    rank,
                    exit_code,
                    message,
                } => {
                    if inner.outcome.abort.is_none() {
                        inner.outcome.abort = Some((rank, exit_code, message));
                    }
                    for w in &inner.writers {
                        let _ = w.shutdown(Shutdown::Both);
                    }
                }
                Action::ProtocolError { rank, message } => {
                    inner.outcome.protocol_errors.push((rank, message));
                }
            }
        }
        if n == 0 {
            return;
        }
    }
}

/// `n` connected socket pairs: `(server_ends, rank_ends)`, both indexed by
/// rank. Both ends are close-on-exec; see [`prepare_command`] to pass a
/// rank end to a child process.
///
/// Errors: `socketpair` failed (out of descriptors).
pub fn socket_pairs(n: u32) -> io::Result<(Vec<UnixStream>, Vec<UnixStream>)> {
    let mut servers = Vec::with_capacity(n as usize);
    let mut ranks = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let (s, r) = UnixStream::pair()?;
        servers.push(s);
        ranks.push(r);
    }
    Ok((servers, ranks))
}

/// Prepares `cmd` to run as rank `rank` of `size` with the PMI connection
/// `rank_end`, as hydra starts its ranks: the child inherits the socket
/// (its close-on-exec flag is cleared in the child only, so other children
/// do not inherit it) and gets `PMI_FD=<its number>`, `PMI_RANK`,
/// `PMI_SIZE`. After spawning, the parent must drop its copy of
/// `rank_end`, or the server never sees the rank's end of file.
pub fn prepare_command(cmd: &mut Command, rank_end: &UnixStream, rank: u32, size: u32) {
    let fd = rank_end.as_raw_fd();
    cmd.env("PMI_FD", fd.to_string())
        .env("PMI_RANK", rank.to_string())
        .env("PMI_SIZE", size.to_string());
    // SAFETY: the closure runs in the child between fork and exec and only
    // calls fcntl, which is async-signal-safe; it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags == -1 || libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}
