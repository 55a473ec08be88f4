//! `MPI_Dist_graph_create`: every process gives any edges of the graph
//! (`sources[i] → destinations[…]`, `degrees[i]` of them), and each
//! process learns its own sources and destinations from what all gave.
//!
//! The new communicator is a duplicate of the old one; on it, an
//! all-to-all of headers (how many ints of edge records go to each
//! process, whether the giver's arguments were valid, and whether it gave
//! weights) and then an all-to-all-v of the records: an edge `s → d` of
//! weight `w` goes to `s` as "destination `d`, `w`" and to `d` as "source
//! `s`, `w`".
//!
//! **Neighbor order.** A process's sources are listed by the rank of the
//! process that gave the edge, then in the order that process gave its
//! edges (its `sources` in order, and for each its `destinations` in
//! order); its destinations likewise. The edges between one pair of
//! processes `a → b` are therefore in the same order in `a`'s
//! destinations and in `b`'s sources, whoever gave them, so the k-th
//! block `a` sends to `b` in a neighborhood collective is the one `b`
//! receives as its k-th from `a`, and each edge's weight is the same at
//! both ends.
//!
//! **Weights.** The graph is weighted when the processes that give edges
//! give weights, unweighted when they give `MPI_UNWEIGHTED` (some of each
//! is refused with `MPI_ERR_ARG` at every process); when no process gives
//! an edge, it is weighted unless one passed `MPI_UNWEIGHTED`.
//!
//! **Errors.** Arguments that are not valid at one process fail the call
//! at every process, with the same class (the others' message names the
//! process whose arguments were wrong), so no process waits for another
//! that gave up; no communicator is made.

use crate::dist_graph::{check_ranks, degree, is_unweighted, keep, weights_arg, DistGraph};
use crate::errors::{class_text, run, Fail, ERR_ARG};
use crate::handles::{array, comm, comm_handle, COMM_NULL};
use crate::runtime;
use oxmpi_mpi_core::coll::{CollCall, CollKind, RSlice};
use oxmpi_mpi_core::Comm;
use std::ffi::c_int;

/// The record kind of an edge that leaves the receiving process.
const OUT: c_int = 0;
/// The record kind of an edge that reaches the receiving process.
const IN: c_int = 1;
/// Ints in one edge record: its kind, the peer and the weight.
const RECORD: usize = 3;
/// Ints in one header: the record ints that follow, the giver's error
/// class (0: its arguments are valid), its [`mode`].
const HEADER: usize = 3;
/// Mode bit: the process passed weights (not `MPI_UNWEIGHTED`).
const WEIGHTS: c_int = 1;
/// Mode bit: the process gave at least one edge.
const EDGES: c_int = 2;

/// The edges one process gives, in order: (source, destination, weight),
/// the weight 1 when it gave `MPI_UNWEIGHTED`.
type Edges = Vec<(c_int, c_int, c_int)>;

/// A process's arguments, checked: its edges and its mode bits.
///
/// # Errors
///
/// `MPI_ERR_ARG` for a negative `n` or degree, a null array, a bad
/// weight; `MPI_ERR_RANK` for a source or destination that is not a rank
/// of a communicator of `size`.
///
/// # Safety
///
/// The arrays hold what `n` and `degrees` say (`weights` may be
/// `MPI_UNWEIGHTED` or `MPI_WEIGHTS_EMPTY`).
unsafe fn given(
    size: c_int,
    n: c_int,
    sources: *const c_int,
    degrees: *const c_int,
    destinations: *const c_int,
    weights: *const c_int,
) -> Result<(Edges, c_int), Fail> {
    let n = degree("n", n)?;
    // SAFETY: `n` ints each (the caller's promise).
    let (s, deg) = unsafe { (array("sources", sources, n)?, array("degrees", degrees, n)?) };
    let mut total = 0usize;
    for (i, &k) in deg.iter().enumerate() {
        total += degree(&format!("degrees[{i}]"), k)?;
    }
    // SAFETY: the sum of the degrees, ints (the caller's promise).
    let (d, w) = unsafe {
        (
            array("destinations", destinations, total)?,
            weights_arg("weights", weights, total)?,
        )
    };
    check_ranks("sources", s, size, false)?;
    check_ranks("destinations", d, size, false)?;
    let mut edges = Vec::with_capacity(total);
    let mut next = 0;
    for (&src, &k) in s.iter().zip(deg) {
        for _ in 0..k {
            let weight = w.as_ref().map_or(1, |w| w[next]);
            edges.push((src, d[next], weight));
            next += 1;
        }
    }
    let mode = if is_unweighted(weights) { 0 } else { WEIGHTS } | if total > 0 { EDGES } else { 0 };
    Ok((edges, mode))
}

