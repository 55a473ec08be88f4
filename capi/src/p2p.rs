//! Point-to-point: sends in standard and synchronous mode, receives,
//! requests, probes and counts.

use crate::buffers::{Incoming, Outgoing};
use crate::errors::{run, Fail, ERR_ARG, ERR_IN_STATUS};
use crate::handles::{self, any_type, comm, count, put, typed};
use crate::requests::{self, Pending, REQUEST_NULL};
use crate::status::{store, MpiStatus};
use crate::{runtime, PROC_NULL, UNDEFINED};
use oxmpi_mpi_core::{SendMode, Status, ANY_TAG};
use std::ffi::{c_int, c_void};

/// The status of an operation with `MPI_PROC_NULL`.
fn proc_null_status() -> Status {
    Status {
        source: PROC_NULL,
        tag: ANY_TAG,
        count: 0,
        cancelled: false,
    }
}

/// Starts a send and answers its pending request.
///
/// # Safety
///
/// `buf` holds `count` elements of `datatype` until the request
/// completes.
unsafe fn start_send(
    buf: *const c_void,
    count_: c_int,
    datatype_: c_int,
    dest: c_int,
    tag: c_int,
    comm_: c_int,
    mode: SendMode,
) -> Result<Pending, Fail> {
    let rt = runtime()?;
    let c = comm(comm_)?;
    let n = count("count", count_)?;
    let ty = typed(datatype_)?;
    if dest == PROC_NULL {
        return Ok(Pending::Done(proc_null_status()));
    }
    // SAFETY: the caller's promise.
    let out = unsafe { Outgoing::new(buf, n, &ty) }?;
    let (p, len) = out.bytes();
    // SAFETY: `p..p + len` is the user's buffer (the caller's promise) or
    // `out`'s copy, which the request keeps.
    let id = unsafe { rt.isend(c, dest, tag, p, len, mode) }?;
    Ok(Pending::Send(id, out))
}

/// Starts a receive and answers its pending request.
///
/// # Safety
///
/// `buf` is writable for `count` elements of `datatype` and untouched
/// until the request completes.
unsafe fn start_recv(
    buf: *mut c_void,
    count_: c_int,
    datatype_: c_int,
    source: c_int,
    tag: c_int,
    comm_: c_int,
) -> Result<Pending, Fail> {
    let rt = runtime()?;
    let c = comm(comm_)?;
    let n = count("count", count_)?;
    let ty = typed(datatype_)?;
    if source == PROC_NULL {
        return Ok(Pending::Done(proc_null_status()));
    }
    let mut inc = Incoming::new(buf, n, &ty)?;
    let (p, len) = inc.bytes();
    // SAFETY: `p..p + len` is the user's buffer (the caller's promise) or
    // `inc`'s staging vector, which the request keeps (moving the vector
    // does not move its heap bytes).
    let id = unsafe { rt.irecv(c, source, tag, p, len) }?;
    Ok(Pending::Recv(id, inc))
}

/// A blocking send: a contiguous type goes straight from the user's
/// buffer, with nothing built on the way; another is packed first.
///
/// # Safety
///
/// `buf` holds `count` elements of `datatype`.
#[inline(always)]
unsafe fn blocking_send(
    buf: *const c_void,
    count_: c_int,
    datatype_: c_int,
    dest: c_int,
    tag: c_int,
    comm_: c_int,
    mode: SendMode,
) -> Result<(), Fail> {
    let rt = runtime()?;
    let c = comm(comm_)?;
    let n = count("count", count_)?;
    let ty = typed(datatype_)?;
    if dest == PROC_NULL {
        return Ok(());
    }
    match ty.contiguous_bytes(n)? {
        Some(len) => {
            // SAFETY: the user's buffer holds `len` bytes (the caller's
            // promise) and stays untouched until the wait returns.
            let id = unsafe { rt.isend(c, dest, tag, buf.cast(), len, mode) }?;
            rt.wait(id)?;
            Ok(())
        }
        // SAFETY: the caller's promise.
        None => unsafe { packed_send(buf, count_, datatype_, dest, tag, comm_, mode) },
    }
}

/// [`blocking_send`] of a type that is packed first.
///
/// # Safety
///
/// As [`blocking_send`].
#[inline(never)]
unsafe fn packed_send(
    buf: *const c_void,
    count_: c_int,
    datatype_: c_int,
    dest: c_int,
    tag: c_int,
    comm_: c_int,
    mode: SendMode,
) -> Result<(), Fail> {
    // SAFETY: the caller's promise; the call waits for the send.
    let p = unsafe { start_send(buf, count_, datatype_, dest, tag, comm_, mode) }?;
    requests::wait(runtime()?, p).map(drop)
}

