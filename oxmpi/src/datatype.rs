//! Element types and buffers.
//!
//! Messages carry plain bytes; the element types that can be sent and
//! received are the primitive numeric types ([`Equivalence`]), and a
//! [`Buffer`] (for sending) or [`BufferMut`] (for receiving) is a single
//! value, a slice, an array or a `Vec` of one of them. A received message
//! must hold a whole number of elements; the number of elements is the byte
//! count divided by the element size.

use crate::error::Error;
use crate::ErrorClass;
use oxmpi_mpi_core::coll::ElementCode;
use std::mem::size_of;

mod private {
    pub trait Sealed {}
}

/// A type whose values are sent as their in-memory bytes: `u8`, `i8`,
/// `u16`, `i16`, `u32`, `i32`, `u64`, `i64`, `usize`, `isize`, `f32`,
/// `f64` (like rsmpi's `Equivalence`, but sealed: only these types).
///
/// Every bit pattern is a valid value of these types, so a received
/// message can never produce an invalid value. Values travel in the
/// sender's byte order (every rank of a job runs on the same kind of
/// machine).
///
/// # Safety
/// Implemented only in this crate, for types without padding for which
/// every bit pattern is valid.
pub unsafe trait Equivalence: private::Sealed + Copy + Send + Sync + 'static {
    /// The type's name, for messages (`"i32"`).
    const NAME: &'static str;
    /// The zero value.
    const ZERO: Self;
    /// The type as reductions know it.
    #[doc(hidden)]
    const ELEMENT: ElementCode;
}

macro_rules! equivalence {
    ($($t:ty => $zero:expr, $element:expr),* $(,)?) => {$(
        impl private::Sealed for $t {}
        // SAFETY: a primitive numeric type: no padding, every bit pattern valid.
        unsafe impl Equivalence for $t {
            const NAME: &'static str = stringify!($t);
            const ZERO: Self = $zero;
            const ELEMENT: ElementCode = $element;
        }
    )*};
}

#[cfg(target_pointer_width = "64")]
const USIZE_ELEMENT: (ElementCode, ElementCode) = (ElementCode::UInt64, ElementCode::Int64);
#[cfg(target_pointer_width = "32")]
const USIZE_ELEMENT: (ElementCode, ElementCode) = (ElementCode::UInt32, ElementCode::Int32);

equivalence! {
    u8 => 0, ElementCode::UInt8,
    i8 => 0, ElementCode::Int8,
    u16 => 0, ElementCode::UInt16,
    i16 => 0, ElementCode::Int16,
    u32 => 0, ElementCode::UInt32,
    i32 => 0, ElementCode::Int32,
    u64 => 0, ElementCode::UInt64,
    i64 => 0, ElementCode::Int64,
    usize => 0, USIZE_ELEMENT.0,
    isize => 0, USIZE_ELEMENT.1,
    f32 => 0.0, ElementCode::Float32,
    f64 => 0.0, ElementCode::Float64,
}

/// The bytes of a slice of elements.
pub fn bytes_of<T: Equivalence>(items: &[T]) -> &[u8] {
    // SAFETY: `T` has no padding (Equivalence), so every byte of the slice
    // is initialized; the length is the slice's size in bytes.
    unsafe { std::slice::from_raw_parts(items.as_ptr().cast::<u8>(), std::mem::size_of_val(items)) }
}

/// The bytes of a mutable slice of elements; any bytes written through it
/// leave valid elements behind.
pub fn bytes_of_mut<T: Equivalence>(items: &mut [T]) -> &mut [u8] {
    // SAFETY: as `bytes_of`; and every bit pattern is a valid `T`, so
    // writing arbitrary bytes keeps the elements valid.
    unsafe {
        std::slice::from_raw_parts_mut(
            items.as_mut_ptr().cast::<u8>(),
            std::mem::size_of_val(items),
        )
    }
}

/// The number of `T` elements in `bytes` bytes, or `None` if `bytes` is
/// not a whole number of elements.
pub fn element_count<T: Equivalence>(bytes: usize) -> Option<usize> {
    element_count_of(bytes, size_of::<T>())
}

#[inline]
pub(crate) fn element_count_of(bytes: usize, size: usize) -> Option<usize> {
    // Every predefined type's size is a power of two: a shift and a mask
    // instead of a division on every completed receive.
    if size.is_power_of_two() {
        let whole = bytes >> size.trailing_zeros();
        return (bytes & (size - 1) == 0).then_some(whole);
    }
    let (whole, rest) = (bytes / size, bytes % size);
    (rest == 0).then_some(whole)
}

/// The error of a received message that is not a whole number of
/// elements of the receive buffer's type.
pub(crate) fn partial_element_error(
    bytes: usize,
    name: &str,
    size: usize,
    source: i32,
    tag: i32,
) -> Error {
    Error::new(
        ErrorClass::Buffer,
        format!(
            "the message from rank {source} (tag {tag}) has {bytes} bytes, which is not a whole number of {name} elements ({size} bytes each); receive it into a buffer of a type that matches what the sender sent (a u8 buffer takes any message)"
        ),
    )
}

/// Something that can be sent: a value, a slice, an array or a `Vec` of an
/// [`Equivalence`] type.
pub trait Buffer {
    /// The element type.
    type Item: Equivalence;
    /// The elements to send.
    fn as_items(&self) -> &[Self::Item];
    /// The bytes to send.
    fn as_bytes(&self) -> &[u8] {
        bytes_of(self.as_items())
    }
}

