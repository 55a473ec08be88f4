//! In-process tests of the self btl through its exported module table.
//!
//! The component keeps process-wide state, so every test holds `SERIAL`
//! and finalizes before it returns ([`Session`] does both).

use super::*;
use abi_stable::prefix_type::PrefixTypeTrait;
use abi_stable::std_types::{ROption, RStr};
use oxmpi_framework_btl::common::CommonParams;
use oxmpi_framework_btl::module::flags;
use oxmpi_plugin_api::{ParamValue, Params, Services};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::OnceLock;

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
// A services table backed by a map the tests fill.

fn params() -> &'static Mutex<HashMap<String, ParamValue>> {
    static P: OnceLock<Mutex<HashMap<String, ParamValue>>> = OnceLock::new();
    P.get_or_init(Default::default)
}

fn logged() -> &'static Mutex<Vec<String>> {
    static L: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    L.get_or_init(Default::default)
}

extern "C" fn param_value(full_name: RStr<'_>) -> ROption<ParamValue> {
    params()
        .lock()
        .unwrap()
        .get(full_name.as_str())
        .cloned()
        .into()
}

extern "C" fn verbosity(_framework: RStr<'_>) -> i32 {
    100
}

extern "C" fn log(_fw: RStr<'_>, _comp: RStr<'_>, level: i32, message: RStr<'_>) {
    logged().lock().unwrap().push(format!("{level}: {message}"));
}

fn context() -> ComponentContext {
    static SERVICES: OnceLock<oxmpi_plugin_api::ServicesRef> = OnceLock::new();
    ComponentContext {
        services: *SERVICES.get_or_init(|| {
            Services {
                param_value,
                verbosity,
                log,
            }
            .leak_into_prefix()
        }),
        framework: RStr::from_str("btl"),
        component: RStr::from_str("self"),
    }
}

// ---------------------------------------------------------------------
// A pml stand-in that records the callbacks.

#[derive(Debug, PartialEq, Clone)]
enum Event {
    Header {
        header: Vec<u8>,
        payload_len: usize,
    },
    Fragment {
        header: Vec<u8>,
        payload: Vec<u8>,
        at_destination: bool,
        in_place: bool,
    },
    SendDone(u64),
    PeerFailed(String),
}

struct Recorder {
    /// Whether `on_header` answers a destination.
    direct: bool,
    /// Destination storage (sized by the test).
    destination: Vec<u8>,
    /// The sender's payload pointer of the fragment in flight.
    sender_payload: *const u8,
    /// If false, only counts (for the allocation test).
    record: bool,
    counts: [usize; 4],
    events: Vec<Event>,
    /// Checked by `on_header`: the module and peer of every callback.
    expect_peer: u32,
    wrong_ids: usize,
}

impl Recorder {
    fn new(expect_peer: u32) -> Box<Recorder> {
        Box::new(Recorder {
            direct: false,
            destination: Vec::new(),
            sender_payload: std::ptr::null(),
            record: true,
            counts: [0; 4],
            events: Vec::new(),
            expect_peer,
            wrong_ids: 0,
        })
    }

    fn receiver(&mut self) -> BtlReceiver {
        BtlReceiver {
            ctx: self as *mut Recorder as *mut c_void,
            on_header,
            on_fragment,
            on_send_done,
            on_peer_failed,
        }
    }
}

unsafe fn recorder<'a>(ctx: *mut c_void) -> &'a mut Recorder {
    // SAFETY: every test registers a live boxed Recorder as ctx.
    unsafe { &mut *(ctx as *mut Recorder) }
}

unsafe extern "C" fn on_header(
    ctx: *mut c_void,
    module: u32,
    peer: u32,
    header: *const u8,
    header_len: usize,
    payload_len: usize,
) -> *mut u8 {
    // SAFETY: see `recorder`.
    let r = unsafe { recorder(ctx) };
    r.counts[0] += 1;
    if module != MODULE_INDEX || peer != r.expect_peer {
        r.wrong_ids += 1;
    }
    if r.record {
        // SAFETY: the btl passes a readable header.
        let header = unsafe { std::slice::from_raw_parts(header, header_len) }.to_vec();
        r.events.push(Event::Header {
            header,
            payload_len,
        });
    }
    if r.direct {
        if r.destination.len() < payload_len {
            r.destination.resize(payload_len, 0);
        }
        r.destination.as_mut_ptr()
    } else {
        std::ptr::null_mut()
    }
}

