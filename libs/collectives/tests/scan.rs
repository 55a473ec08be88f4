//! Scan and exscan: prefix reductions in rank order.

mod common;

use common::{check, counts, seed, tag, Case, CASES, SIZES};
use oxmpi_collectives::block_on;
use oxmpi_collectives::testkit;
use oxmpi_collectives::{exscan_linear, scan_linear, SendBuf, Transport};

fn input(case: Case, rank: u32, count: usize) -> Vec<u8> {
    case.input(seed(&[rank.into(), count as u64, 29]), count)
}

/// Runs scan (`exclusive = false`) or exscan over every size, case, count
/// and `IN_PLACE` setting and checks every rank's prefix.
fn check_scan(exclusive: bool) {
    const UNTOUCHED: u8 = 0x3C;
    for size in SIZES {
        let results = testkit::run(size, |t| {
            let mut out = Vec::new();
            let mut call = 0;
            for &case in CASES {
                for count in counts(case) {
                    let x = input(case, t.rank(), count);
                    for in_place in [false, true] {
                        let (mut recv, send) = if in_place {
                            (x.clone(), SendBuf::InPlace)
                        } else {
                            (vec![UNTOUCHED; x.len()], SendBuf::Buf(&x))
                        };
                        case.with(|op| {
                            if exclusive {
                                block_on(exscan_linear(t, send, &mut recv, op, tag(call)))
                            } else {
                                block_on(scan_linear(t, send, &mut recv, op, tag(call)))
                            }
                        })
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
                for in_place in [false, true] {
                    for (rank, got) in results.iter().enumerate() {
                        let want = if !exclusive {
                            case.fold(&inputs[..=rank])
                        } else if rank > 0 {
                            case.fold(&inputs[..rank])
                        } else if in_place {
                            // Rank 0's result is undefined; its buffer is left
                            // as it was (holding its input).
                            inputs[0].clone()
                        } else {
                            vec![UNTOUCHED; inputs[0].len()]
                        };
                        let name = if exclusive { "exscan" } else { "scan" };
                        let context = format_args!("{name}: size {size}, {case:?}, count {count}, in place {in_place}, rank {rank}");
                        check(&got[i], &want, context);
                    }
                    i += 1;
                }
            }
        }
    }
}

#[test]
fn scan_linear_all_cases() {
    check_scan(false);
}

#[test]
fn exscan_linear_all_cases() {
    check_scan(true);
}
