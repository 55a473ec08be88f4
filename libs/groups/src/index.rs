//! The world rank → group rank index every [`Group`](crate::Group) builds
//! once, at construction: a direct table when the group is dense, a sorted
//! vector searched by bisection otherwise.

/// The table entry of a world rank that is not in the group.
const ABSENT: u32 = u32::MAX;

/// Finds a member's rank from its world rank.
#[derive(Debug)]
pub(crate) enum RankIndex {
    /// `table[world_rank]` is the rank, or [`ABSENT`]. Used when the
    /// largest world rank is below twice the group size, so the table is
    /// no larger than the sorted vector would be (4 bytes per slot against
    /// 8 per member).
    Dense(Box<[u32]>),
    /// `(world_rank, rank)` pairs sorted by world rank.
    Sparse(Box<[(u32, u32)]>),
}

impl RankIndex {
    /// The index of `members` (world ranks, position = group rank), or the
    /// positions `(first, second)` of the first repeated world rank in
    /// list order (the smallest `second`).
    pub(crate) fn build(members: &[u32]) -> Result<Self, (usize, usize)> {
        let Some(&max) = members.iter().max() else {
            return Ok(RankIndex::Dense(Box::new([])));
        };
        let slots = max as usize + 1;
        if slots <= members.len().saturating_mul(2) {
            let mut table = vec![ABSENT; slots];
            for (rank, &world) in members.iter().enumerate() {
                let slot = &mut table[world as usize];
                if *slot != ABSENT {
                    return Err((*slot as usize, rank));
                }
                *slot = rank as u32;
            }
            Ok(RankIndex::Dense(table.into_boxed_slice()))
        } else {
            let mut pairs: Vec<(u32, u32)> = members
                .iter()
                .enumerate()
                .map(|(rank, &world)| (world, rank as u32))
                .collect();
            pairs.sort_unstable();
            // Among equal world ranks, sorted by rank, the pair (first
            // occurrence, second occurrence) has the smallest second
            // position of that world rank.
            let repeat = pairs
                .windows(2)
                .filter(|w| w[0].0 == w[1].0)
                .map(|w| (w[0].1 as usize, w[1].1 as usize))
                .min_by_key(|&(_, second)| second);
            match repeat {
                Some(positions) => Err(positions),
                None => Ok(RankIndex::Sparse(pairs.into_boxed_slice())),
            }
        }
    }

    /// The group rank of `world_rank`, if it is a member.
    pub(crate) fn get(&self, world_rank: u32) -> Option<u32> {
        match self {
            RankIndex::Dense(table) => table
                .get(world_rank as usize)
                .copied()
                .filter(|&r| r != ABSENT),
            RankIndex::Sparse(pairs) => pairs
                .binary_search_by_key(&world_rank, |&(w, _)| w)
                .ok()
                .map(|i| pairs[i].1),
        }
    }

    /// Whether this is the direct table (for tests).
    #[cfg(test)]
    pub(crate) fn is_dense(&self) -> bool {
        matches!(self, RankIndex::Dense(_))
    }
}

#[cfg(test)]
mod tests {
    use super::RankIndex;

    #[test]
    fn dense_and_sparse_agree() {
        let dense = RankIndex::build(&[3, 0, 2, 1]).unwrap();
        assert!(dense.is_dense());
        let sparse = RankIndex::build(&[300, 0, 20_000, 1]).unwrap();
        assert!(!sparse.is_dense());
        assert_eq!(dense.get(3), Some(0));
        assert_eq!(dense.get(1), Some(3));
        assert_eq!(dense.get(4), None);
        assert_eq!(dense.get(u32::MAX), None);
        assert_eq!(sparse.get(300), Some(0));
        assert_eq!(sparse.get(20_000), Some(2));
        assert_eq!(sparse.get(2), None);
    }

    #[test]
    fn repeats_are_reported_by_their_first_second_occurrence() {
        // Dense: 5 at 1 and 4, 2 at 2 and 3 -> the first repeat in list
        // order is position 3.
        assert_eq!(RankIndex::build(&[0, 5, 2, 2, 5]).unwrap_err(), (2, 3));
        // Sparse: the same shape with large world ranks.
        assert_eq!(
            RankIndex::build(&[0, 50_000, 20_000, 20_000, 50_000]).unwrap_err(),
            (2, 3)
        );
        // Three occurrences: the second one is reported.
        assert_eq!(
            RankIndex::build(&[90_000, 1, 90_000, 90_000]).unwrap_err(),
            (0, 2)
        );
    }
}
