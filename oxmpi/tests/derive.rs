//! `#[derive(Equivalence)]`: the layouts it describes (offsets, padding,
//! nested structs, arrays), packed sizes, and packing round trips through
//! the derived datatype. Compile-time refusals are `compile_fail` doc
//! tests on `oxmpi::datatype::Equivalence`.

use oxmpi::traits::*;
use std::mem::{offset_of, size_of};

/// No padding: 8 + 4 + 4 bytes.
#[derive(Equivalence, Clone, Copy, Debug, PartialEq)]
struct Dense {
    a: f64,
    b: i32,
    c: u32,
}

/// Padding after `tag` (7 bytes) and at the end (4 bytes): C layout.
#[derive(Equivalence, Clone, Copy, Debug, PartialEq)]
#[repr(C)]
struct Padded {
    tag: u8,
    value: f64,
    count: i32,
}

/// A nested padded struct and arrays of arrays and of structs, in Rust's
/// own layout (fields reordered).
#[derive(Equivalence, Clone, Copy, Debug, PartialEq)]
struct Outer {
    first: Padded,
    grid: [[u16; 3]; 2],
    inner: [Padded; 2],
    last: i8,
}

/// A tuple struct.
#[derive(Equivalence, Clone, Copy, Debug, PartialEq)]
struct Pair(u8, u64);

#[test]
fn packed_sizes_are_the_data_bytes() {
    assert_eq!(Dense::PACKED_SIZE, 16);
    assert_eq!(size_of::<Dense>(), 16);
    const { assert!(Dense::CONTIGUOUS) };
    assert_eq!(Padded::PACKED_SIZE, 13);
    assert_eq!(size_of::<Padded>(), 24);
    const { assert!(!Padded::CONTIGUOUS) };
    assert_eq!(Outer::PACKED_SIZE, 13 + 12 + 26 + 1);
    const { assert!(!Outer::CONTIGUOUS) };
    assert_eq!(Pair::PACKED_SIZE, 9);
    const { assert!(Dense::DERIVED && Padded::DERIVED && !<f64 as Equivalence>::DERIVED) };
    const { assert!(<u8 as Equivalence>::CONTIGUOUS && <f64 as Equivalence>::CONTIGUOUS) };
    assert_eq!(Padded::NAME, "Padded");
}

#[test]
fn the_datatype_describes_the_fields_at_their_offsets() {
    let t = Padded::datatype();
    assert_eq!(t.size(), 13);
    assert_eq!(t.lb(), 0);
    assert_eq!(t.extent(), size_of::<Padded>() as isize);
    assert_eq!(t.true_lb(), 0);
    assert_eq!(offset_of!(Padded, count), 16);
    assert_eq!(t.true_extent(), 20);
    assert_eq!(t.values(), 3);
    assert_eq!(t.name(), "Padded");
    let o = Outer::datatype();
    assert_eq!(o.extent(), size_of::<Outer>() as isize);
    assert_eq!(o.values(), 3 + 6 + 6 + 1);
    // Built once: the same description every time.
    assert!(std::ptr::eq(Padded::datatype(), Padded::datatype()));
    let d = Dense::datatype();
    assert_eq!(d.size() as isize, d.extent(), "no gaps");
}

#[test]
fn zero_is_every_field_zero() {
    assert_eq!(
        Padded::ZERO,
        Padded {
            tag: 0,
            value: 0.0,
            count: 0
        }
    );
    assert_eq!(Outer::ZERO.grid, [[0; 3]; 2]);
    assert_eq!(Outer::ZERO.inner, [Padded::ZERO; 2]);
    assert_eq!(Pair::ZERO, Pair(0, 0));
}

fn sample(i: u8) -> Outer {
    let p = |k: u8| Padded {
        tag: i.wrapping_mul(3).wrapping_add(k),
        value: f64::from(i) * 1.5 - f64::from(k),
        count: -(i32::from(i) * 1000 + i32::from(k)),
    };
    Outer {
        first: p(0),
        grid: [[u16::from(i), 2, 3], [4, 5, u16::MAX - u16::from(i)]],
        inner: [p(1), p(2)],
        last: -(i as i8),
    }
}

#[test]
fn packing_round_trips_and_skips_padding() {
    let items: Vec<Outer> = (0..5).map(sample).collect();
    let t = Outer::datatype();
    let n = items.len();
    let mut packed = vec![0u8; t.packed_size(n).unwrap()];
    // SAFETY: `items` holds `n` elements, the reach of the type for `n`.
    let written = unsafe { t.pack_raw(items.as_ptr().cast(), n, 0, &mut packed) };
    assert_eq!(written, n * Outer::PACKED_SIZE);
    // The packed form of one Padded: tag, value, count, back to back.
    let first = &items[0].first;
    assert_eq!(packed[0], first.tag);
    assert_eq!(&packed[1..9], &first.value.to_ne_bytes());
    assert_eq!(&packed[9..13], &first.count.to_ne_bytes());
    let mut back = vec![Outer::ZERO; n];
    // SAFETY: `back` holds `n` elements, written only here.
    let used = unsafe { t.unpack_raw(&packed, back.as_mut_ptr().cast(), n, 0) };
    assert_eq!(used, packed.len());
    assert_eq!(back, items);
}

#[test]
fn a_struct_without_padding_is_its_bytes() {
    let v = [
        Dense {
            a: 1.0,
            b: -2,
            c: 3,
        },
        Dense {
            a: -0.5,
            b: i32::MAX,
            c: 7,
        },
    ];
    let bytes = v.as_bytes().expect("no padding: sent as bytes");
    assert_eq!(bytes.len(), 32);
    assert_eq!(&bytes[16..24], &(-0.5f64).to_ne_bytes());
    let padded = [Padded::ZERO; 2];
    assert!(padded.as_bytes().is_none(), "padding is never read");
    assert!(oxmpi::datatype::bytes_of(&padded).is_none());
}

#[test]
fn element_counts_use_the_packed_size() {
    assert_eq!(oxmpi::datatype::element_count::<Padded>(39), Some(3));
    assert_eq!(oxmpi::datatype::element_count::<Padded>(24), None);
    assert_eq!(oxmpi::datatype::element_count::<Dense>(32), Some(2));
}
