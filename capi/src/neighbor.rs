//! The neighborhood collectives (`MPI_Neighbor_*` and their `I` forms)
//! over distributed graphs (`dist_graph.rs`), MPI-1 graphs and Cartesian
//! communicators, and `MPI_Alltoallw` (`MPI_Ialltoallw`).
//!
//! These run over point-to-point on a shadow of the communicator: a
//! duplicate made (collectively) the first time one of them runs on it,
//! so their messages never meet the program's. A non-blocking one is one
//! request of several parts.

use crate::buffers::{Incoming, Outgoing};
use crate::dist_graph::Neighbors;
use crate::errors::{run, Fail, ERR_ARG, ERR_TOPOLOGY};
use crate::handles::{array as ints, checked_out, comm, count, put, typed, Typed};
use crate::requests::{self, Pending};
use crate::{runtime, PROC_NULL};
use oxmpi_mpi_core::{Comm, SendMode};
use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::Mutex;

/// Shadows by communicator handle.
static SHADOWS: Mutex<Option<HashMap<c_int, Comm>>> = Mutex::new(None);

/// The shadow of `comm_` (made now if it has none: every member reaches
/// this point in the same collective call).
fn shadow(comm_: c_int) -> Result<Comm, Fail> {
    if let Some(c) = SHADOWS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .and_then(|m| m.get(&comm_).copied())
    {
        return Ok(c);
    }
    let c = runtime()?.comm_dup(comm(comm_)?)?;
    SHADOWS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(comm_, c);
    Ok(c)
}

/// Frees the shadow of a freed communicator.
pub fn forget(comm_: c_int) -> Result<(), Fail> {
    let s = SHADOWS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_mut()
        .and_then(|m| m.remove(&comm_));
    if let Some(c) = s {
        runtime()?.comm_free(c)?;
    }
    Ok(())
}

/// This process's (sources, destinations) in `comm_`.
fn neighbors(comm_: c_int) -> Result<Neighbors, Fail> {
    if let Some(g) = crate::dist_graph::neighbors_of(comm_) {
        return Ok(g);
    }
    if let Some(n) = crate::graph::my_neighbors(comm_)? {
        return Ok((n.clone(), n));
    }
    match crate::topo::cart_neighbors(comm_)? {
        Some(n) => Ok((n.clone(), n)),
        None => Err(Fail::new(
            ERR_TOPOLOGY,
            format!("communicator {comm_} has no topology; neighborhood collectives need a Cartesian or distributed graph one"),
        )),
    }
}

/// One block to send or receive: the peer, the address, the count of
/// elements and their type.
struct Block {
    peer: c_int,
    at: usize,
    count: usize,
    ty: c_int,
}

/// Starts the receives then the sends of an exchange on `comm_`'s
/// shadow; the parts of one request.
///
/// # Safety
///
/// Every block's memory is valid until the parts complete.
unsafe fn exchange(
    comm_: c_int,
    recvs: Vec<Block>,
    sends: Vec<Block>,
) -> Result<Vec<Pending>, Fail> {
    let rt = runtime()?;
    let c = shadow(comm_)?;
    let mut parts = Vec::with_capacity(recvs.len() + sends.len());
    // The tag orders the blocks between one pair of processes: the i-th
    // block a process sends to a peer matches the i-th it receives from
    // it (for the same peer listed twice).
    let mut seen: HashMap<c_int, c_int> = HashMap::new();
    for b in recvs.into_iter().filter(|b| b.peer != PROC_NULL) {
        let tag = {
            let t = seen.entry(b.peer).or_insert(0);
            *t += 1;
            *t - 1
        };
        let mut inc = Incoming::new(b.at as *mut c_void, b.count, &typed(b.ty)?)?;
        let (p, len) = inc.bytes();
        // SAFETY: the block's memory (the caller's promise) or `inc`'s
        // staging, which the part keeps.
        let id = unsafe { rt.irecv(c, b.peer, tag, p, len) }?;
        parts.push(Pending::Recv(id, inc));
    }
    seen.clear();
    for b in sends.into_iter().filter(|b| b.peer != PROC_NULL) {
        let tag = {
            let t = seen.entry(b.peer).or_insert(0);
            *t += 1;
            *t - 1
        };
        // SAFETY: the block's memory (the caller's promise).
        let out = unsafe { Outgoing::new(b.at as *const c_void, b.count, &typed(b.ty)?) }?;
        let (p, len) = out.bytes();
        // SAFETY: as above, or `out`'s copy, which the part keeps.
        let id = unsafe { rt.isend(c, b.peer, tag, p, len, SendMode::Standard) }?;
        parts.push(Pending::Send(id, out));
    }
    Ok(parts)
}

/// The extent of `count` elements of type handle `t`, in bytes.
fn span(t: c_int, count: usize) -> Result<usize, Fail> {
    let ty: Typed = typed(t)?;
    let unit = match &ty {
        Typed::Plain { size, .. } => *size as isize,
        Typed::General(e) => e.dt.extent(),
    };
    Ok((unit.max(0) as usize) * count)
}

