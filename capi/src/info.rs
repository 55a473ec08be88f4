//! `MPI_Info` objects (ordered key-value pairs of strings) and
//! `MPI_Alloc_mem`/`MPI_Free_mem`.
//!
//! Info handles: `MPI_INFO_NULL` 0, `MPI_INFO_ENV` 1 (empty: the launcher
//! passes nothing this way), then one per object made.

use crate::errors::{run, Fail, ERR_ARG};
use crate::handles::put;
use slab::Slab;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::Mutex;

/// `MPI_MAX_INFO_KEY`.
pub const MAX_INFO_KEY: usize = 255;
/// `MPI_MAX_INFO_VAL`.
pub const MAX_INFO_VAL: usize = 1024;
/// `MPI_INFO_ENV`.
const INFO_ENV: c_int = 1;

/// The keys of an info object in the order they were first set, with
/// their values.
type Info = Vec<(String, String)>;

static INFOS: Mutex<Slab<Info>> = Mutex::new(Slab::new());

const ERR_INFO_KEY: c_int = crate::errors::ERR_ARG;

fn bad(h: c_int) -> Fail {
    Fail::new(
        ERR_ARG,
        format!("info handle {h} is not an info object (MPI_INFO_NULL is 0, or it was freed)"),
    )
}

/// Applies `f` to the info object of handle `h`.
fn with<R>(h: c_int, f: impl FnOnce(&mut Info) -> Result<R, Fail>) -> Result<R, Fail> {
    if h == INFO_ENV {
        return f(&mut Vec::new());
    }
    let mut t = INFOS.lock().unwrap_or_else(|e| e.into_inner());
    let info = usize::try_from(h - 2)
        .ok()
        .and_then(|k| t.get_mut(k))
        .ok_or_else(|| bad(h))?;
    f(info)
}

/// A C string argument.
///
/// # Safety
///
/// `p` is null or NUL-terminated.
unsafe fn text(what: &str, p: *const c_char, max: usize) -> Result<String, Fail> {
    if p.is_null() {
        return Err(Fail::new(ERR_ARG, format!("{what} is a null pointer")));
    }
    // SAFETY: NUL-terminated (the caller's promise).
    let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
    if s.len() > max || (what == "key" && s.is_empty()) {
        return Err(Fail::new(
            ERR_INFO_KEY,
            format!("{what} '{s}' is empty or longer than {max} bytes"),
        ));
    }
    Ok(s)
}

/// Writes `s` into the C buffer `out` of `capacity` bytes plus its NUL.
///
/// # Safety
///
/// `out` holds `capacity + 1` bytes.
unsafe fn write_text(s: &str, out: *mut c_char, capacity: usize) -> Result<(), Fail> {
    if out.is_null() {
        return Err(Fail::new(ERR_ARG, "the output string is a null pointer"));
    }
    let n = s.len().min(capacity);
    // SAFETY: `capacity + 1` bytes (the caller's promise).
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr().cast::<c_char>(), out, n);
        *out.add(n) = 0;
    }
    Ok(())
}

/// `MPI_Info_create`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_create(out: *mut c_int) -> c_int {
    run("MPI_Info_create", 1, || {
        let k = INFOS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(Vec::new());
        // SAFETY: the caller's promise.
        unsafe { put("info", out, k as c_int + 2) }
    })
}

/// `MPI_Info_set`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_set(
    h: c_int,
    key: *const c_char,
    value: *const c_char,
) -> c_int {
    run("MPI_Info_set", 1, || {
        // SAFETY: the caller's promise.
        let (k, v) = unsafe {
            (
                text("key", key, MAX_INFO_KEY)?,
                text("value", value, MAX_INFO_VAL)?,
            )
        };
        with(h, |info| {
            match info.iter_mut().find(|(x, _)| *x == k) {
                Some(entry) => entry.1 = v,
                None => info.push((k, v)),
            }
            Ok(())
        })
    })
}

/// `MPI_Info_get`: `flag` 0 when the key is absent.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_get(
    h: c_int,
    key: *const c_char,
    valuelen: c_int,
    value: *mut c_char,
    flag: *mut c_int,
) -> c_int {
    run("MPI_Info_get", 1, || {
        // SAFETY: the caller's promise.
        let k = unsafe { text("key", key, MAX_INFO_KEY) }?;
        let v = with(h, |info| {
            Ok(info.iter().find(|(x, _)| *x == k).map(|e| e.1.clone()))
        })?;
        // SAFETY: the caller's promise.
        unsafe {
            if let Some(v) = &v {
                write_text(v, value, usize::try_from(valuelen).unwrap_or(0))?;
            }
            put("flag", flag, c_int::from(v.is_some()))
        }
    })
}

/// `MPI_Info_get_valuelen`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_get_valuelen(
    h: c_int,
    key: *const c_char,
    valuelen: *mut c_int,
    flag: *mut c_int,
) -> c_int {
    run("MPI_Info_get_valuelen", 1, || {
        // SAFETY: the caller's promise.
        let k = unsafe { text("key", key, MAX_INFO_KEY) }?;
        let n = with(h, |info| {
            Ok(info.iter().find(|(x, _)| *x == k).map(|e| e.1.len()))
        })?;
        // SAFETY: the caller's promise.
        unsafe {
            if let Some(n) = n {
                put("valuelen", valuelen, n as c_int)?;
            }
            put("flag", flag, c_int::from(n.is_some()))
        }
    })
}

