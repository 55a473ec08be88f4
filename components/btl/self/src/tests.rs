//! In-process tests of the self btl through its exported table, with the
//! btl test kit (fake services, the contract-checking recorder) and the
//! btl conformance suite.
//!
//! The component has one process-global instance and the fake services'
//! parameters are process-global: every test holds the kit's lock
//! ([`Session`] does, and clears the parameters it set).

use super::*;
use abi_stable::std_types::{RSlice, RString};
use oxmpi_framework_btl::common::CommonParams;
use oxmpi_framework_btl::handle::BtlHandle;
use oxmpi_framework_btl::module::{flags, BtlComponentModule, SendOutcome};
use oxmpi_framework_btl::testkit::conformance::{self, Subject};
use oxmpi_framework_btl::testkit::{
    identity, pattern, services, Callback, Cluster, Event, Placement, Recorder,
};
use oxmpi_plugin_api::{ParamValue, Params};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::rc::Rc;
use std::sync::MutexGuard;

// ---------------------------------------------------------------------
// Allocation counting (per thread), to check the steady state.

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

// ---------------------------------------------------------------------
// Sessions: the kit's lock, parameters, and the component through its
// exported table as one rank.

/// Holds the kit's lock and the parameters a test set (cleared on drop).
struct Session {
    names: Vec<String>,
    _lock: MutexGuard<'static, ()>,
}

impl Session {
    /// Locks, and sets `btl_self_<name>` for each of `set`.
    fn new(set: &[(&str, ParamValue)]) -> Session {
        let lock = services::lock();
        let names: Vec<String> = set.iter().map(|(n, _)| format!("btl_self_{n}")).collect();
        for (full, (_, value)) in names.iter().zip(set) {
            services::set_param(full, value.clone());
        }
        Session { names, _lock: lock }
    }

    /// The component as rank `rank` of 4, through its exported table.
    fn start<'p>(&self, rank: u32) -> Result<Cluster<'p, SelfState>, String> {
        Cluster::table_rank(&MODULE, COMPONENT, identity(rank, 4))
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        for name in &self.names {
            services::clear_param(name);
        }
    }
}

/// A started rank and its endpoint to itself.
fn started<'p>(session: &Session, rank: u32) -> (Cluster<'p, SelfState>, u64) {
    let mut c = session.start(rank).expect("the self btl starts");
    let ep = c.connect(0, 0, rank).expect("self reaches its own rank");
    (c, ep)
}

// ---------------------------------------------------------------------
// The conformance suite.

#[test]
fn the_btl_conformance_suite_passes() {
    conformance::run::<SelfState>(&Subject::new(COMPONENT, &MODULE));
}

// ---------------------------------------------------------------------
// Module description and parameters.

#[test]
fn one_module_with_open_mpi_defaults_and_empty_card() {
    let s = Session::new(&[]);
    let c = s.start(2).unwrap();
    let m = c.modules(0);
    assert_eq!(m.len(), 1);
    let m = &m[0];
    assert_eq!(m.label.as_str(), "self");
    assert_eq!(m.exclusivity, 65536);
    assert_eq!(m.eager_limit, 1024);
    assert_eq!(m.rndv_eager_limit, 128 * 1024);
    assert_eq!(m.max_send_size, 16 * 1024);
    assert_eq!(m.latency, 0);
    assert_eq!(m.bandwidth, 100);
    assert_eq!(m.flags, flags::SEND | flags::LOOPBACK);
    assert!(c.contact_card(0).is_empty());
}

#[test]
fn parameters_set_the_module_description() {
    let s = Session::new(&[
        ("exclusivity", ParamValue::Int(5)),
        ("eager_limit", ParamValue::Size(4096)),
        ("rndv_eager_limit", ParamValue::Size(8192)),
        ("max_send_size", ParamValue::Size(65536)),
        ("latency", ParamValue::Int(3)),
        ("bandwidth", ParamValue::Int(40000)),
    ]);
    let c = s.start(0).unwrap();
    let m = &c.modules(0)[0];
    assert_eq!(
        (
            m.exclusivity,
            m.eager_limit,
            m.rndv_eager_limit,
            m.max_send_size,
            m.latency,
            m.bandwidth
        ),
        (5, 4096, 8192, 65536, 3, 40000)
    );
}

