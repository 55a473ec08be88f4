//! Point-to-point benchmarks: oxmpi, Open MPI, MPICH and their floors (raw
//! TCP, shared memory) side by side.
//!
//! This library holds what the benchmark programs share so that they
//! measure the same thing: the message sizes, the iteration schedule, the
//! data pattern used to check that the bytes arrive intact, and the output
//! lines. The C program (`c/pt2pt.c`) repeats the same schedule and pattern;
//! a change here must be made there too (the README says so).
//!
//! Method (see `README.md`):
//! - latency: ping-pong of `size` bytes, `warmup` untimed round trips, then
//!   `iters` timed ones; one-way time = total / (2 × iters);
//! - bandwidth: the sender issues a window of [`WINDOW`] back-to-back
//!   nonblocking sends of `size` bytes, the receiver posts matching receives
//!   into `WINDOW` consecutive slices of one buffer, and acknowledges the
//!   window with one byte; bandwidth = bytes / time, in MB/s (10^6 bytes);
//! - checks: one untimed round before the warm-up and one after the timed
//!   loop fill the send buffer with [`pattern`] (a different seed each time),
//!   clear the receive buffer, and compare every received byte.
//!
//! The system calls the floors need (CPU pinning, a shared mapping,
//! `process_vm_readv`) are in [`affinity`] and [`shm`], the only modules
//! with `unsafe` code.

#![deny(unsafe_code)]

use std::fmt;

#[allow(unsafe_code)]
pub mod affinity;
#[allow(unsafe_code)]
pub mod shm;

/// Message sizes measured, in bytes (0 B to 4 MiB).
pub const SIZES: [usize; 10] = [0, 1, 8, 64, 512, 4096, 65536, 262_144, 1 << 20, 4 << 20];

/// Sends in flight per bandwidth window.
pub const WINDOW: usize = 64;

/// Value receive buffers are cleared to before a checked round; the check
/// compares against [`pattern`], so any stale or missing byte is caught
/// unless the pattern happens to hold this value at that byte.
pub const CLEAR_BYTE: u8 = 0xA5;

/// How many iterations one measurement makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// Untimed iterations before the timed ones.
    pub warmup: usize,
    /// Timed iterations (round trips for latency, windows for bandwidth).
    pub iters: usize,
}

/// The latency schedule for `size` bytes; `quick` divides by ten.
pub fn latency_schedule(size: usize, quick: bool) -> Schedule {
    let (warmup, iters) = match size {
        0..=8192 => (1000, 10_000),
        8193..=262_144 => (100, 1000),
        _ => (20, 200),
    };
    scaled(warmup, iters, quick)
}

/// The bandwidth schedule (in windows) for `size` bytes; `quick` divides
/// by ten.
pub fn bandwidth_schedule(size: usize, quick: bool) -> Schedule {
    let (warmup, iters) = match size {
        0..=8192 => (20, 200),
        8193..=262_144 => (10, 100),
        262_145..=1_048_576 => (4, 40),
        _ => (2, 10),
    };
    scaled(warmup, iters, quick)
}

/// The self-send schedule (messages, each one isend + irecv + wait of a
/// rank to itself); `quick` divides by ten.
pub fn selfsend_schedule(quick: bool) -> Schedule {
    scaled(20_000, 200_000, quick)
}

fn scaled(warmup: usize, iters: usize, quick: bool) -> Schedule {
    if quick {
        Schedule {
            warmup: (warmup / 10).max(1),
            iters: (iters / 10).max(2),
        }
    } else {
        Schedule { warmup, iters }
    }
}

/// Byte `i` of the check pattern for `seed`: the top byte of a
/// multiplicative hash, so it does not repeat every 256 bytes (a payload
/// placed at a wrong offset fails the check).
#[inline]
pub fn pattern(i: usize, seed: u32) -> u8 {
    let x = (i as u32)
        .wrapping_mul(0x9E37_79B1)
        .wrapping_add(seed.wrapping_mul(0x85EB_CA77));
    ((x ^ (x >> 15)) >> 24) as u8
}

/// Fills `buf` with the check pattern for `seed`.
pub fn fill(buf: &mut [u8], seed: u32) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = pattern(i, seed);
    }
}

