//! Cartesian topologies (`MPI_Cart_*`, `MPI_Cartdim_get`, `MPI_Topo_test`)
//! and `MPI_Dims_create`. A Cartesian communicator is made by a split of
//! the old one (its first `∏ dims` ranks, in order: oxmpi does not
//! reorder), and its grid is kept here by communicator handle.

use crate::errors::{run, Fail, ERR_ARG, ERR_RANK};
use crate::handles::{array as ints, comm, comm_handle, count, put, COMM_NULL};
use crate::{runtime, PROC_NULL, UNDEFINED};
use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::Mutex;

/// `MPI_CART`.
pub const CART: c_int = 1;
/// `MPI_ERR_DIMS`.
const ERR_DIMS: c_int = 12;
/// `MPI_ERR_TOPOLOGY`.
const ERR_TOPOLOGY: c_int = 11;

#[derive(Clone, Debug)]
struct Grid {
    dims: Vec<c_int>,
    periods: Vec<bool>,
}

impl Grid {
    /// The coordinates of `rank` (row-major).
    fn coords(&self, mut rank: c_int) -> Vec<c_int> {
        let mut c = vec![0; self.dims.len()];
        for d in (0..self.dims.len()).rev() {
            c[d] = rank % self.dims[d];
            rank /= self.dims[d];
        }
        c
    }

    /// The rank at `coords`, wrapping periodic dimensions; `None` off a
    /// non-periodic edge.
    fn rank(&self, coords: &[c_int]) -> Option<c_int> {
        let mut r = 0;
        for (d, &c) in coords.iter().enumerate() {
            let n = self.dims[d];
            let c = if self.periods[d] {
                c.rem_euclid(n)
            } else if (0..n).contains(&c) {
                c
            } else {
                return None;
            };
            r = r * n + c;
        }
        Some(r)
    }
}

static GRIDS: Mutex<Option<HashMap<c_int, Grid>>> = Mutex::new(None);

fn grid_of(comm_: c_int) -> Result<Grid, Fail> {
    GRIDS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .and_then(|m| m.get(&comm_).cloned())
        .ok_or_else(|| Fail::new(ERR_TOPOLOGY, format!("communicator {comm_} has no Cartesian topology (make one with MPI_Cart_create)")))
}

/// Forgets the grid of a freed communicator.
pub fn forget(comm_: c_int) {
    if let Some(m) = GRIDS.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        m.remove(&comm_);
    }
}

/// Writes `v` to the C array `p`.
///
/// # Safety
///
/// `p` holds `v.len()` ints.
unsafe fn write_ints(what: &str, p: *mut c_int, v: &[c_int]) -> Result<(), Fail> {
    for (i, &x) in v.iter().enumerate() {
        // SAFETY: the caller's promise.
        unsafe { put(what, p.add(i), x)? };
    }
    Ok(())
}

/// Makes the communicator of the first `n` ranks of `comm_` (in order)
/// with grid `g`; `MPI_COMM_NULL` for the others.
fn make(comm_: c_int, g: Grid) -> Result<c_int, Fail> {
    let rt = runtime()?;
    let c = comm(comm_)?;
    let n: c_int = g.dims.iter().product();
    let me = rt.comm_rank(c);
    if n > rt.comm_size(c) {
        return Err(Fail::new(
            ERR_DIMS,
            format!(
                "the grid {:?} has {n} places but the communicator {} ranks",
                g.dims,
                rt.comm_size(c)
            ),
        ));
    }
    let color = if me < n { 0 } else { UNDEFINED };
    let h = rt.comm_split(c, color, me)?.map_or(COMM_NULL, comm_handle);
    if h != COMM_NULL {
        crate::errors::set_handler(h, crate::errors::handler_of(comm_));
        GRIDS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(HashMap::new)
            .insert(h, g);
    }
    Ok(h)
}

/// `MPI_Cart_create` (`reorder` is ignored: ranks keep their order).
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Cart_create(
    comm_: c_int,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    _reorder: c_int,
    out: *mut c_int,
) -> c_int {
    run("MPI_Cart_create", comm_, || {
        let n = count("ndims", ndims)?;
        // SAFETY: the caller's promise.
        let (d, p) = unsafe { (ints("dims", dims, n)?, ints("periods", periods, n)?) };
        if let Some(i) = d.iter().position(|&x| x < 1) {
            return Err(Fail::new(
                ERR_DIMS,
                format!("dims[{i}] is {}; every dimension needs 1 or more", d[i]),
            ));
        }
        let g = Grid {
            dims: d.to_vec(),
            periods: p.iter().map(|&x| x != 0).collect(),
        };
        let h = make(comm_, g)?;
        // SAFETY: the caller's promise.
        unsafe { put("comm_cart", out, h) }
    })
}

