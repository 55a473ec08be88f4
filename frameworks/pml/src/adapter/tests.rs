//! The generated table over a fake pml (`probe`) and a fake btl (`echo`),
//! driven through [`PmlHandle`] as the MPI layer drives a pml. The pml's
//! state is process-global: the tests take [`SERIAL`] and each starts from
//! a finalized pml.

use super::*;
use crate::handle::{MpiCore, PmlHandle};
use crate::module::{
    ProgressFn, RecvArgs, RequestError, RequestStatus, SendArgs, SendMode, ANY_SOURCE, ANY_TAG,
};
use abi_stable::std_types::{RSlice, RString, RVec};
use oxmpi_framework_btl::module::{
    flags, BtlComponentModule, BtlModuleInfo, FragmentRef, SendOutcome,
};
use oxmpi_framework_btl::testkit::{refused_get, refused_put};
use oxmpi_plugin_api::{testkit, ComponentError, Lifecycle, QueryReply, Version};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

// ----- the fake btl `echo`: its progress makes one callback of each kind -----

static ECHO_RECEIVER: Mutex<Option<usize>> = Mutex::new(None);
static ECHO_RX: Mutex<Vec<(usize, BtlReceiverCopy)>> = Mutex::new(Vec::new());

/// A receiver kept between calls of the fake btl (the raw one is not
/// `Send`; the tests run the fake btl on the test's thread only).
#[derive(Clone, Copy)]
struct BtlReceiverCopy(BtlReceiver);
// SAFETY: only used on the thread that runs each test (under `SERIAL`).
unsafe impl Send for BtlReceiverCopy {}

unsafe extern "C" fn echo_init(
    _context: &ComponentContext,
    _identity: &JobIdentity,
    receiver: BtlReceiver,
    modules: &mut RVec<BtlModuleInfo>,
    _error: &mut RString,
) -> bool {
    ECHO_RX
        .lock()
        .unwrap()
        .push((receiver.ctx as usize, BtlReceiverCopy(receiver)));
    modules.push(BtlModuleInfo {
        label: "echo".into(),
        eager_limit: 64,
        rndv_eager_limit: 64,
        max_send_size: 64,
        exclusivity: 1,
        latency: 1,
        bandwidth: 1,
        flags: flags::SEND,
        max_rdma_size: 0,
        min_rdma_message: 0,
    });
    true
}

unsafe extern "C" fn echo_card(card: &mut RVec<u8>) {
    card.extend_from_slice(b"echo");
}

unsafe extern "C" fn echo_add_peer(
    _module: u32,
    peer: u32,
    _card: RSlice<'_, u8>,
    endpoint: &mut u64,
    _reason: &mut RString,
) -> bool {
    *endpoint = u64::from(peer);
    true
}

unsafe extern "C" fn echo_send(
    _module: u32,
    _endpoint: u64,
    _header: *const u8,
    _header_len: usize,
    _payload: *const u8,
    _payload_len: usize,
    _cookie: u64,
) -> SendOutcome {
    SendOutcome::Done
}

/// Calls every receiver it was given: a header, a fragment, a finished
/// send and a failed peer.
unsafe extern "C" fn echo_progress() -> usize {
    let receivers: Vec<(usize, BtlReceiverCopy)> = ECHO_RX.lock().unwrap().clone();
    let mut events = 0;
    for (_, BtlReceiverCopy(rx)) in receivers {
        let header = [9u8, 8, 7];
        let payload = [1u8, 2];
        // SAFETY: the receiver's callbacks with its own context and live
        // slices, as a btl makes them from its progress.
        unsafe {
            let dest = (rx.on_header)(rx.ctx, 3, 1, header.as_ptr(), header.len(), 2);
            *ECHO_RECEIVER.lock().unwrap() = Some(dest as usize);
            (rx.on_fragment)(
                rx.ctx,
                3,
                1,
                header.as_ptr(),
                header.len(),
                payload.as_ptr(),
                payload.len(),
            );
            let batch = [
                FragmentRef {
                    peer: 2,
                    header_len: 1,
                    header: header.as_ptr(),
                    payload: payload.as_ptr(),
                    payload_len: 1,
                },
                FragmentRef {
                    peer: 1,
                    header_len: 2,
                    header: header[1..].as_ptr(),
                    payload: std::ptr::null(),
                    payload_len: 0,
                },
            ];
            (rx.on_fragments)(rx.ctx, 3, batch.as_ptr(), batch.len());
            (rx.on_send_done)(rx.ctx, 77);
            (rx.on_peer_failed)(rx.ctx, 3, 1, RStr::from_str("cable cut"));
        }
        events += 6;
    }
    events
}

