//! The raw TCP floor: two processes over 127.0.0.1, nonblocking sockets with
//! `TCP_NODELAY`, busy-polling (no `poll`/`epoll`, a failed read or write is
//! simply retried), measuring latency and bandwidth with the method of the
//! MPI programs (see the crate documentation and `bench/p2p/README.md`).
//!
//! Usage: `raw_tcp [--quick] [--sizes LIST] [--no-bind]`
//!
//! The program spawns its peer (itself, with `--peer PORT --cpu N`). With
//! two or more usable CPUs the two processes are pinned to the first two of
//! them (as `mpirun --bind-to core` places two ranks); `--no-bind` leaves
//! them unpinned.
//!
//! A stream cannot carry an empty message, so the 0-byte latency row moves
//! one byte each way (the least a stream can signal); there is no 0-byte
//! bandwidth row. Other sizes move exactly `size` bytes per message, with
//! no header: both sides know the size, as an MPI receiver of a matched
//! message does (an MPI library adds its own header on top, which is part
//! of what the comparison shows).
//!
//! Output: `lat <bytes> <usec>` and `bw <bytes> <MB/s>` lines on stdout
//! (rank 0), comments start with `#`; errors on stderr, exit status 1.

#![forbid(unsafe_code)]

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::process::{Child, Command, ExitCode};
use std::time::{Duration, Instant};

use oxmpi_bench_p2p::affinity::{allowed_cpus, parse_cpu, pin_to};
use oxmpi_bench_p2p::{
    bandwidth_line, bandwidth_schedule, fill, latency_line, latency_schedule, seed, take_flag,
    take_value, verify, Options, CLEAR_BYTE, WINDOW,
};

/// How long a side spins without any byte moving before it gives up.
const STALL_LIMIT: Duration = Duration::from_secs(60);

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let peer_port = match take_value(&mut args, "--peer") {
        Ok(v) => v,
        Err(e) => return fail(0, &e),
    };
    let cpu = match take_value(&mut args, "--cpu") {
        Ok(v) => v,
        Err(e) => return fail(0, &e),
    };
    let no_bind = take_flag(&mut args, "--no-bind");
    let forwarded = args.clone();
    let opts = match Options::parse(args) {
        Ok(o) => o,
        Err(e) => {
            return fail(
                0,
                &format!("{e}; usage: raw_tcp [--quick] [--sizes LIST] [--no-bind]"),
            )
        }
    };
    let rank = u32::from(peer_port.is_some());
    let result = match peer_port {
        Some(port) => peer(&port, cpu.as_deref(), &opts),
        None => leader(&opts, !no_bind, &forwarded),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(rank, &e),
    }
}

fn fail(rank: u32, msg: &str) -> ExitCode {
    eprintln!("raw_tcp: rank {rank}: {msg}");
    ExitCode::FAILURE
}

/// Rank 0: listens, spawns rank 1, measures, prints, waits for rank 1.
fn leader(opts: &Options, bind: bool, forwarded: &[String]) -> Result<(), String> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))?;
    let port = listener
        .local_addr()
        .map_err(|e| format!("cannot read the listening address: {e}"))?
        .port();
    let cpus = if bind { allowed_cpus()? } else { Vec::new() };
    let placement = if cpus.len() >= 2 {
        pin_to(cpus[0])?;
        Some((cpus[0], cpus[1]))
    } else {
        None
    };
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find this program's path: {e}"))?;
    let mut cmd = Command::new(&exe);
    cmd.arg("--peer").arg(port.to_string()).args(forwarded);
    if let Some((_, c1)) = placement {
        cmd.arg("--cpu").arg(c1.to_string());
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start the peer {}: {e}", exe.display()))?;
    let outcome = accept_and_run(&listener, &mut child, opts, placement);
    if outcome.is_err() {
        let _ = child.kill();
    }
    let status = child
        .wait()
        .map_err(|e| format!("cannot wait for the peer: {e}"))?;
    outcome?;
    if !status.success() {
        return Err(format!("the peer (rank 1) failed: {status}"));
    }
    Ok(())
}

