//! The `MPI_IN_PLACE` forms of the collectives: the contribution is
//! already where the result goes (see each method).

use super::calls::{Blocking, Exec, Immediate};
use super::{length_error, reduction, Operation};
use crate::datatype::stage::{Incoming, Outgoing, Staging};
use crate::datatype::{Buffer, BufferMut, Equivalence};
use crate::error::Error;
use crate::point_to_point::Process;
use crate::request::{Request, Scope};
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
    Ok(len / n * T::PACKED_SIZE)
}

impl InPlaceCollectives for SimpleCommunicator {
    fn all_gather_in_place<B: BufferMut + ?Sized>(&self, buf: &mut B) -> Result<(), Error> {
        all_gather_in_place(self, buf, Blocking)
    }
    fn all_to_all_in_place<B: BufferMut + ?Sized>(&self, buf: &mut B) -> Result<(), Error> {
        all_to_all_in_place(self, buf, Blocking)
    }
    fn scan_in_place<B, O>(&self, buf: &mut B, op: O) -> Result<(), Error>
    where
        B: BufferMut + ?Sized,
        O: Operation<B::Item>,
    {
        scan_in_place(self, buf, &op, Blocking)
    }
    fn exclusive_scan_in_place<B, O>(&self, buf: &mut B, op: O) -> Result<(), Error>
    where
        B: BufferMut + ?Sized,
        O: Operation<B::Item>,
    {
        exclusive_scan_in_place(self, buf, &op, Blocking)
    }
}

impl InPlaceRoot for Process<'_> {
    fn gather_into_root_in_place<R: BufferMut + ?Sized>(&self, recv: &mut R) -> Result<(), Error> {
        gather_into_root_in_place(self, recv, Blocking)
    }
    fn scatter_into_root_in_place<S: Buffer + ?Sized>(&self, send: &S) -> Result<(), Error> {
        scatter_into_root_in_place(self, send, Blocking)
    }
    fn reduce_into_root_in_place<B, O>(&self, buf: &mut B, op: O) -> Result<(), Error>
    where
        B: BufferMut + ?Sized,
        O: Operation<B::Item>,
    {
        reduce_into_root_in_place(self, buf, &op, Blocking)
    }
}

/// The body of `all_gather_in_place`, run by `exec`.
fn all_gather_in_place<'b, B: BufferMut + ?Sized, E: Exec<'b>>(
    comm: &SimpleCommunicator,
    buf: &'b mut B,
    exec: E,
) -> Result<E::Out, Error> {
    let b = buf.as_items_mut();
    let mut call = CollCall::new(CollKind::Allgather);
    call.count = block_bytes::<B::Item>("all_gather_in_place", b.len(), comm.members())?;
    let inc = Incoming::of(b);
    call.recv = inc.ptr;
    // SAFETY: `buf` holds `size` blocks of `count` bytes.
    unsafe { exec.exec_staged(comm, &call, Staging::new(None, Some(inc))) }
}

/// The body of `all_to_all_in_place`, run by `exec`.
fn all_to_all_in_place<'b, B: BufferMut + ?Sized, E: Exec<'b>>(
    comm: &SimpleCommunicator,
    buf: &'b mut B,
    exec: E,
) -> Result<E::Out, Error> {
    let b = buf.as_items_mut();
    let mut call = CollCall::new(CollKind::Alltoall);
    call.count = block_bytes::<B::Item>("all_to_all_in_place", b.len(), comm.members())?;
    let inc = Incoming::of(b);
    call.recv = inc.ptr;
    // SAFETY: as in `all_gather_in_place`.
    unsafe { exec.exec_staged(comm, &call, Staging::new(None, Some(inc))) }
}

/// The body of `scan_in_place`, run by `exec`.
fn scan_in_place<'b, B, O, E: Exec<'b>>(
    comm: &SimpleCommunicator,
    buf: &'b mut B,
    op: &'b O,
    exec: E,
) -> Result<E::Out, Error>
where
    B: BufferMut + ?Sized,
    O: Operation<B::Item>,
{
    let b = buf.as_items_mut();
    let mut call = reduction::<B::Item, O>(CollKind::Scan, b.len(), op)?;
    call.recv = b.as_mut_ptr().cast();
    // SAFETY: `buf` holds `count` elements; `op` outlives the call.
    unsafe { exec.exec(comm, &call) }
}

/// The body of `exclusive_scan_in_place`, run by `exec`.
fn exclusive_scan_in_place<'b, B, O, E: Exec<'b>>(
    comm: &SimpleCommunicator,
    buf: &'b mut B,
    op: &'b O,
    exec: E,
) -> Result<E::Out, Error>
where
    B: BufferMut + ?Sized,
    O: Operation<B::Item>,
{
    let b = buf.as_items_mut();
    let mut call = reduction::<B::Item, O>(CollKind::Exscan, b.len(), op)?;
    call.recv = b.as_mut_ptr().cast();
    // SAFETY: as in `scan_in_place`.
    unsafe { exec.exec(comm, &call) }
}

