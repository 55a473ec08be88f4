//! The rank side of PMI-1: what the MPI layer uses for wire-up (the
//! modex: put, fence, get), abort and finalize.
//!
//! [`PmiClient::from_env`] connects the way the launcher says (see
//! [`crate::launch`]) and performs the handshake an MPICH client performs,
//! in the same order: `init` (PMI 1.1), `get_maxes`, `get_appnum`,
//! `get_my_kvsname`. Without a launcher the process is a singleton: rank 0
//! of 1, whose put, barrier and get work on a key-value space of its own.
//!
//! All I/O is blocking. A launcher that goes away closes the socket, so a
//! client waiting for a reply gets [`PmiError::Closed`] instead of hanging.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use crate::error::PmiError;
use crate::kvs::{Kvs, Maxes, PROCESS_MAPPING_KEY};
use crate::launch::{launch_from_env, Launch};
use crate::mapping::process_mapping;
use crate::wire::{self, excerpt, Message, MAX_MESSAGE_LEN};

/// The descriptor of `PMI_FD` once a client took it (-1 before): a second
/// client must not own (and later close) the same descriptor.
static CLAIMED_FD: AtomicI32 = AtomicI32::new(-1);

/// A connection to the job's PMI server, or a singleton's stand-in.
#[derive(Debug)]
pub struct PmiClient {
    rank: u32,
    size: u32,
    appnum: i32,
    kvsname: String,
    maxes: Maxes,
    state: State,
}

#[derive(Debug)]
enum State {
    Singleton(Kvs),
    Connected(Conn),
    Ended(&'static str),
}

#[derive(Debug)]
enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

#[derive(Debug)]
struct Conn {
    stream: Stream,
    buf: Vec<u8>,
    start: usize,
}

impl PmiClient {
    /// How long [`PmiClient::abort`] waits for the launcher to end the job
    /// before returning: 5 seconds.
    pub const ABORT_GRACE: Duration = Duration::from_secs(5);

    /// Connects as the environment says ([`crate::launch::launch_from`]):
    /// through the inherited `PMI_FD`, through `PMI_PORT` (and the
    /// `PMI_ID` handshake), or, with none of the PMI variables set, as a
    /// singleton. Then performs the handshake.
    ///
    /// Errors: [`PmiError::BadEnv`] for an unusable variable,
    /// [`PmiError::FdNotOpen`], [`PmiError::AlreadyConnected`] when a
    /// client of this process already took `PMI_FD`,
    /// [`PmiError::Connect`], and the errors of the handshake
    /// ([`PmiError::Closed`], [`PmiError::Io`], [`PmiError::Protocol`],
    /// [`PmiError::Refused`] e.g. when the server does not speak PMI 1.1).
    pub fn from_env() -> Result<PmiClient, PmiError> {
        PmiClient::connect(launch_from_env()?)
    }

    /// Connects as `launch` says; see [`PmiClient::from_env`].
    pub fn connect(launch: Launch) -> Result<PmiClient, PmiError> {
        match launch {
            Launch::Singleton => Ok(PmiClient::singleton()),
            Launch::Fd { fd, rank, size } => {
                let stream = claim_fd(fd)?;
                PmiClient::handshake(Stream::Unix(stream), rank, size, None)
            }
            Launch::Port {
                host,
                port,
                id,
                rank,
                size,
            } => {
                let addr = format!("{host}:{port}");
                let stream = TcpStream::connect((host.as_str(), port)).map_err(|source| {
                    PmiError::Connect {
                        addr: addr.clone(),
                        source,
                    }
                })?;
                let _ = stream.set_nodelay(true);
                PmiClient::handshake(Stream::Tcp(stream), rank, size, id)
            }
        }
    }

