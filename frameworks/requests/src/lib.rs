//! The point-to-point request interface of the pml framework, in a crate
//! of its own so that another framework's interface can serve the same
//! requests without depending on the pml's: what starts a send or a
//! receive ([`SendArgs`], [`RecvArgs`]),
//! what a completed request reports ([`RequestStatus`]), where its
//! completion is published ([`Completion`]), the words a component keeps
//! current for the wait loop ([`Signals`]), and what the MPI layer offers
//! ([`MpiServices`]: the modex and the progress engine; [`services`] has
//! both sides of it). The request entry points themselves are written once
//! here too: the table ([`table::RequestTable`], inside a framework's
//! module table), the component's side ([`serve::Requests`], generated
//! into the table by [`serve::request_table`]) and the caller's
//! ([`handle::RequestHandle`]).
//!
//! Below, "the pml" stands for whichever component serves the requests.
//! The pml framework re-exports all of it under its earlier names
//! (`PmlCore` for [`MpiServices`], `PmlSignals` for [`Signals`]).

// The workspace lints, written in the crate: component authors build this
// crate outside the workspace (docs/writing-a-component.md).
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs, rust_2018_idioms)]

use abi_stable::std_types::{RSlice, RStr, RString, RVec};
use abi_stable::StableAbi;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicU8, Ordering};

/// A component's sentence, or `otherwise` when it wrote none.
pub fn sentence_or(text: RString, otherwise: &str) -> String {
    if text.is_empty() {
        otherwise.to_string()
    } else {
        text.into_string()
    }
}

#[doc(hidden)]
pub use oxmpi_plugin_api as __plugin_api;

pub mod handle;
pub mod serve;
pub mod services;
pub mod table;

/// The source of a receive that accepts every sender (`MPI_ANY_SOURCE`).
pub const ANY_SOURCE: i32 = -1;
/// The tag of a receive that accepts every tag ≥ 0 (`MPI_ANY_TAG`).
pub const ANY_TAG: i32 = -1;

/// How a send completes.
#[repr(u8)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq)]
pub enum SendMode {
    /// `MPI_Send`: complete when the buffer may be reused.
    Standard = 0,
    /// `MPI_Ssend`: complete only once the receiver has matched it.
    Synchronous = 1,
}

/// Why a request completed in error.
#[repr(u8)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum RequestError {
    /// No error.
    #[default]
    None = 0,
    /// The message was longer than the receive buffer (`MPI_ERR_TRUNCATE`);
    /// the buffer holds its first bytes.
    Truncated = 1,
    /// The peer failed or its connection broke (`MPI_ERR_PROC_FAILED`).
    PeerFailed = 2,
    /// Another failure; see `request_error`.
    Other = 3,
    /// No btl reaches the peer (only from `isend`).
    Unreachable = 4,
}

/// The outcome of a completed request (an `MPI_Status`).
#[repr(C)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct RequestStatus {
    /// Job rank of the sender (receives and probes).
    pub source: i32,
    /// Tag of the message (receives and probes).
    pub tag: i32,
    /// Bytes received (receives), or the message's length (probes).
    pub count: usize,
    /// Whether the request was cancelled.
    pub cancelled: bool,
    /// Error, if any.
    pub error: RequestError,
}

/// A send to start.
#[repr(C)]
#[derive(StableAbi, Copy, Clone, Debug)]
pub struct SendArgs {
    /// The message (valid until the request completes).
    pub buf: *const u8,
    /// Its length in bytes.
    pub len: usize,
    /// Job rank of the receiver.
    pub dest: u32,
    /// Tag (≥ 0 for applications; negative tags are internal).
    pub tag: i32,
    /// Context id of the communicator.
    pub context: u32,
    /// Completion mode.
    pub mode: SendMode,
    /// Where to publish the request's completion, or null (then the
    /// caller tests or takes it); see [`Completion`].
    pub done: *const Completion,
}

