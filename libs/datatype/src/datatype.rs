//! [`Datatype`]: a predefined or derived type, its bounds, its envelope
//! and contents, and the constructors of MPI's derived types.

use crate::desc::{push_repeat, Node};
use crate::{DatatypeError, Primitive};
use std::sync::{Arc, Mutex};

/// How a type was made (`MPI_Type_get_envelope`'s combiner).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Combiner {
    /// A predefined type (`MPI_COMBINER_NAMED`).
    Named,
    /// `MPI_Type_dup`.
    Dup,
    /// `MPI_Type_contiguous`.
    Contiguous,
    /// `MPI_Type_vector`.
    Vector,
    /// `MPI_Type_create_hvector`.
    Hvector,
    /// `MPI_Type_indexed`.
    Indexed,
    /// `MPI_Type_create_hindexed`.
    Hindexed,
    /// `MPI_Type_create_indexed_block`.
    IndexedBlock,
    /// `MPI_Type_create_hindexed_block`.
    HindexedBlock,
    /// `MPI_Type_create_struct`.
    Struct,
    /// `MPI_Type_create_subarray`.
    Subarray,
    /// `MPI_Type_create_darray`.
    Darray,
    /// `MPI_Type_create_resized`.
    Resized,
}

/// The arguments a type was made with (`MPI_Type_get_contents`), in the
/// order MPI lists them for its combiner: `integers` (counts, block
/// lengths, displacements in extents, subarray dimensions and order),
/// `addresses` (strides and displacements in bytes, a resized type's
/// lower bound and extent) and `types`. Empty for a predefined type.
#[derive(Debug, Clone, Default)]
pub struct Contents {
    /// The integer arguments.
    pub integers: Vec<isize>,
    /// The address arguments.
    pub addresses: Vec<isize>,
    /// The type arguments.
    pub types: Vec<Datatype>,
}

/// The storage order of a subarray's dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Row-major: the last dimension varies fastest (`MPI_ORDER_C`,
    /// code 0 in [`Contents::integers`]).
    C,
    /// Column-major: the first dimension varies fastest
    /// (`MPI_ORDER_FORTRAN`, code 1).
    Fortran,
}

impl Order {
    /// The code [`Contents::integers`] holds for it (0 for C, 1 for
    /// Fortran).
    pub const fn code(self) -> isize {
        match self {
            Order::C => 0,
            Order::Fortran => 1,
        }
    }
}

/// A predefined pair type for `MPI_MINLOC` and `MPI_MAXLOC`: a value and
/// an `int` index, laid out as the C struct `{ value; int index; }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pair {
    /// `MPI_FLOAT_INT`.
    FloatInt,
    /// `MPI_DOUBLE_INT`.
    DoubleInt,
    /// `MPI_LONG_INT`.
    LongInt,
    /// `MPI_2INT`.
    TwoInt,
    /// `MPI_SHORT_INT`.
    ShortInt,
    /// `MPI_LONG_DOUBLE_INT`.
    LongDoubleInt,
}

impl Pair {
    /// The value's type.
    pub const fn value(self) -> Primitive {
        match self {
            Pair::FloatInt => Primitive::Float,
            Pair::DoubleInt => Primitive::Double,
            Pair::LongInt => Primitive::Long,
            Pair::TwoInt => Primitive::Int,
            Pair::ShortInt => Primitive::Short,
            Pair::LongDoubleInt => Primitive::LongDouble,
        }
    }

    /// The MPI name, such as `"MPI_2INT"`.
    pub const fn name(self) -> &'static str {
        match self {
            Pair::FloatInt => "MPI_FLOAT_INT",
            Pair::DoubleInt => "MPI_DOUBLE_INT",
            Pair::LongInt => "MPI_LONG_INT",
            Pair::TwoInt => "MPI_2INT",
            Pair::ShortInt => "MPI_SHORT_INT",
            Pair::LongDoubleInt => "MPI_LONG_DOUBLE_INT",
        }
    }

    /// The pair type whose value is of `value`, if there is one.
    pub const fn with_value(value: Primitive) -> Option<Pair> {
        Some(match value {
            Primitive::Float => Pair::FloatInt,
            Primitive::Double => Pair::DoubleInt,
            Primitive::Long => Pair::LongInt,
            Primitive::Int => Pair::TwoInt,
            Primitive::Short => Pair::ShortInt,
            Primitive::LongDouble => Pair::LongDoubleInt,
            _ => return None,
        })
    }
}