#[test]
fn bad_parameters_refuse_init_with_a_reason() {
    let s = Session::new(&[("max_send_size", ParamValue::Size(0))]);
    let err = s
        .start(0)
        .err()
        .expect("a zero max_send_size must be refused");
    assert!(err.contains("btl_self_max_send_size is 0"), "{err}");
    drop(s);
    let s = Session::new(&[("flags", ParamValue::Int(2))]);
    let err = s
        .start(0)
        .err()
        .expect("flags without the send bit must be refused");
    assert!(
        err.contains("btl_self_flags = 0x2 lacks the send bit"),
        "{err}"
    );
}

#[test]
fn unsupported_flag_bits_are_dropped_with_a_notice() {
    let s = Session::new(&[("flags", ParamValue::Int(0x7))]);
    let before = services::logged_by(FRAMEWORK, COMPONENT).len();
    let c = s.start(0).unwrap();
    assert_eq!(c.modules(0)[0].flags, flags::SEND | flags::LOOPBACK);
    let log = services::logged_by(FRAMEWORK, COMPONENT);
    assert!(
        log[before..]
            .iter()
            .any(|(level, l)| *level == verbosity::ERROR && l.contains("btl_self_flags = 0x7")),
        "{log:?}"
    );
}

#[test]
fn second_init_without_finalize_is_refused() {
    let s = Session::new(&[]);
    let c = s.start(1).unwrap();
    let handle = BtlHandle::new(&MODULE, services::context(FRAMEWORK, COMPONENT));
    let recorder = Recorder::new();
    let err = handle
        .init(&identity(1, 2), recorder.receiver())
        .expect_err("a second init must be refused");
    assert!(err.contains("already initialized"), "{err}");
    // The first instance is untouched.
    assert_eq!(c.modules(0).len(), 1);
    drop(c);
}

#[test]
fn add_peer_reaches_only_its_own_rank() {
    let s = Session::new(&[]);
    let (mut c, ep) = started(&s, 3);
    assert_eq!(ep, 3);
    for peer in [0u32, 1, 2, 4, u32::MAX] {
        assert_eq!(
            c.add_peer(0, 0, peer, b"card").unwrap_err(),
            "self only reaches its own process (rank 3)",
            "peer {peer}"
        );
    }
    // A refusal leaves the caller's endpoint alone.
    let mut endpoint = 99;
    let mut reason = RString::new();
    // SAFETY: plain arguments.
    let ok =
        unsafe { (MODULE.add_peer)(0, 2, RSlice::from_slice(&[]), &mut endpoint, &mut reason) };
    assert!(!ok);
    assert_eq!(endpoint, 99);
    let err = c.add_peer(0, 1, 3, &[]).unwrap_err();
    assert!(err.contains("there is no module 1"), "{err}");
    c.assert_clean("add_peer");
}

// ---------------------------------------------------------------------
// Delivery.

