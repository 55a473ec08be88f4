//! Reduction operations the program makes (`MPI_Op_create`,
//! `MPI_Op_free`, `MPI_Op_commutative`), and how a reduction calls one.
//!
//! Handles: the predefined operations are 1 to 12; a program's operations
//! come from 32.

use crate::coll_staging::Wide;
use crate::errors::{run, Fail, ERR_ARG, ERR_COUNT, ERR_OP};
use crate::handles::{put, Layout};
use oxmpi_datatype::Datatype;
use slab::Slab;
use std::ffi::{c_int, c_void};
use std::sync::Mutex;

/// `MPI_User_function`.
pub type UserFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut c_int);

/// The first handle of a program's operation.
pub const FIRST_USER_OP: c_int = 32;

/// A program's operation.
#[derive(Clone, Copy)]
pub struct UserOpEntry {
    /// Its function.
    pub func: UserFn,
    /// Whether it commutes.
    pub commute: bool,
}

static OPS: Mutex<Slab<UserOpEntry>> = Mutex::new(Slab::new());

/// The program's operation of handle `h`, if `h` is one.
///
/// # Errors
///
/// `MPI_ERR_OP` for a handle in the program's range that is not (or no
/// longer) an operation.
pub fn user(h: c_int) -> Result<Option<UserOpEntry>, Fail> {
    if h < FIRST_USER_OP {
        return Ok(None);
    }
    OPS.lock()
        .unwrap_or_else(|e| e.into_inner())
        .get((h - FIRST_USER_OP) as usize)
        .copied()
        .map(Some)
        .ok_or_else(|| {
            Fail::new(
                ERR_OP,
                format!("operation handle {h} is not an operation (it was freed?)"),
            )
        })
}

/// What a reduction's trampoline needs to call a program's operation.
pub struct UserCtx {
    /// The function.
    pub func: UserFn,
    /// The datatype handle the call passes it.
    pub datatype: c_int,
    /// That type, when it is not contiguous: the reduction then moves its
    /// elements packed, and each call unpacks them into scratch memory
    /// laid out as the type for the function, and packs its result back.
    pub packed: Option<Datatype>,
}

/// The reduction kernels' entry for a program's operation: calls its
/// function on `count` elements (in pieces of at most `i32::MAX`).
///
/// # Safety
///
/// `ctx` is a live [`UserCtx`]; `input` and `inout` hold `count` elements
/// of its datatype.
pub unsafe extern "C" fn call_user(
    ctx: *mut c_void,
    input: *const u8,
    inout: *mut u8,
    count: usize,
) -> bool {
    // SAFETY: the caller's promise.
    let u = unsafe { &*ctx.cast::<UserCtx>() };
    if let Some(dt) = &u.packed {
        // SAFETY: the caller's promise; packed, `count` elements of `dt`
        // take `count × size` bytes.
        unsafe { call_unpacked(u, dt, input, inout, count) };
        return true;
    }
    let size = crate::handles::typed(u.datatype)
        .ok()
        .and_then(|t| t.contiguous_bytes(1).ok().flatten())
        .unwrap_or(0);
    let mut done = 0;
    while done < count {
        let n = (count - done).min(c_int::MAX as usize);
        let (mut len, mut dt) = (n as c_int, u.datatype);
        // SAFETY: the program's function, called as MPI defines it, on
        // `n` elements of the buffers (the caller's promise).
        unsafe {
            (u.func)(
                input.add(done * size) as *mut c_void,
                inout.add(done * size).cast(),
                &mut len,
                &mut dt,
            )
        };
        done += n;
    }
    true
}