/// An MPI datatype: where the values of one element lie, relative to the
/// element's origin, and of which primitive types. Cheap to clone (the
/// clones share the type); two handles are the same type when
/// [`Datatype::same`] says so.
///
/// Bounds follow MPI: `lb` and `ub` are the least and greatest byte the
/// type map spans (from its children's bounds, so a resized child's
/// bounds carry over), `extent = ub − lb` is the stride between
/// consecutive elements; the true bounds span the data bytes alone. A
/// struct's upper bound is raised so that its extent is a multiple of
/// the largest alignment of its primitives, as C lays out a struct,
/// unless one of its children has bounds set by a resize.
#[derive(Clone, Debug)]
pub struct Datatype(Arc<Inner>);

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) size: usize,
    pub(crate) lb: isize,
    pub(crate) ub: isize,
    pub(crate) true_lb: isize,
    pub(crate) true_ub: isize,
    /// The largest alignment of its primitives (1 with none).
    align: usize,
    /// Bounds set by a resize, here or in a child.
    explicit: bool,
    pub(crate) nodes: Arc<[Node]>,
    /// Primitive values per element.
    pub(crate) values: usize,
    /// Bytes of one element in external32.
    pub(crate) external32: usize,
    /// A primitive external32 cannot represent, if the type holds one.
    pub(crate) no_external32: Option<Primitive>,
    /// Whether a value may narrow in external32 (`long`, `wchar_t`).
    pub(crate) narrows: bool,
    combiner: Combiner,
    contents: Contents,
    name: Mutex<String>,
}

/// The running sums of a constructor: its blocks' bounds, size and
/// description.
struct Builder {
    name: &'static str,
    size: usize,
    bounds: Option<(isize, isize)>,
    true_bounds: Option<(isize, isize)>,
    align: usize,
    explicit: bool,
    nodes: Vec<Node>,
    values: usize,
    external32: usize,
    no_external32: Option<Primitive>,
    narrows: bool,
}

fn overflow(name: &'static str, what: &'static str) -> DatatypeError {
    DatatypeError::Overflow { name, what }
}

/// `(lo, hi)` of `n ≥ 1` copies of `(lo, hi)`, copy `i` shifted by
/// `i × stride`, then by `disp`.
fn span(
    name: &'static str,
    (lo, hi): (isize, isize),
    n: usize,
    stride: isize,
    disp: isize,
) -> Result<(isize, isize), DatatypeError> {
    let last = i128::try_from(n - 1).unwrap_or(i128::MAX) * i128::from(stride as i64);
    let lo = i128::from(lo as i64) + last.min(0) + i128::from(disp as i64);
    let hi = i128::from(hi as i64) + last.max(0) + i128::from(disp as i64);
    match (isize::try_from(lo), isize::try_from(hi)) {
        (Ok(lo), Ok(hi)) => Ok((lo, hi)),
        _ => Err(overflow(name, "displacement")),
    }
}

fn widen(a: Option<(isize, isize)>, b: (isize, isize)) -> Option<(isize, isize)> {
    Some(match a {
        Some((lo, hi)) => (lo.min(b.0), hi.max(b.1)),
        None => b,
    })
}

impl Builder {
    fn new(name: &'static str) -> Builder {
        Builder {
            name,
            size: 0,
            bounds: None,
            true_bounds: None,
            align: 1,
            explicit: false,
            nodes: Vec::new(),
            values: 0,
            external32: 0,
            no_external32: None,
            narrows: false,
        }
    }

