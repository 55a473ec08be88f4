//! The `v` collectives (each rank's block has its own length and place)
//! in rsmpi's shape: [`Partition`] and [`PartitionMut`] describe a buffer
//! cut into per-rank blocks (counts and displacements in elements).

use super::calls::{Blocking, Exec, Immediate};
use super::{expect_len, reduction, Operation};
use crate::datatype::stage::{Incoming, Outgoing, Staging};
use crate::datatype::{Buffer, BufferMut, Equivalence};
use crate::error::Error;
use crate::point_to_point::Process;
use crate::request::{Request, Scope};
use crate::topology::SimpleCommunicator;
use crate::ErrorClass;
use oxmpi_mpi_core::coll::{CollCall, CollKind, RSlice};

/// A buffer to send, cut into per-rank blocks: block `i` is `counts[i]`
/// elements from element `displs[i]`.
pub struct Partition<'b, T: Equivalence> {
    buf: &'b [T],
    counts: Vec<usize>,
    displs: Vec<usize>,
}

/// A buffer to receive into, cut into per-rank blocks (as [`Partition`]).
pub struct PartitionMut<'b, T: Equivalence> {
    buf: &'b mut [T],
    counts: Vec<usize>,
    displs: Vec<usize>,
}

/// Checks that every block lies inside a buffer of `len` elements.
fn check_blocks(what: &str, len: usize, counts: &[usize], displs: &[usize]) -> Result<(), Error> {
    if counts.len() != displs.len() {
        return Err(Error::new(
            ErrorClass::Arg,
            format!(
                "{what}: {} counts and {} displacements; give one of each per process",
                counts.len(),
                displs.len()
            ),
        ));
    }
    for (i, (&c, &d)) in counts.iter().zip(displs).enumerate() {
        if d.checked_add(c).is_none_or(|end| end > len) {
            return Err(Error::new(
                ErrorClass::Buffer,
                format!(
                    "{what}: block {i} ({c} elements from element {d}) passes the end of the buffer of {len} elements"
                ),
            ));
        }
    }
    Ok(())
}

impl<'b, T: Equivalence> Partition<'b, T> {
    /// `buf` cut into blocks of `counts[i]` elements at `displs[i]`.
    ///
    /// # Errors
    /// `Arg` when the lists differ in length; `Buffer` for a block past the
    /// buffer's end.
    pub fn new(buf: &'b [T], counts: &[usize], displs: &[usize]) -> Result<Self, Error> {
        check_blocks("Partition", buf.len(), counts, displs)?;
        Ok(Partition {
            buf,
            counts: counts.to_vec(),
            displs: displs.to_vec(),
        })
    }
}

impl<'b, T: Equivalence> PartitionMut<'b, T> {
    /// `buf` cut into blocks of `counts[i]` elements at `displs[i]`.
    ///
    /// # Errors
    /// As [`Partition::new`].
    pub fn new(buf: &'b mut [T], counts: &[usize], displs: &[usize]) -> Result<Self, Error> {
        check_blocks("PartitionMut", buf.len(), counts, displs)?;
        Ok(PartitionMut {
            buf,
            counts: counts.to_vec(),
            displs: displs.to_vec(),
        })
    }
}

/// Element counts and displacements as bytes (of the packed form, for a
/// type with padding).
fn bytes_of<T: Equivalence>(v: &[usize]) -> Vec<usize> {
    v.iter().map(|x| x * T::PACKED_SIZE).collect()
}

/// Checks that a partition has one block per member.
fn one_per_member(what: &str, blocks: usize, members: usize) -> Result<(), Error> {
    if blocks != members {
        return Err(Error::new(
            ErrorClass::Arg,
            format!("{what}: {blocks} blocks for a communicator of {members} processes; give one per process"),
        ));
    }
    Ok(())
}

