//! Initialization, finalization, thread levels and the clock.

use crate::error::Error;
use crate::topology::SimpleCommunicator;
use oxmpi_mpi_core::{Comm, Runtime, ThreadLevel};

/// Thread support levels (`MPI_THREAD_*`), in increasing order.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Threading {
    /// One thread (`MPI_THREAD_SINGLE`).
    Single,
    /// Several threads; only the one that initialized makes MPI calls
    /// (`MPI_THREAD_FUNNELED`).
    Funneled,
    /// Several threads make MPI calls, never two at once
    /// (`MPI_THREAD_SERIALIZED`).
    Serialized,
    /// Any thread, any time (`MPI_THREAD_MULTIPLE`).
    Multiple,
}

impl From<Threading> for ThreadLevel {
    fn from(t: Threading) -> ThreadLevel {
        match t {
            Threading::Single => ThreadLevel::Single,
            Threading::Funneled => ThreadLevel::Funneled,
            Threading::Serialized => ThreadLevel::Serialized,
            Threading::Multiple => ThreadLevel::Multiple,
        }
    }
}

impl From<ThreadLevel> for Threading {
    fn from(t: ThreadLevel) -> Threading {
        match t {
            ThreadLevel::Single => Threading::Single,
            ThreadLevel::Funneled => Threading::Funneled,
            ThreadLevel::Serialized => Threading::Serialized,
            ThreadLevel::Multiple => Threading::Multiple,
        }
    }
}

/// The MPI environment of this process, from [`initialize`] until it is
/// dropped (or [`finalize`](Universe::finalize)d).
///
/// Dropping it finalizes MPI: outstanding detached sends complete, every
/// rank synchronizes, the transports shut down. A failure there is printed
/// to standard error (drop cannot return it); call
/// [`finalize`](Universe::finalize) to get it as a `Result`. After
/// finalization every MPI call returns an error of class `Finalized`.
pub struct Universe {
    runtime: &'static Runtime,
    finalized: bool,
}

impl std::fmt::Debug for Universe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Universe")
            .field("rank", &self.runtime.rank())
            .field("size", &self.runtime.size())
            .field("threading", &self.threading())
            .field("finalized", &self.finalized)
            .finish()
    }
}

/// Initializes MPI with thread level [`Threading::Single`] and returns the
/// [`Universe`].
///
/// # Errors
/// Class `Init`: MPI was already initialized (or finalized) in this
/// process, or wire-up failed (bad MCA parameters, the launcher cannot be
/// reached, no usable pml, ...); the message says what and what to do.
pub fn initialize() -> Result<Universe, Error> {
    initialize_with_threading(Threading::Single).map(|(u, _)| u)
}

/// Initializes MPI with thread level `threading` and returns the
/// [`Universe`] with the level provided (every level is supported, so it is
/// the one asked for).
///
/// # Errors
/// As [`initialize`].
pub fn initialize_with_threading(threading: Threading) -> Result<(Universe, Threading), Error> {
    let runtime = oxmpi_mpi_core::init(threading.into())?;
    let provided = runtime.thread_level().into();
    Ok((
        Universe {
            runtime,
            finalized: false,
        },
        provided,
    ))
}

impl Universe {
    /// The communicator of every process of the job (`MPI_COMM_WORLD`).
    pub fn world(&self) -> SimpleCommunicator {
        SimpleCommunicator::new(self.runtime, Comm::World)
    }

    /// The communicator of this process alone (`MPI_COMM_SELF`).
    pub fn self_comm(&self) -> SimpleCommunicator {
        SimpleCommunicator::new(self.runtime, Comm::SelfComm)
    }

    /// The thread level in effect.
    pub fn threading(&self) -> Threading {
        self.runtime.thread_level().into()
    }

    /// Finalizes MPI now and reports how it went (dropping the universe
    /// does the same, printing a failure instead; except while the thread
    /// is panicking: finalize waits for every rank, which would hang a job
    /// whose other ranks wait for this one, so the universe is then
    /// dropped without it and the process ends as the panic ends it,
    /// which makes mpirun stop the job).
    ///
    /// # Errors
    /// A failure of the final synchronization (a peer died: the message
    /// names it), or class `Finalized` if MPI was already finalized.
    pub fn finalize(mut self) -> Result<(), Error> {
        self.finalized = true;
        self.delete_attributes();
        self.runtime.finalize().map_err(Error::from)
    }

    /// Deletes the attributes and hints of the self and world
    /// communicators (in that order, as MPI's finalize does).
    fn delete_attributes(&self) {
        use crate::traits::Communicator;
        crate::attribute::delete_all(self.self_comm().raw());
        crate::attribute::delete_all(self.world().raw());
    }
}

impl Drop for Universe {
    fn drop(&mut self) {
        if !self.finalized {
            self.finalized = true;
            if std::thread::panicking() {
                eprintln!(
                    "oxmpi: rank {} is panicking: MPI is not finalized (the job stops when this process ends)",
                    crate::traits::Communicator::rank(&self.world())
                );
                return;
            }
            self.delete_attributes();
            if let Err(e) = self.runtime.finalize() {
                eprintln!("oxmpi: finalize failed: {e}");
            }
        }
    }
}

/// Seconds on a monotonic clock (`MPI_Wtime`); only differences between
/// two readings mean anything. Works before initialization too.
pub fn time() -> f64 {
    oxmpi_mpi_core::wtime()
}

/// The resolution of [`time`] in seconds (`MPI_Wtick`).
pub fn time_resolution() -> f64 {
    oxmpi_mpi_core::wtick()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threading_levels_map_both_ways_and_keep_their_order() {
        for t in [
            Threading::Single,
            Threading::Funneled,
            Threading::Serialized,
            Threading::Multiple,
        ] {
            assert_eq!(Threading::from(ThreadLevel::from(t)), t);
        }
        assert!(Threading::Single < Threading::Funneled);
        assert!(Threading::Serialized < Threading::Multiple);
        assert_eq!(
            ThreadLevel::from(Threading::Funneled),
            ThreadLevel::Funneled
        );
    }

    #[test]
    fn the_clock_moves_forward_with_a_positive_resolution() {
        let a = time();
        let b = time();
        assert!(b >= a);
        let r = time_resolution();
        assert!(r > 0.0 && r < 1.0, "{r}");
    }
}