macro_rules! blocking_send {
    ($name:ident, $text:literal, $mode:expr) => {
        /// The C function of the same name without its `P`.
        ///
        /// # Safety
        ///
        /// As MPI requires of its arguments.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            buf: *const c_void,
            count: c_int,
            datatype: c_int,
            dest: c_int,
            tag: c_int,
            comm: c_int,
        ) -> c_int {
            // SAFETY: the caller's promise.
            run($text, comm, || unsafe {
                blocking_send(buf, count, datatype, dest, tag, comm, $mode)
            })
        }
    };
}

blocking_send!(PMPI_Send, "MPI_Send", SendMode::Standard);
blocking_send!(PMPI_Ssend, "MPI_Ssend", SendMode::Synchronous);

macro_rules! immediate_send {
    ($name:ident, $text:literal, $mode:expr) => {
        /// The C function of the same name without its `P`.
        ///
        /// # Safety
        ///
        /// As MPI requires of its arguments.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            buf: *const c_void,
            count: c_int,
            datatype: c_int,
            dest: c_int,
            tag: c_int,
            comm: c_int,
            request: *mut c_int,
        ) -> c_int {
            run($text, comm, || {
                // SAFETY: the caller's promise (the buffer lives until the
                // request completes).
                let p = unsafe { start_send(buf, count, datatype, dest, tag, comm, $mode) }?;
                let h = requests::insert(p);
                // SAFETY: the caller's promise.
                unsafe { put("request", request, h) }
            })
        }
    };
}

immediate_send!(PMPI_Isend, "MPI_Isend", SendMode::Standard);
immediate_send!(PMPI_Issend, "MPI_Issend", SendMode::Synchronous);

/// `MPI_Recv`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Recv(
    buf: *mut c_void,
    count: c_int,
    datatype: c_int,
    source: c_int,
    tag: c_int,
    comm: c_int,
    status: *mut MpiStatus,
) -> c_int {
    run("MPI_Recv", comm, || {
        let rt = runtime()?;
        let c = handles::comm(comm)?;
        let n = handles::count("count", count)?;
        let ty = typed(datatype)?;
        let s = match ty.contiguous_bytes(n)? {
            _ if source == PROC_NULL => proc_null_status(),
            Some(len) => {
                // SAFETY: the user's buffer holds `len` bytes (the
                // caller's promise), untouched until the wait returns.
                let id = unsafe { rt.irecv(c, source, tag, buf.cast(), len) }?;
                rt.wait(id)?
            }
            None => {
                // SAFETY: the caller's promise; the call waits for it.
                let p = unsafe { start_recv(buf, count, datatype, source, tag, comm) }?;
                requests::wait(rt, p)?
            }
        };
        // SAFETY: the caller's promise.
        unsafe { store(status, MpiStatus::of(&s)) };
        Ok(())
    })
}

/// `MPI_Irecv`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Irecv(
    buf: *mut c_void,
    count: c_int,
    datatype: c_int,
    source: c_int,
    tag: c_int,
    comm: c_int,
    request: *mut c_int,
) -> c_int {
    run("MPI_Irecv", comm, || {
        // SAFETY: the caller's promise (the buffer is untouched until the
        // request completes).
        let p = unsafe { start_recv(buf, count, datatype, source, tag, comm) }?;
        let h = requests::insert(p);
        // SAFETY: the caller's promise.
        unsafe { put("request", request, h) }
    })
}

/// `MPI_Sendrecv`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Sendrecv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: c_int,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: c_int,
    source: c_int,
    recvtag: c_int,
    comm: c_int,
    status: *mut MpiStatus,
) -> c_int {
    run("MPI_Sendrecv", comm, || {
        let rt = runtime()?;
        // SAFETY: the caller's promise; both complete before the return.
        let r = unsafe { start_recv(recvbuf, recvcount, recvtype, source, recvtag, comm) }?;
        // SAFETY: as above.
        let s = unsafe {
            start_send(
                sendbuf,
                sendcount,
                sendtype,
                dest,
                sendtag,
                comm,
                SendMode::Standard,
            )
        };
        let sent = s.and_then(|s| requests::wait(rt, s));
        let got = requests::wait(rt, r)?;
        sent?;
        // SAFETY: the caller's promise.
        unsafe { store(status, MpiStatus::of(&got)) };
        Ok(())
    })
}

