//! The builders of the collectives that move data without reducing it:
//! bcast, gather(v), scatter(v), allgather(v), alltoall(v). A side in a
//! contiguous type is the user's memory; a side in another type is
//! packed into (send) or staged in (receive) a buffer the call keeps
//! (`coll_staging.rs`), its counts and displacements then bytes of that
//! buffer's packed layout.

// The builders take MPI's arguments as the C functions do.
#![allow(clippy::too_many_arguments)]

use crate::coll::{buffer, place, root_of, scaled, times, Prepared, Unit};
use crate::coll_staging::{self, Block, Unpack};
use crate::errors::{Fail, ERR_TRUNCATE};
use crate::handles::{count, typed};
use crate::IN_PLACE;
use oxmpi_datatype::Datatype;
use oxmpi_mpi_core::coll::CollKind;
use std::ffi::{c_int, c_void};

/// One side of a call: `count` elements of a type.
struct Side {
    /// Elements (per rank).
    count: usize,
    /// How they lie.
    unit: Unit,
}

impl Side {
    /// `n` elements of type handle `t`, `what` naming the count.
    #[inline(always)]
    fn new(what: &'static str, n: c_int, t: c_int) -> Result<(Side, &'static str), Fail> {
        Ok((
            Side {
                count: count(what, n)?,
                unit: Unit::of(&typed(t)?)?,
            },
            what,
        ))
    }

    /// Whether the side goes through a staging buffer.
    #[inline(always)]
    fn packed(&self) -> bool {
        matches!(self.unit, Unit::Packed(_))
    }
}

/// Which blocks of a staged receive side hold input before the call
/// (in place).
#[derive(Clone, Copy)]
enum Prefill {
    /// None.
    Nothing,
    /// This rank's own.
    Own(usize),
    /// All of them.
    All,
}

impl Prepared {
    /// Where the call reads `ranks` blocks of `s` (one after another) at
    /// the user's `buf`.
    ///
    /// # Safety
    ///
    /// The elements are readable.
    unsafe fn outgoing(
        &mut self,
        what: &str,
        buf: *const c_void,
        ranks: usize,
        s: &Side,
    ) -> Result<*const u8, Fail> {
        match &s.unit {
            Unit::Bytes(_) => Ok(buf.cast()),
            Unit::Packed(dt) => {
                let (blocks, total) = coll_staging::uniform(what, dt, ranks, s.count)?;
                // SAFETY: the caller's promise.
                Ok(unsafe { self.staged().pack(dt, buf.cast(), &blocks, total) })
            }
        }
    }

    /// Where the call writes `ranks` blocks of `s` (one after another)
    /// for the user's `buf`.
    ///
    /// # Safety
    ///
    /// The blocks `prefill` names are readable.
    unsafe fn incoming(
        &mut self,
        what: &str,
        buf: *mut c_void,
        ranks: usize,
        s: &Side,
        prefill: Prefill,
    ) -> Result<*mut u8, Fail> {
        match &s.unit {
            Unit::Bytes(_) => Ok(buf.cast()),
            Unit::Packed(dt) => {
                let (blocks, total) = coll_staging::uniform(what, dt, ranks, s.count)?;
                // SAFETY: the caller's promise.
                Ok(unsafe { self.stage(dt, buf, blocks, total, prefill) })
            }
        }
    }

    /// Stages a receive side of `blocks` of `dt` at `buf` in `total`
    /// bytes, the blocks `prefill` names packed into it first.
    ///
    /// # Safety
    ///
    /// As [`Prepared::incoming`].
    unsafe fn stage(
        &mut self,
        dt: &Datatype,
        buf: *mut c_void,
        blocks: Vec<Block>,
        total: usize,
        prefill: Prefill,
    ) -> *mut u8 {
        let mut u = Unpack::new(dt, buf.cast(), blocks, total);
        match prefill {
            Prefill::Nothing => {}
            // SAFETY: the caller's promise.
            Prefill::Own(me) => unsafe { u.prefill(|i| i == me) },
            // SAFETY: as above.
            Prefill::All => unsafe { u.prefill(|_| true) },
        }
        self.staged().receive(u)
    }
}

