//! MPI collective algorithms over point-to-point messages.
//!
//! The `coll` components (`basic`, `tuned`, …) implement MPI's collectives
//! by calling these functions: each algorithm is written once, over the
//! [`Transport`] trait (the pml's nonblocking send and receive on one
//! communicator), so a component only chooses algorithms and adapts its
//! communicator, and the algorithms are tested in one process with the
//! in-memory transport of [`testkit`] (cargo feature `testkit`).
//!
//! Every algorithm is an `async fn`: its future completes when this rank's
//! part of the collective is done (its buffers may be reused; other ranks
//! may still be working). Over a blocking transport (the default,
//! [`Transport::blocking`]) it waits inside [`Transport::wait_all`] and
//! completes in its first poll: run it with [`block_on`]. Over a
//! non-blocking transport it polls its requests
//! ([`Transport::test_all`]) and gives control back while messages are
//! in flight, which is how a non-blocking collective (`MPI_Iallreduce`
//! …) runs: its driver polls the future until it completes. Buffers are contiguous byte slices; datatypes are the
//! caller's business (pack non-contiguous data first). Reductions work on
//! whole elements of a [`Reduction`]'s element size, and element counts
//! are the buffer lengths divided by it (reduce-scatter takes per-rank
//! counts in elements; the `v` variants of gather, scatter, allgather and
//! alltoall take counts and displacements in bytes).
//!
//! # The transport contract
//!
//! See [`Transport`]. In short:
//!
//! - **Tags.** Every function takes a `tag`; all messages of one call use
//!   it. The caller passes one tag per collective call (negative: internal
//!   traffic that no application receive can match). Two concurrent
//!   collectives on one communicator need different tags.
//! - **Order.** Correctness relies on MPI's non-overtaking rule: messages
//!   from one rank to another with one tag match receives in the order
//!   they were sent and receives are matched in the order they were
//!   posted. No algorithm uses wildcards.
//! - **Buffers.** A buffer lent to [`Transport::isend`] or
//!   [`Transport::irecv`] is the transport's until
//!   [`Transport::wait_all`] returns for it, even with an error. All the
//!   algorithms go through the safe helpers [`exchange`], [`send`],
//!   [`recv`] and [`sendrecv`], which never return with a request
//!   outstanding: the unsafe code is in one place.
//! - **Progress and sends.** The algorithms are deadlock-free when sends
//!   are synchronous (complete only once matched), so they do not rely on
//!   eager buffering. The test transport runs in that mode by default.
//! - **Sizes.** A message's length is known to both sides; a mismatch is
//!   [`CollError::Length`] (the ranks disagree on counts).
//!
//! # `MPI_IN_PLACE`
//!
//! [`SendBuf::InPlace`] (and [`RecvBuf::InPlace`] for scatter) has MPI's
//! meaning for each operation:
//!
//! | operation | where allowed | meaning |
//! |---|---|---|
//! | gather, gatherv | root (send side) | the root's contribution is already at its place in `recv` |
//! | scatter, scatterv | root (receive side, [`RecvBuf`]) | the root's block stays in `send`; nothing is copied |
//! | allgather, allgatherv | every rank | this rank's contribution is already at its place in `recv` |
//! | alltoall, alltoallv | every rank | the data to send is taken from `recv` (alltoallv: with the receive counts and displacements) and replaced |
//! | reduce | root | the root's input is in `recv`, which the result overwrites |
//! | allreduce, scan, exscan | every rank | the input is in `recv`, which the result overwrites (exscan: not at rank 0, whose result is undefined and whose `recv` is left untouched) |
//! | reduce_scatter(_block) | every rank | the whole input vector is in `recv`; the result goes to its start |
//!
//! `InPlace` where MPI does not allow it is [`CollError::InvalidArgument`].
//!
//! # Algorithms
//!
//! Every algorithm works for every communicator size from 1 and every
//! count including 0. "Commutative only" algorithms fall back to the
//! named order-preserving algorithm for a non-commutative operation, so
//! every function is correct for every operation. `n` is the size, `p`
//! the largest power of two `≤ n`.
//!
//! | operation | algorithm | constraints, behaviour |
//! |---|---|---|
//! | barrier | [`barrier_linear`] | fan-in to rank 0, fan-out |
//! | | [`barrier_recursive_doubling`] | extra ranks above `p` report to `r − p` first |
//! | | [`barrier_dissemination`] | `⌈log2 n⌉` rounds, send to `r + 2^k` |
//! | | [`barrier_bruck`] | dissemination mirrored (send to `r − 2^k`) |
//! | bcast | [`bcast_linear`] | root sends to all |
//! | | [`bcast_binomial`] | binomial tree |
//! | | [`bcast_pipeline`] | chain, segments of `segment_size` bytes |
//! | | [`bcast_scatter_allgather`] | binomial scatter + ring allgather; fewer bytes than ranks: binomial |
//! | reduce | [`reduce_linear`] | root folds in rank order; any op |
//! | | [`reduce_binomial`] | non-commutative: tree rooted at 0, then sent to the root |
//! | | [`reduce_pipeline`] | chain, segments; non-commutative: chain to 0, then sent to the root |
//! | allreduce | [`allreduce_reduce_bcast`] | binomial reduce to 0 + binomial bcast; any op |
//! | | [`allreduce_recursive_doubling`] | fold-in of extra ranks; any op (rank order kept) |
//! | | [`allreduce_ring`] | commutative only (else recursive doubling) |
//! | | [`allreduce_segmented_ring`] | commutative only (else recursive doubling) |
//! | | [`allreduce_rabenseifner`] | commutative only (else recursive doubling) |
//! | gather | [`gather_linear`], [`gather_binomial`], [`gatherv_linear`] | |
//! | scatter | [`scatter_linear`], [`scatter_binomial`], [`scatterv_linear`] | |
//! | allgather | [`allgather_linear`] | linear gather + binomial bcast |
//! | | [`allgather_ring`], [`allgather_bruck`] | |
//! | | [`allgather_recursive_doubling`] | `n` a power of two (else Bruck) |
//! | allgatherv | [`allgatherv_ring`] | |
//! | alltoall | [`alltoall_linear`], [`alltoall_pairwise`], [`alltoall_bruck`] | |
//! | alltoallv | [`alltoallv_linear`] | |
//! | reduce_scatter_block | [`reduce_scatter_block_via_reduce`] | binomial reduce to 0 + scatter; any op |
//! | | [`reduce_scatter_block_ring`] | commutative only (else via reduce) |
//! | reduce_scatter | [`reduce_scatter_via_reduce`] | binomial reduce to 0 + scatterv; any op |
//! | | [`reduce_scatter_ring`] | commutative only (else via reduce) |
//! | scan | [`scan_linear`] | chain; any op |
//! | exscan | [`exscan_linear`] | chain; any op; rank 0's `recv` untouched |
//!
//! # Errors
//!
//! Argument errors ([`CollError::InvalidArgument`], an operation that does
//! not apply to its type) are found before this rank communicates.
//! Transport and user-operation errors in the middle of a collective leave
//! the other ranks in an undefined state (they may wait forever), as in
//! MPI.

