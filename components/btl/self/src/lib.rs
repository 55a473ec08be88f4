//! btl component `self`: delivers a process's messages to itself.
//!
//! One module (index 0, label `self`) that reaches exactly one peer: the
//! process's own rank ([`JobIdentity::rank`]). It publishes no contact card.
//!
//! [`send`](BtlComponentModule::send) copies the header into an entry of a
//! queue, keeps the payload pointer, and answers
//! [`SendOutcome::Queued`]; it never calls back. Each
//! [`progress`](BtlComponentModule::progress) call delivers, in order, every
//! fragment queued before it: `on_header`; if the pml answered a
//! destination, the payload is copied there (one `memcpy`), otherwise the
//! sender's payload is handed over in place; then `on_fragment`; then
//! `on_send_done` with the send's cookie. Fragments queued while a progress
//! call runs wait for the next call. The queue's storage is kept and reused,
//! so a process that has reached its peak number of queued fragments never
//! allocates again; callbacks are made without holding the component's lock.
//!
//! A send the pml should never make (a header longer than [`MAX_HEADER`], a
//! module or endpoint that does not exist, a null payload with a non-zero
//! length) fails: `send` answers [`SendOutcome::Failed`], the next progress
//! reports the reason once through `on_peer_failed`, and fragments queued
//! for the peer are dropped without `on_send_done`, as the interface
//! requires for a lost peer.
//!
//! Parameters (Open MPI's names and defaults; see [`params`]):
//! `btl_self_exclusivity` (65536), `btl_self_eager_limit` (1024),
//! `btl_self_rndv_eager_limit` (128k), `btl_self_max_send_size` (16k),
//! `btl_self_latency` (0), `btl_self_bandwidth` (100), `btl_self_flags` (1).

pub mod params;

use abi_stable::std_types::{RSlice, RStr, RString, RVec};
use oxmpi_framework_btl::module::{
    BtlComponentModule, BtlModuleInfo, BtlReceiver, JobIdentity, SendOutcome, MAX_HEADER,
};
use oxmpi_plugin_api::verbosity;
use oxmpi_plugin_api::Params as _;
use oxmpi_plugin_api::{ComponentContext, ComponentError, Lifecycle, QueryReply, Version};
use params::Config;
use std::collections::VecDeque;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Framework of the component.
pub const FRAMEWORK: &str = "btl";
/// Name of the component.
pub const COMPONENT: &str = "self";
/// Index of the component's only module.
pub const MODULE_INDEX: u32 = 0;
/// Priority the query reports (btl is a multi-select framework: every
/// usable btl is kept; the priority only orders them).
pub const PRIORITY: i32 = 0;

/// The component's lifecycle.
pub struct SelfBtl;

impl Lifecycle for SelfBtl {
    fn query(_ctx: &ComponentContext) -> Result<QueryReply, ComponentError> {
        Ok(QueryReply::Usable { priority: PRIORITY })
    }
}

/// One queued fragment.
struct Entry {
    header: [u8; MAX_HEADER],
    header_len: usize,
    payload: *const u8,
    payload_len: usize,
    cookie: u64,
}

/// Everything the component holds between calls.
struct State {
    rank: u32,
    receiver: BtlReceiver,
    /// Fragments not yet delivered, oldest first.
    queue: VecDeque<Entry>,
    /// Storage handed back by the last progress call, swapped with `queue`
    /// by the next one (so neither ever gives its capacity away).
    spare: VecDeque<Entry>,
    /// Set once a send broke the interface; later sends fail.
    failed: bool,
    /// Why, until progress reports it.
    failure_to_report: Option<String>,
}

/// The component's state behind its lock.
struct Shared(Mutex<Option<State>>);

// SAFETY: the raw pointers in `State` (the pml's callback context and the
// payloads of queued sends) are only dereferenced by the pml's callbacks or
// read under the interface contract, which keeps them valid until
// `on_send_done`; the mutex serializes every access to them.
unsafe impl Sync for Shared {}

static STATE: Shared = Shared(Mutex::new(None));

/// Whether `progress` has anything to do (a fragment queued or a failure to
/// report): lets the progress engine's many idle polls skip the lock.
/// Written and read under the MPI layer's lock (the interface's contract),
/// so relaxed ordering is enough.
static PENDING: AtomicBool = AtomicBool::new(false);

fn state() -> MutexGuard<'static, Option<State>> {
    // A panic while holding the lock leaves consistent data (every update
    // is a single push, pop or assignment), so a poisoned lock is reused.
    STATE.0.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs an entry point body; a panic becomes `fallback()`.
