//! The integer handles of `mpi.h`: communicators, datatypes, operations.
//! (Requests are in [`crate::requests`].)

use crate::errors::{Fail, ERR_ARG, ERR_COMM, ERR_OP, ERR_TYPE};
use oxmpi_datatype::{Datatype, Pair, Primitive};
use oxmpi_mpi_core::coll::{ElementCode, OpCode};
use oxmpi_mpi_core::Comm;
use std::borrow::Cow;
use std::ffi::c_int;
use std::sync::{OnceLock, RwLock};

/// `MPI_COMM_NULL`.
pub const COMM_NULL: c_int = 0;

/// The communicator of handle `h`, or `None` for one that is not
/// ([`comm`] says why).
#[inline(always)]
pub fn comm_of(h: c_int) -> Option<Comm> {
    match u32::try_from(h) {
        Ok(n) if n > 0 => Some(Comm::from_raw(n - 1)),
        _ => None,
    }
}

/// The communicator of handle `h` (`MPI_COMM_WORLD` is 1, `MPI_COMM_SELF`
/// 2; the runtime's communicator `n` is `n + 1`).
///
/// # Errors
///
/// `MPI_ERR_COMM` for `MPI_COMM_NULL` or a negative handle (a freed one is
/// refused by the runtime when used).
#[inline]
pub fn comm(h: c_int) -> Result<Comm, Fail> {
    match comm_of(h) {
        Some(c) => Ok(c),
        None => Err(Fail::new(
            ERR_COMM,
            format!("communicator handle {h} is not a communicator (MPI_COMM_NULL is 0)"),
        )),
    }
}

/// The handle of communicator `c`.
pub fn comm_handle(c: Comm) -> c_int {
    c.raw() as c_int + 1
}

/// A datatype as the C interface holds it.
#[derive(Clone, Debug)]
pub struct TypeEntry {
    /// The type.
    pub dt: Datatype,
    /// Whether it may be used for communication (predefined, or
    /// committed).
    pub committed: bool,
    /// The element type reductions see, for the predefined types they
    /// take.
    pub element: Option<ElementCode>,
}

/// The predefined types, in handle order from 1 (`MPI_CHAR`) as `mpi.h`
/// numbers them, with the element type reductions see.
const PREDEFINED: &[(Primitive, Option<ElementCode>)] = &[
    // MPI leaves MPI_CHAR out of reductions; Open MPI and MPICH take it as
    // a signed byte, and programs (the OSU benchmarks among them) rely on it.
    (Primitive::Char, Some(ElementCode::Int8)),
    (Primitive::SignedChar, Some(ElementCode::Int8)),
    (Primitive::UnsignedChar, Some(ElementCode::UInt8)),
    (Primitive::Byte, Some(ElementCode::Byte)),
    (Primitive::Packed, None),
    (Primitive::Short, Some(ElementCode::Int16)),
    (Primitive::UnsignedShort, Some(ElementCode::UInt16)),
    (Primitive::Int, Some(ElementCode::Int32)),
    (Primitive::Unsigned, Some(ElementCode::UInt32)),
    (Primitive::Long, Some(ElementCode::Int64)),
    (Primitive::UnsignedLong, Some(ElementCode::UInt64)),
    (Primitive::LongLong, Some(ElementCode::Int64)),
    (Primitive::UnsignedLongLong, Some(ElementCode::UInt64)),
    (Primitive::Float, Some(ElementCode::Float32)),
    (Primitive::Double, Some(ElementCode::Float64)),
    (Primitive::LongDouble, None),
    (Primitive::WChar, None),
    (Primitive::CBool, Some(ElementCode::Bool)),
    (Primitive::Int8, Some(ElementCode::Int8)),
    (Primitive::Int16, Some(ElementCode::Int16)),
    (Primitive::Int32, Some(ElementCode::Int32)),
    (Primitive::Int64, Some(ElementCode::Int64)),
    (Primitive::UInt8, Some(ElementCode::UInt8)),
    (Primitive::UInt16, Some(ElementCode::UInt16)),
    (Primitive::UInt32, Some(ElementCode::UInt32)),
    (Primitive::UInt64, Some(ElementCode::UInt64)),
    (Primitive::Aint, Some(ElementCode::Int64)),
    (Primitive::Offset, Some(ElementCode::Int64)),
    (Primitive::Count, Some(ElementCode::Int64)),
    (Primitive::FloatComplex, None),
    (Primitive::DoubleComplex, None),
    (Primitive::LongDoubleComplex, None),
];

