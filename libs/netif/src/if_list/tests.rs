//! Tests of include/exclude parsing and interface selection.

use super::*;

/// The parameter names every message must use: not the tcp btl's, so that a
/// name hard-coded in this crate would show.
const NAMES: ParamNames = ParamNames {
    include: "net_if_include",
    exclude: "net_if_exclude",
};

fn iface(name: &str, index: u32, addr: &str) -> Interface {
    Interface::parse(name, index, addr).unwrap()
}

/// Reference 001 §11's NodeA: lo0 (here `lo`), eth0, ibd0, ibd1.
fn node_a() -> Vec<Interface> {
    vec![
        iface("lo", 1, "127.0.0.1/8"),
        iface("eth0", 2, "10.8.47.1/24"),
        iface("ibd0", 3, "192.168.1.1/24"),
        iface("ibd1", 4, "192.168.2.2/24"),
    ]
}

fn used_names(s: &Selection) -> Vec<String> {
    s.used().map(|i| i.name.clone()).collect()
}

fn used_addrs(s: &Selection) -> Vec<String> {
    s.used().map(|i| i.addr.to_string()).collect()
}

fn verdict_of<'a>(s: &'a Selection, name: &str, addr: &str) -> &'a Verdict {
    &s.decisions
        .iter()
        .find(|d| d.interface.name == name && d.interface.addr.to_string() == addr)
        .unwrap_or_else(|| panic!("no decision for {name} {addr}"))
        .verdict
}

fn select(include: &str, exclude: &str, ifs: &[Interface]) -> Selection {
    IfSelection::parse(NAMES, include, exclude)
        .unwrap()
        .select(ifs)
}

fn warnings(s: &Selection) -> Vec<String> {
    s.notices_at(Level::Warn).map(ToString::to_string).collect()
}

// ---- parsing ------------------------------------------------------------

#[test]
fn empty_lists_mean_default() {
    for (inc, exc) in [("", ""), ("  ", ""), (",", " , ,"), ("", ",")] {
        let sel = IfSelection::parse(NAMES, inc, exc).unwrap();
        assert_eq!(sel.mode(), &IfMode::Default, "{inc:?} {exc:?}");
    }
    assert_eq!(IfSelection::parse(NAMES, "", "").unwrap().params(), NAMES);
}

#[test]
fn items_are_names_patterns_networks_and_addresses() {
    let sel = IfSelection::parse(
        NAMES,
        " eth0 ,192.168.0.0/16,eth*, 10.0.0.5,eth0:1,fd00::/8,eth0,",
        "",
    )
    .unwrap();
    assert_eq!(
        sel.mode(),
        &IfMode::Include(vec![
            IfSpec::Name("eth0".into()),
            IfSpec::Network(Cidr::parse("192.168.0.0/16").unwrap()),
            IfSpec::Pattern("eth*".into()),
            IfSpec::Address("10.0.0.5".parse().unwrap()),
            IfSpec::Name("eth0:1".into()),
            IfSpec::Network(Cidr::parse("fd00::/8").unwrap()),
            // The second eth0 is a duplicate and dropped.
        ])
    );
    let sel = IfSelection::parse(NAMES, "", "lo,eth0").unwrap();
    assert_eq!(
        sel.mode(),
        &IfMode::Exclude(vec![IfSpec::Name("lo".into()), IfSpec::Name("eth0".into())])
    );
}

#[test]
fn both_lists_set_is_an_error_naming_both() {
    let err = IfSelection::parse(NAMES, "eth1", "lo,eth0").unwrap_err();
    assert_eq!(
        err,
        IfListError::BothSet {
            params: NAMES,
            include: "eth1".into(),
            exclude: "lo,eth0".into()
        }
    );
    let msg = err.to_string();
    assert!(msg.contains("net_if_include (\"eth1\")"), "{msg}");
    assert!(msg.contains("net_if_exclude (\"lo,eth0\")"), "{msg}");
    assert!(msg.contains("only one of them"), "{msg}");
    assert!(msg.contains("unset the other"), "{msg}");
}