    /// Performs the handshake over an already connected socket (for a
    /// launcher or a test that holds both ends), as rank `rank` of `size`.
    /// Errors as the handshake of [`PmiClient::from_env`].
    pub fn from_unix_stream(
        stream: UnixStream,
        rank: u32,
        size: u32,
    ) -> Result<PmiClient, PmiError> {
        PmiClient::handshake(Stream::Unix(stream), rank, size, None)
    }

    /// A process without a launcher: rank 0 of 1, application number 0,
    /// kvs name `singleton_kvs_<pid>`, the limits of [`Maxes::HYDRA`], and
    /// a key-value space of its own (so put, barrier and get behave as
    /// with a launcher).
    pub fn singleton() -> PmiClient {
        PmiClient {
            rank: 0,
            size: 1,
            appnum: 0,
            kvsname: format!("singleton_kvs_{}", std::process::id()),
            maxes: Maxes::HYDRA,
            state: State::Singleton(Kvs::new(Maxes::HYDRA)),
        }
    }

    fn handshake(
        stream: Stream,
        rank: u32,
        size: u32,
        pmi_id: Option<u32>,
    ) -> Result<PmiClient, PmiError> {
        let mut conn = Conn {
            stream,
            buf: Vec::with_capacity(1024),
            start: 0,
        };
        let (mut rank, mut size) = (rank, size);
        if let Some(id) = pmi_id {
            (rank, size) = conn.initack(id)?;
        }
        let during = "init (cmd=init pmi_version=1 pmi_subversion=1)";
        let reply = conn.request(
            b"cmd=init pmi_version=1 pmi_subversion=1\n",
            "response_to_init",
            during,
        )?;
        if let Some(rc) = reply.get("rc").filter(|rc| *rc != "0") {
            return Err(PmiError::Refused {
                during: during.into(),
                rc: excerpt(rc.as_bytes()),
                msg: format!(
                    "the server speaks PMI {}.{} and this client PMI 1.1{}",
                    excerpt(reply.get("pmi_version").unwrap_or("?").as_bytes()),
                    excerpt(reply.get("pmi_subversion").unwrap_or("?").as_bytes()),
                    reply
                        .get("msg")
                        .map(|m| format!(" ({})", excerpt(m.as_bytes())))
                        .unwrap_or_default()
                ),
            });
        }
        let during = "get_maxes";
        let reply = conn.request(b"cmd=get_maxes\n", "maxes", during)?;
        let maxes = Maxes {
            kvsname_max: field_number(&reply, "kvsname_max", during)?,
            keylen_max: field_number(&reply, "keylen_max", during)?,
            vallen_max: field_number(&reply, "vallen_max", during)?,
        };
        let during = "get_appnum";
        let reply = conn.request(b"cmd=get_appnum\n", "appnum", during)?;
        let appnum = field_number(&reply, "appnum", during)?;
        let during = "get_my_kvsname";
        let reply = conn.request(b"cmd=get_my_kvsname\n", "my_kvsname", during)?;
        check_rc(&reply, during)?;
        let kvsname = required(&reply, "kvsname", during)?.to_owned();
        Ok(PmiClient {
            rank,
            size,
            appnum,
            kvsname,
            maxes,
            state: State::Connected(conn),
        })
    }

    /// This process's rank in the job.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// The number of ranks in the job.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// The application number (`MPI_APPNUM`): 0 unless the job was
    /// started with several programs (`mpirun -n 2 a : -n 2 b`).
    pub fn appnum(&self) -> i32 {
        self.appnum
    }

    /// The name of the job's key-value space.
    pub fn kvsname(&self) -> &str {
        &self.kvsname
    }

    /// The limits the server advertised ([`Maxes::HYDRA`] for a
    /// singleton).
    pub fn maxes(&self) -> Maxes {
        self.maxes
    }

    /// Whether the process runs without a launcher.
    pub fn is_singleton(&self) -> bool {
        matches!(self.state, State::Singleton(_))
    }

