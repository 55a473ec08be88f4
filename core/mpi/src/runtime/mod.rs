//! The MPI layer: one [`Runtime`] per process, between the Rust API and the
//! pml.
//!
//! - [`init`](fn@init) resolves the MCA parameters, wires up with the launcher over
//!   PMI (or runs as a singleton), opens the btl framework (every usable
//!   btl) and the pml framework (the best one), starts the pml over the
//!   btls, and exchanges contact cards through the modex. Every rank checks
//!   that it runs the same pml as rank 0.
//! - Communicators `WORLD` (context id 0) and `SELF` (context id 1); the pml
//!   works in job ranks, this layer translates.
//! - Requests are the pml's handles; an operation the pml completed while
//!   starting it (a send the btl took at once, a receive whose message had
//!   arrived) carries its outcome in its [`RequestId`] and costs no further
//!   call. [`Runtime::wait`] and friends drive one progress engine: the
//!   functions the pml registered (its btls'; one that found nothing in
//!   1024 polls in a row turns quiet and runs only in turn with the other
//!   quiet ones, one every 16th poll, until it finds something: see
//!   `pollers`), then the pml's own when its signals say it has work; a
//!   waiting request is tested again only after a poll in which the pml's
//!   event counter moved. When nothing happened and `mpi_yield_when_idle`
//!   is on (mpirun sets it on oversubscribed nodes), the waiting thread
//!   yields the CPU.
//! - Thread levels: every call into the pml holds one lock. At `MULTIPLE`
//!   threads queue on it and waits release it between polls; below
//!   `MULTIPLE` a call that finds it taken is an error (two threads at once),
//!   and at `SINGLE`/`FUNNELED` calls from a thread other than the one that
//!   initialized are errors. An uncontended lock costs one atomic operation.
//!   Collectives run without the lock; one at a time per communicator (the
//!   coll modules' contract), which the runtime checks with a flag per
//!   communicator (a plain load and store at `SINGLE`/`FUNNELED`, an
//!   atomic swap above).
//! - [`Runtime::finalize`] waits for detached sends, then waits in a PMI
//!   barrier while still running the progress engine (data and
//!   acknowledgements still queued in a btl reach their peers, which may
//!   be waiting for them), and shuts the components down once every rank
//!   has arrived.
//! - [`Runtime::job_dir`]: the job's private directory for files its
//!   processes share (mpirun's `OXMPI_JOB_DIR`, or a singleton's own, made
//!   on first use and removed at finalize and at exit).

mod board;
mod coll;
mod comms;
mod error;
mod init;
mod jobdir;
mod nbc;
mod pollers;
mod probe;

pub use comms::CommRelation;
pub use error::{Error, ErrorClass};
pub use oxmpi_framework_pml::module::SendMode;
pub use probe::Message;

use oxmpi_framework_pml::handle::PmlHandle;
use oxmpi_framework_pml::module::{
    Completed, PmlSignals, RecvArgs, RequestError, RequestStatus, SendArgs,
};
use oxmpi_mca::framework::OpenFramework;

use oxmpi_plugin_api::serial::thread_id;
use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, TryLockError};

/// The source of a receive that accepts every sender (`MPI_ANY_SOURCE`).
pub const ANY_SOURCE: i32 = -1;
/// The tag of a receive that accepts every tag (`MPI_ANY_TAG`).
pub const ANY_TAG: i32 = -1;
/// The largest tag (`MPI_TAG_UB`); tags are `0..=TAG_UB`.
pub const TAG_UB: i32 = i32::MAX;

/// Thread support levels (`MPI_THREAD_*`), in increasing order.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ThreadLevel {
    /// One thread.
    Single,
    /// Several threads; only the one that initialized calls MPI.
    Funneled,
    /// Several threads call MPI, never two at once.
    Serialized,
    /// Any thread, any time.
    Multiple,
}

/// A communicator of this process: `MPI_COMM_WORLD`, `MPI_COMM_SELF`, or
/// one made by [`Runtime::comm_dup`], [`Runtime::comm_split`] and the
/// like (a handle into the runtime's table; a freed one is refused).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Comm(pub(crate) u32);

#[allow(non_upper_case_globals)]
impl Comm {
    /// `MPI_COMM_WORLD`: every rank of the job (context id 0).
    pub const World: Comm = Comm(0);
    /// `MPI_COMM_SELF`: this process alone (context id 1).
    pub const SelfComm: Comm = Comm(1);

    /// The handle's number (`World` 0, `SelfComm` 1, then the ones the
    /// runtime made), for an API that passes communicators as integers.
    pub const fn raw(self) -> u32 {
        self.0
    }

    /// The communicator whose number is `raw` ([`Comm::raw`]); one that
    /// does not exist or was freed is refused (class `Comm`) by every
    /// call that takes it.
    pub const fn from_raw(raw: u32) -> Comm {
        Comm(raw)
    }
}

/// The outcome of a receive or probe (`MPI_Status`); sends report zeros.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct Status {
    /// Rank of the sender in the communicator used.
    pub source: i32,
    /// Tag of the message.
    pub tag: i32,
    /// Bytes received (a probe: the message's length).
    pub count: usize,
    /// Whether the request was cancelled.
    pub cancelled: bool,
}

impl Status {
    /// The status of a request the pml reports with `st`, its source the
    /// sender's rank in the request's communicator (`source`).
    fn of_request(st: &RequestStatus, source: i32) -> Status {
        Status {
            source,
            tag: st.tag,
            count: st.count,
            cancelled: st.cancelled,
        }
    }
}

