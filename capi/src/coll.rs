//! Collectives: each operation's arguments become a [`Prepared`] call
//! (a builder per operation, in this file), which the blocking form runs
//! and the non-blocking form starts as a request (`coll_calls.rs`).
//!
//! The data of a collective must be of a contiguous type (a derived type
//! whose data fill its extent from its origin, or any predefined type);
//! a non-contiguous one is refused with `MPI_ERR_TYPE`. Reductions take
//! the predefined types the reduction kernels know.

// The builders take MPI's arguments as the C functions do.
#![allow(clippy::too_many_arguments)]

use crate::errors::{Fail, ERR_ARG, ERR_ROOT, ERR_TRUNCATE, ERR_TYPE};
use crate::handles::{comm, count, op, typed, Typed};
use crate::ops::UserCtx;
use crate::requests::{self, Pending};
use crate::{runtime, IN_PLACE};
use oxmpi_mpi_core::coll::{CollCall, CollKind, ElementCode, OpCode, RSlice, UserOp};
use std::ffi::{c_int, c_void};

/// A collective call ready to run or start, with what it points into.
pub struct Prepared {
    /// The call. Its slices point into `keep`'s boxes, and its user
    /// operation's context into `keep`'s context, whose heap memory
    /// neither moves nor goes while `self` lives.
    pub call: CollCall<'static>,
    /// What the call borrows.
    keep: Keep,
}

/// What a collective call borrows: kept by a non-blocking request until it
/// completes.
#[derive(Default)]
pub struct Keep {
    /// The count and displacement arrays.
    arrays: Vec<Box<[usize]>>,
    /// A program's reduction operation, with its datatype.
    user: Option<Box<UserCtx>>,
}

impl Prepared {
    /// An empty call, for a builder to fill in.
    #[inline(always)]
    pub fn empty() -> Prepared {
        Prepared {
            call: CollCall::new(CollKind::Barrier),
            keep: Keep::default(),
        }
    }

    /// Keeps `v` and answers a slice of it for the call.
    fn slice(&mut self, v: Box<[usize]>) -> RSlice<'static, usize> {
        // SAFETY: the box's heap memory stays where it is and lives as
        // long as `self` (it is only dropped with `self.keep`), and the
        // call that borrows it is `self.call`, used only while `self`
        // lives.
        let s: &'static [usize] = unsafe { &*std::ptr::from_ref::<[usize]>(&*v) };
        self.keep.arrays.push(v);
        RSlice::from_slice(s)
    }
}

/// The bytes of `n` elements of the contiguous type `t`.
#[inline(always)]
fn bytes(what: &str, n: c_int, t: &Typed) -> Result<usize, Fail> {
    unit_bytes(t)?.checked_mul(count(what, n)?).ok_or_else(|| {
        Fail::new(
            crate::errors::ERR_COUNT,
            format!("{what} passes the address space"),
        )
    })
}

/// Bytes per element of the contiguous type `t`.
#[inline(always)]
fn unit_bytes(t: &Typed) -> Result<usize, Fail> {
    t.contiguous_bytes(1)?.ok_or_else(|| {
        Fail::new(
            ERR_TYPE,
            "collectives over a non-contiguous datatype are not supported by oxmpi yet; pack the \
             data (MPI_Pack) or use a contiguous type",
        )
    })
}

/// A user buffer, or null for `MPI_IN_PLACE`.
#[inline]
fn buffer(p: *const c_void) -> *const u8 {
    if p == IN_PLACE {
        std::ptr::null()
    } else {
        p.cast()
    }
}

fn root_of(root: c_int) -> Result<u32, Fail> {
    u32::try_from(root).map_err(|_| Fail::new(ERR_ROOT, format!("root {root} is not a rank")))
}

/// The size of `comm_` and this process's rank in it.
fn place(comm_: c_int) -> Result<(usize, usize), Fail> {
    let rt = runtime()?;
    let c = comm(comm_)?;
    let (n, me) = (rt.comm_size(c), rt.comm_rank(c));
    if n <= 0 || me < 0 {
        return Err(Fail::new(
            crate::errors::ERR_COMM,
            format!("communicator {comm_} was freed"),
        ));
    }
    Ok((n as usize, me as usize))
}

