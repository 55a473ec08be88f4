//! Why a datatype call was refused.

use crate::Primitive;

/// The MPI error class an error maps to (the MPI layer turns it into
/// its own class).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// `MPI_ERR_ARG`: an argument out of its range.
    Arg,
    /// `MPI_ERR_COUNT`: a count out of its range.
    Count,
    /// `MPI_ERR_TYPE`: a type the call cannot take.
    Type,
    /// `MPI_ERR_TRUNCATE`: a buffer too small for the data.
    Truncate,
    /// `MPI_ERR_CONVERSION`: a value external32 cannot hold.
    Conversion,
}

/// Why a constructor, a pack or an unpack was refused. A refused call
/// makes no type and writes nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DatatypeError {
    /// Two arrays of a constructor differ in length.
    #[error(
        "{name}: {first} has {first_len} entries but {second} has {second_len}; \
         give one entry per block in each"
    )]
    LengthMismatch {
        /// The constructor, such as `"MPI_Type_indexed"`.
        name: &'static str,
        /// The first array's role.
        first: &'static str,
        /// Its length.
        first_len: usize,
        /// The second array's role.
        second: &'static str,
        /// Its length.
        second_len: usize,
    },
    /// A size, extent or displacement passes what an address holds.
    #[error(
        "{name}: the type's {what} passes the largest address offset ({}); \
         use fewer or smaller blocks",
        isize::MAX
    )]
    Overflow {
        /// The constructor or call.
        name: &'static str,
        /// What overflowed: `"size"`, `"extent"`, `"displacement"`.
        what: &'static str,
    },
    /// An argument out of its range, with the reason.
    #[error("{name}: {why}")]
    Argument {
        /// The constructor or call.
        name: &'static str,
        /// What was wrong and what is expected.
        why: String,
    },
    /// A pack or unpack buffer too small for the data.
    #[error(
        "{name}: the data take {needed} bytes from position {position} but the buffer has \
         {available}; give a buffer of at least {} bytes",
        position + needed
    )]
    Truncate {
        /// The call, such as `"MPI_Pack"`.
        name: &'static str,
        /// Bytes the data take.
        needed: usize,
        /// Where they start in the buffer.
        position: usize,
        /// The buffer's bytes.
        available: usize,
    },
    /// Memory the type reaches lies outside the buffer given (safe
    /// packing checks this).
    #[error(
        "{name}: {count} element(s) of the type reach bytes {lo}..{hi} from the buffer's \
         origin, outside the buffer's {len} bytes"
    )]
    OutOfBuffer {
        /// The call.
        name: &'static str,
        /// The elements asked for.
        count: usize,
        /// First byte reached, from the origin.
        lo: isize,
        /// One past the last byte reached, from the origin.
        hi: isize,
        /// The buffer's length.
        len: usize,
    },
    /// A data representation other than `"external32"` (or `"native"`
    /// where the call takes it).
    #[error(
        "{name}: unknown data representation '{datarep}'; the one MPI defines is 'external32'"
    )]
    Datarep {
        /// The call.
        name: &'static str,
        /// The representation asked for.
        datarep: String,
    },
    /// external32 of a type it cannot represent from this machine's
    /// memory.
    #[error(
        "{name}: {prim} has no external32 form on this machine (its external32 form is IEEE \
         quadruple precision, which this machine's long double is not); pack it natively"
    )]
    NoExternal32 {
        /// The call.
        name: &'static str,
        /// The type.
        prim: Primitive,
    },
    /// A value that does not fit its external32 size.
    #[error(
        "{name}: a {prim} value ({value}) does not fit in its {} external32 bytes",
        .prim.external32_size()
    )]
    Conversion {
        /// The call.
        name: &'static str,
        /// The type.
        prim: Primitive,
        /// The value.
        value: i128,
    },
}

impl DatatypeError {
    /// The MPI error class of the error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            DatatypeError::LengthMismatch { .. } | DatatypeError::Argument { .. } => ErrorKind::Arg,
            DatatypeError::Overflow { .. } => ErrorKind::Count,
            DatatypeError::Truncate { .. } => ErrorKind::Truncate,
            DatatypeError::OutOfBuffer { .. } | DatatypeError::Datarep { .. } => ErrorKind::Arg,
            DatatypeError::NoExternal32 { .. } => ErrorKind::Type,
            DatatypeError::Conversion { .. } => ErrorKind::Conversion,
        }
    }
}
