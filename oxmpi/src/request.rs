//! Immediate (non-blocking) operations: requests and their scopes.
//!
//! An immediate operation ([`immediate_send`](crate::traits::Destination::immediate_send),
//! [`immediate_receive_into`](crate::traits::Source::immediate_receive_into), ...)
//! lends its buffer to MPI until it completes, and returns a [`Request`]
//! that borrows the buffer for as long. As in rsmpi, requests live in a
//! *scope*:
//!
//! ```no_run
//! use oxmpi::traits::*;
//! let universe = oxmpi::initialize()?;
//! let world = universe.world();
//! let next = world.process_at_rank((world.rank() + 1) % world.size());
//! let out = [world.rank(); 4];
//! let mut inbox = [0i32; 4];
//! oxmpi::request::scope(|scope| -> Result<(), oxmpi::Error> {
//!     let send = next.immediate_send(scope, &out[..])?;
//!     let status = world.any_process().receive_into(&mut inbox[..])?;
//!     send.wait()?;
//!     println!("got {:?} from {}", inbox, status.source_rank());
//!     Ok(())
//! })?;
//! # Ok::<(), oxmpi::Error>(())
//! ```
//!
//! **Soundness.** The [`LocalScope`] keeps its own list of the requests
//! that MPI still holds. When [`scope`] returns — or unwinds — it waits for
//! every one of them that was not completed, so a buffer is never released
//! while MPI may still read or write it, even if a request was dropped or
//! `mem::forget`-ed (when unwinding from a panic, unmatched receives are
//! cancelled first). A buffer lent to an immediate operation must outlive
//! the scope, and a request cannot leave its scope.
//!
//! The compiler enforces both. A buffer that dies inside the scope cannot
//! be lent:
//!
//! ```compile_fail
//! use oxmpi::traits::*;
//! let universe = oxmpi::initialize().unwrap();
//! let world = universe.world();
//! oxmpi::request::scope(|scope| {
//!     let short_lived = vec![1u8; 8];
//!     let request = world.this_process().immediate_send(scope, &short_lived[..]).unwrap();
//!     std::mem::forget(request);
//! });
//! ```
//!
//! and a request cannot outlive its scope:
//!
//! ```compile_fail
//! use oxmpi::traits::*;
//! let universe = oxmpi::initialize().unwrap();
//! let world = universe.world();
//! let data = [1u8; 8];
//! let escaped = oxmpi::request::scope(|scope| {
//!     world.this_process().immediate_send(scope, &data[..]).unwrap()
//! });
//! ```
//!
//! Dropping a [`Request`] that has not completed does not wait: the scope
//! waits for it at its end (with [`StaticScope`], a dropped send is
//! detached and still completes; finalize waits for it).
//!
//! **Completion.** [`Request::wait`] blocks; [`Request::test`] checks once
//! (`Ok(None)` while pending; once it answered `Some` or an error, the
//! request is complete and later calls return the same outcome);
//! [`wait_all`] and [`wait_any`] handle several. A receive completes with
//! an error of class `Truncate` when the message is longer than the buffer
//! (the buffer holds its first bytes), and of class `Buffer` when it is not
//! a whole number of the buffer's elements.
//!
//! **Element types with padding.** An operation on a derived type with
//! padding works through staging bytes the request owns (the packed send
//! buffer, or the bytes a receive or collective writes), unpacked into
//! the receive buffer when the request completes. A request of such a
//! type dropped before it completed is handed to its scope, which waits
//! for it and unpacks at its end (a [`StaticScope`] request dropped
//! early keeps its staging bytes for ever: a dropped send still
//! completes, a dropped receive's data never reach the buffer).

use crate::datatype::stage::Staging;
use crate::datatype::{element_count_of, partial_element_error};
use crate::error::Error;
use crate::point_to_point::Status;
use crate::ErrorClass;
use oxmpi_mpi_core::{RequestId, Runtime};
use oxmpi_plugin_api::serial::{Reentered, Serialized};
use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

pub(crate) mod private {
    use oxmpi_mpi_core::{RequestId, Runtime};

    /// A request MPI still holds (only this crate can make one).
    pub struct Pending {
        pub(crate) id: RequestId,
    }

    /// Where a scope keeps a pending request (only this crate can make one).
    pub struct Slot(pub(crate) usize);

    /// The bookkeeping side of a scope.
    pub trait ScopeImpl {
        /// Records a pending request.
        fn register(&self, pending: Pending) -> Slot;
        /// Forgets a request MPI no longer holds.
        fn release(&self, slot: Slot);
        /// What to do with a dropped request that has not completed:
        /// `true` to detach it (sends only), `false` to leave it to the
        /// scope.
        fn detach_dropped(&self) -> bool;
        /// Takes a dropped request that has not completed and owns
        /// staging bytes MPI still uses (its slot already released).
        fn adopt(&self, runtime: &'static Runtime, id: RequestId, staged: Box<Staged>);
    }

