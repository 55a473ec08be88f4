//! Groups (`MPI_Group_*`, `MPI_Comm_group`, `MPI_Comm_create`),
//! `MPI_Comm_split_type` and communicator names.
//!
//! Group handles: `MPI_GROUP_NULL` 0, `MPI_GROUP_EMPTY` 1, then one per
//! group made (freed by `MPI_Group_free`).

use crate::errors::{run, Fail, ERR_ARG, ERR_GROUP, ERR_RANK};
use crate::handles::{array as ints, comm, comm_handle, count, put, COMM_NULL};
use crate::runtime;
use oxmpi_groups::{Comparison, Group, GroupError};
use slab::Slab;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, CStr};
use std::sync::Mutex;

/// `MPI_GROUP_NULL`.
pub const GROUP_NULL: c_int = 0;
/// `MPI_GROUP_EMPTY`.
pub const GROUP_EMPTY: c_int = 1;
/// `MPI_COMM_TYPE_SHARED`.
pub const COMM_TYPE_SHARED: c_int = 1;

static GROUPS: Mutex<Slab<Group>> = Mutex::new(Slab::new());

impl From<GroupError> for Fail {
    fn from(e: GroupError) -> Fail {
        let class = match e {
            GroupError::RankOutOfRange { .. } | GroupError::DuplicateRank { .. } => ERR_RANK,
            _ => ERR_ARG,
        };
        Fail::new(class, e.to_string())
    }
}

/// The group of handle `h`.
fn group(h: c_int) -> Result<Group, Fail> {
    if h == GROUP_EMPTY {
        return Ok(Group::empty());
    }
    usize::try_from(h - 2)
        .ok()
        .and_then(|k| {
            GROUPS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(k)
                .cloned()
        })
        .ok_or_else(|| {
            Fail::new(
                ERR_GROUP,
                format!("group handle {h} is not a group (MPI_GROUP_NULL is 0, or it was freed)"),
            )
        })
}

/// Registers `g` and writes its handle to `out`.
///
/// # Safety
///
/// `out` is null or valid for a write.
unsafe fn made(out: *mut c_int, g: Group) -> Result<(), Fail> {
    let h = if g.is_empty() {
        GROUP_EMPTY
    } else {
        GROUPS.lock().unwrap_or_else(|e| e.into_inner()).insert(g) as c_int + 2
    };
    // SAFETY: the caller's promise.
    unsafe { put("newgroup", out, h) }
}

/// `MPI_Comm_group`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_group(comm_: c_int, out: *mut c_int) -> c_int {
    run("MPI_Comm_group", comm_, || {
        let g = runtime()?.comm_group(comm(comm_)?)?;
        // SAFETY: the caller's promise.
        unsafe { made(out, g) }
    })
}

/// `MPI_Group_size`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_size(g: c_int, size: *mut c_int) -> c_int {
    run("MPI_Group_size", 1, || {
        let n = group(g)?.size() as c_int;
        // SAFETY: the caller's promise.
        unsafe { put("size", size, n) }
    })
}

/// `MPI_Group_rank`: `MPI_UNDEFINED` when this process is not a member.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_rank(g: c_int, rank: *mut c_int) -> c_int {
    run("MPI_Group_rank", 1, || {
        let me = runtime()?.rank() as u32;
        let r = group(g)?
            .rank_of(me)
            .map_or(crate::UNDEFINED, |r| r as c_int);
        // SAFETY: the caller's promise.
        unsafe { put("rank", rank, r) }
    })
}

macro_rules! rank_list {
    ($name:ident, $text:literal, $method:ident) => {
        /// The C function of the same name without its `P`.
        ///
        /// # Safety
        ///
        /// As MPI requires of its arguments.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            g: c_int,
            n: c_int,
            ranks: *const c_int,
            out: *mut c_int,
        ) -> c_int {
            run($text, 1, || {
                let n = count("n", n)?;
                // SAFETY: the caller's promise.
                let r = unsafe { ints("ranks", ranks, n) }?;
                let made_group = group(g)?.$method(r)?;
                // SAFETY: the caller's promise.
                unsafe { made(out, made_group) }
            })
        }
    };
}

