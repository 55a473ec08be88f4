//! Every algorithm that carries data, at 1 MiB per rank.
//!
//! The other test files go up to 64 KiB; this one runs each public
//! algorithm of the crate (all but the barriers) with a contribution of
//! 1 MiB (1,048,576 bytes) per rank on communicators of 1 to 8 ranks, and
//! checks every rank's whole result against a sequential reference:
//!
//! - rooted operations (bcast, reduce, gather(v), scatter(v)) at every
//!   root;
//! - the reducing operations (reduce, allreduce, reduce-scatter(-block),
//!   scan, exscan) with a commutative predefined operation (`Sum` over
//!   `Int32`) and the non-commutative user operation [`Case::MatMul`], whose
//!   result is only right if the rank order is kept;
//! - the segmented and pipelined algorithms (`bcast_pipeline`,
//!   `reduce_pipeline`, `allreduce_segmented_ring`) with segments of 64 KiB
//!   and of 100,003 bytes (several segments, the last one shorter; the
//!   reducing ones round it down to whole elements);
//! - the `v` variants with uneven counts near 1 MiB (some ranks 0) and
//!   displacements in reverse rank order with gaps, which must be left
//!   untouched;
//! - alltoall(v) with 1 MiB per rank *in total* (blocks of about
//!   1 MiB / size): 1 MiB per block would be 8 MiB per buffer per rank at 8
//!   ranks, too much memory for a test.
//!
//! Send buffers only (`IN_PLACE` is covered by the other files at up to
//! 64 KiB).

mod common;

use std::fmt::Display;
use std::time::Duration;

use common::{bytes, check, seed, tag, Case, SIZES};
use oxmpi_collectives::testkit::{self, Options, TestTransport};
use oxmpi_collectives::{
    allgather_bruck, allgather_linear, allgather_recursive_doubling, allgather_ring,
    allgatherv_ring, allreduce_rabenseifner, allreduce_recursive_doubling, allreduce_reduce_bcast,
    allreduce_ring, allreduce_segmented_ring, alltoall_bruck, alltoall_linear, alltoall_pairwise,
    alltoallv_linear, bcast_binomial, bcast_linear, bcast_pipeline, bcast_scatter_allgather,
    block_on, exscan_linear, gather_binomial, gather_linear, gatherv_linear, reduce_binomial,
    reduce_linear, reduce_pipeline, reduce_scatter_block_ring, reduce_scatter_block_via_reduce,
    reduce_scatter_ring, reduce_scatter_via_reduce, scan_linear, scatter_binomial, scatter_linear,
    scatterv_linear, CollError, ElementType, Op, RecvBuf, Reduction, SendBuf, Transport,
};

/// One rank's contribution: 1 MiB.
const MIB: usize = 1 << 20;

/// Segment sizes for the segmented algorithms: 1 MiB is 16 segments of
/// 64 KiB, or 11 of 100,003 bytes with a short last one (the pipelines);
/// the segmented ring cuts each rank's block of about 1 MiB / size into
/// them: at least 2 phases at every size up to 8.
const SEGMENTS: &[usize] = &[64 * 1024, 100_003];

/// The reductions: commutative predefined, and non-commutative user.
const CASES: &[Case] = &[Case::Pre(Op::Sum, ElementType::Int32), Case::MatMul];

/// The roots of a rooted operation at `size`: all of them (fast enough at
/// 1 MiB; the reference is computed once per size, not per root).
fn roots(size: u32) -> Vec<u32> {
    (0..size).collect()
}

/// [`testkit::run`] with a longer wait timeout: an unoptimised build on a
/// busy machine may take a while to reduce 1 MiB at every step of a chain.
fn run<R: Send>(size: u32, f: impl Fn(&mut TestTransport) -> R + Sync) -> Vec<R> {
    let options = Options {
        timeout: Duration::from_secs(120),
        ..Options::default()
    };
    testkit::run_with(&options, size, f)
}