/// `MPI_Wait`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Wait(request: *mut c_int, status: *mut MpiStatus) -> c_int {
    run("MPI_Wait", 1, || {
        if request.is_null() {
            return Err(Fail::new(ERR_ARG, "request is a null pointer"));
        }
        // SAFETY: not null; the caller's promise.
        let h = unsafe { *request };
        if h == REQUEST_NULL {
            // SAFETY: the caller's promise.
            unsafe { store(status, empty_status()) };
            return Ok(());
        }
        let p = requests::take(h)?;
        // SAFETY: as above.
        unsafe { *request = REQUEST_NULL };
        let s = requests::wait(runtime()?, p)?;
        // SAFETY: the caller's promise.
        unsafe { store(status, MpiStatus::of(&s)) };
        Ok(())
    })
}

/// The status of a wait on `MPI_REQUEST_NULL` (the empty status).
fn empty_status() -> MpiStatus {
    MpiStatus {
        source: crate::ANY_SOURCE,
        tag: ANY_TAG,
        ..MpiStatus::default()
    }
}

/// `MPI_Waitall`: waits for each request in turn (the progress engine
/// moves them all meanwhile). When one fails, the others are still waited
/// for, each status's `MPI_ERROR` says which, and the call answers
/// `MPI_ERR_IN_STATUS`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Waitall(
    count_: c_int,
    requests_: *mut c_int,
    statuses: *mut MpiStatus,
) -> c_int {
    run("MPI_Waitall", 1, || {
        let n = count("count", count_)?;
        if n > 0 && requests_.is_null() {
            return Err(Fail::new(ERR_ARG, "the request array is a null pointer"));
        }
        let rt = runtime()?;
        let mut failed = None;
        for i in 0..n {
            // SAFETY: the caller's promise: `count` requests.
            let slot = unsafe { &mut *requests_.add(i) };
            let result = if *slot == REQUEST_NULL {
                Ok(empty_status())
            } else {
                let p = requests::take(*slot);
                *slot = REQUEST_NULL;
                p.and_then(|p| requests::wait(rt, p))
                    .map(|s| MpiStatus::of(&s))
            };
            let st = match result {
                Ok(s) => s,
                Err(f) => {
                    let code = crate::errors::record(f.class, f.message.clone());
                    failed.get_or_insert((i, f));
                    MpiStatus {
                        error: code,
                        ..MpiStatus::default()
                    }
                }
            };
            if !statuses.is_null() {
                // SAFETY: the caller's promise: `count` statuses.
                unsafe { statuses.add(i).write(st) };
            }
        }
        match failed {
            None => Ok(()),
            Some((i, f)) => Err(Fail::new(
                ERR_IN_STATUS,
                format!(
                    "request {i} failed: {} (each status's MPI_ERROR says which failed)",
                    f.message
                ),
            )),
        }
    })
}

/// `MPI_Waitany`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Waitany(
    count_: c_int,
    requests_: *mut c_int,
    index: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    run("MPI_Waitany", 1, || {
        let n = count("count", count_)?;
        if n > 0 && requests_.is_null() {
            return Err(Fail::new(ERR_ARG, "the request array is a null pointer"));
        }
        let rt = runtime()?;
        // SAFETY: the caller's promise: `count` requests.
        let slots = unsafe { std::slice::from_raw_parts_mut(requests_, n) };
        let mut ids = Vec::with_capacity(n);
        let mut at = Vec::with_capacity(n);
        for (i, &h) in slots.iter().enumerate() {
            if h == REQUEST_NULL {
                continue;
            }
            match requests::id_of(h)? {
                Some(id) => {
                    ids.push(id);
                    at.push(i);
                }
                None => return finish_any(rt, slots, i, index, status),
            }
        }
        if ids.is_empty() {
            // SAFETY: the caller's promise.
            unsafe {
                put("index", index, UNDEFINED)?;
                store(status, empty_status());
            }
            return Ok(());
        }
        let (k, outcome) = rt.wait_any(&ids)?;
        let i = at[k];
        let p = requests::take(slots[i])?;
        slots[i] = REQUEST_NULL;
        // SAFETY: the caller's promise.
        unsafe { put("index", index, i as c_int)? };
        let s = match (p, outcome) {
            (Pending::Recv(_, inc), Ok(s)) => {
                // SAFETY: the receive completed.
                unsafe { inc.finish(s.count) };
                s
            }
            (_, outcome) => outcome?,
        };
        // SAFETY: the caller's promise.
        unsafe { store(status, MpiStatus::of(&s)) };
        Ok(())
    })
}

