//! Mapping time for 10,000 ranks over 1,000 hosts (target: under 50 ms).
//!
//! Run with `cargo bench -p oxmpi-framework-rmaps --bench map`. Prints one
//! line per case: median and minimum over the runs, and whether the median
//! meets the target. Timings are printed, never asserted.
//!
//! Mapping goes through the in-tree components' modules and the framework's
//! selection ([`selection::map_with`]), the path mpirun takes, so the time
//! includes the request and the map crossing the boundary as JSON.

use oxmpi_framework_rmaps::{
    allocation, display, hosts, policy, selection, AppHosts, Candidate, Hostfile, JobMap,
    LocalHost, MapPolicy, MapRequest, Topology,
};
use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

const HOSTS: usize = 1_000;
const RANKS: u32 = 10_000;
const RUNS: usize = 31;
const TARGET: Duration = Duration::from_millis(50);

/// The in-tree mappers, as mpirun finds them installed.
fn installed() -> Vec<Candidate> {
    vec![
        mca_rmaps_round_robin::candidate(),
        mca_rmaps_seq::candidate(),
        mca_rmaps_ppr::candidate(),
    ]
}

/// Maps `req` as mpirun does.
fn map_job(req: &MapRequest) -> JobMap {
    selection::map_with(&installed(), req).expect("map")
}

fn hostfile_text(slots: u32) -> String {
    (0..HOSTS)
        .map(|i| format!("node{i:04} slots={slots}\n"))
        .collect()
}

fn local() -> LocalHost {
    LocalHost {
        name: "localhost".into(),
        topology: Topology::new(2, 2, 16, 32),
    }
}

/// Everything mpirun does for `--hostfile F -n 10000 --map-by MAP_BY`:
/// parse the hostfile, resolve the allocation, map.
fn pipeline(text: &str, map_by: &str, rank_by: Option<&str>) -> usize {
    let policy = MapPolicy::from(policy::parse_map_by(map_by).expect("policy"));
    let hostfile = Hostfile::parse(Path::new("bench-hosts"), text).expect("hostfile");
    let env = HashMap::new();
    let resolved = allocation::resolve(&allocation::AllocationRequest {
        env: &env,
        local: local(),
        hwtcpus: policy.hwtcpus,
        apps: vec![AppHosts {
            hostfile: Some(hostfile),
            hosts: Vec::new(),
        }],
    })
    .expect("allocation");
    let mut req = MapRequest::new(resolved, &[Some(RANKS)], policy);
    req.default_topology = local().topology;
    req.rank_by = rank_by.map(|r| policy::parse_rank_by(r).expect("rank-by"));
    let map = map_job(&req);
    assert_eq!(map.size(), RANKS);
    map.nodes.len()
}

