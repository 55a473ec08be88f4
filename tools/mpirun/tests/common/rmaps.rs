//! Helpers of the rmaps tests (`rmaps_*.rs`): mapping through the real
//! mpirun as `mpirun --do-not-launch --display-map=json ...`, reading the
//! JSON map, hostfiles in a temporary directory, the local host's cores and
//! name, and the shared hostfile, Slurm allocation and message texts.
//!
//! The library-level twin of those tests is
//! frameworks/rmaps/tests/reference_002.rs; in these the local host is the
//! real machine, so counts that depend on its cores are computed, not
//! assumed.
//!
//! Every failure is checked twice ([`fails_env`]): with `--do-not-launch
//! --display-map=json` (exit 1, nothing on stdout, `mpirun: error: ...`)
//! and as a real launch of `sh -c 'echo launched'` (the same error, and
//! nothing ran).

use super::{mpirun_in, Run};
use serde_json::Value;
use std::path::PathBuf;

/// Runs mpirun with `args` and `env` added to an environment cleaned of
/// anything that would change the map (a real Slurm allocation, rmaps
/// parameters) so that the tests hold inside a batch job too.
pub fn run_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    mpirun_in(args, &["SLURM_", "OXMPI_MCA_"], env)
}

/// `mpirun --do-not-launch --display-map=json ARGS` in `env`; `args` ends
/// with the program(s). Returns (parsed stdout, stderr).
pub fn map_env_with_stderr(args: &[&str], env: &[(&str, &str)]) -> (Value, String) {
    let mut full = vec!["--do-not-launch", "--display-map=json"];
    full.extend_from_slice(args);
    let run = run_env(&full, env);
    assert_eq!(
        run.code(),
        0,
        "mpirun {full:?} failed:\nstdout: {}\nstderr: {}",
        run.stdout,
        run.stderr
    );
    assert_eq!(
        run.stdout.lines().count(),
        1,
        "one JSON object on one line: {}",
        run.stdout
    );
    let v: Value = serde_json::from_str(run.stdout.trim_end())
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", run.stdout));
    assert!(v.is_object(), "{v}");
    (v, run.stderr)
}

/// Maps a job that must map, with nothing on stderr.
pub fn map_env(args: &[&str], env: &[(&str, &str)]) -> Value {
    let (v, stderr) = map_env_with_stderr(args, env);
    assert_eq!(stderr, "", "mpirun printed on stderr");
    v
}

pub fn map(args: &[&str]) -> Value {
    map_env(args, &[])
}

/// A job that must fail to map: `args` ends with the program `true`.
/// Checks both the `--do-not-launch --display-map=json` form and a real
/// launch (with `sh -c 'echo launched'` instead of `true`): exit status 1,
/// empty stdout, the same single `mpirun: error: ` line. Returns the
/// message after that prefix.
pub fn fails_env(args: &[&str], env: &[(&str, &str)]) -> String {
    assert_eq!(args.last(), Some(&"true"), "the program of a failing job");
    let mut dry = vec!["--do-not-launch", "--display-map=json"];
    dry.extend_from_slice(args);
    let dry_run = run_env(&dry, env);
    assert_eq!(
        dry_run.code(),
        1,
        "mpirun {dry:?}: expected exit 1\nstdout: {}\nstderr: {}",
        dry_run.stdout,
        dry_run.stderr
    );
    assert_eq!(dry_run.stdout, "", "no map is printed on an error");
    let stderr = dry_run.stderr.clone();
    assert_eq!(stderr.lines().count(), 1, "one error line: {stderr}");
    let message = stderr
        .trim_end()
        .strip_prefix("mpirun: error: ")
        .unwrap_or_else(|| panic!("not an mpirun error: {stderr}"))
        .to_string();

    let mut real: Vec<&str> = args[..args.len() - 1].to_vec();
    real.extend_from_slice(&["sh", "-c", "echo launched"]);
    let real_run = run_env(&real, env);
    assert_eq!(real_run.code(), 1, "mpirun {real:?}: {}", real_run.stderr);
    assert_eq!(real_run.stdout, "", "a rank was launched: {real:?}");
    assert_eq!(real_run.stderr, stderr, "the same error when launching");
    message
}

pub fn fails(args: &[&str]) -> String {
    fails_env(args, &[])
}

/// Host of every rank, in rank order (checking the ranks are 0..n).
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
        assert_eq!(*r, i as u64, "ranks are 0..n without gaps: {v}");
    }
    assert_eq!(v["num_procs"], ranks.len(), "num_procs: {v}");
    ranks.into_iter().map(|(_, h)| h).collect()
}

pub fn hosts(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
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

/// Names of the nodes, in map order.
pub fn node_names(v: &Value) -> Vec<String> {
    v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap().to_string())
        .collect()
}

/// A field of every proc on node `name`, in the map's order.
pub fn field(v: &Value, name: &str, key: &str) -> Vec<Value> {
    node(v, name)["procs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p[key].clone())
        .collect()
}

pub fn ranks_on(v: &Value, name: &str) -> Vec<u64> {
    field(v, name, "rank")
        .iter()
        .map(|r| r.as_u64().unwrap())
        .collect()
}

/// Hostfiles in a temporary directory.
pub struct Files {
    /// The directory, removed when this is dropped.
    pub dir: tempfile::TempDir,
}

impl Files {
    pub fn new() -> Files {
        Files {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// Writes `name` with `text`; returns its path.
    pub fn write(&self, name: &str, text: &str) -> String {
        let path: PathBuf = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    }
}

/// Cores and hardware threads of this machine (what a bare hostfile line
/// and `:HWTCPUS` give the local host, and the local host's slots).
pub fn local_cores() -> usize {
    oxmpi_topology::Topology::local().unwrap().num_cores()
}

pub fn local_hwthreads() -> usize {
    oxmpi_topology::Topology::local().unwrap().num_hwthreads()
}

pub fn local_name() -> String {
    gethostname::gethostname().to_string_lossy().into_owned()
}

pub const MY_HOSTS: &str = "node0 slots=2 max_slots=20\nnode1 slots=2 max_slots=20\n";

/// The scheduler allocation of the exclusionary examples: node01 … node04.
pub const SLURM: &[(&str, &str)] = &[
    ("SLURM_JOB_ID", "1234"),
    ("SLURM_JOB_NODELIST", "node[01-04]"),
    ("SLURM_TASKS_PER_NODE", "2(x4)"),
];

pub const TO_GO_ON: &str = "nothing was launched. To go on, use --map-by :OVERSUBSCRIBE to run more ranks than slots, up to max_slots; \
or give fewer ranks with -n, or more slots (slots=N in a hostfile, --host NAME:N).";
