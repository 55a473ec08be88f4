//! Error classes and codes, their strings, error handlers, and the entry
//! wrapper every function runs its body in.
//!
//! An error code is its class plus `1024 × k`, where `k` names the
//! message of that error in a ring of the last 1023 messages, so
//! `MPI_Error_string` gives the sentence that says what went wrong, not
//! only the class.

use oxmpi_datatype::{DatatypeError, ErrorKind};
use oxmpi_mpi_core::{Error, ErrorClass, Status};
use std::collections::HashMap;
use std::ffi::c_int;
use std::panic::AssertUnwindSafe;
use std::sync::Mutex;

/// `MPI_SUCCESS`.
pub const SUCCESS: c_int = 0;
/// `MPI_ERR_BUFFER`.
pub const ERR_BUFFER: c_int = 1;
/// `MPI_ERR_COUNT`.
pub const ERR_COUNT: c_int = 2;
/// `MPI_ERR_TYPE`.
pub const ERR_TYPE: c_int = 3;
/// `MPI_ERR_TAG`.
pub const ERR_TAG: c_int = 4;
/// `MPI_ERR_COMM`.
pub const ERR_COMM: c_int = 5;
/// `MPI_ERR_RANK`.
pub const ERR_RANK: c_int = 6;
/// `MPI_ERR_REQUEST`.
pub const ERR_REQUEST: c_int = 7;
/// `MPI_ERR_ROOT`.
pub const ERR_ROOT: c_int = 8;
/// `MPI_ERR_GROUP`.
pub const ERR_GROUP: c_int = 9;
/// `MPI_ERR_OP`.
pub const ERR_OP: c_int = 10;
/// `MPI_ERR_TOPOLOGY`.
pub const ERR_TOPOLOGY: c_int = 11;
/// `MPI_ERR_ARG`.
pub const ERR_ARG: c_int = 13;
/// `MPI_ERR_UNKNOWN`.
pub const ERR_UNKNOWN: c_int = 14;
/// `MPI_ERR_TRUNCATE`.
pub const ERR_TRUNCATE: c_int = 15;
/// `MPI_ERR_OTHER`.
pub const ERR_OTHER: c_int = 16;
/// `MPI_ERR_INTERN`.
pub const ERR_INTERN: c_int = 17;
/// `MPI_ERR_IN_STATUS`.
pub const ERR_IN_STATUS: c_int = 18;
/// `MPI_ERR_PROC_FAILED`.
pub const ERR_PROC_FAILED: c_int = 20;
/// `MPI_ERR_UNSUPPORTED_OPERATION`.
pub const ERR_UNSUPPORTED: c_int = 21;
/// `MPI_ERR_CONVERSION`.
pub const ERR_CONVERSION: c_int = 22;
/// `MPI_ERR_LASTCODE`: classes are below it.
pub const ERR_LASTCODE: c_int = 1023;

/// `MPI_ERRORS_ARE_FATAL`.
pub const ERRORS_ARE_FATAL: c_int = 1;
/// `MPI_ERRORS_RETURN`.
pub const ERRORS_RETURN: c_int = 2;

/// The class names and their general meaning, by class.
const CLASSES: &[(c_int, &str, &str)] = &[
    (SUCCESS, "MPI_SUCCESS", "no error"),
    (ERR_BUFFER, "MPI_ERR_BUFFER", "invalid buffer pointer"),
    (ERR_COUNT, "MPI_ERR_COUNT", "invalid count argument"),
    (ERR_TYPE, "MPI_ERR_TYPE", "invalid datatype"),
    (ERR_TAG, "MPI_ERR_TAG", "invalid tag"),
    (ERR_COMM, "MPI_ERR_COMM", "invalid communicator"),
    (ERR_RANK, "MPI_ERR_RANK", "invalid rank"),
    (ERR_REQUEST, "MPI_ERR_REQUEST", "invalid request"),
    (ERR_ROOT, "MPI_ERR_ROOT", "invalid root"),
    (ERR_GROUP, "MPI_ERR_GROUP", "invalid group"),
    (ERR_OP, "MPI_ERR_OP", "invalid reduction operation"),
    (11, "MPI_ERR_TOPOLOGY", "invalid topology"),
    (12, "MPI_ERR_DIMS", "invalid dimension argument"),
    (ERR_ARG, "MPI_ERR_ARG", "invalid argument"),
    (ERR_UNKNOWN, "MPI_ERR_UNKNOWN", "unknown error"),
    (ERR_TRUNCATE, "MPI_ERR_TRUNCATE", "message truncated"),
    (ERR_OTHER, "MPI_ERR_OTHER", "other error"),
    (ERR_INTERN, "MPI_ERR_INTERN", "internal error"),
    (
        ERR_IN_STATUS,
        "MPI_ERR_IN_STATUS",
        "error code is in status",
    ),
    (19, "MPI_ERR_PENDING", "pending request"),
    (ERR_PROC_FAILED, "MPI_ERR_PROC_FAILED", "a process failed"),
    (
        ERR_UNSUPPORTED,
        "MPI_ERR_UNSUPPORTED_OPERATION",
        "operation not supported",
    ),
    (
        ERR_CONVERSION,
        "MPI_ERR_CONVERSION",
        "data conversion failed",
    ),
];

