//! The predefined types every derived type is built from.

use std::fmt;

/// A predefined MPI datatype: the leaves of every type map.
///
/// Sizes and alignments are those of the C types on the LP64 platforms
/// oxmpi runs on (x86-64 and AArch64 Linux): `int` 4 bytes, `long` 8,
/// `long double` 16 (its storage; x86-64 uses 10 of them), `wchar_t` 4.
/// `MPI_PACKED` and `MPI_BYTE` are uninterpreted bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Primitive {
    /// `char` (`MPI_CHAR`).
    Char,
    /// `signed char` (`MPI_SIGNED_CHAR`).
    SignedChar,
    /// `unsigned char` (`MPI_UNSIGNED_CHAR`).
    UnsignedChar,
    /// `MPI_BYTE`: one uninterpreted byte.
    Byte,
    /// `MPI_PACKED`: one byte of packed data.
    Packed,
    /// `short` (`MPI_SHORT`).
    Short,
    /// `unsigned short` (`MPI_UNSIGNED_SHORT`).
    UnsignedShort,
    /// `int` (`MPI_INT`).
    Int,
    /// `unsigned` (`MPI_UNSIGNED`).
    Unsigned,
    /// `long` (`MPI_LONG`).
    Long,
    /// `unsigned long` (`MPI_UNSIGNED_LONG`).
    UnsignedLong,
    /// `long long` (`MPI_LONG_LONG_INT`, `MPI_LONG_LONG`).
    LongLong,
    /// `unsigned long long` (`MPI_UNSIGNED_LONG_LONG`).
    UnsignedLongLong,
    /// `float` (`MPI_FLOAT`).
    Float,
    /// `double` (`MPI_DOUBLE`).
    Double,
    /// `long double` (`MPI_LONG_DOUBLE`).
    LongDouble,
    /// `wchar_t` (`MPI_WCHAR`).
    WChar,
    /// `_Bool` (`MPI_C_BOOL`).
    CBool,
    /// `int8_t` (`MPI_INT8_T`).
    Int8,
    /// `int16_t` (`MPI_INT16_T`).
    Int16,
    /// `int32_t` (`MPI_INT32_T`).
    Int32,
    /// `int64_t` (`MPI_INT64_T`).
    Int64,
    /// `uint8_t` (`MPI_UINT8_T`).
    UInt8,
    /// `uint16_t` (`MPI_UINT16_T`).
    UInt16,
    /// `uint32_t` (`MPI_UINT32_T`).
    UInt32,
    /// `uint64_t` (`MPI_UINT64_T`).
    UInt64,
    /// `MPI_Aint` (`MPI_AINT`), 8 bytes.
    Aint,
    /// `MPI_Offset` (`MPI_OFFSET`), 8 bytes.
    Offset,
    /// `MPI_Count` (`MPI_COUNT`), 8 bytes.
    Count,
    /// `float _Complex` (`MPI_C_FLOAT_COMPLEX`, `MPI_C_COMPLEX`).
    FloatComplex,
    /// `double _Complex` (`MPI_C_DOUBLE_COMPLEX`).
    DoubleComplex,
    /// `long double _Complex` (`MPI_C_LONG_DOUBLE_COMPLEX`).
    LongDoubleComplex,
}

