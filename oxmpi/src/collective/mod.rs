//! Collective operations, in rsmpi's shape: [`CommunicatorCollectives`]
//! for the operations every member calls alike, [`Root`] for those with a
//! root (called on the root's [`Process`]), and the reduction operations
//! [`SystemOperation`] and [`UserOperation`].
//!
//! Every member of the communicator makes the same call (the root the
//! `_root` form), with buffers of the same element type; counts follow
//! MPI: a gather's receive buffer at the root holds `size` times each
//! member's contribution, an all-to-all's send and receive buffers hold
//! `size` blocks of equal length, and so on. A buffer of the wrong length
//! is an error of class `Buffer` that says what length was expected.
//!
//! ```no_run
//! use oxmpi::traits::*;
//! use oxmpi::collective::SystemOperation;
//!
//! let universe = oxmpi::initialize().unwrap();
//! let world = universe.world();
//! let mut sum = 0i64;
//! world
//!     .all_reduce_into(&(world.rank() as i64), &mut sum, SystemOperation::sum())
//!     .unwrap();
//! let mut data = [0u8; 4];
//! world.process_at_rank(0).broadcast_into(&mut data[..]).unwrap();
//! ```

use crate::datatype::{Buffer, BufferMut, Equivalence};
use crate::error::Error;
use crate::point_to_point::Process;
use crate::topology::{Communicator, Rank, SimpleCommunicator};
use crate::ErrorClass;
use oxmpi_mpi_core::coll::{CollCall, CollKind, ElementCode, OpCode, UserOp};
use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::size_of;
use std::panic::{catch_unwind, AssertUnwindSafe};

mod calls;
mod immediate;
mod in_place;
mod varcount;

use calls::Blocking;

pub use immediate::{ImmediateCollectives, ImmediateRoot};
pub use in_place::{
    ImmediateInPlaceCollectives, ImmediateInPlaceRoot, InPlaceCollectives, InPlaceRoot,
};
pub use varcount::{
    ImmediateVarcountCollectives, ImmediateVarcountRoot, Partition, PartitionMut,
    VarcountCollectives, VarcountRoot,
};

/// A reduction operation for elements of type `T`: a [`SystemOperation`]
/// or a [`UserOperation`].
pub trait Operation<T: Equivalence>: Sync {
    /// The predefined operation, or [`OpCode::User`].
    #[doc(hidden)]
    fn code(&self) -> OpCode;

    /// The user operation to call (for [`OpCode::User`]); its context
    /// points into `self`, which outlives the call.
    #[doc(hidden)]
    fn user(&self) -> UserOp;
}

/// A predefined reduction operation (`MPI_SUM`, `MPI_MAX`, …).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SystemOperation(OpCode);

impl SystemOperation {
    /// `MPI_SUM`.
    pub fn sum() -> Self {
        SystemOperation(OpCode::Sum)
    }
    /// `MPI_PROD`.
    pub fn product() -> Self {
        SystemOperation(OpCode::Prod)
    }
    /// `MPI_MAX`.
    pub fn max() -> Self {
        SystemOperation(OpCode::Max)
    }
    /// `MPI_MIN`.
    pub fn min() -> Self {
        SystemOperation(OpCode::Min)
    }
    /// `MPI_LAND` (integers: non-zero is true; the result is 0 or 1).
    pub fn logical_and() -> Self {
        SystemOperation(OpCode::Land)
    }
    /// `MPI_LOR`.
    pub fn logical_or() -> Self {
        SystemOperation(OpCode::Lor)
    }
    /// `MPI_LXOR`.
    pub fn logical_xor() -> Self {
        SystemOperation(OpCode::Lxor)
    }
    /// `MPI_BAND` (integers).
    pub fn bitwise_and() -> Self {
        SystemOperation(OpCode::Band)
    }
    /// `MPI_BOR` (integers).
    pub fn bitwise_or() -> Self {
        SystemOperation(OpCode::Bor)
    }
    /// `MPI_BXOR` (integers).
    pub fn bitwise_xor() -> Self {
        SystemOperation(OpCode::Bxor)
    }
}

impl<T: Equivalence> Operation<T> for SystemOperation {
    fn code(&self) -> OpCode {
        self.0
    }

    fn user(&self) -> UserOp {
        UserOp::NONE
    }
}

