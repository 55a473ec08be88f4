//! The documented edge cases, spelled out with literal values.

use super::reference::kind;
use crate::{reduce_into, reduce_local, ElementType, Op};

/// Runs `reduce_local` on typed values and returns inout.
fn local<const N: usize, T: Copy>(
    op: Op,
    ty: ElementType,
    input: [T; N],
    inout: [T; N],
    to: fn(T) -> Vec<u8>,
    from: fn(&[u8]) -> T,
) -> Vec<T> {
    let x: Vec<u8> = input.iter().flat_map(|&v| to(v)).collect();
    let mut y: Vec<u8> = inout.iter().flat_map(|&v| to(v)).collect();
    reduce_local(op, ty, &x, &mut y).unwrap();
    y.chunks(ty.size()).map(from).collect()
}

macro_rules! codec {
    ($t:ty) => {
        (
            (|v: $t| v.to_ne_bytes().to_vec()) as fn($t) -> Vec<u8>,
            (|b: &[u8]| <$t>::from_ne_bytes(b.try_into().unwrap())) as fn(&[u8]) -> $t,
        )
    };
}

#[test]
fn names_sizes_and_lists() {
    let table = [
        (ElementType::Int8, "MPI_INT8_T"),
        (ElementType::Int16, "MPI_INT16_T"),
        (ElementType::Int32, "MPI_INT32_T"),
        (ElementType::Int64, "MPI_INT64_T"),
        (ElementType::UInt8, "MPI_UINT8_T"),
        (ElementType::UInt16, "MPI_UINT16_T"),
        (ElementType::UInt32, "MPI_UINT32_T"),
        (ElementType::UInt64, "MPI_UINT64_T"),
        (ElementType::Float32, "MPI_FLOAT"),
        (ElementType::Float64, "MPI_DOUBLE"),
        (ElementType::Bool, "MPI_C_BOOL"),
        (ElementType::Byte, "MPI_BYTE"),
        (ElementType::FloatInt, "MPI_FLOAT_INT"),
        (ElementType::DoubleInt, "MPI_DOUBLE_INT"),
        (ElementType::LongInt, "MPI_LONG_INT"),
        (ElementType::TwoInt, "MPI_2INT"),
        (ElementType::ShortInt, "MPI_SHORT_INT"),
    ];
    assert_eq!(ElementType::ALL.len(), table.len());
    for (ty, name) in table {
        assert_eq!(ty.name(), name);
        assert_eq!(ty.to_string(), name);
        assert_eq!(ty.size(), kind(ty).size(), "{name}");
        assert_eq!(ElementType::ALL.iter().filter(|&&t| t == ty).count(), 1);
    }
    let ops = [
        (Op::Max, "MPI_MAX"),
        (Op::Min, "MPI_MIN"),
        (Op::Sum, "MPI_SUM"),
        (Op::Prod, "MPI_PROD"),
        (Op::Land, "MPI_LAND"),
        (Op::Lor, "MPI_LOR"),
        (Op::Lxor, "MPI_LXOR"),
        (Op::Band, "MPI_BAND"),
        (Op::Bor, "MPI_BOR"),
        (Op::Bxor, "MPI_BXOR"),
        (Op::MinLoc, "MPI_MINLOC"),
        (Op::MaxLoc, "MPI_MAXLOC"),
    ];
    assert_eq!(Op::ALL.len(), ops.len());
    for (op, name) in ops {
        assert_eq!(op.name(), name);
        assert_eq!(op.to_string(), name);
        assert!(op.is_commutative());
        assert_eq!(Op::ALL.iter().filter(|&&o| o == op).count(), 1);
    }
}

