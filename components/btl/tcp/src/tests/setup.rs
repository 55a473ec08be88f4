//! Setup, peers, failures, logging and the extern "C" entry points.

use std::net::{IpAddr, Ipv4Addr, TcpListener};

use abi_stable::std_types::{RSlice, RString, RVec};
use oxmpi_framework_btl::module::SendOutcome;
use oxmpi_netif::interfaces::Interface;
use oxmpi_plugin_api::{ErrorKind, ParamValue, QueryReply};

use super::harness::*;
use crate::card::{Card, CardInterface};
use crate::{query_with, Config, InitError, MODULE};

/// A first port P from `from` up such that P..P+3 are free on 127.0.0.1 now.
fn free_block(from: u16) -> u16 {
    let mut p = from;
    loop {
        let all_free = (0..4).all(|i| TcpListener::bind(("127.0.0.1", p + i)).is_ok());
        if all_free {
            return p;
        }
        p += 7;
        assert!(p < 60_000, "no free block of 4 ports");
    }
}

#[test]
fn listeners_take_ports_in_order_within_the_range() {
    // Another process may take a port of the block between the probe and
    // the binds; then the test moves on to another block (a few times).
    let mut from = 41_000;
    for attempt in 0..5 {
        let p = free_block(from);
        from = p + 11;
        let cfg = Config {
            port_min_v4: p,
            port_range_v4: 3,
            ..lo_config()
        };
        let ranks: Vec<Rank> = (0..3)
            .filter_map(|i| Rank::new(&format!("ports-{attempt}-{i}"), cfg.clone(), i, 4).ok())
            .collect();
        let ports: Vec<u16> = ranks
            .iter()
            .map(|r| r.btl.as_ref().unwrap().listen_addrs()[0].port())
            .collect();
        if ports != [p, p + 1, p + 2] && attempt < 4 {
            continue;
        }
        assert_eq!(ports, [p, p + 1, p + 2]);
        // The range is used up: the fourth rank fails and says why.
        let err = Rank::new(&format!("ports-{attempt}-3"), cfg, 3, 4)
            .err()
            .expect("no port left");
        let InitError::Failed(msg) = err else {
            panic!("{err:?}")
        };
        assert!(
            msg.contains(&format!("every port from {p} to {}", p + 2))
                && msg.contains(&format!("btl_tcp_port_min_v4={p}"))
                && msg.contains("btl_tcp_port_range_v4=3"),
            "{msg}"
        );
        // The "listening on" line at verbosity 20.
        let lines = lines_of(&format!("ports-{attempt}-1"));
        assert!(
            lines.contains(&(20, format!("listening on 127.0.0.1:{} (tcp lo)", p + 1))),
            "{lines:?}"
        );
        return;
    }
}

#[test]
fn port_min_zero_lets_the_system_choose() {
    let cfg = Config {
        port_min_v4: 0,
        ..lo_config()
    };
    let r = Rank::new("port-zero", cfg, 0, 1).unwrap();
    assert_ne!(r.btl.as_ref().unwrap().listen_addrs()[0].port(), 0);
}