fn guarded<T>(fallback: impl FnOnce() -> T, body: impl FnOnce() -> T) -> T {
    let outcome = oxmpi_plugin_api::guard::call(|| Ok(body()));
    outcome.into_result().unwrap_or_else(|_| fallback())
}

unsafe extern "C" fn init(
    context: &ComponentContext,
    identity: &JobIdentity,
    receiver: BtlReceiver,
    modules: &mut RVec<BtlModuleInfo>,
    error: &mut RString,
) -> bool {
    let outcome = guarded(
        || Err("the self btl failed while starting (internal error); this is a bug".to_string()),
        || {
            let (info, notice) = Config::read(context)?.module_info()?;
            if let Some(notice) = notice {
                context.log(verbosity::ERROR, &notice);
            }
            let mut guard = state();
            if guard.is_some() {
                return Err(
                    "the self btl is already initialized in this process; it must be finalized before it is initialized again"
                        .to_string(),
                );
            }
            *guard = Some(State {
                rank: identity.rank,
                receiver,
                queue: VecDeque::with_capacity(64),
                spare: VecDeque::with_capacity(64),
                failed: false,
                failure_to_report: None,
            });
            drop(guard);
            context.log(
                verbosity::INFO,
                &format!(
                    "one module for rank {}: eager limit {} B, rendezvous eager limit {} B, max send size {} B, exclusivity {}",
                    identity.rank,
                    info.eager_limit,
                    info.rndv_eager_limit,
                    info.max_send_size,
                    info.exclusivity
                ),
            );
            modules.push(info);
            Ok(())
        },
    );
    match outcome {
        Ok(()) => true,
        Err(why) => {
            *error = why.into();
            false
        }
    }
}

unsafe extern "C" fn contact_card(card: &mut RVec<u8>) {
    // The self btl needs no card; `clear` cannot panic.
    card.clear();
}

unsafe extern "C" fn add_peer(
    module: u32,
    peer: u32,
    _card: RSlice<'_, u8>,
    endpoint: &mut u64,
    reason: &mut RString,
) -> bool {
    let answer = guarded(
        || Err("the self btl failed while adding a peer (internal error); this is a bug".into()),
        || {
            let guard = state();
            let Some(st) = guard.as_ref() else {
                return Err("the self btl is not initialized".to_string());
            };
            if module != MODULE_INDEX {
                return Err(format!(
                    "the self btl has one module (index {MODULE_INDEX}); there is no module {module}"
                ));
            }
            if peer != st.rank {
                return Err(format!(
                    "self only reaches its own process (rank {})",
                    st.rank
                ));
            }
            Ok(u64::from(peer))
        },
    );
    match answer {
        Ok(e) => {
            *endpoint = e;
            true
        }
        Err(why) => {
            *reason = why.into();
            false
        }
    }
}

/// Checks a send and queues `entry` with a copy of the header; `Err` says
/// why the send breaks the interface.
///
/// # Safety
/// `header..header + entry.header_len` is readable (null and the length
/// limit are checked).
unsafe fn enqueue(
    st: &mut State,
    module: u32,
    endpoint: u64,
    header: *const u8,
    mut entry: Entry,
) -> Result<(), String> {
    let (header_len, payload_len) = (entry.header_len, entry.payload_len);
    if module != MODULE_INDEX {
        return Err(format!(
            "the pml sent on self module {module}, which does not exist (the self btl has one module, index {MODULE_INDEX})"
        ));
    }
    if endpoint != u64::from(st.rank) {
        return Err(format!(
            "the pml sent to self endpoint {endpoint}, which add_peer never returned (the only endpoint is {})",
            st.rank
        ));
    }
    if header_len > MAX_HEADER {
        return Err(format!(
            "the pml passed a {header_len}-byte header; the btl interface allows at most {MAX_HEADER} bytes"
        ));
    }
    if header.is_null() && header_len > 0 {
        return Err(format!(
            "the pml passed a null header pointer with length {header_len}"
        ));
    }
    if entry.payload.is_null() && payload_len > 0 {
        return Err(format!(
            "the pml passed a null payload pointer with length {payload_len}"
        ));
    }
    if header_len > 0 {
        // SAFETY: checked non-null above; the caller guarantees the length.
        let src = unsafe { std::slice::from_raw_parts(header, header_len) };
        entry.header[..header_len].copy_from_slice(src);
    }
    st.queue.push_back(entry);
    PENDING.store(true, Ordering::Relaxed);
    Ok(())
}

