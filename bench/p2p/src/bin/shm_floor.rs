//! The shared-memory floors: what two processes on one machine can do at
//! best, measured with the method of the MPI programs (see the crate
//! documentation and `bench/p2p/README.md`, "Shared memory").
//!
//! Usage: `shm_floor MODE [--quick] [--sizes LIST] [--no-bind]`, MODE one
//! of:
//!
//! - `cacheline`: latency. Two processes ping-pong through one 64-byte
//!   cache line of a `MAP_SHARED` mapping: the sender stores the payload
//!   (up to 56 bytes) and then a sequence number, the receiver busy-polls
//!   the number and copies the payload out. One way = total / (2 × round
//!   trips). Sizes up to 56 bytes (default: those of the standard list, 0,
//!   1 and 8 B).
//! - `readv`: single-copy bandwidth. Rank 1 owns a buffer; rank 0 copies
//!   [`WINDOW`] messages of `size` bytes from it per window with
//!   `process_vm_readv`, one call per message, into consecutive slices of
//!   its window buffer (as an MPI receiver of the bandwidth test does).
//! - `memcpy`: copy bandwidth in one process: [`WINDOW`] `copy_from_slice`
//!   calls of `size` bytes per window, from one buffer into consecutive
//!   slices of the window buffer.
//!
//! The two-process modes spawn their peer (this program, with `--peer FD
//! --cpu N`: FD is the inherited memfd of the shared block). With two or
//! more usable CPUs the processes are pinned to the first two (`memcpy` to
//! the first); `--no-bind` leaves them unpinned. Every size has an untimed
//! checked round before the warm-up and after the timed loop.
//!
//! Output: `lat <bytes> <usec>` or `bw <bytes> <MB/s>` lines on stdout,
//! comments start with `#`; errors on stderr, exit status 1.

#![forbid(unsafe_code)]

use std::process::{Child, Command, ExitCode};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use oxmpi_bench_p2p::affinity::{allowed_cpus, parse_cpu, pin_to};
use oxmpi_bench_p2p::shm::{read_remote, Control, PingLine, SharedMap, PAYLOAD};
use oxmpi_bench_p2p::{
    bandwidth_line, bandwidth_schedule, fill, latency_line, latency_schedule, seed, take_flag,
    take_value, verify, Options, CLEAR_BYTE, SIZES, WINDOW,
};

const USAGE: &str = "usage: shm_floor cacheline|readv|memcpy [--quick] [--sizes LIST] [--no-bind]";

/// How long a side spins without the other answering before it gives up.
const STALL_LIMIT: Duration = Duration::from_secs(60);

/// Peer commands of the `readv` mode (in [`Control::op`]).
const OP_FILL: u64 = 1;
const OP_EXIT: u64 = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    CacheLine,
    Readv,
    Memcpy,
}

impl Mode {
    fn parse(text: Option<&str>) -> Result<Mode, String> {
        match text {
            Some("cacheline") => Ok(Mode::CacheLine),
            Some("readv") => Ok(Mode::Readv),
            Some("memcpy") => Ok(Mode::Memcpy),
            Some(other) => Err(format!(
                "unknown mode `{other}` (expected cacheline, readv or memcpy)"
            )),
            None => Err("no mode given (cacheline, readv or memcpy)".into()),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mode::CacheLine => "cacheline",
            Mode::Readv => "readv",
            Mode::Memcpy => "memcpy",
        }
    }
}