/// Panics with `context` if the call failed.
#[track_caller]
fn done(result: Result<(), CollError>, context: impl Display) {
    if let Err(e) = result {
        panic!("{context}: {e}");
    }
}

/// `len` deterministic bytes for the parts of a case.
fn data(parts: &[u64], len: usize) -> Vec<u8> {
    bytes(seed(parts), len)
}

/// Uneven counts `count(r)` laid out in reverse rank order with a gap of
/// 3 bytes before each region: `(counts, displacements, total length)`.
fn spread(size: u32, count: impl Fn(u32) -> usize) -> (Vec<usize>, Vec<usize>, usize) {
    let counts: Vec<usize> = (0..size).map(count).collect();
    let mut displs = vec![0; size as usize];
    let mut at = 0;
    for r in (0..size as usize).rev() {
        at += 3;
        displs[r] = at;
        at += counts[r];
    }
    (counts, displs, at + 3)
}

/// The counts of the gatherv, scatterv and allgatherv tests: about 1 MiB
/// per rank, all different, every third rank 0.
fn v_count(rank: u32) -> usize {
    if rank % 3 == 2 {
        0
    } else {
        MIB + 13 * rank as usize
    }
}

/// A buffer of `total` bytes of `fill` with `blocks[r]` at `displs[r]`.
fn place(blocks: &[Vec<u8>], displs: &[usize], total: usize, fill: u8) -> Vec<u8> {
    let mut out = vec![fill; total];
    for (block, &at) in blocks.iter().zip(displs) {
        out[at..at + block.len()].copy_from_slice(block);
    }
    out
}

// ---------------------------------------------------------------- bcast

fn check_bcast(
    name: &str,
    bcast: impl Fn(&mut TestTransport, &mut [u8], u32, i32) -> Result<(), CollError> + Sync,
) {
    for size in SIZES {
        let roots = roots(size);
        let wants: Vec<Vec<u8>> = roots
            .iter()
            .map(|&root| data(&[1, size.into(), root.into()], MIB))
            .collect();
        run(size, |t| {
            let rank = t.rank();
            for (i, (&root, want)) in roots.iter().zip(&wants).enumerate() {
                let mut buf = if rank == root {
                    want.clone()
                } else {
                    vec![0xAA; MIB]
                };
                let context = format!("bcast {name}: size {size}, root {root}, rank {rank}");
                done(bcast(t, &mut buf, root, tag(i)), &context);
                check(&buf, want, &context);
            }
        });
    }
}

#[test]
fn bcast_linear_1mib() {
    check_bcast("linear", |t, b, root, tag| {
        block_on(bcast_linear(t, b, root, tag))
    });
}

#[test]
fn bcast_binomial_1mib() {
    check_bcast("binomial", |t, b, root, tag| {
        block_on(bcast_binomial(t, b, root, tag))
    });
}

#[test]
fn bcast_pipeline_1mib() {
    for &segment in SEGMENTS {
        check_bcast(
            &format!("pipeline, segments of {segment}"),
            |t, b, root, tag| block_on(bcast_pipeline(t, b, root, segment, tag)),
        );
    }
}

#[test]
fn bcast_scatter_allgather_1mib() {
    check_bcast("scatter_allgather", |t, b, root, tag| {
        block_on(bcast_scatter_allgather(t, b, root, tag))
    });
}

// ------------------------------------------------------------ reductions

/// Every rank's input of `count` elements of a case, and the reductions of
/// the first `k + 1` inputs in rank order (`prefixes[k]`).
struct Reference {
    inputs: Vec<Vec<u8>>,
    prefixes: Vec<Vec<u8>>,
}

impl Reference {
    fn new(case: Case, size: u32, count: usize, salt: u64) -> Self {
        let inputs: Vec<Vec<u8>> = (0..size)
            .map(|r| case.input(seed(&[salt, size.into(), r.into()]), count))
            .collect();
        let mut prefixes = vec![inputs[0].clone()];
        for x in &inputs[1..] {
            let next = case.apply(prefixes.last().unwrap(), x);
            prefixes.push(next);
        }
        Reference { inputs, prefixes }
    }

