//! `MPI_Comm_split` order: worked examples, errors, and random entries
//! against a reference that ranks by repeated minimum search.

use std::collections::BTreeMap;

use oxmpi_groups::{
    split_group, split_groups, split_members, validate_color, Group, SplitEntry, SplitError,
    UNDEFINED,
};
use proptest::prelude::*;

fn entries(pairs: &[(i32, i32)]) -> Vec<SplitEntry> {
    pairs
        .iter()
        .map(|&(color, key)| SplitEntry { color, key })
        .collect()
}

#[test]
fn order_is_key_then_parent_rank() {
    // Parent ranks 0..6.
    let e = entries(&[(1, 5), (0, 0), (1, -3), (UNDEFINED, 0), (1, 5), (0, 0)]);
    assert_eq!(split_members(&e, 1), [2, 0, 4]);
    assert_eq!(split_members(&e, 0), [1, 5]);
    assert_eq!(split_members(&e, UNDEFINED), Vec::<u32>::new());
    assert_eq!(split_members(&e, 7), Vec::<u32>::new());

    let parent = Group::new(vec![40, 41, 42, 43, 44, 45]).unwrap();
    assert_eq!(
        split_group(&parent, &e, 1).unwrap().unwrap().members(),
        &[42, 40, 44]
    );
    assert_eq!(
        split_group(&parent, &e, 0).unwrap().unwrap().members(),
        &[41, 45]
    );
    assert_eq!(split_group(&parent, &e, UNDEFINED).unwrap(), None);
    assert_eq!(
        split_group(&parent, &e, 9).unwrap().unwrap(),
        Group::empty()
    );

    let all = split_groups(&parent, &e).unwrap();
    assert_eq!(all.keys().copied().collect::<Vec<_>>(), [0, 1]);
    assert_eq!(all[&1].members(), &[42, 40, 44]);
    assert_eq!(all[&0].members(), &[41, 45]);
}

#[test]
fn colors() {
    assert_eq!(validate_color(0), Ok(()));
    assert_eq!(validate_color(i32::MAX), Ok(()));
    assert_eq!(validate_color(UNDEFINED), Ok(()));
    assert_eq!(
        validate_color(-5).unwrap_err().to_string(),
        "color -5 is negative; a color must be 0 or more, or UNDEFINED (-32766) for a process \
         that joins no new communicator"
    );
    assert_eq!(
        validate_color(-1),
        Err(SplitError::InvalidColor { color: -1 })
    );
    assert_eq!(
        validate_color(i32::MIN),
        Err(SplitError::InvalidColor { color: i32::MIN })
    );
}

#[test]
fn split_errors() {
    let parent = Group::world(3);
    let bad = entries(&[(0, 0), (-7, 0), (-1, 0)]);
    // Every entry is checked, whatever color the caller asks for.
    for color in [0, UNDEFINED] {
        assert_eq!(
            split_group(&parent, &bad, color).unwrap_err().to_string(),
            "entries[1]: color -7 is negative; a color must be 0 or more, or UNDEFINED (-32766) \
             for a process that joins no new communicator"
        );
    }
    assert_eq!(
        split_groups(&parent, &bad).unwrap_err(),
        SplitError::InvalidColorAt {
            index: 1,
            color: -7
        }
    );
    let good = entries(&[(0, 0), (0, 0), (0, 0)]);
    assert_eq!(
        split_group(&parent, &good, -3).unwrap_err(),
        SplitError::InvalidColor { color: -3 }
    );
    assert_eq!(
        split_group(&parent, &good[..2], 0).unwrap_err().to_string(),
        "there are 2 split entries for a parent group of 3 processes; give one (color, key) entry \
         per process, indexed by its rank in the parent"
    );
    assert_eq!(
        split_groups(&Group::world(1), &good).unwrap_err(),
        SplitError::EntryCount {
            entries: 3,
            size: 1
        }
    );
}

/// Reference: repeatedly take the remaining process of that color with the
/// smallest key, the smallest parent rank among equal keys.
fn reference(pairs: &[(i32, i32)], color: i32) -> Vec<u32> {
    let mut left: Vec<usize> = (0..pairs.len()).filter(|&i| pairs[i].0 == color).collect();
    let mut out = Vec::new();
    while !left.is_empty() {
        let mut best = 0;
        for j in 1..left.len() {
            let (a, b) = (left[j], left[best]);
            if pairs[a].1 < pairs[b].1 || (pairs[a].1 == pairs[b].1 && a < b) {
                best = j;
            }
        }
        out.push(left.remove(best) as u32);
    }
    out
}

fn split_pairs() -> impl Strategy<Value = Vec<(i32, i32)>> {
    proptest::collection::vec(
        (prop_oneof![4 => 0..4i32, 1 => Just(UNDEFINED)], -3..4i32),
        0..24,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn split_matches_reference(pairs in split_pairs(), sparse in any::<bool>()) {
        let e = entries(&pairs);
        let parent = Group::new((0..pairs.len() as u32).map(|r| if sparse { 1000 + r * 7919 } else { r }).rev().collect()).unwrap();
        let all = split_groups(&parent, &e).unwrap();
        let mut expect_all = BTreeMap::new();
        for color in 0..4 {
            let ranks = reference(&pairs, color);
            prop_assert_eq!(split_members(&e, color), ranks.clone());
            let members: Vec<u32> = ranks.iter().map(|&r| parent.members()[r as usize]).collect();
            let one = split_group(&parent, &e, color).unwrap().unwrap();
            prop_assert_eq!(one.members().to_vec(), members.clone());
            if !members.is_empty() {
                expect_all.insert(color, members);
            }
        }
        let got_all: BTreeMap<i32, Vec<u32>> = all.into_iter().map(|(c, g)| (c, g.members().to_vec())).collect();
        prop_assert_eq!(got_all, expect_all);
        // Every process with a color is in exactly one new group.
        let placed: usize = (0..4).map(|c| split_members(&e, c).len()).sum();
        prop_assert_eq!(placed, pairs.iter().filter(|p| p.0 != UNDEFINED).count());
    }
}