#[test]
fn other_parameter_names_appear_in_messages() {
    let names = ParamNames {
        include: "oob_tcp_if_include",
        exclude: "oob_tcp_if_exclude",
    };
    let err = IfSelection::parse(names, "a", "b").unwrap_err();
    assert!(err.to_string().contains("oob_tcp_if_include"));
    let sel = IfSelection::parse(names, "nosuch", "").unwrap();
    assert_eq!(sel.params(), names);
    let s = sel.select(&node_a());
    assert!(warnings(&s)[0].starts_with("oob_tcp_if_include item \"nosuch\""));
}

#[test]
fn bad_networks_are_errors_that_say_what_to_write() {
    let cases = [
        (
            "10.0.0.0/33",
            "prefix length after '/' must be a number from 0 to 32",
        ),
        ("10.0.0.0/", "prefix length"),
        ("10.0.0/8", "not an IPv4 or IPv6 address"),
        ("eth0/1", "not an IPv4 or IPv6 address"),
        ("192.168.1.5/24", "the network is 192.168.1.0/24"),
        ("fe80::1/64", "the network is fe80::/64"),
    ];
    for (item, expected) in cases {
        let err = IfSelection::parse(NAMES, item, "").unwrap_err();
        assert!(
            matches!(&err, IfListError::BadItem { param: "net_if_include", item: i, problem: ItemProblem::Network(_) } if i == item),
            "{item}: {err:?}"
        );
        let msg = err.to_string();
        assert!(
            msg.starts_with(&format!("net_if_include: item \"{item}\"")),
            "{msg}"
        );
        assert!(msg.contains(expected), "{item}: {msg}");
        // The same in the exclude list names the exclude parameter.
        let err = IfSelection::parse(NAMES, "", item).unwrap_err();
        assert!(err.to_string().starts_with("net_if_exclude"));
    }
}

#[test]
fn spaces_carets_and_control_characters_are_errors() {
    let err = IfSelection::parse(NAMES, "eth0 eth1", "").unwrap_err();
    assert!(matches!(
        err,
        IfListError::BadItem {
            problem: ItemProblem::Whitespace,
            ..
        }
    ));
    assert!(err.to_string().contains("separate items with commas"));

    let err = IfSelection::parse(NAMES, "^eth0", "").unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("list them in net_if_exclude"), "{msg}");
    let err = IfSelection::parse(NAMES, "", "^eth0").unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("write \"eth0\""), "{msg}");

    let err = IfSelection::parse(NAMES, "eth\u{0}0", "").unwrap_err();
    assert!(matches!(
        err,
        IfListError::BadItem {
            problem: ItemProblem::ControlChar('\0'),
            ..
        }
    ));
}

#[test]
fn glob_patterns() {
    assert!(glob_match("eth*", "eth0"));
    assert!(glob_match("eth*", "eth"));
    assert!(glob_match("eth*", "eth0:1"));
    assert!(!glob_match("eth*", "veth0"));
    assert!(glob_match("*eth*", "veth0"));
    assert!(glob_match("eth?", "eth1"));
    assert!(!glob_match("eth?", "eth10"));
    assert!(glob_match("e*h*1", "enp0s31f6h1"));
    assert!(glob_match("*", ""));
    assert!(!glob_match("?", ""));
    assert!(glob_match("a*b*c", "aXbYbZc"));
    assert!(!glob_match("a*b*c", "aXbYbZ"));
}

// ---- default selection ---------------------------------------------------

/// Reference 001 §11: "The lo0 interfaces are excluded"; everything else
/// that is up is used (§5, §7).
#[test]
fn default_uses_every_up_interface_but_loopback() {
    let s = select("", "", &node_a());
    assert_eq!(used_names(&s), ["eth0", "ibd0", "ibd1"]);
    assert_eq!(
        verdict_of(&s, "lo", "127.0.0.1"),
        &Verdict::Skip(SkipReason::Loopback {
            param: "net_if_include"
        })
    );
    assert_eq!(
        verdict_of(&s, "eth0", "10.8.47.1"),
        &Verdict::Use(UseReason::Default)
    );
    assert!(s.notices.is_empty(), "{:?}", s.notices);
    assert_eq!(
        s.decisions[0].to_string(),
        "lo 127.0.0.1/8: not used: loopback (used only when net_if_include names it)"
    );
    assert_eq!(
        s.decisions[1].to_string(),
        "eth0 10.8.47.1/24: used (up, not loopback, no list set)"
    );
}

