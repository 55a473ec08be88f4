//! The component through its `extern "C"` module table, as the MPI layer
//! uses it: init over two fake btl components (`loop`, which reaches only
//! its own process, and `broken`, whose init fails), sends to self through
//! the real receiver trampolines, errors, finalize, re-init.
//!
//! One test function: the pml's state is process-global. The core's
//! services are the plugin API's test kit; the MPI layer is a
//! [`PmlHandle`] over the exported table and a fake [`MpiCore`].

use std::collections::VecDeque;
use std::sync::Mutex;

use abi_stable::std_types::{RSlice, RStr, RString, RVec};
use mca_pml_ob1::MODULE;
use oxmpi_framework_btl::module::{
    flags, BtlComponentModule, BtlModuleInfo, BtlReceiver, JobIdentity, SendOutcome,
};
use oxmpi_framework_btl::testkit::{refused_get, refused_put};
use oxmpi_framework_pml::handle::{MpiCore, PmlHandle};
use oxmpi_framework_pml::module::{
    BtlCandidate, ProgressFn, RecvArgs, RequestError, RequestStatus, SendArgs, SendMode,
    ANY_SOURCE, ANY_TAG,
};
use oxmpi_plugin_api::{testkit, verbosity, ComponentContext, ParamValue};

// ----- the MPI layer's core -----

/// The modex of a two-rank job seen from rank 0 (rank 1 publishes
/// nothing), and the progress functions the pml registers.
struct FakeCore {
    modex: Mutex<Vec<(String, Vec<u8>)>>,
    progress: Mutex<Vec<ProgressFn>>,
}

impl MpiCore for FakeCore {
    fn modex_put(&self, name: &str, card: &[u8]) -> Result<(), String> {
        self.modex
            .lock()
            .unwrap()
            .push((name.to_string(), card.to_vec()));
        Ok(())
    }

    fn modex_get(&self, rank: u32, name: &str) -> Result<Option<Vec<u8>>, String> {
        if rank != 0 {
            return Ok(None);
        }
        Ok(self
            .modex
            .lock()
            .unwrap()
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| c.clone()))
    }

    fn register_progress(&self, poll: ProgressFn) {
        self.progress.lock().unwrap().push(poll);
    }
}

static CORE: FakeCore = FakeCore {
    modex: Mutex::new(Vec::new()),
    progress: Mutex::new(Vec::new()),
};

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
    /// Deliver each fragment from inside `send` too (a contract violation).
    call_back_from_send: bool,
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
    call_back_from_send: false,
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
        max_rdma_size: 0,
        min_rdma_message: 0,
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
    if s.call_back_from_send {
        let rx = s.receiver.unwrap();
        drop(s);
        // SAFETY: the pml's callback with its own context; header and
        // payload are the pml's, valid for this call (breaking the rule that
        // callbacks come from progress only is this fake's purpose).
        unsafe { (rx.on_fragment)(rx.ctx, 0, 0, header, header_len, payload, payload_len) };
        s = LOOP_STATE.lock().unwrap();
    }
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
        // SAFETY: the pml passes a header readable for `header_len` bytes.
        header: unsafe { std::slice::from_raw_parts(header, header_len) }.to_vec(),
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
        // SAFETY: the pml's callback with its own context, from progress.
        let dest = unsafe { (rx.on_header)(rx.ctx, 0, 0, h, frag.header.len(), frag.len) };
        let at = if dest.is_null() {
            frag.payload
        } else {
            // SAFETY: the pml keeps the payload valid until on_send_done and
            // gave a destination of `frag.len` writable bytes.
            unsafe { std::ptr::copy_nonoverlapping(frag.payload, dest, frag.len) };
            LOOP_STATE.lock().unwrap().direct += frag.len;
            dest as *const u8
        };
        // SAFETY: as for on_header; `at` is valid for `frag.len` bytes.
        unsafe { (rx.on_fragment)(rx.ctx, 0, 0, h, frag.header.len(), at, frag.len) };
        if let Some(cookie) = frag.cookie {
            let mut s = LOOP_STATE.lock().unwrap();
            let i = s.queued.iter().position(|(c, _)| *c == cookie).unwrap();
            s.queued[i].1 -= 1;
            if s.queued[i].1 == 0 {
                s.queued.swap_remove(i);
            }
            drop(s);
            // SAFETY: as for on_header.
            unsafe { (rx.on_send_done)(rx.ctx, cookie) };
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
    // Its modules offer neither get nor put.
    get: refused_get,
    put: refused_put,
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
    // Its modules offer neither get nor put.
    get: refused_get,
    put: refused_put,
    progress: never_progress,
    finalize: never_finalize,
};