#[test]
fn add_peer_reasons() {
    let mut a = Rank::new("peers", lo_config(), 0, 4).unwrap();
    let own = a.card();
    let err = a.btl().add_peer(0, 0, &own).unwrap_err();
    assert_eq!(
        err,
        "tcp does not connect a process to itself (the self btl does)"
    );
    let err = a.btl().add_peer(0, 4, &own).unwrap_err();
    assert!(
        err.contains("rank 4 is not in this job (it has 4 ranks)"),
        "{err}"
    );
    let err = a.btl().add_peer(3, 1, &own).unwrap_err();
    assert!(err.contains("there is no tcp module 3"), "{err}");
    let err = a.btl().add_peer(0, 1, &[]).unwrap_err();
    assert!(
        err.contains("rank 1 published no tcp contact card"),
        "{err}"
    );
    let err = a.btl().add_peer(0, 1, &own[..5]).unwrap_err();
    assert!(
        err.starts_with("rank 1's tcp contact card cannot be used: the card ends after 5 bytes"),
        "{err}"
    );
    let mut bad = own.clone();
    bad[0] = 7;
    let err = a.btl().add_peer(0, 1, &bad).unwrap_err();
    assert!(err.contains("format version 7"), "{err}");
    // A peer on a network only: loopback does not reach it.
    let remote = Card {
        links: 1,
        interfaces: vec![CardInterface {
            iface: Interface::parse("eth0", 2, "10.0.0.2/24").unwrap(),
            port: 5000,
        }],
    }
    .encode();
    let err = a.btl().add_peer(0, 2, &remote).unwrap_err();
    assert!(
        err.starts_with(
            "no tcp interface of this process reaches rank 2's interfaces (eth0 10.0.0.2/24)"
        ),
        "{err}"
    );
    assert!(err.contains("this process has lo 127.0.0.1/8"), "{err}");
    // A peer with fewer links.
    let two = Rank::new(
        "peers-links",
        Config {
            links: 2,
            ..lo_config()
        },
        1,
        4,
    )
    .unwrap();
    let card_two = two.card();
    drop(two);
    let mut one = Card::decode(&card_two).unwrap();
    one.links = 1;
    let mut b = Rank::new(
        "peers-links-b",
        Config {
            links: 2,
            ..lo_config()
        },
        0,
        4,
    )
    .unwrap();
    assert!(b.btl().add_peer(0, 3, &one.encode()).is_ok());
    let err = b.btl().add_peer(1, 3, &one.encode()).unwrap_err();
    assert!(
        err.contains("is link 1, but rank 3 runs only 1 tcp link(s) per interface"),
        "{err}"
    );
}

#[test]
fn an_interface_left_out_of_the_pairing_says_so() {
    // Two local loopback addresses (127.0.0.1 on lo, 127.0.0.2 as an
    // alias), one remote: one of the local modules is unpaired.
    let lo_index = crate::sys::if_index("lo");
    let candidates = vec![
        Interface::parse("lo", lo_index, "127.0.0.1/8").unwrap(),
        Interface::parse("lo:two", lo_index + 1000, "127.0.0.2/8").unwrap(),
    ];
    let cfg = Config {
        if_include: "lo,lo:two".into(),
        port_min_v4: 0,
        ..Config::default()
    };
    let mut a = crate::TcpBtl::new(cfg, identity(0, 2), context("unpaired"), &candidates).unwrap();
    assert_eq!(a.modules().len(), 2);
    let remote = Card {
        links: 1,
        interfaces: vec![CardInterface {
            iface: Interface::parse("lo", 1, "127.0.0.1/8").unwrap(),
            port: 5000,
        }],
    }
    .encode();
    let results: Vec<Result<u64, String>> = (0..2).map(|m| a.add_peer(m, 1, &remote)).collect();
    assert_eq!(
        results.iter().filter(|r| r.is_ok()).count(),
        1,
        "{results:?}"
    );
    let err = results.iter().find_map(|r| r.clone().err()).unwrap();
    assert!(
        err.contains("is not paired with any interface of rank 1"),
        "{err}"
    );
    assert!(err.contains("one connection per interface"), "{err}");
}

#[test]
fn include_and_exclude_together_are_an_error() {
    let cfg = Config {
        if_include: "lo".into(),
        if_exclude: "eth0".into(),
        ..Config::default()
    };
    let err = query_with(&cfg).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Failed);
    let msg = err.message.as_str();
    assert!(
        msg.contains("btl_tcp_if_include (\"lo\") and btl_tcp_if_exclude (\"eth0\") are both set"),
        "{msg}"
    );
    let err = Rank::new("both-lists", cfg, 0, 2).err().unwrap();
    assert!(
        matches!(err, InitError::Failed(ref m) if m.contains("are both set")),
        "{err:?}"
    );
    // A bad item is an error too.
    let cfg = Config {
        if_include: "10.0.0.0/33".into(),
        ..Config::default()
    };
    assert_eq!(query_with(&cfg).unwrap_err().kind, ErrorKind::Failed);
}

