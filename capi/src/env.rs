//! The environment: init and finalize, thread levels, abort, clocks,
//! names and versions, error strings and handlers.

use crate::errors::{
    self, class_of, run, set_handler, string_of, Fail, ERRORS_ARE_FATAL, ERRORS_RETURN, ERR_ARG,
    ERR_OTHER,
};
use crate::handles::{comm, put};
use crate::requests;
use oxmpi_mpi_core::ThreadLevel;
use std::ffi::{c_char, c_int};
use std::sync::atomic::{AtomicBool, Ordering};

static INITIALIZED: AtomicBool = AtomicBool::new(false);
static FINALIZED: AtomicBool = AtomicBool::new(false);

/// The library's version string (`MPI_Get_library_version`).
pub const LIBRARY_VERSION: &str = concat!("oxmpi ", env!("CARGO_PKG_VERSION"), " (MPI 3.1)");

fn level(n: c_int) -> ThreadLevel {
    match n {
        i32::MIN..=0 => ThreadLevel::Single,
        1 => ThreadLevel::Funneled,
        2 => ThreadLevel::Serialized,
        _ => ThreadLevel::Multiple,
    }
}

fn level_code(l: ThreadLevel) -> c_int {
    match l {
        ThreadLevel::Single => 0,
        ThreadLevel::Funneled => 1,
        ThreadLevel::Serialized => 2,
        ThreadLevel::Multiple => 3,
    }
}

fn init(required: c_int) -> Result<c_int, Fail> {
    let rt = oxmpi_mpi_core::init(level(required)).map_err(|e| Fail::new(ERR_OTHER, e.message))?;
    INITIALIZED.store(true, Ordering::Release);
    Ok(level_code(rt.thread_level()))
}

/// `MPI_Init`: the command line is the launcher's business; `argc` and
/// `argv` are left as they are.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Init(_argc: *mut c_int, _argv: *mut *mut *mut c_char) -> c_int {
    run("MPI_Init", crate::COMM_WORLD, || init(0).map(drop))
}

/// `MPI_Init_thread`: every level is granted as asked.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Init_thread(
    _argc: *mut c_int,
    _argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    run("MPI_Init_thread", crate::COMM_WORLD, || {
        let p = init(required)?;
        // SAFETY: the caller's promise.
        unsafe { put("provided", provided, p) }
    })
}

/// `MPI_Initialized`: true once `MPI_Init` succeeded, also after
/// finalize.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Initialized(flag: *mut c_int) -> c_int {
    run("MPI_Initialized", crate::COMM_WORLD, || {
        // SAFETY: the caller's promise.
        unsafe {
            put(
                "flag",
                flag,
                c_int::from(INITIALIZED.load(Ordering::Acquire)),
            )
        }
    })
}

/// `MPI_Finalized`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Finalized(flag: *mut c_int) -> c_int {
    run("MPI_Finalized", crate::COMM_WORLD, || {
        // SAFETY: the caller's promise.
        unsafe { put("flag", flag, c_int::from(FINALIZED.load(Ordering::Acquire))) }
    })
}

/// `MPI_Finalize`.
#[no_mangle]
pub extern "C" fn PMPI_Finalize() -> c_int {
    run("MPI_Finalize", crate::COMM_WORLD, || {
        crate::runtime()?.finalize()?;
        FINALIZED.store(true, Ordering::Release);
        requests::clear_detached();
        Ok(())
    })
}

/// `MPI_Query_thread`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Query_thread(provided: *mut c_int) -> c_int {
    run("MPI_Query_thread", crate::COMM_WORLD, || {
        let l = level_code(crate::runtime()?.thread_level());
        // SAFETY: the caller's promise.
        unsafe { put("provided", provided, l) }
    })
}

/// `MPI_Is_thread_main`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Is_thread_main(flag: *mut c_int) -> c_int {
    run("MPI_Is_thread_main", crate::COMM_WORLD, || {
        let main = crate::runtime()?.is_main_thread();
        // SAFETY: the caller's promise.
        unsafe { put("flag", flag, c_int::from(main)) }
    })
}

/// `MPI_Abort`: ends every rank of the job (the launcher reports the
/// code).
#[no_mangle]
pub extern "C" fn PMPI_Abort(comm_: c_int, errorcode: c_int) -> c_int {
    let message = format!("MPI_Abort on communicator {comm_}");
    match oxmpi_mpi_core::runtime() {
        Some(rt) => rt.abort(errorcode, &message),
        None => {
            eprintln!(
                "oxmpi: {message} with code {errorcode} before MPI_Init or after MPI_Finalize"
            );
            std::process::exit(errorcode)
        }
    }
}

/// `MPI_Wtime`.
#[no_mangle]
pub extern "C" fn PMPI_Wtime() -> f64 {
    oxmpi_mpi_core::wtime()
}

/// `MPI_Wtick`.
#[no_mangle]
pub extern "C" fn PMPI_Wtick() -> f64 {
    oxmpi_mpi_core::wtick()
}

