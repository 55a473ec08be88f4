//! Communicators and groups end to end: real jobs under mpirun running the
//! `comm_check` example (oxmpi/examples): dup, split, split by node,
//! create from a group, compare, free and group operations, with
//! point-to-point messages and collectives on every new communicator; and
//! two threads per rank creating communicators at once
//! (`MPI_THREAD_MULTIPLE`). The jobs run one at a time, oversubscribed on
//! 2 cores.

mod common;

use common::*;
use std::sync::Mutex;

/// One job at a time: they are sized for a 2-core machine.
static SERIAL: Mutex<()> = Mutex::new(());

fn passes(n: usize, args: &[&str]) {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let program = built("comm_check").display().to_string();
    let ranks = n.to_string();
    let mut all = vec!["-n", ranks.as_str(), "--oversubscribe", program.as_str()];
    all.extend(args);
    let run = mpirun(&all);
    assert_eq!(
        run.code(),
        0,
        "comm_check {args:?} on {n} ranks failed:\n{}\n{}",
        run.stdout,
        run.stderr
    );
    let ok = run
        .stdout
        .lines()
        .filter(|l| l.contains(": comm ok ("))
        .count();
    assert_eq!(ok, n, "every rank reports success:\n{}", run.stdout);
    assert_no_survivors(&run.marker);
}

#[test]
fn communicators_are_made_used_and_freed_on_1_to_8_ranks() {
    for n in [1, 2, 3, 4, 5, 8] {
        passes(n, &[]);
    }
}

#[test]
fn two_threads_per_rank_create_communicators_at_once() {
    for n in [2, 3, 4] {
        passes(n, &["threads"]);
    }
}