/// Something a message can be received into: a value, a slice, an array or
/// a `Vec` (its current length; it is not resized) of an [`Equivalence`]
/// type.
pub trait BufferMut {
    /// The element type.
    type Item: Equivalence;
    /// The elements to receive into.
    fn as_items_mut(&mut self) -> &mut [Self::Item];
    /// The bytes to receive into.
    fn as_bytes_mut(&mut self) -> &mut [u8] {
        bytes_of_mut(self.as_items_mut())
    }
}

impl<T: Equivalence> Buffer for T {
    type Item = T;
    fn as_items(&self) -> &[T] {
        std::slice::from_ref(self)
    }
}

impl<T: Equivalence> Buffer for [T] {
    type Item = T;
    fn as_items(&self) -> &[T] {
        self
    }
}

impl<T: Equivalence, const N: usize> Buffer for [T; N] {
    type Item = T;
    fn as_items(&self) -> &[T] {
        self
    }
}

impl<T: Equivalence> Buffer for Vec<T> {
    type Item = T;
    fn as_items(&self) -> &[T] {
        self
    }
}

impl<T: Equivalence> BufferMut for T {
    type Item = T;
    fn as_items_mut(&mut self) -> &mut [T] {
        std::slice::from_mut(self)
    }
}

impl<T: Equivalence> BufferMut for [T] {
    type Item = T;
    fn as_items_mut(&mut self) -> &mut [T] {
        self
    }
}

impl<T: Equivalence, const N: usize> BufferMut for [T; N] {
    type Item = T;
    fn as_items_mut(&mut self) -> &mut [T] {
        self
    }
}

impl<T: Equivalence> BufferMut for Vec<T> {
    type Item = T;
    fn as_items_mut(&mut self) -> &mut [T] {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_counts_divide_by_any_size() {
        for (bytes, size, count) in [
            (0, 1, Some(0)),
            (8, 1, Some(8)),
            (16, 8, Some(2)),
            (12, 8, None),
            (12, 4, Some(3)),
            (15, 2, None),
            (24, 12, Some(2)),
            (25, 12, None),
            (usize::MAX, 1, Some(usize::MAX)),
        ] {
            assert_eq!(element_count_of(bytes, size), count, "{bytes} B of {size}");
        }
    }

    #[test]
    fn byte_views_are_the_native_representation() {
        let v: [u32; 2] = [0x0403_0201, 0x0807_0605];
        let expect: Vec<u8> = v.iter().flat_map(|x| x.to_ne_bytes()).collect();
        assert_eq!(bytes_of(&v), &expect[..]);
        assert_eq!(v.as_bytes(), &expect[..]);
        let f = [1.5f64, -2.0];
        let expect: Vec<u8> = f.iter().flat_map(|x| x.to_ne_bytes()).collect();
        assert_eq!(f.as_bytes(), &expect[..]);
        assert_eq!(7i16.as_bytes(), &7i16.to_ne_bytes());
        assert!(Vec::<u64>::new().as_bytes().is_empty());
    }

    #[test]
    fn writing_bytes_sets_the_elements() {
        let mut v = vec![0i32; 3];
        let src: Vec<u8> = [-1i32, 5, i32::MAX]
            .iter()
            .flat_map(|x| x.to_ne_bytes())
            .collect();
        v.as_bytes_mut().copy_from_slice(&src);
        assert_eq!(v, [-1, 5, i32::MAX]);
        let mut x = 0u16;
        x.as_bytes_mut().copy_from_slice(&0xBEEFu16.to_ne_bytes());
        assert_eq!(x, 0xBEEF);
        let mut a = [0f32; 2];
        assert_eq!(a.as_bytes_mut().len(), 8);
    }

    #[test]
    fn buffers_of_every_shape_have_their_byte_length() {
        assert_eq!(5u8.as_bytes().len(), 1);
        assert_eq!([0usize; 4].as_bytes().len(), 4 * size_of::<usize>());
        assert_eq!(vec![0i64; 3].as_bytes().len(), 24);
        assert_eq!([0i8; 9][..].as_bytes().len(), 9);
        assert_eq!(1isize.as_items(), &[1]);
    }

    #[test]
    fn element_counts_need_whole_elements() {
        assert_eq!(element_count::<u8>(7), Some(7));
        assert_eq!(element_count::<i32>(0), Some(0));
        assert_eq!(element_count::<i32>(12), Some(3));
        assert_eq!(element_count::<i32>(13), None);
        assert_eq!(element_count::<f64>(4), None);
        assert_eq!(element_count::<u16>(2 << 20), Some(1 << 20));
    }

    #[test]
    fn names_and_zeros() {
        assert_eq!(<f32 as Equivalence>::NAME, "f32");
        assert_eq!(<usize as Equivalence>::NAME, "usize");
        assert_eq!(<i8 as Equivalence>::ZERO, 0);
        assert_eq!(<f64 as Equivalence>::ZERO, 0.0);
    }

    #[test]
    fn partial_element_error_says_what_and_what_to_do() {
        let e = partial_element_error(6, "i32", 4, 2, 9);
        assert_eq!(e.class(), ErrorClass::Buffer);
        assert_eq!(
            e.to_string(),
            "the message from rank 2 (tag 9) has 6 bytes, which is not a whole number of i32 elements (4 bytes each); receive it into a buffer of a type that matches what the sender sent (a u8 buffer takes any message)"
        );
    }
}
