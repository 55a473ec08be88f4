//! How good a connection from a local interface to a remote one would be
//! (reference 001 §10–§11, see docs/references.md; Open MPI computes the
//! same in its `reachable/weighted` component).
//!
//! Every (local, remote) pair gets a [`Quality`] class, and from it and the
//! two bandwidths an integer weight; 0 means "no connection". The tcp BTL
//! then pairs interfaces by a maximum-weight matching
//! ([`matching`](crate::matching)).
//!
//! # Rules
//!
//! 1. **Families.** Addresses of different families (IPv4 and IPv6) never
//!    connect (reference 001 §11: "all interfaces are routable as long as
//!    they have the same address family").
//! 2. **Loopback.** A loopback address (127.0.0.0/8, `::1`, or a device
//!    flagged loopback) connects only to another loopback address: a
//!    loopback socket reaches nothing else, and a remote loopback address
//!    means "the peer's own host" only when the peer is on this host — the
//!    caller offers loopback interfaces only for such peers (they are
//!    excluded by default anyway, reference 001 §4). Two loopback
//!    addresses then follow the rules below (127/8 is not a private range,
//!    so Open MPI rates it public). This is the rule of Open MPI's original
//!    weighted code; the current component has none.
//! 3. **Private and public, IPv4.** Private means inside 10.0.0.0/8,
//!    172.16.0.0/12, 192.168.0.0/16 or 169.254.0.0/16 (Open MPI's
//!    `opal_net_private_ipv4`); anything else is
//!    public. Two public addresses are [`Quality::PublicSameNetwork`] or
//!    [`Quality::PublicDifferentNetwork`]; two private ones
//!    [`Quality::PrivateSameNetwork`] or
//!    [`Quality::PrivateDifferentNetwork`].
//! 4. **One private, one public** gives
//!    [`Quality::PrivateDifferentNetwork`], as reference 001 §11 says ("when
//!    giving a weight to a connection consisting of a private address and a
//!    public address, it will give it the weight of
//!    PRIVATE_DIFFERENT_NETWORK"). *Open MPI 4.1/5.0's weighted component
//!    gives such a pair no connection instead* (it is behind "Unable to find reachable pairing" reports such as ompi#13722).
//!    The reference is this project's specification, and a pair that may
//!    work (through NAT, say) is better tried last than never.
//! 5. **IPv6.** Link-local addresses (`fe80::/10`) play the private role:
//!    two link-local addresses are [`Quality::PrivateSameNetwork`] (whether
//!    they share a link cannot be told). Two other IPv6
//!    addresses are public, same or different network. A link-local
//!    address and another one never connect: a link-local address does not
//!    route beyond its link (Open MPI does the same).
//! 6. **Same network** means that each address lies inside the other's
//!    network: the two addresses agree on the first
//!    `max(local prefix, remote prefix)` bits (reference 001 §10: "the two
//!    IP addresses match after the subnet mask is applied"). Open MPI
//!    applies only the *local* mask; using both makes the weight symmetric,
//!    so that two processes pairing their interfaces independently agree on
//!    the pairs (Open MPI gets that agreement by ordering the two processes
//!    instead). With equal prefixes, the usual case, both rules agree.
//! 7. **Weight** = ⌊q × (min(bw₁, bw₂) + 1 / (1 + |bw₁ − bw₂|))⌋ with q the
//!    quality's [`Quality::factor`] (50, 80, 90, 100) and the bandwidths in
//!    Mbit/s (as Open MPI's `calculate_weight` does): the slower
//!    side bounds the link, and the small second term prefers pairs of
//!    equal speed. It is computed exactly in integers
//!    (q·min + ⌊q / (1 + |Δ|)⌋), where Open MPI evaluates it in floating
//!    point and can come out one lower.
//! 8. **A usable pair never weighs 0.** When a bandwidth is 0 (unknown) the
//!    formula can give 0 (80 × 1/1001); such a pair gets weight 1, so only
//!    [`Quality::NoConnection`] means "no connection".
//!
//! Reference 001's quality numbers (NO_CONNECTION = 0 … PUBLIC_SAME_NETWORK
//! = 4) are the [`Quality::rank`]s; its two-node example uses them without
//! bandwidths. The factors are the current component's, which keep the same
//! order.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};

use crate::interfaces::{mask, Interface};

