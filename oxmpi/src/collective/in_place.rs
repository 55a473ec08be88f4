//! The `MPI_IN_PLACE` forms of the collectives: the contribution is
//! already where the result goes (see each method).

use super::{length_error, reduction, Operation};
use crate::datatype::{Buffer, BufferMut, Equivalence};
use crate::error::Error;
use crate::point_to_point::Process;
use crate::topology::SimpleCommunicator;
use oxmpi_mpi_core::coll::{CollCall, CollKind};

/// The in-place collectives every member calls alike.
pub trait InPlaceCollectives {
    /// `buf` holds `size` blocks; this member's contribution is already in
    /// its own block, and every block is filled (`MPI_Allgather` with
    /// `MPI_IN_PLACE`).
    ///
    /// # Errors
    /// `Buffer` when `buf` is not `size` equal blocks; the collective's.
    fn all_gather_in_place<B: BufferMut + ?Sized>(&self, buf: &mut B) -> Result<(), Error>;

    /// `buf` holds `size` blocks: block `j` is sent to member `j` and
    /// replaced by what member `j` sent here (`MPI_Alltoall` with
    /// `MPI_IN_PLACE`).
    ///
    /// # Errors
    /// As [`all_gather_in_place`](Self::all_gather_in_place).
    fn all_to_all_in_place<B: BufferMut + ?Sized>(&self, buf: &mut B) -> Result<(), Error>;

    /// `buf` (this member's contribution) becomes the reduction of the
    /// contributions of members `0..=rank` (`MPI_Scan` in place).
    ///
    /// # Errors
    /// The collective's.
    fn scan_in_place<B, O>(&self, buf: &mut B, op: O) -> Result<(), Error>
    where
        B: BufferMut + ?Sized,
        O: Operation<B::Item>;

    /// `buf` becomes the reduction of members `0..rank`'s contributions
    /// (`MPI_Exscan` in place); member 0's is left as it was.
    ///
    /// # Errors
    /// The collective's.
    fn exclusive_scan_in_place<B, O>(&self, buf: &mut B, op: O) -> Result<(), Error>
    where
        B: BufferMut + ?Sized,
        O: Operation<B::Item>;
}

/// The in-place collectives with a root, called on the root's
/// [`Process`] by the root (the other members call the plain forms).
pub trait InPlaceRoot {
    /// At the root: `recv` holds `size` blocks, the root's own
    /// contribution already in its block (`MPI_Gather` with
    /// `MPI_IN_PLACE`).
    ///
    /// # Errors
    /// `Root` off the root; `Buffer` when `recv` is not `size` equal
    /// blocks; the collective's.
    fn gather_into_root_in_place<R: BufferMut + ?Sized>(&self, recv: &mut R) -> Result<(), Error>;

    /// At the root: block `i` of `send` goes to member `i`; the root's own
    /// block stays where it is (`MPI_Scatter` with `MPI_IN_PLACE`).
    ///
    /// # Errors
    /// As [`gather_into_root_in_place`](Self::gather_into_root_in_place).
    fn scatter_into_root_in_place<S: Buffer + ?Sized>(&self, send: &S) -> Result<(), Error>;

    /// At the root: `buf` (its contribution) becomes the reduction of
    /// every member's (`MPI_Reduce` with `MPI_IN_PLACE`).
    ///
    /// # Errors
    /// `Root` off the root; the collective's.
    fn reduce_into_root_in_place<B, O>(&self, buf: &mut B, op: O) -> Result<(), Error>
    where
        B: BufferMut + ?Sized,
        O: Operation<B::Item>;
}

/// The bytes of one block of `len` elements of `T` split in `n` blocks.
fn block_bytes<T: Equivalence>(what: &str, len: usize, n: usize) -> Result<usize, Error> {
    if !len.is_multiple_of(n) {
        return Err(length_error(what, len, len.next_multiple_of(n), T::NAME));
    }
    Ok(len / n * std::mem::size_of::<T>())
}

