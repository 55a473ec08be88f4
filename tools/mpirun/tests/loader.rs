//! Component loading as mpirun and its ranks see it: a component path the
//! user sets with `SYSTEM_DEFAULT` in it means the same directory in the
//! ranks as in mpirun, and an rmaps component that panics (in its query,
//! its `accepts` or inside `map`) is reported with its library's path at
//! default verbosity. A third-party mapper (the `reverse` fixture) adds a
//! `--map-by` policy name and a parameter that reach it when it is
//! installed; without it the name is refused with the accepted list.

mod common;

use common::*;
use std::path::{Path, PathBuf};

/// Runs mpirun with `args` and `env`, in an environment cleaned of
/// `OXMPI_MCA_*` settings of the calling shell.
fn run_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    mpirun_in(args, &["OXMPI_MCA_"], env)
}

/// A library of the workspace, built for this test run.
fn built_library(file: &str) -> PathBuf {
    oxmpi_test_support::build_workspace().library(file)
}

/// A temporary component directory holding rmaps `faulty`.
fn faulty_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("libmca_rmaps_faulty.so");
    std::fs::copy(built_library("liboxmpi_fixture_rmaps_faults.so"), &path).unwrap();
    (dir, path)
}

/// A temporary component directory holding rmaps `reverse`.
fn reverse_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        built_library("liboxmpi_fixture_rmaps_reverse.so"),
        dir.path().join("libmca_rmaps_reverse.so"),
    )
    .unwrap();
    dir
}

/// `(mapper, host of each rank)` of a `--display-map=json` output.
fn mapped(stdout: &str) -> (String, Vec<String>) {
    let v: serde_json::Value = serde_json::from_str(stdout).expect("the map is JSON");
    let mut ranks: Vec<(u64, String)> = Vec::new();
    for node in v["nodes"].as_array().unwrap() {
        for p in node["procs"].as_array().unwrap() {
            ranks.push((
                p["rank"].as_u64().unwrap(),
                node["name"].as_str().unwrap().to_string(),
            ));
        }
    }
    ranks.sort();
    (
        v["mapper"].as_str().unwrap().to_string(),
        ranks.into_iter().map(|(_, h)| h).collect(),
    )
}

const REVERSE_JOB: &[&str] = &[
    "--do-not-launch",
    "--display-map=json",
    "--host",
    "a:2,b:2",
    "--map-by",
    "reverse",
];

#[test]
fn a_component_policy_name_maps_with_that_component_and_gets_its_parameter() {
    let dir = reverse_dir();
    let component_path = path_value(dir.path());
    let env = [("OXMPI_MCA_mca_base_component_path", component_path.as_str())];
    let mut args = REVERSE_JOB.to_vec();
    args.extend(["-n", "3", "true"]);
    let run = run_env(&args, &env);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(run.stderr, "");
    assert_eq!(
        mapped(&run.stdout),
        (
            "reverse".to_string(),
            vec!["b".into(), "a".into(), "a".into()]
        )
    );

    // Its own parameter reaches map: two slots at the end stay empty.
    let mut args = vec!["--mca", "rmaps_reverse_skip", "2"];
    args.extend_from_slice(REVERSE_JOB);
    args.extend(["-n", "2", "true"]);
    let run = run_env(&args, &env);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(
        mapped(&run.stdout),
        ("reverse".to_string(), vec!["a".into(), "a".into()])
    );

    // Modifiers follow the name; an unknown name lists it as accepted.
    let mut args = REVERSE_JOB.to_vec();
    args[5] = "rev:NOOVERSUBSCRIBE";
    args.extend(["-n", "5", "true"]);
    let run = run_env(&args, &env);
    assert_eq!(run.code(), 1, "{}", run.stdout);
    assert!(run.stderr.contains("not enough slots"), "{}", run.stderr);
    let mut args = REVERSE_JOB.to_vec();
    args[5] = "bogus";
    args.push("true");
    let run = run_env(&args, &env);
    assert_eq!(run.code(), 1, "{}", run.stdout);
    assert!(
        run.stderr.contains(
            "unknown mapping policy \"bogus\"; accepted: slot, node, core, hwthread, package (or socket), numa, seq, ppr:N:RESOURCE or a policy of an installed rmaps component (reverse)"
        ),
        "{}",
        run.stderr
    );

    // Excluded by the selection parameter, the name is unknown again.
    let mut args = vec!["--mca", "rmaps", "^reverse"];
    args.extend_from_slice(REVERSE_JOB);
    args.push("true");
    let run = run_env(&args, &env);
    assert_eq!(run.code(), 1, "{}", run.stdout);
    assert!(
        run.stderr.contains("unknown mapping policy \"reverse\""),
        "{}",
        run.stderr
    );
}