/// The class of a possible connection, best last (reference 001 §11).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Quality {
    /// The two interfaces cannot connect.
    NoConnection,
    /// Two private addresses on different networks, or one private and one
    /// public address.
    PrivateDifferentNetwork,
    /// Two private addresses on the same network (or two IPv6 link-local
    /// addresses).
    PrivateSameNetwork,
    /// Two public addresses on different networks.
    PublicDifferentNetwork,
    /// Two public addresses on the same network.
    PublicSameNetwork,
}

impl Quality {
    /// Reference 001 §11's number for the class: 0 (NO_CONNECTION) to 4
    /// (PUBLIC_SAME_NETWORK).
    pub const fn rank(self) -> u8 {
        match self {
            Quality::NoConnection => 0,
            Quality::PrivateDifferentNetwork => 1,
            Quality::PrivateSameNetwork => 2,
            Quality::PublicDifferentNetwork => 3,
            Quality::PublicSameNetwork => 4,
        }
    }

    /// The multiplier of the weight formula: 0, 50, 80, 90, 100 (Open MPI's
    /// `reachable/weighted` component).
    pub const fn factor(self) -> u64 {
        match self {
            Quality::NoConnection => 0,
            Quality::PrivateDifferentNetwork => 50,
            Quality::PrivateSameNetwork => 80,
            Quality::PublicDifferentNetwork => 90,
            Quality::PublicSameNetwork => 100,
        }
    }

    /// Reference 001's name for the class (`PRIVATE_SAME_NETWORK`).
    pub const fn name(self) -> &'static str {
        match self {
            Quality::NoConnection => "NO_CONNECTION",
            Quality::PrivateDifferentNetwork => "PRIVATE_DIFFERENT_NETWORK",
            Quality::PrivateSameNetwork => "PRIVATE_SAME_NETWORK",
            Quality::PublicDifferentNetwork => "PUBLIC_DIFFERENT_NETWORK",
            Quality::PublicSameNetwork => "PUBLIC_SAME_NETWORK",
        }
    }
}