    /// The universe size (how many ranks the job could have; hydra
    /// answers -1 for "unlimited"). 1 for a singleton.
    ///
    /// Errors: those of any request ([`PmiError::Closed`],
    /// [`PmiError::Io`], [`PmiError::Protocol`], [`PmiError::Refused`],
    /// [`PmiError::Ended`]).
    pub fn universe_size(&mut self) -> Result<i32, PmiError> {
        let conn = match &mut self.state {
            State::Singleton(_) => return Ok(1),
            State::Connected(conn) => conn,
            State::Ended(by) => return Err(ended("get_universe_size", by)),
        };
        let during = "get_universe_size";
        let reply = conn.request(b"cmd=get_universe_size\n", "universe_size", during)?;
        field_number(&reply, "size", during)
    }

    /// Publishes `value` under `key` for the other ranks; they can read it
    /// after the next [`PmiClient::barrier`].
    ///
    /// The key must be 1 to `keylen_max` bytes (64 with hydra and oxmpi)
    /// without spaces, `=`, `\`, line breaks or NUL; the value at most
    /// `vallen_max` bytes (1024) without spaces, `\`, line breaks or NUL:
    /// the protocol cannot carry them, so encode binary or free-form data
    /// (hex, as MPICH does). A key may be put once; putting the same value
    /// again is accepted.
    ///
    /// Errors: [`PmiError::Invalid`] for a key or value breaking these
    /// rules (nothing is sent), [`PmiError::Refused`] when the server
    /// refuses (a different value for a key already put, a reserved key
    /// such as `PMI_process_mapping`), and those of any request.
    pub fn put(&mut self, key: &str, value: &str) -> Result<(), PmiError> {
        check_key(key, self.maxes)?;
        check_value(value, self.maxes)?;
        let during = || format!("put of key {key}");
        let conn = match &mut self.state {
            State::Singleton(kvs) => {
                return kvs.put(key, value).map_err(|e| PmiError::Refused {
                    during: during(),
                    rc: "-1".into(),
                    msg: e.to_string(),
                })
            }
            State::Connected(conn) => conn,
            State::Ended(by) => return Err(ended("put", by)),
        };
        let line = format!("cmd=put kvsname={} key={key} value={value}\n", self.kvsname);
        let reply = conn.request(line.as_bytes(), "put_result", &during())?;
        check_rc(&reply, &during())
    }

    /// Waits until every rank of the job has called `barrier` (the fence
    /// of the modex); afterwards every value put before it is visible.
    /// Returns at once for a singleton.
    ///
    /// Errors: those of any request; [`PmiError::Closed`] when the
    /// launcher ends the job while this rank waits.
    pub fn barrier(&mut self) -> Result<(), PmiError> {
        let conn = match &mut self.state {
            State::Singleton(_) => return Ok(()),
            State::Connected(conn) => conn,
            State::Ended(by) => return Err(ended("barrier", by)),
        };
        let during = "barrier (cmd=barrier_in)";
        let reply = conn.request(b"cmd=barrier_in\n", "barrier_out", during)?;
        check_rc(&reply, during)
    }

    /// Like [`barrier`](PmiClient::barrier), but calls `idle` repeatedly
    /// while the launcher's answer has not arrived, so that the caller keeps
    /// making progress on other work (an MPI layer flushing its transports
    /// while every rank reaches finalize). `idle` returns how much it did;
    /// when it did nothing for a while, the wait sleeps in `poll(2)` for up
    /// to a millisecond at a time instead of spinning.
    ///
    /// Errors: as [`barrier`](PmiClient::barrier).
    pub fn barrier_progressing(&mut self, mut idle: impl FnMut() -> usize) -> Result<(), PmiError> {
        let conn = match &mut self.state {
            State::Singleton(_) => return Ok(()),
            State::Connected(conn) => conn,
            State::Ended(by) => return Err(ended("barrier", by)),
        };
        let during = "barrier (cmd=barrier_in)";
        conn.write_all(b"cmd=barrier_in\n", during)?;
        let mut quiet_rounds = 0u32;
        while !conn.has_line() {
            let timeout = if quiet_rounds > 1000 { 1 } else { 0 };
            if conn.readable(timeout) {
                break;
            }
            if idle() == 0 {
                quiet_rounds = quiet_rounds.saturating_add(1);
            } else {
                quiet_rounds = 0;
            }
        }
        let reply = conn.read_message(during)?;
        if reply.command == "error" {
            return Err(refused(&reply, during));
        }
        if reply.command != "barrier_out" {
            return Err(PmiError::Protocol {
                during: during.into(),
                detail: format!("expected cmd=barrier_out, got {:?}", shown(&reply)),
            });
        }
        check_rc(&reply, during)
    }

