//! `--hostfile` through the real mpirun (reference 002): the example
//! hostfile, exclusionary and inclusionary host lists (with a fake Slurm
//! allocation in mpirun's environment), MPMD with a hostfile per app,
//! comments and synonyms, and every hostfile error, each naming the file
//! and line. Helpers are in `common/rmaps.rs`.

mod common;

use common::rmaps::*;
use serde_json::{json, Value};

// ---------------------------------------------------------------------------
// --hostfile
// ---------------------------------------------------------------------------

/// The example hostfile: `foo.example.com` (no slots: the host's cores)
/// and `bar.example.com slots=2`; `-n` defaults to the sum of the slots.
#[test]
fn example_hostfile_slots() {
    let text = "# This is an example hostfile. Comments begin with #.\n#\n\
# Since no slots are specified, the number of slots defaults to the\n\
# number of processor cores available on the machine.\nfoo.example.com\n\n\
# We want to allow launching a maximum of 2 processes on this host\n\
# (e.g., potentially because it has two processor cores):\nbar.example.com slots=2\n";
    let f = Files::new();
    let my_hosts = f.write("my-hosts", text);
    let v = map(&["--hostfile", &my_hosts, "true"]);
    let cores = local_cores();
    assert_eq!(node(&v, "foo.example.com")["slots"], cores);
    assert_eq!(node(&v, "bar.example.com")["slots"], 2);
    assert_eq!(node(&v, "foo.example.com")["max_slots"], Value::Null);
    assert_eq!(node(&v, "bar.example.com")["max_slots"], Value::Null);
    assert_eq!(v["num_procs"], cores + 2);
    let mut expected = vec!["foo.example.com"; cores];
    expected.extend(["bar.example.com"; 2]);
    assert_eq!(hosts_by_rank(&v), hosts(&expected));
}

/// Hostfile, exclusionary: the scheduler gave node01–node04;
/// `mpirun -n 1 --hostfile my_hosts hostname` with `node03` runs on node03.
#[test]
fn hostfile_exclusionary_picks_an_allocated_host() {
    let f = Files::new();
    let my_hosts = f.write("my_hosts", "node03\n");
    let v = map_env(&["-n", "1", "--hostfile", &my_hosts, "hostname"], SLURM);
    assert_eq!(hosts_by_rank(&v), hosts(&["node03"]));
    // The scheduler gives the slot count of a bare hostfile line.
    assert_eq!(node(&v, "node03")["slots"], 2);
    assert_eq!(node(&v, "node03")["max_slots"], Value::Null);
    // Without a hostfile, the whole allocation is used.
    let v = map_env(&["true"], SLURM);
    assert_eq!(
        hosts_by_rank(&v),
        hosts(&["node01", "node01", "node02", "node02", "node03", "node03", "node04", "node04"])
    );
}

/// Hostfile, exclusionary: `node17` is not allocated to the job → abort.
#[test]
fn hostfile_exclusionary_rejects_an_unallocated_host() {
    let f = Files::new();
    let my_hosts = f.write("my_hosts", "node17\n");
    let env = [
        ("SLURM_JOB_NODELIST", "node03"),
        ("SLURM_TASKS_PER_NODE", "1"),
    ];
    assert_eq!(
        fails_env(&["-n", "1", "--hostfile", &my_hosts, "true"], &env),
        format!(
            "{my_hosts}:1: host node17 is not in the Slurm allocation (SLURM_JOB_NODELIST=node03), \
so nothing was launched; use hosts of the Slurm allocation (SLURM_JOB_NODELIST=node03): node03"
        )
    );
    // The same hostfile maps without a scheduler (inclusionary).
    let v = map(&["-n", "1", "--hostfile", &my_hosts, "true"]);
    assert_eq!(hosts_by_rank(&v), hosts(&["node17"]));
}