    /// `x0 op x1 op … op x(n−1)`.
    fn total(&self) -> &[u8] {
        self.prefixes.last().unwrap()
    }
}

fn check_reduce(
    name: &str,
    reduce: impl Fn(
            &mut TestTransport,
            SendBuf<'_>,
            &mut [u8],
            u32,
            &mut Reduction<'_>,
            i32,
        ) -> Result<(), CollError>
        + Sync,
) {
    for size in SIZES {
        let roots = roots(size);
        for &case in CASES {
            let reference = Reference::new(case, size, MIB / case.elem_size(), 2);
            run(size, |t| {
                let rank = t.rank();
                let x = &reference.inputs[rank as usize];
                for (i, &root) in roots.iter().enumerate() {
                    let mut recv = if rank == root {
                        vec![0x55; MIB]
                    } else {
                        Vec::new()
                    };
                    let context =
                        format!("reduce {name}: size {size}, root {root}, {case:?}, rank {rank}");
                    let result =
                        case.with(|op| reduce(t, SendBuf::Buf(x), &mut recv, root, op, tag(i)));
                    done(result, &context);
                    if rank == root {
                        check(&recv, reference.total(), &context);
                    }
                }
            });
        }
    }
}

#[test]
fn reduce_linear_1mib() {
    check_reduce("linear", |t, s, r, root, op, tag| {
        block_on(reduce_linear(t, s, r, root, op, tag))
    });
}

#[test]
fn reduce_binomial_1mib() {
    check_reduce("binomial", |t, s, r, root, op, tag| {
        block_on(reduce_binomial(t, s, r, root, op, tag))
    });
}

#[test]
fn reduce_pipeline_1mib() {
    for &segment in SEGMENTS {
        check_reduce(
            &format!("pipeline, segments of {segment}"),
            |t, s, r, root, op, tag| block_on(reduce_pipeline(t, s, r, root, op, segment, tag)),
        );
    }
}

fn check_allreduce(
    name: &str,
    allreduce: impl Fn(
            &mut TestTransport,
            SendBuf<'_>,
            &mut [u8],
            &mut Reduction<'_>,
            i32,
        ) -> Result<(), CollError>
        + Sync,
) {
    for size in SIZES {
        for &case in CASES {
            let reference = Reference::new(case, size, MIB / case.elem_size(), 3);
            run(size, |t| {
                let rank = t.rank();
                let x = &reference.inputs[rank as usize];
                let mut recv = vec![0x33; MIB];
                let context = format!("allreduce {name}: size {size}, {case:?}, rank {rank}");
                let result = case.with(|op| allreduce(t, SendBuf::Buf(x), &mut recv, op, tag(0)));
                done(result, &context);
                check(&recv, reference.total(), &context);
            });
        }
    }
}

#[test]
fn allreduce_reduce_bcast_1mib() {
    check_allreduce("reduce_bcast", |t, s, r, op, tag| {
        block_on(allreduce_reduce_bcast(t, s, r, op, tag))
    });
}

#[test]
fn allreduce_recursive_doubling_1mib() {
    check_allreduce("recursive_doubling", |t, s, r, op, tag| {
        block_on(allreduce_recursive_doubling(t, s, r, op, tag))
    });
}

#[test]
fn allreduce_ring_1mib() {
    check_allreduce("ring", |t, s, r, op, tag| {
        block_on(allreduce_ring(t, s, r, op, tag))
    });
}

#[test]
fn allreduce_segmented_ring_1mib() {
    for &segment in SEGMENTS {
        check_allreduce(
            &format!("segmented_ring, segments of {segment}"),
            |t, s, r, op, tag| block_on(allreduce_segmented_ring(t, s, r, op, segment, tag)),
        );
    }
}

