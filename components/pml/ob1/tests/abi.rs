//! The component through its `extern "C"` module table, as the MPI layer
//! uses it: init over two fake btl components (`loop`, which reaches only
//! its own process, and `broken`, whose init fails), sends to self through
//! the real receiver trampolines, errors, finalize, re-init.
//!
//! One test function: the pml's state is process-global.

use std::collections::VecDeque;
use std::sync::Mutex;

use abi_stable::prefix_type::PrefixTypeTrait;
use abi_stable::std_types::{ROption, RSlice, RStr, RString, RVec};
use mca_pml_ob1::MODULE;
use oxmpi_framework_btl::module::{
    flags, BtlComponentModule, BtlModuleInfo, BtlReceiver, JobIdentity, SendOutcome,
};
use oxmpi_framework_pml::module::{
    BtlCandidate, ModexLookup, PmlCore, ProgressFn, RecvArgs, RequestError, RequestStatus,
    SendArgs, SendMode, ANY_SOURCE, ANY_TAG,
};
use oxmpi_plugin_api::{ComponentContext, ParamValue, Services};

// ----- the core's services -----

static LOGS: Mutex<Vec<String>> = Mutex::new(Vec::new());

extern "C" fn param_value(full_name: RStr<'_>) -> ROption<ParamValue> {
    match full_name.as_str() {
        "pml_ob1_send_pipeline_depth" => ROption::RSome(ParamValue::Int(2)),
        _ => ROption::RNone,
    }
}

extern "C" fn verbosity(_framework: RStr<'_>) -> i32 {
    100
}

extern "C" fn log(framework: RStr<'_>, component: RStr<'_>, level: i32, message: RStr<'_>) {
    LOGS.lock()
        .unwrap()
        .push(format!("{framework}:{component}:{level}: {message}"));
}

fn context(framework: &'static str, component: &'static str) -> ComponentContext {
    ComponentContext {
        services: Services {
            param_value,
            verbosity,
            log,
        }
        .leak_into_prefix(),
        framework: RStr::from_str(framework),
        component: RStr::from_str(component),
    }
}

// ----- the MPI layer's core -----

static MODEX: Mutex<Vec<(String, Vec<u8>)>> = Mutex::new(Vec::new());
static PROGRESS: Mutex<Vec<ProgressFn>> = Mutex::new(Vec::new());

unsafe extern "C" fn modex_put(
    _ctx: *mut std::ffi::c_void,
    name: RStr<'_>,
    card: RSlice<'_, u8>,
    _error: &mut RString,
) -> bool {
    MODEX
        .lock()
        .unwrap()
        .push((name.to_string(), card.to_vec()));
    true
}

unsafe extern "C" fn modex_get(
    _ctx: *mut std::ffi::c_void,
    rank: u32,
    name: RStr<'_>,
    card: &mut RVec<u8>,
    _error: &mut RString,
) -> ModexLookup {
    if rank != 0 {
        return ModexLookup::Missing;
    }
    match MODEX
        .lock()
        .unwrap()
        .iter()
        .find(|(n, _)| n == name.as_str())
    {
        Some((_, c)) => {
            *card = RVec::from(c.clone());
            ModexLookup::Found
        }
        None => ModexLookup::Missing,
    }
}

unsafe extern "C" fn register_progress(_ctx: *mut std::ffi::c_void, poll: ProgressFn) {
    PROGRESS.lock().unwrap().push(poll);
}

fn core() -> PmlCore {
    PmlCore {
        ctx: std::ptr::null_mut(),
        modex_put,
        modex_get,
        register_progress,
    }
}

// ----- btl `loop` -----

struct Frag {
    header: Vec<u8>,
    payload: *const u8,
    len: usize,
    cookie: Option<u64>,
}

struct Loop {
    receiver: Option<BtlReceiver>,
    queue: VecDeque<Frag>,
    queued: Vec<(u64, usize)>,
    max_queued: usize,
    direct: usize,
    finalized: bool,
}

// SAFETY: used from the test's one thread only.
unsafe impl Send for Loop {}

static LOOP_STATE: Mutex<Loop> = Mutex::new(Loop {
    receiver: None,
    queue: VecDeque::new(),
    queued: Vec::new(),
    max_queued: 0,
    direct: 0,
    finalized: false,
});

