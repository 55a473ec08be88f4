//! Requests by integer handle, with what each must keep alive or finish
//! when it completes, and the one place that completes them
//! ([`complete`]).
//!
//! The handles: `MPI_REQUEST_NULL` is 0; a request in this library's
//! table is its key plus 1; [`COMPLETE`] (-1) is every send complete at
//! its start; and a send or receive straight from or into the user's
//! buffer (a plain one) is named by the runtime's completion slot of it,
//! from -2 down ([`plain`]): such a request keeps nothing here, so it
//! costs the table nothing, and the runtime tells a released one from a
//! held one.

use crate::buffers::{Incoming, Outgoing};
use crate::errors::{Fail, ERR_REQUEST};
use crate::status::MpiStatus;
use oxmpi_mpi_core::{RequestId, Runtime, Status, ANY_TAG};
use oxmpi_plugin_api::serial::Serialized;
use slab::Slab;
use std::ffi::c_int;
use std::sync::Mutex;

/// `MPI_REQUEST_NULL`.
pub const REQUEST_NULL: c_int = 0;

/// A request the application holds.
pub enum Pending {
    /// A send straight from the user's buffer: nothing to keep or finish.
    PlainSend(RequestId),
    /// A receive straight into the user's buffer: nothing to keep or
    /// finish.
    PlainRecv(RequestId),
    /// A send; its packed copy lives until it completes (held, never
    /// read).
    Send(RequestId, #[allow(dead_code)] Outgoing),
    /// A receive; a staged one is unpacked when it completes.
    Recv(RequestId, Incoming),
    /// A non-blocking collective, with what its call borrows (count and
    /// displacement arrays, staging buffers); a staged receive side is
    /// unpacked when it completes.
    Coll(RequestId, crate::coll::Keep),
    /// An operation already complete (with `MPI_PROC_NULL`, a buffered
    /// send, or one `MPI_Request_get_status` saw complete).
    Done(Status),
    /// A persistent request: its operation, and the run in progress
    /// (`None`: inactive).
    Persistent(Box<Persistent>),
    /// Several operations that complete as one (a collective this library
    /// runs over point-to-point); each part is replaced by `Done` as it
    /// completes.
    Many(Vec<Pending>),
}

/// A persistent request (`MPI_Send_init`, `MPI_Recv_init` and kin).
pub struct Persistent {
    /// What `MPI_Start` starts.
    pub plan: crate::persistent::Plan,
    /// The run started and not yet completed.
    pub active: Option<Pending>,
}

/// The requests by handle. Biased to the first thread that enters it (in
/// practice the one that initialized MPI, and at `MPI_THREAD_SINGLE` and
/// `FUNNELED` the only one), which enters with plain loads and stores;
/// other threads take its lock ([`Serialized`]). Where a lock's atomic
/// exchanges came on every `MPI_Isend` and `MPI_Irecv`.
static TABLE: Serialized<Slab<Pending>> = Serialized::new();

/// Runs `f` on the request table, waiting while another thread is in it.
/// Nothing that runs inside enters the table again.
#[inline(always)]
fn with_table<R>(f: impl FnOnce(&mut Slab<Pending>) -> R) -> R {
    let mut f = Some(f);
    loop {
        let entered = TABLE.enter(|t| f.take().map(|f| f(t.get_or_insert_with(Slab::new))));
        if let Ok(Some(r)) = entered {
            return r;
        }
        // Another thread is in the table (the body did not run).
        std::thread::yield_now();
    }
}

/// Sends and collectives freed by `MPI_Request_free` before they
/// completed: their packed copies and arrays stay here until finalize has
/// waited for them.
static DETACHED: Mutex<Vec<Pending>> = Mutex::new(Vec::new());

/// The handle of every one-shot request that completed while it started
/// with the empty status and holds nothing (a send the transport took at
/// once): waits and tests answer it at once, without the table.
pub const COMPLETE: c_int = -1;

/// Registers `p` and answers its handle ([`COMPLETE`] for an operation
/// complete already with the empty status that keeps no buffer).
#[inline]
pub fn insert(p: Pending) -> c_int {
    if settled_empty(&p) {
        return COMPLETE;
    }
    let key = with_table(|t| t.insert(p));
    key as c_int + 1
}

/// Registers the send (`receive` false) or receive of runtime request
/// `id`, straight from or into the user's buffer, and answers its handle:
/// [`COMPLETE`] when `id` completed as it started with the empty status,
/// the handle of its completion slot when it has one (the table is not
/// touched either way).
#[inline(always)]
pub fn insert_plain(id: RequestId, receive: bool) -> c_int {
    if id.outcome() == Some(Status::default()) {
        return COMPLETE;
    }
    if let Some(h) = id
        .slot_number()
        .and_then(|slot| plain_handle(slot, receive))
    {
        return h;
    }
    let p = if receive {
        Pending::PlainRecv(id)
    } else {
        Pending::PlainSend(id)
    };
    let key = with_table(|t| t.insert(p));
    key as c_int + 1
}

/// The handle of the request published in the runtime's completion slot
/// `slot` ([`RequestId::in_slot`]): its plain handle, or past the plain
/// handles' range an entry of the table.
#[inline(always)]
pub fn slot_handle(slot: u32, receive: bool) -> c_int {
    match plain_handle(slot, receive) {
        Some(h) => h,
        None => insert_plain(RequestId::in_slot(slot), receive),
    }
}

/// The handle of the plain request published in the runtime's
/// completion slot `slot`: -2 minus twice the slot, minus 1 more for a
/// receive (`None` past the handles' range: the table takes it).
#[inline(always)]
fn plain_handle(slot: u32, receive: bool) -> Option<c_int> {
    let code = i64::from(slot) * 2 + i64::from(receive);
    c_int::try_from(-2 - code).ok()
}

/// The runtime request of plain handle `h` and whether it is a receive;
/// `None` for any other handle.
#[inline(always)]
pub fn plain(h: c_int) -> Option<(RequestId, bool)> {
    if h >= COMPLETE {
        return None;
    }
    let code = -2 - i64::from(h);
    Some((RequestId::in_slot((code >> 1) as u32), code & 1 == 1))
}

/// Whether `p` is complete with the empty status (it keeps nothing
/// alive: a plain send complete at its start comes through
/// [`insert_plain`]).
#[inline]
fn settled_empty(p: &Pending) -> bool {
    matches!(p, Pending::Done(s) if *s == Status::default())
}

fn bad(h: c_int) -> Fail {
    Fail::new(
        ERR_REQUEST,
        format!("request handle {h} is not an active request (already completed or freed?)"),
    )
}

fn key(h: c_int) -> Result<usize, Fail> {
    usize::try_from(h - 1).map_err(|_| bad(h))
}

/// The status of a wait or test on `MPI_REQUEST_NULL` or an inactive
/// persistent request (the empty status).
pub fn empty_status() -> MpiStatus {
    MpiStatus {
        source: crate::ANY_SOURCE,
        tag: ANY_TAG,
        ..MpiStatus::default()
    }
}

/// The runtime's id of a started, incomplete request.
#[inline(always)]
fn id_in(p: &Pending) -> Option<RequestId> {
    match p {
        Pending::PlainSend(id)
        | Pending::PlainRecv(id)
        | Pending::Send(id, _)
        | Pending::Recv(id, _)
        | Pending::Coll(id, _) => Some(*id),
        Pending::Persistent(q) => q.active.as_ref().and_then(id_in),
        Pending::Many(parts) => parts.iter().find_map(id_in),
        Pending::Done(_) => None,
    }
}

/// What a request of handle `h` is, for the calls that look before they
/// complete.
pub enum Kind {
    /// `MPI_REQUEST_NULL` or an inactive persistent request.
    Inactive,
    /// Complete already (nothing to wait for).
    Ready,
    /// In progress, with the runtime's id.
    Running(RequestId),
}

/// The kind of the request of handle `h`.
///
/// # Errors
///
/// `MPI_ERR_REQUEST` for an unknown handle.
pub fn kind(h: c_int) -> Result<Kind, Fail> {
    if h == REQUEST_NULL {
        return Ok(Kind::Inactive);
    }
    if h == COMPLETE {
        return Ok(Kind::Ready);
    }
    if let Some((id, _)) = plain(h) {
        return Ok(Kind::Running(id));
    }
    let k = key(h)?;
    with_table(|t| {
        let p = t.get(k).ok_or_else(|| bad(h))?;
        Ok(match (p, id_in(p)) {
            (_, Some(id)) => Kind::Running(id),
            (Pending::Persistent(q), None) if q.active.is_none() => Kind::Inactive,
            _ => Kind::Ready,
        })
    })
}

/// Whether handle `h` still names a request after its completion failed:
/// a persistent request does (it is inactive again); any other was
/// released, and its handle is to become `MPI_REQUEST_NULL`.
pub fn kept_after_failure(h: c_int) -> bool {
    if h <= COMPLETE || h == REQUEST_NULL {
        return false;
    }
    let Ok(k) = key(h) else {
        return false;
    };
    with_table(|t| matches!(t.get(k), Some(Pending::Persistent(_))))
}

/// Whether the request of handle `h` is several operations completing as
/// one ([`Pending::Many`]), which `MPI_Waitany` polls rather than hands to
/// the runtime's wait.
pub fn is_many(h: c_int) -> bool {
    let Ok(k) = key(h) else {
        return false;
    };
    with_table(|t| t.get(k).is_some_and(|p| matches!(p, Pending::Many(_))))
}

/// Takes the run out of the request of handle `h`: a one-shot request is
/// removed (and the handle is to become `MPI_REQUEST_NULL`), a persistent
/// one goes inactive. `None` for `MPI_REQUEST_NULL` or an inactive
/// persistent request.
fn take_run(h: c_int) -> Result<Option<(Pending, bool)>, Fail> {
    if h <= COMPLETE || h == REQUEST_NULL {
        return take_from(&mut Slab::new(), h);
    }
    with_table(|t| take_from(t, h))
}

/// [`take_run`] in the locked table `t`.
#[inline]
fn take_from(t: &mut Slab<Pending>, h: c_int) -> Result<Option<(Pending, bool)>, Fail> {
    match h {
        REQUEST_NULL => Ok(None),
        COMPLETE => Ok(Some((Pending::Done(Status::default()), true))),
        _ if h < COMPLETE => Ok(plain(h).map(|(id, receive)| {
            let run = if receive {
                Pending::PlainRecv(id)
            } else {
                Pending::PlainSend(id)
            };
            (run, true)
        })),
        _ => {
            let k = key(h)?;
            match t.get_mut(k) {
                None => Err(bad(h)),
                Some(Pending::Persistent(q)) => Ok(q.active.take().map(|run| (run, false))),
                Some(_) => Ok(Some((t.remove(k), true))),
            }
        }
    }
}

/// Finishes the run `p` whose runtime request completed with `outcome`
/// (a staged receive is unpacked; kept buffers go).
fn finish(p: Pending, outcome: Result<Status, oxmpi_mpi_core::Error>) -> Result<Status, Fail> {
    let s = outcome?;
    match &p {
        // SAFETY: the receive completed, so the user's buffer is the
        // application's again and the staging bytes are final.
        Pending::Recv(_, inc) => unsafe { inc.finish(s.count) },
        // SAFETY: as above, for the collective's receive side.
        Pending::Coll(_, keep) => unsafe { keep.finish() },
        _ => {}
    }
    Ok(s)
}

/// Tests the parts of the request of handle `h` if it is a
/// [`Pending::Many`] (each completed part becomes `Done`); answers whether
/// it is complete (true for any other kind).
///
/// # Errors
///
/// A part's error (the request is then released).
fn progress_many(rt: &Runtime, h: c_int) -> Result<bool, Fail> {
    if h <= COMPLETE || h == REQUEST_NULL {
        return Ok(true);
    }
    let k = key(h)?;
    with_table(|t| {
        let Some(Pending::Many(parts)) = t.get_mut(k) else {
            return Ok(true);
        };
        let mut all = true;
        for part in parts.iter_mut() {
            let Some(id) = id_in(part) else { continue };
            match rt.test(id) {
                None => all = false,
                Some(outcome) => {
                    let run = std::mem::replace(part, Pending::Done(Status::default()));
                    match finish(run, outcome) {
                        Ok(s) => *part = Pending::Done(s),
                        Err(f) => {
                            t.remove(k);
                            return Err(f);
                        }
                    }
                }
            }
        }
        Ok(all)
    })
}

/// Waits for the run `p` and finishes it.
///
/// # Errors
///
/// The request's error.
#[inline]
pub fn wait(rt: &Runtime, p: Pending) -> Result<Status, Fail> {
    match p {
        // A plain or finished run holds only plain data: nothing to drop
        // (forgetting it skips the enum's drop code, an out-of-line call
        // per request).
        Pending::PlainSend(id) | Pending::PlainRecv(id) => {
            std::mem::forget(p);
            Ok(rt.wait(id)?)
        }
        Pending::Done(s) => {
            std::mem::forget(p);
            Ok(s)
        }
        p => wait_kept(rt, p),
    }
}

/// [`wait`] for a run that keeps buffers or has parts.
#[inline(never)]
fn wait_kept(rt: &Runtime, p: Pending) -> Result<Status, Fail> {
    if let Pending::Many(parts) = p {
        let mut first_error = None;
        for part in parts {
            if let Err(f) = wait(rt, part) {
                first_error.get_or_insert(f);
            }
        }
        return match first_error {
            Some(f) => Err(f),
            None => Ok(done_status(empty_status())),
        };
    }
    match id_in(&p) {
        Some(id) => {
            let outcome = rt.wait(id);
            finish(p, outcome)
        }
        None => match p {
            Pending::Done(s) => Ok(s),
            _ => Ok(done_status(empty_status())),
        },
    }
}

/// Completes the request of handle `h`, waiting when `block`: its status
/// and whether the handle is to become `MPI_REQUEST_NULL` (a one-shot
/// request; a persistent one goes inactive and keeps its handle), or
/// `None` when it has not completed (only without `block`).
///
/// # Errors
///
/// `MPI_ERR_REQUEST` for an unknown handle; the request's error (the
/// request is then complete and released all the same).
///
/// Inlined for the handles outside the table, whose status is then built
/// in the caller's own result.
#[inline(always)]
pub fn complete(rt: &Runtime, h: c_int, block: bool) -> Result<Option<(MpiStatus, bool)>, Fail> {
    if h == COMPLETE {
        return Ok(Some((MpiStatus::of(&Status::default()), true)));
    }
    if let Some((id, _)) = plain(h) {
        let outcome = if block {
            Some(rt.wait(id))
        } else {
            rt.test(id)
        };
        return match outcome {
            None => Ok(None),
            Some(outcome) => Ok(Some((MpiStatus::of(&outcome?), true))),
        };
    }
    complete_other(rt, h, block)
}

/// [`complete`] of `MPI_REQUEST_NULL` or a handle in the table.
#[inline(never)]
fn complete_other(rt: &Runtime, h: c_int, block: bool) -> Result<Option<(MpiStatus, bool)>, Fail> {
    if !block && !progress_many(rt, h)? {
        return Ok(None);
    }
    if !block {
        if let Kind::Running(id) = kind(h)? {
            let Some(outcome) = rt.test(id) else {
                return Ok(None);
            };
            let (run, null) = take_run(h)?.ok_or_else(|| bad(h))?;
            return finish(run, outcome).map(|s| Some((MpiStatus::of(&s), null)));
        }
    }
    match take_run(h)? {
        None => Ok(Some((empty_status(), false))),
        Some((run, null)) => wait(rt, run).map(|s| Some((MpiStatus::of(&s), null))),
    }
}

/// Completes the request of handle `h` whose runtime request `wait_any`
/// reported done with `outcome`.
///
/// # Errors
///
/// As [`complete`].
pub fn completed_by_any(
    h: c_int,
    outcome: Result<Status, oxmpi_mpi_core::Error>,
) -> Result<(MpiStatus, bool), Fail> {
    let (run, null) = take_run(h)?.ok_or_else(|| bad(h))?;
    finish(run, outcome).map(|s| (MpiStatus::of(&s), null))
}

/// The status of the complete request of handle `h`, leaving it as it is
/// (a handle [`kind`] answers `Ready` for: never a plain one, whose status
/// [`test_in_place`] answers).
///
/// # Errors
///
/// `MPI_ERR_REQUEST` for an unknown handle.
pub fn peek(h: c_int) -> Result<MpiStatus, Fail> {
    if h == COMPLETE {
        return Ok(MpiStatus::of(&Status::default()));
    }
    let k = key(h)?;
    with_table(|t| match t.get(k) {
        Some(Pending::Done(s)) => Ok(MpiStatus::of(s)),
        Some(Pending::Persistent(q)) => match &q.active {
            Some(Pending::Done(s)) => Ok(MpiStatus::of(s)),
            _ => Ok(empty_status()),
        },
        Some(_) => Ok(empty_status()),
        None => Err(bad(h)),
    })
}

/// Tests the request of handle `h`, running as runtime request `id`,
/// without releasing it: complete, it stays complete under its handle
/// for the call that releases it (`MPI_Testall` and
/// `MPI_Request_get_status` must not release it yet). Answers its status
/// once complete.
///
/// # Errors
///
/// `MPI_ERR_REQUEST` for an unknown handle; the request's error (the
/// request is then released).
pub fn test_in_place(rt: &Runtime, h: c_int, id: RequestId) -> Result<Option<Status>, Fail> {
    if plain(h).is_some() {
        // The runtime's slot keeps the status.
        return rt.test_kept(id).transpose().map_err(Fail::from);
    }
    match rt.test(id) {
        Some(outcome) => complete_in_place(h, outcome).map(Some),
        None => Ok(None),
    }
}

/// Finishes the run of handle `h` (in the table), whose runtime request
/// a test reported complete with `outcome`, and keeps the request,
/// complete, under its handle.
///
/// # Errors
///
/// As [`test_in_place`].
fn complete_in_place(
    h: c_int,
    outcome: Result<Status, oxmpi_mpi_core::Error>,
) -> Result<Status, Fail> {
    if h == COMPLETE {
        return outcome.map_err(Fail::from);
    }
    let k = key(h)?;
    with_table(|t| {
        let entry = t.get_mut(k).ok_or_else(|| bad(h))?;
        let slot = match entry {
            Pending::Persistent(q) => &mut q.active,
            _ => {
                // A one-shot request: its run is the entry itself.
                let run = std::mem::replace(entry, Pending::Done(Status::default()));
                return match finish(run, outcome) {
                    Ok(s) => {
                        *entry = Pending::Done(s);
                        Ok(s)
                    }
                    Err(f) => {
                        t.remove(k);
                        Err(f)
                    }
                };
            }
        };
        let run = slot.take().ok_or_else(|| bad(h))?;
        let s = finish(run, outcome)?;
        *slot = Some(Pending::Done(s));
        Ok(s)
    })
}

/// Starts the persistent request of handle `h` with `start` (which makes
/// its run from its plan).
///
/// # Errors
///
/// `MPI_ERR_REQUEST` for a handle that is no persistent request, or one
/// already active; `start`'s error.
pub fn start_persistent(
    h: c_int,
    start: impl FnOnce(&crate::persistent::Plan) -> Result<Pending, Fail>,
) -> Result<(), Fail> {
    if h <= COMPLETE {
        return Err(not_persistent(h));
    }
    let k = key(h)?;
    let plan = with_table(|t| match t.get(k) {
        Some(Pending::Persistent(q)) if q.active.is_none() => Ok(q.plan),
        Some(Pending::Persistent(_)) => Err(Fail::new(
            ERR_REQUEST,
            format!("request {h} is already active; complete it before starting it again"),
        )),
        Some(_) => Err(not_persistent(h)),
        None => Err(bad(h)),
    })?;
    // Outside the table, which nothing run inside it may enter again.
    let run = start(&plan)?;
    with_table(|t| {
        if let Some(Pending::Persistent(q)) = t.get_mut(k) {
            q.active = Some(run);
        }
    });
    Ok(())
}

/// The refusal to start request `h`, which is not persistent.
fn not_persistent(h: c_int) -> Fail {
    Fail::new(
        ERR_REQUEST,
        format!("request {h} is not persistent (MPI_Start takes those of MPI_Send_init and kin)"),
    )
}

/// Removes the request of handle `h` for `MPI_Request_free`: a send or a
/// collective goes on (finalize waits for it), anything complete or
/// inactive goes; a receive still pending stays.
///
/// # Errors
///
/// `MPI_ERR_REQUEST` for an unknown handle or a pending receive.
pub fn free(rt: &Runtime, h: c_int) -> Result<(), Fail> {
    if h == COMPLETE {
        return Ok(());
    }
    if let Some((id, receive)) = plain(h) {
        return free_plain(rt, id, receive);
    }
    let k = key(h)?;
    let p = with_table(|t| {
        let pending_recv = match t.get(k) {
            None => return Err(bad(h)),
            Some(Pending::Recv(..) | Pending::PlainRecv(_)) => true,
            Some(Pending::Persistent(q)) => {
                matches!(q.active, Some(Pending::Recv(..) | Pending::PlainRecv(_)))
            }
            Some(_) => false,
        };
        if pending_recv {
            return Err(pending_receive());
        }
        Ok(t.remove(k))
    })?;
    let run = match p {
        Pending::Persistent(q) => q.active,
        p => Some(p),
    };
    if let Some(run) = run {
        if let Some(id) = id_in(&run) {
            rt.free(id);
            DETACHED.lock().unwrap_or_else(|e| e.into_inner()).push(run);
        }
    }
    Ok(())
}

/// [`free`] of a plain request: a send goes on (the runtime watches
/// it), a complete receive is released, a pending one stays.
fn free_plain(rt: &Runtime, id: RequestId, receive: bool) -> Result<(), Fail> {
    // Looks without releasing: an error here is a released handle's.
    match rt.test_kept(id) {
        Some(Err(e)) => Err(e.into()),
        Some(Ok(_)) => {
            rt.free(id);
            Ok(())
        }
        None if receive => Err(pending_receive()),
        None => {
            rt.free(id);
            Ok(())
        }
    }
}

/// The refusal to free a receive still pending.
fn pending_receive() -> Fail {
    Fail::new(
        ERR_REQUEST,
        "a receive still pending cannot be freed in oxmpi; wait for it, or cancel it with \
         MPI_Cancel and then wait",
    )
}

/// Drops the detached buffers (after finalize waited for their requests).
pub fn clear_detached() {
    DETACHED.lock().unwrap_or_else(|e| e.into_inner()).clear();
}

/// The MPI layer's status of a C status.
pub fn done_status(s: MpiStatus) -> Status {
    Status {
        source: s.source,
        tag: s.tag,
        count: s.count as usize,
        cancelled: s.cancelled != 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_handles_name_their_slot_and_direction_below_complete() {
        for slot in [0u32, 1, 2, 1000, (1 << 30) - 2] {
            for receive in [false, true] {
                let h = plain_handle(slot, receive).expect("in range");
                assert!(h < COMPLETE, "{h}");
                let (id, is_receive) = plain(h).expect("a plain handle");
                assert_eq!((id.slot_number(), is_receive), (Some(slot), receive));
            }
        }
        assert_eq!(plain_handle(0, false), Some(-2));
        assert_eq!(plain_handle(0, true), Some(-3));
        // The last handle that fits, and the first that does not.
        assert_eq!(plain_handle((1 << 30) - 1, false), Some(c_int::MIN));
        assert_eq!(plain_handle((1 << 30) - 1, true), None);
        assert_eq!(plain_handle(u32::MAX, true), None);
        for other in [REQUEST_NULL, COMPLETE, 1, 7, c_int::MAX] {
            assert!(plain(other).is_none(), "{other}");
        }
    }
}
