//! Distributed graph topologies: what a communicator made by
//! `MPI_Dist_graph_create_adjacent` or `MPI_Dist_graph_create`
//! (`dist_graph_create.rs`) knows of its graph, that constructor of the
//! adjacent form, and the queries `MPI_Dist_graph_neighbors_count` and
//! `MPI_Dist_graph_neighbors`. The neighborhood collectives over them are
//! in `neighbor.rs`.
//!
//! Each process keeps only its own neighbors: its sources and its
//! destinations, in order, with their weights when the graph is weighted.
//! `reorder` and the info object are accepted and not used (the new
//! communicator's ranks are the old ones).

use crate::errors::{run, Fail, ERR_ARG, ERR_RANK};
use crate::handles::{array, comm, comm_handle, count, put};
use crate::{runtime, PROC_NULL};
use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::Mutex;

/// `MPI_DIST_GRAPH`.
pub const DIST_GRAPH: c_int = 3;

/// What `MPI_UNWEIGHTED` points at (an address no weight array has; the
/// value is never read or written).
#[no_mangle]
pub static OXMPI_UNWEIGHTED: [c_int; 1] = [0];

/// What `MPI_WEIGHTS_EMPTY` points at.
#[no_mangle]
pub static OXMPI_WEIGHTS_EMPTY: [c_int; 1] = [0];

/// A process's neighbors: (sources, destinations).
pub type Neighbors = (Vec<c_int>, Vec<c_int>);

/// One process's part of a distributed graph.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DistGraph {
    /// The processes with an edge to this one, in order.
    pub sources: Vec<c_int>,
    /// The processes this one has an edge to, in order.
    pub destinations: Vec<c_int>,
    /// The weights of the edges of `sources` and of `destinations`, for a
    /// weighted graph.
    pub weights: Option<(Vec<c_int>, Vec<c_int>)>,
}

/// Graphs by communicator handle.
static GRAPHS: Mutex<Option<HashMap<c_int, DistGraph>>> = Mutex::new(None);

/// Keeps `graph` as the graph of the new communicator handle `h`.
pub fn keep(h: c_int, graph: DistGraph) {
    GRAPHS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(h, graph);
}

/// The graph of `comm_`, if it has one.
fn graph_of(comm_: c_int) -> Option<DistGraph> {
    GRAPHS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .and_then(|m| m.get(&comm_).cloned())
}

/// Whether `comm_` has a distributed graph.
pub fn is_graph(comm_: c_int) -> bool {
    GRAPHS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .is_some_and(|m| m.contains_key(&comm_))
}

/// This process's (sources, destinations) in the distributed graph of
/// `comm_`, if it has one.
pub fn neighbors_of(comm_: c_int) -> Option<Neighbors> {
    graph_of(comm_).map(|g| (g.sources, g.destinations))
}

/// Forgets the graph of a freed communicator.
pub fn forget(comm_: c_int) {
    if let Some(m) = GRAPHS.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        m.remove(&comm_);
    }
}

/// Whether `p` is `MPI_UNWEIGHTED`.
pub fn is_unweighted(p: *const c_int) -> bool {
    std::ptr::eq(p, OXMPI_UNWEIGHTED.as_ptr())
}

/// A weights argument of `n` edges: `None` for `MPI_UNWEIGHTED`, else the
/// weights (none for no edges, whatever `p` is).
///
/// # Errors
///
/// `MPI_ERR_ARG` for `MPI_WEIGHTS_EMPTY` or a null pointer with edges,
/// or a negative weight.
///
/// # Safety
///
/// `p` is `MPI_UNWEIGHTED`, `MPI_WEIGHTS_EMPTY`, or holds `n` ints.
pub unsafe fn weights_arg(
    what: &str,
    p: *const c_int,
    n: usize,
) -> Result<Option<Vec<c_int>>, Fail> {
    if is_unweighted(p) {
        return Ok(None);
    }
    if n > 0 && std::ptr::eq(p, OXMPI_WEIGHTS_EMPTY.as_ptr()) {
        return Err(Fail::new(
            ERR_ARG,
            format!(
                "{what} is MPI_WEIGHTS_EMPTY but there are {n} edges; give one weight per edge, or MPI_UNWEIGHTED"
            ),
        ));
    }
    // SAFETY: `n` ints (the caller's promise).
    let w = unsafe { array(what, p, n) }?.to_vec();
    if let Some((i, &x)) = w.iter().enumerate().find(|(_, &x)| x < 0) {
        return Err(Fail::new(
            ERR_ARG,
            format!("{what}[{i}] is {x}; weights must be 0 or more"),
        ));
    }
    Ok(Some(w))
}

/// A degree argument as a count.
///
/// # Errors
///
/// `MPI_ERR_ARG` for a negative one.
pub fn degree(what: &str, n: c_int) -> Result<usize, Fail> {
    count(what, n).map_err(|_| Fail::new(ERR_ARG, format!("{what} is {n}; it must be 0 or more")))
}

/// Checks that every entry of `ranks` (named `what`) is a rank of a
/// communicator of `size` processes (or `MPI_PROC_NULL`, where
/// `proc_null` allows it).
///
/// # Errors
///
/// `MPI_ERR_RANK` naming the first that is not.
pub fn check_ranks(what: &str, ranks: &[c_int], size: c_int, proc_null: bool) -> Result<(), Fail> {
    match ranks
        .iter()
        .enumerate()
        .find(|(_, &r)| !((0..size).contains(&r) || proc_null && r == PROC_NULL))
    {
        Some((i, &r)) => Err(Fail::new(
            ERR_RANK,
            format!(
                "{what}[{i}] is {r}, which is not a rank of the communicator (0 to {})",
                size - 1
            ),
        )),
        None => Ok(()),
    }
}