/// The body of `gather_into_root_in_place`, run by `exec`.
fn gather_into_root_in_place<'b, R: BufferMut + ?Sized, E: Exec<'b>>(
    process: &Process<'_>,
    recv: &'b mut R,
    exec: E,
) -> Result<E::Out, Error> {
    let root = process.at_root("gather_into")?;
    let r = recv.as_items_mut();
    let mut call = CollCall::new(CollKind::Gather);
    call.count =
        block_bytes::<R::Item>("gather_into_root_in_place", r.len(), process.comm.members())?;
    let inc = Incoming::of(r);
    call.recv = inc.ptr;
    call.root = root;
    // SAFETY: `recv` holds `size` blocks of `count` bytes.
    unsafe { exec.exec_staged(process.comm, &call, Staging::new(None, Some(inc))) }
}

/// The body of `scatter_into_root_in_place`, run by `exec`.
fn scatter_into_root_in_place<'b, S: Buffer + ?Sized, E: Exec<'b>>(
    process: &Process<'_>,
    send: &'b S,
    exec: E,
) -> Result<E::Out, Error> {
    let root = process.at_root("scatter_into")?;
    let s = send.as_items();
    let mut call = CollCall::new(CollKind::Scatter);
    call.count = block_bytes::<S::Item>(
        "scatter_into_root_in_place",
        s.len(),
        process.comm.members(),
    )?;
    let out = Outgoing::of(s);
    call.send = out.ptr;
    call.root = root;
    // SAFETY: `send` holds `size` blocks of `count` bytes; nothing is
    // received at the root.
    unsafe { exec.exec_staged(process.comm, &call, Staging::new(Some(out), None)) }
}

/// The body of `reduce_into_root_in_place`, run by `exec`.
fn reduce_into_root_in_place<'b, B, O, E: Exec<'b>>(
    process: &Process<'_>,
    buf: &'b mut B,
    op: &'b O,
    exec: E,
) -> Result<E::Out, Error>
where
    B: BufferMut + ?Sized,
    O: Operation<B::Item>,
{
    let root = process.at_root("reduce_into")?;
    let b = buf.as_items_mut();
    let mut call = reduction::<B::Item, O>(CollKind::Reduce, b.len(), op)?;
    call.recv = b.as_mut_ptr().cast();
    call.root = root;
    // SAFETY: `buf` holds `count` elements; `op` outlives the call.
    unsafe { exec.exec(process.comm, &call) }
}

/// The `immediate_` (non-blocking) forms of [`InPlaceCollectives`].
pub trait ImmediateInPlaceCollectives {
    /// Starts [`all_gather_in_place`](InPlaceCollectives::all_gather_in_place) non-blocking; the request
    /// borrows the buffers (and the operation) until it completes.
    ///
    /// # Errors
    /// As the blocking form's; the collective's own error comes from
    /// the request.
    fn immediate_all_gather_in_place<'a, Sc: Scope<'a>, B: BufferMut + ?Sized>(
        &self,
        scope: Sc,
        buf: &'a mut B,
    ) -> Result<Request<'a, Sc>, Error>;

    /// Starts [`all_to_all_in_place`](InPlaceCollectives::all_to_all_in_place) non-blocking; the request
    /// borrows the buffers (and the operation) until it completes.
    ///
    /// # Errors
    /// As the blocking form's; the collective's own error comes from
    /// the request.
    fn immediate_all_to_all_in_place<'a, Sc: Scope<'a>, B: BufferMut + ?Sized>(
        &self,
        scope: Sc,
        buf: &'a mut B,
    ) -> Result<Request<'a, Sc>, Error>;

    /// Starts [`scan_in_place`](InPlaceCollectives::scan_in_place) non-blocking; the request
    /// borrows the buffers (and the operation) until it completes.
    ///
    /// # Errors
    /// As the blocking form's; the collective's own error comes from
    /// the request.
    fn immediate_scan_in_place<'a, Sc: Scope<'a>, B, O>(
        &self,
        scope: Sc,
        buf: &'a mut B,
        op: &'a O,
    ) -> Result<Request<'a, Sc>, Error>
    where
        B: BufferMut + ?Sized,
        O: Operation<B::Item>;

