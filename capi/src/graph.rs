//! The graph topologies of MPI-1 (`MPI_Graph_create`, `MPI_Graphdims_get`,
//! `MPI_Graph_get`, `MPI_Graph_neighbors_count`, `MPI_Graph_neighbors`).
//! A graph communicator is made like a Cartesian one: the first `nnodes`
//! ranks of the old communicator, in order (no reordering); node `i`'s
//! neighbors are `edges[index[i − 1] .. index[i]]`. Neighborhood
//! collectives take them as both sources and destinations.

use crate::errors::{run, Fail, ERR_ARG, ERR_RANK, ERR_TOPOLOGY};
use crate::handles::{array, comm, comm_handle, count, put, COMM_NULL};
use crate::{runtime, UNDEFINED};
use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::Mutex;

/// `MPI_GRAPH`.
pub const GRAPH: c_int = 2;

/// A graph: the cumulative degrees and the edges, as given.
#[derive(Clone, Debug)]
struct Graph {
    index: Vec<c_int>,
    edges: Vec<c_int>,
}

impl Graph {
    /// The neighbors of node `i`.
    fn neighbors(&self, i: usize) -> &[c_int] {
        let from = if i == 0 {
            0
        } else {
            self.index[i - 1] as usize
        };
        &self.edges[from..self.index[i] as usize]
    }
}

static GRAPHS: Mutex<Option<HashMap<c_int, Graph>>> = Mutex::new(None);

fn graph_of(comm_: c_int) -> Result<Graph, Fail> {
    GRAPHS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .and_then(|m| m.get(&comm_).cloned())
        .ok_or_else(|| {
            Fail::new(
                ERR_TOPOLOGY,
                format!(
                    "communicator {comm_} has no graph topology (make one with MPI_Graph_create)"
                ),
            )
        })
}

/// Whether `comm_` has a graph topology.
pub fn is_graph(comm_: c_int) -> bool {
    GRAPHS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .is_some_and(|m| m.contains_key(&comm_))
}

/// This process's neighbors in the graph of `comm_`, if it has one.
pub fn my_neighbors(comm_: c_int) -> Result<Option<Vec<c_int>>, Fail> {
    let Ok(g) = graph_of(comm_) else {
        return Ok(None);
    };
    let me = runtime()?.comm_rank(comm(comm_)?) as usize;
    Ok(Some(g.neighbors(me).to_vec()))
}

/// Forgets the graph of a freed communicator.
pub fn forget(comm_: c_int) {
    if let Some(m) = GRAPHS.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        m.remove(&comm_);
    }
}

/// Checks a graph's arrays: `index` non-decreasing from 0, every edge a
/// node.
fn check(nnodes: usize, index: &[c_int], edges: &[c_int]) -> Result<(), Fail> {
    let mut last = 0;
    for (i, &x) in index.iter().enumerate() {
        if x < last {
            return Err(Fail::new(
                ERR_ARG,
                format!(
                    "index[{i}] is {x}, below index[{}]; the index is cumulative",
                    i.saturating_sub(1)
                ),
            ));
        }
        last = x;
    }
    if let Some((i, &e)) = edges
        .iter()
        .enumerate()
        .find(|(_, &e)| !(0..nnodes as c_int).contains(&e))
    {
        return Err(Fail::new(
            ERR_RANK,
            format!("edges[{i}] is {e}; nodes go from 0 to {}", nnodes - 1),
        ));
    }
    Ok(())
}

/// `MPI_Graph_create` (`reorder` is ignored).
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Graph_create(
    comm_: c_int,
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
    _reorder: c_int,
    out: *mut c_int,
) -> c_int {
    run("MPI_Graph_create", comm_, || {
        let n = count("nnodes", nnodes)?;
        // SAFETY: the caller's promise: `nnodes` entries.
        let idx = unsafe { array("index", index, n) }?.to_vec();
        let m = count("the number of edges", idx.last().copied().unwrap_or(0))?;
        // SAFETY: the caller's promise: `index[nnodes − 1]` entries.
        let e = unsafe { array("edges", edges, m) }?.to_vec();
        check(n, &idx, &e)?;
        let rt = runtime()?;
        let c = comm(comm_)?;
        if n as c_int > rt.comm_size(c) {
            return Err(Fail::new(
                ERR_ARG,
                format!(
                    "the graph has {n} nodes but the communicator {} ranks",
                    rt.comm_size(c)
                ),
            ));
        }
        let me = rt.comm_rank(c);
        let color = if (me as usize) < n { 0 } else { UNDEFINED };
        let h = rt.comm_split(c, color, me)?.map_or(COMM_NULL, comm_handle);
        if h != COMM_NULL {
            crate::errors::set_handler(h, crate::errors::handler_of(comm_));
            GRAPHS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get_or_insert_with(HashMap::new)
                .insert(
                    h,
                    Graph {
                        index: idx,
                        edges: e,
                    },
                );
        }
        // SAFETY: the caller's promise.
        unsafe { put("comm_graph", out, h) }
    })
}

