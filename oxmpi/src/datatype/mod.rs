//! Element types and buffers.
//!
//! The element types that can be sent and received are the primitive
//! numeric types and structs that `#[derive(Equivalence)]`
//! ([`Equivalence`]); a [`Buffer`] (for sending) or [`BufferMut`] (for
//! receiving) is a single value, a slice, an array or a `Vec` of one of
//! them.
//!
//! A type without padding (every primitive, and a derived struct whose
//! fields fill it) travels as its bytes. A derived struct with padding is
//! packed field by field into a staging buffer when sent and unpacked
//! from one when received, so its padding is never read; its messages
//! hold [`Equivalence::PACKED_SIZE`] bytes per value. A received message
//! must hold a whole number of elements: its byte count divided by the
//! packed size.

use crate::error::Error;
use crate::ErrorClass;
use oxmpi_datatype::{Datatype, Primitive};
use oxmpi_mpi_core::coll::ElementCode;
use std::mem::size_of;
use std::sync::OnceLock;

#[doc(hidden)]
pub mod __derive;
pub(crate) mod stage;

/// `#[derive(Equivalence)]`: makes a struct of `Equivalence` fields an
/// element type.
///
/// Fields may be primitive numbers, structs that derive `Equivalence`,
/// and arrays `[T; N]` of these (nested to any depth). The struct must be
/// `Copy`. The derive builds the struct's datatype (each field at its
/// offset, with its own type; the extent is `size_of::<Self>()`) once,
/// on first use.
///
/// ```
/// use oxmpi::traits::*;
///
/// #[derive(Equivalence, Clone, Copy, Debug, PartialEq)]
/// struct Particle {
///     position: [f64; 3],
///     charge: i8, // followed by 7 bytes of padding
/// }
/// assert_eq!(Particle::PACKED_SIZE, 25);
/// assert!(!Particle::CONTIGUOUS);
/// ```
///
/// Refused at compile time: enums,
///
/// ```compile_fail
/// #[derive(oxmpi::Equivalence, Clone, Copy)]
/// enum Shape { Dot, Line }
/// ```
///
/// unions, structs without fields, generic structs,
///
/// ```compile_fail
/// #[derive(oxmpi::Equivalence, Clone, Copy)]
/// struct Pair<T> { a: T, b: T }
/// ```
///
/// references and raw pointers,
///
/// ```compile_fail
/// #[derive(oxmpi::Equivalence, Clone, Copy)]
/// struct Named { name: &'static str }
/// ```
///
/// and fields whose type is not `Equivalence` (`bool` and `char` are
/// not: not every bit pattern is a valid value of them).
///
/// ```compile_fail
/// #[derive(oxmpi::Equivalence, Clone, Copy)]
/// struct Flagged { value: f64, set: bool }
/// ```
pub use oxmpi_derive::Equivalence;

/// A type whose values can be sent and received: `u8`, `i8`, `u16`,
/// `i16`, `u32`, `i32`, `u64`, `i64`, `usize`, `isize`, `f32`, `f64`, and
/// structs with `#[derive(Equivalence)]` (like rsmpi's `Equivalence`).
///
/// Every bit pattern of a value's data bytes is a valid value, so a
/// received message can never produce an invalid value. Values travel in
/// the sender's byte order (every rank of a job runs on the same kind of
/// machine).
///
/// # Safety
/// Implement it only through `#[derive(Equivalence)]`. An implementation
/// promises that every bit pattern of the bytes [`datatype`](Self::datatype)
/// describes is a valid value, that those bytes lie inside the value and
/// are [`PACKED_SIZE`](Self::PACKED_SIZE) bytes in all, and that a type
/// whose `PACKED_SIZE` is its size has no padding.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be sent or received as MPI data",
    label = "not `Equivalence`",
    note = "the primitive numbers are `Equivalence`, and structs of them with #[derive(Equivalence)]; bool, char, references and pointers are not, since not every bit pattern is a valid value of them"
)]
pub unsafe trait Equivalence: Copy + Send + Sync + 'static {
    /// The type's name, for messages (`"i32"`, or the struct's name).
    const NAME: &'static str;
    /// The value with every field zero.
    const ZERO: Self;
    /// The type as reductions know it (`User` for derived structs).
    #[doc(hidden)]
    const ELEMENT: ElementCode;
    /// The bytes one value takes in a message: its size for a type
    /// without padding, the sum of its fields' packed sizes otherwise.
    const PACKED_SIZE: usize;
    /// Whether values travel as their bytes (the type has no padding):
    /// `true` for every primitive.
    const CONTIGUOUS: bool = Self::PACKED_SIZE == size_of::<Self>();
    /// Whether the type is a derived struct (reductions refuse the
    /// predefined operations on it).
    const DERIVED: bool = false;

    /// The type's datatype (built once, then shared).
    fn datatype() -> &'static Datatype;
}

macro_rules! equivalence {
    ($($t:ty => $zero:expr, $element:expr, $prim:expr),* $(,)?) => {$(
        // SAFETY: a primitive numeric type: no padding, every bit pattern
        // valid, and its datatype is the one primitive of its size.
        unsafe impl Equivalence for $t {
            const NAME: &'static str = stringify!($t);
            const ZERO: Self = $zero;
            const ELEMENT: ElementCode = $element;
            const PACKED_SIZE: usize = size_of::<$t>();

            fn datatype() -> &'static Datatype {
                static TYPE: OnceLock<Datatype> = OnceLock::new();
                TYPE.get_or_init(|| Datatype::predefined($prim))
            }
        }
    )*};
}

