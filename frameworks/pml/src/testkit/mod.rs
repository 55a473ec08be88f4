//! The pml test kit (feature `testkit`): what every pml component's tests
//! use to start the component through its exported table, in one process.
//!
//! - [`loopback`]: the kit's btl, an in-process loopback that reaches only
//!   its own rank, exported as a table ([`loopback::LOOPBACK`]) with the
//!   btl adapter; its [`Behaviour`] sets how it answers sends (`Done`,
//!   `Queued`, `WouldBlock`), where it puts payloads, how much it delivers
//!   per progress call and how many modules it has, which of get and put
//!   it offers and how they answer, and it fails its peer on demand ([`loopback::fail_peer`]). It checks the pml's side of the
//!   btl contract.
//! - [`KitCore`]: the MPI layer's side — the modex in memory, the progress
//!   engine in the MPI layer's order (btl progress functions, then the
//!   pml's `progress`), checks of the pml's use of them.
//! - [`Session`]: one start of a pml component through its table and a
//!   [`PmlHandle`](crate::handle::PmlHandle), as rank 0 of a one-rank job
//!   (a pml's instance is process-global), with buffers the session owns
//!   until after `finalize`, progress rounds and waits with a deadline.
//! - [`conformance`]: the suite every pml component runs.
//! - [`services`]: the plugin API's fake core services (parameter values,
//!   recorded log lines, the [`lock`](services::lock) that serializes
//!   tests sharing parameters or a component's global instance).
//!
//! A component's own test with a session:
//!
//! ```ignore
//! use oxmpi_framework_pml::module::SendMode;
//! use oxmpi_framework_pml::testkit::{loopback, services, Behaviour, Session};
//!
//! #[test]
//! fn a_message_to_itself() {
//!     let _lock = services::lock();
//!     loopback::set_behaviour(Behaviour { would_block_every: 2, ..Behaviour::DEFAULT });
//!     let mut s = Session::start(&crate::MODULE, "mine").unwrap();
//!     let sbuf = s.buffer(b"hello".to_vec());
//!     let rbuf = s.buffer(vec![0; 5]);
//!     let r = s.irecv(rbuf, 5, 0, 1, 0).unwrap();
//!     let q = s.isend(sbuf, 0, 1, 0, SendMode::Standard).unwrap();
//!     assert_eq!(s.wait(r, "the receive").count, 5);
//!     s.wait(q, "the send");
//!     assert_eq!(s.bytes(rbuf), b"hello");
//!     s.assert_clean("hello");
//!     s.finalize();
//! }
//! ```

pub mod conformance;
pub mod core;
pub mod loopback;
pub mod pieces;
pub mod session;

pub use self::core::KitCore;
pub use loopback::{Answer, Behaviour, Placement, RdmaAnswer, RdmaOffer};
pub use oxmpi_plugin_api::testkit as services;
pub use pieces::Strided;
pub use session::{Buf, KitPml, Session, DEADLINE, IDENTITY};

#[cfg(test)]
mod tests;