/// A receive to post.
#[repr(C)]
#[derive(StableAbi, Copy, Clone, Debug)]
pub struct RecvArgs {
    /// Where the message goes (valid until the request completes).
    pub buf: *mut u8,
    /// Capacity in bytes.
    pub len: usize,
    /// Job rank of the sender, or [`ANY_SOURCE`].
    pub source: i32,
    /// Tag, or [`ANY_TAG`].
    pub tag: i32,
    /// Context id of the communicator.
    pub context: u32,
    /// Where to publish the request's completion, or null (then the
    /// caller tests or takes it); see [`Completion`].
    pub done: *const Completion,
}

/// A message that lies in pieces in the user's memory (elements of a
/// non-contiguous MPI datatype), for a component that moves it without a
/// packed copy ([`table::RequestTable::isend_pieces`],
/// [`table::RequestTable::irecv_pieces`]): the component asks for the
/// packed bytes a window at a time, and hands received windows back.
///
/// The packed form is the elements' data bytes in type-map order; its
/// length is the arguments' `len`. The component copies this description
/// during the call that starts the request; `layout` and the user's
/// elements stay valid until the request completes.
#[repr(C)]
#[derive(StableAbi, Copy, Clone, Debug)]
pub struct Pieces {
    /// The MPI layer's description of the elements (opaque to the
    /// component; passed back to `pack` and `unpack`).
    pub layout: *const c_void,
    /// The first element (the datatype's origin in the user's buffer).
    pub origin: *mut u8,
    /// Elements.
    pub count: usize,
    /// Copies packed bytes `skip .. skip + len` into `out` (fewer when the
    /// data end first) and answers how many it wrote.
    pub pack: unsafe extern "C" fn(
        layout: *const c_void,
        origin: *const u8,
        count: usize,
        skip: usize,
        out: *mut u8,
        len: usize,
    ) -> usize,
    /// Places `len` bytes at `data`, packed bytes `skip ..`, into the
    /// elements (fewer when the elements end first) and answers how many
    /// it used.
    pub unpack: unsafe extern "C" fn(
        layout: *const c_void,
        origin: *mut u8,
        count: usize,
        skip: usize,
        data: *const u8,
        len: usize,
    ) -> usize,
}

impl Pieces {
    /// Copies packed bytes `skip .. skip + out.len()` into `out` and
    /// answers how many it wrote.
    ///
    /// # Safety
    ///
    /// The description is live (its request has not completed) and `out`
    /// is writable for its length.
    #[inline]
    pub unsafe fn pack_into(&self, skip: usize, out: *mut u8, len: usize) -> usize {
        // SAFETY: the caller's promise and the description's.
        unsafe { (self.pack)(self.layout, self.origin, self.count, skip, out, len) }
    }

    /// Places `len` bytes at `data`, packed bytes `skip ..`, into the
    /// elements and answers how many it used.
    ///
    /// # Safety
    ///
    /// The description is live (its request has not completed) and `data`
    /// is readable for `len` bytes.
    #[inline]
    pub unsafe fn unpack_from(&self, skip: usize, data: *const u8, len: usize) -> usize {
        // SAFETY: the caller's promise and the description's.
        unsafe { (self.unpack)(self.layout, self.origin, self.count, skip, data, len) }
    }
}

/// Where a pml publishes the completion of a request started with it
/// ([`SendArgs::done`], [`RecvArgs::done`]), so its caller learns of it
/// with a load instead of a call.
///
/// The MPI layer owns the slot: it [`arm`](Completion::arm)s it before
/// starting the operation and keeps it in place until it reads a
/// completion (or until it `free`d the request). The
/// pml writes it only inside its entry points, and the MPI layer reads it
/// under the same lock, so relaxed order suffices.
///
/// - A request that completes **without error** (cancelled receives
///   included) is released by the pml as it completes, as
///   `take` would, and its status
///   [`publish`](Completion::publish)ed: the handle is stale from then on.
/// - A request that completes **in error** is kept, as always, and
///   marked [`failed`](Completion::fail): the caller asks
///   `request_error` and frees it.
/// - After `free` of a running request the pml never
///   writes its slot again.
/// - An operation that completes during the call that starts it (handle
///   0) leaves its slot untouched.
#[repr(C)]
#[derive(StableAbi, Debug)]
pub struct Completion {
    /// [`Completion::RUNNING`], [`Completion::RELEASED`] or
    /// [`Completion::FAILED`].
    state: AtomicU8,
    /// Whether the request was cancelled (1) or not (0).
    cancelled: AtomicU8,
    /// The status's `source`.
    source: AtomicI32,
    /// The status's `tag`.
    tag: AtomicI32,
    /// The status's `count`.
    count: AtomicU64,
}

