//! Counting heap allocations made by the engine (this test binary's global
//! allocator counts, per thread, only inside [`counted`] sections).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<u64> = const { Cell::new(0) };
}

struct CountingAlloc;

// SAFETY: forwards to the system allocator.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: the caller keeps the allocator contract, passed on as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: the caller keeps the allocator contract, passed on as is.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        // SAFETY: the caller keeps the allocator contract, passed on as is.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller keeps the allocator contract, passed on as is.
        unsafe { System.dealloc(ptr, layout) }
    }
}

fn note() {
    let _ = COUNTING.try_with(|c| {
        if c.get() {
            let _ = COUNT.try_with(|n| n.set(n.get() + 1));
        }
    });
}

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

fn with_counting<R>(on: bool, f: impl FnOnce() -> R) -> R {
    let before = COUNTING.with(|c| c.replace(on));
    let r = f();
    COUNTING.with(|c| c.set(before));
    r
}

/// Runs `f` counting its allocations (code under test).
pub(crate) fn counted<R>(f: impl FnOnce() -> R) -> R {
    with_counting(true, f)
}

/// Runs `f` without counting (the test harness's own work).
pub(crate) fn uncounted<R>(f: impl FnOnce() -> R) -> R {
    with_counting(false, f)
}

/// Allocations counted on this thread so far.
pub(crate) fn allocations() -> u64 {
    COUNT.with(Cell::get)
}