/// The `v` collectives every member calls alike.
pub trait VarcountCollectives {
    /// Every member's `send` goes to block `i` (for member `i`) of every
    /// member's `recv` (`MPI_Allgatherv`).
    ///
    /// # Errors
    /// `Arg` for a partition without one block per member; `Buffer` when a
    /// block's length differs from its member's send; the collective's.
    fn all_gather_varcount_into<S>(
        &self,
        send: &S,
        recv: &mut PartitionMut<'_, S::Item>,
    ) -> Result<(), Error>
    where
        S: Buffer + ?Sized;

    /// Block `j` of `send` goes to member `j`, whose block `i` of `recv`
    /// it becomes (`MPI_Alltoallv`).
    ///
    /// # Errors
    /// As [`all_gather_varcount_into`](Self::all_gather_varcount_into).
    fn all_to_all_varcount_into<T: Equivalence>(
        &self,
        send: &Partition<'_, T>,
        recv: &mut PartitionMut<'_, T>,
    ) -> Result<(), Error>;

    /// Reduces every member's `send` (the sum of `counts` elements) and
    /// member `i` gets the `counts[i]` elements of block `i`
    /// (`MPI_Reduce_scatter`).
    ///
    /// # Errors
    /// `Buffer` when the lengths do not match `counts`; the collective's.
    fn reduce_scatter_into<S, R, O>(
        &self,
        send: &S,
        recv: &mut R,
        counts: &[usize],
        op: O,
    ) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
        O: Operation<S::Item>;
}

/// The `v` collectives with a root, called on the root's [`Process`].
pub trait VarcountRoot {
    /// Sends `send` to the root's gather (`MPI_Gatherv`, not at the root).
    ///
    /// # Errors
    /// `Rank` for a root outside the communicator; the collective's.
    fn gather_varcount_into<S: Buffer + ?Sized>(&self, send: &S) -> Result<(), Error>;

    /// At the root: member `i`'s `send` goes to block `i` of `recv`.
    ///
    /// # Errors
    /// As [`VarcountCollectives::all_gather_varcount_into`].
    fn gather_varcount_into_root<S>(
        &self,
        send: &S,
        recv: &mut PartitionMut<'_, S::Item>,
    ) -> Result<(), Error>
    where
        S: Buffer + ?Sized;

    /// Receives this member's block of the root's scatter (`MPI_Scatterv`,
    /// not at the root); `recv` is as long as the block.
    ///
    /// # Errors
    /// As [`gather_varcount_into`](Self::gather_varcount_into).
    fn scatter_varcount_into<R: BufferMut + ?Sized>(&self, recv: &mut R) -> Result<(), Error>;

    /// At the root: block `i` of `send` goes to member `i`; its own to
    /// `recv`.
    ///
    /// # Errors
    /// As [`VarcountCollectives::all_gather_varcount_into`].
    fn scatter_varcount_into_root<R>(
        &self,
        send: &Partition<'_, R::Item>,
        recv: &mut R,
    ) -> Result<(), Error>
    where
        R: BufferMut + ?Sized;
}

impl VarcountCollectives for SimpleCommunicator {
    fn all_gather_varcount_into<S>(
        &self,
        send: &S,
        recv: &mut PartitionMut<'_, S::Item>,
    ) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
    {
        all_gather_varcount_into(self, send, recv, Blocking)
    }
    fn all_to_all_varcount_into<T: Equivalence>(
        &self,
        send: &Partition<'_, T>,
        recv: &mut PartitionMut<'_, T>,
    ) -> Result<(), Error> {
        all_to_all_varcount_into(self, send, recv, Blocking)
    }
    fn reduce_scatter_into<S, R, O>(
        &self,
        send: &S,
        recv: &mut R,
        counts: &[usize],
        op: O,
    ) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
        O: Operation<S::Item>,
    {
        reduce_scatter_into(self, send, recv, counts, &op, Blocking)
    }
}

impl SimpleCommunicator {
    fn rank_index(&self) -> usize {
        use crate::topology::Communicator;
        self.rank() as usize
    }
}

