//! `ContextIds` on its own: the pool, masks, claims, tentative
//! reservations, creations, every error sentence, and random call
//! sequences against a model made of plain sets.

use std::collections::BTreeSet;

use oxmpi_groups::{
    ContextError, ContextIds, Reservation, DEFAULT_LIMIT, FIRST_FREE, MASK_COMPLETE, MASK_SETTLED,
    MAX_LIMIT,
};
use proptest::prelude::*;

fn bit(mask: &[u64], id: u32) -> bool {
    mask[(id / 64) as usize] >> (id % 64) & 1 == 1
}

#[test]
fn a_fresh_pool() {
    let ids = ContextIds::new();
    assert_eq!(ids.limit(), DEFAULT_LIMIT);
    assert_eq!(ids.mask_words(), 1024);
    assert_eq!(ids.available(), DEFAULT_LIMIT - FIRST_FREE);
    let mask = ids.free_mask();
    assert_eq!(
        mask[0] & (MASK_COMPLETE | MASK_SETTLED),
        MASK_COMPLETE | MASK_SETTLED
    );
    assert!((2..DEFAULT_LIMIT).all(|id| bit(&mask, id)));
    assert!(ids.in_use(0) && ids.in_use(1));
    assert!(!ids.in_use(2) && !ids.in_use(DEFAULT_LIMIT));
    assert_eq!(format!("{:?}", ContextIds::default()), format!("{ids:?}"));

    for (limit, words) in [(3, 1), (63, 1), (64, 1), (65, 2), (130, 3)] {
        let ids = ContextIds::with_limit(limit).unwrap();
        let mask = ids.free_mask();
        assert_eq!((ids.mask_words(), mask.len()), (words, words));
        assert_eq!(ids.available(), limit - 2);
        for id in 2..words as u32 * 64 {
            assert_eq!(bit(&mask, id), id < limit, "limit {limit} id {id}");
        }
    }
}

#[test]
fn pool_errors() {
    assert_eq!(
        ContextIds::with_limit(2).unwrap_err().to_string(),
        "a pool limit of 2 leaves no id to hand out; it must be at least 3 (ids 0 and 1 are \
         MPI_COMM_WORLD's and MPI_COMM_SELF's)"
    );
    assert_eq!(
        ContextIds::with_limit(MAX_LIMIT + 1)
            .unwrap_err()
            .to_string(),
        "a pool limit of 16777217 is above the maximum of 16777216"
    );
    assert!(ContextIds::with_limit(MAX_LIMIT).is_ok());
}

#[test]
fn claim_and_release() {
    let mut ids = ContextIds::with_limit(100).unwrap();
    ids.claim(2).unwrap();
    ids.claim(99).unwrap();
    assert!(ids.in_use(2) && ids.in_use(99) && !ids.in_use(3));
    assert_eq!(ids.available(), 96);
    assert!(!bit(&ids.free_mask(), 99));
    assert_eq!(
        ids.claim(2).unwrap_err().to_string(),
        "context id 2 is already in use in this process; agree on an id from fresh masks"
    );
    ids.release(2).unwrap();
    assert!(!ids.in_use(2));
    assert_eq!(
        ids.release(2).unwrap_err().to_string(),
        "context id 2 is not in use, so it cannot be released (released twice?)"
    );
    assert_eq!(
        ids.claim(0).unwrap_err().to_string(),
        "context id 0 belongs to MPI_COMM_WORLD; ids 0 and 1 are never handed out, claimed or \
         released"
    );
    assert_eq!(
        ids.release(1).unwrap_err().to_string(),
        "context id 1 belongs to MPI_COMM_SELF; ids 0 and 1 are never handed out, claimed or \
         released"
    );
    assert_eq!(
        ids.claim(100).unwrap_err().to_string(),
        "context id 100 is outside the pool (ids 2 to 99)"
    );
    assert_eq!(
        ids.release(u32::MAX),
        Err(ContextError::OutOfPool {
            id: u32::MAX,
            limit: 100
        })
    );
}