/// `MPI_Graphdims_get`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Graphdims_get(
    comm_: c_int,
    nnodes: *mut c_int,
    nedges: *mut c_int,
) -> c_int {
    run("MPI_Graphdims_get", comm_, || {
        let g = graph_of(comm_)?;
        // SAFETY: the caller's promise.
        unsafe {
            put("nnodes", nnodes, g.index.len() as c_int)?;
            put("nedges", nedges, g.edges.len() as c_int)
        }
    })
}

/// Writes `v` into the C array `p` of room `max`.
///
/// # Safety
///
/// `p` holds `max` ints.
unsafe fn write_all(what: &str, p: *mut c_int, max: c_int, v: &[c_int]) -> Result<(), Fail> {
    if (max as i64) < v.len() as i64 {
        return Err(Fail::new(
            ERR_ARG,
            format!("{what} has room for {max} but needs {}", v.len()),
        ));
    }
    for (i, &x) in v.iter().enumerate() {
        // SAFETY: `max ≥ len` ints (the caller's promise).
        unsafe { put(what, p.add(i), x)? };
    }
    Ok(())
}

/// `MPI_Graph_get`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Graph_get(
    comm_: c_int,
    maxindex: c_int,
    maxedges: c_int,
    index: *mut c_int,
    edges: *mut c_int,
) -> c_int {
    run("MPI_Graph_get", comm_, || {
        let g = graph_of(comm_)?;
        // SAFETY: the caller's promise.
        unsafe {
            write_all("index", index, maxindex, &g.index)?;
            write_all("edges", edges, maxedges, &g.edges)
        }
    })
}

/// The neighbors of node `rank` of the graph of `comm_`.
fn of(comm_: c_int, rank: c_int) -> Result<Vec<c_int>, Fail> {
    let g = graph_of(comm_)?;
    let i = usize::try_from(rank)
        .ok()
        .filter(|&i| i < g.index.len())
        .ok_or_else(|| {
            Fail::new(
                ERR_RANK,
                format!(
                    "rank {rank} is not a node of the graph (0 to {})",
                    g.index.len().saturating_sub(1)
                ),
            )
        })?;
    Ok(g.neighbors(i).to_vec())
}

/// `MPI_Graph_neighbors_count`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Graph_neighbors_count(
    comm_: c_int,
    rank: c_int,
    nneighbors: *mut c_int,
) -> c_int {
    run("MPI_Graph_neighbors_count", comm_, || {
        let n = of(comm_, rank)?.len() as c_int;
        // SAFETY: the caller's promise.
        unsafe { put("nneighbors", nneighbors, n) }
    })
}

/// `MPI_Graph_neighbors`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Graph_neighbors(
    comm_: c_int,
    rank: c_int,
    maxneighbors: c_int,
    neighbors: *mut c_int,
) -> c_int {
    run("MPI_Graph_neighbors", comm_, || {
        let v = of(comm_, rank)?;
        // SAFETY: the caller's promise.
        unsafe { write_all("neighbors", neighbors, maxneighbors, &v) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbors_come_from_the_cumulative_index() {
        let g = Graph {
            index: vec![2, 3, 3, 5],
            edges: vec![1, 3, 0, 0, 1],
        };
        assert_eq!(g.neighbors(0), [1, 3]);
        assert_eq!(g.neighbors(1), [0]);
        assert!(g.neighbors(2).is_empty());
        assert_eq!(g.neighbors(3), [0, 1]);
        assert!(check(4, &g.index, &g.edges).is_ok());
        assert!(check(4, &[2, 1], &[0, 1]).is_err());
        assert!(check(2, &[1, 2], &[0, 5]).is_err());
    }
}
