//! MPI datatypes for oxmpi: the predefined types ([`Primitive`], the
//! [`Pair`] types of `MPI_MINLOC`/`MPI_MAXLOC`), the derived-type
//! constructors (contiguous, vector, hvector, indexed, hindexed,
//! indexed block, hindexed block, struct, subarray, darray, resized,
//! dup), their
//! bounds, sizes and extents, their envelopes and contents, and packing,
//! natively and in external32. Pure code, shared by the MPI layer and
//! any component that moves typed data.
//!
//! A type is described as runs of primitives with repetitions kept as
//! loops, so a vector of a million blocks costs one node; packing walks
//! that description and copies each contiguous run once, and a window of
//! the packed stream (`skip`, length) can be packed or unpacked on its
//! own, for transports that move a message in pieces.

mod darray;
mod datatype;
mod desc;
mod error;
mod external32;
mod pack;
mod primitive;
mod subarray;

pub use darray::Distribution;
pub use datatype::{Combiner, Contents, Datatype, Order, Pair};
pub use error::{DatatypeError, ErrorKind};
pub use external32::EXTERNAL32;
pub use primitive::Primitive;
