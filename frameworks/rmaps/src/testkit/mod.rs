//! The rmaps test kit (feature `testkit`): what every mapper component's
//! tests use.
//!
//! - [`conformance`]: the suite every mapper component runs with its
//!   exported `MODULE` (through [`RmapsHandle`](crate::handle::RmapsHandle),
//!   so the generated `extern "C"` layer runs) and a [`Subject`] naming the
//!   policies it serves;
//! - [`cases`]: the standard allocations the suite maps over and the
//!   answers it predicts, for a component's own tests.
//!
//! ```ignore
//! use oxmpi_framework_rmaps::testkit::conformance::{self, Capacity, Subject};
//!
//! #[test]
//! fn the_rmaps_conformance_suite_passes() {
//!     conformance::run(&Subject::new("seq", crate::MODULE).serves("seq", Capacity::HostLines));
//! }
//! ```

pub mod cases;
mod check;
pub mod conformance;

pub use cases::Capacity;
pub use conformance::{run, Subject};

#[cfg(test)]
mod tests;