/// The edge records for each of `size` processes, in the order of `edges`.
fn records(size: usize, edges: &Edges) -> Vec<Vec<c_int>> {
    let mut to = vec![Vec::new(); size];
    for &(s, d, w) in edges {
        to[s as usize].extend([OUT, d, w]);
        to[d as usize].extend([IN, s, w]);
    }
    to
}

/// This process's graph from the records it received, those of each giver
/// after those of the ranks before it.
fn assemble(received: &[c_int], weighted: bool) -> DistGraph {
    let mut g = DistGraph::default();
    let (mut sw, mut dw) = (Vec::new(), Vec::new());
    for r in received.chunks_exact(RECORD) {
        if r[0] == OUT {
            g.destinations.push(r[1]);
            dw.push(r[2]);
        } else {
            g.sources.push(r[1]);
            sw.push(r[2]);
        }
    }
    g.weights = weighted.then_some((sw, dw));
    g
}

/// What every process's header says: whether the graph is weighted.
///
/// # Errors
///
/// The class of the first process whose arguments were not valid, naming
/// it; `MPI_ERR_ARG` when some processes gave weights for their edges and
/// others `MPI_UNWEIGHTED`.
fn verdict(headers: &[c_int]) -> Result<bool, Fail> {
    let of = |p: usize| &headers[p * HEADER..(p + 1) * HEADER];
    let n = headers.len() / HEADER;
    if let Some(p) = (0..n).find(|&p| of(p)[1] != 0) {
        let class = of(p)[1];
        let name = class_text(class).map_or("an error", |(name, _)| name);
        return Err(Fail::new(
            class,
            format!(
                "process {p} of the communicator gave arguments that are not valid ({name}; its own \
                 error says which), so no graph was made"
            ),
        ));
    }
    let with = |mode| (0..n).find(|&p| of(p)[2] == mode);
    match (with(WEIGHTS | EDGES), with(EDGES)) {
        (Some(p), Some(q)) => Err(Fail::new(
            ERR_ARG,
            format!(
                "process {p} gave weights for its edges and process {q} MPI_UNWEIGHTED; give \
                 MPI_UNWEIGHTED at every process or weights at every one (MPI_WEIGHTS_EMPTY where \
                 a process gives no edges)"
            ),
        )),
        (Some(_), None) => Ok(true),
        (None, Some(_)) => Ok(false),
        (None, None) => Ok((0..n).all(|p| of(p)[2] & WEIGHTS != 0)),
    }
}

/// Byte counts and displacements of `ints` ints per process, one after
/// another.
fn layout(ints: impl Iterator<Item = usize>) -> (Vec<usize>, Vec<usize>) {
    let counts: Vec<usize> = ints.map(|k| k * size_of::<c_int>()).collect();
    let displs = counts
        .iter()
        .scan(0, |at, &c| {
            let here = *at;
            *at += c;
            Some(here)
        })
        .collect();
    (counts, displs)
}

