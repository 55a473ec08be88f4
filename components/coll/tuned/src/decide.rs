//! Which algorithm runs a call: a forced `coll_tuned_<op>_algorithm`, a
//! rule of the rules file, or the fixed decision (in that order; the first
//! two only with `coll_tuned_use_dynamic_rules`), and running it.
//!
//! The fixed decision, by communicator size `n` and message size (bytes
//! per rank: a reduction's contribution, a gather's block, a bcast's
//! buffer):
//!
//! | operation | choice |
//! |---|---|
//! | barrier | recursive doubling when `n` is a power of two, else dissemination |
//! | bcast | binomial below 64 KiB or on 2 ranks, else scatter + allgather |
//! | reduce | binomial; pipeline (64 KiB segments) from 256 KiB on more than 2 ranks for commutative operations |
//! | allreduce | recursive doubling below 16 KiB and for non-commutative operations; else ring on 2 ranks, Rabenseifner on more |
//! | gather, scatter | linear up to 4 ranks or from 64 KiB, else binomial |
//! | allgather | recursive doubling for powers of two below 64 KiB in all, Bruck below 64 KiB, else ring |
//! | alltoall | linear up to 4 ranks, Bruck for blocks up to 256 B from 8 ranks, else pairwise |
//! | reduce_scatter(_block) | ring for commutative operations, else reduce + scatter |
//! | gatherv, scatterv, allgatherv, alltoallv, scan, exscan | their one algorithm (linear, ring for allgatherv) |

use crate::params::{
    AllgatherAlgorithm, AllreduceAlgorithm, AlltoallAlgorithm, BarrierAlgorithm, BcastAlgorithm,
    ReduceAlgorithm, RootedAlgorithm, TunedParams,
};
use crate::rules::{RuleOp, RulesFile};
use oxmpi_collectives as algo;
use oxmpi_collectives::Transport;
use oxmpi_framework_coll::buffers::{
    buffers, commutative, has_one_algorithm, message_bytes, reduction, run_one_algorithm,
    user_closure, Buffers,
};
use oxmpi_framework_coll::module::{CollCall, CollKind};
use oxmpi_plugin_api::ParamEnum;

/// Segment size of the segmented algorithms when none is given.
pub const DEFAULT_SEGMENT: usize = 64 << 10;

/// An algorithm and its segment size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    /// The algorithm's number in its operation's enum (0 for operations
    /// with one algorithm).
    pub algorithm: u32,
    /// Segment size in bytes (segmented algorithms).
    pub segment: usize,
}

/// Where a choice came from (for logs and tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `coll_tuned_<op>_algorithm`.
    Forced,
    /// A rule of the rules file.
    Rules,
    /// The fixed decision.
    Fixed,
}

/// The rules file's name for an operation tuned lets users choose.
pub fn rule_op(kind: CollKind) -> Option<RuleOp> {
    Some(match kind {
        CollKind::Allreduce => RuleOp::Allreduce,
        CollKind::Bcast => RuleOp::Bcast,
        CollKind::Reduce => RuleOp::Reduce,
        CollKind::Barrier => RuleOp::Barrier,
        CollKind::Alltoall => RuleOp::Alltoall,
        CollKind::Allgather => RuleOp::Allgather,
        CollKind::Gather => RuleOp::Gather,
        CollKind::Scatter => RuleOp::Scatter,
        _ => return None,
    })
}

/// The algorithm numbers an operation accepts (its enum's values but 0).
pub fn valid_algorithms(kind: CollKind) -> &'static [u32] {
    match kind {
        CollKind::Allreduce => &[1, 2, 3, 4, 5, 6],
        CollKind::Bcast => &[1, 3, 6, 8],
        CollKind::Reduce => &[1, 3, 5],
        CollKind::Barrier => &[1, 3, 4, 7],
        CollKind::Alltoall => &[1, 2, 3],
        CollKind::Allgather => &[1, 2, 3, 4],
        CollKind::Gather | CollKind::Scatter => &[1, 2],
        _ => &[],
    }
}