/// A received byte that differs from the pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// Offset of the first differing byte.
    pub offset: usize,
    /// The byte received.
    pub got: u8,
    /// The byte the pattern has there.
    pub expected: u8,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "byte {} is {:#04x}, expected {:#04x}",
            self.offset, self.got, self.expected
        )
    }
}

/// Compares `buf` with the pattern for `seed`; the first difference, if any.
pub fn verify(buf: &[u8], seed: u32) -> Result<(), Mismatch> {
    match buf
        .iter()
        .enumerate()
        .find(|&(i, &b)| b != pattern(i, seed))
    {
        None => Ok(()),
        Some((offset, &got)) => Err(Mismatch {
            offset,
            got,
            expected: pattern(offset, seed),
        }),
    }
}

/// Seed of a checked round: `before` (true for the round ahead of the
/// warm-up), the message size, and which side sends (0 = rank 0).
pub fn seed(before: bool, size: usize, sender: u32) -> u32 {
    (size as u32)
        .wrapping_mul(4)
        .wrapping_add(if before { 0 } else { 2 })
        .wrapping_add(sender)
        .wrapping_add(1)
}

/// The output line of a latency measurement: `lat <bytes> <usec>`.
pub fn latency_line(size: usize, total_secs: f64, iters: usize) -> String {
    format!("lat {size} {:.3}", total_secs * 1e6 / (2.0 * iters as f64))
}

/// The output line of a bandwidth measurement: `bw <bytes> <MB/s>`.
pub fn bandwidth_line(size: usize, total_secs: f64, windows: usize) -> String {
    let bytes = (size * WINDOW * windows) as f64;
    format!("bw {size} {:.1}", bytes / total_secs / 1e6)
}

/// The output line of a self-send measurement: `self <bytes> <ns per
/// message>`.
pub fn selfsend_line(size: usize, total_secs: f64, messages: usize) -> String {
    format!("self {size} {:.1}", total_secs * 1e9 / messages as f64)
}

/// Command-line options the benchmark programs share.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// `--quick`: a tenth of the iterations.
    pub quick: bool,
    /// `--sizes a,b,c`: only these sizes (default: [`SIZES`]).
    pub sizes: Option<Vec<usize>>,
}

impl Options {
    /// Parses `--quick` and `--sizes LIST` from `args` (without the
    /// program name). Errors: an unknown argument or a bad size list, with
    /// the offending text.
    pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Options, String> {
        let mut opts = Options::default();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--quick" => opts.quick = true,
                "--sizes" => {
                    let list = args
                        .next()
                        .ok_or("--sizes needs a comma-separated list of byte counts")?;
                    opts.sizes = Some(parse_sizes(&list)?);
                }
                other => {
                    return Err(format!(
                        "unknown argument `{other}` (expected --quick or --sizes LIST)"
                    ))
                }
            }
        }
        Ok(opts)
    }

    /// The sizes to measure.
    pub fn sizes(&self) -> Vec<usize> {
        self.sizes.clone().unwrap_or_else(|| SIZES.to_vec())
    }
}

/// Removes `name` from `args`; whether it was there.
pub fn take_flag(args: &mut Vec<String>, name: &str) -> bool {
    let before = args.len();
    args.retain(|a| a != name);
    args.len() != before
}

/// Removes `name VALUE` from `args` and returns the value (`None` when
/// `name` is absent).
///
/// # Errors
/// `name` is the last argument, with no value after it.
pub fn take_value(args: &mut Vec<String>, name: &str) -> Result<Option<String>, String> {
    let Some(i) = args.iter().position(|a| a == name) else {
        return Ok(None);
    };
    if i + 1 >= args.len() {
        return Err(format!("{name} needs a value"));
    }
    let value = args.remove(i + 1);
    args.remove(i);
    Ok(Some(value))
}

