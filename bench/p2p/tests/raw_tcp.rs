//! Runs the raw TCP floor end to end (two processes over loopback, data
//! checks on) with a hard time limit; figures are parsed, never judged.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs raw_tcp with `args`, killing it after 120 s.
fn run(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_raw_tcp"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start raw_tcp");
    let start = Instant::now();
    while child.try_wait().expect("poll raw_tcp").is_none() {
        if start.elapsed() > Duration::from_secs(120) {
            child.kill().ok();
            panic!("raw_tcp {args:?} did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("collect raw_tcp output")
}

#[test]
fn measures_every_requested_size_with_checked_data() {
    let out = run(&["--quick", "--sizes", "0,8,4K,256K"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "raw_tcp failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lat = Vec::new();
    let mut bw = Vec::new();
    for line in stdout.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(f.len(), 3, "bad line {line:?}");
        let size: usize = f[1].parse().expect("size");
        let value: f64 = f[2].parse().expect("figure");
        assert!(value.is_finite() && value > 0.0, "bad figure in {line:?}");
        match f[0] {
            "lat" => lat.push(size),
            "bw" => bw.push(size),
            other => panic!("unknown line kind {other:?}"),
        }
    }
    assert_eq!(lat, [0, 8, 4096, 262_144]);
    // No bandwidth row for 0 bytes.
    assert_eq!(bw, [8, 4096, 262_144]);
}

#[test]
fn bad_arguments_are_reported_not_panicked() {
    let out = run(&["--sizes", "8,lots"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`lots`") && err.contains("raw_tcp"), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    let out = run(&["--frobnicate"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--frobnicate"));
}