#[test]
fn lowest_common_ignores_the_flags() {
    assert_eq!(ContextIds::lowest_common(&[]), None);
    assert_eq!(ContextIds::lowest_common(&[0b11, 0]), None);
    assert_eq!(ContextIds::lowest_common(&[0b111, 0]), Some(2));
    assert_eq!(ContextIds::lowest_common(&[0b11, 1 << 5]), Some(69));
    assert_eq!(ContextIds::lowest_common(&[0, 0, 1 << 63]), Some(191));
    // An AND of three processes' masks.
    let mut a = ContextIds::with_limit(200).unwrap();
    let mut b = ContextIds::with_limit(200).unwrap();
    let mut c = ContextIds::with_limit(200).unwrap();
    for id in 2..70 {
        [&mut a, &mut b, &mut c][id as usize % 3].claim(id).unwrap();
    }
    let anded: Vec<u64> = (0..a.mask_words())
        .map(|w| a.free_mask()[w] & b.free_mask()[w] & c.free_mask()[w])
        .collect();
    assert_eq!(ContextIds::lowest_common(&anded), Some(70));
    b.claim(70).unwrap();
    c.claim(71).unwrap();
    let anded: Vec<u64> = (0..a.mask_words())
        .map(|w| a.free_mask()[w] & b.free_mask()[w] & c.free_mask()[w])
        .collect();
    assert_eq!(ContextIds::lowest_common(&anded), Some(72));
}

#[test]
fn tentative_reservations() {
    let mut ids = ContextIds::with_limit(70).unwrap();
    ids.claim(2).unwrap();
    let mask = ids.free_mask();
    assert_eq!(ids.reserve_tentative(&mask), Ok(Reservation::Reserved(3)));
    assert!(ids.is_tentative(3) && ids.in_use(3));
    assert!(!ids.is_tentative(2) && !ids.is_tentative(0) && !ids.is_tentative(500));
    // A reservation is invisible to masks, clears SETTLED, and blocks claims.
    let after = ids.free_mask();
    assert!(!bit(&after, 3));
    assert_eq!(after[0] & (MASK_COMPLETE | MASK_SETTLED), MASK_COMPLETE);
    let busy = "context id 3 is tentatively reserved by a communicator creation in progress; \
                only confirm or abandon apply to it";
    assert_eq!(ids.claim(3).unwrap_err().to_string(), busy);
    assert_eq!(ids.release(3).unwrap_err().to_string(), busy);
    // The old mask still names 3: a concurrent creation finds it busy.
    assert_eq!(ids.reserve_tentative(&mask), Ok(Reservation::Busy(3)));
    ids.confirm(3).unwrap();
    assert!(ids.in_use(3) && !ids.is_tentative(3));
    assert_eq!(ids.free_mask()[0] & MASK_SETTLED, MASK_SETTLED);
    assert_eq!(
        ids.confirm(3).unwrap_err().to_string(),
        "context id 3 is not tentatively reserved; confirm and abandon take the id \
         reserve_tentative reserved, once"
    );
    assert_eq!(ids.abandon(4), Err(ContextError::NotTentative { id: 4 }));
    assert_eq!(ids.abandon(0), Err(ContextError::Predefined { id: 0 }));

    let next = ids.free_mask();
    assert_eq!(ids.reserve_tentative(&next), Ok(Reservation::Reserved(4)));
    ids.abandon(4).unwrap();
    assert!(!ids.in_use(4));
    assert_eq!(ids.available(), 66);
    ids.release(3).unwrap();
}

#[test]
fn contended_and_exhausted_rounds() {
    let mut ids = ContextIds::with_limit(4).unwrap();
    assert_eq!(ids.reserve_tentative(&[0]), Ok(Reservation::Contended));
    // Complete but not settled, and no common id: someone may abandon one.
    assert_eq!(
        ids.reserve_tentative(&[MASK_COMPLETE]),
        Ok(Reservation::Contended)
    );
    assert_eq!(
        ids.reserve_tentative(&[MASK_COMPLETE | MASK_SETTLED]),
        Ok(Reservation::Exhausted)
    );
    // Ids at or beyond the limit in a foreign mask are not candidates.
    assert_eq!(
        ids.reserve_tentative(&[MASK_COMPLETE | MASK_SETTLED | 1 << 4]),
        Ok(Reservation::Exhausted)
    );
    assert_eq!(
        ids.reserve_tentative(&[0, 0]).unwrap_err().to_string(),
        "the AND-ed mask has 2 words but this pool's masks have 1; every member must use the \
         same pool limit"
    );
    assert_eq!(Reservation::Reserved(5).vote(), Some(true));
    assert_eq!(Reservation::Busy(5).vote(), Some(false));
    assert_eq!(Reservation::Contended.vote(), None);
    assert_eq!(Reservation::Exhausted.vote(), None);
    // Two ids: both taken, one of them only tentatively -> not exhausted.
    let m = ids.free_mask();
    assert_eq!(ids.reserve_tentative(&m), Ok(Reservation::Reserved(2)));
    ids.claim(3).unwrap();
    let m = ids.free_mask();
    assert_eq!(ids.reserve_tentative(&m), Ok(Reservation::Contended));
    ids.confirm(2).unwrap();
    let m = ids.free_mask();
    assert_eq!(ids.reserve_tentative(&m), Ok(Reservation::Exhausted));
}

