//! Collectives end to end: real jobs under mpirun running the `coll_check`
//! example (oxmpi/examples), which checks every collective of the Rust API
//! on MPI_COMM_WORLD and MPI_COMM_SELF against a sequential reference;
//! the choice of components per communicator and operation
//! (`coll_base_verbose`), and the error when no component provides an
//! operation. The jobs run one at a time, oversubscribed on 2 cores.

mod common;

use common::*;
use std::sync::Mutex;

/// One job at a time: they are sized for a 2-core machine.
static SERIAL: Mutex<()> = Mutex::new(());

fn coll_check() -> String {
    built("coll_check").display().to_string()
}

/// Runs coll_check on `n` ranks with `extra` options and `counts`; asserts
/// every rank reported success and nothing survived.
fn passes(n: usize, extra: &[&str], counts: &str) -> Run {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let program = coll_check();
    let ranks = n.to_string();
    let mut args = vec!["-n", ranks.as_str(), "--oversubscribe"];
    args.extend(extra);
    args.extend([program.as_str(), counts]);
    let run = mpirun(&args);
    assert_eq!(
        run.code(),
        0,
        "coll_check on {n} ranks failed:\n{}\n{}",
        run.stdout,
        run.stderr
    );
    let ok = run
        .stdout
        .lines()
        .filter(|l| l.contains(": coll ok ("))
        .count();
    assert_eq!(ok, n, "every rank reports success:\n{}", run.stdout);
    assert_no_survivors(&run.marker);
    run
}

#[test]
fn every_collective_is_right_on_1_to_8_ranks() {
    for n in [1, 2, 3, 4, 5, 8] {
        passes(n, &[], "0,1,7,64,1000,65536");
    }
}

#[test]
fn every_collective_is_right_with_1_mib_per_rank() {
    // 131072 i64 elements: 1 MiB per rank (alltoall and allgather move
    // `size` MiB per rank).
    for n in [2, 5] {
        passes(n, &[], "131072");
    }
}

#[test]
fn every_collective_is_right_over_tcp_and_with_basic_alone() {
    // Without sm, so every collective's messages go over tcp.
    passes(
        3,
        &[&TCP[..], &["--mca", "coll", "^sm"]].concat(),
        "0,1,1000",
    );
    // basic's linear and logarithmic algorithms.
    for crossover in ["100", "2"] {
        passes(
            5,
            &[
                "--mca",
                "coll",
                "^tuned,sm",
                "--mca",
                "coll_basic_crossover",
                crossover,
            ],
            "0,3,1000",
        );
    }
}

#[test]
fn every_collective_is_right_with_each_forced_tuned_algorithm() {
    // Each forced algorithm of each operation, through dynamic rules.
    for (allreduce, bcast, reduce, barrier, alltoall, allgather) in [
        (
            "basic_linear",
            "basic_linear",
            "linear",
            "linear",
            "linear",
            "linear",
        ),
        ("ring", "pipeline", "pipeline", "bruck", "pairwise", "bruck"),
        (
            "segmented_ring",
            "scatter_allgather",
            "binomial",
            "dissemination",
            "modified_bruck",
            "ring",
        ),
        (
            "rabenseifner",
            "binomial",
            "binomial",
            "recursive_doubling",
            "linear",
            "recursive_doubling",
        ),
    ] {
        // Without sm, which would take the calls first.
        let args = [
            "--mca",
            "coll",
            "^sm",
            "--mca",
            "coll_tuned_use_dynamic_rules",
            "1",
            "--mca",
            "coll_tuned_allreduce_algorithm",
            allreduce,
            "--mca",
            "coll_tuned_allreduce_algorithm_segmentsize",
            "256",
            "--mca",
            "coll_tuned_bcast_algorithm",
            bcast,
            "--mca",
            "coll_tuned_bcast_algorithm_segmentsize",
            "128",
            "--mca",
            "coll_tuned_reduce_algorithm",
            reduce,
            "--mca",
            "coll_tuned_barrier_algorithm",
            barrier,
            "--mca",
            "coll_tuned_alltoall_algorithm",
            alltoall,
            "--mca",
            "coll_tuned_allgather_algorithm",
            allgather,
        ];
        passes(5, &args, "0,1,7,1000");
    }
}

