//! Buffered and ready sends: `MPI_Buffer_attach`, `MPI_Buffer_detach`,
//! `MPI_Bsend`, `MPI_Ibsend`, `MPI_Rsend`, `MPI_Irsend`.
//!
//! A buffered send copies its data and returns; the copy travels as a
//! standard send. The attached buffer is the budget: a buffered send is
//! refused (`MPI_ERR_BUFFER`) when its data plus `MPI_BSEND_OVERHEAD`
//! would pass what is attached minus what buffered sends still in flight
//! hold. `MPI_Buffer_detach` waits for them all. A ready send is a
//! standard send (MPI allows it: the receive is posted, so nothing
//! differs but the promise).

use crate::buffers::Outgoing;
use crate::errors::{run, Fail, ERR_ARG, ERR_BUFFER};
use crate::handles::{checked_out, count, put};
use crate::p2p::{args, Args};
use crate::requests::{self, Pending};
use crate::{runtime, PROC_NULL};
use oxmpi_mpi_core::{RequestId, SendMode, Status, ANY_TAG};
use std::ffi::{c_int, c_void};
use std::sync::Mutex;

/// `MPI_BSEND_OVERHEAD`: the budget each buffered send takes beyond its
/// data.
pub const BSEND_OVERHEAD: usize = 64;

/// The attached buffer and the buffered sends in flight.
struct Attached {
    /// The user's buffer (address, bytes), if one is attached.
    buffer: Option<(usize, usize)>,
    /// Sends in flight: the request, its copy, the budget it takes.
    flying: Vec<(RequestId, Outgoing, usize)>,
}

static ATTACHED: Mutex<Attached> = Mutex::new(Attached {
    buffer: None,
    flying: Vec::new(),
});

/// Drops the sends in flight that have completed.
fn reap(a: &mut Attached) -> Result<(), Fail> {
    let rt = runtime()?;
    let mut first_error = None;
    a.flying.retain(|(id, _, _)| match rt.test(*id) {
        None => true,
        Some(Ok(_)) => false,
        Some(Err(e)) => {
            first_error.get_or_insert(e);
            false
        }
    });
    match first_error {
        Some(e) => Err(Fail::new(
            ERR_BUFFER,
            format!("an earlier buffered send failed: {}", e.message),
        )),
        None => Ok(()),
    }
}

/// A buffered send: copies the data, starts it, and answers its status.
///
/// # Safety
///
/// `buf` holds `count` elements of `datatype`.
pub unsafe fn bsend(
    buf: *const c_void,
    count_: c_int,
    datatype: c_int,
    dest: c_int,
    tag: c_int,
    comm_: c_int,
) -> Result<Status, Fail> {
    let Args {
        rt,
        comm: c,
        count: n,
        ty,
    } = args(comm_, count_, datatype)?;
    let done = Status {
        source: 0,
        tag: ANY_TAG,
        count: 0,
        cancelled: false,
    };
    if dest == PROC_NULL {
        return Ok(done);
    }
    // SAFETY: the caller's promise.
    let data = match unsafe { Outgoing::new(buf, n, &ty) }? {
        Outgoing::Direct(p, len) => {
            // SAFETY: `len` readable bytes (the caller's promise).
            Outgoing::Packed(unsafe { std::slice::from_raw_parts(p, len) }.to_vec())
        }
        packed => packed,
    };
    let (p, len) = data.bytes();
    let budget = len + BSEND_OVERHEAD;
    let mut a = ATTACHED.lock().unwrap_or_else(|e| e.into_inner());
    reap(&mut a)?;
    let Some((_, size)) = a.buffer else {
        return Err(Fail::new(
            ERR_BUFFER,
            "no buffer is attached for buffered sends; call MPI_Buffer_attach first",
        ));
    };
    let used: usize = a.flying.iter().map(|f| f.2).sum();
    if used + budget > size {
        return Err(Fail::new(
            ERR_BUFFER,
            format!(
                "the attached buffer ({size} bytes) has {} bytes free but this buffered send needs {budget} \
                 ({len} of data and MPI_BSEND_OVERHEAD {BSEND_OVERHEAD}); attach a larger buffer",
                size - used
            ),
        ));
    }
    // SAFETY: `p..p + len` is `data`'s vector, which stays in the list
    // until the send completes.
    let id = unsafe { rt.isend(c, dest, tag, p, len, SendMode::Standard) }?;
    a.flying.push((id, data, budget));
    Ok(done)
}

