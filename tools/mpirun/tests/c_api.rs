//! C programs built with our mpicc against libmpi (capi/tests/c/*.c) and
//! run with our mpirun: point-to-point, collectives (blocking, `v` and
//! non-blocking), communicators, topologies,
//! datatypes and packing; the error classes and strings under
//! MPI_ERRORS_RETURN; the default fatal handler; the profiling interface;
//! a C++ program through mpicxx; a program built with the flags of our
//! pkg-config files; every MPI_ function exported as a weak alias of its
//! PMPI_ twin.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../capi/tests/c")
        .join(name)
}

/// Compiles `name` (a file of capi/tests/c) with our mpicc (mpicxx for
/// C++) into `dir`.
fn compile(dir: &Path, name: &str) -> String {
    let wrapper = if name.ends_with(".cc") {
        "mpicxx"
    } else {
        "mpicc"
    };
    let mpicc = oxmpi_test_support::build_workspace().program(wrapper);
    let out = dir.join(Path::new(name).file_stem().unwrap());
    let result = Command::new(&mpicc)
        .args(["-Wall", "-Werror", "-o"])
        .arg(&out)
        .arg(source(name))
        .output()
        .unwrap();
    assert!(
        result.status.success(),
        "{wrapper} failed on {name}: {}",
        String::from_utf8_lossy(&result.stderr)
    );
    out.display().to_string()
}

/// Builds `name` and runs it on each of `ranks` processes; it must exit 0
/// and print `expect` (from rank 0) and nothing else.
fn passes(name: &str, ranks: &[&str], expect: &str) {
    let dir = tempfile::tempdir().unwrap();
    let program = compile(dir.path(), name);
    for n in ranks {
        let run = mpirun(&["-n", n, "--oversubscribe", &program]);
        assert_eq!(run.code(), 0, "{name} -n {n}: {}{}", run.stdout, run.stderr);
        assert_eq!(run.stdout.trim(), expect, "{name} -n {n}: {}", run.stderr);
    }
}

#[test]
fn the_basic_program_passes_on_2_3_and_4_ranks() {
    passes("basic.c", &["2", "3", "4"], "basic: ok");
}

#[test]
fn every_collective_blocking_and_not_passes_on_1_to_4_ranks() {
    passes("collv.c", &["1", "2", "3", "4"], "collv: ok");
}

#[test]
fn every_collective_takes_non_contiguous_types_on_1_to_4_ranks() {
    passes("coll_types.c", &["1", "2", "3", "4"], "coll_types: ok");
}

#[test]
fn minloc_and_maxloc_reduce_derived_types_of_pairs_on_1_to_4_ranks() {
    passes("coll_pairs.c", &["1", "2", "3", "4"], "coll_pairs: ok");
}

#[test]
fn derived_types_travel_and_describe_themselves() {
    passes("types.c", &["2", "3"], "types: ok");
}

#[test]
fn groups_names_and_attributes_work_on_1_to_4_ranks() {
    passes("groups.c", &["1", "2", "3", "4"], "groups: ok");
}

#[test]
fn matched_probes_claim_messages_that_only_matched_receives_take() {
    passes("mprobe.c", &["2", "3"], "mprobe: ok");
}

#[test]
fn threads_make_and_complete_requests_at_once_at_thread_multiple() {
    passes("threads.c", &["2", "4"], "threads: ok");
}

#[test]
fn every_send_mode_and_blocking_probes_work_in_pairs() {
    passes("modes.c", &["2", "3"], "modes: ok");
}

#[test]
fn persistent_buffered_and_partial_completions_work() {
    passes("requests.c", &["2", "3"], "requests: ok");
}

#[test]
fn topologies_info_user_operations_and_handlers_work_on_1_to_4_ranks() {
    passes("misc.c", &["1", "2", "3", "4"], "misc: ok");
}

#[test]
fn neighborhood_collectives_and_alltoallw_work_on_1_to_4_ranks() {
    passes("neighbor.c", &["1", "2", "3", "4"], "neighbor: ok");
}

#[test]
fn distributed_graphs_from_any_edges_work_on_1_to_4_ranks() {
    passes("dist_graph.c", &["1", "2", "3", "4"], "dist_graph: ok");
}

