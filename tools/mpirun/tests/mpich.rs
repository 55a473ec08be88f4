//! MPICH-built programs (Debian's `mpich` package) under our mpirun: its
//! PMI-1 client must get everything it needs from our server. Skipped with
//! a message when mpicc.mpich is missing, unless OXMPI_REQUIRE_MPICH=1
//! (CI sets it), which makes a missing MPICH a failure.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn mpicc() -> Option<&'static str> {
    let found = Command::new("mpicc.mpich")
        .arg("-show")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var("OXMPI_REQUIRE_MPICH").as_deref() != Ok("1"),
            "mpicc.mpich is missing and OXMPI_REQUIRE_MPICH=1: install mpich and libmpich-dev"
        );
        eprintln!("skipped: mpicc.mpich is not installed (apt-get install mpich libmpich-dev)");
        return None;
    }
    Some("mpicc.mpich")
}

fn compile(dir: &Path, source: &Path) -> PathBuf {
    let out = dir.join(source.file_stem().unwrap());
    let status = Command::new("mpicc.mpich")
        .arg("-o")
        .arg(&out)
        .arg(source)
        .status()
        .unwrap();
    assert!(
        status.success(),
        "mpicc.mpich failed on {}",
        source.display()
    );
    out
}

fn source(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

#[test]
fn mpich_program_runs_under_our_mpirun() {
    if mpicc().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let hello = compile(dir.path(), &source("../../core/pmi/tests/c/mpi_hello.c"));
    let hello = hello.display().to_string();
    for n in [1, 2, 4] {
        let run = mpirun(&["-n", &n.to_string(), &hello]);
        assert_eq!(run.code(), 0, "-n {n}: {}", run.stderr);
        let mut expected: Vec<String> = (0..n)
            .map(|r| format!("rank {r} of {n}: ring ok"))
            .collect();
        expected.sort();
        assert_eq!(run.sorted_lines(), expected, "-n {n}");
    }
}

#[test]
fn mpich_abort_stops_the_job_with_its_code() {
    if mpicc().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prog = compile(dir.path(), &source("tests/c/mpi_abort.c"))
        .display()
        .to_string();
    let run = mpirun(&["-n", "3", &prog]);
    assert_eq!(run.code(), 6, "{}", run.stderr);
    assert!(run.stderr.contains("rank 1 (pid "), "{}", run.stderr);
    assert!(
        run.stderr.contains("called MPI_Abort with error code 6"),
        "{}",
        run.stderr
    );
}

/// Our MPI layer under MPICH's launcher: no job secret in the environment,
/// so rank 0 makes one and shares it through PMI; point-to-point over tcp
/// then works as under our mpirun.
#[test]
fn oxmpi_programs_run_under_mpiexec_mpich() {
    if mpicc().is_none() {
        return;
    }
    let program = built("p2p_check");
    let components = mpirun_path().parent().unwrap().display().to_string();
    let marker = format!("mpich-p2p-{}", std::process::id());
    let mut cmd = Command::new("mpiexec.mpich");
    cmd.args(["-n", "3"])
        .arg(&program)
        .arg("wildcard")
        .env("OXMPI_TEST_MARKER", &marker)
        .env("OXMPI_MCA_btl", "self,tcp")
        .env("OXMPI_MCA_btl_tcp_if_include", "lo")
        .env("OXMPI_MCA_mca_base_component_path", &components)
        .env_remove("OXMPI_PREFIX")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let run = wait_with_timeout(cmd.spawn().unwrap(), HARD_TIMEOUT, &marker);
    assert_no_survivors(&marker);
    assert_eq!(
        run.code(),
        0,
        "stdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
    assert!(
        run.stdout.contains("wildcard ok (400 messages in order)"),
        "{}",
        run.stdout
    );
}