fn accept_and_run(
    listener: &TcpListener,
    child: &mut Child,
    opts: &Options,
    placement: Option<(usize, usize)>,
) -> Result<(), String> {
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("cannot make the listener nonblocking: {e}"))?;
    let start = Instant::now();
    let stream = loop {
        match listener.accept() {
            Ok((s, _)) => break s,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(format!("the peer exited before connecting: {status}"));
                }
                if start.elapsed() > Duration::from_secs(20) {
                    return Err("the peer did not connect within 20 s".into());
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => return Err(format!("accept failed: {e}")),
        }
    };
    match placement {
        Some((a, b)) => println!(
            "# raw_tcp: 127.0.0.1, TCP_NODELAY, busy-poll; rank 0 on cpu {a}, rank 1 on cpu {b}"
        ),
        None => println!("# raw_tcp: 127.0.0.1, TCP_NODELAY, busy-poll; not bound"),
    }
    run(0, Link::new(stream)?, opts)
}

/// Rank 1: connects to the leader and answers.
fn peer(port: &str, cpu: Option<&str>, opts: &Options) -> Result<(), String> {
    let port: u16 = port
        .parse()
        .map_err(|_| format!("--peer {port}: not a port number"))?;
    if let Some(cpu) = cpu {
        pin_to(parse_cpu(cpu)?)?;
    }
    let stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port))
        .map_err(|e| format!("cannot connect to 127.0.0.1:{port}: {e}"))?;
    run(1, Link::new(stream)?, opts)
}

/// A connected, nonblocking, `TCP_NODELAY` socket driven by busy-polling.
struct Link {
    stream: TcpStream,
}

impl Link {
    fn new(stream: TcpStream) -> Result<Link, String> {
        stream
            .set_nodelay(true)
            .map_err(|e| format!("cannot set TCP_NODELAY: {e}"))?;
        stream
            .set_nonblocking(true)
            .map_err(|e| format!("cannot make the socket nonblocking: {e}"))?;
        Ok(Link { stream })
    }

    /// Writes all of `buf`, retrying at once whenever the socket is full.
    fn send(&mut self, mut buf: &[u8]) -> Result<(), String> {
        let mut stall = Stall::new();
        while !buf.is_empty() {
            match self.stream.write(buf) {
                Ok(0) => return Err("the peer closed the connection".into()),
                Ok(n) => {
                    buf = &buf[n..];
                    stall.progress();
                }
                Err(e) if retry(&e) => stall.spin("sending")?,
                Err(e) => return Err(format!("write failed: {e}")),
            }
        }
        Ok(())
    }

    /// Fills `buf`, retrying at once whenever nothing has arrived.
    fn recv(&mut self, mut buf: &mut [u8]) -> Result<(), String> {
        let mut stall = Stall::new();
        while !buf.is_empty() {
            match self.stream.read(buf) {
                Ok(0) => return Err("the peer closed the connection".into()),
                Ok(n) => {
                    buf = &mut buf[n..];
                    stall.progress();
                }
                Err(e) if retry(&e) => stall.spin("receiving")?,
                Err(e) => return Err(format!("read failed: {e}")),
            }
        }
        Ok(())
    }
}

fn retry(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
    )
}

/// Gives up when no byte moved for [`STALL_LIMIT`] (looks at the clock only
/// every 65,536 empty polls).
struct Stall {
    polls: u32,
    since: Option<Instant>,
}

impl Stall {
    fn new() -> Stall {
        Stall {
            polls: 0,
            since: None,
        }
    }

    fn progress(&mut self) {
        self.polls = 0;
        self.since = None;
    }

    fn spin(&mut self, what: &str) -> Result<(), String> {
        self.polls = self.polls.wrapping_add(1);
        if self.polls & 0xFFFF == 0 {
            let since = *self.since.get_or_insert_with(Instant::now);
            if since.elapsed() > STALL_LIMIT {
                return Err(format!(
                    "nothing moved for {} s while {what}; the peer is stuck or gone",
                    STALL_LIMIT.as_secs()
                ));
            }
        }
        std::hint::spin_loop();
        Ok(())
    }
}

/// Bytes a message of `size` occupies on the stream (an empty message is
/// one byte).
fn wire(size: usize) -> usize {
    size.max(1)
}

