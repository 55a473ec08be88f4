//! Floods over the tcp btl end to end: dense streams of messages whose
//! sizes put frame boundaries anywhere in the receive buffer, one way and
//! all to all, among 2 to 8 ranks (oversubscribed on small machines), with
//! every byte checked by `p2p_check storm`; and the socket-buffer limits.

mod common;

use common::*;

/// Runs `p2p_check storm SIZES COUNT MODE` on `n` ranks over tcp.
fn storm(n: usize, extra: &[&str], sizes: &str, count: usize, mode: &str) -> Run {
    let n_text = n.to_string();
    let count = count.to_string();
    let program = built("p2p_check").display().to_string();
    let mut args: Vec<&str> = vec!["-n", &n_text];
    args.extend(TCP);
    args.extend(extra);
    args.extend([program.as_str(), "storm", sizes, &count, mode]);
    mpirun(&args)
}

fn assert_storm_ok(run: &Run, n: usize, sizes: &str, count: usize, mode: &str) {
    assert_eq!(
        run.code(),
        0,
        "job failed\nstdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
    assert!(
        !run.stderr.contains("panicked"),
        "a panic was reported:\n{}",
        run.stderr
    );
    let reporting = if mode == "one" { 1 } else { n };
    for size in sizes.split(',') {
        let line = format!("storm ok ({count} messages of {size} bytes, {mode})");
        let seen = run.stdout.lines().filter(|l| l.ends_with(&line)).count();
        assert!(
            seen >= reporting,
            "{seen} ranks reported \"{line}\", expected {reporting}\n{}",
            run.stdout
        );
    }
}

#[test]
fn one_way_streams_of_awkward_sizes_arrive_intact() {
    // 50, 2577 and 2621 bytes each once put a fragment's headers exactly
    // at the end of the buffered bytes with a short rest to come.
    let sizes = "6,50,2577,2621,4099,70000";
    let run = storm(2, &[], sizes, 3000, "one");
    assert_storm_ok(&run, 2, sizes, 3000, "one");
}

#[test]
fn many_to_one_streams_among_4_ranks() {
    let sizes = "6,2577";
    let run = storm(4, &[], sizes, 2000, "one");
    assert_storm_ok(&run, 4, sizes, 2000, "one");
}

#[test]
fn all_to_all_storms_among_4_ranks() {
    let sizes = "6,2577,70000";
    let run = storm(4, &[], sizes, 400, "all");
    assert_storm_ok(&run, 4, sizes, 400, "all");
}

#[test]
fn all_to_all_storms_among_8_ranks() {
    let sizes = "6,2621";
    let run = storm(8, &[], sizes, 300, "all");
    assert_storm_ok(&run, 8, sizes, 300, "all");
}

#[test]
fn one_and_two_byte_fragments_carry_large_messages() {
    for max in ["1", "2"] {
        let extra = ["--mca", "btl_tcp_max_send_size", max];
        let sizes = "100000,300001";
        let run = storm(2, &extra, sizes, 2, "one");
        assert_storm_ok(&run, 2, sizes, 2, "one");
    }
}

#[test]
fn tiny_socket_buffers_are_refused_and_16_kib_ones_work() {
    let run = storm(2, &["--mca", "btl_tcp_rcvbuf", "1"], "300000", 2, "one");
    assert_ne!(run.code(), 0);
    assert!(
        run.stderr.contains("btl_tcp_rcvbuf is 1 bytes") && run.stderr.contains("at least 16384"),
        "{}",
        run.stderr
    );
    let extra = [
        "--mca",
        "btl_tcp_rcvbuf",
        "16384",
        "--mca",
        "btl_tcp_sndbuf",
        "16384",
    ];
    let sizes = "70001,300000";
    let run = storm(2, &extra, sizes, 4, "all");
    assert_storm_ok(&run, 2, sizes, 4, "all");
}
