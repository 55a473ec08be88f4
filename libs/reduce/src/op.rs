//! The predefined reduction operations and the types each one takes.

use std::fmt;

use crate::types::{Class, ElementType};

/// A predefined MPI reduction operation (MPI 3.1 §5.9.2).
///
/// See the [crate documentation](crate) for the exact result of each
/// operation (overflow, NaN, logical results, MINLOC/MAXLOC ties).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// `MPI_MAX`: the larger value.
    Max,
    /// `MPI_MIN`: the smaller value.
    Min,
    /// `MPI_SUM`: the sum (integers wrap).
    Sum,
    /// `MPI_PROD`: the product (integers wrap).
    Prod,
    /// `MPI_LAND`: logical and.
    Land,
    /// `MPI_LOR`: logical or.
    Lor,
    /// `MPI_LXOR`: logical exclusive or.
    Lxor,
    /// `MPI_BAND`: bitwise and.
    Band,
    /// `MPI_BOR`: bitwise or.
    Bor,
    /// `MPI_BXOR`: bitwise exclusive or.
    Bxor,
    /// `MPI_MINLOC`: the smaller value and its index.
    MinLoc,
    /// `MPI_MAXLOC`: the larger value and its index.
    MaxLoc,
}

impl Op {
    /// The operation's code: its index in [`Op::ALL`], which lists the
    /// operations in the order they are declared (the coll interface
    /// carries operations as these codes).
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The operation with code `code`, if any.
    pub fn from_code(code: u8) -> Option<Op> {
        Op::ALL.get(usize::from(code)).copied()
    }

    /// Every operation, in code order.
    pub const ALL: &'static [Op] = &[
        Op::Max,
        Op::Min,
        Op::Sum,
        Op::Prod,
        Op::Land,
        Op::Lor,
        Op::Lxor,
        Op::Band,
        Op::Bor,
        Op::Bxor,
        Op::MinLoc,
        Op::MaxLoc,
    ];

    /// The MPI name of the operation, e.g. `"MPI_SUM"`.
    pub const fn name(self) -> &'static str {
        match self {
            Op::Max => "MPI_MAX",
            Op::Min => "MPI_MIN",
            Op::Sum => "MPI_SUM",
            Op::Prod => "MPI_PROD",
            Op::Land => "MPI_LAND",
            Op::Lor => "MPI_LOR",
            Op::Lxor => "MPI_LXOR",
            Op::Band => "MPI_BAND",
            Op::Bor => "MPI_BOR",
            Op::Bxor => "MPI_BXOR",
            Op::MinLoc => "MPI_MINLOC",
            Op::MaxLoc => "MPI_MAXLOC",
        }
    }

    /// Whether the operation is commutative. Every predefined operation is
    /// (MPI treats floating-point `MPI_SUM` and `MPI_PROD` as commutative and
    /// associative even though rounding makes them only approximately so),
    /// so this is always `true`; it is here for the collective components,
    /// which will also see user-defined operations that are not.
    pub const fn is_commutative(self) -> bool {
        true
    }

    /// Whether MPI defines this operation on `ty` (the table of MPI 3.1
    /// §5.9.2):
    ///
    /// | operation | element types |
    /// |---|---|
    /// | `MPI_MAX`, `MPI_MIN`, `MPI_SUM`, `MPI_PROD` | integers, floating point |
    /// | `MPI_LAND`, `MPI_LOR`, `MPI_LXOR` | integers, `MPI_C_BOOL` |
    /// | `MPI_BAND`, `MPI_BOR`, `MPI_BXOR` | integers, `MPI_BYTE` |
    /// | `MPI_MINLOC`, `MPI_MAXLOC` | the pair types (`MPI_FLOAT_INT` …) |
    ///
    /// [`reduce_local`](crate::reduce_local) and
    /// [`reduce_into`](crate::reduce_into) return
    /// [`ReduceError::NotDefined`](crate::ReduceError::NotDefined) exactly
    /// when this is `false`.
    pub const fn applies_to(self, ty: ElementType) -> bool {
        let class = ty.class();
        match self {
            Op::Max | Op::Min | Op::Sum | Op::Prod => {
                matches!(class, Class::Integer | Class::Float)
            }
            Op::Land | Op::Lor | Op::Lxor => matches!(class, Class::Integer | Class::Logical),
            Op::Band | Op::Bor | Op::Bxor => matches!(class, Class::Integer | Class::Byte),
            Op::MinLoc | Op::MaxLoc => matches!(class, Class::Pair),
        }
    }
}

impl fmt::Display for Op {
    /// Writes the MPI name ([`Op::name`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Displays the operations defined on a type as an English list:
/// "MPI_BAND, MPI_BOR and MPI_BXOR".
pub(crate) struct OpsFor(pub(crate) ElementType);

impl fmt::Display for OpsFor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ops: Vec<Op> = Op::ALL
            .iter()
            .copied()
            .filter(|op| op.applies_to(self.0))
            .collect();
        for (i, op) in ops.iter().enumerate() {
            if i > 0 {
                f.write_str(if i + 1 == ops.len() { " and " } else { ", " })?;
            }
            f.write_str(op.name())?;
        }
        Ok(())
    }
}
