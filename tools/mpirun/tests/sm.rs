//! The shared-memory btl end to end: real jobs under mpirun on this host
//! running the `sm_check` scenarios (oxmpi/examples), every byte checked.
//!
//! Every job runs with `btl_base_verbose 40` and `pml_base_verbose 40`, so
//! its standard error shows each rank's btls, each sm segment's path and
//! sizes, and the route from every rank to every rank it talks to; the
//! tests check from these that sm (and not tcp) carried what they meant it
//! to, and afterwards that the job left nothing behind: its directory and
//! the segments in it are gone, and no directory of that mpirun remains
//! in the directory it was made in or in /dev/shm.
//!
//! The jobs run one at a time: they are sized for a 2-core machine, most
//! of them oversubscribed.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Options every job gets: the logs the checks read.
const VERBOSE: [&str; 6] = [
    "--mca",
    "btl_base_verbose",
    "40",
    "--mca",
    "pml_base_verbose",
    "40",
];

/// Only sm (and self) may carry messages.
const SM_ONLY: [&str; 3] = ["--mca", "btl", "self,sm"];

/// The smallest fast boxes (256 bytes: fragments of at most 80 payload
/// bytes fit) and receive queues (16 entries), which senders keep finding
/// full.
const TINY: [&str; 6] = [
    "--mca",
    "btl_sm_fbox_size",
    "256",
    "--mca",
    "btl_sm_fifo_size",
    "16",
];

/// Four fragment buffers per process.
const FEW_BUFFERS: [&str; 3] = ["--mca", "btl_sm_free_list_max", "4"];

/// The sizes the all-pairs jobs exchange: every path of sm (fast box,
/// queue, eager, rendezvous in one and in several fragments, single
/// copy) up to 4 MiB + 3.
const PAIR_SIZES: &str = "0,1,64,81,2001,4097,32769,262147,1048581,4194307";

/// What each rank of `sm_check sizes` prints when every size arrived.
const SIZES_OK: &str = "sizes ok (34 sizes from 0 to 67108864 bytes, each both ways)";

fn sm_check() -> String {
    built("sm_check").display().to_string()
}

/// What one job printed, and how long it took.
struct Job {
    run: Run,
    elapsed: Duration,
}

impl Job {
    fn stdout(&self) -> &str {
        &self.run.stdout
    }

    fn stderr(&self) -> &str {
        &self.run.stderr
    }

    /// Fails with the job's output unless it exited 0 with no panic.
    fn assert_ok(&self) {
        assert_eq!(
            self.run.code(),
            0,
            "job failed\nstdout:\n{}\nstderr:\n{}",
            self.stdout(),
            self.stderr()
        );
        assert!(
            !self.stderr().contains("panicked"),
            "a panic was reported:\n{}",
            self.stderr()
        );
    }

    /// The lines of standard output that end with `text`.
    fn count_ending(&self, text: &str) -> usize {
        self.stdout().lines().filter(|l| l.ends_with(text)).count()
    }

    /// Asserts that `ranks` lines of the output end with `text` (one per
    /// rank that reports it).
    #[track_caller]
    fn assert_reported(&self, text: &str, ranks: usize) {
        assert_eq!(self.count_ending(text), ranks, "{}", self.stdout());
    }

    /// How rank `from` reaches rank `to` ("sm (weight 1.00, eager)"), as
    /// the pml logged it.
    fn route(&self, from: u32, to: u32) -> Option<&str> {
        let needle = format!("pml:ob1: rank {from} reaches rank {to} through ");
        self.stderr()
            .lines()
            .find_map(|l| l.split_once(&needle).map(|(_, rest)| rest))
    }

    /// Fails unless every route among `ranks` goes through sm, and, with
    /// `to_self`, each rank's route to itself through self.
    fn assert_routes_through_sm(&self, ranks: &[u32], to_self: bool) {
        for &a in ranks {
            for &b in ranks {
                if a == b && !to_self {
                    continue;
                }
                let want = if a == b { "self (" } else { "sm (" };
                match self.route(a, b) {
                    Some(route) => assert!(
                        route.starts_with(want),
                        "rank {a} reaches rank {b} through {route}, expected {want}...\n{}",
                        self.stderr()
                    ),
                    None => panic!("no route from rank {a} to rank {b}:\n{}", self.stderr()),
                }
            }
        }
    }

