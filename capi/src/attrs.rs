//! Communicator attributes: keyvals with copy and delete callbacks, the
//! values set on communicators, and the predefined attributes
//! (`MPI_TAG_UB`, `MPI_HOST`, `MPI_IO`, `MPI_WTIME_IS_GLOBAL`,
//! `MPI_APPNUM`, `MPI_UNIVERSE_SIZE`, `MPI_LASTUSEDCODE`).
//!
//! Keyval handles: the predefined ones 1 to 7, then one per
//! `MPI_Comm_create_keyval` from 16; `MPI_KEYVAL_INVALID` is −1.

use crate::errors::{run, Fail, ERR_ARG, ERR_OTHER};
use crate::handles::{comm, put};
use crate::runtime;
use slab::Slab;
use std::collections::BTreeMap;
use std::ffi::{c_int, c_void};
use std::sync::Mutex;

/// `MPI_KEYVAL_INVALID`.
pub const KEYVAL_INVALID: c_int = -1;
/// The first keyval `MPI_Comm_create_keyval` hands out.
const FIRST_USER: c_int = 16;
/// `MPI_TAG_UB` … `MPI_LASTUSEDCODE`: 1 to 7.
const PREDEFINED: std::ops::RangeInclusive<c_int> = 1..=7;

/// `MPI_Comm_copy_attr_function`.
pub type CopyFn =
    unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
/// `MPI_Comm_delete_attr_function`.
pub type DeleteFn = unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void) -> c_int;

#[derive(Clone, Copy)]
struct Keyval {
    copy: Option<CopyFn>,
    delete: Option<DeleteFn>,
    extra: usize,
    /// Freed by the program while communicators still held values of it:
    /// its callbacks serve those values, and it goes with the last.
    freed: bool,
}

static KEYVALS: Mutex<Slab<Keyval>> = Mutex::new(Slab::new());

/// Attribute values by (communicator handle, keyval), as addresses.
static VALUES: Mutex<BTreeMap<(c_int, c_int), usize>> = Mutex::new(BTreeMap::new());

/// The keyval `k` names for a call of the program's (one it freed is
/// refused).
fn keyval(k: c_int) -> Result<Keyval, Fail> {
    keyval_held(k)
        .filter(|kv| !kv.freed)
        .ok_or_else(|| unknown_keyval(k))
}

/// The keyval of a value a communicator holds, freed or not.
fn keyval_held(k: c_int) -> Option<Keyval> {
    usize::try_from(k - FIRST_USER).ok().and_then(|i| {
        KEYVALS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(i)
            .copied()
    })
}

/// Forgets keyval `k` if the program freed it and no communicator holds
/// a value of it any more.
fn forget_if_unused(k: c_int) {
    let in_use = VALUES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .keys()
        .any(|&(_, key)| key == k);
    if in_use {
        return;
    }
    let mut keyvals = KEYVALS.lock().unwrap_or_else(|e| e.into_inner());
    let i = (k - FIRST_USER) as usize;
    if keyvals.get(i).is_some_and(|kv| kv.freed) {
        keyvals.remove(i);
    }
}

#[cold]
fn unknown_keyval(k: c_int) -> Fail {
    Fail::new(
        ERR_ARG,
        format!("keyval {k} is not a keyval MPI_Comm_create_keyval made (or it was freed)"),
    )
}

/// Calls `k`'s delete callback for the value `v` on `comm_`.
fn delete(comm_: c_int, k: c_int, kv: Keyval, v: usize) -> Result<(), Fail> {
    if let Some(f) = kv.delete {
        // SAFETY: the function the program registered with the keyval,
        // called as MPI defines, with the value it set.
        let rc = unsafe { f(comm_, k, v as *mut c_void, kv.extra as *mut c_void) };
        if rc != 0 {
            return Err(Fail::new(
                ERR_OTHER,
                format!("the delete callback of keyval {k} returned {rc}"),
            ));
        }
    }
    Ok(())
}

