//! `MPI_Type_create_darray` against the ownership rule of each
//! distribution: every process's type packs exactly the elements it owns,
//! in the array's storage order, and the processes' parts partition the
//! array.

use oxmpi_datatype::{Combiner, Datatype, Distribution, Order, Primitive};
use proptest::prelude::*;

/// The grid coordinate that owns index `i` of a dimension.
fn owner(i: usize, size: usize, dist: Distribution, procs: usize) -> usize {
    match dist {
        Distribution::None => 0,
        Distribution::Block(b) => i / b.unwrap_or(size.div_ceil(procs)),
        Distribution::Cyclic(b) => (i / b.unwrap_or(1)) % procs,
    }
}

/// One dimension: global size, grid size, distribution.
fn dimension() -> impl Strategy<Value = (usize, usize, Distribution)> {
    (1usize..7, 1usize..4, 0u8..5, 0usize..3).prop_map(|(g, p, kind, extra)| {
        let dist = match kind {
            0 => Distribution::Block(None),
            1 => Distribution::Block(Some(g.div_ceil(p) + extra)),
            2 => Distribution::Cyclic(None),
            3 => Distribution::Cyclic(Some(1 + extra)),
            _ => Distribution::None,
        };
        let p = if dist == Distribution::None { 1 } else { p };
        (g, p, dist)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn each_process_packs_what_it_owns_in_storage_order(dims in prop::collection::vec(dimension(), 1..4), fortran: bool) {
        let order = if fortran { Order::Fortran } else { Order::C };
        let gsizes: Vec<usize> = dims.iter().map(|d| d.0).collect();
        let psizes: Vec<usize> = dims.iter().map(|d| d.1).collect();
        let distribs: Vec<Distribution> = dims.iter().map(|d| d.2).collect();
        let n = dims.len();
        let size: usize = psizes.iter().product();
        let total: usize = gsizes.iter().product();
        // The array holds each element's linear (storage) index.
        let array: Vec<u8> = (0..total as i32).flat_map(|v| v.to_ne_bytes()).collect();
        // Global indices of each linear index, in storage order.
        let index_of = |linear: usize| {
            let mut idx = vec![0; n];
            let mut rest = linear;
            let dims_fast_first: Vec<usize> = if fortran { (0..n).collect() } else { (0..n).rev().collect() };
            for d in dims_fast_first {
                idx[d] = rest % gsizes[d];
                rest /= gsizes[d];
            }
            idx
        };
        let mut seen = vec![0u32; total];
        let int = Datatype::predefined(Primitive::Int);
        for rank in 0..size {
            let t = Datatype::darray(size, rank, &gsizes, &distribs, &psizes, order, &int).unwrap();
            prop_assert_eq!(t.combiner(), Combiner::Darray);
            prop_assert_eq!((t.lb(), t.extent()), (0, 4 * total as isize));
            let mut coords = vec![0; n];
            let mut r = rank;
            for d in (0..n).rev() {
                coords[d] = r % psizes[d];
                r /= psizes[d];
            }
            let expected: Vec<i32> = (0..total)
                .filter(|&l| {
                    let idx = index_of(l);
                    (0..n).all(|d| owner(idx[d], gsizes[d], distribs[d], psizes[d]) == coords[d])
                })
                .map(|l| l as i32)
                .collect();
            let mut out = vec![0u8; t.size()];
            let mut position = 0;
            t.pack(&array, 0, 1, &mut out, &mut position).unwrap();
            let got: Vec<i32> = out.chunks(4).map(|c| i32::from_ne_bytes(c.try_into().unwrap())).collect();
            prop_assert_eq!(&got, &expected);
            for v in got {
                seen[v as usize] += 1;
            }
        }
        prop_assert!(seen.iter().all(|&c| c == 1), "the parts do not partition the array: {:?}", seen);
    }
}

#[test]
fn a_darray_refuses_grids_and_blocks_that_do_not_fit() {
    let int = Datatype::predefined(Primitive::Int);
    let block = Distribution::Block(None);
    let e = Datatype::darray(4, 0, &[8, 8], &[block, block], &[2, 3], Order::C, &int).unwrap_err();
    assert!(
        e.to_string().contains("holds 6 processes, not size 4"),
        "{e}"
    );
    let e = Datatype::darray(2, 2, &[8], &[block], &[2], Order::C, &int).unwrap_err();
    assert!(e.to_string().contains("rank 2 is not below size 2"), "{e}");
    let e = Datatype::darray(
        2,
        0,
        &[8],
        &[Distribution::Block(Some(3))],
        &[2],
        Order::C,
        &int,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("blocks of 3 over 2 processes do not cover its 8 indices"),
        "{e}"
    );
    let e = Datatype::darray(2, 0, &[8], &[Distribution::None], &[2], Order::C, &int).unwrap_err();
    assert!(
        e.to_string().contains("not distributed but psizes[0] is 2"),
        "{e}"
    );
    let t = Datatype::darray(
        4,
        3,
        &[4, 6],
        &[block, Distribution::Cyclic(Some(2))],
        &[2, 2],
        Order::C,
        &int,
    )
    .unwrap();
    assert_eq!(t.contents().integers, [4, 3, 2, 4, 6, 0, 1, -1, 2, 2, 2, 0]);
}