/// A request of this process: a pml handle (with the completion slot the
/// pml publishes it in, for the requests this layer starts), or an
/// operation that completed without error while it started, with its
/// outcome.
///
/// Three words, each written whole: the caller reads the value right
/// after the call, and a word assembled from narrower stores cannot be
/// forwarded to that read (the processor waits for the stores to land).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct RequestId {
    /// The pml's handle; 0 for an operation complete at its start.
    handle: u64,
    /// The outcome of an operation complete at its start: source (high
    /// half) and tag (low half). For a pending one: its completion slot
    /// plus 1 (0: none; the pml is asked).
    source_tag: u64,
    /// Its byte count, with `cancelled` in the top bit.
    count_cancelled: u64,
}

/// The `cancelled` bit of [`RequestId::count_cancelled`].
const CANCELLED_BIT: u64 = 1 << 63;

/// The handle of a [`RequestId::in_slot`] (not 0, not a collective's).
const BY_SLOT: u64 = u64::MAX >> 1;

/// The handle a completion slot records for a receive that completed at
/// its start and keeps its status in the slot ([`Runtime::irecv_held`]):
/// the pml holds nothing under it.
const HELD: u64 = (u64::MAX >> 1) - 1;

impl RequestId {
    /// A request the pml holds under `handle` (not 0), without a
    /// completion slot.
    pub fn pending(handle: u64) -> Self {
        RequestId {
            handle,
            source_tag: 0,
            count_cancelled: 0,
        }
    }

    /// A request the pml holds under `handle` (not 0) and publishes in
    /// completion slot `slot` of the runtime's board.
    fn pending_in(handle: u64, slot: u32) -> Self {
        RequestId {
            handle,
            source_tag: u64::from(slot) + 1,
            count_cancelled: 0,
        }
    }

    /// The completion slot of a pending request, if it has one.
    #[inline]
    fn slot(&self) -> Option<u32> {
        if self.handle == 0 || self.source_tag == 0 {
            return None;
        }
        Some((self.source_tag - 1) as u32)
    }

    /// The number of the completion slot a pending request of a send or
    /// receive this runtime started is published in (`None` for one
    /// complete at its start, a collective's, or one of
    /// [`RequestId::pending`]). The number names the request while it is
    /// held: [`RequestId::in_slot`] gives it back.
    #[inline]
    pub fn slot_number(&self) -> Option<u32> {
        self.slot()
    }

    /// The request published in completion slot `slot` (a number
    /// [`RequestId::slot_number`] answered). Its [`RequestId::handle`] is
    /// a placeholder: the runtime reads the pml's handle from the slot.
    /// Once the request is released, waits and tests of this id fail with
    /// `Request` (until the slot is taken by another request).
    #[inline]
    pub fn in_slot(slot: u32) -> Self {
        RequestId {
            handle: BY_SLOT,
            source_tag: u64::from(slot) + 1,
            count_cancelled: 0,
        }
    }

    /// An operation that completed without error while it started.
    pub fn completed(status: Status) -> Self {
        RequestId {
            handle: 0,
            source_tag: (u64::from(status.source as u32) << 32) | u64::from(status.tag as u32),
            count_cancelled: status.count as u64 | if status.cancelled { CANCELLED_BIT } else { 0 },
        }
    }

    /// The pml's handle (0 for an operation complete at its start).
    pub fn handle(&self) -> u64 {
        self.handle
    }

    /// The outcome, if the operation completed while it started (nothing
    /// then needs to wait for it or release it).
    #[inline]
    pub fn outcome(&self) -> Option<Status> {
        (self.handle == 0).then_some(Status {
            source: (self.source_tag >> 32) as u32 as i32,
            tag: self.source_tag as u32 as i32,
            count: (self.count_cancelled & !CANCELLED_BIT) as usize,
            cancelled: self.count_cancelled & CANCELLED_BIT != 0,
        })
    }
}

/// State behind the lock.
#[derive(Default)]
struct State {
    /// Requests the application stopped watching; finalize waits for
    /// them.
    detached: Vec<RequestId>,
    /// The completion slots of the requests this layer started.
    board: board::Board,
    /// The btls' progress functions (registered at init).
    pollers: pollers::Pollers,
}

/// Exclusive access to the runtime's state for one call (see
/// [`Runtime::enter`]).
struct Entered<'a> {
    state: &'a mut State,
    lock: Option<MutexGuard<'a, ()>>,
}

impl Deref for Entered<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        self.state
    }
}

impl DerefMut for Entered<'_> {
    fn deref_mut(&mut self) -> &mut State {
        self.state
    }
}

/// The MPI layer of this process. Obtain it with [`init`](fn@init).
pub struct Runtime {
    rank: u32,
    size: u32,
    level: ThreadLevel,
    pml: PmlHandle,
    /// The pml's event counter and work flag.
    signals: &'static PmlSignals,
    pml_name: String,
    yield_when_idle: bool,
    /// Taken at `SERIALIZED` (try) and `MULTIPLE` (wait) around `state`
    /// and every pml call; below, only the initializing thread gets in.
    lock: Mutex<()>,
    state: UnsafeCell<State>,
    shared: &'static init::CoreShared,
    self_hint: Option<String>,
    unused_btls: Option<String>,
    frameworks: Mutex<Option<(OpenFramework<'static>, OpenFramework<'static>)>>,
    /// The coll components started in this process.
    colls: Mutex<coll::Colls>,
    /// The non-blocking collectives in flight.
    nb: nbc::NbOps,
    /// The communicators.
    comms: comms::Comms,
    program: String,
    job_id: u64,
    /// Found (or, for a singleton, made) on first use.
    job_dir: OnceLock<Result<std::path::PathBuf, String>>,
}

// SAFETY: every use of `state` and of the pml and btl entry points goes
// through `enter`, which admits one thread at a time (the lock, or at
// SINGLE/FUNNELED only the initializing thread, which never re-enters); the
// remaining fields are read-only after `init`.
unsafe impl Sync for Runtime {}
// SAFETY: as above.
unsafe impl Send for Runtime {}

