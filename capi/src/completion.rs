//! Completing requests: wait and test in all their forms, free, get
//! status, cancel. Every form goes through [`requests::complete`], which
//! knows one-shot requests (released, the handle becomes
//! `MPI_REQUEST_NULL`) from persistent ones (inactive again, the handle
//! stays).

use crate::errors::{record, run, Fail, ERR_ARG, ERR_IN_STATUS};
use crate::handles::{count, put};
use crate::requests::{self, Kind, REQUEST_NULL};
use crate::status::{store, MpiStatus};
use crate::{runtime, UNDEFINED};
use oxmpi_mpi_core::Runtime;
use std::ffi::c_int;

/// The requests array of a multiple-completion call.
///
/// # Safety
///
/// `p` holds `n` handles.
unsafe fn handles<'a>(n: c_int, p: *mut c_int) -> Result<&'a mut [c_int], Fail> {
    let n = count("count", n)?;
    if n == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(Fail::new(ERR_ARG, "the request array is a null pointer"));
    }
    // SAFETY: `n` handles (the caller's promise).
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

/// Writes status `i` of an array unless it is `MPI_STATUSES_IGNORE`.
///
/// # Safety
///
/// `statuses` is null or holds more than `i` statuses.
unsafe fn store_at(statuses: *mut MpiStatus, i: usize, s: MpiStatus) {
    if !statuses.is_null() {
        // SAFETY: the caller's promise.
        unsafe { statuses.add(i).write(s) };
    }
}

/// The status of a request that completed with failure `f`, whose
/// `MPI_ERROR` is `code`: the request's source, tag and count when the
/// failure has them (a truncated receive), else the empty status's.
fn failed_status(f: &Fail, code: c_int) -> MpiStatus {
    let base = match &f.status {
        Some(s) => MpiStatus::of(s),
        None => requests::empty_status(),
    };
    MpiStatus {
        error: code,
        ..base
    }
}

/// When failure `f` is that of a request that completed in error (it has
/// the request's status): writes that status to `out` (unless it is
/// `MPI_STATUS_IGNORE`), its `MPI_ERROR` the class, and nulls the handle
/// `slot` unless a persistent request keeps it. Any other failure (an
/// unknown handle, say) leaves both as they are.
///
/// # Safety
///
/// `out` is null or valid for a write.
unsafe fn settle_failed(slot: &mut c_int, f: &Fail, out: *mut MpiStatus) {
    if f.status.is_none() {
        return;
    }
    if !requests::kept_after_failure(*slot) {
        *slot = REQUEST_NULL;
    }
    // SAFETY: the caller's promise.
    unsafe { store(out, failed_status(f, f.class)) };
}

/// Writes the status failure `f` carries (a receive that completed in
/// error) to `out`, unless it is `MPI_STATUS_IGNORE`, with the class as
/// its `MPI_ERROR`; nothing when `f` has no status.
///
/// # Safety
///
/// `out` is null or valid for a write.
#[cold]
pub(crate) unsafe fn store_failure(out: *mut MpiStatus, f: &Fail) {
    if f.status.is_some() {
        // SAFETY: the caller's promise.
        unsafe { store(out, failed_status(f, f.class)) };
    }
}

/// Request `slot` of an array completed with failure `f`: its handle is
/// nulled unless a persistent request keeps it, and its status is
/// answered with `code` as `MPI_ERROR`.
fn failed_at(slot: &mut c_int, f: &Fail, code: c_int) -> MpiStatus {
    if !requests::kept_after_failure(*slot) {
        *slot = REQUEST_NULL;
    }
    failed_status(f, code)
}

/// The failure a call that completes several requests answers when
/// request `i` (the first to fail) failed with `f`: `MPI_ERR_IN_STATUS`.
fn in_status(i: usize, f: &Fail) -> Fail {
    Fail::new(
        ERR_IN_STATUS,
        format!(
            "request {i} failed: {} (each status's MPI_ERROR says which failed)",
            f.message
        ),
    )
}

/// A request of an array that completed: its index, its status, and its
/// failure when it completed in error.
struct Done {
    index: usize,
    status: MpiStatus,
    failure: Option<Fail>,
}

impl Done {
    /// Request `index` of `slots` completed with `outcome` (a completion,
    /// or the failure it completed with, whose class becomes its status's
    /// `MPI_ERROR`).
    fn of(slots: &mut [c_int], index: usize, outcome: Result<(MpiStatus, bool), Fail>) -> Done {
        let slot = &mut slots[index];
        match outcome {
            Ok(done) => Done {
                index,
                status: settle(slot, done),
                failure: None,
            },
            Err(f) => Done {
                index,
                status: failed_at(slot, &f, f.class),
                failure: Some(f),
            },
        }
    }
}