#[test]
fn loopback_flag_or_address() {
    let ifs = [
        iface("lo", 1, "10.99.0.1/24").with_loopback(true),
        iface("dummy0", 5, "127.0.0.2/8").with_loopback(false),
        iface("eth0", 2, "10.0.0.1/24"),
    ];
    assert_eq!(used_names(&select("", "", &ifs)), ["eth0"]);
}

#[test]
fn down_interfaces_are_not_used() {
    let mut ifs = node_a();
    ifs[2].up = false;
    let s = select("", "", &ifs);
    assert_eq!(used_names(&s), ["eth0", "ibd1"]);
    assert_eq!(
        verdict_of(&s, "ibd0", "192.168.1.1"),
        &Verdict::Skip(SkipReason::Down)
    );
    assert!(s.notices.is_empty());
    // Naming it in the include list: still not used, and a warning.
    let s = select("ibd0,eth0", "", &ifs);
    assert_eq!(used_names(&s), ["eth0"]);
    let w = warnings(&s);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("selects ibd0 192.168.1.1/24, but that interface is down"));
}

#[test]
fn ipv6_link_local_only_when_included() {
    let ifs = [
        iface("eth0", 2, "fe80::1/64"),
        iface("eth1", 3, "fe80::2/64"),
        iface("eth2", 4, "2001:db8::5/64"),
    ];
    let s = select("", "", &ifs);
    assert_eq!(used_names(&s), ["eth2"]);
    assert_eq!(
        verdict_of(&s, "eth0", "fe80::1"),
        &Verdict::Skip(SkipReason::Ipv6LinkLocal {
            param: "net_if_include"
        })
    );
    let s = select("fe80::/64", "", &ifs);
    assert_eq!(used_names(&s), ["eth0", "eth1"]);
    let s = select("eth1", "", &ifs);
    assert_eq!(used_names(&s), ["eth1"]);
}

#[test]
fn nothing_usable_is_reported() {
    let ifs = [iface("lo", 1, "127.0.0.1/8")];
    let s = select("", "", &ifs);
    assert_eq!(used_names(&s), Vec::<String>::new());
    assert_eq!(s.notices.len(), 1);
    assert_eq!(s.notices[0].level(), Level::Info);
    assert!(s.notices[0]
        .to_string()
        .contains("none of the 1 interface addresses of this host is usable"));
    // With a list set it is a warning.
    let s = select("eth9", "", &node_a());
    let w = warnings(&s);
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(w[1].contains("with the net_if_include setting"));
    // No interfaces at all.
    let s = select("", "", &[]);
    assert!(s.decisions.is_empty());
    assert!(matches!(
        s.notices[..],
        [Notice::NothingUsable { count: 0, .. }]
    ));
}

#[test]
fn duplicate_entries_count_once() {
    let mut ifs = node_a();
    ifs.push(iface("eth0", 2, "10.8.47.1/24"));
    let s = select("", "", &ifs);
    assert_eq!(used_names(&s), ["eth0", "ibd0", "ibd1"]);
    assert_eq!(s.decisions[4].verdict, Verdict::Skip(SkipReason::Duplicate));
}

