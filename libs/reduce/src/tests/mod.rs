//! Unit tests: every (operation, type) pair against the scalar reference,
//! aligned and misaligned; refusals; the documented edge cases.

mod props;
mod reference;
mod semantics;

use reference::{apply, assert_same, defined, kind, operands, Rng};

use crate::{reduce_into, reduce_local, ElementType, Op, ReduceError, Reducer};

/// Element counts every pair is tried with.
const COUNTS: [usize; 5] = [0, 1, 3, 17, 1000];

/// A byte buffer whose `slice(offset, len)` starts `offset` bytes past a
/// 64-byte boundary: offset 0 is aligned for every element type, offset 1
/// for none wider than a byte.
pub(super) struct Buf {
    bytes: Vec<u8>,
    base: usize,
}

impl Buf {
    pub(super) fn new(len: usize) -> Buf {
        let bytes = vec![0u8; len + 64 + 8];
        let base = bytes.as_ptr().align_offset(64);
        assert!(base < 64, "cannot align a Vec<u8>");
        Buf { bytes, base }
    }

    pub(super) fn slice(&self, offset: usize, len: usize) -> &[u8] {
        &self.bytes[self.base + offset..self.base + offset + len]
    }

    pub(super) fn slice_mut(&mut self, offset: usize, len: usize) -> &mut [u8] {
        &mut self.bytes[self.base + offset..self.base + offset + len]
    }
}

/// Checks `reduce_local(op, ty)` on `count` elements with the input at
/// `in_off` and inout at `io_off` bytes past alignment.
fn check_local(op: Op, ty: ElementType, count: usize, in_off: usize, io_off: usize, seed: u64) {
    let size = kind(ty).size();
    let len = count * size;
    let mut rng = Rng::new(seed);
    let (mut x, mut y) = (vec![0u8; len], vec![0u8; len]);
    operands(ty, &mut rng, &mut x, &mut y);

    let mut want = y.clone();
    for ((w, x), y) in want
        .chunks_mut(size)
        .zip(x.chunks(size))
        .zip(y.chunks(size))
    {
        apply(op, kind(ty), x, y, w);
    }

    let mut input = Buf::new(len);
    input.slice_mut(in_off, len).copy_from_slice(&x);
    let mut inout = Buf::new(len);
    inout.slice_mut(io_off, len).copy_from_slice(&y);
    let what = format!("reduce_local, {count} elements, offsets {in_off}/{io_off}");
    reduce_local(
        op,
        ty,
        input.slice(in_off, len),
        inout.slice_mut(io_off, len),
    )
    .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(input.slice(in_off, len), &x[..], "{what}: input changed");
    assert_same(op, ty, inout.slice(io_off, len), &want, &what);
}

/// Checks `reduce_into(op, ty)`; `offs` are the offsets of a, b and out.
fn check_into(op: Op, ty: ElementType, count: usize, offs: [usize; 3], seed: u64) {
    let size = kind(ty).size();
    let len = count * size;
    let mut rng = Rng::new(seed);
    let (mut x, mut y, mut o) = (vec![0u8; len], vec![0u8; len], vec![0u8; len]);
    operands(ty, &mut rng, &mut x, &mut y);
    rng.fill(&mut o);

    // Pair padding in `out` must keep out's old bytes.
    let mut want = o.clone();
    for ((w, x), y) in want
        .chunks_mut(size)
        .zip(x.chunks(size))
        .zip(y.chunks(size))
    {
        apply(op, kind(ty), x, y, w);
    }

    let mut a = Buf::new(len);
    a.slice_mut(offs[0], len).copy_from_slice(&x);
    let mut b = Buf::new(len);
    b.slice_mut(offs[1], len).copy_from_slice(&y);
    let mut out = Buf::new(len);
    out.slice_mut(offs[2], len).copy_from_slice(&o);
    let what = format!("reduce_into, {count} elements, offsets {offs:?}");
    reduce_into(
        op,
        ty,
        a.slice(offs[0], len),
        b.slice(offs[1], len),
        out.slice_mut(offs[2], len),
    )
    .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(a.slice(offs[0], len), &x[..], "{what}: a changed");
    assert_eq!(b.slice(offs[1], len), &y[..], "{what}: b changed");
    assert_same(op, ty, out.slice(offs[2], len), &want, &what);
}

fn defined_pairs() -> Vec<(Op, ElementType)> {
    let mut pairs = Vec::new();
    for &op in Op::ALL {
        for &ty in ElementType::ALL {
            if defined(op, kind(ty)) {
                pairs.push((op, ty));
            }
        }
    }
    pairs
}

