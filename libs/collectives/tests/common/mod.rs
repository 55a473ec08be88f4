//! Shared pieces of the integration tests: deterministic data, the
//! reduction cases with their sequential references, and the size matrix.

#![allow(dead_code)]

use oxmpi_collectives::{CollError, ElementType, Op, Reduction};
use oxmpi_reduce::reduce_local;

/// Communicator sizes every algorithm runs at.
pub const SIZES: std::ops::RangeInclusive<u32> = 1..=8;

/// Message lengths in bytes (or element counts) for the data-moving
/// collectives.
pub const LENS: &[usize] = &[0, 1, 7, 64, 1000, 65536];

/// Deterministic pseudo-random bytes for `(seed, len)` (splitmix64).
pub fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        out.extend_from_slice(&z.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// A seed from the parts of a test case.
pub fn seed(parts: &[u64]) -> u64 {
    parts.iter().fold(0x1234_5678, |acc, &p| {
        acc.wrapping_mul(1_000_003).wrapping_add(p)
    })
}

/// A reduction used in the tests.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Case {
    /// A predefined operation.
    Pre(Op, ElementType),
    /// 2×2 matrices of wrapping u64, multiplied: associative, not
    /// commutative (a user operation).
    MatMul,
    /// Wrapping u32 addition as a commutative user operation.
    UserSum,
}

/// The reduction cases of the full matrix.
pub const CASES: &[Case] = &[
    Case::Pre(Op::Sum, ElementType::Int32),
    Case::Pre(Op::Max, ElementType::UInt8),
    Case::Pre(Op::Prod, ElementType::Int64),
    Case::Pre(Op::Bxor, ElementType::UInt16),
    Case::Pre(Op::Sum, ElementType::Float64),
    Case::Pre(Op::Min, ElementType::Float32),
    Case::Pre(Op::Lor, ElementType::Bool),
    Case::Pre(Op::MaxLoc, ElementType::TwoInt),
    Case::MatMul,
    Case::UserSum,
];

/// A smaller set for the slower combinations: one predefined commutative,
/// the non-commutative one and the commutative user one.
pub const FEW_CASES: &[Case] = &[
    Case::Pre(Op::Sum, ElementType::Int32),
    Case::MatMul,
    Case::UserSum,
];

impl Case {
    /// Bytes per element.
    pub fn elem_size(self) -> usize {
        match self {
            Case::Pre(_, ty) => ty.size(),
            Case::MatMul => 32,
            Case::UserSum => 4,
        }
    }

    /// A rank's input of `count` elements: valid values for the type (no
    /// NaN; float sums of small integers, so every order gives the same
    /// result).
    pub fn input(self, seed: u64, count: usize) -> Vec<u8> {
        let raw = bytes(seed, count * self.elem_size());
        match self {
            Case::Pre(_, ElementType::Float64) => raw
                .chunks_exact(8)
                .flat_map(|c| (f64::from(c[0] % 100) - 50.0).to_ne_bytes())
                .collect(),
            Case::Pre(_, ElementType::Float32) => raw
                .chunks_exact(4)
                .flat_map(|c| (f32::from(i16::from_ne_bytes([c[0], c[1]])) / 8.0).to_ne_bytes())
                .collect(),
            Case::Pre(_, ElementType::Bool) => raw.iter().map(|b| u8::from(b % 4 == 0)).collect(),
            Case::Pre(_, ElementType::TwoInt) => raw
                .chunks_exact(8)
                .flat_map(|c| {
                    let value = i32::from(c[0] % 5);
                    let index = i32::from(c[4] % 9);
                    let mut e = value.to_ne_bytes().to_vec();
                    e.extend_from_slice(&index.to_ne_bytes());
                    e
                })
                .collect(),
            _ => raw,
        }
    }