/// The pair types, from handle `PREDEFINED.len() + 1` (`MPI_FLOAT_INT`).
const PAIRS: &[(Pair, Option<ElementCode>)] = &[
    (Pair::FloatInt, Some(ElementCode::FloatInt)),
    (Pair::DoubleInt, Some(ElementCode::DoubleInt)),
    (Pair::LongInt, Some(ElementCode::LongInt)),
    (Pair::TwoInt, Some(ElementCode::TwoInt)),
    (Pair::ShortInt, Some(ElementCode::ShortInt)),
    (Pair::LongDoubleInt, None),
];

/// The element type reductions see for values of the primitive `p`, if
/// they take it.
pub fn element_of(p: Primitive) -> Option<ElementCode> {
    PREDEFINED
        .iter()
        .find(|(q, _)| *q == p)
        .and_then(|&(_, e)| e)
}

/// The element type reductions see for pairs of `p`, if they take it.
pub fn element_of_pair(p: Pair) -> Option<ElementCode> {
    PAIRS.iter().find(|(q, _)| *q == p).and_then(|&(_, e)| e)
}

/// Handles of derived types start here.
pub const FIRST_DERIVED: c_int = 1024;

fn predefined() -> &'static [TypeEntry] {
    static TABLE: OnceLock<Vec<TypeEntry>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let singles = PREDEFINED.iter().map(|&(p, element)| TypeEntry {
            dt: Datatype::predefined(p),
            committed: true,
            element,
        });
        let pairs = PAIRS.iter().map(|&(p, element)| TypeEntry {
            dt: Datatype::pair(p),
            committed: true,
            element,
        });
        singles.chain(pairs).collect()
    })
}

/// The derived types, by `handle − FIRST_DERIVED` (`None`: freed).
static DERIVED: RwLock<Vec<Option<TypeEntry>>> = RwLock::new(Vec::new());

fn type_error(h: c_int, why: &str) -> Fail {
    Fail::new(ERR_TYPE, format!("datatype handle {h} {why}"))
}

/// The datatype of handle `h`, committed or not.
///
/// # Errors
///
/// `MPI_ERR_TYPE` for `MPI_DATATYPE_NULL`, an unknown handle or a freed
/// type.
#[inline]
pub fn any_type(h: c_int) -> Result<Cow<'static, TypeEntry>, Fail> {
    if h >= 1 && (h as usize) <= predefined().len() {
        return Ok(Cow::Borrowed(&predefined()[h as usize - 1]));
    }
    if h < FIRST_DERIVED {
        return Err(type_error(h, "is not a datatype (MPI_DATATYPE_NULL is 0)"));
    }
    let table = DERIVED.read().unwrap_or_else(|e| e.into_inner());
    match table.get((h - FIRST_DERIVED) as usize) {
        Some(Some(e)) => Ok(Cow::Owned(e.clone())),
        Some(None) => Err(type_error(h, "was freed")),
        None => Err(type_error(h, "is not a datatype")),
    }
}

/// What the data paths need of a datatype handle: a predefined single
/// value is looked up in a constant table (no lock, no reference count);
/// any other type through [`datatype`].
pub enum Typed {
    /// A predefined type of one value: contiguous, `size` bytes each.
    Plain {
        /// Bytes per element.
        size: usize,
        /// The element type reductions see.
        element: Option<ElementCode>,
    },
    /// A pair type or a derived type.
    General(Cow<'static, TypeEntry>),
}

impl Typed {
    /// The element type reductions see, if the type has one.
    #[inline]
    pub fn element(&self) -> Option<ElementCode> {
        match self {
            Typed::Plain { element, .. } => *element,
            Typed::General(t) => t.element,
        }
    }

    /// How `count` elements lie in memory: one run of bytes from the
    /// buffer's start, or a type that must be packed.
    ///
    /// # Errors
    ///
    /// `MPI_ERR_COUNT` when the size overflows.
    #[inline]
    pub fn layout(&self, count: usize) -> Result<Layout<'_>, Fail> {
        match self {
            Typed::Plain { size, .. } => size
                .checked_mul(count)
                .map(Layout::Contiguous)
                .ok_or_else(|| {
                    Fail::new(
                        crate::errors::ERR_COUNT,
                        format!("{count} elements of {size} bytes pass the address space"),
                    )
                }),
            Typed::General(t) => {
                let bytes = t.dt.packed_size(count)?;
                Ok(if t.dt.is_contiguous() || bytes == 0 {
                    Layout::Contiguous(bytes)
                } else {
                    Layout::Packed(&t.dt, bytes)
                })
            }
        }
    }

