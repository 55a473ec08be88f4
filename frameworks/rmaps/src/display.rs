//! `--display-map`: the job map as text for people, or as one JSON object
//! for scripts (`--display-map=json`).
//!
//! JSON shape (keys always present unless marked optional):
//!
//! ```json
//! {"mapper": "round_robin", "mapping_policy": "slot", "ranking_policy": null,
//!  "num_procs": 8,
//!  "nodes": [{"name": "node0", "slots": 2, "max_slots": 20, "num_procs": 4,
//!             "oversubscribed": true, "yield_when_idle": true,
//!             "procs": [{"rank": 0, "app": 0, "app_rank": 0, "local_rank": 0,
//!                        "node_rank": 0,
//!                        "object": "package:0",   (optional)
//!                        "cpus": [0, 1],          (optional, with :PE)
//!                        "binding": "..."}]}]}     (optional)
//! ```
//!
//! `max_slots` is `null` when unlimited; `ranking_policy` is `null` when
//! ranks follow placement order.

use crate::jobmap::JobMap;
use serde_json::{json, Map, Value};
use std::fmt::Write;

/// The map as a JSON value (shape in the module docs).
pub fn to_json(map: &JobMap) -> Value {
    let nodes: Vec<Value> = map
        .nodes
        .iter()
        .map(|n| {
            let procs: Vec<Value> = n
                .procs
                .iter()
                .map(|p| {
                    let mut o = Map::new();
                    o.insert("rank".into(), json!(p.rank));
                    o.insert("app".into(), json!(p.app));
                    o.insert("app_rank".into(), json!(p.app_rank));
                    o.insert("local_rank".into(), json!(p.local_rank));
                    o.insert("node_rank".into(), json!(p.node_rank));
                    if let Some(obj) = p.object {
                        o.insert("object".into(), json!(obj.to_string()));
                    }
                    if !p.cpus.is_empty() {
                        o.insert("cpus".into(), json!(p.cpus));
                    }
                    if let Some(b) = &p.binding {
                        o.insert("binding".into(), json!(b));
                    }
                    Value::Object(o)
                })
                .collect();
            json!({
                "name": n.name,
                "slots": n.slots,
                "max_slots": n.max_slots,
                "num_procs": n.procs.len(),
                "oversubscribed": n.oversubscribed,
                "yield_when_idle": n.oversubscribed,
                "procs": procs,
            })
        })
        .collect();
    json!({
        "mapper": map.mapper,
        "mapping_policy": map.policy.to_string(),
        "ranking_policy": map.rank_by.map(|r| r.to_string()),
        "num_procs": map.size(),
        "nodes": nodes,
    })
}

/// A JSON string literal.
fn quoted(out: &mut String, s: &str) {
    out.push_str(&Value::from(s).to_string());
}

/// The map as one line of JSON followed by a newline: the same document as
/// [`to_json`], written directly (a 10,000-rank map takes about a
/// millisecond).
pub fn json(map: &JobMap) -> String {
    let mut out = String::with_capacity(128 + 120 * map.size() as usize);
    out.push_str("{\"mapper\":");
    quoted(&mut out, &map.mapper);
    out.push_str(",\"mapping_policy\":");
    quoted(&mut out, &map.policy.to_string());
    out.push_str(",\"ranking_policy\":");
    match map.rank_by {
        Some(r) => quoted(&mut out, &r.to_string()),
        None => out.push_str("null"),
    }
    let _ = write!(out, ",\"num_procs\":{},\"nodes\":[", map.size());
    for (k, n) in map.nodes.iter().enumerate() {
        if k > 0 {
            out.push(',');
        }
        out.push_str("{\"name\":");
        quoted(&mut out, &n.name);
        let _ = write!(out, ",\"slots\":{},\"max_slots\":", n.slots);
        match n.max_slots {
            Some(m) => {
                let _ = write!(out, "{m}");
            }
            None => out.push_str("null"),
        }
        let _ = write!(
            out,
            ",\"num_procs\":{},\"oversubscribed\":{},\"yield_when_idle\":{},\"procs\":[",
            n.procs.len(),
            n.oversubscribed,
            n.oversubscribed
        );
        for (j, p) in n.procs.iter().enumerate() {
            if j > 0 {
                out.push(',');
            }
            let _ = write!(
                out,
                "{{\"rank\":{},\"app\":{},\"app_rank\":{},\"local_rank\":{},\"node_rank\":{}",
                p.rank, p.app, p.app_rank, p.local_rank, p.node_rank
            );
            if let Some(o) = p.object {
                let _ = write!(out, ",\"object\":\"{o}\"");
            }
            if !p.cpus.is_empty() {
                out.push_str(",\"cpus\":[");
                for (c, cpu) in p.cpus.iter().enumerate() {
                    if c > 0 {
                        out.push(',');
                    }
                    let _ = write!(out, "{cpu}");
                }
                out.push(']');
            }
            if let Some(b) = &p.binding {
                out.push_str(",\"binding\":");
                quoted(&mut out, b);
            }
            out.push('}');
        }
        out.push_str("]}");
    }
    out.push_str("]}\n");
    out
}

/// The map as text: a header with the policies, then per node its slots,
/// max slots, process count and whether it is oversubscribed, then one
/// line per process (rank, app, local rank, object, binding when known).
pub fn text(map: &JobMap) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "========================   JOB MAP   ========================"
    );
    let _ = writeln!(
        out,
        "Mapper: {}\tMapping policy: {}\tRanking policy: {}\tProcesses: {}",
        map.mapper,
        map.policy,
        map.rank_by
            .map_or_else(|| "placement order".to_string(), |r| r.to_string()),
        map.size()
    );
    for n in &map.nodes {
        let max = n
            .max_slots
            .map_or_else(|| "unlimited".to_string(), |m| m.to_string());
        let _ = writeln!(
            out,
            "\nData for node: {}\tNum slots: {}\tMax slots: {}\tNum procs: {}{}",
            n.name,
            n.slots,
            max,
            n.procs.len(),
            if n.oversubscribed {
                "\tOversubscribed (ranks yield when idle)"
            } else {
                ""
            }
        );
        for p in &n.procs {
            let _ = write!(
                out,
                "\tProcess rank: {}\tApp: {}\tLocal rank: {}",
                p.rank, p.app, p.local_rank
            );
            if let Some(o) = p.object {
                let _ = write!(out, "\tObject: {o}");
            }
            if !p.cpus.is_empty() {
                let cpus: Vec<String> = p.cpus.iter().map(u32::to_string).collect();
                let _ = write!(out, "\tCpus: {}", cpus.join(","));
            }
            let _ = writeln!(out, "\tBound: {}", p.binding.as_deref().unwrap_or("N/A"));
        }
    }
    let _ = writeln!(
        out,
        "\n============================================================="
    );
    out
}
