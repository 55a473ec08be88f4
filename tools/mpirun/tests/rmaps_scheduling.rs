//! Scheduling through the real mpirun (reference 002, "Scheduling processes
//! across hosts"): the by-slot and by-node examples, the default mapping
//! policy parameter, oversubscription up to `max_slots`, and the other
//! mappers and ranking (`--rank-by node`, `ppr`, `seq`). Helpers are in
//! `common/rmaps.rs`.

mod common;

use common::rmaps::*;
use serde_json::{json, Value};

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
