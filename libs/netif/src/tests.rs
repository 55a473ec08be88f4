//! Tests across the modules: reference 001's two-node example from
//! interface lists to connections, and property tests.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr};

use proptest::prelude::*;

use crate::if_list::{IfSelection, ParamNames};
use crate::interfaces::Interface;
use crate::matching::{max_weight_matching, pair_interfaces, Connection};
use crate::reachability::{reach, Quality};

/// Parameter names for messages (any will do).
const NAMES: ParamNames = ParamNames {
    include: "net_if_include",
    exclude: "net_if_exclude",
};

fn iface(name: &str, index: u32, addr: &str) -> Interface {
    Interface::parse(name, index, addr).unwrap()
}

fn node_a() -> Vec<Interface> {
    vec![
        iface("lo", 1, "127.0.0.1/8"),
        iface("eth0", 2, "10.8.47.1/24"),
        iface("ibd0", 3, "192.168.1.1/24"),
        iface("ibd1", 4, "192.168.2.2/24"),
    ]
}

fn node_b() -> Vec<Interface> {
    vec![
        iface("lo", 1, "127.0.0.1/8"),
        iface("eth0", 2, "10.8.47.2/24"),
        iface("ibd0", 3, "192.168.1.2/24"),
    ]
}

/// The interfaces a node publishes and pairs with: the default selection.
fn selected(ifs: &[Interface]) -> Vec<Interface> {
    IfSelection::parse(NAMES, "", "")
        .unwrap()
        .select(ifs)
        .used()
        .cloned()
        .collect()
}

/// `(local name, remote name, remote address)` per connection.
fn describe(
    local: &[Interface],
    remote: &[Interface],
    c: &[Connection],
) -> Vec<(String, String, String)> {
    c.iter()
        .map(|c| {
            (
                local[c.local].name.clone(),
                remote[c.remote].name.clone(),
                remote[c.remote].addr.to_string(),
            )
        })
        .collect()
}

/// Reference 001 §11: lo0 excluded, the bipartite graph of weights 2/1,
/// and "two connections being established between the two nodes":
/// eth0–eth0 and ibd0–ibd0 (NodeA connects to 10.8.47.2 and 192.168.1.2,
/// NodeB to 192.168.1.1, as in the reference's verbose output).
#[test]
fn reference_001_two_node_example() {
    let a = selected(&node_a());
    let b = selected(&node_b());
    assert_eq!(
        a.iter().map(|i| i.name.as_str()).collect::<Vec<_>>(),
        ["eth0", "ibd0", "ibd1"]
    );
    assert_eq!(
        b.iter().map(|i| i.name.as_str()).collect::<Vec<_>>(),
        ["eth0", "ibd0"]
    );

    let from_a = pair_interfaces(&a, &b);
    assert_eq!(
        describe(&a, &b, &from_a),
        [
            ("eth0".into(), "eth0".into(), "10.8.47.2".into()),
            ("ibd0".into(), "ibd0".into(), "192.168.1.2".into()),
        ]
    );
    assert!(from_a
        .iter()
        .all(|c| c.quality == Quality::PrivateSameNetwork && c.quality.rank() == 2));
    assert!(from_a.iter().all(|c| c.weight == 8080));

    let from_b = pair_interfaces(&b, &a);
    assert_eq!(
        describe(&b, &a, &from_b),
        [
            ("eth0".into(), "eth0".into(), "10.8.47.1".into()),
            ("ibd0".into(), "ibd0".into(), "192.168.1.1".into()),
        ]
    );
}

/// The same example with the faster InfiniBand interfaces given their
/// bandwidth: still the same two connections, heavier on ibd0.
#[test]
fn reference_001_example_with_bandwidths() {
    let mut a = selected(&node_a());
    let mut b = selected(&node_b());
    a[1].bandwidth_mbps = 40_000;
    a[2].bandwidth_mbps = 40_000;
    b[1].bandwidth_mbps = 40_000;
    let c = pair_interfaces(&a, &b);
    assert_eq!(
        c.iter()
            .map(|c| (c.local, c.remote, c.weight))
            .collect::<Vec<_>>(),
        [(0, 0, 8080), (1, 1, 80 * 40_001)]
    );
}

/// No pair can connect: an empty pairing (the caller reports the peer
/// unreachable).
#[test]
fn unreachable_peer_gives_no_connection() {
    let a = [iface("eth0", 2, "10.0.0.1/24")];
    let b = [iface("eth0", 2, "2001:db8::1/64")];
    assert!(pair_interfaces(&a, &b).is_empty());
    assert!(pair_interfaces(&a, &[]).is_empty());
    assert!(pair_interfaces(&[], &b).is_empty());
}