    /// Adds `count` blocks of `blocklen` consecutive copies of `child`,
    /// block `i` at `disp + i × stride` bytes.
    fn blocks(
        &mut self,
        disp: isize,
        count: usize,
        stride: isize,
        blocklen: usize,
        child: &Datatype,
    ) -> Result<(), DatatypeError> {
        if count == 0 || blocklen == 0 {
            return Ok(());
        }
        let c = &*child.0;
        let name = self.name;
        let ext = c.ub - c.lb;
        let copies = count.checked_mul(blocklen).ok_or(overflow(name, "size"))?;
        let mul = |a: usize| copies.checked_mul(a).ok_or(overflow(name, "size"));
        let add = |a: usize, b: usize| a.checked_add(b).ok_or(overflow(name, "size"));
        let size = add(self.size, mul(c.size)?)?;
        if size > isize::MAX as usize {
            return Err(overflow(name, "size"));
        }
        let block = span(name, (c.lb, c.ub), blocklen, ext, 0)?;
        self.bounds = widen(self.bounds, span(name, block, count, stride, disp)?);
        if c.size > 0 {
            let block = span(name, (c.true_lb, c.true_ub), blocklen, ext, 0)?;
            self.true_bounds = widen(self.true_bounds, span(name, block, count, stride, disp)?);
        }
        self.size = size;
        self.values = add(self.values, mul(c.values)?)?;
        self.external32 = add(self.external32, mul(c.external32)?)?;
        self.align = self.align.max(c.align);
        self.explicit |= c.explicit;
        self.narrows |= c.narrows;
        self.no_external32 = self.no_external32.or(c.no_external32);
        let mut block_nodes = Vec::new();
        push_repeat(&mut block_nodes, 0, blocklen, ext, &c.nodes, c.size);
        let block_size = blocklen * c.size;
        push_repeat(
            &mut self.nodes,
            disp,
            count,
            stride,
            &block_nodes.into(),
            block_size,
        );
        Ok(())
    }

    /// A builder holding blocks `(length, displacement)` of `old`, the
    /// displacements in units of `scale` bytes.
    fn placed(
        name: &'static str,
        blocks: impl Iterator<Item = (isize, isize)>,
        scale: isize,
        old: &Datatype,
    ) -> Result<Builder, DatatypeError> {
        let mut b = Builder::new(name);
        for (len, d) in blocks {
            let len = count_of(name, "a blocklength", len)?;
            b.blocks(scaled(name, d, scale)?, 1, 0, len, old)?;
        }
        Ok(b)
    }

    fn finish(self, combiner: Combiner, contents: Contents, pad: bool) -> Datatype {
        let (lb, mut ub) = self.bounds.unwrap_or((0, 0));
        if pad && !self.explicit {
            let extent = (ub - lb) as usize;
            ub += (extent.next_multiple_of(self.align) - extent) as isize;
        }
        let (true_lb, true_ub) = self.true_bounds.unwrap_or((0, 0));
        Datatype(Arc::new(Inner {
            size: self.size,
            lb,
            ub,
            true_lb,
            true_ub,
            align: self.align,
            explicit: self.explicit,
            nodes: self.nodes.into(),
            values: self.values,
            external32: self.external32,
            no_external32: self.no_external32,
            narrows: self.narrows,
            combiner,
            contents,
            name: Mutex::new(String::new()),
        }))
    }
}

fn count_of(name: &'static str, what: &str, n: isize) -> Result<usize, DatatypeError> {
    usize::try_from(n).map_err(|_| DatatypeError::Argument {
        name,
        why: format!("{what} is {n}; it must be 0 or more"),
    })
}