/// The bytes per rank of a data-moving collective, from whichever side
/// the caller's rank gives (both must agree where both count).
fn per_rank(
    send: Option<&(Side, &'static str)>,
    recv: Option<&(Side, &'static str)>,
) -> Result<usize, Fail> {
    let bytes = |(s, what): &(Side, &'static str)| times(what, s.count, s.unit.size());
    let s = send.map(bytes).transpose()?;
    let r = recv.map(bytes).transpose()?;
    match (s, r) {
        (Some(a), Some(b)) if a != b => Err(Fail::new(
            ERR_TRUNCATE,
            format!(
                "the send side moves {a} bytes per rank and the receive side {b}; they must match \
                 (the types' sizes times the counts)"
            ),
        )),
        (Some(a), _) | (None, Some(a)) => Ok(a),
        (None, None) => Ok(0),
    }
}

/// `MPI_Bcast`.
///
/// # Safety
///
/// `buf` holds `count_` elements of `datatype_`.
#[inline(always)]
pub unsafe fn bcast(
    p: &mut Prepared,
    buf: *mut c_void,
    count_: c_int,
    datatype_: c_int,
    root: c_int,
    comm_: c_int,
) -> Result<(), Fail> {
    p.call.kind = CollKind::Bcast;
    p.call.root = root_of(root)?;
    let (s, what) = Side::new("count", count_, datatype_)?;
    p.call.count = times(what, s.count, s.unit.size())?;
    let at = match &s.unit {
        Unit::Bytes(_) => buf.cast(),
        Unit::Packed(dt) => {
            let (blocks, total) = coll_staging::uniform(what, dt, 1, s.count)?;
            let mut u = Unpack::new(dt, buf.cast(), blocks, total);
            if place(comm_)?.1 as c_int == root {
                // SAFETY: the root's elements are readable (the caller's
                // promise).
                unsafe { u.prefill(|_| true) };
                u = u.input_only();
            }
            p.staged().receive(u)
        }
    };
    p.call.send = at;
    p.call.recv = at;
    Ok(())
}

/// `MPI_Gather` (`scatter` false) and `MPI_Scatter` (true): every rank
/// sends and the root receives, or the other way; in place at the root,
/// its own side is not given.
///
/// # Safety
///
/// The buffers hold what MPI says they hold.
unsafe fn rooted(
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
    let (n, me) = place(comm_)?;
    let at_root = me as c_int == root;
    let (sends, recvs) = if scatter {
        (at_root, true)
    } else {
        (true, at_root)
    };
    let send_given = sends && sendbuf != IN_PLACE;
    let recv_given = recvs && recvbuf.cast_const() != IN_PLACE;
    let send = send_given
        .then(|| Side::new("sendcount", sendcount, sendtype))
        .transpose()?;
    let recv = recv_given
        .then(|| Side::new("recvcount", recvcount, recvtype))
        .transpose()?;
    p.call.kind = kind;
    p.call.count = per_rank(send.as_ref(), recv.as_ref())?;
    p.call.root = root_of(root)?;
    // The root's side holds a block per rank.
    let (send_blocks, recv_blocks) = if scatter { (n, 1) } else { (1, n) };
    p.call.send = match &send {
        // SAFETY: the caller's promise.
        Some((s, what)) => unsafe { p.outgoing(what, sendbuf, send_blocks, s) }?,
        None => std::ptr::null(),
    };
    p.call.recv = match &recv {
        Some((r, what)) => {
            // A gather in place: the root's own block is its input.
            let prefill = if !scatter && sendbuf == IN_PLACE {
                Prefill::Own(me)
            } else {
                Prefill::Nothing
            };
            // SAFETY: the caller's promise.
            unsafe { p.incoming(what, recvbuf, recv_blocks, r, prefill) }?
        }
        None => std::ptr::null_mut(),
    };
    Ok(())
}

/// `MPI_Gather`.
///
/// # Safety
///
/// As [`rooted`].
pub unsafe fn gather(
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
    // SAFETY: the caller's promise.
    unsafe {
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
}

/// `MPI_Scatter`.
///
/// # Safety
///
/// As [`rooted`].
pub unsafe fn scatter(
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
    // SAFETY: the caller's promise.
    unsafe {
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
}

/// `MPI_Allgather` and `MPI_Alltoall`.
///
/// # Safety
///
/// The buffers hold what MPI says they hold.
unsafe fn everyone(
    p: &mut Prepared,
    kind: CollKind,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: c_int,
    comm_: c_int,
) -> Result<(), Fail> {
    let in_place = sendbuf == IN_PLACE;
    let send = (!in_place)
        .then(|| Side::new("sendcount", sendcount, sendtype))
        .transpose()?;
    let recv = Side::new("recvcount", recvcount, recvtype)?;
    p.call.kind = kind;
    p.call.count = per_rank(send.as_ref(), Some(&recv))?;
    if !recv.0.packed() && !send.as_ref().is_some_and(|s| s.0.packed()) {
        p.call.send = buffer(sendbuf);
        p.call.recv = recvbuf.cast();
        return Ok(());
    }
    let (n, me) = place(comm_)?;
    let alltoall = kind == CollKind::Alltoall;
    p.call.send = match &send {
        // SAFETY: the caller's promise.
        Some((s, what)) => unsafe { p.outgoing(what, sendbuf, if alltoall { n } else { 1 }, s) }?,
        None => std::ptr::null(),
    };
    // In place, an allgather's input is this rank's own block, an
    // alltoall's the whole buffer.
    let prefill = match (in_place, alltoall) {
        (false, _) => Prefill::Nothing,
        (true, false) => Prefill::Own(me),
        (true, true) => Prefill::All,
    };
    // SAFETY: the caller's promise.
    p.call.recv = unsafe { p.incoming(recv.1, recvbuf, n, &recv.0, prefill) }?;
    Ok(())
}

/// `MPI_Allgather`.
///
/// # Safety
///
/// As [`everyone`].
pub unsafe fn allgather(
    p: &mut Prepared,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: c_int,
    comm_: c_int,
) -> Result<(), Fail> {
    // SAFETY: the caller's promise.
    unsafe {
        everyone(
            p,
            CollKind::Allgather,
            sendbuf,
            sendcount,
            sendtype,
            recvbuf,
            recvcount,
            recvtype,
            comm_,
        )
    }
}

/// `MPI_Alltoall`.
///
/// # Safety
///
/// As [`everyone`].
pub unsafe fn alltoall(
    p: &mut Prepared,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: c_int,
    comm_: c_int,
) -> Result<(), Fail> {
    // SAFETY: the caller's promise.
    unsafe {
        everyone(
            p,
            CollKind::Alltoall,
            sendbuf,
            sendcount,
            sendtype,
            recvbuf,
            recvcount,
            recvtype,
            comm_,
        )
    }
}

/// The blocks of a `v` side: its byte counts and displacements for the
/// call, and for a non-contiguous type the staging layout (type, blocks,
/// bytes).
struct VSide {
    counts: Box<[usize]>,
    displs: Box<[usize]>,
    staged: Option<(Datatype, Vec<Block>, usize)>,
}

/// The `v` side of `n` blocks of type handle `t`, from the C arrays
/// `counts` and `displs` (in elements and extents of `t`) named `names`.
///
/// # Safety
///
/// `counts` and `displs` hold `n` ints.
unsafe fn v_side(
    names: (&str, &str),
    counts: *const c_int,
    displs: *const c_int,
    n: usize,
    t: c_int,
) -> Result<VSide, Fail> {
    match Unit::of(&typed(t)?)? {
        // SAFETY: the caller's promise.
        Unit::Bytes(unit) => unsafe {
            Ok(VSide {
                counts: scaled(names.0, counts, n, unit)?,
                displs: scaled(names.1, displs, n, unit)?,
                staged: None,
            })
        },
        Unit::Packed(dt) => {
            // SAFETY: the caller's promise.
            let (c, d) = unsafe {
                (
                    scaled(names.0, counts, n, 1)?,
                    scaled(names.1, displs, n, 1)?,
                )
            };
            let (blocks, total) = coll_staging::varying(names.1, &dt, &c, &d)?;
            let (counts, displs) = coll_staging::byte_layout(&dt, &blocks);
            Ok(VSide {
                counts,
                displs,
                staged: Some((dt, blocks, total)),
            })
        }
    }
}

impl Prepared {
    /// Where the call reads the `v` side `v` at the user's `buf`.
    ///
    /// # Safety
    ///
    /// The side's elements are readable.
    unsafe fn v_outgoing(&mut self, buf: *const c_void, v: &VSide) -> *const u8 {
        match &v.staged {
            None => buffer(buf),
            // SAFETY: the caller's promise.
            Some((dt, blocks, total)) => unsafe {
                self.staged().pack(dt, buf.cast(), blocks, *total)
            },
        }
    }

    /// Where the call writes the `v` side `v` for the user's `buf`.
    ///
    /// # Safety
    ///
    /// The blocks `prefill` names are readable.
    unsafe fn v_incoming(&mut self, buf: *mut c_void, v: &mut VSide, prefill: Prefill) -> *mut u8 {
        match v.staged.take() {
            None => buf.cast(),
            // SAFETY: the caller's promise.
            Some((dt, blocks, total)) => unsafe { self.stage(&dt, buf, blocks, total, prefill) },
        }
    }

    /// Keeps the byte counts and displacements of `v` as the call's
    /// receive (or `scatterv`'s send) arrays.
    fn v_arrays(&mut self, v: VSide) {
        self.call.counts = self.slice(v.counts);
        self.call.displs = self.slice(v.displs);
    }
}

/// The bytes of a non-`v` side of a `v` collective.
#[inline(always)]
fn side_bytes(what: &'static str, n: c_int, t: c_int) -> Result<(Side, usize), Fail> {
    let (s, what) = Side::new(what, n, t)?;
    let bytes = times(what, s.count, s.unit.size())?;
    Ok((s, bytes))
}

/// `MPI_Gatherv`: the root's counts and displacements are in elements of
/// `recvtype`; in place, the root's block is already in `recvbuf`.
///
/// # Safety
///
/// At the root, `recvcounts` and `displs` hold one int per rank; the
/// buffers hold what MPI says they hold.
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
    let send = if in_place {
        None
    } else {
        Some(side_bytes("sendcount", sendcount, sendtype)?)
    };
    if me as c_int == root {
        // SAFETY: the caller's promise.
        let mut v = unsafe { v_side(("recvcounts", "displs"), recvcounts, displs, n, recvtype) }?;
        p.call.count = match &send {
            Some((_, bytes)) => *bytes,
            None => v.counts[me],
        };
        let prefill = if in_place {
            Prefill::Own(me)
        } else {
            Prefill::Nothing
        };
        // SAFETY: the caller's promise.
        p.call.recv = unsafe { p.v_incoming(recvbuf, &mut v, prefill) };
        p.v_arrays(v);
    } else if let Some((_, bytes)) = &send {
        p.call.count = *bytes;
    }
    p.call.send = match &send {
        // SAFETY: the caller's promise.
        Some((s, _)) => unsafe { p.outgoing("sendcount", sendbuf, 1, s) }?,
        None => std::ptr::null(),
    };
    Ok(())
}

/// `MPI_Scatterv`: the root's counts and displacements are in elements
/// of `sendtype`; in place, the root's block stays in `sendbuf`.
///
/// # Safety
///
/// At the root, `sendcounts` and `displs` hold one int per rank; the
/// buffers hold what MPI says they hold.
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
    let recv = if in_place {
        None
    } else {
        Some(side_bytes("recvcount", recvcount, recvtype)?)
    };
    if me as c_int == root {
        // SAFETY: the caller's promise.
        let v = unsafe { v_side(("sendcounts", "displs"), sendcounts, displs, n, sendtype) }?;
        p.call.count = match &recv {
            Some((_, bytes)) => *bytes,
            None => v.counts[me],
        };
        // SAFETY: the caller's promise.
        p.call.send = unsafe { p.v_outgoing(sendbuf, &v) };
        p.v_arrays(v);
    } else if let Some((_, bytes)) = &recv {
        p.call.count = *bytes;
    }
    p.call.recv = match &recv {
        // SAFETY: the caller's promise.
        Some((r, _)) => unsafe { p.incoming("recvcount", recvbuf, 1, r, Prefill::Nothing) }?,
        None => std::ptr::null_mut(),
    };
    Ok(())
}

/// `MPI_Allgatherv`: counts and displacements in elements of `recvtype`.
///
/// # Safety
///
/// `recvcounts` and `displs` hold one int per rank; the buffers hold what
/// MPI says they hold.
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
    // SAFETY: the caller's promise.
    let mut v = unsafe { v_side(("recvcounts", "displs"), recvcounts, displs, n, recvtype) }?;
    p.call.kind = CollKind::Allgatherv;
    let in_place = sendbuf == IN_PLACE;
    if in_place {
        p.call.count = v.counts[me];
        p.call.send = std::ptr::null();
    } else {
        let (s, bytes) = side_bytes("sendcount", sendcount, sendtype)?;
        p.call.count = bytes;
        // SAFETY: the caller's promise.
        p.call.send = unsafe { p.outgoing("sendcount", sendbuf, 1, &s) }?;
    }
    let prefill = if in_place {
        Prefill::Own(me)
    } else {
        Prefill::Nothing
    };
    // SAFETY: the caller's promise.
    p.call.recv = unsafe { p.v_incoming(recvbuf, &mut v, prefill) };
    p.v_arrays(v);
    Ok(())
}

/// `MPI_Alltoallv`: each side's counts and displacements in elements of
/// its type; in place, the send side is the receive side.
///
/// # Safety
///
/// The four arrays hold one int per rank (the send side's are not read
/// in place); the buffers hold what MPI says they hold.
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
    // SAFETY: the caller's promise.
    let mut r = unsafe { v_side(("recvcounts", "rdispls"), recvcounts, rdispls, n, recvtype) }?;
    let in_place = sendbuf == IN_PLACE;
    let (sc, sd) = if in_place {
        (r.counts.clone(), r.displs.clone())
    } else {
        // SAFETY: the caller's promise.
        let s = unsafe { v_side(("sendcounts", "sdispls"), sendcounts, sdispls, n, sendtype) }?;
        // SAFETY: the caller's promise.
        p.call.send = unsafe { p.v_outgoing(sendbuf, &s) };
        (s.counts, s.displs)
    };
    let prefill = if in_place {
        Prefill::All
    } else {
        Prefill::Nothing
    };
    p.call.kind = CollKind::Alltoallv;
    p.call.send_counts = p.slice(sc);
    p.call.send_displs = p.slice(sd);
    // SAFETY: the caller's promise.
    p.call.recv = unsafe { p.v_incoming(recvbuf, &mut r, prefill) };
    p.v_arrays(r);
    Ok(())
}