#[test]
fn creations_and_round_masks() {
    let mut ids = ContextIds::with_limit(64).unwrap();
    assert_eq!(
        ids.round_mask(7).unwrap_err().to_string(),
        "no communicator creation with priority 7 is in progress in this process; call \
         begin_creation first"
    );
    ids.begin_creation(7).unwrap();
    assert_eq!(ids.round_mask(7), Ok(ids.free_mask()));
    assert_eq!(
        ids.begin_creation(7).unwrap_err().to_string(),
        "a communicator creation with priority 7 is already in progress in this process; \
         priorities must be unique among concurrent creations (MPI forbids concurrent \
         collectives on one communicator)"
    );
    ids.begin_creation(3).unwrap();
    assert_eq!(ids.round_mask(7), Ok(vec![0]));
    assert_eq!(ids.round_mask(3), Ok(ids.free_mask()));
    ids.end_creation(3).unwrap();
    assert_eq!(ids.round_mask(7), Ok(ids.free_mask()));
    ids.end_creation(7).unwrap();
    assert_eq!(
        ids.end_creation(7),
        Err(ContextError::NoCreation { priority: 7 })
    );
}

#[derive(Clone, Debug)]
enum Op {
    Claim(u32),
    Release(u32),
    Reserve(u32),
    Confirm(u32),
    Abandon(u32),
}

fn op() -> impl Strategy<Value = Op> {
    let id = 0..80u32;
    prop_oneof![
        id.clone().prop_map(Op::Claim),
        id.clone().prop_map(Op::Release),
        id.clone().prop_map(Op::Reserve),
        id.clone().prop_map(Op::Confirm),
        id.prop_map(Op::Abandon),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Every call against a model: two sets (in use, tentative).
    #[test]
    fn matches_a_set_model(ops in proptest::collection::vec(op(), 0..80)) {
        const LIMIT: u32 = 70;
        let mut ids = ContextIds::with_limit(LIMIT).unwrap();
        let mut used: BTreeSet<u32> = BTreeSet::new();
        let mut tentative: BTreeSet<u32> = BTreeSet::new();
        for op in ops {
            let pool = |id: u32| (2..LIMIT).contains(&id);
            match op {
                Op::Claim(id) => {
                    let ok = pool(id) && !used.contains(&id) && !tentative.contains(&id);
                    prop_assert_eq!(ids.claim(id).is_ok(), ok);
                    if ok { used.insert(id); }
                }
                Op::Release(id) => {
                    let ok = pool(id) && used.contains(&id);
                    prop_assert_eq!(ids.release(id).is_ok(), ok);
                    if ok { used.remove(&id); }
                }
                Op::Reserve(id) => {
                    // A one-member round whose mask names only `id` (and
                    // the flags).
                    let mut mask = vec![0u64; ids.mask_words()];
                    mask[0] = MASK_COMPLETE | MASK_SETTLED;
                    if id < 128 { mask[(id / 64) as usize] |= 1 << (id % 64); }
                    let expect = if !pool(id) {
                        Reservation::Exhausted
                    } else if used.contains(&id) || tentative.contains(&id) {
                        Reservation::Busy(id)
                    } else {
                        tentative.insert(id);
                        Reservation::Reserved(id)
                    };
                    prop_assert_eq!(ids.reserve_tentative(&mask), Ok(expect));
                }
                Op::Confirm(id) => {
                    let ok = tentative.remove(&id);
                    prop_assert_eq!(ids.confirm(id).is_ok(), ok);
                    if ok { used.insert(id); }
                }
                Op::Abandon(id) => {
                    let ok = tentative.remove(&id);
                    prop_assert_eq!(ids.abandon(id).is_ok(), ok);
                }
            }
            let mask = ids.free_mask();
            for id in 0..LIMIT {
                let taken = id < 2 || used.contains(&id) || tentative.contains(&id);
                prop_assert_eq!(ids.in_use(id), taken);
                prop_assert_eq!(ids.is_tentative(id), tentative.contains(&id));
                if id >= 2 { prop_assert_eq!(bit(&mask, id), !taken); }
            }
            prop_assert_eq!(mask[0] & MASK_SETTLED != 0, tentative.is_empty());
            prop_assert_eq!(ids.available() as usize, (LIMIT - 2) as usize - used.len() - tentative.len());
            let lowest = (2..LIMIT).find(|id| !used.contains(id) && !tentative.contains(id));
            prop_assert_eq!(ContextIds::lowest_common(&mask), lowest);
        }
    }
}
