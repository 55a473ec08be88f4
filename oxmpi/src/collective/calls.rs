//! The collectives of [`CommunicatorCollectives`](super::CommunicatorCollectives)
//! and [`Root`](super::Root) written once over how a call is carried out
//! ([`Exec`]): to completion ([`Blocking`], the plain methods) or started
//! and completed through a [`Request`] ([`Immediate`], the `immediate_`
//! methods of [`super::ImmediateCollectives`] and [`super::ImmediateRoot`]).
//! Every function checks its buffers, builds the call and hands it to the
//! executor.

use super::{expect_len, length_error, reduction, Operation};
use crate::datatype::stage::{Incoming, Outgoing, Staging};
use crate::datatype::{Buffer, BufferMut, Equivalence};
use crate::error::Error;
use crate::point_to_point::Process;
use crate::request::{Kind, Request, Scope};
use crate::topology::SimpleCommunicator;
use oxmpi_mpi_core::coll::{CollCall, CollKind};

/// How a collective call is carried out; buffers borrowed for `'b`.
pub(crate) trait Exec<'b> {
    /// What the caller gets: nothing (done), or a request.
    type Out;

    /// Carries out `call` on `comm`, with `staging` (for element types
    /// with padding) kept until it completes and unpacked then.
    ///
    /// # Safety
    ///
    /// The call's buffers (and user operation) are valid for what its
    /// fields say for `'b`, and `'b` lasts until the call completes
    /// (returns, or its request completes); buffers inside `staging` stay
    /// valid as long as it lives.
    unsafe fn exec_staged(
        self,
        comm: &SimpleCommunicator,
        call: &CollCall<'_>,
        staging: Staging,
    ) -> Result<Self::Out, Error>;

    /// Carries out `call` on `comm`, nothing staged.
    ///
    /// # Safety
    ///
    /// As [`exec_staged`](Self::exec_staged).
    #[inline(always)]
    unsafe fn exec(self, comm: &SimpleCommunicator, call: &CollCall<'_>) -> Result<Self::Out, Error>
    where
        Self: Sized,
    {
        // SAFETY: the caller's promise.
        unsafe { self.exec_staged(comm, call, Staging::NONE) }
    }
}

/// Runs the call to completion.
pub(crate) struct Blocking;

impl Exec<'_> for Blocking {
    type Out = ();

    #[inline(always)]
    unsafe fn exec_staged(
        self,
        comm: &SimpleCommunicator,
        call: &CollCall<'_>,
        staging: Staging,
    ) -> Result<(), Error> {
        // SAFETY: the caller's promise, for the duration of the call.
        unsafe { comm.run(call) }?;
        // SAFETY: the call is over (MPI no longer writes the staging
        // bytes); the receive buffer is borrowed by the caller.
        unsafe { staging.finish_all() };
        Ok(())
    }
}

/// Starts the call; its request belongs to the scope.
pub(crate) struct Immediate<S>(pub(crate) S);

impl<'b, S: Scope<'b>> Exec<'b> for Immediate<S> {
    type Out = Request<'b, S>;

    #[inline(always)]
    unsafe fn exec_staged(
        self,
        comm: &SimpleCommunicator,
        call: &CollCall<'_>,
        staging: Staging,
    ) -> Result<Request<'b, S>, Error> {
        // SAFETY: the caller's promise: the buffers and operation are
        // borrowed for `'b`, which the request carries, so they outlive
        // the operation (a request's scope waits for it); the staging
        // bytes move into the request, which keeps them as long.
        let id = unsafe { comm.runtime.start_collective(comm.comm, call) }?;
        let kind = Kind::staged(Kind::Collective, staging);
        Ok(Request::new(comm.runtime, id, self.0, kind))
    }
}

/// The body of `barrier`, run by `exec`.
pub(crate) fn barrier<'b, E: Exec<'b>>(
    comm: &SimpleCommunicator,
    exec: E,
) -> Result<E::Out, Error> {
    // SAFETY: no buffers.
    unsafe { exec.exec(comm, &CollCall::new(CollKind::Barrier)) }
}

