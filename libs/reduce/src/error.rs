//! Why a reduction was refused.

use crate::op::OpsFor;
use crate::{ElementType, Op};

/// Why [`reduce_local`](crate::reduce_local) or
/// [`reduce_into`](crate::reduce_into) refused to run. A refused call
/// writes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ReduceError {
    /// MPI does not define the operation on the element type (see
    /// [`Op::applies_to`]). The MPI layer reports this as `MPI_ERR_OP`.
    #[error("{op} is not defined for {ty}; {ty} takes only {}", OpsFor(*.ty))]
    NotDefined {
        /// The operation asked for.
        op: Op,
        /// The element type it was asked for.
        ty: ElementType,
    },
    /// Two buffers differ in length.
    #[error(
        "the {first} buffer has {first_len} bytes but the {second} buffer has {second_len}; \
         the buffers of a reduction must have the same length (count × element size)"
    )]
    LengthMismatch {
        /// The role of the first buffer: `"input"`, `"a"` or `"b"`.
        first: &'static str,
        /// Its length in bytes.
        first_len: usize,
        /// The role of the second buffer: `"inout"`, `"b"` or `"out"`.
        second: &'static str,
        /// Its length in bytes.
        second_len: usize,
    },
    /// The buffers' length is not a whole number of elements.
    #[error(
        "{len} bytes is not a whole number of {ty} elements ({} bytes each); \
         pass a multiple of {} bytes (count × element size)",
        .ty.size(),
        .ty.size()
    )]
    PartialElement {
        /// The element type.
        ty: ElementType,
        /// The buffers' length in bytes.
        len: usize,
    },
}