/// Completes request `i` of `slots`, which is already done.
fn finish_any(
    rt: &oxmpi_mpi_core::Runtime,
    slots: &mut [c_int],
    i: usize,
    index: *mut c_int,
    status: *mut MpiStatus,
) -> Result<(), Fail> {
    let p = requests::take(slots[i])?;
    slots[i] = REQUEST_NULL;
    let s = requests::wait(rt, p)?;
    // SAFETY: the caller's promise (from `MPI_Waitany`).
    unsafe {
        put("index", index, i as c_int)?;
        store(status, MpiStatus::of(&s));
    }
    Ok(())
}

/// `MPI_Test`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Test(
    request: *mut c_int,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    run("MPI_Test", 1, || {
        if request.is_null() {
            return Err(Fail::new(ERR_ARG, "request is a null pointer"));
        }
        // SAFETY: not null; the caller's promise.
        let h = unsafe { *request };
        // SAFETY: the caller's promise (flag, status).
        let done = unsafe { test_one(h) }?;
        match done {
            Some(s) => {
                // SAFETY: as above.
                unsafe {
                    *request = REQUEST_NULL;
                    store(status, s);
                    put("flag", flag, 1)
                }
            }
            // SAFETY: as above.
            None => unsafe { put("flag", flag, 0) },
        }
    })
}

/// Tests request `h` once: its status if it completed (and it is then
/// released), `None` if not.
///
/// # Safety
///
/// The request's buffers are as its start promised.
unsafe fn test_one(h: c_int) -> Result<Option<MpiStatus>, Fail> {
    if h == REQUEST_NULL {
        return Ok(Some(empty_status()));
    }
    let rt = runtime()?;
    match requests::id_of(h)? {
        None => {}
        Some(id) => match rt.test(id) {
            None => return Ok(None),
            Some(outcome) => {
                let p = requests::take(h)?;
                let s = outcome?;
                if let Pending::Recv(_, inc) = &p {
                    // SAFETY: the receive completed.
                    unsafe { inc.finish(s.count) };
                }
                return Ok(Some(MpiStatus::of(&s)));
            }
        },
    }
    let p = requests::take(h)?;
    Ok(Some(MpiStatus::of(&requests::wait(rt, p)?)))
}

/// `MPI_Testall`: completes every request if all are complete, else none
/// (each is tested once; a completed one is kept complete for the next
/// call).
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Testall(
    count_: c_int,
    requests_: *mut c_int,
    flag: *mut c_int,
    statuses: *mut MpiStatus,
) -> c_int {
    run("MPI_Testall", 1, || {
        let n = count("count", count_)?;
        if n > 0 && requests_.is_null() {
            return Err(Fail::new(ERR_ARG, "the request array is a null pointer"));
        }
        // SAFETY: the caller's promise: `count` requests.
        let slots = unsafe { std::slice::from_raw_parts_mut(requests_, n) };
        let mut all = true;
        for slot in slots.iter_mut() {
            if *slot == REQUEST_NULL {
                continue;
            }
            // SAFETY: as the requests' starts promised.
            match unsafe { test_one(*slot) }? {
                // Keep it, complete, as a request for the final pass.
                Some(s) => *slot = requests::insert(Pending::Done(done_status(s))),
                None => all = false,
            }
        }
        if !all {
            // SAFETY: the caller's promise.
            return unsafe { put("flag", flag, 0) };
        }
        for (i, slot) in slots.iter_mut().enumerate() {
            let s = if *slot == REQUEST_NULL {
                empty_status()
            } else {
                let p = requests::take(*slot)?;
                *slot = REQUEST_NULL;
                MpiStatus::of(&requests::wait(runtime()?, p)?)
            };
            if !statuses.is_null() {
                // SAFETY: the caller's promise: `count` statuses.
                unsafe { statuses.add(i).write(s) };
            }
        }
        // SAFETY: the caller's promise.
        unsafe { put("flag", flag, 1) }
    })
}

fn done_status(s: MpiStatus) -> Status {
    Status {
        source: s.source,
        tag: s.tag,
        count: s.count as usize,
        cancelled: s.cancelled != 0,
    }
}