unsafe extern "C" fn echo_finalize() {
    ECHO_RX.lock().unwrap().clear();
}

static ECHO: BtlComponentModule = BtlComponentModule {
    init: echo_init,
    contact_card: echo_card,
    add_peer: echo_add_peer,
    send: echo_send,
    // Its modules offer neither get nor put.
    get: refused_get,
    put: refused_put,
    progress: echo_progress,
    finalize: echo_finalize,
};

// ----- the MPI layer's core -----

struct FakeCore {
    cards: Mutex<Vec<(String, Vec<u8>)>>,
    progress: Mutex<Vec<ProgressFn>>,
}

impl MpiCore for FakeCore {
    fn modex_put(&self, name: &str, card: &[u8]) -> Result<(), String> {
        if name == "btl_refused" {
            return Err("the modex is full".to_string());
        }
        self.cards
            .lock()
            .unwrap()
            .push((name.to_string(), card.to_vec()));
        Ok(())
    }

    fn modex_get(&self, rank: u32, name: &str) -> Result<Option<Vec<u8>>, String> {
        if rank > 1 {
            return Err(format!("rank {rank} is not in the job"));
        }
        Ok(self
            .cards
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

fn fake_core() -> &'static FakeCore {
    Box::leak(Box::new(FakeCore {
        cards: Mutex::new(Vec::new()),
        progress: Mutex::new(Vec::new()),
    }))
}

// ----- the fake pml `probe` -----

/// What the probe's callbacks saw, by kind.
static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());
static FINALIZED: AtomicUsize = AtomicUsize::new(0);
/// Set by a test to make `progress` call back into the pml (a contract
/// violation the adapter must refuse).
static REENTER: AtomicBool = AtomicBool::new(false);

fn seen() -> Vec<String> {
    std::mem::take(&mut *SEEN.lock().unwrap())
}

struct Probe {
    core: Core,
    btls: Vec<(usize, BtlHandle)>,
    next: u64,
    scratch: [u8; 2],
}

impl Requests for Probe {
    unsafe fn isend(&mut self, args: &SendArgs) -> Result<u64, (RequestError, String)> {
        match args.tag {
            666 => panic!("isend of tag 666"),
            5 => Err((
                RequestError::Unreachable,
                format!("rank 0 cannot reach rank {}", args.dest),
            )),
            _ => {
                let card = self
                    .core
                    .modex_get(args.dest, "btl_echo")
                    .map_err(|e| (RequestError::Other, e))?;
                SEEN.lock().unwrap().push(format!("card {card:?}"));
                self.next += 1;
                Ok(self.next)
            }
        }
    }

    unsafe fn irecv(
        &mut self,
        args: &RecvArgs,
        _status: &mut RequestStatus,
    ) -> Result<u64, String> {
        if args.len == 0 {
            return Err("probe wants a buffer".to_string());
        }
        self.next += 1;
        Ok(self.next)
    }

    fn test(&mut self, request: u64) -> Option<RequestStatus> {
        (request & 1 == 0).then_some(RequestStatus {
            source: 1,
            tag: 2,
            count: request as usize,
            cancelled: false,
            error: RequestError::None,
        })
    }

    fn request_error(&mut self, request: u64) -> String {
        format!("request {request} is fine")
    }