/// A reduction operation given by a closure (`MPI_Op_create`):
/// `f(input, inout)` sets each element of `inout` to `input` op `inout`.
/// A non-commutative operation is applied in rank order (the result is
/// `x0 op x1 op … op xn-1`); a commutative one may be applied in any
/// order. A panic in the closure fails the collective. The closure may be
/// called from any thread that advances a non-blocking collective, so it
/// is `Fn + Sync`.
pub struct UserOperation<T, F> {
    f: F,
    commutative: bool,
    _elements: PhantomData<Elements<T>>,
}

/// What a [`UserOperation`]'s closure works on.
type Elements<T> = fn(&[T], &mut [T]);

impl<T: Equivalence, F: Fn(&[T], &mut [T]) + Sync> UserOperation<T, F> {
    /// A commutative operation.
    pub fn commutative(f: F) -> Self {
        UserOperation {
            f,
            commutative: true,
            _elements: PhantomData,
        }
    }

    /// An operation applied in rank order.
    pub fn non_commutative(f: F) -> Self {
        UserOperation {
            f,
            commutative: false,
            _elements: PhantomData,
        }
    }
}

/// Calls a [`UserOperation`]'s closure on `count` elements at `input` and
/// `inout` (copied to aligned storage when a buffer is not aligned for
/// `T`).
unsafe extern "C" fn call_user<T: Equivalence, F: Fn(&[T], &mut [T]) + Sync>(
    ctx: *mut c_void,
    input: *const u8,
    inout: *mut u8,
    count: usize,
) -> bool {
    // SAFETY: `ctx` is the `&F` of a `UserOperation` that `user()` stored,
    // alive for the whole collective (blocking: the call; non-blocking: the
    // request borrows the operation); `F: Sync`, so calls from any thread
    // through a shared reference are sound.
    let f = unsafe { &*ctx.cast::<F>() };
    let bytes = count * size_of::<T>();
    // SAFETY: the component passes `count` elements of `T`'s size at both
    // pointers (the coll interface contract); bytes are always readable
    // as `u8`.
    let (input, inout) = unsafe {
        (
            std::slice::from_raw_parts(input, bytes),
            std::slice::from_raw_parts_mut(inout, bytes),
        )
    };
    catch_unwind(AssertUnwindSafe(|| {
        let aligned = |b: &[u8]| b.as_ptr().align_offset(std::mem::align_of::<T>()) == 0;
        if aligned(input) && aligned(inout) {
            // SAFETY: aligned, `count` whole elements, and every bit
            // pattern is a valid `T` (Equivalence).
            let (a, b) = unsafe {
                (
                    std::slice::from_raw_parts(input.as_ptr().cast::<T>(), count),
                    std::slice::from_raw_parts_mut(inout.as_mut_ptr().cast::<T>(), count),
                )
            };
            f(a, b);
        } else {
            let mut a = vec![T::ZERO; count];
            let mut b = vec![T::ZERO; count];
            // Reductions take only types without padding (`reduction`).
            crate::datatype::contiguous_bytes_mut(&mut a).copy_from_slice(input);
            crate::datatype::contiguous_bytes_mut(&mut b).copy_from_slice(inout);
            f(&a, &mut b);
            inout.copy_from_slice(crate::datatype::contiguous_bytes(&b));
        }
    }))
    .is_ok()
}

impl<T: Equivalence, F: Fn(&[T], &mut [T]) + Sync> Operation<T> for UserOperation<T, F> {
    fn code(&self) -> OpCode {
        OpCode::User
    }

    fn user(&self) -> UserOp {
        UserOp {
            func: Some(call_user::<T, F>),
            ctx: (&self.f as *const F).cast_mut().cast(),
            elem_size: size_of::<T>(),
            commutative: self.commutative,
        }
    }
}

/// The error of a buffer of the wrong length.
pub(crate) fn length_error(what: &str, have: usize, want: usize, name: &str) -> Error {
    Error::new(
        ErrorClass::Buffer,
        format!("{what}: the buffer holds {have} {name} elements where {want} are needed"),
    )
}

/// `Ok` when a buffer of `have` elements has the `want` it needs, else
/// [`length_error`].
pub(crate) fn expect_len(what: &str, have: usize, want: usize, name: &str) -> Result<(), Error> {
    if have == want {
        Ok(())
    } else {
        Err(length_error(what, have, want, name))
    }
}