impl VarcountRoot for Process<'_> {
    fn gather_varcount_into<S: Buffer + ?Sized>(&self, send: &S) -> Result<(), Error> {
        gather_varcount_into(self, send, Blocking)
    }
    fn gather_varcount_into_root<S>(
        &self,
        send: &S,
        recv: &mut PartitionMut<'_, S::Item>,
    ) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
    {
        gather_varcount_into_root(self, send, recv, Blocking)
    }
    fn scatter_varcount_into<R: BufferMut + ?Sized>(&self, recv: &mut R) -> Result<(), Error> {
        scatter_varcount_into(self, recv, Blocking)
    }
    fn scatter_varcount_into_root<R>(
        &self,
        send: &Partition<'_, R::Item>,
        recv: &mut R,
    ) -> Result<(), Error>
    where
        R: BufferMut + ?Sized,
    {
        scatter_varcount_into_root(self, send, recv, Blocking)
    }
}

/// The body of `all_gather_varcount_into`, run by `exec`.
fn all_gather_varcount_into<'b, S, E: Exec<'b>>(
    comm: &SimpleCommunicator,
    send: &'b S,
    recv: &'b mut PartitionMut<'_, S::Item>,
    exec: E,
) -> Result<E::Out, Error>
where
    S: Buffer + ?Sized,
{
    one_per_member(
        "all_gather_varcount_into",
        recv.counts.len(),
        comm.members(),
    )?;
    let s = send.as_items();
    let mine = recv.counts[comm.rank_index()];
    expect_len("all_gather_varcount_into", s.len(), mine, S::Item::NAME)?;
    let (counts, displs) = (
        bytes_of::<S::Item>(&recv.counts),
        bytes_of::<S::Item>(&recv.displs),
    );
    let mut call = CollCall::new(CollKind::Allgatherv);
    call.count = s.len() * S::Item::PACKED_SIZE;
    let (out, inc) = (Outgoing::of(s), Incoming::of(recv.buf));
    call.send = out.ptr;
    call.recv = inc.ptr;
    call.counts = RSlice::from_slice(&counts);
    call.displs = RSlice::from_slice(&displs);
    // SAFETY: the blocks lie inside `recv` (checked at its making);
    // `send` holds `count` bytes.
    unsafe { exec.exec_staged(comm, &call, Staging::new(Some(out), Some(inc))) }
}

/// The body of `all_to_all_varcount_into`, run by `exec`.
fn all_to_all_varcount_into<'b, T: Equivalence, E: Exec<'b>>(
    comm: &SimpleCommunicator,
    send: &'b Partition<'_, T>,
    recv: &'b mut PartitionMut<'_, T>,
    exec: E,
) -> Result<E::Out, Error> {
    one_per_member(
        "all_to_all_varcount_into",
        send.counts.len(),
        comm.members(),
    )?;
    one_per_member(
        "all_to_all_varcount_into",
        recv.counts.len(),
        comm.members(),
    )?;
    let (sc, sd) = (bytes_of::<T>(&send.counts), bytes_of::<T>(&send.displs));
    let (rc, rd) = (bytes_of::<T>(&recv.counts), bytes_of::<T>(&recv.displs));
    let mut call = CollCall::new(CollKind::Alltoallv);
    let (out, inc) = (Outgoing::of(send.buf), Incoming::of(recv.buf));
    call.send = out.ptr;
    call.recv = inc.ptr;
    call.send_counts = RSlice::from_slice(&sc);
    call.send_displs = RSlice::from_slice(&sd);
    call.counts = RSlice::from_slice(&rc);
    call.displs = RSlice::from_slice(&rd);
    // SAFETY: every block lies inside its buffer (checked at making).
    unsafe { exec.exec_staged(comm, &call, Staging::new(Some(out), Some(inc))) }
}

