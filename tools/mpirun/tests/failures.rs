//! Every failure ends the job quickly, with one report, and leaves nothing
//! behind.

mod common;

use common::*;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::time::{Duration, Instant};

#[test]
fn exit_status_of_a_failing_rank() {
    let run = mpirun(&["-n", "2", "sh", "-c", "exit 7"]);
    assert_eq!(run.code(), 7);
    assert!(
        run.stderr.contains("exited with status 7"),
        "{}",
        run.stderr
    );
    assert_eq!(
        run.stderr.matches("mpirun:").count(),
        1,
        "one report: {}",
        run.stderr
    );
}

#[test]
fn a_failing_rank_stops_the_others() {
    let start = Instant::now();
    let run = mpirun(&[
        "-n",
        "3",
        "sh",
        "-c",
        "if [ $OXMPI_COMM_WORLD_RANK = 1 ]; then exit 3; fi; sleep 30",
    ]);
    assert_eq!(run.code(), 3);
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "teardown took {:?}",
        start.elapsed()
    );
    assert!(run.stderr.contains("rank 1 (pid "), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("the 2 other ranks still running were stopped"),
        "{}",
        run.stderr
    );
}

#[test]
fn segmentation_fault_is_reported_by_name() {
    let run = mpirun(&["-n", "2", "sh", "-c", "kill -SEGV $$"]);
    assert_eq!(run.code(), 128 + 11);
    assert!(
        run.stderr
            .contains("killed by signal 11, SIGSEGV (Segmentation fault)"),
        "{}",
        run.stderr
    );
}

#[test]
fn abort_reports_its_code_and_message() {
    let hello = pmi_hello();
    let run = mpirun(&["-n", "3", &hello, "--abort", "5"]);
    assert_eq!(run.code(), 5, "{}", run.stderr);
    assert!(
        run.stderr.contains("called MPI_Abort with error code 5"),
        "{}",
        run.stderr
    );
}

#[test]
fn exit_without_finalize_is_a_failure() {
    let hello = pmi_hello();
    let run = mpirun(&["-n", "2", &hello, "--no-finalize"]);
    assert_ne!(run.code(), 0);
    assert!(
        run.stderr.contains("without finalizing MPI"),
        "{}",
        run.stderr
    );
}

#[test]
fn timeout_stops_the_job() {
    let start = Instant::now();
    let run = mpirun(&["--timeout", "1", "-n", "2", "sleep", "30"]);
    assert_eq!(run.code(), 124);
    assert!(
        start.elapsed() < Duration::from_secs(6),
        "took {:?}",
        start.elapsed()
    );
    assert!(
        run.stderr.contains("longer than --timeout 1 seconds"),
        "{}",
        run.stderr
    );
}

fn signal_mpirun(signal: i32) -> Run {
    let (mut cmd, marker) = command(&["-n", "2", "sh", "-c", "sleep 30; echo never"]);
    let child = cmd.spawn().unwrap();
    let pid = child.id() as i32;
    wait_for_ranks(&marker, 4); // mpirun's guardian, 2 shells, ...
    let signal = Signal::try_from(signal).expect("a signal number");
    kill(Pid::from_raw(pid), signal).expect("signalling the mpirun under test");
    let start = Instant::now();
    let run = wait_with_timeout(child, Duration::from_secs(20), &marker);
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "teardown took {:?}",
        start.elapsed()
    );
    assert_no_survivors(&marker);
    run
}

#[test]
fn sigint_sigterm_and_sighup_tear_the_job_down() {
    for (sig, name) in [
        (libc::SIGINT, "SIGINT"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGHUP, "SIGHUP"),
    ] {
        let run = signal_mpirun(sig);
        assert_eq!(run.code(), 128 + sig, "{name}: {}", run.stderr);
        assert!(
            run.stderr.contains(&format!("mpirun received {name}")),
            "{}",
            run.stderr
        );
        assert!(!run.stdout.contains("never"));
    }
}

#[test]
fn ranks_and_their_children_go_when_mpirun_is_killed() {
    let (mut cmd, marker) = command(&["-n", "2", "sh", "-c", "sleep 30 & sleep 30; wait"]);
    let mut child = cmd.spawn().unwrap();
    wait_for_ranks(&marker, 8); // mpirun, its guardian, 2 x (sh, sleep, sleep)
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert_no_survivors(&marker);
}