    /// An operation on elements with padding: what it is, and the
    /// staging bytes it keeps until it completes.
    pub struct Staged {
        /// `Send`, `Collective` or `Receive` (never `Staged`).
        pub(crate) kind: super::Kind,
        pub(crate) staging: super::Staging,
        /// Whether the staging bytes were unpacked (once is enough).
        pub(crate) unpacked: std::sync::atomic::AtomicBool,
    }
}

use private::{Pending, ScopeImpl, Slot, Staged};

impl Staged {
    /// Checks and unpacks what a completed operation wrote: a receive's
    /// whole elements, a collective's whole staging buffer.
    fn complete(&self, status: Status) -> Result<Status, Error> {
        match self.kind {
            Kind::Receive {
                element_size,
                element_name,
            } => {
                if element_count_of(status.byte_count(), element_size).is_none() {
                    return Err(partial_element_error(
                        status.byte_count(),
                        element_name,
                        element_size,
                        status.source_rank(),
                        status.tag(),
                    ));
                }
                if self.unpacked.swap(true, Ordering::Relaxed) {
                    return Ok(status);
                }
                if let Some(unpack) = &self.staging.recv {
                    // SAFETY: the operation completed, so MPI no longer
                    // writes the staging bytes; the receive buffer is
                    // still borrowed by the request (or, adopted, by its
                    // scope, which ends before the borrow).
                    unsafe { unpack.finish(status.byte_count()) };
                }
            }
            Kind::Collective if !self.unpacked.swap(true, Ordering::Relaxed) => {
                // SAFETY: as above.
                unsafe { self.staging.finish_all() }
            }
            Kind::Collective => {}
            Kind::Send | Kind::Staged(_) => {}
        }
        Ok(status)
    }

    fn is_send(&self) -> bool {
        matches!(self.kind, Kind::Send)
    }
}

impl std::fmt::Debug for Staged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Staged").field("kind", &self.kind).finish()
    }
}

/// A scope that requests with buffers borrowed for `'a` belong to. Sealed:
/// the scopes are [`&LocalScope`](LocalScope) (from [`scope`]) and
/// [`StaticScope`] (for `'static` buffers).
pub trait Scope<'a>: ScopeImpl {}

/// Waits for a request until MPI releases it, for callers whose buffer
/// borrow ends when this returns: blocking operations and the end of a
/// scope. They run on the thread that started the request (or the scope's,
/// which is the same under `Single`/`Funneled`), so a `ThreadLevel`
/// refusal can only mean that another thread is inside MPI at the moment
/// (`Serialized` broken); it is retried. Any other outcome means MPI
/// released the request.
pub(crate) fn wait_released(
    runtime: &Runtime,
    id: RequestId,
) -> Result<oxmpi_mpi_core::Status, oxmpi_mpi_core::Error> {
    loop {
        match runtime.wait(id) {
            Err(e) if e.class == ErrorClass::ThreadLevel => std::thread::yield_now(),
            other => return other,
        }
    }
}

/// Whether an error from waiting or testing means MPI still holds the
/// request (the call was refused, not the request completed).
fn still_held(e: &oxmpi_mpi_core::Error) -> bool {
    e.class == ErrorClass::ThreadLevel
}

/// The requests a [`LocalScope`] waits for: a slab of pending ids.
#[derive(Default)]
pub(crate) struct Registry {
    slots: Vec<Option<RequestId>>,
    free: Vec<usize>,
    live: usize,
}

impl Registry {
    fn insert(&mut self, id: RequestId) -> usize {
        self.live += 1;
        match self.free.pop() {
            Some(i) => {
                self.slots[i] = Some(id);
                i
            }
            None => {
                self.slots.push(Some(id));
                self.slots.len() - 1
            }
        }
    }

    fn remove(&mut self, slot: usize) {
        if let Some(entry) = self.slots.get_mut(slot) {
            if entry.take().is_some() {
                self.live -= 1;
                self.free.push(slot);
            }
        }
    }

    /// The pending requests, oldest slot first, leaving the registry empty
    /// (its storage kept).
    fn drain(&mut self) -> Vec<RequestId> {
        self.free.clear();
        self.live = 0;
        self.slots.drain(..).flatten().collect()
    }

    /// Forgets every entry, keeping the storage.
    fn clear(&mut self) {
        self.slots.clear();
        self.free.clear();
        self.live = 0;
    }

    pub(crate) fn live(&self) -> usize {
        self.live
    }
}