/// The body of `all_gather_into`, run by `exec`.
pub(crate) fn all_gather_into<'b, S, R, E: Exec<'b>>(
    comm: &SimpleCommunicator,
    send: &'b S,
    recv: &'b mut R,
    exec: E,
) -> Result<E::Out, Error>
where
    S: Buffer + ?Sized,
    R: BufferMut<Item = S::Item> + ?Sized,
{
    let (s, r) = (send.as_items(), recv.as_items_mut());
    let want = s.len() * comm.members();
    expect_len("all_gather_into", r.len(), want, S::Item::NAME)?;
    let mut call = CollCall::new(CollKind::Allgather);
    call.count = s.len() * S::Item::PACKED_SIZE;
    let (out, inc) = (Outgoing::of(s), Incoming::of(r));
    call.send = out.ptr;
    call.recv = inc.ptr;
    // SAFETY: `send` holds `count` bytes and `recv` `size` times as
    // many (packed or not), for the whole call.
    unsafe { exec.exec_staged(comm, &call, Staging::new(Some(out), Some(inc))) }
}

/// The body of `all_to_all_into`, run by `exec`.
pub(crate) fn all_to_all_into<'b, S, R, E: Exec<'b>>(
    comm: &SimpleCommunicator,
    send: &'b S,
    recv: &'b mut R,
    exec: E,
) -> Result<E::Out, Error>
where
    S: Buffer + ?Sized,
    R: BufferMut<Item = S::Item> + ?Sized,
{
    let (s, r) = (send.as_items(), recv.as_items_mut());
    let n = comm.members();
    if s.len() % n != 0 || r.len() != s.len() {
        let want = s.len().next_multiple_of(n);
        return Err(length_error(
            "all_to_all_into",
            r.len().min(s.len()),
            want,
            S::Item::NAME,
        ));
    }
    let mut call = CollCall::new(CollKind::Alltoall);
    call.count = s.len() / n * S::Item::PACKED_SIZE;
    let (out, inc) = (Outgoing::of(s), Incoming::of(r));
    call.send = out.ptr;
    call.recv = inc.ptr;
    // SAFETY: both buffers hold `size` blocks of `count` bytes.
    unsafe { exec.exec_staged(comm, &call, Staging::new(Some(out), Some(inc))) }
}

/// The body of `all_reduce_into`, run by `exec`.
pub(crate) fn all_reduce_into<'b, S, R, O, E: Exec<'b>>(
    comm: &SimpleCommunicator,
    send: &'b S,
    recv: &'b mut R,
    op: &'b O,
    exec: E,
) -> Result<E::Out, Error>
where
    S: Buffer + ?Sized,
    R: BufferMut<Item = S::Item> + ?Sized,
    O: Operation<S::Item>,
{
    let (s, r) = (send.as_items(), recv.as_items_mut());
    expect_len("all_reduce_into", r.len(), s.len(), S::Item::NAME)?;
    let mut call = reduction::<S::Item, O>(CollKind::Allreduce, s.len(), op)?;
    call.send = s.as_ptr().cast();
    call.recv = r.as_mut_ptr().cast();
    // SAFETY: both buffers hold `count` elements; `op` outlives the call.
    unsafe { exec.exec(comm, &call) }
}

/// The body of `all_reduce_in_place`, run by `exec`.
pub(crate) fn all_reduce_in_place<'b, B, O, E: Exec<'b>>(
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
    let mut call = reduction::<B::Item, O>(CollKind::Allreduce, b.len(), op)?;
    call.recv = b.as_mut_ptr().cast();
    // SAFETY: the buffer holds `count` elements; `op` outlives the call.
    unsafe { exec.exec(comm, &call) }
}

/// The body of `reduce_scatter_block_into`, run by `exec`.
pub(crate) fn reduce_scatter_block_into<'b, S, R, O, E: Exec<'b>>(
    comm: &SimpleCommunicator,
    send: &'b S,
    recv: &'b mut R,
    op: &'b O,
    exec: E,
) -> Result<E::Out, Error>
where
    S: Buffer + ?Sized,
    R: BufferMut<Item = S::Item> + ?Sized,
    O: Operation<S::Item>,
{
    let (s, r) = (send.as_items(), recv.as_items_mut());
    let want = r.len() * comm.members();
    expect_len("reduce_scatter_block_into", s.len(), want, S::Item::NAME)?;
    let mut call = reduction::<S::Item, O>(CollKind::ReduceScatterBlock, r.len(), op)?;
    call.send = s.as_ptr().cast();
    call.recv = r.as_mut_ptr().cast();
    // SAFETY: `send` holds `size` blocks of `count` elements, `recv`
    // one; `op` outlives the call.
    unsafe { exec.exec(comm, &call) }
}

