//! Range semantics (`MPI_Group_range_incl`, `MPI_Group_range_excl`):
//! worked examples, every error sentence, and random triplets against the
//! one-step-at-a-time reference of `common`.

mod common;

use oxmpi_groups::{expand_ranges, Group, GroupError, RangeAt};
use proptest::prelude::*;

fn expand(ranges: &[(i32, i32, i32)], size: u32) -> Vec<u32> {
    expand_ranges(ranges, size).unwrap()
}

fn err(ranges: &[(i32, i32, i32)], size: u32) -> String {
    expand_ranges(ranges, size).unwrap_err().to_string()
}

#[test]
fn strides_up_and_down() {
    assert_eq!(expand(&[(0, 9, 3)], 10), [0, 3, 6, 9]);
    // `last` is not reached, and need not be a rank of the group.
    assert_eq!(expand(&[(0, 10, 4)], 10), [0, 4, 8]);
    assert_eq!(expand(&[(1, 14, 7)], 10), [1, 8]);
    // Going down.
    assert_eq!(expand(&[(9, 0, -4)], 10), [9, 5, 1]);
    assert_eq!(expand(&[(5, -3, -5)], 10), [5, 0]);
    assert_eq!(expand(&[(3, 0, -1)], 10), [3, 2, 1, 0]);
    // first == last names one rank, whatever the stride.
    assert_eq!(expand(&[(4, 4, 1), (2, 2, -3), (7, 7, 100)], 10), [4, 2, 7]);
    // A stride longer than the span names only `first`.
    assert_eq!(expand(&[(2, 5, 50), (9, 6, -50)], 10), [2, 9]);
    // Several ranges keep their order.
    assert_eq!(
        expand(&[(6, 9, 1), (0, 4, 2), (5, 1, -4)], 10),
        [6, 7, 8, 9, 0, 2, 4, 5, 1]
    );
    assert_eq!(expand(&[], 10), Vec::<u32>::new());
    // Extreme values do not overflow.
    assert_eq!(expand(&[(0, i32::MAX - 1, i32::MAX)], 1), [0]);
    assert_eq!(expand(&[(0, i32::MIN + 1, i32::MIN)], 1), [0]);
    let reaches = |r: (i32, i32, i32)| match expand_ranges(&[r], 1) {
        Err(GroupError::RangeOutOfRange { rank, .. }) => rank,
        other => panic!("{other:?}"),
    };
    assert_eq!(reaches((0, i32::MAX, i32::MAX)), i32::MAX);
    assert_eq!(reaches((0, i32::MIN, i32::MIN)), i32::MIN);
    assert_eq!(reaches((i32::MIN, i32::MAX, 1)), i32::MIN);
    assert_eq!(reaches((i32::MAX, i32::MIN, i32::MIN)), i32::MAX);
    assert_eq!(reaches((0, i32::MIN, -1)), -1);
}

#[test]
fn range_incl_and_excl_on_groups() {
    let g = Group::new(vec![50, 51, 52, 53, 54, 55]).unwrap();
    assert_eq!(
        g.range_incl(&[(5, 0, -2), (0, 2, 2)]).unwrap().members(),
        &[55, 53, 51, 50, 52]
    );
    assert_eq!(
        g.range_excl(&[(5, 0, -2), (0, 2, 2)]).unwrap().members(),
        &[54]
    );
    assert_eq!(g.range_incl(&[]).unwrap(), Group::empty());
    assert_eq!(g.range_excl(&[]).unwrap(), g);
    // A call to incl is range_incl with each rank i as (i, i, 1).
    let ranks = [3, 0, 5];
    let triplets: Vec<_> = ranks.iter().map(|&r| (r, r, 1)).collect();
    assert_eq!(g.incl(&ranks).unwrap(), g.range_incl(&triplets).unwrap());
    assert_eq!(g.excl(&ranks).unwrap(), g.range_excl(&triplets).unwrap());
}