#[test]
fn integers_wrap() {
    let (to, from) = codec!(i32);
    let r = local(
        Op::Sum,
        ElementType::Int32,
        [i32::MAX, -1],
        [1, i32::MIN],
        to,
        from,
    );
    assert_eq!(r, [i32::MIN, i32::MAX]);
    let (to, from) = codec!(u8);
    let r = local(Op::Prod, ElementType::UInt8, [200, 255], [2, 255], to, from);
    assert_eq!(r, [144, 1]);
    let (to, from) = codec!(i8);
    let r = local(Op::Prod, ElementType::Int8, [-128, 127], [-1, 2], to, from);
    assert_eq!(r, [-128, -2]);
    let (to, from) = codec!(u64);
    let r = local(Op::Sum, ElementType::UInt64, [u64::MAX], [2], to, from);
    assert_eq!(r, [1]);
    let (to, from) = codec!(i64);
    let r = local(Op::Prod, ElementType::Int64, [1 << 62], [4], to, from);
    assert_eq!(r, [0]);
    let (to, from) = codec!(u16);
    let r = local(Op::Max, ElementType::UInt16, [0x8000], [0x7fff], to, from);
    assert_eq!(r, [0x8000], "unsigned compare");
    let (to, from) = codec!(i16);
    let r = local(Op::Max, ElementType::Int16, [-1], [1], to, from);
    assert_eq!(r, [1], "signed compare");
}

#[test]
fn max_and_min_keep_inout_when_values_do_not_compare() {
    let (to, from) = codec!(f64);
    let nan = f64::NAN;
    let r = local(
        Op::Max,
        ElementType::Float64,
        [nan, 1.0, 2.0],
        [1.0, nan, 1.0],
        to,
        from,
    );
    assert_eq!(r[0], 1.0, "a NaN input is dropped");
    assert!(r[1].is_nan(), "a NaN in inout stays");
    assert_eq!(r[2], 2.0);
    let r = local(
        Op::Min,
        ElementType::Float64,
        [nan, 1.0, 0.5],
        [1.0, nan, 1.0],
        to,
        from,
    );
    assert_eq!(r[0], 1.0);
    assert!(r[1].is_nan());
    assert_eq!(r[2], 0.5);
    // ±0 compare equal: inout's zero stays.
    let (to, from) = codec!(f32);
    let r = local(
        Op::Max,
        ElementType::Float32,
        [-0.0, 0.0],
        [0.0, -0.0],
        to,
        from,
    );
    assert_eq!(r[0].to_bits(), 0.0f32.to_bits());
    assert_eq!(r[1].to_bits(), (-0.0f32).to_bits());
    let r = local(Op::Min, ElementType::Float32, [-0.0], [0.0], to, from);
    assert_eq!(r[0].to_bits(), 0.0f32.to_bits());
}

#[test]
fn logical_results_are_one_or_zero() {
    let (to, from) = codec!(i32);
    let r = local(
        Op::Land,
        ElementType::Int32,
        [5, 0, -3],
        [-7, 9, 0],
        to,
        from,
    );
    assert_eq!(r, [1, 0, 0]);
    let r = local(
        Op::Lor,
        ElementType::Int32,
        [5, 0, 0],
        [-7, 0, 256],
        to,
        from,
    );
    assert_eq!(r, [1, 0, 1]);
    let r = local(
        Op::Lxor,
        ElementType::Int32,
        [5, 0, 0, 4],
        [-7, 0, 256, 0],
        to,
        from,
    );
    assert_eq!(r, [0, 0, 1, 1]);
    // _Bool: any nonzero byte is true.
    let (to, from) = codec!(u8);
    let r = local(
        Op::Land,
        ElementType::Bool,
        [2, 0x80, 0],
        [0x40, 1, 3],
        to,
        from,
    );
    assert_eq!(r, [1, 1, 0]);
    let r = local(
        Op::Lxor,
        ElementType::Bool,
        [2, 0x80, 0],
        [0x40, 0, 0],
        to,
        from,
    );
    assert_eq!(r, [0, 1, 0]);
    let r = local(
        Op::Bxor,
        ElementType::Byte,
        [0xF0, 0xFF],
        [0x3C, 0x0F],
        to,
        from,
    );
    assert_eq!(r, [0xCC, 0xF0]);
}

/// A `MPI_DOUBLE_INT` element with the given padding bytes.
fn double_int(v: f64, i: i32, pad: u8) -> [u8; 16] {
    let mut e = [pad; 16];
    e[..8].copy_from_slice(&v.to_ne_bytes());
    e[8..12].copy_from_slice(&i.to_ne_bytes());
    e
}

fn read_double_int(e: &[u8]) -> (f64, i32) {
    (
        f64::from_ne_bytes(e[..8].try_into().unwrap()),
        i32::from_ne_bytes(e[8..12].try_into().unwrap()),
    )
}

