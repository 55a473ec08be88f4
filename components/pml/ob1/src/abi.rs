//! The `extern "C"` side: the process-global engine behind the
//! [`PmlModule`](oxmpi_framework_pml::module::PmlModule) entry points, the
//! [`BtlReceiver`] callbacks, and the [`Transport`] over the real btl
//! tables and the MPI layer's [`PmlCore`].
//!
//! # The global instance
//!
//! One [`State`] per process lives in an `UnsafeCell` static. This is sound
//! because of the call contract (both module docs): the MPI layer calls
//! every pml entry point and every btl `progress` under its lock, one at a
//! time; btl callbacks are made only from inside btl `progress`, never from
//! `send` or `add_peer`; and ob1 never calls a btl's `progress`. So at most
//! one `&mut State` exists at any moment, and the lock orders memory
//! between threads. Debug builds check this with a flag (a nested entry
//! panics, which the entry point reports as an error instead of aliasing).
//!
//! Every entry point catches panics ([`oxmpi_plugin_api::guard::call`]);
//! after one, the pml refuses further work with a sentence naming the
//! first internal error (its state may be inconsistent).

use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::ptr;
#[cfg(debug_assertions)]
use std::sync::atomic::{AtomicBool, Ordering};

use abi_stable::std_types::{RResult, RSlice, RStr, RString, RVec};
use oxmpi_framework_btl::module::{
    BtlComponentModule, BtlModuleInfo, BtlReceiver, JobIdentity, SendOutcome,
};
use oxmpi_framework_pml::module::{
    BtlCandidate, ModexLookup, PmlCore, ProgressFn, RecvArgs, RequestError, RequestStatus,
    SendArgs, ANY_SOURCE, ANY_TAG,
};
use oxmpi_plugin_api::{guard, verbosity, ComponentContext, ErrorKind, Params as _};

use crate::engine::{BtlDesc, Config, Engine, Transport};
use crate::Ob1Params;

/// One btl component as ob1 uses it.
pub(crate) struct AbiBtl {
    name: String,
    module: &'static BtlComponentModule,
    /// Its `init` succeeded (so `finalize` is due).
    initialized: bool,
}

/// The [`Transport`] over the real btl tables and the MPI layer's core.
pub(crate) struct AbiTransport {
    core: PmlCore,
    btls: Vec<AbiBtl>,
    log: ComponentContext,
}

impl Transport for AbiTransport {
    fn modex_get(&mut self, rank: u32, name: &str) -> Result<Option<Vec<u8>>, String> {
        let mut card = RVec::new();
        let mut error = RString::new();
        // SAFETY: the MPI layer's function with its own context pointer.
        let answer = unsafe {
            (self.core.modex_get)(
                self.core.ctx,
                rank,
                RStr::from_str(name),
                &mut card,
                &mut error,
            )
        };
        match answer {
            ModexLookup::Found => Ok(Some(card.into_vec())),
            ModexLookup::Missing => Ok(None),
            ModexLookup::Failed => Err(if error.is_empty() {
                "the modex gave no reason".to_string()
            } else {
                error.into_string()
            }),
        }
    }

    fn add_peer(&mut self, btl: usize, module: u32, peer: u32, card: &[u8]) -> Result<u64, String> {
        let mut endpoint = 0u64;
        let mut reason = RString::new();
        // SAFETY: a btl entry point, called outside its callbacks.
        let ok = unsafe {
            (self.btls[btl].module.add_peer)(
                module,
                peer,
                RSlice::from_slice(card),
                &mut endpoint,
                &mut reason,
            )
        };
        if ok {
            Ok(endpoint)
        } else if reason.is_empty() {
            Err("it gave no reason".to_string())
        } else {
            Err(reason.into_string())
        }
    }

    #[inline]
    fn send(
        &mut self,
        btl: usize,
        module: u32,
        endpoint: u64,
        header: &[u8],
        payload: *const u8,
        payload_len: usize,
        cookie: u64,
    ) -> SendOutcome {
        // SAFETY: a btl entry point, called outside its callbacks; the
        // payload stays valid as the contract requires (the engine keeps
        // the request until `on_send_done`).
        unsafe {
            (self.btls[btl].module.send)(
                module,
                endpoint,
                header.as_ptr(),
                header.len(),
                payload,
                payload_len,
                cookie,
            )
        }
    }

    fn log(&self, level: i32, message: &str) {
        self.log.log(level, message);
    }
}

/// Identifies the btl behind a [`BtlReceiver`] (its `ctx` points here).
struct ReceiverTag {
    btl: usize,
}

