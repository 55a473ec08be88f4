//! Collectives: each operation's arguments become a [`Prepared`] call
//! (a builder per operation: the reductions here, the operations that
//! move data in `coll_move.rs`), which the blocking form runs and the
//! non-blocking form starts as a request (`coll_calls.rs`).
//!
//! Any committed datatype may be used. A side of a call in a contiguous
//! type (any predefined type, or a derived type whose data fill its
//! extent from its origin) is the user's memory itself, with no copy. A
//! side in another type goes through a staging buffer in the type's
//! packed form (`coll_staging.rs`): packed before the call, unpacked
//! after it completed, which [`Keep::finish`] does, by the blocking call
//! or when the request completes. The sides of one call may be of
//! different types whose packed bytes agree, as MPI's matching type
//! signatures allow.
//!
//! Reductions take the predefined types the reduction kernels know
//! (integers, floating point, `MPI_C_BOOL`, `MPI_BYTE`, the pair types)
//! and derived types whose values are all of one of them (a vector of
//! doubles is reduced as its doubles, packed when it has gaps). With a
//! program's operation any type goes: a non-contiguous one travels
//! packed, and the operation is called on elements unpacked into scratch
//! memory laid out as the type, with the type's own handle (`ops.rs`).

// The builders take MPI's arguments as the C functions do.
#![allow(clippy::too_many_arguments)]

use crate::coll_staging::{self, Staged, Unpack, Wide};
use crate::errors::{Fail, ERR_ARG, ERR_ROOT, ERR_TYPE};
use crate::handles::{checked_out, comm, count, op, typed, Layout, Typed};
use crate::ops::UserCtx;
use crate::requests::{self, Pending};
use crate::{runtime, IN_PLACE};
use oxmpi_datatype::{Datatype, Pair};
use oxmpi_mpi_core::coll::{CollCall, CollKind, ElementCode, OpCode, RSlice, UserOp};
use std::ffi::{c_int, c_void};

pub use crate::coll_move::{
    allgather, allgatherv, alltoall, alltoallv, bcast, gather, gatherv, scatter, scatterv,
};

/// A collective call ready to run or start, with what it points into.
pub struct Prepared {
    /// The call. Its slices point into `keep`'s boxes, its buffers may
    /// point into `keep`'s staging buffers, and its user operation's
    /// context into `keep`'s context, whose heap memory neither moves nor
    /// goes while `self` lives.
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
    /// The staging buffers of sides in non-contiguous types (boxed: the
    /// rare case, kept out of the size of every request).
    staged: Option<Box<Staged>>,
}

impl Keep {
    /// Finishes the call after it completed: a staged receive side is
    /// unpacked into the user's buffer.
    ///
    /// # Safety
    ///
    /// The call completed without error, and its receive buffer is the
    /// application's again (and still valid).
    #[inline]
    pub unsafe fn finish(&self) {
        if let Some(s) = &self.staged {
            // SAFETY: the caller's promise.
            unsafe { s.finish() };
        }
    }
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
    pub(crate) fn slice(&mut self, v: Box<[usize]>) -> RSlice<'static, usize> {
        // SAFETY: the box's heap memory stays where it is and lives as
        // long as `self` (it is only dropped with `self.keep`), and the
        // call that borrows it is `self.call`, used only while `self`
        // lives.
        let s: &'static [usize] = unsafe { &*std::ptr::from_ref::<[usize]>(&*v) };
        self.keep.arrays.push(v);
        RSlice::from_slice(s)
    }

    /// The staging buffers the call keeps.
    pub(crate) fn staged(&mut self) -> &mut Staged {
        self.keep.staged.get_or_insert_with(Box::default)
    }
}

/// How the elements of one side of a call lie in the user's memory.
pub(crate) enum Unit {
    /// Contiguous, this many bytes each.
    Bytes(usize),
    /// Of this non-contiguous type: packed into a staging buffer.
    Packed(Datatype),
}

impl Unit {
    /// The unit of type `t`.
    #[inline(always)]
    pub(crate) fn of(t: &Typed) -> Result<Unit, Fail> {
        Ok(match t.layout(1)? {
            Layout::Contiguous(bytes) => Unit::Bytes(bytes),
            Layout::Packed(dt, _) => Unit::Packed(dt.clone()),
        })
    }

