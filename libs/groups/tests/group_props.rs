//! Group operations against the naive references of `common`, on random
//! dense and sparse groups.

mod common;

use oxmpi_groups::{Comparison, Group, GroupError, Translated, PROC_NULL};
use proptest::prelude::*;

fn group(members: &[u32]) -> Group {
    Group::new(members.to_vec()).unwrap()
}

/// Rank lists that are often valid permutation prefixes and sometimes
/// repeat or leave the group.
fn rank_list(n: usize) -> impl Strategy<Value = Vec<i32>> {
    let n = n as i32;
    prop_oneof![
        3 => Just((0..n).collect::<Vec<_>>())
            .prop_shuffle()
            .prop_flat_map(move |p| (Just(p), 0..=n as usize))
            .prop_map(|(p, k)| p[..k].to_vec()),
        1 => proptest::collection::vec(-3..n + 3, 0..8),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn new_rejects_exactly_the_repeats(list in proptest::collection::vec(0..30u32, 0..20), spread in any::<bool>()) {
        let list: Vec<u32> = list.iter().map(|&x| if spread { x * 70_001 } else { x }).collect();
        let mut sorted = list.clone();
        sorted.sort();
        sorted.dedup();
        match Group::new(list.clone()) {
            Ok(g) => {
                prop_assert_eq!(sorted.len(), list.len());
                prop_assert_eq!(g.members(), &list[..]);
            }
            Err(GroupError::DuplicateWorldRank { world_rank, first, second }) => {
                prop_assert!(sorted.len() < list.len());
                // `second` is the first position whose value appeared before.
                let expect = (0..list.len()).find(|&j| list[..j].contains(&list[j])).unwrap();
                prop_assert_eq!(second, expect);
                prop_assert_eq!(list[first], world_rank);
                prop_assert_eq!(list[second], world_rank);
                prop_assert_eq!(Some(first), list.iter().position(|&x| x == world_rank));
            }
            Err(e) => prop_assert!(false, "unexpected {e}"),
        }
    }

    #[test]
    fn lookups_match_linear_search(m in common::members(), probe in 0..2_000_000u32) {
        let g = group(&m);
        prop_assert_eq!(g.size() as usize, m.len());
        for (r, &w) in m.iter().enumerate() {
            prop_assert_eq!(g.rank_of(w), Some(r as u32));
            prop_assert_eq!(g.world_rank(r as u32), Some(w));
        }
        prop_assert_eq!(g.rank_of(probe), common::position(&m, probe));
        prop_assert_eq!(g.world_rank(m.len() as u32), None);
    }

    #[test]
    fn incl_matches_reference(m in common::members().prop_flat_map(|m| { let n = m.len(); (Just(m), rank_list(n)) })) {
        let (m, ranks) = m;
        let got = group(&m).incl(&ranks);
        match common::incl(&m, &ranks) {
            Some(expect) => prop_assert_eq!(got.unwrap().members().to_vec(), expect),
            None => prop_assert!(got.is_err()),
        }
    }

    #[test]
    fn excl_matches_reference(m in common::members().prop_flat_map(|m| { let n = m.len(); (Just(m), rank_list(n)) })) {
        let (m, ranks) = m;
        let got = group(&m).excl(&ranks);
        match common::excl(&m, &ranks) {
            Some(expect) => prop_assert_eq!(got.unwrap().members().to_vec(), expect),
            None => prop_assert!(got.is_err()),
        }
    }

    #[test]
    fn incl_and_excl_partition_the_group(m in common::members().prop_flat_map(|m| { let n = m.len(); (Just(m), rank_list(n)) })) {
        let (m, ranks) = m;
        let g = group(&m);
        if let (Ok(i), Ok(e)) = (g.incl(&ranks), g.excl(&ranks)) {
            prop_assert_eq!(i.size() + e.size(), g.size());
            prop_assert_eq!(i.intersection(&e), Group::empty());
            prop_assert_ne!(i.union(&e).compare(&g), Comparison::Unequal);
        }
    }

    #[test]
    fn set_operations_match_reference((a, b) in common::two_members()) {
        let (ga, gb) = (group(&a), group(&b));
        prop_assert_eq!(ga.union(&gb).members().to_vec(), common::union(&a, &b));
        prop_assert_eq!(ga.intersection(&gb).members().to_vec(), common::intersection(&a, &b));
        prop_assert_eq!(ga.difference(&gb).members().to_vec(), common::difference(&a, &b));
    }

    #[test]
    fn set_laws((a, b) in common::two_members()) {
        let (ga, gb) = (group(&a), group(&b));
        let (u, i, d) = (ga.union(&gb), ga.intersection(&gb), ga.difference(&gb));
        // |A ∪ B| = |A| + |B| − |A ∩ B|
        prop_assert_eq!(u.size() + i.size(), ga.size() + gb.size());
        // (A ∖ B) and (A ∩ B) split A.
        prop_assert_eq!(d.size() + i.size(), ga.size());
        prop_assert_eq!(d.intersection(&gb), Group::empty());
        // A ∪ B and B ∪ A have the same members; A ∩ B and B ∩ A too.
        prop_assert_ne!(u.compare(&gb.union(&ga)), Comparison::Unequal);
        prop_assert_ne!(i.compare(&gb.intersection(&ga)), Comparison::Unequal);
        // A is a prefix of A ∪ B.
        prop_assert_eq!(&u.members()[..a.len()], &a[..]);
        // Idempotence.
        prop_assert_eq!(ga.union(&ga), ga.clone());
        prop_assert_eq!(ga.intersection(&ga), ga.clone());
        prop_assert_eq!(ga.difference(&ga), Group::empty());
    }

    #[test]
    fn compare_matches_reference((a, b) in common::two_members(), same in any::<bool>()) {
        let b = if same { let mut c = a.clone(); c.reverse(); c } else { b };
        let expect = match common::compare(&a, &b) {
            0 => Comparison::Ident,
            1 => Comparison::Similar,
            _ => Comparison::Unequal,
        };
        prop_assert_eq!(group(&a).compare(&group(&b)), expect);
        prop_assert_eq!(group(&b).compare(&group(&a)), expect);
        prop_assert_eq!(group(&a) == group(&b), expect == Comparison::Ident);
    }

    #[test]
    fn translate_matches_reference((a, b) in common::two_members(), raw in proptest::collection::vec(-3..45i32, 0..10)) {
        let (ga, gb) = (group(&a), group(&b));
        let got = ga.translate_ranks(&raw, &gb);
        let bad = raw.iter().position(|&r| r != PROC_NULL && (r < 0 || r as usize >= a.len()));
        match bad {
            Some(index) => prop_assert_eq!(got.unwrap_err(), GroupError::RankOutOfRange { index, rank: raw[index], size: a.len() as u32 }),
            None => {
                let got = got.unwrap();
                for (t, &r) in got.iter().zip(&raw) {
                    let expect = if r == PROC_NULL {
                        Translated::ProcNull
                    } else {
                        match common::position(&b, a[r as usize]) {
                            Some(p) => Translated::Rank(p),
                            None => Translated::Undefined,
                        }
                    };
                    prop_assert_eq!(*t, expect);
                }
            }
        }
    }

    #[test]
    fn translate_round_trips((a, b) in common::two_members()) {
        let (ga, gb) = (group(&a), group(&b));
        let all: Vec<i32> = (0..a.len() as i32).collect();
        let there = ga.translate_ranks(&all, &gb).unwrap();
        for (r, t) in there.iter().enumerate() {
            match *t {
                Translated::Rank(s) => {
                    let back = gb.translate_ranks(&[s as i32], &ga).unwrap();
                    prop_assert_eq!(back, vec![Translated::Rank(r as u32)]);
                }
                Translated::Undefined => prop_assert!(!b.contains(&a[r])),
                Translated::ProcNull => prop_assert!(false, "no PROC_NULL was given"),
            }
        }
        // Into itself, every rank is itself.
        let same = ga.translate_ranks(&all, &ga).unwrap();
        let expect: Vec<Translated> = (0..a.len() as u32).map(Translated::Rank).collect();
        prop_assert_eq!(same, expect);
    }
}