impl Primitive {
    /// Every primitive, in declaration order.
    pub const ALL: &'static [Primitive] = &[
        Primitive::Char,
        Primitive::SignedChar,
        Primitive::UnsignedChar,
        Primitive::Byte,
        Primitive::Packed,
        Primitive::Short,
        Primitive::UnsignedShort,
        Primitive::Int,
        Primitive::Unsigned,
        Primitive::Long,
        Primitive::UnsignedLong,
        Primitive::LongLong,
        Primitive::UnsignedLongLong,
        Primitive::Float,
        Primitive::Double,
        Primitive::LongDouble,
        Primitive::WChar,
        Primitive::CBool,
        Primitive::Int8,
        Primitive::Int16,
        Primitive::Int32,
        Primitive::Int64,
        Primitive::UInt8,
        Primitive::UInt16,
        Primitive::UInt32,
        Primitive::UInt64,
        Primitive::Aint,
        Primitive::Offset,
        Primitive::Count,
        Primitive::FloatComplex,
        Primitive::DoubleComplex,
        Primitive::LongDoubleComplex,
    ];

    /// Bytes of one value in memory (the C `sizeof`).
    pub const fn size(self) -> usize {
        use Primitive::*;
        match self {
            Char | SignedChar | UnsignedChar | Byte | Packed | CBool | Int8 | UInt8 => 1,
            Short | UnsignedShort | Int16 | UInt16 => 2,
            Int | Unsigned | Float | WChar | Int32 | UInt32 => 4,
            Long | UnsignedLong | LongLong | UnsignedLongLong | Double | Int64 | UInt64 | Aint
            | Offset | Count | FloatComplex => 8,
            LongDouble | DoubleComplex => 16,
            LongDoubleComplex => 32,
        }
    }

    /// The C alignment of the type: a power of two.
    pub const fn alignment(self) -> usize {
        match self {
            Primitive::FloatComplex => 4,
            Primitive::DoubleComplex => 8,
            Primitive::LongDoubleComplex => 16,
            p => p.size(),
        }
    }

    /// The bytes a value is byte-swapped in for external32 (big-endian):
    /// the size, but for a complex number each half on its own, and 1
    /// for the byte types.
    pub const fn swap_unit(self) -> usize {
        match self {
            Primitive::FloatComplex => 4,
            Primitive::DoubleComplex => 8,
            Primitive::LongDoubleComplex => 16,
            p => p.size(),
        }
    }

    /// Bytes of one value in external32, the portable representation of
    /// the MPI standard (big-endian IEEE formats, two's complement):
    /// `long` and `unsigned long` take 4 bytes there, `wchar_t` 2, and
    /// every other type its size in memory.
    pub const fn external32_size(self) -> usize {
        match self {
            Primitive::Long | Primitive::UnsignedLong => 4,
            Primitive::WChar => 2,
            p => p.size(),
        }
    }

    /// Whether the type is a signed integer (its value widens with its
    /// sign when external32 holds it in fewer bytes, and narrows only when
    /// it fits).
    pub const fn is_signed_integer(self) -> bool {
        use Primitive::*;
        matches!(
            self,
            Char | SignedChar
                | Short
                | Int
                | Long
                | LongLong
                | Int8
                | Int16
                | Int32
                | Int64
                | Aint
                | Offset
                | Count
        )
    }

    /// Whether external32 can represent the type from this machine's
    /// memory: not `long double` (and its complex), whose external32 form
    /// is IEEE quadruple precision, not x86-64's 80-bit extended format.
    pub const fn has_external32(self) -> bool {
        !matches!(self, Primitive::LongDouble | Primitive::LongDoubleComplex)
    }

    /// The MPI name, such as `"MPI_INT"`.
    pub const fn name(self) -> &'static str {
        use Primitive::*;
        match self {
            Char => "MPI_CHAR",
            SignedChar => "MPI_SIGNED_CHAR",
            UnsignedChar => "MPI_UNSIGNED_CHAR",
            Byte => "MPI_BYTE",
            Packed => "MPI_PACKED",
            Short => "MPI_SHORT",
            UnsignedShort => "MPI_UNSIGNED_SHORT",
            Int => "MPI_INT",
            Unsigned => "MPI_UNSIGNED",
            Long => "MPI_LONG",
            UnsignedLong => "MPI_UNSIGNED_LONG",
            LongLong => "MPI_LONG_LONG",
            UnsignedLongLong => "MPI_UNSIGNED_LONG_LONG",
            Float => "MPI_FLOAT",
            Double => "MPI_DOUBLE",
            LongDouble => "MPI_LONG_DOUBLE",
            WChar => "MPI_WCHAR",
            CBool => "MPI_C_BOOL",
            Int8 => "MPI_INT8_T",
            Int16 => "MPI_INT16_T",
            Int32 => "MPI_INT32_T",
            Int64 => "MPI_INT64_T",
            UInt8 => "MPI_UINT8_T",
            UInt16 => "MPI_UINT16_T",
            UInt32 => "MPI_UINT32_T",
            UInt64 => "MPI_UINT64_T",
            Aint => "MPI_AINT",
            Offset => "MPI_OFFSET",
            Count => "MPI_COUNT",
            FloatComplex => "MPI_C_FLOAT_COMPLEX",
            DoubleComplex => "MPI_C_DOUBLE_COMPLEX",
            LongDoubleComplex => "MPI_C_LONG_DOUBLE_COMPLEX",
        }
    }
}

impl fmt::Display for Primitive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
