//! Point-to-point: sends in standard and synchronous mode, receives,
//! requests, probes and counts.

use crate::buffers::{Incoming, Outgoing};
use crate::completion::store_failure;
use crate::errors::{raise_panic, run, Fail, ERR_ARG, SUCCESS};
use crate::handles::{any_type, checked_out, comm, comm_of, count, plain_bytes, put, typed, Typed};
use crate::requests::{self, Pending};
use crate::status::{store, MpiStatus};
use crate::{runtime, PROC_NULL, UNDEFINED};
use oxmpi_mpi_core::{Comm, RequestId, Runtime, SendMode, Status, ANY_TAG};
use std::ffi::{c_int, c_void};

/// The status of an operation with `MPI_PROC_NULL`.
pub(crate) fn proc_null_status() -> Status {
    Status {
        source: PROC_NULL,
        tag: ANY_TAG,
        count: 0,
        cancelled: false,
    }
}

/// What every send and receive resolves first: the runtime, the
/// communicator, the element count and the type.
pub(crate) struct Args {
    pub(crate) rt: &'static Runtime,
    pub(crate) comm: Comm,
    pub(crate) count: usize,
    pub(crate) ty: Typed,
}

/// Resolves a call's communicator, count and datatype handles.
///
/// # Errors
///
/// Not initialized; a bad communicator, count or datatype.
#[inline(always)]
pub(crate) fn args(comm_: c_int, count_: c_int, datatype_: c_int) -> Result<Args, Fail> {
    Ok(Args {
        rt: runtime()?,
        comm: comm(comm_)?,
        count: count("count", count_)?,
        ty: typed(datatype_)?,
    })
}

/// The runtime, the communicator and the length in bytes of a call
/// whose data is contiguous in the user's buffer; `None` for a type that
/// is packed or staged. A predefined single-value type with a valid count
/// is resolved without a [`Typed`] (a `Typed` carried through a `Result`
/// came back in pieces and was reloaded whole, a store-forwarding stall
/// on every call); any other goes through [`args`].
///
/// # Errors
///
/// As [`args`]; an element count whose size overflows.
#[inline(always)]
fn contiguous_args(
    comm_: c_int,
    count_: c_int,
    datatype_: c_int,
) -> Result<Option<(&'static Runtime, Comm, usize)>, Fail> {
    match plain_bytes(datatype_, count_) {
        Some(len) => Ok(Some((runtime()?, comm(comm_)?, len))),
        None => contiguous_args_general(comm_, count_, datatype_),
    }
}

/// [`contiguous_args`] of any type but a predefined single value.
#[inline(never)]
fn contiguous_args_general(
    comm_: c_int,
    count_: c_int,
    datatype_: c_int,
) -> Result<Option<(&'static Runtime, Comm, usize)>, Fail> {
    let Args {
        rt,
        comm: c,
        count: n,
        ty,
    } = args(comm_, count_, datatype_)?;
    Ok(ty.contiguous_bytes(n)?.map(|len| (rt, c, len)))
}

/// Starts a send and answers its pending request.
///
/// # Safety
///
/// `buf` holds `count` elements of `datatype` until the request
/// completes.
pub(crate) unsafe fn start_send(
    buf: *const c_void,
    count_: c_int,
    datatype_: c_int,
    dest: c_int,
    tag: c_int,
    comm_: c_int,
    mode: SendMode,
) -> Result<Pending, Fail> {
    let Args {
        rt,
        comm: c,
        count: n,
        ty,
    } = args(comm_, count_, datatype_)?;
    if dest == PROC_NULL {
        return Ok(Pending::Done(proc_null_status()));
    }
    // SAFETY: the caller's promise.
    let out = unsafe { Outgoing::for_pml(buf, n, &ty, rt.takes_pieces()) }?;
    let id = match &out {
        // SAFETY: the user's elements (the caller's promise) and their
        // type, which the request keeps.
        Outgoing::InPieces(p, len) => unsafe {
            rt.isend_pieces(c, dest, tag, p.pieces(), *len, mode)
        },
        _ => {
            let (p, len) = out.bytes();
            // SAFETY: `p..p + len` is the user's buffer (the caller's
            // promise) or `out`'s copy, which the request keeps.
            unsafe { rt.isend(c, dest, tag, p, len, mode) }
        }
    }?;
    Ok(Pending::Send(id, out))
}