#[test]
fn a_component_policy_name_is_refused_with_the_accepted_list_when_not_installed() {
    let empty = tempfile::tempdir().unwrap();
    let component_path = path_value(empty.path());
    let mut args = REVERSE_JOB.to_vec();
    args.push("true");
    let run = run_env(
        &args,
        &[("OXMPI_MCA_mca_base_component_path", component_path.as_str())],
    );
    assert_eq!(run.code(), 1, "{}", run.stdout);
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr.trim_end(),
        "mpirun: error: --map-by reverse: unknown mapping policy \"reverse\"; accepted: slot, node, core, hwthread, package (or socket), numa, seq or ppr:N:RESOURCE (RESOURCE one of node, package, socket, numa, core, hwthread), optionally followed by modifiers :OVERSUBSCRIBE, :NOOVERSUBSCRIBE, :PE=n, :HWTCPUS, :CORECPUS, :SPAN (case does not matter)"
    );
}

fn path_value(extra: &Path) -> String {
    format!("SYSTEM_DEFAULT:{}", extra.display())
}

#[test]
fn system_default_in_a_user_component_path_means_the_same_directory_in_ranks() {
    let extra = tempfile::tempdir().unwrap();
    let value = path_value(extra.path());
    let hello = built("hello").display().to_string();
    let mut args = vec!["-n", "1"];
    args.extend(TCP);
    args.push(hello.as_str());
    // From the environment, as in the issue.
    let run = run_env(&args, &[("OXMPI_MCA_mca_base_component_path", &value)]);
    assert_eq!(
        run.code(),
        0,
        "stdout: {}\nstderr: {}",
        run.stdout,
        run.stderr
    );
    assert!(run.stdout.contains("hello"), "{}", run.stdout);
    assert_eq!(run.stderr, "");

    // From the command line.
    let mut with_mca = vec!["--mca", "mca_base_component_path", value.as_str()];
    with_mca.extend_from_slice(&args);
    let run = run_env(&with_mca, &[]);
    assert_eq!(
        run.code(),
        0,
        "stdout: {}\nstderr: {}",
        run.stdout,
        run.stderr
    );
    assert_eq!(run.stderr, "");

    // What the rank is given: the directories mpirun searched.
    let system = mpirun_path().parent().unwrap().display().to_string();
    let run = run_env(
        &[
            "-n",
            "1",
            "sh",
            "-c",
            "echo \"$OXMPI_MCA_mca_base_component_path\"",
        ],
        &[("OXMPI_MCA_mca_base_component_path", &value)],
    );
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(
        run.stdout.trim(),
        format!("{system}:{}", extra.path().display())
    );
}

#[test]
fn panic_in_an_rmaps_query_is_a_warning_with_the_path_and_the_job_runs() {
    let (dir, faulty) = faulty_dir();
    let run = run_env(
        &["-n", "1", "sh", "-c", "echo launched"],
        &[
            ("OXMPI_MCA_mca_base_component_path", &path_value(dir.path())),
            ("OXMPI_MCA_rmaps_faulty_panic_in", "query"),
        ],
    );
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(run.stdout, "launched\n");
    let warnings: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(warnings.len(), 1, "{}", run.stderr);
    assert!(
        warnings[0].starts_with(&format!(
            "mpirun: warning: skipped component library {} (rmaps component faulty): its query panicked: 'the faulty fixture panics in query (rmaps_faulty_panic_in)' at ",
            faulty.display()
        )),
        "{}",
        warnings[0]
    );
}