unsafe extern "C" fn loop_init(
    _context: &ComponentContext,
    identity: &JobIdentity,
    receiver: BtlReceiver,
    modules: &mut RVec<BtlModuleInfo>,
    _error: &mut RString,
) -> bool {
    assert_eq!((identity.rank, identity.size), (0, 2));
    let mut s = LOOP_STATE.lock().unwrap();
    s.receiver = Some(receiver);
    s.finalized = false;
    modules.push(BtlModuleInfo {
        label: "loop".into(),
        eager_limit: 1024,
        rndv_eager_limit: 512,
        max_send_size: 2048,
        exclusivity: 65536,
        latency: 0,
        bandwidth: 1000,
        flags: flags::SEND,
    });
    true
}

unsafe extern "C" fn loop_card(card: &mut RVec<u8>) {
    card.extend_from_slice(b"loop-card");
}

unsafe extern "C" fn loop_add_peer(
    module: u32,
    peer: u32,
    card: RSlice<'_, u8>,
    endpoint: &mut u64,
    reason: &mut RString,
) -> bool {
    assert_eq!(module, 0);
    if peer == 0 && card.as_slice() == b"loop-card" {
        *endpoint = 77;
        true
    } else {
        *reason = RString::from("it reaches only its own process");
        false
    }
}

unsafe extern "C" fn loop_send(
    module: u32,
    endpoint: u64,
    header: *const u8,
    header_len: usize,
    payload: *const u8,
    payload_len: usize,
    cookie: u64,
) -> SendOutcome {
    assert_eq!((module, endpoint), (0, 77));
    let mut s = LOOP_STATE.lock().unwrap();
    let queued = payload_len > 0;
    if queued {
        let n = match s.queued.iter_mut().find(|(c, _)| *c == cookie) {
            Some((_, n)) => {
                *n += 1;
                *n
            }
            None => {
                s.queued.push((cookie, 1));
                1
            }
        };
        s.max_queued = s.max_queued.max(n);
    }
    s.queue.push_back(Frag {
        header: std::slice::from_raw_parts(header, header_len).to_vec(),
        payload,
        len: payload_len,
        cookie: queued.then_some(cookie),
    });
    if queued {
        SendOutcome::Queued
    } else {
        SendOutcome::Done
    }
}

unsafe extern "C" fn loop_progress() -> usize {
    let mut events = 0;
    loop {
        let (frag, rx) = {
            let mut s = LOOP_STATE.lock().unwrap();
            let Some(f) = s.queue.pop_front() else { break };
            (f, s.receiver.unwrap())
        };
        let h = frag.header.as_ptr();
        let dest = (rx.on_header)(rx.ctx, 0, 0, h, frag.header.len(), frag.len);
        let at = if dest.is_null() {
            frag.payload
        } else {
            std::ptr::copy_nonoverlapping(frag.payload, dest, frag.len);
            LOOP_STATE.lock().unwrap().direct += frag.len;
            dest as *const u8
        };
        (rx.on_fragment)(rx.ctx, 0, 0, h, frag.header.len(), at, frag.len);
        if let Some(cookie) = frag.cookie {
            let mut s = LOOP_STATE.lock().unwrap();
            let i = s.queued.iter().position(|(c, _)| *c == cookie).unwrap();
            s.queued[i].1 -= 1;
            if s.queued[i].1 == 0 {
                s.queued.swap_remove(i);
            }
            drop(s);
            (rx.on_send_done)(rx.ctx, cookie);
        }
        events += 1;
    }
    events
}

unsafe extern "C" fn loop_finalize() {
    LOOP_STATE.lock().unwrap().finalized = true;
}

static LOOP: BtlComponentModule = BtlComponentModule {
    init: loop_init,
    contact_card: loop_card,
    add_peer: loop_add_peer,
    send: loop_send,
    progress: loop_progress,
    finalize: loop_finalize,
};

// ----- btl `broken` -----

unsafe extern "C" fn broken_init(
    _context: &ComponentContext,
    _identity: &JobIdentity,
    _receiver: BtlReceiver,
    _modules: &mut RVec<BtlModuleInfo>,
    error: &mut RString,
) -> bool {
    *error = RString::from("no device");
    false
}

unsafe extern "C" fn never_card(_card: &mut RVec<u8>) {
    panic!("contact_card of a btl whose init failed");
}

unsafe extern "C" fn never_add_peer(
    _m: u32,
    _p: u32,
    _c: RSlice<'_, u8>,
    _e: &mut u64,
    _r: &mut RString,
) -> bool {
    panic!("add_peer of a btl whose init failed");
}