#[test]
fn applies_to_follows_the_mpi_table() {
    for &op in Op::ALL {
        for &ty in ElementType::ALL {
            assert_eq!(op.applies_to(ty), defined(op, kind(ty)), "{op} on {ty}");
        }
    }
    // 8 integer types × 10 operations, 2 float types × 4, _Bool × 3,
    // MPI_BYTE × 3, 5 pair types × 2.
    assert_eq!(defined_pairs().len(), 80 + 8 + 3 + 3 + 10);
}

#[test]
fn every_defined_pair_matches_the_reference_aligned() {
    for (n, (op, ty)) in defined_pairs().into_iter().enumerate() {
        for count in COUNTS {
            check_local(op, ty, count, 0, 0, n as u64 * 31 + count as u64);
        }
    }
}

#[test]
fn every_defined_pair_matches_the_reference_misaligned() {
    for (n, (op, ty)) in defined_pairs().into_iter().enumerate() {
        for count in COUNTS {
            let seed = n as u64 * 37 + count as u64;
            check_local(op, ty, count, 1, 1, seed);
            check_local(op, ty, count, 0, 1, seed + 1);
            check_local(op, ty, count, 1, 0, seed + 2);
            // Both aligned for 4 bytes but not 8: typed path only for the
            // 4-byte-aligned types.
            check_local(op, ty, count, 4, 4, seed + 3);
        }
    }
}

#[test]
fn every_defined_pair_matches_the_reference_into() {
    for (n, (op, ty)) in defined_pairs().into_iter().enumerate() {
        for count in COUNTS {
            let seed = n as u64 * 41 + count as u64;
            check_into(op, ty, count, [0, 0, 0], seed);
            check_into(op, ty, count, [1, 1, 1], seed + 1);
            check_into(op, ty, count, [0, 0, 1], seed + 2);
            check_into(op, ty, count, [1, 0, 0], seed + 3);
            check_into(op, ty, count, [0, 1, 0], seed + 4);
        }
    }
}

#[test]
fn undefined_pairs_are_refused_and_write_nothing() {
    let mut refused = 0;
    for &op in Op::ALL {
        for &ty in ElementType::ALL {
            if defined(op, kind(ty)) {
                continue;
            }
            refused += 1;
            let len = 3 * kind(ty).size();
            let input = vec![0x5Au8; len];
            let mut inout = vec![0xA5u8; len];
            let want = Err(ReduceError::NotDefined { op, ty });
            assert_eq!(reduce_local(op, ty, &input, &mut inout), want);
            assert!(inout.iter().all(|&b| b == 0xA5), "{op} on {ty} wrote");
            let mut out = vec![0xC3u8; len];
            assert_eq!(reduce_into(op, ty, &input, &input, &mut out), want);
            assert!(out.iter().all(|&b| b == 0xC3), "{op} on {ty} wrote");
            // The type check comes before the length checks.
            assert_eq!(reduce_local(op, ty, &input[1..], &mut inout), want);
        }
    }
    assert_eq!(refused, Op::ALL.len() * ElementType::ALL.len() - 104);
}

#[test]
fn length_mismatch_is_refused() {
    let input = [1u8; 12];
    let mut inout = [7u8; 8];
    assert_eq!(
        reduce_local(Op::Sum, ElementType::Int32, &input, &mut inout),
        Err(ReduceError::LengthMismatch {
            first: "input",
            first_len: 12,
            second: "inout",
            second_len: 8,
        })
    );
    assert_eq!(inout, [7u8; 8]);

    let mut out = [7u8; 8];
    assert_eq!(
        reduce_into(Op::Sum, ElementType::Int32, &input, &input[..8], &mut out),
        Err(ReduceError::LengthMismatch {
            first: "a",
            first_len: 12,
            second: "b",
            second_len: 8,
        })
    );
    assert_eq!(
        reduce_into(
            Op::Sum,
            ElementType::Int32,
            &input[..8],
            &input[..8],
            &mut out[..4]
        ),
        Err(ReduceError::LengthMismatch {
            first: "a",
            first_len: 8,
            second: "out",
            second_len: 4,
        })
    );
    assert_eq!(out, [7u8; 8]);
}

