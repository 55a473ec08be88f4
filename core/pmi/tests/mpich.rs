//! Interoperability with MPICH (Debian's `mpich` package, hydra 4.0):
//! oxmpi's client under MPICH's `mpiexec`, and MPICH programs against
//! oxmpi's server (hosted by `oxmpi_pmi::local`, standing in for `mpirun`).
//!
//! Each test is skipped, with the reason printed, when MPICH is not
//! installed, unless `OXMPI_REQUIRE_MPICH=1` (then it fails). Every process
//! runs under a hard timeout that kills its process group.

mod support;

use std::process::Command;

use oxmpi_pmi::local::{prepare_command, socket_pairs, LocalServer};
use oxmpi_pmi::JobInfo;
use support::{mpi_hello_c, mpich_tool, pmi_hello, run, start};

fn assert_all_ranks_said(stdout: &str, size: u32, suffix: &str) {
    for r in 0..size {
        let line = format!("rank {r} of {size}: {suffix}");
        assert!(
            stdout.lines().any(|l| l == line),
            "missing {line:?} in:\n{stdout}"
        );
    }
}

fn mpiexec(args: &[&str]) -> Option<Command> {
    let mut cmd = Command::new(mpich_tool("mpiexec.mpich")?);
    cmd.args(args);
    Some(cmd)
}

#[test]
fn pmi_hello_runs_under_mpiexec_mpich() {
    let Some(mut cmd) = mpiexec(&["-n", "3"]) else {
        return;
    };
    cmd.arg(pmi_hello());
    let done = run(cmd);
    done.expect_code(0);
    assert_all_ranks_said(&done.stdout, 3, "ok");
}

// hydra's other connection mode: PMI_PORT=host:port and PMI_ID, with the
// initack handshake.
#[test]
fn pmi_hello_runs_under_mpiexec_mpich_pmi_port() {
    let Some(mut cmd) = mpiexec(&["-pmi-port", "-n", "3"]) else {
        return;
    };
    cmd.arg(pmi_hello()).args(["--barriers", "20"]);
    let done = run(cmd);
    done.expect_code(0);
    assert_all_ranks_said(&done.stdout, 3, "ok");
}

#[test]
fn abort_under_mpiexec_mpich_ends_the_job_with_its_code() {
    let Some(mut cmd) = mpiexec(&["-n", "3"]) else {
        return;
    };
    cmd.arg(pmi_hello()).args(["--abort", "5"]);
    run(cmd).expect_code(5);
}

#[test]
fn the_c_test_program_runs_under_mpiexec_mpich() {
    let Some(exe) = mpi_hello_c() else {
        return;
    };
    let Some(mut cmd) = mpiexec(&["-n", "2"]) else {
        return;
    };
    cmd.arg(exe);
    let done = run(cmd);
    done.expect_code(0);
    assert_all_ranks_said(&done.stdout, 2, "ring ok");
}

/// Runs `size` ranks of `exe` against a [`LocalServer`] and returns each
/// rank's result and the server's outcome.
fn run_against_our_server(
    exe: &std::path::Path,
    args: &[&str],
    size: u32,
) -> (Vec<support::Finished>, oxmpi_pmi::local::Outcome) {
    let (servers, ranks) = socket_pairs(size).unwrap();
    let job = JobInfo::new(size, format!("kvs_oxmpi_test_{}", std::process::id()));
    let host = LocalServer::start(job, servers).unwrap();
    let running: Vec<_> = ranks
        .iter()
        .enumerate()
        .map(|(rank, end)| {
            let mut cmd = Command::new(exe);
            cmd.args(args);
            prepare_command(&mut cmd, end, rank as u32, size);
            start(cmd)
        })
        .collect();
    // The ranks hold their ends now; the server must see them close.
    drop(ranks);
    let finished: Vec<_> = running.into_iter().map(|r| r.finish()).collect();
    (finished, host.wait())
}

// The other direction: an MPICH-built program whose PMI client talks to
// oxmpi's server, as it will under oxmpi's mpirun.
#[test]
fn an_mpich_program_runs_against_our_server() {
    let Some(exe) = mpi_hello_c() else {
        return;
    };
    let (finished, outcome) = run_against_our_server(&exe, &[], 3);
    for (rank, done) in finished.iter().enumerate() {
        done.expect_code(0);
        assert_eq!(done.stdout, format!("rank {rank} of 3: ring ok\n"));
    }
    assert_eq!(outcome.protocol_errors, Vec::<(u32, String)>::new());
    assert_eq!(outcome.initialized, vec![true; 3]);
    assert_eq!(outcome.finalized, vec![true; 3]);
    assert_eq!(outcome.abort, None);
}

#[test]
fn an_mpich_abort_reaches_our_server() {
    let Some(exe) = support::compile_c(
        "mpi_abort",
        "#include <mpi.h>\n\
         int main(int argc, char **argv) {\n\
             int rank;\n\
             MPI_Init(&argc, &argv);\n\
             MPI_Comm_rank(MPI_COMM_WORLD, &rank);\n\
             if (rank == 1) MPI_Abort(MPI_COMM_WORLD, 7);\n\
             MPI_Barrier(MPI_COMM_WORLD);\n\
             MPI_Finalize();\n\
             return 0;\n\
         }\n",
    ) else {
        return;
    };
    let (servers, ranks) = socket_pairs(2).unwrap();
    let host = LocalServer::start(JobInfo::new(2, "kvs_abort"), servers).unwrap();
    let running: Vec<_> = ranks
        .iter()
        .enumerate()
        .map(|(rank, end)| {
            let mut cmd = Command::new(&exe);
            prepare_command(&mut cmd, end, rank as u32, 2);
            start(cmd)
        })
        .collect();
    drop(ranks);
    // The local host closes every connection on abort; a launcher kills
    // the ranks, and so does this test.
    let outcome = host.wait();
    for r in running {
        r.kill();
    }
    assert_eq!(outcome.abort, Some((1, 7, None)));
}

#[test]
fn pmi_hello_runs_against_our_server_as_processes() {
    let (finished, outcome) = run_against_our_server(&pmi_hello(), &["--barriers", "3"], 4);
    for (rank, done) in finished.iter().enumerate() {
        done.expect_code(0);
        assert_eq!(done.stdout, format!("rank {rank} of 4: ok\n"));
    }
    assert_eq!(outcome.protocol_errors, Vec::<(u32, String)>::new());
    assert_eq!(outcome.finalized, vec![true; 4]);
}
