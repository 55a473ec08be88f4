//! Every constructor against a reference: random trees of constructors,
//! each expanded into its full type map by MPI's definitions (one entry
//! per primitive value), compared with the datatype's size, bounds, true
//! bounds, value count, packing (whole and in windows) and unpacking.

use oxmpi_datatype::{Datatype, Order, Primitive};
use proptest::prelude::*;

/// A type as the constructors that make it.
#[derive(Clone, Debug)]
enum Tree {
    Prim(Primitive),
    Contig(isize, Box<Tree>),
    Vector(isize, isize, isize, Box<Tree>),
    Hvector(isize, isize, isize, Box<Tree>),
    Indexed(Vec<(isize, isize)>, Box<Tree>),
    Hindexed(Vec<(isize, isize)>, Box<Tree>),
    IndexedBlock(isize, Vec<isize>, Box<Tree>),
    HindexedBlock(isize, Vec<isize>, Box<Tree>),
    Struct(Vec<(isize, isize, Tree)>),
    Resized(isize, isize, Box<Tree>),
    Dup(Box<Tree>),
    Subarray(Vec<(isize, isize, isize)>, bool, Box<Tree>),
}

/// A type map: `(displacement, primitive)` per value, and the bounds.
#[derive(Clone, Debug)]
struct Map {
    entries: Vec<(isize, Primitive)>,
    lb: isize,
    ub: isize,
    explicit: bool,
}

impl Map {
    fn extent(&self) -> isize {
        self.ub - self.lb
    }
}