/// `n` counts (or displacements) of the C array `p`, times `unit` bytes.
///
/// # Safety
///
/// `p` holds `n` ints.
unsafe fn scaled(what: &str, p: *const c_int, n: usize, unit: usize) -> Result<Box<[usize]>, Fail> {
    if p.is_null() {
        return Err(Fail::new(ERR_ARG, format!("{what} is a null pointer")));
    }
    // SAFETY: `n` ints (the caller's promise).
    let v = unsafe { std::slice::from_raw_parts(p, n) };
    v.iter()
        .enumerate()
        .map(|(i, &x)| {
            usize::try_from(x)
                .ok()
                .and_then(|x| x.checked_mul(unit))
                .ok_or_else(|| {
                    Fail::new(
                        crate::errors::ERR_COUNT,
                        format!("{what}[{i}] is {x}; it must be 0 or more"),
                    )
                })
        })
        .collect()
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

/// A reduction of `count_` elements of `datatype_` with `op_`, from
/// `sendbuf` (or `MPI_IN_PLACE`) into `recvbuf`.
#[inline(always)]
fn reduction(
    p: &mut Prepared,
    kind: CollKind,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count_: c_int,
    datatype_: c_int,
    op_: c_int,
) -> Result<(), Fail> {
    p.call.kind = kind;
    p.call.count = count("count", count_)?;
    if let Some(u) = crate::ops::user(op_)? {
        let unit = unit_bytes(&typed(datatype_)?)?;
        let ctx = Box::new(UserCtx {
            func: u.func,
            datatype: datatype_,
        });
        p.call.op = OpCode::User;
        p.call.element = ElementCode::User;
        p.call.user = UserOp {
            func: Some(crate::ops::call_user),
            ctx: std::ptr::from_ref::<UserCtx>(&ctx).cast_mut().cast(),
            elem_size: unit,
            commutative: u.commute,
        };
        p.keep.user = Some(ctx);
    } else {
        let Some(element) = typed(datatype_)?.element() else {
            return Err(no_reduction(datatype_));
        };
        p.call.element = element;
        p.call.op = op(op_)?;
    }
    p.call.send = buffer(sendbuf);
    p.call.recv = recvbuf.cast();
    Ok(())
}

/// `MPI_Barrier`.
#[inline(always)]
pub fn barrier(p: &mut Prepared, _comm: c_int) -> Result<(), Fail> {
    p.call.kind = CollKind::Barrier;
    Ok(())
}

/// `MPI_Bcast`.
#[inline(always)]
pub fn bcast(
    p: &mut Prepared,
    buf: *mut c_void,
    count_: c_int,
    datatype_: c_int,
    root: c_int,
    _comm: c_int,
) -> Result<(), Fail> {
    p.call.kind = CollKind::Bcast;
    p.call.count = bytes("count", count_, &typed(datatype_)?)?;
    p.call.send = buf.cast();
    p.call.recv = buf.cast();
    p.call.root = root_of(root)?;
    Ok(())
}

/// `MPI_Reduce`.
#[inline(always)]
pub fn reduce(
    p: &mut Prepared,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count_: c_int,
    datatype_: c_int,
    op_: c_int,
    root: c_int,
    _comm: c_int,
) -> Result<(), Fail> {
    reduction(
        p,
        CollKind::Reduce,
        sendbuf,
        recvbuf,
        count_,
        datatype_,
        op_,
    )?;
    p.call.root = root_of(root)?;
    Ok(())
}

/// `MPI_Allreduce`.
#[inline(always)]
pub fn allreduce(
    p: &mut Prepared,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count_: c_int,
    datatype_: c_int,
    op_: c_int,
    _comm: c_int,
) -> Result<(), Fail> {
    reduction(
        p,
        CollKind::Allreduce,
        sendbuf,
        recvbuf,
        count_,
        datatype_,
        op_,
    )
}

/// `MPI_Reduce_scatter_block`.
pub fn reduce_scatter_block(
    p: &mut Prepared,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: c_int,
    datatype_: c_int,
    op_: c_int,
    _comm: c_int,
) -> Result<(), Fail> {
    reduction(
        p,
        CollKind::ReduceScatterBlock,
        sendbuf,
        recvbuf,
        recvcount,
        datatype_,
        op_,
    )
}

/// `MPI_Scan`.
pub fn scan(
    p: &mut Prepared,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count_: c_int,
    datatype_: c_int,
    op_: c_int,
    _comm: c_int,
) -> Result<(), Fail> {
    reduction(p, CollKind::Scan, sendbuf, recvbuf, count_, datatype_, op_)
}

/// `MPI_Exscan`.
pub fn exscan(
    p: &mut Prepared,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count_: c_int,
    datatype_: c_int,
    op_: c_int,
    _comm: c_int,
) -> Result<(), Fail> {
    reduction(
        p,
        CollKind::Exscan,
        sendbuf,
        recvbuf,
        count_,
        datatype_,
        op_,
    )
}

/// `MPI_Reduce_scatter`: `recvcounts` (elements, one per rank).
///
/// # Safety
///
/// `recvcounts` holds one int per rank.
pub unsafe fn reduce_scatter(
    p: &mut Prepared,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    datatype_: c_int,
    op_: c_int,
    comm_: c_int,
) -> Result<(), Fail> {
    let (n, me) = place(comm_)?;
    // SAFETY: the caller's promise.
    let counts = unsafe { scaled("recvcounts", recvcounts, n, 1) }?;
    let mine = counts[me] as c_int;
    reduction(
        p,
        CollKind::ReduceScatter,
        sendbuf,
        recvbuf,
        mine,
        datatype_,
        op_,
    )?;
    p.call.counts = p.slice(counts);
    Ok(())
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
            ERR_TRUNCATE,
            format!(
                "the send side moves {a} bytes per rank and the receive side {b}; they must match"
            ),
        )),
        (Some(a), _) | (None, Some(a)) => Ok(a),
        (None, None) => Ok(0),
    }
}