impl InPlaceCollectives for SimpleCommunicator {
    fn all_gather_in_place<B: BufferMut + ?Sized>(&self, buf: &mut B) -> Result<(), Error> {
        let b = buf.as_items_mut();
        let mut call = CollCall::new(CollKind::Allgather);
        call.count = block_bytes::<B::Item>("all_gather_in_place", b.len(), self.members())?;
        call.recv = b.as_mut_ptr().cast();
        // SAFETY: `buf` holds `size` blocks of `count` bytes.
        unsafe { self.run(&call) }
    }

    fn all_to_all_in_place<B: BufferMut + ?Sized>(&self, buf: &mut B) -> Result<(), Error> {
        let b = buf.as_items_mut();
        let mut call = CollCall::new(CollKind::Alltoall);
        call.count = block_bytes::<B::Item>("all_to_all_in_place", b.len(), self.members())?;
        call.recv = b.as_mut_ptr().cast();
        // SAFETY: as in `all_gather_in_place`.
        unsafe { self.run(&call) }
    }

    fn scan_in_place<B, O>(&self, buf: &mut B, op: O) -> Result<(), Error>
    where
        B: BufferMut + ?Sized,
        O: Operation<B::Item>,
    {
        let b = buf.as_items_mut();
        let mut call = reduction::<B::Item, O>(CollKind::Scan, b.len(), &op);
        call.recv = b.as_mut_ptr().cast();
        // SAFETY: `buf` holds `count` elements; `op` outlives the call.
        unsafe { self.run(&call) }
    }

    fn exclusive_scan_in_place<B, O>(&self, buf: &mut B, op: O) -> Result<(), Error>
    where
        B: BufferMut + ?Sized,
        O: Operation<B::Item>,
    {
        let b = buf.as_items_mut();
        let mut call = reduction::<B::Item, O>(CollKind::Exscan, b.len(), &op);
        call.recv = b.as_mut_ptr().cast();
        // SAFETY: as in `scan_in_place`.
        unsafe { self.run(&call) }
    }
}

impl InPlaceRoot for Process<'_> {
    fn gather_into_root_in_place<R: BufferMut + ?Sized>(&self, recv: &mut R) -> Result<(), Error> {
        let root = self.at_root("gather_into")?;
        let r = recv.as_items_mut();
        let mut call = CollCall::new(CollKind::Gather);
        call.count =
            block_bytes::<R::Item>("gather_into_root_in_place", r.len(), self.comm.members())?;
        call.recv = r.as_mut_ptr().cast();
        call.root = root;
        // SAFETY: `recv` holds `size` blocks of `count` bytes.
        unsafe { self.comm.run(&call) }
    }

    fn scatter_into_root_in_place<S: Buffer + ?Sized>(&self, send: &S) -> Result<(), Error> {
        let root = self.at_root("scatter_into")?;
        let s = send.as_items();
        let mut call = CollCall::new(CollKind::Scatter);
        call.count =
            block_bytes::<S::Item>("scatter_into_root_in_place", s.len(), self.comm.members())?;
        call.send = s.as_ptr().cast();
        call.root = root;
        // SAFETY: `send` holds `size` blocks of `count` bytes; nothing is
        // received at the root.
        unsafe { self.comm.run(&call) }
    }

    fn reduce_into_root_in_place<B, O>(&self, buf: &mut B, op: O) -> Result<(), Error>
    where
        B: BufferMut + ?Sized,
        O: Operation<B::Item>,
    {
        let root = self.at_root("reduce_into")?;
        let b = buf.as_items_mut();
        let mut call = reduction::<B::Item, O>(CollKind::Reduce, b.len(), &op);
        call.recv = b.as_mut_ptr().cast();
        call.root = root;
        // SAFETY: `buf` holds `count` elements; `op` outlives the call.
        unsafe { self.comm.run(&call) }
    }
}
