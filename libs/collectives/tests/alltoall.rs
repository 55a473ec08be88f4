//! Alltoall(v): block `j` of rank `i` becomes block `i` of rank `j`.

mod common;

use common::{bytes, check, seed, tag, LENS, SIZES};
use oxmpi_collectives::block_on;
use oxmpi_collectives::testkit::{self, TestTransport};
use oxmpi_collectives::{
    alltoall_bruck, alltoall_linear, alltoall_pairwise, alltoallv_linear, CollError, SendBuf,
    Transport,
};

type Alltoall = fn(&mut TestTransport, SendBuf<'_>, &mut [u8], i32) -> Result<(), CollError>;

/// The block rank `from` sends to rank `to`.
fn block(from: u32, to: u32, len: usize) -> Vec<u8> {
    bytes(seed(&[from.into(), to.into(), len as u64, 19]), len)
}

fn check_alltoall(name: &str, alltoall: Alltoall) {
    for size in SIZES {
        let results = testkit::run(size, |t| {
            let rank = t.rank();
            let mut out = Vec::new();
            let mut call = 0;
            for &len in LENS {
                for in_place in [false, true] {
                    let input: Vec<u8> = (0..size).flat_map(|to| block(rank, to, len)).collect();
                    let mut recv = if in_place {
                        input.clone()
                    } else {
                        vec![0x22; input.len()]
                    };
                    let send = if in_place {
                        SendBuf::InPlace
                    } else {
                        SendBuf::Buf(&input)
                    };
                    alltoall(t, send, &mut recv, tag(call)).unwrap();
                    call += 1;
                    out.push(recv);
                }
            }
            out
        });
        for (rank, got) in results.iter().enumerate() {
            let mut i = 0;
            for &len in LENS {
                let want: Vec<u8> = (0..size)
                    .flat_map(|from| block(from, rank as u32, len))
                    .collect();
                for in_place in [false, true] {
                    let context = format_args!(
                        "{name}: size {size}, len {len}, in place {in_place}, rank {rank}"
                    );
                    check(&got[i], &want, context);
                    i += 1;
                }
            }
        }
    }
}

#[test]
fn alltoall_linear_all_cases() {
    check_alltoall("linear", |a0, a1, a2, a3| {
        block_on(alltoall_linear(a0, a1, a2, a3))
    });
}

#[test]
fn alltoall_pairwise_all_cases() {
    check_alltoall("pairwise", |a0, a1, a2, a3| {
        block_on(alltoall_pairwise(a0, a1, a2, a3))
    });
}

#[test]
fn alltoall_bruck_all_cases() {
    check_alltoall("bruck", |a0, a1, a2, a3| {
        block_on(alltoall_bruck(a0, a1, a2, a3))
    });
}

/// The number of bytes rank `from` sends to rank `to` for base length
/// `len` (varies, some zero).
fn vcount(from: u32, to: u32, len: usize) -> usize {
    if (from + 2 * to) % 4 == 3 {
        0
    } else {
        len / (1 + ((from + to) % 3) as usize) + from as usize
    }
}

/// Counts and displacements (regions in reverse order with a gap) of rank
/// `me` for peers `0..size`, where `count(peer)` is the length.
fn vlayout(size: u32, count: impl Fn(u32) -> usize) -> (Vec<usize>, Vec<usize>, usize) {
    let counts: Vec<usize> = (0..size).map(count).collect();
    let mut displs = vec![0; size as usize];
    let mut at = 2;
    for p in (0..size as usize).rev() {
        displs[p] = at;
        at += counts[p] + 1;
    }
    (counts, displs, at)
}

#[test]
fn alltoallv_linear_all_cases() {
    for size in SIZES {
        let results = testkit::run(size, |t| {
            let me = t.rank();
            let mut out = Vec::new();
            let mut call = 0;
            for &len in LENS {
                let (rc, rd, rtotal) = vlayout(size, |from| vcount(from, me, len));
                // A plain send buffer.
                let (sc, sd, stotal) = vlayout(size, |to| vcount(me, to, len));
                let mut send = vec![0x99; stotal];
                for to in 0..size {
                    send[sd[to as usize]..][..sc[to as usize]].copy_from_slice(&block(
                        me,
                        to,
                        sc[to as usize],
                    ));
                }
                let mut recv = vec![0x22; rtotal];
                block_on(alltoallv_linear(
                    t,
                    SendBuf::Buf(&send),
                    &sc,
                    &sd,
                    &mut recv,
                    &rc,
                    &rd,
                    tag(call),
                ))
                .unwrap();
                call += 1;
                out.push(recv);
                // IN_PLACE: the send layout is the receive layout, which
                // only works when counts are symmetric; use counts that are.
                let sym = |a: u32, b: u32| vcount(a.min(b), a.max(b), len);
                let (c, d, total) = vlayout(size, |peer| sym(me, peer));
                let mut buf = vec![0x22; total];
                for to in 0..size {
                    buf[d[to as usize]..][..c[to as usize]].copy_from_slice(&block(
                        me,
                        to,
                        c[to as usize],
                    ));
                }
                block_on(alltoallv_linear(
                    t,
                    SendBuf::InPlace,
                    &[],
                    &[],
                    &mut buf,
                    &c,
                    &d,
                    tag(call),
                ))
                .unwrap();
                call += 1;
                out.push(buf);
            }
            out
        });
        for (me, got) in results.iter().enumerate() {
            let me = me as u32;
            let mut i = 0;
            for &len in LENS {
                let (rc, rd, rtotal) = vlayout(size, |from| vcount(from, me, len));
                let mut want = vec![0x22; rtotal];
                for from in 0..size {
                    want[rd[from as usize]..][..rc[from as usize]].copy_from_slice(&block(
                        from,
                        me,
                        rc[from as usize],
                    ));
                }
                check(
                    &got[i],
                    &want,
                    format_args!("alltoallv: size {size}, len {len}, rank {me}"),
                );
                let sym = |a: u32, b: u32| vcount(a.min(b), a.max(b), len);
                let (c, d, total) = vlayout(size, |peer| sym(me, peer));
                let mut want = vec![0x22; total];
                for from in 0..size {
                    want[d[from as usize]..][..c[from as usize]].copy_from_slice(&block(
                        from,
                        me,
                        c[from as usize],
                    ));
                }
                check(
                    &got[i + 1],
                    &want,
                    format_args!("alltoallv in place: size {size}, len {len}, rank {me}"),
                );
                i += 2;
            }
        }
    }
}