#[test]
fn nothing_usable_is_not_available() {
    let cfg = Config {
        if_include: "no-such-interface0".into(),
        ..Config::default()
    };
    let err = query_with(&cfg).unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotAvailable);
    assert!(
        err.message.as_str().contains("btl_tcp_if_include"),
        "{}",
        err.message
    );
    assert!(matches!(
        Rank::new("nothing", cfg, 0, 2).err().unwrap(),
        InitError::NothingUsable(_)
    ));
    assert_eq!(
        query_with(&lo_config()).unwrap(),
        QueryReply::Usable { priority: 0 }
    );
}

#[test]
fn a_peer_that_dies_is_reported_once() {
    let (mut a, mut b, ab, ba) = pair("death", lo_config());
    assert_eq!(a.send(0, ab, &[1], &[], 0), SendOutcome::Done);
    assert_eq!(b.send(0, ba, &[2], &[], 0), SendOutcome::Done);
    pump(&mut [&mut a, &mut b], "both connections", |r| {
        r[0].frags() == 1 && r[1].frags() == 1
    });
    // Rank 0 dies without finalizing.
    drop(a.btl.take());
    pump(&mut [&mut b], "the failure report", |r| {
        !r[0].rec.borrow().failed.is_empty()
    });
    // Both of b's sockets to rank 0 fail; the peer is reported once.
    spin(&mut [&mut b], 3000);
    let failed = b.rec.borrow().failed.clone();
    assert_eq!(failed.len(), 1, "{failed:?}");
    let (module, peer, why) = &failed[0];
    assert_eq!((*module, *peer), (0, 0));
    assert!(why.contains("rank 0 via tcp lo link 0"), "{why}");
    assert!(why.contains("without saying goodbye"), "{why}");
    assert_eq!(b.send(0, ba, &[3], &[1], 0), SendOutcome::Failed);
}

#[test]
fn a_peer_that_finalizes_is_not_a_failure() {
    let (mut a, mut b, ab, ba) = pair("finalize", lo_config());
    assert_eq!(a.send(0, ab, &[1], &[], 0), SendOutcome::Done);
    assert_eq!(b.send(0, ba, &[2], &[], 0), SendOutcome::Done);
    pump(&mut [&mut a, &mut b], "both connections", |r| {
        r[0].frags() == 1 && r[1].frags() == 1
    });
    a.btl.take().unwrap().finalize();
    // Long enough for the idle check of b's outgoing connection.
    spin(&mut [&mut b], 5000);
    assert!(
        b.rec.borrow().failed.is_empty(),
        "{:?}",
        b.rec.borrow().failed
    );
    assert_eq!(b.btl().socket_counts(), (1, 0, 0, 0));
    // Sending to a finalized peer fails, with a reason.
    assert_eq!(b.send(0, ba, &[3], &[1], 0), SendOutcome::Failed);
    spin(&mut [&mut b], 1);
    let failed = b.rec.borrow().failed.clone();
    assert_eq!(failed.len(), 1);
    assert!(failed[0].2.contains("already finalized"), "{failed:?}");
}

#[test]
fn a_refused_connect_fails_the_peer() {
    // A card pointing at a port nobody listens on.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    let card = Card {
        links: 1,
        interfaces: vec![CardInterface {
            iface: Interface::parse("lo", 1, "127.0.0.1/8").unwrap(),
            port,
        }],
    }
    .encode();
    let mut a = Rank::new("refused-connect", lo_config(), 0, 2).unwrap();
    let ep = a.btl().add_peer(0, 1, &card).unwrap();
    let payload = [5u8; 10];
    let out = a.send(0, ep, &[1], &payload, 9);
    assert!(
        matches!(out, SendOutcome::Queued | SendOutcome::Failed),
        "{out:?}"
    );
    pump(&mut [&mut a], "the failure", |r| {
        !r[0].rec.borrow().failed.is_empty()
    });
    let rec = a.rec.borrow();
    assert!(
        rec.failed[0].2.contains("Connection refused"),
        "{:?}",
        rec.failed
    );
    assert!(rec.done.is_empty(), "dropped sends get no on_send_done");
    let lines = a.lines();
    assert!(
        lines.iter().any(|(l, m)| *l == 30
            && m.starts_with(&format!(
                "connect() to address 127.0.0.1 on port {port} (rank 1) failed"
            ))),
        "{lines:?}"
    );
}