/// Calls the program's function of `u` on `count` elements of the
/// non-contiguous `dt`, packed at `input` and `inout`: both are unpacked
/// into scratch memory laid out as the type (gaps zeroed), the function is
/// called there with the type's handle, and the result is packed back
/// into `inout`.
///
/// # Safety
///
/// `input` and `inout` hold `count` packed elements of `dt`.
unsafe fn call_unpacked(
    u: &UserCtx,
    dt: &Datatype,
    input: *const u8,
    inout: *mut u8,
    count: usize,
) {
    let Some((lo, hi)) = dt.reach(count) else {
        return;
    };
    let bytes = count * dt.size();
    // The scratch memory is of 16-byte words and the elements' origin is
    // on a word: each value is as aligned as in a 16-byte aligned buffer
    // of the program's.
    let lo = lo.div_euclid(16) * 16;
    let words = ((hi - lo) as usize).div_ceil(16);
    let (mut a, mut b) = (vec![0u128; words], vec![0u128; words]);
    // The elements' origin: their reach starts at or after `lo` bytes
    // from it.
    let a_origin = a.as_mut_ptr().cast::<u8>().wrapping_offset(-lo);
    let b_origin = b.as_mut_ptr().cast::<u8>().wrapping_offset(-lo);
    // SAFETY: `bytes` packed bytes each (the caller's promise), not the
    // scratch vectors.
    let (input, inout) = unsafe {
        (
            std::slice::from_raw_parts(input, bytes),
            std::slice::from_raw_parts_mut(inout, bytes),
        )
    };
    // SAFETY: the scratch vectors span the elements' reach from their
    // origins, and are nobody else's.
    unsafe {
        dt.unpack_raw(input, a_origin, count, 0);
        dt.unpack_raw(inout, b_origin, count, 0);
    }
    let extent = dt.extent();
    let mut done = 0;
    while done < count {
        let n = (count - done).min(c_int::MAX as usize);
        let (mut len, mut h) = (n as c_int, u.datatype);
        let at = done as isize * extent;
        // SAFETY: the program's function, called as MPI defines it, on `n`
        // elements of the type laid out in the scratch vectors.
        unsafe {
            (u.func)(
                a_origin.wrapping_offset(at).cast(),
                b_origin.wrapping_offset(at).cast(),
                &mut len,
                &mut h,
            )
        };
        done += n;
    }
    // SAFETY: as for the unpacking.
    unsafe { dt.pack_raw(b_origin, count, 0, inout) };
}

/// `MPI_Op_create`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Op_create(
    f: Option<UserFn>,
    commute: c_int,
    op: *mut c_int,
) -> c_int {
    run("MPI_Op_create", 1, || {
        let Some(func) = f else {
            return Err(Fail::new(ERR_ARG, "the user function is a null pointer"));
        };
        let k = OPS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(UserOpEntry {
                func,
                commute: commute != 0,
            });
        // SAFETY: the caller's promise.
        unsafe { put("op", op, k as c_int + FIRST_USER_OP) }
    })
}

/// `MPI_Op_free`: sets the handle to `MPI_OP_NULL`; a predefined
/// operation cannot be freed.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Op_free(op: *mut c_int) -> c_int {
    run("MPI_Op_free", 1, || {
        if op.is_null() {
            return Err(Fail::new(ERR_ARG, "op is a null pointer"));
        }
        // SAFETY: not null; the caller's promise.
        let h = unsafe { *op };
        if user(h)?.is_none() {
            return Err(Fail::new(
                ERR_OP,
                format!("operation {h} is predefined (or MPI_OP_NULL) and cannot be freed"),
            ));
        }
        OPS.lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove((h - FIRST_USER_OP) as usize);
        // SAFETY: as above.
        unsafe { *op = 0 };
        Ok(())
    })
}

/// `MPI_Op_commutative`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Op_commutative(op: c_int, commute: *mut c_int) -> c_int {
    run("MPI_Op_commutative", 1, || {
        let c = match user(op)? {
            Some(u) => u.commute,
            None => {
                crate::handles::op(op)?;
                true
            }
        };
        // SAFETY: the caller's promise.
        unsafe { put("commute", commute, c_int::from(c)) }
    })
}

