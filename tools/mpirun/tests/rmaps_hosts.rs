//! `--host` through the real mpirun (reference 002): one slot per name,
//! slot suffixes, exclusionary host lists within a hostfile and under a
//! (fake) Slurm allocation, their errors, a malformed allocation, and MPMD
//! with a host list per app. Helpers are in `common/rmaps.rs`.

mod common;

use common::rmaps::*;
use serde_json::Value;

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