unsafe extern "C" fn never_send(
    _m: u32,
    _e: u64,
    _h: *const u8,
    _hl: usize,
    _p: *const u8,
    _pl: usize,
    _c: u64,
) -> SendOutcome {
    panic!("send of a btl whose init failed");
}

unsafe extern "C" fn never_progress() -> usize {
    panic!("progress of a btl whose init failed");
}

unsafe extern "C" fn never_finalize() {
    panic!("finalize of a btl whose init failed");
}

static BROKEN: BtlComponentModule = BtlComponentModule {
    init: broken_init,
    contact_card: never_card,
    add_peer: never_add_peer,
    send: never_send,
    progress: never_progress,
    finalize: never_finalize,
};

// ----- helpers -----

fn candidates() -> Vec<BtlCandidate> {
    vec![
        BtlCandidate {
            name: RStr::from_str("loop"),
            module: &LOOP,
            context: context("btl", "loop"),
        },
        BtlCandidate {
            name: RStr::from_str("broken"),
            module: &BROKEN,
            context: context("btl", "broken"),
        },
    ]
}

const IDENTITY: JobIdentity = JobIdentity {
    job_id: 9,
    secret: [1, 2],
    rank: 0,
    size: 2,
};

fn init(btls: &[BtlCandidate]) -> Result<(), String> {
    let mut error = RString::new();
    // SAFETY: the module's entry point, called as the MPI layer would.
    let ok = unsafe {
        (MODULE.init)(
            &context("pml", "ob1"),
            &IDENTITY,
            core(),
            RSlice::from_slice(btls),
            &mut error,
        )
    };
    if ok {
        Ok(())
    } else {
        Err(error.into_string())
    }
}

fn progress_round() {
    let polls: Vec<ProgressFn> = PROGRESS.lock().unwrap().clone();
    for p in polls {
        // SAFETY: a registered btl progress function.
        unsafe { (p.poll)() };
    }
    // SAFETY: the module's entry point.
    unsafe { (MODULE.progress)() };
}

fn wait(request: u64) -> RequestStatus {
    let mut status = RequestStatus::default();
    for _ in 0..100_000 {
        // SAFETY: the module's entry point.
        if unsafe { (MODULE.test)(request, &mut status) } {
            return status;
        }
        progress_round();
    }
    panic!("request {request:#x} did not complete");
}

fn isend(buf: &[u8], dest: u32, tag: i32, mode: SendMode) -> Result<u64, String> {
    isend_kind(buf, dest, tag, mode).map_err(|(_, e)| e)
}

fn isend_kind(
    buf: &[u8],
    dest: u32,
    tag: i32,
    mode: SendMode,
) -> Result<u64, (RequestError, String)> {
    let args = SendArgs {
        buf: buf.as_ptr(),
        len: buf.len(),
        dest,
        tag,
        context: 0,
        mode,
    };
    let mut request = 0;
    let mut kind = RequestError::None;
    let mut error = RString::new();
    // SAFETY: the buffer outlives the request in these tests.
    if unsafe { (MODULE.isend)(&args, &mut request, &mut kind, &mut error) } {
        Ok(request)
    } else {
        Err((kind, error.into_string()))
    }
}

fn irecv(buf: &mut [u8], source: i32, tag: i32) -> u64 {
    let args = RecvArgs {
        buf: buf.as_mut_ptr(),
        len: buf.len(),
        source,
        tag,
        context: 0,
    };
    let mut request = 0;
    let mut error = RString::new();
    // SAFETY: the buffer outlives the request in these tests.
    assert!(
        unsafe { (MODULE.irecv)(&args, &mut request, &mut error) },
        "{error}"
    );
    request
}

fn request_error(request: u64) -> String {
    let mut s = RString::new();
    // SAFETY: the module's entry point.
    unsafe { (MODULE.request_error)(request, &mut s) };
    s.into_string()
}