// ----- helpers -----

fn candidates() -> Vec<BtlCandidate> {
    vec![
        BtlCandidate {
            name: RStr::from_str("loop"),
            module: &LOOP,
            context: testkit::context("btl", "loop"),
        },
        BtlCandidate {
            name: RStr::from_str("broken"),
            module: &BROKEN,
            context: testkit::context("btl", "broken"),
        },
    ]
}

const IDENTITY: JobIdentity = JobIdentity {
    job_id: 9,
    secret: [1, 2],
    rank: 0,
    size: 2,
};

fn pml() -> PmlHandle {
    PmlHandle::new(&MODULE, testkit::context("pml", "ob1"))
}

fn init(btls: &[BtlCandidate]) -> Result<(), String> {
    pml().init(&IDENTITY, &CORE, btls).map(drop)
}

fn progress_round() {
    let polls: Vec<ProgressFn> = CORE.progress.lock().unwrap().clone();
    for p in polls {
        p.run();
    }
    pml().progress();
}

/// A request as the MPI layer holds it: a pml handle, or the outcome of an
/// operation the pml completed while starting it (handle 0).
#[derive(Clone, Copy, Debug)]
enum Req {
    Pml(u64),
    Done(RequestStatus),
}

impl Req {
    fn handle(self) -> u64 {
        match self {
            Req::Pml(h) => h,
            Req::Done(st) => panic!("no handle: the operation completed as it started ({st:?})"),
        }
    }
}

fn test(request: Req) -> Option<RequestStatus> {
    match request {
        Req::Pml(h) => pml().test(h),
        Req::Done(st) => Some(st),
    }
}

fn free(request: Req) {
    if let Req::Pml(h) = request {
        pml().free(h);
    }
}

fn wait(request: Req) -> RequestStatus {
    for _ in 0..100_000 {
        if let Some(status) = test(request) {
            return status;
        }
        progress_round();
    }
    panic!("request {request:?} did not complete");
}

fn isend(buf: &[u8], dest: u32, tag: i32, mode: SendMode) -> Result<Req, String> {
    isend_kind(buf, dest, tag, mode).map_err(|(_, e)| e)
}

fn isend_kind(
    buf: &[u8],
    dest: u32,
    tag: i32,
    mode: SendMode,
) -> Result<Req, (RequestError, String)> {
    let args = SendArgs {
        buf: buf.as_ptr(),
        len: buf.len(),
        dest,
        tag,
        context: 0,
        mode,
        done: std::ptr::null(),
    };
    // SAFETY: the buffer outlives the request in these tests.
    match unsafe { pml().isend(&args) }? {
        0 => Ok(Req::Done(RequestStatus::default())),
        h => Ok(Req::Pml(h)),
    }
}

fn irecv(buf: &mut [u8], source: i32, tag: i32) -> Req {
    let args = RecvArgs {
        buf: buf.as_mut_ptr(),
        len: buf.len(),
        source,
        tag,
        context: 0,
        done: std::ptr::null(),
    };
    // SAFETY: the buffer outlives the request in these tests.
    match unsafe { pml().irecv(&args) }.unwrap() {
        (0, status) => Req::Done(status),
        (h, _) => Req::Pml(h),
    }
}

