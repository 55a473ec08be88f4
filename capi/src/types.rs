//! Datatypes: sizes and extents, envelopes and contents, names, commit
//! and free, packing (native and external32), addresses. The
//! constructors are in `constructors.rs`.

use crate::errors::{run, Fail, ERR_ARG, ERR_TRUNCATE};
use crate::handles::{any_type, count, datatype, put, update_type};
use oxmpi_datatype::Combiner;
use std::ffi::{c_char, c_int, c_void, CStr};

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

/// `MPI_Type_size_x`: [`PMPI_Type_size`] as an `MPI_Count`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_size_x(t: c_int, size: *mut i64) -> c_int {
    run("MPI_Type_size_x", 1, || {
        let s = i64::try_from(any_type(t)?.dt.size()).unwrap_or(i64::from(crate::UNDEFINED));
        // SAFETY: the caller's promise.
        unsafe { put("size", size, s) }
    })
}

/// `MPI_Type_get_extent_x`: [`PMPI_Type_get_extent`] as `MPI_Count`s.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_extent_x(t: c_int, lb: *mut i64, extent: *mut i64) -> c_int {
    run("MPI_Type_get_extent_x", 1, || {
        let e = any_type(t)?;
        // SAFETY: the caller's promise.
        unsafe {
            put("lb", lb, e.dt.lb() as i64)?;
            put("extent", extent, e.dt.extent() as i64)
        }
    })
}

/// `MPI_Type_get_true_extent_x`: [`PMPI_Type_get_true_extent`] as
/// `MPI_Count`s.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_true_extent_x(
    t: c_int,
    lb: *mut i64,
    extent: *mut i64,
) -> c_int {
    run("MPI_Type_get_true_extent_x", 1, || {
        let e = any_type(t)?;
        // SAFETY: the caller's promise.
        unsafe {
            put("true_lb", lb, e.dt.true_lb() as i64)?;
            put("true_extent", extent, e.dt.true_extent() as i64)
        }
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

/// The `MPI_COMBINER_*` code of `c` (`mpi.h`'s values).
fn combiner_code(c: Combiner) -> c_int {
    match c {
        Combiner::Named => 1,
        Combiner::Dup => 2,
        Combiner::Contiguous => 3,
        Combiner::Vector => 4,
        Combiner::Hvector => 5,
        Combiner::Indexed => 6,
        Combiner::Hindexed => 7,
        Combiner::IndexedBlock => 8,
        Combiner::HindexedBlock => 9,
        Combiner::Struct => 10,
        Combiner::Subarray => 11,
        Combiner::Darray => 12,
        Combiner::Resized => 13,
    }
}

/// `MPI_Type_get_envelope`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_envelope(
    t: c_int,
    num_integers: *mut c_int,
    num_addresses: *mut c_int,
    num_datatypes: *mut c_int,
    combiner: *mut c_int,
) -> c_int {
    run("MPI_Type_get_envelope", 1, || {
        let e = any_type(t)?;
        let c = e.dt.contents();
        // SAFETY: the caller's promise.
        unsafe {
            put("num_integers", num_integers, c.integers.len() as c_int)?;
            put("num_addresses", num_addresses, c.addresses.len() as c_int)?;
            put("num_datatypes", num_datatypes, c.types.len() as c_int)?;
            put("combiner", combiner, combiner_code(e.dt.combiner()))
        }
    })
}

/// `MPI_Type_get_contents`: the types it gives are new handles of the
/// types the constructor took (free them with `MPI_Type_free`); a
/// predefined type has no contents (`MPI_ERR_TYPE`, as MPI says).
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_contents(
    t: c_int,
    max_integers: c_int,
    max_addresses: c_int,
    max_datatypes: c_int,
    integers: *mut c_int,
    addresses: *mut isize,
    datatypes: *mut c_int,
) -> c_int {
    run("MPI_Type_get_contents", 1, || {
        let e = any_type(t)?;
        if e.dt.combiner() == Combiner::Named {
            return Err(Fail::new(crate::errors::ERR_TYPE, format!("datatype {t} is predefined and has no contents (its combiner is MPI_COMBINER_NAMED)")));
        }
        let c = e.dt.contents();
        let room = |what: &str, max: c_int, need: usize| -> Result<(), Fail> {
            if (max as i64) < need as i64 {
                return Err(Fail::new(ERR_ARG, format!("{what} is {max} but the type has {need}; MPI_Type_get_envelope says how many")));
            }
            Ok(())
        };
        room("max_integers", max_integers, c.integers.len())?;
        room("max_addresses", max_addresses, c.addresses.len())?;
        room("max_datatypes", max_datatypes, c.types.len())?;
        for (i, &v) in c.integers.iter().enumerate() {
            // SAFETY: `max_integers` entries (the caller's promise).
            unsafe { put("array_of_integers", integers.add(i), v as c_int)? };
        }
        for (i, &v) in c.addresses.iter().enumerate() {
            // SAFETY: `max_addresses` entries (the caller's promise).
            unsafe { put("array_of_addresses", addresses.add(i), v)? };
        }
        for (i, ty) in c.types.iter().enumerate() {
            let h = crate::handles::handle_of(ty);
            // SAFETY: `max_datatypes` entries (the caller's promise).
            unsafe { put("array_of_datatypes", datatypes.add(i), h)? };
        }
        Ok(())
    })
}

/// `MPI_Type_set_name`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_set_name(t: c_int, name: *const c_char) -> c_int {
    run("MPI_Type_set_name", 1, || {
        if name.is_null() {
            return Err(Fail::new(ERR_ARG, "type_name is a null pointer"));
        }
        // SAFETY: a NUL-terminated string (the caller's promise).
        let text = unsafe { CStr::from_ptr(name) }.to_string_lossy();
        any_type(t)?.dt.set_name(&text);
        Ok(())
    })
}

/// `MPI_Type_get_name`.
///
/// # Safety
///
/// As MPI requires of its arguments (`name` holds
/// `MPI_MAX_OBJECT_NAME` bytes).
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_name(
    t: c_int,
    name: *mut c_char,
    resultlen: *mut c_int,
) -> c_int {
    run("MPI_Type_get_name", 1, || {
        let text = any_type(t)?.dt.name();
        // SAFETY: the caller's promise.
        unsafe { crate::env::copy_out(&text, name, crate::MAX_OBJECT_NAME, resultlen) }
    })
}

/// A data representation argument.
///
/// # Safety
///
/// `datarep` is null or NUL-terminated.
unsafe fn datarep(datarep: *const c_char) -> Result<String, Fail> {
    if datarep.is_null() {
        return Err(Fail::new(ERR_ARG, "datarep is a null pointer"));
    }
    // SAFETY: NUL-terminated (the caller's promise).
    Ok(unsafe { CStr::from_ptr(datarep) }
        .to_string_lossy()
        .into_owned())
}

/// The bytes `count` elements of `t` reach from their buffer's origin,
/// as a slice starting at the lowest (with the origin's offset in it).
///
/// # Safety
///
/// The elements' bytes are readable.
unsafe fn reach<'a>(
    dt: &oxmpi_datatype::Datatype,
    origin: *const u8,
    count: usize,
) -> (&'a [u8], usize) {
    match dt.reach(count) {
        // SAFETY: the elements occupy `lo..hi` from the origin (the
        // caller's promise).
        Some((lo, hi)) => unsafe {
            (
                std::slice::from_raw_parts(origin.wrapping_offset(lo), (hi - lo) as usize),
                (-lo) as usize,
            )
        },
        None => (&[], 0),
    }
}

