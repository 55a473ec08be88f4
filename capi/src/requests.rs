//! Requests by integer handle (`MPI_REQUEST_NULL` is 0, then slab key
//! + 1), with what each must keep alive or finish when it completes.

use crate::buffers::{Incoming, Outgoing};
use crate::errors::{Fail, ERR_REQUEST};
use oxmpi_mpi_core::{RequestId, Runtime, Status};
use slab::Slab;
use std::ffi::c_int;
use std::sync::Mutex;

/// `MPI_REQUEST_NULL`.
pub const REQUEST_NULL: c_int = 0;

/// A request the application holds.
pub enum Pending {
    /// A send; its packed copy lives until it completes.
    Send(RequestId, Outgoing),
    /// A receive; a staged one is unpacked when it completes.
    Recv(RequestId, Incoming),
    /// A non-blocking collective, with the count and displacement arrays
    /// its call borrows.
    Coll(RequestId, Vec<Box<[usize]>>),
    /// An operation already complete (with `MPI_PROC_NULL`).
    Done(Status),
}

static TABLE: Mutex<Slab<Pending>> = Mutex::new(Slab::new());

/// Sends and collectives freed by `MPI_Request_free` before they
/// completed: their packed copies and arrays stay here until finalize has
/// waited for them.
static DETACHED: Mutex<Vec<Pending>> = Mutex::new(Vec::new());

/// Registers `p` and answers its handle.
pub fn insert(p: Pending) -> c_int {
    let key = TABLE.lock().unwrap_or_else(|e| e.into_inner()).insert(p);
    key as c_int + 1
}

fn bad(h: c_int) -> Fail {
    Fail::new(
        ERR_REQUEST,
        format!("request handle {h} is not an active request (already completed or freed?)"),
    )
}

/// Removes the request of handle `h` for `MPI_Request_free`: a send or
/// a completed operation; a receive still pending stays.
///
/// # Errors
///
/// `MPI_ERR_REQUEST` for an unknown handle or a pending receive.
pub fn take_freeable(h: c_int) -> Result<Pending, Fail> {
    let key = usize::try_from(h - 1).map_err(|_| bad(h))?;
    let mut t = TABLE.lock().unwrap_or_else(|e| e.into_inner());
    match t.get(key) {
        None => Err(bad(h)),
        Some(Pending::Recv(..)) => Err(Fail::new(
            ERR_REQUEST,
            "a receive still pending cannot be freed in oxmpi; wait for it, or cancel it with \
             MPI_Cancel and then wait",
        )),
        Some(_) => Ok(t.remove(key)),
    }
}

/// Removes the request of handle `h`.
///
/// # Errors
///
/// `MPI_ERR_REQUEST` for an unknown handle.
pub fn take(h: c_int) -> Result<Pending, Fail> {
    let key = usize::try_from(h - 1).map_err(|_| bad(h))?;
    let mut t = TABLE.lock().unwrap_or_else(|e| e.into_inner());
    t.try_remove(key).ok_or_else(|| bad(h))
}

/// The runtime's id of the request of handle `h` (`None`: complete
/// already).
///
/// # Errors
///
/// `MPI_ERR_REQUEST` for an unknown handle.
pub fn id_of(h: c_int) -> Result<Option<RequestId>, Fail> {
    let key = usize::try_from(h - 1).map_err(|_| bad(h))?;
    let t = TABLE.lock().unwrap_or_else(|e| e.into_inner());
    match t.get(key) {
        Some(Pending::Send(id, _) | Pending::Recv(id, _) | Pending::Coll(id, _)) => Ok(Some(*id)),
        Some(Pending::Done(_)) => Ok(None),
        None => Err(bad(h)),
    }
}

/// Waits for the request `p` and finishes it (a staged receive is
/// unpacked).
///
/// # Errors
///
/// The request's error.
pub fn wait(rt: &Runtime, p: Pending) -> Result<Status, Fail> {
    match p {
        Pending::Done(s) => Ok(s),
        Pending::Send(id, out) => {
            let s = rt.wait(id);
            drop(out);
            Ok(s?)
        }
        Pending::Coll(id, keep) => {
            let s = rt.wait(id);
            drop(keep);
            Ok(s?)
        }
        Pending::Recv(id, inc) => {
            let s = rt.wait(id)?;
            // SAFETY: the receive completed, so the user's buffer is the
            // application's again and the staging bytes are final.
            unsafe { inc.finish(s.count) };
            Ok(s)
        }
    }
}

/// Keeps what a freed send or collective borrows until finalize.
pub fn detach(p: Pending) {
    DETACHED.lock().unwrap_or_else(|e| e.into_inner()).push(p);
}

/// Drops the detached copies (after finalize waited for their sends).
pub fn clear_detached() {
    DETACHED.lock().unwrap_or_else(|e| e.into_inner()).clear();
}