/// The collective operations every member calls alike (rsmpi's
/// `CommunicatorCollectives`).
pub trait CommunicatorCollectives: Communicator {
    /// Waits until every member has called it (`MPI_Barrier`).
    ///
    /// # Errors
    /// The collective failed (class `Other`, the component's sentence), or
    /// `Finalized`.
    fn barrier(&self) -> Result<(), Error>;

    /// Every member gets every member's `send`, in rank order, in `recv`
    /// (`MPI_Allgather`); `recv` holds `size` times `send`'s elements.
    ///
    /// # Errors
    /// `Buffer` for a receive buffer of the wrong length; as
    /// [`barrier`](Self::barrier).
    fn all_gather_into<S, R>(&self, send: &S, recv: &mut R) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized;

    /// Block `j` of `send` goes to member `j`, whose block `i` of `recv`
    /// it becomes (`MPI_Alltoall`); both hold `size` blocks of the same
    /// length.
    ///
    /// # Errors
    /// `Buffer` when the lengths are not `size` equal blocks; as
    /// [`barrier`](Self::barrier).
    fn all_to_all_into<S, R>(&self, send: &S, recv: &mut R) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized;

    /// `recv` gets the element-wise reduction of every member's `send`
    /// (`MPI_Allreduce`).
    ///
    /// # Errors
    /// `Buffer` when `recv` and `send` differ in length; the collective's
    /// error (an operation that does not apply to the type names both).
    fn all_reduce_into<S, R, O>(&self, send: &S, recv: &mut R, op: O) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
        O: Operation<S::Item>;

    /// [`all_reduce_into`](Self::all_reduce_into) with `buf` as both the
    /// contribution and the result (`MPI_IN_PLACE`).
    ///
    /// # Errors
    /// As [`all_reduce_into`](Self::all_reduce_into).
    fn all_reduce_in_place<B, O>(&self, buf: &mut B, op: O) -> Result<(), Error>
    where
        B: BufferMut + ?Sized,
        O: Operation<B::Item>;

    /// Reduces every member's `send` (`size` blocks of `recv`'s length)
    /// and member `i` gets block `i` of the result
    /// (`MPI_Reduce_scatter_block`).
    ///
    /// # Errors
    /// `Buffer` when `send` is not `size` blocks of `recv`'s length; as
    /// [`all_reduce_into`](Self::all_reduce_into).
    fn reduce_scatter_block_into<S, R, O>(
        &self,
        send: &S,
        recv: &mut R,
        op: O,
    ) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
        O: Operation<S::Item>;

    /// Member `i` gets the reduction of the `send`s of members `0..=i`
    /// (`MPI_Scan`).
    ///
    /// # Errors
    /// As [`all_reduce_into`](Self::all_reduce_into).
    fn scan_into<S, R, O>(&self, send: &S, recv: &mut R, op: O) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
        O: Operation<S::Item>;

    /// Member `i > 0` gets the reduction of the `send`s of members `0..i`
    /// (`MPI_Exscan`); member 0's `recv` is left as it was.
    ///
    /// # Errors
    /// As [`all_reduce_into`](Self::all_reduce_into).
    fn exclusive_scan_into<S, R, O>(&self, send: &S, recv: &mut R, op: O) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
        O: Operation<S::Item>;
}

/// The collective operations with a root, called on the root's
/// [`Process`] by every member (rsmpi's `Root`): the root calls the
/// `_root` form, the others the plain one.
pub trait Root {
    /// The root's rank.
    fn root_rank(&self) -> Rank;

    /// The root's `buf` is copied into every member's `buf`
    /// (`MPI_Bcast`); all have the same length.
    ///
    /// # Errors
    /// `Rank` for a root outside the communicator; the collective's error.
    fn broadcast_into<B: BufferMut + ?Sized>(&self, buf: &mut B) -> Result<(), Error>;

    /// Sends `send` to the root's gather (`MPI_Gather`, not at the root).
    ///
    /// # Errors
    /// As [`broadcast_into`](Self::broadcast_into).
    fn gather_into<S: Buffer + ?Sized>(&self, send: &S) -> Result<(), Error>;