impl fmt::Display for Quality {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The quality and weight of one (local, remote) pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Reach {
    /// The class.
    pub quality: Quality,
    /// The weight; 0 exactly when `quality` is [`Quality::NoConnection`].
    pub weight: u64,
}

/// The quality and weight of connecting `local` to `remote` (rules 1–8 of
/// the [module documentation](self)). Symmetric: `reach(a, b) == reach(b,
/// a)`.
pub fn reach(local: &Interface, remote: &Interface) -> Reach {
    let quality = quality(local, remote);
    Reach {
        quality,
        weight: weight(quality, local.bandwidth_mbps, remote.bandwidth_mbps),
    }
}

/// The quality class of connecting `local` to `remote` (rules 1–6).
pub fn quality(local: &Interface, remote: &Interface) -> Quality {
    // Rule 1.
    if local.addr.is_ipv4() != remote.addr.is_ipv4() {
        return Quality::NoConnection;
    }
    // Rule 2.
    if local.is_loopback() != remote.is_loopback() {
        return Quality::NoConnection;
    }
    let same = same_network(local, remote);
    let private = (is_private(local.addr), is_private(remote.addr));
    match (local.addr, private) {
        // Rule 5: link-local with anything else.
        (IpAddr::V6(_), (true, false) | (false, true)) => Quality::NoConnection,
        // Rule 5: two link-local addresses.
        (IpAddr::V6(_), (true, true)) => Quality::PrivateSameNetwork,
        // Rules 3 and 5.
        (_, (false, false)) if same => Quality::PublicSameNetwork,
        (_, (false, false)) => Quality::PublicDifferentNetwork,
        (_, (true, true)) if same => Quality::PrivateSameNetwork,
        // Rules 3 and 4.
        (IpAddr::V4(_), _) => Quality::PrivateDifferentNetwork,
    }
}

/// Rule 7 and 8: the weight of a pair of `quality` between interfaces of
/// `bw_local` and `bw_remote` Mbit/s. 0 for [`Quality::NoConnection`],
/// otherwise at least 1.
pub fn weight(quality: Quality, bw_local: u32, bw_remote: u32) -> u64 {
    let q = quality.factor();
    if q == 0 {
        return 0;
    }
    let min = u64::from(bw_local.min(bw_remote));
    let diff = u64::from(bw_local.abs_diff(bw_remote));
    (q * min + q / (1 + diff)).max(1)
}

/// Whether an address is in the private role: IPv4 10/8, 172.16/12,
/// 192.168/16, 169.254/16 (rule 3), IPv6 link-local `fe80::/10` (rule 5).
pub fn is_private(addr: IpAddr) -> bool {
    match addr {
        IpAddr::V4(a) => is_private_ipv4(a),
        IpAddr::V6(a) => crate::interfaces::is_ipv6_link_local(&a),
    }
}

/// IPv4 private ranges of Open MPI's `opal_net_private_ipv4`.
const PRIVATE_IPV4: [(Ipv4Addr, u8); 4] = [
    (Ipv4Addr::new(10, 0, 0, 0), 8),
    (Ipv4Addr::new(172, 16, 0, 0), 12),
    (Ipv4Addr::new(192, 168, 0, 0), 16),
    (Ipv4Addr::new(169, 254, 0, 0), 16),
];

fn is_private_ipv4(addr: Ipv4Addr) -> bool {
    PRIVATE_IPV4
        .iter()
        .any(|&(net, len)| mask(IpAddr::V4(addr), len) == IpAddr::V4(net))
}

/// Rule 6: each address inside the other's network.
pub fn same_network(a: &Interface, b: &Interface) -> bool {
    if a.addr.is_ipv4() != b.addr.is_ipv4() {
        return false;
    }
    let len = a.prefix_len.max(b.prefix_len);
    mask(a.addr, len) == mask(b.addr, len)
}

/// Every (local, remote) pair with its quality and weight, row by row: the
/// bipartite graph of reference 001 §11, for verbose output and for
/// explaining an unreachable peer.
pub fn weight_table(local: &[Interface], remote: &[Interface]) -> Vec<Vec<Reach>> {
    local
        .iter()
        .map(|l| remote.iter().map(|r| reach(l, r)).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn i(name: &str, addr: &str) -> Interface {
        Interface::parse(name, 1, addr).unwrap()
    }

    /// Rule 1.
    #[test]
    fn families_do_not_mix() {
        let a = i("eth0", "10.0.0.1/24");
        let b = i("eth0", "2001:db8::1/64");
        assert_eq!(quality(&a, &b), Quality::NoConnection);
        assert_eq!(reach(&a, &b).weight, 0);
        // Not even an IPv4-mapped IPv6 address.
        let c = i("eth0", "::ffff:10.0.0.2/120");
        assert_eq!(quality(&a, &c), Quality::NoConnection);
    }

    /// Rule 2.
    #[test]
    fn loopback_connects_only_to_loopback() {
        let lo = i("lo", "127.0.0.1/8");
        let eth = i("eth0", "10.0.0.1/24");
        let public = i("eth1", "8.8.8.1/24");
        assert_eq!(quality(&lo, &eth), Quality::NoConnection);
        assert_eq!(quality(&eth, &lo), Quality::NoConnection);
        assert_eq!(quality(&lo, &public), Quality::NoConnection);
        // 127/8 is not a private range: two loopbacks are public, same network.
        assert_eq!(quality(&lo, &lo), Quality::PublicSameNetwork);
        let lo6 = i("lo", "::1/128");
        assert_eq!(quality(&lo6, &lo6), Quality::PublicSameNetwork);
        assert_eq!(
            quality(&lo6, &i("eth0", "2001:db8::1/64")),
            Quality::NoConnection
        );
        // The device flag counts as well as the address.
        let flagged = i("lo1", "10.0.0.9/24").with_loopback(true);
        assert_eq!(quality(&flagged, &eth), Quality::NoConnection);
    }

    /// Rule 3: the private ranges, and their edges.
    #[test]
    fn private_ranges() {
        for a in [
            "10.0.0.0",
            "10.255.255.255",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.0.1",
            "192.168.255.255",
            "169.254.1.1",
            "fe80::1",
            "febf::1",
        ] {
            assert!(is_private(a.parse().unwrap()), "{a} should be private");
        }
        for a in [
            "9.255.255.255",
            "11.0.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "192.167.255.255",
            "192.169.0.0",
            "169.253.255.255",
            "100.64.0.1",
            "127.0.0.1",
            "8.8.8.8",
            "fec0::1",
            "fd00::1",
            "2001:db8::1",
            "::1",
        ] {
            assert!(!is_private(a.parse().unwrap()), "{a} should be public");
        }
    }

    /// Rules 3 and 6: the four classes between two IPv4 addresses.
    #[test]
    fn ipv4_classes() {
        let q = |a, b| quality(&i("a", a), &i("b", b));
        assert_eq!(q("8.8.8.1/24", "8.8.8.2/24"), Quality::PublicSameNetwork);
        assert_eq!(
            q("8.8.8.1/24", "8.8.9.2/24"),
            Quality::PublicDifferentNetwork
        );
        assert_eq!(q("10.0.0.1/24", "10.0.0.2/24"), Quality::PrivateSameNetwork);
        assert_eq!(
            q("10.0.0.1/24", "10.0.1.2/24"),
            Quality::PrivateDifferentNetwork
        );
        // Different private ranges are different networks.
        assert_eq!(
            q("10.0.0.1/8", "192.168.0.1/16"),
            Quality::PrivateDifferentNetwork
        );
    }

    /// Rule 4: reference 001 §11's sentence about private/public pairs.
    #[test]
    fn private_and_public_is_private_different_network() {
        let private = i("eth0", "192.168.1.1/24");
        let public = i("eth1", "130.1.2.3/16");
        assert_eq!(quality(&private, &public), Quality::PrivateDifferentNetwork);
        assert_eq!(quality(&public, &private), Quality::PrivateDifferentNetwork);
        assert_eq!(reach(&private, &public).weight, 50 * 101);
    }

    /// Rule 5.
    #[test]
    fn ipv6_classes() {
        let q = |a, b| quality(&i("a", a), &i("b", b));
        assert_eq!(q("fe80::1/64", "fe80::2/64"), Quality::PrivateSameNetwork);
        // Link-local addresses are assumed to share the link, whatever the masks say.
        assert_eq!(
            q("fe80::1/64", "fe80:0:0:1::2/64"),
            Quality::PrivateSameNetwork
        );
        assert_eq!(q("fe80::1/64", "2001:db8::2/64"), Quality::NoConnection);
        assert_eq!(q("2001:db8::2/64", "fe80::1/64"), Quality::NoConnection);
        assert_eq!(
            q("2001:db8::1/64", "2001:db8::2/64"),
            Quality::PublicSameNetwork
        );
        assert_eq!(
            q("2001:db8::1/64", "2001:db8:1::2/64"),
            Quality::PublicDifferentNetwork
        );
        // Unique-local addresses count as public, as in Open MPI.
        assert_eq!(q("fd00::1/64", "fd00::2/64"), Quality::PublicSameNetwork);
    }

    /// Rule 6: both masks apply, so the answer is the same from both sides.
    #[test]
    fn same_network_uses_both_prefixes() {
        let wide = i("a", "10.0.0.1/8");
        let narrow = i("b", "10.1.0.1/16");
        // Open MPI, applying only the local mask, would say "same" from the
        // /8 side and "different" from the /16 side.
        assert!(!same_network(&wide, &narrow));
        assert!(!same_network(&narrow, &wide));
        assert_eq!(quality(&wide, &narrow), Quality::PrivateDifferentNetwork);
        // Inside each other's network: same.
        let inner = i("c", "10.0.5.1/16");
        let outer = i("d", "10.0.7.1/8");
        assert!(same_network(&inner, &outer));
        assert!(same_network(&outer, &inner));
        // /0 on both sides: one network.
        assert!(same_network(&i("e", "1.2.3.4/0"), &i("f", "200.1.1.1/0")));
        // A /32 host route matches only itself.
        assert!(!same_network(&i("g", "8.8.8.8/32"), &i("h", "8.8.8.9/32")));
    }

    /// Rule 7: Open MPI's formula, with its own table of f(a, b) for a
    /// quality of 1 scaled by the real factors.
    #[test]
    fn bandwidth_formula() {
        let w = |q, a, b| weight(q, a, b);
        let ps = Quality::PrivateSameNetwork; // 80
                                              // Equal bandwidth: q * (bw + 1).
        assert_eq!(w(ps, 100, 100), 80 * 101);
        assert_eq!(w(Quality::PublicSameNetwork, 10_000, 10_000), 100 * 10_001);
        // min(a, b) + 1/(1+|a-b|): f(1,2) = 1.5, f(1,3) = 1.33, f(10,14) = 10.2,
        // f(11,14) = 11.25 (Open MPI's comment table).
        assert_eq!(w(Quality::PublicSameNetwork, 1, 2), 150);
        assert_eq!(w(Quality::PublicSameNetwork, 1, 3), 133);
        assert_eq!(w(Quality::PublicSameNetwork, 10, 14), 1020);
        assert_eq!(w(Quality::PublicSameNetwork, 14, 11), 1125);
        assert_eq!(w(Quality::PublicSameNetwork, 0, 1), 50);
        assert_eq!(w(Quality::PublicSameNetwork, 0, 0), 100);
        // The slower side bounds the link: 1 Gbit/s to 10 Gbit/s is worth a bit
        // less than 1 Gbit/s to 1 Gbit/s.
        assert_eq!(w(ps, 1_000, 10_000), 80 * 1_000);
        assert!(w(ps, 1_000, 10_000) < w(ps, 1_000, 1_000));
        // Exact where floating point is not: 80 * (100 + 1/5) = 8016.
        assert_eq!(w(ps, 100, 104), 8016);
        // Symmetric.
        assert_eq!(w(ps, 5, 900), w(ps, 900, 5));
        // Largest inputs do not overflow.
        assert_eq!(
            w(Quality::PublicSameNetwork, u32::MAX, u32::MAX),
            100 * (u64::from(u32::MAX) + 1)
        );
    }

    /// Rule 7: a faster link outweighs a better class when it is fast
    /// enough, as in Open MPI.
    #[test]
    fn bandwidth_dominates_class() {
        let slow_public = weight(Quality::PublicSameNetwork, 1_000, 1_000);
        let fast_private = weight(Quality::PrivateDifferentNetwork, 10_000, 10_000);
        assert!(fast_private > slow_public);
    }

    /// Rule 8.
    #[test]
    fn unknown_bandwidth_never_makes_a_pair_unusable() {
        assert_eq!(weight(Quality::PrivateSameNetwork, 0, 1_000), 1);
        assert_eq!(weight(Quality::NoConnection, 1_000, 1_000), 0);
        let a = i("a", "10.0.0.1/24").with_bandwidth(0);
        let b = i("b", "10.0.0.2/24").with_bandwidth(100_000);
        assert_eq!(reach(&a, &b).weight, 1);
    }

    /// The quality numbers and names of reference 001 §11.
    #[test]
    fn reference_numbers() {
        let all = [
            Quality::NoConnection,
            Quality::PrivateDifferentNetwork,
            Quality::PrivateSameNetwork,
            Quality::PublicDifferentNetwork,
            Quality::PublicSameNetwork,
        ];
        let ranks: Vec<u8> = all.iter().map(|q| q.rank()).collect();
        assert_eq!(ranks, [0, 1, 2, 3, 4]);
        let factors: Vec<u64> = all.iter().map(|q| q.factor()).collect();
        assert_eq!(factors, [0, 50, 80, 90, 100]);
        assert_eq!(
            Quality::PrivateSameNetwork.to_string(),
            "PRIVATE_SAME_NETWORK"
        );
        assert!(all.windows(2).all(|w| w[0] < w[1]));
    }

    /// Reference 001 §11's bipartite graph, edge by edge.
    #[test]
    fn reference_two_node_graph() {
        let a = [
            i("eth0", "10.8.47.1/24"),
            i("ibd0", "192.168.1.1/24"),
            i("ibd1", "192.168.2.2/24"),
        ];
        let b = [i("eth0", "10.8.47.2/24"), i("ibd0", "192.168.1.2/24")];
        let ranks: Vec<Vec<u8>> = weight_table(&a, &b)
            .iter()
            .map(|row| row.iter().map(|r| r.quality.rank()).collect())
            .collect();
        assert_eq!(ranks, [[2, 1], [1, 2], [1, 1]]);
        let weights: Vec<Vec<u64>> = weight_table(&a, &b)
            .iter()
            .map(|row| row.iter().map(|r| r.weight).collect())
            .collect();
        assert_eq!(weights, [[8080, 5050], [5050, 8080], [5050, 5050]]);
    }
}