/// The process-global state.
struct State {
    engine: Engine<AbiTransport>,
    /// Kept alive: the btls' receivers point at them (boxed so their
    /// addresses do not move while the vector grows during init).
    #[allow(clippy::vec_box)]
    _tags: Vec<Box<ReceiverTag>>,
    /// The first internal error, after which nothing runs.
    poisoned: Option<String>,
}

struct Global {
    state: UnsafeCell<Option<State>>,
    #[cfg(debug_assertions)]
    busy: AtomicBool,
}

// SAFETY: see the module docs — the MPI layer serializes every entry into
// this state under its lock.
unsafe impl Sync for Global {}

static GLOBAL: Global = Global {
    state: UnsafeCell::new(None),
    #[cfg(debug_assertions)]
    busy: AtomicBool::new(false),
};

#[cfg(debug_assertions)]
struct Busy;

#[cfg(debug_assertions)]
impl Drop for Busy {
    fn drop(&mut self) {
        GLOBAL.busy.store(false, Ordering::Release);
    }
}

/// Runs `f` on the global state (see the module docs for why this is
/// sound).
#[inline]
fn with_global<R>(f: impl FnOnce(&mut Option<State>) -> R) -> R {
    #[cfg(debug_assertions)]
    let _busy = {
        if GLOBAL.busy.swap(true, Ordering::Acquire) {
            panic!(
                "pml ob1 was entered while already running (a btl called back from send or add_peer, or the MPI layer called in concurrently)"
            );
        }
        Busy
    };
    // SAFETY: calls are serialized (module docs); no other reference to
    // the state exists while `f` runs.
    let state = unsafe { &mut *GLOBAL.state.get() };
    f(state)
}

/// Runs an entry point on the initialized state, catching panics. `Err`
/// is the sentence to report.
#[inline]
fn entry<R>(what: &str, f: impl FnOnce(&mut State) -> Result<R, String>) -> Result<R, String> {
    let outcome = guard::call(|| {
        Ok(with_global(|state| match state {
            None => Err(format!("pml ob1 {what}: the pml is not initialized")),
            Some(s) => match &s.poisoned {
                Some(first) => Err(format!(
                    "pml ob1 {what}: the pml stopped after an internal error ({first})"
                )),
                None => f(s),
            },
        }))
    });
    match outcome {
        RResult::ROk(r) => r,
        RResult::RErr(e) => {
            let message = format!("pml ob1 {what}: internal error: {}", e.message);
            if e.kind == ErrorKind::Panicked {
                // The state may be half-updated: refuse further work.
                let _ = guard::call(|| {
                    with_global(|state| {
                        if let Some(s) = state {
                            if s.poisoned.is_none() {
                                s.engine.transport().log(verbosity::ERROR, &message);
                                s.poisoned = Some(message.clone());
                            }
                        }
                    });
                    Ok(())
                });
            }
            Err(message)
        }
    }
}

/// The btl index a receiver's `ctx` names.
///
/// # Safety
///
/// `ctx` is a pointer ob1 handed to a btl's `init`, still alive.
#[inline]
unsafe fn btl_of(ctx: *mut c_void) -> usize {
    (*(ctx as *const ReceiverTag)).btl
}

#[inline]
unsafe fn bytes<'a>(p: *const u8, len: usize) -> &'a [u8] {
    if len == 0 || p.is_null() {
        &[]
    } else {
        std::slice::from_raw_parts(p, len)
    }
}

unsafe extern "C" fn on_header(
    _ctx: *mut c_void,
    _module: u32,
    peer: u32,
    header: *const u8,
    header_len: usize,
    payload_len: usize,
) -> *mut u8 {
    let header = bytes(header, header_len);
    entry("on_header", |s| {
        Ok(s.engine.on_header(peer, header, payload_len))
    })
    .unwrap_or(ptr::null_mut())
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
    let btl = btl_of(ctx);
    let header = bytes(header, header_len);
    let _ = entry("on_fragment", |s| {
        // SAFETY: the btl's payload is readable for `payload_len` bytes.
        unsafe {
            s.engine
                .on_fragment(btl, module, peer, header, payload, payload_len)
        };
        Ok(())
    });
}

unsafe extern "C" fn on_send_done(_ctx: *mut c_void, cookie: u64) {
    let _ = entry("on_send_done", |s| {
        s.engine.on_send_done(cookie);
        Ok(())
    });
}

unsafe extern "C" fn on_peer_failed(ctx: *mut c_void, module: u32, peer: u32, reason: RStr<'_>) {
    let btl = btl_of(ctx);
    let _ = entry("on_peer_failed", |s| {
        s.engine.on_peer_failed(btl, module, peer, reason.as_str());
        Ok(())
    });
}

