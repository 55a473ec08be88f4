//! The component's tests: the protocol over one mapping with threads as
//! ranks ([`protocol`]), every operation against a sequential reference
//! ([`ops`], [`reductions`]), and the component itself ([`component`]).

mod component;
mod ops;
mod protocol;
mod reductions;

use crate::member::{Member, Waiter};
use crate::segment::Segment;
use std::sync::Arc;
use std::time::Duration;

/// A deadlock fails the test after this long instead of hanging it.
pub const GIVE_UP: Duration = Duration::from_secs(60);

/// The waiter of the tests: few spins (the threads share 2 cores), no
/// progress engine, and a limit.
pub fn waiter() -> Waiter<'static> {
    Waiter {
        spins: 100,
        progress_every: 8,
        progress: &|| {},
        give_up: Some(GIVE_UP),
    }
}

/// Runs `f` as each of `n` ranks (threads) over one anonymous segment
/// with two slots of `slot` bytes per rank (each reused every other
/// step); each rank's result, in rank order.
pub fn ranks<R: Send>(
    n: usize,
    slot: usize,
    f: impl Fn(&mut Member, &Waiter<'_>) -> R + Sync,
) -> Vec<R> {
    ranks_in(n, slot, 2, f)
}

/// As [`ranks`], with `buffers` slots per rank.
pub fn ranks_in<R: Send>(
    n: usize,
    slot: usize,
    buffers: usize,
    f: impl Fn(&mut Member, &Waiter<'_>) -> R + Sync,
) -> Vec<R> {
    let seg =
        Arc::new(Segment::anonymous(n, crate::segment::slots(slot, buffers, buffers)).unwrap());
    let f = &f;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|r| {
                let seg = seg.clone();
                s.spawn(move || {
                    let mut m = Member::new(seg, r);
                    f(&mut m, &waiter())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Asserts every rank answered `Ok`.
pub fn all_ok(results: Vec<Result<(), String>>, what: &str) {
    for (r, res) in results.into_iter().enumerate() {
        if let Err(e) = res {
            panic!("{what}: rank {r}: {e}");
        }
    }
}