#[test]
fn every_function_of_a_missing_feature_fails_through_the_handler() {
    passes("unsupported.c", &["2"], "unsupported: ok");
}

#[test]
fn errors_return_their_class_and_say_what_was_wrong() {
    passes("errors.c", &["2"], "errors: ok");
}

#[test]
fn an_error_under_the_default_handler_ends_the_job_with_its_message() {
    let dir = tempfile::tempdir().unwrap();
    let program = compile(dir.path(), "fatal.c");
    let run = mpirun(&["-n", "2", &program]);
    assert_eq!(
        run.code(),
        6,
        "the exit code is the class (MPI_ERR_RANK): {}",
        run.stderr
    );
    assert!(!run.stdout.contains("still running"), "{}", run.stdout);
    assert!(
        run.stderr
            .contains("MPI_Send: destination rank 1000 is not in MPI_COMM_WORLD")
            && run
                .stderr
                .contains("MPI_ERR_RANK; the communicator's error handler is MPI_ERRORS_ARE_FATAL"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_tool_that_defines_mpi_functions_takes_their_place() {
    passes("profile.c", &["2"], "profile: ok");
}

#[test]
fn a_cxx_program_builds_with_mpicxx_and_runs() {
    passes("hello.cc", &["2"], "hello.cc: ok");
}

#[test]
fn a_cmake_project_finds_oxmpi_through_its_wrappers_on_path() {
    let artifacts = oxmpi_test_support::build_workspace();
    let found = Command::new("cmake")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "cmake is missing: apt-get install cmake (scripts/system-packages.txt lists it)"
    );
    let dir = tempfile::tempdir().unwrap();
    let build = dir.path().join("build");
    // Our programs' directory first, as an install's bin directory would be.
    let path = format!(
        "{}:{}",
        artifacts.dir().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let project = source("../cmake");
    let configure = Command::new("cmake")
        .arg("-S")
        .arg(&project)
        .arg("-B")
        .arg(&build)
        .env("PATH", &path)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&configure.stdout);
    assert!(
        configure.status.success(),
        "cmake failed: {out}{}",
        String::from_utf8_lossy(&configure.stderr)
    );
    let ours = format!(
        "MPI_C_LIBRARIES={}",
        artifacts.dir().join("libmpi.so").display()
    );
    assert!(
        out.contains("MPI_C_VERSION=3.1") && out.contains(&ours),
        "FindMPI did not find oxmpi: {out}"
    );
    let make = Command::new("cmake")
        .arg("--build")
        .arg(&build)
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(
        make.status.success(),
        "the build failed: {}{}",
        String::from_utf8_lossy(&make.stdout),
        String::from_utf8_lossy(&make.stderr)
    );
    let ring = build.join("ring").display().to_string();
    let run = mpirun(&["-n", "3", "--oversubscribe", &ring]);
    assert_eq!(
        (run.code(), run.stdout.trim()),
        (0, "cmake ring: ok"),
        "{}",
        run.stderr
    );
    let hello = build.join("hello").display().to_string();
    let run = mpirun(&["-n", "2", &hello]);
    assert_eq!(
        (run.code(), run.stdout.trim()),
        (0, "hello.cc: ok"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_program_built_with_pkg_config_flags_runs() {
    let artifacts = oxmpi_test_support::build_workspace();
    let shown = Command::new(artifacts.program("mpicc"))
        .arg("-showme:pkgconfig")
        .output()
        .unwrap();
    assert!(
        shown.status.success(),
        "mpicc -showme:pkgconfig: {}",
        String::from_utf8_lossy(&shown.stderr)
    );
    let dir = String::from_utf8_lossy(&shown.stdout).trim().to_string();
    let flags = Command::new("pkg-config")
        .args(["--cflags", "--libs", "oxmpi"])
        .env("PKG_CONFIG_PATH", &dir)
        .output()
        .expect("pkg-config is missing: apt-get install pkg-config (scripts/system-packages.txt lists it)");
    assert!(
        flags.status.success(),
        "pkg-config: {}",
        String::from_utf8_lossy(&flags.stderr)
    );
    let flags = String::from_utf8_lossy(&flags.stdout).to_string();
    let out = tempfile::tempdir().unwrap();
    let program = out.path().join("basic");
    let cc = Command::new("cc")
        .args(["-Wall", "-Werror", "-o"])
        .arg(&program)
        .arg(source("basic.c"))
        .args(flags.split_whitespace())
        .output()
        .unwrap();
    assert!(
        cc.status.success(),
        "cc with {flags}: {}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let run = mpirun(&["-n", "2", &program.display().to_string()]);
    assert_eq!(
        (run.code(), run.stdout.trim()),
        (0, "basic: ok"),
        "{}",
        run.stderr
    );
}

#[test]
fn every_function_is_exported_as_a_weak_alias_of_its_pmpi_twin() {
    let lib = oxmpi_test_support::build_workspace().library("libmpi.so");
    let out = Command::new("nm").arg("-D").arg(&lib).output().unwrap();
    assert!(out.status.success(), "nm -D failed");
    let symbols = String::from_utf8_lossy(&out.stdout);
    let has = |kind: &str, name: &str| {
        symbols
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>()[1..] == [kind, name])
    };
    for f in mpi::FUNCTIONS {
        assert!(has("T", &format!("PMPI_{f}")), "PMPI_{f} is not exported");
        assert!(
            has("W", &format!("MPI_{f}")),
            "MPI_{f} is not a weak export"
        );
    }
    // And mpi.h declares each of them.
    let header = std::fs::read_to_string(source("../../include/mpi.h")).unwrap();
    for f in mpi::FUNCTIONS {
        assert!(
            header.contains(&format!(" MPI_{f}(")),
            "mpi.h does not declare MPI_{f}"
        );
    }
}

/// The point-to-point, request, datatype and collective programs over
/// the other pmls: cm over libfabric's tcp provider, and ucx over UCX's
/// tcp and its shared memory with `self` (there keeping the first bytes of
/// truncated messages). `requests.c` expects a small send to oneself to be
/// complete at its first test, which needs a transport to oneself (ob1's
/// self btl, UCX's `self`), and the first bytes of a truncated message
/// kept: it runs where both hold.
#[test]
fn the_c_programs_pass_over_cm_and_ucx() {
    use common::pmls::{run_over, Transport};
    const TRANSPORTS: [(Transport, bool); 3] = [
        (
            Transport {
                name: "cm/ofi tcp",
                options: &[
                    "--mca",
                    "pml",
                    "cm",
                    "--mca",
                    "mtl_ofi_provider_include",
                    "tcp",
                ],
            },
            true,
        ),
        (
            Transport {
                name: "ucx tcp",
                options: &["--mca", "pml", "ucx", "-x", "UCX_TLS=tcp"],
            },
            false,
        ),
        (
            Transport {
                name: "ucx posix,self",
                options: &[
                    "--mca",
                    "pml",
                    "ucx",
                    "--mca",
                    "pml_ucx_keep_truncated",
                    "true",
                    "-x",
                    "UCX_TLS=posix,self",
                ],
            },
            true,
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    let programs = [
        ("basic.c", "basic: ok"),
        ("mprobe.c", "mprobe: ok"),
        ("modes.c", "modes: ok"),
        ("misc.c", "misc: ok"),
        ("errors.c", "errors: ok"),
        ("types.c", "types: ok"),
        ("groups.c", "groups: ok"),
        ("coll_types.c", "coll_types: ok"),
        ("collv.c", "collv: ok"),
        ("threads.c", "threads: ok"),
        ("requests.c", "requests: ok"),
    ];
    for (name, expect) in programs {
        let program = compile(dir.path(), name);
        for (t, to_self) in &TRANSPORTS {
            if name == "requests.c" && !to_self {
                continue;
            }
            let run = run_over(t, 2, &program, &[]);
            let what = format!("{name} over {}", t.name);
            assert_eq!(run.code(), 0, "{what}: {}{}", run.stdout, run.stderr);
            assert_eq!(run.stdout.trim(), expect, "{what}: {}", run.stderr);
        }
    }
}