/// The body of `reduce_scatter_into`, run by `exec`.
fn reduce_scatter_into<'b, S, R, O, E: Exec<'b>>(
    comm: &SimpleCommunicator,
    send: &'b S,
    recv: &'b mut R,
    counts: &'b [usize],
    op: &'b O,
    exec: E,
) -> Result<E::Out, Error>
where
    S: Buffer + ?Sized,
    R: BufferMut<Item = S::Item> + ?Sized,
    O: Operation<S::Item>,
{
    one_per_member("reduce_scatter_into", counts.len(), comm.members())?;
    let (s, r) = (send.as_items(), recv.as_items_mut());
    let total: usize = counts.iter().sum();
    expect_len("reduce_scatter_into", s.len(), total, S::Item::NAME)?;
    let mine = counts[comm.rank_index()];
    expect_len("reduce_scatter_into", r.len(), mine, S::Item::NAME)?;
    let mut call = reduction::<S::Item, O>(CollKind::ReduceScatter, mine, op)?;
    call.send = s.as_ptr().cast();
    call.recv = r.as_mut_ptr().cast();
    call.counts = RSlice::from_slice(counts);
    // SAFETY: `send` holds the sum of `counts` elements, `recv` this
    // member's count; `op` outlives the call.
    unsafe { exec.exec(comm, &call) }
}

/// The body of `gather_varcount_into`, run by `exec`.
fn gather_varcount_into<'b, S: Buffer + ?Sized, E: Exec<'b>>(
    process: &Process<'_>,
    send: &'b S,
    exec: E,
) -> Result<E::Out, Error> {
    let root = process.off_root("gather_varcount_into")?;
    let s = send.as_items();
    let mut call = CollCall::new(CollKind::Gatherv);
    call.count = s.len() * S::Item::PACKED_SIZE;
    let out = Outgoing::of(s);
    call.send = out.ptr;
    call.root = root;
    // SAFETY: `send` holds `count` bytes; nothing is received here.
    unsafe { exec.exec_staged(process.comm, &call, Staging::new(Some(out), None)) }
}

/// The body of `gather_varcount_into_root`, run by `exec`.
fn gather_varcount_into_root<'b, S, E: Exec<'b>>(
    process: &Process<'_>,
    send: &'b S,
    recv: &'b mut PartitionMut<'_, S::Item>,
    exec: E,
) -> Result<E::Out, Error>
where
    S: Buffer + ?Sized,
{
    let root = process.at_root("gather_varcount_into")?;
    one_per_member(
        "gather_varcount_into_root",
        recv.counts.len(),
        process.comm.members(),
    )?;
    let s = send.as_items();
    let (counts, displs) = (
        bytes_of::<S::Item>(&recv.counts),
        bytes_of::<S::Item>(&recv.displs),
    );
    let mut call = CollCall::new(CollKind::Gatherv);
    call.count = s.len() * S::Item::PACKED_SIZE;
    let (out, inc) = (Outgoing::of(s), Incoming::of(recv.buf));
    call.send = out.ptr;
    call.recv = inc.ptr;
    call.counts = RSlice::from_slice(&counts);
    call.displs = RSlice::from_slice(&displs);
    call.root = root;
    // SAFETY: the blocks lie inside `recv`; `send` holds `count` bytes.
    unsafe { exec.exec_staged(process.comm, &call, Staging::new(Some(out), Some(inc))) }
}

/// The body of `scatter_varcount_into`, run by `exec`.
fn scatter_varcount_into<'b, R: BufferMut + ?Sized, E: Exec<'b>>(
    process: &Process<'_>,
    recv: &'b mut R,
    exec: E,
) -> Result<E::Out, Error> {
    let root = process.off_root("scatter_varcount_into")?;
    let r = recv.as_items_mut();
    let mut call = CollCall::new(CollKind::Scatterv);
    call.count = r.len() * R::Item::PACKED_SIZE;
    let inc = Incoming::of(r);
    call.recv = inc.ptr;
    call.root = root;
    // SAFETY: `recv` holds `count` bytes; nothing is sent from here.
    unsafe { exec.exec_staged(process.comm, &call, Staging::new(None, Some(inc))) }
}

