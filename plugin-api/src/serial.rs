//! [`Serialized`]: the one process-global state of a component whose
//! entry points its framework calls one at a time.
//!
//! A component library is loaded once per process and its framework calls
//! it through plain `extern "C"` functions, so its state is a `static`.
//! Every framework contract says the caller never enters a component twice
//! at once (the MPI layer's lock) and that a component never calls back
//! into its caller from an entry point that does not allow it. `Serialized`
//! does not trust that: each entry takes an exclusive flag with one atomic
//! swap (a few nanoseconds, no system call, never waits) and an entry that
//! finds the flag taken — a nested call on the same thread, or a second
//! thread — gets [`Reentered`] instead of a second `&mut` to the state. The
//! check holds in every build profile, so no contract violation by a caller
//! can make the component alias its state.
//!
//! The framework adapters (`oxmpi_framework_btl::adapter`,
//! `oxmpi_framework_pml::adapter`) wrap every entry point in
//! [`Serialized::enter`] and the panic guard; components do not use this
//! type directly.

use std::cell::UnsafeCell;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

/// A value entered by one caller at a time; see the module documentation.
pub struct Serialized<T> {
    busy: AtomicBool,
    value: UnsafeCell<Option<T>>,
}

// SAFETY: the value is only reached through `enter`, which hands out one
// `&mut` at a time (the `busy` flag is taken with an acquiring swap and
// released with a releasing store, so it is a non-blocking mutual
// exclusion and orders the value's memory between threads); `T: Send`
// because the value may be entered from several threads in turn.
unsafe impl<T: Send> Sync for Serialized<T> {}

/// An entry found the state already entered (see [`Serialized`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reentered;

impl fmt::Display for Reentered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "the component was entered while one of its entry points was still running (a nested call, or two threads at once); the framework contract forbids this, so the call was refused",
        )
    }
}

impl std::error::Error for Reentered {}

/// Releases the flag when an entry ends, also when it unwinds.
struct Exit<'a>(&'a AtomicBool);

impl Drop for Exit<'_> {
    #[inline]
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl<T> Serialized<T> {
    /// An empty state (`None` until the component's `init` fills it).
    pub const fn new() -> Self {
        Serialized {
            busy: AtomicBool::new(false),
            value: UnsafeCell::new(None),
        }
    }

    /// Runs `f` on the state.
    ///
    /// # Errors
    ///
    /// [`Reentered`] when another entry is running (then `f` is not run).
    #[inline]
    pub fn enter<R>(&self, f: impl FnOnce(&mut Option<T>) -> R) -> Result<R, Reentered> {
        if self.busy.swap(true, Ordering::Acquire) {
            return Err(Reentered);
        }
        let _exit = Exit(&self.busy);
        // SAFETY: the swap above took the flag, so no other `&mut` to the
        // value exists until `_exit` releases it after `f` returns (or
        // unwinds).
        let value = unsafe { &mut *self.value.get() };
        Ok(f(value))
    }

    /// Whether an entry is running now (for diagnostics and tests).
    pub fn is_entered(&self) -> bool {
        self.busy.load(Ordering::Relaxed)
    }
}

impl<T> Default for Serialized<T> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enter_gives_the_value_and_nested_entry_is_refused() {
        static S: Serialized<u32> = Serialized::new();
        S.enter(|v| *v = Some(1)).unwrap();
        let nested = S.enter(|v| {
            *v = Some(2);
            S.enter(|_| ())
        });
        assert_eq!(nested, Ok(Err(Reentered)));
        assert_eq!(S.enter(|v| *v), Ok(Some(2)));
        assert!(!S.is_entered());
    }

    #[test]
    fn a_panic_inside_releases_the_flag() {
        static S: Serialized<u32> = Serialized::new();
        let caught = std::panic::catch_unwind(|| S.enter(|_| panic!("inside")));
        assert!(caught.is_err());
        assert_eq!(S.enter(|v| v.replace(3)), Ok(None));
    }

    #[test]
    fn two_threads_never_hold_the_value_at_once() {
        static S: Serialized<u64> = Serialized::new();
        static REFUSED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        S.enter(|v| *v = Some(0)).unwrap();
        let threads: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| {
                    let mut done = 0;
                    while done < 10_000 {
                        match S.enter(|v| {
                            let n = v.as_mut().unwrap();
                            let seen = *n;
                            std::hint::spin_loop();
                            *n = seen + 1;
                        }) {
                            Ok(()) => done += 1,
                            Err(Reentered) => {
                                REFUSED.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        // Every entry that ran incremented without losing an update.
        assert_eq!(S.enter(|v| *v), Ok(Some(40_000)));
    }
}
