//! MPI's predefined reduction operations (MPI 3.1 §5.9.2) over the
//! predefined element types: `MPI_MAX` … `MPI_MAXLOC` on byte buffers.
//!
//! The collective components (reduce, allreduce, reduce_scatter, scan,
//! exscan) combine buffers with [`reduce_local`] (`inout = input op inout`,
//! the meaning of `MPI_Reduce_local`) or [`reduce_into`] (`out = a op b`,
//! which saves a copy when the result goes to a third buffer). The MPI
//! layer's `MPI_Reduce_local` is a thin wrapper over [`reduce_local`].
//! This is pure code: no process state, no allocation.
//!
//! User-defined operations (`MPI_Op_create`) are not here: the MPI layer
//! calls the user's function itself. [`Op`] is only the predefined set.
//!
//! # Buffers
//!
//! Buffers are byte slices holding `count` elements of an [`ElementType`]
//! in native byte order, `count × ty.size()` bytes, at any alignment.
//! When every buffer of a call is aligned for the element type, the loop
//! runs over typed slices and is vectorized; otherwise it runs over bytes
//! with unaligned loads and stores (same results, usually slower).
//!
//! # Semantics
//!
//! For each element `i`, [`reduce_local`] computes
//! `inout[i] = input[i] op inout[i]`: **the input is the left operand**.
//! Every predefined operation is commutative, but the order decides which
//! operand wins a NaN comparison and the MINLOC/MAXLOC ties below (and it
//! is the order MPI prescribes for user operations, so collectives that
//! rely on it keep it). In [`reduce_into`], `a` is the left operand and `b`
//! the right one: `out[i] = a[i] op b[i]`.
//!
//! - **`MPI_SUM`, `MPI_PROD`**: integers wrap on overflow (two's
//!   complement, modulo 2^bits); floats follow IEEE 754 (round to nearest).
//! - **`MPI_MAX`, `MPI_MIN`**: `if input > inout { input } else { inout }`
//!   (and `<` for min). For floats this means that when the values do not
//!   compare — either is NaN — the result is `inout`: a NaN in `inout`
//!   stays, a NaN in `input` is dropped. `-0.0` and `+0.0` compare equal,
//!   so `inout`'s zero stays.
//! - **`MPI_LAND`, `MPI_LOR`, `MPI_LXOR`**: a nonzero element is true; the
//!   result is 1 or 0 in the element type. `MPI_C_BOOL` takes any nonzero
//!   byte as true and writes 0 or 1. (Floats take no logical operations.)
//! - **`MPI_BAND`, `MPI_BOR`, `MPI_BXOR`**: bitwise, on integers and
//!   `MPI_BYTE`.
//! - **`MPI_MINLOC`, `MPI_MAXLOC`** combine `(u, i)` from the input with
//!   `(v, j)` from inout. MINLOC yields `(u, i)` if `u < v`, `(v, j)` if
//!   `v < u`, and otherwise (a tie) `(v, min(i, j))`; MAXLOC likewise with
//!   `>`. Values that do not compare (a NaN in a float pair) count as a
//!   tie. The padding bytes of the pair types are never read or written:
//!   they keep whatever the destination buffer held.
//!
//! Which operation applies to which type is [`Op::applies_to`]; a call
//! with another pair fails with [`ReduceError::NotDefined`] and writes
//! nothing.

mod elem;
mod error;
mod kernels;
mod op;
mod types;

#[cfg(test)]
mod tests;

pub use error::ReduceError;
pub use op::Op;
pub use types::ElementType;

use kernels::{kernel_of, Bufs, Kernel};

/// `inout[i] = input[i] op inout[i]` for every element, as
/// `MPI_Reduce_local` (the input is the left operand; see the
/// [crate documentation](crate) for each operation's result).
///
/// Both buffers hold elements of `ty` in native byte order, at any
/// alignment.
///
/// ```
/// use oxmpi_reduce::{reduce_local, ElementType, Op};
///
/// let input: Vec<u8> = [1.5f64, -2.0].iter().flat_map(|v| v.to_ne_bytes()).collect();
/// let mut inout: Vec<u8> = [2.0f64, 8.0].iter().flat_map(|v| v.to_ne_bytes()).collect();
/// reduce_local(Op::Sum, ElementType::Float64, &input, &mut inout)?;
/// let sums: Vec<f64> = inout
///     .chunks_exact(8)
///     .map(|b| f64::from_ne_bytes(b.try_into().unwrap()))
///     .collect();
/// assert_eq!(sums, [3.5, 6.0]);
///
/// let err = reduce_local(Op::Sum, ElementType::Byte, &[1], &mut [2]).unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "MPI_SUM is not defined for MPI_BYTE; MPI_BYTE takes only MPI_BAND, MPI_BOR and MPI_BXOR"
/// );
/// # Ok::<(), oxmpi_reduce::ReduceError>(())
/// ```
///
/// # Errors
///
/// Writes nothing and returns
/// - [`ReduceError::NotDefined`] when MPI does not define `op` on `ty`
///   ([`Op::applies_to`] is `false`);
/// - [`ReduceError::LengthMismatch`] when the buffers differ in length;
/// - [`ReduceError::PartialElement`] when their length is not a multiple
///   of `ty.size()`.
pub fn reduce_local(
    op: Op,
    ty: ElementType,
    input: &[u8],
    inout: &mut [u8],
) -> Result<(), ReduceError> {
    Reducer::new(op, ty)?.reduce_local(input, inout)
}

