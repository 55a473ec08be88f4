//! The mappers beyond the reference's examples: by-object policies and
//! :SPAN, ppr, seq, --rank-by, :PE, MPMD, a fake Slurm allocation, the map
//! displays, errors through the whole pipeline, and properties of every map.

mod common;

use common::*;
use oxmpi_framework_rmaps::{
    display, Allocation, AllocationSource, AppRequest, HostFilter, MapBy, MapErrorKind, MapPolicy,
    MapRequest, NodeSpec, RankBy, Resource, Topology,
};
use proptest::prelude::*;
use serde_json::{json, Value};

/// 2 packages, 2 NUMA domains, 8 cores, 16 hardware threads.
const BIG: Topology = Topology::new(2, 2, 8, 16);

fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

fn objects(v: &Value, node_name: &str) -> Vec<String> {
    field(v, node_name, "object")
        .iter()
        .map(|o| o.as_str().unwrap_or("-").to_string())
        .collect()
}

fn big_job(np: Option<u32>, hostfile: &'static str, map_by: &'static str) -> Job {
    Job {
        local: BIG,
        apps: app(np, Some(("h", hostfile)), None),
        map_by: Some(map_by),
        ..Job::default()
    }
}

#[test]
fn by_package_cycles_packages_inside_a_node() {
    let v = map(&big_job(Some(8), "a slots=4\nb slots=4\n", "package"));
    assert_eq!(ranks_on(&v, "a"), [0, 1, 2, 3]);
    assert_eq!(
        objects(&v, "a"),
        strings(&["package:0", "package:1", "package:0", "package:1"])
    );
    assert_eq!(v["mapper"], "round_robin");
}

#[test]
fn by_core_numa_and_hwthread() {
    let v = map(&big_job(Some(3), "a slots=4\n", "core"));
    assert_eq!(objects(&v, "a"), strings(&["core:0", "core:1", "core:2"]));
    let v = map(&big_job(Some(3), "a slots=4\n", "numa"));
    assert_eq!(objects(&v, "a"), strings(&["numa:0", "numa:1", "numa:0"]));
    let v = map(&big_job(Some(2), "a slots=4\n", "hwthread"));
    assert_eq!(objects(&v, "a"), strings(&["hwthread:0", "hwthread:1"]));
}

#[test]
fn span_deals_objects_across_nodes() {
    let v = map(&big_job(Some(6), "a slots=4\nb slots=4\n", "package:SPAN"));
    assert_eq!(hosts_by_rank(&v), strings(&["a", "a", "b", "b", "a", "a"]));
    assert_eq!(
        objects(&v, "a"),
        strings(&["package:0", "package:1", "package:0", "package:1"])
    );
}

#[test]
fn pe_reserves_processors() {
    let v = map(&big_job(Some(4), "a slots=4\n", "core:PE=2"));
    assert_eq!(
        objects(&v, "a"),
        strings(&["core:0", "core:2", "core:4", "core:6"])
    );
    assert_eq!(
        field(&v, "a", "cpus"),
        [json!([0, 1]), json!([2, 3]), json!([4, 5]), json!([6, 7])]
    );
    let v = map(&big_job(Some(2), "a slots=4\n", "slot:PE=3"));
    assert_eq!(field(&v, "a", "cpus"), [json!([0, 1, 2]), json!([3, 4, 5])]);
    let v = map(&big_job(Some(2), "a slots=4\n", "package:PE=2"));
    assert_eq!(field(&v, "a", "cpus"), [json!([0, 1]), json!([4, 5])]);
    let v = map(&big_job(Some(2), "a slots=4\n", "hwthread:PE=2:HWTCPUS"));
    assert_eq!(objects(&v, "a"), strings(&["hwthread:0", "hwthread:2"]));
    assert_eq!(field(&v, "a", "cpus"), [json!([0, 1]), json!([2, 3])]);
    // With PE=2, 8 cores hold 4 processes even with 8 slots.
    let f = fails(&big_job(Some(5), "a slots=8\n", "core:PE=2"));
    assert_eq!(f.kind, Some(MapErrorKind::NotEnoughSlots));
    assert!(
        f.message.contains("5 ranks requested, 4 slots on a (4)"),
        "{}",
        f.message
    );
    assert!(
        f.message
            .contains("with PE=2 a node holds at most its cores divided by 2"),
        "{}",
        f.message
    );
}