#[test]
fn fragments_of_0_bytes_to_4_mib_arrive_in_order_with_their_data() {
    let sizes = [
        0usize,
        1,
        7,
        64,
        1023,
        1024,
        1025,
        16 * 1024,
        65536 + 3,
        1 << 20,
        4 << 20,
    ];
    let payloads: Vec<Vec<Vec<u8>>> = (0..2u32)
        .map(|direct| {
            sizes
                .iter()
                .enumerate()
                .map(|(i, &n)| pattern(n, i as u32 + direct))
                .collect()
        })
        .collect();
    let header_of = |i: usize| pattern(i % (MAX_HEADER + 1), 100 + i as u32);
    let s = Session::new(&[]);
    let (mut c, ep) = started(&s, 1);
    for direct in [false, true] {
        c.recorder(0).set_default_placement(if direct {
            Placement::Destination
        } else {
            Placement::BtlHeld
        });
        let payloads = &payloads[usize::from(direct)];
        for (i, p) in payloads.iter().enumerate() {
            let outcome = c.send(0, 0, ep, &header_of(i), p, 1000 + i as u64);
            let copied = p.len() <= INLINE_PAYLOAD;
            let expected = if copied {
                SendOutcome::Done
            } else {
                SendOutcome::Queued
            };
            assert_eq!(outcome, expected, "{} B", p.len());
        }
        assert!(c.recorder(0).events().is_empty(), "send must not call back");
        assert_eq!(c.progress(0), sizes.len());
        let mut events = c.recorder(0).take_events().into_iter();
        for (i, &size) in sizes.iter().enumerate() {
            // A copied payload comes with `on_fragment` alone, from the
            // btl's memory; a kept one is announced, placed or handed over,
            // and given back.
            let copied = size <= INLINE_PAYLOAD;
            if !copied {
                assert_eq!(
                    events.next(),
                    Some(Event::Header {
                        module: 0,
                        peer: 1,
                        header: header_of(i),
                        payload_len: size
                    })
                );
            }
            match events.next() {
                Some(Event::Fragment(f)) => {
                    assert_eq!((f.module, f.peer), (0, 1));
                    assert_eq!(f.header, header_of(i));
                    assert!(f.payload == payloads[i], "payload {i} ({size} B) differs");
                    assert_eq!(f.landed, direct && !copied, "fragment {i}");
                }
                other => panic!("expected fragment {i}, got {other:?}"),
            }
            if !copied {
                assert_eq!(events.next(), Some(Event::SendDone(1000 + i as u64)));
            }
        }
        assert_eq!(events.next(), None);
        assert_eq!(c.progress(0), 0, "nothing left");
    }
    c.assert_clean("0 B to 4 MiB");
}

#[test]
fn direct_placement_copies_into_the_destination_and_nowhere_else() {
    let s = Session::new(&[]);
    let data = pattern(INLINE_PAYLOAD + 1, 9);
    let (mut c, ep) = started(&s, 0);
    c.recorder(0).place_next([Placement::Destination]);
    assert_eq!(c.send(0, 0, ep, &[1, 2, 3], &data, 5), SendOutcome::Queued);
    assert_eq!(c.progress(0), 1);
    let f = &c.recorder(0).fragments()[0];
    assert!(f.landed && f.payload == data);
    // The recorder's guard bytes around the destination are intact.
    c.assert_clean("direct placement");
}

#[test]
fn without_a_destination_the_senders_payload_is_handed_over_in_place() {
    let s = Session::new(&[]);
    let data = pattern(300, 1);
    let (mut c, ep) = started(&s, 0);
    assert_eq!(c.send(0, 0, ep, &[9], &data, 77), SendOutcome::Queued);
    assert_eq!(c.progress(0), 1);
    let events = c.recorder(0).take_events();
    assert!(
        matches!(&events[1], Event::Fragment(f)
            if f.payload_addr == data.as_ptr() as usize && f.payload == data && !f.landed),
        "{:?}",
        &events[1]
    );
    assert_eq!(events[2], Event::SendDone(77));
    c.assert_clean("in place");
}

#[test]
fn the_header_is_copied_at_send_time() {
    let data = pattern(INLINE_PAYLOAD + 1, 2);
    let s = Session::new(&[]);
    let (mut c, ep) = started(&s, 0);
    let mut header = [4u8; MAX_HEADER];
    assert_eq!(c.send(0, 0, ep, &header, &data, 1), SendOutcome::Queued);
    header.fill(5);
    c.progress(0);
    assert_eq!(
        c.recorder(0).take_events()[0],
        Event::Header {
            module: 0,
            peer: 0,
            header: vec![4; MAX_HEADER],
            payload_len: data.len()
        }
    );
    assert_eq!(header, [5; MAX_HEADER]);
}