fn data(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

#[test]
fn the_module_table_end_to_end() {
    testkit::set_param("pml_ob1_send_pipeline_depth", ParamValue::Int(2));
    let btls = candidates();
    init(&btls).unwrap();
    assert_eq!(
        init(&btls).unwrap_err(),
        "pml ob1 init: the component is already initialized (init called twice without finalize)"
    );
    assert_eq!(
        *CORE.modex.lock().unwrap(),
        vec![("btl_loop".to_string(), b"loop-card".to_vec())]
    );
    assert_eq!(CORE.progress.lock().unwrap().len(), 1);
    let broken = testkit::logged_by("btl", "broken");
    assert!(
        broken.contains(&(
            verbosity::COMPONENT,
            "not used by pml ob1: init failed: no device".to_string()
        )),
        "{broken:?}"
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
        free(r);
        free(s);
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
    assert_eq!(test(s), None, "ssend completed unmatched");
    let status = pml().iprobe(0, ANY_SOURCE, ANY_TAG).expect("a message");
    assert_eq!((status.source, status.tag, status.count), (0, 42, 200));
    let mut small = vec![0u8; 50];
    let r = irecv(&mut small, 0, 42);
    let st = wait(r);
    assert_eq!((st.count, st.error), (50, RequestError::Truncated));
    assert_eq!(small, msg[..50]);
    assert_eq!(
        pml().request_error(r.handle()),
        "message of 200 bytes from rank 0 (tag 42) truncated to the 50-byte receive buffer"
    );
    assert_eq!(wait(s).error, RequestError::None);

    // Cancel.
    let mut buf = [0u8; 4];
    let r = irecv(&mut buf, 0, 99);
    assert!(pml().cancel(r.handle()));
    assert!(test(r).expect("cancelled is complete").cancelled);

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
    assert_eq!(
        pml().test(0xdead).map(|s| s.error),
        Some(RequestError::Other)
    );
    assert_eq!(
        pml().request_error(0xdead),
        "pml ob1 has no request 0xdead: it was freed, or never issued"
    );

    // Finalize: the loop btl is finalized, the broken one is not touched.
    pml().finalize();
    assert!(LOOP_STATE.lock().unwrap().finalized);
    assert_eq!(
        isend(b"x", 0, 0, SendMode::Standard).unwrap_err(),
        "pml ob1 isend: the component is not initialized"
    );
    // A request cannot hang on a pml that is gone: complete in error.
    assert_eq!(
        pml().test(s.handle()).map(|s| s.error),
        Some(RequestError::Other)
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
    CORE.progress.lock().unwrap().clear();
    init(&btls).unwrap();
    let msg = data(5000, 3);
    let mut buf = vec![0u8; 5000];
    let r = irecv(&mut buf, 0, 1);
    let s = isend(&msg, 0, 1, SendMode::Standard).unwrap();
    wait(r);
    wait(s);
    assert_eq!(buf, msg);

    // A btl that calls back from inside `send` breaks the contract: the
    // callback is refused (the pml is still inside `isend`), not run on
    // the state `isend` holds, so the message arrives only through the
    // btl's progress, once.
    LOOP_STATE.lock().unwrap().call_back_from_send = true;
    let r = isend(b"y", 0, 3, SendMode::Standard).unwrap();
    LOOP_STATE.lock().unwrap().call_back_from_send = false;
    assert_eq!(pml().iprobe(0, 0, 3), None, "a callback from send was run");
    let mut one = [0u8; 1];
    let q = irecv(&mut one, 0, 3);
    assert_eq!(wait(q).count, 1);
    assert_eq!(one, *b"y");
    wait(r);
    let lines = testkit::logged_by("pml", "ob1");
    assert!(
        !lines.iter().any(|(_, m)| m.contains("duplicate")),
        "{lines:?}"
    );
    pml().finalize();
}