/// Starts a receive and answers its pending request.
///
/// # Safety
///
/// `buf` is writable for `count` elements of `datatype` and untouched
/// until the request completes.
pub(crate) unsafe fn start_recv(
    buf: *mut c_void,
    count_: c_int,
    datatype_: c_int,
    source: c_int,
    tag: c_int,
    comm_: c_int,
) -> Result<Pending, Fail> {
    let Args {
        rt,
        comm: c,
        count: n,
        ty,
    } = args(comm_, count_, datatype_)?;
    if source == PROC_NULL {
        return Ok(Pending::Done(proc_null_status()));
    }
    let mut inc = Incoming::for_pml(buf, n, &ty, rt.takes_pieces())?;
    let id = match &mut inc {
        // SAFETY: the user's elements (the caller's promise) and their
        // type, which the request keeps.
        Incoming::InPieces(p, len) => unsafe { rt.irecv_pieces(c, source, tag, p.pieces(), *len) },
        _ => {
            let (p, len) = inc.bytes();
            // SAFETY: `p..p + len` is the user's buffer (the caller's
            // promise) or `inc`'s staging vector, which the request keeps
            // (moving the vector does not move its heap bytes).
            unsafe { rt.irecv(c, source, tag, p, len) }
        }
    }?;
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
    if dest == PROC_NULL {
        return args(comm_, count_, datatype_).map(drop);
    }
    match contiguous_args(comm_, count_, datatype_)? {
        Some((rt, c, len)) => {
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
            // SAFETY: the caller's promise (the buffer is untouched until
            // the call returns). A panic (a broken invariant) is reported
            // as `run` reports one.
            let common = std::panic::catch_unwind(|| unsafe {
                send_common(buf, count, datatype, dest, tag, comm, $mode)
            });
            match common {
                Ok(Some(id)) if id.handle() == 0 => SUCCESS,
                Ok(Some(id)) => run($text, comm, || send_wait(id)),
                Ok(None) => run($text, comm, || unsafe {
                    // SAFETY: the caller's promise.
                    blocking_send(buf, count, datatype, dest, tag, comm, $mode)
                }),
                Err(panic) => raise_panic($text, comm, panic.as_ref()),
            }
        }
    };
}

/// A send in its common case (a predefined type, the world's
/// communicator, a rank and tag that need no more checks, a thread that
/// needs no lock), which reports nothing: the started request, or `None`
/// with nothing started (the full checks then decide and report). The
/// blocking and the immediate sends start with it.
///
/// # Safety
///
/// `buf` holds `count` elements of `datatype`, untouched until the
/// request completes.
#[inline(always)]
unsafe fn send_common(
    buf: *const c_void,
    count: c_int,
    datatype: c_int,
    dest: c_int,
    tag: c_int,
    comm_: c_int,
    mode: SendMode,
) -> Option<RequestId> {
    let (rt, c, len) = common_args(comm_, count, datatype)?;
    // SAFETY: the caller's promise.
    unsafe { rt.isend_fast(c, dest, tag, buf.cast(), len, mode) }
}

/// The runtime, the communicator and the length in bytes of a call in
/// its common case: a predefined single-value type, a count that is not
/// negative, a valid communicator handle, MPI running. `None` otherwise
/// (the full checks then decide and report).
#[inline(always)]
fn common_args(
    comm_: c_int,
    count: c_int,
    datatype: c_int,
) -> Option<(&'static Runtime, Comm, usize)> {
    let len = plain_bytes(datatype, count)?;
    let c = comm_of(comm_)?;
    Some((oxmpi_mpi_core::runtime()?, c, len))
}

