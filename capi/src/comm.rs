//! Communicators: rank, size, dup, split, free, compare, Fortran handles.

use crate::errors::{forget_handler, handler_of, run, set_handler, Fail, ERR_ARG, ERR_COMM};
use crate::handles::{comm, comm_handle, put, COMM_NULL};
use crate::runtime;
use oxmpi_mpi_core::CommRelation;
use std::ffi::c_int;

/// The rank of this process in `comm_`, or the error of a freed one.
fn rank_in(comm_: c_int) -> Result<c_int, Fail> {
    let rt = runtime()?;
    let r = rt.comm_rank(comm(comm_)?);
    if r < 0 {
        return Err(Fail::new(
            ERR_COMM,
            format!("communicator {comm_} was freed"),
        ));
    }
    Ok(r)
}

/// `MPI_Comm_rank`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_rank(comm_: c_int, rank: *mut c_int) -> c_int {
    run("MPI_Comm_rank", comm_, || {
        let r = rank_in(comm_)?;
        // SAFETY: the caller's promise.
        unsafe { put("rank", rank, r) }
    })
}

/// `MPI_Comm_size`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_size(comm_: c_int, size: *mut c_int) -> c_int {
    run("MPI_Comm_size", comm_, || {
        let rt = runtime()?;
        let n = rt.comm_size(comm(comm_)?);
        if n <= 0 {
            return Err(Fail::new(
                ERR_COMM,
                format!("communicator {comm_} was freed"),
            ));
        }
        // SAFETY: the caller's promise.
        unsafe { put("size", size, n) }
    })
}

/// `MPI_Comm_dup`: the new communicator inherits the error handler, and
/// the attributes their keyvals' copy callbacks copy.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_dup(comm_: c_int, newcomm: *mut c_int) -> c_int {
    run("MPI_Comm_dup", comm_, || {
        let c = runtime()?.comm_dup(comm(comm_)?)?;
        let h = comm_handle(c);
        set_handler(h, handler_of(comm_));
        crate::attrs::copy_all(comm_, h)?;
        // SAFETY: the caller's promise.
        unsafe { put("newcomm", newcomm, h) }
    })
}

/// `MPI_Comm_split`: `MPI_COMM_NULL` for `MPI_UNDEFINED` (the same value
/// in `mpi.h` and the MPI layer).
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_split(
    comm_: c_int,
    color: c_int,
    key: c_int,
    newcomm: *mut c_int,
) -> c_int {
    run("MPI_Comm_split", comm_, || {
        let h = match runtime()?.comm_split(comm(comm_)?, color, key)? {
            Some(c) => comm_handle(c),
            None => COMM_NULL,
        };
        if h != COMM_NULL {
            set_handler(h, handler_of(comm_));
        }
        // SAFETY: the caller's promise.
        unsafe { put("newcomm", newcomm, h) }
    })
}

/// `MPI_Comm_free`: runs the delete callbacks of its attributes and sets
/// the handle to `MPI_COMM_NULL`; the predefined communicators cannot be
/// freed.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_free(comm_: *mut c_int) -> c_int {
    let h = if comm_.is_null() {
        COMM_NULL
    } else {
        // SAFETY: not null; the caller's promise (read for the error
        // handler only).
        unsafe { *comm_ }
    };
    run("MPI_Comm_free", h, || {
        if comm_.is_null() {
            return Err(Fail::new(ERR_ARG, "comm is a null pointer"));
        }
        if h == crate::COMM_WORLD || h == crate::COMM_SELF {
            return Err(Fail::new(
                ERR_COMM,
                "MPI_COMM_WORLD and MPI_COMM_SELF cannot be freed",
            ));
        }
        let c = comm(h)?;
        crate::attrs::delete_all(h)?;
        runtime()?.comm_free(c)?;
        forget_handler(h);
        crate::groups::forget_name(h);
        crate::topo::forget(h);
        crate::graph::forget(h);
        crate::dist_graph::forget(h);
        crate::neighbor::forget(h)?;
        // SAFETY: not null; the caller's promise.
        unsafe { *comm_ = COMM_NULL };
        Ok(())
    })
}

/// `MPI_Comm_test_inter`: false for every communicator (oxmpi makes no
/// intercommunicators).
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_test_inter(comm_: c_int, flag: *mut c_int) -> c_int {
    run("MPI_Comm_test_inter", comm_, || {
        if runtime()?.comm_size(comm(comm_)?) <= 0 {
            return Err(Fail::new(
                ERR_COMM,
                format!("communicator {comm_} was freed"),
            ));
        }
        // SAFETY: the caller's promise.
        unsafe { put("flag", flag, 0) }
    })
}

/// `MPI_Comm_compare`: `MPI_IDENT` 0, `MPI_CONGRUENT` 1, `MPI_SIMILAR` 2,
/// `MPI_UNEQUAL` 3.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_compare(a: c_int, b: c_int, result: *mut c_int) -> c_int {
    run("MPI_Comm_compare", a, || {
        let r = match runtime()?.comm_compare(comm(a)?, comm(b)?)? {
            CommRelation::Identical => 0,
            CommRelation::Congruent => 1,
            CommRelation::Similar => 2,
            CommRelation::Unequal => 3,
        };
        // SAFETY: the caller's promise.
        unsafe { put("result", result, r) }
    })
}
