//! The predefined element types a reduction works on.

use std::fmt;

/// A predefined MPI datatype that a predefined reduction operation takes.
///
/// Each variant fixes the element's size and byte layout (native byte
/// order). The MPI layer maps C and Fortran names onto these: on the LP64
/// platforms oxmpi targets, `MPI_INT` is [`Int32`](ElementType::Int32),
/// `MPI_LONG` and `MPI_LONG_LONG` are [`Int64`](ElementType::Int64),
/// `MPI_SIGNED_CHAR` is [`Int8`](ElementType::Int8), `MPI_UNSIGNED_CHAR` is
/// [`UInt8`](ElementType::UInt8), and so on.
///
/// The pair types (for [`Op::MinLoc`](crate::Op::MinLoc) and
/// [`Op::MaxLoc`](crate::Op::MaxLoc)) have the layout of the C structs
/// `struct { value; int index; }` on LP64: the value at offset 0, the
/// `int` index after it at its natural alignment, and trailing padding up
/// to the struct's alignment. Padding bytes are never read or written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElementType {
    /// `int8_t` (`MPI_INT8_T`), 1 byte.
    Int8,
    /// `int16_t` (`MPI_INT16_T`), 2 bytes.
    Int16,
    /// `int32_t` (`MPI_INT32_T`), 4 bytes.
    Int32,
    /// `int64_t` (`MPI_INT64_T`), 8 bytes.
    Int64,
    /// `uint8_t` (`MPI_UINT8_T`), 1 byte.
    UInt8,
    /// `uint16_t` (`MPI_UINT16_T`), 2 bytes.
    UInt16,
    /// `uint32_t` (`MPI_UINT32_T`), 4 bytes.
    UInt32,
    /// `uint64_t` (`MPI_UINT64_T`), 8 bytes.
    UInt64,
    /// `float` (`MPI_FLOAT`), IEEE 754 binary32, 4 bytes.
    Float32,
    /// `double` (`MPI_DOUBLE`), IEEE 754 binary64, 8 bytes.
    Float64,
    /// C `_Bool` (`MPI_C_BOOL`), 1 byte: any nonzero byte is true.
    Bool,
    /// `MPI_BYTE`, 1 uninterpreted byte (bitwise operations only).
    Byte,
    /// `MPI_FLOAT_INT`: `struct { float value; int index; }`, 8 bytes
    /// (value at 0, index at 4).
    FloatInt,
    /// `MPI_DOUBLE_INT`: `struct { double value; int index; }`, 16 bytes
    /// (value at 0, index at 8, 4 bytes of padding at 12).
    DoubleInt,
    /// `MPI_LONG_INT`: `struct { long value; int index; }` with a 64-bit
    /// `long`, 16 bytes (value at 0, index at 8, 4 bytes of padding at 12).
    LongInt,
    /// `MPI_2INT`: `struct { int value; int index; }`, 8 bytes (value at 0,
    /// index at 4).
    TwoInt,
    /// `MPI_SHORT_INT`: `struct { short value; int index; }`, 8 bytes
    /// (value at 0, 2 bytes of padding at 2, index at 4).
    ShortInt,
}

impl ElementType {
    /// The type's code: its index in [`ElementType::ALL`], which lists
    /// the types in the order they are declared (the coll interface
    /// carries element types as these codes).
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The type with code `code`, if any.
    pub fn from_code(code: u8) -> Option<ElementType> {
        ElementType::ALL.get(usize::from(code)).copied()
    }

    /// Every type, in code order.
    pub const ALL: &'static [ElementType] = &[
        ElementType::Int8,
        ElementType::Int16,
        ElementType::Int32,
        ElementType::Int64,
        ElementType::UInt8,
        ElementType::UInt16,
        ElementType::UInt32,
        ElementType::UInt64,
        ElementType::Float32,
        ElementType::Float64,
        ElementType::Bool,
        ElementType::Byte,
        ElementType::FloatInt,
        ElementType::DoubleInt,
        ElementType::LongInt,
        ElementType::TwoInt,
        ElementType::ShortInt,
    ];

    /// Bytes per element, padding included (the C `sizeof`, and the
    /// stride between consecutive elements of a buffer): a power of two.
    pub const fn size(self) -> usize {
        match self {
            ElementType::Int8 | ElementType::UInt8 | ElementType::Bool | ElementType::Byte => 1,
            ElementType::Int16 | ElementType::UInt16 => 2,
            ElementType::Int32 | ElementType::UInt32 | ElementType::Float32 => 4,
            ElementType::Int64 | ElementType::UInt64 | ElementType::Float64 => 8,
            ElementType::FloatInt | ElementType::TwoInt | ElementType::ShortInt => 8,
            ElementType::DoubleInt | ElementType::LongInt => 16,
        }
    }

    /// The MPI name of the type, e.g. `"MPI_INT32_T"`, `"MPI_DOUBLE"`,
    /// `"MPI_2INT"`.
    pub const fn name(self) -> &'static str {
        match self {
            ElementType::Int8 => "MPI_INT8_T",
            ElementType::Int16 => "MPI_INT16_T",
            ElementType::Int32 => "MPI_INT32_T",
            ElementType::Int64 => "MPI_INT64_T",
            ElementType::UInt8 => "MPI_UINT8_T",
            ElementType::UInt16 => "MPI_UINT16_T",
            ElementType::UInt32 => "MPI_UINT32_T",
            ElementType::UInt64 => "MPI_UINT64_T",
            ElementType::Float32 => "MPI_FLOAT",
            ElementType::Float64 => "MPI_DOUBLE",
            ElementType::Bool => "MPI_C_BOOL",
            ElementType::Byte => "MPI_BYTE",
            ElementType::FloatInt => "MPI_FLOAT_INT",
            ElementType::DoubleInt => "MPI_DOUBLE_INT",
            ElementType::LongInt => "MPI_LONG_INT",
            ElementType::TwoInt => "MPI_2INT",
            ElementType::ShortInt => "MPI_SHORT_INT",
        }
    }

    /// The MPI category of the type (MPI 3.1 §5.9.2), which decides the
    /// operations it takes.
    pub(crate) const fn class(self) -> Class {
        match self {
            ElementType::Int8
            | ElementType::Int16
            | ElementType::Int32
            | ElementType::Int64
            | ElementType::UInt8
            | ElementType::UInt16
            | ElementType::UInt32
            | ElementType::UInt64 => Class::Integer,
            ElementType::Float32 | ElementType::Float64 => Class::Float,
            ElementType::Bool => Class::Logical,
            ElementType::Byte => Class::Byte,
            ElementType::FloatInt
            | ElementType::DoubleInt
            | ElementType::LongInt
            | ElementType::TwoInt
            | ElementType::ShortInt => Class::Pair,
        }
    }
}

impl fmt::Display for ElementType {
    /// Writes the MPI name ([`ElementType::name`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The type categories of MPI 3.1 §5.9.2 that oxmpi's types fall into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    /// C integer.
    Integer,
    /// Floating point.
    Float,
    /// Logical (`MPI_C_BOOL`).
    Logical,
    /// Byte.
    Byte,
    /// The value-index pairs of MINLOC and MAXLOC.
    Pair,
}