/// `MPI_Dist_graph_create_adjacent`. The graph is weighted unless
/// `sourceweights` and `destweights` are both `MPI_UNWEIGHTED`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Dist_graph_create_adjacent(
    comm_: c_int,
    indegree: c_int,
    sources: *const c_int,
    sourceweights: *const c_int,
    outdegree: c_int,
    destinations: *const c_int,
    destweights: *const c_int,
    _info: c_int,
    _reorder: c_int,
    out: *mut c_int,
) -> c_int {
    run("MPI_Dist_graph_create_adjacent", comm_, || {
        let (i, o) = (
            degree("indegree", indegree)?,
            degree("outdegree", outdegree)?,
        );
        // SAFETY: the caller's promise.
        let (s, d, sw, dw) = unsafe {
            (
                array("sources", sources, i)?.to_vec(),
                array("destinations", destinations, o)?.to_vec(),
                weights_arg("sourceweights", sourceweights, i)?,
                weights_arg("destweights", destweights, o)?,
            )
        };
        let weights =
            match (sw, dw) {
                (None, None) => None,
                (Some(sw), Some(dw)) => Some((sw, dw)),
                // A side without edges says nothing; the other decides.
                (Some(w), None) | (None, Some(w)) if w.is_empty() => None,
                _ => return Err(Fail::new(
                    ERR_ARG,
                    "one of sourceweights and destweights is MPI_UNWEIGHTED and the other holds \
                     weights; give MPI_UNWEIGHTED for both or weights for both",
                )),
            };
        let rt = runtime()?;
        let c = comm(comm_)?;
        let n = rt.comm_size(c);
        check_ranks("sources", &s, n, true)?;
        check_ranks("destinations", &d, n, true)?;
        let h = comm_handle(rt.comm_dup(c)?);
        crate::errors::set_handler(h, crate::errors::handler_of(comm_));
        keep(
            h,
            DistGraph {
                sources: s,
                destinations: d,
                weights,
            },
        );
        // SAFETY: the caller's promise.
        unsafe { put("comm_dist_graph", out, h) }
    })
}

/// `MPI_Dist_graph_neighbors_count`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Dist_graph_neighbors_count(
    comm_: c_int,
    indegree: *mut c_int,
    outdegree: *mut c_int,
    weighted: *mut c_int,
) -> c_int {
    run("MPI_Dist_graph_neighbors_count", comm_, || {
        let g = mine(comm_)?;
        // SAFETY: the caller's promise.
        unsafe {
            put("indegree", indegree, g.sources.len() as c_int)?;
            put("outdegree", outdegree, g.destinations.len() as c_int)?;
            put("weighted", weighted, g.weights.is_some() as c_int)
        }
    })
}

/// The distributed graph of `comm_`, or this process's neighbors in its
/// MPI-1 graph or Cartesian grid as an unweighted one.
fn mine(comm_: c_int) -> Result<DistGraph, Fail> {
    if let Some(g) = graph_of(comm_) {
        return Ok(g);
    }
    let n = crate::graph::my_neighbors(comm_)?
        .or(crate::topo::cart_neighbors(comm_)?)
        .ok_or_else(|| {
            Fail::new(
                crate::errors::ERR_TOPOLOGY,
                format!("communicator {comm_} has no topology (make one with MPI_Dist_graph_create or MPI_Dist_graph_create_adjacent)"),
            )
        })?;
    Ok(DistGraph {
        sources: n.clone(),
        destinations: n,
        weights: None,
    })
}

/// `MPI_Dist_graph_neighbors`: the weights of a weighted graph go where
/// asked; for an unweighted one, a weights array gets 1 for each edge.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Dist_graph_neighbors(
    comm_: c_int,
    maxindegree: c_int,
    sources: *mut c_int,
    sourceweights: *mut c_int,
    maxoutdegree: c_int,
    destinations: *mut c_int,
    destweights: *mut c_int,
) -> c_int {
    run("MPI_Dist_graph_neighbors", comm_, || {
        let g = mine(comm_)?;
        let room = |what: &str, max: c_int, need: usize| -> Result<(), Fail> {
            if (max as i64) < need as i64 {
                return Err(Fail::new(
                    ERR_ARG,
                    format!("{what} is {max} but there are {need} neighbors"),
                ));
            }
            Ok(())
        };
        room("maxindegree", maxindegree, g.sources.len())?;
        room("maxoutdegree", maxoutdegree, g.destinations.len())?;
        // Weights are the addresses MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY
        // stand for, or arrays; only arrays get written.
        let writable = |p: *mut c_int| {
            !p.is_null()
                && !is_unweighted(p.cast_const())
                && !std::ptr::eq(p.cast_const(), OXMPI_WEIGHTS_EMPTY.as_ptr())
        };
        let (sw, dw) = g
            .weights
            .unwrap_or_else(|| (vec![1; g.sources.len()], vec![1; g.destinations.len()]));
        for (i, (&r, &w)) in g.sources.iter().zip(&sw).enumerate() {
            // SAFETY: `maxindegree` entries (the caller's promise).
            unsafe {
                put("sources", sources.add(i), r)?;
                if writable(sourceweights) {
                    sourceweights.add(i).write(w);
                }
            }
        }
        for (i, (&r, &w)) in g.destinations.iter().zip(&dw).enumerate() {
            // SAFETY: `maxoutdegree` entries (the caller's promise).
            unsafe {
                put("destinations", destinations.add(i), r)?;
                if writable(destweights) {
                    destweights.add(i).write(w);
                }
            }
        }
        Ok(())
    })
}