/// A public/private pair is tried (reference 001 §11), after better ones.
#[test]
fn private_public_pair_is_a_last_resort() {
    let a = [
        iface("eth0", 2, "10.0.0.1/24"),
        iface("eth1", 3, "130.1.0.1/16"),
    ];
    let b = [iface("eth0", 2, "130.1.0.2/16")];
    let c = pair_interfaces(&a, &b);
    assert_eq!(c.len(), 1);
    assert_eq!((c[0].local, c[0].quality), (1, Quality::PublicSameNetwork));
    let c = pair_interfaces(&a[..1], &b);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].quality, Quality::PrivateDifferentNetwork);
}

/// Three identical interfaces on each side, all on one network: the tie is
/// broken by addresses, the same from both ends.
#[test]
fn ties_agree_from_both_ends() {
    let a = [
        iface("e0", 2, "10.0.0.3/16"),
        iface("e1", 3, "10.0.0.1/16"),
        iface("e2", 4, "10.0.0.2/16"),
    ];
    let b = [
        iface("e0", 2, "10.0.1.2/16"),
        iface("e1", 3, "10.0.1.3/16"),
        iface("e2", 4, "10.0.1.1/16"),
    ];
    let ab: HashSet<(usize, usize)> = pair_interfaces(&a, &b)
        .iter()
        .map(|c| (c.local, c.remote))
        .collect();
    let ba: HashSet<(usize, usize)> = pair_interfaces(&b, &a)
        .iter()
        .map(|c| (c.remote, c.local))
        .collect();
    assert_eq!(ab.len(), 3);
    assert_eq!(ab, ba);
    // Smallest addresses together: 10.0.0.1–10.0.1.1, 10.0.0.2–10.0.1.2, ...
    assert!(ab.contains(&(1, 2)) && ab.contains(&(2, 0)) && ab.contains(&(0, 1)));
}

/// Timings of the matching on dense graphs (not asserted; run with
/// `cargo test -p oxmpi-framework-btl --release -- --ignored --nocapture`).
#[test]
#[ignore]
fn matching_timings() {
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move |modulo: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % modulo
    };
    for distinct in [4, 1_000_000] {
        for n in [4usize, 8, 16, 32, 64] {
            // Few distinct weights: many ties; many: many pairs the greedy
            // tie-break must reject with a solve each.
            let w: Vec<Vec<u64>> = (0..n)
                .map(|_| (0..n).map(|_| next(distinct) * 1000).collect())
                .collect();
            let start = std::time::Instant::now();
            let m = max_weight_matching(&w);
            println!(
                "{n:>3} x {n:<3} weights from {distinct:>7} values: {:>10.3} ms ({} pairs)",
                start.elapsed().as_secs_f64() * 1e3,
                m.len()
            );
        }
    }
}

// ---- property tests ----------------------------------------------------

/// Every matching of at most `rows` × `cols` by brute force: the best total.
fn brute_force_best(w: &[Vec<u64>], row: usize, used: &mut Vec<bool>) -> u64 {
    if row == w.len() {
        return 0;
    }
    let mut best = brute_force_best(w, row + 1, used);
    for c in 0..used.len() {
        if !used[c] && w[row][c] > 0 {
            used[c] = true;
            best = best.max(w[row][c] + brute_force_best(w, row + 1, used));
            used[c] = false;
        }
    }
    best
}

fn matrix() -> impl Strategy<Value = Vec<Vec<u64>>> {
    (0usize..6, 0usize..6)
        .prop_flat_map(|(r, c)| prop::collection::vec(prop::collection::vec(0u64..5, c), r))
}

