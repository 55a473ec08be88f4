//! The reduction loops: one monomorphic function per (operation, element
//! type), chosen once per call by [`kernel`].
//!
//! Each loop is a plain zip over typed slices with the operation inlined,
//! which LLVM vectorizes for the integer and float types. When a buffer is
//! not aligned for its element type the same operation runs over
//! `chunks_exact` of bytes, loading and storing each element with
//! `from_ne_bytes`/`to_ne_bytes` (unaligned loads, still a straight loop).

use std::mem::size_of;
use std::ops::{BitAnd, BitOr, BitXor};

use crate::elem::{typed, typed_mut, DoubleInt, Elem, FloatInt, LongInt, Pair, ShortInt, TwoInt};
use crate::{ElementType, Op};

/// The buffers of one call. Lengths are already checked: equal, and a
/// whole number of elements.
pub(crate) enum Bufs<'a> {
    /// `inout[i] = input[i] op inout[i]`.
    Local {
        input: &'a [u8],
        inout: &'a mut [u8],
    },
    /// `out[i] = a[i] op b[i]`.
    Into {
        a: &'a [u8],
        b: &'a [u8],
        out: &'a mut [u8],
    },
}

/// A monomorphic reduction loop.
pub(crate) type Kernel = fn(Bufs<'_>);

/// One binary operation on one element type; `x` is the left operand (the
/// input), `y` the right one (inout).
trait BinOp<T> {
    fn apply(x: T, y: T) -> T;
}

/// Runs `O` over the buffers, typed when every buffer is aligned for `T`.
/// One element (the most common reduction, a scalar) is loaded and stored
/// directly.
fn run<T: Elem, O: BinOp<T>>(bufs: Bufs<'_>) {
    match bufs {
        Bufs::Local { input, inout } if inout.len() == size_of::<T>() => {
            O::apply(T::load(input), T::load(inout)).store(inout);
        }
        Bufs::Into { a, b, out } if out.len() == size_of::<T>() => {
            O::apply(T::load(a), T::load(b)).store(out);
        }
        Bufs::Local { input, inout } => {
            let Some(x) = typed::<T>(input) else {
                return local_bytes::<T, O>(input, inout);
            };
            match typed_mut::<T>(inout) {
                Ok(y) => {
                    for (y, &x) in y.iter_mut().zip(x) {
                        T::put(y, O::apply(x, *y));
                    }
                }
                Err(inout) => local_bytes::<T, O>(input, inout),
            }
        }
        Bufs::Into { a, b, out } => {
            let (Some(x), Some(y)) = (typed::<T>(a), typed::<T>(b)) else {
                return into_bytes::<T, O>(a, b, out);
            };
            match typed_mut::<T>(out) {
                Ok(out) => {
                    for ((o, &x), &y) in out.iter_mut().zip(x).zip(y) {
                        T::put(o, O::apply(x, y));
                    }
                }
                Err(out) => into_bytes::<T, O>(a, b, out),
            }
        }
    }
}

/// The unaligned path of [`Bufs::Local`].
fn local_bytes<T: Elem, O: BinOp<T>>(input: &[u8], inout: &mut [u8]) {
    let n = size_of::<T>();
    for (x, y) in input.chunks_exact(n).zip(inout.chunks_exact_mut(n)) {
        O::apply(T::load(x), T::load(y)).store(y);
    }
}

/// The unaligned path of [`Bufs::Into`].
fn into_bytes<T: Elem, O: BinOp<T>>(a: &[u8], b: &[u8], out: &mut [u8]) {
    let n = size_of::<T>();
    for ((o, x), y) in out
        .chunks_exact_mut(n)
        .zip(a.chunks_exact(n))
        .zip(b.chunks_exact(n))
    {
        O::apply(T::load(x), T::load(y)).store(o);
    }
}

/// Wrapping integer or IEEE float arithmetic.
trait Arith: Copy {
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
}

/// C's view of a value as a truth value, and back.
trait Logic: Copy {
    fn truth(self) -> bool;
    fn from_truth(t: bool) -> Self;
}

macro_rules! int {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
        }
        impl Logic for $t {
            #[inline(always)]
            fn truth(self) -> bool {
                self != 0
            }
            #[inline(always)]
            fn from_truth(t: bool) -> Self {
                <$t>::from(t)
            }
        }
    )*};
}

int!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! float {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self + o
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self * o
            }
        }
    )*};
}

float!(f32, f64);

/// The operations, as types so each loop is monomorphic.
mod ops {
    pub(super) struct Max;
    pub(super) struct Min;
    pub(super) struct Sum;
    pub(super) struct Prod;
    pub(super) struct Land;
    pub(super) struct Lor;
    pub(super) struct Lxor;
    pub(super) struct Band;
    pub(super) struct Bor;
    pub(super) struct Bxor;
    pub(super) struct MinLoc;
    pub(super) struct MaxLoc;
}

impl<T: PartialOrd + Copy> BinOp<T> for ops::Max {
    #[inline(always)]
    fn apply(x: T, y: T) -> T {
        if x > y {
            x
        } else {
            y
        }
    }
}

impl<T: PartialOrd + Copy> BinOp<T> for ops::Min {
    #[inline(always)]
    fn apply(x: T, y: T) -> T {
        if x < y {
            x
        } else {
            y
        }
    }
}

impl<T: Arith> BinOp<T> for ops::Sum {
    #[inline(always)]
    fn apply(x: T, y: T) -> T {
        x.add(y)
    }
}

impl<T: Arith> BinOp<T> for ops::Prod {
    #[inline(always)]
    fn apply(x: T, y: T) -> T {
        x.mul(y)
    }
}