#[test]
fn a_small_payload_is_copied_at_send_time_and_its_send_is_done() {
    let lens = [0, 1, INLINE_PAYLOAD];
    let payloads: Vec<Vec<u8>> = lens.iter().map(|&n| pattern(n, n as u32)).collect();
    let s = Session::new(&[]);
    let (mut c, ep) = started(&s, 0);
    // Placement is offered but not asked: the whole fragment is in memory.
    c.recorder(0).set_default_placement(Placement::Destination);
    for (len, data) in lens.into_iter().zip(&payloads) {
        let mut header = [6u8; 10];
        assert_eq!(
            c.send(0, 0, ep, &header, data, 40 + len as u64),
            SendOutcome::Done
        );
        // The send is finished: the header may change at once.
        header.fill(0);
        assert!(c.recorder(0).events().is_empty(), "send must not call back");
        assert_eq!(c.progress(0), 1);
        let events = c.recorder(0).take_events();
        assert_eq!(events.len(), 1, "{len} B: {events:?}");
        match &events[0] {
            Event::Fragment(f) => {
                assert_eq!((f.module, f.peer), (0, 0));
                assert_eq!(f.header, [6u8; 10]);
                assert_eq!(f.payload, *data, "{len} B");
                assert!(!f.landed);
                if len > 0 {
                    assert_ne!(
                        f.payload_addr,
                        data.as_ptr() as usize,
                        "{len} B: delivered from the sender's buffer, not a copy"
                    );
                }
            }
            other => panic!("{len} B: expected the fragment, got {other:?}"),
        }
        assert_eq!(c.recorder(0).outstanding(), 0);
    }
    c.assert_clean("copied payloads");
}

#[test]
fn many_queued_sends_are_delivered_in_one_progress_call() {
    const N: usize = 20_000;
    let payloads: Vec<[u8; 8]> = (0..N as u64).map(u64::to_le_bytes).collect();
    let s = Session::new(&[]);
    let (mut c, ep) = started(&s, 2);
    for (i, p) in payloads.iter().enumerate() {
        let header = (i as u32).to_le_bytes();
        assert_eq!(c.send(0, 0, ep, &header, p, i as u64), SendOutcome::Done);
    }
    assert_eq!(c.progress(0), N);
    let events = c.recorder(0).take_events();
    assert_eq!(events.len(), N);
    for (i, event) in events.iter().enumerate() {
        assert!(
            matches!(event, Event::Fragment(f)
                if f.header[..] == (i as u32).to_le_bytes() && f.payload[..] == (i as u64).to_le_bytes()),
            "fragment {i}: {event:?}"
        );
    }
    assert_eq!(c.progress(0), 0);
    c.assert_clean("20 000 sends");
}

#[test]
fn steady_state_sends_and_progress_do_not_allocate() {
    let s = Session::new(&[]);
    let data = pattern(4096, 3);
    let headers: Vec<[u8; 8]> = (0..500u64).map(u64::to_le_bytes).collect();
    let (mut c, ep) = started(&s, 0);
    c.recorder(0).set_recording(false);
    c.recorder(0).set_default_placement(Placement::Destination);
    fn round<'p>(c: &mut Cluster<'p, SelfState>, ep: u64, headers: &[[u8; 8]], data: &'p [u8]) {
        for (i, header) in headers.iter().enumerate() {
            let payload = &data[..(i * 7) % 4096];
            let expected = if payload.len() <= INLINE_PAYLOAD {
                SendOutcome::Done
            } else {
                SendOutcome::Queued
            };
            assert_eq!(c.send(0, 0, ep, header, payload, i as u64), expected);
        }
        assert_eq!(c.progress(0), 500);
        for _ in 0..100 {
            assert_eq!(c.progress(0), 0, "idle");
        }
    }
    // Two warm-up rounds grow the queue and the recorder's buffers.
    round(&mut c, ep, &headers, &data);
    round(&mut c, ep, &headers, &data);
    let before = allocations();
    for _ in 0..5 {
        round(&mut c, ep, &headers, &data);
    }
    assert_eq!(allocations() - before, 0, "steady state allocated");
    let counts = c.recorder(0).counts();
    let kept = (0..500).filter(|i| (i * 7) % 4096 > INLINE_PAYLOAD).count();
    assert_eq!(
        [counts.headers, counts.fragments, counts.send_done],
        [7 * kept, 3500, 7 * kept]
    );
    c.assert_clean("steady state");
}