fn same_len(
    name: &'static str,
    (first, a): (&'static str, usize),
    (second, b): (&'static str, usize),
) -> Result<(), DatatypeError> {
    if a == b {
        Ok(())
    } else {
        Err(DatatypeError::LengthMismatch {
            name,
            first,
            first_len: a,
            second,
            second_len: b,
        })
    }
}

fn scaled(name: &'static str, n: isize, by: isize) -> Result<isize, DatatypeError> {
    n.checked_mul(by).ok_or(overflow(name, "displacement"))
}

impl Datatype {
    /// The predefined type `prim`: one value at displacement 0, named
    /// after it.
    pub fn predefined(prim: Primitive) -> Datatype {
        let size = prim.size();
        Datatype(Arc::new(Inner {
            size,
            lb: 0,
            ub: size as isize,
            true_lb: 0,
            true_ub: size as isize,
            align: prim.alignment(),
            explicit: false,
            nodes: vec![Node::Run {
                disp: 0,
                prim,
                count: 1,
            }]
            .into(),
            values: 1,
            external32: prim.external32_size(),
            no_external32: (!prim.has_external32()).then_some(prim),
            narrows: prim.external32_size() < prim.size(),
            combiner: Combiner::Named,
            contents: Contents::default(),
            name: Mutex::new(prim.name().to_owned()),
        }))
    }

    /// The predefined pair type `pair`: its value at 0, the `int` index
    /// at the value's size rounded up to 4, the extent rounded up to the
    /// alignment of both.
    pub fn pair(pair: Pair) -> Datatype {
        let value = Datatype::predefined(pair.value());
        let index = Datatype::predefined(Primitive::Int);
        let at = pair.value().size().next_multiple_of(4) as isize;
        let mut b = Builder::new(pair.name());
        // Two single values at fixed places: nothing can overflow.
        let _ = b.blocks(0, 1, 0, 1, &value);
        let _ = b.blocks(at, 1, 0, 1, &index);
        let t = b.finish(Combiner::Named, Contents::default(), true);
        t.set_name(pair.name());
        t
    }

    /// Whether `self` and `other` are the same type (not merely alike).
    pub fn same(&self, other: &Datatype) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    pub(crate) fn inner(&self) -> &Inner {
        &self.0
    }

    /// Data bytes of one element (`MPI_Type_size`).
    pub fn size(&self) -> usize {
        self.0.size
    }

    /// The lower bound (`MPI_Type_get_extent`).
    pub fn lb(&self) -> isize {
        self.0.lb
    }

    /// `ub − lb`: the stride between consecutive elements.
    pub fn extent(&self) -> isize {
        self.0.ub - self.0.lb
    }

    /// The lower bound of the data bytes (`MPI_Type_get_true_extent`).
    pub fn true_lb(&self) -> isize {
        self.0.true_lb
    }

    /// The span of the data bytes.
    pub fn true_extent(&self) -> isize {
        self.0.true_ub - self.0.true_lb
    }

    /// Primitive values in one element.
    pub fn values(&self) -> usize {
        self.0.values
    }

    /// The one primitive every value of the type is of: `None` for a
    /// type without values or with values of several primitives (a pair
    /// type among them). A reduction with a predefined operation takes a
    /// derived type of one primitive as that many values of it.
    pub fn primitive(&self) -> Option<Primitive> {
        fn of(nodes: &[Node], found: &mut Option<Primitive>) -> bool {
            nodes.iter().all(|node| match node {
                Node::Run { prim, .. } => *found.get_or_insert(*prim) == *prim,
                Node::Repeat { body, .. } => of(body, found),
            })
        }
        let mut found = None;
        if of(&self.0.nodes, &mut found) {
            found
        } else {
            None
        }
    }

    /// The pair type the values of one element are pairs of, and how many
    /// pairs one element holds: `Some` when the values, in type-map order,
    /// are a value of one pair type's value primitive and an `int`, again
    /// and again (at any displacements). A reduction with `MPI_MINLOC` or
    /// `MPI_MAXLOC` takes such a type as that many pairs. `None` for any
    /// other type, and for a type without values.
    pub fn pairs(&self) -> Option<(Pair, usize)> {
        /// Walks `nodes`, whose values must continue the sequence
        /// value, index, value, … of `value`; `index_next` says which
        /// comes first, and is left saying which comes after them.
        fn walk(nodes: &[Node], value: Primitive, index_next: &mut bool) -> bool {
            nodes.iter().all(|node| match node {
                Node::Run { prim, count, .. } => {
                    if value == Primitive::Int {
                        // Every value is an int: only the parity moves.
                        *prim == Primitive::Int && {
                            *index_next ^= count % 2 == 1;
                            true
                        }
                    } else {
                        // Two values of one primitive in a row break the
                        // alternation.
                        let expected = if *index_next { Primitive::Int } else { value };
                        *count == 1 && *prim == expected && {
                            *index_next = !*index_next;
                            true
                        }
                    }
                }
                // Copies of the body alternate between two starts (or
                // keep one), so the first two decide them all; a third
                // leaves the walk where an odd count of them ends.
                Node::Repeat { body, count, .. } => {
                    let copies = if *count <= 2 { *count } else { 2 + *count % 2 };
                    (0..copies).all(|_| walk(body, value, index_next))
                }
            })
        }
        fn first(nodes: &[Node]) -> Option<Primitive> {
            nodes.iter().find_map(|node| match node {
                Node::Run { prim, count, .. } => (*count > 0).then_some(*prim),
                Node::Repeat { body, count, .. } => (*count > 0).then(|| first(body)).flatten(),
            })
        }
        let t = &*self.0;
        let value = first(&t.nodes)?;
        let pair = Pair::with_value(value)?;
        let mut index_next = false;
        (walk(&t.nodes, value, &mut index_next) && !index_next && t.values > 0)
            .then_some((pair, t.values / 2))
    }

    /// How the type was made.
    pub fn combiner(&self) -> Combiner {
        self.0.combiner
    }

    /// The arguments it was made with (empty for a predefined type).
    pub fn contents(&self) -> &Contents {
        &self.0.contents
    }

    /// The type's name: a predefined type's MPI name, else what
    /// [`Datatype::set_name`] set (empty at first).
    pub fn name(&self) -> String {
        self.0
            .name
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Names the type (`MPI_Type_set_name`).
    pub fn set_name(&self, name: &str) {
        *self.0.name.lock().unwrap_or_else(|e| e.into_inner()) = name.to_owned();
    }

    /// Whether one element's data are `size` bytes in a row from its
    /// origin with nothing between elements: a buffer of such elements
    /// is its own packed form.
    pub fn is_contiguous(&self) -> bool {
        let t = &*self.0;
        t.size as isize == t.ub - t.lb
            && (t.size == 0
                || (t.true_lb == 0 && t.lb == 0 && matches!(&t.nodes[..], [Node::Run { .. }])))
    }

    /// A new type with the type map of `self` (`MPI_Type_dup`).
    pub fn dup(&self) -> Datatype {
        let contents = Contents {
            types: vec![self.clone()],
            ..Contents::default()
        };
        self.relabel(Combiner::Dup, contents)
    }

    /// `count` copies of `old` one extent apart (`MPI_Type_contiguous`).
    ///
    /// # Errors
    ///
    /// A negative count; a size or bound that overflows.
    pub fn contiguous(count: isize, old: &Datatype) -> Result<Datatype, DatatypeError> {
        const NAME: &str = "MPI_Type_contiguous";
        let n = count_of(NAME, "count", count)?;
        let mut b = Builder::new(NAME);
        b.blocks(0, 1, 0, n, old)?;
        let contents = Contents {
            integers: vec![count],
            types: vec![old.clone()],
            ..Contents::default()
        };
        Ok(b.finish(Combiner::Contiguous, contents, false))
    }

    /// `count` blocks of `blocklen` copies of `old`, `stride` extents of
    /// `old` apart (`MPI_Type_vector`).
    ///
    /// # Errors
    ///
    /// A negative count or block length; a size or bound that overflows.
    pub fn vector(
        count: isize,
        blocklen: isize,
        stride: isize,
        old: &Datatype,
    ) -> Result<Datatype, DatatypeError> {
        const NAME: &str = "MPI_Type_vector";
        let bytes = scaled(NAME, stride, old.extent())?;
        let contents = Contents {
            integers: vec![count, blocklen, stride],
            types: vec![old.clone()],
            ..Contents::default()
        };
        Ok(Datatype::strided(NAME, count, blocklen, bytes, old)?
            .relabel(Combiner::Vector, contents))
    }

    /// `count` blocks of `blocklen` copies of `old`, `stride` bytes apart
    /// (`MPI_Type_create_hvector`).
    ///
    /// # Errors
    ///
    /// As [`Datatype::vector`].
    pub fn hvector(
        count: isize,
        blocklen: isize,
        stride: isize,
        old: &Datatype,
    ) -> Result<Datatype, DatatypeError> {
        Datatype::strided("MPI_Type_create_hvector", count, blocklen, stride, old)
    }

    fn strided(
        name: &'static str,
        count: isize,
        blocklen: isize,
        stride: isize,
        old: &Datatype,
    ) -> Result<Datatype, DatatypeError> {
        let n = count_of(name, "count", count)?;
        let len = count_of(name, "blocklength", blocklen)?;
        let mut b = Builder::new(name);
        b.blocks(0, n, stride, len, old)?;
        let contents = Contents {
            integers: vec![count, blocklen],
            addresses: vec![stride],
            types: vec![old.clone()],
        };
        Ok(b.finish(Combiner::Hvector, contents, false))
    }

    /// Blocks of `blocklens[i]` copies of `old` at `displs[i]` extents of
    /// `old` (`MPI_Type_indexed`).
    ///
    /// # Errors
    ///
    /// Arrays of different lengths; a negative block length; a size or
    /// bound that overflows.
    pub fn indexed(
        blocklens: &[isize],
        displs: &[isize],
        old: &Datatype,
    ) -> Result<Datatype, DatatypeError> {
        Datatype::indexed_in("MPI_Type_indexed", blocklens, displs, false, old)
    }

    /// Blocks of `blocklens[i]` copies of `old` at `displs[i]` bytes
    /// (`MPI_Type_create_hindexed`).
    ///
    /// # Errors
    ///
    /// As [`Datatype::indexed`].
    pub fn hindexed(
        blocklens: &[isize],
        displs: &[isize],
        old: &Datatype,
    ) -> Result<Datatype, DatatypeError> {
        Datatype::indexed_in("MPI_Type_create_hindexed", blocklens, displs, true, old)
    }

    /// [`Datatype::indexed`] (`bytes` false: displacements in extents of
    /// `old`) or [`Datatype::hindexed`] (in bytes).
    fn indexed_in(
        name: &'static str,
        blocklens: &[isize],
        displs: &[isize],
        bytes: bool,
        old: &Datatype,
    ) -> Result<Datatype, DatatypeError> {
        same_len(
            name,
            ("blocklengths", blocklens.len()),
            ("displacements", displs.len()),
        )?;
        let scale = if bytes { 1 } else { old.extent() };
        let blocks = blocklens.iter().copied().zip(displs.iter().copied());
        let b = Builder::placed(name, blocks, scale, old)?;
        let mut integers = vec![blocklens.len() as isize];
        integers.extend_from_slice(blocklens);
        let mut contents = Contents {
            types: vec![old.clone()],
            ..Contents::default()
        };
        if bytes {
            contents.addresses = displs.to_vec();
        } else {
            integers.extend_from_slice(displs);
        }
        contents.integers = integers;
        let combiner = if bytes {
            Combiner::Hindexed
        } else {
            Combiner::Indexed
        };
        Ok(b.finish(combiner, contents, false))
    }

    /// Blocks of `blocklen` copies of `old` at `displs[i]` extents of
    /// `old` (`MPI_Type_create_indexed_block`).
    ///
    /// # Errors
    ///
    /// A negative block length; a size or bound that overflows.
    pub fn indexed_block(
        blocklen: isize,
        displs: &[isize],
        old: &Datatype,
    ) -> Result<Datatype, DatatypeError> {
        Datatype::block_in(
            "MPI_Type_create_indexed_block",
            blocklen,
            displs,
            false,
            old,
        )
    }

    /// Blocks of `blocklen` copies of `old` at `displs[i]` bytes
    /// (`MPI_Type_create_hindexed_block`).
    ///
    /// # Errors
    ///
    /// As [`Datatype::indexed_block`].
    pub fn hindexed_block(
        blocklen: isize,
        displs: &[isize],
        old: &Datatype,
    ) -> Result<Datatype, DatatypeError> {
        Datatype::block_in(
            "MPI_Type_create_hindexed_block",
            blocklen,
            displs,
            true,
            old,
        )
    }

    /// [`Datatype::indexed_block`] (`bytes` false: displacements in
    /// extents of `old`) or [`Datatype::hindexed_block`] (in bytes).
    fn block_in(
        name: &'static str,
        blocklen: isize,
        displs: &[isize],
        bytes: bool,
        old: &Datatype,
    ) -> Result<Datatype, DatatypeError> {
        count_of(name, "blocklength", blocklen)?;
        let scale = if bytes { 1 } else { old.extent() };
        let b = Builder::placed(name, displs.iter().map(|&d| (blocklen, d)), scale, old)?;
        let mut contents = Contents {
            integers: vec![displs.len() as isize, blocklen],
            types: vec![old.clone()],
            ..Contents::default()
        };
        if bytes {
            contents.addresses = displs.to_vec();
        } else {
            contents.integers.extend_from_slice(displs);
        }
        let combiner = if bytes {
            Combiner::HindexedBlock
        } else {
            Combiner::IndexedBlock
        };
        Ok(b.finish(combiner, contents, false))
    }

    /// Blocks of `blocklens[i]` copies of `types[i]` at `displs[i]` bytes
    /// (`MPI_Type_create_struct`); the extent is padded to the largest
    /// alignment of its primitives (see [`Datatype`]).
    ///
    /// # Errors
    ///
    /// Arrays of different lengths; a negative block length; a size or
    /// bound that overflows.
    pub fn structure(
        blocklens: &[isize],
        displs: &[isize],
        types: &[Datatype],
    ) -> Result<Datatype, DatatypeError> {
        const NAME: &str = "MPI_Type_create_struct";
        same_len(
            NAME,
            ("blocklengths", blocklens.len()),
            ("displacements", displs.len()),
        )?;
        same_len(
            NAME,
            ("blocklengths", blocklens.len()),
            ("types", types.len()),
        )?;
        let mut b = Builder::new(NAME);
        for ((&len, &d), t) in blocklens.iter().zip(displs).zip(types) {
            b.blocks(d, 1, 0, count_of(NAME, "a blocklength", len)?, t)?;
        }
        let mut integers = vec![blocklens.len() as isize];
        integers.extend_from_slice(blocklens);
        let contents = Contents {
            integers,
            addresses: displs.to_vec(),
            types: types.to_vec(),
        };
        Ok(b.finish(Combiner::Struct, contents, true))
    }

    /// `old` with lower bound `lb` and extent `extent`
    /// (`MPI_Type_create_resized`).
    ///
    /// # Errors
    ///
    /// `lb + extent` overflows.
    pub fn resized(old: &Datatype, lb: isize, extent: isize) -> Result<Datatype, DatatypeError> {
        const NAME: &str = "MPI_Type_create_resized";
        let ub = lb.checked_add(extent).ok_or(overflow(NAME, "extent"))?;
        let contents = Contents {
            addresses: vec![lb, extent],
            types: vec![old.clone()],
            ..Contents::default()
        };
        let mut t = old.derived(Combiner::Resized, contents);
        t.lb = lb;
        t.ub = ub;
        t.explicit = true;
        Ok(Datatype(Arc::new(t)))
    }

    /// Replaces the combiner and contents of a type made by another
    /// constructor (for constructors defined through others).
    pub(crate) fn relabel(&self, combiner: Combiner, contents: Contents) -> Datatype {
        Datatype(Arc::new(self.derived(combiner, contents)))
    }

    /// A copy of the type's description under a new combiner, unnamed.
    fn derived(&self, combiner: Combiner, contents: Contents) -> Inner {
        let t = &*self.0;
        Inner {
            size: t.size,
            lb: t.lb,
            ub: t.ub,
            true_lb: t.true_lb,
            true_ub: t.true_ub,
            align: t.align,
            explicit: t.explicit,
            nodes: t.nodes.clone(),
            values: t.values,
            external32: t.external32,
            no_external32: t.no_external32,
            narrows: t.narrows,
            combiner,
            contents,
            name: Mutex::new(String::new()),
        }
    }
}