/// Copies `text` into the C buffer `out` of `capacity` bytes (cut to fit,
/// NUL-terminated) and its length into `len`.
///
/// # Safety
///
/// `out` holds `capacity` bytes; `len` is valid for a write.
pub(crate) unsafe fn copy_out(
    text: &str,
    out: *mut c_char,
    capacity: usize,
    len: *mut c_int,
) -> Result<(), Fail> {
    if out.is_null() {
        return Err(Fail::new(ERR_ARG, "the output string is a null pointer"));
    }
    let n = text.len().min(capacity - 1);
    // SAFETY: `out` holds `capacity > n` bytes (the caller's promise).
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr().cast::<c_char>(), out, n);
        *out.add(n) = 0;
        put("resultlen", len, n as c_int)
    }
}

/// `MPI_Get_processor_name`: the host name.
///
/// # Safety
///
/// As MPI requires of its arguments (`name` holds
/// `MPI_MAX_PROCESSOR_NAME` bytes).
#[no_mangle]
pub unsafe extern "C" fn PMPI_Get_processor_name(
    name: *mut c_char,
    resultlen: *mut c_int,
) -> c_int {
    run("MPI_Get_processor_name", crate::COMM_WORLD, || {
        let host = gethostname::gethostname().to_string_lossy().into_owned();
        // SAFETY: the caller's promise.
        unsafe { copy_out(&host, name, crate::MAX_PROCESSOR_NAME, resultlen) }
    })
}

/// `MPI_Get_version`: 3.1.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Get_version(version: *mut c_int, subversion: *mut c_int) -> c_int {
    run("MPI_Get_version", crate::COMM_WORLD, || {
        // SAFETY: the caller's promise.
        unsafe {
            put("version", version, 3)?;
            put("subversion", subversion, 1)
        }
    })
}

/// `MPI_Get_library_version`: names oxmpi and its version.
///
/// # Safety
///
/// As MPI requires of its arguments (`version` holds
/// `MPI_MAX_LIBRARY_VERSION_STRING` bytes).
#[no_mangle]
pub unsafe extern "C" fn PMPI_Get_library_version(
    version: *mut c_char,
    resultlen: *mut c_int,
) -> c_int {
    run("MPI_Get_library_version", crate::COMM_WORLD, || {
        // SAFETY: the caller's promise.
        unsafe {
            copy_out(
                LIBRARY_VERSION,
                version,
                crate::MAX_LIBRARY_VERSION_STRING,
                resultlen,
            )
        }
    })
}

/// `MPI_Error_string`: the class's name and, for a code an error made,
/// the sentence that says what went wrong.
///
/// # Safety
///
/// As MPI requires of its arguments (`string` holds
/// `MPI_MAX_ERROR_STRING` bytes).
#[no_mangle]
pub unsafe extern "C" fn PMPI_Error_string(
    code: c_int,
    string: *mut c_char,
    resultlen: *mut c_int,
) -> c_int {
    run("MPI_Error_string", crate::COMM_WORLD, || {
        let text = string_of(code)
            .ok_or_else(|| Fail::new(ERR_ARG, format!("{code} is not an error code")))?;
        // SAFETY: the caller's promise.
        unsafe { copy_out(&text, string, crate::MAX_ERROR_STRING, resultlen) }
    })
}

/// `MPI_Error_class`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Error_class(code: c_int, class: *mut c_int) -> c_int {
    run("MPI_Error_class", crate::COMM_WORLD, || {
        let c = class_of(code)
            .ok_or_else(|| Fail::new(ERR_ARG, format!("{code} is not an error code")))?;
        // SAFETY: the caller's promise.
        unsafe { put("errorclass", class, c) }
    })
}

/// `MPI_Comm_set_errhandler`: `MPI_ERRORS_ARE_FATAL`, `MPI_ERRORS_RETURN`
/// or one `MPI_Comm_create_errhandler` made.
#[no_mangle]
pub extern "C" fn PMPI_Comm_set_errhandler(comm_: c_int, handler: c_int) -> c_int {
    run("MPI_Comm_set_errhandler", comm_, || {
        comm(comm_)?;
        if handler != ERRORS_ARE_FATAL
            && handler != ERRORS_RETURN
            && !crate::user_errors::is_handler(handler)
        {
            return Err(Fail::new(
                ERR_ARG,
                format!(
                    "error handler {handler} is none of MPI_ERRORS_ARE_FATAL, MPI_ERRORS_RETURN and \
                     the handlers MPI_Comm_create_errhandler made"
                ),
            ));
        }
        set_handler(comm_, handler);
        Ok(())
    })
}

/// `MPI_Comm_get_errhandler`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_get_errhandler(comm_: c_int, handler: *mut c_int) -> c_int {
    run("MPI_Comm_get_errhandler", comm_, || {
        comm(comm_)?;
        // SAFETY: the caller's promise.
        unsafe { put("errhandler", handler, errors::handler_of(comm_)) }
    })
}
