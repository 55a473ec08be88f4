//! A scalar reference model, written from the MPI rules independently of
//! the kernels: each element is decoded with `from_ne_bytes`, combined,
//! and encoded with `to_ne_bytes`. Also the test data generator.

use std::cmp::Ordering;

use crate::{ElementType, Op};

/// What the bytes of an element mean, as the test sees them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Kind {
    Int {
        width: usize,
        signed: bool,
    },
    F32,
    F64,
    Bool,
    Byte,
    Pair {
        value: PairValue,
        index_at: usize,
        size: usize,
    },
}

/// The value half of a MINLOC/MAXLOC pair.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum PairValue {
    F32,
    F64,
    I64,
    I32,
    I16,
}

impl PairValue {
    fn width(self) -> usize {
        match self {
            PairValue::F32 | PairValue::I32 => 4,
            PairValue::F64 | PairValue::I64 => 8,
            PairValue::I16 => 2,
        }
    }

    fn is_float(self) -> bool {
        matches!(self, PairValue::F32 | PairValue::F64)
    }

    /// Decodes to something ordered like the C value (f32 → f64 keeps the
    /// order and NaN-ness).
    fn decode(self, b: &[u8]) -> Num {
        match self {
            PairValue::F32 => Num::F(f32::from_ne_bytes(arr(b)) as f64),
            PairValue::F64 => Num::F(f64::from_ne_bytes(arr(b))),
            PairValue::I64 | PairValue::I32 | PairValue::I16 => Num::I(sint(b)),
        }
    }
}

#[derive(PartialEq, PartialOrd)]
enum Num {
    F(f64),
    I(i64),
}

/// The hand-written layout table (not `ElementType::size`).
pub(super) fn kind(ty: ElementType) -> Kind {
    use ElementType as T;
    let int = |width, signed| Kind::Int { width, signed };
    let pair = |value, index_at, size| Kind::Pair {
        value,
        index_at,
        size,
    };
    match ty {
        T::Int8 => int(1, true),
        T::Int16 => int(2, true),
        T::Int32 => int(4, true),
        T::Int64 => int(8, true),
        T::UInt8 => int(1, false),
        T::UInt16 => int(2, false),
        T::UInt32 => int(4, false),
        T::UInt64 => int(8, false),
        T::Float32 => Kind::F32,
        T::Float64 => Kind::F64,
        T::Bool => Kind::Bool,
        T::Byte => Kind::Byte,
        T::FloatInt => pair(PairValue::F32, 4, 8),
        T::DoubleInt => pair(PairValue::F64, 8, 16),
        T::LongInt => pair(PairValue::I64, 8, 16),
        T::TwoInt => pair(PairValue::I32, 4, 8),
        T::ShortInt => pair(PairValue::I16, 4, 8),
    }
}

impl Kind {
    pub(super) fn size(self) -> usize {
        match self {
            Kind::Int { width, .. } => width,
            Kind::F32 => 4,
            Kind::F64 => 8,
            Kind::Bool | Kind::Byte => 1,
            Kind::Pair { size, .. } => size,
        }
    }

    fn is_float(self) -> bool {
        match self {
            Kind::F32 | Kind::F64 => true,
            Kind::Pair { value, .. } => value.is_float(),
            _ => false,
        }
    }
}

/// MPI 3.1 §5.9.2's table, restated: does MPI define `op` on `kind`?
pub(super) fn defined(op: Op, kind: Kind) -> bool {
    let integer = matches!(kind, Kind::Int { .. });
    let float = matches!(kind, Kind::F32 | Kind::F64);
    match op {
        Op::Max | Op::Min | Op::Sum | Op::Prod => integer || float,
        Op::Land | Op::Lor | Op::Lxor => integer || kind == Kind::Bool,
        Op::Band | Op::Bor | Op::Bxor => integer || kind == Kind::Byte,
        Op::MinLoc | Op::MaxLoc => matches!(kind, Kind::Pair { .. }),
    }
}

fn arr<const N: usize>(b: &[u8]) -> [u8; N] {
    b.try_into().expect("element width")
}

