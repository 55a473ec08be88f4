//! Collectives: the coll components this process started, the choice of
//! one component per operation for each communicator, the point-to-point
//! services components use, and the [`Runtime`] entry point that runs a
//! collective.
//!
//! At init every usable coll component (`coll` include/exclude,
//! priorities) is started with the services ([`Services`]). For each
//! communicator every started component is offered it: each declines
//! (with a reason) or answers a priority and the operations it provides,
//! and each operation comes from the highest-priority component providing
//! it (ties: the component started first). `coll_base_verbose` 10 logs,
//! per communicator, which component serves each operation and why the
//! others were not used. An operation nobody provides fails when called,
//! with the reasons.
//!
//! A collective runs without the runtime's lock: the component moves data
//! with the services, which enter the runtime like any non-blocking send,
//! receive and wait, so other threads' calls go on meanwhile.

use super::{Comm, Error, ErrorClass, RequestId, Runtime, ThreadLevel, RUNTIME};
use abi_stable::std_types::{RSlice, RStr};
use oxmpi_framework_coll::handle::{CollHandle, MpiColl};
use oxmpi_framework_coll::module::{CollCall, CollKind, CommDesc};
use oxmpi_framework_pml::module::{RecvArgs, SendArgs, SendMode};
use oxmpi_mca::framework::OpenFramework;
use std::sync::atomic::{AtomicBool, Ordering};

/// Level of `coll_base_verbose` at which the choices are logged.
const CHOICE_LEVEL: i32 = 10;

/// One started coll component.
pub(crate) struct Started {
    name: String,
    handle: CollHandle,
}

/// Which component serves each operation of one communicator.
pub(crate) struct CommColl {
    /// The communicator's name.
    name: String,
    /// Per [`CollKind`] code: the component that serves it.
    chosen: FirstProviders,
    /// Per [`CollKind`] code: the other components providing it, by
    /// priority, for a call the chosen one passes on.
    next: [Vec<Provider>; CollKind::ALL.len()],
    /// Per [`CollKind`] code: the component that starts it non-blocking.
    nb: [Option<Provider>; CollKind::ALL.len()],
    /// Non-blocking collectives started on the communicator so far (the
    /// tag of the next one; the same at every member, which start them in
    /// the same order).
    nb_started: u32,
    /// Every handle a query gave, for release.
    handles: Vec<(usize, u64)>,
    /// Why each component does not serve it (for the error of an operation
    /// nobody provides).
    declined: Vec<(String, String)>,
}

/// Per [`CollKind`] code, the component chosen to serve it.
pub(crate) type FirstProviders = [Option<Provider>; CollKind::ALL.len()];

/// A component serving an operation of a communicator: its index among
/// the started ones, its handle for the communicator and its table.
#[derive(Clone, Copy)]
pub(crate) struct Provider {
    pub(crate) index: usize,
    pub(crate) module: u64,
    pub(crate) handle: CollHandle,
}

/// The coll components this process started.
pub(crate) struct Colls {
    started: Vec<Started>,
    framework: Option<OpenFramework<'static>>,
}

/// The point-to-point services coll components use (their [`MpiColl`]).
pub(crate) struct Services;

/// The services' one value (the components keep a `&'static` to it).
pub(crate) static SERVICES: Services = Services;

fn runtime_for_coll() -> Result<&'static Runtime, String> {
    super::runtime()
        .or_else(|| RUNTIME.get())
        .ok_or_else(|| "the MPI layer is not running".to_string())
}

impl MpiColl for Services {
    unsafe fn isend(
        &self,
        context: u32,
        dest: u32,
        tag: i32,
        buf: *const u8,
        len: usize,
    ) -> Result<u64, String> {
        let rt = runtime_for_coll()?;
        let _state = rt.enter().map_err(|e| e.message.clone())?;
        let args = SendArgs {
            buf,
            len,
            dest,
            tag,
            context,
            mode: SendMode::Standard,
            done: std::ptr::null(),
        };
        // SAFETY: the component's promise (the interface contract): the
        // buffer stays valid until the request is waited.
        match unsafe { rt.pml.isend(&args) } {
            Ok(handle) => Ok(handle),
            Err((_, message)) => Err(message),
        }
    }

