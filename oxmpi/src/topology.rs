//! Communicators and ranks.

use crate::error::Error;
use crate::group::UserGroup;
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

    /// The communicator's processes as a group.
    ///
    /// # Errors
    /// `Comm` once the communicator is freed.
    fn group(&self) -> Result<UserGroup, Error>;

    /// A new communicator of the same processes with a context of its own
    /// (`MPI_Comm_dup`). Collective: every member calls it.
    ///
    /// # Errors
    /// The agreement's errors (`Other`), `Comm`.
    fn duplicate(&self) -> Result<UserCommunicator, Error>;

    /// The processes that pass the same color form a communicator, ranked
    /// by `key`, then by their rank here (`MPI_Comm_split`); `None` for
    /// [`Color::undefined`]. Collective.
    ///
    /// # Errors
    /// `Arg` for a negative color (every member fails alike), `Comm`.
    fn split_by_color_with_key(
        &self,
        color: Color,
        key: Rank,
    ) -> Result<Option<UserCommunicator>, Error>;

    /// [`split_by_color_with_key`](Self::split_by_color_with_key) with the
    /// rank here as the key.
    ///
    /// # Errors
    /// As [`split_by_color_with_key`](Self::split_by_color_with_key).
    fn split_by_color(&self, color: Color) -> Result<Option<UserCommunicator>, Error> {
        self.split_by_color_with_key(color, self.rank())
    }

    /// The processes of this one's node (`MPI_Comm_split_type` with
    /// `MPI_COMM_TYPE_SHARED`), ranked by `key`, then by their rank here.
    /// Collective.
    ///
    /// # Errors
    /// As [`split_by_color_with_key`](Self::split_by_color_with_key).
    fn split_shared(&self, key: Rank) -> Result<UserCommunicator, Error>;

    /// A communicator of the members of `group`, in its order
    /// (`MPI_Comm_create`); `None` for a process not in it. Collective:
    /// every member passes the same group.
    ///
    /// # Errors
    /// `Group` for a group with a process outside this communicator.
    fn split_by_subgroup_collective(
        &self,
        group: &UserGroup,
    ) -> Result<Option<UserCommunicator>, Error>;

    /// How this communicator and `other` relate (`MPI_Comm_compare`).
    ///
    /// # Errors
    /// `Comm` once either is freed.
    fn compare<C: Communicator + ?Sized>(&self, other: &C) -> Result<CommunicatorRelation, Error>;

    /// The handle in the MPI layer.
    #[doc(hidden)]
    fn raw(&self) -> Comm;
}

/// The color of a split: a value ≥ 0, or undefined (the process joins no
/// communicator).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Color(i32);

impl Color {
    /// A color (≥ 0; a negative one fails the split, with a sentence).
    pub fn with_value(value: i32) -> Color {
        Color(value)
    }

    /// `MPI_UNDEFINED`.
    pub fn undefined() -> Color {
        Color(oxmpi_groups::UNDEFINED)
    }
}

/// How two communicators relate (`MPI_Comm_compare`).
pub use oxmpi_mpi_core::CommRelation as CommunicatorRelation;

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

    pub(crate) fn name(&self) -> String {
        self.runtime.comm_name(self.comm)
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

    fn group(&self) -> Result<UserGroup, Error> {
        Ok(UserGroup {
            group: self.runtime.comm_group(self.comm)?,
            me: self.runtime.rank() as u32,
        })
    }

    fn duplicate(&self) -> Result<UserCommunicator, Error> {
        let dup = self.user(self.runtime.comm_dup(self.comm)?);
        crate::attribute::copy_on_duplicate(self.comm, dup.inner.comm);
        Ok(dup)
    }

    fn split_by_color_with_key(
        &self,
        color: Color,
        key: Rank,
    ) -> Result<Option<UserCommunicator>, Error> {
        Ok(self
            .runtime
            .comm_split(self.comm, color.0, key)?
            .map(|c| self.user(c)))
    }

    fn split_shared(&self, key: Rank) -> Result<UserCommunicator, Error> {
        Ok(self.user(self.runtime.comm_split_shared(self.comm, key)?))
    }

    fn split_by_subgroup_collective(
        &self,
        group: &UserGroup,
    ) -> Result<Option<UserCommunicator>, Error> {
        Ok(self
            .runtime
            .comm_create(self.comm, &group.group)?
            .map(|c| self.user(c)))
    }

    fn compare<C: Communicator + ?Sized>(&self, other: &C) -> Result<CommunicatorRelation, Error> {
        Ok(self.runtime.comm_compare(self.comm, other.raw())?)
    }

    fn raw(&self) -> Comm {
        self.comm
    }
}

impl SimpleCommunicator {
    /// A duplicate (as [`Communicator::duplicate`], attributes copied)
    /// whose hints are `info` instead of this communicator's
    /// (`MPI_Comm_dup_with_info`). Collective.
    ///
    /// # Errors
    /// As [`Communicator::duplicate`].
    pub fn duplicate_with_info(
        &self,
        info: &crate::attribute::Info,
    ) -> Result<UserCommunicator, Error> {
        let dup = self.duplicate()?;
        dup.set_info(info);
        Ok(dup)
    }

    fn user(&self, comm: Comm) -> UserCommunicator {
        UserCommunicator {
            inner: SimpleCommunicator::new(self.runtime, comm),
        }
    }
}

/// A communicator this program made (by [`Communicator::duplicate`], a
/// split, or from a group); freed (`MPI_Comm_free`) when dropped. It
/// derefs to a [`SimpleCommunicator`], so every point-to-point and
/// collective operation is called on it as on the world.
#[derive(Debug)]
pub struct UserCommunicator {
    inner: SimpleCommunicator,
}

impl std::ops::Deref for UserCommunicator {
    type Target = SimpleCommunicator;
    fn deref(&self) -> &SimpleCommunicator {
        &self.inner
    }
}

impl Drop for UserCommunicator {
    fn drop(&mut self) {
        crate::attribute::delete_all(self.inner.comm);
        // After finalize the handle is gone with everything else.
        let _ = self.inner.runtime.comm_free(self.inner.comm);
    }
}

impl private::Sealed for UserCommunicator {}

impl Communicator for UserCommunicator {
    fn rank(&self) -> Rank {
        self.inner.rank()
    }
    fn size(&self) -> Rank {
        self.inner.size()
    }
    fn process_at_rank(&self, r: Rank) -> Process<'_> {
        self.inner.process_at_rank(r)
    }
    fn any_process(&self) -> AnyProcess<'_> {
        self.inner.any_process()
    }
    fn abort(&self, code: i32) -> ! {
        self.inner.abort(code)
    }
    fn group(&self) -> Result<UserGroup, Error> {
        self.inner.group()
    }
    fn duplicate(&self) -> Result<UserCommunicator, Error> {
        self.inner.duplicate()
    }
    fn split_by_color_with_key(
        &self,
        color: Color,
        key: Rank,
    ) -> Result<Option<UserCommunicator>, Error> {
        self.inner.split_by_color_with_key(color, key)
    }
    fn split_shared(&self, key: Rank) -> Result<UserCommunicator, Error> {
        self.inner.split_shared(key)
    }
    fn split_by_subgroup_collective(
        &self,
        group: &UserGroup,
    ) -> Result<Option<UserCommunicator>, Error> {
        self.inner.split_by_subgroup_collective(group)
    }
    fn compare<C: Communicator + ?Sized>(&self, other: &C) -> Result<CommunicatorRelation, Error> {
        self.inner.compare(other)
    }
    fn raw(&self) -> Comm {
        self.inner.comm
    }
}