unsafe extern "C" fn send(
    module: u32,
    endpoint: u64,
    header: *const u8,
    header_len: usize,
    payload: *const u8,
    payload_len: usize,
    cookie: u64,
) -> SendOutcome {
    guarded(
        || SendOutcome::Failed,
        || {
            let mut guard = state();
            let Some(st) = guard.as_mut() else {
                return SendOutcome::Failed;
            };
            if st.failed {
                return SendOutcome::Failed;
            }
            let entry = Entry {
                header: [0; MAX_HEADER],
                header_len,
                payload,
                payload_len,
                cookie,
            };
            // SAFETY: the pml passes a readable header of `header_len` bytes.
            match unsafe { enqueue(st, module, endpoint, header, entry) } {
                Ok(()) => SendOutcome::Queued,
                Err(why) => {
                    st.failed = true;
                    st.failure_to_report = Some(why);
                    st.queue.clear();
                    PENDING.store(true, Ordering::Relaxed);
                    SendOutcome::Failed
                }
            }
        },
    )
}

/// Delivers one fragment through the pml's callbacks.
///
/// # Safety
/// The entry's payload is readable for its length (the interface contract)
/// and `receiver` is the pml's registration.
unsafe fn deliver(receiver: &BtlReceiver, rank: u32, entry: &Entry) {
    let header = entry.header.as_ptr();
    // SAFETY (whole block): callbacks of the pml with its own context; the
    // header lives in `entry`, the payload is the sender's (valid until
    // on_send_done), and the destination, if any, has `payload_len`
    // writable bytes by the interface contract.
    unsafe {
        let dest = (receiver.on_header)(
            receiver.ctx,
            MODULE_INDEX,
            rank,
            header,
            entry.header_len,
            entry.payload_len,
        );
        let payload = if dest.is_null() {
            entry.payload
        } else {
            if entry.payload_len > 0 && !std::ptr::eq(dest.cast_const(), entry.payload) {
                std::ptr::copy(entry.payload, dest, entry.payload_len);
            }
            dest.cast_const()
        };
        (receiver.on_fragment)(
            receiver.ctx,
            MODULE_INDEX,
            rank,
            header,
            entry.header_len,
            payload,
            entry.payload_len,
        );
        (receiver.on_send_done)(receiver.ctx, entry.cookie);
    }
}

unsafe extern "C" fn progress() -> usize {
    if !PENDING.load(Ordering::Relaxed) {
        return 0;
    }
    // A panic here can only come from a callback of the pml; the fragments
    // of the batch it interrupted are lost, and nothing unwinds into C.
    panic::catch_unwind(AssertUnwindSafe(|| {
        let (receiver, rank, mut batch, failure) = {
            let mut guard = state();
            let Some(st) = guard.as_mut() else {
                return 0;
            };
            PENDING.store(false, Ordering::Relaxed);
            let mut batch = std::mem::take(&mut st.spare);
            std::mem::swap(&mut batch, &mut st.queue);
            (st.receiver, st.rank, batch, st.failure_to_report.take())
        };
        let mut events = 0;
        if let Some(why) = failure {
            // SAFETY: the pml's callback with its own context.
            unsafe {
                (receiver.on_peer_failed)(receiver.ctx, MODULE_INDEX, rank, RStr::from_str(&why))
            };
            events += 1;
        }
        while let Some(entry) = batch.pop_front() {
            // SAFETY: queued by `send` under the interface contract.
            unsafe { deliver(&receiver, rank, &entry) };
            events += 1;
        }
        let mut guard = state();
        if let Some(st) = guard.as_mut() {
            if st.spare.capacity() < batch.capacity() {
                st.spare = batch;
            }
        }
        events
    }))
    .unwrap_or(0)
}

unsafe extern "C" fn finalize() {
    // Dropping the state frees the queues; nothing here can panic.
    let _ = panic::catch_unwind(|| {
        state().take();
    });
}

/// The component's btl module table.
pub static MODULE: BtlComponentModule = BtlComponentModule {
    init,
    contact_card,
    add_peer,
    send,
    progress,
    finalize,
};

oxmpi_plugin_api::export_component! {
    lifecycle: SelfBtl,
    framework: FRAMEWORK,
    component: COMPONENT,
    version: Version::new(1, 0, 0),
    interface: oxmpi_framework_btl::INTERFACE_VERSION,
    description: "Delivers a process's messages to itself",
    params: <Config as oxmpi_plugin_api::Params>::DECLS,
    module: &MODULE,
}

#[cfg(test)]
mod tests;