/// Waits for the send [`send_common`] started and did not complete.
#[inline(never)]
fn send_wait(id: RequestId) -> Result<(), Fail> {
    runtime()?.wait(id)?;
    Ok(())
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
            // SAFETY: the caller's promises (the buffer is untouched
            // until the request completes; `request` is writable).
            let common = unsafe {
                immediate_common($text, comm, request, || {
                    send_common(buf, count, datatype, dest, tag, comm, $mode)
                        .map(|id| requests::insert_plain(id, false))
                })
            };
            if let Some(code) = common {
                return code;
            }
            run($text, comm, || {
                checked_out("request", request)?;
                let h = match contiguous_args(comm, count, datatype)? {
                    Some((rt, c, len)) if dest != PROC_NULL => {
                        // SAFETY: the user's buffer holds `len` bytes (the
                        // caller's promise) until the request completes.
                        let id = unsafe { rt.isend(c, dest, tag, buf.cast(), len, $mode) }?;
                        requests::insert_plain(id, false)
                    }
                    _ => {
                        let (n, t) = (count, datatype);
                        // SAFETY: the caller's promise (the buffer lives
                        // until the request completes).
                        let p = unsafe { start_send(buf, n, t, dest, tag, comm, $mode) }?;
                        requests::insert(p)
                    }
                };
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
    // SAFETY: the caller's promise (the buffer is untouched until the
    // call returns). A panic (a broken invariant) is reported as `run`
    // reports one.
    let common = std::panic::catch_unwind(|| unsafe {
        recv_common(buf, count, datatype, source, tag, comm)
    });
    match common {
        Ok(Some((rt, id))) => run("MPI_Recv", comm, || {
            // SAFETY: the caller's promise.
            unsafe { received(rt.wait(id).map_err(Fail::from), status) }
        }),
        Ok(None) => run("MPI_Recv", comm, || {
            // SAFETY: the caller's promise.
            unsafe { recv_general(buf, count, datatype, source, tag, comm, status) }
        }),
        Err(panic) => raise_panic("MPI_Recv", comm, panic.as_ref()),
    }
}

/// A blocking receive in its common case (a predefined type, the world's
/// communicator, a rank and tag that need no more checks, a thread that
/// needs no lock), which reports nothing: the runtime and the started
/// request, or `None` with nothing started ([`recv_general`] then
/// decides).
///
/// # Safety
///
/// `buf` is writable for `count` elements of `datatype`, untouched until
/// the request completes.
#[inline(always)]
unsafe fn recv_common(
    buf: *mut c_void,
    count: c_int,
    datatype: c_int,
    source: c_int,
    tag: c_int,
    comm_: c_int,
) -> Option<(&'static Runtime, RequestId)> {
    let (rt, c, len) = common_args(comm_, count, datatype)?;
    // SAFETY: the caller's promise.
    let id = unsafe { rt.irecv_fast(c, source, tag, buf.cast(), len) }?;
    Some((rt, id))
}

/// `MPI_Recv` past its common case, with every check and report.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[inline(never)]
unsafe fn recv_general(
    buf: *mut c_void,
    count: c_int,
    datatype: c_int,
    source: c_int,
    tag: c_int,
    comm: c_int,
    status: *mut MpiStatus,
) -> Result<(), Fail> {
    let got = match contiguous_args(comm, count, datatype)? {
        _ if source == PROC_NULL => Ok(proc_null_status()),
        Some((rt, c, len)) => {
            // SAFETY: the user's buffer holds `len` bytes (the caller's
            // promise), untouched until the wait returns.
            let id = unsafe { rt.irecv(c, source, tag, buf.cast(), len) }?;
            rt.wait(id).map_err(Fail::from)
        }
        None => {
            // SAFETY: the caller's promise; the call waits for it.
            let p = unsafe { start_recv(buf, count, datatype, source, tag, comm) }?;
            requests::wait(runtime()?, p)
        }
    };
    // SAFETY: the caller's promise.
    unsafe { received(got, status) }
}

/// Stores the outcome of a blocking receive in `status`: a truncated
/// receive still reports its source, tag and count.
///
/// # Safety
///
/// `status` is `MPI_STATUS_IGNORE` or writable.
#[inline(always)]
unsafe fn received(got: Result<Status, Fail>, status: *mut MpiStatus) -> Result<(), Fail> {
    match got {
        Ok(s) => {
            // SAFETY: the caller's promise.
            unsafe { store(status, MpiStatus::of(&s)) };
            Ok(())
        }
        Err(f) => {
            // SAFETY: the caller's promise.
            unsafe { store_failure(status, &f) };
            Err(f)
        }
    }
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
    // SAFETY: the caller's promises (the buffer is untouched until the
    // request completes; `request` is writable).
    let common = unsafe {
        immediate_common("MPI_Irecv", comm, request, || {
            irecv_common(buf, count, datatype, source, tag, comm)
        })
    };
    match common {
        Some(code) => code,
        // SAFETY: the caller's promise.
        None => unsafe { irecv_general(buf, count, datatype, source, tag, comm, request) },
    }
}

/// The common path of an immediate call (`MPI_Isend`, `MPI_Irecv`, …):
/// runs `start`, which answers the request's handle or `None` with
/// nothing started, and writes the handle to `request`. The code to
/// return: `MPI_SUCCESS` with the handle written, or the report of a
/// panic (a broken invariant, reported as `run` reports one); `None` when
/// `request` is null or `start` declined (the general path then decides
/// and reports).
///
/// # Safety
///
/// `request` is null or writable; `start` may rely on the call's
/// arguments being what MPI requires (the caller's promise).
#[inline(always)]
unsafe fn immediate_common(
    text: &str,
    comm: c_int,
    request: *mut c_int,
    start: impl FnOnce() -> Option<c_int>,
) -> Option<c_int> {
    if request.is_null() {
        return None;
    }
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(start)) {
        Ok(Some(h)) => {
            // SAFETY: not null; the caller's promise.
            unsafe { request.write(h) };
            Some(SUCCESS)
        }
        Ok(None) => None,
        Err(panic) => Some(raise_panic(text, comm, panic.as_ref())),
    }
}

/// `MPI_Irecv` in its common case (a predefined type, the world's
/// communicator, a rank and tag that need no more checks, a thread that
/// needs no lock), which reports nothing: the request's handle, or
/// `None` with nothing started ([`irecv_general`] then decides).
///
/// # Safety
///
/// As MPI requires of its arguments.
#[inline(always)]
unsafe fn irecv_common(
    buf: *mut c_void,
    count: c_int,
    datatype: c_int,
    source: c_int,
    tag: c_int,
    comm_: c_int,
) -> Option<c_int> {
    let (rt, c, len) = common_args(comm_, count, datatype)?;
    // SAFETY: the user's buffer holds `len` bytes (the caller's promise),
    // untouched until the request completes.
    let slot = unsafe { rt.irecv_held_fast(c, source, tag, buf.cast(), len) }?;
    Some(requests::slot_handle(slot, true))
}

/// `MPI_Irecv` past its common case, with every check and report.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[inline(never)]
unsafe fn irecv_general(
    buf: *mut c_void,
    count: c_int,
    datatype: c_int,
    source: c_int,
    tag: c_int,
    comm: c_int,
    request: *mut c_int,
) -> c_int {
    run("MPI_Irecv", comm, || {
        checked_out("request", request)?;
        let h = match contiguous_args(comm, count, datatype)? {
            Some((rt, c, len)) if source != PROC_NULL => {
                // SAFETY: the user's buffer holds `len` bytes (the caller's
                // promise), untouched until the request completes. One
                // complete at its start keeps its status in its slot, so
                // its handle names the slot too.
                let id = unsafe { rt.irecv_held(c, source, tag, buf.cast(), len) }?;
                requests::insert_plain(id, true)
            }
            _ => {
                // SAFETY: the caller's promise (the buffer is untouched
                // until the request completes).
                let p = unsafe { start_recv(buf, count, datatype, source, tag, comm) }?;
                requests::insert(p)
            }
        };
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
        check_exchange(rt, comm, dest, sendtag, source, recvtag)?;
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
        // SAFETY: the caller's promise.
        unsafe { finish_exchange(rt, s, r, status) }
    })
}

/// `MPI_Sendrecv_replace`: the message out is copied (packed when the
/// type is not contiguous) before the receive may overwrite the buffer.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Sendrecv_replace(
    buf: *mut c_void,
    count: c_int,
    datatype: c_int,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: c_int,
    status: *mut MpiStatus,
) -> c_int {
    run("MPI_Sendrecv_replace", comm, || {
        let Args {
            rt,
            comm: c,
            count: n,
            ty,
        } = args(comm, count, datatype)?;
        check_exchange(rt, comm, dest, sendtag, source, recvtag)?;
        let out = if dest == PROC_NULL {
            None
        } else {
            // SAFETY: the buffer holds `count` elements (the caller's
            // promise).
            Some(unsafe { Outgoing::copied(buf, n, &ty) }?)
        };
        // SAFETY: the caller's promise; the receive completes before the
        // return.
        let r = unsafe { start_recv(buf, count, datatype, source, recvtag, comm) }?;
        let s = match out {
            None => Ok(Pending::Done(proc_null_status())),
            Some(out) => {
                let (p, len) = out.bytes();
                // SAFETY: `p..p + len` is `out`'s own copy, which the
                // pending send keeps (moving it does not move its bytes).
                unsafe { rt.isend(c, dest, sendtag, p, len, SendMode::Standard) }
                    .map(|id| Pending::Send(id, out))
                    .map_err(Fail::from)
            }
        };
        // SAFETY: the caller's promise.
        unsafe { finish_exchange(rt, s, r, status) }
    })
}