    /// The bytes of `count` elements when they lie one after another from
    /// the buffer's start (`None`: the type must be packed).
    ///
    /// # Errors
    ///
    /// As [`Typed::layout`].
    #[inline(always)]
    pub fn contiguous_bytes(&self, count: usize) -> Result<Option<usize>, Fail> {
        if let Typed::Plain { size, .. } = self {
            if let Some(bytes) = size.checked_mul(count) {
                return Ok(Some(bytes));
            }
        }
        self.contiguous_bytes_otherwise(count)
    }

    /// [`Typed::contiguous_bytes`] past its common case (a predefined
    /// type whose size does not overflow).
    #[inline(never)]
    fn contiguous_bytes_otherwise(&self, count: usize) -> Result<Option<usize>, Fail> {
        Ok(match self.layout(count)? {
            Layout::Contiguous(bytes) => Some(bytes),
            Layout::Packed(..) => None,
        })
    }
}

/// How the elements of a data path lie in memory ([`Typed::layout`]).
pub enum Layout<'a> {
    /// This many bytes in a row from the buffer's start.
    Contiguous(usize),
    /// Elements of this type, whose packed form takes this many bytes.
    Packed(&'a Datatype, usize),
}

/// The datatype of handle `h` for a data path ([`Typed`]).
///
/// # Errors
///
/// As [`datatype`].
#[inline(always)]
pub fn typed(h: c_int) -> Result<Typed, Fail> {
    let i = (h as usize).wrapping_sub(1);
    if i < PLAIN.len() {
        let (size, element) = PLAIN[i];
        return Ok(Typed::Plain { size, element });
    }
    typed_general(h)
}

/// The bytes of `count` elements of handle `h` when `h` is a predefined
/// single-value type, `count` is not negative and the product fits:
/// [`Typed::contiguous_bytes`] of that common case, without building a
/// [`Typed`]. `None` for anything else ([`typed`] then decides, and
/// reports what is wrong).
#[inline(always)]
pub fn plain_bytes(h: c_int, count: c_int) -> Option<usize> {
    let (size, _) = PLAIN.get((h as usize).wrapping_sub(1))?;
    size.checked_mul(usize::try_from(count).ok()?)
}

/// [`typed`] for a pair or derived type.
#[inline(never)]
fn typed_general(h: c_int) -> Result<Typed, Fail> {
    datatype(h).map(Typed::General)
}

/// The size and reduction element of each predefined single-value type,
/// by handle − 1.
const PLAIN: [(usize, Option<ElementCode>); PREDEFINED.len()] = {
    let mut t = [(0, None); PREDEFINED.len()];
    let mut i = 0;
    while i < t.len() {
        t[i] = (PREDEFINED[i].0.size(), PREDEFINED[i].1);
        i += 1;
    }
    t
};

/// The datatype of handle `h`, for communication.
///
/// # Errors
///
/// As [`any_type`], and `MPI_ERR_TYPE` for a type not committed.
#[inline]
pub fn datatype(h: c_int) -> Result<Cow<'static, TypeEntry>, Fail> {
    let t = any_type(h)?;
    if !t.committed {
        return Err(type_error(
            h,
            "is not committed; call MPI_Type_commit before using it",
        ));
    }
    Ok(t)
}

/// Registers a new derived type and answers its handle.
pub fn new_type(dt: Datatype) -> c_int {
    let mut table = DERIVED.write().unwrap_or_else(|e| e.into_inner());
    let entry = TypeEntry {
        dt,
        committed: false,
        element: None,
    };
    let index = match table.iter().position(Option::is_none) {
        Some(i) => {
            table[i] = Some(entry);
            i
        }
        None => {
            table.push(Some(entry));
            table.len() - 1
        }
    };
    FIRST_DERIVED + index as c_int
}

