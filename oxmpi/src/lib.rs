//! The oxmpi Rust API: MPI for Rust programs, close to
//! [rsmpi](https://github.com/rsmpi/rsmpi).
//!
//! ```no_run
//! use oxmpi::traits::*;
//!
//! fn main() -> Result<(), oxmpi::Error> {
//!     let universe = oxmpi::initialize()?;
//!     let world = universe.world();
//!     let (rank, size) = (world.rank(), world.size());
//!     let next = world.process_at_rank((rank + 1) % size);
//!     let previous = world.process_at_rank((rank + size - 1) % size);
//!     // Send to the next rank and receive from the previous one at once.
//!     let (token, status) =
//!         oxmpi::point_to_point::send_receive::<i64, _, _, _>(&(rank as i64), &next, &previous)?;
//!     assert_eq!(token, previous.rank() as i64);
//!     println!("rank {rank} of {size} got {token} from {}", status.source_rank());
//!     Ok(())
//!     // Dropping `universe` finalizes MPI.
//! }
//! ```
//!
//! Run programs with `mpirun -n <ranks> <program>`, or alone as a
//! singleton (one rank).
//!
//! # Overview
//!
//! - **Environment** ([`environment`]): [`initialize`] (thread level
//!   [`Threading::Single`]) or [`initialize_with_threading`] returns the
//!   [`Universe`]; dropping it finalizes MPI (a failure is printed;
//!   [`Universe::finalize`] returns it instead). [`Universe::world`] and
//!   [`Universe::self_comm`] give the communicators; [`time`] and
//!   [`time_resolution`] read the clock.
//! - **Communicators** ([`topology`]): [`Communicator`](traits::Communicator)
//!   offers `rank()`, `size()`, `process_at_rank(r)`, `this_process()`,
//!   `any_process()` and `abort(code)`. Ranks are [`Rank`] (`i32`).
//! - **Point-to-point** ([`point_to_point`]): a
//!   [`Process`](point_to_point::Process) is a
//!   [`Destination`](traits::Destination) (`send`, `synchronous_send`,
//!   `immediate_send`, `immediate_synchronous_send`, each also
//!   `..._with_tag`) and a [`Source`](traits::Source) (`receive::<T>()`,
//!   `receive_into(&mut buf)`, `receive_vec::<T>()`,
//!   `immediate_receive_into`, `probe`, `immediate_probe`, and the
//!   matched `matched_probe` and `immediate_matched_probe`, whose
//!   [`Message`](point_to_point::Message) only its own `matched_receive…`
//!   takes, each also `..._with_tag`); an [`AnyProcess`](point_to_point::AnyProcess) is a
//!   `Source` matching every sender. Without a tag, sends use tag 0 and
//!   receives accept any tag ([`ANY_TAG`]). Receives and probes return a
//!   [`Status`](point_to_point::Status) (`source_rank()`, `tag()`,
//!   `byte_count()`, `count::<T>()`, `is_cancelled()`).
//!   [`send_receive_into`](point_to_point::send_receive_into) and
//!   [`send_receive`](point_to_point::send_receive) (and `_with_tags`)
//!   exchange messages in one call, safely for any sizes.
//! - **Requests** ([`request`]): immediate operations return a
//!   [`Request`](request::Request) inside a
//!   [`request::scope`]; `wait()`, `test()`, `cancel()` (receives),
//!   [`request::wait_all`] and [`request::wait_any`]. The scope waits for
//!   whatever is still in flight when it ends, so buffers are never
//!   released early (not even through `mem::forget`).
//! - **Data** ([`datatype`]): the element types are the primitive numbers
//!   (`u8`, `i8`, `u16`, `i16`, `u32`, `i32`, `u64`, `i64`, `usize`,
//!   `isize`, `f32`, `f64`) and structs of them with
//!   `#[derive(Equivalence)]` ([`Equivalence`](traits::Equivalence)); a
//!   [`Buffer`](traits::Buffer) / [`BufferMut`](traits::BufferMut) is a
//!   value, a slice, an array or a `Vec` of one of them. A struct with
//!   padding is packed on the wire (its padding is never read). A message
//!   holds a whole number of elements of the receiving buffer's type;
//!   otherwise the receive fails with class `Buffer`.
//! - **Attributes and hints** ([`attribute`]): typed keyvals copied on
//!   duplication as their keyval says and deleted (dropped) when the
//!   communicator is freed; the predefined attributes as methods
//!   (`tag_ub()`, `universe_size()`, …); [`Info`](attribute::Info) hints
//!   with `set_info`, `info` and `duplicate_with_info`.
//! - **Errors**: every fallible call returns `Result<_, `[`Error`]`>`; an
//!   error has a class ([`ErrorClass`]) and a message that says what went
//!   wrong and what to do. Nothing here panics on bad input. There are no
//!   error handlers: the `Result` is the program's to handle
//!   (`docs/rust-api.md` says why).
//!
//! # Differences from rsmpi
//!
//! - Errors are `Result`s instead of aborts; `initialize` returns
//!   `Result<Universe, Error>` instead of an `Option`.
//! - [`Request::test`](request::Request::test) takes `&mut self` and
//!   returns `Result<Option<Status>, Error>`; a dropped request is not an
//!   error — its scope waits for it.
//! - [`request::wait_any`] takes `&mut Vec<Request>` and removes the
//!   request that completed.
//! - `receive::<T>()` accepts exactly one `T` (a shorter message is an
//!   error of class `Buffer`, a longer one of class `Truncate`).
//! - There are no error handlers (see Errors above), and a predefined
//!   reduction of a derived struct is refused (user operations take
//!   structs without padding).
//!
//! # Threads
//!
//! With [`Threading::Single`] and [`Threading::Funneled`], only the thread
//! that initialized may call MPI; with [`Threading::Serialized`], any
//! thread, one at a time; with [`Threading::Multiple`], any thread at any
//! time. A call that breaks these rules fails with class `ThreadLevel`.

pub mod attribute;
pub mod collective;
pub mod datatype;
pub mod environment;
mod error;
pub mod group;
pub mod point_to_point;
pub mod request;
pub mod topology;

pub use datatype::Equivalence;
pub use environment::{
    initialize, initialize_with_threading, time, time_resolution, Threading, Universe,
};
pub use error::Error;
pub use oxmpi_mpi_core::ErrorClass;
pub use point_to_point::{Tag, ANY_TAG, TAG_UB};
pub use topology::Rank;

/// The traits to import for the whole API: `use oxmpi::traits::*;`.
pub mod traits {
    pub use crate::collective::{
        CommunicatorCollectives, ImmediateCollectives, ImmediateInPlaceCollectives,
        ImmediateInPlaceRoot, ImmediateRoot, ImmediateVarcountCollectives, ImmediateVarcountRoot,
        InPlaceCollectives, InPlaceRoot, Operation, Root, VarcountCollectives, VarcountRoot,
    };
    pub use crate::datatype::{Buffer, BufferMut, Equivalence};
    pub use crate::point_to_point::{Destination, Source};
    pub use crate::request::Scope;
    pub use crate::topology::Communicator;
}
