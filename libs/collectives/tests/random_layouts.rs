//! Property tests: random sizes, counts, displacements and segment sizes
//! for the `v` variants and the segmented algorithms.

mod common;

use common::{bytes, check, seed, Case};
use oxmpi_collectives::block_on;
use oxmpi_collectives::testkit;
use oxmpi_collectives::{
    allgatherv_ring, allreduce_segmented_ring, alltoallv_linear, bcast_pipeline, gatherv_linear,
    reduce_pipeline, reduce_scatter_ring, reduce_scatter_via_reduce, scatterv_linear, RecvBuf,
    SendBuf, Transport,
};
use proptest::prelude::*;

/// Regions of the given lengths placed in the order `order` with the
/// given gaps; returns the displacements and the total length.
fn place(counts: &[usize], order: &[usize], gaps: &[usize]) -> (Vec<usize>, usize) {
    let mut displs = vec![0; counts.len()];
    let mut at = 0;
    for (k, &r) in order.iter().enumerate() {
        at += gaps[k % gaps.len()];
        displs[r] = at;
        at += counts[r];
    }
    (displs, at)
}

/// A size, per-rank counts, a placement order and gaps.
fn layout() -> impl Strategy<Value = (u32, Vec<usize>, Vec<usize>, Vec<usize>)> {
    (1u32..=6).prop_flat_map(|size| {
        let n = size as usize;
        (
            Just(size),
            prop::collection::vec(0usize..40, n),
            Just((0..n).collect::<Vec<_>>()).prop_shuffle(),
            prop::collection::vec(0usize..4, 1..4),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn gatherv_and_scatterv_with_random_layouts((size, counts, order, gaps) in layout(), root_pick in 0u32..6) {
        let root = root_pick % size;
        let (displs, total) = place(&counts, &order, &gaps);
        let block = |r: u32| bytes(seed(&[r.into(), 31]), counts[r as usize]);
        let results = testkit::run(size, |t| {
            let rank = t.rank();
            let own = block(rank);
            let mut gathered = vec![0xEE; if rank == root { total } else { 0 }];
            block_on(gatherv_linear(t, SendBuf::Buf(&own), &mut gathered, &counts, &displs, root, -1)).unwrap();
            let mut mine = vec![0; counts[rank as usize]];
            block_on(scatterv_linear(t, &gathered, &counts, &displs, RecvBuf::Buf(&mut mine), root, -2)).unwrap();
            let mut all = vec![0xEE; total];
            block_on(allgatherv_ring(t, SendBuf::Buf(&own), &mut all, &counts, &displs, -3)).unwrap();
            (gathered, mine, all)
        });
        let mut want = vec![0xEE; total];
        for r in 0..size {
            want[displs[r as usize]..][..counts[r as usize]].copy_from_slice(&block(r));
        }
        check(&results[root as usize].0, &want, "gatherv");
        for (r, (_, mine, all)) in results.iter().enumerate() {
            check(mine, &block(r as u32), "scatterv");
            check(all, &want, "allgatherv");
        }
    }

    #[test]
    fn alltoallv_with_random_counts(size in 1u32..=6, matrix in prop::collection::vec(0usize..30, 36), gaps in prop::collection::vec(0usize..3, 1..4)) {
        let n = size as usize;
        let count = |from: usize, to: usize| matrix[from * 6 + to];
        let data = |from: usize, to: usize| bytes(seed(&[from as u64, to as u64, 37]), count(from, to));
        let order: Vec<usize> = (0..n).rev().collect();
        let results = testkit::run(size, |t| {
            let me = t.rank() as usize;
            let sc: Vec<usize> = (0..n).map(|to| count(me, to)).collect();
            let rc: Vec<usize> = (0..n).map(|from| count(from, me)).collect();
            let (sd, stotal) = place(&sc, &order, &gaps);
            let (rd, rtotal) = place(&rc, &(0..n).collect::<Vec<_>>(), &gaps);
            let mut send = vec![0; stotal];
            for to in 0..n {
                send[sd[to]..][..sc[to]].copy_from_slice(&data(me, to));
            }
            let mut recv = vec![0xEE; rtotal];
            block_on(alltoallv_linear(t, SendBuf::Buf(&send), &sc, &sd, &mut recv, &rc, &rd, -1)).unwrap();
            (recv, rd)
        });
        for (me, (recv, rd)) in results.iter().enumerate() {
            for from in 0..n {
                check(&recv[rd[from]..][..count(from, me)], &data(from, me), "alltoallv");
            }
        }
    }

    #[test]
    fn reduce_scatter_with_random_counts(size in 1u32..=6, counts in prop::collection::vec(0usize..12, 6), commutative in any::<bool>()) {
        let counts = &counts[..size as usize];
        let case = if commutative { Case::UserSum } else { Case::MatMul };
        let total: usize = counts.iter().sum();
        let input = |r: u32| case.input(seed(&[r.into(), 41]), total);
        let results = testkit::run(size, |t| {
            let x = input(t.rank());
            let mine = counts[t.rank() as usize] * case.elem_size();
            let mut a = vec![0; mine];
            case.with(|op| block_on(reduce_scatter_ring(t, SendBuf::Buf(&x), &mut a, counts, op, -1))).unwrap();
            let mut b = x.clone();
            case.with(|op| block_on(reduce_scatter_via_reduce(t, SendBuf::InPlace, &mut b, counts, op, -2))).unwrap();
            b.truncate(mine);
            (a, b)
        });
        let all = case.fold(&(0..size).map(input).collect::<Vec<_>>());
        let mut start = 0;
        for (r, (a, b)) in results.iter().enumerate() {
            let len = counts[r] * case.elem_size();
            check(a, &all[start..start + len], "reduce_scatter_ring");
            check(b, &all[start..start + len], "reduce_scatter_via_reduce");
            start += len;
        }
    }

    #[test]
    fn segmented_algorithms_with_random_segments(size in 1u32..=7, count in 0usize..200, segment in 0usize..300, root_pick in 0u32..7) {
        let root = root_pick % size;
        let results = testkit::run(size, |t| {
            let rank = t.rank();
            let data = bytes(seed(&[count as u64, 43]), count);
            let mut buf = if rank == root { data.clone() } else { vec![0; count] };
            block_on(bcast_pipeline(t, &mut buf, root, segment, -1)).unwrap();
            let mut out = Vec::new();
            for (k, case) in [Case::MatMul, Case::UserSum].into_iter().enumerate() {
                let x = case.input(seed(&[rank.into(), count as u64, 47]), count);
                let mut reduced = vec![0; if rank == root { x.len() } else { 0 }];
                case.with(|op| block_on(reduce_pipeline(t, SendBuf::Buf(&x), &mut reduced, root, op, segment, -2 - 2 * k as i32))).unwrap();
                let mut all = x.clone();
                case.with(|op| block_on(allreduce_segmented_ring(t, SendBuf::InPlace, &mut all, op, segment, -3 - 2 * k as i32))).unwrap();
                out.push((reduced, all));
            }
            (buf, out)
        });
        let data = bytes(seed(&[count as u64, 43]), count);
        for (rank, (buf, out)) in results.iter().enumerate() {
            check(buf, &data, "bcast_pipeline");
            for (case, (reduced, all)) in [Case::MatMul, Case::UserSum].into_iter().zip(out) {
                let want = case.fold(&(0..size).map(|r| case.input(seed(&[r.into(), count as u64, 47]), count)).collect::<Vec<_>>());
                if rank as u32 == root {
                    check(reduced, &want, "reduce_pipeline");
                }
                check(all, &want, "allreduce_segmented_ring");
            }
        }
    }
}
