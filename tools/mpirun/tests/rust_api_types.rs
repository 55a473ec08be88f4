//! Derived datatypes, attributes and hints of the Rust API between real
//! ranks. The
//! `derive_check` example (oxmpi/examples) sends a struct with padding
//! (packed on the wire) and one without through every point-to-point
//! form and the data-moving collectives, checks every value, and checks
//! that reductions refuse what they cannot combine; the `attr_check`
//! example copies attributes on duplication, deletes them on free and
//! round-trips hints. Jobs run one at a time, oversubscribed on 2 cores,
//! over shared memory and over tcp.

mod common;

use common::*;
use std::sync::Mutex;

/// One job at a time: they are sized for a 2-core machine.
static SERIAL: Mutex<()> = Mutex::new(());

fn passes(n: usize, extra: &[&str]) {
    runs(n, extra, "derive_check", ": derive ok (");
}

fn runs(n: usize, extra: &[&str], program: &str, ok_mark: &str) {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let run = example_passes(n, extra, program, &[], ok_mark);
    assert_no_survivors(&run.marker);
}

#[test]
fn derived_types_travel_on_2_3_and_4_ranks_over_shared_memory() {
    for n in [2, 3, 4] {
        passes(n, &["--mca", "btl", "self,sm"]);
    }
}

#[test]
fn derived_types_travel_over_tcp() {
    passes(2, &TCP);
}

#[test]
fn derived_types_work_on_one_rank() {
    passes(1, &[]);
}

#[test]
fn attributes_and_hints_on_1_2_and_3_ranks() {
    for n in [1, 2, 3] {
        runs(n, &[], "attr_check", ": attr ok (");
    }
}
