//! Pairing local and remote interfaces: a maximum-weight bipartite matching
//! over the [reachability](crate::reachability) weights (reference 001
//! §11: "We use graph theory and give each possible connection a weight
//! ... This allows the library to select the best connections between
//! nodes. This method also supports striping but prevents more than one
//! connection to any interface").
//!
//! - **Maximum weight.** The chosen pairs maximise the total weight; pairs
//!   of weight 0 ([`Quality::NoConnection`]) are never chosen. Open MPI
//!   4.1/5.0 solves a slightly different problem, *maximum cardinality*
//!   first and then minimum cost (`opal_bp_graph_solve_bipartite_assignment`),
//!   which prefers two slow pairs to one fast one; the issue and reference
//!   ask for the best connections, so oxmpi maximises weight. With weights
//!   of similar size, as in the reference's example, the two agree.
//! - **Deterministic, and the same from both ends.** Among several
//!   maximum-weight matchings the result is fixed by a total order on the
//!   pairs: heavier first, then a caller's key, then the indexes. The
//!   matching is built greedily in that order, keeping a pair whenever some
//!   maximum-weight matching contains it together with the pairs already
//!   kept — so the result does not depend on the solver's internals. For
//!   interfaces [`pair_interfaces`] uses a key that does not depend on
//!   which side is local (the two addresses, sorted), and the weights are
//!   symmetric, so two processes pairing their interfaces independently
//!   choose the same connections. (Open MPI gets that agreement by putting
//!   the process with the smaller name on the left of the graph.)
//! - **Solver.** Each optimum is computed with the Kuhn–Munkres (Hungarian)
//!   algorithm of the `pathfinding` crate, O(n³) for n = the larger side.
//!   The greedy tie-break solves at most one sub-problem per pair, so the
//!   worst case is O(n_local · n_remote · n³). Hosts have a handful of
//!   interfaces: in a release build a dense 16 × 16 graph takes about
//!   0.2 ms and 64 × 64 about 16 ms (`matching_timings`, an ignored test).

use std::cmp::Reverse;

use pathfinding::prelude::{kuhn_munkres, Matrix};

use crate::interfaces::Interface;
use crate::reachability::Quality;

/// Largest weight the matching works with; larger ones count as this
/// (keeps every sum far from overflowing `i64`). The reachability weights
/// stay below 2^39.
pub const MAX_WEIGHT: u64 = 1 << 48;

/// One pair of a matching.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Matched {
    /// Index of the left vertex (row).
    pub row: usize,
    /// Index of the right vertex (column).
    pub col: usize,
    /// Its weight (> 0).
    pub weight: u64,
}

/// A maximum-weight matching of the `weights` matrix (`weights[row][col]`;
/// short rows count as 0 beyond their end). Pairs of weight 0 are never
/// chosen. Ties are broken towards heavier pairs, then smaller `(row,
/// col)`. Sorted by row.
pub fn max_weight_matching(weights: &[Vec<u64>]) -> Vec<Matched> {
    let rows = weights.len();
    let cols = weights.iter().map(Vec::len).max().unwrap_or(0);
    max_weight_matching_by(
        rows,
        cols,
        |r, c| weights[r].get(c).copied().unwrap_or(0),
        |_, _| (),
    )
}