/// Runs `f` RUNS times after one warm-up; returns (median, min).
fn time(mut f: impl FnMut() -> usize) -> (Duration, Duration) {
    std::hint::black_box(f());
    let mut samples: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(f());
            start.elapsed()
        })
        .collect();
    samples.sort();
    (samples[RUNS / 2], samples[0])
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing
    // special: keep both quick enough.
    let exact = hostfile_text(10);
    let half = hostfile_text(5);
    let host_list: Vec<String> = vec![(0..HOSTS)
        .map(|i| format!("node{i:04}:10"))
        .collect::<Vec<_>>()
        .join(",")];
    type Case<'a> = (&'a str, Box<dyn FnMut() -> usize + 'a>);
    let cases: Vec<Case> = vec![
        (
            "hostfile, --map-by slot",
            Box::new(|| pipeline(&exact, "slot", None)),
        ),
        (
            "hostfile, --map-by node",
            Box::new(|| pipeline(&exact, "node", None)),
        ),
        (
            "hostfile, --map-by core",
            Box::new(|| pipeline(&exact, "core", None)),
        ),
        (
            "hostfile, --map-by package:SPAN",
            Box::new(|| pipeline(&exact, "package:SPAN", None)),
        ),
        (
            "hostfile, --map-by ppr:5:package",
            Box::new(|| pipeline(&exact, "ppr:5:package", None)),
        ),
        (
            "hostfile, --map-by seq (10 lines per host)",
            Box::new(|| {
                let text: String = (0..RANKS as usize)
                    .map(|r| format!("node{:04}\n", r % HOSTS))
                    .collect();
                pipeline(&text, "seq", None)
            }),
        ),
        (
            "hostfile, slot, --rank-by node",
            Box::new(|| pipeline(&exact, "slot", Some("node"))),
        ),
        (
            "hostfile, 5 slots each, slot:OVERSUBSCRIBE",
            Box::new(|| pipeline(&half, "slot:OVERSUBSCRIBE", None)),
        ),
        (
            "hostfile, 5 slots each, node:OVERSUBSCRIBE",
            Box::new(|| pipeline(&half, "node:OVERSUBSCRIBE", None)),
        ),
        (
            "--host with 1,000 entries, slot",
            Box::new(|| {
                let items = hosts::parse_host_items(&host_list).expect("hosts");
                let env = HashMap::new();
                let resolved = allocation::resolve(&allocation::AllocationRequest {
                    env: &env,
                    local: local(),
                    hwtcpus: false,
                    apps: vec![AppHosts {
                        hostfile: None,
                        hosts: items,
                    }],
                })
                .expect("allocation");
                let req = MapRequest::new(resolved, &[Some(RANKS)], MapPolicy::default());
                map_job(&req).nodes.len()
            }),
        ),
        (
            "Slurm node[0000-0999], 10(x1000), slot",
            Box::new(|| {
                let env: HashMap<String, String> = [
                    ("SLURM_JOB_NODELIST", "node[0000-0999]"),
                    ("SLURM_TASKS_PER_NODE", "10(x1000)"),
                ]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
                let resolved = allocation::resolve(&allocation::AllocationRequest {
                    env: &env,
                    local: local(),
                    hwtcpus: false,
                    apps: vec![AppHosts::default()],
                })
                .expect("allocation");
                let req = MapRequest::new(resolved, &[Some(RANKS)], MapPolicy::default());
                map_job(&req).nodes.len()
            }),
        ),
        (
            "slot, then --display-map=json",
            Box::new(|| {
                let text = hostfile_text(10);
                let hf = Hostfile::parse(Path::new("h"), &text).expect("hostfile");
                let env = HashMap::new();
                let resolved = allocation::resolve(&allocation::AllocationRequest {
                    env: &env,
                    local: local(),
                    hwtcpus: false,
                    apps: vec![AppHosts {
                        hostfile: Some(hf),
                        hosts: Vec::new(),
                    }],
                })
                .expect("allocation");
                let req = MapRequest::new(resolved, &[Some(RANKS)], MapPolicy::default());
                display::json(&map_job(&req)).len()
            }),
        ),
    ];
    println!(
        "rmaps: {RANKS} ranks over {HOSTS} hosts, median and minimum of {RUNS} runs (target: median < {} ms)",
        TARGET.as_millis()
    );
    println!("{:<46} {:>10} {:>10}  target", "case", "median", "min");
    let mut worst = Duration::ZERO;
    for (name, mut f) in cases {
        let (median, min) = time(&mut f);
        worst = worst.max(median);
        println!(
            "{name:<46} {:>8.2}ms {:>8.2}ms  {}",
            median.as_secs_f64() * 1e3,
            min.as_secs_f64() * 1e3,
            if median < TARGET { "ok" } else { "SLOW" }
        );
    }
    println!(
        "slowest median: {:.2} ms ({})",
        worst.as_secs_f64() * 1e3,
        if worst < TARGET {
            "under the 50 ms target"
        } else {
            "OVER the 50 ms target"
        }
    );
}
