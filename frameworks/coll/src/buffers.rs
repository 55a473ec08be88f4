//! A [`CollCall`]'s raw buffers as the byte slices `oxmpi-collectives`'
//! algorithms take, and its reduction (feature `collectives`): what every
//! component over those algorithms derives the same way.

use crate::adapter::user_apply;
use crate::module::{CollCall, CollKind, OpCode};
use oxmpi_collectives::{CollError, ElementType, Op, RecvBuf, Reducer, Reduction, SendBuf};

/// A call's buffers, by the shape of its operation.
pub enum Buffers<'a> {
    /// Barrier.
    None,
    /// Bcast: the one buffer.
    One(&'a mut [u8]),
    /// Every other operation but scatter(v): the send side
    /// (`MPI_IN_PLACE` or the data) and the receive buffer (empty where
    /// this rank receives nothing).
    SendRecv(SendBuf<'a>, &'a mut [u8]),
    /// Scatter(v): the root's data (empty elsewhere) and the receive side.
    Scatter(&'a [u8], RecvBuf<'a>),
}

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
#[inline]
fn times(a: usize, b: usize, what: &str) -> Result<usize, String> {
    a.checked_mul(b)
        .ok_or_else(|| format!("the {what} size overflows"))
}

/// The message size in bytes a call moves per rank (what decision rules
/// look at): the buffer for bcast, one rank's block or contribution for
/// the others; 0 for a barrier.
pub fn message_bytes(call: &CollCall<'_>) -> usize {
    match call.kind {
        CollKind::Barrier => 0,
        k if k.reduces() => call.count.saturating_mul(call.elem_size()),
        _ => call.count,
    }
}

/// The buffers of `call` for rank `rank` of a communicator of `n`, with
/// the extents MPI gives each for this operation and this rank.
///
/// # Safety
///
/// The call's buffers are valid for those extents (read for `send`,
/// written for `recv`) for `'a`.
///
/// # Errors
///
/// Sizes that overflow, or `v` counts and displacements that do not pair.
pub unsafe fn buffers<'a>(call: &CollCall<'a>, rank: u32, n: usize) -> Result<Buffers<'a>, String> {
    let count = call.count;
    let is_root = rank == call.root;
    let (counts, displs) = (call.counts.as_slice(), call.displs.as_slice());
    let elem = call.elem_size();
    // SAFETY: every slice is the caller's promise for these extents.
    unsafe {
        Ok(match call.kind {
            CollKind::Barrier => Buffers::None,
            CollKind::Bcast => Buffers::One(bcast_buffer(call)),
            CollKind::Reduce => {
                let (send, recv) = vector_buffers(call, is_root)?;
                Buffers::SendRecv(send, recv)
            }
            CollKind::Allreduce | CollKind::Scan | CollKind::Exscan => {
                let (send, recv) = vector_buffers(call, true)?;
                Buffers::SendRecv(send, recv)
            }
            CollKind::Gather => {
                let all = if is_root {
                    times(count, n, "gather")?
                } else {
                    0
                };
                Buffers::SendRecv(send_side(call.send, count), bytes_mut(call.recv, all))
            }
            CollKind::Gatherv => {
                let all = if is_root { extent(counts, displs)? } else { 0 };
                Buffers::SendRecv(send_side(call.send, count), bytes_mut(call.recv, all))
            }
            CollKind::Scatter | CollKind::Scatterv => {
                let all = match (is_root, call.kind) {
                    (false, _) => 0,
                    (true, CollKind::Scatter) => times(count, n, "scatter")?,
                    (true, _) => extent(counts, displs)?,
                };
                let recv = if call.recv.is_null() {
                    RecvBuf::InPlace
                } else {
                    RecvBuf::Buf(bytes_mut(call.recv, count))
                };
                Buffers::Scatter(bytes(call.send, all), recv)
            }
            CollKind::Allgather => {
                let all = times(count, n, "allgather")?;
                Buffers::SendRecv(send_side(call.send, count), bytes_mut(call.recv, all))
            }
            CollKind::Allgatherv => Buffers::SendRecv(
                send_side(call.send, count),
                bytes_mut(call.recv, extent(counts, displs)?),
            ),
            CollKind::Alltoall => {
                let all = times(count, n, "alltoall")?;
                Buffers::SendRecv(send_side(call.send, all), bytes_mut(call.recv, all))
            }
            CollKind::Alltoallv => {
                let (sc, sd) = (call.send_counts.as_slice(), call.send_displs.as_slice());
                let send = if call.send.is_null() {
                    SendBuf::InPlace
                } else {
                    SendBuf::Buf(bytes(call.send, extent(sc, sd)?))
                };
                Buffers::SendRecv(send, bytes_mut(call.recv, extent(counts, displs)?))
            }
            CollKind::ReduceScatterBlock => {
                let block = times(count, elem, "reduce_scatter_block")?;
                let all = times(block, n, "reduce_scatter_block")?;
                let len = if call.send.is_null() { all } else { block };
                Buffers::SendRecv(send_side(call.send, all), bytes_mut(call.recv, len))
            }
            CollKind::ReduceScatter => {
                let total = counts.iter().try_fold(0usize, |a, &c| a.checked_add(c));
                let all = times(
                    total.ok_or("the reduce_scatter counts overflow")?,
                    elem,
                    "reduce_scatter",
                )?;
                let mine = counts.get(rank as usize).copied().unwrap_or(0);
                let len = if call.send.is_null() {
                    all
                } else {
                    times(mine, elem, "reduce_scatter")?
                };
                Buffers::SendRecv(send_side(call.send, all), bytes_mut(call.recv, len))
            }
        })
    }
}