/// A maximum-weight matching between `rows` left and `cols` right vertices,
/// with `weight(row, col)` (0: no edge) and a tie-break `key(row, col)`.
///
/// Among all maximum-weight matchings, the result is the one the following
/// greedy builds: take the pairs in order of weight (heaviest first), then
/// `key` (smallest first), then `(row, col)`, and keep a pair whenever a
/// maximum-weight matching exists that contains it and every pair kept so
/// far. The result therefore depends only on the weights and keys. Sorted
/// by row.
pub fn max_weight_matching_by<K: Ord>(
    rows: usize,
    cols: usize,
    weight: impl Fn(usize, usize) -> u64,
    key: impl Fn(usize, usize) -> K,
) -> Vec<Matched> {
    let w: Vec<Vec<i64>> = (0..rows)
        .map(|r| {
            (0..cols)
                .map(|c| i64::try_from(weight(r, c).min(MAX_WEIGHT)).unwrap_or(0))
                .collect()
        })
        .collect();
    let mut edges: Vec<(usize, usize)> = (0..rows)
        .flat_map(|r| (0..cols).map(move |c| (r, c)))
        .filter(|&(r, c)| w[r][c] > 0)
        .collect();
    edges.sort_by_cached_key(|&(r, c)| (Reverse(w[r][c]), key(r, c), r, c));

    let mut free_rows: Vec<usize> = (0..rows).collect();
    let mut free_cols: Vec<usize> = (0..cols).collect();
    let (mut remaining, mut current) = optimum(&w, &free_rows, &free_cols);
    let mut kept = Vec::new();
    for (r, c) in edges {
        if remaining == 0 {
            break;
        }
        if !free_rows.contains(&r) || !free_cols.contains(&c) {
            continue;
        }
        if let Some(pos) = current.iter().position(|&p| p == (r, c)) {
            // The optimum at hand contains the pair: the rest of it is an
            // optimum of what remains.
            current.swap_remove(pos);
        } else {
            let sub_rows: Vec<usize> = free_rows.iter().copied().filter(|&x| x != r).collect();
            let sub_cols: Vec<usize> = free_cols.iter().copied().filter(|&x| x != c).collect();
            let (sub_total, sub_pairs) = optimum(&w, &sub_rows, &sub_cols);
            if sub_total + w[r][c] != remaining {
                // No maximum-weight matching (with the pairs kept) contains it.
                continue;
            }
            current = sub_pairs;
        }
        free_rows.retain(|&x| x != r);
        free_cols.retain(|&x| x != c);
        remaining -= w[r][c];
        kept.push(Matched {
            row: r,
            col: c,
            weight: u64::try_from(w[r][c]).unwrap_or(0),
        });
    }
    kept.sort_by_key(|m| (m.row, m.col));
    kept
}

/// The maximum total weight of a matching between `rows` and `cols` (subsets
/// of `w`'s indexes) and the pairs of positive weight of one such matching.
fn optimum(w: &[Vec<i64>], rows: &[usize], cols: &[usize]) -> (i64, Vec<(usize, usize)>) {
    if rows.is_empty() || cols.is_empty() {
        return (0, Vec::new());
    }
    // Kuhn–Munkres assigns every row, so the rows must be the smaller side;
    // weight-0 assignments are simply dropped afterwards.
    let transpose = rows.len() > cols.len();
    let (left, right) = if transpose {
        (cols, rows)
    } else {
        (rows, cols)
    };
    let at = |l: usize, r: usize| {
        if transpose {
            w[right[r]][left[l]]
        } else {
            w[left[l]][right[r]]
        }
    };
    let matrix = Matrix::from_fn(left.len(), right.len(), |(l, r)| at(l, r));
    let (total, assignment) = kuhn_munkres(&matrix);
    let pairs = assignment
        .iter()
        .enumerate()
        .filter(|&(l, &r)| at(l, r) > 0)
        .map(|(l, &r)| {
            if transpose {
                (right[r], left[l])
            } else {
                (left[l], right[r])
            }
        })
        .collect();
    (total, pairs)
}

/// One connection between a local and a remote interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Connection {
    /// Index into the local interfaces.
    pub local: usize,
    /// Index into the remote interfaces.
    pub remote: usize,
    /// Its class.
    pub quality: Quality,
    /// Its weight (> 0).
    pub weight: u64,
}

