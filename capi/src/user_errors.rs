//! What programs add to error handling: error handlers of their own
//! (`MPI_Comm_create_errhandler`, `MPI_Comm_call_errhandler`,
//! `MPI_Errhandler_free`) and error classes, codes and strings
//! (`MPI_Add_error_class`, `MPI_Add_error_code`, `MPI_Add_error_string`).
//!
//! Handlers made here have handles from 3 (1 and 2 are
//! `MPI_ERRORS_ARE_FATAL` and `MPI_ERRORS_RETURN`). Added classes come
//! after the predefined ones, from 32 up to `MPI_ERR_LASTCODE`; an added
//! code is its class plus 1024 × k with k past the slots of the error
//! messages, so it never collides with a code an error made.

use crate::errors::{self, run, Fail, ERR_ARG, ERR_OTHER};
use crate::handles::put;
use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, CStr};
use std::sync::Mutex;

/// `MPI_Comm_errhandler_function`: called with the communicator and the
/// error code (the standard's variadic tail carries nothing here).
pub type HandlerFn = unsafe extern "C" fn(*mut c_int, *mut c_int);

/// The first handle of a program's error handler.
const FIRST_HANDLER: c_int = 3;
/// The first class a program may add.
const FIRST_CLASS: c_int = 32;
/// The first multiple of 1024 of an added code.
const FIRST_CODE_BLOCK: c_int = 1024;

struct Added {
    handlers: Vec<Option<HandlerFn>>,
    /// Classes added, from `FIRST_CLASS`.
    classes: c_int,
    /// Codes added: code → class.
    codes: BTreeMap<c_int, c_int>,
    /// Strings of added classes and codes.
    strings: BTreeMap<c_int, String>,
}

static ADDED: Mutex<Added> = Mutex::new(Added {
    handlers: Vec::new(),
    classes: 0,
    codes: BTreeMap::new(),
    strings: BTreeMap::new(),
});

fn added() -> std::sync::MutexGuard<'static, Added> {
    ADDED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether `class` is one the program added.
pub fn is_added_class(class: c_int) -> bool {
    (FIRST_CLASS..FIRST_CLASS + added().classes).contains(&class)
}

/// The class of a code the program added.
pub fn class_of_added(code: c_int) -> Option<c_int> {
    added().codes.get(&code).copied()
}

/// The string the program gave `code` (a class or a code it added).
pub fn string_of(code: c_int) -> Option<String> {
    added().strings.get(&code).cloned()
}

/// Whether `h` is a handler the program made.
pub fn is_handler(h: c_int) -> bool {
    usize::try_from(h - FIRST_HANDLER)
        .ok()
        .is_some_and(|i| added().handlers.get(i).is_some_and(Option::is_some))
}

/// Calls the program's handler `h` for `code` on communicator `comm`.
pub fn call(h: c_int, comm: c_int, code: c_int) {
    let f = usize::try_from(h - FIRST_HANDLER)
        .ok()
        .and_then(|i| added().handlers.get(i).copied().flatten());
    if let Some(f) = f {
        let (mut c, mut e) = (comm, code);
        // SAFETY: the function the program registered, called as MPI
        // defines it, with valid pointers.
        unsafe { f(&mut c, &mut e) };
    }
}

/// `MPI_Comm_create_errhandler`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_create_errhandler(
    f: Option<HandlerFn>,
    out: *mut c_int,
) -> c_int {
    run("MPI_Comm_create_errhandler", 1, || {
        let Some(f) = f else {
            return Err(Fail::new(
                ERR_ARG,
                "the error handler function is a null pointer",
            ));
        };
        let h = {
            let mut a = added();
            a.handlers.push(Some(f));
            a.handlers.len() as c_int - 1 + FIRST_HANDLER
        };
        // SAFETY: the caller's promise.
        unsafe { put("errhandler", out, h) }
    })
}

/// `MPI_Errhandler_free`: sets the handle to `MPI_ERRHANDLER_NULL`
/// (communicators using it keep it).
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Errhandler_free(h: *mut c_int) -> c_int {
    run("MPI_Errhandler_free", 1, || {
        if h.is_null() {
            return Err(Fail::new(ERR_ARG, "errhandler is a null pointer"));
        }
        // SAFETY: not null; the caller's promise.
        let v = unsafe { *h };
        if v != errors::ERRORS_ARE_FATAL && v != errors::ERRORS_RETURN && !is_handler(v) {
            return Err(Fail::new(
                ERR_ARG,
                format!("error handler {v} is not an error handler"),
            ));
        }
        // SAFETY: as above.
        unsafe { *h = 0 };
        Ok(())
    })
}

/// `MPI_Comm_call_errhandler`: what the communicator's handler does for
/// `code` (fatal: the job ends; return: nothing; the program's: it is
/// called).
#[no_mangle]
pub extern "C" fn PMPI_Comm_call_errhandler(comm: c_int, code: c_int) -> c_int {
    run("MPI_Comm_call_errhandler", comm, || {
        crate::handles::comm(comm)?;
        match errors::handler_of(comm) {
            errors::ERRORS_RETURN => Ok(()),
            errors::ERRORS_ARE_FATAL => Err(Fail::new(
                errors::class_of(code).unwrap_or(ERR_OTHER),
                errors::string_of(code).unwrap_or_else(|| format!("error code {code}")),
            )),
            h => {
                call(h, comm, code);
                Ok(())
            }
        }
    })
}

/// `MPI_Add_error_class`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Add_error_class(class: *mut c_int) -> c_int {
    run("MPI_Add_error_class", 1, || {
        let c = {
            let mut a = added();
            if FIRST_CLASS + a.classes > errors::ERR_LASTCODE {
                return Err(Fail::new(
                    ERR_OTHER,
                    "no error class is left to add (classes end at MPI_ERR_LASTCODE)",
                ));
            }
            a.classes += 1;
            FIRST_CLASS + a.classes - 1
        };
        // SAFETY: the caller's promise.
        unsafe { put("errorclass", class, c) }
    })
}

/// `MPI_Add_error_code`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Add_error_code(class: c_int, code: *mut c_int) -> c_int {
    run("MPI_Add_error_code", 1, || {
        if !is_added_class(class) && errors::class_text(class).is_none() {
            return Err(Fail::new(ERR_ARG, format!("{class} is not an error class")));
        }
        let c = {
            let mut a = added();
            let k = FIRST_CODE_BLOCK + a.codes.len() as c_int;
            let c = class + 1024 * k;
            a.codes.insert(c, class);
            c
        };
        // SAFETY: the caller's promise.
        unsafe { put("errorcode", code, c) }
    })
}

/// `MPI_Add_error_string`: for a class or code the program added.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Add_error_string(code: c_int, text: *const c_char) -> c_int {
    run("MPI_Add_error_string", 1, || {
        if !is_added_class(code) && class_of_added(code).is_none() {
            return Err(Fail::new(
                ERR_ARG,
                format!("{code} is not an error class or code the program added"),
            ));
        }
        if text.is_null() {
            return Err(Fail::new(ERR_ARG, "string is a null pointer"));
        }
        // SAFETY: NUL-terminated (the caller's promise).
        let s = unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned();
        added().strings.insert(code, s);
        Ok(())
    })
}
