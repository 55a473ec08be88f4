//! Known layouts, envelopes and contents, external32 bytes, and every
//! refusal with its message and error class.

use oxmpi_datatype::{Combiner, Datatype, DatatypeError, ErrorKind, Order, Pair, Primitive};

fn int() -> Datatype {
    Datatype::predefined(Primitive::Int)
}

fn double() -> Datatype {
    Datatype::predefined(Primitive::Double)
}

#[test]
fn predefined_types_have_their_c_layout_and_name() {
    for &p in Primitive::ALL {
        let t = Datatype::predefined(p);
        assert_eq!(
            (t.size(), t.lb(), t.extent()),
            (p.size(), 0, p.size() as isize),
            "{p}"
        );
        assert_eq!(t.combiner(), Combiner::Named);
        assert_eq!(t.name(), p.name());
        assert!(t.is_contiguous());
        assert!(t.contents().integers.is_empty() && t.contents().types.is_empty());
    }
    assert_eq!(Datatype::predefined(Primitive::Long).size(), 8);
    assert_eq!(Primitive::Long.external32_size(), 4);
}

#[test]
fn pair_types_lay_out_as_c_structs() {
    let cases = [
        (Pair::FloatInt, 8, 8),
        (Pair::DoubleInt, 12, 16),
        (Pair::LongInt, 12, 16),
        (Pair::TwoInt, 8, 8),
        (Pair::ShortInt, 6, 8),
        (Pair::LongDoubleInt, 20, 32),
    ];
    for (pair, size, extent) in cases {
        let t = Datatype::pair(pair);
        assert_eq!(
            (t.size(), t.extent(), t.values()),
            (size, extent, 2),
            "{}",
            pair.name()
        );
        assert_eq!(t.name(), pair.name());
        assert_eq!(t.combiner(), Combiner::Named);
    }
}

#[test]
fn a_struct_is_padded_like_c_unless_resized_inside() {
    let c = Datatype::predefined(Primitive::Char);
    let t = Datatype::structure(&[1, 1], &[0, 8], &[double(), c.clone()]).unwrap();
    assert_eq!((t.size(), t.extent(), t.true_extent()), (9, 16, 9));
    let r = Datatype::resized(&double(), 0, 8).unwrap();
    let t = Datatype::structure(&[1, 1], &[0, 8], &[r, c]).unwrap();
    assert_eq!(t.extent(), 9);
}

#[test]
fn vector_and_resized_bounds() {
    let v = Datatype::vector(3, 2, 4, &int()).unwrap();
    assert_eq!((v.size(), v.lb(), v.extent()), (24, 0, 40));
    assert!(!v.is_contiguous());
    let neg = Datatype::vector(3, 1, -2, &int()).unwrap();
    assert_eq!((neg.lb(), neg.extent(), neg.true_lb()), (-16, 20, -16));
    let r = Datatype::resized(&v, -4, 100).unwrap();
    assert_eq!(
        (r.lb(), r.extent(), r.true_lb(), r.true_extent()),
        (-4, 100, 0, 40)
    );
    let c = Datatype::contiguous(4, &int()).unwrap();
    assert!(c.is_contiguous());
    assert_eq!(Datatype::contiguous(0, &int()).unwrap().extent(), 0);
}