    /// Bytes of one element's data.
    #[inline(always)]
    pub(crate) fn size(&self) -> usize {
        match self {
            Unit::Bytes(b) => *b,
            Unit::Packed(dt) => dt.size(),
        }
    }
}

/// `a × b` bytes of `what`.
///
/// # Errors
///
/// `MPI_ERR_COUNT` when it overflows.
#[inline(always)]
pub(crate) fn times(what: &str, a: usize, b: usize) -> Result<usize, Fail> {
    a.checked_mul(b).ok_or_else(|| {
        Fail::new(
            crate::errors::ERR_COUNT,
            format!("{what} passes the address space"),
        )
    })
}

/// A user buffer, or null for `MPI_IN_PLACE`.
#[inline]
pub(crate) fn buffer(p: *const c_void) -> *const u8 {
    if p == IN_PLACE {
        std::ptr::null()
    } else {
        p.cast()
    }
}

/// The rank `root` names.
pub(crate) fn root_of(root: c_int) -> Result<u32, Fail> {
    u32::try_from(root).map_err(|_| Fail::new(ERR_ROOT, format!("root {root} is not a rank")))
}

/// The size of `comm_` and this process's rank in it.
pub(crate) fn place(comm_: c_int) -> Result<(usize, usize), Fail> {
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
pub(crate) unsafe fn scaled(
    what: &str,
    p: *const c_int,
    n: usize,
    unit: usize,
) -> Result<Box<[usize]>, Fail> {
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

/// The name of datatype `datatype_` for a message.
fn type_name(datatype_: c_int) -> String {
    crate::handles::any_type(datatype_)
        .map(|t| t.dt.name())
        .ok()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "a derived type".into())
}

/// The refusal of a reduction over a type the kernels do not take.
#[cold]
fn no_reduction(datatype_: c_int) -> Fail {
    Fail::new(
        ERR_TYPE,
        format!(
            "reductions in oxmpi take the predefined integer, floating-point, logical, byte and \
             pair types, and derived types of one of them; datatype {datatype_} ({}) is none of \
             these",
            type_name(datatype_)
        ),
    )
}

/// How a reduction's elements reach the kernels.
struct Elements {
    /// Kernel elements per element of the user's type.
    per: usize,
    /// The user's type, when it is not contiguous (the call then goes
    /// through staging buffers).
    packed: Option<Datatype>,
    /// The wide form the staging buffers hold the kernels' pairs in (a
    /// derived type of pairs with `MPI_MINLOC` or `MPI_MAXLOC`).
    wide: Option<Wide>,
}

/// The kernels' view of a reduction over a derived type.
pub(crate) struct Derived {
    /// The kernels' element type.
    pub(crate) element: ElementCode,
    /// The operation.
    pub(crate) op: OpCode,
    /// Kernel elements per element of the type.
    pub(crate) per: usize,
    /// The pair type the elements are pairs of, for `MPI_MINLOC` and
    /// `MPI_MAXLOC`.
    pub(crate) pair: Option<Pair>,
}

/// The kernels' view of a reduction with the predefined operation `op_`
/// over the type `t` (handle `datatype_`) that is no predefined type the
/// kernels know: the element type of the one primitive the type's values
/// are of (of the pair type they are pairs of, for `MPI_MINLOC` and
/// `MPI_MAXLOC`), the operation, and how many of those one element holds.
///
/// # Errors
///
/// `MPI_ERR_TYPE` for a type with values of several primitives (or none)
/// or of one the kernels do not take, and for `MPI_MINLOC` and
/// `MPI_MAXLOC` over a type that is not made of pairs of one pair type;
/// `MPI_ERR_OP` for an unknown operation.
#[cold]
pub(crate) fn derived_element(t: &Typed, datatype_: c_int, op_: c_int) -> Result<Derived, Fail> {
    let Typed::General(entry) = t else {
        return Err(no_reduction(datatype_));
    };
    let code = op(op_)?;
    let dt = &entry.dt;
    if matches!(code, OpCode::MinLoc | OpCode::MaxLoc) {
        let element = dt
            .pairs()
            .and_then(|(pair, n)| Some((crate::handles::element_of_pair(pair)?, pair, n)));
        let Some((element, pair, per)) = element else {
            return Err(Fail::new(
                ERR_TYPE,
                format!(
                    "MPI_MINLOC and MPI_MAXLOC reduce pairs of a value and an int index: the \
                     pair types MPI_2INT, MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT and \
                     MPI_SHORT_INT, and derived types whose values are pairs of one of them; \
                     datatype {datatype_} ({}) is none of these",
                    type_name(datatype_)
                ),
            ));
        };
        return Ok(Derived {
            element,
            op: code,
            per,
            pair: Some(pair),
        });
    }
    let Some(prim) = dt.primitive() else {
        return Err(Fail::new(
            ERR_TYPE,
            format!(
                "a predefined operation reduces a derived type when all its values are of one \
                 predefined type; datatype {datatype_} ({}) holds values of several types (or \
                 none); reduce it with an operation of the program's own (MPI_Op_create)",
                type_name(datatype_)
            ),
        ));
    };
    let Some(element) = crate::handles::element_of(prim) else {
        return Err(Fail::new(
            ERR_TYPE,
            format!(
                "datatype {datatype_} ({}) is made of {}, which reductions in oxmpi do not take",
                type_name(datatype_),
                prim.name()
            ),
        ));
    };
    Ok(Derived {
        element,
        op: code,
        per: dt.size() / prim.size(),
        pair: None,
    })
}

/// A reduction of `count` elements of `datatype_` with `op_`, from
/// `sendbuf` (or `MPI_IN_PLACE`) into `recvbuf`.
#[inline(always)]
fn reduction(
    p: &mut Prepared,
    kind: CollKind,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: usize,
    datatype_: c_int,
    op_: c_int,
) -> Result<Elements, Fail> {
    p.call.kind = kind;
    let t = typed(datatype_)?;
    let e = if let Some(u) = crate::ops::user(op_)? {
        let (size, packed) = match Unit::of(&t)? {
            Unit::Bytes(b) => (b, None),
            Unit::Packed(dt) => (dt.size(), Some(dt)),
        };
        let ctx = Box::new(UserCtx {
            func: u.func,
            datatype: datatype_,
            packed: packed.clone(),
        });
        p.call.op = OpCode::User;
        p.call.element = ElementCode::User;
        p.call.user = UserOp {
            func: Some(crate::ops::call_user),
            ctx: std::ptr::from_ref::<UserCtx>(&ctx).cast_mut().cast(),
            elem_size: size,
            commutative: u.commute,
        };
        p.keep.user = Some(ctx);
        Elements {
            per: 1,
            packed,
            wide: None,
        }
    } else if let Some(element) = t.element() {
        p.call.element = element;
        p.call.op = op(op_)?;
        Elements {
            per: 1,
            packed: None,
            wide: None,
        }
    } else {
        let d = derived_element(&t, datatype_, op_)?;
        p.call.element = d.element;
        p.call.op = d.op;
        // A contiguous type of pairs is already in the kernels' form
        // (only MPI_2INT's pairs can be: the others mix primitives).
        let packed = match Unit::of(&t)? {
            Unit::Bytes(_) => None,
            Unit::Packed(dt) => Some(dt),
        };
        Elements {
            per: d.per,
            wide: packed.as_ref().and(d.pair).map(Wide::of),
            packed,
        }
    };
    p.call.count = times("count", count, e.per)?;
    p.call.send = buffer(sendbuf);
    p.call.recv = recvbuf.cast();
    Ok(e)
}

/// Whether a rank gets a reduction's result.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Gets {
    /// It does.
    Result,
    /// It does not (a reduce off the root).
    Nothing,
    /// MPI leaves it undefined (rank 0 of an exscan): the buffer is left
    /// as it was.
    Undefined,
}

