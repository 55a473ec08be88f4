//! One [`CollCall`] as byte slices and the algorithm basic uses for it:
//!
//! | operation | below the crossover | from the crossover on |
//! |---|---|---|
//! | barrier | linear | recursive doubling |
//! | bcast | linear | binomial |
//! | reduce | linear | binomial (rank order kept for non-commutative operations) |
//! | allreduce | reduce + bcast | recursive doubling |
//! | gather, scatter | linear | binomial |
//! | gatherv, scatterv, alltoallv | linear | linear |
//! | allgather | linear (gather + bcast) | Bruck |
//! | allgatherv | ring | ring |
//! | alltoall | linear | pairwise |
//! | reduce_scatter(_block) | reduce + scatter | ring (commutative operations) |
//! | scan, exscan | linear | linear |

use oxmpi_collectives as algo;
use oxmpi_collectives::{CollError, ElementType, Op, RecvBuf, Reduction, SendBuf, Transport};
use oxmpi_framework_coll::adapter::user_apply;
use oxmpi_framework_coll::module::{CollCall, CollKind, OpCode};

/// `len` bytes at `p` (empty when `p` is null or `len` is 0).
///
/// # Safety
///
/// When `p` is not null, it is readable for `len` bytes for `'a`.
unsafe fn bytes<'a>(p: *const u8, len: usize) -> &'a [u8] {
    if p.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: the caller's promise.
        unsafe { std::slice::from_raw_parts(p, len) }
    }
}

/// `len` writable bytes at `p` (empty when `p` is null or `len` is 0).
///
/// # Safety
///
/// When `p` is not null, it is writable for `len` bytes for `'a`, and
/// nothing else uses them meanwhile.
unsafe fn bytes_mut<'a>(p: *mut u8, len: usize) -> &'a mut [u8] {
    if p.is_null() || len == 0 {
        &mut []
    } else {
        // SAFETY: the caller's promise.
        unsafe { std::slice::from_raw_parts_mut(p, len) }
    }
}

/// The send side: `MPI_IN_PLACE` for a null pointer.
///
/// # Safety
///
/// As for [`bytes`].
unsafe fn send_side<'a>(p: *const u8, len: usize) -> SendBuf<'a> {
    if p.is_null() {
        SendBuf::InPlace
    } else {
        // SAFETY: the caller's promise.
        SendBuf::Buf(unsafe { bytes(p, len) })
    }
}

/// The bytes a `v` buffer spans: the end of its farthest block.
fn extent(counts: &[usize], displs: &[usize]) -> Result<usize, String> {
    if counts.len() != displs.len() {
        return Err(format!(
            "{} counts and {} displacements; a v-collective needs one of each per process",
            counts.len(),
            displs.len()
        ));
    }
    counts
        .iter()
        .zip(displs)
        .try_fold(0usize, |end, (&c, &d)| d.checked_add(c).map(|e| end.max(e)))
        .ok_or_else(|| "a displacement plus its count overflows".to_string())
}

/// Multiplies, or says what overflowed.
fn times(a: usize, b: usize, what: &str) -> Result<usize, String> {
    a.checked_mul(b)
        .ok_or_else(|| format!("the {what} size overflows"))
}