/// The forced algorithm of `kind` and its segment size, if set.
fn forced(p: &TunedParams, kind: CollKind) -> Option<Choice> {
    let (number, segment) = match kind {
        CollKind::Allreduce => (
            p.allreduce_algorithm.number(),
            p.allreduce_algorithm_segmentsize,
        ),
        CollKind::Bcast => (p.bcast_algorithm.number(), p.bcast_algorithm_segmentsize),
        CollKind::Reduce => (p.reduce_algorithm.number(), p.reduce_algorithm_segmentsize),
        CollKind::Barrier => (p.barrier_algorithm.number(), 0),
        CollKind::Alltoall => (p.alltoall_algorithm.number(), 0),
        CollKind::Allgather => (p.allgather_algorithm.number(), 0),
        CollKind::Gather => (p.gather_algorithm.number(), 0),
        CollKind::Scatter => (p.scatter_algorithm.number(), 0),
        _ => (0, 0),
    };
    (number != 0).then_some(Choice {
        algorithm: number as u32,
        segment,
    })
}

/// The fixed decision for `kind` on `n` ranks with `bytes` per rank.
pub fn fixed(kind: CollKind, n: u32, bytes: usize, commutative: bool) -> Choice {
    const KIB: usize = 1 << 10;
    let algorithm = match kind {
        CollKind::Barrier if n.is_power_of_two() => BarrierAlgorithm::RecursiveDoubling as u32,
        CollKind::Barrier => BarrierAlgorithm::Dissemination as u32,
        CollKind::Bcast if n == 2 || bytes < 64 * KIB => BcastAlgorithm::Binomial as u32,
        CollKind::Bcast => BcastAlgorithm::ScatterAllgather as u32,
        CollKind::Reduce if commutative && n > 2 && bytes >= 256 * KIB => {
            ReduceAlgorithm::Pipeline as u32
        }
        CollKind::Reduce => ReduceAlgorithm::Binomial as u32,
        CollKind::Allreduce if bytes < 16 * KIB || !commutative => {
            AllreduceAlgorithm::RecursiveDoubling as u32
        }
        CollKind::Allreduce if n == 2 => AllreduceAlgorithm::Ring as u32,
        CollKind::Allreduce => AllreduceAlgorithm::Rabenseifner as u32,
        CollKind::Gather | CollKind::Scatter if n <= 4 || bytes >= 64 * KIB => {
            RootedAlgorithm::BasicLinear as u32
        }
        CollKind::Gather | CollKind::Scatter => RootedAlgorithm::Binomial as u32,
        CollKind::Allgather => {
            let total = bytes.saturating_mul(n as usize);
            if total < 64 * KIB && n.is_power_of_two() {
                AllgatherAlgorithm::RecursiveDoubling as u32
            } else if total < 64 * KIB {
                AllgatherAlgorithm::Bruck as u32
            } else {
                AllgatherAlgorithm::Ring as u32
            }
        }
        CollKind::Alltoall if n <= 4 => AlltoallAlgorithm::Linear as u32,
        CollKind::Alltoall if bytes <= 256 && n >= 8 => AlltoallAlgorithm::ModifiedBruck as u32,
        CollKind::Alltoall => AlltoallAlgorithm::Pairwise as u32,
        _ => 0,
    };
    Choice {
        algorithm,
        segment: DEFAULT_SEGMENT,
    }
}

/// The choice for `call` on `n` ranks, and where it came from.
pub fn choose(
    p: &TunedParams,
    rules: Option<&RulesFile>,
    call: &CollCall<'_>,
    n: u32,
) -> (Choice, Source) {
    let kind = call.kind;
    let bytes = message_bytes(call);
    if p.use_dynamic_rules {
        if let Some(c) = forced(p, kind) {
            return (c, Source::Forced);
        }
        if let (Some(rules), Some(op)) = (rules, rule_op(kind)) {
            let total = (bytes as u64).saturating_mul(u64::from(n));
            if let Some(rule) = rules.lookup(op, n, total) {
                if rule.algorithm != 0 {
                    let segment = usize::try_from(rule.segment_size).unwrap_or(usize::MAX);
                    return (
                        Choice {
                            algorithm: rule.algorithm,
                            segment,
                        },
                        Source::Rules,
                    );
                }
            }
        }
    }
    (fixed(kind, n, bytes, commutative(call)), Source::Fixed)
}