unsafe extern "C" fn on_fragment(
    ctx: *mut c_void,
    module: u32,
    peer: u32,
    header: *const u8,
    header_len: usize,
    payload: *const u8,
    payload_len: usize,
) {
    // SAFETY: see `recorder`.
    let r = unsafe { recorder(ctx) };
    r.counts[1] += 1;
    if module != MODULE_INDEX || peer != r.expect_peer {
        r.wrong_ids += 1;
    }
    if r.record {
        // SAFETY: the btl passes readable header and payload.
        let (header, data) = unsafe {
            (
                std::slice::from_raw_parts(header, header_len).to_vec(),
                if payload_len == 0 {
                    Vec::new()
                } else {
                    std::slice::from_raw_parts(payload, payload_len).to_vec()
                },
            )
        };
        r.events.push(Event::Fragment {
            header,
            payload: data,
            at_destination: std::ptr::eq(payload, r.destination.as_ptr()),
            in_place: std::ptr::eq(payload, r.sender_payload),
        });
    }
}

unsafe extern "C" fn on_send_done(ctx: *mut c_void, cookie: u64) {
    // SAFETY: see `recorder`.
    let r = unsafe { recorder(ctx) };
    r.counts[2] += 1;
    if r.record {
        r.events.push(Event::SendDone(cookie));
    }
}

unsafe extern "C" fn on_peer_failed(ctx: *mut c_void, module: u32, peer: u32, reason: RStr<'_>) {
    // SAFETY: see `recorder`.
    let r = unsafe { recorder(ctx) };
    r.counts[3] += 1;
    if module != MODULE_INDEX || peer != r.expect_peer {
        r.wrong_ids += 1;
    }
    r.events.push(Event::PeerFailed(reason.to_string()));
}

// ---------------------------------------------------------------------
// Sessions.

static SERIAL: Mutex<()> = Mutex::new(());

struct Session {
    _serial: MutexGuard<'static, ()>,
    recorder: Box<Recorder>,
    modules: RVec<BtlModuleInfo>,
    rank: u32,
}

impl Session {
    /// Initializes the component as rank `rank` of 4 with parameters `set`.
    fn start(rank: u32, set: &[(&str, ParamValue)]) -> Result<Session, String> {
        let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        {
            let mut p = params().lock().unwrap();
            p.clear();
            for (name, value) in set {
                p.insert(format!("btl_self_{name}"), value.clone());
            }
        }
        logged().lock().unwrap().clear();
        let mut recorder = Recorder::new(rank);
        let identity = JobIdentity {
            job_id: 7,
            secret: [1, 2],
            rank,
            size: 4,
        };
        let mut modules = RVec::new();
        let mut error = RString::new();
        // SAFETY: valid arguments; the recorder outlives the session.
        let ok = unsafe {
            (MODULE.init)(
                &context(),
                &identity,
                recorder.receiver(),
                &mut modules,
                &mut error,
            )
        };
        if !ok {
            return Err(error.into_string());
        }
        Ok(Session {
            _serial: serial,
            recorder,
            modules,
            rank,
        })
    }

    fn endpoint(&self) -> u64 {
        let mut endpoint = u64::MAX;
        let mut reason = RString::new();
        // SAFETY: plain arguments.
        let ok = unsafe {
            (MODULE.add_peer)(
                0,
                self.rank,
                RSlice::from_slice(&[]),
                &mut endpoint,
                &mut reason,
            )
        };
        assert!(ok, "add_peer refused its own rank: {reason}");
        endpoint
    }

    fn send(&self, endpoint: u64, header: &[u8], payload: &[u8], cookie: u64) -> SendOutcome {
        // SAFETY: the caller keeps `payload` alive until progress delivers it.
        unsafe {
            (MODULE.send)(
                0,
                endpoint,
                header.as_ptr(),
                header.len(),
                payload.as_ptr(),
                payload.len(),
                cookie,
            )
        }
    }

    fn progress(&self) -> usize {
        // SAFETY: no arguments.
        unsafe { (MODULE.progress)() }
    }

    fn events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.recorder.events)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // SAFETY: no arguments.
        unsafe { (MODULE.finalize)() };
    }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 8) as u8)
        .collect()
}

// ---------------------------------------------------------------------
// Tests.

#[test]
fn one_module_with_open_mpi_defaults_and_empty_card() {
    let s = Session::start(2, &[]).unwrap();
    assert_eq!(s.modules.len(), 1);
    let m = &s.modules[0];
    assert_eq!(m.label.as_str(), "self");
    assert_eq!(m.exclusivity, 65536);
    assert_eq!(m.eager_limit, 1024);
    assert_eq!(m.rndv_eager_limit, 128 * 1024);
    assert_eq!(m.max_send_size, 16 * 1024);
    assert_eq!(m.latency, 0);
    assert_eq!(m.bandwidth, 100);
    assert_eq!(m.flags, flags::SEND);
    let mut card = RVec::from(vec![1u8, 2, 3]);
    // SAFETY: plain argument.
    unsafe { (MODULE.contact_card)(&mut card) };
    assert!(card.is_empty());
}

