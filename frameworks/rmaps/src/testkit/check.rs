//! The invariants every map the conformance suite gets must hold, each
//! broken one answered as a sentence.

use super::cases::{Expect, Mode};
use crate::display;
use crate::jobmap::JobMap;
use crate::request::MapRequest;

/// Checks `map`, the answer to `request` (sent with `mode`) from component
/// `component`, against every invariant and against `expect` (a
/// [`Expect::Maps`]); `slots_first` says whether the mapper fills every
/// slot before oversubscribing a host. The first broken invariant is the
/// error.
pub fn map_holds(
    component: &str,
    request: &MapRequest,
    mode: Mode,
    expect: &Expect,
    slots_first: bool,
    map: &JobMap,
) -> Result<(), String> {
    header(component, request, map)?;
    ranks(request, map)?;
    let counts = nodes(request, mode, map)?;
    let hosts = &request.allocation.nodes;
    if let Expect::Maps(Some(want)) = expect {
        if &counts != want {
            return Err(format!(
                "it placed {counts:?} processes on the hosts {:?}, where {want:?} were due",
                hosts.iter().map(|h| h.name.as_str()).collect::<Vec<_>>()
            ));
        }
    }
    if slots_first {
        let size: u64 = counts.iter().sum();
        let over = |i: usize| counts[i] > u64::from(hosts[i].slots);
        if size <= request.allocation.total_slots() {
            if let Some(i) = (0..hosts.len()).find(|&i| over(i)) {
                return Err(format!(
                    "host {} got {} processes for its {} slots although the job fits in the slots",
                    hosts[i].name, counts[i], hosts[i].slots
                ));
            }
        } else if let Some(i) = (0..hosts.len()).find(|&i| counts[i] < u64::from(hosts[i].slots)) {
            return Err(format!(
                "host {} was left with a free slot ({} processes for {} slots) while others were oversubscribed",
                hosts[i].name, counts[i], hosts[i].slots
            ));
        }
    }
    renders(component, map)
}

/// The map names the mapper, the policy and the ranking asked for, and
/// one size per app.
fn header(component: &str, request: &MapRequest, map: &JobMap) -> Result<(), String> {
    if map.mapper != component {
        return Err(format!(
            "the map names the mapper \"{}\", not \"{component}\"",
            map.mapper
        ));
    }
    if map.policy != request.policy {
        return Err(format!(
            "the map names the policy {}, not the {} asked for",
            map.policy, request.policy
        ));
    }
    if map.rank_by != request.rank_by {
        return Err(format!(
            "the map names the ranking {:?}, not the {:?} asked for",
            map.rank_by, request.rank_by
        ));
    }
    if map.app_sizes.len() != request.apps.len() {
        return Err(format!(
            "the map has {} app sizes for {} apps",
            map.app_sizes.len(),
            request.apps.len()
        ));
    }
    for (k, (app, &size)) in request.apps.iter().zip(&map.app_sizes).enumerate() {
        if app.np.is_some_and(|np| np != size) {
            return Err(format!(
                "app {k} asked for {} processes and got {size}",
                app.np.unwrap_or_default()
            ));
        }
    }
    Ok(())
}

/// Every rank 0..n-1 mapped exactly once, numbered app by app.
fn ranks(request: &MapRequest, map: &JobMap) -> Result<(), String> {
    let size: u64 = map.app_sizes.iter().map(|&s| u64::from(s)).sum();
    let mut seen = vec![false; usize::try_from(size).unwrap_or(usize::MAX)];
    let mut first_rank = Vec::with_capacity(map.app_sizes.len());
    let mut next = 0u64;
    for &s in &map.app_sizes {
        first_rank.push(next);
        next += u64::from(s);
    }
    for node in &map.nodes {
        for p in &node.procs {
            let Some(slot) = seen.get_mut(p.rank as usize) else {
                return Err(format!(
                    "rank {} on {} is outside a job of {size}",
                    p.rank, node.name
                ));
            };
            if std::mem::replace(slot, true) {
                return Err(format!("rank {} is mapped twice", p.rank));
            }
            let app = p.app as usize;
            if app >= request.apps.len() || p.app_rank >= map.app_sizes[app] {
                return Err(format!(
                    "rank {} is app {} rank {}, outside the apps' sizes {:?}",
                    p.rank, p.app, p.app_rank, map.app_sizes
                ));
            }
            if u64::from(p.rank) != first_rank[app] + u64::from(p.app_rank) {
                return Err(format!(
                    "rank {} is app {} rank {}: ranks are not numbered app by app",
                    p.rank, p.app, p.app_rank
                ));
            }
        }
    }
    if let Some(r) = seen.iter().position(|s| !s) {
        return Err(format!("rank {r} of {size} is not mapped"));
    }
    Ok(())
}