/// The sizes `mode` measures: the cache line carries at most [`PAYLOAD`]
/// bytes (by default the standard sizes that fit); the others take them
/// all.
fn sizes_for(mode: Mode, opts: &Options) -> Result<Vec<usize>, String> {
    match (mode, &opts.sizes) {
        (Mode::CacheLine, None) => Ok(SIZES.iter().copied().filter(|&s| s <= PAYLOAD).collect()),
        (Mode::CacheLine, Some(list)) => match list.iter().find(|&&s| s > PAYLOAD) {
            Some(s) => Err(format!(
                "--sizes: the cache line carries at most {PAYLOAD} bytes, not {s}"
            )),
            None => Ok(list.clone()),
        },
        _ => Ok(opts.sizes()),
    }
}

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mode = if args.is_empty() {
        None
    } else {
        Some(args.remove(0))
    };
    let parsed = (|| -> Result<_, String> {
        let mode = Mode::parse(mode.as_deref())?;
        let peer_fd = take_value(&mut args, "--peer")?;
        let cpu = take_value(&mut args, "--cpu")?;
        let no_bind = take_flag(&mut args, "--no-bind");
        let forwarded = args.clone();
        let opts = Options::parse(args)?;
        let sizes = sizes_for(mode, &opts)?;
        Ok((mode, peer_fd, cpu, no_bind, forwarded, opts.quick, sizes))
    })();
    let (mode, peer_fd, cpu, no_bind, forwarded, quick, sizes) = match parsed {
        Ok(p) => p,
        Err(e) => return fail(0, &format!("{e}; {USAGE}")),
    };
    let rank = u32::from(peer_fd.is_some());
    let result = match (mode, peer_fd) {
        (Mode::Memcpy, _) => memcpy(&sizes, quick, !no_bind),
        (_, Some(fd)) => peer(mode, &fd, cpu.as_deref(), &sizes, quick),
        (_, None) => leader(mode, &sizes, quick, !no_bind, &forwarded),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(rank, &e),
    }
}

fn fail(rank: u32, msg: &str) -> ExitCode {
    eprintln!("shm_floor: rank {rank}: {msg}");
    ExitCode::FAILURE
}

/// Pins this process to the first usable CPU and the peer to the second
/// when there are two; `None` when unbound.
fn placement(bind: bool) -> Result<Option<(usize, usize)>, String> {
    let cpus = if bind { allowed_cpus()? } else { Vec::new() };
    if cpus.len() >= 2 {
        pin_to(cpus[0])?;
        Ok(Some((cpus[0], cpus[1])))
    } else {
        Ok(None)
    }
}

/// Rank 0: creates the shared block, spawns rank 1, measures, prints,
/// waits for rank 1.
fn leader(
    mode: Mode,
    sizes: &[usize],
    quick: bool,
    bind: bool,
    forwarded: &[String],
) -> Result<(), String> {
    let map = SharedMap::create()?;
    let place = placement(bind)?;
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find this program's path: {e}"))?;
    let mut cmd = Command::new(&exe);
    cmd.arg(mode.name())
        .arg("--peer")
        .arg(map.raw_fd().to_string())
        .args(forwarded);
    if let Some((_, c1)) = place {
        cmd.arg("--cpu").arg(c1.to_string());
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start the peer {}: {e}", exe.display()))?;
    let where_ = match place {
        Some((a, b)) => format!("rank 0 on cpu {a}, rank 1 on cpu {b}"),
        None => "not bound".into(),
    };
    let outcome = match mode {
        Mode::CacheLine => {
            println!("# shm_floor cacheline: one 64-byte line of a MAP_SHARED mapping, busy-poll; {where_}");
            let mut waiter = Waiter::new(Some(&mut child));
            ping_pong(0, &map.shared().ping, sizes, quick, &mut waiter)
        }
        Mode::Readv => {
            println!("# shm_floor readv: process_vm_readv, one call per message; reader {where_}");
            let pid = child.id() as libc::pid_t;
            let mut waiter = Waiter::new(Some(&mut child));
            read_peer(&map.shared().control, pid, sizes, quick, &mut waiter)
        }
        Mode::Memcpy => Err("memcpy runs in one process".into()),
    };
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

/// Rank 1: maps the inherited block and answers.
fn peer(
    mode: Mode,
    fd: &str,
    cpu: Option<&str>,
    sizes: &[usize],
    quick: bool,
) -> Result<(), String> {
    let fd: i32 = fd
        .parse()
        .map_err(|_| format!("--peer {fd}: not a descriptor number"))?;
    if let Some(cpu) = cpu {
        pin_to(parse_cpu(cpu)?)?;
    }
    let map = SharedMap::open(fd)?;
    let mut waiter = Waiter::new(None);
    match mode {
        Mode::CacheLine => ping_pong(1, &map.shared().ping, sizes, quick, &mut waiter),
        Mode::Readv => serve(&map.shared().control, sizes, &mut waiter),
        Mode::Memcpy => Err("memcpy runs in one process".into()),
    }
}

/// Busy-waits, giving up when the other side stays silent for
/// [`STALL_LIMIT`] or (for the leader) when its peer has exited. Looks at
/// the clock and the peer only every 65,536 empty polls.
struct Waiter<'c> {
    child: Option<&'c mut Child>,
    polls: u32,
    since: Option<Instant>,
}

impl<'c> Waiter<'c> {
    fn new(child: Option<&'c mut Child>) -> Self {
        Waiter {
            child,
            polls: 0,
            since: None,
        }
    }

    /// Spins until `done()` holds.
    #[inline]
    fn until(&mut self, what: &str, mut done: impl FnMut() -> bool) -> Result<(), String> {
        while !done() {
            self.polls = self.polls.wrapping_add(1);
            if self.polls & 0xFFFF == 0 {
                self.check(what)?;
            }
            std::hint::spin_loop();
        }
        self.since = None;
        Ok(())
    }

    #[cold]
    fn check(&mut self, what: &str) -> Result<(), String> {
        if let Some(child) = self.child.as_deref_mut() {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!("the peer exited ({status}) while {what}"));
            }
        }
        let since = *self.since.get_or_insert_with(Instant::now);
        if since.elapsed() > STALL_LIMIT {
            return Err(format!(
                "no answer for {} s while {what}; the peer is stuck or gone",
                STALL_LIMIT.as_secs()
            ));
        }
        Ok(())
    }
}

