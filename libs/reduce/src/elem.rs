//! The in-memory element representations the kernels work on, and the one
//! place that reinterprets byte slices as typed slices.

use std::mem::{align_of, size_of};

/// Plain old data: a type that may be viewed as bytes and built from any
/// bytes.
///
/// # Safety
///
/// An implementor must be `Copy`, have a nonzero size, have no padding
/// bytes (every byte of its representation belongs to a field, so a value
/// read from initialized bytes is fully initialized and writing it leaves
/// no uninitialized bytes behind) and accept every bit pattern as a valid
/// value (so reading it from arbitrary bytes is never undefined behaviour).
pub(crate) unsafe trait Plain: Copy + 'static {}

/// Views `bytes` as a slice of `T` if it starts at an address aligned for
/// `T` and its length is a whole number of `T`s; `None` otherwise.
#[inline]
pub(crate) fn typed<T: Plain>(bytes: &[u8]) -> Option<&[T]> {
    if !fits::<T>(bytes) {
        return None;
    }
    // SAFETY: the pointer is non-null, aligned for `T` (checked by `fits`)
    // and valid for reads of `bytes.len()` initialized bytes, which are
    // exactly `bytes.len() / size_of::<T>()` whole `T`s (also checked);
    // `T: Plain` accepts every bit pattern; the new slice borrows `bytes`
    // for the same lifetime, so nothing can write to it meanwhile.
    Some(unsafe {
        std::slice::from_raw_parts(bytes.as_ptr().cast::<T>(), bytes.len() / size_of::<T>())
    })
}

/// Like [`typed`] for a mutable slice; gives the bytes back when they do
/// not fit.
#[inline]
pub(crate) fn typed_mut<T: Plain>(bytes: &mut [u8]) -> Result<&mut [T], &mut [u8]> {
    if !fits::<T>(bytes) {
        return Err(bytes);
    }
    // SAFETY: as in `typed`, for reads and writes, and the new slice takes
    // over the unique borrow of `bytes`. `T: Plain` has no padding, so every
    // `T` written through it leaves all bytes initialized and the bytes are
    // valid `u8`s again when the borrow ends.
    Ok(unsafe {
        std::slice::from_raw_parts_mut(bytes.as_mut_ptr().cast::<T>(), bytes.len() / size_of::<T>())
    })
}

/// Whether `bytes` is an aligned whole number of `T`s. (`align_offset`
/// may in principle answer "unknown"; then the slower byte path runs.)
#[inline]
fn fits<T>(bytes: &[u8]) -> bool {
    let misaligned = bytes.as_ptr().align_offset(align_of::<T>()) != 0;
    // checked_rem: `usize::is_multiple_of` is newer than the workspace's MSRV.
    let partial = bytes.len().checked_rem(size_of::<T>()) != Some(0);
    !(misaligned || partial)
}

/// An element the kernels read from and write to byte buffers.
///
/// `load` and `store` take exactly `size_of::<Self>()` bytes at any
/// alignment; `store` and `put` write only the bytes that carry data
/// (never the padding of the pair types).
pub(crate) trait Elem: Plain {
    /// Reads an element from `b` (`b.len() == size_of::<Self>()`).
    fn load(b: &[u8]) -> Self;
    /// Writes the element's data bytes to `b` (`b.len() == size_of::<Self>()`).
    fn store(self, b: &mut [u8]);
    /// Writes `v`'s data fields into `*dst`.
    fn put(dst: &mut Self, v: Self);
}

macro_rules! scalar {
    ($($t:ty),*) => {$(
        // SAFETY: a primitive integer or float has no padding and every bit
        // pattern is a valid value.
        unsafe impl Plain for $t {}

        impl Elem for $t {
            #[inline(always)]
            fn load(b: &[u8]) -> Self {
                let mut a = [0u8; size_of::<$t>()];
                a.copy_from_slice(b);
                <$t>::from_ne_bytes(a)
            }
            #[inline(always)]
            fn store(self, b: &mut [u8]) {
                b.copy_from_slice(&self.to_ne_bytes());
            }
            #[inline(always)]
            fn put(dst: &mut Self, v: Self) {
                *dst = v;
            }
        }
    )*};
}

scalar!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

/// A value-index pair of MINLOC and MAXLOC.
pub(crate) trait Pair: Elem {
    /// The value's type.
    type V: PartialOrd + Copy;
    /// The value.
    fn value(self) -> Self::V;
    /// The index.
    fn index(self) -> i32;
    /// A pair with this value and index (padding zeroed; never stored).
    fn new(value: Self::V, index: i32) -> Self;
}

macro_rules! pair {
    ($(#[$doc:meta])* $name:ident { value: $v:ty, $(pad_before: $pb:literal,)? $(pad_after: $pa:literal,)? size: $size:literal }) => {
        $(#[$doc])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug)]
        pub(crate) struct $name {
            value: $v,
            $(pad_before: [u8; $pb],)?
            index: i32,
            $(pad_after: [u8; $pa],)?
        }

        const _: () = assert!(size_of::<$name>() == $size);

        impl $name {
            const INDEX_AT: usize = std::mem::offset_of!($name, index);
            const VALUE_LEN: usize = size_of::<$v>();
        }

        // SAFETY: `repr(C)` with the padding spelled out as byte-array
        // fields, so there are no implicit padding bytes (the size
        // assertion above checks the total), and every field accepts every
        // bit pattern.
        unsafe impl Plain for $name {}

        impl Elem for $name {
            #[inline(always)]
            fn load(b: &[u8]) -> Self {
                let value = <$v as Elem>::load(&b[..Self::VALUE_LEN]);
                let index = i32::load(&b[Self::INDEX_AT..Self::INDEX_AT + 4]);
                Self::new(value, index)
            }
            #[inline(always)]
            fn store(self, b: &mut [u8]) {
                self.value.store(&mut b[..Self::VALUE_LEN]);
                self.index.store(&mut b[Self::INDEX_AT..Self::INDEX_AT + 4]);
            }
            #[inline(always)]
            fn put(dst: &mut Self, v: Self) {
                dst.value = v.value;
                dst.index = v.index;
            }
        }

        impl Pair for $name {
            type V = $v;
            #[inline(always)]
            fn value(self) -> $v {
                self.value
            }
            #[inline(always)]
            fn index(self) -> i32 {
                self.index
            }
            #[inline(always)]
            fn new(value: $v, index: i32) -> Self {
                Self {
                    value,
                    $(pad_before: [0; $pb],)?
                    index,
                    $(pad_after: [0; $pa],)?
                }
            }
        }
    };
}

pair!(
    /// `MPI_FLOAT_INT`.
    FloatInt { value: f32, size: 8 }
);
pair!(
    /// `MPI_DOUBLE_INT`.
    DoubleInt { value: f64, pad_after: 4, size: 16 }
);
pair!(
    /// `MPI_LONG_INT` (64-bit `long`).
    LongInt { value: i64, pad_after: 4, size: 16 }
);
pair!(
    /// `MPI_2INT`.
    TwoInt { value: i32, size: 8 }
);
pair!(
    /// `MPI_SHORT_INT`.
    ShortInt { value: i16, pad_before: 2, size: 8 }
);
