//! `--report-bindings` checked against the real binding of the launched
//! processes: every rank prints its rank and the `Cpus_allowed_list` of
//! its own `/proc/self/status`, and that list must be exactly the CPUs
//! marked `B` in the rank's report line (or, for a rank reported as not
//! bound, every CPU mpirun itself may run on).
//!
//! Report lines (stderr, Open MPI v4 format):
//!
//! ```text
//! [host:pid] MCW rank 0 bound to socket 0[core 0[hwt 0]]: [B/.]
//! [host:pid] MCW rank 2 is not bound (or bound to all available processors)
//! ```
//!
//! The map has one `[...]` per package, one `/`-separated group per core
//! and one character per hardware thread, in logical order; logical
//! indexes are turned into OS indexes through the machine's topology (on
//! most machines they coincide). The tests hold on any machine with at
//! least 2 CPUs; those that need 2 cores say so and skip otherwise.

mod common;

use common::*;
use std::collections::BTreeSet;

/// Prints `RANK CPUS_ALLOWED_LIST` from inside each rank.
const PRINT_BINDING: &str =
    "echo $OXMPI_COMM_WORLD_RANK $(grep Cpus_allowed_list /proc/self/status | cut -f2)";

fn topology() -> &'static oxmpi_topology::Topology {
    oxmpi_topology::Topology::local().expect("hwloc reads this machine")
}

fn cores() -> usize {
    topology().num_cores()
}

/// Whether `have` (the 2 CPUs `what` needs); without them the test is
/// skipped with a reason, unless `OXMPI_REQUIRE_CPUS=2` says it must run
/// (CI sets it), and then it fails.
fn two_cpus_or_skip(have: bool, what: &str) -> bool {
    let required = std::env::var("OXMPI_REQUIRE_CPUS").as_deref() == Ok("2");
    assert!(
        have || !required,
        "{what} needs 2 usable CPUs and OXMPI_REQUIRE_CPUS=2"
    );
    if !have {
        eprintln!("skipped: {what} needs 2 usable CPUs");
    }
    have
}

fn hwthreads() -> usize {
    topology().num_hwthreads()
}

fn local_name() -> String {
    gethostname::gethostname().to_string_lossy().into_owned()
}

/// Parses a kernel CPU list (`0-3,8,10-11`).
fn parse_cpu_list(text: &str) -> BTreeSet<usize> {
    let mut set = BTreeSet::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().unwrap(), b.parse().unwrap());
                assert!(a <= b, "bad range {part} in {text}");
                set.extend(a..=b);
            }
            None => {
                set.insert(
                    part.parse()
                        .unwrap_or_else(|_| panic!("bad CPU {part} in {text}")),
                );
            }
        }
    }
    set
}

/// The CPUs this test process (and so mpirun, and an unbound rank) may
/// run on.
fn all_allowed_cpus() -> BTreeSet<usize> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .expect("Cpus_allowed_list in /proc/self/status");
    parse_cpu_list(line)
}

/// One hardware thread of a report map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct MapPu {
    /// Position in the map: the PU's logical index.
    logical: usize,
    package: usize,
    /// Core's logical index over the whole machine.
    core: usize,
    /// Thread's rank within its core.
    thread: usize,
    bound: bool,
}

/// Parses `[B./../..][../..]`.
fn parse_map(map: &str) -> Vec<MapPu> {
    let mut pus = Vec::new();
    let mut package = 0;
    let mut core = 0;
    let mut thread = 0;
    let mut chars = map.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '[' => thread = 0,
            ']' => {
                package += 1;
                core += 1;
                thread = 0;
                if chars.peek().is_some() {
                    assert_eq!(chars.peek(), Some(&'['), "map {map}");
                }
            }
            '/' => {
                core += 1;
                thread = 0;
            }
            'B' | '.' => {
                pus.push(MapPu {
                    logical: pus.len(),
                    package,
                    core,
                    thread,
                    bound: c == 'B',
                });
                thread += 1;
            }
            other => panic!("unexpected {other:?} in map {map}"),
        }
    }
    assert!(map.starts_with('[') && map.ends_with(']'), "map {map}");
    pus
}

/// `0-1`, `0,2`: Open MPI's range list.
fn ranges(sorted: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(",")
}

/// The description a map implies: `socket P[core C[hwt H]]` for every
/// core with a bound thread, separated by `, `.
fn description_of(pus: &[MapPu]) -> String {
    let mut parts = Vec::new();
    let mut cores: Vec<(usize, usize)> = pus
        .iter()
        .filter(|p| p.bound)
        .map(|p| (p.package, p.core))
        .collect();
    cores.dedup();
    for (package, core) in cores {
        let threads: Vec<usize> = pus
            .iter()
            .filter(|p| p.bound && p.core == core)
            .map(|p| p.thread)
            .collect();
        parts.push(format!(
            "socket {package}[core {core}[hwt {}]]",
            ranges(&threads)
        ));
    }
    parts.join(", ")
}