/// The buffers of a reduce, allreduce, scan or exscan: the send side and
/// the receive buffer, each the call's vector (`count` elements), the
/// receive buffer empty where this rank gets no result (`receives`
/// false: a reduce off the root). What [`buffers`] answers for those
/// operations, without the match on the operation.
///
/// # Safety
///
/// As [`buffers`].
///
/// # Errors
///
/// A vector size that overflows.
#[inline]
pub unsafe fn vector_buffers<'a>(
    call: &CollCall<'a>,
    receives: bool,
) -> Result<(SendBuf<'a>, &'a mut [u8]), String> {
    let len = times(call.count, call.elem_size(), "reduction")?;
    let recv_len = if receives { len } else { 0 };
    // SAFETY: the caller's promise for these extents.
    unsafe { Ok((send_side(call.send, len), bytes_mut(call.recv, recv_len))) }
}

/// The one buffer of a bcast (`count` bytes). What [`buffers`] answers
/// for a bcast, without the match on the operation.
///
/// # Safety
///
/// As [`buffers`].
#[inline]
pub unsafe fn bcast_buffer<'a>(call: &CollCall<'a>) -> &'a mut [u8] {
    // SAFETY: the caller's promise for this extent.
    unsafe { bytes_mut(call.recv, call.count) }
}

/// A user operation as the algorithms call it (`inout = input op inout`).
pub type Apply<'f> = dyn FnMut(&[u8], &mut [u8]) -> Result<(), CollError> + 'f;

/// The call's user operation as an [`Apply`] closure.
pub fn user_closure<'c>(
    call: &'c CollCall<'_>,
) -> impl FnMut(&[u8], &mut [u8]) -> Result<(), CollError> + 'c {
    move |input: &[u8], inout: &mut [u8]| {
        user_apply(&call.user, input, inout).map_err(CollError::User)
    }
}

/// The reduction of a call: a predefined `(op, type)` pair by code, or the
/// call's user operation through `apply`.
///
/// # Errors
///
/// An unknown code, an operation that does not apply to the type, a user
/// operation without a function.
pub fn reduction<'a>(
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
    let (op, ty) = predefined_codes(call)?;
    if !op.applies_to(ty) {
        return Err(not_defined(op, ty));
    }
    Ok(Reduction::Predefined { op, ty })
}

