//! The component side of the coll interface: a component implements the
//! safe [`Coll`] trait and [`export_coll_component!`](crate::export_coll_component)
//! generates the `extern "C"` [`CollModule`] table and the component's
//! root module.
//!
//! # The contract, as the adapter applies it
//!
//! - **State.** [`Coll::init`] makes the component's process-wide value,
//!   shared read-only by every communicator (`Sync`); each communicator
//!   gets a value of its own ([`Coll::Comm`]) from [`Coll::comm_query`],
//!   boxed behind the handle the MPI layer passes back.
//! - **One call per communicator at a time.** `run` and `start` take the
//!   communicator's value exclusively: the MPI layer makes at most one of
//!   them at a time on a handle (it refuses a second collective on a
//!   communicator before it reaches the component; MPI forbids concurrent
//!   collectives on one communicator). Calls on different communicators
//!   run at once.
//! - **Panics.** A panic in any entry point is caught; in `run` it stops
//!   that communicator's module (later calls on it are refused with a
//!   sentence naming the first internal error); in `init` or
//!   `comm_query` the entry fails with the panic's message.
//! - **Errors.** A failed entry answers false with a sentence `coll
//!   <component> <entry>: <why>` for refusals, or the component's own
//!   sentence.

use crate::module::{
    CollCall, CollCore, CollKind, CollModule, CommAnswer, CommDesc, OpSet, PollOutcome, RunOutcome,
    UserOp,
};
use abi_stable::std_types::{RSlice, RSliceMut, RString};
use oxmpi_plugin_api::{guard, verbosity, ComponentContext};
use std::cell::UnsafeCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

/// A communicator as [`Coll::comm_query`] sees it.
#[derive(Clone, Copy, Debug)]
pub struct CommInfo<'a> {
    /// Its context id.
    pub context: u32,
    /// This process's rank in it.
    pub rank: u32,
    /// The job rank of each member, in communicator order.
    pub members: &'a [u32],
    /// Its name, for messages.
    pub name: &'a str,
}

impl CommInfo<'_> {
    /// Its number of members.
    pub fn size(&self) -> u32 {
        self.members.len() as u32
    }
}

/// A component's offer for a communicator.
pub struct Offer<M> {
    /// Its priority (higher wins each operation).
    pub priority: i32,
    /// The operations it provides.
    pub ops: OpSet,
    /// The operations it can start non-blocking ([`Coll::start`]).
    pub nb_ops: OpSet,
    /// Its state for the communicator.
    pub comm: M,
}

/// What [`Coll::run`] did with a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Served {
    /// The collective completed.
    Done,
    /// The component does not take this call and has communicated nothing
    /// for it: the next component (by priority) that provides the
    /// operation on the communicator runs it.
    PassedOn,
}

/// A non-blocking collective in flight: the future of its algorithm,
/// polled by the MPI layer's progress engine until it completes.
pub struct Operation {
    future: Pin<Box<dyn Future<Output = Result<(), String>> + Send>>,
}

/// Asserts `Send` for a future the caller vouches for (see
/// [`Operation::new`]).
struct AssertSend<F>(F);

// SAFETY: `Operation::new`'s caller guarantees that the future may move to
// and be polled from another thread; the MPI layer polls an operation from
// one thread at a time.
unsafe impl<F> Send for AssertSend<F> {}

impl<F: Future> Future for AssertSend<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: structural pinning of the only field: `AssertSend` never
        // moves it out, has no `Drop` and is not `Unpin` unless `F` is.
        unsafe { self.map_unchecked_mut(|s| &mut s.0) }.poll(cx)
    }
}

impl Operation {
    /// Wraps the future of a non-blocking collective. Over a
    /// [`crate::transport::CommTransport`] made non-blocking the
    /// algorithms of `oxmpi-collectives` give control back while messages
    /// are in flight, so each poll returns quickly.
    ///
    /// # Safety
    ///
    /// The future may be moved to and polled from any thread (one at a
    /// time): what it holds besides owned values are the call's buffers and
    /// user operation, which MPI lets the library use from any thread until
    /// the operation completes, and the MPI layer's services ([`Core`]),
    /// which serve any thread.
    pub unsafe fn new<F>(future: F) -> Operation
    where
        F: Future<Output = Result<(), String>> + 'static,
    {
        Operation {
            future: Box::pin(AssertSend(future)),
        }
    }