/// How many requests a [`LocalScope`] keeps in atomic slots (more go to
/// its overflow registry).
const INLINE_SLOTS: usize = 4;

/// The bit of a slot number in a scope's shared registry.
const SHARED_SLOT: usize = 1 << (usize::BITS - 1);

thread_local! {
    /// The storage of an overflow registry whose scope ended on this
    /// thread, for the next scope that needs one: a program that keeps
    /// windows of requests in a scope per window allocates once, not per
    /// window.
    static SPARE_REGISTRY: RefCell<Option<Registry>> = const { RefCell::new(None) };
}

/// A registry for a scope's overflow: the spare one of this thread, or a
/// new one.
fn spare_registry() -> Registry {
    SPARE_REGISTRY
        .with(|spare| spare.borrow_mut().take())
        .unwrap_or_default()
}

/// A number no other live thread has: the address of a thread-local (in
/// the program's own TLS block, so reading it costs no call).
#[inline]
fn thread_mark() -> usize {
    thread_local! {
        static MARK: u8 = const { 0 };
    }
    MARK.with(|m| m as *const u8 as usize)
}

/// The scope [`scope`] passes to its closure; requests made with it are
/// waited for when the scope ends. `'a` is the lifetime buffers are
/// borrowed for (it outlives the call to [`scope`]).
///
/// The first [`INLINE_SLOTS`] pending requests made on the thread that
/// created the scope sit in atomic slots (a request id, or 0 for a free
/// slot: the pml never answers 0). Only that thread fills a free slot, and
/// only the request recorded in a slot empties it, so recording takes a
/// load and a store, forgetting one store, and no read-modify-write.
/// The creating thread's requests beyond the slots go to an overflow
/// registry entered through the owner-biased exclusion of
/// `oxmpi_plugin_api::serial`, biased to the creating thread (the first
/// to enter it): it enters with plain loads and stores, so a window of
/// many requests takes no lock either, and its storage is kept per thread
/// across scopes. Another thread that releases one of those requests
/// enters it the slow way (a process-wide fence, until the bias is given
/// up after 64 such entries). Requests made on other threads, and ids of
/// 0, go to a registry behind a mutex.
pub struct LocalScope<'a> {
    /// The creating thread ([`thread_mark`]).
    creator: usize,
    inline: [AtomicU64; INLINE_SLOTS],
    /// `None` until the first overflow.
    overflow: Serialized<Registry>,
    /// Whether the overflow registry was ever entered (when not, ending the
    /// scope need not enter it: its first entry takes a lock).
    overflowed: AtomicBool,
    /// Requests made on other threads (and ids of 0).
    shared: Mutex<Registry>,
    /// Dropped requests with staging bytes (types with padding), waited
    /// for and unpacked when the scope ends.
    adopted: Mutex<Vec<(RequestId, Box<Staged>)>>,
    // Invariant in 'a (a scope cannot be made to accept shorter borrows),
    // and Send + Sync.
    _buffers: PhantomData<fn(&'a ()) -> &'a ()>,
}

impl std::fmt::Debug for LocalScope<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalScope")
            .field("pending", &self.pending())
            .finish()
    }
}