#[test]
fn allreduce_rabenseifner_1mib() {
    check_allreduce("rabenseifner", |t, s, r, op, tag| {
        block_on(allreduce_rabenseifner(t, s, r, op, tag))
    });
}

/// Checks a reduce-scatter: `counts[r]` elements to rank `r`, from input
/// vectors of `sum(counts)` elements. `call` gets the counts.
fn check_reduce_scatter(
    what: &str,
    counts: impl Fn(Case, u32) -> Vec<usize>,
    call: impl Fn(
            &mut TestTransport,
            SendBuf<'_>,
            &mut [u8],
            &[usize],
            &mut Reduction<'_>,
            i32,
        ) -> Result<(), CollError>
        + Sync,
) {
    for size in SIZES {
        for &case in CASES {
            let elem = case.elem_size();
            let counts = counts(case, size);
            let total: usize = counts.iter().sum();
            let reference = Reference::new(case, size, total, 4);
            let start: usize = 0;
            let starts: Vec<usize> = counts
                .iter()
                .scan(start, |at, &c| {
                    let s = *at;
                    *at += c;
                    Some(s)
                })
                .collect();
            run(size, |t| {
                let rank = t.rank() as usize;
                let x = &reference.inputs[rank];
                let mut recv = vec![0x5A; counts[rank] * elem];
                let context = format!("{what}: size {size}, {case:?}, rank {rank}");
                let result =
                    case.with(|op| call(t, SendBuf::Buf(x), &mut recv, &counts, op, tag(0)));
                done(result, &context);
                let want = &reference.total()[starts[rank] * elem..][..counts[rank] * elem];
                check(&recv, want, &context);
            });
        }
    }
}

/// Blocks of 1 MiB / size (rounded up to whole elements): input vectors
/// of 1 MiB (a little more when the size does not divide it).
fn block_counts(case: Case, size: u32) -> Vec<usize> {
    let count = (MIB / case.elem_size()).div_ceil(size as usize);
    vec![count; size as usize]
}

/// Uneven counts of 1 MiB input vectors in all: every fourth rank from
/// rank 1 gets nothing, rank 0 the rest.
fn varying_counts(case: Case, size: u32) -> Vec<usize> {
    let total = MIB / case.elem_size();
    let base = total / size as usize;
    let mut counts: Vec<usize> = (0..size as usize)
        .map(|r| if r % 4 == 1 { 0 } else { base + r })
        .collect();
    let sum: usize = counts.iter().sum();
    counts[0] += total - sum;
    counts
}

#[test]
fn reduce_scatter_block_via_reduce_1mib() {
    check_reduce_scatter(
        "reduce_scatter_block via_reduce",
        block_counts,
        |t, s, r, _, op, tag| block_on(reduce_scatter_block_via_reduce(t, s, r, op, tag)),
    );
}

#[test]
fn reduce_scatter_block_ring_1mib() {
    check_reduce_scatter(
        "reduce_scatter_block ring",
        block_counts,
        |t, s, r, _, op, tag| block_on(reduce_scatter_block_ring(t, s, r, op, tag)),
    );
}

#[test]
fn reduce_scatter_via_reduce_1mib() {
    check_reduce_scatter(
        "reduce_scatter via_reduce",
        varying_counts,
        |t, s, r, counts, op, tag| block_on(reduce_scatter_via_reduce(t, s, r, counts, op, tag)),
    );
}

#[test]
fn reduce_scatter_ring_1mib() {
    check_reduce_scatter(
        "reduce_scatter ring",
        varying_counts,
        |t, s, r, counts, op, tag| block_on(reduce_scatter_ring(t, s, r, counts, op, tag)),
    );
}