/// The predefined operation and element type of a call's codes.
///
/// # Errors
///
/// An unknown operation code ([`OpCode::User`] among them), an element
/// type without predefined operations.
fn predefined_codes(call: &CollCall<'_>) -> Result<(Op, ElementType), String> {
    let op = Op::from_code(call.op as u8)
        .ok_or_else(|| format!("unknown reduction operation code {}", call.op as u8))?;
    let ty = ElementType::from_code(call.element as u8).ok_or_else(|| {
        format!(
            "element type {:?} needs a user-defined operation",
            call.element
        )
    })?;
    Ok((op, ty))
}

/// The sentence of an operation that does not apply to a type.
#[cold]
fn not_defined(op: Op, ty: ElementType) -> String {
    format!("{} is not defined for {} elements", op.name(), ty.name())
}

/// The reducer of a call with a predefined operation (its loop looked up
/// once, for the whole call).
///
/// # Errors
///
/// As [`reduction`] for a predefined operation; [`OpCode::User`] is an
/// unknown code here.
#[inline]
pub fn predefined(call: &CollCall<'_>) -> Result<Reducer, String> {
    let (op, ty) = predefined_codes(call)?;
    Reducer::new(op, ty).map_err(|_| not_defined(op, ty))
}

/// Whether the call's reduction is commutative (true for predefined
/// operations and for calls that do not reduce).
pub fn commutative(call: &CollCall<'_>) -> bool {
    call.op != OpCode::User || call.user.commutative
}

/// Whether `kind` has one algorithm here (gatherv, scatterv, allgatherv,
/// alltoallv, scan, exscan), which [`run_one_algorithm`] runs for every
/// component.
pub fn has_one_algorithm(kind: CollKind) -> bool {
    matches!(
        kind,
        CollKind::Gatherv
            | CollKind::Scatterv
            | CollKind::Allgatherv
            | CollKind::Alltoallv
            | CollKind::Scan
            | CollKind::Exscan
    )
}

/// Runs a call of an operation with one algorithm (see
/// [`has_one_algorithm`]): linear gatherv, scatterv, alltoallv, scan and
/// exscan, ring allgatherv; all messages with `tag`.
///
/// # Safety
///
/// The call's buffers are valid for what its fields say during the call.
///
/// # Errors
///
/// The algorithm's error, an inconsistent call, or an operation with more
/// than one algorithm.
pub async unsafe fn run_one_algorithm<T: oxmpi_collectives::Transport>(
    t: &mut T,
    call: &CollCall<'_>,
    tag: i32,
) -> Result<(), String> {
    use oxmpi_collectives as algo;
    let mut apply = user_closure(call);
    let mut op = if call.kind.reduces() {
        Some(reduction(call, &mut apply)?)
    } else {
        None
    };
    // SAFETY: the caller's promise.
    let bufs = unsafe { buffers(call, t.rank(), t.size() as usize) }?;
    let (counts, displs, root) = (call.counts.as_slice(), call.displs.as_slice(), call.root);
    let outcome = match (call.kind, bufs, op.as_mut()) {
        (CollKind::Gatherv, Buffers::SendRecv(s, r), _) => {
            algo::gatherv_linear(t, s, r, counts, displs, root, tag).await
        }
        (CollKind::Scatterv, Buffers::Scatter(s, r), _) => {
            algo::scatterv_linear(t, s, counts, displs, r, root, tag).await
        }
        (CollKind::Allgatherv, Buffers::SendRecv(s, r), _) => {
            algo::allgatherv_ring(t, s, r, counts, displs, tag).await
        }
        (CollKind::Alltoallv, Buffers::SendRecv(s, r), _) => {
            algo::alltoallv_linear(
                t,
                s,
                call.send_counts.as_slice(),
                call.send_displs.as_slice(),
                r,
                counts,
                displs,
                tag,
            )
            .await
        }
        (CollKind::Scan, Buffers::SendRecv(s, r), Some(op)) => {
            algo::scan_linear(t, s, r, op, tag).await
        }
        (CollKind::Exscan, Buffers::SendRecv(s, r), Some(op)) => {
            algo::exscan_linear(t, s, r, op, tag).await
        }
        (kind, _, _) => {
            return Err(format!(
                "internal error: {} has more than one algorithm",
                kind.name()
            ))
        }
    };
    outcome.map_err(|e| e.to_string())
}
