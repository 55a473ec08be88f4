//! Allgather(v): every rank gets every rank's block in rank order.

mod common;

use common::{bytes, check, seed, tag, LENS, SIZES};
use oxmpi_collectives::block_on;
use oxmpi_collectives::testkit::{self, TestTransport};
use oxmpi_collectives::{
    allgather_bruck, allgather_linear, allgather_recursive_doubling, allgather_ring,
    allgatherv_ring, CollError, SendBuf, Transport,
};

type Allgather = fn(&mut TestTransport, SendBuf<'_>, &mut [u8], i32) -> Result<(), CollError>;

fn block(rank: u32, len: usize) -> Vec<u8> {
    bytes(seed(&[rank.into(), len as u64, 17]), len)
}

fn check_allgather(name: &str, allgather: Allgather) {
    for size in SIZES {
        let results = testkit::run(size, |t| {
            let rank = t.rank();
            let mut out = Vec::new();
            let mut call = 0;
            for &len in LENS {
                for in_place in [false, true] {
                    let own = block(rank, len);
                    let mut recv = vec![0x44; len * size as usize];
                    if in_place {
                        recv[rank as usize * len..][..len].copy_from_slice(&own);
                    }
                    let send = if in_place {
                        SendBuf::InPlace
                    } else {
                        SendBuf::Buf(&own)
                    };
                    allgather(t, send, &mut recv, tag(call)).unwrap();
                    call += 1;
                    out.push(recv);
                }
            }
            out
        });
        let mut i = 0;
        for &len in LENS {
            let want: Vec<u8> = (0..size).flat_map(|r| block(r, len)).collect();
            for in_place in [false, true] {
                for (rank, got) in results.iter().enumerate() {
                    let context = format_args!(
                        "{name}: size {size}, len {len}, in place {in_place}, rank {rank}"
                    );
                    check(&got[i], &want, context);
                }
                i += 1;
            }
        }
    }
}

#[test]
fn allgather_linear_all_cases() {
    check_allgather("linear", |a0, a1, a2, a3| {
        block_on(allgather_linear(a0, a1, a2, a3))
    });
}

#[test]
fn allgather_ring_all_cases() {
    check_allgather("ring", |a0, a1, a2, a3| {
        block_on(allgather_ring(a0, a1, a2, a3))
    });
}

#[test]
fn allgather_recursive_doubling_all_cases() {
    check_allgather("recursive_doubling", |a0, a1, a2, a3| {
        block_on(allgather_recursive_doubling(a0, a1, a2, a3))
    });
}

#[test]
fn allgather_bruck_all_cases() {
    check_allgather("bruck", |a0, a1, a2, a3| {
        block_on(allgather_bruck(a0, a1, a2, a3))
    });
}

#[test]
fn allgatherv_ring_all_cases() {
    for size in SIZES {
        let layout = |len: usize| {
            let counts: Vec<usize> = (0..size as usize)
                .map(|r| if r == 1 { 0 } else { (len + r * 5) / (r + 1) })
                .collect();
            // Reverse rank order, gaps of 2 bytes.
            let mut displs = vec![0; size as usize];
            let mut at = 0;
            for r in (0..size as usize).rev() {
                displs[r] = at;
                at += counts[r] + 2;
            }
            (counts, displs, at)
        };
        let results = testkit::run(size, |t| {
            let rank = t.rank();
            let mut out = Vec::new();
            let mut call = 0;
            for &len in LENS {
                let (counts, displs, total) = layout(len);
                for in_place in [false, true] {
                    let own = block(rank, counts[rank as usize]);
                    let mut recv = vec![0x44; total];
                    if in_place {
                        recv[displs[rank as usize]..][..own.len()].copy_from_slice(&own);
                    }
                    let send = if in_place {
                        SendBuf::InPlace
                    } else {
                        SendBuf::Buf(&own)
                    };
                    block_on(allgatherv_ring(
                        t,
                        send,
                        &mut recv,
                        &counts,
                        &displs,
                        tag(call),
                    ))
                    .unwrap();
                    call += 1;
                    out.push(recv);
                }
            }
            out
        });
        let mut i = 0;
        for &len in LENS {
            let (counts, displs, total) = layout(len);
            let mut want = vec![0x44; total];
            for r in 0..size as usize {
                want[displs[r]..][..counts[r]].copy_from_slice(&block(r as u32, counts[r]));
            }
            for in_place in [false, true] {
                for (rank, got) in results.iter().enumerate() {
                    let context = format_args!(
                        "allgatherv: size {size}, len {len}, in place {in_place}, rank {rank}"
                    );
                    check(&got[i], &want, context);
                }
                i += 1;
            }
        }
    }
}