#[test]
fn an_algorithm_set_without_dynamic_rules_is_named_in_a_warning_and_not_used() {
    let run = passes(2, &["--mca", "coll_tuned_allreduce_algorithm", "ring"], "1");
    let warning = "warning: coll_tuned_allreduce_algorithm = ring is not used because \
                   coll_tuned_use_dynamic_rules is false; set coll_tuned_use_dynamic_rules true \
                   (e.g. --mca coll_tuned_use_dynamic_rules 1) to use it";
    assert_eq!(
        run.stderr.matches(warning).count(),
        1,
        "once, from rank 0:\n{}",
        run.stderr
    );
}

#[test]
fn a_broken_rules_file_is_reported_with_its_line_and_basic_serves() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.conf");
    std::fs::write(&rules, "1\n2\n1\n2\n1\n0 x 0 0\n").unwrap();
    let path = rules.display().to_string();
    let args = [
        "--mca",
        "coll",
        "^sm",
        "--mca",
        "coll_tuned_use_dynamic_rules",
        "1",
        "--mca",
        "coll_tuned_dynamic_rules_filename",
        path.as_str(),
        "--mca",
        "coll_base_verbose",
        "10",
    ];
    let run = passes(2, &args, "1");
    for expected in [
        format!("{path}:6:"),
        "the tuned component is not used (basic serves the collectives)".to_string(),
        "MPI_COMM_WORLD: allreduce from basic (priority 10)".to_string(),
    ] {
        assert!(
            run.stderr.contains(&expected),
            "missing {expected:?} in:\n{}",
            run.stderr
        );
    }
}

#[test]
fn verbose_output_names_the_component_of_each_operation() {
    let run = passes(2, &["--mca", "coll_base_verbose", "10"], "1");
    for line in [
        "coll:base: MPI_COMM_WORLD: allreduce from sm (priority 40); calls it passes on go to tuned (priority 30), then basic (priority 10)",
        "coll:base: MPI_COMM_WORLD: non-blocking allreduce from tuned (priority 30)",
        "coll:base: MPI_COMM_SELF: allreduce from self (priority 75)",
        "coll:base: MPI_COMM_WORLD: self declined: MPI_COMM_WORLD has 2 processes; the self component serves communicators of one",
        "coll:base: MPI_COMM_SELF: basic declined: MPI_COMM_SELF has one process; the basic component serves communicators of two or more",
    ] {
        assert!(run.stderr.contains(line), "missing {line:?} in:\n{}", run.stderr);
    }
}

#[test]
fn without_a_component_for_a_communicator_the_operation_fails_with_the_reasons() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let program = coll_check();
    let run = mpirun(&["-n", "2", "--mca", "coll", "self", program.as_str(), "1"]);
    assert_ne!(run.code(), 0);
    assert!(
        run.stderr.contains(
            "no coll component provides barrier for MPI_COMM_WORLD (self: declined: MPI_COMM_WORLD has 2 processes; the self component serves communicators of one)"
        ),
        "{}",
        run.stderr
    );
    assert_no_survivors(&run.marker);
}

#[test]
fn a_collective_on_a_communicator_busy_with_another_is_refused_at_every_thread_level() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let program = built("coll_exclusive").display().to_string();
    for (level, coll) in [
        ("single", "sm,tuned,basic,self"),
        ("funneled", "^sm"),
        ("serialized", "sm,tuned,basic,self"),
        ("multiple", "sm,tuned,basic,self"),
        ("multiple", "^sm"),
    ] {
        for n in ["2", "3"] {
            let run = mpirun(&[
                "-n",
                n,
                "--oversubscribe",
                "--mca",
                "coll",
                coll,
                program.as_str(),
                level,
            ]);
            assert_eq!(
                run.code(),
                0,
                "coll_exclusive {level} with coll {coll} on {n} ranks failed:\n{}\n{}",
                run.stdout,
                run.stderr
            );
            let ok = run.stdout.matches(": exclusive ok").count();
            assert_eq!(
                ok.to_string(),
                n,
                "every rank reports success:\n{}",
                run.stdout
            );
            let refused = run.stdout.matches(": other thread refused: ").count();
            let want = if matches!(level, "single" | "funneled") {
                ok
            } else {
                0
            };
            assert_eq!(refused, want, "{}", run.stdout);
            assert_no_survivors(&run.marker);
        }
    }
}
