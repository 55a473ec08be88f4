//! Datatypes: sizes and extents, the constructors, commit and free,
//! packing, addresses.

use crate::errors::{run, Fail, ERR_ARG, ERR_TRUNCATE};
use crate::handles::{any_type, count, datatype, new_type, put, update_type};
use oxmpi_datatype::Datatype;
use std::ffi::{c_int, c_void};

/// Reads `n` values of an input array.
///
/// # Safety
///
/// `p` holds `n` values (or `n` is 0).
unsafe fn array<'a, T>(what: &str, p: *const T, n: usize) -> Result<&'a [T], Fail> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Fail::new(ERR_ARG, format!("{what} is a null pointer")));
    }
    // SAFETY: not null, `n` values (the caller's promise).
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

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

/// `MPI_Type_size`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_size(t: c_int, size: *mut c_int) -> c_int {
    run("MPI_Type_size", 1, || {
        let s = any_type(t)?.dt.size();
        let s = c_int::try_from(s).unwrap_or(crate::UNDEFINED);
        // SAFETY: the caller's promise.
        unsafe { put("size", size, s) }
    })
}

/// `MPI_Type_get_extent`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_extent(
    t: c_int,
    lb: *mut isize,
    extent: *mut isize,
) -> c_int {
    run("MPI_Type_get_extent", 1, || {
        let e = any_type(t)?;
        // SAFETY: the caller's promise.
        unsafe {
            put("lb", lb, e.dt.lb())?;
            put("extent", extent, e.dt.extent())
        }
    })
}

/// `MPI_Type_get_true_extent`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_true_extent(
    t: c_int,
    lb: *mut isize,
    extent: *mut isize,
) -> c_int {
    run("MPI_Type_get_true_extent", 1, || {
        let e = any_type(t)?;
        // SAFETY: the caller's promise.
        unsafe {
            put("true_lb", lb, e.dt.true_lb())?;
            put("true_extent", extent, e.dt.true_extent())
        }
    })
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

/// `MPI_Type_commit` (on a predefined type: nothing to do).
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_commit(t: *mut c_int) -> c_int {
    run("MPI_Type_commit", 1, || {
        if t.is_null() {
            return Err(Fail::new(ERR_ARG, "datatype is a null pointer"));
        }
        // SAFETY: not null; the caller's promise.
        update_type(unsafe { *t }, false, |e| e.committed = true)
    })
}

/// `MPI_Type_free`: sets the handle to `MPI_DATATYPE_NULL`. Types built
/// on it keep their own description.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_free(t: *mut c_int) -> c_int {
    run("MPI_Type_free", 1, || {
        if t.is_null() {
            return Err(Fail::new(ERR_ARG, "datatype is a null pointer"));
        }
        // SAFETY: not null; the caller's promise.
        update_type(unsafe { *t }, true, |_| {})?;
        // SAFETY: as above.
        unsafe { *t = 0 };
        Ok(())
    })
}

/// Checks a pack or unpack position: `*position + needed ≤ size`.
///
/// # Safety
///
/// `position` is valid for reads.
unsafe fn window(
    name: &str,
    position: *const c_int,
    size: c_int,
    needed: usize,
) -> Result<usize, Fail> {
    if position.is_null() {
        return Err(Fail::new(ERR_ARG, "position is a null pointer"));
    }
    // SAFETY: not null; the caller's promise.
    let at = unsafe { *position };
    let at = usize::try_from(at)
        .map_err(|_| Fail::new(ERR_ARG, format!("position is {at}; it must be 0 or more")))?;
    let size = count("the buffer size", size)?;
    if at.checked_add(needed).is_none_or(|end| end > size) {
        return Err(Fail::new(
            ERR_TRUNCATE,
            format!(
                "{name}: the data take {needed} bytes from position {at} but the buffer has {size}"
            ),
        ));
    }
    Ok(at)
}

/// `MPI_Pack`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Pack(
    inbuf: *const c_void,
    incount: c_int,
    t: c_int,
    outbuf: *mut c_void,
    outsize: c_int,
    position: *mut c_int,
    comm_: c_int,
) -> c_int {
    run("MPI_Pack", comm_, || {
        let e = datatype(t)?;
        let n = count("incount", incount)?;
        let needed = e.dt.packed_size(n)?;
        // SAFETY: the caller's promise.
        let at = unsafe { window("MPI_Pack", position, outsize, needed) }?;
        if needed > 0 {
            // SAFETY: `outbuf` holds `outsize ≥ at + needed` bytes and
            // `inbuf` the elements (the caller's promise).
            unsafe {
                let out = std::slice::from_raw_parts_mut(outbuf.cast::<u8>().add(at), needed);
                e.dt.pack_raw(inbuf.cast(), n, 0, out);
            }
        }
        // SAFETY: checked not null in `window`.
        unsafe { *position = (at + needed) as c_int };
        Ok(())
    })
}

/// `MPI_Unpack`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Unpack(
    inbuf: *const c_void,
    insize: c_int,
    position: *mut c_int,
    outbuf: *mut c_void,
    outcount: c_int,
    t: c_int,
    comm_: c_int,
) -> c_int {
    run("MPI_Unpack", comm_, || {
        let e = datatype(t)?;
        let n = count("outcount", outcount)?;
        let needed = e.dt.packed_size(n)?;
        // SAFETY: the caller's promise.
        let at = unsafe { window("MPI_Unpack", position, insize, needed) }?;
        if needed > 0 {
            // SAFETY: `inbuf` holds `insize ≥ at + needed` bytes and
            // `outbuf` the elements (the caller's promise).
            unsafe {
                let input = std::slice::from_raw_parts(inbuf.cast::<u8>().add(at), needed);
                e.dt.unpack_raw(input, outbuf.cast(), n, 0);
            }
        }
        // SAFETY: checked not null in `window`.
        unsafe { *position = (at + needed) as c_int };
        Ok(())
    })
}

/// `MPI_Pack_size`: packing adds no header, so it is the data's size.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Pack_size(
    incount: c_int,
    t: c_int,
    comm_: c_int,
    size: *mut c_int,
) -> c_int {
    run("MPI_Pack_size", comm_, || {
        let n = any_type(t)?.dt.packed_size(count("incount", incount)?)?;
        let n = c_int::try_from(n)
            .map_err(|_| Fail::new(crate::errors::ERR_COUNT, "the packed size passes an int"))?;
        // SAFETY: the caller's promise.
        unsafe { put("size", size, n) }
    })
}

/// `MPI_Get_address`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Get_address(location: *const c_void, address: *mut isize) -> c_int {
    run("MPI_Get_address", 1, || {
        // SAFETY: the caller's promise.
        unsafe { put("address", address, location as isize) }
    })
}