    /// Starts [`exclusive_scan_in_place`](InPlaceCollectives::exclusive_scan_in_place) non-blocking; the request
    /// borrows the buffers (and the operation) until it completes.
    ///
    /// # Errors
    /// As the blocking form's; the collective's own error comes from
    /// the request.
    fn immediate_exclusive_scan_in_place<'a, Sc: Scope<'a>, B, O>(
        &self,
        scope: Sc,
        buf: &'a mut B,
        op: &'a O,
    ) -> Result<Request<'a, Sc>, Error>
    where
        B: BufferMut + ?Sized,
        O: Operation<B::Item>;
}

impl ImmediateInPlaceCollectives for SimpleCommunicator {
    fn immediate_all_gather_in_place<'a, Sc: Scope<'a>, B: BufferMut + ?Sized>(
        &self,
        scope: Sc,
        buf: &'a mut B,
    ) -> Result<Request<'a, Sc>, Error> {
        all_gather_in_place(self, buf, Immediate(scope))
    }

    fn immediate_all_to_all_in_place<'a, Sc: Scope<'a>, B: BufferMut + ?Sized>(
        &self,
        scope: Sc,
        buf: &'a mut B,
    ) -> Result<Request<'a, Sc>, Error> {
        all_to_all_in_place(self, buf, Immediate(scope))
    }

    fn immediate_scan_in_place<'a, Sc: Scope<'a>, B, O>(
        &self,
        scope: Sc,
        buf: &'a mut B,
        op: &'a O,
    ) -> Result<Request<'a, Sc>, Error>
    where
        B: BufferMut + ?Sized,
        O: Operation<B::Item>,
    {
        scan_in_place(self, buf, op, Immediate(scope))
    }

    fn immediate_exclusive_scan_in_place<'a, Sc: Scope<'a>, B, O>(
        &self,
        scope: Sc,
        buf: &'a mut B,
        op: &'a O,
    ) -> Result<Request<'a, Sc>, Error>
    where
        B: BufferMut + ?Sized,
        O: Operation<B::Item>,
    {
        exclusive_scan_in_place(self, buf, op, Immediate(scope))
    }
}

/// The `immediate_` (non-blocking) forms of [`InPlaceRoot`].
pub trait ImmediateInPlaceRoot {
    /// Starts [`gather_into_root_in_place`](InPlaceRoot::gather_into_root_in_place) non-blocking; the request
    /// borrows the buffers (and the operation) until it completes.
    ///
    /// # Errors
    /// As the blocking form's; the collective's own error comes from
    /// the request.
    fn immediate_gather_into_root_in_place<'a, Sc: Scope<'a>, R: BufferMut + ?Sized>(
        &self,
        scope: Sc,
        recv: &'a mut R,
    ) -> Result<Request<'a, Sc>, Error>;

    /// Starts [`scatter_into_root_in_place`](InPlaceRoot::scatter_into_root_in_place) non-blocking; the request
    /// borrows the buffers (and the operation) until it completes.
    ///
    /// # Errors
    /// As the blocking form's; the collective's own error comes from
    /// the request.
    fn immediate_scatter_into_root_in_place<'a, Sc: Scope<'a>, S: Buffer + ?Sized>(
        &self,
        scope: Sc,
        send: &'a S,
    ) -> Result<Request<'a, Sc>, Error>;

    /// Starts [`reduce_into_root_in_place`](InPlaceRoot::reduce_into_root_in_place) non-blocking; the request
    /// borrows the buffers (and the operation) until it completes.
    ///
    /// # Errors
    /// As the blocking form's; the collective's own error comes from
    /// the request.
    fn immediate_reduce_into_root_in_place<'a, Sc: Scope<'a>, B, O>(
        &self,
        scope: Sc,
        buf: &'a mut B,
        op: &'a O,
    ) -> Result<Request<'a, Sc>, Error>
    where
        B: BufferMut + ?Sized,
        O: Operation<B::Item>;
}

impl ImmediateInPlaceRoot for Process<'_> {
    fn immediate_gather_into_root_in_place<'a, Sc: Scope<'a>, R: BufferMut + ?Sized>(
        &self,
        scope: Sc,
        recv: &'a mut R,
    ) -> Result<Request<'a, Sc>, Error> {
        gather_into_root_in_place(self, recv, Immediate(scope))
    }

    fn immediate_scatter_into_root_in_place<'a, Sc: Scope<'a>, S: Buffer + ?Sized>(
        &self,
        scope: Sc,
        send: &'a S,
    ) -> Result<Request<'a, Sc>, Error> {
        scatter_into_root_in_place(self, send, Immediate(scope))
    }

    fn immediate_reduce_into_root_in_place<'a, Sc: Scope<'a>, B, O>(
        &self,
        scope: Sc,
        buf: &'a mut B,
        op: &'a O,
    ) -> Result<Request<'a, Sc>, Error>
    where
        B: BufferMut + ?Sized,
        O: Operation<B::Item>,
    {
        reduce_into_root_in_place(self, buf, op, Immediate(scope))
    }
}