/// Runs `parts` to completion (blocking form) or makes them the request
/// `request` (the `I` form, when `request` is not null).
///
/// # Safety
///
/// `request` is null or valid for a write.
unsafe fn finish(parts: Vec<Pending>, request: Option<*mut c_int>) -> Result<(), Fail> {
    match request {
        None => requests::wait(runtime()?, Pending::Many(parts)).map(drop),
        Some(r) => {
            let h = requests::insert(Pending::Many(parts));
            // SAFETY: the caller's promise.
            unsafe { put("request", r, h) }
        }
    }
}

/// The neighborhood allgather: the same block to every destination, one
/// block from each source (the `v` form with `counts`/`displs`).
///
/// # Safety
///
/// The buffers hold what the counts say.
#[allow(clippy::too_many_arguments)]
unsafe fn allgather(
    comm_: c_int,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: c_int,
    recvbuf: *mut c_void,
    v: Option<(*const c_int, *const c_int)>,
    recvcount: c_int,
    recvtype: c_int,
    request: Option<*mut c_int>,
) -> Result<(), Fail> {
    let (sources, dests) = neighbors(comm_)?;
    let sc = count("sendcount", sendcount)?;
    let recvs = match v {
        None => {
            let rc = count("recvcount", recvcount)?;
            let stride = span(recvtype, rc)?;
            sources
                .iter()
                .enumerate()
                .map(|(i, &peer)| Block {
                    peer,
                    at: recvbuf as usize + i * stride,
                    count: rc,
                    ty: recvtype,
                })
                .collect()
        }
        Some((counts, displs)) => {
            // SAFETY: one entry per source (the caller's promise).
            let (c, d) = unsafe {
                (
                    ints("recvcounts", counts, sources.len())?,
                    ints("displs", displs, sources.len())?,
                )
            };
            let unit = span(recvtype, 1)?;
            let mut blocks = Vec::with_capacity(sources.len());
            for (i, &peer) in sources.iter().enumerate() {
                let disp = count("displs", d[i])?;
                blocks.push(Block {
                    peer,
                    at: recvbuf as usize + disp * unit,
                    count: count("recvcounts", c[i])?,
                    ty: recvtype,
                });
            }
            blocks
        }
    };
    let sends = dests
        .iter()
        .map(|&peer| Block {
            peer,
            at: sendbuf as usize,
            count: sc,
            ty: sendtype,
        })
        .collect();
    // SAFETY: the caller's promise.
    let parts = unsafe { exchange(comm_, recvs, sends) }?;
    // SAFETY: the caller's promise.
    unsafe { finish(parts, request) }
}

/// Where the blocks of an alltoall-like call start.
#[derive(Clone, Copy)]
enum Displs {
    /// One after another, each `count` elements of one type.
    Packed(c_int, c_int),
    /// `counts[i]` elements at `displs[i]` extents of the one type.
    Units(*const c_int, *const c_int, c_int),
    /// `counts[i]` elements of `types[i]` at `displs[i]` bytes (`MPI_Aint`).
    Bytes(*const c_int, *const isize, *const c_int),
    /// As `Bytes`, with `int` displacements (`MPI_Alltoallw`).
    IntBytes(*const c_int, *const c_int, *const c_int),
}

/// The block of each of `peers` in `buf`.
///
/// # Safety
///
/// The arrays `d` names hold one entry per peer.
unsafe fn blocks(peers: &[c_int], buf: usize, d: Displs) -> Result<Vec<Block>, Fail> {
    let n = peers.len();
    let mut out = Vec::with_capacity(n);
    for (i, &peer) in peers.iter().enumerate() {
        // SAFETY: one entry per peer in each array (the caller's promise).
        let (cnt, ty, off) = unsafe {
            match d {
                Displs::Packed(c, t) => {
                    let c = count("count", c)?;
                    (c, t, (i * span(t, c)?) as isize)
                }
                Displs::Units(c, disp, t) => {
                    let off = ints("displs", disp, n)?[i] as isize * span(t, 1)? as isize;
                    (count("counts", ints("counts", c, n)?[i])?, t, off)
                }
                Displs::Bytes(c, disp, t) => {
                    if disp.is_null() || t.is_null() {
                        return Err(Fail::new(
                            ERR_ARG,
                            "the displacements or the types are a null pointer",
                        ));
                    }
                    (
                        count("counts", ints("counts", c, n)?[i])?,
                        *t.add(i),
                        *disp.add(i),
                    )
                }
                Displs::IntBytes(c, disp, t) => {
                    if t.is_null() {
                        return Err(Fail::new(ERR_ARG, "the types are a null pointer"));
                    }
                    (
                        count("counts", ints("counts", c, n)?[i])?,
                        *t.add(i),
                        ints("displs", disp, n)?[i] as isize,
                    )
                }
            }
        };
        out.push(Block {
            peer,
            at: (buf as isize + off) as usize,
            count: cnt,
            ty,
        });
    }
    Ok(out)
}