/// `MPI_Gather` (`scatter` false) and `MPI_Scatter` (true): every rank
/// sends and the root receives, or the other way; in place at the root,
/// its own side is not given.
fn rooted(
    p: &mut Prepared,
    kind: CollKind,
    scatter: bool,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: c_int,
    root: c_int,
    comm_: c_int,
) -> Result<(), Fail> {
    let at_root = place(comm_)?.1 as c_int == root;
    let (sends, recvs) = if scatter {
        (at_root, true)
    } else {
        (true, at_root)
    };
    let send_given = sends && sendbuf != IN_PLACE;
    let recv_given = recvs && recvbuf.cast_const() != IN_PLACE;
    p.call.kind = kind;
    p.call.count = per_rank(
        send_given.then_some((sendcount, sendtype)),
        recv_given.then_some((recvcount, recvtype)),
    )?;
    p.call.send = if send_given {
        sendbuf.cast()
    } else {
        std::ptr::null()
    };
    p.call.recv = if recv_given {
        recvbuf.cast()
    } else {
        std::ptr::null_mut()
    };
    p.call.root = root_of(root)?;
    Ok(())
}

/// `MPI_Gather`.
pub fn gather(
    p: &mut Prepared,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: c_int,
    root: c_int,
    comm_: c_int,
) -> Result<(), Fail> {
    rooted(
        p,
        CollKind::Gather,
        false,
        sendbuf,
        sendcount,
        sendtype,
        recvbuf,
        recvcount,
        recvtype,
        root,
        comm_,
    )
}