mod allgather;
mod allreduce;
mod alltoall;
mod barrier;
mod bcast;
mod buffers;
mod error;
mod gather;
mod reduce;
mod reduce_scatter;
mod reduction;
mod scan;
mod scatter;
mod topo;
mod transport;

#[cfg(any(test, feature = "testkit"))]
pub mod testkit;

pub use allgather::{
    allgather_bruck, allgather_linear, allgather_recursive_doubling, allgather_ring,
    allgatherv_ring,
};
pub use allreduce::{
    allreduce_rabenseifner, allreduce_recursive_doubling, allreduce_reduce_bcast, allreduce_ring,
    allreduce_segmented_ring,
};
pub use alltoall::{alltoall_bruck, alltoall_linear, alltoall_pairwise, alltoallv_linear};
pub use barrier::{
    barrier_bruck, barrier_dissemination, barrier_linear, barrier_recursive_doubling,
};
pub use bcast::{bcast_binomial, bcast_linear, bcast_pipeline, bcast_scatter_allgather};
pub use buffers::{RecvBuf, SendBuf};
pub use error::CollError;
pub use gather::{gather_binomial, gather_linear, gatherv_linear};
pub use reduce::{reduce_binomial, reduce_linear, reduce_pipeline};
pub use reduce_scatter::{
    reduce_scatter_block_ring, reduce_scatter_block_via_reduce, reduce_scatter_ring,
    reduce_scatter_via_reduce,
};
pub use reduction::{Reduction, UserFn};
pub use scan::{exscan_linear, scan_linear};
pub use scatter::{scatter_binomial, scatter_linear, scatterv_linear};
pub use transport::{block_on, exchange, exchange_with, recv, send, sendrecv, Request, Transport};

/// The reduction library's types, re-exported for the callers of
/// [`Reduction::Predefined`] and of [`CollError::Reduce`].
pub use oxmpi_reduce::{ElementType, Op, ReduceError, Reducer};