#[test]
fn host_local_bridges_get_an_info_notice() {
    let mut ifs = node_a();
    ifs.push(iface("virbr0", 7, "192.168.122.1/24"));
    ifs.push(iface("docker0", 8, "172.17.0.1/16"));
    let s = select("", "", &ifs);
    assert_eq!(
        used_names(&s),
        ["eth0", "ibd0", "ibd1", "virbr0", "docker0"]
    );
    let info: Vec<String> = s.notices.iter().map(ToString::to_string).collect();
    assert_eq!(info.len(), 2, "{info:?}");
    assert!(info[0].starts_with("virbr0 192.168.122.1/24 looks like a host-local virtual bridge"));
    assert!(info[0].contains("net_if_exclude=virbr0"));
    assert!(warnings(&s).is_empty());
    // Asked for explicitly: no notice.
    let s = select("docker0", "", &ifs);
    assert!(s.notices.is_empty(), "{:?}", s.notices);
    // Excluded: no notice.
    let s = select("", "virbr0,docker*", &ifs);
    assert!(s.notices.is_empty(), "{:?}", s.notices);
}

// ---- include -------------------------------------------------------------

/// Reference 001 §7: `net_if_include eth1,eth2` uses those and
/// implicitly ignores the rest.
#[test]
fn include_names_exactly() {
    let ifs = [
        iface("eth0", 2, "10.0.0.1/24"),
        iface("eth1", 3, "10.0.1.1/24"),
        iface("eth2", 4, "10.0.2.1/24"),
        iface("eth10", 5, "10.0.10.1/24"),
    ];
    let s = select("eth1,eth2", "", &ifs);
    assert_eq!(used_names(&s), ["eth1", "eth2"]);
    assert_eq!(
        verdict_of(&s, "eth0", "10.0.0.1"),
        &Verdict::Skip(SkipReason::NotIncluded {
            param: "net_if_include"
        })
    );
    assert_eq!(
        verdict_of(&s, "eth1", "10.0.1.1"),
        &Verdict::Use(UseReason::Included {
            param: "net_if_include",
            item: IfSpec::Name("eth1".into())
        })
    );
    assert!(s.notices.is_empty());
    // A pattern.
    assert_eq!(used_names(&select("eth1*", "", &ifs)), ["eth1", "eth10"]);
}

#[test]
fn include_name_matching_nothing_warns_with_a_hint() {
    let ifs = [
        iface("eth0", 2, "10.0.0.1/24"),
        iface("eth1", 3, "10.0.1.1/24"),
    ];
    let s = select("eth", "", &ifs);
    assert_eq!(used_names(&s), Vec::<String>::new());
    let w = warnings(&s);
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(
        w[0].starts_with("net_if_include item \"eth\" matches no interface on this host"),
        "{}",
        w[0]
    );
    assert!(
        w[0].contains("to use eth0, eth1, write \"eth*\""),
        "{}",
        w[0]
    );
    let s = select("eth0,ib0", "", &ifs);
    assert_eq!(used_names(&s), ["eth0"]);
    assert_eq!(
        warnings(&s),
        ["net_if_include item \"ib0\" matches no interface on this host"]
    );
}

/// Loopback is used when an include item names it, by name or network.
#[test]
fn include_can_select_loopback() {
    for inc in ["lo", "127.0.0.0/8", "127.0.0.1", "l*"] {
        let s = select(inc, "", &node_a());
        assert_eq!(used_names(&s), ["lo"], "{inc}");
    }
}

/// Reference 001 §7: "Only use the 192.168.1.0/24 and 10.10.0.0/16 subnets".
#[test]
fn include_networks() {
    let ifs = [
        iface("eth0", 2, "192.168.1.7/24"),
        iface("eth1", 3, "10.10.4.2/16"),
        iface("eth2", 4, "192.168.2.7/24"),
        iface("eth3", 5, "172.16.0.1/12"),
    ];
    let s = select("192.168.1.0/24,10.10.0.0/16", "", &ifs);
    assert_eq!(used_names(&s), ["eth0", "eth1"]);
    assert!(s.notices.is_empty());
}