    /// Fails unless the pml logged at least one route to another rank,
    /// and every such route goes through sm.
    fn assert_every_peer_route_through_sm(&self) {
        let routes: Vec<&str> = self
            .stderr()
            .lines()
            .filter_map(|l| l.split_once("pml:ob1: rank ").map(|(_, rest)| rest))
            .filter(|rest| {
                rest.split_once(" reaches rank ")
                    .and_then(|(a, rest)| Some((a, rest.split_once(" through ")?.0)))
                    .is_some_and(|(a, b)| a != b)
            })
            .collect();
        assert!(!routes.is_empty(), "no route logged:\n{}", self.stderr());
        for route in routes {
            assert!(
                route.contains(" through sm ("),
                "rank {route}, expected sm\n{}",
                self.stderr()
            );
        }
    }

    /// The sm segment lines (`rank R: segment PATH (SIZES), MECHANISM`):
    /// (rank, path, rest of the line).
    fn segments(&self) -> Vec<(u32, PathBuf, String)> {
        self.stderr()
            .lines()
            .filter_map(|l| {
                let rest = l.split_once("btl:sm: rank ")?.1;
                let (rank, rest) = rest.split_once(": segment ")?;
                let (path, rest) = rest.split_once(" (")?;
                Some((rank.parse().ok()?, PathBuf::from(path), rest.to_string()))
            })
            .collect()
    }

    /// Fails unless exactly the ranks `ranks` made an sm segment, each
    /// described by a line containing every text of `described`.
    fn assert_segments(&self, ranks: &[u32], described: &[&str]) {
        let segments = self.segments();
        let mut made: Vec<u32> = segments.iter().map(|s| s.0).collect();
        made.sort_unstable();
        assert_eq!(made, ranks, "ranks with an sm segment:\n{}", self.stderr());
        for (rank, _, line) in &segments {
            for text in described {
                assert!(
                    line.contains(text),
                    "rank {rank}'s segment is not described with \"{text}\": {line}"
                );
            }
        }
    }
}

/// The user id job directories are named after.
fn uid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// Entries of `dir` whose names start with `prefix`.
fn entries_starting(dir: &Path, prefix: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(prefix))
        .collect()
}

/// Fails if the job of mpirun `pid` left anything: a segment file, its
/// job directory, or any directory of that mpirun in the directory job
/// directories are made in, in /dev/shm or in the temporary directory.
fn assert_nothing_left(job: &Job, pid: u32) {
    let prefix = format!("oxmpi-{}-{pid}-", uid());
    let mut places = vec![PathBuf::from("/dev/shm"), std::env::temp_dir()];
    for (rank, segment, _) in job.segments() {
        let dir = segment.parent().unwrap_or_else(|| {
            panic!(
                "rank {rank}'s segment {} has no directory",
                segment.display()
            )
        });
        let name = dir.file_name().unwrap_or_default().to_string_lossy();
        assert!(
            name.starts_with(&prefix),
            "rank {rank}'s segment {} is not in the job directory of mpirun {pid} ({prefix}<job id>)",
            segment.display()
        );
        assert!(
            !segment.exists(),
            "rank {rank}'s segment {} outlived the job",
            segment.display()
        );
        assert!(
            !dir.exists(),
            "the job directory {} outlived the job",
            dir.display()
        );
        if let Some(base) = dir.parent() {
            places.push(base.to_path_buf());
        }
    }
    for place in places {
        let left = entries_starting(&place, &prefix);
        assert!(
            left.is_empty(),
            "the job of mpirun {pid} left {left:?} in {}",
            place.display()
        );
    }
}

/// Runs `mpirun VERBOSE args` to completion (one job at a time), then
/// checks that no process and no file of the job is left.
fn job(args: &[&str]) -> Job {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut all: Vec<&str> = VERBOSE.to_vec();
    all.extend(args);
    let (mut cmd, marker) = command(&all);
    let start = Instant::now();
    let child = cmd.spawn().expect("mpirun starts");
    let pid = child.id();
    let run = wait_with_timeout(child, HARD_TIMEOUT, &marker);
    let elapsed = start.elapsed();
    eprintln!("{elapsed:.1?}: mpirun {}", args.join(" "));
    assert_no_survivors(&marker);
    let job = Job { run, elapsed };
    assert_nothing_left(&job, pid);
    job
}