#[test]
fn a_subarray_picks_its_block_in_either_order() {
    // A 3 × 4 array of ints, rows 1..3, columns 1..3.
    let t = Datatype::subarray(&[3, 4], &[2, 2], &[1, 1], Order::C, &int()).unwrap();
    assert_eq!((t.size(), t.lb(), t.extent()), (16, 0, 48));
    let array: Vec<i32> = (0..12).collect();
    let bytes: Vec<u8> = array.iter().flat_map(|v| v.to_ne_bytes()).collect();
    let mut out = vec![0u8; 16];
    let mut position = 0;
    t.pack(&bytes, 0, 1, &mut out, &mut position).unwrap();
    let got: Vec<i32> = out
        .chunks(4)
        .map(|c| i32::from_ne_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(got, [5, 6, 9, 10]);
    // The same block in Fortran order: the first index varies fastest.
    let t = Datatype::subarray(&[4, 3], &[2, 2], &[1, 1], Order::Fortran, &int()).unwrap();
    let mut position = 0;
    t.pack(&bytes, 0, 1, &mut out, &mut position).unwrap();
    let got: Vec<i32> = out
        .chunks(4)
        .map(|c| i32::from_ne_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(got, [5, 6, 9, 10]);
    assert_eq!(t.combiner(), Combiner::Subarray);
    assert_eq!(t.contents().integers, [2, 4, 3, 2, 2, 1, 1, 1]);
}

#[test]
fn envelopes_and_contents_give_back_the_arguments() {
    let i = int();
    /// A type, its combiner, integers, addresses and number of types.
    type Case = (Datatype, Combiner, Vec<isize>, Vec<isize>, usize);
    let cases: Vec<Case> = vec![
        (
            Datatype::contiguous(3, &i).unwrap(),
            Combiner::Contiguous,
            vec![3],
            vec![],
            1,
        ),
        (
            Datatype::vector(2, 3, 4, &i).unwrap(),
            Combiner::Vector,
            vec![2, 3, 4],
            vec![],
            1,
        ),
        (
            Datatype::hvector(2, 3, 40, &i).unwrap(),
            Combiner::Hvector,
            vec![2, 3],
            vec![40],
            1,
        ),
        (
            Datatype::indexed(&[1, 2], &[0, 5], &i).unwrap(),
            Combiner::Indexed,
            vec![2, 1, 2, 0, 5],
            vec![],
            1,
        ),
        (
            Datatype::hindexed(&[1, 2], &[0, 20], &i).unwrap(),
            Combiner::Hindexed,
            vec![2, 1, 2],
            vec![0, 20],
            1,
        ),
        (
            Datatype::indexed_block(2, &[0, 5], &i).unwrap(),
            Combiner::IndexedBlock,
            vec![2, 2, 0, 5],
            vec![],
            1,
        ),
        (
            Datatype::hindexed_block(2, &[0, 20], &i).unwrap(),
            Combiner::HindexedBlock,
            vec![2, 2],
            vec![0, 20],
            1,
        ),
        (
            Datatype::structure(&[1, 1], &[0, 8], &[i.clone(), double()]).unwrap(),
            Combiner::Struct,
            vec![2, 1, 1],
            vec![0, 8],
            2,
        ),
        (
            Datatype::resized(&i, -4, 16).unwrap(),
            Combiner::Resized,
            vec![],
            vec![-4, 16],
            1,
        ),
        (i.dup(), Combiner::Dup, vec![], vec![], 1),
    ];
    for (t, combiner, integers, addresses, types) in cases {
        assert_eq!(t.combiner(), combiner);
        let c = t.contents();
        assert_eq!(
            (&c.integers, &c.addresses, c.types.len()),
            (&integers, &addresses, types),
            "{combiner:?}"
        );
        assert!(c.types[0].same(&i), "{combiner:?}");
        assert_eq!(t.name(), "");
    }
    let d = i.dup();
    assert!(!d.same(&i));
    d.set_name("my int");
    assert_eq!(d.name(), "my int");
    assert_eq!(i.name(), "MPI_INT");
}

#[test]
fn external32_is_big_endian_with_narrow_longs() {
    let t = Datatype::structure(
        &[1, 1, 1, 1],
        &[0, 8, 16, 24],
        &[
            int(),
            Datatype::predefined(Primitive::Long),
            double(),
            Datatype::predefined(Primitive::FloatComplex),
        ],
    )
    .unwrap();
    let mut buf = vec![0u8; 32];
    buf[0..4].copy_from_slice(&1i32.to_ne_bytes());
    buf[8..16].copy_from_slice(&(-2i64).to_ne_bytes());
    buf[16..24].copy_from_slice(&1.0f64.to_ne_bytes());
    buf[24..28].copy_from_slice(&1.0f32.to_ne_bytes());
    buf[28..32].copy_from_slice(&(-2.0f32).to_ne_bytes());
    assert_eq!(t.external_size("external32", 1).unwrap(), 4 + 4 + 8 + 8);
    let mut out = vec![0u8; 24];
    let mut position = 0;
    t.pack_external("external32", &buf, 0, 1, &mut out, &mut position)
        .unwrap();
    assert_eq!(position, 24);
    assert_eq!(
        out,
        [
            0, 0, 0, 1, // int 1
            0xff, 0xff, 0xff, 0xfe, // long -2 in 4 bytes
            0x3f, 0xf0, 0, 0, 0, 0, 0, 0, // 1.0
            0x3f, 0x80, 0, 0, 0xc0, 0, 0, 0, // 1.0 + -2.0i
        ]
    );
    let mut back = vec![0u8; 32];
    let mut position = 0;
    t.unpack_external("external32", &out, &mut position, &mut back, 0, 1)
        .unwrap();
    assert_eq!(position, 24);
    assert_eq!(&back[0..4], &buf[0..4]);
    assert_eq!(&back[8..32], &buf[8..32]);
}

#[test]
fn external32_refuses_what_it_cannot_hold() {
    let long = Datatype::predefined(Primitive::Long);
    let big = (1i64 << 40).to_ne_bytes();
    let mut out = [0u8; 4];
    let e = long
        .pack_external("external32", &big, 0, 1, &mut out, &mut 0)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conversion);
    assert!(
        e.to_string()
            .contains("does not fit in its 4 external32 bytes"),
        "{e}"
    );
    let ld = Datatype::predefined(Primitive::LongDouble);
    let e = ld.external_size("external32", 1).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Type);
    let e = int().external_size("native32", 1).unwrap_err();
    assert!(matches!(e, DatatypeError::Datarep { .. }));
    assert!(e.to_string().contains("'native32'"), "{e}");
}