/// Applies `f` to the derived type of handle `h`; `free` removes it.
///
/// # Errors
///
/// `MPI_ERR_TYPE` for a predefined type (which cannot be committed again
/// or freed: `MPI_Type_commit` on one is allowed and does nothing) or a
/// handle that is not a live derived type.
pub fn update_type(h: c_int, free: bool, f: impl FnOnce(&mut TypeEntry)) -> Result<(), Fail> {
    if h >= 1 && (h as usize) <= predefined().len() {
        if free {
            return Err(type_error(h, "is predefined and cannot be freed"));
        }
        return Ok(());
    }
    let mut table = DERIVED.write().unwrap_or_else(|e| e.into_inner());
    let slot = usize::try_from(h - FIRST_DERIVED)
        .ok()
        .and_then(|i| table.get_mut(i));
    match slot {
        Some(slot @ Some(_)) => {
            if free {
                *slot = None;
            } else if let Some(e) = slot.as_mut() {
                f(e);
            }
            Ok(())
        }
        Some(None) => Err(type_error(h, "was freed")),
        None => Err(type_error(h, "is not a datatype")),
    }
}

/// The reduction operation of handle `h` (`MPI_MAX` is 1 … `MPI_MAXLOC`
/// 12).
///
/// # Errors
///
/// `MPI_ERR_OP` for `MPI_OP_NULL` or an unknown handle.
#[inline]
pub fn op(h: c_int) -> Result<OpCode, Fail> {
    const OPS: [OpCode; 12] = [
        OpCode::Max,
        OpCode::Min,
        OpCode::Sum,
        OpCode::Prod,
        OpCode::Land,
        OpCode::Lor,
        OpCode::Lxor,
        OpCode::Band,
        OpCode::Bor,
        OpCode::Bxor,
        OpCode::MinLoc,
        OpCode::MaxLoc,
    ];
    usize::try_from(h)
        .ok()
        .and_then(|i| i.checked_sub(1))
        .and_then(|i| OPS.get(i).copied())
        .ok_or_else(|| {
            Fail::new(
                ERR_OP,
                format!("operation handle {h} is not an operation (MPI_OP_NULL is 0)"),
            )
        })
}

/// A count argument as a `usize`.
///
/// # Errors
///
/// `MPI_ERR_COUNT` for a negative count.
#[inline]
pub fn count(what: &str, n: c_int) -> Result<usize, Fail> {
    usize::try_from(n).map_err(|_| {
        Fail::new(
            crate::errors::ERR_COUNT,
            format!("{what} is {n}; it must be 0 or more"),
        )
    })
}

/// The `n` values of the input array `p` (an empty slice for `n` 0,
/// whatever `p` is).
///
/// # Errors
///
/// `MPI_ERR_ARG` for a null `p` with `n` above 0.
///
/// # Safety
///
/// `p` holds `n` values, unchanged while the slice lives.
pub unsafe fn array<'a, T>(what: &str, p: *const T, n: usize) -> Result<&'a [T], Fail> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Fail::new(ERR_ARG, format!("{what} is a null pointer")));
    }
    // SAFETY: not null, `n` values (the caller's promise).
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// Writes `value` through an output pointer.
///
/// # Errors
///
/// `MPI_ERR_ARG` for a null pointer.
///
/// # Safety
///
/// `out` is null or valid for a write of `T`.
#[inline]
pub unsafe fn put<T>(what: &str, out: *mut T, value: T) -> Result<(), Fail> {
    checked_out(what, out)?;
    // SAFETY: not null; valid for a write (the caller's promise).
    unsafe { out.write(value) };
    Ok(())
}

/// Checks output pointer `out` (named `what`) before a call starts
/// anything: a call that would start an operation and then find it
/// cannot hand out its request must not start it.
///
/// # Errors
///
/// `MPI_ERR_ARG` when `out` is null.
#[inline]
pub fn checked_out<T>(what: &str, out: *mut T) -> Result<(), Fail> {
    if out.is_null() {
        return Err(Fail::new(ERR_ARG, format!("{what} is a null pointer")));
    }
    Ok(())
}

/// A handle for `dt`: a predefined type's own handle, else a new handle
/// (uncommitted) of the same type, as `MPI_Type_get_contents` gives.
pub fn handle_of(dt: &Datatype) -> c_int {
    match predefined().iter().position(|e| e.dt.same(dt)) {
        Some(i) => i as c_int + 1,
        None => new_type(dt.clone()),
    }
}
