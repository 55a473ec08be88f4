//! Blocking collectives over the MPI layer's coll components.
//!
//! The data of a collective must be of a contiguous type (a derived type
//! whose data fill its extent from its origin, or any predefined type);
//! a non-contiguous one is refused with `MPI_ERR_TYPE`. Reductions take
//! the predefined types the reduction kernels know.

use crate::errors::{run, Fail, ERR_TYPE};
use crate::handles::{comm, count, op, typed, Typed};
use crate::{runtime, IN_PLACE};
use oxmpi_mpi_core::coll::{CollCall, CollKind};
use std::ffi::{c_int, c_void};

/// The bytes of `n` elements of the contiguous type `t`.
#[inline]
fn bytes(what: &str, n: c_int, t: &Typed) -> Result<usize, Fail> {
    t.contiguous_bytes(count(what, n)?)?.ok_or_else(|| {
        Fail::new(
            ERR_TYPE,
            "collectives over a non-contiguous datatype are not supported by oxmpi yet; pack the \
             data (MPI_Pack) or use a contiguous type",
        )
    })
}

/// A user buffer, or null for `MPI_IN_PLACE` where `in_place` allows it.
fn buffer(p: *const c_void) -> *const u8 {
    if p == IN_PLACE {
        std::ptr::null()
    } else {
        p.cast()
    }
}

/// Runs `call` on `comm_`.
///
/// # Safety
///
/// The call's buffers are valid for it.
unsafe fn go(comm_: c_int, call: &CollCall<'_>) -> Result<(), Fail> {
    let rt = runtime()?;
    let c = comm(comm_)?;
    // SAFETY: the caller's promise.
    unsafe { rt.collective(c, call) }?;
    Ok(())
}

/// `MPI_Barrier`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Barrier(comm_: c_int) -> c_int {
    // SAFETY: no buffers.
    run("MPI_Barrier", comm_, || unsafe {
        go(comm_, &CollCall::new(CollKind::Barrier))
    })
}

/// `MPI_Bcast`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Bcast(
    buffer_: *mut c_void,
    count_: c_int,
    datatype_: c_int,
    root: c_int,
    comm_: c_int,
) -> c_int {
    run("MPI_Bcast", comm_, || {
        let t = typed(datatype_)?;
        let mut call = CollCall::new(CollKind::Bcast);
        call.send = buffer_.cast();
        call.recv = buffer_.cast();
        call.count = bytes("count", count_, &t)?;
        call.root = root_of(root)?;
        // SAFETY: the buffer holds `count` elements (the caller's promise).
        unsafe { go(comm_, &call) }
    })
}

fn root_of(root: c_int) -> Result<u32, Fail> {
    u32::try_from(root).map_err(|_| {
        Fail::new(
            crate::errors::ERR_ROOT,
            format!("root {root} is not a rank"),
        )
    })
}

/// The refusal of a reduction over a type the kernels do not take.
#[cold]
fn no_reduction(datatype_: c_int) -> Fail {
    let name = crate::handles::any_type(datatype_)
        .map(|t| t.dt.name())
        .ok()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "a derived type".into());
    Fail::new(
        ERR_TYPE,
        format!(
            "reductions in oxmpi take the predefined integer, floating-point, logical, byte and \
             pair types; datatype {datatype_} ({name}) is not one of them"
        ),
    )
}

/// Fills in a reduction's `count` elements of the predefined type
/// `datatype_` and its operation `op_`.
#[inline]
fn reduction(
    call: &mut CollCall<'_>,
    count_: c_int,
    datatype_: c_int,
    op_: c_int,
) -> Result<(), Fail> {
    let Some(element) = typed(datatype_)?.element() else {
        return Err(no_reduction(datatype_));
    };
    call.count = count("count", count_)?;
    call.element = element;
    call.op = op(op_)?;
    Ok(())
}

/// `MPI_Reduce`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Reduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count_: c_int,
    datatype_: c_int,
    op_: c_int,
    root: c_int,
    comm_: c_int,
) -> c_int {
    run("MPI_Reduce", comm_, || {
        let mut call = CollCall::new(CollKind::Reduce);
        reduction(&mut call, count_, datatype_, op_)?;
        call.send = buffer(sendbuf);
        call.recv = recvbuf.cast();
        call.root = root_of(root)?;
        // SAFETY: the buffers hold `count` elements (the caller's promise).
        unsafe { go(comm_, &call) }
    })
}

