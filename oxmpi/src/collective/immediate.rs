//! Non-blocking collectives in rsmpi's shape: `immediate_` forms of
//! [`CommunicatorCollectives`](super::CommunicatorCollectives) and
//! [`Root`](super::Root) that start the collective and return a
//! [`Request`] of a scope, as the immediate point-to-point calls do.
//!
//! The request borrows the buffers (and the reduction operation) until it
//! completes; the progress engine advances the collective in every MPI
//! call (a wait or test of any request, another collective, a
//! point-to-point call), so several may be in flight at once, started in
//! the same order at every member.
//!
//! ```no_run
//! use oxmpi::traits::*;
//! use oxmpi::collective::SystemOperation;
//!
//! let universe = oxmpi::initialize().unwrap();
//! let world = universe.world();
//! let sum = SystemOperation::sum();
//! let (x, mut total) = (world.rank() as i64, 0i64);
//! oxmpi::request::scope(|scope| {
//!     let req = world.immediate_all_reduce_into(scope, &x, &mut total, &sum).unwrap();
//!     // ... other work ...
//!     req.wait().unwrap();
//! });
//! ```

use super::calls::{self, Immediate};
use super::Operation;
use crate::datatype::{Buffer, BufferMut};
use crate::error::Error;
use crate::point_to_point::Process;
use crate::request::{Request, Scope};
use crate::topology::{Communicator, SimpleCommunicator};

/// The `immediate_` forms of the collectives every member calls alike.
pub trait ImmediateCollectives: Communicator {
    /// Starts a barrier (`MPI_Ibarrier`): the request completes once every member has started it.
    ///
    /// # Errors
    /// As the blocking form's; the collective's own error comes from
    /// the request.
    fn immediate_barrier<'a, Sc: Scope<'a>>(&self, scope: Sc) -> Result<Request<'a, Sc>, Error>;

    /// Starts [`all_gather_into`](super::CommunicatorCollectives::all_gather_into) (`MPI_Iallgather`).
    ///
    /// # Errors
    /// As the blocking form's; the collective's own error comes from
    /// the request.
    fn immediate_all_gather_into<'a, Sc: Scope<'a>, S, R>(
        &self,
        scope: Sc,
        send: &'a S,
        recv: &'a mut R,
    ) -> Result<Request<'a, Sc>, Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized;

    /// Starts [`all_to_all_into`](super::CommunicatorCollectives::all_to_all_into) (`MPI_Ialltoall`).
    ///
    /// # Errors
    /// As the blocking form's; the collective's own error comes from
    /// the request.
    fn immediate_all_to_all_into<'a, Sc: Scope<'a>, S, R>(
        &self,
        scope: Sc,
        send: &'a S,
        recv: &'a mut R,
    ) -> Result<Request<'a, Sc>, Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized;

    /// Starts [`all_reduce_into`](super::CommunicatorCollectives::all_reduce_into) (`MPI_Iallreduce`).
    ///
    /// # Errors
    /// As the blocking form's; the collective's own error comes from
    /// the request.
    fn immediate_all_reduce_into<'a, Sc: Scope<'a>, S, R, O>(
        &self,
        scope: Sc,
        send: &'a S,
        recv: &'a mut R,
        op: &'a O,
    ) -> Result<Request<'a, Sc>, Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
        O: Operation<S::Item>;

    /// Starts [`all_reduce_in_place`](super::CommunicatorCollectives::all_reduce_in_place) (`MPI_Iallreduce` with `MPI_IN_PLACE`).
    ///
    /// # Errors
    /// As the blocking form's; the collective's own error comes from
    /// the request.
    fn immediate_all_reduce_in_place<'a, Sc: Scope<'a>, B, O>(
        &self,
        scope: Sc,
        buf: &'a mut B,
        op: &'a O,
    ) -> Result<Request<'a, Sc>, Error>
    where
        B: BufferMut + ?Sized,
        O: Operation<B::Item>;

    /// Starts [`reduce_scatter_block_into`](super::CommunicatorCollectives::reduce_scatter_block_into) (`MPI_Ireduce_scatter_block`).
    ///
    /// # Errors
    /// As the blocking form's; the collective's own error comes from
    /// the request.
    fn immediate_reduce_scatter_block_into<'a, Sc: Scope<'a>, S, R, O>(
        &self,
        scope: Sc,
        send: &'a S,
        recv: &'a mut R,
        op: &'a O,
    ) -> Result<Request<'a, Sc>, Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
        O: Operation<S::Item>;