/// Reference 001 §7's note: with networks 10.10.0.0/24 and 10.10.1.0/24,
/// "10.10.0.0/16" recognises neither.
#[test]
fn networks_match_exactly() {
    let ifs = [
        iface("eth0", 2, "10.10.0.5/24"),
        iface("eth1", 3, "10.10.1.5/24"),
    ];
    let s = select("10.10.0.0/16", "", &ifs);
    assert_eq!(used_names(&s), Vec::<String>::new());
    let w = warnings(&s);
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(w[0].contains("a network must be given exactly"), "{}", w[0]);
    assert!(
        w[0].contains("eth0 is on 10.10.0.0/24, eth1 is on 10.10.1.0/24"),
        "{}",
        w[0]
    );
    assert!(matches!(
        &s.notices[0],
        Notice::Unmatched {
            hint: Some(Hint::Networks(n)),
            ..
        } if n.len() == 2
    ));
    // Precisely: one each.
    assert_eq!(used_names(&select("10.10.0.0/24", "", &ifs)), ["eth0"]);
    assert_eq!(
        used_names(&select("10.10.1.0/24,10.10.0.0/24", "", &ifs)),
        ["eth0", "eth1"]
    );
    // Too narrow also matches nothing, with the same kind of hint.
    let s = select("10.10.0.0/25", "", &ifs);
    assert!(warnings(&s)[0].contains("eth0 is on 10.10.0.0/24"));
    // Unrelated network: no hint.
    let s = select("172.16.0.0/12", "", &ifs);
    assert_eq!(
        warnings(&s)[0],
        "net_if_include item \"172.16.0.0/12\" matches no interface on this host"
    );
    // IPv6 networks work the same way.
    let ifs6 = [iface("eth0", 2, "2001:db8:0:1::5/64")];
    assert_eq!(
        used_names(&select("2001:db8:0:1::/64", "", &ifs6)),
        ["eth0"]
    );
    assert!(used_names(&select("2001:db8::/48", "", &ifs6)).is_empty());
}

#[test]
fn include_addresses() {
    let ifs = [
        iface("eth0", 2, "10.0.0.5/24"),
        iface("eth1", 3, "10.0.1.5/24"),
    ];
    assert_eq!(used_names(&select("10.0.1.5", "", &ifs)), ["eth1"]);
    // A network written without its prefix length.
    let s = select("10.0.0.0", "", &ifs);
    let w = warnings(&s);
    assert!(
        w[0].contains("to name a network, give its prefix length: eth0 is on 10.0.0.0/24"),
        "{}",
        w[0]
    );
}

// ---- exclude -------------------------------------------------------------

/// Reference 001 §7: `net_if_exclude lo,eth0` leaves those out and uses
/// the rest.
#[test]
fn exclude_reference_example() {
    let s = select("", "lo,eth0", &node_a());
    assert_eq!(used_names(&s), ["ibd0", "ibd1"]);
    assert_eq!(
        verdict_of(&s, "lo", "127.0.0.1"),
        &Verdict::Skip(SkipReason::Excluded {
            param: "net_if_exclude",
            item: IfSpec::Name("lo".into())
        })
    );
    assert_eq!(
        verdict_of(&s, "ibd0", "192.168.1.1"),
        &Verdict::Use(UseReason::NotExcluded {
            param: "net_if_exclude"
        })
    );
    assert!(s.notices.is_empty());
}

/// Unlike Open MPI (ompi#14029), an exclude list that does not mention
/// loopback does not bring it back.
#[test]
fn exclude_keeps_loopback_out() {
    let s = select("", "eth0", &node_a());
    assert_eq!(used_names(&s), ["ibd0", "ibd1"]);
    assert_eq!(
        verdict_of(&s, "lo", "127.0.0.1"),
        &Verdict::Skip(SkipReason::Loopback {
            param: "net_if_include"
        })
    );
}

/// Open MPI matches exclude names as prefixes; here `eth1` is exactly eth1,
/// `eth` matches nothing (with a warning saying why) and `eth*` is the way
/// to say "all eth devices".
#[test]
fn exclude_names_exactly_and_patterns() {
    let ifs = [
        iface("eth1", 3, "10.0.1.1/24"),
        iface("eth10", 4, "10.0.10.1/24"),
        iface("ib0", 5, "10.1.0.1/24"),
    ];
    assert_eq!(used_names(&select("", "eth1", &ifs)), ["eth10", "ib0"]);

    let s = select("", "eth", &ifs);
    assert_eq!(used_names(&s), ["eth1", "eth10", "ib0"]);
    let w = warnings(&s);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("names match exactly, not as prefixes (as Open MPI's exclude list does): to leave out eth1, eth10, write \"eth*\""),
        "{}",
        w[0]
    );

    assert_eq!(used_names(&select("", "eth*", &ifs)), ["ib0"]);
}