#[test]
fn pe_larger_than_every_host_is_an_error_even_when_oversubscribing() {
    for policy in [
        "slot:PE=100000",
        "core:PE=9:OVERSUBSCRIBE",
        "slot:PE=17:HWTCPUS",
    ] {
        let f = fails(&big_job(Some(2), "a slots=4\n", policy));
        assert_eq!(f.kind, Some(MapErrorKind::BadRequest), "{policy}");
        assert!(
            f.message.contains("no host of the job has that many"),
            "{policy}: {}",
            f.message
        );
    }
    // PE equal to a host's processors fits.
    let v = map(&big_job(Some(1), "a slots=4\n", "slot:PE=8"));
    assert_eq!(field(&v, "a", "cpus"), [json!([0, 1, 2, 3, 4, 5, 6, 7])]);
}

#[test]
fn rank_by_node_and_slot() {
    let hf = "a slots=2\nb slots=2\n";
    let v = map(&Job {
        apps: app(Some(4), Some(("h", hf)), None),
        rank_by: Some("node"),
        ..Job::default()
    });
    assert_eq!(ranks_on(&v, "a"), [0, 2]);
    assert_eq!(ranks_on(&v, "b"), [1, 3]);
    assert_eq!(field(&v, "b", "local_rank"), [0, 1]);
    assert_eq!(v["ranking_policy"], "node");
    let v = map(&Job {
        apps: app(Some(4), Some(("h", hf)), None),
        map_by: Some("node"),
        rank_by: Some("slot"),
        ..Job::default()
    });
    assert_eq!(ranks_on(&v, "a"), [0, 1]);
    assert_eq!(ranks_on(&v, "b"), [2, 3]);
    // Rank by slot numbers node by node even when by-slot mapping went
    // round twice (the default keeps the placement order instead).
    let v = map(&Job {
        apps: app(
            Some(8),
            Some((
                "my-hosts",
                "node0 slots=2 max_slots=20\nnode1 slots=2 max_slots=20\n",
            )),
            None,
        ),
        rank_by: Some("slot"),
        ..Job::default()
    });
    assert_eq!(ranks_on(&v, "node0"), [0, 1, 2, 3]);
}

#[test]
fn rank_by_object() {
    let v = map(&Job {
        rank_by: Some("package"),
        ..big_job(Some(4), "a slots=4\n", "package")
    });
    let by_rank: Vec<String> = objects(&v, "a");
    assert_eq!(
        by_rank,
        strings(&["package:0", "package:0", "package:1", "package:1"])
    );
    // By core, package ranking follows the cores' packages.
    let v = map(&Job {
        rank_by: Some("package"),
        ..big_job(Some(8), "a slots=8\n", "core")
    });
    assert_eq!(
        objects(&v, "a")[..4],
        strings(&["core:0", "core:1", "core:2", "core:3"])
    );
    // Without objects, ranking by an object keeps placement order.
    let v = map(&Job {
        rank_by: Some("core"),
        ..big_job(Some(3), "a slots=4\n", "slot")
    });
    assert_eq!(ranks_on(&v, "a"), [0, 1, 2]);
}

#[test]
fn ppr_places_n_per_resource() {
    let v = map(&big_job(None, "a slots=4\nb slots=4\n", "ppr:2:package"));
    assert_eq!(v["num_procs"], 8);
    assert_eq!(v["mapper"], "ppr");
    assert_eq!(
        objects(&v, "b"),
        strings(&["package:0", "package:0", "package:1", "package:1"])
    );
    assert_eq!(ranks_on(&v, "b"), [4, 5, 6, 7]);
    // Fewer ranks stop early, node by node.
    let v = map(&big_job(Some(3), "a slots=4\nb slots=4\n", "ppr:2:package"));
    assert_eq!(hosts_by_rank(&v), strings(&["a", "a", "a"]));
    // ppr:N:node has no object.
    let v = map(&big_job(None, "a slots=2\nb slots=2\n", "ppr:1:node"));
    assert_eq!(hosts_by_rank(&v), strings(&["a", "b"]));
    assert_eq!(objects(&v, "a"), strings(&["-"]));
    let v = map(&big_job(None, "a slots=16\n", "ppr:1:core"));
    assert_eq!(v["num_procs"], 8);
}

