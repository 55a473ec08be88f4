//! The program keeps its own handling of the crash signals (`SIGSEGV`,
//! `SIGBUS`, `SIGILL`, `SIGFPE`, `SIGABRT`). Libraries that components
//! link install handlers of their own as they load, in every process,
//! whichever component is then selected: UCX's prints its backtrace, the
//! PSM libraries libfabric links print one, write `.btr` files into the
//! working directory and turn an abort into exit status 1. [`kept`] runs a
//! step (loading the component libraries, a component's lifecycle entry)
//! and puts the dispositions back as they were.

/// The signals whose dispositions are kept.
const CRASH_SIGNALS: [libc::c_int; 5] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGABRT,
];

/// The dispositions of [`CRASH_SIGNALS`], as read.
struct Saved([Option<libc::sigaction>; 5]);

fn save() -> Saved {
    let mut out = [None; 5];
    for (slot, &sig) in out.iter_mut().zip(&CRASH_SIGNALS) {
        // SAFETY: a zeroed sigaction is a valid buffer; a null new action
        // only reads the current one into it.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } == 0 {
            *slot = Some(old);
        }
    }
    Saved(out)
}

fn restore(saved: &Saved) {
    for (old, &sig) in saved.0.iter().zip(&CRASH_SIGNALS) {
        if let Some(old) = old {
            // SAFETY: `old` is a disposition this process had, read by
            // `save`; putting it back is what it was before.
            unsafe { libc::sigaction(sig, old, std::ptr::null_mut()) };
        }
    }
}

/// Runs `step` and puts the crash signals' dispositions back as they were
/// before it.
pub fn kept<T>(step: impl FnOnce() -> T) -> T {
    let saved = save();
    let out = step();
    restore(&saved);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" fn ignore(_: libc::c_int) {}

    fn handler_of(sig: libc::c_int) -> libc::sighandler_t {
        // SAFETY: reads the current disposition into a zeroed buffer.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(sig, std::ptr::null(), &mut old);
            old.sa_sigaction
        }
    }

    #[test]
    fn a_handler_installed_during_the_step_is_removed_afterwards() {
        let before = handler_of(libc::SIGBUS);
        let handler = ignore as extern "C" fn(libc::c_int) as libc::sighandler_t;
        kept(|| {
            // SAFETY: installs a handler that does nothing, for the test.
            unsafe { libc::signal(libc::SIGBUS, handler) };
            assert_eq!(handler_of(libc::SIGBUS), handler);
        });
        assert_eq!(handler_of(libc::SIGBUS), before);
    }
}
