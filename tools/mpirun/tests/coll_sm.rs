//! coll sm end to end: real jobs under mpirun running the `coll_check` and
//! `comm_check` examples (oxmpi/examples) with sm serving the collectives
//! of every communicator of two or more processes, on 2, 3 and 5 ranks
//! (oversubscribed, unbound); `coll_base_verbose` shows sm chosen for its
//! operations and its segments mapped; calls beyond `coll_sm_max_size`
//! pass on to tuned and stay right; and no segment file stays in the job
//! directory while the job runs, nor anything after it. The jobs run one
//! at a time, each with mpirun's hard timeout.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One job at a time: they are sized for a 2-core machine.
static SERIAL: Mutex<()> = Mutex::new(());

/// The operations sm provides.
const SM_OPS: [&str; 8] = [
    "barrier",
    "bcast",
    "reduce",
    "allreduce",
    "gather",
    "scatter",
    "allgather",
    "alltoall",
];

/// Asserts the log of a job on `n` ranks shows sm chosen for each of its
/// operations on MPI_COMM_WORLD, with tuned next for the calls it passes
/// on, and every rank mapping the world's segment, with the slots of a
/// node that fits the job or of an oversubscribed one.
fn served_by_sm(run: &Run, n: usize) {
    for op in SM_OPS {
        let line = format!(
            "coll:base: MPI_COMM_WORLD: {op} from sm (priority 40); calls it passes on go to tuned (priority 30)"
        );
        assert_eq!(
            run.stderr.matches(&line).count(),
            n,
            "each rank chose sm for {op}:\n{}",
            run.stderr
        );
    }
    let slots = if n > mca_coll_sm::params::node_cores() {
        "16 slots of 131072 bytes"
    } else {
        "32 slots of 32768 bytes"
    };
    let mapped = run
        .stderr
        .lines()
        .filter(|l| {
            l.contains("coll:sm: MPI_COMM_WORLD: shared segment")
                && l.contains("mapped")
                && l.contains(slots)
        })
        .count();
    assert_eq!(
        mapped, n,
        "each rank mapped the world's segment:\n{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("coll:base: MPI_COMM_SELF: sm declined: MPI_COMM_SELF has one process"),
        "{}",
        run.stderr
    );
}

#[test]
fn sm_serves_every_collective_it_provides_on_2_3_and_5_ranks() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for n in [2, 3, 5] {
        // 65536 i64 elements: 512 KiB per rank, and 2.5 MiB per rank for
        // allgather and alltoall on 5 ranks.
        let run = example_passes(
            n,
            &["--mca", "coll_base_verbose", "40"],
            "coll_check",
            &["0,1,7,64,1000,8192,65536"],
            ": coll ok (",
        );
        served_by_sm(&run, n);
    }
}

#[test]
fn a_parameter_value_sm_refuses_is_said_once_and_the_job_runs_without_sm() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let run = example_passes(
        2,
        &["--mca", "coll_sm_oversubscribed_slot_size", "100"],
        "coll_check",
        &["0,7"],
        ": coll ok (",
    );
    let warning = "warning: coll sm is not used: it could not start: \
                   coll_sm_oversubscribed_slot_size is 100 bytes: it takes 0 (use \
                   coll_sm_slot_size) or at least 4096";
    assert_eq!(run.stderr.matches(warning).count(), 1, "{}", run.stderr);
}

#[test]
fn calls_sm_passes_on_are_right_and_communicators_get_segments_of_their_own() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Every call but barriers passed on.
    example_passes(
        3,
        &["--mca", "coll_sm_max_size", "0"],
        "coll_check",
        &["0,7,1000"],
        ": coll ok (",
    );
    // Small slots: every call in many pieces (also on an oversubscribed
    // node).
    example_passes(
        5,
        &[
            "--mca",
            "coll_sm_slot_size",
            "4096",
            "--mca",
            "coll_sm_oversubscribed_slot_size",
            "0",
        ],
        "coll_check",
        &["0,1,1000,4000"],
        ": coll ok (",
    );
    // dup, split and the rest: each communicator of two or more gets its
    // own segment (also with two threads per rank).
    let run = example_passes(
        4,
        &["--mca", "coll_base_verbose", "40"],
        "comm_check",
        &[],
        ": comm ok (",
    );
    assert!(
        run.stderr
            .lines()
            .any(|l| l.contains("coll:sm: split") && l.contains("shared segment")),
        "{}",
        run.stderr
    );
}

/// Lists the `coll-sm-*` files of `dir`, or `None` when `dir` is gone.
fn segments_in(dir: &Path) -> Option<Vec<String>> {
    let entries = std::fs::read_dir(dir).ok()?;
    Some(
        entries
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with("coll-sm-"))
            .collect(),
    )
}

#[test]
fn no_segment_file_stays_in_the_job_directory_while_the_job_runs_nor_after() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let base = if Path::new("/dev/shm").is_dir() {
        tempfile::tempdir_in("/dev/shm").unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let job_dir: PathBuf = base.path().join("job");
    // Watch the job directory while the job runs: the last listing taken
    // while it existed (the job's end, long after the first collective)
    // must hold no segment file.
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (stop, dir) = (stop.clone(), job_dir.clone());
        std::thread::spawn(move || {
            let mut last_seen: Option<Vec<String>> = None;
            let mut listings = 0usize;
            while !stop.load(Ordering::Acquire) {
                if let Some(names) = segments_in(&dir) {
                    last_seen = Some(names);
                    listings += 1;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            (last_seen, listings)
        })
    };
    let program = built("coll_check").display().to_string();
    let (mut cmd, marker) = command(&[
        "-n",
        "3",
        "--oversubscribe",
        "--bind-to",
        "none",
        "--mca",
        "coll_base_verbose",
        "40",
        &program,
        "0,1,7,64,1000",
    ]);
    cmd.env("OXMPI_TEST_JOB_DIR", &job_dir);
    let child = cmd.spawn().expect("mpirun starts");
    let run = wait_with_timeout(child, HARD_TIMEOUT, &marker);
    stop.store(true, Ordering::Release);
    let (last_seen, listings) = watcher.join().unwrap();
    assert_no_survivors(&marker);
    assert_eq!(run.code(), 0, "{}\n{}", run.stdout, run.stderr);
    let segment = job_dir.join("coll-sm-");
    assert!(
        run.stderr.contains(&segment.display().to_string()),
        "sm made its segment in the job directory:\n{}",
        run.stderr
    );
    assert!(listings > 0, "the job directory was seen while the job ran");
    assert_eq!(
        last_seen,
        Some(vec![]),
        "no segment file in the job directory at the job's end"
    );
    assert!(!job_dir.exists(), "mpirun removed the job directory");
    let left: Vec<String> = std::fs::read_dir(base.path())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(left.is_empty(), "nothing left: {left:?}");
}
