//! What `#[derive(Equivalence)]` expands to uses: not an API of its own.

use super::Equivalence;
use std::marker::PhantomData;

pub use oxmpi_datatype::Datatype;
pub use oxmpi_mpi_core::coll::ElementCode;
pub use std::sync::OnceLock;

/// Names `T` in a way that compiles only when `T: Equivalence`; the
/// derive puts one per field, so the error points at the field.
pub struct IsEquivalence<T: Equivalence>(PhantomData<T>);

impl<T: Equivalence> IsEquivalence<T> {
    /// The check's value (nothing).
    pub const NEW: Self = IsEquivalence(PhantomData);
}

/// One field of a derived struct: `count` values of `datatype` from byte
/// `offset`.
pub struct Field {
    /// `offset_of!` the field.
    pub offset: usize,
    /// The values in it (1, or an array's length).
    pub count: usize,
    /// Their type.
    pub datatype: &'static Datatype,
}

/// The datatype of a struct named `name` of `size` bytes with `fields`:
/// an MPI struct type of the fields at their offsets, resized to lower
/// bound 0 and extent `size` (so that arrays of it step by its size).
pub fn structure(name: &str, size: usize, fields: &[Field]) -> Datatype {
    let lens: Vec<isize> = fields.iter().map(|f| f.count as isize).collect();
    let displs: Vec<isize> = fields.iter().map(|f| f.offset as isize).collect();
    let types: Vec<Datatype> = fields.iter().map(|f| f.datatype.clone()).collect();
    // A Rust type's size and offsets fit in an `isize` (the language
    // guarantees it), which is all these constructors check.
    let t = Datatype::structure(&lens, &displs, &types)
        .and_then(|t| Datatype::resized(&t, 0, size as isize))
        .expect("a Rust struct's layout always fits an MPI struct type");
    t.set_name(name);
    t
}
