//! [`Instance`]: a component's process-global state behind its entry
//! points, with the checks every framework adapter applies to every entry.
//!
//! Each entry point of a generated framework table runs through
//! [`Instance::call`], which
//!
//! - takes the state exclusively ([`Serialized`]: a nested or concurrent
//!   entry is refused, in every build profile);
//! - refuses to run before `init` installed the state or after `finalize`
//!   took it;
//! - catches a panic ([`crate::guard`]), logs it once at
//!   [`verbosity::ERROR`](crate::verbosity::ERROR) through the component's
//!   context (with the panic's message and source location), and *poisons*
//!   the state: a component whose entry point panicked may be half-updated,
//!   so every later entry is refused with a sentence naming the first
//!   internal error, until `finalize` drops it.
//!
//! A refused entry is an [`EntryError`]; the adapter turns it into the
//! failure value of the entry point (false with a reason, `Failed`, zero
//! events).

use crate::serial::{Reentered, Serialized};
use crate::{guard, verbosity, ComponentContext, ErrorKind};
use std::fmt;

/// A component's installed state.
struct Installed<T> {
    value: T,
    context: ComponentContext,
    /// The first internal error, after which nothing runs.
    poisoned: Option<String>,
}

/// The process-global state of one component; see the module docs.
pub struct Instance<T> {
    slot: Serialized<Installed<T>>,
}

/// Why an entry point did not run its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryError {
    /// `init` has not run (or failed), or `finalize` already ran.
    NotInitialized,
    /// `init` ran twice without `finalize`.
    AlreadyInitialized,
    /// Another entry point was running ([`Reentered`]).
    Reentered,
    /// This entry point panicked (the text: message and location).
    Panicked(String),
    /// An earlier entry point panicked (the text names that error).
    Stopped(String),
}

impl fmt::Display for EntryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EntryError::NotInitialized => f.write_str("the component is not initialized"),
            EntryError::AlreadyInitialized => f.write_str(
                "the component is already initialized (init called twice without finalize)",
            ),
            EntryError::Reentered => write!(f, "{Reentered}"),
            EntryError::Panicked(what) => write!(f, "internal error: {what}"),
            EntryError::Stopped(first) => {
                write!(f, "the component stopped after an internal error ({first})")
            }
        }
    }
}

impl std::error::Error for EntryError {}

impl<T: Send> Instance<T> {
    /// No state yet.
    pub const fn new() -> Self {
        Instance {
            slot: Serialized::new(),
        }
    }

    /// Installs the state `make` builds (a component's `init`). `make` runs
    /// under the panic guard and with the state entered, so nothing else
    /// enters meanwhile. `Ok(Err(e))` is `make`'s own failure (nothing is
    /// installed).
    ///
    /// # Errors
    ///
    /// [`EntryError::AlreadyInitialized`], [`EntryError::Reentered`], or
    /// [`EntryError::Panicked`] when `make` panicked (nothing installed).
    pub fn install<E>(
        &self,
        context: &ComponentContext,
        make: impl FnOnce() -> Result<T, E>,
    ) -> Result<Result<(), E>, EntryError> {
        let outcome = self.slot.enter(|slot| {
            if slot.is_some() {
                return Err(EntryError::AlreadyInitialized);
            }
            match guard::catch(make) {
                Ok(Ok(value)) => {
                    *slot = Some(Installed {
                        value,
                        context: *context,
                        poisoned: None,
                    });
                    Ok(Ok(()))
                }
                Ok(Err(e)) => Ok(Err(e)),
                Err(panic) => Err(EntryError::Panicked(panic.message.into_string())),
            }
        });
        outcome.map_err(|_| EntryError::Reentered)?
    }

    /// Runs one entry point's body on the state (see the module docs);
    /// `what` names the entry point in the log line of a panic.
    ///
    /// Inlined whole into the entry point, with the body: the exclusion,
    /// the state checks and the panic guard cost a few loads, stores and
    /// branches, and nothing goes through memory but the body's own
    /// captures.
    ///
    /// # Errors
    ///
    /// Every [`EntryError`] but `AlreadyInitialized`.
    #[inline(always)]
    pub fn call<R>(&self, what: &str, f: impl FnOnce(&mut T) -> R) -> Result<R, EntryError> {
        let Ok(mut entry) = self.slot.entry() else {
            return Err(EntryError::Reentered);
        };
        let installed = match entry.as_mut() {
            Some(installed) if installed.poisoned.is_none() => installed,
            other => return Err(not_running(other.as_deref())),
        };
        let value = &mut installed.value;
        match guard::catch(|| f(value)) {
            Ok(r) => Ok(r),
            Err(panic) => Err(poison(installed, what, panic.kind, panic.message.as_str())),
        }
    }

    /// Runs `f` on the state even after a panic poisoned it (a component's
    /// clean-up after an internal error: failing its peers, closing
    /// sockets); a panic inside `f` is caught and ignored.
    ///
    /// # Errors
    ///
    /// [`EntryError::NotInitialized`] or [`EntryError::Reentered`].
    pub fn recover(&self, f: impl FnOnce(&mut T)) -> Result<(), EntryError> {
        let outcome = self.slot.enter(|slot| match slot.as_mut() {
            None => Err(EntryError::NotInitialized),
            Some(installed) => {
                let value = &mut installed.value;
                let _ = guard::call(|| {
                    f(value);
                    Ok(())
                });
                Ok(())
            }
        });
        outcome.map_err(|_| EntryError::Reentered)?
    }

    /// Takes the state out (a component's `finalize`); `None` when there
    /// is none.
    ///
    /// # Errors
    ///
    /// [`EntryError::Reentered`].
    pub fn take(&self) -> Result<Option<T>, EntryError> {
        self.slot
            .enter(|slot| slot.take().map(|installed| installed.value))
            .map_err(|_| EntryError::Reentered)
    }

    /// Logs `message` at `level` through the installed component's
    /// context; nothing when no state is installed or an entry is running.
    pub fn log(&self, level: i32, message: &str) {
        let _ = self.slot.enter(|slot| {
            if let Some(installed) = slot {
                installed.context.log(level, message);
            }
        });
    }

    /// Whether the state is installed (for tests and diagnostics).
    ///
    /// # Errors
    ///
    /// [`EntryError::Reentered`].
    pub fn is_installed(&self) -> Result<bool, EntryError> {
        self.slot
            .enter(|slot| slot.is_some())
            .map_err(|_| EntryError::Reentered)
    }
}

impl<T: Send> Default for Instance<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Why an entry found the state not running: not installed, or stopped
/// by an earlier panic.
#[cold]
#[inline(never)]
fn not_running<T>(installed: Option<&Installed<T>>) -> EntryError {
    match installed.and_then(|i| i.poisoned.as_ref()) {
        Some(first) => EntryError::Stopped(first.clone()),
        None => EntryError::NotInitialized,
    }
}

#[cold]
#[inline(never)]
fn poison<T>(
    installed: &mut Installed<T>,
    what: &str,
    kind: ErrorKind,
    message: &str,
) -> EntryError {
    let text = match kind {
        ErrorKind::Panicked => format!("{what} panicked: {message}"),
        _ => format!("{what}: {message}"),
    };
    installed.context.log(
        verbosity::ERROR,
        &format!("internal error: {text}; the component stops (later calls fail)"),
    );
    installed.poisoned = Some(text.clone());
    EntryError::Panicked(text)
}

#[cfg(test)]
mod tests;