#[test]
fn parameters_set_the_module_description() {
    let s = Session::start(
        0,
        &[
            ("exclusivity", ParamValue::Int(5)),
            ("eager_limit", ParamValue::Size(4096)),
            ("rndv_eager_limit", ParamValue::Size(8192)),
            ("max_send_size", ParamValue::Size(65536)),
            ("latency", ParamValue::Int(3)),
            ("bandwidth", ParamValue::Int(40000)),
        ],
    )
    .unwrap();
    let m = &s.modules[0];
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
    let err = Session::start(0, &[("max_send_size", ParamValue::Size(0))])
        .err()
        .expect("a zero max_send_size must be refused");
    assert!(err.contains("btl_self_max_send_size is 0"), "{err}");
    let err = Session::start(0, &[("flags", ParamValue::Int(2))])
        .err()
        .expect("flags without the send bit must be refused");
    assert!(
        err.contains("btl_self_flags = 0x2 lacks the send bit"),
        "{err}"
    );
}

#[test]
fn unsupported_flag_bits_are_dropped_with_a_notice() {
    let s = Session::start(0, &[("flags", ParamValue::Int(0x7))]).unwrap();
    assert_eq!(s.modules[0].flags, flags::SEND);
    let log = logged().lock().unwrap().clone();
    assert!(
        log.iter()
            .any(|l| l.starts_with("0: ") && l.contains("btl_self_flags = 0x7")),
        "{log:?}"
    );
}

#[test]
fn second_init_without_finalize_is_refused() {
    let s = Session::start(1, &[]).unwrap();
    let mut recorder = Recorder::new(1);
    let identity = JobIdentity {
        job_id: 1,
        secret: [0, 0],
        rank: 1,
        size: 2,
    };
    let mut modules = RVec::new();
    let mut error = RString::new();
    // SAFETY: valid arguments.
    let ok = unsafe {
        (MODULE.init)(
            &context(),
            &identity,
            recorder.receiver(),
            &mut modules,
            &mut error,
        )
    };
    assert!(!ok);
    assert!(error.as_str().contains("already initialized"), "{error}");
    assert!(modules.is_empty());
    drop(s);
}

#[test]
fn add_peer_reaches_only_its_own_rank() {
    let s = Session::start(3, &[]).unwrap();
    assert_eq!(s.endpoint(), 3);
    for peer in [0u32, 1, 2, 4, u32::MAX] {
        let mut endpoint = 99;
        let mut reason = RString::new();
        // SAFETY: plain arguments.
        let ok = unsafe {
            (MODULE.add_peer)(
                0,
                peer,
                RSlice::from_slice(b"card"),
                &mut endpoint,
                &mut reason,
            )
        };
        assert!(!ok, "peer {peer} must be refused");
        assert_eq!(
            reason.as_str(),
            "self only reaches its own process (rank 3)"
        );
        assert_eq!(endpoint, 99, "a refusal leaves the endpoint alone");
    }
    let mut endpoint = 0;
    let mut reason = RString::new();
    // SAFETY: plain arguments.
    let ok =
        unsafe { (MODULE.add_peer)(1, 3, RSlice::from_slice(&[]), &mut endpoint, &mut reason) };
    assert!(!ok);
    assert!(reason.as_str().contains("there is no module 1"), "{reason}");
}

#[test]
fn fragments_of_0_bytes_to_4_mib_arrive_in_order_with_their_data() {
    let mut s = Session::start(1, &[]).unwrap();
    let ep = s.endpoint();
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
    for direct in [false, true] {
        s.recorder.direct = direct;
        let payloads: Vec<Vec<u8>> = sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| pattern(n, i as u8 + direct as u8))
            .collect();
        for (i, p) in payloads.iter().enumerate() {
            let header = pattern(i % (MAX_HEADER + 1), 100 + i as u8);
            assert_eq!(s.send(ep, &header, p, 1000 + i as u64), SendOutcome::Queued);
        }
        assert!(s.events().is_empty(), "send must not call back");
        // Deliver and check fragment by fragment: the destination buffer is
        // reused, so each direct payload is checked when it arrives.
        let events = {
            assert_eq!(s.progress(), sizes.len());
            s.events()
        };
        assert_eq!(events.len(), 3 * sizes.len());
        for (i, chunk) in events.chunks(3).enumerate() {
            let header = pattern(i % (MAX_HEADER + 1), 100 + i as u8);
            assert_eq!(
                chunk[0],
                Event::Header {
                    header: header.clone(),
                    payload_len: sizes[i]
                }
            );
            match &chunk[1] {
                Event::Fragment {
                    header: h,
                    payload,
                    at_destination,
                    ..
                } => {
                    assert_eq!(h, &header);
                    assert!(
                        payload == &payloads[i],
                        "payload {i} ({} B) differs",
                        sizes[i]
                    );
                    if sizes[i] > 0 {
                        // (Empty vectors share one dangling pointer.)
                        assert_eq!(*at_destination, direct, "fragment {i}");
                    }
                }
                other => panic!("expected fragment {i}, got {other:?}"),
            }
            assert_eq!(chunk[2], Event::SendDone(1000 + i as u64));
        }
        assert_eq!(s.progress(), 0, "nothing left");
    }
    assert_eq!(s.recorder.wrong_ids, 0);
}