/// The body of `scan_into`, run by `exec`.
pub(crate) fn scan_into<'b, S, R, O, E: Exec<'b>>(
    comm: &SimpleCommunicator,
    send: &'b S,
    recv: &'b mut R,
    op: &'b O,
    exec: E,
) -> Result<E::Out, Error>
where
    S: Buffer + ?Sized,
    R: BufferMut<Item = S::Item> + ?Sized,
    O: Operation<S::Item>,
{
    let (s, r) = (send.as_items(), recv.as_items_mut());
    expect_len("scan_into", r.len(), s.len(), S::Item::NAME)?;
    let mut call = reduction::<S::Item, O>(CollKind::Scan, s.len(), op)?;
    call.send = s.as_ptr().cast();
    call.recv = r.as_mut_ptr().cast();
    // SAFETY: as in `all_reduce_into`.
    unsafe { exec.exec(comm, &call) }
}

/// The body of `exclusive_scan_into`, run by `exec`.
pub(crate) fn exclusive_scan_into<'b, S, R, O, E: Exec<'b>>(
    comm: &SimpleCommunicator,
    send: &'b S,
    recv: &'b mut R,
    op: &'b O,
    exec: E,
) -> Result<E::Out, Error>
where
    S: Buffer + ?Sized,
    R: BufferMut<Item = S::Item> + ?Sized,
    O: Operation<S::Item>,
{
    let (s, r) = (send.as_items(), recv.as_items_mut());
    expect_len("exclusive_scan_into", r.len(), s.len(), S::Item::NAME)?;
    let mut call = reduction::<S::Item, O>(CollKind::Exscan, s.len(), op)?;
    call.send = s.as_ptr().cast();
    call.recv = r.as_mut_ptr().cast();
    // SAFETY: as in `all_reduce_into`.
    unsafe { exec.exec(comm, &call) }
}

/// The body of `broadcast_into`, run by `exec`.
pub(crate) fn broadcast_into<'b, B: BufferMut + ?Sized, E: Exec<'b>>(
    process: &Process<'_>,
    buf: &'b mut B,
    exec: E,
) -> Result<E::Out, Error> {
    let root = process.root()?;
    let b = buf.as_items_mut();
    let mut call = CollCall::new(CollKind::Bcast);
    call.count = b.len() * B::Item::PACKED_SIZE;
    let inc = Incoming::of(b);
    call.send = inc.ptr;
    call.recv = inc.ptr;
    call.root = root;
    // SAFETY: the buffer holds `count` bytes for the whole call.
    unsafe { exec.exec_staged(process.comm, &call, Staging::new(None, Some(inc))) }
}

/// The body of `gather_into`, run by `exec`.
pub(crate) fn gather_into<'b, S: Buffer + ?Sized, E: Exec<'b>>(
    process: &Process<'_>,
    send: &'b S,
    exec: E,
) -> Result<E::Out, Error> {
    let root = process.off_root("gather_into")?;
    let s = send.as_items();
    let mut call = CollCall::new(CollKind::Gather);
    call.count = s.len() * S::Item::PACKED_SIZE;
    let out = Outgoing::of(s);
    call.send = out.ptr;
    call.root = root;
    // SAFETY: `send` holds `count` bytes; no receive buffer off the
    // root.
    unsafe { exec.exec_staged(process.comm, &call, Staging::new(Some(out), None)) }
}