/// The `cacheline` mode, both sides. Sequence numbers run on across sizes:
/// rank 0 posts the odd ones, rank 1 the even ones.
fn ping_pong(
    rank: u32,
    line: &PingLine,
    sizes: &[usize],
    quick: bool,
    waiter: &mut Waiter<'_>,
) -> Result<(), String> {
    let mut seq = 0u64;
    let mut sbuf = [CLEAR_BYTE; PAYLOAD];
    let mut rbuf = [CLEAR_BYTE; PAYLOAD];
    for &size in sizes {
        let (sbuf, rbuf) = (&mut sbuf[..size], &mut rbuf[..size]);
        let sched = latency_schedule(size, quick);
        line_check(rank, line, &mut seq, true, sbuf, rbuf, waiter)?;
        let mut start = Instant::now();
        for i in 0..sched.warmup + sched.iters {
            if i == sched.warmup {
                start = Instant::now();
            }
            round_trip(rank, line, &mut seq, sbuf, rbuf, waiter)?;
        }
        let elapsed = start.elapsed().as_secs_f64();
        line_check(rank, line, &mut seq, false, sbuf, rbuf, waiter)?;
        if rank == 0 {
            println!("{}", latency_line(size, elapsed, sched.iters));
        }
    }
    Ok(())
}

/// One ping-pong: rank 0 posts then waits, rank 1 the other way round.
#[inline]
fn round_trip(
    rank: u32,
    line: &PingLine,
    seq: &mut u64,
    sbuf: &[u8],
    rbuf: &mut [u8],
    waiter: &mut Waiter<'_>,
) -> Result<(), String> {
    if rank == 0 {
        *seq += 1;
        line.post(sbuf, *seq);
    }
    *seq += 1;
    let want = *seq;
    waiter.until("waiting for the cache line", || line.seq() == want)?;
    line.take(rbuf);
    if rank == 1 {
        *seq += 1;
        line.post(sbuf, *seq);
    }
    Ok(())
}

/// One untimed round trip with patterned data, checked on both sides.
fn line_check(
    rank: u32,
    line: &PingLine,
    seq: &mut u64,
    before: bool,
    sbuf: &mut [u8],
    rbuf: &mut [u8],
    waiter: &mut Waiter<'_>,
) -> Result<(), String> {
    let size = sbuf.len();
    fill(sbuf, seed(before, size, rank));
    rbuf.fill(CLEAR_BYTE);
    round_trip(rank, line, seq, sbuf, rbuf, waiter)?;
    verify(rbuf, seed(before, size, 1 - rank)).map_err(|m| {
        format!(
            "cache-line check {} the timed loop, {size} B: {m}",
            if before { "before" } else { "after" }
        )
    })
}