/// The body of `scatter_varcount_into_root`, run by `exec`.
fn scatter_varcount_into_root<'b, R, E: Exec<'b>>(
    process: &Process<'_>,
    send: &'b Partition<'_, R::Item>,
    recv: &'b mut R,
    exec: E,
) -> Result<E::Out, Error>
where
    R: BufferMut + ?Sized,
{
    let root = process.at_root("scatter_varcount_into")?;
    one_per_member(
        "scatter_varcount_into_root",
        send.counts.len(),
        process.comm.members(),
    )?;
    let r = recv.as_items_mut();
    let mine = send.counts[root as usize];
    expect_len("scatter_varcount_into_root", r.len(), mine, R::Item::NAME)?;
    let (counts, displs) = (
        bytes_of::<R::Item>(&send.counts),
        bytes_of::<R::Item>(&send.displs),
    );
    let mut call = CollCall::new(CollKind::Scatterv);
    call.count = r.len() * R::Item::PACKED_SIZE;
    let (out, inc) = (Outgoing::of(send.buf), Incoming::of(r));
    call.send = out.ptr;
    call.recv = inc.ptr;
    call.counts = RSlice::from_slice(&counts);
    call.displs = RSlice::from_slice(&displs);
    call.root = root;
    // SAFETY: the blocks lie inside `send`; `recv` holds `count` bytes.
    unsafe { exec.exec_staged(process.comm, &call, Staging::new(Some(out), Some(inc))) }
}

/// The `immediate_` (non-blocking) forms of [`VarcountCollectives`].
pub trait ImmediateVarcountCollectives {
    /// Starts [`all_gather_varcount_into`](VarcountCollectives::all_gather_varcount_into) non-blocking; the request
    /// borrows the buffers (and the operation) until it completes.
    ///
    /// # Errors
    /// As the blocking form's; the collective's own error comes from
    /// the request.
    fn immediate_all_gather_varcount_into<'a, Sc: Scope<'a>, S>(
        &self,
        scope: Sc,
        send: &'a S,
        recv: &'a mut PartitionMut<'_, S::Item>,
    ) -> Result<Request<'a, Sc>, Error>
    where
        S: Buffer + ?Sized;

    /// Starts [`all_to_all_varcount_into`](VarcountCollectives::all_to_all_varcount_into) non-blocking; the request
    /// borrows the buffers (and the operation) until it completes.
    ///
    /// # Errors
    /// As the blocking form's; the collective's own error comes from
    /// the request.
    fn immediate_all_to_all_varcount_into<'a, Sc: Scope<'a>, T: Equivalence>(
        &self,
        scope: Sc,
        send: &'a Partition<'_, T>,
        recv: &'a mut PartitionMut<'_, T>,
    ) -> Result<Request<'a, Sc>, Error>;

    /// Starts [`reduce_scatter_into`](VarcountCollectives::reduce_scatter_into) non-blocking; the request
    /// borrows the buffers (and the operation) until it completes.
    ///
    /// # Errors
    /// As the blocking form's; the collective's own error comes from
    /// the request.
    fn immediate_reduce_scatter_into<'a, Sc: Scope<'a>, S, R, O>(
        &self,
        scope: Sc,
        send: &'a S,
        recv: &'a mut R,
        counts: &'a [usize],
        op: &'a O,
    ) -> Result<Request<'a, Sc>, Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
        O: Operation<S::Item>;
}

impl ImmediateVarcountCollectives for SimpleCommunicator {
    fn immediate_all_gather_varcount_into<'a, Sc: Scope<'a>, S>(
        &self,
        scope: Sc,
        send: &'a S,
        recv: &'a mut PartitionMut<'_, S::Item>,
    ) -> Result<Request<'a, Sc>, Error>
    where
        S: Buffer + ?Sized,
    {
        all_gather_varcount_into(self, send, recv, Immediate(scope))
    }

    fn immediate_all_to_all_varcount_into<'a, Sc: Scope<'a>, T: Equivalence>(
        &self,
        scope: Sc,
        send: &'a Partition<'_, T>,
        recv: &'a mut PartitionMut<'_, T>,
    ) -> Result<Request<'a, Sc>, Error> {
        all_to_all_varcount_into(self, send, recv, Immediate(scope))
    }

    fn immediate_reduce_scatter_into<'a, Sc: Scope<'a>, S, R, O>(
        &self,
        scope: Sc,
        send: &'a S,
        recv: &'a mut R,
        counts: &'a [usize],
        op: &'a O,
    ) -> Result<Request<'a, Sc>, Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
        O: Operation<S::Item>,
    {
        reduce_scatter_into(self, send, recv, counts, op, Immediate(scope))
    }
}