#[test]
fn ppr_errors() {
    let f = fails(&big_job(Some(9), "a slots=4\nb slots=4\n", "ppr:2:package"));
    assert_eq!(f.kind, Some(MapErrorKind::PprTooFew));
    assert_eq!(
        f.message,
        "--map-by ppr:2:package places at most 8 ranks on the 2 host(s) of the job (2 per package), \
and 9 were requested; nothing was launched. Give fewer ranks with -n or a larger count."
    );
    let f = fails(&big_job(None, "a slots=2\n", "ppr:3:node"));
    assert_eq!(f.kind, Some(MapErrorKind::NotEnoughSlots));
    assert!(
        f.message.starts_with("not enough slots: --map-by ppr:3:node puts 3 ranks on a, which has 2 slots (hosts from hostfile h)"),
        "{}",
        f.message
    );
    let v = map(&big_job(None, "a slots=2\n", "ppr:3:node:OVERSUBSCRIBE"));
    assert_eq!(node(&v, "a")["oversubscribed"], true);
    let f = fails(&big_job(
        None,
        "a slots=2 max_slots=2\n",
        "ppr:3:node:OVERSUBSCRIBE",
    ));
    assert_eq!(f.kind, Some(MapErrorKind::MaxSlotsExhausted));
    assert!(f.message.contains("whose max_slots is 2"), "{}", f.message);
    // The implicit local host may be oversubscribed.
    let v = map(&Job {
        local: BIG,
        map_by: Some("ppr:2:core"),
        ..Job::default()
    });
    assert_eq!(v["num_procs"], 16);
}

#[test]
fn seq_follows_the_lines() {
    let v = map(&Job {
        apps: app(None, Some(("h", "a\nb\na\nc\n")), None),
        map_by: Some("seq"),
        ..Job::default()
    });
    assert_eq!(v["mapper"], "seq");
    assert_eq!(hosts_by_rank(&v), strings(&["a", "b", "a", "c"]));
    assert_eq!(node(&v, "a")["slots"], 2);
    let v = map(&Job {
        apps: app(Some(2), Some(("h", "a\nb\na\nc\n")), None),
        map_by: Some("seq"),
        ..Job::default()
    });
    assert_eq!(hosts_by_rank(&v), strings(&["a", "b"]));
    let v = map(&Job {
        apps: app(None, None, Some("c,a,b:2")),
        map_by: Some("seq"),
        ..Job::default()
    });
    assert_eq!(hosts_by_rank(&v), strings(&["c", "a", "b"]));
    let f = fails(&Job {
        apps: app(Some(5), Some(("h", "a\nb\na\nc\n")), None),
        map_by: Some("seq"),
        ..Job::default()
    });
    assert_eq!(f.kind, Some(MapErrorKind::SeqTooFew));
    assert!(
        f.message.starts_with("--map-by seq places one rank per host line, and the app's host list has 4 line(s) left for 5 rank(s)"),
        "{}",
        f.message
    );
}

#[test]
fn seq_mpmd_and_limits() {
    // An app without its own list continues through the allocation's lines.
    let v = map(&Job {
        apps: vec![
            App {
                np: Some(1),
                hostfile: Some(("h1", "x\ny\n")),
                host: None,
            },
            App {
                np: Some(1),
                hostfile: Some(("h2", "z\n")),
                host: None,
            },
            App {
                np: Some(2),
                hostfile: None,
                host: None,
            },
            App {
                np: Some(1),
                hostfile: None,
                host: None,
            },
        ],
        map_by: Some("seq"),
        ..Job::default()
    });
    assert_eq!(hosts_by_rank(&v), strings(&["x", "z", "x", "y", "z"]));
    // Under Slurm, two lines of a one-slot node need :OVERSUBSCRIBE.
    let slurm = vec![("SLURM_JOB_NODELIST", "n1"), ("SLURM_TASKS_PER_NODE", "1")];
    let f = fails(&Job {
        env: slurm.clone(),
        apps: app(None, Some(("h", "n1\nn1\n")), None),
        map_by: Some("seq"),
        ..Job::default()
    });
    assert_eq!(f.kind, Some(MapErrorKind::NotEnoughSlots));
    assert!(
        f.message
            .contains("--map-by seq puts 2 ranks on n1, which has 1 slot ("),
        "{}",
        f.message
    );
    let v = map(&Job {
        env: slurm,
        apps: app(None, Some(("h", "n1\nn1\n")), None),
        map_by: Some("seq:OVERSUBSCRIBE"),
        ..Job::default()
    });
    assert_eq!(node(&v, "n1")["oversubscribed"], true);
}