/// Runs `call` over `t` with `choice`, all messages with `tag`.
///
/// # Safety
///
/// The call's buffers are valid for what its fields say during the call.
///
/// # Errors
///
/// The algorithm's error, an inconsistent call, or an algorithm number the
/// operation does not have.
pub async unsafe fn run<T: Transport>(
    t: &mut T,
    call: &CollCall<'_>,
    choice: Choice,
    tag: i32,
) -> Result<(), String> {
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
    let (counts, root) = (call.counts.as_slice(), call.root);
    let seg = if choice.segment == 0 {
        DEFAULT_SEGMENT
    } else {
        choice.segment
    };
    let a = choice.algorithm;
    let outcome = match (call.kind, bufs, op.as_mut()) {
        (CollKind::Barrier, _, _) => match a {
            1 => algo::barrier_linear(t, tag).await,
            3 => algo::barrier_recursive_doubling(t, tag).await,
            4 => algo::barrier_bruck(t, tag).await,
            _ => algo::barrier_dissemination(t, tag).await,
        },
        (CollKind::Bcast, Buffers::One(b), _) => match a {
            1 => algo::bcast_linear(t, b, root, tag).await,
            3 => algo::bcast_pipeline(t, b, root, seg, tag).await,
            8 => algo::bcast_scatter_allgather(t, b, root, tag).await,
            _ => algo::bcast_binomial(t, b, root, tag).await,
        },
        (CollKind::Reduce, Buffers::SendRecv(s, r), Some(op)) => match a {
            1 => algo::reduce_linear(t, s, r, root, op, tag).await,
            3 => algo::reduce_pipeline(t, s, r, root, op, seg, tag).await,
            _ => algo::reduce_binomial(t, s, r, root, op, tag).await,
        },
        (CollKind::Allreduce, Buffers::SendRecv(s, r), Some(op)) => match a {
            1 | 2 => algo::allreduce_reduce_bcast(t, s, r, op, tag).await,
            4 => algo::allreduce_ring(t, s, r, op, tag).await,
            5 => algo::allreduce_segmented_ring(t, s, r, op, seg, tag).await,
            6 => algo::allreduce_rabenseifner(t, s, r, op, tag).await,
            _ => algo::allreduce_recursive_doubling(t, s, r, op, tag).await,
        },
        (CollKind::Gather, Buffers::SendRecv(s, r), _) => match a {
            2 => algo::gather_binomial(t, s, r, root, tag).await,
            _ => algo::gather_linear(t, s, r, root, tag).await,
        },
        (CollKind::Scatter, Buffers::Scatter(s, r), _) => match a {
            2 => algo::scatter_binomial(t, s, r, root, tag).await,
            _ => algo::scatter_linear(t, s, r, root, tag).await,
        },
        (CollKind::Allgather, Buffers::SendRecv(s, r), _) => match a {
            1 => algo::allgather_linear(t, s, r, tag).await,
            2 => algo::allgather_bruck(t, s, r, tag).await,
            3 => algo::allgather_recursive_doubling(t, s, r, tag).await,
            _ => algo::allgather_ring(t, s, r, tag).await,
        },
        (CollKind::Alltoall, Buffers::SendRecv(s, r), _) => match a {
            1 => algo::alltoall_linear(t, s, r, tag).await,
            3 => algo::alltoall_bruck(t, s, r, tag).await,
            _ => algo::alltoall_pairwise(t, s, r, tag).await,
        },
        (CollKind::ReduceScatterBlock, Buffers::SendRecv(s, r), Some(op)) => {
            if op.is_commutative() {
                algo::reduce_scatter_block_ring(t, s, r, op, tag).await
            } else {
                algo::reduce_scatter_block_via_reduce(t, s, r, op, tag).await
            }
        }
        (CollKind::ReduceScatter, Buffers::SendRecv(s, r), Some(op)) => {
            if op.is_commutative() {
                algo::reduce_scatter_ring(t, s, r, counts, op, tag).await
            } else {
                algo::reduce_scatter_via_reduce(t, s, r, counts, op, tag).await
            }
        }
        (kind, _, _) => {
            return Err(format!(
                "internal error: {} reached tuned with buffers of another shape",
                kind.name()
            ))
        }
    };
    outcome.map_err(|e| e.to_string())
}