    /// Runs `f` with this case's [`Reduction`].
    pub fn with<R>(self, f: impl FnOnce(&mut Reduction<'_>) -> R) -> R {
        match self {
            Case::Pre(op, ty) => f(&mut Reduction::Predefined { op, ty }),
            Case::MatMul => {
                let mut apply = |input: &[u8], inout: &mut [u8]| -> Result<(), CollError> {
                    for (a, b) in input.chunks_exact(32).zip(inout.chunks_exact_mut(32)) {
                        let product = matmul(a, b);
                        b.copy_from_slice(&product);
                    }
                    Ok(())
                };
                f(&mut Reduction::User {
                    elem_size: 32,
                    commutative: false,
                    apply: &mut apply,
                })
            }
            Case::UserSum => {
                let mut apply = |input: &[u8], inout: &mut [u8]| -> Result<(), CollError> {
                    for (a, b) in input.chunks_exact(4).zip(inout.chunks_exact_mut(4)) {
                        let sum = u32::from_ne_bytes(a.try_into().unwrap())
                            .wrapping_add(u32::from_ne_bytes(b.try_into().unwrap()));
                        b.copy_from_slice(&sum.to_ne_bytes());
                    }
                    Ok(())
                };
                f(&mut Reduction::User {
                    elem_size: 4,
                    commutative: true,
                    apply: &mut apply,
                })
            }
        }
    }

    /// `a op b` (`a` the left operand), computed sequentially.
    pub fn apply(self, a: &[u8], b: &[u8]) -> Vec<u8> {
        match self {
            Case::Pre(op, ty) => {
                let mut out = b.to_vec();
                reduce_local(op, ty, a, &mut out).unwrap();
                out
            }
            Case::MatMul => a
                .chunks_exact(32)
                .zip(b.chunks_exact(32))
                .flat_map(|(x, y)| matmul(x, y))
                .collect(),
            Case::UserSum => a
                .chunks_exact(4)
                .zip(b.chunks_exact(4))
                .flat_map(|(x, y)| {
                    u32::from_ne_bytes(x.try_into().unwrap())
                        .wrapping_add(u32::from_ne_bytes(y.try_into().unwrap()))
                        .to_ne_bytes()
                })
                .collect(),
        }
    }

    /// `x0 op x1 op … op x(k−1)`, folded from the left in rank order.
    pub fn fold(self, inputs: &[Vec<u8>]) -> Vec<u8> {
        let mut acc = inputs[0].clone();
        for x in &inputs[1..] {
            acc = self.apply(&acc, x);
        }
        acc
    }
}

/// The product `a × b` of two 2×2 matrices of wrapping u64 (row-major,
/// native byte order).
pub fn matmul(a: &[u8], b: &[u8]) -> [u8; 32] {
    let m = |s: &[u8], i: usize| u64::from_ne_bytes(s[i * 8..i * 8 + 8].try_into().unwrap());
    let (a0, a1, a2, a3) = (m(a, 0), m(a, 1), m(a, 2), m(a, 3));
    let (b0, b1, b2, b3) = (m(b, 0), m(b, 1), m(b, 2), m(b, 3));
    let c = [
        a0.wrapping_mul(b0).wrapping_add(a1.wrapping_mul(b2)),
        a0.wrapping_mul(b1).wrapping_add(a1.wrapping_mul(b3)),
        a2.wrapping_mul(b0).wrapping_add(a3.wrapping_mul(b2)),
        a2.wrapping_mul(b1).wrapping_add(a3.wrapping_mul(b3)),
    ];
    let mut out = [0u8; 32];
    for (i, v) in c.iter().enumerate() {
        out[i * 8..i * 8 + 8].copy_from_slice(&v.to_ne_bytes());
    }
    out
}

/// Only the small counts (up to 64 elements) of [`counts`].
pub fn small_counts(case: Case) -> Vec<usize> {
    counts(case).into_iter().filter(|&c| c <= 64).collect()
}

/// A fresh negative tag for the `i`-th call of a run.
pub fn tag(i: usize) -> i32 {
    -1 - i as i32
}

/// Asserts `got == want` with a short message (lengths and the first
/// differing byte) instead of dumping both buffers.
#[track_caller]
pub fn check(got: &[u8], want: &[u8], context: impl std::fmt::Display) {
    if got == want {
        return;
    }
    let first = got.iter().zip(want).position(|(a, b)| a != b);
    panic!(
        "{context}: got {} bytes, want {}; first difference at {:?}",
        got.len(),
        want.len(),
        first
    );
}

/// The element counts of the reduction tests for `case`: 0, 1, 7, 64, 1000
/// elements and 64 KiB.
pub fn counts(case: Case) -> Vec<usize> {
    let mut out = vec![0, 1, 7, 64, 1000];
    out.push(65536 / case.elem_size());
    out
}