#[test]
fn mpmd_apps_share_slots_and_number_ranks_app_by_app() {
    let v = map(&Job {
        apps: vec![
            App {
                np: Some(2),
                hostfile: None,
                host: Some("a:2"),
            },
            App {
                np: Some(2),
                hostfile: None,
                host: Some("a:2"),
            },
        ],
        ..Job::default()
    });
    assert_eq!(node(&v, "a")["slots"], 4);
    assert_eq!(field(&v, "a", "app"), [0, 0, 1, 1]);
    assert_eq!(field(&v, "a", "app_rank"), [0, 1, 0, 1]);
    assert_eq!(field(&v, "a", "local_rank"), [0, 1, 2, 3]);
    // -n defaults to the slots of each app's own list.
    let v = map(&Job {
        apps: vec![
            App {
                np: None,
                hostfile: None,
                host: Some("a:2"),
            },
            App {
                np: None,
                hostfile: None,
                host: Some("b:3"),
            },
        ],
        ..Job::default()
    });
    assert_eq!(hosts_by_rank(&v), strings(&["a", "a", "b", "b", "b"]));
    // More than the slots, with :OVERSUBSCRIBE.
    let ok = map(&Job {
        apps: vec![
            App {
                np: Some(3),
                hostfile: None,
                host: Some("a:2"),
            },
            App {
                np: Some(1),
                hostfile: None,
                host: Some("a"),
            },
        ],
        map_by: Some(":OVERSUBSCRIBE"),
        ..Job::default()
    });
    assert_eq!(field(&ok, "a", "app"), [0, 0, 0, 1]);
}

#[test]
fn mpmd_later_app_reports_used_slots() {
    let f = fails(&Job {
        apps: vec![
            App {
                np: Some(2),
                hostfile: None,
                host: Some("a:2"),
            },
            App {
                np: Some(2),
                hostfile: None,
                host: Some("a"),
            },
        ],
        ..Job::default()
    });
    assert_eq!(
        f.message.split(';').next().unwrap(),
        "app 1: not enough slots: 2 ranks requested, 1 slots on a (3, 2 used by earlier apps) (hosts from --host)"
    );
}

const SLURM: &[(&str, &str)] = &[
    ("SLURM_JOB_ID", "99"),
    ("SLURM_JOB_NODELIST", "node[01-04]"),
    ("SLURM_TASKS_PER_NODE", "2(x3),1"),
];

#[test]
fn fake_slurm_whole_allocation() {
    let v = map(&Job {
        env: SLURM.to_vec(),
        ..Job::default()
    });
    assert_eq!(v["num_procs"], 7);
    assert_eq!(
        hosts_by_rank(&v),
        strings(&["node01", "node01", "node02", "node02", "node03", "node03", "node04"])
    );
    let v = map(&Job {
        env: SLURM.to_vec(),
        map_by: Some("node"),
        ..Job::default()
    });
    assert_eq!(ranks_on(&v, "node04"), [3]);
    assert_eq!(ranks_on(&v, "node01"), [0, 4]);
    let f = fails(&Job {
        env: SLURM.to_vec(),
        apps: app(Some(8), None, None),
        ..Job::default()
    });
    assert!(
        f.message.starts_with("not enough slots: 8 ranks requested, 7 slots on node01 (2), node02 (2), node03 (2), node04 (1) (hosts from the Slurm allocation (SLURM_JOB_NODELIST=node[01-04]))"),
        "{}",
        f.message
    );
    // Bad scheduler variables stop everything.
    let f = fails(&Job {
        env: vec![
            ("SLURM_JOB_NODELIST", "node[01-04"),
            ("SLURM_TASKS_PER_NODE", "1"),
        ],
        ..Job::default()
    });
    assert!(
        f.message
            .starts_with("SLURM_JOB_NODELIST: host list \"node[01-04\""),
        "{}",
        f.message
    );
}