#[test]
fn a_reducer_is_refused_for_an_undefined_pair_and_checks_every_call() {
    assert_eq!(
        Reducer::new(Op::Sum, ElementType::Byte).err(),
        Some(ReduceError::NotDefined {
            op: Op::Sum,
            ty: ElementType::Byte
        })
    );
    let sum = Reducer::new(Op::Sum, ElementType::Int64).unwrap();
    assert_eq!(sum.element_type(), ElementType::Int64);
    let bytes = |v: &[i64]| -> Vec<u8> { v.iter().flat_map(|x| x.to_ne_bytes()).collect() };
    let (a, b) = (bytes(&[1, -2]), bytes(&[10, 20]));
    let mut out = vec![0u8; 16];
    sum.reduce_into(&a, &b, &mut out).unwrap();
    assert_eq!(out, bytes(&[11, 18]));
    // The same reducer again, on other buffers: every call is checked.
    sum.reduce_local(&a, &mut out).unwrap();
    assert_eq!(out, bytes(&[12, 16]));
    assert_eq!(
        sum.reduce_local(&a[..8], &mut out),
        Err(ReduceError::LengthMismatch {
            first: "input",
            first_len: 8,
            second: "inout",
            second_len: 16,
        })
    );
    assert_eq!(
        sum.reduce_into(&a[..4], &b[..4], &mut out[..4]),
        Err(ReduceError::PartialElement {
            ty: ElementType::Int64,
            len: 4
        })
    );
    assert_eq!(out, bytes(&[12, 16]));
}

#[test]
fn partial_elements_are_refused() {
    for &ty in ElementType::ALL {
        let size = kind(ty).size();
        // The check masks the length with the size.
        assert!(ty.size().is_power_of_two(), "{ty}");
        let op = *Op::ALL.iter().find(|op| op.applies_to(ty)).unwrap();
        for len in (1..3 * size).filter(|len| len % size != 0) {
            let input = vec![1u8; len];
            let mut inout = vec![9u8; len];
            let want = Err(ReduceError::PartialElement { ty, len });
            assert_eq!(reduce_local(op, ty, &input, &mut inout), want, "{ty}");
            assert!(inout.iter().all(|&b| b == 9));
            let mut out = vec![9u8; len];
            assert_eq!(reduce_into(op, ty, &input, &input, &mut out), want, "{ty}");
            assert!(out.iter().all(|&b| b == 9));
        }
    }
}

#[test]
fn error_messages_say_what_is_wrong_and_what_to_do() {
    let e = ReduceError::NotDefined {
        op: Op::Sum,
        ty: ElementType::Byte,
    };
    assert_eq!(
        e.to_string(),
        "MPI_SUM is not defined for MPI_BYTE; MPI_BYTE takes only MPI_BAND, MPI_BOR and MPI_BXOR"
    );
    let e = ReduceError::NotDefined {
        op: Op::Land,
        ty: ElementType::DoubleInt,
    };
    assert_eq!(
        e.to_string(),
        "MPI_LAND is not defined for MPI_DOUBLE_INT; MPI_DOUBLE_INT takes only MPI_MINLOC and MPI_MAXLOC"
    );
    let e = ReduceError::NotDefined {
        op: Op::Bor,
        ty: ElementType::Float64,
    };
    assert_eq!(
        e.to_string(),
        "MPI_BOR is not defined for MPI_DOUBLE; MPI_DOUBLE takes only MPI_MAX, MPI_MIN, MPI_SUM and MPI_PROD"
    );
    let e = ReduceError::PartialElement {
        ty: ElementType::DoubleInt,
        len: 20,
    };
    assert_eq!(
        e.to_string(),
        "20 bytes is not a whole number of MPI_DOUBLE_INT elements (16 bytes each); \
         pass a multiple of 16 bytes (count × element size)"
    );
    let e = ReduceError::LengthMismatch {
        first: "input",
        first_len: 12,
        second: "inout",
        second_len: 8,
    };
    assert_eq!(
        e.to_string(),
        "the input buffer has 12 bytes but the inout buffer has 8; \
         the buffers of a reduction must have the same length (count × element size)"
    );
}

#[test]
fn codes_are_positions_and_round_trip() {
    for (i, &t) in ElementType::ALL.iter().enumerate() {
        assert_eq!(t.code() as usize, i);
        assert_eq!(ElementType::from_code(t.code()), Some(t));
    }
    for (i, &o) in Op::ALL.iter().enumerate() {
        assert_eq!(o.code() as usize, i);
        assert_eq!(Op::from_code(o.code()), Some(o));
    }
    assert_eq!(ElementType::from_code(ElementType::ALL.len() as u8), None);
    assert_eq!(Op::from_code(255), None);
}
