//! The btl test kit (feature `testkit`): what every btl component's tests
//! use instead of their own fakes.
//!
//! - [`Recorder`]: a pml stand-in whose [`BtlReceiver`](crate::module::BtlReceiver)
//!   records every callback (headers, fragments with their payload bytes
//!   and whether they landed at the destination, finished sends, failed
//!   peers) and checks the btl contract, recording each breach as a
//!   sentence ([`Recorder::violations`]). Tests set where payloads go
//!   ([`Placement`], per fragment or by default) and end with
//!   `assert!(recorder.violations().is_empty())` or
//!   [`Recorder::assert_clean`].
//! - [`Cluster`]: ranks of one component in one test thread — rank 0
//!   through its exported table ([`BtlHandle`](crate::handle::BtlHandle),
//!   so the generated `extern "C"` layer runs) or every rank as a value of
//!   its [`Btl`](crate::adapter::Btl) type — with one recorder each, sends
//!   of known ([`stamp`]ed) payloads, gets and puts between buffers of the
//!   test ([`Cluster::get`], [`Cluster::put`]), and progress until
//!   everything arrived and finished ([`Cluster::drain`]).
//! - [`conformance`]: the suite every btl component runs.
//! - [`services`]: the plugin API's fake core services (parameter values,
//!   recorded log lines, the [`lock`](services::lock) that serializes tests
//!   sharing parameters or a component's global instance).
//!
//! A component's own test, through its table:
//!
//! ```ignore
//! use oxmpi_framework_btl::testkit::{services, Cluster, Placement};
//!
//! #[test]
//! fn a_fragment_arrives() {
//!     let _lock = services::lock();
//!     let data = vec![7u8; 100];
//!     let mut c = Cluster::<MyBtl>::with_table(&crate::MODULE, "mine", 1).unwrap();
//!     let ep = c.connect(0, 0, 0).unwrap();
//!     c.recorder(0).set_default_placement(Placement::Destination);
//!     c.send(0, 0, ep, b"hdr", &data, 1);
//!     c.drain();
//!     assert_eq!(c.recorder(0).fragments()[0].payload, data);
//!     c.assert_clean("one fragment");
//! }
//! ```

pub mod conformance;
pub mod drive;
pub mod recorder;
pub mod stamp;

pub use drive::{identity, Cluster, DEADLINE};

use crate::module::RdmaOutcome;

/// `get` for a btl table written by hand (a test's fake component) whose
/// modules offer no get: refused, as the generated table refuses it.
///
/// # Safety
///
/// None needed: it reads nothing.
pub unsafe extern "C" fn refused_get(
    _module: u32,
    _endpoint: u64,
    _local: *mut u8,
    _remote: u64,
    _len: usize,
    _cookie: u64,
) -> RdmaOutcome {
    RdmaOutcome::Failed
}

/// `put` for a hand-written btl table whose modules offer no put (see
/// [`refused_get`]).
///
/// # Safety
///
/// None needed: it reads nothing.
pub unsafe extern "C" fn refused_put(
    _module: u32,
    _endpoint: u64,
    _local: *const u8,
    _remote: u64,
    _len: usize,
    _cookie: u64,
) -> RdmaOutcome {
    RdmaOutcome::Failed
}
pub use oxmpi_plugin_api::testkit as services;
pub use recorder::{Callback, Counts, Event, Fragment, Placement, Recorder};
pub use stamp::{pattern, Stamp, STAMP_LEN};

#[cfg(test)]
pub(crate) mod echo;
#[cfg(test)]
mod tests;