    /// The value put under `key` by any rank, or `None` when there is none.
    /// `PMI_process_mapping` gives the node layout (see
    /// [`crate::mapping`]).
    ///
    /// "Not found" is recognized in the forms servers use: hydra 4.0's
    /// `rc=-1 msg=key_<key>_not_found`, newer hydra's `rc=1` (with or
    /// without `msg=...not_found`), and `found=FALSE`.
    ///
    /// Errors: [`PmiError::Invalid`] for a key breaking the rules of
    /// [`PmiClient::put`], [`PmiError::Refused`] for any other refusal,
    /// and those of any request.
    pub fn get(&mut self, key: &str) -> Result<Option<String>, PmiError> {
        check_key(key, self.maxes)?;
        let conn = match &mut self.state {
            State::Singleton(kvs) => {
                if key == PROCESS_MAPPING_KEY {
                    return Ok(Some(process_mapping(&[0])));
                }
                return Ok(kvs.get(key).map(str::to_owned));
            }
            State::Connected(conn) => conn,
            State::Ended(by) => return Err(ended("get", by)),
        };
        let line = format!("cmd=get kvsname={} key={key}\n", self.kvsname);
        let during = format!("get of key {key}");
        let mut reply = conn.request(line.as_bytes(), "get_result", &during)?;
        let rc = reply.get("rc").unwrap_or("0");
        if rc != "0" {
            let msg = reply.get("msg");
            if msg.is_none() || msg.is_some_and(|m| m.contains("not_found")) {
                return Ok(None);
            }
            return Err(refused(&reply, &during));
        }
        if reply
            .get("found")
            .is_some_and(|f| f.eq_ignore_ascii_case("false") || f == "0")
        {
            return Ok(None);
        }
        let value = reply
            .fields
            .iter_mut()
            .find(|(k, v)| k == "value" && v.is_some())
            .and_then(|(_, v)| v.take())
            .unwrap_or_default();
        Ok(Some(value))
    }

    /// Asks the launcher to end the job with `exit_code`, sending `message`
    /// (line breaks become spaces) for it to report.
    ///
    /// The launcher kills every rank, normally this one included; this
    /// waits for that at most [`PmiClient::ABORT_GRACE`] (returning early
    /// when the launcher closes the connection) and then returns, so the
    /// caller must exit the process with `exit_code` itself. MPICH 4.0
    /// sends only `cmd=abort exitcode=N`; oxmpi adds `message=<text>` as
    /// newer MPICH does (hydra ignores it). A singleton returns at once.
    /// The client is closed afterwards.
    ///
    /// Errors: [`PmiError::Io`] or [`PmiError::Closed`] when the request
    /// could not be written (the launcher is gone: just exit), and
    /// [`PmiError::Ended`] after finalize.
    pub fn abort(&mut self, exit_code: i32, message: &str) -> Result<(), PmiError> {
        let state = std::mem::replace(&mut self.state, State::Ended("abort"));
        let mut conn = match state {
            State::Singleton(_) => return Ok(()),
            State::Connected(conn) => conn,
            State::Ended(by) => {
                self.state = State::Ended(by);
                return Err(ended("abort", by));
            }
        };
        let text = abort_text(message);
        let line = if text.is_empty() {
            format!("cmd=abort exitcode={exit_code}\n")
        } else {
            format!("cmd=abort exitcode={exit_code} message={text}\n")
        };
        conn.write_all(line.as_bytes(), "abort (cmd=abort)")?;
        conn.wait_for_close(PmiClient::ABORT_GRACE);
        Ok(())
    }