/// "in exclusionary mode, processes will only be executed on the
/// hostfile-specified hosts. If this ends up causing an oversubscription
/// situation, mpirun will abort by default."
#[test]
fn exclusionary_oversubscription_aborts_by_default() {
    let f = Files::new();
    let my_hosts = f.write("my_hosts", "node03\n");
    let message = fails_env(&["-n", "3", "--hostfile", &my_hosts, "true"], SLURM);
    assert_eq!(
        message,
        format!(
            "not enough slots: 3 ranks requested, 2 slots on node03 (2) (hosts from the Slurm allocation (SLURM_JOB_NODELIST=node[01-04])); {TO_GO_ON}"
        )
    );
    // Allowed with :OVERSUBSCRIBE (a scheduler gives no max_slots).
    let v = map_env(
        &[
            "-n",
            "3",
            "--hostfile",
            &my_hosts,
            "--map-by",
            ":OVERSUBSCRIBE",
            "true",
        ],
        SLURM,
    );
    assert_eq!(hosts_by_rank(&v), hosts(&["node03"; 3]));
    assert_eq!(v["mapping_policy"], "slot:OVERSUBSCRIBE");
    assert_eq!(node(&v, "node03")["oversubscribed"], true);
    assert_eq!(node(&v, "node03")["yield_when_idle"], true);
}

/// Hostfile, inclusionary: three hosts with `slots=1`, `-n 3` runs one on
/// each.
#[test]
fn hostfile_inclusionary() {
    let f = Files::new();
    let my_hosts = f.write(
        "my_hosts",
        "node01.example.com slots=1\nnode02.example.com slots=1\nnode03.example.com slots=1\n",
    );
    let v = map(&["-n", "3", "--hostfile", &my_hosts, "hostname"]);
    assert_eq!(
        hosts_by_rank(&v),
        hosts(&[
            "node01.example.com",
            "node02.example.com",
            "node03.example.com"
        ])
    );
    for n in v["nodes"].as_array().unwrap() {
        assert_eq!(n["slots"], 1, "{n}");
        assert_eq!(n["oversubscribed"], false, "{n}");
    }
}

/// `mpirun -n 1 --hostfile hostfile_1 hostname : -n 1 --hostfile hostfile_2
/// uptime`: hostname on node01, uptime on node02.
#[test]
fn hostfile_per_app_mpmd() {
    let f = Files::new();
    let h1 = f.write("hostfile_1", "node01.example.com\n");
    let h2 = f.write("hostfile_2", "node02.example.com\n");
    let v = map(&[
        "-n",
        "1",
        "--hostfile",
        &h1,
        "hostname",
        ":",
        "-n",
        "1",
        "--hostfile",
        &h2,
        "uptime",
    ]);
    assert_eq!(
        hosts_by_rank(&v),
        hosts(&["node01.example.com", "node02.example.com"])
    );
    assert_eq!(field(&v, "node01.example.com", "app"), [0]);
    assert_eq!(field(&v, "node02.example.com", "app"), [1]);
}

/// MPMD, two ranks per app, each app on its own hostfile:
/// `-n 2 --hostfile h1 true : -n 2 --hostfile h2 true`.
#[test]
fn hostfile_per_app_mpmd_two_ranks_each() {
    let f = Files::new();
    let h1 = f.write("h1", "node01.example.com slots=2\n");
    let h2 = f.write("h2", "node02.example.com slots=2\n");
    let v = map(&[
        "-n",
        "2",
        "--hostfile",
        &h1,
        "true",
        ":",
        "-n",
        "2",
        "--hostfile",
        &h2,
        "true",
    ]);
    assert_eq!(
        v["nodes"],
        json!([
            {"name": "node01.example.com", "slots": 2, "max_slots": null, "num_procs": 2,
             "oversubscribed": false, "yield_when_idle": false, "procs": [
                {"rank": 0, "app": 0, "app_rank": 0, "local_rank": 0, "node_rank": 0},
                {"rank": 1, "app": 0, "app_rank": 1, "local_rank": 1, "node_rank": 1}]},
            {"name": "node02.example.com", "slots": 2, "max_slots": null, "num_procs": 2,
             "oversubscribed": false, "yield_when_idle": false, "procs": [
                {"rank": 2, "app": 1, "app_rank": 0, "local_rank": 0, "node_rank": 0},
                {"rank": 3, "app": 1, "app_rank": 1, "local_rank": 1, "node_rank": 1}]},
        ])
    );
    // Each app is held to its own hostfile: 3 ranks do not fit on h2.
    let message = fails(&[
        "-n",
        "2",
        "--hostfile",
        &h1,
        "true",
        ":",
        "-n",
        "3",
        "--hostfile",
        &h2,
        "true",
    ]);
    assert!(
        message.starts_with(
            "app 1: not enough slots: 3 ranks requested, 2 slots on node02.example.com (2) (hosts from "
        ),
        "{message}"
    );
    assert!(message.contains("nothing was launched"), "{message}");
}