#[test]
fn a_send_from_inside_a_callback_is_refused_and_delivery_goes_on() {
    // A pml that sends from a callback breaks the interface; the adapter
    // refuses the nested entry, and the batch is still delivered whole.
    // Larger than what is copied: its delivery ends with `on_send_done`.
    static PAYLOAD: [u8; INLINE_PAYLOAD + 1] = [3; INLINE_PAYLOAD + 1];
    let s = Session::new(&[]);
    let (mut c, ep) = started(&s, 0);
    let handle = *c.handle(0).expect("the table rank");
    let nested = Rc::new(RefCell::new(Vec::new()));
    let into = nested.clone();
    c.recorder(0).set_hook(move |cb| {
        if let Callback::SendDone(cookie) = cb {
            // SAFETY: a static payload; a refused send keeps nothing.
            let outcome =
                unsafe { handle.send(0, ep, &[0], PAYLOAD.as_ptr(), PAYLOAD.len(), cookie + 10) };
            into.borrow_mut().push(outcome);
        }
    });
    for cookie in 0..3u64 {
        assert_eq!(
            c.send(0, 0, ep, &[0], &PAYLOAD, cookie),
            SendOutcome::Queued
        );
    }
    assert_eq!(c.progress(0), 3);
    assert_eq!(*nested.borrow(), [SendOutcome::Failed; 3]);
    assert_eq!(c.recorder(0).send_dones(), [0, 1, 2]);
    assert_eq!(c.progress(0), 0, "nothing was queued from inside");
    c.assert_clean("a send from a callback");
}

// ---------------------------------------------------------------------
// Broken sends.

#[test]
fn a_header_too_long_is_refused_by_the_adapter_and_the_btl_goes_on() {
    let s = Session::new(&[]);
    let data = [7u8; INLINE_PAYLOAD + 1];
    let before = services::logged_by(FRAMEWORK, COMPONENT).len();
    let (mut c, ep) = started(&s, 1);
    assert_eq!(c.send(0, 0, ep, &[1], &data, 1), SendOutcome::Queued);
    let long = [0u8; MAX_HEADER + 1];
    assert_eq!(c.send(0, 0, ep, &long, &data, 2), SendOutcome::Failed);
    let log = services::logged_by(FRAMEWORK, COMPONENT);
    assert!(
        log[before..]
            .iter()
            .any(|(level, l)| *level == verbosity::ERROR && l.contains("a 65-byte header")),
        "{log:?}"
    );
    assert_eq!(c.send(0, 0, ep, &[1], &data, 3), SendOutcome::Queued);
    assert_eq!(c.progress(0), 2);
    assert_eq!(c.recorder(0).send_dones(), [1, 3]);
    assert!(c.recorder(0).peer_failures().is_empty());
    c.assert_clean("a long header");
}

#[test]
fn a_send_to_an_unknown_endpoint_fails_the_peer_once() {
    let s = Session::new(&[]);
    let data = [7u8; INLINE_PAYLOAD + 1];
    let (mut c, ep) = started(&s, 1);
    assert_eq!(c.send(0, 0, ep, &[1], &data, 1), SendOutcome::Queued);
    assert_eq!(c.send(0, 0, 5, &[1], &data, 2), SendOutcome::Failed);
    assert_eq!(c.send(0, 0, ep, &[1], &data, 3), SendOutcome::Failed);
    assert!(c.recorder(0).events().is_empty(), "no callback from send");
    assert_eq!(c.progress(0), 1);
    assert_eq!(
        c.recorder(0).take_events(),
        vec![Event::PeerFailed {
            module: 0,
            peer: 1,
            reason: "the pml sent to self endpoint 5, which add_peer never returned (the only endpoint is 1)"
                .to_string()
        }],
        "queued fragments are dropped without on_send_done"
    );
    assert_eq!(c.progress(0), 0, "reported once");
    assert_eq!(c.recorder(0).counts().peer_failed, 1);
    assert_eq!(c.recorder(0).outstanding(), 0);
    c.assert_clean("an unknown endpoint");
}