    unsafe fn irecv(
        &self,
        context: u32,
        source: u32,
        tag: i32,
        buf: *mut u8,
        len: usize,
    ) -> Result<u64, String> {
        let rt = runtime_for_coll()?;
        let _state = rt.enter().map_err(|e| e.message.clone())?;
        let args = RecvArgs {
            buf,
            len,
            source: source as i32,
            tag,
            context,
            done: std::ptr::null(),
        };
        // SAFETY: as in `isend`, for a writable buffer.
        match unsafe { rt.pml.irecv(&args) } {
            Ok((0, status)) if status.count != len => Err(short_message(source, status.count, len)),
            Ok((handle, _)) => Ok(handle),
            Err(message) => Err(message),
        }
    }

    fn test_all(&self, requests: &mut [u64], counts: &mut [usize]) -> Result<(), String> {
        let rt = runtime_for_coll()?;
        rt.progress_only();
        let mut first = None;
        for (i, handle) in requests.iter_mut().enumerate() {
            if *handle == 0 {
                continue;
            }
            match rt.take_completed(RequestId::pending(*handle)) {
                None => {}
                Some(Ok(status)) => {
                    counts[i] = status.count;
                    *handle = 0;
                }
                Some(Err(e)) => {
                    first.get_or_insert_with(|| e.message.clone());
                    *handle = 0;
                }
            }
        }
        first.map_or(Ok(()), Err)
    }

    fn progress(&self) -> usize {
        runtime_for_coll().map_or(0, Runtime::progress)
    }

    fn wait_all(&self, requests: &[u64], counts: &mut [usize]) -> Result<(), String> {
        let rt = runtime_for_coll()?;
        let mut first = None;
        for (i, &handle) in requests.iter().enumerate() {
            if handle == 0 {
                continue;
            }
            match rt.wait(RequestId::pending(handle)) {
                Ok(status) => counts[i] = status.count,
                Err(e) => {
                    first.get_or_insert_with(|| e.message.clone());
                }
            }
        }
        first.map_or(Ok(()), Err)
    }
}

/// The sentence of a collective message of the wrong length.
fn short_message(source: u32, got: usize, want: usize) -> String {
    format!(
        "a collective expected {want} bytes from rank {source} and received {got}: the ranks \
         called the collective with different counts or types"
    )
}

impl CommColl {
    /// Offers the communicator `desc` to every started component and
    /// chooses per operation, logging the choices.
    fn choose(started: &[Started], desc: &CommDesc<'_>) -> CommColl {
        let name = desc.name.as_str().to_string();
        let mut answers = Vec::new();
        let mut declined = Vec::new();
        let mut handles = Vec::new();
        for (i, s) in started.iter().enumerate() {
            match s.handle.comm_query(desc) {
                Ok(answer) => {
                    handles.push((i, answer.module));
                    answers.push((i, answer));
                }
                Err(why) => {
                    log(&format!("{name}: {} declined: {why}", s.name));
                    declined.push((s.name.clone(), format!("declined: {why}")));
                }
            }
        }
        let mut chosen = [None; CollKind::ALL.len()];
        let mut next: [Vec<Provider>; CollKind::ALL.len()] = Default::default();
        let mut nb = [None; CollKind::ALL.len()];
        // By priority, highest first; ties: the component started first.
        answers.sort_by_key(|(i, a)| (std::cmp::Reverse(a.priority), *i));
        let provider = |i: usize, a: &oxmpi_framework_coll::module::CommAnswer| Provider {
            index: i,
            module: a.module,
            handle: started[i].handle,
        };
        for kind in CollKind::ALL {
            let mut providers = answers.iter().filter(|(_, a)| a.ops.contains(kind));
            let first = providers.next();
            next[kind as usize] = providers.map(|(i, a)| provider(*i, a)).collect();
            if let Some((i, a)) = first {
                chosen[kind as usize] = Some(provider(*i, a));
                let then: Vec<String> = answers
                    .iter()
                    .filter(|(j, b)| b.ops.contains(kind) && j != i)
                    .map(|(j, b)| format!("{} (priority {})", started[*j].name, b.priority))
                    .collect();
                log(&format!(
                    "{name}: {} from {} (priority {}){}",
                    kind.name(),
                    started[*i].name,
                    a.priority,
                    if then.is_empty() {
                        String::new()
                    } else {
                        format!("; calls it passes on go to {}", then.join(", then "))
                    }
                ));
            } else {
                log(&format!("{name}: {} from no component", kind.name()));
            }
            if let Some((i, a)) = answers.iter().find(|(_, a)| a.nb_ops.contains(kind)) {
                nb[kind as usize] = Some(provider(*i, a));
                log(&format!(
                    "{name}: non-blocking {} from {} (priority {})",
                    kind.name(),
                    started[*i].name,
                    a.priority
                ));
            }
        }
        // A component that serves nothing here lets its handle go at once.
        let (used, unused): (Vec<_>, Vec<_>) = handles.into_iter().partition(|(i, m)| {
            let serves = |p: &Provider| p.index == *i && p.module == *m;
            chosen.iter().flatten().any(serves)
                || next.iter().flatten().any(serves)
                || nb.iter().flatten().any(serves)
        });
        for (i, m) in unused {
            log(&format!(
                "{name}: {} serves no operation (others have higher priorities)",
                started[i].name
            ));
            declined.push((
                started[i].name.clone(),
                "outranked for every operation".into(),
            ));
            // SAFETY: a live handle its query just gave; nothing runs on it.
            unsafe { started[i].handle.comm_release(m) };
        }
        CommColl {
            name,
            chosen,
            next,
            nb,
            nb_started: 0,
            handles: used,
            declined,
        }
    }

