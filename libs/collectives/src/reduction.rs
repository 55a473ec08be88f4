//! The reduction operation a reducing collective applies: a predefined
//! `(op, type)` pair or a user-defined function.

use std::fmt;

use oxmpi_reduce::{reduce_local, ElementType, Op};

use crate::error::{invalid, CollError};

/// A user-defined reduction function: `apply(input, inout)` sets
/// `inout = input op inout`, element by element, over buffers of the same
/// length (a whole number of elements). Its error aborts the collective on
/// this rank.
pub type UserFn<'a> = dyn FnMut(&[u8], &mut [u8]) -> Result<(), CollError> + 'a;

/// The operation of a reducing collective.
///
/// # Order of operands
///
/// MPI defines the result of a reduction over ranks `0..n` as
/// `x0 op x1 op … op x(n-1)` (in rank order, grouped arbitrarily: the
/// operation must be associative). With the convention
/// `inout = input op inout`, a partial result `a` of lower ranks is
/// combined with a partial result `b` of the ranks just above by
/// `combine(a, b)`, leaving `a op b` in `b`. Algorithms that regroup ranks
/// out of order require [`is_commutative`](Reduction::is_commutative) and
/// fall back to an order-preserving algorithm otherwise.
pub enum Reduction<'a> {
    /// A predefined operation on a predefined element type
    /// ([`oxmpi_reduce::reduce_local`]).
    Predefined {
        /// The operation.
        op: Op,
        /// The element type.
        ty: ElementType,
    },
    /// A user-defined operation (`MPI_Op_create`), over elements of a
    /// fixed size.
    User {
        /// The size of one element in bytes (not 0).
        elem_size: usize,
        /// Whether the operation is commutative (`commute` of
        /// `MPI_Op_create`).
        commutative: bool,
        /// `apply(input, inout)`: `inout = input op inout` over buffers of
        /// the same length, a whole number of elements.
        apply: &'a mut UserFn<'a>,
    },
}

impl fmt::Debug for Reduction<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reduction::Predefined { op, ty } => f
                .debug_struct("Predefined")
                .field("op", op)
                .field("ty", ty)
                .finish(),
            Reduction::User {
                elem_size,
                commutative,
                ..
            } => f
                .debug_struct("User")
                .field("elem_size", elem_size)
                .field("commutative", commutative)
                .finish_non_exhaustive(),
        }
    }
}

impl Reduction<'_> {
    /// The size of one element in bytes.
    pub fn elem_size(&self) -> usize {
        match self {
            Reduction::Predefined { ty, .. } => ty.size(),
            Reduction::User { elem_size, .. } => *elem_size,
        }
    }

    /// Whether the operation may be applied in any order of ranks.
    pub fn is_commutative(&self) -> bool {
        match self {
            Reduction::Predefined { op, .. } => op.is_commutative(),
            Reduction::User { commutative, .. } => *commutative,
        }
    }

    /// `inout = input op inout`, element by element.
    ///
    /// # Errors
    ///
    /// [`CollError::InvalidArgument`] when the buffers differ in length or
    /// are not whole elements; [`CollError::Reduce`] when a predefined
    /// operation does not apply to its type; the user function's error.
    pub fn combine(&mut self, input: &[u8], inout: &mut [u8]) -> Result<(), CollError> {
        match self {
            Reduction::Predefined { op, ty } => Ok(reduce_local(*op, *ty, input, inout)?),
            Reduction::User {
                elem_size, apply, ..
            } => {
                if input.len() != inout.len()
                    || *elem_size == 0
                    || input.len().checked_rem(*elem_size) != Some(0)
                {
                    return invalid(format!(
                        "user reduction over {} and {} bytes with {}-byte elements",
                        input.len(),
                        inout.len(),
                        elem_size
                    ));
                }
                if input.is_empty() {
                    return Ok(());
                }
                apply(input, inout)
            }
        }
    }

    /// Checks, before any communication, that the operation can run: a
    /// predefined operation applies to its type, a user element size is
    /// not 0.
    ///
    /// # Errors
    ///
    /// [`CollError::Reduce`] or [`CollError::InvalidArgument`].
    pub fn validate(&self) -> Result<(), CollError> {
        match self {
            Reduction::Predefined { op, ty } if !op.applies_to(*ty) => {
                Err(oxmpi_reduce::ReduceError::NotDefined { op: *op, ty: *ty }.into())
            }
            Reduction::User { elem_size: 0, .. } => {
                invalid("a user reduction with 0-byte elements")
            }
            _ => Ok(()),
        }
    }

    /// `low = low op high` where `low` holds lower ranks than `high`;
    /// `high` is left with unspecified contents (it is used as scratch).
    pub(crate) fn fold_high_into_low(
        &mut self,
        low: &mut Vec<u8>,
        high: &mut Vec<u8>,
    ) -> Result<(), CollError> {
        self.combine(low, high)?;
        std::mem::swap(low, high);
        Ok(())
    }

    /// Checks the operation and returns the element count of a buffer of
    /// `len` bytes.
    pub(crate) fn count_of(&self, len: usize, what: &str) -> Result<usize, CollError> {
        self.validate()?;
        crate::buffers::whole_elements(len, self.elem_size(), what)
    }
}
