//! The datatype constructors: contiguous, vector, hvector, indexed,
//! hindexed, indexed block, hindexed block, struct, subarray, darray,
//! resized, dup. Each registers a new, uncommitted type.

use crate::errors::{run, Fail, ERR_ARG};
use crate::handles::{any_type, array, count, new_type, update_type};
use oxmpi_datatype::{Datatype, Distribution, Order};
use std::ffi::c_int;

/// Registers `made` and writes its handle to `out`.
///
/// # Safety
///
/// `out` is valid for a write.
unsafe fn made(out: *mut c_int, made: Datatype) -> Result<(), Fail> {
    if out.is_null() {
        return Err(Fail::new(ERR_ARG, "newtype is a null pointer"));
    }
    let h = new_type(made);
    // SAFETY: not null; the caller's promise.
    unsafe { out.write(h) };
    Ok(())
}

fn wide(v: &[c_int]) -> Vec<isize> {
    v.iter().map(|&x| x as isize).collect()
}

/// `MPI_Type_contiguous`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_contiguous(n: c_int, old: c_int, out: *mut c_int) -> c_int {
    run("MPI_Type_contiguous", 1, || {
        let t = Datatype::contiguous(n as isize, &any_type(old)?.dt)?;
        // SAFETY: the caller's promise.
        unsafe { made(out, t) }
    })
}

/// `MPI_Type_vector`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_vector(
    n: c_int,
    blocklen: c_int,
    stride: c_int,
    old: c_int,
    out: *mut c_int,
) -> c_int {
    run("MPI_Type_vector", 1, || {
        let t = Datatype::vector(
            n as isize,
            blocklen as isize,
            stride as isize,
            &any_type(old)?.dt,
        )?;
        // SAFETY: the caller's promise.
        unsafe { made(out, t) }
    })
}

/// `MPI_Type_create_hvector`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_hvector(
    n: c_int,
    blocklen: c_int,
    stride: isize,
    old: c_int,
    out: *mut c_int,
) -> c_int {
    run("MPI_Type_create_hvector", 1, || {
        let t = Datatype::hvector(n as isize, blocklen as isize, stride, &any_type(old)?.dt)?;
        // SAFETY: the caller's promise.
        unsafe { made(out, t) }
    })
}

/// `MPI_Type_indexed`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_indexed(
    n: c_int,
    blocklens: *const c_int,
    displs: *const c_int,
    old: c_int,
    out: *mut c_int,
) -> c_int {
    run("MPI_Type_indexed", 1, || {
        let n = count("count", n)?;
        // SAFETY: the caller's promise: `count` entries each.
        let (b, d) = unsafe {
            (
                array("blocklengths", blocklens, n)?,
                array("displacements", displs, n)?,
            )
        };
        let t = Datatype::indexed(&wide(b), &wide(d), &any_type(old)?.dt)?;
        // SAFETY: the caller's promise.
        unsafe { made(out, t) }
    })
}

/// `MPI_Type_create_struct`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_struct(
    n: c_int,
    blocklens: *const c_int,
    displs: *const isize,
    types: *const c_int,
    out: *mut c_int,
) -> c_int {
    run("MPI_Type_create_struct", 1, || {
        let n = count("count", n)?;
        // SAFETY: the caller's promise: `count` entries each.
        let (b, d, t) = unsafe {
            (
                array("blocklengths", blocklens, n)?,
                array("displacements", displs, n)?,
                array("types", types, n)?,
            )
        };
        let children = t
            .iter()
            .map(|&h| any_type(h).map(|e| e.dt.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        let made_type = Datatype::structure(&wide(b), d, &children)?;
        // SAFETY: the caller's promise.
        unsafe { made(out, made_type) }
    })
}

/// `MPI_Type_create_resized`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_resized(
    old: c_int,
    lb: isize,
    extent: isize,
    out: *mut c_int,
) -> c_int {
    run("MPI_Type_create_resized", 1, || {
        let t = Datatype::resized(&any_type(old)?.dt, lb, extent)?;
        // SAFETY: the caller's promise.
        unsafe { made(out, t) }
    })
}

/// `MPI_Type_dup`: the copy is committed when the original is.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_dup(old: c_int, out: *mut c_int) -> c_int {
    run("MPI_Type_dup", 1, || {
        let e = any_type(old)?;
        // SAFETY: the caller's promise.
        unsafe { made(out, e.dt.dup()) }?;
        // SAFETY: just written.
        let h = unsafe { *out };
        let (committed, element) = (e.committed, e.element);
        update_type(h, false, |n| {
            n.committed = committed;
            n.element = element;
        })
    })
}