#[test]
fn connect_attempts_are_logged_at_verbosity_30() {
    let (mut a, mut b, ab, _) = pair("connect-log", lo_config());
    let port = b.btl().listen_addrs()[0].port();
    assert_eq!(a.send(0, ab, &[1], &[], 0), SendOutcome::Done);
    pump(&mut [&mut a, &mut b], "the fragment", |r| r[1].frags() == 1);
    let lines = a.lines();
    let at_30: Vec<&String> = lines
        .iter()
        .filter(|(l, _)| *l == 30)
        .map(|(_, m)| m)
        .collect();
    assert!(
        at_30[0].starts_with(&format!(
            "attempting to connect() to address 127.0.0.1 on port {port} (rank 1, tcp lo link 0"
        )),
        "{at_30:?}"
    );
    assert!(
        at_30.iter().any(|m| m.as_str()
            == format!("connect() to address 127.0.0.1 on port {port} (rank 1) succeeded")),
        "{at_30:?}"
    );
    assert!(
        at_30
            .iter()
            .any(|m| m.as_str()
                == format!("connected to rank 1 at 127.0.0.1:{port} (tcp lo link 0)")),
        "{at_30:?}"
    );
    assert!(
        b.lines()
            .iter()
            .any(|(l, m)| *l == 30
                && m.starts_with("accepted a connection from rank 0 at 127.0.0.1:"))
    );
    // The interface decisions at 40.
    assert!(
        lines
            .iter()
            .any(|(l, m)| *l == 40 && m.starts_with("using lo 127.0.0.1/8")),
        "{lines:?}"
    );
}

#[test]
fn bad_sends_are_refused() {
    let (mut a, _b, ab, _) = pair("bad-send", lo_config());
    assert_eq!(a.send(0, ab + 5, &[1], &[], 0), SendOutcome::Failed);
    assert_eq!(a.send(0, ab, &[0; 65], &[], 0), SendOutcome::Failed);
    assert!(a
        .lines()
        .iter()
        .any(|(l, m)| *l == 0 && m.starts_with("send refused")));
}