#[test]
fn range_errors() {
    assert_eq!(
        err(&[(0, 3, 1), (4, 4, 1), (8, 9, 1), (0, 9, 0)], 100),
        "range 3 (first 0, last 9, stride 0) has stride 0; use a positive stride to go up from \
         first to last, or a negative one to go down"
    );
    assert_eq!(
        err(&[(5, 2, 1)], 10),
        "range 0 (first 5, last 2, stride 1) has a positive stride but last is below first; use \
         a negative stride (e.g. -1) to go down from 5 to 2"
    );
    assert_eq!(
        err(&[(1, 1, 1), (2, 5, -3)], 10),
        "range 1 (first 2, last 5, stride -3) has a negative stride but last is above first; use \
         a positive stride (e.g. 3) to go up from 2 to 5"
    );
    assert_eq!(
        err(&[(7, 9, 1)], 6),
        "range 0 (first 7, last 9, stride 1) includes rank 7, which is outside the group of 6 \
         processes (ranks 0 to 5)"
    );
    // The first computed rank that leaves the group is named (8, not 11).
    assert_eq!(
        err(&[(2, 12, 3)], 6),
        "range 0 (first 2, last 12, stride 3) includes rank 8, which is outside the group of 6 \
         processes (ranks 0 to 5)"
    );
    assert_eq!(
        err(&[(4, -9, -3)], 6),
        "range 0 (first 4, last -9, stride -3) includes rank -2 (PROC_NULL), which is outside \
         the group of 6 processes (ranks 0 to 5)"
    );
    assert_eq!(
        err(&[(-1, 3, 1)], 6),
        "range 0 (first -1, last 3, stride 1) includes rank -1, which is outside the group of 6 \
         processes (ranks 0 to 5)"
    );
    assert_eq!(
        err(&[(0, 0, 1)], 0),
        "range 0 (first 0, last 0, stride 1) includes rank 0, which is outside the empty group \
         (it has no ranks)"
    );
    assert_eq!(
        err(&[(0, 8, 2), (9, 9, 1), (3, 5, 1)], 10),
        "range 2 (first 3, last 5, stride 1) includes rank 4, which range 0 (first 0, last 8, \
         stride 2) already includes; each rank may be included once"
    );
    assert_eq!(
        expand_ranges(&[(9, 1, -4), (0, 9, 6), (5, 5, 1)], 10).unwrap_err(),
        GroupError::RangeDuplicate {
            range: RangeAt::new(2, (5, 5, 1)),
            rank: 5,
            earlier: RangeAt::new(0, (9, 1, -4)),
        }
    );
    // The group operations report the same errors.
    let g = Group::world(4);
    assert_eq!(
        g.range_incl(&[(0, 3, 0)]).unwrap_err(),
        GroupError::ZeroStride {
            range: RangeAt::new(0, (0, 3, 0))
        }
    );
    assert_eq!(
        g.range_excl(&[(3, 0, 1)]).unwrap_err(),
        GroupError::WrongDirection {
            range: RangeAt::new(0, (3, 0, 1))
        }
    );
}

fn triplet() -> impl Strategy<Value = (i32, i32, i32)> {
    (
        -2..14i32,
        -2..14i32,
        prop_oneof![-5..=-1i32, 1..=5i32, Just(0), Just(20), Just(-20)],
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn expansion_matches_reference(ranges in proptest::collection::vec(triplet(), 0..4), size in 0..12u32) {
        let got = expand_ranges(&ranges, size);
        match common::expand(&ranges, size as usize) {
            Some(expect) => {
                let expect: Vec<u32> = expect.iter().map(|&r| r as u32).collect();
                prop_assert_eq!(got.unwrap(), expect);
            }
            None => prop_assert!(got.is_err(), "{ranges:?} in {size}: expected an error, got {got:?}"),
        }
    }

    #[test]
    fn errors_name_the_offending_range(ranges in proptest::collection::vec(triplet(), 1..4), size in 0..12u32) {
        if let Err(e) = expand_ranges(&ranges, size) {
            // The ranges before the offending one are fine on their own.
            let at = match &e {
                GroupError::ZeroStride { range }
                | GroupError::WrongDirection { range }
                | GroupError::RangeOutOfRange { range, .. }
                | GroupError::RangeDuplicate { range, .. } => *range,
                other => return Err(TestCaseError::fail(format!("unexpected {other}"))),
            };
            prop_assert_eq!(at, RangeAt::new(at.index, ranges[at.index]));
            prop_assert!(common::expand(&ranges[..at.index], size as usize).is_some());
            prop_assert!(common::expand(&ranges[..=at.index], size as usize).is_none());
            match e {
                GroupError::RangeOutOfRange { rank, .. } => {
                    let (f, l, s) = ranges[at.index];
                    let walked = common::walk(f, l, s).unwrap();
                    let first_bad = walked.into_iter().find(|&r| r < 0 || r >= size as i64).unwrap();
                    prop_assert_eq!(i64::from(rank), first_bad);
                }
                GroupError::RangeDuplicate { rank, earlier, .. } => {
                    let (f, l, s) = ranges[earlier.index];
                    prop_assert!(common::walk(f, l, s).unwrap().contains(&i64::from(rank)));
                    prop_assert!(earlier.index < at.index);
                }
                _ => {}
            }
        }
    }

    #[test]
    fn range_incl_is_incl_of_the_expansion(m in common::members(), ranges in proptest::collection::vec(triplet(), 0..4)) {
        let g = Group::new(m.clone()).unwrap();
        match common::expand(&ranges, m.len()) {
            Some(ranks) => {
                prop_assert_eq!(g.range_incl(&ranges).unwrap(), g.incl(&ranks).unwrap());
                prop_assert_eq!(g.range_excl(&ranges).unwrap(), g.excl(&ranks).unwrap());
                prop_assert_eq!(g.range_incl(&ranges).unwrap().members().to_vec(), common::incl(&m, &ranks).unwrap());
                prop_assert_eq!(g.range_excl(&ranges).unwrap().members().to_vec(), common::excl(&m, &ranks).unwrap());
            }
            None => {
                prop_assert!(g.range_incl(&ranges).is_err());
                prop_assert!(g.range_excl(&ranges).is_err());
            }
        }
    }
}