/// `sm_check sizes` on 2 ranks over self,sm with `extra` options; checks
/// both ranks' reports, the routes, and the segments' descriptions.
fn sizes_over_sm(extra: &[&str], described: &[&str]) {
    let program = sm_check();
    let mut args: Vec<&str> = vec!["-n", "2"];
    args.extend(SM_ONLY);
    args.extend(extra);
    args.extend([program.as_str(), "sizes"]);
    let job = job(&args);
    job.assert_ok();
    job.assert_reported(SIZES_OK, 2);
    job.assert_routes_through_sm(&[0, 1], false);
    job.assert_segments(&[0, 1], described);
}

const CMA: &str = "one copy through cross-memory attach";
const FRAGMENTS: &str = "fragments through the segment";

#[test]
fn every_size_from_0_bytes_to_64_mib_arrives_intact_with_single_copy() {
    sizes_over_sm(
        &["--mca", "btl_sm_single_copy_mechanism", "cma"],
        &[
            "one copy through cross-memory attach (gets of 65536 B and more shared with the sender)",
            "32 fast boxes of 65536 B, 4096 queue entries, 256 fragment buffers of 32768 B",
        ],
    );
}

#[test]
fn every_size_arrives_intact_when_the_receiver_copies_alone() {
    sizes_over_sm(
        &[
            "--mca",
            "btl_sm_single_copy_mechanism",
            "cma",
            "--mca",
            "btl_sm_shared_get_min",
            "0",
        ],
        &["one copy through cross-memory attach (the receiver copies alone)"],
    );
}

#[test]
fn every_size_arrives_intact_when_every_get_is_shared_with_the_sender() {
    sizes_over_sm(
        &[
            "--mca",
            "btl_sm_single_copy_mechanism",
            "cma",
            "--mca",
            "btl_sm_shared_get_min",
            "1",
        ],
        &["one copy through cross-memory attach (gets of 1 B and more shared with the sender)"],
    );
}

#[test]
fn every_size_from_0_bytes_to_64_mib_arrives_intact_through_the_segment() {
    sizes_over_sm(
        &["--mca", "btl_sm_single_copy_mechanism", "none"],
        &[FRAGMENTS],
    );
}

#[test]
fn every_size_arrives_intact_when_boxes_queues_and_buffers_are_tiny() {
    // Through the segment with 4 fragment buffers (senders wait for a
    // free buffer) and with 64 buffers behind a 16-entry queue (senders
    // wait for room in the queue); with single copy, the small and eager
    // messages through the tiny boxes and queue.
    for (mechanism, buffers, described) in [
        ("none", "4", FRAGMENTS),
        ("none", "64", FRAGMENTS),
        ("cma", "4", CMA),
    ] {
        let mut extra = vec!["--mca", "btl_sm_single_copy_mechanism", mechanism];
        extra.extend(TINY);
        extra.extend(["--mca", "btl_sm_free_list_max", buffers]);
        let tiny = format!(
            "32 fast boxes of 256 B, 16 queue entries, {buffers} fragment buffers of 32768 B"
        );
        sizes_over_sm(&extra, &[described, &tiny]);
    }
}

/// `sm_check flood COUNT` on 7 ranks over self,sm with `extra` options.
fn flood(count: usize, extra: &[&str]) -> Job {
    let program = sm_check();
    let count_text = count.to_string();
    let mut args: Vec<&str> = vec!["-n", "7", "--oversubscribe"];
    args.extend(SM_ONLY);
    args.extend(extra);
    args.extend([program.as_str(), "flood", &count_text]);
    let job = job(&args);
    job.assert_ok();
    let total = 6 * count;
    job.assert_reported(
        &format!("rank 0: flood ok ({total} messages from 6 ranks, each sender's order kept)"),
        1,
    );
    job.assert_reported(&format!("flood ok ({count} messages sent to rank 0)"), 6);
    for sender in 1..7 {
        let route = job.route(sender, 0).unwrap_or_default();
        assert!(
            route.starts_with("sm ("),
            "rank {sender} reaches rank 0 through \"{route}\"\n{}",
            job.stderr()
        );
    }
    job
}

#[test]
fn six_ranks_flood_rank_0_and_every_senders_order_holds() {
    flood(3000, &[]);
}

#[test]
fn a_flood_through_two_fast_boxes_and_a_16_entry_queue_arrives_in_order() {
    // Two boxes for six senders: four of them use the tiny queue only.
    let mut extra: Vec<&str> = TINY.to_vec();
    extra.extend(FEW_BUFFERS);
    extra.extend(["--mca", "btl_sm_fbox_max", "2"]);
    let job = flood(3000, &extra);
    job.assert_segments(
        &[0, 1, 2, 3, 4, 5, 6],
        &["2 fast boxes of 256 B, 16 queue entries, 4 fragment buffers"],
    );
}