    /// The component chosen for each operation.
    pub(crate) fn first_providers(&self) -> FirstProviders {
        self.chosen
    }

    /// The component that starts `kind` non-blocking.
    pub(crate) fn nb_provider(&self, kind: CollKind) -> Option<Provider> {
        self.nb[kind as usize]
    }

    /// The tag of the next non-blocking collective (and counts it).
    pub(crate) fn next_nb_tag(&mut self) -> i32 {
        let tag = super::nbc::nb_tag(self.nb_started);
        self.nb_started = self.nb_started.wrapping_add(1);
        tag
    }

    /// The sentence of an operation no component starts non-blocking.
    pub(crate) fn no_nb_provider(&self, kind: CollKind) -> String {
        format!(
            "no coll component provides a non-blocking {} for {} (coll_base_verbose 10 lists \
             each component's choices)",
            kind.name(),
            self.name
        )
    }

    /// Releases every handle (the communicator is going).
    fn release(&mut self, started: &[Started]) {
        for (i, m) in self.handles.drain(..) {
            // SAFETY: a live handle of component `i`; no collective runs on
            // the communicator any more.
            unsafe { started[i].handle.comm_release(m) };
        }
        self.chosen = [None; CollKind::ALL.len()];
        self.next = Default::default();
        self.nb = [None; CollKind::ALL.len()];
    }
}

/// Logs at `coll_base_verbose` [`CHOICE_LEVEL`].
fn log(message: &str) {
    oxmpi_mca::log::log("coll", "base", CHOICE_LEVEL, message);
}

/// Opens the coll framework, starts every usable component and chooses
/// for `MPI_COMM_WORLD` (the job ranks `0..size`) and `MPI_COMM_SELF`.
/// A component that fails to start is left out, with a warning from
/// rank 0.
pub(crate) fn start(
    mca: &'static oxmpi_mca::mca::Mca,
    rank: u32,
    size: u32,
) -> Result<(Colls, CommColl, CommColl), String> {
    let mut framework = mca.open_framework("coll").map_err(|e| e.to_string())?;
    let selected = framework.select().map_err(|e| e.to_string())?;
    let mut started = Vec::new();
    for s in &selected {
        let (table, fw, comp) = match super::select::module_of::<
            oxmpi_framework_coll::module::CollModule,
        >(mca, "coll", &s.name)
        {
            Ok(m) => m,
            Err(e) => {
                log(&format!("{} not used: {e}", s.name));
                continue;
            }
        };
        let handle = CollHandle::new(table, oxmpi_mca::services::context(fw, comp));
        match handle.init(&SERVICES) {
            Ok(()) => started.push(Started {
                name: s.name.clone(),
                handle,
            }),
            Err(why) => {
                log(&format!("{} not used: init failed: {why}", s.name));
                // A component that was selected but cannot start is a
                // setting to fix (a parameter value it refuses): said once
                // for the job, by rank 0, whatever the verbosity.
                if rank == 0 {
                    eprintln!(
                        "{}: warning: coll {} is not used: it could not start: {why}",
                        super::init::program_name(),
                        s.name
                    );
                }
            }
        }
    }
    let colls = Colls {
        started,
        framework: Some(framework),
    };
    let members: Vec<u32> = (0..size).collect();
    let world = colls.choose(&CommDesc {
        context: super::comms::WORLD_CONTEXT,
        rank,
        members: RSlice::from_slice(&members),
        name: RStr::from_str("MPI_COMM_WORLD"),
    });
    let me = [rank];
    let self_comm = colls.choose(&CommDesc {
        context: super::comms::SELF_CONTEXT,
        rank: 0,
        members: RSlice::from_slice(&me),
        name: RStr::from_str("MPI_COMM_SELF"),
    });
    Ok((colls, world, self_comm))
}