#[test]
fn bad_arguments_are_refused_with_their_reason() {
    let e = Datatype::contiguous(-1, &int()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Arg);
    assert_eq!(
        e.to_string(),
        "MPI_Type_contiguous: count is -1; it must be 0 or more"
    );
    let e = Datatype::indexed(&[1, 2], &[0], &int()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Arg);
    assert!(
        e.to_string()
            .contains("blocklengths has 2 entries but displacements has 1"),
        "{e}"
    );
    let e = Datatype::hvector(isize::MAX, 2, 1, &int()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Count);
    let e = Datatype::resized(&int(), isize::MAX, 1).unwrap_err();
    assert!(matches!(e, DatatypeError::Overflow { .. }));
    let e = Datatype::subarray(&[4], &[3], &[2], Order::C, &int()).unwrap_err();
    assert!(e.to_string().contains("starts[0] is 2"), "{e}");
    let e = Datatype::subarray(&[], &[], &[], Order::C, &int()).unwrap_err();
    assert!(e.to_string().contains("ndims is 0"), "{e}");
}

#[test]
fn packing_checks_both_buffers() {
    let v = Datatype::vector(2, 1, 2, &int()).unwrap();
    let buf = [0u8; 12];
    let mut out = [0u8; 8];
    // The elements reach 12 bytes; from origin 4 they pass the buffer.
    let e = v.pack(&buf, 4, 1, &mut out, &mut 0).unwrap_err();
    assert!(
        matches!(
            e,
            DatatypeError::OutOfBuffer {
                lo: 0,
                hi: 12,
                len: 12,
                ..
            }
        ),
        "{e}"
    );
    let mut position = 4;
    let e = v.pack(&buf, 0, 1, &mut out, &mut position).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Truncate);
    assert_eq!(position, 4);
    assert!(
        e.to_string().contains("give a buffer of at least 12 bytes"),
        "{e}"
    );
    let mut dst = [0u8; 12];
    let e = v.unpack(&out[..4], &mut 0, &mut dst, 0, 1).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Truncate);
    assert_eq!(dst, [0u8; 12]);
}