/// `MPI_Pack_external`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Pack_external(
    rep: *const c_char,
    inbuf: *const c_void,
    incount: c_int,
    t: c_int,
    outbuf: *mut c_void,
    outsize: isize,
    position: *mut isize,
) -> c_int {
    run("MPI_Pack_external", 1, || {
        // SAFETY: the caller's promise.
        let rep = unsafe { datarep(rep) }?;
        let e = datatype(t)?;
        let n = count("incount", incount)?;
        if position.is_null() || outsize < 0 {
            return Err(Fail::new(
                ERR_ARG,
                "position is a null pointer, or outsize is negative",
            ));
        }
        // SAFETY: the caller's promise: the elements are readable and
        // `outbuf` holds `outsize` bytes.
        let (buf, origin, out) = unsafe {
            let (buf, origin) = reach(&e.dt, inbuf.cast(), n);
            (
                buf,
                origin,
                std::slice::from_raw_parts_mut(outbuf.cast::<u8>(), outsize as usize),
            )
        };
        // SAFETY: checked not null.
        let mut at = unsafe { *position } as usize;
        e.dt.pack_external(&rep, buf, origin, n, out, &mut at)?;
        // SAFETY: as above.
        unsafe { *position = at as isize };
        Ok(())
    })
}

/// `MPI_Unpack_external`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Unpack_external(
    rep: *const c_char,
    inbuf: *const c_void,
    insize: isize,
    position: *mut isize,
    outbuf: *mut c_void,
    outcount: c_int,
    t: c_int,
) -> c_int {
    run("MPI_Unpack_external", 1, || {
        // SAFETY: the caller's promise.
        let rep = unsafe { datarep(rep) }?;
        let e = datatype(t)?;
        let n = count("outcount", outcount)?;
        if position.is_null() || insize < 0 {
            return Err(Fail::new(
                ERR_ARG,
                "position is a null pointer, or insize is negative",
            ));
        }
        let (lo, hi) = e.dt.reach(n).unwrap_or((0, 0));
        // SAFETY: the caller's promise: `inbuf` holds `insize` bytes and
        // the elements' bytes are writable and used by nothing else.
        let (input, buf) = unsafe {
            (
                std::slice::from_raw_parts(inbuf.cast::<u8>(), insize as usize),
                std::slice::from_raw_parts_mut(
                    outbuf.cast::<u8>().wrapping_offset(lo),
                    (hi - lo) as usize,
                ),
            )
        };
        // SAFETY: checked not null.
        let mut at = unsafe { *position } as usize;
        e.dt.unpack_external(&rep, input, &mut at, buf, (-lo) as usize, n)?;
        // SAFETY: as above.
        unsafe { *position = at as isize };
        Ok(())
    })
}

/// `MPI_Pack_external_size`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Pack_external_size(
    rep: *const c_char,
    incount: c_int,
    t: c_int,
    size: *mut isize,
) -> c_int {
    run("MPI_Pack_external_size", 1, || {
        // SAFETY: the caller's promise.
        let rep = unsafe { datarep(rep) }?;
        let n = any_type(t)?
            .dt
            .external_size(&rep, count("incount", incount)?)?;
        // SAFETY: the caller's promise.
        unsafe { put("size", size, n as isize) }
    })
}
