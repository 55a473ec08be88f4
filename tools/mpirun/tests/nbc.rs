//! Non-blocking collectives end to end: real jobs under mpirun running the
//! `nbc_check` example (oxmpi/examples), which starts every collective of
//! the Rust API's `immediate_` forms at once, with point-to-point traffic
//! in flight, completes them in reverse order and checks each result
//! against a sequential reference, also on split and duplicated
//! communicators and from two threads per rank; and shows a barrier does
//! not block.
//! The jobs run one at a time, oversubscribed on 2 cores.

mod common;

use common::*;
use std::sync::Mutex;

/// One job at a time: they are sized for a 2-core machine.
static SERIAL: Mutex<()> = Mutex::new(());

/// Runs nbc_check on `n` ranks with `extra` options and `args`; asserts
/// every rank reported success and nothing survived.
fn passes(n: usize, extra: &[&str], args: &[&str]) {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let run = example_passes(n, extra, "nbc_check", args, ": nbc ok (");
    assert_no_survivors(&run.marker);
}

#[test]
fn every_non_blocking_collective_is_right_on_1_to_8_ranks() {
    for n in [1, 2, 3, 4, 5, 8] {
        for count in ["0", "1", "1000"] {
            passes(n, &[], &[count, "4"]);
        }
    }
}

#[test]
fn non_blocking_collectives_move_1_mib_per_rank() {
    // 131072 i64 elements: 1 MiB per rank (rendezvous and single copy).
    passes(2, &[], &["131072", "2"]);
    passes(4, &[], &["131072", "1"]);
}

#[test]
fn non_blocking_collectives_over_tcp_and_with_basic() {
    passes(3, &TCP, &["1000", "4"]);
    passes(5, &["--mca", "coll", "^tuned"], &["1000", "4"]);
}

#[test]
fn two_threads_per_rank_run_non_blocking_collectives_at_once() {
    for n in [2, 4] {
        passes(n, &[], &["100", "10", "threads"]);
    }
}