/// Initializes the btls and builds the engine (see `PmlModule::init`).
fn init_state(
    context: &ComponentContext,
    identity: &JobIdentity,
    core: PmlCore,
    candidates: &[BtlCandidate],
) -> Result<State, String> {
    let params = Ob1Params::read(context)?;
    if candidates.is_empty() {
        return Err(
            "pml ob1 has no btl to use: none was selected (check the btl parameter)".to_string(),
        );
    }
    let mut tags = Vec::with_capacity(candidates.len());
    let mut btls = Vec::with_capacity(candidates.len());
    let mut descs = Vec::with_capacity(candidates.len());
    for (b, cand) in candidates.iter().enumerate() {
        let name = cand.name.as_str().to_string();
        let tag = Box::new(ReceiverTag { btl: b });
        let receiver = BtlReceiver {
            ctx: &*tag as *const ReceiverTag as *mut c_void,
            on_header,
            on_fragment,
            on_send_done,
            on_peer_failed,
        };
        tags.push(tag);
        let mut modules: RVec<BtlModuleInfo> = RVec::new();
        let mut error = RString::new();
        // SAFETY: the btl's entry point with its own context.
        let ok = unsafe {
            (cand.module.init)(&cand.context, identity, receiver, &mut modules, &mut error)
        };
        let mut desc = BtlDesc {
            name: name.clone(),
            modules: Vec::new(),
            unusable: None,
        };
        if !ok {
            let why = if error.is_empty() {
                "its init failed without a reason".to_string()
            } else {
                error.into_string()
            };
            cand.context.log(
                verbosity::COMPONENT,
                &format!("not used by pml ob1: init failed: {why}"),
            );
            desc.unusable = Some(format!("init failed here: {why}"));
        } else if modules.is_empty() {
            let why = if error.is_empty() {
                "it found nothing usable here".to_string()
            } else {
                error.into_string()
            };
            cand.context.log(
                verbosity::COMPONENT,
                &format!("not used by pml ob1: no module: {why}"),
            );
            desc.unusable = Some(format!("no module here: {why}"));
        } else {
            let mut card = RVec::new();
            // SAFETY: a btl entry point after a successful init.
            unsafe { (cand.module.contact_card)(&mut card) };
            let key = format!("btl_{name}");
            let mut perr = RString::new();
            // SAFETY: the MPI layer's function with its own context.
            let put = unsafe {
                (core.modex_put)(
                    core.ctx,
                    RStr::from_str(&key),
                    RSlice::from_slice(card.as_slice()),
                    &mut perr,
                )
            };
            if put {
                // SAFETY: as above.
                unsafe {
                    (core.register_progress)(
                        core.ctx,
                        ProgressFn {
                            poll: cand.module.progress,
                        },
                    )
                };
                desc.modules = modules.into_vec();
            } else {
                let why = format!("publishing its contact card {key} failed: {perr}");
                cand.context
                    .log(verbosity::COMPONENT, &format!("not used by pml ob1: {why}"));
                desc.unusable = Some(why);
            }
        }
        btls.push(AbiBtl {
            name,
            module: cand.module,
            initialized: ok,
        });
        descs.push(desc);
    }
    if descs.iter().all(|d| d.modules.is_empty()) {
        let reasons: Vec<String> = descs
            .iter()
            .map(|d| {
                format!(
                    "{}: {}",
                    d.name,
                    d.unusable.as_deref().unwrap_or("unusable")
                )
            })
            .collect();
        for btl in btls.iter().filter(|b| b.initialized) {
            // SAFETY: the btl initialized; nothing else follows.
            unsafe { (btl.module.finalize)() };
        }
        return Err(format!("pml ob1 has no usable btl: {}", reasons.join("; ")));
    }
    let used: Vec<&str> = descs
        .iter()
        .filter(|d| !d.modules.is_empty())
        .map(|d| d.name.as_str())
        .collect();
    context.log(
        verbosity::COMPONENT,
        &format!(
            "rank {} of {} uses btl {}",
            identity.rank,
            identity.size,
            used.join(", ")
        ),
    );
    let transport = AbiTransport {
        core,
        btls,
        log: *context,
    };
    let config = Config {
        send_pipeline_depth: params.send_pipeline_depth,
    };
    Ok(State {
        engine: Engine::new(config, identity.rank, identity.size, descs, transport),
        _tags: tags,
        poisoned: None,
    })
}

