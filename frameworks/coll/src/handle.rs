//! The caller side of the coll interface, for the MPI layer:
//!
//! - [`CollHandle`]: a coll component's layout-checked table with safe
//!   methods that return `Result`s (`run` stays `unsafe`: the component
//!   reads and writes the call's buffers);
//! - [`MpiColl`]: what the MPI layer offers coll components (non-blocking
//!   sends and receives, a wait) as a trait; [`CollHandle::init`]
//!   generates the [`CollCore`] table of `extern "C"` functions over it,
//!   with a panic guard (a panic in the MPI layer's code answers a failure
//!   instead of unwinding into the component).

use crate::module::{
    CollCall, CollCore, CollModule, CommAnswer, CommDesc, PollOutcome, RunOutcome,
};
use abi_stable::std_types::{RSlice, RSliceMut, RString};
use oxmpi_plugin_api::ComponentContext;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What the MPI layer offers coll components (see [`CollCore`]). Called
/// from any thread, without the MPI layer's lock held: each method takes
/// it as an MPI call would.
pub trait MpiColl: Sync + 'static {
    /// Starts a send of `len` bytes at `buf` to job rank `dest` on
    /// `context` with `tag`; its request.
    ///
    /// # Safety
    ///
    /// `buf` is readable for `len` bytes until the request is waited.
    ///
    /// # Errors
    ///
    /// Why it cannot start (one sentence).
    unsafe fn isend(
        &self,
        context: u32,
        dest: u32,
        tag: i32,
        buf: *const u8,
        len: usize,
    ) -> Result<u64, String>;

    /// Posts a receive of up to `len` bytes into `buf` from job rank
    /// `source` on `context` with `tag`; its request.
    ///
    /// # Safety
    ///
    /// `buf` is writable for `len` bytes, and nothing else uses it, until
    /// the request is waited.
    ///
    /// # Errors
    ///
    /// Why it cannot be posted (one sentence).
    unsafe fn irecv(
        &self,
        context: u32,
        source: u32,
        tag: i32,
        buf: *mut u8,
        len: usize,
    ) -> Result<u64, String>;

    /// Waits for every request and releases them; `counts[i]` gets the
    /// bytes request `i` moved.
    ///
    /// # Errors
    ///
    /// The first failure's sentence (every request is released anyway).
    fn wait_all(&self, requests: &[u64], counts: &mut [usize]) -> Result<(), String>;

    /// Checks every non-zero request of `requests` once without waiting:
    /// each complete one is released, set to 0, and its byte count stored
    /// in `counts`.
    ///
    /// # Errors
    ///
    /// The sentence of a request that completed in error (released; the
    /// others are left as they are).
    fn test_all(&self, requests: &mut [u64], counts: &mut [usize]) -> Result<(), String>;

    /// One round of the progress engine; the events found.
    fn progress(&self) -> usize;
}

/// The sentence for a panic inside the MPI layer's code.
#[cold]
fn core_panicked(what: &str) -> String {
    format!("internal error in the MPI layer's {what} (it panicked; see the message above)")
}

/// The `ctx` of a generated [`CollCore`] back to the MPI layer's value.
///
/// # Safety
///
/// `ctx` is the `&'static C` that [`core_table`] stored.
unsafe fn core_of<C: MpiColl>(ctx: *mut c_void) -> &'static C {
    // SAFETY: the caller's promise: a `&'static C` cast to a pointer.
    unsafe { &*(ctx as *const C) }
}

