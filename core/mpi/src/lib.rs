//! The MPI layer of oxmpi, below the C API and above the pml.
//!
//! - [`matching`]: the matching engine — which receive gets which message,
//!   per communicator (context id), source and tag, with `ANY_SOURCE`,
//!   `ANY_TAG`, MPI's non-overtaking order, posted and unexpected queues,
//!   probes, cancel and truncation. A pure data structure the pml drives.
//! - [`modex`]: the exchange of transports' contact cards over PMI (put,
//!   fence, lazy cached get; binary cards encoded and chunked to fit PMI's
//!   value limits).
//!
//! Requests and communicators join this crate with the point-to-point
//! issue.

#![warn(missing_docs)]

pub mod modex;
