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
mod p2p;
mod pollers;
mod probe;
mod request;
mod select;
mod waits;

pub use comms::CommRelation;
pub use error::{Error, ErrorClass};
pub use oxmpi_framework_pml::module::{Pieces, SendMode};
pub use probe::Message;
pub use request::{RequestId, Status};
pub use waits::Sweep;

use oxmpi_framework_pml::handle::PmlHandle;
use oxmpi_framework_pml::module::{
    Completed, Limits, PmlSignals, RecvArgs, RequestError, RequestStatus, SendArgs,
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
/// The largest tag any pml carries; a job's own bound (`MPI_TAG_UB`) is
/// [`Runtime::tag_ub`], below this when the pml's transport has fewer tag
/// bits.
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
    /// The tags and context ids the pml carries.
    limits: Limits,
    /// The open frameworks of the pml and its transport, in closing order.
    frameworks: Mutex<Vec<OpenFramework<'static>>>,
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

    /// The largest tag (`MPI_TAG_UB`): [`TAG_UB`] unless the pml's
    /// transport carries fewer tag bits.
    pub fn tag_ub(&self) -> i32 {
        self.limits.max_tag
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
        if let Some(entered) = self.enter_single() {
            return Ok(entered);
        }
        self.enter_checked()
    }

    /// The state, when the calling thread may enter without a lock:
    /// thread level `SINGLE` or `FUNNELED`, called from the initializing
    /// thread, while running. `None` otherwise (then [`Runtime::enter`]
    /// decides and reports).
    #[inline(always)]
    fn enter_single(&self) -> Option<Entered<'_>> {
        if matches!(self.level, ThreadLevel::Single | ThreadLevel::Funneled)
            && PHASE.load(Ordering::Acquire) == PHASE_RUNNING
            && on_main_thread()
        {
            // SAFETY: below `SERIALIZED` only the initializing thread is
            // admitted, and no method enters while entered.
            let state = unsafe { &mut *self.state.get() };
            return Some(Entered { state, lock: None });
        }
        None
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
        for fw in std::mem::take(&mut *self.frameworks.lock().unwrap_or_else(|e| e.into_inner())) {
            fw.close();
        }
        drop(state);
        // A singleton's own directory; mpirun removes a job's.
        let removed = jobdir::remove_own().map_err(|e| Error::new(ErrorClass::Other, e));
        barrier.and(done).and(removed)
    }
}
