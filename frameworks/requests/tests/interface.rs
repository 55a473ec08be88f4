//! The shared request interface on its own: completion slots, signals,
//! and the MPI layer's services seen from both sides.

use oxmpi_framework_requests::services::{core_table, Core, MpiCore};
use oxmpi_framework_requests::*;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

fn status(source: i32, count: usize, error: RequestError) -> RequestStatus {
    RequestStatus {
        source,
        tag: 7,
        count,
        cancelled: false,
        error,
    }
}

#[test]
fn a_slot_says_running_until_published_and_again_once_armed() {
    let slot = Completion::new();
    assert_eq!(slot.read(), Completed::Running);
    assert!(slot.is_running());
    let st = RequestStatus {
        cancelled: true,
        ..status(3, 1 << 40, RequestError::None)
    };
    slot.publish(&st);
    assert_eq!(slot.read(), Completed::Released(st));
    assert!(!slot.is_running());
    slot.arm();
    assert_eq!(slot.read(), Completed::Running);
    slot.fail();
    assert_eq!(slot.read(), Completed::Failed);
}

#[test]
fn publishing_releases_only_error_free_requests_and_ignores_a_null_slot() {
    let slot = Completion::new();
    let ok = status(1, 8, RequestError::None);
    // SAFETY: the slot lives for the calls; null is allowed.
    unsafe {
        assert!(publish_completion(&slot, &ok));
        assert_eq!(slot.read(), Completed::Released(ok));
        slot.arm();
        assert!(!publish_completion(
            &slot,
            &status(1, 8, RequestError::Truncated)
        ));
        assert_eq!(slot.read(), Completed::Failed);
        assert!(!publish_completion(std::ptr::null(), &ok));
    }
}

#[test]
fn signals_count_entries_and_say_whether_progress_has_work() {
    let signals = Signals::new();
    assert_eq!(signals.events(), 0);
    assert!(signals.has_work(), "progress runs until told otherwise");
    signals.record(false);
    signals.record(true);
    signals.record(false);
    assert_eq!(signals.events(), 3);
    assert!(!signals.has_work());
    signals.reset();
    assert_eq!(signals.events(), 0);
    assert!(signals.has_work());
}

/// An MPI layer in memory: cards by (rank, name); a name `boom` panics.
#[derive(Default)]
struct Layer {
    cards: Mutex<HashMap<(u32, String), Vec<u8>>>,
    polls: Mutex<Vec<ProgressFn>>,
}

impl MpiCore for Layer {
    fn modex_put(&self, name: &str, card: &[u8]) -> Result<(), String> {
        match name {
            "boom" => panic!("the layer broke"),
            "full" => Err("the modex is full".into()),
            _ => {
                self.cards
                    .lock()
                    .unwrap()
                    .insert((0, name.into()), card.to_vec());
                Ok(())
            }
        }
    }

    fn modex_get(&self, rank: u32, name: &str) -> Result<Option<Vec<u8>>, String> {
        if name == "boom" {
            panic!("the layer broke");
        }
        if rank > 3 {
            return Err(format!("rank {rank} is not in the job"));
        }
        Ok(self
            .cards
            .lock()
            .unwrap()
            .get(&(rank, name.into()))
            .cloned())
    }

    fn register_progress(&self, poll: ProgressFn) {
        self.polls.lock().unwrap().push(poll);
    }
}

static POLLED: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn poll_once() -> usize {
    POLLED.fetch_add(1, Ordering::Relaxed);
    2
}

#[test]
fn a_component_reaches_the_layer_through_the_table_and_panics_become_failures() {
    let layer: &'static Layer = Box::leak(Box::default());
    let core = Core::new(core_table(layer));
    core.modex_put("card", b"abc").unwrap();
    assert_eq!(
        core.modex_get(0, "card").unwrap().as_deref(),
        Some(&b"abc"[..])
    );
    assert_eq!(core.modex_get(1, "card").unwrap(), None);
    assert_eq!(
        core.modex_get(9, "card").unwrap_err(),
        "rank 9 is not in the job"
    );
    assert_eq!(
        core.modex_put("full", b"x").unwrap_err(),
        "the modex is full"
    );
    let panicked = core.modex_put("boom", b"x").unwrap_err();
    assert!(panicked.contains("modex_put"), "{panicked}");
    let panicked = core.modex_get(0, "boom").unwrap_err();
    assert!(panicked.contains("modex_get"), "{panicked}");
    core.register_progress(poll_once);
    let polls = layer.polls.lock().unwrap().clone();
    assert_eq!(polls.len(), 1);
    assert_eq!(polls[0].run(), 2);
    assert_eq!(POLLED.load(Ordering::Relaxed), 1);
    // The table handed on to another component reaches the same layer.
    let again = Core::new(core.raw());
    assert_eq!(
        again.modex_get(0, "card").unwrap().as_deref(),
        Some(&b"abc"[..])
    );
}