#[test]
fn all_pairs_of_8_oversubscribed_ranks_exchange_every_size() {
    let program = sm_check();
    for mechanism in ["cma", "none"] {
        let mut args: Vec<&str> = vec!["-n", "8", "--oversubscribe"];
        args.extend(SM_ONLY);
        args.extend(["--mca", "btl_sm_single_copy_mechanism", mechanism]);
        args.extend([program.as_str(), "allpairs", PAIR_SIZES]);
        let job = job(&args);
        job.assert_ok();
        // Every rank has mapped every segment by the closing round, so
        // their files are gone while the job still runs.
        job.assert_reported(
            "allpairs ok (10 sizes with each of 8 ranks); 0 sm segment files in the job directory",
            8,
        );
        job.assert_routes_through_sm(&[0, 1, 2, 3, 4, 5, 6, 7], true);
        job.assert_segments(
            &[0, 1, 2, 3, 4, 5, 6, 7],
            &[if mechanism == "cma" { CMA } else { FRAGMENTS }],
        );
        // On a machine of fewer than 8 cores, idle ranks yield to the
        // busy ones (mpirun sets mpi_yield_when_idle on an oversubscribed
        // node): the job takes seconds, far from the hard timeout.
        assert!(
            job.elapsed < HARD_TIMEOUT / 3,
            "8 ranks with {mechanism} took {:?}",
            job.elapsed
        );
    }
}

#[test]
fn a_rank_without_sm_is_reached_through_tcp_and_the_others_through_sm() {
    // Rank 2 (the second program of the MPMD job) runs self,tcp only;
    // ranks 0, 1 and 3 run every btl.
    let program = sm_check();
    let sizes = "0,100,5000,100000,1048581";
    let job = job(&[
        "--mca",
        "btl_tcp_if_include",
        "lo",
        "-n",
        "2",
        &program,
        "allpairs",
        sizes,
        ":",
        "-n",
        "1",
        "-x",
        "OXMPI_MCA_btl=self,tcp",
        &program,
        "allpairs",
        sizes,
        ":",
        "-n",
        "1",
        &program,
        "allpairs",
        sizes,
    ]);
    job.assert_ok();
    // Rank 2 maps no segment, so the three segments keep their files
    // until their processes end.
    job.assert_reported(
        "allpairs ok (5 sizes with each of 4 ranks); 3 sm segment files in the job directory",
        4,
    );
    for (rank, btls) in [
        (0, "self, sm, tcp"),
        (1, "self, sm, tcp"),
        (2, "self, tcp"),
        (3, "self, sm, tcp"),
    ] {
        let line = format!("rank {rank} of 4 uses btl {btls}\n");
        assert!(job.stderr().contains(&line), "{line}{}", job.stderr());
    }
    job.assert_routes_through_sm(&[0, 1, 3], true);
    for other in [0, 1, 3] {
        for (from, to) in [(2, other), (other, 2)] {
            let route = job.route(from, to).unwrap_or_default();
            assert!(
                route.starts_with("tcp "),
                "rank {from} reaches rank {to} through \"{route}\", expected tcp\n{}",
                job.stderr()
            );
        }
    }
    assert_eq!(job.route(2, 2).map(|r| r.starts_with("self (")), Some(true));
    job.assert_segments(&[0, 1, 3], &[CMA]);
}

#[test]
fn threads_of_a_multiple_level_rank_talk_at_once_over_sm() {
    let program = sm_check();
    // Two ranks with the defaults; then two pairs, oversubscribed,
    // through the tiny segment.
    let mut tight: Vec<&str> = vec![
        "--oversubscribe",
        "--mca",
        "btl_sm_single_copy_mechanism",
        "none",
    ];
    tight.extend(TINY);
    tight.extend(FEW_BUFFERS);
    for (n, iterations, extra) in [(2u32, "400", &[][..]), (4, "150", &tight[..])] {
        let n_text = n.to_string();
        let mut args: Vec<&str> = vec!["-n", &n_text];
        args.extend(SM_ONLY);
        args.extend(extra);
        args.extend([program.as_str(), "threads", iterations]);
        let job = job(&args);
        job.assert_ok();
        for rank in 0..n {
            let line = format!(
                "rank {rank}: threads ok (4 threads, {iterations} messages each way per thread, with rank {})",
                rank ^ 1
            );
            assert_eq!(
                job.stdout().lines().filter(|l| *l == line).count(),
                1,
                "{line}\n{}",
                job.stdout()
            );
        }
        for pair in (0..n).step_by(2) {
            assert!(
                job.route(pair, pair + 1)
                    .is_some_and(|r| r.starts_with("sm (")),
                "{}",
                job.stderr()
            );
        }
    }
}

