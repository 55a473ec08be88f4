//! Rank arithmetic shared by the algorithms: ring neighbours, relative
//! ranks and binomial trees.

/// `(rank + d) mod size`, without overflow.
pub(crate) fn ring_add(rank: u32, d: u64, size: u32) -> u32 {
    ((u64::from(rank) + d) % u64::from(size)) as u32
}

/// `(rank − d) mod size`, without overflow.
pub(crate) fn ring_sub(rank: u32, d: u64, size: u32) -> u32 {
    let size64 = u64::from(size);
    ((u64::from(rank) + size64 - d % size64) % size64) as u32
}

/// The largest power of two not above `n` (`n` ≥ 1).
pub(crate) fn prev_power_of_two(n: u32) -> u32 {
    1 << (31 - n.leading_zeros())
}

/// A binomial tree over relative ranks `0..size` (relative rank 0 is the
/// root): the parent of `v` is `v` with its lowest set bit cleared, and
/// the subtree of `v` is the relative ranks `v..min(v + lowbit(v), size)`
/// (all of them for the root), so a subtree is a contiguous range. The
/// children of `v` are `v + 2^j` for `2^j < lowbit(v)`, and the child
/// `v + 2^j` owns `v + 2^j .. v + 2^(j+1)`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Binomial {
    /// This rank's relative rank.
    pub(crate) vrank: u32,
    /// The number of ranks.
    pub(crate) size: u32,
}

impl Binomial {
    /// The tree of `size` ranks rooted at `root`, seen from `rank`
    /// (relative rank = `rank − root mod size`).
    pub(crate) fn new(rank: u32, root: u32, size: u32) -> Self {
        Binomial {
            vrank: ring_sub(rank, u64::from(root), size),
            size,
        }
    }

    /// The lowest set bit of the relative rank (for the root: a bit above
    /// every child).
    fn low_bit(self) -> u64 {
        if self.vrank == 0 {
            u64::from(self.size).next_power_of_two()
        } else {
            u64::from(self.vrank & self.vrank.wrapping_neg())
        }
    }

    /// The relative rank of the parent (`None` at the root).
    pub(crate) fn parent(self) -> Option<u32> {
        (self.vrank != 0).then(|| self.vrank & (self.vrank - 1))
    }

    /// The relative ranks of the children, smallest subtree first.
    pub(crate) fn children(self) -> Vec<u32> {
        let mut out = Vec::new();
        let mut mask = 1u64;
        while mask < self.low_bit() {
            let child = u64::from(self.vrank) + mask;
            if child >= u64::from(self.size) {
                break;
            }
            out.push(child as u32);
            mask <<= 1;
        }
        out
    }

    /// The end (exclusive) of the subtree of relative rank `v`.
    pub(crate) fn subtree_end(self, v: u32) -> u32 {
        let tree = Binomial {
            vrank: v,
            size: self.size,
        };
        (u64::from(v) + tree.low_bit()).min(u64::from(self.size)) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_arithmetic() {
        assert_eq!(ring_add(3, 2, 4), 1);
        assert_eq!(ring_sub(1, 3, 4), 2);
        assert_eq!(ring_sub(0, 0, 1), 0);
    }

    #[test]
    fn binomial_covers_every_rank_once() {
        for size in 1..40 {
            let mut seen = vec![0; size as usize];
            for v in 0..size {
                let tree = Binomial { vrank: v, size };
                for c in tree.children() {
                    assert_eq!(Binomial { vrank: c, size }.parent(), Some(v));
                    seen[c as usize] += 1;
                }
                // Children's subtrees tile the subtree after v.
                let mut next = v + 1;
                for c in tree.children() {
                    assert_eq!(c, next);
                    next = tree.subtree_end(c);
                }
                assert_eq!(next, tree.subtree_end(v));
            }
            assert_eq!(seen[0], 0);
            assert!(seen[1..].iter().all(|&n| n == 1));
        }
    }
}