#[test]
fn only_nodes_with_processes_are_shown() {
    let v = map(&Job {
        apps: app(Some(1), None, Some("a,b,c")),
        ..Job::default()
    });
    assert_eq!(v["nodes"].as_array().unwrap().len(), 1);
}

#[test]
fn default_policy_parameter_combines_with_map_by() {
    let v = map(&Job {
        apps: app(Some(4), None, Some("a,b")),
        map_by: Some("node"),
        default_policy: Some(":oversubscribe"),
        ..Job::default()
    });
    assert_eq!(hosts_by_rank(&v), strings(&["a", "b", "a", "b"]));
    assert_eq!(v["mapping_policy"], "node:OVERSUBSCRIBE");
}

#[test]
fn hwtcpus_on_the_local_host() {
    let v = map(&Job {
        map_by: Some(":HWTCPUS"),
        ..Job::default()
    });
    assert_eq!(v["num_procs"], 4);
    assert_eq!(node(&v, "localhost")["slots"], 4);
}

#[test]
fn headroom_from_max_slots_is_shown_when_slots_run_out() {
    let f = fails(&Job {
        apps: app(
            Some(30),
            Some(("h", "node0 slots=2 max_slots=20\nnode1 slots=2\n")),
            None,
        ),
        ..Job::default()
    });
    assert_eq!(f.kind, Some(MapErrorKind::NotEnoughSlots));
    assert!(
        f.message.starts_with("not enough slots: 30 ranks requested, 4 slots on node0 (2, up to 20 with its max_slots), node1 (2) (hosts from hostfile h)"),
        "{}",
        f.message
    );
    // 22 fit: node0 up to its max_slots, node1 its slots.
    let v = map(&Job {
        apps: app(
            Some(22),
            Some(("h", "node0 slots=2 max_slots=20\nnode1 slots=2\n")),
            None,
        ),
        ..Job::default()
    });
    assert_eq!(node(&v, "node0")["num_procs"], 20);
    assert_eq!(node(&v, "node1")["oversubscribed"], false);
}

#[test]
fn absurd_rank_counts_are_refused() {
    let f = fails(&Job {
        apps: app(Some(oxmpi_framework_rmaps::MAX_PROCS + 1), None, None),
        ..Job::default()
    });
    assert_eq!(f.kind, Some(MapErrorKind::BadRequest));
    assert!(
        f.message.contains("more than the 16777216 ranks"),
        "{}",
        f.message
    );
}

#[test]
fn zero_ranks_is_refused() {
    let f = fails(&Job {
        apps: app(Some(0), None, Some("a")),
        ..Job::default()
    });
    assert_eq!(f.kind, Some(MapErrorKind::BadRequest));
    assert_eq!(f.message, "-n 0: an app needs at least one rank");
}

#[test]
fn every_hostfile_error_reaches_the_user_with_file_and_line() {
    for (text, what) in [
        ("node0 slots=two", "slots needs a whole number"),
        ("node0 slots=-2", "slots cannot be negative"),
        (
            "node0 slots=4 max_slots=2",
            "max_slots=2 is less than slots=4",
        ),
        ("node0 color=blue", "unknown attribute \"color\""),
        ("node0 blue", "unexpected \"blue\""),
        ("node0 slots=1 slots=1", "given twice"),
        ("no/de", "is not a host name"),
    ] {
        let hostfile: &'static str =
            Box::leak(format!("ok slots=1\n# comment\n{text}\n").into_boxed_str());
        let f = fails(&Job {
            apps: app(None, Some(("conf/my-hosts", hostfile)), None),
            ..Job::default()
        });
        assert!(f.message.starts_with("conf/my-hosts:3: "), "{}", f.message);
        assert!(f.message.contains(what), "{text}: {}", f.message);
    }
}

