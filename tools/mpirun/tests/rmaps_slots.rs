//! Slot counts and oversubscription through the real mpirun (reference
//! 002, "Calculating the number of slots" and "Oversubscribing nodes"):
//! hostfiles and `--host` with and without slot counts, the local host's
//! slots, the `:OVERSUBSCRIBE` modifier and `max_slots`. Helpers are in
//! `common/rmaps.rs`.

mod common;

use common::rmaps::*;
use serde_json::json;

// ---------------------------------------------------------------------------
// Calculating the number of slots
// ---------------------------------------------------------------------------

/// Example 1: `node01.example.come slots=4`, no `-n` → 4.
#[test]
fn slots_example_hostfile_with_slots() {
    let f = Files::new();
    let h = f.write("my-hostfile", "node01.example.come slots=4\n");
    let v = map(&["--hostfile", &h, "hostname"]);
    assert_eq!(hosts_by_rank(&v), hosts(&["node01.example.come"; 4]));
}

/// Example 2: no `slots` → the host's processor cores; with `:HWTCPUS`,
/// its hardware threads.
#[test]
fn slots_example_hostfile_without_slots() {
    let f = Files::new();
    let h = f.write("my-hostfile", "node01.example.come\n");
    let v = map(&["--hostfile", &h, "hostname"]);
    assert_eq!(
        hosts_by_rank(&v),
        hosts(&vec!["node01.example.come"; local_cores()])
    );
    let v = map(&["--hostfile", &h, "--map-by", ":HWTCPUS", "hostname"]);
    assert_eq!(v["num_procs"], local_hwthreads());
    assert_eq!(node(&v, "node01.example.come")["slots"], local_hwthreads());
}

/// Example 3: `--host node01.example.com` → 1.
#[test]
fn slots_example_host_without_suffix() {
    let v = map(&["--host", "node01.example.com", "hostname"]);
    assert_eq!(hosts_by_rank(&v), hosts(&["node01.example.com"]));
}

/// Example 4: `--host node01.example.com:2` → 2.
#[test]
fn slots_example_host_with_suffix() {
    let v = map(&["--host", "node01.example.com:2", "hostname"]);
    assert_eq!(hosts_by_rank(&v), hosts(&["node01.example.com"; 2]));
}

/// Example 5: `--host node01.example.com:2,node01.example.com` → 3.
#[test]
fn slots_example_host_named_twice() {
    let v = map(&[
        "--host",
        "node01.example.com:2,node01.example.com",
        "hostname",
    ]);
    assert_eq!(hosts_by_rank(&v), hosts(&["node01.example.com"; 3]));
    assert_eq!(node(&v, "node01.example.com")["slots"], 3);
}

// ---------------------------------------------------------------------------
// Oversubscribing nodes
// ---------------------------------------------------------------------------

/// Hostfile `localhost` (slots = the cores) with more ranks than cores
/// fails (the reference: 4 ranks on 2 cores).
#[test]
fn oversubscribing_localhost_fails_without_the_modifier() {
    let f = Files::new();
    let h = f.write("my-hostfile", "localhost\n");
    let cores = local_cores();
    let n = (2 * cores).to_string();
    let message = fails(&["-n", &n, "--hostfile", &h, "true"]);
    assert_eq!(
        message,
        format!(
            "not enough slots: {n} ranks requested, {cores} slots on localhost ({cores}) (hosts from hostfile {h}); {TO_GO_ON}"
        )
    );
}

/// `localhost slots=2`, `-n 4 --map-by :OVERSUBSCRIBE` works; the ranks
/// run in degraded mode (yield when idle) and are not bound.
#[test]
fn oversubscribing_localhost_with_the_modifier() {
    let f = Files::new();
    let h = f.write(
        "my-hostfile",
        "# For the purposes of this example, explicitly tell Open MPI\n# that we have 2 slots on the host.\nlocalhost slots=2\n",
    );
    let v = map(&[
        "-n",
        "4",
        "--hostfile",
        &h,
        "--map-by",
        ":OVERSUBSCRIBE",
        "a.out",
    ]);
    assert_eq!(hosts_by_rank(&v), hosts(&["localhost"; 4]));
    assert_eq!(v["mapping_policy"], "slot:OVERSUBSCRIBE");
    let n = node(&v, "localhost");
    assert_eq!(n["slots"], 2);
    assert_eq!(n["oversubscribed"], true);
    assert_eq!(n["yield_when_idle"], true);
    assert_eq!(field(&v, "localhost", "binding"), vec![json!("unbound"); 4]);
}

/// Aggressive mode: `localhost slots=4`, `-n 4`: mpirun believes the 4
/// slots, so the ranks do not yield.
#[test]
fn slots_above_cores_run_aggressive() {
    let f = Files::new();
    let h = f.write("my-hostfile", "localhost slots=4\n");
    let v = map(&["-n", "4", "--hostfile", &h, "a.out"]);
    let n = node(&v, "localhost");
    assert_eq!(n["oversubscribed"], false);
    assert_eq!(n["yield_when_idle"], false);
    assert_eq!(ranks_on(&v, "localhost"), [0, 1, 2, 3]);
}

/// Project decision: no host list and no scheduler → the local host (named
/// as this machine) may be oversubscribed; `:NOOVERSUBSCRIBE` refuses.
#[test]
fn implicit_local_host_may_be_oversubscribed() {
    let cores = local_cores();
    let me = local_name();
    let n = 4 * cores;
    let v = map(&["-n", &n.to_string(), "true"]);
    assert_eq!(hosts_by_rank(&v), vec![me.clone(); n]);
    assert_eq!(node(&v, &me)["slots"], cores);
    assert_eq!(node(&v, &me)["oversubscribed"], true);
    assert_eq!(node(&v, &me)["yield_when_idle"], true);
    // -n defaults to the cores.
    let v = map(&["true"]);
    assert_eq!(v["num_procs"], cores);
    assert_eq!(node(&v, &me)["oversubscribed"], false);
    let message = fails(&["-n", &n.to_string(), "--map-by", ":NOOVERSUBSCRIBE", "true"]);
    assert!(
        message.starts_with(&format!(
            "not enough slots: {n} ranks requested, {cores} slots on {me} ({cores}) (hosts from the local host); nothing was launched"
        )),
        "{message}"
    );
    assert!(message.contains("instead of :NOOVERSUBSCRIBE"), "{message}");
}

/// `:NOOVERSUBSCRIBE` also refuses the headroom an explicit `max_slots`
/// gives.
#[test]
fn nooversubscribe_refuses_max_slots_headroom() {
    let f = Files::new();
    let my_hosts = f.write("my-hosts", MY_HOSTS);
    let message = fails(&[
        "--hostfile",
        &my_hosts,
        "-n",
        "8",
        "--map-by",
        "slot:NOOVERSUBSCRIBE",
        "true",
    ]);
    assert!(
        message.starts_with("not enough slots: 8 ranks requested, 4 slots on node0 (2), node1 (2)"),
        "{message}"
    );
}