/// `MPI_Dims_create`: fills the zero entries of `dims` so that the
/// product is `nnodes`, as balanced as the factors allow, in
/// non-increasing order.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Dims_create(nnodes: c_int, ndims: c_int, dims: *mut c_int) -> c_int {
    run("MPI_Dims_create", 1, || {
        let n = count("ndims", ndims)?;
        let nnodes = count("nnodes", nnodes)? as c_int;
        // SAFETY: the caller's promise.
        let given = unsafe { ints("dims", dims, n) }?.to_vec();
        let fixed: c_int = given.iter().filter(|&&x| x > 0).product();
        if given.iter().any(|&x| x < 0) || (fixed > 0 && nnodes % fixed != 0) {
            return Err(Fail::new(
                ERR_DIMS,
                format!("dims {given:?} cannot be completed to a grid of {nnodes} places"),
            ));
        }
        let free = given.iter().filter(|&&x| x == 0).count();
        let filled = balanced(nnodes / fixed.max(1), free);
        let mut it = filled.into_iter();
        let out: Vec<c_int> = given
            .iter()
            .map(|&x| if x == 0 { it.next().unwrap_or(1) } else { x })
            .collect();
        // SAFETY: the caller's promise.
        unsafe { write_ints("dims", dims, &out) }
    })
}

/// `k` factors of `n` as equal as they can be, largest first.
fn balanced(n: c_int, k: usize) -> Vec<c_int> {
    let mut dims = vec![1; k];
    if k == 0 {
        return dims;
    }
    // Prime factors, largest first, each to the smallest dimension.
    let mut factors = Vec::new();
    let (mut m, mut p) = (n, 2);
    while p * p <= m {
        while m % p == 0 {
            factors.push(p);
            m /= p;
        }
        p += 1;
    }
    if m > 1 {
        factors.push(m);
    }
    for f in factors.into_iter().rev() {
        if let Some(d) = dims.iter_mut().min() {
            *d *= f;
        }
    }
    dims.sort_unstable_by(|a, b| b.cmp(a));
    dims
}

/// `MPI_Cartdim_get`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Cartdim_get(comm_: c_int, ndims: *mut c_int) -> c_int {
    run("MPI_Cartdim_get", comm_, || {
        let g = grid_of(comm_)?;
        // SAFETY: the caller's promise.
        unsafe { put("ndims", ndims, g.dims.len() as c_int) }
    })
}

/// `MPI_Cart_get`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Cart_get(
    comm_: c_int,
    maxdims: c_int,
    dims: *mut c_int,
    periods: *mut c_int,
    coords: *mut c_int,
) -> c_int {
    run("MPI_Cart_get", comm_, || {
        let g = grid_of(comm_)?;
        if (maxdims as usize) < g.dims.len() {
            return Err(Fail::new(
                ERR_ARG,
                format!(
                    "maxdims is {maxdims} but the grid has {} dimensions",
                    g.dims.len()
                ),
            ));
        }
        let me = runtime()?.comm_rank(comm(comm_)?);
        let p: Vec<c_int> = g.periods.iter().map(|&x| c_int::from(x)).collect();
        // SAFETY: the caller's promise: `maxdims` entries each.
        unsafe {
            write_ints("dims", dims, &g.dims)?;
            write_ints("periods", periods, &p)?;
            write_ints("coords", coords, &g.coords(me))
        }
    })
}

/// `MPI_Cart_rank`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Cart_rank(
    comm_: c_int,
    coords: *const c_int,
    rank: *mut c_int,
) -> c_int {
    run("MPI_Cart_rank", comm_, || {
        let g = grid_of(comm_)?;
        // SAFETY: the caller's promise.
        let c = unsafe { ints("coords", coords, g.dims.len()) }?;
        let r = g.rank(c).ok_or_else(|| {
            Fail::new(
                ERR_RANK,
                format!(
                    "coordinates {c:?} are off the grid {:?} in a non-periodic dimension",
                    g.dims
                ),
            )
        })?;
        // SAFETY: the caller's promise.
        unsafe { put("rank", rank, r) }
    })
}

/// `MPI_Cart_coords`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Cart_coords(
    comm_: c_int,
    rank: c_int,
    maxdims: c_int,
    coords: *mut c_int,
) -> c_int {
    run("MPI_Cart_coords", comm_, || {
        let g = grid_of(comm_)?;
        let n: c_int = g.dims.iter().product();
        if !(0..n).contains(&rank) {
            return Err(Fail::new(
                ERR_RANK,
                format!("rank {rank} is not in the grid (0 to {})", n - 1),
            ));
        }
        if (maxdims as usize) < g.dims.len() {
            return Err(Fail::new(
                ERR_ARG,
                format!(
                    "maxdims is {maxdims} but the grid has {} dimensions",
                    g.dims.len()
                ),
            ));
        }
        // SAFETY: the caller's promise.
        unsafe { write_ints("coords", coords, &g.coords(rank)) }
    })
}