/// An alltoall-like exchange with `comm_`'s neighbors (or, for
/// `MPI_Alltoallw`, every rank).
///
/// # Safety
///
/// The buffers and arrays hold what the counts say.
unsafe fn alltoall(
    comm_: c_int,
    peers: Option<Neighbors>,
    sendbuf: *const c_void,
    send: Displs,
    recvbuf: *mut c_void,
    recv: Displs,
    request: Option<*mut c_int>,
) -> Result<(), Fail> {
    let (sources, dests) = match peers {
        Some(p) => p,
        None => neighbors(comm_)?,
    };
    // SAFETY: the caller's promise.
    let (r, s) = unsafe {
        (
            blocks(&sources, recvbuf as usize, recv)?,
            blocks(&dests, sendbuf as usize, send)?,
        )
    };
    // SAFETY: the caller's promise.
    let parts = unsafe { exchange(comm_, r, s) }?;
    // SAFETY: the caller's promise.
    unsafe { finish(parts, request) }
}

/// Every rank of `comm_`, as the peers of `MPI_Alltoallw`.
fn everyone(comm_: c_int) -> Result<Neighbors, Fail> {
    let n = runtime()?.comm_size(comm(comm_)?);
    let all: Vec<c_int> = (0..n).collect();
    Ok((all.clone(), all))
}

/// Defines the blocking and `I` forms of a call over `$body`, which gets
/// the request pointer (`None` for the blocking form).
macro_rules! both {
    ($blocking:ident, $btext:literal, $immediate:ident, $itext:literal, $c:ident,
     ($($arg:ident : $ty:ty),*), |$req:ident| $body:expr) => {
        /// The C function of the same name without its `P`.
        ///
        /// # Safety
        ///
        /// As MPI requires of its arguments.
        #[no_mangle]
        pub unsafe extern "C" fn $blocking($($arg: $ty),*) -> c_int {
            run($btext, $c, || {
                let $req: Option<*mut c_int> = None;
                // SAFETY: the caller's promise.
                unsafe { $body }
            })
        }

        /// The C function of the same name without its `P`.
        ///
        /// # Safety
        ///
        /// As MPI requires of its arguments (the buffers stay valid until
        /// the request completes).
        #[no_mangle]
        pub unsafe extern "C" fn $immediate($($arg: $ty,)* request: *mut c_int) -> c_int {
            run($itext, $c, || {
                checked_out("request", request)?;
                let $req = Some(request);
                // SAFETY: the caller's promise.
                unsafe { $body }
            })
        }
    };
}

both!(PMPI_Neighbor_allgather, "MPI_Neighbor_allgather", PMPI_Ineighbor_allgather, "MPI_Ineighbor_allgather", comm,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcount: c_int,
     recvtype: c_int, comm: c_int),
    |req| allgather(comm, sendbuf, sendcount, sendtype, recvbuf, None, recvcount, recvtype, req));
both!(PMPI_Neighbor_allgatherv, "MPI_Neighbor_allgatherv", PMPI_Ineighbor_allgatherv, "MPI_Ineighbor_allgatherv", comm,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void,
     recvcounts: *const c_int, displs: *const c_int, recvtype: c_int, comm: c_int),
    |req| allgather(comm, sendbuf, sendcount, sendtype, recvbuf, Some((recvcounts, displs)), 0, recvtype, req));
both!(PMPI_Neighbor_alltoall, "MPI_Neighbor_alltoall", PMPI_Ineighbor_alltoall, "MPI_Ineighbor_alltoall", comm,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void, recvcount: c_int,
     recvtype: c_int, comm: c_int),
    |req| alltoall(comm, None, sendbuf, Displs::Packed(sendcount, sendtype), recvbuf,
                   Displs::Packed(recvcount, recvtype), req));
both!(PMPI_Neighbor_alltoallv, "MPI_Neighbor_alltoallv", PMPI_Ineighbor_alltoallv, "MPI_Ineighbor_alltoallv", comm,
    (sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: c_int,
     recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: c_int, comm: c_int),
    |req| alltoall(comm, None, sendbuf, Displs::Units(sendcounts, sdispls, sendtype), recvbuf,
                   Displs::Units(recvcounts, rdispls, recvtype), req));
both!(PMPI_Neighbor_alltoallw, "MPI_Neighbor_alltoallw", PMPI_Ineighbor_alltoallw, "MPI_Ineighbor_alltoallw", comm,
    (sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const isize, sendtypes: *const c_int,
     recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const isize, recvtypes: *const c_int,
     comm: c_int),
    |req| alltoall(comm, None, sendbuf, Displs::Bytes(sendcounts, sdispls, sendtypes), recvbuf,
                   Displs::Bytes(recvcounts, rdispls, recvtypes), req));
both!(PMPI_Alltoallw, "MPI_Alltoallw", PMPI_Ialltoallw, "MPI_Ialltoallw", comm,
    (sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtypes: *const c_int,
     recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtypes: *const c_int,
     comm: c_int),
    |req| alltoall(comm, Some(everyone(comm)?), sendbuf, Displs::IntBytes(sendcounts, sdispls, sendtypes),
                   recvbuf, Displs::IntBytes(recvcounts, rdispls, recvtypes), req));