/// Scan (`exclusive = false`) or exscan: every rank's prefix; exscan
/// leaves rank 0's buffer untouched.
fn check_scan(exclusive: bool) {
    const UNTOUCHED: u8 = 0x3C;
    let name = if exclusive { "exscan" } else { "scan" };
    for size in SIZES {
        for &case in CASES {
            let reference = Reference::new(case, size, MIB / case.elem_size(), 5);
            run(size, |t| {
                let rank = t.rank() as usize;
                let x = &reference.inputs[rank];
                let mut recv = vec![UNTOUCHED; MIB];
                let context = format!("{name} linear: size {size}, {case:?}, rank {rank}");
                let result = case.with(|op| {
                    if exclusive {
                        block_on(exscan_linear(t, SendBuf::Buf(x), &mut recv, op, tag(0)))
                    } else {
                        block_on(scan_linear(t, SendBuf::Buf(x), &mut recv, op, tag(0)))
                    }
                });
                done(result, &context);
                if !exclusive {
                    check(&recv, &reference.prefixes[rank], &context);
                } else if rank > 0 {
                    check(&recv, &reference.prefixes[rank - 1], &context);
                } else {
                    check(&recv, &vec![UNTOUCHED; MIB], &context);
                }
            });
        }
    }
}

#[test]
fn scan_linear_1mib() {
    check_scan(false);
}

#[test]
fn exscan_linear_1mib() {
    check_scan(true);
}

// ------------------------------------------------------- gather, scatter

/// Rank `r`'s block of 1 MiB at `size`.
fn blocks(size: u32, salt: u64) -> Vec<Vec<u8>> {
    (0..size)
        .map(|r| data(&[salt, size.into(), r.into()], MIB))
        .collect()
}