/// `MPI_Cart_shift`: `MPI_PROC_NULL` off a non-periodic edge.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Cart_shift(
    comm_: c_int,
    direction: c_int,
    disp: c_int,
    source: *mut c_int,
    dest: *mut c_int,
) -> c_int {
    run("MPI_Cart_shift", comm_, || {
        let g = grid_of(comm_)?;
        let d = usize::try_from(direction)
            .ok()
            .filter(|&d| d < g.dims.len())
            .ok_or_else(|| {
                Fail::new(
                    ERR_ARG,
                    format!(
                        "direction {direction} is not a dimension of the grid {:?}",
                        g.dims
                    ),
                )
            })?;
        let me = runtime()?.comm_rank(comm(comm_)?);
        let at = |delta: c_int| {
            let mut c = g.coords(me);
            c[d] += delta;
            g.rank(&c).unwrap_or(PROC_NULL)
        };
        // SAFETY: the caller's promise.
        unsafe {
            put("rank_source", source, at(-disp))?;
            put("rank_dest", dest, at(disp))
        }
    })
}

/// `MPI_Cart_sub`: the sub-grids that keep the dimensions `remain_dims`
/// marks, one communicator per combination of the others.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Cart_sub(
    comm_: c_int,
    remain_dims: *const c_int,
    out: *mut c_int,
) -> c_int {
    run("MPI_Cart_sub", comm_, || {
        let g = grid_of(comm_)?;
        // SAFETY: the caller's promise.
        let keep = unsafe { ints("remain_dims", remain_dims, g.dims.len()) }?;
        let rt = runtime()?;
        let c = comm(comm_)?;
        let me = rt.comm_rank(c);
        let coords = g.coords(me);
        // The color numbers the dropped coordinates; the key orders by rank.
        let mut color = 0;
        for d in (0..g.dims.len()).filter(|&d| keep[d] == 0) {
            color = color * g.dims[d] + coords[d];
        }
        let h = rt.comm_split(c, color, me)?.map_or(COMM_NULL, comm_handle);
        let sub = Grid {
            dims: (0..g.dims.len())
                .filter(|&d| keep[d] != 0)
                .map(|d| g.dims[d])
                .collect(),
            periods: (0..g.dims.len())
                .filter(|&d| keep[d] != 0)
                .map(|d| g.periods[d])
                .collect(),
        };
        crate::errors::set_handler(h, crate::errors::handler_of(comm_));
        GRIDS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(HashMap::new)
            .insert(h, sub);
        // SAFETY: the caller's promise.
        unsafe { put("newcomm", out, h) }
    })
}

/// `MPI_Topo_test`: `MPI_CART`, `MPI_GRAPH`, `MPI_DIST_GRAPH` or
/// `MPI_UNDEFINED`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Topo_test(comm_: c_int, status: *mut c_int) -> c_int {
    run("MPI_Topo_test", comm_, || {
        comm(comm_)?;
        let t = if grid_of(comm_).is_ok() {
            CART
        } else if crate::graph::is_graph(comm_) {
            crate::graph::GRAPH
        } else if crate::dist_graph::is_graph(comm_) {
            crate::dist_graph::DIST_GRAPH
        } else {
            UNDEFINED
        };
        // SAFETY: the caller's promise.
        unsafe { put("status", status, t) }
    })
}

/// The neighbors of this process in the Cartesian communicator `comm_`,
/// in MPI's order (for each dimension, the one at −1 then the one at +1;
/// `MPI_PROC_NULL` off a non-periodic edge), or `None` for a
/// communicator without a grid.
pub fn cart_neighbors(comm_: c_int) -> Result<Option<Vec<c_int>>, Fail> {
    let Ok(g) = grid_of(comm_) else {
        return Ok(None);
    };
    let me = runtime()?.comm_rank(comm(comm_)?);
    let mut out = Vec::with_capacity(2 * g.dims.len());
    for d in 0..g.dims.len() {
        for delta in [-1, 1] {
            let mut c = g.coords(me);
            c[d] += delta;
            out.push(g.rank(&c).unwrap_or(PROC_NULL));
        }
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn balanced_factors_come_largest_first() {
        assert_eq!(balanced(12, 2), [4, 3]);
        assert_eq!(balanced(16, 3), [4, 2, 2]);
        assert_eq!(balanced(7, 2), [7, 1]);
        assert_eq!(balanced(1, 3), [1, 1, 1]);
        assert_eq!(balanced(36, 2), [6, 6]);
    }

    #[test]
    fn coordinates_and_ranks_agree_and_wrap_where_periodic() {
        let g = Grid {
            dims: vec![2, 3],
            periods: vec![true, false],
        };
        for r in 0..6 {
            assert_eq!(g.rank(&g.coords(r)), Some(r));
        }
        assert_eq!(g.coords(4), [1, 1]);
        assert_eq!(g.rank(&[2, 1]), Some(1));
        assert_eq!(g.rank(&[0, 3]), None);
    }
}