    fn free(&mut self, request: u64) {
        SEEN.lock().unwrap().push(format!("free {request}"));
    }

    fn cancel(&mut self, request: u64) -> bool {
        request == 4
    }

    fn iprobe(&mut self, context: u32, source: i32, tag: i32) -> Option<RequestStatus> {
        (context == 0).then_some(RequestStatus {
            source,
            tag,
            count: 3,
            cancelled: false,
            error: RequestError::None,
        })
    }

    fn improbe(&mut self, context: u32, source: i32, tag: i32) -> Option<(u64, RequestStatus)> {
        let status = self.iprobe(context, source, tag)?;
        Some((u64::from(tag as u32) + 100, status))
    }

    unsafe fn imrecv(
        &mut self,
        message: u64,
        args: &RecvArgs,
        status: &mut RequestStatus,
    ) -> Result<u64, String> {
        if message < 100 {
            return Err(format!("no message {message}"));
        }
        *status = RequestStatus {
            source: 1,
            tag: (message - 100) as i32,
            count: args.len,
            cancelled: false,
            error: RequestError::None,
        };
        Ok(0)
    }

    fn progress(&mut self) -> usize {
        if REENTER.load(Ordering::Relaxed) {
            // A pml must not drive a btl from its own entry points: the
            // btl's callbacks find the state entered and are refused.
            let events: usize = self.btls.iter().map(|(_, h)| h.progress()).sum();
            let nested = PmlHandle::new(&MODULE, testkit::context("pml", "probe")).test(3);
            SEEN.lock().unwrap().push(format!(
                "nested btl events {events}, nested test {nested:?}"
            ));
        }
        1
    }

    fn finalize(self) {
        for (_, h) in &self.btls {
            h.finalize();
        }
        FINALIZED.fetch_add(1, Ordering::Relaxed);
    }
}

impl Pml for Probe {
    fn init(
        _context: &ComponentContext,
        identity: &JobIdentity,
        core: Core,
        btls: &[CandidateBtl],
        _mtl: Option<MtlHandle>,
    ) -> Result<Self, String> {
        if btls.is_empty() {
            return Err("probe needs a btl".to_string());
        }
        let mut started = Vec::new();
        for b in btls {
            assert_eq!(b.receiver().ctx as usize, b.index());
            match b.init(identity)? {
                BtlStart::Modules(m) => assert_eq!(m[0].label.as_str(), "echo"),
                BtlStart::NothingUsable(why) => return Err(why),
            }
            core.modex_put(&format!("btl_{}", b.name()), &b.handle().contact_card())?;
            core.register_progress(b.handle().progress_fn());
            started.push((b.index(), *b.handle()));
        }
        Ok(Probe {
            core,
            btls: started,
            next: 1,
            scratch: [0; 2],
        })
    }

    fn on_header(
        &mut self,
        btl: usize,
        module: u32,
        peer: u32,
        header: &[u8],
        payload_len: usize,
    ) -> *mut u8 {
        SEEN.lock().unwrap().push(format!(
            "header btl {btl} module {module} peer {peer} {header:?} {payload_len}"
        ));
        self.scratch.as_mut_ptr()
    }

    fn on_fragment(&mut self, btl: usize, module: u32, peer: u32, header: &[u8], payload: &[u8]) {
        SEEN.lock().unwrap().push(format!(
            "fragment btl {btl} module {module} peer {peer} {header:?} {payload:?}"
        ));
    }

    fn on_send_done(&mut self, btl: usize, cookie: u64) {
        SEEN.lock()
            .unwrap()
            .push(format!("send done btl {btl} cookie {cookie}"));
    }