// The logical operations use non-short-circuit `&`/`|` so the loops stay
// branch-free.
impl<T: Logic> BinOp<T> for ops::Land {
    #[inline(always)]
    fn apply(x: T, y: T) -> T {
        T::from_truth(x.truth() & y.truth())
    }
}

impl<T: Logic> BinOp<T> for ops::Lor {
    #[inline(always)]
    fn apply(x: T, y: T) -> T {
        T::from_truth(x.truth() | y.truth())
    }
}

impl<T: Logic> BinOp<T> for ops::Lxor {
    #[inline(always)]
    fn apply(x: T, y: T) -> T {
        T::from_truth(x.truth() ^ y.truth())
    }
}

impl<T: BitAnd<Output = T>> BinOp<T> for ops::Band {
    #[inline(always)]
    fn apply(x: T, y: T) -> T {
        x & y
    }
}

impl<T: BitOr<Output = T>> BinOp<T> for ops::Bor {
    #[inline(always)]
    fn apply(x: T, y: T) -> T {
        x | y
    }
}

impl<T: BitXor<Output = T>> BinOp<T> for ops::Bxor {
    #[inline(always)]
    fn apply(x: T, y: T) -> T {
        x ^ y
    }
}

// MINLOC/MAXLOC: `x` = (u, i) is the input, `y` = (v, j) is inout. A tie —
// including values that do not compare (NaN) — keeps inout's value and
// takes the smaller index.
impl<T: Pair> BinOp<T> for ops::MinLoc {
    #[inline(always)]
    fn apply(x: T, y: T) -> T {
        let (u, v) = (x.value(), y.value());
        if u < v {
            x
        } else if v < u {
            y
        } else {
            T::new(v, x.index().min(y.index()))
        }
    }
}

impl<T: Pair> BinOp<T> for ops::MaxLoc {
    #[inline(always)]
    fn apply(x: T, y: T) -> T {
        let (u, v) = (x.value(), y.value());
        if u > v {
            x
        } else if v > u {
            y
        } else {
            T::new(v, x.index().min(y.index()))
        }
    }
}

/// Every loop, by operation code and element type code ([`kernel`] of
/// every pair, worked out at compile time).
static KERNELS: [[Option<Kernel>; ElementType::ALL.len()]; Op::ALL.len()] = {
    let mut table = [[None; ElementType::ALL.len()]; Op::ALL.len()];
    let mut o = 0;
    while o < Op::ALL.len() {
        let mut t = 0;
        while t < ElementType::ALL.len() {
            table[o][t] = kernel(Op::ALL[o], ElementType::ALL[t]);
            t += 1;
        }
        o += 1;
    }
    table
};

/// The loop for `op` on `ty` from the table: [`kernel`] without its
/// matches.
#[inline]
pub(crate) fn kernel_of(op: Op, ty: ElementType) -> Option<Kernel> {
    KERNELS[op.code() as usize][ty.code() as usize]
}

/// The loop for `op` on `ty`, or `None` when MPI does not define `op` on
/// `ty`. This agrees with [`Op::applies_to`] (a unit test checks every
/// pair).
pub(crate) const fn kernel(op: Op, ty: ElementType) -> Option<Kernel> {
    macro_rules! k {
        ($t:ty, $o:ident) => {
            Some(run::<$t, ops::$o> as Kernel)
        };
    }
    // Integers take everything but MINLOC/MAXLOC.
    macro_rules! integer {
        ($t:ty) => {
            match op {
                Op::Max => k!($t, Max),
                Op::Min => k!($t, Min),
                Op::Sum => k!($t, Sum),
                Op::Prod => k!($t, Prod),
                Op::Land => k!($t, Land),
                Op::Lor => k!($t, Lor),
                Op::Lxor => k!($t, Lxor),
                Op::Band => k!($t, Band),
                Op::Bor => k!($t, Bor),
                Op::Bxor => k!($t, Bxor),
                Op::MinLoc | Op::MaxLoc => None,
            }
        };
    }
    macro_rules! float {
        ($t:ty) => {
            match op {
                Op::Max => k!($t, Max),
                Op::Min => k!($t, Min),
                Op::Sum => k!($t, Sum),
                Op::Prod => k!($t, Prod),
                _ => None,
            }
        };
    }
    macro_rules! pair {
        ($t:ty) => {
            match op {
                Op::MinLoc => k!($t, MinLoc),
                Op::MaxLoc => k!($t, MaxLoc),
                _ => None,
            }
        };
    }
    match ty {
        ElementType::Int8 => integer!(i8),
        ElementType::Int16 => integer!(i16),
        ElementType::Int32 => integer!(i32),
        ElementType::Int64 => integer!(i64),
        ElementType::UInt8 => integer!(u8),
        ElementType::UInt16 => integer!(u16),
        ElementType::UInt32 => integer!(u32),
        ElementType::UInt64 => integer!(u64),
        ElementType::Float32 => float!(f32),
        ElementType::Float64 => float!(f64),
        // `_Bool` as its byte: nonzero is true, results are 0 or 1.
        ElementType::Bool => match op {
            Op::Land => k!(u8, Land),
            Op::Lor => k!(u8, Lor),
            Op::Lxor => k!(u8, Lxor),
            _ => None,
        },
        ElementType::Byte => match op {
            Op::Band => k!(u8, Band),
            Op::Bor => k!(u8, Bor),
            Op::Bxor => k!(u8, Bxor),
            _ => None,
        },
        ElementType::FloatInt => pair!(FloatInt),
        ElementType::DoubleInt => pair!(DoubleInt),
        ElementType::LongInt => pair!(LongInt),
        ElementType::TwoInt => pair!(TwoInt),
        ElementType::ShortInt => pair!(ShortInt),
    }
}
