//! Barriers: no rank leaves a barrier before every rank has entered it.

mod common;

use oxmpi_collectives::block_on;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use common::{tag, SIZES};
use oxmpi_collectives::testkit::{self, TestTransport};
use oxmpi_collectives::{
    barrier_bruck, barrier_dissemination, barrier_linear, barrier_recursive_doubling, CollError,
    Transport,
};

type Barrier = fn(&mut TestTransport, i32) -> Result<(), CollError>;

const ALGORITHMS: &[(&str, Barrier)] = &[
    ("linear", |a0, a1| block_on(barrier_linear(a0, a1))),
    ("recursive_doubling", |a0, a1| {
        block_on(barrier_recursive_doubling(a0, a1))
    }),
    ("dissemination", |a0, a1| {
        block_on(barrier_dissemination(a0, a1))
    }),
    ("bruck", |a0, a1| block_on(barrier_bruck(a0, a1))),
];

const ROUNDS: u32 = 6;

/// Each round, every rank counts itself in and passes a barrier; after it
/// the count must be complete. One rank per round arrives late.
fn check_barrier(name: &str, barrier: Barrier) {
    for size in SIZES {
        let arrived = AtomicU32::new(0);
        testkit::run(size, |t| {
            for round in 0..ROUNDS {
                if t.rank() == round % size {
                    std::thread::sleep(Duration::from_millis(2));
                }
                arrived.fetch_add(1, Ordering::SeqCst);
                barrier(t, tag(round as usize)).unwrap();
                let seen = arrived.load(Ordering::SeqCst);
                assert!(
                    seen >= (round + 1) * size,
                    "{name}, size {size}, round {round}: rank {} left with {seen} arrivals",
                    t.rank()
                );
            }
        });
    }
}

#[test]
fn barrier_linear_synchronizes() {
    check_barrier(ALGORITHMS[0].0, ALGORITHMS[0].1);
}

#[test]
fn barrier_recursive_doubling_synchronizes() {
    check_barrier(ALGORITHMS[1].0, ALGORITHMS[1].1);
}

#[test]
fn barrier_dissemination_synchronizes() {
    check_barrier(ALGORITHMS[2].0, ALGORITHMS[2].1);
}

#[test]
fn barrier_bruck_synchronizes() {
    check_barrier(ALGORITHMS[3].0, ALGORITHMS[3].1);
}

#[test]
fn barriers_back_to_back_on_one_tag() {
    // Consecutive barriers may share a tag: order keeps them apart.
    for size in SIZES {
        testkit::run(size, |t| {
            for (_, barrier) in ALGORITHMS {
                barrier(t, -1).unwrap();
                barrier(t, -1).unwrap();
            }
        });
    }
}