/// A rank's `--report-bindings` line, parsed.
#[derive(Debug)]
struct Report {
    host: String,
    pid: u32,
    rank: u32,
    /// `None` when "not bound"; else the map's hardware threads.
    map: Option<Vec<MapPu>>,
}

impl Report {
    /// OS indexes of the `B` threads.
    fn bound_cpus(&self) -> Option<BTreeSet<usize>> {
        self.map.as_ref().map(|pus| {
            pus.iter()
                .filter(|p| p.bound)
                .map(|p| {
                    topology()
                        .os_index_of(p.logical)
                        .unwrap_or_else(|| panic!("no PU with logical index {}", p.logical))
                })
                .collect()
        })
    }

    /// Logical indexes of the `B` threads.
    fn bound_logical(&self) -> Vec<usize> {
        self.map
            .as_ref()
            .expect("bound")
            .iter()
            .filter(|p| p.bound)
            .map(|p| p.logical)
            .collect()
    }

    /// Logical core indexes with a `B` thread.
    fn bound_cores(&self) -> BTreeSet<usize> {
        self.map
            .as_ref()
            .expect("bound")
            .iter()
            .filter(|p| p.bound)
            .map(|p| p.core)
            .collect()
    }
}

fn parse_report(line: &str) -> Report {
    let rest = line
        .strip_prefix('[')
        .unwrap_or_else(|| panic!("report line {line}"));
    let (id, rest) = rest.split_once("] MCW rank ").unwrap();
    let (host, pid) = id.rsplit_once(':').unwrap();
    let (rank, rest) = rest.split_once(' ').unwrap();
    let rank: u32 = rank.parse().unwrap();
    let map = if rest == "is not bound (or bound to all available processors)" {
        None
    } else {
        let rest = rest
            .strip_prefix("bound to ")
            .unwrap_or_else(|| panic!("report line {line}"));
        let (description, map) = rest.rsplit_once(": ").unwrap();
        let pus = parse_map(map);
        assert_eq!(
            pus.len(),
            hwthreads(),
            "one character per hardware thread: {line}"
        );
        assert_eq!(
            map.matches('[').count(),
            topology().num_packages(),
            "one [...] per package: {line}"
        );
        assert!(pus.iter().any(|p| p.bound), "bound to nothing: {line}");
        assert!(
            !pus.iter().all(|p| p.bound),
            "bound to everything is reported as not bound: {line}"
        );
        assert_eq!(
            description,
            description_of(&pus),
            "the description agrees with the map: {line}"
        );
        Some(pus)
    };
    Report {
        host: host.to_string(),
        pid: pid.parse().unwrap(),
        rank,
        map,
    }
}

/// One rank: what mpirun reported and what the rank found itself bound to.
#[derive(Debug)]
struct Rank {
    report: Report,
    actual: BTreeSet<usize>,
}

/// `command(args)` without anything from a real batch job or the caller's
/// MCA parameters in mpirun's environment.
fn scrubbed_command(args: &[&str]) -> (std::process::Command, String) {
    let (mut cmd, marker) = command(args);
    for (key, _) in std::env::vars() {
        if key.starts_with("SLURM_") || key.starts_with("OXMPI_MCA_") {
            cmd.env_remove(&key);
        }
    }
    (cmd, marker)
}