    /// Tells the launcher this rank is done (`finalize`, answered with
    /// `finalize_ack`) and closes the connection. Further requests fail
    /// with [`PmiError::Ended`]; rank, size and the other cached values
    /// stay available.
    ///
    /// Errors: those of any request, and [`PmiError::Ended`] when called
    /// twice or after abort.
    pub fn finalize(&mut self) -> Result<(), PmiError> {
        let state = std::mem::replace(&mut self.state, State::Ended("finalize"));
        let mut conn = match state {
            State::Singleton(_) => return Ok(()),
            State::Connected(conn) => conn,
            State::Ended(by) => {
                self.state = State::Ended(by);
                return Err(ended("finalize", by));
            }
        };
        let during = "finalize (cmd=finalize)";
        let reply = conn.request(b"cmd=finalize\n", "finalize_ack", during)?;
        conn.shutdown();
        check_rc(&reply, during)
    }
}

fn ended(operation: &'static str, ended_by: &'static str) -> PmiError {
    PmiError::Ended {
        operation,
        ended_by,
    }
}

/// Takes ownership of the inherited descriptor: checks that it is open,
/// marks it close-on-exec (programs the rank starts must not inherit it)
/// and makes sure no other client of this process owns it.
fn claim_fd(fd: i32) -> Result<UnixStream, PmiError> {
    // SAFETY: F_GETFD only queries the descriptor's flags.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    if flags == -1 {
        return Err(PmiError::FdNotOpen { fd });
    }
    if CLAIMED_FD
        .compare_exchange(-1, fd, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        return Err(PmiError::AlreadyConnected {
            fd: CLAIMED_FD.load(Ordering::SeqCst),
        });
    }
    // SAFETY: sets a flag on a descriptor just checked to be open.
    unsafe { libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC) };
    // SAFETY: the descriptor is open, and CLAIMED_FD guarantees this is
    // the only owner created in this process; the launcher passed it to
    // this process for exactly this use.
    Ok(unsafe { UnixStream::from_raw_fd(fd) })
}