impl LocalScope<'_> {
    fn new() -> Self {
        LocalScope {
            creator: thread_mark(),
            inline: [const { AtomicU64::new(0) }; INLINE_SLOTS],
            overflow: Serialized::new(),
            overflowed: AtomicBool::new(false),
            shared: Mutex::new(Registry::default()),
            adopted: Mutex::new(Vec::new()),
            _buffers: PhantomData,
        }
    }

    /// Runs `f` on the overflow registry (made on first use), waiting
    /// while another thread is inside it.
    fn with_overflow<R>(&self, mut f: impl FnMut(&mut Registry) -> R) -> R {
        self.overflowed.store(true, Ordering::Relaxed);
        self.enter_overflow(|slot| f(slot.get_or_insert_with(spare_registry)))
    }

    /// Runs `f` on the overflow registry's slot, waiting while another
    /// thread is inside (registry updates are short).
    fn enter_overflow<R>(&self, mut f: impl FnMut(&mut Option<Registry>) -> R) -> R {
        loop {
            match self.overflow.enter(&mut f) {
                Ok(r) => return r,
                Err(Reentered) => std::thread::yield_now(),
            }
        }
    }

    fn shared(&self) -> MutexGuard<'_, Registry> {
        // Registry updates cannot leave it inconsistent, so a poisoned
        // lock is reused.
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Requests in the overflow registry (0 when it was never used).
    fn overflow_live(&self) -> usize {
        if !self.overflowed.load(Ordering::Relaxed) {
            return 0;
        }
        self.enter_overflow(|slot| slot.as_ref().map_or(0, Registry::live))
    }

    /// Gives the overflow registry's storage back to this thread's spare
    /// (the scope ends).
    fn keep_registry(&mut self) {
        if !*self.overflowed.get_mut() {
            return;
        }
        let mut taken = None;
        let _ = self.overflow.enter(|slot| taken = slot.take());
        if let Some(mut registry) = taken {
            registry.clear();
            let _ = SPARE_REGISTRY.try_with(|spare| {
                let mut spare = spare.borrow_mut();
                if spare.is_none() {
                    *spare = Some(registry);
                }
            });
        }
    }

    /// Records `id`; the slot number to release it with.
    fn record(&self, id: RequestId) -> usize {
        if id.handle() == 0 || thread_mark() != self.creator {
            return SHARED_SLOT | self.shared().insert(id);
        }
        for (i, slot) in self.inline.iter().enumerate() {
            // Only this thread (the creator) fills a free slot, so a slot
            // seen free stays free until the store below. Acquire: a slot
            // emptied on another thread is reused only after that release.
            if slot.load(Ordering::Acquire) == 0 {
                slot.store(id.handle(), Ordering::Release);
                return i;
            }
        }
        INLINE_SLOTS + self.with_overflow(|r| r.insert(id))
    }

    /// Forgets the request recorded in `slot`.
    fn forget(&self, slot: usize) {
        match self.inline.get(slot) {
            // Only the request that owns the slot releases it, so a store
            // is enough (Release: pairs with `record`'s acquire).
            Some(s) => s.store(0, Ordering::Release),
            None if slot & SHARED_SLOT != 0 => self.shared().remove(slot & !SHARED_SLOT),
            None => self.with_overflow(|r| r.remove(slot - INLINE_SLOTS)),
        }
    }

    /// The pending requests, inline slots first, leaving the scope empty.
    fn drain(&mut self) -> Vec<RequestId> {
        let mut ids: Vec<RequestId> = self
            .inline
            .iter_mut()
            .map(|s| std::mem::take(s.get_mut()))
            .filter(|&id| id != 0)
            .map(RequestId::pending)
            .collect();
        if self.overflow_live() > 0 {
            ids.extend(self.with_overflow(Registry::drain));
        }
        // Exclusive access: no locking.
        let shared = self.shared.get_mut().unwrap_or_else(|e| e.into_inner());
        if shared.live() > 0 {
            ids.extend(shared.drain());
        }
        ids
    }

    /// The number of requests of this scope that MPI still holds.
    pub fn pending(&self) -> usize {
        let inline = self
            .inline
            .iter()
            .filter(|s| s.load(Ordering::Acquire) != 0)
            .count();
        let adopted = self.adopted.lock().unwrap_or_else(|e| e.into_inner()).len();
        inline + self.overflow_live() + self.shared().live() + adopted
    }

    /// Waits for the adopted requests and unpacks what they received.
    fn finish_adopted(&mut self) {
        let adopted = std::mem::take(self.adopted.get_mut().unwrap_or_else(|e| e.into_inner()));
        // No runtime after finalize, which released every request.
        let Some(runtime) = oxmpi_mpi_core::runtime() else {
            return;
        };
        for (id, staged) in adopted {
            if std::thread::panicking() && !staged.is_send() {
                let _ = runtime.cancel(id);
            }
            if let Ok(status) = wait_released(runtime, id) {
                // The outcome is nobody's any more; the data are the
                // buffer's.
                let _ = staged.complete(Status::from(status));
            }
        }
    }
}

impl Drop for LocalScope<'_> {
    fn drop(&mut self) {
        if !self
            .adopted
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
        {
            self.finish_adopted();
        }
        // Usually every request completed: nothing to collect.
        let shared = self.shared.get_mut().unwrap_or_else(|e| e.into_inner());
        if shared.live() == 0
            && self.overflow_live() == 0
            && self.inline.iter_mut().all(|s| *s.get_mut() == 0)
        {
            self.keep_registry();
            return;
        }
        let ids = self.drain();
        self.keep_registry();
        if ids.is_empty() {
            return;
        }
        // The process's one runtime; none after finalize, which has
        // released every request (nothing to wait for then).
        let Some(runtime) = oxmpi_mpi_core::runtime() else {
            return;
        };
        if std::thread::panicking() {
            // Receives nobody will match must not hold up the unwinding.
            for &id in &ids {
                let _ = runtime.cancel(id);
            }
        }
        for id in ids {
            // The outcome is nobody's any more; only the release matters.
            let _ = wait_released(runtime, id);
        }
    }
}