/// What a [`Completion`] says.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Completed {
    /// Still running.
    Running,
    /// Completed without error and released, with this status.
    Released(RequestStatus),
    /// Completed in error; the request is kept for `request_error`.
    Failed,
}

impl Completion {
    /// Not completed.
    const RUNNING: u8 = 0;
    /// Completed without error; status published, request released.
    const RELEASED: u8 = 1;
    /// Completed in error; request kept.
    const FAILED: u8 = 2;

    /// A slot that says "running".
    pub const fn new() -> Self {
        Completion {
            state: AtomicU8::new(Self::RUNNING),
            cancelled: AtomicU8::new(0),
            source: AtomicI32::new(0),
            tag: AtomicI32::new(0),
            count: AtomicU64::new(0),
        }
    }

    /// The MPI layer: the slot says "running" again, for a new request.
    #[inline]
    pub fn arm(&self) {
        self.state.store(Self::RUNNING, Ordering::Relaxed);
    }

    /// The pml: the request completed without error with `status` and is
    /// released.
    #[inline]
    pub fn publish(&self, status: &RequestStatus) {
        self.source.store(status.source, Ordering::Relaxed);
        self.tag.store(status.tag, Ordering::Relaxed);
        self.count.store(status.count as u64, Ordering::Relaxed);
        self.cancelled
            .store(u8::from(status.cancelled), Ordering::Relaxed);
        self.state.store(Self::RELEASED, Ordering::Relaxed);
    }

    /// The pml: the request completed in error and is kept.
    #[inline]
    pub fn fail(&self) {
        self.state.store(Self::FAILED, Ordering::Relaxed);
    }

    /// What the slot says.
    #[inline]
    pub fn read(&self) -> Completed {
        match self.state.load(Ordering::Relaxed) {
            Self::RUNNING => Completed::Running,
            Self::RELEASED => Completed::Released(RequestStatus {
                source: self.source.load(Ordering::Relaxed),
                tag: self.tag.load(Ordering::Relaxed),
                count: self.count.load(Ordering::Relaxed) as usize,
                cancelled: self.cancelled.load(Ordering::Relaxed) != 0,
                error: RequestError::None,
            }),
            _ => Completed::Failed,
        }
    }

    /// Whether the slot says "running".
    #[inline]
    pub fn is_running(&self) -> bool {
        self.state.load(Ordering::Relaxed) == Self::RUNNING
    }
}

impl Default for Completion {
    fn default() -> Self {
        Self::new()
    }
}

/// Publishes through `done`, if not null, that a request completed with
/// `status` (released when error-free, see [`Completion`]); answers
/// whether the pml is to release the request now (it completed without
/// error and was published).
///
/// # Safety
///
/// `done` is null or the slot its request was started with, which the
/// caller has not freed (the [`Completion`] contract keeps it valid).
#[inline]
pub unsafe fn publish_completion(done: *const Completion, status: &RequestStatus) -> bool {
    if done.is_null() {
        return false;
    }
    // SAFETY: the caller's promise.
    let slot = unsafe { &*done };
    if status.error == RequestError::None {
        slot.publish(status);
        true
    } else {
        slot.fail();
        false
    }
}

/// What the requests a component serves can carry: the range of tags
/// and of context ids. A transport with fewer bits than MPI's integers (a
/// tag-matching network's tag layout) says so in its `init`; the MPI
/// layer then refuses the tags and communicators beyond it.
#[repr(C)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The largest tag (`MPI_TAG_UB`). Internal (negative) tags go down to
    /// `-max_tag - 1`.
    pub max_tag: i32,
    /// The largest context id.
    pub max_context: u32,
}

impl Limits {
    /// No limit beyond the integers' own: every `i32` tag, every `u32`
    /// context id.
    pub const UNLIMITED: Limits = Limits {
        max_tag: i32::MAX,
        max_context: u32::MAX,
    };