#[test]
fn direct_placement_copies_into_the_destination() {
    let mut s = Session::start(0, &[]).unwrap();
    let ep = s.endpoint();
    s.recorder.direct = true;
    s.recorder.destination = vec![0xEE; 100];
    let data = pattern(64, 9);
    assert_eq!(s.send(ep, &[1, 2, 3], &data, 5), SendOutcome::Queued);
    assert_eq!(s.progress(), 1);
    assert_eq!(&s.recorder.destination[..64], &data[..]);
    assert!(
        s.recorder.destination[64..].iter().all(|&b| b == 0xEE),
        "bytes past the payload stay untouched"
    );
}

#[test]
fn without_a_destination_the_senders_payload_is_handed_over_in_place() {
    let mut s = Session::start(0, &[]).unwrap();
    let ep = s.endpoint();
    let data = pattern(300, 1);
    s.recorder.sender_payload = data.as_ptr();
    assert_eq!(s.send(ep, &[9], &data, 77), SendOutcome::Queued);
    assert_eq!(s.progress(), 1);
    let events = s.events();
    assert!(
        matches!(&events[1], Event::Fragment { in_place: true, payload, .. } if payload == &data),
        "{:?}",
        &events[1]
    );
    assert_eq!(events[2], Event::SendDone(77));
}

#[test]
fn the_header_is_copied_at_send_time() {
    let mut s = Session::start(0, &[]).unwrap();
    let ep = s.endpoint();
    let mut header = [4u8; MAX_HEADER];
    assert_eq!(s.send(ep, &header, &[], 1), SendOutcome::Queued);
    header.fill(5);
    s.progress();
    assert_eq!(
        s.events()[0],
        Event::Header {
            header: vec![4; MAX_HEADER],
            payload_len: 0
        }
    );
}

#[test]
fn many_queued_sends_are_delivered_in_one_progress_call() {
    let mut s = Session::start(2, &[]).unwrap();
    let ep = s.endpoint();
    const N: usize = 20_000;
    let payloads: Vec<[u8; 8]> = (0..N as u64).map(u64::to_le_bytes).collect();
    for (i, p) in payloads.iter().enumerate() {
        let header = (i as u32).to_le_bytes();
        assert_eq!(s.send(ep, &header, p, i as u64), SendOutcome::Queued);
    }
    assert_eq!(s.progress(), N);
    let events = s.events();
    assert_eq!(events.len(), 3 * N);
    for (i, chunk) in events.chunks(3).enumerate() {
        assert!(
            matches!(&chunk[1], Event::Fragment { header, payload, .. }
                if header[..] == (i as u32).to_le_bytes() && payload[..] == (i as u64).to_le_bytes()),
            "fragment {i}: {:?}",
            chunk[1]
        );
        assert_eq!(chunk[2], Event::SendDone(i as u64));
    }
    assert_eq!(s.progress(), 0);
}

#[test]
fn steady_state_sends_and_progress_do_not_allocate() {
    let mut s = Session::start(0, &[]).unwrap();
    let ep = s.endpoint();
    s.recorder.record = false;
    s.recorder.direct = true;
    s.recorder.destination = vec![0; 4096];
    let data = pattern(4096, 3);
    let round = |s: &Session| {
        for i in 0..500u64 {
            assert_eq!(
                s.send(ep, &i.to_le_bytes(), &data[..(i as usize * 7) % 4096], i),
                SendOutcome::Queued
            );
        }
        assert_eq!(s.progress(), 500);
    };
    // Two warm-up rounds grow both the queue and its spare.
    round(&s);
    round(&s);
    let before = allocations();
    for _ in 0..5 {
        round(&s);
    }
    assert_eq!(allocations() - before, 0, "steady state allocated");
    assert_eq!(s.recorder.counts[..3], [3500, 3500, 3500]);
}