/// The not-enough-slots message of an MPMD app names where that app's
/// hosts came from: its own hostfile or `--host`, not the first app's.
#[test]
fn hostfile_per_app_mpmd_error_names_the_apps_own_hostfile() {
    let f = Files::new();
    let h1 = f.write("h1", "node01.example.com slots=2\n");
    let h2 = f.write("h2", "node02.example.com slots=2\n");
    let message = fails(&[
        "-n",
        "2",
        "--hostfile",
        &h1,
        "true",
        ":",
        "-n",
        "3",
        "--hostfile",
        &h2,
        "true",
    ]);
    assert!(
        message.starts_with(&format!(
            "app 1: not enough slots: 3 ranks requested, 2 slots on node02.example.com (2) (hosts from hostfile {h2}); nothing was launched"
        )),
        "{message}"
    );
    let message = fails(&[
        "-n",
        "1",
        "--hostfile",
        &h1,
        "true",
        ":",
        "-n",
        "2",
        "--host",
        "b",
        "true",
    ]);
    assert!(
        message.starts_with(
            "app 1: not enough slots: 2 ranks requested, 1 slots on b (1) (hosts from --host); nothing was launched"
        ),
        "{message}"
    );
}

// ---------------------------------------------------------------------------
// Hostfile errors: each names the file and line
// ---------------------------------------------------------------------------

const FORM: &str = "Hostfile lines are `NAME [slots=N] [max_slots=M]`.";

/// Writes `text` as a hostfile and returns mpirun's error about it.
fn hostfile_error(text: &str) -> (String, String) {
    let f = Files::new();
    let path = f.write("hosts", text);
    let message = fails(&["--hostfile", &path, "-n", "1", "true"]);
    (path, message)
}

#[test]
fn hostfile_error_bad_token() {
    let (path, message) = hostfile_error("a slots=2\n# comment\nb slots=2 junk\n");
    assert_eq!(
        message,
        format!("{path}:3: unexpected \"junk\" (expected ATTRIBUTE=VALUE after the host name): \"b slots=2 junk\". {FORM}")
    );
}

#[test]
fn hostfile_error_slots_not_a_number() {
    let (path, message) = hostfile_error("a slots=2\nb slots=x\n");
    assert_eq!(
        message,
        format!("{path}:2: slots needs a whole number, not \"x\": \"b slots=x\". {FORM}")
    );
}

#[test]
fn hostfile_error_negative_slots() {
    let (path, message) = hostfile_error("a slots=-1\n");
    assert_eq!(
        message,
        format!("{path}:1: slots cannot be negative (-1): \"a slots=-1\". {FORM}")
    );
    let (path, message) = hostfile_error("\na max_slots=-3\n");
    assert_eq!(
        message,
        format!("{path}:2: max_slots cannot be negative (-3): \"a max_slots=-3\". {FORM}")
    );
}

#[test]
fn hostfile_error_slots_too_large() {
    let (path, message) = hostfile_error("a slots=99999999999\n");
    assert_eq!(
        message,
        format!("{path}:1: slots=99999999999 is too large: \"a slots=99999999999\". {FORM}")
    );
}

