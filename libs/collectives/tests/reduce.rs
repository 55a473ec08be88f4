//! Reduce: the root gets `x0 op … op x(n−1)` in rank order.

mod common;

use common::{check, counts, seed, small_counts, tag, Case, CASES, FEW_CASES, SIZES};
use oxmpi_collectives::block_on;
use oxmpi_collectives::testkit::{self, TestTransport};
use oxmpi_collectives::{
    reduce_binomial, reduce_linear, reduce_pipeline, CollError, Reduction, SendBuf, Transport,
};

type Reduce = fn(
    &mut TestTransport,
    SendBuf<'_>,
    &mut [u8],
    u32,
    &mut Reduction<'_>,
    i32,
) -> Result<(), CollError>;

fn input(case: Case, rank: u32, count: usize) -> Vec<u8> {
    case.input(seed(&[rank.into(), count as u64]), count)
}

/// Every size, case, count and root, with a send buffer and with
/// `IN_PLACE` at the root; checks the root's result.
fn check_reduce(name: &str, reduce: Reduce, cases: &[Case], counts: fn(Case) -> Vec<usize>) {
    for size in SIZES {
        let results = testkit::run(size, |t| {
            let rank = t.rank();
            let mut out = Vec::new();
            let mut call = 0;
            for &case in cases {
                for count in counts(case) {
                    let x = input(case, rank, count);
                    for root in 0..size {
                        for in_place in [false, true] {
                            let mut recv = if rank != root {
                                Vec::new()
                            } else if in_place {
                                x.clone()
                            } else {
                                vec![0x55; x.len()]
                            };
                            let send = if in_place && rank == root {
                                SendBuf::InPlace
                            } else {
                                SendBuf::Buf(&x)
                            };
                            case.with(|op| reduce(t, send, &mut recv, root, op, tag(call)))
                                .unwrap();
                            call += 1;
                            if rank == root {
                                out.push(recv);
                            }
                        }
                    }
                }
            }
            out
        });
        let mut next = vec![0; size as usize];
        for &case in cases {
            for count in counts(case) {
                let inputs: Vec<Vec<u8>> = (0..size).map(|r| input(case, r, count)).collect();
                let want = case.fold(&inputs);
                for root in 0..size {
                    for in_place in [false, true] {
                        let i = &mut next[root as usize];
                        check(
                            &results[root as usize][*i],
                            &want,
                            format_args!("{name}: size {size}, {case:?}, count {count}, root {root}, in place {in_place}"),
                        );
                        *i += 1;
                    }
                }
            }
        }
    }
}

#[test]
fn reduce_linear_all_cases() {
    check_reduce(
        "linear",
        |a0, a1, a2, a3, a4, a5| block_on(reduce_linear(a0, a1, a2, a3, a4, a5)),
        CASES,
        counts,
    );
}

#[test]
fn reduce_binomial_all_cases() {
    check_reduce(
        "binomial",
        |a0, a1, a2, a3, a4, a5| block_on(reduce_binomial(a0, a1, a2, a3, a4, a5)),
        CASES,
        counts,
    );
}

#[test]
fn reduce_pipeline_all_cases() {
    check_reduce(
        "pipeline 1000",
        |t, s, r, root, op, tag| block_on(reduce_pipeline(t, s, r, root, op, 1000, tag)),
        CASES,
        counts,
    );
}

#[test]
fn reduce_pipeline_small_segments() {
    // Segments smaller than an element round up to one element (small
    // counts only: 64 KiB in one-element segments would only measure the
    // test transport).
    check_reduce(
        "pipeline 1",
        |t, s, r, root, op, tag| block_on(reduce_pipeline(t, s, r, root, op, 1, tag)),
        FEW_CASES,
        small_counts,
    );
    check_reduce(
        "pipeline 12",
        |t, s, r, root, op, tag| block_on(reduce_pipeline(t, s, r, root, op, 12, tag)),
        CASES,
        small_counts,
    );
}