/// The name and meaning of `class`, if it is one.
pub fn class_text(class: c_int) -> Option<(&'static str, &'static str)> {
    CLASSES
        .iter()
        .find(|c| c.0 == class)
        .map(|&(_, name, meaning)| (name, meaning))
}

/// A failed call: its class and what went wrong. Boxed, so that a
/// call's `Result<(), Fail>` is one word and its success costs nothing to
/// pass back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fail(Box<Failure>);

/// What a [`Fail`] holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The error class.
    pub class: c_int,
    /// The sentence(s) saying what went wrong and what to do.
    pub message: String,
    /// The status of the request that failed, when it has one (a receive
    /// that was truncated, or whose sender failed).
    pub status: Option<Status>,
}

impl Fail {
    /// A failure of `class` with `message`.
    #[cold]
    pub fn new(class: c_int, message: impl Into<String>) -> Fail {
        Fail(Box::new(Failure {
            class,
            message: message.into(),
            status: None,
        }))
    }
}

impl std::ops::Deref for Fail {
    type Target = Failure;

    fn deref(&self) -> &Failure {
        &self.0
    }
}

impl From<Error> for Fail {
    fn from(e: Error) -> Fail {
        let class = match e.class {
            ErrorClass::Truncate => ERR_TRUNCATE,
            ErrorClass::ProcFailed => ERR_PROC_FAILED,
            ErrorClass::Unreachable => ERR_OTHER,
            ErrorClass::Rank => ERR_RANK,
            ErrorClass::Tag => ERR_TAG,
            ErrorClass::Root => ERR_ROOT,
            ErrorClass::Comm => ERR_COMM,
            ErrorClass::Group => ERR_GROUP,
            ErrorClass::Arg => ERR_ARG,
            ErrorClass::Buffer => ERR_BUFFER,
            ErrorClass::Request => ERR_REQUEST,
            _ => ERR_OTHER,
        };
        let mut fail = Fail::new(class, e.message);
        fail.0.status = e.status;
        fail
    }
}

impl From<DatatypeError> for Fail {
    fn from(e: DatatypeError) -> Fail {
        let class = match e.kind() {
            ErrorKind::Arg => ERR_ARG,
            ErrorKind::Count => ERR_COUNT,
            ErrorKind::Type => ERR_TYPE,
            ErrorKind::Truncate => ERR_TRUNCATE,
            ErrorKind::Conversion => ERR_CONVERSION,
        };
        Fail::new(class, e.to_string())
    }
}

/// The messages of recent errors, by slot (slot 0 is never used: a code
/// equal to its class has no message of its own).
struct Messages {
    slots: Vec<Option<(c_int, String)>>,
    next: usize,
}

static MESSAGES: Mutex<Messages> = Mutex::new(Messages {
    slots: Vec::new(),
    next: 1,
});

const SLOTS: usize = 1023;

/// Keeps `message` for an error of `class` and answers its code.
pub fn record(class: c_int, message: String) -> c_int {
    let mut m = MESSAGES.lock().unwrap_or_else(|e| e.into_inner());
    if m.slots.is_empty() {
        m.slots.resize(SLOTS + 1, None);
    }
    let slot = m.next;
    m.next = if slot == SLOTS { 1 } else { slot + 1 };
    m.slots[slot] = Some((class, message));
    class + 1024 * slot as c_int
}

/// The class of an error code, or `None` for a negative code or one past
/// what [`record`] makes.
pub fn class_of(code: c_int) -> Option<c_int> {
    if let Some(c) = crate::user_errors::class_of_added(code) {
        return Some(c);
    }
    let class = code % 1024;
    let known = class_text(class).is_some() || crate::user_errors::is_added_class(class);
    (code >= 0 && (code / 1024) as usize <= SLOTS && known).then_some(class)
}