/// `MPI_Type_create_hindexed`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_hindexed(
    n: c_int,
    blocklens: *const c_int,
    displs: *const isize,
    old: c_int,
    out: *mut c_int,
) -> c_int {
    run("MPI_Type_create_hindexed", 1, || {
        let n = count("count", n)?;
        // SAFETY: the caller's promise: `count` entries each.
        let (b, d) = unsafe {
            (
                array("blocklengths", blocklens, n)?,
                array("displacements", displs, n)?,
            )
        };
        let t = Datatype::hindexed(&wide(b), d, &any_type(old)?.dt)?;
        // SAFETY: the caller's promise.
        unsafe { made(out, t) }
    })
}

/// `MPI_Type_create_indexed_block`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_indexed_block(
    n: c_int,
    blocklen: c_int,
    displs: *const c_int,
    old: c_int,
    out: *mut c_int,
) -> c_int {
    run("MPI_Type_create_indexed_block", 1, || {
        let n = count("count", n)?;
        // SAFETY: the caller's promise: `count` entries.
        let d = unsafe { array("displacements", displs, n) }?;
        let t = Datatype::indexed_block(blocklen as isize, &wide(d), &any_type(old)?.dt)?;
        // SAFETY: the caller's promise.
        unsafe { made(out, t) }
    })
}

/// `MPI_Type_create_hindexed_block`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_hindexed_block(
    n: c_int,
    blocklen: c_int,
    displs: *const isize,
    old: c_int,
    out: *mut c_int,
) -> c_int {
    run("MPI_Type_create_hindexed_block", 1, || {
        let n = count("count", n)?;
        // SAFETY: the caller's promise: `count` entries.
        let d = unsafe { array("displacements", displs, n) }?;
        let t = Datatype::hindexed_block(blocklen as isize, d, &any_type(old)?.dt)?;
        // SAFETY: the caller's promise.
        unsafe { made(out, t) }
    })
}

/// `MPI_ORDER_C` 0 or `MPI_ORDER_FORTRAN` 1.
fn order(o: c_int) -> Result<Order, Fail> {
    match o {
        0 => Ok(Order::C),
        1 => Ok(Order::Fortran),
        _ => Err(Fail::new(
            ERR_ARG,
            format!("order {o} is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN"),
        )),
    }
}

/// `MPI_Type_create_subarray`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_subarray(
    ndims: c_int,
    sizes: *const c_int,
    subsizes: *const c_int,
    starts: *const c_int,
    order_: c_int,
    old: c_int,
    out: *mut c_int,
) -> c_int {
    run("MPI_Type_create_subarray", 1, || {
        let n = count("ndims", ndims)?;
        // SAFETY: the caller's promise: `ndims` entries each.
        let (a, b, c) = unsafe {
            (
                array("sizes", sizes, n)?,
                array("subsizes", subsizes, n)?,
                array("starts", starts, n)?,
            )
        };
        let t = Datatype::subarray(
            &wide(a),
            &wide(b),
            &wide(c),
            order(order_)?,
            &any_type(old)?.dt,
        )?;
        // SAFETY: the caller's promise.
        unsafe { made(out, t) }
    })
}

/// `MPI_Type_create_darray`: distributions `MPI_DISTRIBUTE_BLOCK` 0,
/// `CYCLIC` 1, `NONE` 2; `MPI_DISTRIBUTE_DFLT_DARG` −1.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_darray(
    size: c_int,
    rank: c_int,
    ndims: c_int,
    gsizes: *const c_int,
    distribs: *const c_int,
    dargs: *const c_int,
    psizes: *const c_int,
    order_: c_int,
    old: c_int,
    out: *mut c_int,
) -> c_int {
    run("MPI_Type_create_darray", 1, || {
        let n = count("ndims", ndims)?;
        // SAFETY: the caller's promise: `ndims` entries each.
        let (g, d, a, p) = unsafe {
            (
                array("gsizes", gsizes, n)?,
                array("distribs", distribs, n)?,
                array("dargs", dargs, n)?,
                array("psizes", psizes, n)?,
            )
        };
        let whole = |what: &str, v: &[c_int]| -> Result<Vec<usize>, Fail> {
            v.iter().map(|&x| count(what, x)).collect()
        };
        let dists = d
            .iter()
            .zip(a)
            .enumerate()
            .map(|(i, (&kind, &darg))| {
                let block = match darg {
                    -1 => None,
                    b if b > 0 => Some(b as usize),
                    b => return Err(Fail::new(ERR_ARG, format!("dargs[{i}] is {b}; give a block of 1 or more, or MPI_DISTRIBUTE_DFLT_DARG"))),
                };
                match kind {
                    0 => Ok(Distribution::Block(block)),
                    1 => Ok(Distribution::Cyclic(block)),
                    2 => Ok(Distribution::None),
                    k => Err(Fail::new(ERR_ARG, format!("distribs[{i}] is {k}; it is not a distribution"))),
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        let t = Datatype::darray(
            count("size", size)?,
            count("rank", rank)?,
            &whole("gsizes", g)?,
            &dists,
            &whole("psizes", p)?,
            order(order_)?,
            &any_type(old)?.dt,
        )?;
        // SAFETY: the caller's promise.
        unsafe { made(out, t) }
    })
}