/// Copies the attributes of `from` to the new communicator `to`
/// (`MPI_Comm_dup`), through each keyval's copy callback.
pub fn copy_all(from: c_int, to: c_int) -> Result<(), Fail> {
    let attrs: Vec<((c_int, c_int), usize)> = VALUES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .range((from, c_int::MIN)..=(from, c_int::MAX))
        .map(|(k, v)| (*k, *v))
        .collect();
    for ((_, k), v) in attrs {
        // A keyval the program freed still copies the values it has.
        let kv = keyval_held(k).ok_or_else(|| unknown_keyval(k))?;
        let Some(f) = kv.copy else { continue };
        let (mut out, mut flag) = (std::ptr::null_mut::<c_void>(), 0);
        // SAFETY: the function the program registered with the keyval,
        // called as MPI defines; `out` and `flag` are valid out-pointers.
        let rc = unsafe {
            f(
                from,
                k,
                kv.extra as *mut c_void,
                v as *mut c_void,
                std::ptr::from_mut(&mut out).cast(),
                &mut flag,
            )
        };
        if rc != 0 {
            return Err(Fail::new(
                ERR_OTHER,
                format!("the copy callback of keyval {k} returned {rc}"),
            ));
        }
        if flag != 0 {
            VALUES
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert((to, k), out as usize);
        }
    }
    Ok(())
}

/// Deletes every attribute of `comm_` (`MPI_Comm_free`), through each
/// keyval's delete callback.
pub fn delete_all(comm_: c_int) -> Result<(), Fail> {
    let attrs: Vec<((c_int, c_int), usize)> = {
        let mut values = VALUES.lock().unwrap_or_else(|e| e.into_inner());
        let keys: Vec<_> = values
            .range((comm_, c_int::MIN)..=(comm_, c_int::MAX))
            .map(|(k, _)| *k)
            .collect();
        keys.into_iter()
            .filter_map(|k| values.remove(&k).map(|v| (k, v)))
            .collect()
    };
    for ((_, k), v) in attrs {
        let kv = keyval_held(k).ok_or_else(|| unknown_keyval(k))?;
        let deleted = delete(comm_, k, kv, v);
        forget_if_unused(k);
        deleted?;
    }
    Ok(())
}

/// `MPI_Comm_create_keyval`'s work (also `MPI_Keyval_create`'s).
///
/// # Safety
///
/// `out` is valid for a write.
unsafe fn create_keyval(
    copy: Option<CopyFn>,
    delete_: Option<DeleteFn>,
    out: *mut c_int,
    extra: *mut c_void,
) -> Result<(), Fail> {
    let k = KEYVALS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(Keyval {
            copy,
            delete: delete_,
            extra: extra as usize,
            freed: false,
        });
    // SAFETY: the caller's promise.
    unsafe { put("comm_keyval", out, k as c_int + FIRST_USER) }
}

/// Defines `PMPI_<name>` for a keyval's creation: MPI 2's
/// `Comm_create_keyval` and MPI 1's deprecated `Keyval_create` (same
/// callbacks).
macro_rules! create_keyval {
    ($name:ident, $text:literal) => {
        /// The C function of the same name without its `P`.
        ///
        /// # Safety
        ///
        /// As MPI requires of its arguments.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            copy: Option<CopyFn>,
            delete_: Option<DeleteFn>,
            out: *mut c_int,
            extra: *mut c_void,
        ) -> c_int {
            // SAFETY: the caller's promise.
            run($text, 1, || unsafe {
                create_keyval(copy, delete_, out, extra)
            })
        }
    };
}

create_keyval!(PMPI_Comm_create_keyval, "MPI_Comm_create_keyval");
create_keyval!(PMPI_Keyval_create, "MPI_Keyval_create");