/// Stages a reduction over the non-contiguous `dt`: its input of `input`
/// elements (from `sendbuf`, or in place from `recvbuf`) is packed, and
/// its result of `result` elements arrives in a staging buffer that is
/// unpacked into `recvbuf` where this rank `gets` it. The staging
/// buffers hold pairs in the `wide` form, if there is one.
///
/// # Safety
///
/// The input's elements are readable.
unsafe fn stage_reduction(
    p: &mut Prepared,
    dt: &Datatype,
    wide: Option<Wide>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    input: usize,
    result: usize,
    gets: Gets,
) -> Result<(), Fail> {
    let in_place = sendbuf == IN_PLACE;
    if !in_place {
        let (blocks, total) = coll_staging::uniform("count", dt, 1, input)?;
        let staged = p.staged();
        // SAFETY: the caller's promise.
        p.call.send = unsafe {
            match wide {
                None => staged.pack(dt, sendbuf.cast(), &blocks, total),
                Some(w) => staged.pack_wide(dt, w, sendbuf.cast(), &blocks, total),
            }
        };
    }
    if gets == Gets::Nothing {
        p.call.recv = std::ptr::null_mut();
        return Ok(());
    }
    let len = if in_place { input } else { result };
    let (blocks, total) = coll_staging::uniform("count", dt, 1, len)?;
    let mut u = Unpack::new(dt, recvbuf.cast(), blocks, total);
    if let Some(w) = wide {
        u = u.widened(w);
    }
    if in_place {
        // SAFETY: in place, the input is in `recvbuf` (the caller's
        // promise).
        unsafe { u.prefill(|_| true) };
        u.result_only(result);
    }
    if gets == Gets::Undefined {
        u = u.input_only();
    }
    p.call.recv = p.staged().receive(u);
    Ok(())
}