/// `MPI_Scatter`.
pub fn scatter(
    p: &mut Prepared,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: c_int,
    root: c_int,
    comm_: c_int,
) -> Result<(), Fail> {
    rooted(
        p,
        CollKind::Scatter,
        true,
        sendbuf,
        sendcount,
        sendtype,
        recvbuf,
        recvcount,
        recvtype,
        root,
        comm_,
    )
}

/// `MPI_Allgather` and `MPI_Alltoall`.
fn everyone(
    p: &mut Prepared,
    kind: CollKind,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: c_int,
) -> Result<(), Fail> {
    let in_place = sendbuf == IN_PLACE;
    p.call.kind = kind;
    p.call.count = per_rank(
        (!in_place).then_some((sendcount, sendtype)),
        Some((recvcount, recvtype)),
    )?;
    p.call.send = buffer(sendbuf);
    p.call.recv = recvbuf.cast();
    Ok(())
}

/// `MPI_Allgather`.
pub fn allgather(
    p: &mut Prepared,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: c_int,
    _comm: c_int,
) -> Result<(), Fail> {
    everyone(
        p,
        CollKind::Allgather,
        sendbuf,
        sendcount,
        sendtype,
        recvbuf,
        recvcount,
        recvtype,
    )
}

/// `MPI_Alltoall`.
pub fn alltoall(
    p: &mut Prepared,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: c_int,
    _comm: c_int,
) -> Result<(), Fail> {
    everyone(
        p,
        CollKind::Alltoall,
        sendbuf,
        sendcount,
        sendtype,
        recvbuf,
        recvcount,
        recvtype,
    )
}

/// `MPI_Gatherv`: the root's counts and displacements are in elements of
/// `recvtype`; in place, the root's block is already in `recvbuf`.
///
/// # Safety
///
/// At the root, `recvcounts` and `displs` hold one int per rank.
pub unsafe fn gatherv(
    p: &mut Prepared,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: c_int,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: c_int,
    root: c_int,
    comm_: c_int,
) -> Result<(), Fail> {
    let (n, me) = place(comm_)?;
    p.call.kind = CollKind::Gatherv;
    p.call.root = root_of(root)?;
    let in_place = sendbuf == IN_PLACE;
    if me as c_int == root {
        let unit = unit_bytes(&typed(recvtype)?)?;
        // SAFETY: the caller's promise.
        let (c, d) = unsafe {
            (
                scaled("recvcounts", recvcounts, n, unit)?,
                scaled("displs", displs, n, unit)?,
            )
        };
        p.call.count = if in_place {
            c[me]
        } else {
            bytes("sendcount", sendcount, &typed(sendtype)?)?
        };
        p.call.counts = p.slice(c);
        p.call.displs = p.slice(d);
        p.call.recv = recvbuf.cast();
    } else {
        p.call.count = bytes("sendcount", sendcount, &typed(sendtype)?)?;
    }
    p.call.send = buffer(sendbuf);
    Ok(())
}

/// `MPI_Scatterv`: the root's counts and displacements are in elements
/// of `sendtype`; in place, the root's block stays in `sendbuf`.
///
/// # Safety
///
/// At the root, `sendcounts` and `displs` hold one int per rank.
pub unsafe fn scatterv(
    p: &mut Prepared,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    displs: *const c_int,
    sendtype: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: c_int,
    root: c_int,
    comm_: c_int,
) -> Result<(), Fail> {
    let (n, me) = place(comm_)?;
    p.call.kind = CollKind::Scatterv;
    p.call.root = root_of(root)?;
    let in_place = recvbuf.cast_const() == IN_PLACE;
    if me as c_int == root {
        let unit = unit_bytes(&typed(sendtype)?)?;
        // SAFETY: the caller's promise.
        let (c, d) = unsafe {
            (
                scaled("sendcounts", sendcounts, n, unit)?,
                scaled("displs", displs, n, unit)?,
            )
        };
        p.call.count = if in_place {
            c[me]
        } else {
            bytes("recvcount", recvcount, &typed(recvtype)?)?
        };
        p.call.counts = p.slice(c);
        p.call.displs = p.slice(d);
        p.call.send = sendbuf.cast();
    } else {
        p.call.count = bytes("recvcount", recvcount, &typed(recvtype)?)?;
    }
    p.call.recv = if in_place {
        std::ptr::null_mut()
    } else {
        recvbuf.cast()
    };
    Ok(())
}