/// The exchange on the new communicator `c`: this process's headers and
/// records (or its failure) out, its graph back.
///
/// # Errors
///
/// This process's failure, another's, a weights conflict (see
/// [`verdict`]), or the runtime's.
fn exchange(c: Comm, mine: Result<(Edges, c_int), Fail>) -> Result<DistGraph, Fail> {
    let rt = runtime()?;
    let size = rt.comm_size(c) as usize;
    let (to, class, mode) = match &mine {
        Ok((edges, mode)) => (records(size, edges), 0, *mode),
        Err(f) => (vec![Vec::new(); size], f.class, 0),
    };
    let out: Vec<c_int> = to
        .iter()
        .flat_map(|r| [r.len() as c_int, class, mode])
        .collect();
    let mut headers = vec![0 as c_int; HEADER * size];
    let mut call = CollCall::new(CollKind::Alltoall);
    call.send = out.as_ptr().cast();
    call.recv = headers.as_mut_ptr().cast();
    call.count = HEADER * size_of::<c_int>();
    // SAFETY: both buffers hold a header per process and outlive the
    // blocking call.
    unsafe { rt.collective(c, &call) }?;
    mine?;
    let weighted = verdict(&headers)?;
    let (send_counts, send_displs) = layout(to.iter().map(Vec::len));
    let (counts, displs) = layout(headers.chunks_exact(HEADER).map(|h| h[0] as usize));
    let records: Vec<c_int> = to.concat();
    // Never empty, so never null (a null send buffer is MPI_IN_PLACE).
    let mut send = records;
    send.push(0);
    let mut received = vec![0 as c_int; counts.iter().sum::<usize>() / size_of::<c_int>() + 1];
    let mut call = CollCall::new(CollKind::Alltoallv);
    call.send = send.as_ptr().cast();
    call.recv = received.as_mut_ptr().cast();
    call.send_counts = RSlice::from_slice(&send_counts);
    call.send_displs = RSlice::from_slice(&send_displs);
    call.counts = RSlice::from_slice(&counts);
    call.displs = RSlice::from_slice(&displs);
    // SAFETY: the counts and displacements stay within both buffers,
    // which outlive the blocking call.
    unsafe { rt.collective(c, &call) }?;
    received.pop();
    Ok(assemble(&received, weighted))
}