/// Interface lists from a small pool of addresses (so networks coincide)
/// with random prefixes, bandwidths, loopback and IPv6 entries; addresses
/// are distinct across both lists.
fn two_sides() -> impl Strategy<Value = (Vec<Interface>, Vec<Interface>)> {
    let pool: Vec<IpAddr> = {
        let mut p: Vec<IpAddr> = Vec::new();
        for third in 0..3u8 {
            for fourth in 1..5u8 {
                p.push(IpAddr::V4(Ipv4Addr::new(10, 0, third, fourth)));
                p.push(IpAddr::V4(Ipv4Addr::new(130, 1, third, fourth)));
            }
        }
        for s in [
            "127.0.0.1",
            "127.0.0.2",
            "fe80::1",
            "fe80::2",
            "2001:db8::1",
            "2001:db8::2",
            "2001:db8:1::1",
        ] {
            p.push(s.parse().unwrap());
        }
        p
    };
    let n = pool.len();
    (
        Just(pool),
        prop::sample::subsequence((0..n).collect::<Vec<_>>(), 0..=8).prop_shuffle(),
        0usize..=8,
        prop::collection::vec(
            (
                prop::sample::select(vec![8u8, 16, 23, 24, 64, 128]),
                prop::sample::select(vec![0u32, 100, 1000, 10_000]),
            ),
            8,
        ),
    )
        .prop_map(|(pool, picks, split, attrs)| {
            let split = split.min(picks.len());
            let make = |k: usize, p: usize| {
                let (prefix, bw) = attrs[k];
                let addr = pool[p];
                let prefix = if addr.is_ipv4() {
                    prefix.min(32)
                } else {
                    prefix
                };
                Interface::new(format!("if{k}"), k as u32 + 1, addr, prefix).with_bandwidth(bw)
            };
            let all: Vec<Interface> = picks.iter().enumerate().map(|(k, &p)| make(k, p)).collect();
            (all[..split].to_vec(), all[split..].to_vec())
        })
}

proptest! {
    /// Parsing any text never panics, and selecting with whatever parsed
    /// never panics, decides every entry and uses at most one address per
    /// device.
    #[test]
    fn parse_and_select_never_panic(
        include in "[a-z0-9,./:*?^ \\t]{0,24}",
        exclude in prop_oneof!["", "[a-z0-9,./:*?^ ]{0,24}", any::<String>()],
        (local, remote) in two_sides(),
    ) {
        let ifs: Vec<Interface> = local.into_iter().chain(remote).collect();
        if let Ok(sel) = IfSelection::parse(NAMES, &include, &exclude) {
            let s = sel.select(&ifs);
            prop_assert_eq!(s.decisions.len(), ifs.len());
            let mut devices = HashSet::new();
            for i in s.used() {
                prop_assert!(devices.insert(i.index), "device {} used twice", i.index);
                prop_assert!(i.up);
            }
            for n in &s.notices {
                let _ = n.to_string();
            }
            for d in &s.decisions {
                let _ = d.to_string();
            }
        } else {
            let err = IfSelection::parse(NAMES, &include, &exclude).unwrap_err();
            prop_assert!(!err.to_string().is_empty());
        }
    }

    /// Any string at all, in either list.
    #[test]
    fn parse_any_string(include in any::<String>(), exclude in any::<String>()) {
        let _ = IfSelection::parse(NAMES, &include, "");
        let _ = IfSelection::parse(NAMES, "", &exclude);
        let _ = IfSelection::parse(NAMES, &include, &exclude);
    }

    /// The matching never uses a vertex twice, never uses a weight-0 pair,
    /// reaches the brute-force optimum, and is maximal (no free pair of
    /// positive weight is left).
    #[test]
    fn matching_is_a_maximum_weight_matching(w in matrix()) {
        let m = max_weight_matching(&w);
        let rows: HashSet<usize> = m.iter().map(|m| m.row).collect();
        let cols: HashSet<usize> = m.iter().map(|m| m.col).collect();
        prop_assert_eq!(rows.len(), m.len());
        prop_assert_eq!(cols.len(), m.len());
        for p in &m {
            prop_assert!(p.weight > 0);
            prop_assert_eq!(p.weight, w[p.row][p.col]);
        }
        let total: u64 = m.iter().map(|m| m.weight).sum();
        let cols_n = w.first().map_or(0, Vec::len);
        prop_assert_eq!(total, brute_force_best(&w, 0, &mut vec![false; cols_n]));
        for (r, row) in w.iter().enumerate() {
            for (c, &x) in row.iter().enumerate() {
                prop_assert!(x == 0 || rows.contains(&r) || cols.contains(&c),
                    "pair ({}, {}) of weight {} could be added", r, c, x);
            }
        }
    }

    /// Weights are symmetric and 0 exactly for NO_CONNECTION, and two
    /// processes pairing independently agree on the connections.
    #[test]
    fn pairing_is_symmetric((a, b) in two_sides()) {
        for x in &a {
            for y in &b {
                let r = reach(x, y);
                prop_assert_eq!(r, reach(y, x));
                prop_assert_eq!(r.weight == 0, r.quality == Quality::NoConnection);
            }
        }
        let ab: HashSet<(usize, usize)> =
            pair_interfaces(&a, &b).iter().map(|c| (c.local, c.remote)).collect();
        let ba: HashSet<(usize, usize)> =
            pair_interfaces(&b, &a).iter().map(|c| (c.remote, c.local)).collect();
        prop_assert_eq!(ab, ba);
    }
}
