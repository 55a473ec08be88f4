//! What mpirun shows about mapping and the rmaps selection: the text map
//! (`--display-map`) with slots and max_slots, a selection that leaves no
//! mapper for a policy, and `rmaps_base_verbose`. Helpers are in
//! `common/rmaps.rs`.

mod common;

use common::rmaps::*;

// ---------------------------------------------------------------------------
// Displays and component selection
// ---------------------------------------------------------------------------

/// `--display-map` (text) shows each node's slots and max slots.
#[test]
fn display_map_text_shows_slots_and_max_slots() {
    let f = Files::new();
    let my_hosts = f.write("my-hosts", "node0 slots=2 max_slots=20\nnode1 slots=3\n");
    let run = run_env(
        &[
            "--do-not-launch",
            "--display-map",
            "--hostfile",
            &my_hosts,
            "-n",
            "4",
            "true",
        ],
        &[],
    );
    assert_eq!(run.code(), 0, "{}", run.stderr);
    let out = &run.stdout;
    assert!(out.contains("JOB MAP"), "{out}");
    assert!(
        out.contains("Mapper: round_robin\tMapping policy: slot\t"),
        "{out}"
    );
    assert!(
        out.contains("Data for node: node0\tNum slots: 2\tMax slots: 20\tNum procs: 2\n"),
        "{out}"
    );
    assert!(
        out.contains("Data for node: node1\tNum slots: 3\tMax slots: unlimited\tNum procs: 2\n"),
        "{out}"
    );
    for (rank, local) in [(0, 0), (1, 1), (2, 0), (3, 1)] {
        assert!(
            out.contains(&format!(
                "\tProcess rank: {rank}\tApp: 0\tLocal rank: {local}\t"
            )),
            "{out}"
        );
    }
    // `--display-map=text` is the same.
    let run2 = run_env(
        &[
            "--do-not-launch",
            "--display-map=text",
            "--hostfile",
            &my_hosts,
            "-n",
            "4",
            "true",
        ],
        &[],
    );
    assert_eq!(run2.stdout, run.stdout);
    // An unknown format is an error.
    let run3 = run_env(
        &[
            "--do-not-launch",
            "--display-map=xml",
            "--hostfile",
            &my_hosts,
            "true",
        ],
        &[],
    );
    assert_eq!(run3.code(), 1);
    assert_eq!(run3.stdout, "");
    assert!(
        run3.stderr
            .contains("--display-map=xml: expected text or json"),
        "{}",
        run3.stderr
    );
}

/// `--mca rmaps ^round_robin`: nobody maps by slot any more; the message
/// names the components tried.
#[test]
fn excluding_round_robin_leaves_no_slot_mapper() {
    let f = Files::new();
    let my_hosts = f.write("my-hosts", MY_HOSTS);
    assert_eq!(
        fails(&[
            "--mca",
            "rmaps",
            "^round_robin",
            "--hostfile",
            &my_hosts,
            "-n",
            "3",
            "true"
        ]),
        "no rmaps component maps by slot (tried: ppr, seq)"
    );
    // ppr still maps.
    let v = map(&[
        "--mca",
        "rmaps",
        "^round_robin",
        "--hostfile",
        &my_hosts,
        "--map-by",
        "ppr:1:node",
        "true",
    ]);
    assert_eq!(v["mapper"], "ppr");
    assert_eq!(hosts_by_rank(&v), hosts(&["node0", "node1"]));
}

/// `--mca rmaps_base_verbose 10` shows why each component was declined or
/// selected.
#[test]
fn rmaps_verbose_shows_the_selection() {
    let f = Files::new();
    let my_hosts = f.write("my-hosts", MY_HOSTS);
    let verbose = ["--mca", "rmaps_base_verbose", "10", "--hostfile", &my_hosts];
    let component_lines = |stderr: &str| -> Vec<String> {
        stderr
            .lines()
            .filter_map(|l| {
                let (prefix, rest) = l.split_once("] ")?;
                assert!(prefix.starts_with('['), "{l}");
                rest.starts_with("rmaps:").then(|| rest.to_string())
            })
            .collect()
    };

    let mut args = verbose.to_vec();
    args.extend_from_slice(&["-n", "3", "true"]);
    let (v, stderr) = map_env_with_stderr(&args, &[]);
    assert_eq!(v["mapper"], "round_robin");
    let lines = component_lines(&stderr);
    for want in [
        "rmaps:ppr: declined: does not map by slot",
        "rmaps:seq: declined: does not map by slot",
        "rmaps:round_robin: selected (priority 10) for --map-by slot",
    ] {
        assert!(lines.iter().any(|l| l == want), "{want}: {stderr}");
    }
    // One component is selected.
    assert_eq!(
        lines.iter().filter(|l| l.contains(": selected")).count(),
        1,
        "{stderr}"
    );

    let mut args = verbose.to_vec();
    args.extend_from_slice(&["-n", "4", "--map-by", "ppr:2:node", "true"]);
    let (v, stderr) = map_env_with_stderr(&args, &[]);
    assert_eq!(v["mapper"], "ppr");
    let lines = component_lines(&stderr);
    assert!(
        lines
            .iter()
            .any(|l| l == "rmaps:ppr: selected (priority 90) for --map-by ppr:2:node"),
        "{stderr}"
    );
    assert!(!lines.iter().any(|l| l.contains("declined")), "{stderr}");

    let mut args = verbose.to_vec();
    args.extend_from_slice(&["--map-by", "seq", "true"]);
    let (v, stderr) = map_env_with_stderr(&args, &[]);
    assert_eq!(v["mapper"], "seq");
    let lines = component_lines(&stderr);
    assert!(
        lines
            .iter()
            .any(|l| l == "rmaps:ppr: declined: does not map by seq"),
        "{stderr}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l == "rmaps:seq: selected (priority 60) for --map-by seq"),
        "{stderr}"
    );

    // Without the verbosity, nothing of this is printed.
    let v = map(&["--hostfile", &my_hosts, "-n", "3", "true"]);
    assert_eq!(v["mapper"], "round_robin");
}