/// Applies a completion to its handle slot.
fn settle(slot: &mut c_int, (s, null): (MpiStatus, bool)) -> MpiStatus {
    if null {
        *slot = REQUEST_NULL;
    }
    s
}

/// `MPI_Wait`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Wait(request: *mut c_int, status: *mut MpiStatus) -> c_int {
    run("MPI_Wait", 1, || {
        if request.is_null() {
            return Err(Fail::new(ERR_ARG, "request is a null pointer"));
        }
        // SAFETY: not null; the caller's promise.
        let slot = unsafe { &mut *request };
        let done = match requests::complete(runtime()?, *slot, true) {
            Ok(done) => done.ok_or_else(|| Fail::new(ERR_ARG, "no completion"))?,
            Err(f) => {
                // SAFETY: the caller's promise.
                unsafe { settle_failed(slot, &f, status) };
                return Err(f);
            }
        };
        let s = settle(slot, done);
        // SAFETY: the caller's promise.
        unsafe { store(status, s) };
        Ok(())
    })
}

/// `MPI_Test`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Test(
    request: *mut c_int,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    run("MPI_Test", 1, || {
        if request.is_null() {
            return Err(Fail::new(ERR_ARG, "request is a null pointer"));
        }
        // SAFETY: not null; the caller's promise.
        let slot = unsafe { &mut *request };
        let outcome = match requests::complete(runtime()?, *slot, false) {
            Ok(outcome) => outcome,
            Err(f) => {
                // SAFETY: the caller's promise.
                unsafe { settle_failed(slot, &f, status) };
                return Err(f);
            }
        };
        match outcome {
            Some(done) => {
                let s = settle(slot, done);
                // SAFETY: the caller's promise.
                unsafe {
                    store(status, s);
                    put("flag", flag, 1)
                }
            }
            // SAFETY: the caller's promise.
            None => unsafe { put("flag", flag, 0) },
        }
    })
}

/// Releases the plain requests at the start of `slots` (entries `at`
/// on of a request array) that completed without error already, in one
/// entry of the runtime: writes their statuses (entries `at` on of
/// `statuses`) and nulls their handles. Answers how many; it stops at the
/// first request that is not plain or not complete, and answers 0 when
/// the runtime cannot be entered (the wait that follows reports why).
///
/// # Safety
///
/// `statuses` is null or holds a status for each entry of the array.
#[inline(always)]
unsafe fn release_ready(
    rt: &Runtime,
    slots: &mut [c_int],
    statuses: *mut MpiStatus,
    at: usize,
) -> usize {
    if requests::plain(slots[0]).is_none() {
        return 0;
    }
    let swept = rt.sweep(|sweep| {
        let mut n = 0;
        for slot in slots.iter_mut() {
            let Some((id, _)) = requests::plain(*slot) else {
                break;
            };
            let Some(s) = sweep.take(id) else {
                break;
            };
            // SAFETY: the caller's promise.
            unsafe { store_at(statuses, at + n, MpiStatus::of(&s)) };
            *slot = REQUEST_NULL;
            n += 1;
        }
        n
    });
    swept.unwrap_or(0)
}

/// Completes every request of `slots` (waiting when `block`; without it,
/// only if all are complete), writing `statuses`. When one fails, the
/// others are still completed, each status's `MPI_ERROR` says which, and
/// the call answers `MPI_ERR_IN_STATUS`. Answers whether all completed.
///
/// # Safety
///
/// `statuses` is null or holds one status per request.
unsafe fn all(slots: &mut [c_int], statuses: *mut MpiStatus, block: bool) -> Result<bool, Fail> {
    let rt = runtime()?;
    if !block {
        for &h in slots.iter() {
            if let Kind::Running(id) = requests::kind(h)? {
                // Test without consuming: a completed one stays complete.
                if requests::test_in_place(rt, h, id)?.is_none() {
                    return Ok(false);
                }
            }
        }
    }
    let mut failed = None;
    // Each in turn: a plain one without the table, one in it taken out and
    // waited for. The plain ones that completed meanwhile (the wait for
    // one polls for all) are released in runs, entering the runtime once.
    let mut i = 0;
    while i < slots.len() {
        // SAFETY: the caller's promise.
        let swept = unsafe { release_ready(rt, &mut slots[i..], statuses, i) };
        if swept > 0 {
            i += swept;
            continue;
        }
        let slot = &mut slots[i];
        let st = match requests::complete(rt, *slot, true) {
            Ok(Some(done)) => settle(slot, done),
            Ok(None) => requests::empty_status(),
            Err(f) => {
                let code = record(f.class, f.message.clone());
                let st = failed_at(slot, &f, code);
                failed.get_or_insert((i, f));
                st
            }
        };
        // SAFETY: the caller's promise.
        unsafe { store_at(statuses, i, st) };
        i += 1;
    }
    match failed {
        None => Ok(true),
        Some((i, f)) => Err(in_status(i, &f)),
    }
}