/// The connections the tcp BTL makes to a peer: a maximum-weight matching of
/// the `local` interfaces (this process's, after
/// [selection](crate::if_list::IfSelection::select)) with the peer's
/// `remote` ones (from its contact card), weighted by
/// [`reach`](crate::reachability::reach). At most one connection per
/// interface on either side; sorted by local index.
///
/// Empty when no pair can connect: the caller reports the peer as
/// unreachable and can show [`weight_table`](crate::reachability::weight_table)
/// to explain why.
///
/// Ties are broken by the two interfaces' addresses, prefix lengths and
/// bandwidths, as a sorted pair, so the peer computing
/// `pair_interfaces(remote, local)` gets the same connections mirrored
/// (unless two pairs tie on all of that, which needs the same addresses on
/// both sides).
pub fn pair_interfaces(local: &[Interface], remote: &[Interface]) -> Vec<Connection> {
    let table = crate::reachability::weight_table(local, remote);
    let side_key = |i: &Interface| (i.addr, i.prefix_len, i.bandwidth_mbps);
    let matched = max_weight_matching_by(
        local.len(),
        remote.len(),
        |l, r| table[l][r].weight,
        |l, r| {
            let (a, b) = (side_key(&local[l]), side_key(&remote[r]));
            if a <= b {
                (a, b)
            } else {
                (b, a)
            }
        },
    );
    matched
        .into_iter()
        .map(|m| Connection {
            local: m.row,
            remote: m.col,
            quality: table[m.row][m.col].quality,
            weight: m.weight,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(m: &[Matched]) -> Vec<(usize, usize)> {
        m.iter().map(|m| (m.row, m.col)).collect()
    }

    #[test]
    fn empty_and_degenerate() {
        assert!(max_weight_matching(&[]).is_empty());
        assert!(max_weight_matching(&[vec![], vec![]]).is_empty());
        assert!(max_weight_matching(&[vec![0, 0], vec![0, 0]]).is_empty());
        assert_eq!(pairs(&max_weight_matching(&[vec![7]])), [(0, 0)]);
    }

    #[test]
    fn weight_zero_is_never_used() {
        // A full assignment would have to use a 0; the matching leaves row 1 out.
        let m = max_weight_matching(&[vec![5, 0], vec![3, 0]]);
        assert_eq!(pairs(&m), [(0, 0)]);
        assert_eq!(m[0].weight, 5);
    }

    #[test]
    fn maximum_weight_not_greedy() {
        // Greedy on the heaviest pair (0,0)=10 would give 10 + 1; the optimum
        // is 9 + 9.
        let m = max_weight_matching(&[vec![10, 9], vec![9, 1]]);
        assert_eq!(pairs(&m), [(0, 1), (1, 0)]);
    }

    #[test]
    fn maximum_weight_not_maximum_cardinality() {
        // One fast pair beats two slow ones (Open MPI would take the two).
        let m = max_weight_matching(&[vec![100, 1], vec![1, 0]]);
        assert_eq!(pairs(&m), [(0, 0)]);
    }

    #[test]
    fn rectangular_both_ways() {
        let wide = [vec![1, 5, 3]];
        assert_eq!(pairs(&max_weight_matching(&wide)), [(0, 1)]);
        let tall = [vec![1], vec![5], vec![3]];
        assert_eq!(pairs(&max_weight_matching(&tall)), [(1, 0)]);
        let m = max_weight_matching(&[vec![4, 0, 0, 3], vec![0, 0, 2, 3]]);
        assert_eq!(pairs(&m), [(0, 0), (1, 3)]);
    }

    #[test]
    fn ties_break_towards_heavier_pairs_then_indexes() {
        // Both matchings weigh 20: {(0,0)=10,(1,1)=10} and {(0,1)=15,(1,0)=5}.
        // The heaviest single pair (0,1) wins.
        let m = max_weight_matching(&[vec![10, 15], vec![5, 10]]);
        assert_eq!(pairs(&m), [(0, 1), (1, 0)]);
        // All equal: the smallest indexes first.
        let m = max_weight_matching(&[vec![1, 1], vec![1, 1]]);
        assert_eq!(pairs(&m), [(0, 0), (1, 1)]);
        // The key decides before the indexes.
        let m = max_weight_matching_by(2, 2, |_, _| 1, |r, c| if (r, c) == (0, 1) { 0 } else { 1 });
        assert_eq!(pairs(&m), [(0, 1), (1, 0)]);
    }

    #[test]
    fn huge_weights_are_clamped_not_overflowed() {
        let m = max_weight_matching(&[vec![u64::MAX, u64::MAX], vec![u64::MAX, 1]]);
        assert_eq!(m.len(), 2);
        assert!(m.iter().all(|m| m.weight <= MAX_WEIGHT));
    }
}