impl ScopeImpl for &LocalScope<'_> {
    #[inline]
    fn register(&self, pending: Pending) -> Slot {
        Slot(self.record(pending.id))
    }

    #[inline]
    fn release(&self, slot: Slot) {
        self.forget(slot.0);
    }

    fn detach_dropped(&self) -> bool {
        false
    }

    fn adopt(&self, _runtime: &'static Runtime, id: RequestId, staged: Box<Staged>) {
        self.adopted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((id, staged));
    }
}

impl<'a> Scope<'a> for &LocalScope<'a> {}

/// The scope of requests whose buffers are `'static`: nothing waits for
/// them; a dropped send is detached (it completes on its own, and finalize
/// waits for it) and a dropped receive keeps its buffer for ever.
#[derive(Copy, Clone, Debug, Default)]
pub struct StaticScope;

impl ScopeImpl for StaticScope {
    fn register(&self, _pending: Pending) -> Slot {
        Slot(usize::MAX)
    }

    fn release(&self, _slot: Slot) {}

    fn detach_dropped(&self) -> bool {
        true
    }

    fn adopt(&self, runtime: &'static Runtime, id: RequestId, staged: Box<Staged>) {
        if staged.is_send() {
            runtime.free(id);
        }
        // MPI may use the staging bytes until the program ends (a
        // detached send until it completes, a receive for ever): they are
        // never freed.
        std::mem::forget(staged);
    }
}

impl Scope<'static> for StaticScope {}

/// Runs `f` with a fresh [`LocalScope`] and returns what it returns; then
/// waits for every request of the scope that has not completed (see the
/// module documentation).
pub fn scope<'a, F, R>(f: F) -> R
where
    F: FnOnce(&LocalScope<'a>) -> R,
{
    let scope = LocalScope::new();
    f(&scope)
}

/// What a request does, for the checks at completion.
#[derive(Debug)]
pub(crate) enum Kind {
    Send,
    /// A non-blocking collective.
    Collective,
    Receive {
        element_size: usize,
        element_name: &'static str,
    },
    /// One of the others on elements with padding, with its staging.
    Staged(Box<Staged>),
}

impl Kind {
    /// `kind` with `staging`, boxed when something is staged.
    #[inline(always)]
    pub(crate) fn staged(kind: Kind, staging: Staging) -> Kind {
        if staging.is_empty() {
            kind
        } else {
            Kind::Staged(Box::new(Staged {
                kind,
                staging,
                unpacked: AtomicBool::new(false),
            }))
        }
    }

    fn is_send(&self) -> bool {
        match self {
            Kind::Send => true,
            Kind::Staged(s) => s.is_send(),
            _ => false,
        }
    }
}

/// An immediate operation in progress; it borrows its buffer for `'a` and
/// belongs to the scope `S`. See the [module documentation](self).
#[must_use = "a request must be completed (wait or test); otherwise its scope waits for it"]
pub struct Request<'a, S: Scope<'a>> {
    runtime: &'static Runtime,
    id: RequestId,
    scope: S,
    /// Some while MPI holds the request.
    slot: Option<Slot>,
    kind: Kind,
    /// The outcome, once complete.
    outcome: Option<Result<Status, Error>>,
    _buffer: PhantomData<&'a mut [u8]>,
}

impl<'a, S: Scope<'a>> std::fmt::Debug for Request<'a, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("id", &self.id.handle())
            .field("kind", &self.kind)
            .field("outcome", &self.outcome)
            .finish()
    }
}