/// `MPI_Comm_free_keyval`'s work (also `MPI_Keyval_free`'s): sets the
/// handle to `MPI_KEYVAL_INVALID`.
///
/// # Safety
///
/// `k` is null or valid for a read and a write.
unsafe fn free_keyval(k: *mut c_int) -> Result<(), Fail> {
    if k.is_null() {
        return Err(Fail::new(ERR_ARG, "comm_keyval is a null pointer"));
    }
    // SAFETY: not null; the caller's promise.
    let h = unsafe { *k };
    if PREDEFINED.contains(&h) {
        return Err(Fail::new(
            ERR_ARG,
            format!("keyval {h} is predefined and cannot be freed"),
        ));
    }
    keyval(h)?;
    // Values still held keep it (and its callbacks) until they go.
    if let Some(kv) = KEYVALS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_mut((h - FIRST_USER) as usize)
    {
        kv.freed = true;
    }
    forget_if_unused(h);
    // SAFETY: as above.
    unsafe { *k = KEYVAL_INVALID };
    Ok(())
}

/// Defines `PMPI_<name>` for freeing a keyval (MPI 2's
/// `Comm_free_keyval`, MPI 1's deprecated `Keyval_free`).
macro_rules! free_keyval {
    ($name:ident, $text:literal) => {
        /// The C function of the same name without its `P`.
        ///
        /// # Safety
        ///
        /// As MPI requires of its arguments.
        #[no_mangle]
        pub unsafe extern "C" fn $name(k: *mut c_int) -> c_int {
            // SAFETY: the caller's promise.
            run($text, 1, || unsafe { free_keyval(k) })
        }
    };
}

free_keyval!(PMPI_Comm_free_keyval, "MPI_Comm_free_keyval");
free_keyval!(PMPI_Keyval_free, "MPI_Keyval_free");

/// `MPI_Comm_set_attr`'s work (also `MPI_Attr_put`'s): a value already
/// set is deleted first (its delete callback runs).
fn set_attr(comm_: c_int, k: c_int, value: *mut c_void) -> Result<(), Fail> {
    comm(comm_)?;
    if PREDEFINED.contains(&k) {
        return Err(Fail::new(
            ERR_ARG,
            format!("keyval {k} is predefined; its value cannot be set"),
        ));
    }
    let kv = keyval(k)?;
    let old = VALUES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert((comm_, k), value as usize);
    if let Some(v) = old {
        delete(comm_, k, kv, v)?;
    }
    Ok(())
}

/// Defines `PMPI_<name>` for setting an attribute (MPI 2's
/// `Comm_set_attr`, MPI 1's deprecated `Attr_put`).
macro_rules! set_attr {
    ($name:ident, $text:literal) => {
        /// The C function of the same name without its `P`.
        #[no_mangle]
        pub extern "C" fn $name(comm_: c_int, k: c_int, value: *mut c_void) -> c_int {
            run($text, comm_, || set_attr(comm_, k, value))
        }
    };
}

set_attr!(PMPI_Comm_set_attr, "MPI_Comm_set_attr");
set_attr!(PMPI_Attr_put, "MPI_Attr_put");

/// The value of predefined attribute `k`.
fn predefined_value(k: c_int) -> Result<&'static c_int, Fail> {
    static TAG_UB: std::sync::OnceLock<c_int> = std::sync::OnceLock::new();
    static HOST: c_int = crate::PROC_NULL;
    static IO: c_int = crate::ANY_SOURCE;
    static WTIME_IS_GLOBAL: c_int = 0;
    static APPNUM: c_int = 0;
    static LASTUSEDCODE: c_int = crate::errors::ERR_LASTCODE;
    static UNIVERSE: std::sync::OnceLock<c_int> = std::sync::OnceLock::new();
    Ok(match k {
        1 => {
            let bound = runtime()?.tag_ub();
            TAG_UB.get_or_init(|| bound)
        }
        2 => &HOST,
        3 => &IO,
        4 => &WTIME_IS_GLOBAL,
        5 => &APPNUM,
        6 => {
            let size = runtime()?.size();
            UNIVERSE.get_or_init(|| size)
        }
        _ => &LASTUSEDCODE,
    })
}