/// `MPI_Barrier`.
#[inline(always)]
pub fn barrier(p: &mut Prepared, _comm: c_int) -> Result<(), Fail> {
    p.call.kind = CollKind::Barrier;
    Ok(())
}

/// `MPI_Reduce`.
///
/// # Safety
///
/// The buffers hold `count_` elements of `datatype_` (the receive buffer
/// at the root).
#[inline(always)]
pub unsafe fn reduce(
    p: &mut Prepared,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count_: c_int,
    datatype_: c_int,
    op_: c_int,
    root: c_int,
    comm_: c_int,
) -> Result<(), Fail> {
    let n = count("count", count_)?;
    let e = reduction(p, CollKind::Reduce, sendbuf, recvbuf, n, datatype_, op_)?;
    p.call.root = root_of(root)?;
    if let Some(dt) = e.packed {
        let gets = if place(comm_)?.1 as c_int == root {
            Gets::Result
        } else {
            Gets::Nothing
        };
        // SAFETY: the caller's promise.
        unsafe { stage_reduction(p, &dt, e.wide, sendbuf, recvbuf, n, n, gets) }?;
    }
    Ok(())
}

/// `MPI_Allreduce`, `MPI_Scan` and `MPI_Exscan` (`kind`).
///
/// # Safety
///
/// As [`reduce`], at every rank.
#[inline(always)]
unsafe fn everywhere(
    p: &mut Prepared,
    kind: CollKind,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count_: c_int,
    datatype_: c_int,
    op_: c_int,
    comm_: c_int,
) -> Result<(), Fail> {
    let n = count("count", count_)?;
    let e = reduction(p, kind, sendbuf, recvbuf, n, datatype_, op_)?;
    if let Some(dt) = e.packed {
        let gets = if kind == CollKind::Exscan && place(comm_)?.1 == 0 {
            Gets::Undefined
        } else {
            Gets::Result
        };
        // SAFETY: the caller's promise.
        unsafe { stage_reduction(p, &dt, e.wide, sendbuf, recvbuf, n, n, gets) }?;
    }
    Ok(())
}

/// `MPI_Allreduce`.
///
/// # Safety
///
/// As [`reduce`], at every rank.
#[inline(always)]
pub unsafe fn allreduce(
    p: &mut Prepared,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count_: c_int,
    datatype_: c_int,
    op_: c_int,
    comm_: c_int,
) -> Result<(), Fail> {
    // SAFETY: the caller's promise.
    unsafe {
        everywhere(
            p,
            CollKind::Allreduce,
            sendbuf,
            recvbuf,
            count_,
            datatype_,
            op_,
            comm_,
        )
    }
}

