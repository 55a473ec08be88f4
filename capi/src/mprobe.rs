//! Matched probes and receives (`MPI_Mprobe`, `MPI_Improbe`, `MPI_Mrecv`,
//! `MPI_Imrecv`): a probe that takes the message out of matching and
//! answers an `MPI_Message` handle, which only a matched receive can
//! receive, once.
//!
//! Message handles are integers: `MPI_MESSAGE_NULL` is 0,
//! `MPI_MESSAGE_NO_PROC` (the message of a probe of `MPI_PROC_NULL`) is 1,
//! and a claimed message is its slot in this library's table plus 2.

use crate::buffers::Incoming;
use crate::errors::{run, Fail, ERR_REQUEST};
use crate::handles::{checked_out, comm, count, put, typed};
use crate::p2p::proc_null_status;
use crate::requests::{self, Pending};
use crate::status::{store, MpiStatus};
use crate::{runtime, PROC_NULL};
use oxmpi_mpi_core::{Message, Status};
use slab::Slab;
use std::ffi::{c_int, c_void};
use std::sync::Mutex;

/// `MPI_MESSAGE_NULL`.
pub const MESSAGE_NULL: c_int = 0;
/// `MPI_MESSAGE_NO_PROC`.
pub const MESSAGE_NO_PROC: c_int = 1;

/// A claimed message and the handle of the communicator it came on (whose
/// error handler a failed receive of it calls).
struct Claimed {
    message: Message,
    comm: c_int,
}

static MESSAGES: Mutex<Slab<Claimed>> = Mutex::new(Slab::new());

/// Keeps a claimed message and answers its handle.
fn insert(message: Message, comm: c_int) -> c_int {
    let mut table = MESSAGES.lock().unwrap_or_else(|e| e.into_inner());
    table.insert(Claimed { message, comm }) as c_int + 2
}

/// The communicator handle of message `h` (for the error handler), or
/// `MPI_COMM_WORLD` for a handle that names no message.
fn comm_of(h: c_int) -> c_int {
    let table = MESSAGES.lock().unwrap_or_else(|e| e.into_inner());
    usize::try_from(h - 2)
        .ok()
        .and_then(|k| table.get(k))
        .map_or(crate::COMM_WORLD, |c| c.comm)
}

/// Takes message `h` out of the table (`None` for `MPI_MESSAGE_NO_PROC`).
///
/// # Errors
///
/// `MPI_ERR_REQUEST` for `MPI_MESSAGE_NULL` or a handle that names no
/// claimed message.
fn take(h: c_int) -> Result<Option<Message>, Fail> {
    if h == MESSAGE_NO_PROC {
        return Ok(None);
    }
    let mut table = MESSAGES.lock().unwrap_or_else(|e| e.into_inner());
    match usize::try_from(h - 2)
        .ok()
        .and_then(|k| table.try_remove(k))
    {
        Some(c) => Ok(Some(c.message)),
        None => Err(Fail::new(
            ERR_REQUEST,
            format!(
                "message handle {h} is not a message from MPI_Mprobe or MPI_Improbe \
                 (MPI_MESSAGE_NULL, or received already)"
            ),
        )),
    }
}

/// `MPI_Improbe`'s search: the message and its status, if one has
/// arrived (always, for `MPI_PROC_NULL`).
fn improbe(source: c_int, tag: c_int, comm_: c_int) -> Result<Option<(c_int, Status)>, Fail> {
    let rt = runtime()?;
    let c = comm(comm_)?;
    if source == PROC_NULL {
        return Ok(Some((MESSAGE_NO_PROC, proc_null_status())));
    }
    Ok(rt
        .improbe(c, source, tag)?
        .map(|(m, s)| (insert(m, comm_), s)))
}

/// Writes a probe's message handle and status.
///
/// # Safety
///
/// `message` is writable; `status` is writable or `MPI_STATUS_IGNORE`.
unsafe fn answer(
    message: *mut c_int,
    status: *mut MpiStatus,
    (h, s): (c_int, Status),
) -> Result<(), Fail> {
    // SAFETY: the caller's promise.
    unsafe {
        store(status, MpiStatus::of(&s));
        put("message", message, h)
    }
}