/// `PmlModule::init`.
pub(crate) unsafe extern "C" fn init(
    context: &ComponentContext,
    identity: &JobIdentity,
    core: PmlCore,
    btls: RSlice<'_, BtlCandidate>,
    error: &mut RString,
) -> bool {
    let candidates = btls.as_slice();
    let outcome = guard::call(|| {
        let already = with_global(|s| s.is_some());
        if already {
            return Ok(Err("pml ob1 is already initialized".to_string()));
        }
        // The btls' init runs outside the global state: it does not call
        // back, and the state does not exist yet.
        let state = init_state(context, identity, core, candidates);
        Ok(state.map(|st| with_global(|s| *s = Some(st))))
    });
    match outcome {
        RResult::ROk(Ok(())) => true,
        RResult::ROk(Err(e)) => {
            *error = RString::from(e);
            false
        }
        RResult::RErr(e) => {
            *error = RString::from(format!("pml ob1 init: internal error: {}", e.message));
            false
        }
    }
}

/// `PmlModule::isend`.
pub(crate) unsafe extern "C" fn isend(
    args: &SendArgs,
    request: &mut u64,
    kind: &mut RequestError,
    error: &mut RString,
) -> bool {
    // SAFETY: the caller keeps the buffer valid until completion (contract).
    match entry("isend", |s| {
        // SAFETY: as above.
        Ok(unsafe { s.engine.isend(args) }.map_err(|e| (s.engine.last_send_error(), e)))
    }) {
        Ok(Ok(h)) => {
            *request = h;
            true
        }
        Ok(Err((k, e))) => {
            *kind = k;
            *error = RString::from(e);
            false
        }
        Err(e) => {
            *kind = RequestError::Other;
            *error = RString::from(e);
            false
        }
    }
}

/// `PmlModule::irecv`.
pub(crate) unsafe extern "C" fn irecv(
    args: &RecvArgs,
    request: &mut u64,
    error: &mut RString,
) -> bool {
    // SAFETY: the caller keeps the buffer valid until completion (contract).
    match entry("irecv", |s| unsafe { s.engine.irecv(args) }) {
        Ok(h) => {
            *request = h;
            true
        }
        Err(e) => {
            *error = RString::from(e);
            false
        }
    }
}

/// The status of a request the pml cannot answer for.
const BROKEN: RequestStatus = RequestStatus {
    source: ANY_SOURCE,
    tag: ANY_TAG,
    count: 0,
    cancelled: false,
    error: RequestError::Other,
};

/// `PmlModule::test`.
pub(crate) unsafe extern "C" fn test(request: u64, status: &mut RequestStatus) -> bool {
    match entry("test", |s| Ok(s.engine.test(request))) {
        Ok(Some(st)) => {
            *status = st;
            true
        }
        Ok(None) => false,
        Err(_) => {
            *status = BROKEN;
            true
        }
    }
}

/// `PmlModule::request_error`.
pub(crate) unsafe extern "C" fn request_error(request: u64, error: &mut RString) {
    let text =
        entry("request_error", |s| Ok(s.engine.request_error(request))).unwrap_or_else(|e| e);
    *error = RString::from(text);
}

/// `PmlModule::free`.
pub(crate) unsafe extern "C" fn free(request: u64) {
    let _ = entry("free", |s| {
        s.engine.free(request);
        Ok(())
    });
}

/// `PmlModule::cancel`.
pub(crate) unsafe extern "C" fn cancel(request: u64) -> bool {
    entry("cancel", |s| Ok(s.engine.cancel(request))).unwrap_or(false)
}

/// `PmlModule::iprobe`.
pub(crate) unsafe extern "C" fn iprobe(
    context: u32,
    source: i32,
    tag: i32,
    status: &mut RequestStatus,
) -> bool {
    match entry("iprobe", |s| Ok(s.engine.iprobe(context, source, tag))) {
        Ok(Some(st)) => {
            *status = st;
            true
        }
        _ => false,
    }
}

/// `PmlModule::progress`.
pub(crate) unsafe extern "C" fn progress() -> usize {
    entry("progress", |s| Ok(s.engine.progress())).unwrap_or(0)
}

/// `PmlModule::finalize`: finalizes the btls ob1 initialized and drops the
/// state (a later `init` starts afresh).
pub(crate) unsafe extern "C" fn finalize() {
    let _ = guard::call(|| {
        let state = with_global(|s| s.take());
        if let Some(state) = state {
            let transport = state.engine.transport();
            let live = state.engine.stats().live_requests;
            if live > 0 {
                transport.log(
                    verbosity::COMPONENT,
                    &format!("finalize with {live} request(s) not freed; they are dropped"),
                );
            }
            for btl in transport.btls.iter().filter(|b| b.initialized) {
                transport.log(verbosity::TRACE, &format!("finalizing btl {}", btl.name));
                // SAFETY: the btl initialized; no call follows.
                unsafe { (btl.module.finalize)() };
            }
        }
        Ok(())
    });
}