fn abort_text(message: &str) -> String {
    message
        .split_whitespace()
        .map(|w| match w.strip_prefix('=') {
            // A word starting with `=` would be a malformed token to some
            // servers, which could then drop the whole abort request.
            Some(rest) => format!(":{rest}"),
            None => w.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn check_token(
    what: &'static str,
    text: &str,
    max: usize,
    limit_name: &str,
    forbidden: &[char],
) -> Result<(), PmiError> {
    let invalid = |reason: String| PmiError::Invalid {
        what,
        text: excerpt(text.as_bytes()),
        reason,
    };
    if what == "key" && text.is_empty() {
        return Err(invalid("a key cannot be empty".into()));
    }
    if text.len() > max {
        return Err(invalid(format!(
            "it is {} bytes long and the server's {limit_name} is {max}",
            text.len()
        )));
    }
    if let Some(c) = text.chars().find(|c| forbidden.contains(c)) {
        return Err(invalid(format!(
            "it contains {c:?}, which the PMI-1 protocol cannot carry; encode it (e.g. as hex)"
        )));
    }
    Ok(())
}

fn check_key(key: &str, maxes: Maxes) -> Result<(), PmiError> {
    check_token(
        "key",
        key,
        maxes.keylen_max,
        "keylen_max",
        &[' ', '=', '\\', '\n', '\r', '\0'],
    )
}

fn check_value(value: &str, maxes: Maxes) -> Result<(), PmiError> {
    check_token(
        "value",
        value,
        maxes.vallen_max,
        "vallen_max",
        &[' ', '\\', '\n', '\r', '\0'],
    )
}

fn required<'a>(reply: &'a Message, key: &str, during: &str) -> Result<&'a str, PmiError> {
    reply.get(key).ok_or_else(|| PmiError::Protocol {
        during: during.into(),
        detail: format!("the reply {:?} has no {key}= field", shown(reply)),
    })
}

fn field_number<T: std::str::FromStr>(
    reply: &Message,
    key: &str,
    during: &str,
) -> Result<T, PmiError> {
    let text = required(reply, key, during)?;
    text.parse().map_err(|_| PmiError::Protocol {
        during: during.into(),
        detail: format!(
            "{key}={:?} in {:?} is not a number",
            excerpt(text.as_bytes()),
            shown(reply)
        ),
    })
}

/// The reply as an excerpt, for messages.
fn shown(reply: &Message) -> String {
    excerpt(reply.to_string().as_bytes())
}

fn refused(reply: &Message, during: &str) -> PmiError {
    PmiError::Refused {
        during: during.into(),
        rc: excerpt(reply.get("rc").unwrap_or("?").as_bytes()),
        msg: excerpt(reply.get("msg").unwrap_or("no reason given").as_bytes()),
    }
}

fn check_rc(reply: &Message, during: &str) -> Result<(), PmiError> {
    match reply.get("rc") {
        Some(rc) if rc != "0" => Err(refused(reply, during)),
        _ => Ok(()),
    }
}

impl Conn {
    /// Sends one request line and reads the reply, which must be `expected`.
    fn request(&mut self, line: &[u8], expected: &str, during: &str) -> Result<Message, PmiError> {
        self.write_all(line, during)?;
        let reply = self.read_message(during)?;
        if reply.command == expected {
            return Ok(reply);
        }
        if reply.command == "error" {
            return Err(refused(&reply, during));
        }
        Err(PmiError::Protocol {
            during: during.into(),
            detail: format!("expected cmd={expected}, got {:?}", shown(&reply)),
        })
    }

    /// The `PMI_ID` handshake of `PMI_PORT` clients: `cmd=initack
    /// pmiid=<id>`, answered by `cmd=initack` and the lines `cmd=set
    /// size=N`, `cmd=set rank=R`, `cmd=set debug=D`.
    fn initack(&mut self, id: u32) -> Result<(u32, u32), PmiError> {
        let during = format!("initack (cmd=initack pmiid={id})");
        let reply = self.request(
            format!("cmd=initack pmiid={id}\n").as_bytes(),
            "initack",
            &during,
        )?;
        check_rc(&reply, &during)?;
        let (mut rank, mut size) = (None, None);
        for _ in 0..3 {
            let set = self.read_message(&during)?;
            if set.command != "set" {
                return Err(PmiError::Protocol {
                    during,
                    detail: format!("expected cmd=set, got {:?}", shown(&set)),
                });
            }
            if set.get("size").is_some() {
                size = Some(field_number::<u32>(&set, "size", &during)?);
            } else if set.get("rank").is_some() {
                rank = Some(field_number::<u32>(&set, "rank", &during)?);
            }
        }
        match (rank, size) {
            (Some(rank), Some(size)) if rank < size => Ok((rank, size)),
            _ => Err(PmiError::Protocol {
                during,
                detail: format!(
                    "the server sent rank {rank:?} and size {size:?}, not a rank below a size"
                ),
            }),
        }
    }

    /// Whether a whole line is already buffered.
    fn has_line(&self) -> bool {
        self.buf[self.start..].contains(&b'\n')
    }

    /// Whether the socket has data (or was closed) within `timeout_ms`.
    fn readable(&self, timeout_ms: i32) -> bool {
        let fd = match &self.stream {
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tcp(s) => s.as_raw_fd(),
        };
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
        n > 0
    }

    fn write_all(&mut self, mut bytes: &[u8], during: &str) -> Result<(), PmiError> {
        while !bytes.is_empty() {
            match self.stream.write_nosignal(bytes) {
                Ok(0) => {
                    return Err(PmiError::Closed {
                        during: during.into(),
                    })
                }
                Ok(n) => bytes = &bytes[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if is_disconnect(&e) => {
                    return Err(PmiError::Closed {
                        during: during.into(),
                    })
                }
                Err(source) => {
                    return Err(PmiError::Io {
                        during: during.into(),
                        source,
                    })
                }
            }
        }
        Ok(())
    }

    /// Reads the next non-blank line and parses it.
    fn read_message(&mut self, during: &str) -> Result<Message, PmiError> {
        loop {
            if let Some(i) = self.buf[self.start..].iter().position(|&b| b == b'\n') {
                let line = &self.buf[self.start..self.start + i + 1];
                self.start += i + 1;
                match wire::parse_line(line) {
                    Ok(m) => return Ok(m),
                    Err(wire::WireError::Empty) => continue,
                    Err(e) => {
                        return Err(PmiError::Protocol {
                            during: during.into(),
                            detail: e.to_string(),
                        })
                    }
                }
            }
            if self.buf.len() - self.start > MAX_MESSAGE_LEN {
                return Err(PmiError::Protocol {
                    during: during.into(),
                    detail: format!(
                        "a reply longer than {MAX_MESSAGE_LEN} bytes without a newline: {:?}",
                        excerpt(&self.buf[self.start..])
                    ),
                });
            }
            if self.start > 0 {
                self.buf.drain(..self.start);
                self.start = 0;
            }
            let old = self.buf.len();
            self.buf.resize(old + 4096, 0);
            let n = loop {
                match self.stream.read(&mut self.buf[old..]) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) if is_disconnect(&e) => break 0,
                    Err(source) => {
                        self.buf.truncate(old);
                        return Err(PmiError::Io {
                            during: during.into(),
                            source,
                        });
                    }
                }
            };
            self.buf.truncate(old + n);
            if n == 0 {
                return Err(PmiError::Closed {
                    during: during.into(),
                });
            }
        }
    }

    /// Reads and drops whatever arrives until the peer closes or `grace`
    /// has passed.
    fn wait_for_close(&mut self, grace: Duration) {
        let deadline = Instant::now() + grace;
        let mut scratch = [0u8; 256];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || self.stream.set_read_timeout(Some(left)).is_err() {
                return;
            }
            match self.stream.read(&mut scratch) {
                Ok(0) => return,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }

    fn shutdown(&mut self) {
        let _ = match &self.stream {
            Stream::Unix(s) => s.shutdown(std::net::Shutdown::Both),
            Stream::Tcp(s) => s.shutdown(std::net::Shutdown::Both),
        };
    }
}

fn is_disconnect(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
    )
}

impl Stream {
    /// Writes without raising SIGPIPE when the launcher is gone (the error
    /// comes back as `BrokenPipe` instead of killing the process).
    fn write_nosignal(&mut self, bytes: &[u8]) -> io::Result<usize> {
        match self {
            // std's TcpStream already sends with MSG_NOSIGNAL.
            Stream::Tcp(s) => s.write(bytes),
            Stream::Unix(s) => {
                // SAFETY: the pointer and length describe `bytes`, and the
                // descriptor is owned by `s`.
                let n = unsafe {
                    libc::send(
                        s.as_raw_fd(),
                        bytes.as_ptr().cast(),
                        bytes.len(),
                        libc::MSG_NOSIGNAL,
                    )
                };
                if n >= 0 {
                    return Ok(n as usize);
                }
                let e = io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::ENOTSOCK) {
                    // A pipe or other non-socket descriptor.
                    s.write(bytes)
                } else {
                    Err(e)
                }
            }
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }

    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_read_timeout(t),
            Stream::Tcp(s) => s.set_read_timeout(t),
        }
    }
}

#[cfg(test)]
mod tests;
