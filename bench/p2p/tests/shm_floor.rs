//! Runs the shared-memory floors end to end (data checks on) with a hard
//! time limit; figures are parsed, never judged.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs shm_floor with `args`, killing it after 120 s.
fn run(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_shm_floor"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start shm_floor");
    let start = Instant::now();
    while child.try_wait().expect("poll shm_floor").is_none() {
        if start.elapsed() > Duration::from_secs(120) {
            child.kill().ok();
            panic!("shm_floor {args:?} did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("collect shm_floor output")
}

/// The `(kind, size)` of every figure line, each figure checked to be a
/// positive number; fails the test on a failed run or a malformed line.
fn figures(args: &[&str]) -> Vec<(String, usize)> {
    let out = run(args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "shm_floor {args:?} failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.starts_with("# shm_floor "), "no header: {stdout}");
    stdout
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(f.len(), 3, "bad line {line:?}");
            let value: f64 = f[2].parse().expect("figure");
            assert!(value.is_finite() && value > 0.0, "bad figure in {line:?}");
            (f[0].to_string(), f[1].parse().expect("size"))
        })
        .collect()
}

fn lines(kind: &str, sizes: &[usize]) -> Vec<(String, usize)> {
    sizes.iter().map(|&s| (kind.to_string(), s)).collect()
}

#[test]
fn cache_line_ping_pong_measures_the_small_sizes() {
    assert_eq!(figures(&["cacheline", "--quick"]), lines("lat", &[0, 1, 8]));
    assert_eq!(
        figures(&["cacheline", "--quick", "--sizes", "8,56", "--no-bind"]),
        lines("lat", &[8, 56])
    );
}

#[test]
fn process_vm_readv_reads_the_peer_buffer_for_every_size() {
    // No bandwidth row for 0 bytes.
    assert_eq!(
        figures(&["readv", "--quick", "--sizes", "0,8,4K,1M"]),
        lines("bw", &[8, 4096, 1 << 20])
    );
}

#[test]
fn memcpy_copies_every_size() {
    assert_eq!(
        figures(&["memcpy", "--quick", "--sizes", "0,1,64K"]),
        lines("bw", &[1, 65536])
    );
}

#[test]
fn bad_arguments_are_reported_not_panicked() {
    for (args, expected) in [
        (&["cacheline", "--sizes", "8,64"][..], "at most 56 bytes"),
        (&["readv", "--sizes", "8,lots"][..], "`lots`"),
        (&["copy"][..], "`copy`"),
        (&[][..], "no mode"),
        (&["memcpy", "--frobnicate"][..], "--frobnicate"),
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(expected) && err.contains("shm_floor"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}