/// `MPI_Info_delete`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_delete(h: c_int, key: *const c_char) -> c_int {
    run("MPI_Info_delete", 1, || {
        // SAFETY: the caller's promise.
        let k = unsafe { text("key", key, MAX_INFO_KEY) }?;
        with(h, |info| {
            let at = info
                .iter()
                .position(|(x, _)| *x == k)
                .ok_or_else(|| Fail::new(ERR_ARG, format!("the info object has no key '{k}'")))?;
            info.remove(at);
            Ok(())
        })
    })
}

/// `MPI_Info_dup`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_dup(h: c_int, out: *mut c_int) -> c_int {
    run("MPI_Info_dup", 1, || {
        let copy = with(h, |info| Ok(info.clone()))?;
        let k = INFOS.lock().unwrap_or_else(|e| e.into_inner()).insert(copy);
        // SAFETY: the caller's promise.
        unsafe { put("newinfo", out, k as c_int + 2) }
    })
}

/// `MPI_Info_free`: sets the handle to `MPI_INFO_NULL`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_free(h: *mut c_int) -> c_int {
    run("MPI_Info_free", 1, || {
        if h.is_null() {
            return Err(Fail::new(ERR_ARG, "info is a null pointer"));
        }
        // SAFETY: not null; the caller's promise.
        let v = unsafe { *h };
        usize::try_from(v - 2)
            .ok()
            .and_then(|k| {
                INFOS
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .try_remove(k)
            })
            .ok_or_else(|| bad(v))?;
        // SAFETY: as above.
        unsafe { *h = 0 };
        Ok(())
    })
}

/// `MPI_Info_get_nkeys`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_get_nkeys(h: c_int, nkeys: *mut c_int) -> c_int {
    run("MPI_Info_get_nkeys", 1, || {
        let n = with(h, |info| Ok(info.len()))?;
        // SAFETY: the caller's promise.
        unsafe { put("nkeys", nkeys, n as c_int) }
    })
}

/// `MPI_Info_get_nthkey`: keys in the order they were first set.
///
/// # Safety
///
/// As MPI requires of its arguments (`key` holds `MPI_MAX_INFO_KEY + 1`
/// bytes).
#[no_mangle]
pub unsafe extern "C" fn PMPI_Info_get_nthkey(h: c_int, n: c_int, key: *mut c_char) -> c_int {
    run("MPI_Info_get_nthkey", 1, || {
        let k = with(h, |info| {
            usize::try_from(n)
                .ok()
                .and_then(|i| info.get(i))
                .map(|e| e.0.clone())
                .ok_or_else(|| {
                    Fail::new(
                        ERR_ARG,
                        format!("n is {n} but the info object has {} keys", info.len()),
                    )
                })
        })?;
        // SAFETY: the caller's promise.
        unsafe { write_text(&k, key, MAX_INFO_KEY) }
    })
}

/// Blocks `MPI_Alloc_mem` handed out, by address, with their sizes.
static ALLOCATED: Mutex<Option<HashMap<usize, usize>>> = Mutex::new(None);

/// `MPI_Alloc_mem`: memory from the C allocator (aligned to 64 bytes).
///
/// # Safety
///
/// As MPI requires of its arguments (`baseptr` receives a `void *`).
#[no_mangle]
pub unsafe extern "C" fn PMPI_Alloc_mem(size: isize, _info: c_int, baseptr: *mut c_void) -> c_int {
    run("MPI_Alloc_mem", 1, || {
        let n = usize::try_from(size)
            .map_err(|_| Fail::new(ERR_ARG, format!("size is {size}; it must be 0 or more")))?;
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; 64 is a power of two and a multiple
        // of the pointer size.
        if unsafe { libc::posix_memalign(&mut p, 64, n.max(1)) } != 0 {
            return Err(Fail::new(
                crate::errors::ERR_OTHER,
                format!("cannot allocate {n} bytes"),
            ));
        }
        ALLOCATED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(HashMap::new)
            .insert(p as usize, n);
        if baseptr.is_null() {
            return Err(Fail::new(ERR_ARG, "baseptr is a null pointer"));
        }
        // SAFETY: `baseptr` receives a pointer (the caller's promise).
        unsafe { baseptr.cast::<*mut c_void>().write(p) };
        Ok(())
    })
}

/// `MPI_Free_mem`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Free_mem(base: *mut c_void) -> c_int {
    run("MPI_Free_mem", 1, || {
        let known = ALLOCATED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
            .and_then(|m| m.remove(&(base as usize)));
        if known.is_none() {
            return Err(Fail::new(
                ERR_ARG,
                format!("{base:p} is not memory MPI_Alloc_mem gave"),
            ));
        }
        // SAFETY: memory `posix_memalign` gave (checked above), freed once.
        unsafe { libc::free(base) };
        Ok(())
    })
}
