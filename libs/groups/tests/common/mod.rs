//! Naive reference implementations (plain `Vec`s, linear searches, loops
//! that step one rank at a time), written independently of the crate so
//! that the tests compare two different computations.

#![allow(dead_code)]

use proptest::prelude::*;

/// Whether `ranks` are all in `0..n` and pairwise distinct (quadratic).
pub fn valid_distinct(ranks: &[i32], n: usize) -> bool {
    for (i, &r) in ranks.iter().enumerate() {
        if r < 0 || r as usize >= n {
            return false;
        }
        for &s in &ranks[..i] {
            if s == r {
                return false;
            }
        }
    }
    true
}

/// `MPI_Group_incl` on a plain list, or `None` if erroneous.
pub fn incl(members: &[u32], ranks: &[i32]) -> Option<Vec<u32>> {
    if !valid_distinct(ranks, members.len()) {
        return None;
    }
    Some(ranks.iter().map(|&r| members[r as usize]).collect())
}

/// `MPI_Group_excl` on a plain list, or `None` if erroneous.
pub fn excl(members: &[u32], ranks: &[i32]) -> Option<Vec<u32>> {
    if !valid_distinct(ranks, members.len()) {
        return None;
    }
    let mut out = Vec::new();
    for (i, &m) in members.iter().enumerate() {
        if !ranks.contains(&(i as i32)) {
            out.push(m);
        }
    }
    Some(out)
}

/// The ranks of one triplet, stepping one at a time, or `None` if the
/// stride is 0 or points away from `last`.
pub fn walk(first: i32, last: i32, stride: i32) -> Option<Vec<i64>> {
    if stride == 0 || (stride > 0 && first > last) || (stride < 0 && first < last) {
        return None;
    }
    let mut out = Vec::new();
    let mut r = first as i64;
    if stride > 0 {
        while r <= last as i64 {
            out.push(r);
            r += stride as i64;
        }
    } else {
        while r >= last as i64 {
            out.push(r);
            r += stride as i64;
        }
    }
    Some(out)
}

/// All ranks the triplets name in a group of `n`, or `None` if erroneous.
pub fn expand(ranges: &[(i32, i32, i32)], n: usize) -> Option<Vec<i32>> {
    let mut all: Vec<i32> = Vec::new();
    for &(f, l, s) in ranges {
        for r in walk(f, l, s)? {
            if r < 0 || r >= n as i64 || all.contains(&(r as i32)) {
                return None;
            }
            all.push(r as i32);
        }
    }
    Some(all)
}

pub fn union(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = a.to_vec();
    for &x in b {
        if !a.contains(&x) {
            out.push(x);
        }
    }
    out
}

pub fn intersection(a: &[u32], b: &[u32]) -> Vec<u32> {
    a.iter().copied().filter(|x| b.contains(x)).collect()
}

pub fn difference(a: &[u32], b: &[u32]) -> Vec<u32> {
    a.iter().copied().filter(|x| !b.contains(x)).collect()
}

/// 0 ident, 1 similar, 2 unequal.
pub fn compare(a: &[u32], b: &[u32]) -> u8 {
    if a == b {
        return 0;
    }
    let (mut x, mut y) = (a.to_vec(), b.to_vec());
    x.sort();
    y.sort();
    if x == y {
        1
    } else {
        2
    }
}

/// Position of `x` in `list`, by linear search.
pub fn position(list: &[u32], x: u32) -> Option<u32> {
    list.iter().position(|&y| y == x).map(|p| p as u32)
}

/// Distinct world ranks in random order: dense (from `0..48`) or sparse
/// (the same picks spread far apart).
pub fn members() -> impl Strategy<Value = Vec<u32>> {
    (
        proptest::sample::subsequence((0..48u32).collect::<Vec<_>>(), 0..=48),
        any::<bool>(),
    )
        .prop_flat_map(|(picks, sparse)| {
            let picks: Vec<u32> = if sparse {
                picks.iter().map(|&p| p * 40_009 + 7).collect()
            } else {
                picks
            };
            Just(picks).prop_shuffle()
        })
}

/// Two groups drawn from the same universe, so they overlap.
pub fn two_members() -> impl Strategy<Value = (Vec<u32>, Vec<u32>)> {
    (any::<bool>(), 0..=40usize, 0..=40usize).prop_flat_map(|(sparse, n, m)| {
        let universe: Vec<u32> = (0..40u32)
            .map(|p| if sparse { p * 40_009 + 7 } else { p })
            .collect();
        (
            proptest::sample::subsequence(universe.clone(), n).prop_shuffle(),
            proptest::sample::subsequence(universe, m).prop_shuffle(),
        )
    })
}