/// Checks both halves of an exchange on communicator handle `comm_`
/// before either starts, so that a bad one leaves nothing posted.
fn check_exchange(
    rt: &Runtime,
    comm_: c_int,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
) -> Result<(), Fail> {
    let c = comm(comm_)?;
    let dest = (dest != PROC_NULL).then_some(dest);
    let source = (source != PROC_NULL).then_some(source);
    rt.check_exchange(c, dest, sendtag, source, recvtag)?;
    Ok(())
}

/// Completes the send `s` (or its failure to start) and the receive `r`
/// of an exchange and answers the receive's status, a truncated one
/// included; the receive's failure comes first, then the send's.
///
/// # Safety
///
/// `status` is `MPI_STATUS_IGNORE` or writable.
unsafe fn finish_exchange(
    rt: &Runtime,
    s: Result<Pending, Fail>,
    r: Pending,
    status: *mut MpiStatus,
) -> Result<(), Fail> {
    let sent = s.and_then(|s| requests::wait(rt, s));
    // SAFETY: the caller's promise.
    unsafe { received(requests::wait(rt, r), status) }?;
    sent.map(drop)
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
        // SAFETY: the caller's promise.
        let n = unsafe { elements(status, datatype_) }?;
        // SAFETY: the caller's promise.
        unsafe { put("count", count_, n) }
    })
}

/// The primitive values of `datatype_` a status's bytes hold, or
/// `MPI_UNDEFINED` when they end inside one.
///
/// # Safety
///
/// `status` is null or readable.
unsafe fn elements(status: *const MpiStatus, datatype_: c_int) -> Result<c_int, Fail> {
    if status.is_null() {
        return Err(Fail::new(
            ERR_ARG,
            "status is a null pointer (MPI_STATUS_IGNORE has no count)",
        ));
    }
    // SAFETY: not null; the caller's promise.
    let bytes = unsafe { (*status).count } as usize;
    Ok(any_type(datatype_)?
        .dt
        .values_in(bytes)
        .and_then(|v| c_int::try_from(v).ok())
        .unwrap_or(UNDEFINED))
}

/// `MPI_Get_elements_x`: [`PMPI_Get_elements`] as an `MPI_Count`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Get_elements_x(
    status: *const MpiStatus,
    datatype_: c_int,
    count_: *mut i64,
) -> c_int {
    run("MPI_Get_elements_x", 1, || {
        // SAFETY: the caller's promise.
        let n = unsafe { elements(status, datatype_) }?;
        // SAFETY: the caller's promise.
        unsafe { put("count", count_, i64::from(n)) }
    })
}
