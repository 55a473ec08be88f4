//! Gather(v) and scatter(v), linear and binomial, every root, with
//! `IN_PLACE` at the root.

mod common;

use common::{bytes, check, seed, tag, LENS, SIZES};
use oxmpi_collectives::block_on;
use oxmpi_collectives::testkit::{self, TestTransport};
use oxmpi_collectives::{
    gather_binomial, gather_linear, gatherv_linear, scatter_binomial, scatter_linear,
    scatterv_linear, CollError, RecvBuf, SendBuf, Transport,
};

type Gather = fn(&mut TestTransport, SendBuf<'_>, &mut [u8], u32, i32) -> Result<(), CollError>;
type Scatter = fn(&mut TestTransport, &[u8], RecvBuf<'_>, u32, i32) -> Result<(), CollError>;

fn block(rank: u32, len: usize, root: u32) -> Vec<u8> {
    bytes(seed(&[rank.into(), len as u64, root.into(), 11]), len)
}

fn check_gather(name: &str, gather: Gather) {
    for size in SIZES {
        let results = testkit::run(size, |t| {
            let rank = t.rank();
            let mut out = Vec::new();
            let mut call = 0;
            for &len in LENS {
                for root in 0..size {
                    for in_place in [false, true] {
                        let own = block(rank, len, root);
                        let mut recv = Vec::new();
                        if rank == root {
                            recv = vec![0x77; len * size as usize];
                            if in_place {
                                recv[rank as usize * len..][..len].copy_from_slice(&own);
                            }
                        }
                        let send = if in_place && rank == root {
                            SendBuf::InPlace
                        } else {
                            SendBuf::Buf(&own)
                        };
                        gather(t, send, &mut recv, root, tag(call)).unwrap();
                        call += 1;
                        out.push(recv);
                    }
                }
            }
            out
        });
        let mut i = 0;
        for &len in LENS {
            for root in 0..size {
                let want: Vec<u8> = (0..size).flat_map(|r| block(r, len, root)).collect();
                for in_place in [false, true] {
                    let context = format_args!(
                        "{name}: size {size}, len {len}, root {root}, in place {in_place}"
                    );
                    check(&results[root as usize][i], &want, context);
                    i += 1;
                }
            }
        }
    }
}

fn check_scatter(name: &str, scatter: Scatter) {
    for size in SIZES {
        let results = testkit::run(size, |t| {
            let rank = t.rank();
            let mut out = Vec::new();
            let mut call = 0;
            for &len in LENS {
                for root in 0..size {
                    for in_place in [false, true] {
                        let send: Vec<u8> = if rank == root {
                            (0..size).flat_map(|r| block(r, len, root)).collect()
                        } else {
                            Vec::new()
                        };
                        let mut recv = vec![0x66; len];
                        let target = if in_place && rank == root {
                            RecvBuf::InPlace
                        } else {
                            RecvBuf::Buf(&mut recv)
                        };
                        scatter(t, &send, target, root, tag(call)).unwrap();
                        call += 1;
                        out.push(recv);
                    }
                }
            }
            out
        });
        for (rank, got) in results.iter().enumerate() {
            let mut i = 0;
            for &len in LENS {
                for root in 0..size {
                    for in_place in [false, true] {
                        let context = format_args!(
                            "{name}: size {size}, len {len}, root {root}, rank {rank}"
                        );
                        if in_place && rank as u32 == root {
                            // IN_PLACE at the root: its receive buffer is untouched.
                            check(&got[i], &vec![0x66; len], context);
                        } else {
                            check(&got[i], &block(rank as u32, len, root), context);
                        }
                        i += 1;
                    }
                }
            }
        }
    }
}

#[test]
fn gather_linear_all_cases() {
    check_gather("gather_linear", |a0, a1, a2, a3, a4| {
        block_on(gather_linear(a0, a1, a2, a3, a4))
    });
}

#[test]
fn gather_binomial_all_cases() {
    check_gather("gather_binomial", |a0, a1, a2, a3, a4| {
        block_on(gather_binomial(a0, a1, a2, a3, a4))
    });
}

#[test]
fn scatter_linear_all_cases() {
    check_scatter("scatter_linear", |a0, a1, a2, a3, a4| {
        block_on(scatter_linear(a0, a1, a2, a3, a4))
    });
}

#[test]
fn scatter_binomial_all_cases() {
    check_scatter("scatter_binomial", |a0, a1, a2, a3, a4| {
        block_on(scatter_binomial(a0, a1, a2, a3, a4))
    });
}

/// Counts that vary per rank (some zero) and displacements in reverse
/// rank order with gaps between the regions.
fn layout(size: u32, len: usize) -> (Vec<usize>, Vec<usize>, usize) {
    let counts: Vec<usize> = (0..size as usize)
        .map(|r| {
            if r % 3 == 2 {
                0
            } else {
                len * (r + 1) / size as usize + r % 2
            }
        })
        .collect();
    let mut displs = vec![0; size as usize];
    let mut at = 1;
    for r in (0..size as usize).rev() {
        displs[r] = at;
        at += counts[r] + 3;
    }
    (counts, displs, at)
}

fn vblock(rank: u32, count: usize, root: u32) -> Vec<u8> {
    bytes(seed(&[rank.into(), count as u64, root.into(), 13]), count)
}

#[test]
fn gatherv_linear_all_cases() {
    for size in SIZES {
        let results = testkit::run(size, |t| {
            let rank = t.rank();
            let mut out = Vec::new();
            let mut call = 0;
            for &len in LENS {
                let (counts, displs, total) = layout(size, len);
                for root in 0..size {
                    for in_place in [false, true] {
                        let own = vblock(rank, counts[rank as usize], root);
                        let mut recv = Vec::new();
                        if rank == root {
                            recv = vec![0x77; total];
                            if in_place {
                                recv[displs[rank as usize]..][..own.len()].copy_from_slice(&own);
                            }
                        }
                        let send = if in_place && rank == root {
                            SendBuf::InPlace
                        } else {
                            SendBuf::Buf(&own)
                        };
                        let (c, d) = if rank == root {
                            (&counts[..], &displs[..])
                        } else {
                            (&[][..], &[][..])
                        };
                        block_on(gatherv_linear(t, send, &mut recv, c, d, root, tag(call)))
                            .unwrap();
                        call += 1;
                        out.push(recv);
                    }
                }
            }
            out
        });
        let mut i = 0;
        for &len in LENS {
            let (counts, displs, total) = layout(size, len);
            for root in 0..size {
                let mut want = vec![0x77; total];
                for r in 0..size {
                    want[displs[r as usize]..][..counts[r as usize]].copy_from_slice(&vblock(
                        r,
                        counts[r as usize],
                        root,
                    ));
                }
                for in_place in [false, true] {
                    let context = format_args!(
                        "gatherv: size {size}, len {len}, root {root}, in place {in_place}"
                    );
                    check(&results[root as usize][i], &want, context);
                    i += 1;
                }
            }
        }
    }
}

#[test]
fn scatterv_linear_all_cases() {
    for size in SIZES {
        let results = testkit::run(size, |t| {
            let rank = t.rank();
            let mut out = Vec::new();
            let mut call = 0;
            for &len in LENS {
                let (counts, displs, total) = layout(size, len);
                for root in 0..size {
                    for in_place in [false, true] {
                        let mut send = Vec::new();
                        if rank == root {
                            send = vec![0x11; total];
                            for r in 0..size as usize {
                                send[displs[r]..][..counts[r]]
                                    .copy_from_slice(&vblock(r as u32, counts[r], root));
                            }
                        }
                        let mut recv = vec![0x66; counts[rank as usize]];
                        let target = if in_place && rank == root {
                            RecvBuf::InPlace
                        } else {
                            RecvBuf::Buf(&mut recv)
                        };
                        let (c, d) = if rank == root {
                            (&counts[..], &displs[..])
                        } else {
                            (&[][..], &[][..])
                        };
                        block_on(scatterv_linear(t, &send, c, d, target, root, tag(call))).unwrap();
                        call += 1;
                        out.push(recv);
                    }
                }
            }
            out
        });
        for (rank, got) in results.iter().enumerate() {
            let mut i = 0;
            for &len in LENS {
                let (counts, _, _) = layout(size, len);
                let count = counts[rank];
                for root in 0..size {
                    for in_place in [false, true] {
                        let context = format_args!(
                            "scatterv: size {size}, len {len}, root {root}, rank {rank}"
                        );
                        if in_place && rank as u32 == root {
                            check(&got[i], &vec![0x66; count], context);
                        } else {
                            check(&got[i], &vblock(rank as u32, count, root), context);
                        }
                        i += 1;
                    }
                }
            }
        }
    }
}
