//! Reduce-scatter(-block): rank `i` gets block `i` of the rank-order
//! reduction of every rank's vector.

mod common;

use common::{check, counts, seed, tag, Case, CASES, SIZES};
use oxmpi_collectives::block_on;
use oxmpi_collectives::testkit::{self, TestTransport};
use oxmpi_collectives::{
    reduce_scatter_block_ring, reduce_scatter_block_via_reduce, reduce_scatter_ring,
    reduce_scatter_via_reduce, CollError, Reduction, SendBuf, Transport,
};

type Block = fn(
    &mut TestTransport,
    SendBuf<'_>,
    &mut [u8],
    &mut Reduction<'_>,
    i32,
) -> Result<(), CollError>;
type Varying = fn(
    &mut TestTransport,
    SendBuf<'_>,
    &mut [u8],
    &[usize],
    &mut Reduction<'_>,
    i32,
) -> Result<(), CollError>;

fn input(case: Case, rank: u32, count: usize) -> Vec<u8> {
    case.input(seed(&[rank.into(), count as u64, 23]), count)
}

/// Per-rank counts for a base count (some zero, uneven).
fn rank_counts(size: u32, base: usize) -> Vec<usize> {
    (0..size as usize)
        .map(|r| {
            if r % 4 == 1 {
                0
            } else {
                base / (size as usize) + r
            }
        })
        .collect()
}

/// Runs `f(t, case, counts, send, recv)` for every case and base count and
/// both `IN_PLACE` settings, and checks each rank's block against the
/// reference.
fn check_all(
    name: &str,
    layout: fn(u32, Case, usize) -> Vec<usize>,
    call: impl Fn(&mut TestTransport, Case, &[usize], SendBuf<'_>, &mut [u8], i32) + Sync,
) {
    for size in SIZES {
        let results = testkit::run(size, |t| {
            let rank = t.rank() as usize;
            let mut out = Vec::new();
            let mut n = 0;
            for &case in CASES {
                for base in counts(case) {
                    let per_rank = layout(size, case, base);
                    let total: usize = per_rank.iter().sum();
                    let elem = case.elem_size();
                    let x = input(case, t.rank(), total);
                    for in_place in [false, true] {
                        let mut recv = if in_place {
                            x.clone()
                        } else {
                            vec![0x5A; per_rank[rank] * elem]
                        };
                        let send = if in_place {
                            SendBuf::InPlace
                        } else {
                            SendBuf::Buf(&x)
                        };
                        call(t, case, &per_rank, send, &mut recv, tag(n));
                        n += 1;
                        recv.truncate(per_rank[rank] * elem);
                        out.push(recv);
                    }
                }
            }
            out
        });
        let mut i = 0;
        for &case in CASES {
            for base in counts(case) {
                let per_rank = layout(size, case, base);
                let total: usize = per_rank.iter().sum();
                let elem = case.elem_size();
                let inputs: Vec<Vec<u8>> = (0..size).map(|r| input(case, r, total)).collect();
                let all = case.fold(&inputs);
                for in_place in [false, true] {
                    let mut start = 0;
                    for (rank, got) in results.iter().enumerate() {
                        let want = &all[start * elem..(start + per_rank[rank]) * elem];
                        start += per_rank[rank];
                        let context = format_args!("{name}: size {size}, {case:?}, base {base}, in place {in_place}, rank {rank}");
                        check(&got[i], want, context);
                    }
                    i += 1;
                }
            }
        }
    }
}

/// Block counts: the base count split over the ranks (64 KiB in all for
/// the largest).
fn block_layout(size: u32, _: Case, base: usize) -> Vec<usize> {
    vec![base.div_ceil(size as usize); size as usize]
}

fn varying_layout(size: u32, _: Case, base: usize) -> Vec<usize> {
    rank_counts(size, base)
}

fn check_block(name: &str, f: Block) {
    check_all(name, block_layout, |t, case, _, send, recv, tag| {
        case.with(|op| f(t, send, recv, op, tag)).unwrap();
    });
}

fn check_varying(name: &str, f: Varying) {
    check_all(name, varying_layout, |t, case, counts, send, recv, tag| {
        case.with(|op| f(t, send, recv, counts, op, tag)).unwrap();
    });
}

#[test]
fn reduce_scatter_block_via_reduce_all_cases() {
    check_block("block via reduce", |a0, a1, a2, a3, a4| {
        block_on(reduce_scatter_block_via_reduce(a0, a1, a2, a3, a4))
    });
}

#[test]
fn reduce_scatter_block_ring_all_cases() {
    check_block("block ring", |a0, a1, a2, a3, a4| {
        block_on(reduce_scatter_block_ring(a0, a1, a2, a3, a4))
    });
}

#[test]
fn reduce_scatter_via_reduce_all_cases() {
    check_varying("via reduce", |a0, a1, a2, a3, a4, a5| {
        block_on(reduce_scatter_via_reduce(a0, a1, a2, a3, a4, a5))
    });
}

#[test]
fn reduce_scatter_ring_all_cases() {
    check_varying("ring", |a0, a1, a2, a3, a4, a5| {
        block_on(reduce_scatter_ring(a0, a1, a2, a3, a4, a5))
    });
}