const PHASE_NONE: u8 = 0;
const PHASE_STARTING: u8 = 1;
const PHASE_RUNNING: u8 = 2;
const PHASE_FINALIZED: u8 = 3;

static PHASE: AtomicU8 = AtomicU8::new(PHASE_NONE);

/// The [`thread_id`] of the thread that initialized oxmpi (0 before),
/// checked at `SINGLE` and `FUNNELED`: a compare with the thread pointer,
/// where a thread-local flag cost a lookup call in the shared library.
static MAIN_THREAD: AtomicUsize = AtomicUsize::new(0);

/// Whether the calling thread initialized oxmpi. A thread that started
/// after the initializing one ended may carry its number; it then stands
/// in for it, and still no two live threads pass.
#[inline]
pub(crate) fn on_main_thread() -> bool {
    MAIN_THREAD.load(Ordering::Relaxed) == thread_id()
}
static RUNTIME: OnceLock<Runtime> = OnceLock::new();

/// Initializes the MPI layer of this process with thread support
/// `required` (granted as asked: every level is supported).
///
/// # Errors
/// Class `Init`: called twice or after finalize, wrong MCA parameters, the
/// launcher cannot be reached, no usable pml, the pml cannot start, or
/// ranks disagree on the pml. The message says what and what to do.
pub fn init(required: ThreadLevel) -> Result<&'static Runtime, Error> {
    match PHASE.compare_exchange(
        PHASE_NONE,
        PHASE_STARTING,
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        Ok(_) => {}
        Err(PHASE_FINALIZED) => {
            return Err(Error::new(
                ErrorClass::Init,
                "oxmpi was already finalized in this process; it can be initialized only once",
            ))
        }
        Err(_) => {
            return Err(Error::new(
                ErrorClass::Init,
                "oxmpi is already initialized in this process; initialize it only once",
            ))
        }
    }
    match init::initialize(required) {
        Ok(runtime) => {
            MAIN_THREAD.store(thread_id(), Ordering::Relaxed);
            let runtime = RUNTIME.get_or_init(|| runtime);
            PHASE.store(PHASE_RUNNING, Ordering::Release);
            Ok(runtime)
        }
        Err(e) => {
            PHASE.store(PHASE_FINALIZED, Ordering::Release);
            Err(e)
        }
    }
}

/// The runtime, if initialized and not finalized (inlined: every C
/// call asks).
#[inline]
pub fn runtime() -> Option<&'static Runtime> {
    (PHASE.load(Ordering::Acquire) == PHASE_RUNNING)
        .then(|| RUNTIME.get())
        .flatten()
}

fn clock(id: libc::clockid_t) -> libc::timespec {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts
}

/// Seconds on a monotonic clock (`MPI_Wtime`); only differences mean
/// anything.
pub fn wtime() -> f64 {
    let ts = clock(libc::CLOCK_MONOTONIC);
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Resolution of [`wtime`] in seconds (`MPI_Wtick`).
pub fn wtick() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9).max(1e-9)
}

impl Runtime {
    /// This process's rank in `WORLD`.
    pub fn rank(&self) -> i32 {
        self.rank as i32
    }

    /// The number of ranks in `WORLD`.
    pub fn size(&self) -> i32 {
        self.size as i32
    }

    /// This process's rank in `comm`.
    pub fn comm_rank(&self, comm: Comm) -> i32 {
        match comm {
            Comm::World => self.rank as i32,
            Comm::SelfComm => 0,
            _ => self.entry(comm).map_or(-1, |e| e.rank as i32),
        }
    }

    /// The size of `comm`.
    pub fn comm_size(&self, comm: Comm) -> i32 {
        match comm {
            Comm::World => self.size as i32,
            Comm::SelfComm => 1,
            _ => self.entry(comm).map_or(0, |e| e.group.size() as i32),
        }
    }

    /// The thread level in effect.
    pub fn thread_level(&self) -> ThreadLevel {
        self.level
    }

    /// Whether the calling thread is the one that initialized
    /// (`MPI_Is_thread_main`).
    pub fn is_main_thread(&self) -> bool {
        on_main_thread()
    }

    /// The pml in use.
    pub fn pml_name(&self) -> &str {
        &self.pml_name
    }

