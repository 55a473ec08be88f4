//! Local launch: environment, MPMD, options, forwarding, exit status.

mod common;

use common::*;

#[test]
fn every_rank_gets_its_rank_and_size() {
    let run = mpirun(&[
        "-n",
        "3",
        "sh",
        "-c",
        "echo $OXMPI_COMM_WORLD_RANK/$OXMPI_COMM_WORLD_SIZE",
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(run.sorted_lines(), vec!["0/3", "1/3", "2/3"]);
}

#[test]
fn local_rank_size_node_rank_and_pmi_variables() {
    let run = mpirun(&[
        "-np",
        "2",
        "sh",
        "-c",
        "echo $OXMPI_COMM_WORLD_LOCAL_RANK $OXMPI_COMM_WORLD_LOCAL_SIZE $OXMPI_COMM_WORLD_NODE_RANK $PMI_RANK $PMI_SIZE ${PMI_FD:+fd}",
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(run.sorted_lines(), vec!["0 2 0 0 2 fd", "1 2 1 1 2 fd"]);
}

#[test]
fn non_mpi_programs_run() {
    let run = mpirun(&["-n", "3", "hostname"]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(run.stdout.lines().count(), 3);
}

#[test]
fn mpiexec_is_the_same_program() {
    let mpiexec = mpirun_path().with_file_name("mpiexec");
    let out = std::process::Command::new(mpiexec)
        .args(["-n", "2", "true"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn pmi_wire_up_with_eight_ranks_oversubscribed() {
    let hello = pmi_hello();
    let run = mpirun(&["--oversubscribe", "-n", "8", &hello, "--barriers", "3"]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    let mut expected: Vec<String> = (0..8).map(|r| format!("rank {r} of 8: ok")).collect();
    expected.sort();
    assert_eq!(run.sorted_lines(), expected);
}

#[test]
fn too_many_ranks_without_oversubscribe_launch_nothing() {
    let run = mpirun(&[
        "--host",
        "localhost:2",
        "-n",
        "3",
        "sh",
        "-c",
        "echo started",
    ]);
    assert_eq!(run.code(), 1);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr
            .contains("not enough slots: 3 ranks requested, 2 slots"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("nothing was launched"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains(":OVERSUBSCRIBE"), "{}", run.stderr);
}

#[test]
fn mpmd_programs_share_one_world() {
    let run = mpirun(&[
        "-n",
        "1",
        "sh",
        "-c",
        "echo a$OXMPI_COMM_WORLD_RANK$OXMPI_APPNUM",
        ":",
        "-np",
        "2",
        "sh",
        "-c",
        "echo b$OXMPI_COMM_WORLD_RANK$OXMPI_APPNUM",
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(run.sorted_lines(), vec!["a00", "b11", "b21"]);
}

#[test]
fn mca_parameters_reach_the_ranks_with_their_source() {
    let run = mpirun(&[
        "--mca",
        "btl_base_verbose",
        "20",
        "-n",
        "1",
        "sh",
        "-c",
        "echo $OXMPI_MCA_btl_base_verbose $OXMPI_MCA_SOURCE_btl_base_verbose",
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(run.stdout, "20 COMMAND_LINE\n");
}

#[test]
fn the_same_mca_twice_with_different_values_is_an_error() {
    let run = mpirun(&[
        "--mca",
        "btl_base_verbose",
        "20",
        "-mca",
        "btl_base_verbose",
        "30",
        "-n",
        "1",
        "true",
    ]);
    assert_eq!(run.code(), 1);
    assert!(
        run.stderr.contains("--mca btl_base_verbose is given twice"),
        "{}",
        run.stderr
    );
}

#[test]
fn unknown_mca_name_warns_and_bad_value_refuses_to_launch() {
    let run = mpirun(&["--mca", "btl_base_verbos", "1", "-n", "1", "true"]);
    assert_eq!(run.code(), 0);
    assert!(
        run.stderr.contains("Did you mean btl_base_verbose?"),
        "{}",
        run.stderr
    );
    let run = mpirun(&[
        "--mca",
        "btl_base_verbose",
        "loud",
        "-n",
        "1",
        "sh",
        "-c",
        "echo started",
    ]);
    assert_eq!(run.code(), 1);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.contains("invalid value \"loud\""),
        "{}",
        run.stderr
    );
}

#[test]
fn exports_and_tune_files() {
    let dir = tempfile::tempdir().unwrap();
    let tune = dir.path().join("job.tune");
    std::fs::write(
        &tune,
        "--mca btl_base_verbose 10\n-x TUNED=yes\nmtl_base_verbose = 30\n",
    )
    .unwrap();
    let tune = tune.display().to_string();
    let run = mpirun(&[
        "--tune", &tune, "-x", "A=1", "-x", "PATH", "-n", "1", "sh", "-c",
        "echo $A $TUNED $OXMPI_MCA_btl_base_verbose $OXMPI_MCA_mtl_base_verbose $OXMPI_MCA_SOURCE_mtl_base_verbose",
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(run.stdout, format!("1 yes 10 30 TUNE:{tune}:3\n"));
    let run = mpirun(&["-x", "OXMPI_SURELY_UNSET_VARIABLE", "-n", "1", "true"]);
    assert_eq!(run.code(), 1);
    assert!(
        run.stderr
            .contains("OXMPI_SURELY_UNSET_VARIABLE is not set"),
        "{}",
        run.stderr
    );
}

#[test]
fn tag_output_prefixes_every_line() {
    let run = mpirun(&[
        "--tag-output",
        "-n",
        "2",
        "sh",
        "-c",
        "echo out; echo err >&2",
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(
        run.sorted_lines(),
        vec!["[1,0]<stdout>:out", "[1,1]<stdout>:out"]
    );
    let mut err: Vec<&str> = run.stderr.lines().collect();
    err.sort();
    assert_eq!(err, vec!["[1,0]<stderr>:err", "[1,1]<stderr>:err"]);
}

#[test]
fn megabytes_of_output_arrive_whole_and_unmixed() {
    // Each rank prints 30,000 lines of 100 characters (3 MB) and exits at once.
    let script = "i=$OXMPI_COMM_WORLD_RANK; head -c 3000000 /dev/zero | tr '\\0' \"$i\" | fold -w 100; exit 0";
    let run = mpirun(&["--tag-output", "-n", "4", "sh", "-c", script]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    let mut per_rank = [0usize; 4];
    for line in run.stdout.lines() {
        let (tag, body) = line.split_at(line.find(':').unwrap() + 1);
        let rank: usize = tag[3..4].parse().unwrap();
        assert_eq!(body.len(), 100, "a line was cut or mixed: {line:.60}");
        assert!(
            body.bytes().all(|b| b == b'0' + rank as u8),
            "mixed line: {line:.60}"
        );
        per_rank[rank] += 1;
    }
    assert_eq!(per_rank, [30_000; 4]);
}

#[test]
fn output_filename_writes_per_rank_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let run = mpirun(&[
        "--output-filename",
        &d,
        "-n",
        "2",
        "sh",
        "-c",
        "echo o$OXMPI_COMM_WORLD_RANK; echo e >&2",
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    for r in 0..2 {
        let base = dir.path().join("1").join(format!("rank.{r}"));
        assert_eq!(
            std::fs::read_to_string(base.join("stdout")).unwrap(),
            format!("o{r}\n")
        );
        assert_eq!(std::fs::read_to_string(base.join("stderr")).unwrap(), "e\n");
    }
}

#[test]
fn wdir_sets_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().canonicalize().unwrap().display().to_string();
    let run = mpirun(&["--wdir", &d, "-n", "1", "pwd"]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(run.stdout.trim(), d);
}

#[test]
fn stdin_goes_to_rank_zero_by_default_or_as_asked() {
    let run = mpirun_with_stdin(
        &[
            "-n",
            "2",
            "sh",
            "-c",
            "cat | sed s/^/$OXMPI_COMM_WORLD_RANK:/",
        ],
        b"hello\n",
    );
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(run.stdout, "0:hello\n");
    let run = mpirun_with_stdin(
        &[
            "--stdin",
            "all",
            "-n",
            "2",
            "sh",
            "-c",
            "cat | sed s/^/$OXMPI_COMM_WORLD_RANK:/",
        ],
        b"hi\n",
    );
    assert_eq!(run.sorted_lines(), vec!["0:hi", "1:hi"]);
    let run = mpirun_with_stdin(&["--stdin", "none", "-n", "1", "cat"], b"ignored\n");
    assert_eq!(run.code(), 0);
    assert_eq!(run.stdout, "");
}

#[test]
fn missing_program_is_a_clear_error() {
    let run = mpirun(&["-n", "2", "oxmpi-no-such-program"]);
    assert_eq!(run.code(), 1);
    assert!(
        run.stderr
            .contains("cannot start rank 0: oxmpi-no-such-program was not found in PATH"),
        "{}",
        run.stderr
    );
}

#[test]
fn do_not_launch_prints_the_map() {
    let run = mpirun(&[
        "--do-not-launch",
        "--display-map=json",
        "--host",
        "node0:2,node1:2",
        "-n",
        "4",
        "true",
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["nodes"][0]["name"], "node0");
    assert_eq!(v["nodes"][0]["procs"].as_array().unwrap().len(), 2);
    assert_eq!(v["nodes"][1]["procs"][1]["rank"], 3);
    let run = mpirun(&["--host", "node0:2", "-n", "1", "true"]);
    assert_eq!(run.code(), 1);
    assert!(
        run.stderr.contains("host node0 is not this machine"),
        "{}",
        run.stderr
    );
}

#[test]
fn version_and_help() {
    assert!(mpirun(&["--version"]).stdout.starts_with("mpirun (oxmpi) "));
    let help = mpirun(&["--help"]);
    assert!(help.stdout.contains("EXIT STATUS"), "{}", help.stdout);
}

#[test]
fn oversubscribed_ranks_yield_when_idle() {
    let script = "echo ${OXMPI_MCA_mpi_yield_when_idle:-unset}";
    let run = mpirun(&[
        "--host",
        "localhost:2",
        "--oversubscribe",
        "-n",
        "3",
        "sh",
        "-c",
        script,
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(run.sorted_lines(), vec!["1", "1", "1"]);
    let run = mpirun(&["--host", "localhost:4", "-n", "2", "sh", "-c", script]);
    assert_eq!(run.sorted_lines(), vec!["unset", "unset"]);
    let run = mpirun(&[
        "--mca",
        "mpi_yield_when_idle",
        "0",
        "--host",
        "localhost:1",
        "--oversubscribe",
        "-n",
        "2",
        "sh",
        "-c",
        script,
    ]);
    assert_eq!(run.sorted_lines(), vec!["0", "0"]);
}

#[test]
fn an_unknown_option_is_an_error_not_a_program() {
    let run = mpirun(&["--hostname", "my-hosts", "-n", "2", "true"]);
    assert_eq!(run.code(), 1);
    assert!(
        run.stderr.contains("unknown option --hostname"),
        "{}",
        run.stderr
    );
    // Options after the program belong to the program.
    let run = mpirun(&["-n", "1", "printf", "%s\n", "--hostname"]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(run.stdout, "--hostname\n");
}