rank_list!(PMPI_Group_incl, "MPI_Group_incl", incl);
rank_list!(PMPI_Group_excl, "MPI_Group_excl", excl);

macro_rules! range_list {
    ($name:ident, $text:literal, $method:ident) => {
        /// The C function of the same name without its `P` (`ranges` holds
        /// `n` triples first, last, stride).
        ///
        /// # Safety
        ///
        /// As MPI requires of its arguments.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            g: c_int,
            n: c_int,
            ranges: *const [c_int; 3],
            out: *mut c_int,
        ) -> c_int {
            run($text, 1, || {
                let n = count("n", n)?;
                // SAFETY: the caller's promise: `n` triples.
                let r = unsafe { ints("ranges", ranges.cast::<c_int>(), 3 * n) }?;
                let triples: Vec<(i32, i32, i32)> =
                    r.chunks_exact(3).map(|t| (t[0], t[1], t[2])).collect();
                let made_group = group(g)?.$method(&triples)?;
                // SAFETY: the caller's promise.
                unsafe { made(out, made_group) }
            })
        }
    };
}

range_list!(PMPI_Group_range_incl, "MPI_Group_range_incl", range_incl);
range_list!(PMPI_Group_range_excl, "MPI_Group_range_excl", range_excl);

macro_rules! set_op {
    ($name:ident, $text:literal, $method:ident) => {
        /// The C function of the same name without its `P`.
        ///
        /// # Safety
        ///
        /// As MPI requires of its arguments.
        #[no_mangle]
        pub unsafe extern "C" fn $name(a: c_int, b: c_int, out: *mut c_int) -> c_int {
            run($text, 1, || {
                let made_group = group(a)?.$method(&group(b)?);
                // SAFETY: the caller's promise.
                unsafe { made(out, made_group) }
            })
        }
    };
}

set_op!(PMPI_Group_union, "MPI_Group_union", union);
set_op!(
    PMPI_Group_intersection,
    "MPI_Group_intersection",
    intersection
);
set_op!(PMPI_Group_difference, "MPI_Group_difference", difference);

/// `MPI_Group_translate_ranks`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_translate_ranks(
    a: c_int,
    n: c_int,
    ranks: *const c_int,
    b: c_int,
    out: *mut c_int,
) -> c_int {
    run("MPI_Group_translate_ranks", 1, || {
        let n = count("n", n)?;
        // SAFETY: the caller's promise.
        let r = unsafe { ints("ranks1", ranks, n) }?;
        let t = group(a)?.translate_ranks(r, &group(b)?)?;
        for (i, x) in t.iter().enumerate() {
            // SAFETY: `n` ints (the caller's promise).
            unsafe { put("ranks2", out.add(i), x.to_mpi())? };
        }
        Ok(())
    })
}

/// `MPI_Group_compare`: `MPI_IDENT` 0, `MPI_SIMILAR` 2, `MPI_UNEQUAL` 3.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_compare(a: c_int, b: c_int, result: *mut c_int) -> c_int {
    run("MPI_Group_compare", 1, || {
        let r = match group(a)?.compare(&group(b)?) {
            Comparison::Ident => 0,
            Comparison::Similar => 2,
            Comparison::Unequal => 3,
        };
        // SAFETY: the caller's promise.
        unsafe { put("result", result, r) }
    })
}