/// `MPI_Buffer_attach`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Buffer_attach(buffer: *mut c_void, size: c_int) -> c_int {
    run("MPI_Buffer_attach", 1, || {
        let size = count("size", size)?;
        let mut a = ATTACHED.lock().unwrap_or_else(|e| e.into_inner());
        if a.buffer.is_some() {
            return Err(Fail::new(
                ERR_BUFFER,
                "a buffer is already attached; detach it first (MPI_Buffer_detach)",
            ));
        }
        a.buffer = Some((buffer as usize, size));
        Ok(())
    })
}

/// `MPI_Buffer_detach`: waits for every buffered send in flight, and
/// gives back the buffer and its size.
///
/// # Safety
///
/// As MPI requires of its arguments (`buffer` receives a `void *`).
#[no_mangle]
pub unsafe extern "C" fn PMPI_Buffer_detach(buffer: *mut c_void, size: *mut c_int) -> c_int {
    run("MPI_Buffer_detach", 1, || {
        let rt = runtime()?;
        let (flying, attached) = {
            let mut a = ATTACHED.lock().unwrap_or_else(|e| e.into_inner());
            let Some(attached) = a.buffer.take() else {
                return Err(Fail::new(ERR_BUFFER, "no buffer is attached"));
            };
            (std::mem::take(&mut a.flying), attached)
        };
        let mut first_error = None;
        for (id, data, _) in flying {
            if let Err(e) = rt.wait(id) {
                first_error.get_or_insert(e);
            }
            drop(data);
        }
        if buffer.is_null() {
            return Err(Fail::new(ERR_ARG, "buffer_addr is a null pointer"));
        }
        // SAFETY: the caller's promise: `buffer` receives a pointer.
        unsafe {
            buffer
                .cast::<*mut c_void>()
                .write(attached.0 as *mut c_void);
            put("size", size, attached.1 as c_int)?;
        }
        match first_error {
            Some(e) => Err(Fail::new(
                ERR_BUFFER,
                format!("a buffered send failed: {}", e.message),
            )),
            None => Ok(()),
        }
    })
}

/// `MPI_Bsend`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Bsend(
    buf: *const c_void,
    count: c_int,
    datatype: c_int,
    dest: c_int,
    tag: c_int,
    comm: c_int,
) -> c_int {
    run("MPI_Bsend", comm, || {
        // SAFETY: the caller's promise.
        unsafe { bsend(buf, count, datatype, dest, tag, comm) }.map(drop)
    })
}

/// `MPI_Ibsend`: the request is complete at once (the data are copied).
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Ibsend(
    buf: *const c_void,
    count: c_int,
    datatype: c_int,
    dest: c_int,
    tag: c_int,
    comm: c_int,
    request: *mut c_int,
) -> c_int {
    run("MPI_Ibsend", comm, || {
        checked_out("request", request)?;
        // SAFETY: the caller's promise.
        let s = unsafe { bsend(buf, count, datatype, dest, tag, comm) }?;
        let h = requests::insert(Pending::Done(s));
        // SAFETY: the caller's promise.
        unsafe { put("request", request, h) }
    })
}

/// `MPI_Rsend`: a standard send.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Rsend(
    buf: *const c_void,
    count: c_int,
    datatype: c_int,
    dest: c_int,
    tag: c_int,
    comm: c_int,
) -> c_int {
    // SAFETY: the caller's promise.
    unsafe { crate::p2p::PMPI_Send(buf, count, datatype, dest, tag, comm) }
}

/// `MPI_Irsend`: a standard send.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Irsend(
    buf: *const c_void,
    count: c_int,
    datatype: c_int,
    dest: c_int,
    tag: c_int,
    comm: c_int,
    request: *mut c_int,
) -> c_int {
    // SAFETY: the caller's promise.
    unsafe { crate::p2p::PMPI_Isend(buf, count, datatype, dest, tag, comm, request) }
}