/// Parses `0,8,1048576` (also `4K`, `1M` suffixes, powers of 1024).
pub fn parse_sizes(list: &str) -> Result<Vec<usize>, String> {
    list.split(',')
        .map(|s| {
            let s = s.trim();
            let (num, mult) = match s.chars().last() {
                Some('K' | 'k') => (&s[..s.len() - 1], 1024),
                Some('M' | 'm') => (&s[..s.len() - 1], 1 << 20),
                _ => (s, 1),
            };
            num.parse::<usize>()
                .ok()
                .and_then(|n| n.checked_mul(mult))
                .filter(|&n| n <= 64 << 20)
                .ok_or_else(|| {
                    format!("--sizes: `{s}` is not a byte count from 0 to 64M (e.g. 0,8,4K,1M)")
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_round_trips_and_catches_damage() {
        let mut buf = vec![0u8; 70_000];
        fill(&mut buf, 7);
        assert_eq!(verify(&buf, 7), Ok(()));
        assert!(verify(&buf, 8).is_err(), "another seed must not verify");
        buf[65_000] ^= 1;
        assert_eq!(verify(&buf, 7).unwrap_err().offset, 65_000);
    }

    #[test]
    fn pattern_is_not_periodic_at_256() {
        let mut buf = vec![0u8; 4096];
        fill(&mut buf, 3);
        assert!(verify(&buf[256..], 3).is_err());
        assert!(verify(&buf[1..], 3).is_err());
    }

    #[test]
    fn cleared_buffer_fails_the_check() {
        for &size in &SIZES[1..] {
            let buf = vec![CLEAR_BYTE; size];
            assert!(verify(&buf, seed(true, size, 0)).is_err(), "size {size}");
        }
    }

    #[test]
    fn seeds_differ_between_rounds_and_senders() {
        let s = [
            seed(true, 8, 0),
            seed(true, 8, 1),
            seed(false, 8, 0),
            seed(false, 8, 1),
        ];
        for i in 0..4 {
            for j in i + 1..4 {
                assert_ne!(s[i], s[j]);
            }
        }
    }

    #[test]
    fn lines_compute_one_way_latency_and_decimal_megabytes() {
        assert_eq!(latency_line(8, 0.1, 10_000), "lat 8 5.000");
        // 1 MiB × 64 × 10 windows in 0.1 s.
        assert_eq!(bandwidth_line(1 << 20, 0.1, 10), "bw 1048576 6710.9");
        // 200,000 messages in 84 ms: 420 ns each.
        assert_eq!(selfsend_line(8, 0.084, 200_000), "self 8 420.0");
    }

    #[test]
    fn quick_schedule_is_shorter_but_not_empty() {
        for &size in &SIZES {
            let full = latency_schedule(size, false);
            let quick = latency_schedule(size, true);
            assert!(quick.iters < full.iters && quick.iters >= 2);
            let full = bandwidth_schedule(size, false);
            let quick = bandwidth_schedule(size, true);
            assert!(quick.iters < full.iters && quick.iters >= 2);
        }
        let (full, quick) = (selfsend_schedule(false), selfsend_schedule(true));
        assert!(quick.iters < full.iters && quick.iters >= 2 && quick.warmup >= 1);
    }

    #[test]
    fn options_parse() {
        let o = Options::parse(["--quick", "--sizes", "0,4K,1M"].map(String::from)).unwrap();
        assert!(o.quick);
        assert_eq!(o.sizes(), vec![0, 4096, 1 << 20]);
        assert!(Options::parse(["--bogus".to_string()]).is_err());
        assert!(Options::parse(["--sizes".to_string()]).is_err());
        assert!(parse_sizes("1,x").unwrap_err().contains("`x`"));
        assert!(parse_sizes("65M").is_err());
        assert_eq!(Options::default().sizes(), SIZES.to_vec());
    }

    #[test]
    fn internal_arguments_are_taken_out() {
        let mut args: Vec<String> = ["--quick", "--peer", "5", "--no-bind", "--cpu"]
            .map(String::from)
            .to_vec();
        assert_eq!(take_value(&mut args, "--peer"), Ok(Some("5".into())));
        assert!(take_flag(&mut args, "--no-bind"));
        assert!(!take_flag(&mut args, "--no-bind"));
        assert!(take_value(&mut args, "--cpu")
            .unwrap_err()
            .contains("--cpu"));
        assert_eq!(take_value(&mut args, "--absent"), Ok(None));
        assert_eq!(args, ["--quick", "--cpu"]);
    }
}