#[cfg(target_pointer_width = "64")]
const USIZE_ELEMENT: (ElementCode, ElementCode) = (ElementCode::UInt64, ElementCode::Int64);
#[cfg(target_pointer_width = "32")]
const USIZE_ELEMENT: (ElementCode, ElementCode) = (ElementCode::UInt32, ElementCode::Int32);
#[cfg(target_pointer_width = "64")]
const USIZE_PRIMITIVE: (Primitive, Primitive) = (Primitive::UInt64, Primitive::Int64);
#[cfg(target_pointer_width = "32")]
const USIZE_PRIMITIVE: (Primitive, Primitive) = (Primitive::UInt32, Primitive::Int32);

equivalence! {
    u8 => 0, ElementCode::UInt8, Primitive::UInt8,
    i8 => 0, ElementCode::Int8, Primitive::Int8,
    u16 => 0, ElementCode::UInt16, Primitive::UInt16,
    i16 => 0, ElementCode::Int16, Primitive::Int16,
    u32 => 0, ElementCode::UInt32, Primitive::UInt32,
    i32 => 0, ElementCode::Int32, Primitive::Int32,
    u64 => 0, ElementCode::UInt64, Primitive::UInt64,
    i64 => 0, ElementCode::Int64, Primitive::Int64,
    usize => 0, USIZE_ELEMENT.0, USIZE_PRIMITIVE.0,
    isize => 0, USIZE_ELEMENT.1, USIZE_PRIMITIVE.1,
    f32 => 0.0, ElementCode::Float32, Primitive::Float,
    f64 => 0.0, ElementCode::Float64, Primitive::Double,
}

/// The bytes of a slice of elements of a type without padding, or `None`
/// for a type with padding (whose padding bytes may not be read).
pub fn bytes_of<T: Equivalence>(items: &[T]) -> Option<&[u8]> {
    T::CONTIGUOUS.then(|| contiguous_bytes(items))
}

/// The bytes of a mutable slice of elements of a type without padding
/// (any bytes written through it leave valid elements behind), or `None`
/// for a type with padding.
pub fn bytes_of_mut<T: Equivalence>(items: &mut [T]) -> Option<&mut [u8]> {
    T::CONTIGUOUS.then(|| contiguous_bytes_mut(items))
}

/// The bytes of `items`, of a type without padding.
#[inline(always)]
pub(crate) fn contiguous_bytes<T: Equivalence>(items: &[T]) -> &[u8] {
    debug_assert!(T::CONTIGUOUS);
    // SAFETY: callers pass only types without padding (`T::CONTIGUOUS`:
    // the packed size is the size), so every byte of the slice is an
    // initialized data byte; the length is the slice's size in bytes.
    unsafe { std::slice::from_raw_parts(items.as_ptr().cast::<u8>(), std::mem::size_of_val(items)) }
}

/// The bytes of `items`, of a type without padding, to write.
#[inline(always)]
pub(crate) fn contiguous_bytes_mut<T: Equivalence>(items: &mut [T]) -> &mut [u8] {
    debug_assert!(T::CONTIGUOUS);
    // SAFETY: as `contiguous_bytes`; and every bit pattern is a valid `T`
    // (Equivalence), so writing arbitrary bytes keeps the elements valid.
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
    element_count_of(bytes, T::PACKED_SIZE)
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
    /// The bytes to send, for an element type without padding (`None`
    /// for one with padding, which is packed instead).
    fn as_bytes(&self) -> Option<&[u8]> {
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
    /// The bytes to receive into, for an element type without padding
    /// (`None` for one with padding).
    fn as_bytes_mut(&mut self) -> Option<&mut [u8]> {
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
        assert_eq!(bytes_of(&v), Some(&expect[..]));
        assert_eq!(v.as_bytes(), Some(&expect[..]));
        let f = [1.5f64, -2.0];
        let expect: Vec<u8> = f.iter().flat_map(|x| x.to_ne_bytes()).collect();
        assert_eq!(f.as_bytes(), Some(&expect[..]));
        assert_eq!(7i16.as_bytes(), Some(&7i16.to_ne_bytes()[..]));
        assert!(Vec::<u64>::new().as_bytes().unwrap().is_empty());
    }

    #[test]
    fn writing_bytes_sets_the_elements() {
        let mut v = vec![0i32; 3];
        let src: Vec<u8> = [-1i32, 5, i32::MAX]
            .iter()
            .flat_map(|x| x.to_ne_bytes())
            .collect();
        v.as_bytes_mut().unwrap().copy_from_slice(&src);
        assert_eq!(v, [-1, 5, i32::MAX]);
        let mut x = 0u16;
        x.as_bytes_mut()
            .unwrap()
            .copy_from_slice(&0xBEEFu16.to_ne_bytes());
        assert_eq!(x, 0xBEEF);
        let mut a = [0f32; 2];
        assert_eq!(a.as_bytes_mut().unwrap().len(), 8);
    }

    #[test]
    fn buffers_of_every_shape_have_their_byte_length() {
        assert_eq!(5u8.as_bytes().unwrap().len(), 1);
        assert_eq!(
            [0usize; 4].as_bytes().unwrap().len(),
            4 * size_of::<usize>()
        );
        assert_eq!(vec![0i64; 3].as_bytes().unwrap().len(), 24);
        assert_eq!([0i8; 9][..].as_bytes().unwrap().len(), 9);
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