    /// Admits one thread into the runtime, checking the thread level's
    /// rules: at `MULTIPLE` it waits for the lock; at `SERIALIZED` a taken
    /// lock is an error; at `SINGLE`/`FUNNELED` only the initializing thread
    /// gets in, and no lock is needed (one atomic load and a thread-local
    /// read).
    #[inline]
    fn enter(&self) -> Result<Entered<'_>, Error> {
        if matches!(self.level, ThreadLevel::Single | ThreadLevel::Funneled)
            && PHASE.load(Ordering::Acquire) == PHASE_RUNNING
            && on_main_thread()
        {
            // SAFETY: below `SERIALIZED` only the initializing thread is
            // admitted, and no method enters while entered.
            let state = unsafe { &mut *self.state.get() };
            return Ok(Entered { state, lock: None });
        }
        self.enter_checked()
    }

    /// [`Runtime::enter`] with every check and the lock (above
    /// `FUNNELED`), and the errors.
    #[inline(never)]
    fn enter_checked(&self) -> Result<Entered<'_>, Error> {
        if PHASE.load(Ordering::Acquire) != PHASE_RUNNING {
            return Err(Error::new(
                ErrorClass::Finalized,
                "oxmpi is finalized; no MPI call may follow finalize",
            ));
        }
        let lock = match self.level {
            ThreadLevel::Multiple => Some(self.lock.lock().unwrap_or_else(|e| e.into_inner())),
            ThreadLevel::Serialized => match self.lock.try_lock() {
                Ok(g) => Some(g),
                Err(TryLockError::Poisoned(e)) => Some(e.into_inner()),
                Err(TryLockError::WouldBlock) => {
                    return Err(Error::new(
                        ErrorClass::ThreadLevel,
                        "two threads made MPI calls at the same time, which thread level Serialized does not allow; initialize with Multiple",
                    ))
                }
            },
            ThreadLevel::Single | ThreadLevel::Funneled => {
                if !on_main_thread() {
                    return Err(self.other_thread_error());
                }
                None
            }
        };
        // SAFETY: only one thread is admitted at a time (the lock, or the
        // initializing thread alone), and no method enters while entered.
        let state = unsafe { &mut *self.state.get() };
        Ok(Entered { state, lock })
    }

    /// The error of a call from a thread other than the initializing one
    /// at `SINGLE` or `FUNNELED`.
    #[cold]
    fn other_thread_error(&self) -> Error {
        Error::new(
            ErrorClass::ThreadLevel,
            format!(
                "an MPI call came from a thread other than the one that initialized oxmpi, which thread level {:?} does not allow; initialize with a higher level (e.g. Multiple)",
                self.level
            ),
        )
    }

    /// The job rank of rank `rank` of `comm` (`what` names it in the
    /// error: "destination", "source").
    #[inline(always)]
    fn world_rank(&self, comm: Comm, rank: i32, what: &str) -> Result<u32, Error> {
        if comm == Comm::World && rank >= 0 && rank < self.size as i32 {
            return Ok(rank as u32);
        }
        self.world_rank_other(comm, rank, what)
    }

    /// [`Runtime::world_rank`] past its common case.
    #[inline(never)]
    fn world_rank_other(&self, comm: Comm, rank: i32, what: &str) -> Result<u32, Error> {
        match comm {
            Comm::SelfComm if rank == 0 => Ok(self.rank),
            Comm::World | Comm::SelfComm => {
                Err(self.rank_error(comm, rank, what, self.comm_size(comm)))
            }
            _ => {
                let e = self.entry(comm)?;
                u32::try_from(rank)
                    .ok()
                    .and_then(|r| e.group.world_rank(r))
                    .ok_or_else(|| self.rank_error(comm, rank, what, e.group.size() as i32))
            }
        }
    }

    /// The rank in `comm` of the job rank `world` a status names (a
    /// receive's or probe's source; sends report 0, kept as is). A source
    /// that is not in `comm` any more (it was freed meanwhile) stays a job
    /// rank.
    #[inline]
    fn source_in(&self, comm: Comm, world: i32) -> i32 {
        match comm {
            Comm::World => world,
            _ => self.comm_source(comm, world).unwrap_or(world),
        }
    }

    /// The error of a rank outside `comm` (`size` ranks).
    #[cold]
    #[inline(never)]
    fn rank_error(&self, comm: Comm, rank: i32, what: &str, size: i32) -> Error {
        Error::new(
            ErrorClass::Rank,
            format!(
                "{what} rank {rank} is not in {} (ranks 0 to {})",
                self.comm_name(comm),
                size - 1
            ),
        )
    }

    /// A receive's or probe's source as a job rank ([`ANY_SOURCE`] stays).
    #[inline]
    fn world_source(&self, comm: Comm, source: i32) -> Result<i32, Error> {
        if source == ANY_SOURCE {
            Ok(ANY_SOURCE)
        } else {
            Ok(self.world_rank(comm, source, "source")? as i32)
        }
    }

    #[inline]
    fn check_tag(tag: i32, wildcard: bool) -> Result<(), Error> {
        if (0..=TAG_UB).contains(&tag) || (wildcard && tag == ANY_TAG) {
            Ok(())
        } else {
            Err(Self::tag_error(tag, wildcard))
        }
    }

    /// The error of an invalid tag.
    #[cold]
    #[inline(never)]
    fn tag_error(tag: i32, wildcard: bool) -> Error {
        Error::new(
            ErrorClass::Tag,
            format!(
                "tag {tag} is not valid: tags go from 0 to {TAG_UB}{}",
                if wildcard { " (or ANY_TAG)" } else { "" }
            ),
        )
    }

    /// Starts a send of `len` bytes at `buf` to rank `dest` of `comm`.
    ///
    /// # Safety
    /// `buf..buf + len` stays valid and unchanged until the request
    /// completes (a wait or test returns it).
    ///
    /// # Errors
    /// `Rank`, `Tag`, `Unreachable` (the message names the peer and each
    /// btl's reason, and says when the `self` btl is missing), `ProcFailed`,
    /// `Finalized`, `ThreadLevel`.
    #[inline(always)]
    pub unsafe fn isend(
        &self,
        comm: Comm,
        dest: i32,
        tag: i32,
        buf: *const u8,
        len: usize,
        mode: SendMode,
    ) -> Result<RequestId, Error> {
        Self::check_tag(tag, false)?;
        let dest_world = self.world_rank(comm, dest, "destination")?;
        let mut state = self.enter()?;
        // SAFETY: the buffer promise is this method's own requirement.
        unsafe { self.start_send(&mut state, comm, dest_world, tag, buf, len, mode) }
    }

    /// Hands a send to the pml (with the runtime entered) and turns its
    /// refusal into an error with the hints about btls.
    ///
    /// # Safety
    /// As [`Runtime::isend`]: the buffer stays valid and unchanged until
    /// the request completes.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn start_send(
        &self,
        state: &mut State,
        comm: Comm,
        dest: u32,
        tag: i32,
        buf: *const u8,
        len: usize,
        mode: SendMode,
    ) -> Result<RequestId, Error> {
        let context = self.context_of(comm)?;
        // Most sends complete as they start and leave the slot free.
        let slot = state.board.peek();
        let args = SendArgs {
            buf,
            len,
            dest,
            tag,
            context,
            mode,
            done: state.board.slot(slot),
        };
        // SAFETY: the caller keeps the buffer valid and unchanged until
        // the request completes (this function's contract); the slot stays
        // until read or the request freed.
        match unsafe { self.pml.isend(&args) } {
            // Complete already: a send's status is all zeros.
            Ok(0) => Ok(RequestId::completed(Status::default())),
            Ok(handle) => {
                state.board.claim(slot, comm);
                state.board.started(slot, handle);
                Ok(RequestId::pending_in(handle, slot))
            }
            // The pml's sentence names the peer.
            Err((kind, message)) => Err(self.send_refused(dest, kind, message)),
        }
    }

    /// The error of a send the pml refused: its sentence, with the hints
    /// about btls.
    #[cold]
    fn send_refused(&self, dest: u32, kind: RequestError, mut message: String) -> Error {
        let class = match kind {
            RequestError::Unreachable => ErrorClass::Unreachable,
            RequestError::PeerFailed => ErrorClass::ProcFailed,
            _ => ErrorClass::Other,
        };
        let mut add = |text: &str| {
            if !message.ends_with('.') {
                message.push('.');
            }
            message.push(' ');
            message.push_str(text);
        };
        if class == ErrorClass::Unreachable {
            if let Some(unused) = &self.unused_btls {
                add(unused);
            }
        }
        if dest == self.rank {
            if let Some(hint) = &self.self_hint {
                add(hint);
            }
        }
        Error::new(class, message)
    }

    /// Posts a receive into `len` bytes at `buf` from rank `source` of
    /// `comm` (or [`ANY_SOURCE`]) with `tag` (or [`ANY_TAG`]).
    ///
    /// # Safety
    /// `buf..buf + len` stays valid and is not accessed until the request
    /// completes.
    ///
    /// # Errors
    /// `Rank`, `Tag`, `Finalized`, `ThreadLevel`, or the pml's refusal.
    #[inline(always)]
    pub unsafe fn irecv(
        &self,
        comm: Comm,
        source: i32,
        tag: i32,
        buf: *mut u8,
        len: usize,
    ) -> Result<RequestId, Error> {
        // SAFETY: the buffer promise is this method's own requirement.
        unsafe { self.post_recv(comm, source, tag, buf, len, false) }
    }

    /// [`Runtime::irecv`], except that a receive that completes while it
    /// starts keeps its status in its completion slot, as a pending one
    /// would: the request always has a [`RequestId::slot_number`] (a wait
    /// or test answers it from the slot and releases it).
    ///
    /// # Safety
    /// As [`Runtime::irecv`].
    ///
    /// # Errors
    /// As [`Runtime::irecv`].
    #[inline(always)]
    pub unsafe fn irecv_held(
        &self,
        comm: Comm,
        source: i32,
        tag: i32,
        buf: *mut u8,
        len: usize,
    ) -> Result<RequestId, Error> {
        // SAFETY: the buffer promise is this method's own requirement.
        unsafe { self.post_recv(comm, source, tag, buf, len, true) }
    }

    /// [`Runtime::irecv`] (`hold` false) and [`Runtime::irecv_held`]:
    /// checks the arguments, enters, and hands the receive to the pml.
    ///
    /// # Safety
    /// As [`Runtime::irecv`].
    #[inline(always)]
    unsafe fn post_recv(
        &self,
        comm: Comm,
        source: i32,
        tag: i32,
        buf: *mut u8,
        len: usize,
        hold: bool,
    ) -> Result<RequestId, Error> {
        Self::check_tag(tag, true)?;
        let source_world = self.world_source(comm, source)?;
        let mut state = self.enter()?;
        // SAFETY: the buffer promise is the caller's.
        unsafe { self.start_recv(&mut state, comm, source_world, tag, buf, len, hold) }
    }

    /// Hands a receive to the pml (with the runtime entered); `hold` as
    /// in [`Runtime::recv_started`].
    ///
    /// # Safety
    /// As [`Runtime::irecv`]: the buffer stays valid and untouched until
    /// the request completes.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn start_recv(
        &self,
        state: &mut State,
        comm: Comm,
        source: i32,
        tag: i32,
        buf: *mut u8,
        len: usize,
        hold: bool,
    ) -> Result<RequestId, Error> {
        let context = self.context_of(comm)?;
        let slot = state.board.take(comm);
        let args = RecvArgs {
            buf,
            len,
            source,
            tag,
            context,
            done: state.board.slot(slot),
        };
        // SAFETY: the caller keeps the buffer valid and untouched until
        // the request completes (this function's contract); the slot stays
        // until read or the request freed.
        match unsafe { self.pml.irecv(&args) } {
            Ok((handle, st)) => Ok(self.recv_started(state, comm, slot, handle, &st, hold)),
            Err(error) => {
                state.board.give_back(slot);
                Err(Self::recv_refused(error))
            }
        }
    }

    /// The request of a receive on `comm` the pml took with completion
    /// slot `slot`: pending, or complete already (handle 0, with `st`).
    /// A complete one gives the slot back, or with `hold` publishes `st`
    /// in it and stays slotted ([`Runtime::irecv_held`]).
    #[inline(always)]
    fn recv_started(
        &self,
        state: &mut State,
        comm: Comm,
        slot: u32,
        handle: u64,
        st: &RequestStatus,
        hold: bool,
    ) -> RequestId {
        if handle == 0 {
            if hold {
                state.board.slot(slot).publish(st);
                state.board.started(slot, HELD);
                return RequestId::pending_in(HELD, slot);
            }
            state.board.give_back(slot);
            return RequestId::completed(Status::of_request(st, self.source_in(comm, st.source)));
        }
        state.board.started(slot, handle);
        RequestId::pending_in(handle, slot)
    }

    /// The error of a receive the pml refused.
    #[cold]
    fn recv_refused(error: String) -> Error {
        Error::new(
            ErrorClass::Other,
            format!("cannot post the receive: {error}"),
        )
    }

    /// One round of the progress engine (under the lock).
    ///
    /// Inlined into the wait loops: an idle round is the btls' progress
    /// calls and two checks, without a frame of its own.
    #[inline(always)]
    fn poll(&self, state: &mut State) -> usize {
        let events = state.pollers.poll();
        if self.signals.has_work() || !state.detached.is_empty() {
            return events + self.poll_pml(state);
        }
        events
    }

    /// The part of [`Runtime::poll`] that runs when there is more to do:
    /// the pml's own progress, and the requests the application let go of
    /// (completed ones are released; an error goes unreported).
    #[inline(never)]
    fn poll_pml(&self, state: &mut State) -> usize {
        let mut events = 0;
        if self.signals.has_work() {
            events += self.pml.progress();
        }
        if !state.detached.is_empty() {
            let mut detached = std::mem::take(&mut state.detached);
            detached.retain(|&id| self.complete(state, id).is_none());
            state.detached = detached;
        }
        events
    }

    /// One round of the progress engine; returns the number of events.
    pub fn progress(&self) -> usize {
        let events = match self.enter() {
            Ok(mut state) => self.poll(&mut state),
            Err(_) => 0,
        };
        events + self.nb_advance()
    }

    /// If `req` (pending, not a collective's) is complete: releases it
    /// and returns its outcome. A request with a completion slot is
    /// answered from the slot; one without, by the pml's `take`.
    ///
    /// Inlined into each caller, which then builds the outcome in its own
    /// result: returned from a call, the outcome came back through memory
    /// in pieces and was reloaded whole (a store-forwarding stall).
    #[inline(always)]
    fn complete(&self, state: &mut State, req: RequestId) -> Option<Result<Status, Error>> {
        self.complete_or_keep(state, req, true)
    }

    /// [`Runtime::complete`]; without `release`, a request with a
    /// completion slot that completed without error stays held (its slot
    /// keeps the status for the wait or test that releases it).
    #[inline(always)]
    fn complete_or_keep(
        &self,
        state: &mut State,
        req: RequestId,
        release: bool,
    ) -> Option<Result<Status, Error>> {
        let Some(slot) = req.slot() else {
            return self.complete_unslotted(req.handle);
        };
        // No request in the slot (or no such slot): an id of
        // `RequestId::in_slot` named a released request, or none.
        let handle = state.board.handle(slot);
        if handle == 0 {
            return Some(Err(Self::released_already(slot)));
        }
        match state.board.slot(slot).read() {
            Completed::Running => None,
            Completed::Released(st) => {
                let comm = state.board.comm(slot);
                if release {
                    state.board.give_back(slot);
                }
                Some(Ok(Status::of_request(&st, self.source_in(comm, st.source))))
            }
            Completed::Failed => {
                state.board.give_back(slot);
                Some(self.failed(handle))
            }
        }
    }

    /// The error of a wait, test or cancel of a request named by
    /// completion slot `slot` ([`RequestId::in_slot`]) after it was
    /// released, or of a slot that does not exist.
    #[cold]
    #[inline(never)]
    fn released_already(slot: u32) -> Error {
        Error::new(
            ErrorClass::Request,
            format!(
                "the request of completion slot {slot} is not active (already completed or \
                 freed?)"
            ),
        )
    }

    /// [`Runtime::complete`] for a request without a completion slot:
    /// tests and releases an error-free request in one call to the pml.
    #[inline(never)]
    fn complete_unslotted(&self, handle: u64) -> Option<Result<Status, Error>> {
        let st = self.pml.take(handle)?;
        Some(self.outcome(Comm::World, handle, st))
    }

    /// The error of request `handle`, whose completion slot said it
    /// failed (the pml kept it; it is released here).
    #[cold]
    #[inline(never)]
    fn failed(&self, handle: u64) -> Result<Status, Error> {
        let st = self.pml.take(handle).unwrap_or(RequestStatus {
            error: RequestError::Other,
            ..RequestStatus::default()
        });
        self.outcome(Comm::World, handle, st)
    }

    /// The outcome of request `handle` on `comm`, which completed with
    /// `st` (and was released, unless in error: then it is released here).
    fn outcome(&self, comm: Comm, handle: u64, st: RequestStatus) -> Result<Status, Error> {
        match st.error {
            RequestError::None => Ok(Status::of_request(&st, self.source_in(comm, st.source))),
            other => Err(self.request_failed(handle, other)),
        }
    }

    /// The error of request `handle`, which completed with `error`; the
    /// request is released (`take` keeps one in error for its sentence).
    #[cold]
    #[inline(never)]
    fn request_failed(&self, handle: u64, error: RequestError) -> Error {
        let text = self.pml.request_error(handle);
        let class = match error {
            RequestError::Truncated => ErrorClass::Truncate,
            RequestError::PeerFailed => ErrorClass::ProcFailed,
            _ => ErrorClass::Other,
        };
        self.pml.free(handle);
        Error::new(class, text)
    }

    /// Checks `req` once (after one round of progress); `Some` once it is
    /// complete, and then the request is released.
    #[inline]
    pub fn test(&self, req: RequestId) -> Option<Result<Status, Error>> {
        match req.outcome() {
            Some(done) => Some(Ok(done)),
            None if req.handle & nbc::NB_BIT != 0 => self.nb_test(req),
            None => self.test_pending(req, true),
        }
    }

    /// Checks `req` once, as [`Runtime::test`], but a request with a
    /// [`RequestId::slot_number`] that completed without error stays
    /// held: the next wait or test answers the same status and releases
    /// it (`MPI_Testall` and `MPI_Request_get_status` look without
    /// releasing). One in error is released with its error. Any other
    /// request is released as by [`Runtime::test`].
    #[inline]
    pub fn test_kept(&self, req: RequestId) -> Option<Result<Status, Error>> {
        if req.slot().is_none() {
            return self.test(req);
        }
        self.test_pending(req, false)
    }

    /// [`Runtime::test`] for a request the pml holds; `release` as in
    /// [`Runtime::complete_or_keep`].
    fn test_pending(&self, req: RequestId, release: bool) -> Option<Result<Status, Error>> {
        let mut state = match self.enter() {
            Ok(s) => s,
            Err(e) => return Some(Err(e)),
        };
        if let Some(r) = self.complete_or_keep(&mut state, req, release) {
            return Some(r);
        }
        let seen = self.signals.events();
        self.poll(&mut state);
        if self.signals.events() == seen {
            drop(state);
            self.nb_advance();
            return None;
        }
        self.complete_or_keep(&mut state, req, release)
    }

    /// Waits for `req` and releases it. The check for an operation
    /// complete at its start (every eager send that found room) is
    /// inlined into the caller; the rest is a call.
    ///
    /// # Errors
    /// The request's error (`Truncate`: the buffer holds the message's
    /// first bytes; `ProcFailed`; …), or `Finalized`/`ThreadLevel`.
    #[inline(always)]
    pub fn wait(&self, req: RequestId) -> Result<Status, Error> {
        match req.outcome() {
            Some(done) => Ok(done),
            None => self.wait_started(req),
        }
    }

    /// [`Runtime::wait`] for a request that did not complete at its start.
    #[inline]
    fn wait_started(&self, req: RequestId) -> Result<Status, Error> {
        if req.handle & nbc::NB_BIT != 0 {
            self.nb_wait(req)
        } else {
            self.wait_pending(req)
        }
    }

    /// [`Runtime::wait`] for a request the pml holds.
    ///
    /// Inlined, so that the outcome of a request found complete at once
    /// (in a wait for several, most are) is built in the caller's own
    /// result; only a wait that polls returns its outcome through memory.
    #[inline(always)]
    fn wait_pending(&self, req: RequestId) -> Result<Status, Error> {
        let mut state = self.enter()?;
        // A request may complete during the call that starts it (in error,
        // or as a pml without immediate completion reports it, or before
        // this wait): ask once before polling.
        if let Some(r) = self.complete(&mut state, req) {
            return r;
        }
        // Entered again there: moving the entry (with its optional lock
        // guard) into the call cost a copy in odd-sized pieces, reloaded
        // whole, on every wait.
        drop(state);
        self.wait_polling(req)
    }

    /// [`Runtime::wait_pending`] once the request was found incomplete:
    /// polls until it completes.
    #[inline(never)]
    fn wait_polling(&self, req: RequestId) -> Result<Status, Error> {
        let mut state = self.enter()?;
        // Below MULTIPLE/SERIALIZED there is no lock to let go of between
        // polls: the thread stays entered until the request completes.
        let relock = state.lock.is_some();
        // The counter when the request was last found incomplete: until it
        // moves, nothing can have completed it.
        let mut seen = self.signals.events();
        loop {
            let events = self.poll(&mut state);
            let now = self.signals.events();
            if now != seen {
                if let Some(r) = self.complete(&mut state, req) {
                    return r;
                }
                seen = now;
            }
            if relock || self.nb.running() {
                // Between polls: the lock goes, and the non-blocking
                // collectives (which enter the runtime) advance.
                drop(state);
                let events = events + self.nb_advance();
                if events == 0 && self.yield_when_idle {
                    std::thread::yield_now();
                }
                state = self.enter()?;
            } else if events == 0 && self.yield_when_idle {
                std::thread::yield_now();
            }
        }
    }

    /// Waits until one of `reqs` completes; returns its index and outcome
    /// (that request is released, the others are not).
    ///
    /// # Errors
    /// `Request` for an empty slice; `Finalized`/`ThreadLevel`.
    pub fn wait_any(&self, reqs: &[RequestId]) -> Result<(usize, Result<Status, Error>), Error> {
        if reqs.is_empty() {
            return Err(Error::new(
                ErrorClass::Request,
                "wait_any needs at least one request",
            ));
        }
        if let Some((i, done)) = reqs
            .iter()
            .enumerate()
            .find_map(|(i, r)| Some((i, r.outcome()?)))
        {
            return Ok((i, Ok(done)));
        }
        loop {
            let mut state = self.enter()?;
            for (i, &r) in reqs.iter().enumerate() {
                if r.handle & nbc::NB_BIT != 0 {
                    continue;
                }
                if let Some(result) = self.complete(&mut state, r) {
                    return Ok((i, result));
                }
            }
            let events = self.poll(&mut state);
            drop(state);
            let events = events + self.nb_advance();
            if let Some((i, result)) = reqs
                .iter()
                .enumerate()
                .filter(|(_, r)| r.handle & nbc::NB_BIT != 0)
                .find_map(|(i, &r)| Some((i, self.nb_taken(r)?)))
            {
                return Ok((i, result));
            }
            if events == 0 && self.yield_when_idle {
                std::thread::yield_now();
            }
        }
    }

    /// Cancels a receive that has not matched yet: `Ok(true)` if cancelled
    /// (complete it with wait or test; its status says `cancelled`).
    /// `Ok(false)` when too late, or for a send.
    ///
    /// # Errors
    /// `Request` for an id of [`RequestId::in_slot`] whose request was
    /// released (or a slot that does not exist); `Finalized`,
    /// `ThreadLevel`.
    pub fn cancel(&self, req: RequestId) -> Result<bool, Error> {
        if req.outcome().is_some() || req.handle & nbc::NB_BIT != 0 {
            // A collective cannot be cancelled.
            return Ok(false);
        }
        let state = self.enter()?;
        let handle = match req.slot() {
            Some(slot) => {
                let handle = state.board.handle(slot);
                if handle == 0 {
                    return Err(Self::released_already(slot));
                }
                if !state.board.slot(slot).is_running() {
                    // Complete already (and held, or in error).
                    return Ok(false);
                }
                handle
            }
            None => req.handle,
        };
        Ok(self.pml.cancel(handle))
    }

    /// Stops watching a send: it still completes, and finalize waits for it.
    pub fn free(&self, req: RequestId) {
        if req.outcome().is_some() {
            return;
        }
        if req.handle & nbc::NB_BIT != 0 {
            return self.nb_free(req);
        }
        if let Ok(mut state) = self.enter() {
            if let Some(r) = self.complete(&mut state, req) {
                drop(r);
            } else {
                state.detached.push(req);
            }
        }
    }

    /// Ends the job: prints `message` with the code, tells the launcher
    /// (which stops every rank and reports it), and exits with `code`.
    pub fn abort(&self, code: i32, message: &str) -> ! {
        eprintln!(
            "{}: rank {} called abort with code {code}: {message}",
            self.program, self.rank
        );
        if let Ok(mut modex) = self.shared.modex.lock() {
            let _ = modex.client().abort(code, message);
        }
        std::process::exit(code)
    }

    /// The job directory: a private directory (mode 0700) of this job,
    /// where components keep the files its processes share (shared-memory
    /// segments); everything in it is removed when the job ends. Under
    /// mpirun it is `OXMPI_JOB_DIR`, made by mpirun; a singleton makes its
    /// own on the first call (under `/dev/shm`, else the temporary
    /// directory) and removes it at finalize and at exit. Later calls
    /// return the same path.
    ///
    /// # Errors
    /// `Finalized` after finalize; `Other` when the directory given by the
    /// launcher cannot be used (not a private directory of this user), when
    /// a job of several processes has none (a launcher other than mpirun),
    /// or when a singleton's cannot be created. The message says which.
    pub fn job_dir(&self) -> Result<&std::path::Path, Error> {
        if PHASE.load(Ordering::Acquire) == PHASE_FINALIZED {
            return Err(Error::new(
                ErrorClass::Finalized,
                "oxmpi is finalized; the job directory is gone",
            ));
        }
        self.job_dir
            .get_or_init(|| jobdir::resolve(self.size, self.job_id))
            .as_deref()
            .map_err(|e| Error::new(ErrorClass::Other, e.clone()))
    }

    /// Finalizes: waits for detached sends, synchronizes every rank through
    /// the launcher while still making progress, and shuts the components
    /// down. No MPI call may follow.
    ///
    /// # Errors
    /// `Finalized` if called twice; a failure of the final barriers (a peer
    /// died: the message names it).
    pub fn finalize(&self) -> Result<(), Error> {
        self.nb_finish_detached();
        let mut state = self.enter()?;
        // Detached sends first.
        while !state.detached.is_empty() {
            let events = self.poll(&mut state);
            if events == 0 && self.yield_when_idle {
                std::thread::yield_now();
            }
        }
        // Every rank reaches finalize; until then keep progressing, so data
        // and acknowledgements still queued in a btl reach their peers.
        let mut modex = self.shared.modex.lock().unwrap_or_else(|e| e.into_inner());
        let barrier = modex
            .client()
            .barrier_progressing(|| self.poll(&mut state))
            .map_err(|e| Error::new(ErrorClass::Other, format!("finalize: {e}")));
        PHASE.store(PHASE_FINALIZED, Ordering::Release);
        // No collective runs any more (every rank is here).
        {
            let mut colls = self.colls.lock().unwrap_or_else(|e| e.into_inner());
            for entry in self.comms.take_all() {
                colls.release(&mut entry.coll.lock().unwrap_or_else(|e| e.into_inner()));
            }
            colls.shut_down();
        }
        // Under the lock; every rank has reached finalize, so nobody sends
        // any more.
        self.pml.finalize();
        let done = modex
            .client()
            .finalize()
            .map_err(|e| Error::new(ErrorClass::Other, format!("finalize: {e}")));
        drop(modex);
        if let Some((btl, pml)) = self
            .frameworks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            pml.close();
            btl.close();
        }
        drop(state);
        // A singleton's own directory; mpirun removes a job's.
        let removed = jobdir::remove_own().map_err(|e| Error::new(ErrorClass::Other, e));
        barrier.and(done).and(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::{RequestId, Status};

    #[test]
    fn a_completed_request_id_keeps_its_whole_status() {
        for status in [
            Status::default(),
            Status {
                source: 3,
                tag: 17,
                count: 8,
                cancelled: false,
            },
            Status {
                source: i32::MAX,
                tag: i32::MAX,
                count: (1 << 63) - 1,
                cancelled: true,
            },
            Status {
                source: -1,
                tag: -1,
                count: 0,
                cancelled: true,
            },
        ] {
            let id = RequestId::completed(status);
            assert_eq!(id.handle(), 0);
            assert_eq!(id.outcome(), Some(status));
        }
    }

    #[test]
    fn a_pending_request_id_has_no_outcome() {
        let id = RequestId::pending(0x5_0000_0007);
        assert_eq!(id.handle(), 0x5_0000_0007);
        assert_eq!(id.outcome(), None);
        assert_ne!(id, RequestId::pending(0x6_0000_0007));
        assert_eq!(id.slot_number(), None, "no completion slot");
    }

    #[test]
    fn a_slotted_request_id_is_named_by_its_slot() {
        for slot in [0, 1, 255, 256, u32::MAX - 1, u32::MAX] {
            let started = RequestId::pending_in(0x9_0000_0001, slot);
            assert_eq!(started.slot_number(), Some(slot));
            let named = RequestId::in_slot(slot);
            assert_eq!(named.slot_number(), Some(slot));
            assert_eq!(named.outcome(), None);
            assert_eq!(named.handle() & super::nbc::NB_BIT, 0, "not a collective's");
        }
        let done = RequestId::completed(Status::default());
        assert_eq!(done.slot_number(), None);
    }
}