#[test]
fn policy_errors_reach_the_user() {
    let f = fails(&Job {
        map_by: Some("diagonal"),
        ..Job::default()
    });
    assert!(
        f.message
            .starts_with("--map-by diagonal: unknown mapping policy"),
        "{}",
        f.message
    );
    let f = fails(&Job {
        rank_by: Some("diagonal"),
        ..Job::default()
    });
    assert!(
        f.message.starts_with("--rank-by diagonal:"),
        "{}",
        f.message
    );
    let f = fails(&Job {
        default_policy: Some("slot:bogus"),
        ..Job::default()
    });
    assert!(
        f.message
            .starts_with("rmaps_default_mapping_policy slot:bogus:"),
        "{}",
        f.message
    );
}

fn two_node_request() -> MapRequest {
    MapRequest {
        allocation: Allocation {
            nodes: vec![
                NodeSpec {
                    name: "node0".into(),
                    slots: 2,
                    max_slots: Some(20),
                    slots_given: true,
                    topology: Some(Topology::new(2, 2, 4, 8)),
                },
                NodeSpec {
                    name: "node1".into(),
                    slots: 2,
                    max_slots: None,
                    slots_given: true,
                    topology: None,
                },
            ],
            source: AllocationSource::HostOption,
            sequence: strings(&["node0", "node1"]),
        },
        apps: vec![AppRequest {
            np: Some(3),
            hosts: None,
        }],
        policy: MapPolicy::default(),
        rank_by: None,
        default_topology: Topology::flat(1),
    }
}

#[test]
fn per_node_topologies() {
    let mut req = two_node_request();
    req.policy.map_by = MapBy::Ppr {
        count: 1,
        resource: Resource::Core,
    };
    req.apps[0].np = None;
    req.policy.oversubscribe = Some(true);
    let map = map_job(&req).unwrap();
    // node0 has 4 cores; node1's topology is unknown: the default (1 core).
    assert_eq!(
        map.rank_hosts(),
        ["node0", "node0", "node0", "node0", "node1"]
    );
}

#[test]
fn app_filter_naming_an_unknown_host_is_rejected() {
    let mut req = two_node_request();
    req.apps[0].hosts = Some(HostFilter {
        nodes: strings(&["node9"]),
        slots: vec![1],
        sequence: strings(&["node9"]),
        source: None,
    });
    let e = map_job(&req).unwrap_err();
    assert_eq!(e.kind, MapErrorKind::BadRequest);
    assert_eq!(e.message, "host node9 is not in the allocation (--host)");
}

#[test]
fn text_display() {
    let mut req = two_node_request();
    req.apps[0].np = Some(5);
    req.rank_by = Some(RankBy::Slot);
    let mut map = map_job(&req).unwrap();
    map.nodes[0].procs[0].binding = Some("package[0][core:0]".into());
    let text = display::text(&map);
    assert!(
        text.starts_with("========================   JOB MAP   ========================\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "Mapper: round_robin\tMapping policy: slot\tRanking policy: slot\tProcesses: 5"
        ),
        "{text}"
    );
    assert!(
        text.contains("Data for node: node0\tNum slots: 2\tMax slots: 20\tNum procs: 3\tOversubscribed (ranks yield when idle)\n"),
        "{text}"
    );
    assert!(
        text.contains("Data for node: node1\tNum slots: 2\tMax slots: unlimited\tNum procs: 2\n"),
        "{text}"
    );
    assert!(
        text.contains("\tProcess rank: 0\tApp: 0\tLocal rank: 0\tBound: package[0][core:0]\n"),
        "{text}"
    );
    assert!(
        text.contains("\tProcess rank: 1\tApp: 0\tLocal rank: 1\tBound: N/A\n"),
        "{text}"
    );
    assert!(text.ends_with("=============================================================\n"));
    assert!(map.nodes[0].yield_when_idle() == 1 && map.nodes[1].yield_when_idle() == 0);
}