#[test]
fn by_default_peers_on_this_host_use_sm_and_self_tcp_still_works() {
    const ALLPAIRS_3_OK: &str =
        "allpairs ok (3 sizes with each of 3 ranks); 0 sm segment files in the job directory";
    let program = sm_check();
    let sizes = "0,3000,70000";
    let job = job(&["-n", "3", &program, "allpairs", sizes]);
    job.assert_ok();
    job.assert_reported(ALLPAIRS_3_OK, 3);
    job.assert_routes_through_sm(&[0, 1, 2], true);
    assert!(!job.stderr().contains("through tcp"), "{}", job.stderr());
    job.assert_segments(&[0, 1, 2], &[CMA]);

    let mut args: Vec<&str> = TCP.to_vec();
    args.extend(["-n", "3", &program, "allpairs", sizes]);
    let job = self::job(&args);
    job.assert_ok();
    job.assert_reported(ALLPAIRS_3_OK, 3);
    for a in 0..3 {
        for b in 0..3 {
            let route = job.route(a, b).unwrap_or_default();
            let want = if a == b { "self (" } else { "tcp " };
            assert!(
                route.starts_with(want),
                "rank {a} reaches rank {b} through \"{route}\", expected {want}\n{}",
                job.stderr()
            );
        }
    }
    job.assert_segments(&[], &[]);
}

/// `p2p_check SCENARIO` (core/mpi/examples) on `n` ranks over self,sm
/// with `mechanism`.
fn p2p_check_over_sm(n: &str, mechanism: &str, scenario: &str) -> Job {
    let program = built("p2p_check").display().to_string();
    let mut args: Vec<&str> = vec!["-n", n];
    args.extend(SM_ONLY);
    args.extend(["--mca", "btl_sm_single_copy_mechanism", mechanism]);
    args.extend([program.as_str(), scenario]);
    job(&args)
}

#[test]
fn the_point_to_point_checks_pass_over_sm() {
    // Wildcard receives, 10,000 unexpected messages, truncation of eager
    // and rendezvous messages, synchronous sends, a stream of large
    // messages: each with and without single copy.
    for mechanism in ["cma", "none"] {
        for (n, scenario, reports) in [
            (
                "4",
                "wildcard",
                "rank 0: wildcard ok (600 messages in order)",
            ),
            ("2", "flood", "rank 0: flood ok (10000 unexpected messages)"),
            ("2", "truncate", "rank 0: truncate ok"),
            ("2", "ssend", "completed only after the receive"),
            ("2", "stream", "rank 1: stream ok"),
        ] {
            let job = p2p_check_over_sm(n, mechanism, scenario);
            job.assert_ok();
            assert!(
                job.stdout().contains(reports),
                "{scenario} with {mechanism}:\n{}\n{}",
                job.stdout(),
                job.stderr()
            );
            job.assert_every_peer_route_through_sm();
        }
    }
}

#[test]
fn a_rank_killed_during_a_large_transfer_ends_the_job_and_leaves_nothing() {
    // Rank 1 kills itself while rank 0 sends it 64 MiB messages; `job`
    // checks that the segments and the job directory are gone all the
    // same.
    for mechanism in ["cma", "none"] {
        let job = p2p_check_over_sm("2", mechanism, "killed");
        assert_ne!(job.run.code(), 0, "{}", job.stderr());
        assert!(
            job.stderr().contains("rank 1") && job.stderr().contains("SIGKILL"),
            "the report names the rank and the signal:\n{}",
            job.stderr()
        );
        job.assert_segments(&[0, 1], &[]);
        assert!(job.elapsed < HARD_TIMEOUT / 2, "{:?}", job.elapsed);
    }
}

