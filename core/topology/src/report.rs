//! `--report-bindings` text in Open MPI v4's format:
//!
//! ```text
//! [host:pid] MCW rank 0 bound to socket 0[core 0[hwt 0-1]], socket 0[core 1[hwt 0-1]]: [BB/BB/../..][../../../..]
//! [host:pid] MCW rank 1 is not bound (or bound to all available processors)
//! ```
//!
//! The description lists every core holding a bound PU as
//! `socket P[core C[hwt H]]`: P is the package's logical index, C the core's
//! logical index over the whole machine (not within the package), H the
//! bound threads' ranks within the core as a range list (`0-1`, `0,2`).
//! The map has one `[...]` per package, one `/`-separated group per core and
//! one character per hardware thread: `B` bound, `.` not.

use std::fmt::Write as _;

use crate::cpulist::{write_ranges, CpuList};
use crate::topology::Topology;

/// What a report says about one binding.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum BindingReport {
    /// Bound to nothing in the topology, or to every PU of it: Open MPI
    /// then says "is not bound (or bound to all available processors)".
    NotBound,
    /// Bound to some PUs.
    Bound {
        /// `socket 0[core 0[hwt 0]]`, cores separated by `, `.
        description: String,
        /// `[B./../..][../..]`.
        map: String,
    },
}

/// Describe a binding given as OS indexes (PUs the topology does not have
/// are ignored). [`BindingReport::NotBound`] when no PU of the topology is
/// in `cpus` or all of them are.
pub fn binding_report(topology: &Topology, cpus: &CpuList) -> BindingReport {
    let bound = cpus.intersection(topology.cpus());
    if bound.is_empty() || bound.len() == topology.cpus().len() {
        return BindingReport::NotBound;
    }
    let mut description = String::new();
    let mut map = String::new();
    for package in topology.packages() {
        map.push('[');
        for (c, core) in package.cores.iter().enumerate() {
            if c > 0 {
                map.push('/');
            }
            let mut ranks = Vec::new();
            for (t, thread) in core.hwthreads.iter().enumerate() {
                if bound.contains(thread.os_index) {
                    ranks.push(t);
                    map.push('B');
                } else {
                    map.push('.');
                }
            }
            if !ranks.is_empty() {
                if !description.is_empty() {
                    description.push_str(", ");
                }
                // Writing to a String cannot fail.
                let _ = write!(
                    description,
                    "socket {}[core {}[hwt ",
                    package.logical_index, core.logical_index
                );
                let _ = write_ranges(&mut description, &ranks);
                description.push_str("]]");
            }
        }
        map.push(']');
    }
    BindingReport::Bound { description, map }
}

/// One `--report-bindings` line, without a newline:
/// `[host:pid] MCW rank R bound to <description>: <map>`, or
/// `[host:pid] MCW rank R is not bound (or bound to all available processors)`
/// (see [`binding_report`]). Open MPI prints the launching daemon's host
/// name and pid, the same on every line of a node.
pub fn report_line(
    host: &str,
    pid: u32,
    rank: usize,
    topology: &Topology,
    cpus: &CpuList,
) -> String {
    match binding_report(topology, cpus) {
        BindingReport::NotBound => format!(
            "[{host}:{pid}] MCW rank {rank} is not bound (or bound to all available processors)"
        ),
        BindingReport::Bound { description, map } => {
            format!("[{host}:{pid}] MCW rank {rank} bound to {description}: {map}")
        }
    }
}