fn run(rank: u32, mut link: Link, opts: &Options) -> Result<(), String> {
    let sizes = opts.sizes();
    let max = sizes.iter().copied().max().unwrap_or(0);
    let mut sbuf = vec![CLEAR_BYTE; wire(max)];
    let mut rbuf = vec![CLEAR_BYTE; wire(max)];
    for &size in &sizes {
        latency(rank, &mut link, size, opts.quick, &mut sbuf, &mut rbuf)?;
    }
    drop(rbuf);
    // Only the receiver needs the window buffer.
    let mut window = if rank == 1 {
        vec![CLEAR_BYTE; WINDOW * max]
    } else {
        Vec::new()
    };
    for &size in sizes.iter().filter(|&&s| s > 0) {
        bandwidth(rank, &mut link, size, opts.quick, &mut sbuf, &mut window)?;
    }
    Ok(())
}

fn latency(
    rank: u32,
    link: &mut Link,
    size: usize,
    quick: bool,
    sbuf: &mut [u8],
    rbuf: &mut [u8],
) -> Result<(), String> {
    let n = wire(size);
    let (sbuf, rbuf) = (&mut sbuf[..n], &mut rbuf[..n]);
    let sched = latency_schedule(size, quick);
    latency_check(rank, link, size, true, sbuf, rbuf)?;
    let mut start = Instant::now();
    for i in 0..sched.warmup + sched.iters {
        if i == sched.warmup {
            start = Instant::now();
        }
        round_trip(rank, link, sbuf, rbuf)?;
    }
    let elapsed = start.elapsed().as_secs_f64();
    latency_check(rank, link, size, false, sbuf, rbuf)?;
    if rank == 0 {
        println!("{}", latency_line(size, elapsed, sched.iters));
    }
    Ok(())
}

/// One ping-pong: rank 0 sends then receives, rank 1 the other way round.
fn round_trip(rank: u32, link: &mut Link, sbuf: &[u8], rbuf: &mut [u8]) -> Result<(), String> {
    if rank == 0 {
        link.send(sbuf)?;
        link.recv(rbuf)
    } else {
        link.recv(rbuf)?;
        link.send(sbuf)
    }
}

/// One untimed round trip with patterned data, checked on both sides.
fn latency_check(
    rank: u32,
    link: &mut Link,
    size: usize,
    before: bool,
    sbuf: &mut [u8],
    rbuf: &mut [u8],
) -> Result<(), String> {
    let when = if before { "before" } else { "after" };
    fill(sbuf, seed(before, size, rank));
    rbuf.fill(CLEAR_BYTE);
    let peer = 1 - rank;
    round_trip(rank, link, sbuf, rbuf)?;
    verify(rbuf, seed(before, size, peer))
        .map_err(|m| format!("latency check {when} the timed loop, {size} B: {m}"))
}

fn bandwidth(
    rank: u32,
    link: &mut Link,
    size: usize,
    quick: bool,
    sbuf: &mut [u8],
    window: &mut [u8],
) -> Result<(), String> {
    let sched = bandwidth_schedule(size, quick);
    let sbuf = &mut sbuf[..size];
    let window = if rank == 1 {
        &mut window[..size * WINDOW]
    } else {
        &mut window[..0]
    };
    let mut ack = [0u8; 1];
    bandwidth_check(rank, link, size, true, sbuf, window)?;
    let mut start = Instant::now();
    for w in 0..sched.warmup + sched.iters {
        if w == sched.warmup {
            start = Instant::now();
        }
        if rank == 0 {
            for _ in 0..WINDOW {
                link.send(sbuf)?;
            }
            link.recv(&mut ack)?;
        } else {
            link.recv(window)?;
            link.send(&ack)?;
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    bandwidth_check(rank, link, size, false, sbuf, window)?;
    if rank == 0 {
        println!("{}", bandwidth_line(size, elapsed, sched.iters));
    }
    Ok(())
}

/// One untimed window with patterned data, every message checked.
fn bandwidth_check(
    rank: u32,
    link: &mut Link,
    size: usize,
    before: bool,
    sbuf: &mut [u8],
    window: &mut [u8],
) -> Result<(), String> {
    let when = if before { "before" } else { "after" };
    let mut ack = [0u8; 1];
    if rank == 0 {
        fill(sbuf, seed(before, size, 0));
        for _ in 0..WINDOW {
            link.send(sbuf)?;
        }
        link.recv(&mut ack)?;
    } else {
        window.fill(CLEAR_BYTE);
        link.recv(window)?;
        for (k, msg) in window.chunks(size).enumerate() {
            verify(msg, seed(before, size, 0)).map_err(|m| {
                format!("bandwidth check {when} the timed loop, {size} B, message {k}: {m}")
            })?;
        }
        link.send(&ack)?;
    }
    Ok(())
}
