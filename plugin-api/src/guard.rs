//! Panic containment for component entry points.
//!
//! Nothing may unwind across the FFI boundary. [`call`] runs an entry point,
//! catches a panic, and turns it into a [`ComponentError`] of kind
//! `Panicked` whose message carries the panic text and its source location.
//! While a guarded call runs, the panic hook of this copy of std records the
//! panic instead of printing it, so the core reports it once, as a warning.
//! The guard costs two plain loads and stores per call.

use crate::{ComponentError, ErrorKind};
use abi_stable::std_types::{RResult, RString};
use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Once;

// Entry points are hot (a pml's `test`, a btl's `progress` run millions of
// times a second), so the guard avoids thread-locals, which cost a call to
// `__tls_get_addr` each in a shared library: the number of guarded calls
// running in this library is a plain counter. The panic hook records every
// panic's message on the panicking thread (the cold path), so a guarded
// call always reports its own panic, and prints the panic only when the
// counter is zero: a panic on another thread of the same library while a
// guarded call runs (components run no threads of their own) is recorded
// but not printed.
static GUARDED_CALLS: AtomicUsize = AtomicUsize::new(0);
static HOOKED: AtomicBool = AtomicBool::new(false);

thread_local! {
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

#[cold]
fn install_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            // Always recorded (cold: only on a panic), so a guarded call
            // always reports its panic's message; printed only outside
            // guarded calls.
            let text = match info.payload().downcast_ref::<&str>() {
                Some(s) => (*s).to_string(),
                None => match info.payload().downcast_ref::<String>() {
                    Some(s) => s.clone(),
                    None => "(no message)".to_string(),
                },
            };
            let at = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            LAST_PANIC.with(|p| *p.borrow_mut() = Some(format!("'{text}'{at}")));
            if GUARDED_CALLS.load(Ordering::Relaxed) == 0 {
                previous(info);
            }
        }));
    });
    HOOKED.store(true, Ordering::Release);
}

/// Runs `f`, converting a panic into `Err(ComponentError { kind: Panicked, .. })`.
#[inline]
pub fn call<T>(f: impl FnOnce() -> Result<T, ComponentError>) -> RResult<T, ComponentError> {
    match catch(f) {
        Ok(Ok(value)) => RResult::ROk(value),
        Ok(Err(error)) | Err(error) => RResult::RErr(error),
    }
}

/// Runs `f` and returns its value, or its panic as a [`ComponentError`]
/// of kind `Panicked` (what [`call`] does, for an entry point whose
/// answer is not a `Result` of a [`ComponentError`]).
#[inline]
pub fn catch<T>(f: impl FnOnce() -> T) -> Result<T, ComponentError> {
    if !HOOKED.load(Ordering::Acquire) {
        install_hook();
    }
    // Plain loads and stores, not read-modify-write: entry points are
    // called one at a time (the MPI layer's lock), and a lost update could
    // only misroute a panic message, never break memory safety.
    let depth = GUARDED_CALLS.load(Ordering::Relaxed);
    GUARDED_CALLS.store(depth + 1, Ordering::Relaxed);
    let outcome = panic::catch_unwind(AssertUnwindSafe(f));
    GUARDED_CALLS.store(depth, Ordering::Relaxed);
    outcome.map_err(|_| panicked())
}

#[cold]
fn panicked() -> ComponentError {
    let message = LAST_PANIC
        .with(|p| p.borrow_mut().take())
        .unwrap_or_else(|| "panic with no message".to_string());
    ComponentError {
        kind: ErrorKind::Panicked,
        message: RString::from(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catch_answers_the_value_or_the_panic() {
        assert_eq!(catch(|| 5).unwrap(), 5);
        let err = catch(|| -> u8 { panic!("caught {}", 8) }).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Panicked);
        assert!(
            err.message.as_str().starts_with("'caught 8' at "),
            "{}",
            err.message
        );
    }

    #[test]
    fn ok_and_err_pass_through() {
        assert_eq!(call(|| Ok(5)).unwrap(), 5);
        let err = call::<()>(|| Err(ComponentError::failed("nope"))).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Failed);
        assert_eq!(err.message.as_str(), "nope");
    }

    #[test]
    fn panic_becomes_error_with_message_and_location() {
        let err = call::<()>(|| panic!("boom {}", 7)).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Panicked);
        assert!(
            err.message.as_str().starts_with("'boom 7' at "),
            "{}",
            err.message
        );
        assert!(err.message.as_str().contains("guard.rs"), "{}", err.message);
    }

    #[test]
    fn concurrent_guarded_panics_each_report_their_own_message() {
        let threads: Vec<_> = (0..4)
            .map(|t| {
                std::thread::spawn(move || {
                    for i in 0..200 {
                        if (i + t) % 2 == 0 {
                            assert_eq!(call(|| Ok(i)).unwrap(), i);
                        } else {
                            let err = call::<()>(|| panic!("thread {t} call {i}")).unwrap_err();
                            assert!(
                                err.message
                                    .as_str()
                                    .starts_with(&format!("'thread {t} call {i}'")),
                                "{}",
                                err.message
                            );
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }
}
