//! Mapping through the real mpirun: every example of reference 002
//! ("Scheduling processes across hosts") as
//! `mpirun --do-not-launch --display-map=json ...`, plus `--host` slot
//! counts, exclusionary and inclusionary host lists (with a fake Slurm
//! allocation in mpirun's environment), MPMD with a hostfile per app,
//! oversubscription, every hostfile error, the default mapping policy
//! parameter, the text map, and the rmaps component selection.
//!
//! The library-level twin of these tests is
//! frameworks/rmaps/tests/reference_002.rs; here the local host is the real
//! machine, so counts that depend on its cores are computed, not assumed.
//!
//! Every failure is checked twice: with `--do-not-launch --display-map=json`
//! (exit 1, nothing on stdout, `mpirun: error: ...`) and as a real launch of
//! `sh -c 'echo launched'` (the same error, and nothing ran).

mod common;

use common::*;
use serde_json::{json, Value};
use std::path::PathBuf;

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/// Runs mpirun with `args` and `env` added to an environment cleaned of
/// anything that would change the map (a real Slurm allocation, rmaps
/// parameters) so that the tests hold inside a batch job too.
fn run_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    mpirun_in(args, &["SLURM_", "OXMPI_MCA_"], env)
}

/// `mpirun --do-not-launch --display-map=json ARGS` in `env`; `args` ends
/// with the program(s). Returns (parsed stdout, stderr).
fn map_env_with_stderr(args: &[&str], env: &[(&str, &str)]) -> (Value, String) {
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
fn map_env(args: &[&str], env: &[(&str, &str)]) -> Value {
    let (v, stderr) = map_env_with_stderr(args, env);
    assert_eq!(stderr, "", "mpirun printed on stderr");
    v
}

fn map(args: &[&str]) -> Value {
    map_env(args, &[])
}

/// A job that must fail to map: `args` ends with the program `true`.
/// Checks both the `--do-not-launch --display-map=json` form and a real
/// launch (with `sh -c 'echo launched'` instead of `true`): exit status 1,
/// empty stdout, the same single `mpirun: error: ` line. Returns the
/// message after that prefix.
fn fails_env(args: &[&str], env: &[(&str, &str)]) -> String {
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

fn fails(args: &[&str]) -> String {
    fails_env(args, &[])
}

/// Host of every rank, in rank order (checking the ranks are 0..n).
fn hosts_by_rank(v: &Value) -> Vec<String> {
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

fn hosts(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// The node object named `name`.
fn node<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == name)
        .unwrap_or_else(|| panic!("no node {name} in {v}"))
}

/// Names of the nodes, in map order.
fn node_names(v: &Value) -> Vec<String> {
    v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap().to_string())
        .collect()
}

/// A field of every proc on node `name`, in the map's order.
fn field(v: &Value, name: &str, key: &str) -> Vec<Value> {
    node(v, name)["procs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p[key].clone())
        .collect()
}

fn ranks_on(v: &Value, name: &str) -> Vec<u64> {
    field(v, name, "rank")
        .iter()
        .map(|r| r.as_u64().unwrap())
        .collect()
}

/// Hostfiles in a temporary directory.
struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    fn new() -> Files {
        Files {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// Writes `name` with `text`; returns its path.
    fn write(&self, name: &str, text: &str) -> String {
        let path: PathBuf = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    }
}

/// Cores and hardware threads of this machine (what a bare hostfile line
/// and `:HWTCPUS` give the local host, and the local host's slots).
fn local_cores() -> usize {
    oxmpi_topology::Topology::local().unwrap().num_cores()
}

fn local_hwthreads() -> usize {
    oxmpi_topology::Topology::local().unwrap().num_hwthreads()
}

fn local_name() -> String {
    gethostname::gethostname().to_string_lossy().into_owned()
}

const MY_HOSTS: &str = "node0 slots=2 max_slots=20\nnode1 slots=2 max_slots=20\n";

/// The scheduler allocation of the exclusionary examples: node01 … node04.
const SLURM: &[(&str, &str)] = &[
    ("SLURM_JOB_ID", "1234"),
    ("SLURM_JOB_NODELIST", "node[01-04]"),
    ("SLURM_TASKS_PER_NODE", "2(x4)"),
];

const TO_GO_ON: &str = "nothing was launched. To go on, use --map-by :OVERSUBSCRIBE to run more ranks than slots, up to max_slots; \
or give fewer ranks with -n, or more slots (slots=N in a hostfile, --host NAME:N).";

// ---------------------------------------------------------------------------
// Scheduling overview: by slot, by node, oversubscription
// ---------------------------------------------------------------------------

/// "By slot": `mpirun --hostfile my-hosts -n 8 --map-by slot hello`.
#[test]
fn by_slot_example() {
    let f = Files::new();
    let my_hosts = f.write("my-hosts", MY_HOSTS);
    let v = map(&[
        "--hostfile",
        &my_hosts,
        "-n",
        "8",
        "--map-by",
        "slot",
        "true",
    ]);
    assert_eq!(
        hosts_by_rank(&v),
        hosts(&["node0", "node0", "node1", "node1", "node0", "node0", "node1", "node1"])
    );
    let procs = |ranks: [u64; 4]| -> Vec<Value> {
        ranks
            .iter()
            .enumerate()
            .map(|(local, &r)| {
                json!({"rank": r, "app": 0, "app_rank": r, "local_rank": local, "node_rank": local})
            })
            .collect()
    };
    assert_eq!(
        v,
        json!({
            "mapper": "round_robin",
            "mapping_policy": "slot",
            "ranking_policy": null,
            "num_procs": 8,
            "nodes": [
                {"name": "node0", "slots": 2, "max_slots": 20, "num_procs": 4,
                 "oversubscribed": true, "yield_when_idle": true, "procs": procs([0, 1, 4, 5])},
                {"name": "node1", "slots": 2, "max_slots": 20, "num_procs": 4,
                 "oversubscribed": true, "yield_when_idle": true, "procs": procs([2, 3, 6, 7])},
            ]
        })
    );
    // By slot is the default, and `rmaps_default_mapping_policy slot` asks
    // for it too.
    for extra in [
        vec![],
        vec!["--mca", "rmaps_default_mapping_policy", "slot"],
    ] {
        let mut args = extra.clone();
        args.extend_from_slice(&["--hostfile", &my_hosts, "-n", "8", "true"]);
        let v2 = map(&args);
        assert_eq!(v2, v, "{extra:?}");
    }
}

/// "By node": `mpirun --hostname my-hosts -n 8 --map-by node hello` (the
/// reference's `--hostname` is `--hostfile`).
#[test]
fn by_node_example() {
    let f = Files::new();
    let my_hosts = f.write("my-hosts", MY_HOSTS);
    let v = map(&[
        "--hostfile",
        &my_hosts,
        "-n",
        "8",
        "--map-by",
        "node",
        "true",
    ]);
    assert_eq!(
        hosts_by_rank(&v),
        hosts(&["node0", "node1", "node0", "node1", "node0", "node1", "node0", "node1"])
    );
    assert_eq!(v["mapper"], "round_robin");
    assert_eq!(v["mapping_policy"], "node");
    assert_eq!(ranks_on(&v, "node0"), [0, 2, 4, 6]);
    assert_eq!(ranks_on(&v, "node1"), [1, 3, 5, 7]);
    assert_eq!(field(&v, "node0", "local_rank"), [0, 1, 2, 3]);
    assert_eq!(field(&v, "node1", "local_rank"), [0, 1, 2, 3]);
    for n in ["node0", "node1"] {
        assert_eq!(node(&v, n)["slots"], 2);
        assert_eq!(node(&v, n)["max_slots"], 20);
        assert_eq!(node(&v, n)["oversubscribed"], true);
    }
}

/// `rmaps_default_mapping_policy node` (as `--mca`) gives the by-node map;
/// `--map-by` beats it.
#[test]
fn default_mapping_policy_parameter_node() {
    let f = Files::new();
    let my_hosts = f.write("my-hosts", MY_HOSTS);
    let by_node = map(&[
        "--hostfile",
        &my_hosts,
        "-n",
        "8",
        "--map-by",
        "node",
        "true",
    ]);
    let v = map(&[
        "--mca",
        "rmaps_default_mapping_policy",
        "node",
        "--hostfile",
        &my_hosts,
        "-n",
        "8",
        "true",
    ]);
    assert_eq!(v, by_node);
    let v = map(&[
        "--mca",
        "rmaps_default_mapping_policy",
        "node",
        "--map-by",
        "slot",
        "--hostfile",
        &my_hosts,
        "-n",
        "8",
        "true",
    ]);
    assert_eq!(v["mapping_policy"], "slot");
    assert_eq!(ranks_on(&v, "node0"), [0, 1, 4, 5]);
}

/// `OXMPI_MCA_rmaps_default_mapping_policy=:oversubscribe` in the
/// environment with `--map-by slot` on the command line: the policy is
/// slot and the modifier of the parameter stays.
#[test]
fn default_mapping_policy_modifier_from_the_environment() {
    let f = Files::new();
    let h = f.write("h", "n0 slots=2\nn1 slots=2\n");
    let args = ["--map-by", "slot", "--hostfile", &h, "-n", "6", "true"];
    let env = [("OXMPI_MCA_rmaps_default_mapping_policy", ":oversubscribe")];
    let v = map_env(&args, &env);
    assert_eq!(v["mapping_policy"], "slot:OVERSUBSCRIBE");
    assert_eq!(
        hosts_by_rank(&v),
        hosts(&["n0", "n0", "n1", "n1", "n0", "n0"])
    );
    assert_eq!(node(&v, "n0")["oversubscribed"], true);
    assert_eq!(node(&v, "n1")["oversubscribed"], false);
    // Without the parameter the same command line is refused.
    let message = fails(&args);
    assert!(
        message.starts_with(&format!(
            "not enough slots: 6 ranks requested, 4 slots on n0 (2), n1 (2) (hosts from hostfile {h})"
        )),
        "{message}"
    );
}

/// "Nodes are skipped once their default slot counts are exhausted".
#[test]
fn by_node_skips_nodes_whose_slots_are_used_up() {
    let f = Files::new();
    let h = f.write("h", "node0 slots=1\nnode1 slots=3\n");
    let v = map(&["--hostfile", &h, "-n", "4", "--map-by", "node", "true"]);
    assert_eq!(
        hosts_by_rank(&v),
        hosts(&["node0", "node1", "node1", "node1"])
    );
    assert_eq!(node(&v, "node0")["oversubscribed"], false);
    assert_eq!(node(&v, "node1")["oversubscribed"], false);
}

/// ":OVERSUBSCRIBE ... continue to loop through the list of nodes again
/// ... Nodes are skipped in this process if their maximum slot count is
/// exhausted."
#[test]
fn oversubscribe_loops_skipping_nodes_at_max_slots() {
    let f = Files::new();
    let h = f.write("h", "node0 slots=1 max_slots=2\nnode1 slots=1\n");
    let v = map(&[
        "--hostfile",
        &h,
        "-n",
        "6",
        "--map-by",
        "node:OVERSUBSCRIBE",
        "true",
    ]);
    assert_eq!(
        hosts_by_rank(&v),
        hosts(&["node0", "node1", "node0", "node1", "node1", "node1"])
    );
    assert_eq!(node(&v, "node0")["max_slots"], 2);
    assert_eq!(node(&v, "node1")["max_slots"], Value::Null);
    // By slot, a second round gives each node its slot count again.
    let h = f.write("h2", "node0 slots=2 max_slots=3\nnode1 slots=2\n");
    let v = map(&[
        "--hostfile",
        &h,
        "-n",
        "7",
        "--map-by",
        "slot:OVERSUBSCRIBE",
        "true",
    ]);
    assert_eq!(
        hosts_by_rank(&v),
        hosts(&["node0", "node0", "node1", "node1", "node0", "node1", "node1"])
    );
}

/// "If the maximum slot count is exhausted on all nodes while there are
/// still processes to be scheduled, Open MPI will abort without launching
/// any processes."
#[test]
fn all_max_slots_exhausted_aborts() {
    let f = Files::new();
    let h = f.write(
        "h",
        "node0 slots=2 max_slots=3\nnode1 slots=2 max_slots=3\n",
    );
    for map_by in ["slot:OVERSUBSCRIBE", "node:OVERSUBSCRIBE", "slot", "node"] {
        let message = fails(&["--hostfile", &h, "-n", "7", "--map-by", map_by, "true"]);
        assert!(
            message.starts_with("all max_slots exhausted: 7 ranks requested, the hosts allow at most 6 more: node0 (max_slots 3), node1 (max_slots 3)"),
            "{map_by}: {message}"
        );
        assert!(message.contains("nothing was launched"), "{message}");
        assert!(message.contains("raise max_slots"), "{message}");
    }
    // 6 fits exactly.
    let v = map(&[
        "--hostfile",
        &h,
        "-n",
        "6",
        "--map-by",
        "node:OVERSUBSCRIBE",
        "true",
    ]);
    assert_eq!(ranks_on(&v, "node0"), [0, 2, 4]);
    assert_eq!(ranks_on(&v, "node1"), [1, 3, 5]);
}

/// "If :OVERSUBSCRIBE is not specified and an oversubscription condition
/// occurs, Open MPI will abort without launching any processes."
#[test]
fn oversubscription_without_the_modifier_aborts() {
    let f = Files::new();
    let my_hosts = f.write("my-hosts", "node0 slots=2\nnode1 slots=2\n");
    for map_by in [None, Some("slot"), Some("node")] {
        let mut args = vec!["--hostfile", &my_hosts, "-n", "8"];
        if let Some(m) = map_by {
            args.extend_from_slice(&["--map-by", m]);
        }
        args.push("true");
        assert_eq!(
            fails(&args),
            format!(
                "not enough slots: 8 ranks requested, 4 slots on node0 (2), node1 (2) (hosts from hostfile {my_hosts}); {TO_GO_ON}"
            ),
            "{map_by:?}"
        );
    }
    // --oversubscribe is the same as :OVERSUBSCRIBE.
    let v = map(&[
        "--oversubscribe",
        "--hostfile",
        &my_hosts,
        "-n",
        "8",
        "true",
    ]);
    assert_eq!(ranks_on(&v, "node0"), [0, 1, 4, 5]);
    assert_eq!(node(&v, "node0")["oversubscribed"], true);
}

// ---------------------------------------------------------------------------
// --hostfile
// ---------------------------------------------------------------------------

/// The example hostfile: `foo.example.com` (no slots: the host's cores)
/// and `bar.example.com slots=2`; `-n` defaults to the sum of the slots.
#[test]
fn example_hostfile_slots() {
    let text = "# This is an example hostfile. Comments begin with #.\n#\n\
# Since no slots are specified, the number of slots defaults to the\n\
# number of processor cores available on the machine.\nfoo.example.com\n\n\
# We want to allow launching a maximum of 2 processes on this host\n\
# (e.g., potentially because it has two processor cores):\nbar.example.com slots=2\n";
    let f = Files::new();
    let my_hosts = f.write("my-hosts", text);
    let v = map(&["--hostfile", &my_hosts, "true"]);
    let cores = local_cores();
    assert_eq!(node(&v, "foo.example.com")["slots"], cores);
    assert_eq!(node(&v, "bar.example.com")["slots"], 2);
    assert_eq!(node(&v, "foo.example.com")["max_slots"], Value::Null);
    assert_eq!(node(&v, "bar.example.com")["max_slots"], Value::Null);
    assert_eq!(v["num_procs"], cores + 2);
    let mut expected = vec!["foo.example.com"; cores];
    expected.extend(["bar.example.com"; 2]);
    assert_eq!(hosts_by_rank(&v), hosts(&expected));
}

/// Hostfile, exclusionary: the scheduler gave node01–node04;
/// `mpirun -n 1 --hostfile my_hosts hostname` with `node03` runs on node03.
#[test]
fn hostfile_exclusionary_picks_an_allocated_host() {
    let f = Files::new();
    let my_hosts = f.write("my_hosts", "node03\n");
    let v = map_env(&["-n", "1", "--hostfile", &my_hosts, "hostname"], SLURM);
    assert_eq!(hosts_by_rank(&v), hosts(&["node03"]));
    // The scheduler gives the slot count of a bare hostfile line.
    assert_eq!(node(&v, "node03")["slots"], 2);
    assert_eq!(node(&v, "node03")["max_slots"], Value::Null);
    // Without a hostfile, the whole allocation is used.
    let v = map_env(&["true"], SLURM);
    assert_eq!(
        hosts_by_rank(&v),
        hosts(&["node01", "node01", "node02", "node02", "node03", "node03", "node04", "node04"])
    );
}

/// Hostfile, exclusionary: `node17` is not allocated to the job → abort.
#[test]
fn hostfile_exclusionary_rejects_an_unallocated_host() {
    let f = Files::new();
    let my_hosts = f.write("my_hosts", "node17\n");
    let env = [
        ("SLURM_JOB_NODELIST", "node03"),
        ("SLURM_TASKS_PER_NODE", "1"),
    ];
    assert_eq!(
        fails_env(&["-n", "1", "--hostfile", &my_hosts, "true"], &env),
        format!(
            "{my_hosts}:1: host node17 is not in the Slurm allocation (SLURM_JOB_NODELIST=node03), \
so nothing was launched; use hosts of the Slurm allocation (SLURM_JOB_NODELIST=node03): node03"
        )
    );
    // The same hostfile maps without a scheduler (inclusionary).
    let v = map(&["-n", "1", "--hostfile", &my_hosts, "true"]);
    assert_eq!(hosts_by_rank(&v), hosts(&["node17"]));
}

/// "in exclusionary mode, processes will only be executed on the
/// hostfile-specified hosts. If this ends up causing an oversubscription
/// situation, mpirun will abort by default."
#[test]
fn exclusionary_oversubscription_aborts_by_default() {
    let f = Files::new();
    let my_hosts = f.write("my_hosts", "node03\n");
    let message = fails_env(&["-n", "3", "--hostfile", &my_hosts, "true"], SLURM);
    assert_eq!(
        message,
        format!(
            "not enough slots: 3 ranks requested, 2 slots on node03 (2) (hosts from the Slurm allocation (SLURM_JOB_NODELIST=node[01-04])); {TO_GO_ON}"
        )
    );
    // Allowed with :OVERSUBSCRIBE (a scheduler gives no max_slots).
    let v = map_env(
        &[
            "-n",
            "3",
            "--hostfile",
            &my_hosts,
            "--map-by",
            ":OVERSUBSCRIBE",
            "true",
        ],
        SLURM,
    );
    assert_eq!(hosts_by_rank(&v), hosts(&["node03"; 3]));
    assert_eq!(v["mapping_policy"], "slot:OVERSUBSCRIBE");
    assert_eq!(node(&v, "node03")["oversubscribed"], true);
    assert_eq!(node(&v, "node03")["yield_when_idle"], true);
}

/// Hostfile, inclusionary: three hosts with `slots=1`, `-n 3` runs one on
/// each.
#[test]
fn hostfile_inclusionary() {
    let f = Files::new();
    let my_hosts = f.write(
        "my_hosts",
        "node01.example.com slots=1\nnode02.example.com slots=1\nnode03.example.com slots=1\n",
    );
    let v = map(&["-n", "3", "--hostfile", &my_hosts, "hostname"]);
    assert_eq!(
        hosts_by_rank(&v),
        hosts(&[
            "node01.example.com",
            "node02.example.com",
            "node03.example.com"
        ])
    );
    for n in v["nodes"].as_array().unwrap() {
        assert_eq!(n["slots"], 1, "{n}");
        assert_eq!(n["oversubscribed"], false, "{n}");
    }
}

/// `mpirun -n 1 --hostfile hostfile_1 hostname : -n 1 --hostfile hostfile_2
/// uptime`: hostname on node01, uptime on node02.
#[test]
fn hostfile_per_app_mpmd() {
    let f = Files::new();
    let h1 = f.write("hostfile_1", "node01.example.com\n");
    let h2 = f.write("hostfile_2", "node02.example.com\n");
    let v = map(&[
        "-n",
        "1",
        "--hostfile",
        &h1,
        "hostname",
        ":",
        "-n",
        "1",
        "--hostfile",
        &h2,
        "uptime",
    ]);
    assert_eq!(
        hosts_by_rank(&v),
        hosts(&["node01.example.com", "node02.example.com"])
    );
    assert_eq!(field(&v, "node01.example.com", "app"), [0]);
    assert_eq!(field(&v, "node02.example.com", "app"), [1]);
}

/// MPMD, two ranks per app, each app on its own hostfile:
/// `-n 2 --hostfile h1 true : -n 2 --hostfile h2 true`.
#[test]
fn hostfile_per_app_mpmd_two_ranks_each() {
    let f = Files::new();
    let h1 = f.write("h1", "node01.example.com slots=2\n");
    let h2 = f.write("h2", "node02.example.com slots=2\n");
    let v = map(&[
        "-n",
        "2",
        "--hostfile",
        &h1,
        "true",
        ":",
        "-n",
        "2",
        "--hostfile",
        &h2,
        "true",
    ]);
    assert_eq!(
        v["nodes"],
        json!([
            {"name": "node01.example.com", "slots": 2, "max_slots": null, "num_procs": 2,
             "oversubscribed": false, "yield_when_idle": false, "procs": [
                {"rank": 0, "app": 0, "app_rank": 0, "local_rank": 0, "node_rank": 0},
                {"rank": 1, "app": 0, "app_rank": 1, "local_rank": 1, "node_rank": 1}]},
            {"name": "node02.example.com", "slots": 2, "max_slots": null, "num_procs": 2,
             "oversubscribed": false, "yield_when_idle": false, "procs": [
                {"rank": 2, "app": 1, "app_rank": 0, "local_rank": 0, "node_rank": 0},
                {"rank": 3, "app": 1, "app_rank": 1, "local_rank": 1, "node_rank": 1}]},
        ])
    );
    // Each app is held to its own hostfile: 3 ranks do not fit on h2.
    let message = fails(&[
        "-n",
        "2",
        "--hostfile",
        &h1,
        "true",
        ":",
        "-n",
        "3",
        "--hostfile",
        &h2,
        "true",
    ]);
    assert!(
        message.starts_with(
            "app 1: not enough slots: 3 ranks requested, 2 slots on node02.example.com (2) (hosts from "
        ),
        "{message}"
    );
    assert!(message.contains("nothing was launched"), "{message}");
}

/// The not-enough-slots message of an MPMD app names where that app's
/// hosts came from: its own hostfile or `--host`, not the first app's.
#[test]
fn hostfile_per_app_mpmd_error_names_the_apps_own_hostfile() {
    let f = Files::new();
    let h1 = f.write("h1", "node01.example.com slots=2\n");
    let h2 = f.write("h2", "node02.example.com slots=2\n");
    let message = fails(&[
        "-n",
        "2",
        "--hostfile",
        &h1,
        "true",
        ":",
        "-n",
        "3",
        "--hostfile",
        &h2,
        "true",
    ]);
    assert!(
        message.starts_with(&format!(
            "app 1: not enough slots: 3 ranks requested, 2 slots on node02.example.com (2) (hosts from hostfile {h2}); nothing was launched"
        )),
        "{message}"
    );
    let message = fails(&[
        "-n",
        "1",
        "--hostfile",
        &h1,
        "true",
        ":",
        "-n",
        "2",
        "--host",
        "b",
        "true",
    ]);
    assert!(
        message.starts_with(
            "app 1: not enough slots: 2 ranks requested, 1 slots on b (1) (hosts from --host); nothing was launched"
        ),
        "{message}"
    );
}

// ---------------------------------------------------------------------------
// Hostfile errors: each names the file and line
// ---------------------------------------------------------------------------

const FORM: &str = "Hostfile lines are `NAME [slots=N] [max_slots=M]`.";

/// Writes `text` as a hostfile and returns mpirun's error about it.
fn hostfile_error(text: &str) -> (String, String) {
    let f = Files::new();
    let path = f.write("hosts", text);
    let message = fails(&["--hostfile", &path, "-n", "1", "true"]);
    (path, message)
}

#[test]
fn hostfile_error_bad_token() {
    let (path, message) = hostfile_error("a slots=2\n# comment\nb slots=2 junk\n");
    assert_eq!(
        message,
        format!("{path}:3: unexpected \"junk\" (expected ATTRIBUTE=VALUE after the host name): \"b slots=2 junk\". {FORM}")
    );
}

#[test]
fn hostfile_error_slots_not_a_number() {
    let (path, message) = hostfile_error("a slots=2\nb slots=x\n");
    assert_eq!(
        message,
        format!("{path}:2: slots needs a whole number, not \"x\": \"b slots=x\". {FORM}")
    );
}

#[test]
fn hostfile_error_negative_slots() {
    let (path, message) = hostfile_error("a slots=-1\n");
    assert_eq!(
        message,
        format!("{path}:1: slots cannot be negative (-1): \"a slots=-1\". {FORM}")
    );
    let (path, message) = hostfile_error("\na max_slots=-3\n");
    assert_eq!(
        message,
        format!("{path}:2: max_slots cannot be negative (-3): \"a max_slots=-3\". {FORM}")
    );
}

#[test]
fn hostfile_error_slots_too_large() {
    let (path, message) = hostfile_error("a slots=99999999999\n");
    assert_eq!(
        message,
        format!("{path}:1: slots=99999999999 is too large: \"a slots=99999999999\". {FORM}")
    );
}

#[test]
fn hostfile_error_max_slots_below_slots() {
    let (path, message) = hostfile_error("\n\na slots=4 max_slots=2\n");
    assert_eq!(
        message,
        format!("{path}:3: max_slots=2 is less than slots=4: \"a slots=4 max_slots=2\". {FORM}")
    );
}

#[test]
fn hostfile_error_unknown_attribute() {
    let (path, message) = hostfile_error("a colour=red\n");
    assert_eq!(
        message,
        format!("{path}:1: unknown attribute \"colour\" (known: slots, max_slots, username, port): \"a colour=red\". {FORM}")
    );
}

#[test]
fn hostfile_error_attribute_given_twice() {
    let (path, message) = hostfile_error("a slots=1 slots=2\n");
    assert_eq!(
        message,
        format!("{path}:1: slots is given twice on this line: \"a slots=1 slots=2\". {FORM}")
    );
}

#[test]
fn hostfile_error_not_a_host_name() {
    let (path, message) = hostfile_error("slots=2\n");
    assert_eq!(
        message,
        format!("{path}:1: the line starts with \"slots=2\", not a host name: \"slots=2\". {FORM}")
    );
    let (path, message) = hostfile_error("a\nbad/name\n");
    assert_eq!(
        message,
        format!("{path}:2: \"bad/name\" is not a host name: \"bad/name\". {FORM}")
    );
}

#[test]
fn hostfile_error_exclusions_and_relative_hosts() {
    for name in ["^node1", "+n0"] {
        let (path, message) = hostfile_error(&format!("{name}\n"));
        assert_eq!(
            message,
            format!("{path}:1: \"{name}\" (excluding a host with ^ or a relative +n host) is not supported; list the hosts to use: \"{name}\". {FORM}")
        );
    }
}

#[test]
fn hostfile_error_empty_user_name() {
    let (path, message) = hostfile_error("@node1\n");
    assert_eq!(
        message,
        format!("{path}:1: \"@node1\" has an empty user name before @: \"@node1\". {FORM}")
    );
}

#[test]
fn hostfile_error_username_and_port() {
    let (path, message) = hostfile_error("a username=\n");
    assert_eq!(
        message,
        format!("{path}:1: username needs a value: \"a username=\". {FORM}")
    );
    let (path, message) = hostfile_error("a port=70000\n");
    assert_eq!(
        message,
        format!("{path}:1: port needs a number from 0 to 65535, not \"70000\": \"a port=70000\". {FORM}")
    );
}

#[test]
fn hostfile_error_no_host() {
    let (path, message) = hostfile_error("# only a comment\n\n");
    assert_eq!(
        message,
        format!("hostfile {path} lists no host; add one host per line (NAME [slots=N])")
    );
}

#[test]
fn hostfile_error_missing_file() {
    let f = Files::new();
    let path = f.dir.path().join("no-such-hostfile").display().to_string();
    let message = fails(&["--hostfile", &path, "-n", "1", "true"]);
    assert!(
        message.starts_with(&format!("cannot read hostfile {path}: ")),
        "{message}"
    );
}

/// Comments, blank lines, CRLF and attribute synonyms are accepted.
#[test]
fn hostfile_comments_blank_lines_and_synonyms() {
    let f = Files::new();
    let h = f.write(
        "h",
        "\n   \n# only a comment\r\n  a slots=2 # two\r\n\tb cpu = 3 max-slots= 4\r\nc count=1\n",
    );
    let v = map(&["--hostfile", &h, "true"]);
    assert_eq!(node_names(&v), ["a", "b", "c"]);
    assert_eq!(node(&v, "a")["slots"], 2);
    assert_eq!(node(&v, "b")["slots"], 3);
    assert_eq!(node(&v, "b")["max_slots"], 4);
    assert_eq!(node(&v, "c")["slots"], 1);
    assert_eq!(v["num_procs"], 6);
}

// ---------------------------------------------------------------------------
// --host
// ---------------------------------------------------------------------------

/// `mpirun -n 3 --host a,b,c hostname`: one copy on each.
#[test]
fn host_option_one_slot_each() {
    let v = map(&["-n", "3", "--host", "a,b,c", "hostname"]);
    assert_eq!(hosts_by_rank(&v), hosts(&["a", "b", "c"]));
    for n in ["a", "b", "c"] {
        assert_eq!(node(&v, n)["slots"], 1);
        assert_eq!(node(&v, n)["max_slots"], Value::Null);
        assert_eq!(node(&v, n)["oversubscribed"], false);
    }
    // A fourth rank does not fit.
    let message = fails(&["-n", "4", "--host", "a,b,c", "true"]);
    assert!(
        message.starts_with("not enough slots: 4 ranks requested, 3 slots on a (1), b (1), c (1)"),
        "{message}"
    );
}

/// `mpirun --host a,b:2,c:3 hostname`: one copy on a, two on b, three on c.
#[test]
fn host_option_slot_suffixes() {
    let v = map(&["--host", "a,b:2,c:3", "hostname"]);
    assert_eq!(hosts_by_rank(&v), hosts(&["a", "b", "b", "c", "c", "c"]));
    assert_eq!(node(&v, "a")["slots"], 1);
    assert_eq!(node(&v, "b")["slots"], 2);
    assert_eq!(node(&v, "c")["slots"], 3);
    assert_eq!(field(&v, "c", "local_rank"), [0, 1, 2]);
    // -n 6 is the same map; -n 7 is one too many.
    assert_eq!(map(&["-n", "6", "--host", "a,b:2,c:3", "true"]), v);
    let message = fails(&["-n", "7", "--host", "a,b:2,c:3", "true"]);
    assert!(
        message.starts_with("not enough slots: 7 ranks requested, 6 slots on a (1), b (2), c (3)"),
        "{message}"
    );
    // Repeated -H adds up like a comma list.
    let v = map(&["-H", "a", "-H", "b:2,c:3", "true"]);
    assert_eq!(hosts_by_rank(&v), hosts(&["a", "b", "b", "c", "c", "c"]));
}

/// `--host`, exclusionary: `my_hosts` has node1–node4;
/// `mpirun -n 1 --hostfile my_hosts --host node3` runs on node3 and
/// `--host node17` aborts.
#[test]
fn host_option_exclusionary_within_a_hostfile() {
    let f = Files::new();
    let my_hosts = f.write("my_hosts", "node1\nnode2\nnode3\nnode4\n");
    let v = map(&[
        "-n",
        "1",
        "--hostfile",
        &my_hosts,
        "--host",
        "node3",
        "hostname",
    ]);
    assert_eq!(hosts_by_rank(&v), hosts(&["node3"]));
    assert_eq!(
        fails(&[
            "-n",
            "1",
            "--hostfile",
            &my_hosts,
            "--host",
            "node17",
            "true"
        ]),
        format!(
            "--host: host node17 is not in hostfile {my_hosts}, so nothing was launched; \
use hosts of hostfile {my_hosts}: node1, node2, node3, node4"
        )
    );
    // Oversubscribing the --host-specified hosts aborts by default.
    let message = fails(&[
        "-n",
        "2",
        "--hostfile",
        &my_hosts,
        "--host",
        "node3",
        "true",
    ]);
    assert!(
        message.starts_with("not enough slots: 2 ranks requested, 1 slots on node3 (1)"),
        "{message}"
    );
}

/// `--host` under a (fake) Slurm allocation is exclusionary too.
#[test]
fn host_option_exclusionary_under_a_scheduler() {
    let v = map_env(&["--host", "node02,node04:2", "true"], SLURM);
    assert_eq!(hosts_by_rank(&v), hosts(&["node02", "node04", "node04"]));
    assert_eq!(node(&v, "node04")["slots"], 2);
    assert_eq!(
        fails_env(&["-n", "1", "--host", "node17", "true"], SLURM),
        "--host: host node17 is not in the Slurm allocation (SLURM_JOB_NODELIST=node[01-04]), \
so nothing was launched; use hosts of the Slurm allocation (SLURM_JOB_NODELIST=node[01-04]): \
node01, node02, node03, node04"
    );
}

/// Bad `--host` items are refused before anything is mapped.
#[test]
fn host_option_errors() {
    const FORM: &str =
        "(expected NAME or NAME:N with N a number of slots of at least 1, separated by commas)";
    assert_eq!(
        fails(&["--host", "a:0", "true"]),
        format!("--host a:0: \"a:0\" gives the host no slots {FORM}")
    );
    assert_eq!(
        fails(&["--host", "a:x", "true"]),
        format!("--host a:x: \"a:x\" has an invalid slot count \"x\" {FORM}")
    );
    assert_eq!(
        fails(&["--host", "a,,b", "true"]),
        format!("--host a,,b: \"\" is not a host name {FORM}")
    );
}

/// A Slurm allocation whose variables disagree is refused.
#[test]
fn malformed_slurm_allocation_is_refused() {
    let env = [
        ("SLURM_JOB_NODELIST", "n[1-2]"),
        ("SLURM_TASKS_PER_NODE", "1(x3)"),
    ];
    assert_eq!(
        fails_env(&["true"], &env),
        "SLURM_TASKS_PER_NODE=1(x3) gives counts for 3 nodes but SLURM_JOB_NODELIST=n[1-2] lists 2"
    );
}

/// `mpirun -n 1 --host a hostname : -n 1 --host b uptime`.
#[test]
fn host_option_per_app_mpmd() {
    let v = map(&[
        "-n", "1", "--host", "a", "hostname", ":", "-n", "1", "--host", "b", "uptime",
    ]);
    assert_eq!(hosts_by_rank(&v), hosts(&["a", "b"]));
    assert_eq!(field(&v, "a", "app"), [0]);
    assert_eq!(field(&v, "b", "app"), [1]);
    assert_eq!(field(&v, "b", "app_rank"), [0]);
}

// ---------------------------------------------------------------------------
// Calculating the number of slots
// ---------------------------------------------------------------------------

/// Example 1: `node01.example.come slots=4`, no `-n` → 4.
#[test]
fn slots_example_hostfile_with_slots() {
    let f = Files::new();
    let h = f.write("my-hostfile", "node01.example.come slots=4\n");
    let v = map(&["--hostfile", &h, "hostname"]);
    assert_eq!(hosts_by_rank(&v), hosts(&["node01.example.come"; 4]));
}

/// Example 2: no `slots` → the host's processor cores; with `:HWTCPUS`,
/// its hardware threads.
#[test]
fn slots_example_hostfile_without_slots() {
    let f = Files::new();
    let h = f.write("my-hostfile", "node01.example.come\n");
    let v = map(&["--hostfile", &h, "hostname"]);
    assert_eq!(
        hosts_by_rank(&v),
        hosts(&vec!["node01.example.come"; local_cores()])
    );
    let v = map(&["--hostfile", &h, "--map-by", ":HWTCPUS", "hostname"]);
    assert_eq!(v["num_procs"], local_hwthreads());
    assert_eq!(node(&v, "node01.example.come")["slots"], local_hwthreads());
}

/// Example 3: `--host node01.example.com` → 1.
#[test]
fn slots_example_host_without_suffix() {
    let v = map(&["--host", "node01.example.com", "hostname"]);
    assert_eq!(hosts_by_rank(&v), hosts(&["node01.example.com"]));
}

/// Example 4: `--host node01.example.com:2` → 2.
#[test]
fn slots_example_host_with_suffix() {
    let v = map(&["--host", "node01.example.com:2", "hostname"]);
    assert_eq!(hosts_by_rank(&v), hosts(&["node01.example.com"; 2]));
}

/// Example 5: `--host node01.example.com:2,node01.example.com` → 3.
#[test]
fn slots_example_host_named_twice() {
    let v = map(&[
        "--host",
        "node01.example.com:2,node01.example.com",
        "hostname",
    ]);
    assert_eq!(hosts_by_rank(&v), hosts(&["node01.example.com"; 3]));
    assert_eq!(node(&v, "node01.example.com")["slots"], 3);
}

// ---------------------------------------------------------------------------
// Oversubscribing nodes
// ---------------------------------------------------------------------------

/// Hostfile `localhost` (slots = the cores) with more ranks than cores
/// fails (the reference: 4 ranks on 2 cores).
#[test]
fn oversubscribing_localhost_fails_without_the_modifier() {
    let f = Files::new();
    let h = f.write("my-hostfile", "localhost\n");
    let cores = local_cores();
    let n = (2 * cores).to_string();
    let message = fails(&["-n", &n, "--hostfile", &h, "true"]);
    assert_eq!(
        message,
        format!(
            "not enough slots: {n} ranks requested, {cores} slots on localhost ({cores}) (hosts from hostfile {h}); {TO_GO_ON}"
        )
    );
}

/// `localhost slots=2`, `-n 4 --map-by :OVERSUBSCRIBE` works; the ranks
/// run in degraded mode (yield when idle) and are not bound.
#[test]
fn oversubscribing_localhost_with_the_modifier() {
    let f = Files::new();
    let h = f.write(
        "my-hostfile",
        "# For the purposes of this example, explicitly tell Open MPI\n# that we have 2 slots on the host.\nlocalhost slots=2\n",
    );
    let v = map(&[
        "-n",
        "4",
        "--hostfile",
        &h,
        "--map-by",
        ":OVERSUBSCRIBE",
        "a.out",
    ]);
    assert_eq!(hosts_by_rank(&v), hosts(&["localhost"; 4]));
    assert_eq!(v["mapping_policy"], "slot:OVERSUBSCRIBE");
    let n = node(&v, "localhost");
    assert_eq!(n["slots"], 2);
    assert_eq!(n["oversubscribed"], true);
    assert_eq!(n["yield_when_idle"], true);
    assert_eq!(field(&v, "localhost", "binding"), vec![json!("unbound"); 4]);
}

/// Aggressive mode: `localhost slots=4`, `-n 4`: mpirun believes the 4
/// slots, so the ranks do not yield.
#[test]
fn slots_above_cores_run_aggressive() {
    let f = Files::new();
    let h = f.write("my-hostfile", "localhost slots=4\n");
    let v = map(&["-n", "4", "--hostfile", &h, "a.out"]);
    let n = node(&v, "localhost");
    assert_eq!(n["oversubscribed"], false);
    assert_eq!(n["yield_when_idle"], false);
    assert_eq!(ranks_on(&v, "localhost"), [0, 1, 2, 3]);
}

/// Project decision: no host list and no scheduler → the local host (named
/// as this machine) may be oversubscribed; `:NOOVERSUBSCRIBE` refuses.
#[test]
fn implicit_local_host_may_be_oversubscribed() {
    let cores = local_cores();
    let me = local_name();
    let n = 4 * cores;
    let v = map(&["-n", &n.to_string(), "true"]);
    assert_eq!(hosts_by_rank(&v), vec![me.clone(); n]);
    assert_eq!(node(&v, &me)["slots"], cores);
    assert_eq!(node(&v, &me)["oversubscribed"], true);
    assert_eq!(node(&v, &me)["yield_when_idle"], true);
    // -n defaults to the cores.
    let v = map(&["true"]);
    assert_eq!(v["num_procs"], cores);
    assert_eq!(node(&v, &me)["oversubscribed"], false);
    let message = fails(&["-n", &n.to_string(), "--map-by", ":NOOVERSUBSCRIBE", "true"]);
    assert!(
        message.starts_with(&format!(
            "not enough slots: {n} ranks requested, {cores} slots on {me} ({cores}) (hosts from the local host); nothing was launched"
        )),
        "{message}"
    );
    assert!(message.contains("instead of :NOOVERSUBSCRIBE"), "{message}");
}

/// `:NOOVERSUBSCRIBE` also refuses the headroom an explicit `max_slots`
/// gives.
#[test]
fn nooversubscribe_refuses_max_slots_headroom() {
    let f = Files::new();
    let my_hosts = f.write("my-hosts", MY_HOSTS);
    let message = fails(&[
        "--hostfile",
        &my_hosts,
        "-n",
        "8",
        "--map-by",
        "slot:NOOVERSUBSCRIBE",
        "true",
    ]);
    assert!(
        message.starts_with("not enough slots: 8 ranks requested, 4 slots on node0 (2), node1 (2)"),
        "{message}"
    );
}

// ---------------------------------------------------------------------------
// Other mappers and ranking
// ---------------------------------------------------------------------------

/// `--rank-by node`: slots are filled by slot, ranks are numbered across
/// the nodes.
#[test]
fn rank_by_node() {
    let f = Files::new();
    let h = f.write("h", "n0 slots=2\nn1 slots=2\n");
    let v = map(&["--hostfile", &h, "-n", "4", "--rank-by", "node", "true"]);
    assert_eq!(v["ranking_policy"], "node");
    assert_eq!(ranks_on(&v, "n0"), [0, 2]);
    assert_eq!(ranks_on(&v, "n1"), [1, 3]);
    assert_eq!(field(&v, "n0", "local_rank"), [0, 1]);
    assert_eq!(field(&v, "n1", "local_rank"), [0, 1]);
    // The default numbers in placement order.
    let v = map(&["--hostfile", &h, "-n", "4", "true"]);
    assert_eq!(v["ranking_policy"], Value::Null);
    assert_eq!(ranks_on(&v, "n0"), [0, 1]);
}

/// `--map-by ppr:2:node`: two ranks per node, by the ppr component.
#[test]
fn ppr_two_per_node() {
    let f = Files::new();
    let h = f.write("h", "n0 slots=2\nn1 slots=2\n");
    let v = map(&[
        "--hostfile",
        &h,
        "-n",
        "4",
        "--map-by",
        "ppr:2:node",
        "true",
    ]);
    assert_eq!(v["mapper"], "ppr");
    assert_eq!(v["mapping_policy"], "ppr:2:node");
    assert_eq!(hosts_by_rank(&v), hosts(&["n0", "n0", "n1", "n1"]));
    // Without -n, ppr gives N per node.
    let v = map(&["--hostfile", &h, "--map-by", "ppr:2:node", "true"]);
    assert_eq!(v["num_procs"], 4);
    // ppr:1:node has room for 2.
    let message = fails(&[
        "--hostfile",
        &h,
        "-n",
        "4",
        "--map-by",
        "ppr:1:node",
        "true",
    ]);
    assert_eq!(
        message,
        "--map-by ppr:1:node places at most 2 ranks on the 2 host(s) of the job (1 per node), \
and 4 were requested; nothing was launched. Give fewer ranks with -n or a larger count."
    );
}

/// `--map-by seq`: rank i on the host of line i of the hostfile.
#[test]
fn seq_follows_the_hostfile_lines() {
    let f = Files::new();
    let h = f.write("h", "n1\nn0\nn1\nn2 slots=4\n");
    let v = map(&["--hostfile", &h, "--map-by", "seq", "true"]);
    assert_eq!(v["mapper"], "seq");
    assert_eq!(v["mapping_policy"], "seq");
    assert_eq!(hosts_by_rank(&v), hosts(&["n1", "n0", "n1", "n2"]));
    assert_eq!(field(&v, "n1", "local_rank"), [0, 1]);
}

// ---------------------------------------------------------------------------
// Displays and component selection
// ---------------------------------------------------------------------------

/// `--display-map` (text) shows each node's slots and max slots.
#[test]
fn display_map_text_shows_slots_and_max_slots() {
    let f = Files::new();
    let my_hosts = f.write("my-hosts", "node0 slots=2 max_slots=20\nnode1 slots=3\n");
    let run = run_env(
        &[
            "--do-not-launch",
            "--display-map",
            "--hostfile",
            &my_hosts,
            "-n",
            "4",
            "true",
        ],
        &[],
    );
    assert_eq!(run.code(), 0, "{}", run.stderr);
    let out = &run.stdout;
    assert!(out.contains("JOB MAP"), "{out}");
    assert!(
        out.contains("Mapper: round_robin\tMapping policy: slot\t"),
        "{out}"
    );
    assert!(
        out.contains("Data for node: node0\tNum slots: 2\tMax slots: 20\tNum procs: 2\n"),
        "{out}"
    );
    assert!(
        out.contains("Data for node: node1\tNum slots: 3\tMax slots: unlimited\tNum procs: 2\n"),
        "{out}"
    );
    for (rank, local) in [(0, 0), (1, 1), (2, 0), (3, 1)] {
        assert!(
            out.contains(&format!(
                "\tProcess rank: {rank}\tApp: 0\tLocal rank: {local}\t"
            )),
            "{out}"
        );
    }
    // `--display-map=text` is the same.
    let run2 = run_env(
        &[
            "--do-not-launch",
            "--display-map=text",
            "--hostfile",
            &my_hosts,
            "-n",
            "4",
            "true",
        ],
        &[],
    );
    assert_eq!(run2.stdout, run.stdout);
    // An unknown format is an error.
    let run3 = run_env(
        &[
            "--do-not-launch",
            "--display-map=xml",
            "--hostfile",
            &my_hosts,
            "true",
        ],
        &[],
    );
    assert_eq!(run3.code(), 1);
    assert_eq!(run3.stdout, "");
    assert!(
        run3.stderr
            .contains("--display-map=xml: expected text or json"),
        "{}",
        run3.stderr
    );
}

/// `--mca rmaps ^round_robin`: nobody maps by slot any more; the message
/// names the components tried.
#[test]
fn excluding_round_robin_leaves_no_slot_mapper() {
    let f = Files::new();
    let my_hosts = f.write("my-hosts", MY_HOSTS);
    assert_eq!(
        fails(&[
            "--mca",
            "rmaps",
            "^round_robin",
            "--hostfile",
            &my_hosts,
            "-n",
            "3",
            "true"
        ]),
        "no rmaps component maps by slot (tried: ppr, seq)"
    );
    // ppr still maps.
    let v = map(&[
        "--mca",
        "rmaps",
        "^round_robin",
        "--hostfile",
        &my_hosts,
        "--map-by",
        "ppr:1:node",
        "true",
    ]);
    assert_eq!(v["mapper"], "ppr");
    assert_eq!(hosts_by_rank(&v), hosts(&["node0", "node1"]));
}

/// `--mca rmaps_base_verbose 10` shows why each component was declined or
/// selected.
#[test]
fn rmaps_verbose_shows_the_selection() {
    let f = Files::new();
    let my_hosts = f.write("my-hosts", MY_HOSTS);
    let verbose = ["--mca", "rmaps_base_verbose", "10", "--hostfile", &my_hosts];
    let component_lines = |stderr: &str| -> Vec<String> {
        stderr
            .lines()
            .filter_map(|l| {
                let (prefix, rest) = l.split_once("] ")?;
                assert!(prefix.starts_with('['), "{l}");
                rest.starts_with("rmaps:").then(|| rest.to_string())
            })
            .collect()
    };

    let mut args = verbose.to_vec();
    args.extend_from_slice(&["-n", "3", "true"]);
    let (v, stderr) = map_env_with_stderr(&args, &[]);
    assert_eq!(v["mapper"], "round_robin");
    let lines = component_lines(&stderr);
    for want in [
        "rmaps:ppr: declined: does not map by slot",
        "rmaps:seq: declined: does not map by slot",
        "rmaps:round_robin: selected (priority 10) for --map-by slot",
    ] {
        assert!(lines.iter().any(|l| l == want), "{want}: {stderr}");
    }
    // One component is selected.
    assert_eq!(
        lines.iter().filter(|l| l.contains(": selected")).count(),
        1,
        "{stderr}"
    );

    let mut args = verbose.to_vec();
    args.extend_from_slice(&["-n", "4", "--map-by", "ppr:2:node", "true"]);
    let (v, stderr) = map_env_with_stderr(&args, &[]);
    assert_eq!(v["mapper"], "ppr");
    let lines = component_lines(&stderr);
    assert!(
        lines
            .iter()
            .any(|l| l == "rmaps:ppr: selected (priority 90) for --map-by ppr:2:node"),
        "{stderr}"
    );
    assert!(!lines.iter().any(|l| l.contains("declined")), "{stderr}");

    let mut args = verbose.to_vec();
    args.extend_from_slice(&["--map-by", "seq", "true"]);
    let (v, stderr) = map_env_with_stderr(&args, &[]);
    assert_eq!(v["mapper"], "seq");
    let lines = component_lines(&stderr);
    assert!(
        lines
            .iter()
            .any(|l| l == "rmaps:ppr: declined: does not map by seq"),
        "{stderr}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l == "rmaps:seq: selected (priority 60) for --map-by seq"),
        "{stderr}"
    );

    // Without the verbosity, nothing of this is printed.
    let v = map(&["--hostfile", &my_hosts, "-n", "3", "true"]);
    assert_eq!(v["mapper"], "round_robin");
}