/// `out[i] = a[i] op b[i]` for every element (`a` is the left operand,
/// like the input of [`reduce_local`]; `b` plays inout's part, including
/// for MINLOC/MAXLOC ties and NaN). Padding bytes of pair types in `out`
/// are left as they were.
///
/// All three buffers hold elements of `ty` in native byte order, at any
/// alignment.
///
/// # Errors
///
/// Writes nothing and returns
/// - [`ReduceError::NotDefined`] when MPI does not define `op` on `ty`
///   ([`Op::applies_to`] is `false`);
/// - [`ReduceError::LengthMismatch`] when the buffers differ in length;
/// - [`ReduceError::PartialElement`] when their length is not a multiple
///   of `ty.size()`.
pub fn reduce_into(
    op: Op,
    ty: ElementType,
    a: &[u8],
    b: &[u8],
    out: &mut [u8],
) -> Result<(), ReduceError> {
    Reducer::new(op, ty)?.reduce_into(a, b, out)
}

/// A predefined operation on an element type, its loop looked up once:
/// for callers that combine many buffers with the same pair (a fold over
/// the members of a collective). [`reduce_local`] and [`reduce_into`]
/// are one-call shorthands for [`Reducer::reduce_local`] and
/// [`Reducer::reduce_into`].
///
/// ```
/// use oxmpi_reduce::{ElementType, Op, Reducer};
///
/// let max = Reducer::new(Op::Max, ElementType::Int32)?;
/// let mut acc = 3i32.to_ne_bytes();
/// for x in [7i32, -1, 5] {
///     max.reduce_local(&x.to_ne_bytes(), &mut acc)?;
/// }
/// assert_eq!(i32::from_ne_bytes(acc), 7);
/// # Ok::<(), oxmpi_reduce::ReduceError>(())
/// ```
#[derive(Clone, Copy)]
pub struct Reducer {
    ty: ElementType,
    kernel: Kernel,
}

impl Reducer {
    /// The reducer of `op` on `ty`.
    ///
    /// # Errors
    ///
    /// [`ReduceError::NotDefined`] when MPI does not define `op` on `ty`
    /// ([`Op::applies_to`] is `false`).
    #[inline]
    pub fn new(op: Op, ty: ElementType) -> Result<Reducer, ReduceError> {
        let kernel = kernel_of(op, ty).ok_or(ReduceError::NotDefined { op, ty })?;
        Ok(Reducer { ty, kernel })
    }

    /// The element type.
    pub fn element_type(&self) -> ElementType {
        self.ty
    }

    /// `inout[i] = input[i] op inout[i]`, as [`reduce_local`].
    ///
    /// # Errors
    ///
    /// Writes nothing and returns [`ReduceError::LengthMismatch`] or
    /// [`ReduceError::PartialElement`], as [`reduce_local`].
    #[inline]
    pub fn reduce_local(&self, input: &[u8], inout: &mut [u8]) -> Result<(), ReduceError> {
        self.check([("input", input.len()), ("inout", inout.len())])?;
        (self.kernel)(Bufs::Local { input, inout });
        Ok(())
    }

    /// `out[i] = a[i] op b[i]`, as [`reduce_into`].
    ///
    /// # Errors
    ///
    /// Writes nothing and returns [`ReduceError::LengthMismatch`] or
    /// [`ReduceError::PartialElement`], as [`reduce_into`].
    #[inline]
    pub fn reduce_into(&self, a: &[u8], b: &[u8], out: &mut [u8]) -> Result<(), ReduceError> {
        self.check([("a", a.len()), ("b", b.len()), ("out", out.len())])?;
        (self.kernel)(Bufs::Into { a, b, out });
        Ok(())
    }

    /// Whether the buffers' lengths (role, bytes) are consistent: all
    /// equal, and a whole number of elements.
    #[inline]
    fn check<const N: usize>(&self, lens: [(&'static str, usize); N]) -> Result<(), ReduceError> {
        let (first, first_len) = lens[0];
        for &(second, second_len) in &lens[1..] {
            if second_len != first_len {
                return Err(ReduceError::LengthMismatch {
                    first,
                    first_len,
                    second,
                    second_len,
                });
            }
        }
        // Every element size is a power of two (`ElementType::size`), so
        // the remainder is a mask, not a division.
        let ty = self.ty;
        debug_assert!(ty.size().is_power_of_two());
        if first_len & (ty.size() - 1) != 0 {
            return Err(ReduceError::PartialElement { ty, len: first_len });
        }
        Ok(())
    }
}