#[test]
fn hostfile_error_max_slots_below_slots() {
    let (path, message) = hostfile_error("\n\na slots=4 max_slots=2\n");
    assert_eq!(
        message,
        format!("{path}:3: max_slots=2 is less than slots=4: \"a slots=4 max_slots=2\". {FORM}")
    );
}

#[test]
fn hostfile_error_unknown_attribute() {
    let (path, message) = hostfile_error("a colour=red\n");
    assert_eq!(
        message,
        format!("{path}:1: unknown attribute \"colour\" (known: slots, max_slots, username, port): \"a colour=red\". {FORM}")
    );
}

#[test]
fn hostfile_error_attribute_given_twice() {
    let (path, message) = hostfile_error("a slots=1 slots=2\n");
    assert_eq!(
        message,
        format!("{path}:1: slots is given twice on this line: \"a slots=1 slots=2\". {FORM}")
    );
}

#[test]
fn hostfile_error_not_a_host_name() {
    let (path, message) = hostfile_error("slots=2\n");
    assert_eq!(
        message,
        format!("{path}:1: the line starts with \"slots=2\", not a host name: \"slots=2\". {FORM}")
    );
    let (path, message) = hostfile_error("a\nbad/name\n");
    assert_eq!(
        message,
        format!("{path}:2: \"bad/name\" is not a host name: \"bad/name\". {FORM}")
    );
}

#[test]
fn hostfile_error_exclusions_and_relative_hosts() {
    for name in ["^node1", "+n0"] {
        let (path, message) = hostfile_error(&format!("{name}\n"));
        assert_eq!(
            message,
            format!("{path}:1: \"{name}\" (excluding a host with ^ or a relative +n host) is not supported; list the hosts to use: \"{name}\". {FORM}")
        );
    }
}

#[test]
fn hostfile_error_empty_user_name() {
    let (path, message) = hostfile_error("@node1\n");
    assert_eq!(
        message,
        format!("{path}:1: \"@node1\" has an empty user name before @: \"@node1\". {FORM}")
    );
}

#[test]
fn hostfile_error_username_and_port() {
    let (path, message) = hostfile_error("a username=\n");
    assert_eq!(
        message,
        format!("{path}:1: username needs a value: \"a username=\". {FORM}")
    );
    let (path, message) = hostfile_error("a port=70000\n");
    assert_eq!(
        message,
        format!("{path}:1: port needs a number from 0 to 65535, not \"70000\": \"a port=70000\". {FORM}")
    );
}

#[test]
fn hostfile_error_no_host() {
    let (path, message) = hostfile_error("# only a comment\n\n");
    assert_eq!(
        message,
        format!("hostfile {path} lists no host; add one host per line (NAME [slots=N])")
    );
}

#[test]
fn hostfile_error_missing_file() {
    let f = Files::new();
    let path = f.dir.path().join("no-such-hostfile").display().to_string();
    let message = fails(&["--hostfile", &path, "-n", "1", "true"]);
    assert!(
        message.starts_with(&format!("cannot read hostfile {path}: ")),
        "{message}"
    );
}

/// Comments, blank lines, CRLF and attribute synonyms are accepted.
#[test]
fn hostfile_comments_blank_lines_and_synonyms() {
    let f = Files::new();
    let h = f.write(
        "h",
        "\n   \n# only a comment\r\n  a slots=2 # two\r\n\tb cpu = 3 max-slots= 4\r\nc count=1\n",
    );
    let v = map(&["--hostfile", &h, "true"]);
    assert_eq!(node_names(&v), ["a", "b", "c"]);
    assert_eq!(node(&v, "a")["slots"], 2);
    assert_eq!(node(&v, "b")["slots"], 3);
    assert_eq!(node(&v, "b")["max_slots"], 4);
    assert_eq!(node(&v, "c")["slots"], 1);
    assert_eq!(v["num_procs"], 6);
}