#[test]
fn progress_delivers_only_what_was_queued_before_it() {
    // A pml that sends from a callback breaks the interface; the btl must
    // still stay sound and deliver that fragment on the next call.
    unsafe extern "C" fn resend(ctx: *mut c_void, cookie: u64) {
        // SAFETY: see `recorder`.
        let r = unsafe { recorder(ctx) };
        r.events.push(Event::SendDone(cookie));
        if cookie < 3 {
            static PAYLOAD: [u8; 4] = [1, 2, 3, 4];
            // SAFETY: static payload, valid forever.
            let outcome = unsafe {
                (MODULE.send)(
                    0,
                    u64::from(r.expect_peer),
                    [0u8].as_ptr(),
                    1,
                    PAYLOAD.as_ptr(),
                    4,
                    cookie + 1,
                )
            };
            assert_eq!(outcome, SendOutcome::Queued);
        }
    }
    let mut s = Session::start(0, &[]).unwrap();
    let ep = s.endpoint();
    let mut receiver = s.recorder.receiver();
    receiver.on_send_done = resend;
    // Re-register the modified receiver.
    // SAFETY: no arguments / valid arguments.
    unsafe {
        (MODULE.finalize)();
        let mut modules = RVec::new();
        let mut error = RString::new();
        let identity = JobIdentity {
            job_id: 0,
            secret: [0, 0],
            rank: 0,
            size: 1,
        };
        assert!((MODULE.init)(
            &context(),
            &identity,
            receiver,
            &mut modules,
            &mut error
        ));
    }
    assert_eq!(s.send(ep, &[0], &[], 0), SendOutcome::Queued);
    for cookie in 0..4u64 {
        assert_eq!(s.progress(), 1, "one fragment per call (cookie {cookie})");
        assert_eq!(s.events().last(), Some(&Event::SendDone(cookie)));
    }
    assert_eq!(s.progress(), 0);
}

#[test]
fn a_send_that_breaks_the_interface_fails_the_peer_once() {
    let mut s = Session::start(1, &[]).unwrap();
    let ep = s.endpoint();
    let data = [7u8; 16];
    assert_eq!(s.send(ep, &[1], &data, 1), SendOutcome::Queued);
    let long = [0u8; MAX_HEADER + 1];
    assert_eq!(s.send(ep, &long, &data, 2), SendOutcome::Failed);
    assert_eq!(s.send(ep, &[1], &data, 3), SendOutcome::Failed);
    assert!(s.events().is_empty(), "no callback from send");
    assert_eq!(s.progress(), 1);
    let events = s.events();
    assert_eq!(
        events,
        vec![Event::PeerFailed(format!(
            "the pml passed a {}-byte header; the btl interface allows at most {MAX_HEADER} bytes",
            MAX_HEADER + 1
        ))],
        "queued fragments are dropped without on_send_done"
    );
    assert_eq!(s.progress(), 0, "reported once");
    assert_eq!(s.recorder.counts[3], 1);
}

#[test]
fn sends_to_unknown_endpoints_or_modules_fail_with_a_reason() {
    for (module, endpoint, expect) in [
        (0u32, 5u64, "self endpoint 5, which add_peer never returned"),
        (2, 1, "self module 2, which does not exist"),
    ] {
        let mut s = Session::start(1, &[]).unwrap();
        // SAFETY: valid header, empty payload.
        let outcome =
            unsafe { (MODULE.send)(module, endpoint, [0u8].as_ptr(), 1, std::ptr::null(), 0, 1) };
        assert_eq!(outcome, SendOutcome::Failed);
        s.progress();
        match &s.events()[..] {
            [Event::PeerFailed(why)] => assert!(why.contains(expect), "{why}"),
            other => panic!("expected one failure, got {other:?}"),
        }
    }
}

#[test]
fn entry_points_before_init_do_nothing_harmful() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: plain arguments; no state exists.
    unsafe {
        assert_eq!((MODULE.progress)(), 0);
        assert_eq!(
            (MODULE.send)(0, 0, [0u8].as_ptr(), 1, std::ptr::null(), 0, 0),
            SendOutcome::Failed
        );
        let mut endpoint = 0;
        let mut reason = RString::new();
        assert!(!(MODULE.add_peer)(
            0,
            0,
            RSlice::from_slice(&[]),
            &mut endpoint,
            &mut reason
        ));
        assert!(reason.as_str().contains("not initialized"), "{reason}");
        (MODULE.finalize)();
    }
}

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