    /// Starts [`scan_into`](super::CommunicatorCollectives::scan_into) (`MPI_Iscan`).
    ///
    /// # Errors
    /// As the blocking form's; the collective's own error comes from
    /// the request.
    fn immediate_scan_into<'a, Sc: Scope<'a>, S, R, O>(
        &self,
        scope: Sc,
        send: &'a S,
        recv: &'a mut R,
        op: &'a O,
    ) -> Result<Request<'a, Sc>, Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
        O: Operation<S::Item>;

    /// Starts [`exclusive_scan_into`](super::CommunicatorCollectives::exclusive_scan_into) (`MPI_Iexscan`).
    ///
    /// # Errors
    /// As the blocking form's; the collective's own error comes from
    /// the request.
    fn immediate_exclusive_scan_into<'a, Sc: Scope<'a>, S, R, O>(
        &self,
        scope: Sc,
        send: &'a S,
        recv: &'a mut R,
        op: &'a O,
    ) -> Result<Request<'a, Sc>, Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
        O: Operation<S::Item>;
}

impl ImmediateCollectives for SimpleCommunicator {
    fn immediate_barrier<'a, Sc: Scope<'a>>(&self, scope: Sc) -> Result<Request<'a, Sc>, Error> {
        calls::barrier(self, Immediate(scope))
    }

    fn immediate_all_gather_into<'a, Sc: Scope<'a>, S, R>(
        &self,
        scope: Sc,
        send: &'a S,
        recv: &'a mut R,
    ) -> Result<Request<'a, Sc>, Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
    {
        calls::all_gather_into(self, send, recv, Immediate(scope))
    }

    fn immediate_all_to_all_into<'a, Sc: Scope<'a>, S, R>(
        &self,
        scope: Sc,
        send: &'a S,
        recv: &'a mut R,
    ) -> Result<Request<'a, Sc>, Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
    {
        calls::all_to_all_into(self, send, recv, Immediate(scope))
    }

    fn immediate_all_reduce_into<'a, Sc: Scope<'a>, S, R, O>(
        &self,
        scope: Sc,
        send: &'a S,
        recv: &'a mut R,
        op: &'a O,
    ) -> Result<Request<'a, Sc>, Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
        O: Operation<S::Item>,
    {
        calls::all_reduce_into(self, send, recv, op, Immediate(scope))
    }

    fn immediate_all_reduce_in_place<'a, Sc: Scope<'a>, B, O>(
        &self,
        scope: Sc,
        buf: &'a mut B,
        op: &'a O,
    ) -> Result<Request<'a, Sc>, Error>
    where
        B: BufferMut + ?Sized,
        O: Operation<B::Item>,
    {
        calls::all_reduce_in_place(self, buf, op, Immediate(scope))
    }

    fn immediate_reduce_scatter_block_into<'a, Sc: Scope<'a>, S, R, O>(
        &self,
        scope: Sc,
        send: &'a S,
        recv: &'a mut R,
        op: &'a O,
    ) -> Result<Request<'a, Sc>, Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
        O: Operation<S::Item>,
    {
        calls::reduce_scatter_block_into(self, send, recv, op, Immediate(scope))
    }

    fn immediate_scan_into<'a, Sc: Scope<'a>, S, R, O>(
        &self,
        scope: Sc,
        send: &'a S,
        recv: &'a mut R,
        op: &'a O,
    ) -> Result<Request<'a, Sc>, Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
        O: Operation<S::Item>,
    {
        calls::scan_into(self, send, recv, op, Immediate(scope))
    }

    fn immediate_exclusive_scan_into<'a, Sc: Scope<'a>, S, R, O>(
        &self,
        scope: Sc,
        send: &'a S,
        recv: &'a mut R,
        op: &'a O,
    ) -> Result<Request<'a, Sc>, Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
        O: Operation<S::Item>,
    {
        calls::exclusive_scan_into(self, send, recv, op, Immediate(scope))
    }
}

/// The `immediate_` forms of the collectives with a root (called on the
/// root's [`Process`]).
pub trait ImmediateRoot {
    /// Starts [`broadcast_into`](super::Root::broadcast_into) (`MPI_Ibcast`).
    ///
    /// # Errors
    /// As the blocking form's; the collective's own error comes from
    /// the request.
    fn immediate_broadcast_into<'a, Sc: Scope<'a>, B: BufferMut + ?Sized>(
        &self,
        scope: Sc,
        buf: &'a mut B,
    ) -> Result<Request<'a, Sc>, Error>;

    /// Starts [`gather_into`](super::Root::gather_into) (`MPI_Igather`, not at the root).
    ///
    /// # Errors
    /// As the blocking form's; the collective's own error comes from
    /// the request.
    fn immediate_gather_into<'a, Sc: Scope<'a>, S: Buffer + ?Sized>(
        &self,
        scope: Sc,
        send: &'a S,
    ) -> Result<Request<'a, Sc>, Error>;