impl<'a, S: Scope<'a>> Request<'a, S> {
    /// Wraps a request MPI just accepted and records it in its scope (one
    /// that completed as it started is not recorded: MPI holds nothing).
    pub(crate) fn new(runtime: &'static Runtime, id: RequestId, scope: S, kind: Kind) -> Self {
        let slot = match id.outcome() {
            Some(_) => None,
            None => Some(scope.register(Pending { id })),
        };
        Request {
            runtime,
            id,
            scope,
            slot,
            kind,
            outcome: None,
            _buffer: PhantomData,
        }
    }

    /// Records what MPI answered for a request it has released.
    fn complete(
        &mut self,
        result: Result<oxmpi_mpi_core::Status, oxmpi_mpi_core::Error>,
    ) -> Result<Status, Error> {
        let outcome = self.finish(result);
        self.outcome = Some(outcome.clone());
        outcome
    }

    /// Releases the scope's record of a request MPI has released and
    /// turns MPI's answer into the outcome (without keeping it: for
    /// callers that consume the request).
    #[inline]
    fn finish(
        &mut self,
        result: Result<oxmpi_mpi_core::Status, oxmpi_mpi_core::Error>,
    ) -> Result<Status, Error> {
        if let Some(slot) = self.slot.take() {
            self.scope.release(slot);
        }
        match result {
            Ok(status) => self.checked(Status::from(status)),
            Err(e) => Err(Error::from(e)),
        }
    }

    /// The outcome of a request that completed with `status`: a receive
    /// of a partial element is an error.
    #[inline]
    fn checked(&self, status: Status) -> Result<Status, Error> {
        match &self.kind {
            &Kind::Receive {
                element_size,
                element_name,
            } if element_count_of(status.byte_count(), element_size).is_none() => {
                Err(partial_element_error(
                    status.byte_count(),
                    element_name,
                    element_size,
                    status.source_rank(),
                    status.tag(),
                ))
            }
            Kind::Staged(staged) => staged.complete(status),
            _ => Ok(status),
        }
    }

    /// Blocks until the operation completes and returns its status (for a
    /// send: source 0, tag 0, count 0).
    ///
    /// # Errors
    /// The operation's error: `Truncate` (the message was longer than the
    /// buffer, which holds its first bytes), `Buffer` (not a whole number of
    /// elements), `ProcFailed` (the peer died), `Finalized`, ...; and
    /// `ThreadLevel` if this thread may not call MPI now (the request is
    /// then still pending, and its scope waits for it).
    pub fn wait(mut self) -> Result<Status, Error> {
        if self.outcome.is_none() {
            // Completed as it started (the common case of small messages):
            // MPI holds nothing, and the outcome is in the id.
            if let Some(status) = self.id.outcome() {
                return self.checked(Status::from(status));
            }
        } else if let Some(outcome) = self.outcome.take() {
            return outcome;
        }
        match self.runtime.wait(self.id) {
            // Refused (another thread's turn): MPI still holds the request,
            // and its scope waits for it.
            Err(e) if still_held(&e) => Err(e.into()),
            // The request is consumed: the outcome is returned, not kept.
            result => self.finish(result),
        }
    }

    /// Checks once whether the operation has completed (making progress):
    /// `Ok(None)` while it is pending, `Ok(Some(status))` once it is
    /// complete. After it answered `Some` or an error, the request is
    /// complete; further calls (and [`wait`](Request::wait)) return the
    /// same outcome.
    ///
    /// # Errors
    /// As [`wait`](Request::wait); and `ThreadLevel` if the call broke the
    /// thread level's rules (the request is then still pending).
    pub fn test(&mut self) -> Result<Option<Status>, Error> {
        if let Some(outcome) = &self.outcome {
            return outcome.clone().map(Some);
        }
        match self.runtime.test(self.id) {
            None => Ok(None),
            Some(Err(e)) if still_held(&e) => Err(e.into()),
            Some(result) => self.complete(result).map(Some),
        }
    }

    /// Whether the operation is known to be complete (a
    /// [`test`](Request::test) said so). Makes no progress.
    pub fn is_complete(&self) -> bool {
        self.outcome.is_some()
    }

    /// Asks MPI to cancel a receive that has not matched a message yet:
    /// `Ok(true)` if it is cancelled (complete it with `wait` or `test`;
    /// its status then says [`is_cancelled`](Status::is_cancelled)).
    /// `Ok(false)` if it is too late, if the request is a send (sends
    /// cannot be cancelled) or already complete.
    ///
    /// # Errors
    /// `Finalized`, `ThreadLevel`.
    pub fn cancel(&self) -> Result<bool, Error> {
        if self.outcome.is_some() || self.kind.is_send() {
            return Ok(false);
        }
        Ok(self.runtime.cancel(self.id)?)
    }
}

impl<'a, S: Scope<'a>> Drop for Request<'a, S> {
    fn drop(&mut self) {
        if self.slot.is_some() && self.scope.detach_dropped() && matches!(self.kind, Kind::Send) {
            self.runtime.free(self.id);
        }
        if let Kind::Staged(staged) = &self.kind {
            match self.slot.take() {
                // MPI still uses the staging bytes: the scope keeps them.
                Some(slot) => {
                    if let Kind::Staged(staged) = std::mem::replace(&mut self.kind, Kind::Send) {
                        self.scope.release(slot);
                        self.scope.adopt(self.runtime, self.id, staged);
                    }
                }
                // Completed as it started and dropped unread: its data
                // still go to the buffer (unpacked once).
                None => {
                    if let Some(status) = self.id.outcome() {
                        let _ = staged.complete(Status::from(status));
                    }
                }
            }
        }
        // Otherwise the scope waits for it (or, for a dropped receive of a
        // StaticScope, its 'static buffer stays lent for ever).
    }
}