/// The `readv` mode, rank 1: publishes its buffer, then carries out the
/// leader's commands until told to exit.
fn serve(control: &Control, sizes: &[usize], waiter: &mut Waiter<'_>) -> Result<(), String> {
    let max = sizes.iter().copied().max().unwrap_or(0);
    // Written (not zeroed) so that every page is touched before measuring.
    let mut buf = vec![CLEAR_BYTE; max];
    control.addr.store(buf.as_ptr() as u64, Ordering::Relaxed);
    control.len.store(max as u64, Ordering::Relaxed);
    control.done.store(1, Ordering::Release);
    let mut last = 0;
    loop {
        waiter.until("waiting for a command", || {
            control.command.load(Ordering::Acquire) != last
        })?;
        last = control.command.load(Ordering::Acquire);
        match control.op.load(Ordering::Relaxed) {
            OP_FILL => {
                let size = control.size.load(Ordering::Relaxed) as usize;
                let seed = control.seed.load(Ordering::Relaxed) as u32;
                let target = buf.get_mut(..size).ok_or_else(|| {
                    format!("the leader asked to fill {size} bytes of a {max}-byte buffer")
                })?;
                fill(target, seed);
            }
            OP_EXIT => {
                control.done.store(last + 1, Ordering::Release);
                return Ok(());
            }
            op => return Err(format!("unknown command {op} from the leader")),
        }
        control.done.store(last + 1, Ordering::Release);
    }
}

/// The leader's side of the `readv` control protocol.
struct Commander<'a, 'c> {
    control: &'a Control,
    issued: u64,
    waiter: &'a mut Waiter<'c>,
}

impl Commander<'_, '_> {
    /// Posts one command and waits until the peer has carried it out.
    fn run(&mut self, op: u64, size: usize, seed: u32) -> Result<(), String> {
        self.control.op.store(op, Ordering::Relaxed);
        self.control.size.store(size as u64, Ordering::Relaxed);
        self.control.seed.store(u64::from(seed), Ordering::Relaxed);
        self.issued += 1;
        self.control.command.store(self.issued, Ordering::Release);
        let (control, want) = (self.control, self.issued + 1);
        self.waiter
            .until("waiting for the peer to fill its buffer", || {
                control.done.load(Ordering::Acquire) == want
            })
    }
}

/// The `readv` mode, rank 0: for each size, windows of
/// `process_vm_readv` calls from the peer's buffer.
fn read_peer(
    control: &Control,
    pid: libc::pid_t,
    sizes: &[usize],
    quick: bool,
    waiter: &mut Waiter<'_>,
) -> Result<(), String> {
    waiter.until("waiting for the peer to start", || {
        control.done.load(Ordering::Acquire) == 1
    })?;
    let addr = control.addr.load(Ordering::Relaxed) as usize;
    let len = control.len.load(Ordering::Relaxed) as usize;
    let max = sizes.iter().copied().max().unwrap_or(0);
    if len < max {
        return Err(format!(
            "the peer published a {len}-byte buffer, {max} bytes are needed"
        ));
    }
    let mut window = vec![CLEAR_BYTE; WINDOW * max];
    let mut commander = Commander {
        control,
        issued: 0,
        waiter,
    };
    for &size in sizes.iter().filter(|&&s| s > 0) {
        let window = &mut window[..WINDOW * size];
        let sched = bandwidth_schedule(size, quick);
        readv_check(&mut commander, pid, addr, true, window, size)?;
        let mut start = Instant::now();
        for w in 0..sched.warmup + sched.iters {
            if w == sched.warmup {
                start = Instant::now();
            }
            for slot in window.chunks_mut(size) {
                read_remote(pid, addr, slot)?;
            }
        }
        let elapsed = start.elapsed().as_secs_f64();
        readv_check(&mut commander, pid, addr, false, window, size)?;
        println!("{}", bandwidth_line(size, elapsed, sched.iters));
    }
    commander.run(OP_EXIT, 0, 0)
}

/// One untimed window: the peer fills its buffer with the pattern, every
/// message read is checked.
fn readv_check(
    commander: &mut Commander<'_, '_>,
    pid: libc::pid_t,
    addr: usize,
    before: bool,
    window: &mut [u8],
    size: usize,
) -> Result<(), String> {
    let seed = seed(before, size, 1);
    commander.run(OP_FILL, size, seed)?;
    window.fill(CLEAR_BYTE);
    for slot in window.chunks_mut(size) {
        read_remote(pid, addr, slot)?;
    }
    check_window(window, size, seed, "process_vm_readv", before)
}