#[test]
fn the_old_name_vader_selects_sm_and_its_parameters_with_one_note() {
    let program = sm_check();
    let job = job(&[
        "-n",
        "2",
        "--mca",
        "btl",
        "self,vader",
        "--mca",
        "btl_vader_single_copy_mechanism",
        "none",
        program.as_str(),
        "sizes",
    ]);
    job.assert_ok();
    job.assert_routes_through_sm(&[0, 1], false);
    job.assert_segments(&[0, 1], &[FRAGMENTS]);
    let notes = job
        .stderr()
        .matches("btl component \"vader\" is now called \"sm\"")
        .count();
    assert_eq!(notes, 1, "{}", job.stderr());
    assert!(
        job.stderr()
            .contains("btl_vader_single_copy_mechanism (set by --mca btl_vader_single_copy_mechanism on the command line) is deprecated; use btl_sm_single_copy_mechanism"),
        "{}",
        job.stderr()
    );
    assert!(
        !job.stderr().contains("asks for capabilities"),
        "{}",
        job.stderr()
    );
}

#[test]
fn a_shared_get_does_not_wait_for_a_sender_that_computes() {
    // The receiver offers half of the 4 MiB get to the sender, which is
    // asleep for 3 s: the receiver takes the half back and copies it.
    let program = sm_check();
    let job = job(&[
        "-n",
        "2",
        "--mca",
        "btl",
        "self,sm",
        "--mca",
        "btl_sm_shared_get_min",
        "1",
        program.as_str(),
        "busy",
        "3000",
    ]);
    job.assert_ok();
    let line = job
        .stdout()
        .lines()
        .find(|l| l.contains("busy ok (received"))
        .unwrap_or_else(|| panic!("no report from rank 1: {}", job.stdout()));
    let millis: u64 = line
        .split("in ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unreadable report: {line}"));
    assert!(
        millis < 1500,
        "the receive waited for the computing sender ({millis} ms of its 3000): {line}"
    );
}

/// `deny_cma` (tests/c/deny_cma.c), compiled for one test (removed when
/// the value is dropped): runs a program with process_vm_readv/writev
/// refused by a seccomp filter.
struct DenyCma(PathBuf);

impl DenyCma {
    fn build(test: &str) -> DenyCma {
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/deny_cma.c");
        let out =
            std::env::temp_dir().join(format!("oxmpi-deny-cma-{}-{test}", std::process::id()));
        let status = std::process::Command::new("cc")
            .arg("-O2")
            .arg("-o")
            .arg(&out)
            .arg(&source)
            .status()
            .expect("cc runs (the C compiler Rust links with)");
        assert!(status.success(), "cc failed on {}", source.display());
        DenyCma(out)
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("a UTF-8 temporary path")
    }
}

impl Drop for DenyCma {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

const REFUSED: &str = "single copy through cross-memory attach is not available here (process_vm_readv on this process failed: Operation not permitted";

#[test]
#[cfg_attr(
    not(target_arch = "x86_64"),
    ignore = "deny_cma's seccomp filter knows the x86_64 system call numbers only"
)]
fn single_copy_refused_by_a_seccomp_filter_falls_back_to_the_segment() {
    let deny = DenyCma::build("both");
    let program = sm_check();
    let mut args: Vec<&str> = vec!["-n", "2"];
    args.extend(SM_ONLY);
    args.extend([deny.path(), program.as_str(), "sizes"]);
    let job = job(&args);
    job.assert_ok();
    assert_eq!(job.stderr().matches(REFUSED).count(), 2, "{}", job.stderr());
    job.assert_routes_through_sm(&[0, 1], false);
    job.assert_segments(&[0, 1], &[FRAGMENTS]);
    job.assert_reported(SIZES_OK, 2);
}

#[test]
#[cfg_attr(
    not(target_arch = "x86_64"),
    ignore = "deny_cma's seccomp filter knows the x86_64 system call numbers only"
)]
fn a_rank_without_single_copy_and_one_with_it_exchange_every_size() {
    // Rank 1 cannot use cross-memory attach: rank 0's large messages to it
    // (announced for a get) are asked for in fragments instead.
    let deny = DenyCma::build("one");
    let program = sm_check();
    let mut args: Vec<&str> = SM_ONLY.to_vec();
    args.extend(["-n", "1", program.as_str(), "sizes", ":", "-n", "1"]);
    args.extend([deny.path(), program.as_str(), "sizes"]);
    let job = job(&args);
    job.assert_ok();
    assert_eq!(job.stderr().matches(REFUSED).count(), 1, "{}", job.stderr());
    job.assert_routes_through_sm(&[0, 1], false);
    let described: Vec<(u32, bool)> = job
        .segments()
        .iter()
        .map(|(rank, _, line)| (*rank, line.contains(FRAGMENTS)))
        .collect();
    assert!(
        described.contains(&(0, false)) && described.contains(&(1, true)),
        "{described:?}"
    );
    job.assert_reported(SIZES_OK, 2);
}
