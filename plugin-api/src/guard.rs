//! Panic containment for component entry points.
//!
//! Nothing may unwind across the FFI boundary. [`call`] runs an entry point,
//! catches a panic, and turns it into a [`ComponentError`] of kind
//! `Panicked` whose message carries the panic text and its source location.
//! While a guarded call runs, the panic hook of this copy of std records the
//! panic instead of printing it, so the core reports it once, as a warning.

use crate::{ComponentError, ErrorKind};
use abi_stable::std_types::{RResult, RString};
use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    static INSIDE_GUARD: Cell<bool> = const { Cell::new(false) };
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

fn install_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if INSIDE_GUARD.with(Cell::get) {
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
            } else {
                previous(info);
            }
        }));
    });
}

/// Runs `f`, converting a panic into `Err(ComponentError { kind: Panicked, .. })`.
pub fn call<T>(f: impl FnOnce() -> Result<T, ComponentError>) -> RResult<T, ComponentError> {
    install_hook();
    let was_inside = INSIDE_GUARD.with(|g| g.replace(true));
    let outcome = panic::catch_unwind(AssertUnwindSafe(f));
    INSIDE_GUARD.with(|g| g.set(was_inside));
    match outcome {
        Ok(Ok(value)) => RResult::ROk(value),
        Ok(Err(error)) => RResult::RErr(error),
        Err(_) => {
            let message = LAST_PANIC
                .with(|p| p.borrow_mut().take())
                .unwrap_or_else(|| "panic with no message".to_string());
            RResult::RErr(ComponentError {
                kind: ErrorKind::Panicked,
                message: RString::from(message),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
