//! Every example of reference 002 ("Scheduling processes across hosts"),
//! through the same steps as `mpirun --do-not-launch --display-map=json`:
//! options → allocation → mapper → JSON. Each test names the example.
//! Unless said otherwise, the local host has 2 cores (as the reference's
//! examples assume) and there is no scheduler.

mod common;

use common::*;
use oxmpi_framework_rmaps::MapErrorKind;
use serde_json::json;

const MY_HOSTS: &str = "node0 slots=2 max_slots=20\nnode1 slots=2 max_slots=20\n";

fn hosts(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// "By slot": `mpirun --hostfile my-hosts -n 8 --map-by slot hello`.
#[test]
fn by_slot_example() {
    let job = Job {
        apps: app(Some(8), Some(("my-hosts", MY_HOSTS)), None),
        map_by: Some("slot"),
        ..Job::default()
    };
    let v = map(&job);
    assert_eq!(
        hosts_by_rank(&v),
        hosts(&["node0", "node0", "node1", "node1", "node0", "node0", "node1", "node1"])
    );
    // The JSON the issue asks for, exactly.
    let procs = |ranks: [u64; 4]| -> Vec<serde_json::Value> {
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
    // By slot is the default, and `rmaps_default_mapping_policy=slot` asks
    // for it too.
    for (map_by, param) in [(None, None), (None, Some("slot"))] {
        let v = map(&Job {
            map_by,
            default_policy: param,
            ..job.clone()
        });
        assert_eq!(ranks_on(&v, "node0"), [0, 1, 4, 5]);
        assert_eq!(ranks_on(&v, "node1"), [2, 3, 6, 7]);
    }
}

/// "By node": `mpirun --hostname my-hosts -n 8 --map-by node hello` (the
/// reference's `--hostname` is `--hostfile`).
#[test]
fn by_node_example() {
    let job = Job {
        apps: app(Some(8), Some(("my-hosts", MY_HOSTS)), None),
        map_by: Some("node"),
        ..Job::default()
    };
    let v = map(&job);
    assert_eq!(
        hosts_by_rank(&v),
        hosts(&["node0", "node1", "node0", "node1", "node0", "node1", "node0", "node1"])
    );
    assert_eq!(ranks_on(&v, "node0"), [0, 2, 4, 6]);
    assert_eq!(field(&v, "node0", "local_rank"), [0, 1, 2, 3]);
    assert_eq!(node(&v, "node1")["max_slots"], 20);
    // `rmaps_default_mapping_policy=node` gives the same map.
    let v2 = map(&Job {
        map_by: None,
        default_policy: Some("node"),
        ..job
    });
    assert_eq!(hosts_by_rank(&v2), hosts_by_rank(&v));
}

/// "Nodes are skipped once their default slot counts are exhausted" (by
/// node, before any oversubscription).
#[test]
fn by_node_skips_nodes_whose_slots_are_used_up() {
    let v = map(&Job {
        apps: app(Some(4), Some(("h", "node0 slots=1\nnode1 slots=3\n")), None),
        map_by: Some("node"),
        ..Job::default()
    });
    assert_eq!(
        hosts_by_rank(&v),
        hosts(&["node0", "node1", "node1", "node1"])
    );
    assert_eq!(node(&v, "node1")["oversubscribed"], false);
}

/// ":OVERSUBSCRIBE ... continue to loop through the list of nodes again and
/// try to schedule one more process to each node ... Nodes are skipped in
/// this process if their maximum slot count is exhausted."
#[test]
fn oversubscribe_loops_skipping_nodes_at_max_slots() {
    let v = map(&Job {
        apps: app(
            Some(6),
            Some(("h", "node0 slots=1 max_slots=2\nnode1 slots=1\n")),
            None,
        ),
        map_by: Some("node:OVERSUBSCRIBE"),
        ..Job::default()
    });
    assert_eq!(
        hosts_by_rank(&v),
        hosts(&["node0", "node1", "node0", "node1", "node1", "node1"])
    );
    assert_eq!(node(&v, "node0")["max_slots"], 2);
    assert_eq!(node(&v, "node1")["max_slots"], serde_json::Value::Null);
    // By slot, a second round gives each node its slot count again.
    let v = map(&Job {
        apps: app(
            Some(7),
            Some(("h", "node0 slots=2 max_slots=3\nnode1 slots=2\n")),
            None,
        ),
        map_by: Some("slot:OVERSUBSCRIBE"),
        ..Job::default()
    });
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
    for map_by in ["slot:OVERSUBSCRIBE", "node:OVERSUBSCRIBE", "slot", "node"] {
        let f = fails(&Job {
            apps: app(
                Some(7),
                Some((
                    "h",
                    "node0 slots=2 max_slots=3\nnode1 slots=2 max_slots=3\n",
                )),
                None,
            ),
            map_by: Some(map_by),
            ..Job::default()
        });
        assert_eq!(
            f.kind,
            Some(MapErrorKind::MaxSlotsExhausted),
            "{map_by}: {}",
            f.message
        );
        assert!(f.message.starts_with("all max_slots exhausted: 7 ranks requested, the hosts allow at most 6 more: node0 (max_slots 3), node1 (max_slots 3)"), "{}", f.message);
        assert!(f.message.contains("nothing was launched"), "{}", f.message);
        assert!(f.message.contains("raise max_slots"), "{}", f.message);
    }
    // 6 fits exactly.
    let v = map(&Job {
        apps: app(
            Some(6),
            Some((
                "h",
                "node0 slots=2 max_slots=3\nnode1 slots=2 max_slots=3\n",
            )),
            None,
        ),
        map_by: Some("node:OVERSUBSCRIBE"),
        ..Job::default()
    });
    assert_eq!(ranks_on(&v, "node0"), [0, 2, 4]);
}

/// "If :OVERSUBSCRIBE is not specified and an oversubscription condition
/// occurs, Open MPI will abort without launching any processes."
#[test]
fn oversubscription_without_the_modifier_aborts() {
    for map_by in [None, Some("slot"), Some("node")] {
        let f = fails(&Job {
            apps: app(
                Some(8),
                Some(("my-hosts", "node0 slots=2\nnode1 slots=2\n")),
                None,
            ),
            map_by,
            ..Job::default()
        });
        assert_eq!(f.kind, Some(MapErrorKind::NotEnoughSlots));
        assert_eq!(
            f.message,
            "not enough slots: 8 ranks requested, 4 slots on node0 (2), node1 (2) (hosts from hostfile my-hosts); \
nothing was launched. To go on, use --map-by :OVERSUBSCRIBE to run more ranks than slots, up to max_slots; \
or give fewer ranks with -n, or more slots (slots=N in a hostfile, --host NAME:N)."
        );
    }
}

/// The example hostfile: `foo.example.com` (no slots: the host's cores)
/// and `bar.example.com slots=2`. `-n` defaults to the sum of the slots.
#[test]
fn example_hostfile_slots() {
    let text = "# This is an example hostfile. Comments begin with #.\n#\n\
# Since no slots are specified, the number of slots defaults to the\n\
# number of processor cores available on the machine.\nfoo.example.com\n\n\
# We want to allow launching a maximum of 2 processes on this host\n\
# (e.g., potentially because it has two processor cores):\nbar.example.com slots=2\n";
    let v = map(&Job {
        apps: app(None, Some(("my-hosts", text)), None),
        local: oxmpi_framework_rmaps::Topology::new(1, 1, 4, 8),
        ..Job::default()
    });
    assert_eq!(node(&v, "foo.example.com")["slots"], 4);
    assert_eq!(node(&v, "bar.example.com")["slots"], 2);
    assert_eq!(v["num_procs"], 6);
    assert_eq!(
        node(&v, "bar.example.com")["max_slots"],
        serde_json::Value::Null
    );
}

/// Scheduler allocation for the exclusionary examples: node01 … node04.
const SLURM: &[(&str, &str)] = &[
    ("SLURM_JOB_ID", "1234"),
    ("SLURM_JOB_NODELIST", "node[01-04]"),
    ("SLURM_TASKS_PER_NODE", "2(x4)"),
];

/// Hostfile, exclusionary: the scheduler gave node01–node04;
/// `mpirun -n 1 --hostfile my_hosts hostname` with `node03` runs on node03.
#[test]
fn hostfile_exclusionary_picks_an_allocated_host() {
    let v = map(&Job {
        env: SLURM.to_vec(),
        apps: app(Some(1), Some(("my_hosts", "node03\n")), None),
        ..Job::default()
    });
    assert_eq!(hosts_by_rank(&v), hosts(&["node03"]));
    // The scheduler gives the slot count of a bare hostfile line.
    assert_eq!(node(&v, "node03")["slots"], 2);
}

/// Hostfile, exclusionary: `node17` is not allocated to the job → abort.
#[test]
fn hostfile_exclusionary_rejects_an_unallocated_host() {
    let f = fails(&Job {
        env: vec![
            ("SLURM_JOB_NODELIST", "node03"),
            ("SLURM_TASKS_PER_NODE", "1"),
        ],
        apps: app(Some(1), Some(("my_hosts", "node17\n")), None),
        ..Job::default()
    });
    assert_eq!(
        f.message,
        "my_hosts:1: host node17 is not in the Slurm allocation (SLURM_JOB_NODELIST=node03), \
so nothing was launched; use hosts of the Slurm allocation (SLURM_JOB_NODELIST=node03): node03"
    );
}

/// "in exclusionary mode, processes will only be executed on the
/// hostfile-specified hosts. If this ends up causing an oversubscription
/// situation, mpirun will abort by default."
#[test]
fn exclusionary_oversubscription_aborts_by_default() {
    let f = fails(&Job {
        env: SLURM.to_vec(),
        apps: app(Some(3), Some(("my_hosts", "node03\n")), None),
        ..Job::default()
    });
    assert_eq!(f.kind, Some(MapErrorKind::NotEnoughSlots));
    assert!(
        f.message.starts_with("not enough slots: 3 ranks requested, 2 slots on node03 (2) (hosts from the Slurm allocation (SLURM_JOB_NODELIST=node[01-04]))"),
        "{}",
        f.message
    );
    // Allowed with :OVERSUBSCRIBE (a scheduler gives no max_slots).
    let v = map(&Job {
        env: SLURM.to_vec(),
        apps: app(Some(3), Some(("my_hosts", "node03\n")), None),
        map_by: Some(":OVERSUBSCRIBE"),
        ..Job::default()
    });
    assert_eq!(hosts_by_rank(&v), hosts(&["node03"; 3]));
    assert_eq!(node(&v, "node03")["yield_when_idle"], true);
}

/// Hostfile, inclusionary: three hosts with `slots=1`, `-n 3` runs one on
/// each.
#[test]
fn hostfile_inclusionary() {
    let text =
        "node01.example.com slots=1\nnode02.example.com slots=1\nnode03.example.com slots=1\n";
    let v = map(&Job {
        apps: app(Some(3), Some(("my_hosts", text)), None),
        ..Job::default()
    });
    assert_eq!(
        hosts_by_rank(&v),
        hosts(&[
            "node01.example.com",
            "node02.example.com",
            "node03.example.com"
        ])
    );
    assert!(v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|n| n["oversubscribed"] == false));
}

/// `mpirun -n 1 --hostfile hostfile_1 hostname : -n 1 --hostfile hostfile_2
/// uptime`: hostname on node01, uptime on node02.
#[test]
fn hostfile_per_app_mpmd() {
    let v = map(&Job {
        apps: vec![
            App {
                np: Some(1),
                hostfile: Some(("hostfile_1", "node01.example.com\n")),
                host: None,
            },
            App {
                np: Some(1),
                hostfile: Some(("hostfile_2", "node02.example.com\n")),
                host: None,
            },
        ],
        ..Job::default()
    });
    assert_eq!(field(&v, "node01.example.com", "app"), [0]);
    assert_eq!(field(&v, "node02.example.com", "app"), [1]);
    assert_eq!(
        hosts_by_rank(&v),
        hosts(&["node01.example.com", "node02.example.com"])
    );
}

/// `mpirun -n 3 --host a,b,c hostname`: one copy on each (the host section
/// and the inclusionary --host example).
#[test]
fn host_option_one_slot_each() {
    let v = map(&Job {
        apps: app(Some(3), None, Some("a,b,c")),
        ..Job::default()
    });
    assert_eq!(hosts_by_rank(&v), hosts(&["a", "b", "c"]));
    for n in ["a", "b", "c"] {
        assert_eq!(node(&v, n)["slots"], 1);
        assert_eq!(node(&v, n)["max_slots"], serde_json::Value::Null);
    }
}

/// `mpirun --host a,b:2,c:3 hostname`: one copy on a, two on b, three on c.
#[test]
fn host_option_slot_suffixes() {
    let v = map(&Job {
        apps: app(None, None, Some("a,b:2,c:3")),
        ..Job::default()
    });
    assert_eq!(hosts_by_rank(&v), hosts(&["a", "b", "b", "c", "c", "c"]));
    assert_eq!(node(&v, "c")["slots"], 3);
}

/// `--host`, exclusionary: `my_hosts` has node1–node4;
/// `mpirun -n 1 --hostfile my_hosts --host node3` runs on node3 and
/// `--host node17` aborts.
#[test]
fn host_option_exclusionary_within_a_hostfile() {
    let my_hosts = Some(("my_hosts", "node1\nnode2\nnode3\nnode4\n"));
    let v = map(&Job {
        apps: app(Some(1), my_hosts, Some("node3")),
        ..Job::default()
    });
    assert_eq!(hosts_by_rank(&v), hosts(&["node3"]));
    let f = fails(&Job {
        apps: app(Some(1), my_hosts, Some("node17")),
        ..Job::default()
    });
    assert_eq!(
        f.message,
        "--host: host node17 is not in hostfile my_hosts, so nothing was launched; \
use hosts of hostfile my_hosts: node1, node2, node3, node4"
    );
    // Oversubscribing the --host-specified hosts aborts by default.
    let f = fails(&Job {
        apps: app(Some(2), my_hosts, Some("node3")),
        ..Job::default()
    });
    assert_eq!(f.kind, Some(MapErrorKind::NotEnoughSlots));
}

/// `--host` under a scheduler is exclusionary too.
#[test]
fn host_option_exclusionary_under_a_scheduler() {
    let v = map(&Job {
        env: SLURM.to_vec(),
        apps: app(None, None, Some("node02,node04:2")),
        ..Job::default()
    });
    assert_eq!(hosts_by_rank(&v), hosts(&["node02", "node04", "node04"]));
    let f = fails(&Job {
        env: SLURM.to_vec(),
        apps: app(Some(1), None, Some("node17")),
        ..Job::default()
    });
    assert!(
        f.message
            .starts_with("--host: host node17 is not in the Slurm allocation"),
        "{}",
        f.message
    );
}

/// `mpirun -n 1 --host a hostname : -n 1 --host b uptime`.
#[test]
fn host_option_per_app_mpmd() {
    let v = map(&Job {
        apps: vec![
            App {
                np: Some(1),
                hostfile: None,
                host: Some("a"),
            },
            App {
                np: Some(1),
                hostfile: None,
                host: Some("b"),
            },
        ],
        ..Job::default()
    });
    assert_eq!(field(&v, "a", "app"), [0]);
    assert_eq!(field(&v, "b", "app"), [1]);
}

/// Slot counting example 1: `node01.example.come slots=4`, no `-n` → 4.
#[test]
fn slots_example_hostfile_with_slots() {
    let v = map(&Job {
        apps: app(
            None,
            Some(("my-hostfile", "node01.example.come slots=4\n")),
            None,
        ),
        ..Job::default()
    });
    assert_eq!(hosts_by_rank(&v), hosts(&["node01.example.come"; 4]));
}

/// Slot counting example 2: no `slots`, the host has 2 cores → 2.
#[test]
fn slots_example_hostfile_without_slots() {
    let v = map(&Job {
        apps: app(None, Some(("my-hostfile", "node01.example.come\n")), None),
        ..Job::default()
    });
    assert_eq!(hosts_by_rank(&v), hosts(&["node01.example.come"; 2]));
    // With :HWTCPUS, its hardware threads (4 here).
    let v = map(&Job {
        apps: app(None, Some(("my-hostfile", "node01.example.come\n")), None),
        map_by: Some(":HWTCPUS"),
        ..Job::default()
    });
    assert_eq!(v["num_procs"], 4);
}

/// Slot counting example 3: `--host node01.example.com` → 1.
#[test]
fn slots_example_host_without_suffix() {
    let v = map(&Job {
        apps: app(None, None, Some("node01.example.com")),
        ..Job::default()
    });
    assert_eq!(hosts_by_rank(&v), hosts(&["node01.example.com"]));
}

/// Slot counting example 4: `--host node01.example.com:2` → 2.
#[test]
fn slots_example_host_with_suffix() {
    let v = map(&Job {
        apps: app(None, None, Some("node01.example.com:2")),
        ..Job::default()
    });
    assert_eq!(hosts_by_rank(&v), hosts(&["node01.example.com"; 2]));
}

/// Slot counting example 5: `--host node01.example.com:2,node01.example.com`
/// → 3.
#[test]
fn slots_example_host_named_twice() {
    let v = map(&Job {
        apps: app(None, None, Some("node01.example.com:2,node01.example.com")),
        ..Job::default()
    });
    assert_eq!(hosts_by_rank(&v), hosts(&["node01.example.com"; 3]));
    assert_eq!(node(&v, "node01.example.com")["slots"], 3);
}

/// Oversubscribing: hostfile `localhost` (2 cores, so 2 slots) and `-n 4`
/// fails.
#[test]
fn oversubscribing_localhost_fails_without_the_modifier() {
    let f = fails(&Job {
        apps: app(Some(4), Some(("my-hostfile", "localhost\n")), None),
        ..Job::default()
    });
    assert_eq!(f.kind, Some(MapErrorKind::NotEnoughSlots));
    assert!(
        f.message
            .starts_with("not enough slots: 4 ranks requested, 2 slots on localhost (2)"),
        "{}",
        f.message
    );
    assert!(
        f.message.contains("--map-by :OVERSUBSCRIBE"),
        "{}",
        f.message
    );
}

/// Oversubscribing: `localhost slots=2`, `-n 4 --map-by :OVERSUBSCRIBE`
/// works, and the ranks run in degraded mode.
#[test]
fn oversubscribing_localhost_with_the_modifier() {
    let v = map(&Job {
        apps: app(
            Some(4),
            Some(("my-hostfile", "# For the purposes of this example, explicitly tell Open MPI\n# that we have 2 slots on the host.\nlocalhost slots=2\n")),
            None,
        ),
        map_by: Some(":OVERSUBSCRIBE"),
        ..Job::default()
    });
    assert_eq!(hosts_by_rank(&v), hosts(&["localhost"; 4]));
    let n = node(&v, "localhost");
    assert_eq!(n["oversubscribed"], true);
    assert_eq!(n["yield_when_idle"], true);
    assert_eq!(v["mapping_policy"], "slot:OVERSUBSCRIBE");
}

/// Aggressive mode: `localhost slots=4` on 2 cores, `-n 4`: Open MPI
/// believes the 4 slots, so the ranks do not yield.
#[test]
fn slots_above_cores_run_aggressive() {
    let v = map(&Job {
        apps: app(Some(4), Some(("my-hostfile", "localhost slots=4\n")), None),
        ..Job::default()
    });
    let n = node(&v, "localhost");
    assert_eq!(n["oversubscribed"], false);
    assert_eq!(n["yield_when_idle"], false);
}

/// Project decision: no host list and no scheduler → the local host may be
/// oversubscribed; `:NOOVERSUBSCRIBE` refuses.
#[test]
fn implicit_local_host_may_be_oversubscribed() {
    let v = map(&Job {
        apps: app(Some(8), None, None),
        ..Job::default()
    });
    assert_eq!(hosts_by_rank(&v), hosts(&["localhost"; 8]));
    assert_eq!(node(&v, "localhost")["slots"], 2);
    assert_eq!(node(&v, "localhost")["yield_when_idle"], true);
    // -n defaults to the cores.
    assert_eq!(map(&Job::default())["num_procs"], 2);
    let f = fails(&Job {
        apps: app(Some(8), None, None),
        map_by: Some(":NOOVERSUBSCRIBE"),
        ..Job::default()
    });
    assert_eq!(f.kind, Some(MapErrorKind::NotEnoughSlots));
    assert!(
        f.message
            .contains("8 ranks requested, 2 slots on localhost (2) (hosts from the local host)"),
        "{}",
        f.message
    );
    assert!(
        f.message.contains("instead of :NOOVERSUBSCRIBE"),
        "{}",
        f.message
    );
}

/// `:NOOVERSUBSCRIBE` also refuses the headroom an explicit `max_slots`
/// gives.
#[test]
fn nooversubscribe_refuses_max_slots_headroom() {
    let f = fails(&Job {
        apps: app(Some(8), Some(("my-hosts", MY_HOSTS)), None),
        map_by: Some("slot:NOOVERSUBSCRIBE"),
        ..Job::default()
    });
    assert_eq!(f.kind, Some(MapErrorKind::NotEnoughSlots));
}