#[test]
fn minloc_and_maxloc_ties_and_padding() {
    // (input, inout) pairs and the expected MINLOC / MAXLOC results.
    let cases = [
        ((1.0, 5), (1.0, 3), (1.0, 3), (1.0, 3)),
        ((1.0, 2), (1.0, 9), (1.0, 2), (1.0, 2)),
        ((0.5, 9), (1.0, 3), (0.5, 9), (1.0, 3)),
        ((2.0, 9), (1.0, 3), (1.0, 3), (2.0, 9)),
        ((-1.0, -4), (-1.0, 7), (-1.0, -4), (-1.0, -4)),
    ];
    for (op, pick) in [(Op::MinLoc, 0), (Op::MaxLoc, 1)] {
        let mut x = Vec::new();
        let mut y = Vec::new();
        for &(a, b, _, _) in &cases {
            x.extend(double_int(a.0, a.1, 0x11));
            y.extend(double_int(b.0, b.1, 0xEE));
        }
        let mut out = vec![0x77u8; y.len()];
        reduce_into(op, ElementType::DoubleInt, &x, &y, &mut out).unwrap();
        reduce_local(op, ElementType::DoubleInt, &x, &mut y).unwrap();
        for (n, c) in cases.iter().enumerate() {
            let want = if pick == 0 { c.2 } else { c.3 };
            let e = &y[16 * n..16 * n + 16];
            assert_eq!(read_double_int(e), want, "{op} case {n}");
            assert_eq!(e[12..], [0xEE; 4], "{op} case {n}: inout padding changed");
            let o = &out[16 * n..16 * n + 16];
            assert_eq!(read_double_int(o), want, "{op} case {n} (into)");
            assert_eq!(o[12..], [0x77; 4], "{op} case {n}: out padding changed");
        }
    }
}

#[test]
fn minloc_keeps_inout_value_on_signed_zero_and_nan() {
    let x = [double_int(-0.0, 4, 0), double_int(f64::NAN, 1, 0)].concat();
    let mut y = [double_int(0.0, 8, 0), double_int(3.0, 6, 0)].concat();
    reduce_local(Op::MinLoc, ElementType::DoubleInt, &x, &mut y).unwrap();
    let (v, i) = read_double_int(&y[..16]);
    assert_eq!((v.to_bits(), i), (0.0f64.to_bits(), 4));
    assert_eq!(read_double_int(&y[16..]), (3.0, 1));
}

#[test]
fn short_int_padding_sits_after_the_short() {
    let elem = |v: i16, i: i32, pad: u8| {
        let mut e = [pad; 8];
        e[..2].copy_from_slice(&v.to_ne_bytes());
        e[4..].copy_from_slice(&i.to_ne_bytes());
        e
    };
    let x = [elem(-5, 10, 0x22), elem(7, 1, 0x22), elem(3, 3, 0x22)].concat();
    let mut y = [elem(-5, 2, 0xDD), elem(6, 0, 0xDD), elem(4, 9, 0xDD)].concat();
    reduce_local(Op::MaxLoc, ElementType::ShortInt, &x, &mut y).unwrap();
    assert_eq!(
        y,
        [elem(-5, 2, 0xDD), elem(7, 1, 0xDD), elem(4, 9, 0xDD)].concat()
    );
}

#[test]
fn a_long_buffer_through_every_path_agrees() {
    // The same data reduced aligned and misaligned gives the same bytes.
    for &(op, ty) in &[
        (Op::Sum, ElementType::Float64),
        (Op::Prod, ElementType::Int16),
        (Op::MaxLoc, ElementType::FloatInt),
    ] {
        let len = 4099 * ty.size();
        let mut rng = super::reference::Rng::new(7);
        let (mut x, mut y) = (vec![0u8; len], vec![0u8; len]);
        rng.fill(&mut x);
        rng.fill(&mut y);
        let mut aligned = super::Buf::new(len);
        aligned.slice_mut(0, len).copy_from_slice(&y);
        let mut shifted = super::Buf::new(len);
        shifted.slice_mut(3, len).copy_from_slice(&y);
        reduce_local(op, ty, &x, aligned.slice_mut(0, len)).unwrap();
        reduce_local(op, ty, &x, shifted.slice_mut(3, len)).unwrap();
        super::reference::assert_same(
            op,
            ty,
            aligned.slice(0, len),
            shifted.slice(3, len),
            "paths",
        );
    }
}