impl Colls {
    /// Offers the communicator `desc` to every started component and
    /// chooses per operation, logging the choices.
    pub(crate) fn choose(&self, desc: &CommDesc<'_>) -> CommColl {
        CommColl::choose(&self.started, desc)
    }

    /// Releases a communicator's handles (the communicator is going).
    pub(crate) fn release(&self, coll: &mut CommColl) {
        coll.release(&self.started);
    }

    /// Finalizes the components and closes the framework (every
    /// communicator's handles were released).
    pub(crate) fn shut_down(&mut self) {
        for s in &self.started {
            s.handle.finalize();
        }
        self.started.clear();
        if let Some(fw) = self.framework.take() {
            fw.close();
        }
    }
}

impl Runtime {
    /// Runs the collective `call` on `comm` with the component chosen for
    /// its operation.
    ///
    /// # Safety
    ///
    /// The call's buffers are valid for what its fields say (read for
    /// `send`, written for `recv`) during the call; every rank of `comm`
    /// makes the matching call.
    ///
    /// # Errors
    ///
    /// `Other` with the component's sentence, or why no component provides
    /// the operation; `Finalized`.
    pub unsafe fn collective(&self, comm: Comm, call: &CollCall<'_>) -> Result<(), Error> {
        if super::PHASE.load(Ordering::Acquire) != super::PHASE_RUNNING {
            return Err(Error::new(
                ErrorClass::Finalized,
                "oxmpi is finalized; no MPI call may follow finalize",
            ));
        }
        self.with_entry(comm, |entry| {
            let _running = self.claim_for_collective(entry, call.kind)?;
            // SAFETY: the caller's promise, passed on; the claim keeps any
            // other collective off the communicator meanwhile.
            unsafe { self.collective_on(entry, call) }
        })?
    }