/// The nodes: allocation hosts in allocation order, each once and with
/// processes, their slots as given, local ranks in rank order, objects
/// that exist, no host above its limit and the oversubscribed mark where
/// a host has more processes than slots. Answers the processes per
/// allocation host.
fn nodes(request: &MapRequest, mode: Mode, map: &JobMap) -> Result<Vec<u64>, String> {
    let hosts = &request.allocation.nodes;
    let mut counts = vec![0u64; hosts.len()];
    let mut last: Option<usize> = None;
    for node in &map.nodes {
        let Some(i) = request.allocation.position(&node.name) else {
            return Err(format!("host {} is not in the allocation", node.name));
        };
        if last.is_some_and(|l| i <= l) {
            return Err(format!(
                "host {} is listed twice or out of allocation order",
                node.name
            ));
        }
        last = Some(i);
        let spec = &hosts[i];
        if node.procs.is_empty() {
            return Err(format!("host {} is listed without processes", node.name));
        }
        if node.slots != spec.slots || node.max_slots != spec.max_slots {
            return Err(format!(
                "host {} is shown with {} slots and max_slots {:?}, not its {} and {:?}",
                node.name, node.slots, node.max_slots, spec.slots, spec.max_slots
            ));
        }
        let n = node.procs.len() as u64;
        counts[i] = n;
        if node.oversubscribed != (n > u64::from(spec.slots)) {
            return Err(format!(
                "host {} has {n} processes for {} slots but is {}marked oversubscribed",
                node.name,
                spec.slots,
                if node.oversubscribed { "" } else { "not " }
            ));
        }
        if let Some(limit) = mode.limit(spec).filter(|&l| n > l) {
            return Err(format!(
                "host {} got {n} processes, above the {limit} it may take with {}",
                node.name, request.policy
            ));
        }
        let topology = spec.topology.unwrap_or(request.default_topology);
        for (k, p) in node.procs.iter().enumerate() {
            if k > 0 && node.procs[k - 1].rank >= p.rank {
                return Err(format!(
                    "the processes of host {} are not in rank order",
                    node.name
                ));
            }
            if p.local_rank != k as u32 || p.node_rank != k as u32 {
                return Err(format!(
                    "rank {} is process {k} of host {} but has local rank {} and node rank {}",
                    p.rank, node.name, p.local_rank, p.node_rank
                ));
            }
            if let Some(o) = p.object {
                if o.index >= topology.count(o.kind) {
                    return Err(format!(
                        "rank {} is placed on {o}, which host {} does not have ({} of them)",
                        p.rank,
                        node.name,
                        topology.count(o.kind)
                    ));
                }
            }
        }
    }
    Ok(counts)
}

/// `--display-map` renders the map, as text and as JSON.
fn renders(component: &str, map: &JobMap) -> Result<(), String> {
    let text = display::text(map);
    let size = map.size() as usize;
    if !text.contains("JOB MAP") || !text.contains(&format!("Mapper: {component}")) {
        return Err(format!(
            "--display-map text has no header naming the mapper:\n{text}"
        ));
    }
    for node in &map.nodes {
        if !text.contains(&format!("Data for node: {}\t", node.name)) {
            return Err(format!(
                "--display-map text does not show host {}",
                node.name
            ));
        }
    }
    if text.matches("Process rank: ").count() != size {
        return Err(format!(
            "--display-map text does not show one line per process ({size}):\n{text}"
        ));
    }
    let json: serde_json::Value = serde_json::from_str(&display::json(map))
        .map_err(|e| format!("--display-map=json is not JSON: {e}"))?;
    if json["num_procs"].as_u64() != Some(size as u64)
        || json["nodes"].as_array().map(Vec::len) != Some(map.nodes.len())
    {
        return Err(format!(
            "--display-map=json does not show {size} processes on {} hosts: {json}",
            map.nodes.len()
        ));
    }
    Ok(())
}
