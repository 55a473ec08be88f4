//! Allreduce: every rank gets `x0 op … op x(n−1)` in rank order.

mod common;

use common::{check, counts, seed, small_counts, tag, Case, CASES, SIZES};
use oxmpi_collectives::block_on;
use oxmpi_collectives::testkit::{self, TestTransport};
use oxmpi_collectives::{
    allreduce_rabenseifner, allreduce_recursive_doubling, allreduce_reduce_bcast, allreduce_ring,
    allreduce_segmented_ring, CollError, Reduction, SendBuf, Transport,
};

type Allreduce = fn(
    &mut TestTransport,
    SendBuf<'_>,
    &mut [u8],
    &mut Reduction<'_>,
    i32,
) -> Result<(), CollError>;

fn input(case: Case, rank: u32, count: usize) -> Vec<u8> {
    case.input(seed(&[rank.into(), count as u64, 7]), count)
}

/// Every size, case and count, with a send buffer and `IN_PLACE`; checks
/// every rank's result.
fn check_allreduce(name: &str, allreduce: Allreduce, counts: fn(Case) -> Vec<usize>) {
    for size in SIZES {
        let results = testkit::run(size, |t| {
            let mut out = Vec::new();
            let mut call = 0;
            for &case in CASES {
                for count in counts(case) {
                    let x = input(case, t.rank(), count);
                    for in_place in [false, true] {
                        let mut recv = if in_place {
                            x.clone()
                        } else {
                            vec![0x33; x.len()]
                        };
                        let send = if in_place {
                            SendBuf::InPlace
                        } else {
                            SendBuf::Buf(&x)
                        };
                        case.with(|op| allreduce(t, send, &mut recv, op, tag(call)))
                            .unwrap();
                        call += 1;
                        out.push(recv);
                    }
                }
            }
            out
        });
        let mut i = 0;
        for &case in CASES {
            for count in counts(case) {
                let inputs: Vec<Vec<u8>> = (0..size).map(|r| input(case, r, count)).collect();
                let want = case.fold(&inputs);
                for in_place in [false, true] {
                    for (rank, got) in results.iter().enumerate() {
                        check(
                            &got[i],
                            &want,
                            format_args!("{name}: size {size}, {case:?}, count {count}, in place {in_place}, rank {rank}"),
                        );
                    }
                    i += 1;
                }
            }
        }
    }
}

#[test]
fn allreduce_reduce_bcast_all_cases() {
    check_allreduce(
        "reduce_bcast",
        |a0, a1, a2, a3, a4| block_on(allreduce_reduce_bcast(a0, a1, a2, a3, a4)),
        counts,
    );
}

#[test]
fn allreduce_recursive_doubling_all_cases() {
    check_allreduce(
        "recursive_doubling",
        |a0, a1, a2, a3, a4| block_on(allreduce_recursive_doubling(a0, a1, a2, a3, a4)),
        counts,
    );
}

#[test]
fn allreduce_ring_all_cases() {
    check_allreduce(
        "ring",
        |a0, a1, a2, a3, a4| block_on(allreduce_ring(a0, a1, a2, a3, a4)),
        counts,
    );
}

#[test]
fn allreduce_segmented_ring_all_cases() {
    check_allreduce(
        "segmented_ring 1000",
        |t, s, r, op, tag| block_on(allreduce_segmented_ring(t, s, r, op, 1000, tag)),
        counts,
    );
    // Segments of one element (smaller than an element rounds up).
    check_allreduce(
        "segmented_ring 1",
        |t, s, r, op, tag| block_on(allreduce_segmented_ring(t, s, r, op, 1, tag)),
        small_counts,
    );
}

#[test]
fn allreduce_rabenseifner_all_cases() {
    check_allreduce(
        "rabenseifner",
        |a0, a1, a2, a3, a4| block_on(allreduce_rabenseifner(a0, a1, a2, a3, a4)),
        counts,
    );
}