/// Runs `call` over `t` with basic's choice of algorithm (linear below
/// `crossover` processes), all messages with `tag`.
///
/// # Safety
///
/// The call's buffers are valid for what its fields say (read for `send`,
/// written for `recv`) during the call.
///
/// # Errors
///
/// The algorithm's error, or an inconsistent call (as a sentence).
pub unsafe fn run<T: Transport>(
    t: &mut T,
    call: &CollCall<'_>,
    crossover: u32,
    tag: i32,
) -> Result<(), String> {
    let n = t.size() as usize;
    let rank = t.rank();
    let log = t.size() >= crossover;
    let is_root = rank == call.root;
    let count = call.count;
    let elem = call.elem_size();
    let counts = call.counts.as_slice();
    let displs = call.displs.as_slice();
    let mut user = |input: &[u8], inout: &mut [u8]| {
        user_apply(&call.user, input, inout).map_err(CollError::User)
    };
    let mut op = if call.kind.reduces() {
        Some(reduction_of(call, &mut user)?)
    } else {
        None
    };
    // SAFETY: every slice below is the caller's promise, with the extents
    // MPI gives each buffer for this operation and this rank.
    let outcome = unsafe {
        match call.kind {
            CollKind::Barrier => {
                if log {
                    algo::barrier_recursive_doubling(t, tag)
                } else {
                    algo::barrier_linear(t, tag)
                }
            }
            CollKind::Bcast => {
                let buf = bytes_mut(call.recv, count);
                if log {
                    algo::bcast_binomial(t, buf, call.root, tag)
                } else {
                    algo::bcast_linear(t, buf, call.root, tag)
                }
            }
            CollKind::Reduce => {
                let len = times(count, elem, "reduction")?;
                let send = send_side(call.send, len);
                let recv = bytes_mut(call.recv, if is_root { len } else { 0 });
                let op = op.as_mut().expect("a reduction");
                if log {
                    algo::reduce_binomial(t, send, recv, call.root, op, tag)
                } else {
                    algo::reduce_linear(t, send, recv, call.root, op, tag)
                }
            }
            CollKind::Allreduce => {
                let len = times(count, elem, "reduction")?;
                let send = send_side(call.send, len);
                let recv = bytes_mut(call.recv, len);
                let op = op.as_mut().expect("a reduction");
                if log {
                    algo::allreduce_recursive_doubling(t, send, recv, op, tag)
                } else {
                    algo::allreduce_reduce_bcast(t, send, recv, op, tag)
                }
            }
            CollKind::Gather => {
                let send = send_side(call.send, count);
                let all = if is_root {
                    times(count, n, "gather")?
                } else {
                    0
                };
                let recv = bytes_mut(call.recv, all);
                if log {
                    algo::gather_binomial(t, send, recv, call.root, tag)
                } else {
                    algo::gather_linear(t, send, recv, call.root, tag)
                }
            }
            CollKind::Gatherv => {
                let send = send_side(call.send, count);
                let all = if is_root { extent(counts, displs)? } else { 0 };
                let recv = bytes_mut(call.recv, all);
                algo::gatherv_linear(t, send, recv, counts, displs, call.root, tag)
            }
            CollKind::Scatter => {
                let all = if is_root {
                    times(count, n, "scatter")?
                } else {
                    0
                };
                let send = bytes(call.send, all);
                let recv = if call.recv.is_null() {
                    RecvBuf::InPlace
                } else {
                    RecvBuf::Buf(bytes_mut(call.recv, count))
                };
                if log {
                    algo::scatter_binomial(t, send, recv, call.root, tag)
                } else {
                    algo::scatter_linear(t, send, recv, call.root, tag)
                }
            }
            CollKind::Scatterv => {
                let all = if is_root { extent(counts, displs)? } else { 0 };
                let send = bytes(call.send, all);
                let recv = if call.recv.is_null() {
                    RecvBuf::InPlace
                } else {
                    RecvBuf::Buf(bytes_mut(call.recv, count))
                };
                algo::scatterv_linear(t, send, counts, displs, recv, call.root, tag)
            }
            CollKind::Allgather => {
                let send = send_side(call.send, count);
                let recv = bytes_mut(call.recv, times(count, n, "allgather")?);
                if log {
                    algo::allgather_bruck(t, send, recv, tag)
                } else {
                    algo::allgather_linear(t, send, recv, tag)
                }
            }
            CollKind::Allgatherv => {
                let send = send_side(call.send, count);
                let recv = bytes_mut(call.recv, extent(counts, displs)?);
                algo::allgatherv_ring(t, send, recv, counts, displs, tag)
            }
            CollKind::Alltoall => {
                let all = times(count, n, "alltoall")?;
                let send = send_side(call.send, all);
                let recv = bytes_mut(call.recv, all);
                if log {
                    algo::alltoall_pairwise(t, send, recv, tag)
                } else {
                    algo::alltoall_linear(t, send, recv, tag)
                }
            }
            CollKind::Alltoallv => {
                let (scounts, sdispls) = (call.send_counts.as_slice(), call.send_displs.as_slice());
                let send = if call.send.is_null() {
                    SendBuf::InPlace
                } else {
                    SendBuf::Buf(bytes(call.send, extent(scounts, sdispls)?))
                };
                let recv = bytes_mut(call.recv, extent(counts, displs)?);
                algo::alltoallv_linear(t, send, scounts, sdispls, recv, counts, displs, tag)
            }
            CollKind::ReduceScatterBlock => {
                let block = times(count, elem, "reduce_scatter_block")?;
                let all = times(block, n, "reduce_scatter_block")?;
                let send = send_side(call.send, all);
                let recv = bytes_mut(call.recv, if call.send.is_null() { all } else { block });
                let op = op.as_mut().expect("a reduction");
                if log {
                    algo::reduce_scatter_block_ring(t, send, recv, op, tag)
                } else {
                    algo::reduce_scatter_block_via_reduce(t, send, recv, op, tag)
                }
            }
            CollKind::ReduceScatter => {
                let total: usize = counts.iter().sum();
                let all = times(total, elem, "reduce_scatter")?;
                let mine = counts.get(rank as usize).copied().unwrap_or(0);
                let send = send_side(call.send, all);
                let len = if call.send.is_null() {
                    all
                } else {
                    times(mine, elem, "reduce_scatter")?
                };
                let recv = bytes_mut(call.recv, len);
                let op = op.as_mut().expect("a reduction");
                if log {
                    algo::reduce_scatter_ring(t, send, recv, counts, op, tag)
                } else {
                    algo::reduce_scatter_via_reduce(t, send, recv, counts, op, tag)
                }
            }
            CollKind::Scan | CollKind::Exscan => {
                let len = times(count, elem, "scan")?;
                let send = send_side(call.send, len);
                let recv = bytes_mut(call.recv, len);
                let op = op.as_mut().expect("a reduction");
                if call.kind == CollKind::Scan {
                    algo::scan_linear(t, send, recv, op, tag)
                } else {
                    algo::exscan_linear(t, send, recv, op, tag)
                }
            }
        }
    };
    outcome.map_err(|e| e.to_string())
}

/// A user operation as the algorithms call it (`inout = input op inout`).
type Apply<'f> = dyn FnMut(&[u8], &mut [u8]) -> Result<(), CollError> + 'f;

/// The reduction of a call: a predefined `(op, type)` pair by code, or the
/// call's user operation through `apply`.
fn reduction_of<'a>(
    call: &CollCall<'_>,
    apply: &'a mut Apply<'_>,
) -> Result<Reduction<'a>, String> {
    if call.op == OpCode::User {
        if call.user.elem_size == 0 || call.user.func.is_none() {
            return Err("a user-defined operation without a function or element size".into());
        }
        return Ok(Reduction::User {
            elem_size: call.user.elem_size,
            commutative: call.user.commutative,
            apply,
        });
    }
    let op = Op::from_code(call.op as u8)
        .ok_or_else(|| format!("unknown reduction operation code {}", call.op as u8))?;
    let ty = ElementType::from_code(call.element as u8).ok_or_else(|| {
        format!(
            "element type {:?} needs a user-defined operation",
            call.element
        )
    })?;
    if !op.applies_to(ty) {
        return Err(format!(
            "{} is not defined for {} elements",
            op.name(),
            ty.name()
        ));
    }
    Ok(Reduction::Predefined { op, ty })
}