fn uint(b: &[u8]) -> u64 {
    match b.len() {
        1 => u64::from(u8::from_ne_bytes(arr(b))),
        2 => u64::from(u16::from_ne_bytes(arr(b))),
        4 => u64::from(u32::from_ne_bytes(arr(b))),
        8 => u64::from_ne_bytes(arr(b)),
        n => panic!("no {n}-byte integer"),
    }
}

fn sint(b: &[u8]) -> i64 {
    match b.len() {
        1 => i64::from(i8::from_ne_bytes(arr(b))),
        2 => i64::from(i16::from_ne_bytes(arr(b))),
        4 => i64::from(i32::from_ne_bytes(arr(b))),
        8 => i64::from_ne_bytes(arr(b)),
        n => panic!("no {n}-byte integer"),
    }
}

/// Writes the low `dst.len()` bytes of `v` (truncation = wrapping).
fn put_uint(v: u64, dst: &mut [u8]) {
    match dst.len() {
        1 => dst.copy_from_slice(&(v as u8).to_ne_bytes()),
        2 => dst.copy_from_slice(&(v as u16).to_ne_bytes()),
        4 => dst.copy_from_slice(&(v as u32).to_ne_bytes()),
        8 => dst.copy_from_slice(&v.to_ne_bytes()),
        n => panic!("no {n}-byte integer"),
    }
}

/// `dst = x op y` for one element, `x` the left operand (input), `y` the
/// right one (inout). Writes only data bytes, never pair padding.
pub(super) fn apply(op: Op, kind: Kind, x: &[u8], y: &[u8], dst: &mut [u8]) {
    match kind {
        Kind::Int { signed, .. } => {
            let greater = if signed {
                sint(x) > sint(y)
            } else {
                uint(x) > uint(y)
            };
            let less = if signed {
                sint(x) < sint(y)
            } else {
                uint(x) < uint(y)
            };
            let (a, b) = (uint(x), uint(y));
            let v = match op {
                Op::Max => return dst.copy_from_slice(if greater { x } else { y }),
                Op::Min => return dst.copy_from_slice(if less { x } else { y }),
                Op::Sum => a.wrapping_add(b),
                Op::Prod => a.wrapping_mul(b),
                Op::Land => u64::from(a != 0 && b != 0),
                Op::Lor => u64::from(a != 0 || b != 0),
                Op::Lxor => u64::from((a != 0) != (b != 0)),
                Op::Band => a & b,
                Op::Bor => a | b,
                Op::Bxor => a ^ b,
                Op::MinLoc | Op::MaxLoc => panic!("not for integers"),
            };
            put_uint(v, dst);
        }
        Kind::F32 => {
            let (a, b) = (f32::from_ne_bytes(arr(x)), f32::from_ne_bytes(arr(y)));
            let v = match op {
                Op::Max => {
                    if a > b {
                        a
                    } else {
                        b
                    }
                }
                Op::Min => {
                    if a < b {
                        a
                    } else {
                        b
                    }
                }
                Op::Sum => a + b,
                Op::Prod => a * b,
                _ => panic!("not for floats"),
            };
            dst.copy_from_slice(&v.to_ne_bytes());
        }
        Kind::F64 => {
            let (a, b) = (f64::from_ne_bytes(arr(x)), f64::from_ne_bytes(arr(y)));
            let v = match op {
                Op::Max => {
                    if a > b {
                        a
                    } else {
                        b
                    }
                }
                Op::Min => {
                    if a < b {
                        a
                    } else {
                        b
                    }
                }
                Op::Sum => a + b,
                Op::Prod => a * b,
                _ => panic!("not for floats"),
            };
            dst.copy_from_slice(&v.to_ne_bytes());
        }
        Kind::Bool => {
            let (a, b) = (x[0] != 0, y[0] != 0);
            let v = match op {
                Op::Land => a && b,
                Op::Lor => a || b,
                Op::Lxor => a != b,
                _ => panic!("not for _Bool"),
            };
            dst[0] = u8::from(v);
        }
        Kind::Byte => {
            dst[0] = match op {
                Op::Band => x[0] & y[0],
                Op::Bor => x[0] | y[0],
                Op::Bxor => x[0] ^ y[0],
                _ => panic!("not for MPI_BYTE"),
            };
        }
        Kind::Pair {
            value, index_at, ..
        } => {
            let w = value.width();
            let (u, v) = (value.decode(&x[..w]), value.decode(&y[..w]));
            let i = sint(&x[index_at..index_at + 4]);
            let j = sint(&y[index_at..index_at + 4]);
            let order = match op {
                Op::MinLoc => u.partial_cmp(&v),
                Op::MaxLoc => v.partial_cmp(&u),
                _ => panic!("not for pairs"),
            };
            // Less: the input wins; Greater: inout wins; tie or unordered:
            // inout's value with the smaller index.
            let (src, index) = match order {
                Some(Ordering::Less) => (x, i),
                Some(Ordering::Greater) => (y, j),
                _ => (y, i.min(j)),
            };
            dst[..w].copy_from_slice(&src[..w]);
            put_uint(index as u64, &mut dst[index_at..index_at + 4]);
        }
    }
}