/// `MPI_Allreduce`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Allreduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count_: c_int,
    datatype_: c_int,
    op_: c_int,
    comm_: c_int,
) -> c_int {
    run("MPI_Allreduce", comm_, || {
        let mut call = CollCall::new(CollKind::Allreduce);
        reduction(&mut call, count_, datatype_, op_)?;
        call.send = buffer(sendbuf);
        call.recv = recvbuf.cast();
        // SAFETY: the buffers hold `count` elements (the caller's promise).
        unsafe { go(comm_, &call) }
    })
}

/// The bytes per rank of a data-moving collective, from whichever side
/// the caller's rank gives (both must agree where both count).
fn per_rank(send: Option<(c_int, c_int)>, recv: Option<(c_int, c_int)>) -> Result<usize, Fail> {
    let side =
        |(n, t): (c_int, c_int), what: &str| -> Result<usize, Fail> { bytes(what, n, &typed(t)?) };
    let s = send.map(|x| side(x, "sendcount")).transpose()?;
    let r = recv.map(|x| side(x, "recvcount")).transpose()?;
    match (s, r) {
        (Some(a), Some(b)) if a != b => Err(Fail::new(
            crate::errors::ERR_TRUNCATE,
            format!(
                "the send side moves {a} bytes per rank and the receive side {b}; they must match"
            ),
        )),
        (Some(a), _) | (None, Some(a)) => Ok(a),
        (None, None) => Ok(0),
    }
}

/// Whether this process is `root` of `comm_`.
fn is_root(comm_: c_int, root: c_int) -> Result<bool, Fail> {
    let rt = runtime()?;
    Ok(rt.comm_rank(comm(comm_)?) == root)
}

macro_rules! rooted {
    ($name:ident, $text:literal, $kind:expr, $send_at_root_only:expr) => {
        /// The C function of the same name without its `P`.
        ///
        /// # Safety
        ///
        /// As MPI requires of its arguments.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            sendbuf: *const c_void,
            sendcount: c_int,
            sendtype: c_int,
            recvbuf: *mut c_void,
            recvcount: c_int,
            recvtype: c_int,
            root: c_int,
            comm_: c_int,
        ) -> c_int {
            run($text, comm_, || {
                let at_root = is_root(comm_, root)?;
                // Gather: every rank sends, the root receives; scatter:
                // the root sends, every rank receives. In place at the
                // root, its own side is not given.
                let (sends, recvs) = if $send_at_root_only {
                    (at_root, true)
                } else {
                    (true, at_root)
                };
                let send_given = sends && sendbuf != IN_PLACE;
                let recv_given = recvs && recvbuf.cast_const() != IN_PLACE;
                let n = per_rank(
                    send_given.then_some((sendcount, sendtype)),
                    recv_given.then_some((recvcount, recvtype)),
                )?;
                let mut call = CollCall::new($kind);
                call.send = if send_given {
                    sendbuf.cast()
                } else {
                    std::ptr::null()
                };
                call.recv = if recv_given {
                    recvbuf.cast()
                } else {
                    std::ptr::null_mut()
                };
                call.count = n;
                call.root = root_of(root)?;
                // SAFETY: the buffers hold what the counts say (the
                // caller's promise).
                unsafe { go(comm_, &call) }
            })
        }
    };
}

rooted!(PMPI_Gather, "MPI_Gather", CollKind::Gather, false);
rooted!(PMPI_Scatter, "MPI_Scatter", CollKind::Scatter, true);

macro_rules! everyone {
    ($name:ident, $text:literal, $kind:expr) => {
        /// The C function of the same name without its `P`.
        ///
        /// # Safety
        ///
        /// As MPI requires of its arguments.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            sendbuf: *const c_void,
            sendcount: c_int,
            sendtype: c_int,
            recvbuf: *mut c_void,
            recvcount: c_int,
            recvtype: c_int,
            comm_: c_int,
        ) -> c_int {
            run($text, comm_, || {
                let in_place = sendbuf == IN_PLACE;
                let n = per_rank(
                    (!in_place).then_some((sendcount, sendtype)),
                    Some((recvcount, recvtype)),
                )?;
                let mut call = CollCall::new($kind);
                call.send = buffer(sendbuf);
                call.recv = recvbuf.cast();
                call.count = n;
                // SAFETY: the buffers hold what the counts say (the
                // caller's promise).
                unsafe { go(comm_, &call) }
            })
        }
    };
}

everyone!(PMPI_Allgather, "MPI_Allgather", CollKind::Allgather);
everyone!(PMPI_Alltoall, "MPI_Alltoall", CollKind::Alltoall);