/// Stores a method's outcome in the `extern "C"` answer.
fn answer(
    outcome: std::thread::Result<Result<u64, String>>,
    what: &str,
    request: &mut u64,
    error: &mut RString,
) -> bool {
    match outcome {
        Ok(Ok(r)) => {
            *request = r;
            true
        }
        Ok(Err(why)) => {
            *error = why.into();
            false
        }
        Err(_) => {
            *error = core_panicked(what).into();
            false
        }
    }
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn core_isend<C: MpiColl>(
    ctx: *mut c_void,
    context: u32,
    dest: u32,
    tag: i32,
    buf: *const u8,
    len: usize,
    request: &mut u64,
    error: &mut RString,
) -> bool {
    // SAFETY: the component passes back the context of the table
    // `core_table` made.
    let core = unsafe { core_of::<C>(ctx) };
    // SAFETY: the buffer is the component's promise (the interface
    // contract), passed on.
    let outcome = catch_unwind(AssertUnwindSafe(|| unsafe {
        core.isend(context, dest, tag, buf, len)
    }));
    answer(outcome, "isend for a collective", request, error)
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn core_irecv<C: MpiColl>(
    ctx: *mut c_void,
    context: u32,
    source: u32,
    tag: i32,
    buf: *mut u8,
    len: usize,
    request: &mut u64,
    error: &mut RString,
) -> bool {
    // SAFETY: as in `core_isend`.
    let core = unsafe { core_of::<C>(ctx) };
    // SAFETY: as in `core_isend`.
    let outcome = catch_unwind(AssertUnwindSafe(|| unsafe {
        core.irecv(context, source, tag, buf, len)
    }));
    answer(outcome, "irecv for a collective", request, error)
}

/// Runs a set operation of the services (`what`, e.g. "waited for") over
/// `requests` and `counts` with the checks both share: room for a count per
/// request, and a panic turned into a failure.
fn over_requests(
    what: &str,
    requests: usize,
    counts: usize,
    error: &mut RString,
    run: impl FnOnce() -> Result<(), String>,
) -> bool {
    if counts < requests {
        *error =
            format!("a collective {what} {requests} requests with room for {counts} counts").into();
        return false;
    }
    match catch_unwind(AssertUnwindSafe(run)) {
        Ok(Ok(())) => true,
        Ok(Err(why)) => {
            *error = why.into();
            false
        }
        Err(_) => {
            *error = core_panicked(&format!("{what} requests of a collective")).into();
            false
        }
    }
}

unsafe extern "C" fn core_wait_all<C: MpiColl>(
    ctx: *mut c_void,
    requests: RSlice<'_, u64>,
    mut counts: RSliceMut<'_, usize>,
    error: &mut RString,
) -> bool {
    // SAFETY: as in `core_isend`.
    let core = unsafe { core_of::<C>(ctx) };
    let (n, room) = (requests.len(), counts.len());
    over_requests("waited for", n, room, error, || {
        core.wait_all(requests.as_slice(), counts.as_mut_slice())
    })
}

unsafe extern "C" fn core_test_all<C: MpiColl>(
    ctx: *mut c_void,
    mut requests: RSliceMut<'_, u64>,
    mut counts: RSliceMut<'_, usize>,
    error: &mut RString,
) -> bool {
    // SAFETY: as in `core_isend`.
    let core = unsafe { core_of::<C>(ctx) };
    let (n, room) = (requests.len(), counts.len());
    over_requests("tested", n, room, error, || {
        core.test_all(requests.as_mut_slice(), counts.as_mut_slice())
    })
}

unsafe extern "C" fn core_progress<C: MpiColl>(ctx: *mut c_void) -> usize {
    // SAFETY: as in `core_isend`.
    let core = unsafe { core_of::<C>(ctx) };
    catch_unwind(AssertUnwindSafe(|| core.progress())).unwrap_or(0)
}

/// The [`CollCore`] table over `core`.
pub fn core_table<C: MpiColl>(core: &'static C) -> CollCore {
    CollCore {
        ctx: core as *const C as *mut c_void,
        isend: core_isend::<C>,
        irecv: core_irecv::<C>,
        wait_all: core_wait_all::<C>,
        test_all: core_test_all::<C>,
        progress: core_progress::<C>,
    }
}

/// A coll component's table, as the MPI layer holds it.
#[derive(Clone, Copy)]
pub struct CollHandle {
    table: &'static CollModule,
    context: ComponentContext,
}

fn failed(error: RString, otherwise: &str) -> String {
    if error.is_empty() {
        otherwise.to_string()
    } else {
        error.into_string()
    }
}

impl CollHandle {
    /// The handle of a component's `table`, with the context its entry
    /// points log through.
    pub fn new(table: &'static CollModule, context: ComponentContext) -> Self {
        CollHandle { table, context }
    }

    /// The component's context (its name and log).
    pub fn context(&self) -> &ComponentContext {
        &self.context
    }

    /// Starts the component over `core`.
    ///
    /// # Errors
    ///
    /// Why it cannot run here.
    pub fn init<C: MpiColl>(&self, core: &'static C) -> Result<(), String> {
        let mut error = RString::new();
        // SAFETY: the component's own table; the arguments are valid for
        // the call.
        let ok = unsafe { (self.table.init)(&self.context, core_table(core), &mut error) };
        if ok {
            Ok(())
        } else {
            Err(failed(error, "init failed (no reason given)"))
        }
    }

    /// Offers a communicator: the component's answer.
    ///
    /// # Errors
    ///
    /// Why it declines the communicator.
    pub fn comm_query(&self, comm: &CommDesc<'_>) -> Result<CommAnswer, String> {
        let mut answer = CommAnswer::default();
        let mut reason = RString::new();
        // SAFETY: as in `init`.
        let ok = unsafe { (self.table.comm_query)(comm, &mut answer, &mut reason) };
        if ok {
            Ok(answer)
        } else {
            Err(failed(reason, "declined (no reason given)"))
        }
    }

    /// Runs one blocking collective on `module`: `Ok(true)` when done,
    /// `Ok(false)` when the component passed the call on (the next
    /// component providing the operation runs it).
    ///
    /// # Safety
    ///
    /// `module` is a live handle of this component, on which no other
    /// `run` or `start` is in progress; the call's buffers are valid for
    /// what its fields say during the call.
    ///
    /// # Errors
    ///
    /// The component's sentence.
    pub unsafe fn run(&self, module: u64, call: &CollCall<'_>) -> Result<bool, String> {
        let mut error = RString::new();
        // SAFETY: the caller's promise for the handle and the buffers.
        match unsafe { (self.table.run)(module, call, &mut error) } {
            RunOutcome::Done => Ok(true),
            RunOutcome::PassedOn => Ok(false),
            RunOutcome::Failed => Err(failed(error, "the collective failed (no reason given)")),
        }
    }

    /// Starts a non-blocking collective on `module` with `tag`; the
    /// operation's handle, for [`poll`](CollHandle::poll).
    ///
    /// # Safety
    ///
    /// As [`run`](CollHandle::run), with the buffers valid until `poll`
    /// answers that the operation finished.
    ///
    /// # Errors
    ///
    /// The component's sentence (nothing was started).
    pub unsafe fn start(&self, module: u64, call: &CollCall<'_>, tag: i32) -> Result<u64, String> {
        let mut error = RString::new();
        let mut op = 0;
        // SAFETY: the caller's promise for the handle and the buffers.
        if unsafe { (self.table.start)(module, call, tag, &mut op, &mut error) } {
            Ok(op)
        } else {
            Err(failed(
                error,
                "the collective could not start (no reason given)",
            ))
        }
    }

    /// Advances operation `op`: `None` while in flight, then its outcome
    /// (and the handle is released).
    ///
    /// # Safety
    ///
    /// `op` is a live operation of this component from
    /// [`start`](CollHandle::start), polled by one thread at a time.
    pub unsafe fn poll(&self, op: u64) -> Option<Result<(), String>> {
        let mut error = RString::new();
        // SAFETY: the caller's promise.
        match unsafe { (self.table.poll)(op, &mut error) } {
            PollOutcome::Pending => None,
            PollOutcome::Done => Some(Ok(())),
            PollOutcome::Failed => Some(Err(failed(
                error,
                "the collective failed (no reason given)",
            ))),
        }
    }

    /// Releases a communicator handle (once).
    ///
    /// # Safety
    ///
    /// `module` is a live handle this component's `comm_query` gave, and
    /// no `run` on it is in progress (operations it started may be: they
    /// do not depend on the handle).
    pub unsafe fn comm_release(&self, module: u64) {
        // SAFETY: the caller's promise.
        unsafe { (self.table.comm_release)(module) }
    }

    /// Stops the component (after every handle was released).
    pub fn finalize(&self) {
        // SAFETY: the component's own table.
        unsafe { (self.table.finalize)() }
    }
}