/// `MPI_Reduce_local`: `inout = in op inout` on `count` elements, with a
/// predefined operation or one of the program's, over any committed type
/// (a predefined operation: over the types collectives reduce).
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Reduce_local(
    inbuf: *const c_void,
    inoutbuf: *mut c_void,
    count: c_int,
    datatype: c_int,
    op: c_int,
) -> c_int {
    run("MPI_Reduce_local", 1, || {
        let n = crate::handles::count("count", count)?;
        let t = crate::handles::typed(datatype)?;
        let packed = match t.layout(n)? {
            Layout::Contiguous(0) | Layout::Packed(_, 0) => return Ok(()),
            Layout::Contiguous(_) => None,
            Layout::Packed(dt, bytes) => Some((dt.clone(), bytes)),
        };
        if inbuf.is_null() || inoutbuf.is_null() {
            return Err(Fail::new(ERR_ARG, "inbuf or inoutbuf is a null pointer"));
        }
        if let Some(u) = user(op)? {
            // The buffers are laid out in the type, as the function takes
            // them.
            let (mut len, mut dt) = (count, datatype);
            // SAFETY: the program's function, called as MPI defines it, on
            // `count` elements of the buffers (the caller's promise).
            unsafe { (u.func)(inbuf.cast_mut(), inoutbuf, &mut len, &mut dt) };
            return Ok(());
        }
        let (element, code, per, wide) = match t.element() {
            Some(e) => (e, crate::handles::op(op)?, 1, None),
            None => {
                let d = crate::coll::derived_element(&t, datatype, op)?;
                (d.element, d.op, d.per, d.pair.map(Wide::of))
            }
        };
        let (Some(o), Some(ty)) = (
            oxmpi_reduce::Op::from_code(code as u8),
            oxmpi_reduce::ElementType::from_code(element as u8),
        ) else {
            return Err(Fail::new(
                ERR_OP,
                format!("operation {op} does not apply to datatype {datatype} in oxmpi"),
            ));
        };
        let reduce = |input: &[u8], inout: &mut [u8]| {
            oxmpi_reduce::reduce_local(o, ty, input, inout)
                .map_err(|e| Fail::new(ERR_OP, e.to_string()))
        };
        match packed {
            // A derived type of one primitive with gaps, or of pairs: its
            // values are packed (pairs then laid out wide, as the kernels
            // take them), reduced, and unpacked into `inoutbuf`.
            Some((dt, bytes)) if t.element().is_none() => {
                let (mut a, mut b) = (vec![0u8; bytes], vec![0u8; bytes]);
                // SAFETY: both buffers hold `n` elements of `dt` (the
                // caller's promise); the vectors are new.
                unsafe {
                    dt.pack_raw(inbuf.cast(), n, 0, &mut a);
                    dt.pack_raw(inoutbuf.cast(), n, 0, &mut b);
                }
                match wide {
                    None => reduce(&a, &mut b)?,
                    Some(w) => {
                        let (wa, mut wb) = (w.wide_copy(&a), w.wide_copy(&b));
                        reduce(&wa, &mut wb)?;
                        w.narrow(&wb, &mut b);
                    }
                }
                // SAFETY: as above; nothing else writes `inoutbuf` (MPI
                // forbids it to overlap `inbuf`).
                unsafe { dt.unpack_raw(&b, inoutbuf.cast(), n, 0) };
                Ok(())
            }
            _ => {
                // Contiguous, or a pair type, which the kernels take laid
                // out as its C struct.
                let size = element.size().unwrap_or(0);
                let bytes = n.checked_mul(size * per).ok_or_else(|| {
                    Fail::new(ERR_COUNT, format!("{n} elements pass the address space"))
                })?;
                // SAFETY: both buffers hold `bytes` bytes (the caller's
                // promise); MPI forbids them to overlap.
                let (input, inout) = unsafe {
                    (
                        std::slice::from_raw_parts(inbuf.cast::<u8>(), bytes),
                        std::slice::from_raw_parts_mut(inoutbuf.cast::<u8>(), bytes),
                    )
                };
                reduce(input, inout)
            }
        }
    })
}