/// The text of an error code: its message, if it still has one, after
/// the class's name.
pub fn string_of(code: c_int) -> Option<String> {
    if let Some(s) = crate::user_errors::string_of(code) {
        return Some(s);
    }
    let class = class_of(code)?;
    let (name, meaning) =
        class_text(class).unwrap_or(("an error class the program added", "no string was given"));
    let slot = (code / 1024) as usize;
    let m = MESSAGES.lock().unwrap_or_else(|e| e.into_inner());
    match m.slots.get(slot).and_then(Option::as_ref) {
        Some((c, message)) if slot > 0 && *c == class => Some(format!("{name}: {message}")),
        _ => Some(format!("{name}: {meaning}")),
    }
}

/// The error handlers set on communicators (absent: fatal).
static HANDLERS: Mutex<Option<HashMap<c_int, c_int>>> = Mutex::new(None);

/// The error handler of communicator handle `comm`: the one set on it or
/// inherited when it was made; for `MPI_COMM_NULL` or a handle that is no
/// communicator, `MPI_COMM_WORLD`'s (as MPI says for errors not tied to a
/// valid communicator). `MPI_ERRORS_ARE_FATAL` unless set.
pub fn handler_of(comm: c_int) -> c_int {
    let h = HANDLERS.lock().unwrap_or_else(|e| e.into_inner());
    let set = |c| h.as_ref().and_then(|m| m.get(&c).copied());
    let predefined = comm == crate::COMM_WORLD || comm == crate::COMM_SELF;
    set(comm)
        .or_else(|| {
            if predefined {
                None
            } else {
                set(crate::COMM_WORLD)
            }
        })
        .unwrap_or(ERRORS_ARE_FATAL)
}

/// Sets the error handler of communicator handle `comm`.
pub fn set_handler(comm: c_int, handler: c_int) {
    let mut h = HANDLERS.lock().unwrap_or_else(|e| e.into_inner());
    h.get_or_insert_with(HashMap::new).insert(comm, handler);
}

/// Forgets the handler of a freed communicator.
pub fn forget_handler(comm: c_int) {
    let mut h = HANDLERS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(m) = h.as_mut() {
        m.remove(&comm);
    }
}

/// Reports a failure of `function` on communicator handle `comm` the way
/// its error handler says: fatal (the default) prints the message and
/// ends the job; `MPI_ERRORS_RETURN` answers the error's code.
#[cold]
#[inline(never)]
pub fn raise(function: &str, comm: c_int, fail: Fail) -> c_int {
    let message = format!("{function}: {}", fail.message);
    let code = record(fail.class, message.clone());
    match handler_of(comm) {
        ERRORS_RETURN => return code,
        ERRORS_ARE_FATAL => {}
        h => {
            crate::user_errors::call(h, comm, code);
            return code;
        }
    }
    let (name, _) = class_text(fail.class).unwrap_or(("MPI_ERR_UNKNOWN", ""));
    let text = format!("{message} ({name}; the communicator's error handler is MPI_ERRORS_ARE_FATAL, so the job ends)");
    match oxmpi_mpi_core::runtime() {
        Some(rt) => rt.abort(fail.class, &text),
        None => {
            eprintln!("oxmpi: {text}");
            std::process::exit(fail.class.max(1))
        }
    }
}

/// Runs the body of `function` (on communicator handle `comm`, for its
/// error handler): its success is `MPI_SUCCESS`, its failure goes to
/// [`raise`], and a panic is an `MPI_ERR_INTERN` failure (nothing unwinds
/// into C).
#[inline]
pub fn run(function: &str, comm: c_int, body: impl FnOnce() -> Result<(), Fail>) -> c_int {
    match std::panic::catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => SUCCESS,
        Ok(Err(fail)) => raise(function, comm, fail),
        Err(panic) => raise_panic(function, comm, panic.as_ref()),
    }
}

/// Raises the `MPI_ERR_INTERN` failure of a panic (its `payload`) in the
/// body of `function` on communicator handle `comm` (see [`run`]).
#[cold]
pub fn raise_panic(function: &str, comm: c_int, payload: &(dyn std::any::Any + Send)) -> c_int {
    let what = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("a panic");
    raise(
        function,
        comm,
        Fail::new(ERR_INTERN, format!("internal error: {what}")),
    )
}