    /// Polls the future once.
    fn poll(&mut self) -> Poll<Result<(), String>> {
        let mut cx = Context::from_waker(Waker::noop());
        self.future.as_mut().poll(&mut cx)
    }
}

/// What a coll component implements. See the module docs for the
/// contract.
pub trait Coll: Send + Sync + Sized + 'static {
    /// The component's state for one communicator.
    type Comm: Send + 'static;

    /// Creates the component's process-wide value over the MPI layer's
    /// services. `Err`: the component cannot run here, in one sentence or
    /// more.
    fn init(context: &ComponentContext, core: Core) -> Result<Self, String>;

    /// Offers a communicator: the component's priority, the operations it
    /// provides and its state for it, or why it declines it.
    fn comm_query(&self, comm: &CommInfo<'_>) -> Result<Offer<Self::Comm>, String>;

    /// Runs one blocking collective on `comm`'s state.
    ///
    /// # Errors
    ///
    /// Why it failed (one or more sentences).
    fn run(&self, comm: &mut Self::Comm, call: &CollCall<'_>) -> Result<Served, String>;

    /// Starts a non-blocking collective with `tag` (all its messages use
    /// it) for an operation the offer listed in `nb_ops`. The call's
    /// buffers stay valid until the operation completes; its count arrays
    /// must be copied ([`crate::module::OwnedCall`]).
    ///
    /// # Errors
    ///
    /// Why it cannot start. Default: the component has no non-blocking
    /// collectives.
    fn start(
        &self,
        comm: &mut Self::Comm,
        call: &CollCall<'_>,
        tag: i32,
    ) -> Result<Operation, String> {
        let _ = (comm, tag);
        Err(format!(
            "this component has no non-blocking {}",
            call.kind.name()
        ))
    }
}

/// The MPI layer's services, as a component holds them (copied freely;
/// valid until `finalize`).
#[derive(Clone, Copy)]
pub struct Core {
    raw: CollCore,
}

// SAFETY: the MPI layer's functions serve any thread (each takes the MPI
// layer's lock itself, the interface contract); the context pointer is the
// MPI layer's own.
unsafe impl Send for Core {}
// SAFETY: as above.
unsafe impl Sync for Core {}

/// A request of the MPI layer's, from [`Core::isend`] or [`Core::irecv`].
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoreRequest(pub u64);

fn sentence(text: RString, otherwise: &str) -> String {
    if text.is_empty() {
        otherwise.to_string()
    } else {
        text.into_string()
    }
}

impl Core {
    /// Wraps the MPI layer's table (the adapter does this for `init`).
    pub fn new(raw: CollCore) -> Self {
        Core { raw }
    }

    /// Starts sending `len` bytes at `buf` to job rank `dest` on
    /// `context` with `tag`.
    ///
    /// # Safety
    ///
    /// `buf` is readable for `len` bytes until the request is waited.
    ///
    /// # Errors
    ///
    /// The MPI layer's sentence.
    pub unsafe fn isend(
        &self,
        context: u32,
        dest: u32,
        tag: i32,
        buf: *const u8,
        len: usize,
    ) -> Result<CoreRequest, String> {
        let mut request = 0;
        let mut error = RString::new();
        // SAFETY: the MPI layer's function with its own context; the
        // buffer is the caller's promise.
        let ok = unsafe {
            (self.raw.isend)(
                self.raw.ctx,
                context,
                dest,
                tag,
                buf,
                len,
                &mut request,
                &mut error,
            )
        };
        if ok {
            Ok(CoreRequest(request))
        } else {
            Err(sentence(
                error,
                "the send could not start (no reason given)",
            ))
        }
    }

    /// Posts a receive of up to `len` bytes into `buf` from job rank
    /// `source` on `context` with `tag`.
    ///
    /// # Safety
    ///
    /// `buf` is writable for `len` bytes, and nothing else uses it, until
    /// the request is waited.
    ///
    /// # Errors
    ///
    /// The MPI layer's sentence.
    pub unsafe fn irecv(
        &self,
        context: u32,
        source: u32,
        tag: i32,
        buf: *mut u8,
        len: usize,
    ) -> Result<CoreRequest, String> {
        let mut request = 0;
        let mut error = RString::new();
        // SAFETY: as in `isend`.
        let ok = unsafe {
            (self.raw.irecv)(
                self.raw.ctx,
                context,
                source,
                tag,
                buf,
                len,
                &mut request,
                &mut error,
            )
        };
        if ok {
            Ok(CoreRequest(request))
        } else {
            Err(sentence(
                error,
                "the receive could not be posted (no reason given)",
            ))
        }
    }

    /// Checks every non-zero request once without waiting: each complete
    /// one is released and set to `CoreRequest(0)`, and `counts[i]` gets
    /// the bytes it moved.
    ///
    /// # Errors
    ///
    /// The sentence of one that completed in error (released; the others
    /// are left as they are).
    ///
    /// # Panics
    ///
    /// When `counts` is shorter than `requests`.
    pub fn test_all(
        &self,
        requests: &mut [CoreRequest],
        counts: &mut [usize],
    ) -> Result<(), String> {
        assert!(counts.len() >= requests.len());
        let mut error = RString::new();
        // SAFETY: `CoreRequest` is a transparent `u64`, so the slice is one
        // of `u64`s; the MPI layer's function with its own context; the
        // slices are valid for the call.
        let ok = unsafe {
            let ids =
                std::slice::from_raw_parts_mut(requests.as_mut_ptr().cast::<u64>(), requests.len());
            let n = requests.len();
            (self.raw.test_all)(
                self.raw.ctx,
                RSliceMut::from_mut_slice(ids),
                RSliceMut::from_mut_slice(&mut counts[..n]),
                &mut error,
            )
        };
        if ok {
            Ok(())
        } else {
            Err(sentence(error, "a request failed (no reason given)"))
        }
    }

    /// One round of the MPI layer's progress engine; the events it found.
    pub fn progress(&self) -> usize {
        // SAFETY: the MPI layer's function with its own context.
        unsafe { (self.raw.progress)(self.raw.ctx) }
    }

    /// Waits for every request and releases them; `counts[i]` gets the
    /// bytes request `i` moved (`counts` as long as `requests`).
    ///
    /// # Errors
    ///
    /// The first failure's sentence (every request is released anyway).
    ///
    /// # Panics
    ///
    /// When `counts` is shorter than `requests`.
    pub fn wait_all(&self, requests: &[CoreRequest], counts: &mut [usize]) -> Result<(), String> {
        assert!(counts.len() >= requests.len());
        let mut error = RString::new();
        // SAFETY: `CoreRequest` is a transparent `u64`, so the slice is one
        // of `u64`s; the MPI layer's function with its own context; the
        // slices are valid for the call.
        let ok = unsafe {
            let ids = std::slice::from_raw_parts(requests.as_ptr().cast::<u64>(), requests.len());
            (self.raw.wait_all)(
                self.raw.ctx,
                RSlice::from_slice(ids),
                RSliceMut::from_mut_slice(&mut counts[..requests.len()]),
                &mut error,
            )
        };
        if ok {
            Ok(())
        } else {
            Err(sentence(error, "a request failed (no reason given)"))
        }
    }
}

/// The process-global state of an exported component: implemented by
/// [`export_coll_component!`](crate::export_coll_component), never by
/// hand.
pub trait Exported: Coll {
    /// The component's name (for the sentences of refused entries).
    const COMPONENT: &'static str;

    /// The component's global.
    fn global() -> &'static Global<Self>;
}

/// Where an exported component's process-wide value lives between `init`
/// and `finalize`.
pub struct Global<C> {
    state: Mutex<Option<(Arc<C>, ComponentContext)>>,
    live: AtomicUsize,
}

impl<C> Global<C> {
    /// Nothing initialized.
    pub const fn new() -> Self {
        Global {
            state: Mutex::new(None),
            live: AtomicUsize::new(0),
        }
    }
}

impl<C> Default for Global<C> {
    fn default() -> Self {
        Self::new()
    }
}

/// One communicator's module: what a handle points to.
struct Entry<C: Coll> {
    coll: Arc<C>,
    context: ComponentContext,
    name: String,
    /// The communicator's state; used by one `run` or `start` at a time
    /// (the interface contract).
    comm: UnsafeCell<C::Comm>,
    /// Whether a `run` panicked (then `first_error` says how).
    stopped: AtomicBool,
    /// The first internal error (a panic in `run`), once there was one.
    first_error: Mutex<Option<String>>,
}

/// The sentence of a refused entry.
#[cold]
fn refused<C: Exported>(what: &str, why: &str) -> String {
    format!("coll {} {what}: {why}", C::COMPONENT)
}

unsafe extern "C" fn init<C: Exported>(
    context: &ComponentContext,
    core: CollCore,
    error: &mut RString,
) -> bool {
    let global = C::global();
    let mut slot = global.state.lock().unwrap_or_else(|e| e.into_inner());
    if slot.is_some() {
        *error = refused::<C>(
            "init",
            "already initialized (init called twice without finalize)",
        )
        .into();
        return false;
    }
    match guard::catch(|| C::init(context, Core::new(core))) {
        Ok(Ok(value)) => {
            *slot = Some((Arc::new(value), *context));
            true
        }
        Ok(Err(why)) => {
            *error = why.into();
            false
        }
        Err(panic) => {
            *error = refused::<C>("init", &format!("internal error: {}", panic.message)).into();
            false
        }
    }
}

unsafe extern "C" fn comm_query<C: Exported>(
    comm: &CommDesc<'_>,
    answer: &mut CommAnswer,
    reason: &mut RString,
) -> bool {
    let global = C::global();
    let Some((coll, context)) = global
        .state
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .map(|(c, ctx)| (c.clone(), *ctx))
    else {
        *reason = refused::<C>("comm_query", "the component is not initialized").into();
        return false;
    };
    let info = CommInfo {
        context: comm.context,
        rank: comm.rank,
        members: comm.members.as_slice(),
        name: comm.name.as_str(),
    };
    match guard::catch(|| coll.comm_query(&info)) {
        Ok(Ok(offer)) => {
            let entry = Box::new(Entry::<C> {
                coll,
                context,
                name: info.name.to_string(),
                comm: UnsafeCell::new(offer.comm),
                stopped: AtomicBool::new(false),
                first_error: Mutex::new(None),
            });
            global.live.fetch_add(1, Ordering::Relaxed);
            *answer = CommAnswer {
                priority: offer.priority,
                ops: offer.ops,
                nb_ops: offer.nb_ops,
                module: Box::into_raw(entry) as u64,
            };
            true
        }
        Ok(Err(why)) => {
            *reason = why.into();
            false
        }
        Err(panic) => {
            *reason =
                refused::<C>("comm_query", &format!("internal error: {}", panic.message)).into();
            false
        }
    }
}

/// The entry behind a handle.
///
/// # Safety
///
/// `module` is a handle `comm_query` gave and `comm_release` has not
/// released (the interface contract).
unsafe fn entry<'a, C: Coll>(module: u64) -> &'a Entry<C> {
    // SAFETY: the caller's promise: a live `Box<Entry<C>>` turned into an
    // integer by `comm_query`.
    unsafe { &*(module as *const Entry<C>) }
}

unsafe extern "C" fn comm_release<C: Exported>(module: u64) {
    if module == 0 {
        return;
    }
    // SAFETY: the interface contract: a handle from `comm_query`, released
    // once; no `run` on it is in progress (the MPI layer frees a
    // communicator only when no collective runs on it).
    let entry = unsafe { Box::from_raw(module as *mut Entry<C>) };
    C::global().live.fetch_sub(1, Ordering::Relaxed);
    // Dropping the communicator's state runs the component's code.
    let _ = guard::call(|| {
        drop(entry);
        Ok(())
    });
}

unsafe extern "C" fn run<C: Exported>(
    module: u64,
    call: &CollCall<'_>,
    error: &mut RString,
) -> RunOutcome {
    // SAFETY: the interface contract (a live handle, or 0, refused).
    let outcome =
        unsafe { with_comm::<C, _>(module, call.kind, |coll, comm| coll.run(comm, call)) };
    match outcome {
        Ok(Served::Done) => RunOutcome::Done,
        Ok(Served::PassedOn) => RunOutcome::PassedOn,
        Err(why) => {
            *error = why.into();
            RunOutcome::Failed
        }
    }
}

/// Runs `f` on the component and the communicator's state of `module`,
/// with the refusal of a stopped module, and a panic turned into an error
/// that stops the module.
///
/// # Safety
///
/// `module` is 0 or a live handle from `comm_query`, on which no other
/// `run` or `start` is in progress.
unsafe fn with_comm<C: Exported, R>(
    module: u64,
    kind: CollKind,
    f: impl FnOnce(&C, &mut C::Comm) -> Result<R, String>,
) -> Result<R, String> {
    if module == 0 {
        return Err(refused::<C>(kind.name(), "the communicator handle is 0"));
    }
    // SAFETY: the caller's promise (a live handle).
    let entry = unsafe { entry::<C>(module) };
    if entry.stopped.load(Ordering::Acquire) {
        let first = entry
            .first_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .unwrap_or_default();
        return Err(refused::<C>(
            kind.name(),
            &format!(
                "its module for {} stopped after an internal error ({first})",
                entry.name
            ),
        ));
    }
    // SAFETY: the caller's promise: no other call uses the state until
    // this one returns.
    let comm = unsafe { &mut *entry.comm.get() };
    let outcome = guard::catch(|| f(&entry.coll, comm));
    match outcome {
        Ok(result) => result,
        Err(panic) => {
            let first = format!("{} panicked: {}", kind.name(), panic.message);
            entry
                .context
                .log(verbosity::ERROR, &format!("internal error: {first}"));
            let error = refused::<C>(kind.name(), &format!("internal error: {first}"));
            *entry.first_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(first);
            entry.stopped.store(true, Ordering::Release);
            Err(error)
        }
    }
}

/// A started operation behind an operation handle.
struct OpEntry {
    operation: Operation,
    context: ComponentContext,
    kind: CollKind,
}

unsafe extern "C" fn start<C: Exported>(
    module: u64,
    call: &CollCall<'_>,
    tag: i32,
    op: &mut u64,
    error: &mut RString,
) -> bool {
    // SAFETY: the interface contract (a live handle, or 0, refused).
    let started =
        unsafe { with_comm::<C, _>(module, call.kind, |coll, comm| coll.start(comm, call, tag)) };
    match started {
        Ok(operation) => {
            // SAFETY: as above (the handle is live; `with_comm` refused 0).
            let context = unsafe { entry::<C>(module) }.context;
            *op = Box::into_raw(Box::new(OpEntry {
                operation,
                context,
                kind: call.kind,
            })) as u64;
            C::global().live.fetch_add(1, Ordering::Relaxed);
            true
        }
        Err(why) => {
            *error = why.into();
            false
        }
    }
}

unsafe extern "C" fn poll<C: Exported>(op: u64, error: &mut RString) -> PollOutcome {
    if op == 0 {
        *error = "coll poll: the operation handle is 0".into();
        return PollOutcome::Failed;
    }
    // SAFETY: the interface contract: a live handle from `start`, polled
    // by one thread at a time.
    let entry = unsafe { &mut *(op as *mut OpEntry) };
    let polled = guard::catch(|| entry.operation.poll());
    let outcome = match polled {
        Ok(Poll::Pending) => return PollOutcome::Pending,
        Ok(Poll::Ready(Ok(()))) => PollOutcome::Done,
        Ok(Poll::Ready(Err(why))) => {
            *error = why.into();
            PollOutcome::Failed
        }
        Err(panic) => {
            let first = format!(
                "non-blocking {} panicked: {}",
                entry.kind.name(),
                panic.message
            );
            entry
                .context
                .log(verbosity::ERROR, &format!("internal error: {first}"));
            *error = refused::<C>(entry.kind.name(), &format!("internal error: {first}")).into();
            PollOutcome::Failed
        }
    };
    // SAFETY: finished: the handle is released here, once (the contract:
    // no poll follows a finished answer).
    let entry = unsafe { Box::from_raw(op as *mut OpEntry) };
    C::global().live.fetch_sub(1, Ordering::Relaxed);
    let _ = guard::call(|| {
        drop(entry);
        Ok(())
    });
    outcome
}

unsafe extern "C" fn finalize<C: Exported>() {
    let global = C::global();
    let taken = global
        .state
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    let live = global.live.load(Ordering::Relaxed);
    if let Some((_, context)) = &taken {
        if live > 0 {
            context.log(
                verbosity::COMPONENT,
                &format!("finalize with {live} communicator module(s) not released"),
            );
        }
    }
    let _ = guard::call(|| {
        drop(taken);
        Ok(())
    });
}

/// The `extern "C"` table for `C` (what
/// [`export_coll_component!`](crate::export_coll_component) exports).
pub const fn table<C: Exported>() -> CollModule {
    CollModule {
        init: init::<C>,
        comm_query: comm_query::<C>,
        comm_release: comm_release::<C>,
        run: run::<C>,
        start: start::<C>,
        poll: poll::<C>,
        finalize: finalize::<C>,
    }
}

/// A call's user operation as a safe function: `apply(input, inout)`
/// over whole elements.
///
/// # Errors
///
/// When the call has no user function, or the function failed.
pub fn user_apply(user: &UserOp, input: &[u8], inout: &mut [u8]) -> Result<(), String> {
    let Some(func) = user.func else {
        return Err("the call names a user-defined operation but gives no function".into());
    };
    if user.elem_size == 0 || input.len() != inout.len() || input.len() % user.elem_size != 0 {
        return Err(format!(
            "a user-defined operation was given {} and {} bytes for elements of {} bytes",
            input.len(),
            inout.len(),
            user.elem_size
        ));
    }
    let count = input.len() / user.elem_size;
    // SAFETY: the MPI layer's function with its own context; both
    // buffers hold `count` elements of `elem_size` bytes.
    let ok = unsafe { func(user.ctx, input.as_ptr(), inout.as_mut_ptr(), count) };
    if ok {
        Ok(())
    } else {
        Err("the user-defined reduction operation failed".into())
    }
}

/// The operations of `kinds` as a set (usable in a `const`).
pub const fn op_set(kinds: &[CollKind]) -> OpSet {
    let mut set = OpSet::NONE;
    let mut i = 0;
    while i < kinds.len() {
        set = set.with(kinds[i]);
        i += 1;
    }
    set
}

/// Exports a coll component: its module table (`MODULE`) generated from
/// its [`Coll`] type, and its root module.
///
/// ```ignore
/// oxmpi_framework_coll::export_coll_component! {
///     coll: MyColl,
///     lifecycle: MyComponent,
///     component: "mine",
///     version: Version::new(1, 0, 0),
///     description: "Collectives that …",
///     params: MyParams::DECLS,
/// }
/// ```
#[macro_export]
macro_rules! export_coll_component {
    (
        coll: $coll:ty,
        lifecycle: $lifecycle:ty,
        component: $comp:expr,
        version: $ver:expr,
        description: $desc:expr,
        params: $params:expr $(,)?
    ) => {
        /// The component's coll module table (generated from its `Coll`).
        pub static MODULE: $crate::module::CollModule = $crate::adapter::table::<$coll>();

        impl $crate::adapter::Exported for $coll {
            const COMPONENT: &'static str = $comp;

            fn global() -> &'static $crate::adapter::Global<$coll> {
                static GLOBAL: $crate::adapter::Global<$coll> = $crate::adapter::Global::new();
                &GLOBAL
            }
        }

        $crate::__plugin_api::export_component! {
            lifecycle: $lifecycle,
            framework: "coll",
            component: $comp,
            version: $ver,
            interface: $crate::INTERFACE_VERSION,
            description: $desc,
            params: $params,
            module: &MODULE,
        }
    };
}

#[cfg(test)]
#[path = "adapter_tests.rs"]
mod tests;