fn check_gather(
    name: &str,
    gather: impl Fn(&mut TestTransport, SendBuf<'_>, &mut [u8], u32, i32) -> Result<(), CollError>
        + Sync,
) {
    for size in SIZES {
        let roots = roots(size);
        let blocks = blocks(size, 6);
        let want = blocks.concat();
        run(size, |t| {
            let rank = t.rank();
            for (i, &root) in roots.iter().enumerate() {
                let mut recv = if rank == root {
                    vec![0x77; MIB * size as usize]
                } else {
                    Vec::new()
                };
                let send = SendBuf::Buf(&blocks[rank as usize]);
                let context = format!("gather {name}: size {size}, root {root}, rank {rank}");
                done(gather(t, send, &mut recv, root, tag(i)), &context);
                if rank == root {
                    check(&recv, &want, &context);
                }
            }
        });
    }
}

#[test]
fn gather_linear_1mib() {
    check_gather("linear", |t, s, r, root, tag| {
        block_on(gather_linear(t, s, r, root, tag))
    });
}

#[test]
fn gather_binomial_1mib() {
    check_gather("binomial", |t, s, r, root, tag| {
        block_on(gather_binomial(t, s, r, root, tag))
    });
}

#[test]
fn gatherv_linear_1mib() {
    for size in SIZES {
        let roots = roots(size);
        let (counts, displs, total) = spread(size, v_count);
        let blocks: Vec<Vec<u8>> = (0..size)
            .map(|r| data(&[7, size.into(), r.into()], counts[r as usize]))
            .collect();
        let want = place(&blocks, &displs, total, 0x77);
        run(size, |t| {
            let rank = t.rank();
            for (i, &root) in roots.iter().enumerate() {
                let (mut recv, c, d) = if rank == root {
                    (vec![0x77; total], &counts[..], &displs[..])
                } else {
                    (Vec::new(), &[][..], &[][..])
                };
                let send = SendBuf::Buf(&blocks[rank as usize]);
                let context = format!("gatherv linear: size {size}, root {root}, rank {rank}");
                let result = block_on(gatherv_linear(t, send, &mut recv, c, d, root, tag(i)));
                done(result, &context);
                if rank == root {
                    check(&recv, &want, &context);
                }
            }
        });
    }
}

fn check_scatter(
    name: &str,
    scatter: impl Fn(&mut TestTransport, &[u8], RecvBuf<'_>, u32, i32) -> Result<(), CollError> + Sync,
) {
    for size in SIZES {
        let roots = roots(size);
        let blocks = blocks(size, 8);
        let all = blocks.concat();
        run(size, |t| {
            let rank = t.rank();
            for (i, &root) in roots.iter().enumerate() {
                let send = if rank == root { &all[..] } else { &[][..] };
                let mut recv = vec![0x66; MIB];
                let context = format!("scatter {name}: size {size}, root {root}, rank {rank}");
                done(
                    scatter(t, send, RecvBuf::Buf(&mut recv), root, tag(i)),
                    &context,
                );
                check(&recv, &blocks[rank as usize], &context);
            }
        });
    }
}

#[test]
fn scatter_linear_1mib() {
    check_scatter("linear", |t, s, r, root, tag| {
        block_on(scatter_linear(t, s, r, root, tag))
    });
}

#[test]
fn scatter_binomial_1mib() {
    check_scatter("binomial", |t, s, r, root, tag| {
        block_on(scatter_binomial(t, s, r, root, tag))
    });
}

#[test]
fn scatterv_linear_1mib() {
    for size in SIZES {
        let roots = roots(size);
        let (counts, displs, total) = spread(size, v_count);
        let blocks: Vec<Vec<u8>> = (0..size)
            .map(|r| data(&[9, size.into(), r.into()], counts[r as usize]))
            .collect();
        let all = place(&blocks, &displs, total, 0x11);
        run(size, |t| {
            let rank = t.rank();
            for (i, &root) in roots.iter().enumerate() {
                let (send, c, d) = if rank == root {
                    (&all[..], &counts[..], &displs[..])
                } else {
                    (&[][..], &[][..], &[][..])
                };
                let mut recv = vec![0x66; counts[rank as usize]];
                let context = format!("scatterv linear: size {size}, root {root}, rank {rank}");
                let target = RecvBuf::Buf(&mut recv);
                let result = block_on(scatterv_linear(t, send, c, d, target, root, tag(i)));
                done(result, &context);
                check(&recv, &blocks[rank as usize], &context);
            }
        });
    }
}

// ------------------------------------------------------------- allgather

fn check_allgather(
    name: &str,
    allgather: impl Fn(&mut TestTransport, SendBuf<'_>, &mut [u8], i32) -> Result<(), CollError> + Sync,
) {
    for size in SIZES {
        let blocks = blocks(size, 10);
        let want = blocks.concat();
        run(size, |t| {
            let rank = t.rank();
            let mut recv = vec![0x44; MIB * size as usize];
            let send = SendBuf::Buf(&blocks[rank as usize]);
            let context = format!("allgather {name}: size {size}, rank {rank}");
            done(allgather(t, send, &mut recv, tag(0)), &context);
            check(&recv, &want, &context);
        });
    }
}

#[test]
fn allgather_linear_1mib() {
    check_allgather("linear", |t, s, r, tag| {
        block_on(allgather_linear(t, s, r, tag))
    });
}

#[test]
fn allgather_ring_1mib() {
    check_allgather("ring", |t, s, r, tag| {
        block_on(allgather_ring(t, s, r, tag))
    });
}

#[test]
fn allgather_bruck_1mib() {
    check_allgather("bruck", |t, s, r, tag| {
        block_on(allgather_bruck(t, s, r, tag))
    });
}

#[test]
fn allgather_recursive_doubling_1mib() {
    check_allgather("recursive_doubling", |t, s, r, tag| {
        block_on(allgather_recursive_doubling(t, s, r, tag))
    });
}

#[test]
fn allgatherv_ring_1mib() {
    for size in SIZES {
        let (counts, displs, total) = spread(size, v_count);
        let blocks: Vec<Vec<u8>> = (0..size)
            .map(|r| data(&[11, size.into(), r.into()], counts[r as usize]))
            .collect();
        let want = place(&blocks, &displs, total, 0x44);
        run(size, |t| {
            let rank = t.rank();
            let mut recv = vec![0x44; total];
            let send = SendBuf::Buf(&blocks[rank as usize]);
            let context = format!("allgatherv ring: size {size}, rank {rank}");
            let result = block_on(allgatherv_ring(
                t,
                send,
                &mut recv,
                &counts,
                &displs,
                tag(0),
            ));
            done(result, &context);
            check(&recv, &want, &context);
        });
    }
}

// -------------------------------------------------------------- alltoall

fn check_alltoall(
    name: &str,
    alltoall: impl Fn(&mut TestTransport, SendBuf<'_>, &mut [u8], i32) -> Result<(), CollError> + Sync,
) {
    for size in SIZES {
        // 1 MiB per rank in total, not per block (see the top of the file):
        // blocks of 1 MiB / size, rounded up (odd lengths at 3, 5, 6, 7).
        let len = MIB.div_ceil(size as usize);
        let block = |from: u32, to: u32| data(&[12, size.into(), from.into(), to.into()], len);
        let inputs: Vec<Vec<u8>> = (0..size)
            .map(|from| (0..size).flat_map(|to| block(from, to)).collect())
            .collect();
        let wants: Vec<Vec<u8>> = (0..size)
            .map(|to| (0..size).flat_map(|from| block(from, to)).collect())
            .collect();
        run(size, |t| {
            let rank = t.rank() as usize;
            let mut recv = vec![0x22; len * size as usize];
            let send = SendBuf::Buf(&inputs[rank]);
            let context = format!("alltoall {name}: size {size}, block {len}, rank {rank}");
            done(alltoall(t, send, &mut recv, tag(0)), &context);
            check(&recv, &wants[rank], &context);
        });
    }
}

#[test]
fn alltoall_linear_1mib() {
    check_alltoall("linear", |t, s, r, tag| {
        block_on(alltoall_linear(t, s, r, tag))
    });
}

#[test]
fn alltoall_pairwise_1mib() {
    check_alltoall("pairwise", |t, s, r, tag| {
        block_on(alltoall_pairwise(t, s, r, tag))
    });
}

#[test]
fn alltoall_bruck_1mib() {
    check_alltoall("bruck", |t, s, r, tag| {
        block_on(alltoall_bruck(t, s, r, tag))
    });
}

#[test]
fn alltoallv_linear_1mib() {
    for size in SIZES {
        // About 1 MiB per rank in total (see the top of the file): blocks
        // around 1 MiB / size, all different, some 0.
        let base = MIB / size as usize;
        let count = |from: u32, to: u32| {
            if (from + 2 * to) % 4 == 3 {
                0
            } else {
                base + (7 * from + 13 * to) as usize
            }
        };
        let block =
            |from: u32, to: u32| data(&[13, size.into(), from.into(), to.into()], count(from, to));
        // Per rank: its send layout and buffer, its receive layout and the
        // expected receive buffer (gaps untouched).
        let layouts: Vec<_> = (0..size)
            .map(|me| {
                let (sc, sd, stotal) = spread(size, |to| count(me, to));
                let send_blocks: Vec<Vec<u8>> = (0..size).map(|to| block(me, to)).collect();
                let send = place(&send_blocks, &sd, stotal, 0x99);
                let (rc, rd, rtotal) = spread(size, |from| count(from, me));
                let recv_blocks: Vec<Vec<u8>> = (0..size).map(|from| block(from, me)).collect();
                let want = place(&recv_blocks, &rd, rtotal, 0x22);
                (sc, sd, send, rc, rd, want)
            })
            .collect();
        run(size, |t| {
            let rank = t.rank() as usize;
            let (sc, sd, send, rc, rd, want) = &layouts[rank];
            let mut recv = vec![0x22; want.len()];
            let context = format!("alltoallv linear: size {size}, rank {rank}");
            let result = block_on(alltoallv_linear(
                t,
                SendBuf::Buf(send),
                sc,
                sd,
                &mut recv,
                rc,
                rd,
                tag(0),
            ));
            done(result, &context);
            check(&recv, want, &context);
        });
    }
}