    /// Starts [`gather_into_root`](super::Root::gather_into_root) (`MPI_Igather` at the root).
    ///
    /// # Errors
    /// As the blocking form's; the collective's own error comes from
    /// the request.
    fn immediate_gather_into_root<'a, Sc: Scope<'a>, S, R>(
        &self,
        scope: Sc,
        send: &'a S,
        recv: &'a mut R,
    ) -> Result<Request<'a, Sc>, Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized;

    /// Starts [`scatter_into`](super::Root::scatter_into) (`MPI_Iscatter`, not at the root).
    ///
    /// # Errors
    /// As the blocking form's; the collective's own error comes from
    /// the request.
    fn immediate_scatter_into<'a, Sc: Scope<'a>, R: BufferMut + ?Sized>(
        &self,
        scope: Sc,
        recv: &'a mut R,
    ) -> Result<Request<'a, Sc>, Error>;

    /// Starts [`scatter_into_root`](super::Root::scatter_into_root) (`MPI_Iscatter` at the root).
    ///
    /// # Errors
    /// As the blocking form's; the collective's own error comes from
    /// the request.
    fn immediate_scatter_into_root<'a, Sc: Scope<'a>, S, R>(
        &self,
        scope: Sc,
        send: &'a S,
        recv: &'a mut R,
    ) -> Result<Request<'a, Sc>, Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized;

    /// Starts [`reduce_into`](super::Root::reduce_into) (`MPI_Ireduce`, not at the root).
    ///
    /// # Errors
    /// As the blocking form's; the collective's own error comes from
    /// the request.
    fn immediate_reduce_into<'a, Sc: Scope<'a>, S, O>(
        &self,
        scope: Sc,
        send: &'a S,
        op: &'a O,
    ) -> Result<Request<'a, Sc>, Error>
    where
        S: Buffer + ?Sized,
        O: Operation<S::Item>;

    /// Starts [`reduce_into_root`](super::Root::reduce_into_root) (`MPI_Ireduce` at the root).
    ///
    /// # Errors
    /// As the blocking form's; the collective's own error comes from
    /// the request.
    fn immediate_reduce_into_root<'a, Sc: Scope<'a>, S, R, O>(
        &self,
        scope: Sc,
        send: &'a S,
        recv: &'a mut R,
        op: &'a O,
    ) -> Result<Request<'a, Sc>, Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
        O: Operation<S::Item>;
}

impl ImmediateRoot for Process<'_> {
    fn immediate_broadcast_into<'a, Sc: Scope<'a>, B: BufferMut + ?Sized>(
        &self,
        scope: Sc,
        buf: &'a mut B,
    ) -> Result<Request<'a, Sc>, Error> {
        calls::broadcast_into(self, buf, Immediate(scope))
    }

    fn immediate_gather_into<'a, Sc: Scope<'a>, S: Buffer + ?Sized>(
        &self,
        scope: Sc,
        send: &'a S,
    ) -> Result<Request<'a, Sc>, Error> {
        calls::gather_into(self, send, Immediate(scope))
    }

    fn immediate_gather_into_root<'a, Sc: Scope<'a>, S, R>(
        &self,
        scope: Sc,
        send: &'a S,
        recv: &'a mut R,
    ) -> Result<Request<'a, Sc>, Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
    {
        calls::gather_into_root(self, send, recv, Immediate(scope))
    }

    fn immediate_scatter_into<'a, Sc: Scope<'a>, R: BufferMut + ?Sized>(
        &self,
        scope: Sc,
        recv: &'a mut R,
    ) -> Result<Request<'a, Sc>, Error> {
        calls::scatter_into(self, recv, Immediate(scope))
    }

    fn immediate_scatter_into_root<'a, Sc: Scope<'a>, S, R>(
        &self,
        scope: Sc,
        send: &'a S,
        recv: &'a mut R,
    ) -> Result<Request<'a, Sc>, Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
    {
        calls::scatter_into_root(self, send, recv, Immediate(scope))
    }

    fn immediate_reduce_into<'a, Sc: Scope<'a>, S, O>(
        &self,
        scope: Sc,
        send: &'a S,
        op: &'a O,
    ) -> Result<Request<'a, Sc>, Error>
    where
        S: Buffer + ?Sized,
        O: Operation<S::Item>,
    {
        calls::reduce_into(self, send, op, Immediate(scope))
    }

    fn immediate_reduce_into_root<'a, Sc: Scope<'a>, S, R, O>(
        &self,
        scope: Sc,
        send: &'a S,
        recv: &'a mut R,
        op: &'a O,
    ) -> Result<Request<'a, Sc>, Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
        O: Operation<S::Item>,
    {
        calls::reduce_into_root(self, send, recv, op, Immediate(scope))
    }
}