#[test]
fn exclude_item_matching_nothing_is_info_only() {
    let s = select("", "sppp,wlan0", &node_a());
    assert_eq!(used_names(&s), ["eth0", "ibd0", "ibd1"]);
    assert!(warnings(&s).is_empty());
    assert_eq!(s.notices.len(), 2);
    assert!(s.notices.iter().all(|n| n.level() == Level::Info));
    // A related network is a warning: the user meant to exclude something.
    let s = select("", "192.168.0.0/16", &node_a());
    assert_eq!(used_names(&s), ["eth0", "ibd0", "ibd1"]);
    let w = warnings(&s);
    assert_eq!(w.len(), 1);
    assert!(w[0].contains("ibd0 is on 192.168.1.0/24, ibd1 is on 192.168.2.0/24"));
}

#[test]
fn exclude_networks_and_addresses() {
    assert_eq!(
        used_names(&select("", "192.168.1.0/24", &node_a())),
        ["eth0", "ibd1"]
    );
    assert_eq!(
        used_names(&select("", "192.168.2.2", &node_a())),
        ["eth0", "ibd0"]
    );
}

// ---- several addresses, aliases (reference 001 §13, §14) ---------------------

/// Reference 001 §13's `ip addr` output: one device, two IPv4 addresses
/// (one labelled eth0:1) and a link-local IPv6 address.
fn multi_address_eth0() -> Vec<Interface> {
    vec![
        iface("lo", 1, "127.0.0.1/8"),
        iface("eth0:1", 2, "192.168.0.3/24"),
        iface("eth0", 2, "10.10.0.3/24"),
        iface("eth0", 2, "fe80::218:aef2:29b4:2c4/64"),
        iface("ib0", 3, "10.20.0.3/24"),
    ]
}

#[test]
fn a_device_with_several_addresses_is_refused_with_advice() {
    let s = select("", "", &multi_address_eth0());
    assert_eq!(used_names(&s), ["ib0"]);
    let expected = Verdict::Skip(SkipReason::SeveralAddresses {
        addresses: vec!["eth0:1 192.168.0.3/24".into(), "eth0 10.10.0.3/24".into()],
    });
    assert_eq!(verdict_of(&s, "eth0:1", "192.168.0.3"), &expected);
    assert_eq!(verdict_of(&s, "eth0", "10.10.0.3"), &expected);
    assert_eq!(
        verdict_of(&s, "eth0", "fe80::218:aef2:29b4:2c4"),
        &Verdict::Skip(SkipReason::Ipv6LinkLocal {
            param: "net_if_include"
        })
    );
    let w = warnings(&s);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with(
            "device eth0 (index 2) has several addresses selected (eth0:1 192.168.0.3/24, eth0 10.10.0.3/24)"
        ),
        "{}",
        w[0]
    );
    assert!(w[0].contains("reference 001 §13"));
    assert!(
        w[0].contains(
            "Choose one with net_if_include=192.168.0.3 or leave the others out with net_if_exclude=10.10.0.3"
        ),
        "{}",
        w[0]
    );
}