    /// At the root: `recv` gets every member's `send` in rank order; it
    /// holds `size` times `send`'s elements.
    ///
    /// # Errors
    /// `Buffer` for a receive buffer of the wrong length; as
    /// [`broadcast_into`](Self::broadcast_into).
    fn gather_into_root<S, R>(&self, send: &S, recv: &mut R) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized;

    /// Receives this member's block of the root's scatter (`MPI_Scatter`,
    /// not at the root).
    ///
    /// # Errors
    /// As [`broadcast_into`](Self::broadcast_into).
    fn scatter_into<R: BufferMut + ?Sized>(&self, recv: &mut R) -> Result<(), Error>;

    /// At the root: block `i` of `send` (`size` blocks of `recv`'s length)
    /// goes to member `i`; the root's own block to `recv`.
    ///
    /// # Errors
    /// `Buffer` when `send` is not `size` blocks of `recv`'s length; as
    /// [`broadcast_into`](Self::broadcast_into).
    fn scatter_into_root<S, R>(&self, send: &S, recv: &mut R) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized;

    /// Contributes `send` to the root's reduction (`MPI_Reduce`, not at
    /// the root).
    ///
    /// # Errors
    /// As [`broadcast_into`](Self::broadcast_into).
    fn reduce_into<S, O>(&self, send: &S, op: O) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        O: Operation<S::Item>;

    /// At the root: `recv` gets the element-wise reduction of every
    /// member's `send`.
    ///
    /// # Errors
    /// `Buffer` when the lengths differ; as
    /// [`broadcast_into`](Self::broadcast_into).
    fn reduce_into_root<S, R, O>(&self, send: &S, recv: &mut R, op: O) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
        O: Operation<S::Item>;
}

impl SimpleCommunicator {
    /// Runs `call` on this communicator.
    ///
    /// # Safety
    /// The call's buffers are valid for what its fields say during the
    /// call.
    pub(crate) unsafe fn run(&self, call: &CollCall<'_>) -> Result<(), Error> {
        // SAFETY: the caller's promise.
        Ok(unsafe { self.runtime.collective(self.comm, call) }?)
    }

    pub(crate) fn members(&self) -> usize {
        self.size() as usize
    }
}

/// A reduction call over `count` elements of `T` with `op`.
///
/// # Errors
/// `Arg` for a derived type with padding (no reduction applies to it)
/// and for a predefined operation on a derived type (only a
/// [`UserOperation`] combines structs).
#[inline(always)]
pub(crate) fn reduction<'a, T: Equivalence, O: Operation<T>>(
    kind: CollKind,
    count: usize,
    op: &O,
) -> Result<CollCall<'a>, Error> {
    if T::DERIVED {
        check_derived_reduction::<T>(op.code())?;
    }
    let mut call = CollCall::new(kind);
    call.count = count;
    call.op = op.code();
    call.element = if call.op == OpCode::User {
        ElementCode::User
    } else {
        T::ELEMENT
    };
    call.user = op.user();
    Ok(call)
}

/// Refuses a reduction of the derived type `T` that cannot be done: any
/// for a type with padding (reductions combine the elements in place, as
/// their bytes), a predefined operation for any derived type.
#[cold]
fn check_derived_reduction<T: Equivalence>(code: OpCode) -> Result<(), Error> {
    if !T::CONTIGUOUS {
        return Err(Error::new(
            ErrorClass::Arg,
            format!(
                "{} has padding between or after its fields ({} data bytes in {}), and reductions combine elements as they lie in memory; reduce a struct without padding (reorder or widen its fields) or reduce its fields as separate arrays",
                T::NAME,
                T::PACKED_SIZE,
                size_of::<T>()
            ),
        ));
    }
    if code != OpCode::User {
        return Err(Error::new(
            ErrorClass::Arg,
            format!(
                "the predefined operation {code:?} does not apply to the derived type {}; combine structs with a UserOperation",
                T::NAME
            ),
        ));
    }
    Ok(())
}