/// Compares every `size`-byte message of `window` with the pattern.
fn check_window(
    window: &[u8],
    size: usize,
    seed: u32,
    what: &str,
    before: bool,
) -> Result<(), String> {
    for (k, msg) in window.chunks(size).enumerate() {
        verify(msg, seed).map_err(|m| {
            format!(
                "{what} check {} the timed loop, {size} B, message {k}: {m}",
                if before { "before" } else { "after" }
            )
        })?;
    }
    Ok(())
}

/// The `memcpy` mode: one process, windows of copies from one buffer.
fn memcpy(sizes: &[usize], quick: bool, bind: bool) -> Result<(), String> {
    let cpus = if bind { allowed_cpus()? } else { Vec::new() };
    match cpus.first() {
        Some(&c) => {
            pin_to(c)?;
            println!("# shm_floor memcpy: copy_from_slice in one process on cpu {c}");
        }
        None => println!("# shm_floor memcpy: copy_from_slice in one process, not bound"),
    }
    let max = sizes.iter().copied().max().unwrap_or(0);
    let mut src = vec![CLEAR_BYTE; max];
    let mut window = vec![CLEAR_BYTE; WINDOW * max];
    for &size in sizes.iter().filter(|&&s| s > 0) {
        let (src, window) = (&mut src[..size], &mut window[..WINDOW * size]);
        let sched = bandwidth_schedule(size, quick);
        memcpy_check(src, window, true)?;
        let mut start = Instant::now();
        for w in 0..sched.warmup + sched.iters {
            if w == sched.warmup {
                start = Instant::now();
            }
            copy_window(src, window);
        }
        let elapsed = start.elapsed().as_secs_f64();
        memcpy_check(src, window, false)?;
        println!("{}", bandwidth_line(size, elapsed, sched.iters));
    }
    Ok(())
}

/// One window of copies; `black_box` keeps the compiler from dropping
/// copies of data it can see is unchanged.
#[inline]
fn copy_window(src: &[u8], window: &mut [u8]) {
    let src = std::hint::black_box(src);
    for slot in window.chunks_mut(src.len()) {
        slot.copy_from_slice(src);
    }
    std::hint::black_box(window);
}

fn memcpy_check(src: &mut [u8], window: &mut [u8], before: bool) -> Result<(), String> {
    let size = src.len();
    let seed = seed(before, size, 0);
    fill(src, seed);
    window.fill(CLEAR_BYTE);
    copy_window(src, window);
    check_window(window, size, seed, "memcpy", before)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(sizes: Option<Vec<usize>>) -> Options {
        Options { quick: true, sizes }
    }

    #[test]
    fn modes_parse_and_round_trip_their_names() {
        for mode in [Mode::CacheLine, Mode::Readv, Mode::Memcpy] {
            assert_eq!(Mode::parse(Some(mode.name())), Ok(mode));
        }
        assert!(Mode::parse(Some("--quick"))
            .unwrap_err()
            .contains("`--quick`"));
        assert!(Mode::parse(None).unwrap_err().contains("no mode"));
    }

    #[test]
    fn the_cache_line_takes_only_sizes_that_fit() {
        assert_eq!(sizes_for(Mode::CacheLine, &opts(None)), Ok(vec![0, 1, 8]));
        assert_eq!(
            sizes_for(Mode::CacheLine, &opts(Some(vec![8, 56]))),
            Ok(vec![8, 56])
        );
        let err = sizes_for(Mode::CacheLine, &opts(Some(vec![8, 64]))).unwrap_err();
        assert!(err.contains("56") && err.contains("64"), "{err}");
        assert_eq!(sizes_for(Mode::Readv, &opts(None)), Ok(SIZES.to_vec()));
        assert_eq!(
            sizes_for(Mode::Memcpy, &opts(Some(vec![4096]))),
            Ok(vec![4096])
        );
    }

    #[test]
    fn copies_are_checked_message_by_message() {
        let size = 4096;
        let mut src = vec![0u8; size];
        let mut window = vec![0u8; WINDOW * size];
        memcpy_check(&mut src, &mut window, true).expect("an honest copy passes");
        // A window whose last message is damaged fails, naming it.
        window[WINDOW * size - 1] ^= 0xFF;
        let err = check_window(&window, size, seed(true, size, 0), "memcpy", true).unwrap_err();
        assert!(err.contains(&format!("message {}", WINDOW - 1)), "{err}");
        assert!(err.contains(&format!("byte {}", size - 1)), "{err}");
    }
}
