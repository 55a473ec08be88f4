//! The MPI layer of oxmpi, below the Rust API (`oxmpi`) and above the pml.
//!
//! - [`runtime`](mod@runtime): initialization (MCA parameters, PMI wire-up, btl and pml
//!   selection, the modex), the communicators `WORLD` and `SELF`, requests,
//!   the progress engine, thread levels, finalize and abort.
//! - [`modex`]: the exchange of transports' contact cards over PMI (put,
//!   fence, lazy cached get; binary cards encoded and chunked to fit PMI's
//!   value limits).
//!
//! Message matching is the pml's business (crate `oxmpi-matching`).

#![warn(missing_docs)]

pub mod modex;
pub mod runtime;

pub use runtime::{
    init, runtime, wtick, wtime, Comm, CommRelation, Error, ErrorClass, Message, Pieces, RequestId,
    Runtime, SendMode, Status, Sweep, ThreadLevel, ANY_SOURCE, ANY_TAG, TAG_UB,
};

/// The collective call description the Rust API fills in
/// ([`Runtime::collective`]).
pub mod coll {
    pub use abi_stable::std_types::RSlice;
    pub use oxmpi_framework_coll::module::{CollCall, CollKind, ElementCode, OpCode, UserOp};
}