/// The `immediate_` (non-blocking) forms of [`VarcountRoot`].
pub trait ImmediateVarcountRoot {
    /// Starts [`gather_varcount_into`](VarcountRoot::gather_varcount_into) non-blocking; the request
    /// borrows the buffers (and the operation) until it completes.
    ///
    /// # Errors
    /// As the blocking form's; the collective's own error comes from
    /// the request.
    fn immediate_gather_varcount_into<'a, Sc: Scope<'a>, S: Buffer + ?Sized>(
        &self,
        scope: Sc,
        send: &'a S,
    ) -> Result<Request<'a, Sc>, Error>;

    /// Starts [`gather_varcount_into_root`](VarcountRoot::gather_varcount_into_root) non-blocking; the request
    /// borrows the buffers (and the operation) until it completes.
    ///
    /// # Errors
    /// As the blocking form's; the collective's own error comes from
    /// the request.
    fn immediate_gather_varcount_into_root<'a, Sc: Scope<'a>, S>(
        &self,
        scope: Sc,
        send: &'a S,
        recv: &'a mut PartitionMut<'_, S::Item>,
    ) -> Result<Request<'a, Sc>, Error>
    where
        S: Buffer + ?Sized;

    /// Starts [`scatter_varcount_into`](VarcountRoot::scatter_varcount_into) non-blocking; the request
    /// borrows the buffers (and the operation) until it completes.
    ///
    /// # Errors
    /// As the blocking form's; the collective's own error comes from
    /// the request.
    fn immediate_scatter_varcount_into<'a, Sc: Scope<'a>, R: BufferMut + ?Sized>(
        &self,
        scope: Sc,
        recv: &'a mut R,
    ) -> Result<Request<'a, Sc>, Error>;

    /// Starts [`scatter_varcount_into_root`](VarcountRoot::scatter_varcount_into_root) non-blocking; the request
    /// borrows the buffers (and the operation) until it completes.
    ///
    /// # Errors
    /// As the blocking form's; the collective's own error comes from
    /// the request.
    fn immediate_scatter_varcount_into_root<'a, Sc: Scope<'a>, R>(
        &self,
        scope: Sc,
        send: &'a Partition<'_, R::Item>,
        recv: &'a mut R,
    ) -> Result<Request<'a, Sc>, Error>
    where
        R: BufferMut + ?Sized;
}

impl ImmediateVarcountRoot for Process<'_> {
    fn immediate_gather_varcount_into<'a, Sc: Scope<'a>, S: Buffer + ?Sized>(
        &self,
        scope: Sc,
        send: &'a S,
    ) -> Result<Request<'a, Sc>, Error> {
        gather_varcount_into(self, send, Immediate(scope))
    }

    fn immediate_gather_varcount_into_root<'a, Sc: Scope<'a>, S>(
        &self,
        scope: Sc,
        send: &'a S,
        recv: &'a mut PartitionMut<'_, S::Item>,
    ) -> Result<Request<'a, Sc>, Error>
    where
        S: Buffer + ?Sized,
    {
        gather_varcount_into_root(self, send, recv, Immediate(scope))
    }

    fn immediate_scatter_varcount_into<'a, Sc: Scope<'a>, R: BufferMut + ?Sized>(
        &self,
        scope: Sc,
        recv: &'a mut R,
    ) -> Result<Request<'a, Sc>, Error> {
        scatter_varcount_into(self, recv, Immediate(scope))
    }

    fn immediate_scatter_varcount_into_root<'a, Sc: Scope<'a>, R>(
        &self,
        scope: Sc,
        send: &'a Partition<'_, R::Item>,
        recv: &'a mut R,
    ) -> Result<Request<'a, Sc>, Error>
    where
        R: BufferMut + ?Sized,
    {
        scatter_varcount_into_root(self, send, recv, Immediate(scope))
    }
}
