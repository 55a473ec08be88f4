//! The component as the core loads it: its root module and the
//! `extern "C"` table generated from `TcpBtl`.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::MutexGuard;
use std::time::Instant;

use oxmpi_framework_btl::handle::BtlHandle;
use oxmpi_framework_btl::module::SendOutcome;
use oxmpi_framework_btl::testkit::Cluster;
use oxmpi_plugin_api::ParamValue;

use super::harness::*;
use crate::card::Card;
use crate::{TcpBtl, MODULE};

/// The kit's lock (the exported table's instance and the parameters are
/// process-global, shared with the conformance suite) and the `btl_tcp_*`
/// parameters a test set, cleared when it ends.
struct Params {
    names: Vec<String>,
    _lock: MutexGuard<'static, ()>,
}

impl Params {
    fn lock() -> Params {
        Params {
            names: Vec::new(),
            _lock: services::lock(),
        }
    }

    fn set(&mut self, name: &str, value: ParamValue) {
        let full = format!("btl_tcp_{name}");
        services::set_param(&full, value);
        self.names.push(full);
    }
}

impl Drop for Params {
    fn drop(&mut self) {
        for name in &self.names {
            services::clear_param(name);
        }
    }
}

#[test]
fn the_extern_entry_points() {
    let mut params = Params::lock();
    params.set("if_include", ParamValue::Str("lo".into()));
    params.set("if_exclude", ParamValue::Str("eth0".into()));
    params.set("links", ParamValue::Int(1));
    params.set("eager_limit", ParamValue::Size(4096));
    let payload = pattern(200_000, 4);
    // Rank 0 through the exported table. Both lists: init fails with the
    // message.
    let err = Cluster::<TcpBtl>::table_rank(&MODULE, "tcp", identity(0, 2))
        .err()
        .expect("init must refuse both lists");
    assert!(err.contains("are both set"), "{err}");
    params.set("if_exclude", ParamValue::Str(String::new().into()));
    let mut c = Cluster::<TcpBtl>::table_rank(&MODULE, "tcp", identity(0, 2)).unwrap();
    let modules = c.modules(0);
    assert_eq!(modules.len(), 1);
    assert_eq!(modules[0].label.as_str(), "tcp lo link 0");
    assert_eq!(modules[0].eager_limit, 4096);
    assert_eq!(modules[0].exclusivity, 100);
    // A second init without finalize is refused.
    let spare = Recorder::new();
    let again = BtlHandle::new(&MODULE, services::context("btl", "tcp"))
        .init(&identity(0, 2), spare.receiver())
        .expect_err("a second init must be refused");
    assert!(again.contains("already initialized"), "{again}");
    let card = c.contact_card(0);
    let decoded = Card::decode(&card).unwrap();
    assert_eq!(
        decoded.interfaces[0].iface.addr,
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    );
    assert_eq!(
        c.add_peer(0, 0, 0, &card).unwrap_err(),
        "tcp does not connect a process to itself (the self btl does)"
    );
    // A second rank (a plain instance) to talk to.
    let mut b = Rank::new("extern-b", lo_config(), 1, 2).unwrap();
    let cb = b.card();
    let ep = c.add_peer(0, 0, 1, &cb).unwrap();
    assert_ne!(c.send(0, 0, ep, &[9], &payload, 1), SendOutcome::Failed);
    let start = Instant::now();
    while b.frags() < 1 || c.recorder(0).outstanding() > 0 {
        assert!(
            start.elapsed() < DEADLINE,
            "timed out waiting for the fragment through the entry points"
        );
        c.progress(0);
        b.progress();
    }
    assert!(b.fragments()[0].payload == payload);
    c.finalize_rank(0);
    // After finalize: no card, no peers, no progress.
    assert!(c.contact_card(0).is_empty());
    assert!(c.add_peer(0, 0, 1, &cb).is_err());
    assert_eq!(c.progress(0), 0);
    // The finalized peer is not a failure for b.
    spin(&mut [&mut b], 200);
    assert_eq!(b.failed(), 0, "{:?}", b.failures());
    c.assert_clean("rank 0 through the exported table");
    b.check();
    assert!(spare.events().is_empty());
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