/// Compares a result with the reference, element by element. Float sums
/// and products may pick either NaN operand's payload (the compiler may
/// commute them), so there any NaN equals any NaN; everything else must
/// match bit for bit, padding included.
pub(super) fn assert_same(op: Op, ty: ElementType, got: &[u8], want: &[u8], what: &str) {
    assert_eq!(got.len(), want.len());
    let k = kind(ty);
    let lenient = matches!(op, Op::Sum | Op::Prod) && k.is_float();
    for (e, (g, w)) in got.chunks(k.size()).zip(want.chunks(k.size())).enumerate() {
        if lenient && is_nan(k, g) && is_nan(k, w) {
            continue;
        }
        assert_eq!(g, w, "{op} on {ty}, {what}: element {e} differs");
    }
}

fn is_nan(kind: Kind, b: &[u8]) -> bool {
    match kind {
        Kind::F32 => f32::from_ne_bytes(arr(b)).is_nan(),
        Kind::F64 => f64::from_ne_bytes(arr(b)).is_nan(),
        _ => false,
    }
}

/// xorshift64*: deterministic test data.
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub(super) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub(super) fn fill(&mut self, b: &mut [u8]) {
        for byte in b {
            *byte = self.next() as u8;
        }
    }
}

fn special_f64(rng: &mut Rng) -> f64 {
    const S: [f64; 10] = [
        f64::NAN,
        -f64::NAN,
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        1.0,
        -1.0,
        f64::MAX,
        f64::MIN_POSITIVE / 4.0,
    ];
    S[rng.below(S.len() as u64) as usize]
}

fn put_special(kind: Kind, rng: &mut Rng, b: &mut [u8]) {
    let v = special_f64(rng);
    match kind {
        Kind::F32
        | Kind::Pair {
            value: PairValue::F32,
            ..
        } => b[..4].copy_from_slice(&(v as f32).to_ne_bytes()),
        Kind::F64
        | Kind::Pair {
            value: PairValue::F64,
            ..
        } => b[..8].copy_from_slice(&v.to_ne_bytes()),
        _ => {}
    }
}

/// Random operands with the cases that matter made common: equal elements,
/// zeros (logical operations), special floats (NaN, ±0, ±∞), and pairs
/// with equal values but different indices (MINLOC/MAXLOC ties).
pub(super) fn operands(ty: ElementType, rng: &mut Rng, x: &mut [u8], y: &mut [u8]) {
    let k = kind(ty);
    rng.fill(x);
    rng.fill(y);
    let value_len = match k {
        Kind::Pair { value, .. } => value.width(),
        _ => k.size(),
    };
    for (x, y) in x.chunks_mut(k.size()).zip(y.chunks_mut(k.size())) {
        match rng.below(16) {
            0 | 1 => x.copy_from_slice(y),
            2 => x[..value_len].fill(0),
            3 => y[..value_len].fill(0),
            4 | 5 if k.is_float() => put_special(k, rng, x),
            6 | 7 if k.is_float() => put_special(k, rng, y),
            8 if k.is_float() => {
                put_special(k, rng, x);
                put_special(k, rng, y);
            }
            9..=11 => x[..value_len].copy_from_slice(&y[..value_len]),
            _ => {}
        }
    }
}