#[test]
fn panic_in_an_rmaps_accepts_is_a_warning_with_the_path_and_another_mapper_maps() {
    let (dir, faulty) = faulty_dir();
    let path = path_value(dir.path());
    let env = [
        ("OXMPI_MCA_mca_base_component_path", path.as_str()),
        ("OXMPI_MCA_rmaps_faulty_panic_in", "accepts"),
    ];
    let warning = format!(
        "mpirun: warning: rmaps component faulty ({}) failed when asked whether it maps by slot, so it was passed over: the faulty mapper's accepts panicked: 'the faulty fixture panics in accepts (rmaps_faulty_panic_in)' at ",
        faulty.display()
    );
    let run = run_env(&["-n", "1", "sh", "-c", "echo launched"], &env);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(run.stdout, "launched\n");
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(lines[0].starts_with(&warning), "{}", lines[0]);
    assert!(
        lines[0].ends_with(
            ". This is a bug in the component: report it to its authors; --mca rmaps ^faulty leaves it out."
        ),
        "{}",
        lines[0]
    );

    // Alone, it maps nothing, and the error says why.
    let run = run_env(
        &[
            "--mca",
            "rmaps",
            "faulty",
            "-n",
            "1",
            "sh",
            "-c",
            "echo launched",
        ],
        &env,
    );
    assert_eq!(run.code(), 1, "{}", run.stderr);
    assert_eq!(run.stdout, "", "nothing ran");
    assert!(run.stderr.starts_with(&warning), "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "mpirun: error: no rmaps component maps by slot (tried: faulty (its accepts failed))"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn panic_inside_map_names_the_library() {
    let (dir, faulty) = faulty_dir();
    let run = run_env(
        &["-n", "1", "sh", "-c", "echo launched"],
        &[("OXMPI_MCA_mca_base_component_path", &path_value(dir.path()))],
    );
    assert_eq!(run.code(), 1, "{}", run.stderr);
    assert_eq!(run.stdout, "", "nothing ran");
    assert!(
        run.stderr.starts_with(&format!(
            "mpirun: error: rmaps component faulty ({}) failed in map, so the job was not started: the faulty mapper panicked: 'the faulty fixture always panics in map' at ",
            faulty.display()
        )),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("--mca rmaps ^faulty maps the job with another component."),
        "{}",
        run.stderr
    );
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
}

/// A component library of a framework only ranks load (mpirun does not
/// open them) that does not load is still reported: once for the job, by
/// rank 0, and the job runs without it; when it was the one asked for,
/// the job stops with the warning and an error naming it.
#[test]
fn a_rank_framework_library_that_does_not_load_is_reported_once_and_named_when_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("libmca_btl_junk.so");
    std::fs::write(&junk, b"this is not an ELF file\n").unwrap();
    let junk_pml = dir.path().join("libmca_pml_junk.so");
    std::fs::write(&junk_pml, b"nor is this\n").unwrap();
    let value = path_value(dir.path());
    let hello = built("hello").display().to_string();
    let mut args = vec!["-n", "2"];
    args.extend(TCP);
    args.push(hello.as_str());
    let run = run_env(&args, &[("OXMPI_MCA_mca_base_component_path", &value)]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    for library in [&junk, &junk_pml] {
        let lines: Vec<&str> = run
            .stderr
            .lines()
            .filter(|l| l.contains(&library.display().to_string()))
            .collect();
        assert_eq!(lines.len(), 1, "one warning per library:\n{}", run.stderr);
        assert!(
            lines[0].contains("warning: skipped component library")
                && lines[0].contains("the dynamic loader cannot load it"),
            "{}",
            lines[0]
        );
    }

    // Asked for by name: the job stops, the warning says why the library
    // did not load and the error names the component with that reason.
    let mut asked = vec!["--mca", "pml", "junk"];
    asked.extend_from_slice(&args);
    let run = run_env(&asked, &[("OXMPI_MCA_mca_base_component_path", &value)]);
    assert_ne!(run.code(), 0);
    assert!(
        run.stderr.contains(&format!(
            "warning: skipped component library {} (pml component junk)",
            junk_pml.display()
        )) && run.stderr.contains(&format!(
            "asks for component junk that is not available. junk: its library {} did not load:",
            junk_pml.display()
        )),
        "{}",
        run.stderr
    );
}