/// The body of `gather_into_root`, run by `exec`.
pub(crate) fn gather_into_root<'b, S, R, E: Exec<'b>>(
    process: &Process<'_>,
    send: &'b S,
    recv: &'b mut R,
    exec: E,
) -> Result<E::Out, Error>
where
    S: Buffer + ?Sized,
    R: BufferMut<Item = S::Item> + ?Sized,
{
    let root = process.at_root("gather_into")?;
    let (s, r) = (send.as_items(), recv.as_items_mut());
    let want = s.len() * process.comm.members();
    expect_len("gather_into_root", r.len(), want, S::Item::NAME)?;
    let mut call = CollCall::new(CollKind::Gather);
    call.count = s.len() * S::Item::PACKED_SIZE;
    let (out, inc) = (Outgoing::of(s), Incoming::of(r));
    call.send = out.ptr;
    call.recv = inc.ptr;
    call.root = root;
    // SAFETY: `send` holds `count` bytes, `recv` `size` times as many.
    unsafe { exec.exec_staged(process.comm, &call, Staging::new(Some(out), Some(inc))) }
}

/// The body of `scatter_into`, run by `exec`.
pub(crate) fn scatter_into<'b, R: BufferMut + ?Sized, E: Exec<'b>>(
    process: &Process<'_>,
    recv: &'b mut R,
    exec: E,
) -> Result<E::Out, Error> {
    let root = process.off_root("scatter_into")?;
    let r = recv.as_items_mut();
    let mut call = CollCall::new(CollKind::Scatter);
    call.count = r.len() * R::Item::PACKED_SIZE;
    let inc = Incoming::of(r);
    call.recv = inc.ptr;
    call.root = root;
    // SAFETY: `recv` holds `count` bytes; no send buffer off the root.
    unsafe { exec.exec_staged(process.comm, &call, Staging::new(None, Some(inc))) }
}

/// The body of `scatter_into_root`, run by `exec`.
pub(crate) fn scatter_into_root<'b, S, R, E: Exec<'b>>(
    process: &Process<'_>,
    send: &'b S,
    recv: &'b mut R,
    exec: E,
) -> Result<E::Out, Error>
where
    S: Buffer + ?Sized,
    R: BufferMut<Item = S::Item> + ?Sized,
{
    let root = process.at_root("scatter_into")?;
    let (s, r) = (send.as_items(), recv.as_items_mut());
    let want = r.len() * process.comm.members();
    expect_len("scatter_into_root", s.len(), want, S::Item::NAME)?;
    let mut call = CollCall::new(CollKind::Scatter);
    call.count = r.len() * S::Item::PACKED_SIZE;
    let (out, inc) = (Outgoing::of(s), Incoming::of(r));
    call.send = out.ptr;
    call.recv = inc.ptr;
    call.root = root;
    // SAFETY: `send` holds `size` blocks of `count` bytes, `recv` one.
    unsafe { exec.exec_staged(process.comm, &call, Staging::new(Some(out), Some(inc))) }
}

/// The body of `reduce_into`, run by `exec`.
pub(crate) fn reduce_into<'b, S, O, E: Exec<'b>>(
    process: &Process<'_>,
    send: &'b S,
    op: &'b O,
    exec: E,
) -> Result<E::Out, Error>
where
    S: Buffer + ?Sized,
    O: Operation<S::Item>,
{
    let root = process.off_root("reduce_into")?;
    let s = send.as_items();
    let mut call = reduction::<S::Item, O>(CollKind::Reduce, s.len(), op)?;
    call.send = s.as_ptr().cast();
    call.root = root;
    // SAFETY: `send` holds `count` elements; `op` outlives the call.
    unsafe { exec.exec(process.comm, &call) }
}

/// The body of `reduce_into_root`, run by `exec`.
pub(crate) fn reduce_into_root<'b, S, R, O, E: Exec<'b>>(
    process: &Process<'_>,
    send: &'b S,
    recv: &'b mut R,
    op: &'b O,
    exec: E,
) -> Result<E::Out, Error>
where
    S: Buffer + ?Sized,
    R: BufferMut<Item = S::Item> + ?Sized,
    O: Operation<S::Item>,
{
    let root = process.at_root("reduce_into")?;
    let (s, r) = (send.as_items(), recv.as_items_mut());
    expect_len("reduce_into_root", r.len(), s.len(), S::Item::NAME)?;
    let mut call = reduction::<S::Item, O>(CollKind::Reduce, s.len(), op)?;
    call.send = s.as_ptr().cast();
    call.recv = r.as_mut_ptr().cast();
    call.root = root;
    // SAFETY: both buffers hold `count` elements; `op` outlives the
    // call.
    unsafe { exec.exec(process.comm, &call) }
}