/// `MPI_Group_free`: sets the handle to `MPI_GROUP_NULL`
/// (`MPI_GROUP_EMPTY` may be freed and stays valid).
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_free(g: *mut c_int) -> c_int {
    run("MPI_Group_free", 1, || {
        if g.is_null() {
            return Err(Fail::new(ERR_ARG, "group is a null pointer"));
        }
        // SAFETY: not null; the caller's promise.
        let h = unsafe { *g };
        if h != GROUP_EMPTY {
            let removed = usize::try_from(h - 2).ok().and_then(|k| {
                GROUPS
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .try_remove(k)
            });
            if removed.is_none() {
                return Err(Fail::new(
                    ERR_GROUP,
                    format!("group handle {h} is not a group"),
                ));
            }
        }
        // SAFETY: as above.
        unsafe { *g = GROUP_NULL };
        Ok(())
    })
}

/// `MPI_Comm_create`: `MPI_COMM_NULL` for a process not in the group.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_create(comm_: c_int, g: c_int, out: *mut c_int) -> c_int {
    run("MPI_Comm_create", comm_, || {
        let made_comm = runtime()?.comm_create(comm(comm_)?, &group(g)?)?;
        let h = made_comm.map_or(COMM_NULL, comm_handle);
        if h != COMM_NULL {
            crate::errors::set_handler(h, crate::errors::handler_of(comm_));
        }
        // SAFETY: the caller's promise.
        unsafe { put("newcomm", out, h) }
    })
}

/// `MPI_Comm_split_type`: `MPI_COMM_TYPE_SHARED` (the processes of this
/// node), or `MPI_UNDEFINED` (`MPI_COMM_NULL`; the call is still
/// collective, and the others must pass `MPI_UNDEFINED` too).
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_split_type(
    comm_: c_int,
    split_type: c_int,
    key: c_int,
    _info: c_int,
    out: *mut c_int,
) -> c_int {
    run("MPI_Comm_split_type", comm_, || {
        let rt = runtime()?;
        let c = comm(comm_)?;
        let h = match split_type {
            COMM_TYPE_SHARED => comm_handle(rt.comm_split_shared(c, key)?),
            crate::UNDEFINED => rt
                .comm_split(c, crate::UNDEFINED, key)?
                .map_or(COMM_NULL, comm_handle),
            t => {
                return Err(Fail::new(
                    ERR_ARG,
                    format!("split type {t} is neither MPI_COMM_TYPE_SHARED nor MPI_UNDEFINED"),
                ))
            }
        };
        if h != COMM_NULL {
            crate::errors::set_handler(h, crate::errors::handler_of(comm_));
        }
        // SAFETY: the caller's promise.
        unsafe { put("newcomm", out, h) }
    })
}

/// Names set with `MPI_Comm_set_name`, by communicator handle.
static NAMES: Mutex<Option<HashMap<c_int, String>>> = Mutex::new(None);

/// Forgets the name of a freed communicator.
pub fn forget_name(h: c_int) {
    if let Some(m) = NAMES.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        m.remove(&h);
    }
}

/// `MPI_Comm_set_name`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_set_name(comm_: c_int, name: *const c_char) -> c_int {
    run("MPI_Comm_set_name", comm_, || {
        comm(comm_)?;
        if name.is_null() {
            return Err(Fail::new(ERR_ARG, "comm_name is a null pointer"));
        }
        // SAFETY: NUL-terminated (the caller's promise).
        let text = unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned();
        NAMES
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(HashMap::new)
            .insert(comm_, text);
        Ok(())
    })
}

/// `MPI_Comm_get_name`: the name set, else the MPI layer's (such as
/// `MPI_COMM_WORLD`).
///
/// # Safety
///
/// As MPI requires of its arguments (`name` holds `MPI_MAX_OBJECT_NAME`
/// bytes).
#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_get_name(
    comm_: c_int,
    name: *mut c_char,
    resultlen: *mut c_int,
) -> c_int {
    run("MPI_Comm_get_name", comm_, || {
        let c = comm(comm_)?;
        let set = NAMES
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .and_then(|m| m.get(&comm_).cloned());
        let text = match set {
            Some(t) => t,
            None => runtime()?.comm_name(c),
        };
        // SAFETY: the caller's promise.
        unsafe { crate::env::copy_out(&text, name, crate::MAX_OBJECT_NAME, resultlen) }
    })
}