#[test]
fn a_type_knows_the_one_primitive_of_its_values() {
    let v = Datatype::vector(3, 2, 4, &double()).unwrap();
    assert_eq!(v.primitive(), Some(Primitive::Double));
    let nested = Datatype::vector(2, 1, 3, &Datatype::resized(&v, 0, 100).unwrap()).unwrap();
    assert_eq!(nested.primitive(), Some(Primitive::Double));
    let same = Datatype::structure(&[1, 2], &[0, 16], &[int(), int()]).unwrap();
    assert_eq!(same.primitive(), Some(Primitive::Int));
    let mixed = Datatype::structure(&[1, 1], &[0, 8], &[double(), int()]).unwrap();
    assert_eq!(mixed.primitive(), None);
    let deep = Datatype::vector(2, 1, 2, &mixed).unwrap();
    assert_eq!(deep.primitive(), None);
    assert_eq!(Datatype::pair(Pair::DoubleInt).primitive(), None);
    assert_eq!(
        Datatype::pair(Pair::TwoInt).primitive(),
        Some(Primitive::Int)
    );
    assert_eq!(Datatype::contiguous(0, &int()).unwrap().primitive(), None);
}

#[test]
fn a_type_of_value_index_pairs_knows_its_pair_type_and_count() {
    let di = Datatype::pair(Pair::DoubleInt);
    assert_eq!(di.pairs(), Some((Pair::DoubleInt, 1)));
    let v = Datatype::vector(3, 2, 4, &di).unwrap();
    assert_eq!(v.pairs(), Some((Pair::DoubleInt, 6)));
    // A struct of a double and an int, resized: a pair by its values.
    let own = Datatype::structure(&[1, 1], &[0, 8], &[double(), int()]).unwrap();
    let own = Datatype::resized(&own, 0, 12).unwrap();
    assert_eq!(own.pairs(), Some((Pair::DoubleInt, 1)));
    // Three copies of a body with an odd number of ints: 2INT pairs only
    // when the total is even.
    let ints = Datatype::contiguous(3, &int()).unwrap();
    assert_eq!(ints.pairs(), None);
    let six = Datatype::vector(2, 1, 5, &ints).unwrap();
    assert_eq!(six.pairs(), Some((Pair::TwoInt, 3)));
    let nine = Datatype::vector(3, 1, 5, &ints).unwrap();
    assert_eq!(nine.pairs(), None);
    // A double then an int, and an int then a double: the second body
    // copy starts on the index, so the pairs hold across copies.
    let half = Datatype::structure(&[1], &[0], &[double()]).unwrap();
    let odd = Datatype::structure(&[1, 1, 1], &[0, 8, 16], &[double(), int(), double()]).unwrap();
    assert_eq!(odd.pairs(), None);
    let tail = Datatype::structure(&[1, 1], &[0, 8], &[odd.clone(), int()]).unwrap();
    assert_eq!(tail.pairs(), Some((Pair::DoubleInt, 2)));
    assert_eq!(half.pairs(), None);
    // Out of order, or of another value type, or with no values.
    let swapped = Datatype::structure(&[1, 1], &[8, 0], &[int(), double()]).unwrap();
    assert_eq!(swapped.pairs(), None);
    let two_doubles = Datatype::contiguous(2, &double()).unwrap();
    assert_eq!(two_doubles.pairs(), None);
    let uc = Datatype::contiguous(2, &Datatype::predefined(Primitive::UnsignedChar)).unwrap();
    assert_eq!(uc.pairs(), None);
    assert_eq!(Datatype::contiguous(0, &di).unwrap().pairs(), None);
    let li = Datatype::contiguous(4, &Datatype::pair(Pair::LongInt)).unwrap();
    assert_eq!(li.pairs(), Some((Pair::LongInt, 4)));
}