/// `MPI_Allgatherv`: counts and displacements in elements of `recvtype`.
///
/// # Safety
///
/// `recvcounts` and `displs` hold one int per rank.
pub unsafe fn allgatherv(
    p: &mut Prepared,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: c_int,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: c_int,
    comm_: c_int,
) -> Result<(), Fail> {
    let (n, me) = place(comm_)?;
    let unit = unit_bytes(&typed(recvtype)?)?;
    // SAFETY: the caller's promise.
    let (c, d) = unsafe {
        (
            scaled("recvcounts", recvcounts, n, unit)?,
            scaled("displs", displs, n, unit)?,
        )
    };
    p.call.kind = CollKind::Allgatherv;
    p.call.count = if sendbuf == IN_PLACE {
        c[me]
    } else {
        bytes("sendcount", sendcount, &typed(sendtype)?)?
    };
    p.call.counts = p.slice(c);
    p.call.displs = p.slice(d);
    p.call.send = buffer(sendbuf);
    p.call.recv = recvbuf.cast();
    Ok(())
}

/// `MPI_Alltoallv`: each side's counts and displacements in elements of
/// its type; in place, the send side is the receive side.
///
/// # Safety
///
/// The four arrays hold one int per rank (the send side's are not read
/// in place).
pub unsafe fn alltoallv(
    p: &mut Prepared,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: c_int,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: c_int,
    comm_: c_int,
) -> Result<(), Fail> {
    let n = place(comm_)?.0;
    let runit = unit_bytes(&typed(recvtype)?)?;
    // SAFETY: the caller's promise.
    let (rc, rd) = unsafe {
        (
            scaled("recvcounts", recvcounts, n, runit)?,
            scaled("rdispls", rdispls, n, runit)?,
        )
    };
    let (sc, sd) = if sendbuf == IN_PLACE {
        (rc.clone(), rd.clone())
    } else {
        let sunit = unit_bytes(&typed(sendtype)?)?;
        // SAFETY: the caller's promise.
        unsafe {
            (
                scaled("sendcounts", sendcounts, n, sunit)?,
                scaled("sdispls", sdispls, n, sunit)?,
            )
        }
    };
    p.call.kind = CollKind::Alltoallv;
    p.call.send_counts = p.slice(sc);
    p.call.send_displs = p.slice(sd);
    p.call.counts = p.slice(rc);
    p.call.displs = p.slice(rd);
    p.call.send = buffer(sendbuf);
    p.call.recv = recvbuf.cast();
    Ok(())
}

/// Runs `p` on `comm_`.
///
/// # Safety
///
/// The call's buffers are valid for it.
#[inline(always)]
pub unsafe fn go(comm_: c_int, p: &Prepared) -> Result<(), Fail> {
    let rt = runtime()?;
    let c = comm(comm_)?;
    // SAFETY: the caller's promise.
    unsafe { rt.collective(c, &p.call) }?;
    Ok(())
}

/// Starts `p` on `comm_` and writes its request to `request`.
///
/// # Safety
///
/// The call's buffers stay valid until the request completes; `request`
/// is valid for a write.
pub unsafe fn start(comm_: c_int, p: Prepared, request: *mut c_int) -> Result<(), Fail> {
    if request.is_null() {
        return Err(Fail::new(ERR_ARG, "request is a null pointer"));
    }
    let rt = runtime()?;
    let c = comm(comm_)?;
    // SAFETY: the caller's promise; the arrays the call borrows go into
    // the request, which keeps them until it completes.
    let id = unsafe { rt.start_collective(c, &p.call) }?;
    let h = requests::insert(Pending::Coll(id, p.keep));
    // SAFETY: not null; the caller's promise.
    unsafe { request.write(h) };
    Ok(())
}
