//! Communicators and ranks.

use crate::point_to_point::{AnyProcess, Process};
use oxmpi_mpi_core::{Comm, Runtime};

/// A process's rank in a communicator (`0..size`).
pub type Rank = i32;

mod private {
    pub trait Sealed {}
}

/// What every communicator offers (like rsmpi's `Communicator`). Sealed:
/// the communicators are [`SimpleCommunicator`]s from
/// [`Universe::world`](crate::Universe::world) and
/// [`Universe::self_comm`](crate::Universe::self_comm).
pub trait Communicator: private::Sealed {
    /// This process's rank in the communicator.
    fn rank(&self) -> Rank;

    /// The number of processes in the communicator.
    fn size(&self) -> Rank;

    /// The process of rank `r`, to send to or receive from. Never fails:
    /// a rank outside `0..size` is reported by the operation that uses it
    /// (an error of class `Rank`).
    fn process_at_rank(&self, r: Rank) -> Process<'_>;

    /// This process (`process_at_rank(rank())`).
    fn this_process(&self) -> Process<'_> {
        self.process_at_rank(self.rank())
    }

    /// Any process of the communicator, to receive from or probe whatever
    /// arrives first (`MPI_ANY_SOURCE`).
    fn any_process(&self) -> AnyProcess<'_>;

    /// Ends the whole job with exit code `code` (`MPI_Abort`): prints a
    /// line to standard error, and the launcher stops every rank.
    fn abort(&self, code: i32) -> !;
}

/// A communicator: `MPI_COMM_WORLD` or `MPI_COMM_SELF`. Cheap to clone; it
/// stays usable after the [`Universe`](crate::Universe) is dropped, but
/// every operation then fails with class `Finalized`.
#[derive(Clone)]
pub struct SimpleCommunicator {
    pub(crate) runtime: &'static Runtime,
    pub(crate) comm: Comm,
}

impl SimpleCommunicator {
    pub(crate) fn new(runtime: &'static Runtime, comm: Comm) -> SimpleCommunicator {
        SimpleCommunicator { runtime, comm }
    }

    pub(crate) fn name(&self) -> &'static str {
        match self.comm {
            Comm::World => "MPI_COMM_WORLD",
            Comm::SelfComm => "MPI_COMM_SELF",
        }
    }
}

impl std::fmt::Debug for SimpleCommunicator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimpleCommunicator")
            .field("name", &self.name())
            .field("rank", &self.rank())
            .field("size", &self.size())
            .finish()
    }
}

impl private::Sealed for SimpleCommunicator {}

impl Communicator for SimpleCommunicator {
    fn rank(&self) -> Rank {
        self.runtime.comm_rank(self.comm)
    }

    fn size(&self) -> Rank {
        self.runtime.comm_size(self.comm)
    }

    fn process_at_rank(&self, r: Rank) -> Process<'_> {
        Process::new(self, r)
    }

    fn any_process(&self) -> AnyProcess<'_> {
        AnyProcess::new(self)
    }

    fn abort(&self, code: i32) -> ! {
        self.runtime.abort(
            code,
            &format!("the program ended the job (abort on {})", self.name()),
        )
    }
}