/// `MPI_Comm_get_attr`'s work (also `MPI_Attr_get`'s): for a predefined
/// keyval the value is the address of an `int` holding it.
///
/// # Safety
///
/// `value` and `flag` are valid for a write.
unsafe fn get_attr(
    comm_: c_int,
    k: c_int,
    value: *mut *mut c_void,
    flag: *mut c_int,
) -> Result<(), Fail> {
    comm(comm_)?;
    let found = if PREDEFINED.contains(&k) {
        Some(std::ptr::from_ref(predefined_value(k)?) as usize)
    } else {
        keyval(k)?;
        VALUES
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(comm_, k))
            .copied()
    };
    // SAFETY: the caller's promise.
    unsafe {
        if let Some(v) = found {
            put("attribute_val", value, v as *mut c_void)?;
        }
        put("flag", flag, c_int::from(found.is_some()))
    }
}

/// Defines `PMPI_<name>` for reading an attribute (MPI 2's
/// `Comm_get_attr`, MPI 1's deprecated `Attr_get`).
macro_rules! get_attr {
    ($name:ident, $text:literal) => {
        /// The C function of the same name without its `P`.
        ///
        /// # Safety
        ///
        /// As MPI requires of its arguments.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            comm_: c_int,
            k: c_int,
            value: *mut *mut c_void,
            flag: *mut c_int,
        ) -> c_int {
            // SAFETY: the caller's promise.
            run($text, comm_, || unsafe { get_attr(comm_, k, value, flag) })
        }
    };
}

get_attr!(PMPI_Comm_get_attr, "MPI_Comm_get_attr");
get_attr!(PMPI_Attr_get, "MPI_Attr_get");

/// `MPI_Comm_delete_attr`'s work (also `MPI_Attr_delete`'s).
fn delete_attr(comm_: c_int, k: c_int) -> Result<(), Fail> {
    comm(comm_)?;
    let kv = keyval(k)?;
    let v = VALUES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&(comm_, k))
        .ok_or_else(|| {
            Fail::new(
                ERR_ARG,
                format!("communicator {comm_} has no attribute for keyval {k}"),
            )
        })?;
    delete(comm_, k, kv, v)
}

/// Defines `PMPI_<name>` for deleting an attribute (MPI 2's
/// `Comm_delete_attr`, MPI 1's deprecated `Attr_delete`).
macro_rules! delete_attr {
    ($name:ident, $text:literal) => {
        /// The C function of the same name without its `P`.
        #[no_mangle]
        pub extern "C" fn $name(comm_: c_int, k: c_int) -> c_int {
            run($text, comm_, || delete_attr(comm_, k))
        }
    };
}

delete_attr!(PMPI_Comm_delete_attr, "MPI_Comm_delete_attr");
delete_attr!(PMPI_Attr_delete, "MPI_Attr_delete");

/// `MPI_COMM_NULL_COPY_FN`: copies nothing.
///
/// # Safety
///
/// `flag` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn OXMPI_Comm_null_copy_fn(
    _comm: c_int,
    _keyval: c_int,
    _extra: *mut c_void,
    _in: *mut c_void,
    _out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // SAFETY: the caller's promise.
    unsafe { *flag = 0 };
    0
}

/// `MPI_COMM_DUP_FN`: copies the value.
///
/// # Safety
///
/// `out` is valid for a write of a pointer, `flag` of an int.
#[no_mangle]
pub unsafe extern "C" fn OXMPI_Comm_dup_fn(
    _comm: c_int,
    _keyval: c_int,
    _extra: *mut c_void,
    value: *mut c_void,
    out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // SAFETY: the caller's promise.
    unsafe {
        *out.cast::<*mut c_void>() = value;
        *flag = 1;
    }
    0
}

/// `MPI_COMM_NULL_DELETE_FN`: does nothing.
#[no_mangle]
pub extern "C" fn OXMPI_Comm_null_delete_fn(
    _comm: c_int,
    _keyval: c_int,
    _value: *mut c_void,
    _extra: *mut c_void,
) -> c_int {
    0
}