/// `MPI_Scan`.
///
/// # Safety
///
/// As [`reduce`], at every rank.
pub unsafe fn scan(
    p: &mut Prepared,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count_: c_int,
    datatype_: c_int,
    op_: c_int,
    comm_: c_int,
) -> Result<(), Fail> {
    // SAFETY: the caller's promise.
    unsafe {
        everywhere(
            p,
            CollKind::Scan,
            sendbuf,
            recvbuf,
            count_,
            datatype_,
            op_,
            comm_,
        )
    }
}

/// `MPI_Exscan`.
///
/// # Safety
///
/// As [`reduce`], at every rank.
pub unsafe fn exscan(
    p: &mut Prepared,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count_: c_int,
    datatype_: c_int,
    op_: c_int,
    comm_: c_int,
) -> Result<(), Fail> {
    // SAFETY: the caller's promise.
    unsafe {
        everywhere(
            p,
            CollKind::Exscan,
            sendbuf,
            recvbuf,
            count_,
            datatype_,
            op_,
            comm_,
        )
    }
}

/// `MPI_Reduce_scatter_block`.
///
/// # Safety
///
/// The send buffer (the receive buffer in place) holds `recvcount_`
/// elements of `datatype_` per rank, the receive buffer `recvcount_`.
pub unsafe fn reduce_scatter_block(
    p: &mut Prepared,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount_: c_int,
    datatype_: c_int,
    op_: c_int,
    comm_: c_int,
) -> Result<(), Fail> {
    let n = count("recvcount", recvcount_)?;
    let kind = CollKind::ReduceScatterBlock;
    let e = reduction(p, kind, sendbuf, recvbuf, n, datatype_, op_)?;
    if let Some(dt) = e.packed {
        let all = times("recvcount", n, place(comm_)?.0)?;
        // SAFETY: the caller's promise.
        unsafe { stage_reduction(p, &dt, e.wide, sendbuf, recvbuf, all, n, Gets::Result) }?;
    }
    Ok(())
}

/// `MPI_Reduce_scatter`: `recvcounts` (elements, one per rank).
///
/// # Safety
///
/// `recvcounts` holds one int per rank; the send buffer (the receive
/// buffer in place) holds their sum of elements of `datatype_`, the
/// receive buffer this rank's count.
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
    let mut counts = unsafe { scaled("recvcounts", recvcounts, n, 1) }?;
    let mine = counts[me];
    let kind = CollKind::ReduceScatter;
    let e = reduction(p, kind, sendbuf, recvbuf, mine, datatype_, op_)?;
    if let Some(dt) = &e.packed {
        let total = counts.iter().try_fold(0usize, |a, &c| a.checked_add(c));
        let total = total.ok_or_else(|| {
            Fail::new(
                crate::errors::ERR_COUNT,
                "the sum of recvcounts passes the address space",
            )
        })?;
        // SAFETY: the caller's promise.
        unsafe { stage_reduction(p, dt, e.wide, sendbuf, recvbuf, total, mine, Gets::Result) }?;
    }
    if e.per != 1 {
        for c in counts.iter_mut() {
            *c = times("recvcounts", *c, e.per)?;
        }
    }
    p.call.counts = p.slice(counts);
    Ok(())
}

/// Runs `p` on `comm_`, and finishes it (a staged receive side is
/// unpacked).
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
    // SAFETY: the call completed; the user's buffers are the caller's
    // promise.
    unsafe { p.keep.finish() };
    Ok(())
}

/// Starts `p` on `comm_` and writes its request to `request`.
///
/// # Safety
///
/// The call's buffers stay valid until the request completes; `request`
/// is valid for a write.
pub unsafe fn start(comm_: c_int, p: Prepared, request: *mut c_int) -> Result<(), Fail> {
    checked_out("request", request)?;
    let rt = runtime()?;
    let c = comm(comm_)?;
    // SAFETY: the caller's promise; the arrays and staging buffers the
    // call borrows go into the request, which keeps them until it
    // completes (and then finishes the call: `requests::finish`).
    let id = unsafe { rt.start_collective(c, &p.call) }?;
    let h = requests::insert(Pending::Coll(id, p.keep));
    // SAFETY: not null; the caller's promise.
    unsafe { request.write(h) };
    Ok(())
}