/// `MPI_Dist_graph_create` (`info` and `reorder` are accepted and not
/// used; see the module's documentation for the order of neighbors).
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Dist_graph_create(
    comm_: c_int,
    n: c_int,
    sources: *const c_int,
    degrees: *const c_int,
    destinations: *const c_int,
    weights: *const c_int,
    _info: c_int,
    _reorder: c_int,
    out: *mut c_int,
) -> c_int {
    run("MPI_Dist_graph_create", comm_, || {
        let rt = runtime()?;
        let c = comm(comm_)?;
        let mine = if out.is_null() {
            Err(Fail::new(ERR_ARG, "comm_dist_graph is a null pointer"))
        } else {
            // SAFETY: the caller's promise.
            unsafe { given(rt.comm_size(c), n, sources, degrees, destinations, weights) }
        };
        let nc = rt.comm_dup(c)?;
        match exchange(nc, mine) {
            Ok(g) => {
                let h = comm_handle(nc);
                crate::errors::set_handler(h, crate::errors::handler_of(comm_));
                keep(h, g);
                // SAFETY: not null (checked above); the caller's promise.
                unsafe { out.write(h) };
                Ok(())
            }
            Err(f) => {
                rt.comm_free(nc)?;
                if !out.is_null() {
                    // SAFETY: the caller's promise.
                    unsafe { out.write(COMM_NULL) };
                }
                Err(f)
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What each of `size` processes receives when the givers give
    /// `given` (by rank), and the graph it assembles.
    fn run_all(size: usize, given: &[Edges], weighted: bool) -> Vec<DistGraph> {
        let sent: Vec<Vec<Vec<c_int>>> = given.iter().map(|e| records(size, e)).collect();
        (0..size)
            .map(|me| {
                let received: Vec<c_int> = sent.iter().flat_map(|to| to[me].clone()).collect();
                assemble(&received, weighted)
            })
            .collect()
    }

    #[test]
    fn neighbors_come_by_giver_then_in_the_order_given() {
        // Process 2 gives 0 → 1 (weight 5) and 1 → 0 (6); process 0
        // gives 0 → 1 twice (7, 8) and a self loop 0 → 0 (9).
        let given = vec![
            vec![(0, 1, 7), (0, 1, 8), (0, 0, 9)],
            vec![],
            vec![(0, 1, 5), (1, 0, 6)],
        ];
        let g = run_all(3, &given, true);
        assert_eq!(g[0].destinations, [1, 1, 0, 1]);
        assert_eq!(g[0].weights.as_ref().unwrap().1, [7, 8, 9, 5]);
        assert_eq!(g[0].sources, [0, 1]);
        assert_eq!(g[0].weights.as_ref().unwrap().0, [9, 6]);
        assert_eq!(g[1].sources, [0, 0, 0]);
        assert_eq!(g[1].weights.as_ref().unwrap().0, [7, 8, 5]);
        assert_eq!(g[1].destinations, [0]);
        assert!(g[2].sources.is_empty() && g[2].destinations.is_empty());
        assert!(run_all(3, &given, false)
            .iter()
            .all(|g| g.weights.is_none()));
    }

    #[test]
    fn the_edges_between_two_processes_pair_up_at_both_ends() {
        // Many edges between few processes, given by everyone; each
        // edge's weight names it.
        let size = 4;
        let given: Vec<Edges> = (0..size)
            .map(|g| {
                (0..12)
                    .map(|k| {
                        let s = (g * 7 + k * 3) % size;
                        let d = (g + k * k) % size;
                        (s as c_int, d as c_int, (100 * g + k) as c_int)
                    })
                    .collect()
            })
            .collect();
        let graphs = run_all(size, &given, true);
        for a in 0..size {
            for b in 0..size {
                let (ga, gb) = (&graphs[a], &graphs[b]);
                let out: Vec<c_int> = ga
                    .destinations
                    .iter()
                    .zip(&ga.weights.as_ref().unwrap().1)
                    .filter(|(&d, _)| d == b as c_int)
                    .map(|(_, &w)| w)
                    .collect();
                let inc: Vec<c_int> = gb
                    .sources
                    .iter()
                    .zip(&gb.weights.as_ref().unwrap().0)
                    .filter(|(&s, _)| s == a as c_int)
                    .map(|(_, &w)| w)
                    .collect();
                assert_eq!(out, inc, "edges {a} → {b}");
            }
        }
        let total: usize = graphs.iter().map(|g| g.destinations.len()).sum();
        assert_eq!(total, 12 * size);
    }

    #[test]
    fn the_headers_decide_weights_and_name_a_failed_process() {
        let h = |modes: &[(c_int, c_int)]| -> Vec<c_int> {
            modes
                .iter()
                .flat_map(|&(class, mode)| [0, class, mode])
                .collect()
        };
        assert_eq!(verdict(&h(&[(0, WEIGHTS | EDGES), (0, WEIGHTS)])), Ok(true));
        assert_eq!(verdict(&h(&[(0, EDGES), (0, WEIGHTS)])), Ok(false));
        assert_eq!(verdict(&h(&[(0, WEIGHTS), (0, WEIGHTS)])), Ok(true));
        assert_eq!(verdict(&h(&[(0, WEIGHTS), (0, 0)])), Ok(false));
        let mixed = verdict(&h(&[(0, EDGES), (0, WEIGHTS | EDGES)])).unwrap_err();
        assert_eq!(mixed.class, ERR_ARG);
        assert!(
            mixed.message.contains("process 1 gave weights"),
            "{}",
            mixed.message
        );
        let failed = verdict(&h(&[(0, EDGES), (6, 0), (13, 0)])).unwrap_err();
        assert_eq!(failed.class, 6);
        assert!(
            failed.message.starts_with("process 1 of the communicator")
                && failed.message.contains("MPI_ERR_RANK"),
            "{}",
            failed.message
        );
    }

    #[test]
    fn byte_layouts_follow_one_another() {
        let (c, d) = layout([2, 0, 3].into_iter());
        assert_eq!(c, [8, 0, 12]);
        assert_eq!(d, [0, 8, 8]);
    }
}
