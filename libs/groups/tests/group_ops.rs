//! Group operations on hand-worked examples, and every error sentence.

use oxmpi_groups::{
    Comparison, Group, GroupError, Translated, MAX_WORLD_RANK, PROC_NULL, UNDEFINED,
};

fn g(members: &[u32]) -> Group {
    Group::new(members.to_vec()).unwrap()
}

#[test]
fn construction_and_lookup() {
    let world = Group::world(4);
    assert_eq!(world.members(), &[0, 1, 2, 3]);
    assert_eq!(world.size(), 4);
    assert!(Group::empty().is_empty());
    assert_eq!(Group::empty().size(), 0);
    assert_eq!(Group::default(), Group::empty());

    let h = g(&[7, 3, 100_000]);
    assert_eq!(h.world_rank(0), Some(7));
    assert_eq!(h.world_rank(2), Some(100_000));
    assert_eq!(h.world_rank(3), None);
    assert_eq!(h.rank_of(3), Some(1));
    assert_eq!(h.rank_of(100_000), Some(2));
    assert_eq!(h.rank_of(4), None);
    assert!(h.contains(7));
    assert!(!h.contains(0));
    assert_eq!(format!("{h:?}"), "Group([7, 3, 100000])");

    // Clones share the list.
    let c = h.clone();
    assert!(std::ptr::eq(c.members(), h.members()));
}

#[test]
fn large_groups_index_every_member() {
    // A dense world of 100k and a sparse subset: every lookup agrees with
    // the members list.
    let world = Group::world(100_000);
    for w in (0..100_000).step_by(997) {
        assert_eq!(world.rank_of(w), Some(w));
    }
    assert_eq!(world.rank_of(100_000), None);
    let sparse = Group::new((0..100_000u32).rev().map(|i| i * 13 + 5).collect()).unwrap();
    for (r, &w) in sparse.members().iter().enumerate().step_by(101) {
        assert_eq!(sparse.rank_of(w), Some(r as u32));
        assert_eq!(sparse.rank_of(w + 1), None);
    }
}

#[test]
fn incl_and_excl() {
    let h = g(&[10, 11, 12, 13, 14]);
    assert_eq!(h.incl(&[4, 0, 2]).unwrap().members(), &[14, 10, 12]);
    assert_eq!(h.incl(&[]).unwrap(), Group::empty());
    assert_eq!(h.excl(&[4, 0, 2]).unwrap().members(), &[11, 13]);
    assert_eq!(h.excl(&[]).unwrap(), h);
    assert_eq!(h.excl(&[0, 1, 2, 3, 4]).unwrap(), Group::empty());
}

#[test]
fn set_operations() {
    let a = g(&[5, 1, 9, 3]);
    let b = g(&[3, 8, 5, 0]);
    assert_eq!(a.union(&b).members(), &[5, 1, 9, 3, 8, 0]);
    assert_eq!(b.union(&a).members(), &[3, 8, 5, 0, 1, 9]);
    assert_eq!(a.intersection(&b).members(), &[5, 3]);
    assert_eq!(b.intersection(&a).members(), &[3, 5]);
    assert_eq!(a.difference(&b).members(), &[1, 9]);
    assert_eq!(b.difference(&a).members(), &[8, 0]);
    assert_eq!(a.union(&Group::empty()), a);
    assert_eq!(a.intersection(&Group::empty()), Group::empty());
}

#[test]
fn translate_and_compare() {
    let a = g(&[5, 1, 9, 3]);
    let b = g(&[3, 8, 5]);
    let t = a.translate_ranks(&[0, 1, PROC_NULL, 3, 0], &b).unwrap();
    assert_eq!(
        t,
        [
            Translated::Rank(2),
            Translated::Undefined,
            Translated::ProcNull,
            Translated::Rank(0),
            Translated::Rank(2)
        ]
    );
    let raw: Vec<i32> = t.iter().map(|t| t.to_mpi()).collect();
    assert_eq!(raw, [2, UNDEFINED, PROC_NULL, 0, 2]);

    assert_eq!(a.compare(&a.clone()), Comparison::Ident);
    assert_eq!(a.compare(&g(&[5, 1, 9, 3])), Comparison::Ident);
    assert_eq!(a.compare(&g(&[1, 5, 9, 3])), Comparison::Similar);
    assert_eq!(a.compare(&g(&[5, 1, 9])), Comparison::Unequal);
    assert_eq!(a.compare(&g(&[5, 1, 9, 4])), Comparison::Unequal);
    assert_eq!(Group::empty().compare(&Group::empty()), Comparison::Ident);
}

fn err<T: std::fmt::Debug>(r: Result<T, GroupError>) -> String {
    r.unwrap_err().to_string()
}

#[test]
fn construction_errors() {
    assert_eq!(
        err(Group::new(vec![4, 2, 9, 2, 4])),
        "world rank 2 is listed twice (members[1] and members[3]); a group names each process once"
    );
    assert_eq!(
        Group::new(vec![0, 90_000, 5, 90_000]).unwrap_err(),
        GroupError::DuplicateWorldRank {
            world_rank: 90_000,
            first: 1,
            second: 3
        }
    );
    assert_eq!(
        err(Group::new(vec![1, MAX_WORLD_RANK + 1])),
        "members[1]: world rank 2147483648 is above 2147483647, the largest rank an MPI int can hold"
    );
    assert!(Group::new(vec![MAX_WORLD_RANK, 0]).is_ok());
}

#[test]
fn rank_errors() {
    let h = Group::world(4);
    assert_eq!(
        err(h.incl(&[0, 7])),
        "ranks[1]: rank 7 is outside the group of 4 processes (ranks 0 to 3)"
    );
    assert_eq!(
        err(h.excl(&[-1])),
        "ranks[0]: rank -1 is outside the group of 4 processes (ranks 0 to 3)"
    );
    assert_eq!(
        err(h.incl(&[PROC_NULL])),
        "ranks[0]: rank -2 (PROC_NULL) is outside the group of 4 processes (ranks 0 to 3)"
    );
    assert_eq!(
        err(h.incl(&[1, 2, 3, 2])),
        "ranks[3]: rank 2 is listed twice (first at ranks[1]); list each rank once"
    );
    assert_eq!(
        err(h.excl(&[3, 3])),
        "ranks[1]: rank 3 is listed twice (first at ranks[0]); list each rank once"
    );
    assert_eq!(
        err(Group::empty().incl(&[0])),
        "ranks[0]: rank 0 is outside the empty group (it has no ranks)"
    );
    assert_eq!(
        err(Group::world(1).incl(&[1])),
        "ranks[0]: rank 1 is outside the group of 1 process (rank 0)"
    );
    assert_eq!(
        err(h.translate_ranks(&[0, PROC_NULL, UNDEFINED], &h)),
        "ranks[2]: rank -32766 (UNDEFINED) is outside the group of 4 processes (ranks 0 to 3)"
    );
    assert_eq!(
        h.translate_ranks(&[4], &h).unwrap_err(),
        GroupError::RankOutOfRange {
            index: 0,
            rank: 4,
            size: 4
        }
    );
}