/// `MPI_Improbe`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Improbe(
    source: c_int,
    tag: c_int,
    comm_: c_int,
    flag: *mut c_int,
    message: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    run("MPI_Improbe", comm_, || {
        let found = improbe(source, tag, comm_)?;
        // SAFETY: the caller's promise.
        unsafe {
            if let Some(f) = found {
                answer(message, status, f)?;
            }
            put("flag", flag, c_int::from(found.is_some()))
        }
    })
}

/// `MPI_Mprobe`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Mprobe(
    source: c_int,
    tag: c_int,
    comm_: c_int,
    message: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    run("MPI_Mprobe", comm_, || {
        let rt = runtime()?;
        let c = comm(comm_)?;
        let found = if source == PROC_NULL {
            (MESSAGE_NO_PROC, proc_null_status())
        } else {
            let (m, s) = rt.mprobe(c, source, tag)?;
            (insert(m, comm_), s)
        };
        // SAFETY: the caller's promise.
        unsafe { answer(message, status, found) }
    })
}

/// Starts receiving message `h` into `count` elements of `datatype` at
/// `buf`.
///
/// # Safety
///
/// `buf` is writable for `count` elements of `datatype` and untouched
/// until the request completes.
unsafe fn start(
    buf: *mut c_void,
    count_: c_int,
    datatype_: c_int,
    h: c_int,
) -> Result<Pending, Fail> {
    // The arguments are checked before the message leaves the table, so a
    // refused call leaves it for a corrected one.
    let rt = runtime()?;
    let n = count("count", count_)?;
    let ty = typed(datatype_)?;
    let Some(m) = take(h)? else {
        return Ok(Pending::Done(proc_null_status()));
    };
    let mut inc = Incoming::new(buf, n, &ty)?;
    let (p, len) = inc.bytes();
    // SAFETY: `p..p + len` is the user's buffer (the caller's promise) or
    // `inc`'s staging vector, which the request keeps.
    let id = unsafe { rt.imrecv(m, p, len) }?;
    Ok(Pending::Recv(id, inc))
}

/// `MPI_Mrecv`: receives the message and sets `*message` to
/// `MPI_MESSAGE_NULL`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Mrecv(
    buf: *mut c_void,
    count: c_int,
    datatype: c_int,
    message: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    // SAFETY: the caller's promise.
    let h = unsafe { message.as_ref() }.copied().unwrap_or(MESSAGE_NULL);
    run("MPI_Mrecv", comm_of(h), || {
        let rt = runtime()?;
        // SAFETY: the caller's promise; the call waits for it.
        let p = unsafe { start(buf, count, datatype, h) }?;
        // SAFETY: the caller's promise.
        unsafe { put("message", message, MESSAGE_NULL) }?;
        let s = requests::wait(rt, p)?;
        // SAFETY: the caller's promise.
        unsafe { store(status, MpiStatus::of(&s)) };
        Ok(())
    })
}

/// `MPI_Imrecv`: starts receiving the message and sets `*message` to
/// `MPI_MESSAGE_NULL`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Imrecv(
    buf: *mut c_void,
    count: c_int,
    datatype: c_int,
    message: *mut c_int,
    request: *mut c_int,
) -> c_int {
    // SAFETY: the caller's promise.
    let h = unsafe { message.as_ref() }.copied().unwrap_or(MESSAGE_NULL);
    run("MPI_Imrecv", comm_of(h), || {
        checked_out("message", message)?;
        checked_out("request", request)?;
        // SAFETY: the caller's promise (the buffer is untouched until the
        // request completes).
        let p = unsafe { start(buf, count, datatype, h) }?;
        let r = requests::insert(p);
        // SAFETY: the caller's promise.
        unsafe {
            put("message", message, MESSAGE_NULL)?;
            put("request", request, r)
        }
    })
}