/// Runs `mpirun --report-bindings OPTIONS -n N sh -c PRINT_BINDING` and
/// checks that every rank's report is its real binding. Returns the ranks
/// in rank order.
fn run_and_check(options: &[&str], n: usize) -> Vec<Rank> {
    let n_text = n.to_string();
    let mut args = vec!["--report-bindings"];
    args.extend_from_slice(options);
    args.extend_from_slice(&["-n", &n_text, "sh", "-c", PRINT_BINDING]);
    let (mut cmd, marker) = scrubbed_command(&args);
    let child = cmd.spawn().expect("mpirun starts");
    let mpirun_pid = child.id();
    let run = wait_with_timeout(child, HARD_TIMEOUT, &marker);
    assert_no_survivors(&marker);
    assert_eq!(
        run.code(),
        0,
        "mpirun {args:?}\nstdout: {}\nstderr: {}",
        run.stdout,
        run.stderr
    );

    let mut actual = vec![None; n];
    for line in run.stdout.lines() {
        let (rank, list) = line
            .split_once(' ')
            .unwrap_or_else(|| panic!("rank output {line:?}"));
        let rank: usize = rank.parse().unwrap();
        assert!(actual[rank].is_none(), "rank {rank} printed twice");
        actual[rank] = Some(parse_cpu_list(list));
    }
    let mut reports: Vec<Option<Report>> = (0..n).map(|_| None).collect();
    for line in run.stderr.lines() {
        let report = parse_report(line);
        assert_eq!(report.host, local_name(), "{line}");
        assert_eq!(report.pid, mpirun_pid, "mpirun's pid: {line}");
        let r = report.rank as usize;
        assert!(r < n, "{line}");
        assert!(reports[r].is_none(), "rank {r} reported twice");
        reports[r] = Some(report);
    }

    let all = all_allowed_cpus();
    let mut ranks = Vec::new();
    for (r, (report, actual)) in reports.into_iter().zip(actual).enumerate() {
        let report = report.unwrap_or_else(|| panic!("no report for rank {r}: {}", run.stderr));
        let actual = actual.unwrap_or_else(|| panic!("rank {r} printed nothing: {}", run.stdout));
        match report.bound_cpus() {
            Some(expected) => assert_eq!(
                actual, expected,
                "rank {r}: Cpus_allowed_list against the B of its report {report:?}"
            ),
            None => assert_eq!(
                actual, all,
                "rank {r} is reported not bound: it may run on every CPU"
            ),
        }
        ranks.push(Rank { report, actual });
    }
    ranks
}

fn assert_disjoint(ranks: &[Rank]) {
    for (i, a) in ranks.iter().enumerate() {
        for b in &ranks[i + 1..] {
            assert!(
                a.actual.is_disjoint(&b.actual),
                "ranks {} and {} share CPUs: {:?} {:?}",
                a.report.rank,
                b.report.rank,
                a.actual,
                b.actual
            );
        }
    }
}

/// Each rank's `B`s fill exactly one core of the map.
fn assert_one_whole_core_each(ranks: &[Rank]) {
    for rank in ranks {
        let pus = rank.report.map.as_ref().expect("bound to a core");
        let cores = rank.report.bound_cores();
        assert_eq!(cores.len(), 1, "one core: {rank:?}");
        let core = *cores.iter().next().unwrap();
        assert!(
            pus.iter().filter(|p| p.core == core).all(|p| p.bound),
            "the whole core: {rank:?}"
        );
    }
}

/// Without `--bind-to`: 2 ranks on a host with at least 2 cores are bound
/// to a core each (Open MPI's default for up to 2 ranks).
#[test]
fn default_binding_of_two_ranks() {
    let ranks = run_and_check(&[], 2);
    if cores() < 2 {
        // 2 ranks on a 1-core host oversubscribe it: not bound.
        assert!(ranks.iter().all(|r| r.report.map.is_none()), "{ranks:?}");
        return;
    }
    assert_one_whole_core_each(&ranks);
    assert_disjoint(&ranks);
    // In placement order: rank 0 on the first core, rank 1 on the second.
    assert_eq!(ranks[0].report.bound_cores(), BTreeSet::from([0]));
    assert_eq!(ranks[1].report.bound_cores(), BTreeSet::from([1]));
    // One rank alone is bound too.
    let ranks = run_and_check(&[], 1);
    assert_one_whole_core_each(&ranks);
}

#[test]
fn bind_to_hwthread() {
    let ranks = run_and_check(&["--bind-to", "hwthread"], 2);
    for rank in &ranks {
        assert_eq!(rank.report.bound_logical().len(), 1, "{rank:?}");
        assert_eq!(rank.actual.len(), 1, "{rank:?}");
    }
    assert_disjoint(&ranks);
}

#[test]
fn bind_to_core() {
    if !two_cpus_or_skip(cores() >= 2, "--bind-to core with 2 ranks") {
        return;
    }
    let ranks = run_and_check(&["--bind-to", "core"], 2);
    assert_one_whole_core_each(&ranks);
    assert_disjoint(&ranks);
}

/// `--cpu-set 1`: both ranks confined to logical CPU 1.
#[test]
fn cpu_set_confines_the_ranks() {
    let ranks = run_and_check(&["--cpu-set", "1"], 2);
    let cpu1 = topology().os_index_of(1).unwrap();
    for rank in &ranks {
        assert_eq!(rank.report.bound_logical(), [1], "{rank:?}");
        assert_eq!(rank.actual, BTreeSet::from([cpu1]), "{rank:?}");
    }
    // With an explicit --bind-to hwthread too.
    let ranks = run_and_check(
        &["--cpu-set", "1", "--bind-to", "hwthread:overload-allowed"],
        2,
    );
    for rank in &ranks {
        assert_eq!(rank.actual, BTreeSet::from([cpu1]), "{rank:?}");
    }
}