#[test]
fn json_display_matches_its_value_form() {
    let mut req = two_node_request();
    req.policy.map_by = MapBy::Core;
    req.policy.pe = Some(2);
    req.default_topology = Topology::flat(4);
    req.policy.oversubscribe = Some(true);
    req.rank_by = Some(RankBy::Node);
    let mut map = map_job(&req).unwrap();
    map.nodes[1].procs[0].binding = Some("core \"0\"".into());
    let text = display::json(&map);
    assert!(text.ends_with("}\n") && !text[..text.len() - 1].contains('\n'));
    let parsed: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(parsed, display::to_json(&map));
    assert_eq!(parsed["nodes"][1]["procs"][0]["binding"], "core \"0\"");
    assert_eq!(parsed["nodes"][1]["max_slots"], Value::Null);
    assert_eq!(parsed["ranking_policy"], "node");
    assert_eq!(parsed["mapping_policy"], "core:OVERSUBSCRIBE:PE=2");
    assert!(parsed["nodes"][0]["procs"][0].get("binding").is_none());
}

fn policy_strategy() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just("slot"),
        Just("node"),
        Just("core"),
        Just("package:SPAN"),
        Just("numa"),
        Just("hwthread"),
        Just("seq"),
        Just("ppr:1:package"),
        Just("ppr:2:node"),
        Just("slot:OVERSUBSCRIBE"),
        Just("node:OVERSUBSCRIBE"),
        Just("slot:NOOVERSUBSCRIBE"),
        Just("core:PE=2"),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Any hostfile, policy and -n: never a panic; a successful map has
    /// ranks 0..n once each, local ranks 0..k per node, respects max_slots,
    /// and flags exactly the nodes with more processes than slots.
    #[test]
    fn every_map_is_consistent(
        hosts in proptest::collection::vec((0u32..5, proptest::option::of(0u32..8)), 1..6),
        np in proptest::option::of(1u32..40),
        map_by in policy_strategy(),
        rank_by in proptest::option::of(prop_oneof![Just("slot"), Just("node"), Just("package")]),
    ) {
        let text: String = hosts
            .iter()
            .enumerate()
            .map(|(i, (slots, max))| match max {
                Some(m) => format!("h{i} slots={slots} max_slots={}\n", slots + m),
                None => format!("h{i} slots={slots}\n"),
            })
            .collect();
        let text: &'static str = Box::leak(text.into_boxed_str());
        let job = Job {
            local: BIG,
            apps: app(np, Some(("h", text)), None),
            map_by: Some(map_by),
            rank_by,
            ..Job::default()
        };
        match run(&job) {
            Err(f) => prop_assert!(f.kind.is_some() || f.message.contains("no free slot"), "{}", f.message),
            Ok(v) => {
                let ranks = hosts_by_rank(&v);
                if let Some(n) = np {
                    prop_assert_eq!(ranks.len(), n as usize);
                }
                for node in v["nodes"].as_array().unwrap() {
                    let procs = node["procs"].as_array().unwrap();
                    let count = procs.len() as u64;
                    for (k, p) in procs.iter().enumerate() {
                        prop_assert_eq!(p["local_rank"].as_u64().unwrap(), k as u64);
                    }
                    if let Some(max) = node["max_slots"].as_u64() {
                        prop_assert!(count <= max);
                    }
                    let slots = node["slots"].as_u64().unwrap();
                    prop_assert_eq!(node["oversubscribed"].as_bool().unwrap(), count > slots);
                    if map_by.contains("NOOVERSUBSCRIBE") {
                        prop_assert!(count <= slots);
                    }
                }
            }
        }
    }

    /// Any hostfile text: parsing never panics, and errors name file and
    /// line.
    #[test]
    fn hostfile_parsing_never_panics(text in "[a-z0-9_=# \\-\\n.@]{0,80}") {
        if let Err(e) = oxmpi_framework_rmaps::Hostfile::parse(std::path::Path::new("f"), &text) {
            prop_assert!(e.0.starts_with("f:"), "{}", e.0);
        }
    }

    /// Any --host text: parsing never panics.
    #[test]
    fn host_option_parsing_never_panics(text in "\\PC{0,40}") {
        let _ = oxmpi_framework_rmaps::hosts::parse_host_items(&[text]);
    }

    /// Any --map-by text: parsing never panics, and errors name the option.
    #[test]
    fn map_by_parsing_never_panics(text in "[a-zA-Z0-9:=,]{0,30}") {
        if let Err(e) = oxmpi_framework_rmaps::policy::parse_map_by(&text) {
            prop_assert!(e.0.starts_with("--map-by"), "{}", e.0);
        }
    }
}
