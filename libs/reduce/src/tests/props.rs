//! Property tests: random buffers at random offsets against the reference.

use proptest::prelude::*;

use super::reference::{apply, assert_same, kind};
use super::Buf;
use crate::{reduce_into, reduce_local, ElementType, Op};

/// Random operands for `ty`: `count` elements each, plus an operation
/// defined on `ty`.
fn case(ty: ElementType) -> impl Strategy<Value = (Op, Vec<u8>, Vec<u8>, usize, usize)> {
    let ops: Vec<Op> = Op::ALL
        .iter()
        .copied()
        .filter(|op| op.applies_to(ty))
        .collect();
    let size = kind(ty).size();
    (0usize..300).prop_flat_map(move |count| {
        (
            prop::sample::select(ops.clone()),
            prop::collection::vec(any::<u8>(), count * size),
            prop::collection::vec(any::<u8>(), count * size),
            0usize..16,
            0usize..16,
        )
    })
}

fn expected(op: Op, ty: ElementType, x: &[u8], y: &[u8]) -> Vec<u8> {
    let size = kind(ty).size();
    let mut want = y.to_vec();
    for ((w, x), y) in want
        .chunks_mut(size)
        .zip(x.chunks(size))
        .zip(y.chunks(size))
    {
        apply(op, kind(ty), x, y, w);
    }
    want
}

fn check(ty: ElementType, (op, x, y, in_off, io_off): (Op, Vec<u8>, Vec<u8>, usize, usize)) {
    let len = x.len();
    let want = expected(op, ty, &x, &y);

    let mut input = Buf::new(len);
    input.slice_mut(in_off, len).copy_from_slice(&x);
    let mut inout = Buf::new(len);
    inout.slice_mut(io_off, len).copy_from_slice(&y);
    reduce_local(
        op,
        ty,
        input.slice(in_off, len),
        inout.slice_mut(io_off, len),
    )
    .unwrap();
    assert_same(op, ty, inout.slice(io_off, len), &want, "proptest local");

    // reduce_into with out at inout's old contents: same bytes expected.
    let mut out = Buf::new(len);
    out.slice_mut(in_off, len).copy_from_slice(&y);
    reduce_into(op, ty, &x, &y, out.slice_mut(in_off, len)).unwrap();
    assert_same(op, ty, out.slice(in_off, len), &want, "proptest into");
}

proptest! {
    #[test]
    fn float64_matches_reference(c in case(ElementType::Float64)) {
        check(ElementType::Float64, c);
    }

    #[test]
    fn float32_matches_reference(c in case(ElementType::Float32)) {
        check(ElementType::Float32, c);
    }

    #[test]
    fn int32_matches_reference(c in case(ElementType::Int32)) {
        check(ElementType::Int32, c);
    }

    #[test]
    fn uint64_matches_reference(c in case(ElementType::UInt64)) {
        check(ElementType::UInt64, c);
    }

    #[test]
    fn int8_matches_reference(c in case(ElementType::Int8)) {
        check(ElementType::Int8, c);
    }

    #[test]
    fn double_int_matches_reference(c in case(ElementType::DoubleInt)) {
        check(ElementType::DoubleInt, c);
    }

    #[test]
    fn short_int_matches_reference(c in case(ElementType::ShortInt)) {
        check(ElementType::ShortInt, c);
    }
}