/// `MPI_Request_free`: a send goes on and completes on its own (finalize
/// waits for it); a receive still pending cannot be freed (oxmpi refuses
/// it: wait for it, or cancel it and wait).
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Request_free(request: *mut c_int) -> c_int {
    run("MPI_Request_free", 1, || {
        if request.is_null() {
            return Err(Fail::new(ERR_ARG, "request is a null pointer"));
        }
        // SAFETY: not null; the caller's promise.
        let h = unsafe { *request };
        let rt = runtime()?;
        match requests::take_freeable(h)? {
            p @ (Pending::Send(id, _) | Pending::Coll(id, _)) => {
                rt.free(id);
                requests::detach(p);
            }
            Pending::Done(_) | Pending::Recv(..) => {}
        }
        // SAFETY: as above.
        unsafe { *request = REQUEST_NULL };
        Ok(())
    })
}

/// `MPI_Cancel`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Cancel(request: *mut c_int) -> c_int {
    run("MPI_Cancel", 1, || {
        if request.is_null() {
            return Err(Fail::new(ERR_ARG, "request is a null pointer"));
        }
        // SAFETY: not null; the caller's promise.
        let h = unsafe { *request };
        if let Some(id) = requests::id_of(h)? {
            runtime()?.cancel(id)?;
        }
        Ok(())
    })
}

/// `MPI_Test_cancelled`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Test_cancelled(status: *const MpiStatus, flag: *mut c_int) -> c_int {
    run("MPI_Test_cancelled", 1, || {
        if status.is_null() {
            return Err(Fail::new(ERR_ARG, "status is a null pointer"));
        }
        // SAFETY: not null; the caller's promise.
        let cancelled = unsafe { (*status).cancelled };
        // SAFETY: the caller's promise.
        unsafe { put("flag", flag, c_int::from(cancelled != 0)) }
    })
}

/// `MPI_Probe`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Probe(
    source: c_int,
    tag: c_int,
    comm_: c_int,
    status: *mut MpiStatus,
) -> c_int {
    run("MPI_Probe", comm_, || {
        let rt = runtime()?;
        let c = comm(comm_)?;
        let s = if source == PROC_NULL {
            proc_null_status()
        } else {
            rt.probe(c, source, tag)?
        };
        // SAFETY: the caller's promise.
        unsafe { store(status, MpiStatus::of(&s)) };
        Ok(())
    })
}

/// `MPI_Iprobe`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Iprobe(
    source: c_int,
    tag: c_int,
    comm_: c_int,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    run("MPI_Iprobe", comm_, || {
        let rt = runtime()?;
        let c = comm(comm_)?;
        let found = if source == PROC_NULL {
            Some(proc_null_status())
        } else {
            rt.iprobe(c, source, tag)?
        };
        // SAFETY: the caller's promise.
        unsafe {
            if let Some(s) = &found {
                store(status, MpiStatus::of(s));
            }
            put("flag", flag, c_int::from(found.is_some()))
        }
    })
}

/// `MPI_Get_count`: the received bytes in whole elements of the type, or
/// `MPI_UNDEFINED` when they are not a whole number of them.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Get_count(
    status: *const MpiStatus,
    datatype_: c_int,
    count_: *mut c_int,
) -> c_int {
    run("MPI_Get_count", 1, || {
        if status.is_null() {
            return Err(Fail::new(
                ERR_ARG,
                "status is a null pointer (MPI_STATUS_IGNORE has no count)",
            ));
        }
        // SAFETY: not null; the caller's promise.
        let bytes = unsafe { (*status).count } as usize;
        let size = any_type(datatype_)?.dt.size();
        let n = match size {
            0 => 0,
            s if bytes.is_multiple_of(s) => c_int::try_from(bytes / s).unwrap_or(UNDEFINED),
            _ => UNDEFINED,
        };
        // SAFETY: the caller's promise.
        unsafe { put("count", count_, n) }
    })
}

/// `MPI_Get_elements`: the received primitive values, or `MPI_UNDEFINED`
/// when the bytes end inside one.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Get_elements(
    status: *const MpiStatus,
    datatype_: c_int,
    count_: *mut c_int,
) -> c_int {
    run("MPI_Get_elements", 1, || {
        if status.is_null() {
            return Err(Fail::new(
                ERR_ARG,
                "status is a null pointer (MPI_STATUS_IGNORE has no count)",
            ));
        }
        // SAFETY: not null; the caller's promise.
        let bytes = unsafe { (*status).count } as usize;
        let n = any_type(datatype_)?
            .dt
            .values_in(bytes)
            .and_then(|v| c_int::try_from(v).ok())
            .unwrap_or(UNDEFINED);
        // SAFETY: the caller's promise.
        unsafe { put("count", count_, n) }
    })
}