/// `blocks` of `(disp, copies, child)`: copy `k` of a block at
/// `disp + k × extent(child)`; the bounds are the least and greatest of
/// the copies' bounds (no copies: 0 and 0).
fn assemble(blocks: &[(isize, isize, &Map)]) -> Map {
    let mut entries = Vec::new();
    let mut bounds: Option<(isize, isize)> = None;
    let mut explicit = false;
    for &(disp, copies, child) in blocks {
        // A block without copies adds nothing to the map, bounds included.
        explicit |= child.explicit && copies > 0;
        for k in 0..copies {
            let at = disp + k * child.extent();
            entries.extend(child.entries.iter().map(|&(d, p)| (d + at, p)));
            let (lo, hi) = (child.lb + at, child.ub + at);
            bounds = Some(bounds.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
        }
    }
    let (lb, ub) = bounds.unwrap_or((0, 0));
    Map {
        entries,
        lb,
        ub,
        explicit,
    }
}

fn reference(t: &Tree) -> Map {
    match t {
        Tree::Prim(p) => Map {
            entries: vec![(0, *p)],
            lb: 0,
            ub: p.size() as isize,
            explicit: false,
        },
        Tree::Contig(n, c) => assemble(&[(0, *n, &reference(c))]),
        Tree::Vector(n, bl, stride, c) => {
            let c = reference(c);
            let blocks: Vec<_> = (0..*n)
                .map(|i| (i * stride * c.extent(), *bl, &c))
                .collect();
            assemble(&blocks)
        }
        Tree::Hvector(n, bl, stride, c) => {
            let c = reference(c);
            let blocks: Vec<_> = (0..*n).map(|i| (i * stride, *bl, &c)).collect();
            assemble(&blocks)
        }
        Tree::Indexed(b, c) => {
            let c = reference(c);
            let blocks: Vec<_> = b.iter().map(|&(bl, d)| (d * c.extent(), bl, &c)).collect();
            assemble(&blocks)
        }
        Tree::Hindexed(b, c) => {
            let c = reference(c);
            let blocks: Vec<_> = b.iter().map(|&(bl, d)| (d, bl, &c)).collect();
            assemble(&blocks)
        }
        Tree::IndexedBlock(bl, d, c) => {
            let c = reference(c);
            let blocks: Vec<_> = d.iter().map(|&d| (d * c.extent(), *bl, &c)).collect();
            assemble(&blocks)
        }
        Tree::HindexedBlock(bl, d, c) => {
            let c = reference(c);
            let blocks: Vec<_> = d.iter().map(|&d| (d, *bl, &c)).collect();
            assemble(&blocks)
        }
        Tree::Struct(b) => {
            let maps: Vec<_> = b.iter().map(|(_, _, t)| reference(t)).collect();
            let blocks: Vec<_> = b
                .iter()
                .zip(&maps)
                .map(|(&(bl, d, _), m)| (d, bl, m))
                .collect();
            let mut m = assemble(&blocks);
            if !m.explicit {
                let align = m
                    .entries
                    .iter()
                    .map(|(_, p)| p.alignment() as isize)
                    .max()
                    .unwrap_or(1);
                let ext = m.extent();
                m.ub += (align - ext % align) % align;
            }
            m
        }
        Tree::Resized(lb, ext, c) => {
            let c = reference(c);
            Map {
                entries: c.entries,
                lb: *lb,
                ub: lb + ext,
                explicit: true,
            }
        }
        Tree::Dup(c) => reference(c),
        Tree::Subarray(dims, fortran, c) => {
            // Element (i0, …, in−1) of the subarray sits at its linear
            // index in the whole array, in the array's order.
            let c = reference(c);
            let mut order: Vec<usize> = (0..dims.len()).collect();
            if !fortran {
                order.reverse();
            }
            let mut entries = Vec::new();
            let mut index = vec![0isize; dims.len()];
            let total: isize = dims.iter().map(|d| d.1).product();
            for _ in 0..total {
                let mut linear = 0;
                let mut scale = 1;
                for &d in &order {
                    linear += (dims[d].2 + index[d]) * scale;
                    scale *= dims[d].0;
                }
                let at = linear * c.extent();
                entries.extend(c.entries.iter().map(|&(d, p)| (d + at, p)));
                for &d in &order {
                    index[d] += 1;
                    if index[d] < dims[d].1 {
                        break;
                    }
                    index[d] = 0;
                }
            }
            let whole: isize = dims.iter().map(|d| d.0).product();
            Map {
                entries,
                lb: 0,
                ub: whole * c.extent(),
                explicit: true,
            }
        }
    }
}

fn build(t: &Tree) -> Datatype {
    let r = match t {
        Tree::Prim(p) => Ok(Datatype::predefined(*p)),
        Tree::Contig(n, c) => Datatype::contiguous(*n, &build(c)),
        Tree::Vector(n, bl, s, c) => Datatype::vector(*n, *bl, *s, &build(c)),
        Tree::Hvector(n, bl, s, c) => Datatype::hvector(*n, *bl, *s, &build(c)),
        Tree::Indexed(b, c) => {
            let (bl, d): (Vec<_>, Vec<_>) = b.iter().copied().unzip();
            Datatype::indexed(&bl, &d, &build(c))
        }
        Tree::Hindexed(b, c) => {
            let (bl, d): (Vec<_>, Vec<_>) = b.iter().copied().unzip();
            Datatype::hindexed(&bl, &d, &build(c))
        }
        Tree::IndexedBlock(bl, d, c) => Datatype::indexed_block(*bl, d, &build(c)),
        Tree::HindexedBlock(bl, d, c) => Datatype::hindexed_block(*bl, d, &build(c)),
        Tree::Struct(b) => {
            let bl: Vec<_> = b.iter().map(|x| x.0).collect();
            let d: Vec<_> = b.iter().map(|x| x.1).collect();
            let t: Vec<_> = b.iter().map(|x| build(&x.2)).collect();
            Datatype::structure(&bl, &d, &t)
        }
        Tree::Resized(lb, ext, c) => Datatype::resized(&build(c), *lb, *ext),
        Tree::Dup(c) => Ok(build(c).dup()),
        Tree::Subarray(dims, fortran, c) => {
            let sizes: Vec<_> = dims.iter().map(|d| d.0).collect();
            let subs: Vec<_> = dims.iter().map(|d| d.1).collect();
            let starts: Vec<_> = dims.iter().map(|d| d.2).collect();
            let order = if *fortran { Order::Fortran } else { Order::C };
            Datatype::subarray(&sizes, &subs, &starts, order, &build(c))
        }
    };
    r.expect("the generated arguments are valid")
}

fn primitive() -> impl Strategy<Value = Primitive> {
    prop::sample::select(Primitive::ALL.to_vec())
}

fn tree() -> impl Strategy<Value = Tree> {
    primitive()
        .prop_map(Tree::Prim)
        .prop_recursive(3, 24, 3, |inner| {
            let b = || inner.clone().prop_map(Box::new);
            prop_oneof![
                (0..4isize, b()).prop_map(|(n, c)| Tree::Contig(n, c)),
                (0..4isize, 0..3isize, -3..4isize, b())
                    .prop_map(|(n, bl, s, c)| Tree::Vector(n, bl, s, c)),
                (0..4isize, 0..3isize, -40..40isize, b())
                    .prop_map(|(n, bl, s, c)| Tree::Hvector(n, bl, s, c)),
                (prop::collection::vec((0..3isize, -4..5isize), 0..4), b())
                    .prop_map(|(v, c)| Tree::Indexed(v, c)),
                (prop::collection::vec((0..3isize, -40..40isize), 0..4), b())
                    .prop_map(|(v, c)| Tree::Hindexed(v, c)),
                (0..3isize, prop::collection::vec(-4..5isize, 0..4), b())
                    .prop_map(|(bl, d, c)| Tree::IndexedBlock(bl, d, c)),
                (0..3isize, prop::collection::vec(-40..40isize, 0..4), b())
                    .prop_map(|(bl, d, c)| Tree::HindexedBlock(bl, d, c)),
                prop::collection::vec((0..3isize, -40..40isize, inner.clone()), 0..4)
                    .prop_map(Tree::Struct),
                (-16..16isize, 0..48isize, b()).prop_map(|(lb, e, c)| Tree::Resized(lb, e, c)),
                b().prop_map(Tree::Dup),
                (
                    prop::collection::vec((1..4isize, 0..4isize, 0..4isize), 1..4),
                    any::<bool>(),
                    b()
                )
                    .prop_map(|(dims, f, c)| {
                        let dims = dims
                            .into_iter()
                            .map(|(size, sub, start)| {
                                let sub = sub.min(size);
                                (size, sub, start.min(size - sub))
                            })
                            .collect();
                        Tree::Subarray(dims, f, c)
                    }),
            ]
        })
}

/// The packed form of `count` elements of `map` at `origin` in `buf`.
fn reference_pack(map: &Map, buf: &[u8], origin: isize, count: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..count as isize {
        for &(d, p) in &map.entries {
            let at = (origin + i * map.extent() + d) as usize;
            out.extend_from_slice(&buf[at..at + p.size()]);
        }
    }
    out
}

fn overlaps(map: &Map, count: usize) -> bool {
    let mut bytes = Vec::new();
    for i in 0..count as isize {
        for &(d, p) in &map.entries {
            let at = i * map.extent() + d;
            bytes.extend(at..at + p.size() as isize);
        }
    }
    let n = bytes.len();
    bytes.sort_unstable();
    bytes.dedup();
    bytes.len() != n
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn every_constructor_matches_its_type_map(t in tree(), count in 0usize..4, cut in any::<prop::sample::Index>(), width in 1usize..40) {
        let map = reference(&t);
        let dt = build(&t);
        let size: usize = map.entries.iter().map(|(_, p)| p.size()).sum();
        prop_assert_eq!(dt.size(), size);
        prop_assert_eq!(dt.lb(), map.lb);
        prop_assert_eq!(dt.extent(), map.extent());
        prop_assert_eq!(dt.values(), map.entries.len());
        if !map.entries.is_empty() {
            let lo = map.entries.iter().map(|e| e.0).min().unwrap();
            let hi = map.entries.iter().map(|e| e.0 + e.1.size() as isize).max().unwrap();
            prop_assert_eq!((dt.true_lb(), dt.true_extent()), (lo, hi - lo));
        }
        // A buffer holding the reach of `count` elements, with a margin.
        let (lo, hi) = dt.reach(count).unwrap_or((0, 0));
        let origin = 8 - lo.min(0);
        let len = (origin + hi.max(0) + 8) as usize;
        let buf: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
        let expected = reference_pack(&map, &buf, origin, count);
        let mut out = vec![0u8; expected.len() + 3];
        let mut position = 3;
        dt.pack(&buf, origin as usize, count, &mut out, &mut position).unwrap();
        prop_assert_eq!(position, expected.len() + 3);
        prop_assert_eq!(&out[3..], &expected[..]);
        // One window of the packed stream, packed on its own.
        if !expected.is_empty() {
            let skip = cut.index(expected.len());
            let mut piece = vec![0u8; width];
            // SAFETY: the reach is inside `buf` (the pack above checked it).
            let n = unsafe { dt.pack_raw(buf.as_ptr().wrapping_offset(origin), count, skip, &mut piece) };
            prop_assert_eq!(n, width.min(expected.len() - skip));
            prop_assert_eq!(&piece[..n], &expected[skip..skip + n]);
        }
        // Unpacking puts every value back where packing took it from.
        if !overlaps(&map, count) {
            let mut back = vec![0u8; len];
            let mut position = 0;
            dt.unpack(&expected, &mut position, &mut back, origin as usize, count).unwrap();
            prop_assert_eq!(position, expected.len());
            prop_assert_eq!(reference_pack(&map, &back, origin, count), expected.clone());
            let mut touched = vec![false; len];
            for i in 0..count as isize {
                for &(d, p) in &map.entries {
                    let at = (origin + i * map.extent() + d) as usize;
                    touched[at..at + p.size()].iter_mut().for_each(|t| *t = true);
                }
            }
            prop_assert!(back.iter().zip(&touched).all(|(&b, &t)| t || b == 0), "unpack wrote outside the type map");
            // And in windows: any split of the stream gives the same bytes.
            if !expected.is_empty() {
                let skip = cut.index(expected.len());
                let mut again = vec![0u8; len];
                // SAFETY: the reach is inside `again`, which nothing else uses.
                unsafe {
                    let p = again.as_mut_ptr().wrapping_offset(origin);
                    prop_assert_eq!(dt.unpack_raw(&expected[..skip], p, count, 0), skip);
                    prop_assert_eq!(dt.unpack_raw(&expected[skip..], p, count, skip), expected.len() - skip);
                }
                prop_assert_eq!(again, back);
            }
        }
        // Values in a prefix of the stream.
        let mut values = 0;
        let mut bytes = 0;
        for &(_, p) in map.entries.iter() {
            prop_assert_eq!(dt.values_in(bytes), Some(values));
            if p.size() > 1 {
                prop_assert_eq!(dt.values_in(bytes + 1), None);
            }
            bytes += p.size();
            values += 1;
        }
        prop_assert_eq!(dt.values_in(bytes * 2), Some(values * 2));
    }
}
