//! The pipeline `mpirun --do-not-launch --display-map=json` runs, as a
//! library call: options → allocation → map → JSON.

#![allow(dead_code)]

use oxmpi_framework_rmaps::{
    allocation, display, hosts, policy, selection, AppHosts, Candidate, Hostfile, LocalHost,
    MapErrorKind, MapPolicy, MapRequest, Topology,
};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

/// The in-tree mapper components with their default priorities, as
/// mpirun finds them installed.
pub fn installed() -> Vec<Candidate> {
    vec![
        mca_rmaps_round_robin::candidate(),
        mca_rmaps_seq::candidate(),
        mca_rmaps_ppr::candidate(),
    ]
}

/// Maps `req` through the components, as mpirun selects them.
pub fn map_job(
    req: &MapRequest,
) -> Result<oxmpi_framework_rmaps::JobMap, oxmpi_framework_rmaps::MapError> {
    selection::map_with(&installed(), req)
}

/// One app of the command line.
#[derive(Clone, Default)]
pub struct App {
    pub np: Option<u32>,
    /// `(path, text)` of `--hostfile`.
    pub hostfile: Option<(&'static str, &'static str)>,
    /// `--host` value.
    pub host: Option<&'static str>,
}

/// A command line plus its environment.
#[derive(Clone)]
pub struct Job {
    pub env: Vec<(&'static str, &'static str)>,
    pub local: Topology,
    pub apps: Vec<App>,
    pub map_by: Option<&'static str>,
    pub rank_by: Option<&'static str>,
    /// `rmaps_default_mapping_policy`.
    pub default_policy: Option<&'static str>,
}

impl Default for Job {
    fn default() -> Self {
        Job {
            env: Vec::new(),
            // A 2-core laptop, as in the reference's examples.
            local: Topology::new(1, 1, 2, 4),
            apps: vec![App::default()],
            map_by: None,
            rank_by: None,
            default_policy: None,
        }
    }
}

/// Why a job did not map: the stage's error message and, for mapping
/// errors, the kind.
#[derive(Debug)]
pub struct Failure {
    pub kind: Option<MapErrorKind>,
    pub message: String,
}

/// Runs the pipeline; returns the parsed `--display-map=json` output.
pub fn run(job: &Job) -> Result<Value, Failure> {
    let fail = |message: String| Failure {
        kind: None,
        message,
    };
    let param = job
        .default_policy
        .map(policy::parse_default_mapping_policy)
        .transpose()
        .map_err(|e| fail(e.0))?;
    let cli = job
        .map_by
        .map(policy::parse_map_by)
        .transpose()
        .map_err(|e| fail(e.0))?;
    let policy = MapPolicy::resolve(param.as_ref(), cli.as_ref());
    let rank_by = job
        .rank_by
        .map(policy::parse_rank_by)
        .transpose()
        .map_err(|e| fail(e.0))?;
    let mut apps = Vec::new();
    for app in &job.apps {
        let hostfile = match app.hostfile {
            Some((path, text)) => {
                Some(Hostfile::parse(Path::new(path), text).map_err(|e| fail(e.0))?)
            }
            None => None,
        };
        let hosts = match app.host {
            Some(h) => hosts::parse_host_items(&[h.to_string()]).map_err(|e| fail(e.0))?,
            None => Vec::new(),
        };
        apps.push(AppHosts { hostfile, hosts });
    }
    let env: HashMap<String, String> = job
        .env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let resolved = allocation::resolve(&allocation::AllocationRequest {
        env: &env,
        local: LocalHost {
            name: "localhost".into(),
            topology: job.local,
        },
        hwtcpus: policy.hwtcpus,
        apps,
    })
    .map_err(|e| fail(e.0))?;
    let nps: Vec<Option<u32>> = job.apps.iter().map(|a| a.np).collect();
    let mut req = MapRequest::new(resolved, &nps, policy);
    req.rank_by = rank_by;
    let map = map_job(&req).map_err(|e| Failure {
        kind: Some(e.kind),
        message: e.message,
    })?;
    Ok(serde_json::from_str(&display::json(&map)).expect("display::json is JSON"))
}

/// Runs a job that must map.
pub fn map(job: &Job) -> Value {
    run(job).unwrap_or_else(|f| panic!("mapping failed: {}", f.message))
}

/// Runs a job that must fail.
pub fn fails(job: &Job) -> Failure {
    match run(job) {
        Ok(v) => panic!("expected a failure, got {v}"),
        Err(f) => f,
    }
}

/// Host of every rank, in rank order.
pub fn hosts_by_rank(v: &Value) -> Vec<String> {
    let mut ranks: Vec<(u64, String)> = Vec::new();
    for node in v["nodes"].as_array().unwrap() {
        for p in node["procs"].as_array().unwrap() {
            ranks.push((
                p["rank"].as_u64().unwrap(),
                node["name"].as_str().unwrap().to_string(),
            ));
        }
    }
    ranks.sort();
    for (i, (r, _)) in ranks.iter().enumerate() {
        assert_eq!(*r, i as u64, "ranks are 0..n without gaps");
    }
    ranks.into_iter().map(|(_, h)| h).collect()
}

/// The node object named `name`.
pub fn node<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == name)
        .unwrap_or_else(|| panic!("no node {name} in {v}"))
}

/// A field of every proc on node `name`, in rank order.
pub fn field(v: &Value, name: &str, key: &str) -> Vec<Value> {
    node(v, name)["procs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p[key].clone())
        .collect()
}

/// Ranks on node `name`.
pub fn ranks_on(v: &Value, name: &str) -> Vec<u64> {
    field(v, name, "rank")
        .iter()
        .map(|r| r.as_u64().unwrap())
        .collect()
}

/// Shorthand: one app.
pub fn app(
    np: Option<u32>,
    hostfile: Option<(&'static str, &'static str)>,
    host: Option<&'static str>,
) -> Vec<App> {
    vec![App { np, hostfile, host }]
}