    fn on_peer_failed(&mut self, btl: usize, module: u32, peer: u32, reason: &str) {
        SEEN.lock().unwrap().push(format!(
            "peer failed btl {btl} module {module} peer {peer}: {reason}"
        ));
    }
}

struct ProbeComponent;

impl Lifecycle for ProbeComponent {
    fn query(_ctx: &ComponentContext) -> Result<QueryReply, ComponentError> {
        Ok(QueryReply::Usable { priority: 1 })
    }
}

crate::export_pml_component! {
    pml: Probe,
    lifecycle: ProbeComponent,
    component: "probe",
    version: Version::new(1, 0, 0),
    description: "A pml for the adapter's tests",
    params: &[],
}

// ----- helpers -----

const IDENTITY: JobIdentity = JobIdentity {
    job_id: 1,
    secret: [2, 3],
    rank: 0,
    size: 2,
};

fn pml() -> PmlHandle {
    PmlHandle::new(&MODULE, testkit::context("pml", "probe"))
}

fn candidates(names: &[&'static str]) -> Vec<BtlCandidate> {
    names
        .iter()
        .map(|n| BtlCandidate {
            name: RStr::from_str(n),
            module: &ECHO,
            context: testkit::context("btl", n),
        })
        .collect()
}

fn send_args(tag: i32) -> SendArgs {
    SendArgs {
        buf: std::ptr::null(),
        len: 0,
        dest: 1,
        tag,
        context: 0,
        mode: SendMode::Standard,
        done: std::ptr::null(),
    }
}

fn isend(tag: i32) -> Result<u64, (RequestError, String)> {
    // SAFETY: an empty send; nothing is read.
    unsafe { pml().isend(&send_args(tag)) }
}

/// Starts from a finalized pml (whatever an earlier failed test left).
fn fresh() {
    pml().finalize();
    ECHO_RX.lock().unwrap().clear();
    REENTER.store(false, Ordering::Relaxed);
    seen();
}

// ----- tests -----

#[test]
fn calls_before_init_are_refused_with_a_sentence() {
    let _g = serial();
    fresh();
    assert_eq!(
        isend(1).unwrap_err(),
        (
            RequestError::Other,
            "pml probe isend: the component is not initialized".to_string()
        )
    );
    let mut buf = [0u8; 4];
    let args = RecvArgs {
        buf: buf.as_mut_ptr(),
        len: buf.len(),
        source: ANY_SOURCE,
        tag: ANY_TAG,
        context: 0,
        done: std::ptr::null(),
    };
    // SAFETY: `buf` outlives the call, and nothing is posted.
    let refused = unsafe { pml().irecv(&args) };
    assert_eq!(
        refused.unwrap_err(),
        "pml probe irecv: the component is not initialized"
    );
    // A request cannot hang on a pml that does not answer: it completed in
    // error, and the sentence says why.
    assert_eq!(pml().test(2), Some(BROKEN));
    assert_eq!(
        pml().request_error(2),
        "pml probe request_error: the component is not initialized"
    );
    assert!(!pml().cancel(4));
    assert_eq!(pml().iprobe(0, 1, 2), None);
    assert_eq!(pml().improbe(0, 1, 2), None);
    assert_eq!(
        // SAFETY: the probe pml writes nothing.
        unsafe { pml().imrecv(107, &args) }.unwrap_err(),
        "pml probe imrecv: the component is not initialized"
    );
    assert_eq!(pml().progress(), 0);
    pml().free(2);
    assert!(seen().is_empty());
}

#[test]
fn init_runs_the_btls_and_calls_reach_the_pml() {
    let _g = serial();
    fresh();
    let core = fake_core();
    let btls = candidates(&["echo", "echo2"]);
    pml().init(&IDENTITY, core, &btls).unwrap();
    assert_eq!(
        *core.cards.lock().unwrap(),
        [
            ("btl_echo".to_string(), b"echo".to_vec()),
            ("btl_echo2".to_string(), b"echo".to_vec())
        ]
    );
    assert_eq!(core.progress.lock().unwrap().len(), 2);
    assert_eq!(
        pml().init(&IDENTITY, core, &btls).unwrap_err(),
        "pml probe init: the component is already initialized (init called twice without finalize)"
    );

    // Entry points answer Rust values. The probe's send 2 is complete at
    // once (even handles are): handed back as 0, and released.
    assert_eq!(isend(1), Ok(0));
    assert_eq!(seen(), ["card Some([101, 99, 104, 111])", "free 2"]);
    assert_eq!(
        isend(5).unwrap_err(),
        (
            RequestError::Unreachable,
            "rank 0 cannot reach rank 1".to_string()
        )
    );
    let mut one = [0u8; 1];
    let args = RecvArgs {
        buf: one.as_mut_ptr(),
        len: 1,
        source: 1,
        tag: 2,
        context: 0,
        done: std::ptr::null(),
    };
    assert_eq!(
        // SAFETY: `one` outlives the request (the probe never writes it).
        unsafe { pml().irecv(&args) },
        Ok((3, RequestStatus::default()))
    );
    // The next receive (4) is complete at once; the pml answers its handle
    // all the same (only a pml that completes it during the call answers
    // 0), and nothing is freed behind the caller's back.
    assert_eq!(
        // SAFETY: as above.
        unsafe { pml().irecv(&args) },
        Ok((4, RequestStatus::default()))
    );
    assert!(seen().is_empty());
    let mut empty = RecvArgs { len: 0, ..args };
    empty.buf = std::ptr::null_mut();
    assert_eq!(
        // SAFETY: an empty receive writes nothing.
        unsafe { pml().irecv(&empty) }.unwrap_err(),
        "probe wants a buffer"
    );
    assert_eq!(pml().test(3), None);
    assert_eq!(pml().test(4).map(|s| s.count), Some(4));
    assert_eq!(pml().request_error(4), "request 4 is fine");
    assert!(pml().cancel(4));
    assert_eq!(
        pml().iprobe(0, 1, 9).map(|s| (s.source, s.tag)),
        Some((1, 9))
    );
    let (message, probed) = pml().improbe(0, 1, 9).unwrap();
    assert_eq!((message, probed.source, probed.tag), (109, 1, 9));
    // SAFETY: the probe pml writes nothing.
    let (request, got) = unsafe { pml().imrecv(message, &args) }.unwrap();
    assert_eq!((request, got.tag, got.count), (0, 9, args.len));
    assert_eq!(
        // SAFETY: as above.
        unsafe { pml().imrecv(7, &args) }.unwrap_err(),
        "no message 7"
    );
    pml().free(4);
    assert_eq!(seen(), ["free 4"]);
    // `take`: `test`, and an error-free complete request is released.
    assert_eq!(pml().take(3), None);
    assert_eq!(pml().take(6).map(|s| s.count), Some(6));
    assert_eq!(seen(), ["free 6"]);
    // The signals: entries that answer questions leave the event counter
    // alone, the others move it; the probe keeps the default answer that
    // `progress` always has work.
    let signals = pml().signals();
    let before = signals.events();
    let _ = (pml().test(3), pml().take(3), pml().iprobe(0, 1, 2));
    let _ = pml().request_error(3);
    assert_eq!(signals.events(), before, "a question moved the counter");
    assert_eq!(pml().progress(), 1);
    assert_eq!(signals.events(), before + 1, "progress did not move it");
    assert!(signals.has_work());

    // The btls' callbacks reach the pml with each btl's index.
    let polls: Vec<ProgressFn> = core.progress.lock().unwrap().clone();
    assert_eq!(polls.len(), 2);
    // One poll of the fake btl calls back through both receivers it was
    // given (the two candidates share its table).
    assert_eq!(polls[0].run(), 12);
    let lines = seen();
    for btl in 0..2 {
        for expected in [
            format!("header btl {btl} module 3 peer 1 [9, 8, 7] 2"),
            format!("fragment btl {btl} module 3 peer 1 [9, 8, 7] [1, 2]"),
            // The batch, each fragment in its turn.
            format!("fragment btl {btl} module 3 peer 2 [9] [1]"),
            format!("fragment btl {btl} module 3 peer 1 [8, 7] []"),
            format!("send done btl {btl} cookie 77"),
            format!("peer failed btl {btl} module 3 peer 1: cable cut"),
        ] {
            assert!(lines.contains(&expected), "{expected} not in {lines:?}");
        }
        let at = |line: String| lines.iter().position(|l| *l == line).unwrap();
        assert!(
            at(format!("fragment btl {btl} module 3 peer 2 [9] [1]"))
                < at(format!("fragment btl {btl} module 3 peer 1 [8, 7] []")),
            "a batch in its order: {lines:?}"
        );
    }
    assert_ne!(ECHO_RECEIVER.lock().unwrap().unwrap(), 0);

    pml().finalize();
    assert!(ECHO_RX.lock().unwrap().is_empty(), "btls not finalized");
    assert_eq!(
        isend(1).unwrap_err().1,
        "pml probe isend: the component is not initialized"
    );
    // A second life.
    pml().init(&IDENTITY, core, &btls[..1]).unwrap();
    assert_eq!(pml().progress(), 1);
    pml().finalize();
}

#[test]
fn a_pml_of_contiguous_bytes_refuses_messages_in_pieces_with_a_sentence() {
    static LAYOUT: crate::testkit::Strided = crate::testkit::Strided::new(2, 4);
    let _g = serial();
    fresh();
    let core = fake_core();
    pml().init(&IDENTITY, core, &candidates(&["echo"])).unwrap();
    assert!(!pml().takes_pieces());
    let mut bytes = [7u8; 8];
    let pieces = LAYOUT.pieces(bytes.as_mut_ptr(), 2);
    let send = SendArgs {
        buf: bytes.as_ptr(),
        len: LAYOUT.packed(2),
        dest: 1,
        tag: 0,
        context: 0,
        mode: SendMode::Standard,
        done: std::ptr::null(),
    };
    // SAFETY: `bytes` and the layout outlive the call (the probe refuses).
    let (kind, why) = unsafe { pml().isend_pieces(&send, &pieces) }.unwrap_err();
    assert_eq!(kind, RequestError::Other);
    assert!(why.contains("takes contiguous bytes only"), "{why}");
    let recv = RecvArgs {
        buf: bytes.as_mut_ptr(),
        len: LAYOUT.packed(2),
        source: 1,
        tag: 0,
        context: 0,
        done: std::ptr::null(),
    };
    // SAFETY: as above.
    let why = unsafe { pml().irecv_pieces(&recv, &pieces) }.unwrap_err();
    assert!(why.contains("takes contiguous bytes only"), "{why}");
    assert_eq!(bytes, [7u8; 8], "nothing was written");
    pml().finalize();
}

#[test]
fn init_failures_install_nothing() {
    let _g = serial();
    fresh();
    let core = fake_core();
    assert_eq!(
        pml().init(&IDENTITY, core, &[]).unwrap_err(),
        "probe needs a btl"
    );
    assert_eq!(
        pml()
            .init(&IDENTITY, core, &candidates(&["refused"]))
            .unwrap_err(),
        "the modex is full"
    );
    assert_eq!(pml().progress(), 0);
    assert_eq!(
        isend(1).unwrap_err().1,
        "pml probe isend: the component is not initialized"
    );
}

#[test]
fn re_entry_is_refused() {
    let _g = serial();
    fresh();
    let core = fake_core();
    pml().init(&IDENTITY, core, &candidates(&["echo"])).unwrap();
    REENTER.store(true, Ordering::Relaxed);
    assert_eq!(pml().progress(), 1);
    REENTER.store(false, Ordering::Relaxed);
    // The btl ran, but none of its five callbacks reached the pml, and the
    // nested `test` was answered "complete in error".
    let lines = seen();
    assert_eq!(
        lines,
        [format!("nested btl events 6, nested test Some({BROKEN:?})")]
    );
    // The refused callback let the btl keep the payload.
    assert_eq!(*ECHO_RECEIVER.lock().unwrap(), Some(0));
    // Nothing is poisoned by a refusal (send 2 is complete at once: 0).
    assert_eq!(isend(1), Ok(0));
    pml().finalize();
}

#[test]
fn a_panic_stops_the_pml_with_the_first_error() {
    let _g = serial();
    fresh();
    let before = FINALIZED.load(Ordering::Relaxed);
    pml()
        .init(&IDENTITY, fake_core(), &candidates(&["echo"]))
        .unwrap();
    let (kind, first) = isend(666).unwrap_err();
    assert_eq!(kind, RequestError::Other);
    assert!(
        first
            .starts_with("pml probe isend: internal error: isend panicked: 'isend of tag 666' at "),
        "{first}"
    );
    assert!(first.contains("tests.rs"), "{first}");
    let logged = testkit::logged_by("pml", "probe");
    assert!(
        logged
            .iter()
            .any(|(level, m)| *level == oxmpi_plugin_api::verbosity::ERROR
                && m.contains("isend panicked: 'isend of tag 666'")),
        "{logged:?}"
    );
    // Later calls are refused, naming the first error.
    let cause = first
        .strip_prefix("pml probe isend: internal error: ")
        .unwrap();
    let stopped = format!("the component stopped after an internal error ({cause})");
    assert_eq!(
        isend(1).unwrap_err(),
        (RequestError::Other, format!("pml probe isend: {stopped}"))
    );
    // `test` answers "complete in error"; the sentence names the cause.
    assert_eq!(pml().test(2), Some(BROKEN));
    assert_eq!(
        pml().request_error(2),
        format!("pml probe request_error: {stopped}")
    );
    assert_eq!(pml().progress(), 0);
    assert_eq!(pml().iprobe(0, 1, 2), None);
    assert!(seen().is_empty());
    // Finalize still runs the pml's own (its btls are closed).
    pml().finalize();
    assert_eq!(FINALIZED.load(Ordering::Relaxed), before + 1);
    assert!(ECHO_RX.lock().unwrap().is_empty());
    // After finalize the pml starts afresh.
    pml()
        .init(&IDENTITY, fake_core(), &candidates(&["echo"]))
        .unwrap();
    assert_eq!(isend(1), Ok(0));
    pml().finalize();
}

#[test]
fn the_core_wrapper_passes_answers_and_sentences() {
    let core = fake_core();
    let wrapped = Core::new(crate::handle::core_table(core));
    wrapped.modex_put("btl_x", b"card").unwrap();
    assert_eq!(
        wrapped.modex_put("btl_refused", b"").unwrap_err(),
        "the modex is full"
    );
    assert_eq!(wrapped.modex_get(0, "btl_x"), Ok(Some(b"card".to_vec())));
    assert_eq!(wrapped.modex_get(1, "btl_y"), Ok(None));
    assert_eq!(
        wrapped.modex_get(5, "btl_x").unwrap_err(),
        "rank 5 is not in the job"
    );
    wrapped.register_progress(echo_progress);
    assert_eq!(core.progress.lock().unwrap().len(), 1);
}

#[test]
fn a_panic_in_the_core_is_a_failure_not_an_unwind() {
    struct Panicking;
    impl MpiCore for Panicking {
        fn modex_put(&self, _: &str, _: &[u8]) -> Result<(), String> {
            panic!("put")
        }
        fn modex_get(&self, _: u32, _: &str) -> Result<Option<Vec<u8>>, String> {
            panic!("get")
        }
        fn register_progress(&self, _: ProgressFn) {
            panic!("register")
        }
    }
    static P: Panicking = Panicking;
    let wrapped = Core::new(crate::handle::core_table(&P));
    let put = wrapped.modex_put("a", b"").unwrap_err();
    assert!(put.contains("modex_put (it panicked"), "{put}");
    let get = wrapped.modex_get(0, "a").unwrap_err();
    assert!(get.contains("modex_get (it panicked"), "{get}");
    wrapped.register_progress(echo_progress);
}