/// `MPI_Waitall`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Waitall(
    n: c_int,
    requests_: *mut c_int,
    statuses: *mut MpiStatus,
) -> c_int {
    run("MPI_Waitall", 1, || {
        // SAFETY: the caller's promise.
        let slots = unsafe { handles(n, requests_) }?;
        // SAFETY: as above.
        unsafe { all(slots, statuses, true) }.map(drop)
    })
}

/// `MPI_Testall`: completes every request if all are complete, else none
/// (a completed one stays complete for the next call).
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Testall(
    n: c_int,
    requests_: *mut c_int,
    flag: *mut c_int,
    statuses: *mut MpiStatus,
) -> c_int {
    run("MPI_Testall", 1, || {
        // SAFETY: the caller's promise.
        let slots = unsafe { handles(n, requests_) }?;
        // SAFETY: as above.
        let done = unsafe { all(slots, statuses, false) }?;
        // SAFETY: the caller's promise.
        unsafe { put("flag", flag, c_int::from(done)) }
    })
}

/// The first request of `slots` that is complete (tested once each),
/// completed without error or in error, or `None`; `Some(None)` when
/// every one is null or inactive.
fn any_done(slots: &mut [c_int]) -> Result<Option<Option<Done>>, Fail> {
    let rt = runtime()?;
    let mut active = false;
    for i in 0..slots.len() {
        if matches!(requests::kind(slots[i])?, Kind::Inactive) {
            continue;
        }
        active = true;
        match requests::complete(rt, slots[i], false) {
            Ok(None) => {}
            Ok(Some(done)) => return Ok(Some(Some(Done::of(slots, i, Ok(done))))),
            Err(f) => return Ok(Some(Some(Done::of(slots, i, Err(f))))),
        }
    }
    Ok(if active { None } else { Some(None) })
}

/// `MPI_Waitany`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Waitany(
    n: c_int,
    requests_: *mut c_int,
    index: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    run("MPI_Waitany", 1, || {
        // SAFETY: the caller's promise.
        let slots = unsafe { handles(n, requests_) }?;
        // Requests of several parts are polled; the others are handed to
        // the runtime's wait.
        let polled = slots.iter().any(|&h| requests::is_many(h));
        let found = loop {
            match any_done(slots)? {
                Some(found) => break found,
                None if polled => {
                    runtime()?.progress();
                }
                None => break Some(waitany_running(slots)?),
            }
        };
        let (i, s, failure) = match found {
            Some(d) => (d.index as c_int, d.status, d.failure),
            None => (UNDEFINED, requests::empty_status(), None),
        };
        // SAFETY: the caller's promise.
        unsafe {
            put("index", index, i)?;
            store(status, s);
        }
        failure.map_or(Ok(()), Err)
    })
}

/// Waits, in the runtime, for the first running request of `slots` to
/// complete, and completes it (without error or in error).
fn waitany_running(slots: &mut [c_int]) -> Result<Done, Fail> {
    let rt = runtime()?;
    let mut ids = Vec::with_capacity(slots.len());
    let mut at = Vec::with_capacity(slots.len());
    for (i, &h) in slots.iter().enumerate() {
        if let Kind::Running(id) = requests::kind(h)? {
            ids.push(id);
            at.push(i);
        }
    }
    let (k, outcome) = rt.wait_any(&ids)?;
    let i = at[k];
    let outcome = requests::completed_by_any(slots[i], outcome);
    Ok(Done::of(slots, i, outcome))
}

/// `MPI_Testany`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Testany(
    n: c_int,
    requests_: *mut c_int,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    run("MPI_Testany", 1, || {
        // SAFETY: the caller's promise.
        let slots = unsafe { handles(n, requests_) }?;
        let (i, s, f, failure) = match any_done(slots)? {
            Some(Some(d)) => (d.index as c_int, d.status, 1, d.failure),
            Some(None) => (UNDEFINED, requests::empty_status(), 1, None),
            None => (UNDEFINED, requests::empty_status(), 0, None),
        };
        // SAFETY: the caller's promise.
        unsafe {
            put("index", index, i)?;
            if f == 1 {
                store(status, s);
            }
            put("flag", flag, f)?;
        }
        failure.map_or(Ok(()), Err)
    })
}

