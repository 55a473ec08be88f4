//! Setting up: listening ports, interface lists, socket options and the
//! lines logged while connecting.

use std::net::TcpListener;

use oxmpi_framework_btl::module::SendOutcome;
use oxmpi_netif::interfaces::Interface;
use oxmpi_plugin_api::{ErrorKind, QueryReply};

use super::harness::*;
use crate::{query_with, Config, InitError};

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
        let ranks: Vec<Rank<'_>> = (0..3)
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
fn socket_options_follow_the_parameters() {
    let opt = |fd, level, name| crate::sys::get_int(fd, level, name).unwrap();
    // Defaults: TCP_NODELAY on, buffers left to the system.
    let (mut a, mut b, ab, _) = pair("sockopt-default", lo_config());
    assert_eq!(a.send(0, ab, &[1], &[], 0), SendOutcome::Done);
    pump(&mut [&mut a, &mut b], "a fragment", |r| r[1].frags() == 1);
    let fd = a.btl().endpoint_fd(ab).unwrap();
    assert_eq!(opt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY), 1);
    a.check();
    b.check();
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
    a.check();
    b.check();
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
    a.check();
    b.check();
}