#[test]
fn bind_to_none_leaves_every_cpu() {
    let ranks = run_and_check(&["--bind-to", "none"], 2);
    for rank in &ranks {
        assert!(rank.report.map.is_none(), "{rank:?}");
        assert_eq!(rank.actual, all_allowed_cpus());
    }
}

/// More ranks than cores (the local host's slots) oversubscribe the host:
/// by default the ranks are not bound.
#[test]
fn oversubscribed_ranks_are_not_bound() {
    let ranks = run_and_check(&[], cores() + 1);
    for rank in &ranks {
        assert!(rank.report.map.is_none(), "{rank:?}");
        assert_eq!(rank.actual, all_allowed_cpus());
    }
}

/// `--bind-to package` and `numa`: whatever is reported is what is
/// applied (on a one-package machine, "not bound").
#[test]
fn bind_to_package_and_numa_report_what_is_applied() {
    for what in ["package", "numa"] {
        let ranks = run_and_check(&["--bind-to", what], 2);
        if topology().num_packages() == 1 && what == "package" {
            assert!(ranks.iter().all(|r| r.report.map.is_none()), "{ranks:?}");
        }
    }
}

/// A bad option launches nothing: exit 1, one `mpirun: error:` line, no
/// report line, no rank output.
fn refused(options: &[&str]) -> String {
    let mut args = vec!["--report-bindings"];
    args.extend_from_slice(options);
    args.extend_from_slice(&["-n", "2", "sh", "-c", "echo launched"]);
    let (mut cmd, marker) = scrubbed_command(&args);
    let run = wait_with_timeout(cmd.spawn().expect("mpirun starts"), HARD_TIMEOUT, &marker);
    assert_no_survivors(&marker);
    assert_eq!(run.code(), 1, "mpirun {args:?}: {}", run.stderr);
    assert_eq!(run.stdout, "", "a rank was launched");
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    run.stderr
        .trim_end()
        .strip_prefix("mpirun: error: ")
        .unwrap_or_else(|| panic!("not an mpirun error: {}", run.stderr))
        .to_string()
}

#[test]
fn bind_to_bogus_is_refused() {
    assert_eq!(
        refused(&["--bind-to", "bogus"]),
        "--bind-to bogus: unknown --bind-to value `bogus`: expected one of none, hwthread, core, package (or socket), numa"
    );
    assert_eq!(
        refused(&["--bind-to", "core:sometimes"]),
        "--bind-to core:sometimes: unknown --bind-to qualifier `sometimes`: expected overload-allowed or if-supported (as in `core:overload-allowed,if-supported`)"
    );
}

#[test]
fn cpu_set_out_of_range_is_refused() {
    let n = hwthreads();
    let expected = |cpu: usize| {
        format!(
            "cannot bind the ranks on {}: --cpu-set names logical CPU {cpu}, but this node has {n} (0-{})",
            local_name(),
            n - 1
        )
    };
    assert_eq!(refused(&["--cpu-set", &n.to_string()]), expected(n));
    if n <= 7 {
        assert_eq!(refused(&["--cpu-set", "7"]), expected(7));
    }
    // Also when nothing would be bound.
    assert_eq!(
        refused(&["--cpu-set", &n.to_string(), "--bind-to", "none"]),
        expected(n)
    );
    assert_eq!(
        refused(&["--cpu-set", "x"]),
        "--cpu-set x: bad CPU list token `x`: expected a CPU index like `3` or a range like `0-7`"
    );
    assert_eq!(
        refused(&["--cpu-set", "1-0"]),
        "--cpu-set 1-0: bad CPU list token `1-0`: the range's start is above its end"
    );
}

/// Started under `taskset -c 1`, mpirun keeps its ranks within CPU 1 (it
/// never binds a rank to a CPU it may not use itself).
#[test]
fn ranks_stay_within_mpiruns_own_cpus() {
    let taskset = std::process::Command::new("taskset")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        taskset,
        "taskset (util-linux) is needed to start mpirun on one CPU"
    );
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if !two_cpus_or_skip(cpus >= 2, "starting mpirun under taskset -c 1") {
        return;
    }
    use std::os::unix::process::CommandExt;
    let marker = format!("oxmpi-test-taskset-{}", std::process::id());
    let mut cmd = std::process::Command::new("taskset");
    cmd.args(["-c", "1"])
        .arg(mpirun_path())
        .args([
            "-n",
            "2",
            "sh",
            "-c",
            "grep Cpus_allowed_list /proc/self/status | cut -f2",
        ])
        .env("OXMPI_TEST_MARKER", &marker)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0);
    let run = wait_with_timeout(cmd.spawn().unwrap(), HARD_TIMEOUT, &marker);
    assert_no_survivors(&marker);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(run.sorted_lines(), vec!["1", "1"]);
}