/// Completes every request of `slots` that is complete now, writing their
/// indices and statuses; `MPI_UNDEFINED` when all are null or inactive.
/// A request that completed in error is among them, its status's
/// `MPI_ERROR` saying why; the call then answers `MPI_ERR_IN_STATUS`
/// (after writing everything).
///
/// # Safety
///
/// `indices` and `statuses` (unless null) hold one entry per request.
unsafe fn some(
    slots: &mut [c_int],
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MpiStatus,
) -> Result<usize, Fail> {
    let rt = runtime()?;
    let (mut n, mut active) = (0, false);
    let mut failed = None;
    for (i, slot) in slots.iter_mut().enumerate() {
        if matches!(requests::kind(*slot)?, Kind::Inactive) {
            continue;
        }
        active = true;
        let s = match requests::complete(rt, *slot, false) {
            Ok(None) => continue,
            Ok(Some(done)) => settle(slot, done),
            Err(f) => {
                let code = record(f.class, f.message.clone());
                let s = failed_at(slot, &f, code);
                failed.get_or_insert((i, f));
                s
            }
        };
        // SAFETY: the caller's promise.
        unsafe {
            put("array_of_indices", indices.add(n), i as c_int)?;
            store_at(statuses, n, s);
        }
        n += 1;
    }
    let out = if active { n as c_int } else { UNDEFINED };
    // SAFETY: the caller's promise.
    unsafe { put("outcount", outcount, out) }?;
    if let Some((i, f)) = failed {
        return Err(in_status(i, &f));
    }
    Ok(if active { n } else { usize::MAX })
}

/// `MPI_Waitsome`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Waitsome(
    n: c_int,
    requests_: *mut c_int,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MpiStatus,
) -> c_int {
    run("MPI_Waitsome", 1, || {
        // SAFETY: the caller's promise.
        let slots = unsafe { handles(n, requests_) }?;
        loop {
            // SAFETY: the caller's promise.
            if unsafe { some(slots, outcount, indices, statuses) }? != 0 {
                return Ok(());
            }
            runtime()?.progress();
        }
    })
}

/// `MPI_Testsome`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Testsome(
    n: c_int,
    requests_: *mut c_int,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MpiStatus,
) -> c_int {
    run("MPI_Testsome", 1, || {
        // SAFETY: the caller's promise.
        let slots = unsafe { handles(n, requests_) }?;
        // SAFETY: the caller's promise.
        unsafe { some(slots, outcount, indices, statuses) }.map(drop)
    })
}

/// `MPI_Request_get_status`: tests without releasing the request.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Request_get_status(
    request: c_int,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    run("MPI_Request_get_status", 1, || {
        let rt = runtime()?;
        let s = match requests::kind(request)? {
            Kind::Inactive => Some(requests::empty_status()),
            Kind::Running(id) => {
                requests::test_in_place(rt, request, id)?.map(|s| MpiStatus::of(&s))
            }
            Kind::Ready => None,
        };
        let s = match s {
            Some(s) => Some(s),
            None if matches!(requests::kind(request)?, Kind::Ready) => {
                // Complete: peek at its status by completing a copy.
                Some(requests::peek(request)?)
            }
            None => None,
        };
        // SAFETY: the caller's promise.
        unsafe {
            if let Some(s) = s {
                store(status, s);
            }
            put("flag", flag, c_int::from(s.is_some()))
        }
    })
}

/// `MPI_Request_free`: a send or collective goes on and completes on its
/// own (finalize waits for it); a receive still pending cannot be freed
/// (oxmpi refuses it: wait for it, or cancel it and wait).
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Request_free(request: *mut c_int) -> c_int {
    run("MPI_Request_free", 1, || {
        if request.is_null() {
            return Err(Fail::new(ERR_ARG, "request is a null pointer"));
        }
        // SAFETY: not null; the caller's promise.
        let slot = unsafe { &mut *request };
        requests::free(runtime()?, *slot)?;
        *slot = REQUEST_NULL;
        Ok(())
    })
}

/// `MPI_Cancel`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Cancel(request: *mut c_int) -> c_int {
    run("MPI_Cancel", 1, || {
        if request.is_null() {
            return Err(Fail::new(ERR_ARG, "request is a null pointer"));
        }
        // SAFETY: not null; the caller's promise.
        if let Kind::Running(id) = requests::kind(unsafe { *request })? {
            runtime()?.cancel(id)?;
        }
        Ok(())
    })
}

/// `MPI_Test_cancelled`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Test_cancelled(status: *const MpiStatus, flag: *mut c_int) -> c_int {
    run("MPI_Test_cancelled", 1, || {
        if status.is_null() {
            return Err(Fail::new(ERR_ARG, "status is a null pointer"));
        }
        // SAFETY: not null; the caller's promise.
        let cancelled = unsafe { (*status).cancelled };
        // SAFETY: the caller's promise.
        unsafe { put("flag", flag, c_int::from(cancelled != 0)) }
    })
}