#[test]
fn the_extern_entry_points() {
    // The only test that touches the process-global instance.
    let set = |name: &str, v: ParamValue| {
        oxmpi_plugin_api::testkit::set_param(&format!("btl_tcp_{name}"), v);
    };
    set("if_include", ParamValue::Str("lo".into()));
    set("if_exclude", ParamValue::Str("eth0".into()));
    set("links", ParamValue::Int(1));
    set("eager_limit", ParamValue::Size(4096));
    let ctx = context("tcp");
    let rec = std::rc::Rc::new(std::cell::RefCell::new(Recorder::default()));
    let me = identity(0, 2);
    let mut modules = RVec::new();
    let mut error = RString::new();
    // Both lists: init fails with the message.
    // SAFETY: the test calls the entry points one at a time.
    let ok = unsafe { (MODULE.init)(&ctx, &me, receiver(&rec), &mut modules, &mut error) };
    assert!(!ok);
    assert!(error.as_str().contains("are both set"), "{error}");
    set("if_exclude", ParamValue::Str(String::new().into()));
    error = RString::new();
    // SAFETY: as above.
    let ok = unsafe { (MODULE.init)(&ctx, &me, receiver(&rec), &mut modules, &mut error) };
    assert!(ok, "{error}");
    assert_eq!(modules.len(), 1);
    assert_eq!(modules[0].label.as_str(), "tcp lo link 0");
    assert_eq!(modules[0].eager_limit, 4096);
    assert_eq!(modules[0].exclusivity, 100);
    // A second init without finalize is refused.
    let mut again = RVec::new();
    // SAFETY: as above.
    assert!(!unsafe { (MODULE.init)(&ctx, &me, receiver(&rec), &mut again, &mut error) });
    let mut card = RVec::new();
    // SAFETY: as above.
    unsafe { (MODULE.contact_card)(&mut card) };
    let decoded = Card::decode(&card).unwrap();
    assert_eq!(
        decoded.interfaces[0].iface.addr,
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    );
    let mut ep = 0u64;
    let mut reason = RString::new();
    // SAFETY: as above.
    let ok = unsafe { (MODULE.add_peer)(0, 0, RSlice::from_slice(&card), &mut ep, &mut reason) };
    assert!(!ok);
    assert_eq!(
        reason.as_str(),
        "tcp does not connect a process to itself (the self btl does)"
    );
    // A second rank (a plain instance) to talk to.
    let mut b = Rank::new("extern-b", lo_config(), 1, 2).unwrap();
    let cb = b.card();
    // SAFETY: as above.
    let ok = unsafe { (MODULE.add_peer)(0, 1, RSlice::from_slice(&cb), &mut ep, &mut reason) };
    assert!(ok, "{reason}");
    let payload = pattern(200_000, 4);
    // SAFETY: as above; payload outlives the transfer.
    let out =
        unsafe { (MODULE.send)(0, ep, [9u8].as_ptr(), 1, payload.as_ptr(), payload.len(), 1) };
    assert_ne!(out, SendOutcome::Failed);
    pump(
        &mut [&mut b],
        "the fragment through the entry points",
        |r| {
            // SAFETY: as above.
            unsafe { (MODULE.progress)() };
            r[0].frags() == 1
        },
    );
    assert!(b.rec.borrow().frags[0].payload == payload);
    // SAFETY: as above.
    unsafe { (MODULE.finalize)() };
    // After finalize: no card, no peers, no progress.
    // SAFETY: as above.
    unsafe { (MODULE.contact_card)(&mut card) };
    assert!(card.is_empty());
    // SAFETY: as above.
    assert!(!unsafe { (MODULE.add_peer)(0, 1, RSlice::from_slice(&cb), &mut ep, &mut reason) });
    // SAFETY: as above.
    assert_eq!(unsafe { (MODULE.progress)() }, 0);
    // The finalized peer is not a failure for b.
    spin(&mut [&mut b], 200);
    assert!(b.rec.borrow().failed.is_empty());
}

#[test]
fn the_root_module_describes_the_component() {
    use abi_stable::abi_stability::abi_checking::check_layout_compatibility;
    use abi_stable::StableAbi;
    use oxmpi_framework_btl::module::BtlComponentModule;

    let root = crate::__oxmpi_component_export::component_root();
    assert_eq!(root.framework().as_str(), "btl");
    assert_eq!(root.component().as_str(), "tcp");
    assert_eq!(
        root.interface_version(),
        oxmpi_framework_btl::INTERFACE_VERSION
    );
    let names: Vec<&str> = root.params().iter().map(|p| p.name.as_str()).collect();
    for wanted in [
        "if_include",
        "if_exclude",
        "links",
        "port_min_v4",
        "port_range_v4",
        "sndbuf",
        "rcvbuf",
        "exclusivity",
        "eager_limit",
        "rndv_eager_limit",
        "max_send_size",
        "latency",
        "bandwidth",
        "flags",
    ] {
        assert!(names.contains(&wanted), "{wanted} is not declared");
    }
    assert!(root.params().iter().all(|p| !p.help.as_str().is_empty()));
    let table = root
        .module()
        .and_then(|m| m.into_option())
        .expect("a btl module table");
    check_layout_compatibility(<BtlComponentModule as StableAbi>::LAYOUT, table.layout)
        .expect("the table has the framework's layout");
    assert!(std::ptr::eq(
        table.table.cast::<BtlComponentModule>(),
        &MODULE
    ));
}