/// Waits for every request, in order, and returns their statuses.
///
/// # Errors
/// The first error, after every request has been waited for; its message
/// names the request's position (`request 2 of 5: ...`).
pub fn wait_all<'a, S: Scope<'a>>(requests: Vec<Request<'a, S>>) -> Result<Vec<Status>, Error> {
    let n = requests.len();
    let mut statuses = Vec::with_capacity(n);
    let mut first_error = None;
    for (i, request) in requests.into_iter().enumerate() {
        match request.wait() {
            Ok(status) => statuses.push(status),
            Err(e) => {
                if first_error.is_none() {
                    first_error = Some(e.context(format_args!("request {i} of {n}")));
                }
                statuses.push(Status::default());
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(statuses),
    }
}

/// Waits until one of `requests` completes, removes it from the vector
/// (`Vec::remove`: the requests after it move down by one) and returns its
/// former index and status. A request a [`test`](Request::test) already
/// found complete is returned first.
///
/// # Errors
/// Class `Request` if the vector is empty; `ThreadLevel` or `Finalized` if
/// the call is refused (nothing is removed); otherwise the completed
/// request's error (it is removed as well), with its index in the message.
pub fn wait_any<'a, S: Scope<'a>>(
    requests: &mut Vec<Request<'a, S>>,
) -> Result<(usize, Status), Error> {
    if requests.is_empty() {
        return Err(Error::new(
            ErrorClass::Request,
            "wait_any was given no requests; pass at least one",
        ));
    }
    let index = match requests.iter().position(Request::is_complete) {
        Some(i) => i,
        None => {
            let ids: Vec<RequestId> = requests.iter().map(|r| r.id).collect();
            let runtime = requests[0].runtime;
            let (i, result) = runtime.wait_any(&ids)?;
            // MPI released request i: record its outcome.
            let _ = requests[i].complete(result);
            i
        }
    };
    let request = requests.remove(index);
    request
        .wait()
        .map(|status| (index, status))
        .map_err(|e| e.context(format_args!("request {index}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_reuses_slots_and_counts_live_requests() {
        let mut r = Registry::default();
        let a = r.insert(RequestId::pending(10));
        let b = r.insert(RequestId::pending(11));
        let c = r.insert(RequestId::pending(12));
        assert_eq!((a, b, c), (0, 1, 2));
        assert_eq!(r.live(), 3);
        r.remove(b);
        assert_eq!(r.live(), 2);
        r.remove(b);
        assert_eq!(r.live(), 2, "a second release of a slot changes nothing");
        let d = r.insert(RequestId::pending(13));
        assert_eq!(d, 1, "the freed slot is reused");
        assert_eq!(r.slots.len(), 3, "no growth while slots are free");
        assert_eq!(
            r.drain(),
            vec![
                RequestId::pending(10),
                RequestId::pending(13),
                RequestId::pending(12)
            ]
        );
        assert_eq!(r.live(), 0);
        assert!(r.drain().is_empty());
    }

    #[test]
    fn forgotten_slots_stay_pending_until_the_scope_ends() {
        // A request that is never released (mem::forget of a Request)
        // keeps its slot, which the scope's drop waits for.
        let mut scope = LocalScope::new();
        let _forgotten = scope.record(RequestId::pending(1));
        let released = scope.record(RequestId::pending(2));
        scope.forget(released);
        assert_eq!(scope.pending(), 1);
        assert_eq!(scope.drain(), vec![RequestId::pending(1)]);
        assert_eq!(scope.pending(), 0);
        // Nothing pending, so dropping waits for nothing.
        drop(scope);
    }

    #[test]
    fn inline_slots_overflow_into_the_registry_and_are_reused() {
        let mut scope = LocalScope::new();
        let slots: Vec<usize> = (1..=6)
            .map(|i| scope.record(RequestId::pending(i)))
            .collect();
        assert_eq!(slots, vec![0, 1, 2, 3, INLINE_SLOTS, INLINE_SLOTS + 1]);
        // Id 0 (never a pml handle) still gets recorded, in the shared
        // registry.
        let zero = scope.record(RequestId::pending(0));
        assert_eq!(zero, SHARED_SLOT);
        assert_eq!(scope.pending(), 7);
        scope.forget(1);
        scope.forget(INLINE_SLOTS);
        assert_eq!(scope.pending(), 5);
        assert_eq!(
            scope.record(RequestId::pending(7)),
            1,
            "a freed inline slot is reused"
        );
        assert_eq!(
            scope.drain(),
            vec![
                RequestId::pending(1),
                RequestId::pending(7),
                RequestId::pending(3),
                RequestId::pending(4),
                RequestId::pending(6),
                RequestId::pending(0)
            ]
        );
        assert_eq!(scope.pending(), 0);
    }

    #[test]
    fn the_overflow_storage_is_kept_for_the_next_scope_of_the_thread() {
        let spare_capacity =
            || SPARE_REGISTRY.with(|s| s.borrow().as_ref().map(|r| r.slots.capacity()));
        for round in 0..3 {
            let scope = LocalScope::new();
            let slots: Vec<usize> = (1..=40)
                .map(|i| scope.record(RequestId::pending(i)))
                .collect();
            assert_eq!(scope.pending(), 40, "round {round}");
            assert_eq!(spare_capacity(), None, "in use by the scope");
            for slot in slots {
                scope.forget(slot);
            }
            assert_eq!(scope.pending(), 0);
            drop(scope);
            let kept = spare_capacity().expect("given back when the scope ends");
            assert!(kept >= 36, "round {round}: capacity {kept}");
        }
    }

    #[test]
    fn the_creators_overflow_can_be_released_on_another_thread() {
        let mut scope = LocalScope::new();
        let slots: Vec<usize> = (1..=8)
            .map(|i| scope.record(RequestId::pending(i)))
            .collect();
        assert_eq!(slots[INLINE_SLOTS..], [4, 5, 6, 7]);
        std::thread::scope(|t| {
            t.spawn(|| {
                scope.forget(slots[5]);
                scope.forget(slots[6]);
            })
            .join()
            .unwrap()
        });
        assert_eq!(scope.pending(), 6);
        assert_eq!(
            scope.record(RequestId::pending(9)),
            6,
            "a freed slot is reused"
        );
        assert_eq!(
            scope.drain(),
            [1, 2, 3, 4, 5, 9, 8].map(RequestId::pending).to_vec()
        );
    }

    #[test]
    fn requests_of_other_threads_go_to_the_shared_registry() {
        let mut scope = LocalScope::new();
        let here = scope.record(RequestId::pending(1));
        let there = std::thread::scope(|t| {
            t.spawn(|| scope.record(RequestId::pending(2)))
                .join()
                .unwrap()
        });
        assert_eq!(here, 0);
        assert_eq!(there, SHARED_SLOT);
        // Released on another thread, an inline slot is free again here.
        std::thread::scope(|t| t.spawn(|| scope.forget(here)).join().unwrap());
        assert_eq!(scope.record(RequestId::pending(3)), 0);
        assert_eq!(
            scope.drain(),
            vec![RequestId::pending(3), RequestId::pending(2)]
        );
    }

    #[test]
    fn concurrent_records_never_share_a_slot() {
        // The creating thread (inline slots) and three others (the
        // registry) at once; the creator's slots are emptied on another
        // thread too.
        let mut scope = LocalScope::new();
        let work = |scope: &LocalScope<'_>, k: u64| {
            for i in 0..2_000u64 {
                let id = RequestId::pending(1 + k * 10_000 + i);
                let slot = scope.record(id);
                if i % 3 != 0 {
                    scope.forget(slot);
                }
            }
        };
        std::thread::scope(|t| {
            let (tx, rx) = std::sync::mpsc::channel::<usize>();
            let scope = &scope;
            for k in 0..3u64 {
                t.spawn(move || work(scope, k));
            }
            t.spawn(move || {
                for slot in rx {
                    scope.forget(slot);
                }
            });
            work(scope, 3);
            // Requests recorded here and released by another thread.
            for i in 0..2_000u64 {
                let slot = scope.record(RequestId::pending(40_000 + i));
                tx.send(slot).unwrap();
            }
        });
        // Every third id of each thread was kept, each exactly once.
        let mut kept = scope.drain();
        kept.sort_by_key(|id| id.handle());
        let want: Vec<RequestId> = (0..4u64)
            .flat_map(|k| {
                (0..2_000u64)
                    .filter(|i| i % 3 == 0)
                    .map(move |i| RequestId::pending(1 + k * 10_000 + i))
            })
            .collect();
        assert_eq!(kept, want);
    }

    #[test]
    fn scope_returns_the_closures_value() {
        let x = scope(|s| {
            assert_eq!(s.pending(), 0);
            41 + 1
        });
        assert_eq!(x, 42);
    }

    #[test]
    fn static_scope_keeps_no_books() {
        let s = StaticScope;
        assert!(s.detach_dropped());
        assert!(!(&LocalScope::new()).detach_dropped());
    }

    #[test]
    fn waiting_on_nothing_is_an_error_with_a_reason() {
        let mut none: Vec<Request<'static, StaticScope>> = Vec::new();
        let e = wait_any(&mut none).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Request);
        assert_eq!(
            e.to_string(),
            "wait_any was given no requests; pass at least one"
        );
        assert_eq!(wait_all(none).unwrap(), Vec::<Status>::new());
    }
}