    /// Claims `entry` for one collective (a blocking one, or the start of
    /// a non-blocking one) until the claim is dropped: the coll
    /// components' interface lets only one call at a time use a
    /// communicator's module. At `SINGLE` and `FUNNELED` only the
    /// initializing thread may call, which makes the claim a plain load
    /// and store; above, it is one atomic swap.
    ///
    /// # Errors
    ///
    /// `ThreadLevel` for a call from another thread at `SINGLE` or
    /// `FUNNELED`; `Other` when a collective already runs on the
    /// communicator (from another thread, or from a user operation inside
    /// it), which MPI does not allow.
    #[inline]
    pub(crate) fn claim_for_collective<'e>(
        &self,
        entry: &'e super::comms::CommEntry,
        kind: CollKind,
    ) -> Result<CollectiveClaim<'e>, Error> {
        let running = &entry.collective_running;
        let taken = if matches!(self.level, ThreadLevel::Single | ThreadLevel::Funneled) {
            if !super::on_main_thread() {
                return Err(self.other_thread_error());
            }
            // Only the initializing thread gets here, so no other thread
            // reads or writes the flag.
            let taken = running.load(Ordering::Relaxed);
            running.store(true, Ordering::Relaxed);
            taken
        } else {
            running.swap(true, Ordering::Acquire)
        };
        if taken {
            return Err(collective_running(kind, &entry.name));
        }
        Ok(CollectiveClaim { running })
    }

    /// [`Runtime::collective`] on `entry`.
    ///
    /// # Safety
    ///
    /// As [`Runtime::collective`].
    unsafe fn collective_on(
        &self,
        entry: &super::comms::CommEntry,
        call: &CollCall<'_>,
    ) -> Result<(), Error> {
        let Some(first) = entry.first[call.kind as usize] else {
            let choice = entry.coll.lock().unwrap_or_else(|e| e.into_inner());
            return Err(Error::new(
                ErrorClass::Other,
                no_provider(call.kind, &choice.name, &choice.declined),
            ));
        };
        // The component runs without the runtime's lock or the tables'.
        // SAFETY: a live handle of that component (released only when the
        // communicator is freed or at finalize, which no collective on it
        // may overlap); the buffers are the caller's promise.
        match unsafe { first.handle.run(first.module, call) } {
            Ok(true) => Ok(()),
            Ok(false) => {
                // Passed on: the next providers, by priority.
                let next = entry.coll.lock().unwrap_or_else(|e| e.into_inner()).next
                    [call.kind as usize]
                    .clone();
                for p in next {
                    // SAFETY: as above, for that component's handle.
                    match unsafe { p.handle.run(p.module, call) } {
                        Ok(true) => return Ok(()),
                        Ok(false) => continue,
                        Err(why) => return Err(self.coll_failed(call, &entry.name, p.index, why)),
                    }
                }
                Err(Error::new(
                    ErrorClass::Other,
                    format!(
                        "{} on {}: every coll component providing it passed this call on \
                         (coll_base_verbose 10 lists them); include one that takes every \
                         call, such as tuned or basic",
                        call.kind.name(),
                        entry.name
                    ),
                ))
            }
            Err(why) => Err(self.coll_failed(call, &entry.name, first.index, why)),
        }
    }

    /// The error of a collective component `index` failed with `why`.
    #[cold]
    fn coll_failed(&self, call: &CollCall<'_>, comm: &str, index: usize, why: String) -> Error {
        Error::new(
            ErrorClass::Other,
            format!(
                "{} on {comm} (coll {}): {why}",
                call.kind.name(),
                self.coll_name(index)
            ),
        )
    }

    /// One round of the progress engine, without advancing the
    /// non-blocking collectives (the services' test, which they call).
    fn progress_only(&self) {
        if let Ok(mut state) = self.enter() {
            self.poll(&mut state);
        }
    }

    /// If `req` (a pml handle) is complete: releases it and returns its
    /// outcome, without progress.
    fn take_completed(&self, req: RequestId) -> Option<Result<super::Status, Error>> {
        match self.enter() {
            Ok(mut state) => self.complete(&mut state, req),
            Err(e) => Some(Err(e)),
        }
    }

    /// The name of started coll component `index`.
    pub(crate) fn coll_name(&self, index: usize) -> String {
        self.colls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .started
            .get(index)
            .map_or_else(|| "?".into(), |s| s.name.clone())
    }
}

/// A communicator claimed for one collective
/// ([`Runtime::claim_for_collective`]); released when dropped.
pub(crate) struct CollectiveClaim<'e> {
    running: &'e AtomicBool,
}

impl Drop for CollectiveClaim<'_> {
    fn drop(&mut self) {
        self.running.store(false, Ordering::Release);
    }
}

/// The error of a collective called while another runs on `comm`.
#[cold]
fn collective_running(kind: CollKind, comm: &str) -> Error {
    Error::new(
        ErrorClass::Other,
        format!(
            "{} on {comm}: another collective is running on this communicator, and MPI does not \
             allow two at once (two threads called collectives on it, or a user operation called \
             one inside a collective); use a communicator per thread (a dup)",
            kind.name()
        ),
    )
}

/// The sentence of an operation no component provides.
fn no_provider(kind: CollKind, comm: &str, declined: &[(String, String)]) -> String {
    let why = if declined.is_empty() {
        "no coll component is usable in this process: none is installed where components are \
         looked for (mca_base_component_path), or the coll parameter excluded them, or their \
         init failed (coll_base_verbose 10 says)"
            .to_string()
    } else {
        declined
            .iter()
            .map(|(n, r)| format!("{n}: {r}"))
            .collect::<Vec<_>>()
            .join("; ")
    };
    format!(
        "no coll component provides {} for {comm} ({why}); check the coll parameter and \
         `oxmpi_info --param coll all`",
        kind.name()
    )
}