#[test]
fn socket_options_follow_the_parameters() {
    let opt = |fd, level, name| crate::sys::get_int(fd, level, name).unwrap();
    // Defaults: TCP_NODELAY on, buffers left to the system.
    let (mut a, mut b, ab, _) = pair("sockopt-default", lo_config());
    assert_eq!(a.send(0, ab, &[1], &[], 0), SendOutcome::Done);
    pump(&mut [&mut a, &mut b], "a fragment", |r| r[1].frags() == 1);
    let fd = a.btl().endpoint_fd(ab).unwrap();
    assert_eq!(opt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY), 1);
    // Set: buffers as asked (Linux reports twice the value), Nagle kept.
    let cfg = Config {
        sndbuf: 200_000,
        rcvbuf: 300_000,
        use_nagle: true,
        ..lo_config()
    };
    let (mut a, mut b, ab, _) = pair("sockopt-set", cfg);
    assert_eq!(a.send(0, ab, &[1], &[], 0), SendOutcome::Done);
    pump(&mut [&mut a, &mut b], "a fragment", |r| r[1].frags() == 1);
    let fd = a.btl().endpoint_fd(ab).unwrap();
    assert_eq!(opt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY), 0);
    // The kernel caps a request at net.core.{w,r}mem_max and doubles it.
    let cap = |name: &str, asked: i32| {
        let max = std::fs::read_to_string(format!("/proc/sys/net/core/{name}"))
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
            .unwrap_or(i32::MAX);
        2 * asked.min(max)
    };
    assert_eq!(
        opt(fd, libc::SOL_SOCKET, libc::SO_SNDBUF),
        cap("wmem_max", 200_000)
    );
    assert_eq!(
        opt(fd, libc::SOL_SOCKET, libc::SO_RCVBUF),
        cap("rmem_max", 300_000)
    );
}

#[test]
fn a_device_with_several_addresses_is_refused_with_advice() {
    // Reference 001 §13: the fake device eth9 has two IPv4 addresses; it
    // is not used, and the warning (level 0) says how to choose one.
    let lo_index = crate::sys::if_index("lo");
    let candidates = vec![
        Interface::parse("lo", lo_index, "127.0.0.1/8").unwrap(),
        Interface::parse("eth9", 999, "192.168.0.3/24").unwrap(),
        Interface::parse("eth9:1", 999, "10.10.0.3/24").unwrap(),
    ];
    let cfg = Config {
        if_include: "lo,eth9*".into(),
        port_min_v4: 0,
        ..Config::default()
    };
    let btl = crate::TcpBtl::new(cfg, identity(0, 2), context("several"), &candidates).unwrap();
    let labels: Vec<&str> = btl.modules().iter().map(|m| m.label.as_str()).collect();
    assert_eq!(labels, ["tcp lo link 0"]);
    let lines = lines_of("several");
    assert!(
        lines.iter().any(|(l, m)| *l == 0
            && m.starts_with("device eth9 (index 999) has several addresses selected")),
        "{lines:?}"
    );
}

#[test]
fn an_internal_error_in_progress_fails_each_peer_once_and_stops() {
    let (mut a, mut b, ab, ba) = pair("stopped", lo_config());
    assert_eq!(a.send(0, ab, &[1], &[], 0), SendOutcome::Done);
    assert_eq!(b.send(0, ba, &[2], &[], 0), SendOutcome::Done);
    pump(&mut [&mut a, &mut b], "both connections", |r| {
        r[0].frags() == 1 && r[1].frags() == 1
    });
    b.stop_after_internal_error("'boom' at somewhere.rs:1");
    b.stop_after_internal_error("'again' at somewhere.rs:2");
    spin(&mut [&mut b], 100);
    assert_eq!(b.progress(), 0);
    let failed = b.rec.borrow().failed.clone();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!((failed[0].0, failed[0].1), (0, 0));
    assert!(failed[0].2.contains("internal error"), "{failed:?}");
    assert!(failed[0].2.contains("'boom'"), "{failed:?}");
    assert_eq!(b.send(0, ba, &[3], &[], 0), SendOutcome::Failed);
    let card = a.card();
    assert!(b.btl().add_peer(0, 0, &card).is_err());
    let stopped = b
        .lines()
        .into_iter()
        .filter(|(_, l)| l.contains("stopped after an internal error"))
        .count();
    assert_eq!(stopped, 1);
    // The peer sees the connection end (no goodbye) and fails rank 1.
    pump(&mut [&mut a], "rank 0 noticing", |r| {
        !r[0].rec.borrow().failed.is_empty()
    });
}
