//! The segment protocol with threads as ranks over one mapping: barriers
//! separate, a writer never reuses a slot before its readers finished
//! with it, every member counts the same steps, and waits run progress
//! and give up (in tests) with a sentence.

use super::{all_ok, ranks, ranks_in, waiter};
use crate::member::{Member, Waiter};
use crate::ops;
use crate::segment::{slots, Segment, SMALL_DATA};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn nobody_leaves_a_barrier_before_everybody_entered_it() {
    for n in 1..=8 {
        let entered = AtomicUsize::new(0);
        let results = ranks(n, 4096, |m, w| {
            for round in 1..=50 {
                entered.fetch_add(1, Ordering::SeqCst);
                ops::barrier(m, w)?;
                let seen = entered.load(Ordering::SeqCst);
                if seen < n * round {
                    return Err(format!("left barrier {round} with {seen} entries"));
                }
                // A second barrier keeps the next round's entries after
                // every check of this one.
                ops::barrier(m, w)?;
            }
            Ok(())
        });
        all_ok(results, &format!("{n} ranks"));
    }
}

#[test]
fn a_writer_waits_for_slow_readers_before_reusing_a_slot() {
    let n = 3;
    const BUFFERS: usize = 3;
    let results = ranks_in(n, 4096, BUFFERS, |m, w| {
        for round in 0..40u64 {
            let mut buf = round.to_ne_bytes();
            if m.rank() == 0 {
                let s = m.seq() + 1;
                ops::bcast(m, w, &mut buf, 0)?;
                // The root claimed slot `s % BUFFERS` only once every reader
                // finished step `s - BUFFERS`, its previous use.
                for q in 1..n {
                    let done = m.segment().done(q).load(Ordering::Acquire);
                    if done + (BUFFERS as u64) < s {
                        return Err(format!("step {s} written while rank {q} is at {done}"));
                    }
                }
            } else {
                if round % 3 == 0 {
                    std::thread::sleep(Duration::from_millis(2));
                }
                ops::bcast(m, w, &mut buf, 0)?;
                if u64::from_ne_bytes(buf) != round {
                    return Err(format!("round {round} read {}", u64::from_ne_bytes(buf)));
                }
            }
        }
        Ok(m.seq())
    });
    let seqs: Vec<u64> = results.into_iter().map(Result::unwrap).collect();
    assert_eq!(
        seqs,
        vec![40; n],
        "one step per bcast of 8 bytes, at every rank"
    );
}

#[test]
fn a_small_contribution_travels_in_the_lines_of_its_flag() {
    let seg = Segment::anonymous(2, slots(4096, 4, 6)).unwrap();
    for q in 0..2 {
        for b in 0..4 {
            for small in [false, true] {
                let flag = seg.arrived(q, b, small) as *const AtomicU64 as usize;
                // SAFETY: nobody uses the segment concurrently in this test.
                let data = unsafe { seg.data(q, b, small) };
                let at = data.as_ptr() as usize;
                assert_eq!(at - flag, 8);
                assert_eq!(flag / 64, (at + 55) / 64, "56 bytes share the flag's line");
                if small {
                    assert_eq!(data.len(), SMALL_DATA);
                    assert_eq!(flag / 128, (at + SMALL_DATA - 1) / 128, "one pair of lines");
                } else {
                    assert_eq!(data.len(), 4096);
                }
            }
        }
    }
}

#[test]
fn steps_use_the_small_slots_only_for_data_that_fits_and_wrap_at_their_own_count() {
    // 2 slots and 3 small slots: a step's slot is its number modulo the
    // count of its kind.
    let seg = Arc::new(Segment::anonymous(2, slots(4096, 2, 3)).unwrap());
    let mut m = Member::new(seg.clone(), 0);
    let w = waiter();
    // Rank 1 finished step 3 (so slots of steps up to 3 may be reused).
    seg.done(1).store(3, Ordering::Release);
    for (len, small, buffer) in [
        (0, true, 1),
        (SMALL_DATA, true, 2),
        (SMALL_DATA + 1, false, 1),
        (8, true, 1),
        (4096, false, 1),
    ] {
        let mut step = m.step_for(len);
        let s = step.number();
        step.claim(&w).unwrap().publish();
        drop(step);
        assert_eq!(
            seg.arrived(0, buffer, small).load(Ordering::Acquire),
            s,
            "{len} bytes"
        );
    }
    // Step 6 reuses the small slot of step 3, which rank 1 finished;
    // step 7 that of step 4, which it did not: the claim waits for it.
    m.step_for(8).claim(&w).unwrap().publish();
    assert_eq!(seg.arrived(0, 0, true).load(Ordering::Acquire), 6);
    let gave_up = Waiter {
        give_up: Some(Duration::from_millis(20)),
        ..w
    };
    let why = m.step_for(8).claim(&gave_up).err().unwrap();
    assert!(why.contains("rank 1 to finish step 4"), "{why}");
}

#[test]
fn a_long_wait_runs_progress_and_a_test_wait_gives_up_with_a_sentence() {
    let seg = Arc::new(Segment::anonymous(2, slots(4096, 2, 2)).unwrap());
    let mut m = Member::new(seg, 0);
    let rounds = AtomicUsize::new(0);
    let progress = || {
        rounds.fetch_add(1, Ordering::Relaxed);
    };
    let w = Waiter {
        spins: 10,
        progress_every: 2,
        progress: &progress,
        give_up: Some(Duration::from_millis(50)),
    };
    // Rank 1 never comes.
    let why = ops::barrier(&mut m, &w).unwrap_err();
    assert!(
        why.contains("gave up after") && why.contains("rank 1's data of step 1"),
        "{why}"
    );
    assert!(rounds.load(Ordering::Relaxed) > 0, "progress ran");
    // The step ended anyway.
    assert_eq!(m.segment().done(0).load(Ordering::Acquire), 1);
    let _ = waiter();
}