impl CommunicatorCollectives for SimpleCommunicator {
    fn barrier(&self) -> Result<(), Error> {
        calls::barrier(self, Blocking)
    }
    fn all_gather_into<S, R>(&self, send: &S, recv: &mut R) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
    {
        calls::all_gather_into(self, send, recv, Blocking)
    }
    fn all_to_all_into<S, R>(&self, send: &S, recv: &mut R) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
    {
        calls::all_to_all_into(self, send, recv, Blocking)
    }
    fn all_reduce_into<S, R, O>(&self, send: &S, recv: &mut R, op: O) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
        O: Operation<S::Item>,
    {
        calls::all_reduce_into(self, send, recv, &op, Blocking)
    }
    fn all_reduce_in_place<B, O>(&self, buf: &mut B, op: O) -> Result<(), Error>
    where
        B: BufferMut + ?Sized,
        O: Operation<B::Item>,
    {
        calls::all_reduce_in_place(self, buf, &op, Blocking)
    }
    fn reduce_scatter_block_into<S, R, O>(&self, send: &S, recv: &mut R, op: O) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
        O: Operation<S::Item>,
    {
        calls::reduce_scatter_block_into(self, send, recv, &op, Blocking)
    }
    fn scan_into<S, R, O>(&self, send: &S, recv: &mut R, op: O) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
        O: Operation<S::Item>,
    {
        calls::scan_into(self, send, recv, &op, Blocking)
    }
    fn exclusive_scan_into<S, R, O>(&self, send: &S, recv: &mut R, op: O) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
        O: Operation<S::Item>,
    {
        calls::exclusive_scan_into(self, send, recv, &op, Blocking)
    }
}

impl Process<'_> {
    /// The root as a communicator rank, checked.
    pub(crate) fn root(&self) -> Result<u32, Error> {
        let size = self.comm.size();
        if self.rank() < 0 || self.rank() >= size {
            return Err(Error::new(
                ErrorClass::Rank,
                format!(
                    "root rank {} is not in {} (ranks 0 to {})",
                    self.rank(),
                    self.comm.name(),
                    size - 1
                ),
            ));
        }
        Ok(self.rank() as u32)
    }

    /// The root's rank, for a `_root` form of `what`: an error off the
    /// root.
    pub(crate) fn at_root(&self, what: &str) -> Result<u32, Error> {
        let root = self.root()?;
        if !self.is_self() {
            return Err(self.wrong_side(what, false));
        }
        Ok(root)
    }

    /// The root's rank, for the plain form of `what`: an error at the
    /// root.
    pub(crate) fn off_root(&self, what: &str) -> Result<u32, Error> {
        let root = self.root()?;
        if self.is_self() {
            return Err(self.wrong_side(what, true));
        }
        Ok(root)
    }

    /// The error of a `_root` form called by another member, or the plain
    /// form called by the root.
    fn wrong_side(&self, what: &str, at_root: bool) -> Error {
        let text = if at_root {
            format!(
                "{what} was called at the root (rank {}); the root calls {what}_root",
                self.rank()
            )
        } else {
            format!(
                "{what}_root was called at rank {}, which is not the root (rank {}); the other members call {what}",
                self.comm.rank(),
                self.rank()
            )
        };
        Error::new(ErrorClass::Root, text)
    }
}

impl Root for Process<'_> {
    fn root_rank(&self) -> Rank {
        self.rank()
    }
    fn broadcast_into<B: BufferMut + ?Sized>(&self, buf: &mut B) -> Result<(), Error> {
        calls::broadcast_into(self, buf, Blocking)
    }
    fn gather_into<S: Buffer + ?Sized>(&self, send: &S) -> Result<(), Error> {
        calls::gather_into(self, send, Blocking)
    }
    fn gather_into_root<S, R>(&self, send: &S, recv: &mut R) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
    {
        calls::gather_into_root(self, send, recv, Blocking)
    }
    fn scatter_into<R: BufferMut + ?Sized>(&self, recv: &mut R) -> Result<(), Error> {
        calls::scatter_into(self, recv, Blocking)
    }
    fn scatter_into_root<S, R>(&self, send: &S, recv: &mut R) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
    {
        calls::scatter_into_root(self, send, recv, Blocking)
    }
    fn reduce_into<S, O>(&self, send: &S, op: O) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        O: Operation<S::Item>,
    {
        calls::reduce_into(self, send, &op, Blocking)
    }
    fn reduce_into_root<S, R, O>(&self, send: &S, recv: &mut R, op: O) -> Result<(), Error>
    where
        S: Buffer + ?Sized,
        R: BufferMut<Item = S::Item> + ?Sized,
        O: Operation<S::Item>,
    {
        calls::reduce_into_root(self, send, recv, &op, Blocking)
    }
}