#[test]
fn sends_to_unknown_endpoints_or_modules_fail_with_a_reason() {
    for (module, endpoint, expect) in [
        (0u32, 5u64, "self endpoint 5, which add_peer never returned"),
        (2, 1, "self module 2, which does not exist"),
    ] {
        let s = Session::new(&[]);
        let mut c = s.start(1).unwrap();
        assert_eq!(
            c.send(0, module, endpoint, &[0], &[], 1),
            SendOutcome::Failed
        );
        c.progress(0);
        match &c.recorder(0).peer_failures()[..] {
            [(0, 1, why)] => assert!(why.contains(expect), "{why}"),
            other => panic!("expected one failure, got {other:?}"),
        }
        c.assert_clean("a send nowhere");
    }
}

#[test]
fn entry_points_before_init_do_nothing_harmful() {
    let _s = Session::new(&[]);
    let handle = BtlHandle::new(&MODULE, services::context(FRAMEWORK, COMPONENT));
    assert_eq!(handle.progress(), 0);
    // SAFETY: a null payload of length 0 is allowed; nothing is kept.
    let outcome = unsafe { handle.send(0, 0, &[0], std::ptr::null(), 0, 0) };
    assert_eq!(outcome, SendOutcome::Failed);
    let err = handle.add_peer(0, 0, &[]).unwrap_err();
    assert!(err.contains("not initialized"), "{err}");
    assert!(handle.contact_card().is_empty());
    handle.finalize();
}

// ---------------------------------------------------------------------
// Export and parameters.

#[test]
fn exported_root_module_names_the_component_and_its_table() {
    let root = __oxmpi_component_export::component_root();
    assert_eq!(root.framework().as_str(), "btl");
    assert_eq!(root.component().as_str(), "self");
    assert_eq!(
        root.interface_version(),
        oxmpi_framework_btl::INTERFACE_VERSION
    );
    let table = root.module().expect("module field").unwrap();
    abi_stable::abi_stability::abi_checking::check_layout_compatibility(
        <BtlComponentModule as abi_stable::StableAbi>::LAYOUT,
        table.layout,
    )
    .expect("the exported table has the btl module layout");
    assert!(std::ptr::eq(
        table.table,
        &MODULE as *const BtlComponentModule as *const c_void
    ));
}

#[test]
fn parameter_declarations_are_valid_for_the_core() {
    Config::check_declarations().unwrap();
    for decl in Config::DECLS {
        let full = format!("btl_self_{}", decl.name);
        assert_eq!(oxmpi_mca::registry::check_decl(&full, decl), None, "{full}");
    }
    let names: Vec<&str> = Config::DECLS.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "exclusivity",
            "eager_limit",
            "rndv_eager_limit",
            "max_send_size",
            "latency",
            "bandwidth",
            "flags"
        ]
    );
}

#[test]
fn defaults_are_open_mpis() {
    assert_eq!(
        Config::default().btl,
        CommonParams {
            exclusivity: 65536,
            eager_limit: 1024,
            rndv_eager_limit: 128 * 1024,
            max_send_size: 16 * 1024,
            latency: 0,
            bandwidth: 100,
            flags: flags::SEND,
        }
    );
    let err = Config {
        btl: CommonParams {
            rndv_eager_limit: 0,
            ..Config::default().btl
        },
    }
    .module_info()
    .unwrap_err();
    assert_eq!(
        err,
        "btl_self_rndv_eager_limit is 0; it must be at least 1 byte (default 131072)"
    );
}