/// Reference 001 §14: Open MPI cannot be helped by the lists; here they
/// apply per address and per alias label, so they resolve the conflict.
#[test]
fn the_lists_resolve_several_addresses() {
    let ifs = multi_address_eth0();
    // Leave the alias out: eth0's own address is used.
    let s = select("", "eth0:1", &ifs);
    assert_eq!(used_addrs(&s), ["10.10.0.3", "10.20.0.3"]);
    assert!(warnings(&s).is_empty());
    // Include by name: eth0 means the addresses labelled eth0, not the alias;
    // its link-local address gives way to the IPv4 one.
    let s = select("eth0", "", &ifs);
    assert_eq!(used_addrs(&s), ["10.10.0.3"]);
    assert_eq!(
        verdict_of(&s, "eth0", "fe80::218:aef2:29b4:2c4"),
        &Verdict::Skip(SkipReason::OtherAddressUsed {
            used: "eth0 10.10.0.3/24".into()
        })
    );
    assert!(warnings(&s).is_empty());
    // Include the alias only.
    assert_eq!(used_addrs(&select("eth0:1", "", &ifs)), ["192.168.0.3"]);
    // Include by address or network.
    assert_eq!(
        used_addrs(&select("192.168.0.3", "", &ifs)),
        ["192.168.0.3"]
    );
    assert_eq!(
        used_addrs(&select("10.10.0.0/24,ib0", "", &ifs)),
        ["10.10.0.3", "10.20.0.3"]
    );
    // Including both addresses again: refused, with include advice.
    let s = select("eth0,eth0:1", "", &ifs);
    assert!(used_addrs(&s).is_empty());
    let w = warnings(&s);
    assert!(
        w[0].contains("List only the one to use in net_if_include"),
        "{w:?}"
    );
}

/// Excluding a device leaves out its aliases too (§14's `eth0` and `eth0:0`).
#[test]
fn excluding_a_device_excludes_its_aliases() {
    let ifs = [
        iface("eth0", 2, "10.10.0.3/24"),
        iface("eth0:0", 2, "10.10.9.3/24"),
        iface("eth1", 3, "10.20.0.3/24"),
    ];
    let s = select("", "eth0", &ifs);
    assert_eq!(used_names(&s), ["eth1"]);
    assert_eq!(
        verdict_of(&s, "eth0:0", "10.10.9.3"),
        &Verdict::Skip(SkipReason::Excluded {
            param: "net_if_exclude",
            item: IfSpec::Name("eth0".into())
        })
    );
    // An alias item leaves out that alias only.
    assert_eq!(used_names(&select("", "eth0:0", &ifs)), ["eth0", "eth1"]);
    // Both addresses of eth0, default selection: refused; advice for the exclude list.
    let s = select("", "eth1", &ifs);
    assert!(used_names(&s).is_empty());
    assert!(
        warnings(&s)[0]
            .contains("Add the others to net_if_exclude, e.g. net_if_exclude=...,eth0:0"),
        "{:?}",
        warnings(&s)
    );
}

/// Two addresses with the same label and network: the advice falls back to
/// addresses, which the lists accept.
#[test]
fn same_label_secondary_addresses() {
    let ifs = [
        iface("eth0", 2, "10.0.0.5/24"),
        iface("eth0", 2, "10.0.0.6/24"),
    ];
    let s = select("", "", &ifs);
    assert!(used_names(&s).is_empty());
    assert!(warnings(&s)[0].contains("net_if_exclude=10.0.0.6"));
    assert_eq!(used_addrs(&select("", "10.0.0.6", &ifs)), ["10.0.0.5"]);
    assert_eq!(used_addrs(&select("10.0.0.6", "", &ifs)), ["10.0.0.6"]);
}

#[test]
fn one_address_per_device_prefers_ipv4_then_global_ipv6() {
    let ifs = [
        iface("eth0", 2, "2001:db8::5/64"),
        iface("eth0", 2, "10.0.0.5/24"),
        iface("eth1", 3, "2001:db8:1::5/64"),
        iface("eth1", 3, "fe80::5/64"),
    ];
    let s = select("", "", &ifs);
    assert_eq!(used_addrs(&s), ["10.0.0.5", "2001:db8:1::5"]);
    assert_eq!(
        verdict_of(&s, "eth0", "2001:db8::5"),
        &Verdict::Skip(SkipReason::OtherAddressUsed {
            used: "eth0 10.0.0.5/24".into()
        })
    );
    assert!(warnings(&s).is_empty());
    // Two global IPv6 addresses and no IPv4: refused.
    let ifs = [
        iface("eth0", 2, "2001:db8::5/64"),
        iface("eth0", 2, "2001:db8::6/64"),
    ];
    assert!(used_addrs(&select("", "", &ifs)).is_empty());
}