fn data(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

#[test]
fn the_module_table_end_to_end() {
    let btls = candidates();
    init(&btls).unwrap();
    assert_eq!(init(&btls).unwrap_err(), "pml ob1 is already initialized");
    assert_eq!(
        *MODEX.lock().unwrap(),
        vec![("btl_loop".to_string(), b"loop-card".to_vec())]
    );
    assert_eq!(PROGRESS.lock().unwrap().len(), 1);
    assert!(
        LOGS.lock()
            .unwrap()
            .iter()
            .any(|l| l == "btl:broken:10: not used by pml ob1: init failed: no device"),
        "{:?}",
        LOGS.lock().unwrap()
    );

    // Messages to self: eager, rendezvous (FRAGs placed directly), large.
    for (i, len) in [0usize, 100, 1024, 1025, 10_000, 300_000]
        .into_iter()
        .enumerate()
    {
        let msg = data(len, i as u8);
        let mut buf = vec![0u8; len];
        let r = irecv(&mut buf, 0, i as i32);
        let s = isend(&msg, 0, i as i32, SendMode::Standard).unwrap();
        let st = wait(r);
        assert_eq!(
            (st.source, st.tag, st.count, st.error),
            (0, i as i32, len, RequestError::None)
        );
        assert_eq!(buf, msg, "{len} bytes");
        assert_eq!(wait(s).error, RequestError::None);
        // SAFETY: the module's entry point.
        unsafe {
            (MODULE.free)(r);
            (MODULE.free)(s);
        }
    }
    {
        let l = LOOP_STATE.lock().unwrap();
        assert!(
            l.direct > 250_000,
            "FRAGs were not placed directly: {}",
            l.direct
        );
        assert_eq!(l.max_queued, 2, "pml_ob1_send_pipeline_depth=2 not applied");
    }

    // Synchronous send, probe, truncation.
    let msg = data(200, 7);
    let s = isend(&msg, 0, 42, SendMode::Synchronous).unwrap();
    for _ in 0..10 {
        progress_round();
    }
    let mut status = RequestStatus::default();
    // SAFETY: the module's entry points.
    unsafe {
        assert!(!(MODULE.test)(s, &mut status), "ssend completed unmatched");
        assert!((MODULE.iprobe)(0, ANY_SOURCE, ANY_TAG, &mut status));
    }
    assert_eq!((status.source, status.tag, status.count), (0, 42, 200));
    let mut small = vec![0u8; 50];
    let r = irecv(&mut small, 0, 42);
    let st = wait(r);
    assert_eq!((st.count, st.error), (50, RequestError::Truncated));
    assert_eq!(small, msg[..50]);
    assert_eq!(
        request_error(r),
        "message of 200 bytes from rank 0 (tag 42) truncated to the 50-byte receive buffer"
    );
    assert_eq!(wait(s).error, RequestError::None);

    // Cancel.
    let mut buf = [0u8; 4];
    let r = irecv(&mut buf, 0, 99);
    // SAFETY: the module's entry points.
    unsafe {
        assert!((MODULE.cancel)(r));
        assert!((MODULE.test)(r, &mut status));
    }
    assert!(status.cancelled);

    // Unreachable peer.
    assert_eq!(
        isend_kind(b"x", 1, 0, SendMode::Standard).unwrap_err(),
        (
            RequestError::Unreachable,
            "rank 0 cannot reach rank 1: loop: rank 1 published no btl_loop contact card \
             (the btl does not run there); broken: init failed here: no device"
                .to_string()
        )
    );
    // Invalid arguments are `Other`.
    assert_eq!(
        isend_kind(b"x", 7, 0, SendMode::Standard).unwrap_err().0,
        RequestError::Other
    );

    // Unknown handle.
    // SAFETY: the module's entry point.
    assert!(unsafe { (MODULE.test)(0xdead, &mut status) });
    assert_eq!(status.error, RequestError::Other);
    assert_eq!(
        request_error(0xdead),
        "pml ob1 has no request 0xdead: it was freed, or never issued"
    );

    // Finalize: the loop btl is finalized, the broken one is not touched.
    // SAFETY: the module's entry point.
    unsafe { (MODULE.finalize)() };
    assert!(LOOP_STATE.lock().unwrap().finalized);
    assert_eq!(
        isend(b"x", 0, 0, SendMode::Standard).unwrap_err(),
        "pml ob1 isend: the pml is not initialized"
    );

    // No usable btl, and none at all.
    assert_eq!(
        init(&btls[1..]).unwrap_err(),
        "pml ob1 has no usable btl: broken: init failed here: no device"
    );
    assert_eq!(
        init(&[]).unwrap_err(),
        "pml ob1 has no btl to use: none was selected (check the btl parameter)"
    );

    // A second life after finalize.
    PROGRESS.lock().unwrap().clear();
    init(&btls).unwrap();
    let msg = data(5000, 3);
    let mut buf = vec![0u8; 5000];
    let r = irecv(&mut buf, 0, 1);
    let s = isend(&msg, 0, 1, SendMode::Standard).unwrap();
    wait(r);
    wait(s);
    assert_eq!(buf, msg);
    // SAFETY: the module's entry point.
    unsafe { (MODULE.finalize)() };
}