    /// The smallest tag (internal tags go down to it).
    pub const fn min_tag(&self) -> i32 {
        -self.max_tag - 1
    }

    /// The tighter of two limits, field by field (a pml over a transport
    /// with its own limits).
    pub fn min(self, other: Limits) -> Limits {
        Limits {
            max_tag: self.max_tag.min(other.max_tag),
            max_context: self.max_context.min(other.max_context),
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self::UNLIMITED
    }
}

/// Answer of [`MpiServices::modex_get`].
#[repr(u8)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq)]
pub enum ModexLookup {
    /// The card was found.
    Found = 0,
    /// The peer published no card under that name.
    Missing = 1,
    /// The lookup failed (the error says why).
    Failed = 2,
}

/// What the MPI layer offers the component that serves requests: the
/// modex and the progress engine.
#[repr(C)]
#[derive(StableAbi, Copy, Clone)]
pub struct MpiServices {
    /// Opaque pointer passed back to every function.
    pub ctx: *mut c_void,
    /// Publishes this process's card under `name` (before the fence).
    /// Returns false with `error` set on failure.
    pub modex_put: unsafe extern "C" fn(
        ctx: *mut c_void,
        name: RStr<'_>,
        card: RSlice<'_, u8>,
        error: &mut RString,
    ) -> bool,
    /// Reads `rank`'s card published under `name` (cached after the first
    /// lookup).
    pub modex_get: unsafe extern "C" fn(
        ctx: *mut c_void,
        rank: u32,
        name: RStr<'_>,
        card: &mut RVec<u8>,
        error: &mut RString,
    ) -> ModexLookup,
    /// Adds a function to the progress engine (polled by every wait and
    /// test, in registration order).
    pub register_progress: unsafe extern "C" fn(ctx: *mut c_void, poll: ProgressFn),
}

/// Words the pml keeps current for its caller's wait loop.
/// Written only inside the component's entry points and read by its caller
/// under the same lock, so relaxed order suffices.
#[repr(C)]
#[derive(StableAbi, Debug)]
pub struct Signals {
    /// Bumped by every entry point and callback that may have completed a
    /// request (all but `test`, `take`, `request_error` and `iprobe`): while
    /// it has not changed, a request found incomplete is still incomplete.
    pub events: AtomicU64,
    /// Whether `progress` has work (queued sends or
    /// acknowledgements); while false the MPI layer does not call it.
    pub work: AtomicBool,
}

impl Signals {
    /// A block with no events and work pending (so `progress` runs until
    /// the pml says otherwise).
    pub const fn new() -> Self {
        Signals {
            events: AtomicU64::new(0),
            work: AtomicBool::new(true),
        }
    }

    /// Forgets every event (a pml's `init`).
    pub fn reset(&self) {
        self.events.store(0, Ordering::Relaxed);
        self.work.store(true, Ordering::Relaxed);
    }

    /// The event counter's value.
    #[inline]
    pub fn events(&self) -> u64 {
        self.events.load(Ordering::Relaxed)
    }

    /// Whether `progress` has work.
    #[inline]
    pub fn has_work(&self) -> bool {
        self.work.load(Ordering::Relaxed)
    }

    /// Records an entry that may have completed requests and whether
    /// `progress` now has work (only ever called under the pml's exclusive
    /// entry, so a load and a store count exactly).
    #[inline]
    pub fn record(&self, work: bool) {
        self.events.store(
            self.events.load(Ordering::Relaxed).wrapping_add(1),
            Ordering::Relaxed,
        );
        self.work.store(work, Ordering::Relaxed);
    }
}

impl Default for Signals {
    fn default() -> Self {
        Self::new()
    }
}

/// A progress function (a btl's `progress`): returns the number of events.
#[repr(transparent)]
#[derive(StableAbi, Copy, Clone)]
pub struct ProgressFn {
    /// The function.
    pub poll: unsafe extern "C" fn() -> usize,
}

impl ProgressFn {
    /// Runs the function; returns its number of events.
    #[inline]
    pub fn run(&self) -> usize {
        // SAFETY: a progress function a pml registered: a btl table's
        // `progress`, which takes no argument and whose generated entry
        // point checks exclusive entry itself.
        unsafe { (self.poll)() }
    }
}
