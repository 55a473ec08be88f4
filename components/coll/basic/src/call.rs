//! The algorithm basic uses for each operation:
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
use oxmpi_collectives::Transport;
use oxmpi_framework_coll::buffers::{
    buffers, has_one_algorithm, reduction, run_one_algorithm, user_closure, Buffers,
};
use oxmpi_framework_coll::module::{CollCall, CollKind};

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
pub async unsafe fn run<T: Transport>(
    t: &mut T,
    call: &CollCall<'_>,
    crossover: u32,
    tag: i32,
) -> Result<(), String> {
    let log = t.size() >= crossover;
    if has_one_algorithm(call.kind) {
        // SAFETY: the caller's promise.
        return unsafe { run_one_algorithm(t, call, tag) }.await;
    }
    let mut apply = user_closure(call);
    let mut op = if call.kind.reduces() {
        Some(reduction(call, &mut apply)?)
    } else {
        None
    };
    // SAFETY: the caller's promise.
    let bufs = unsafe { buffers(call, t.rank(), t.size() as usize) }?;
    let counts = call.counts.as_slice();
    let root = call.root;
    let outcome = match (call.kind, bufs, op.as_mut()) {
        (CollKind::Barrier, _, _) if log => algo::barrier_recursive_doubling(t, tag).await,
        (CollKind::Barrier, _, _) => algo::barrier_linear(t, tag).await,
        (CollKind::Bcast, Buffers::One(buf), _) if log => {
            algo::bcast_binomial(t, buf, root, tag).await
        }
        (CollKind::Bcast, Buffers::One(buf), _) => algo::bcast_linear(t, buf, root, tag).await,
        (CollKind::Reduce, Buffers::SendRecv(s, r), Some(op)) if log => {
            algo::reduce_binomial(t, s, r, root, op, tag).await
        }
        (CollKind::Reduce, Buffers::SendRecv(s, r), Some(op)) => {
            algo::reduce_linear(t, s, r, root, op, tag).await
        }
        (CollKind::Allreduce, Buffers::SendRecv(s, r), Some(op)) if log => {
            algo::allreduce_recursive_doubling(t, s, r, op, tag).await
        }
        (CollKind::Allreduce, Buffers::SendRecv(s, r), Some(op)) => {
            algo::allreduce_reduce_bcast(t, s, r, op, tag).await
        }
        (CollKind::Gather, Buffers::SendRecv(s, r), _) if log => {
            algo::gather_binomial(t, s, r, root, tag).await
        }
        (CollKind::Gather, Buffers::SendRecv(s, r), _) => {
            algo::gather_linear(t, s, r, root, tag).await
        }
        (CollKind::Scatter, Buffers::Scatter(s, r), _) if log => {
            algo::scatter_binomial(t, s, r, root, tag).await
        }
        (CollKind::Scatter, Buffers::Scatter(s, r), _) => {
            algo::scatter_linear(t, s, r, root, tag).await
        }
        (CollKind::Allgather, Buffers::SendRecv(s, r), _) if log => {
            algo::allgather_bruck(t, s, r, tag).await
        }
        (CollKind::Allgather, Buffers::SendRecv(s, r), _) => {
            algo::allgather_linear(t, s, r, tag).await
        }
        (CollKind::Alltoall, Buffers::SendRecv(s, r), _) if log => {
            algo::alltoall_pairwise(t, s, r, tag).await
        }
        (CollKind::Alltoall, Buffers::SendRecv(s, r), _) => {
            algo::alltoall_linear(t, s, r, tag).await
        }
        (CollKind::ReduceScatterBlock, Buffers::SendRecv(s, r), Some(op)) if log => {
            algo::reduce_scatter_block_ring(t, s, r, op, tag).await
        }
        (CollKind::ReduceScatterBlock, Buffers::SendRecv(s, r), Some(op)) => {
            algo::reduce_scatter_block_via_reduce(t, s, r, op, tag).await
        }
        (CollKind::ReduceScatter, Buffers::SendRecv(s, r), Some(op)) if log => {
            algo::reduce_scatter_ring(t, s, r, counts, op, tag).await
        }
        (CollKind::ReduceScatter, Buffers::SendRecv(s, r), Some(op)) => {
            algo::reduce_scatter_via_reduce(t, s, r, counts, op, tag).await
        }
        (kind, _, _) => {
            return Err(format!(
                "internal error: {} reached basic with buffers of another shape",
                kind.name()
            ))
        }
    };
    outcome.map_err(|e| e.to_string())
}
