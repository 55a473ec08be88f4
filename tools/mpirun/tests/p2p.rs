//! Point-to-point messaging end to end: real jobs under mpirun over
//! `--mca btl self,tcp --mca btl_tcp_if_include lo`, running the
//! `p2p_check` scenarios (core/mpi/examples) and the `oxmpi` examples.

mod common;

use common::*;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

fn check_program() -> String {
    built("p2p_check").display().to_string()
}

/// Runs `p2p_check` with `n` ranks over self,tcp plus `extra` mpirun options.
fn run_check(n: usize, extra: &[&str], scenario: &[&str]) -> Run {
    let n = n.to_string();
    let program = check_program();
    let mut args: Vec<&str> = vec!["-n", &n];
    args.extend(TCP);
    args.extend(extra);
    args.push(&program);
    args.extend(scenario);
    mpirun(&args)
}

fn assert_ok(run: &Run) {
    assert_eq!(
        run.code(),
        0,
        "job failed\nstdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
}

#[test]
fn every_size_from_0_bytes_to_64_mib_arrives_intact() {
    let run = run_check(2, &[], &["sizes"]);
    assert_ok(&run);
    assert!(run.stdout.contains("rank 0: sizes ok"), "{}", run.stdout);
    assert!(run.stdout.contains("rank 1: sizes ok"), "{}", run.stdout);
}

#[test]
fn wildcard_receives_keep_each_senders_order() {
    let run = run_check(4, &[], &["wildcard"]);
    assert_ok(&run);
    assert!(
        run.stdout.contains("wildcard ok (600 messages in order)"),
        "{}",
        run.stdout
    );
}

#[test]
fn ten_thousand_unexpected_messages_are_received_in_order() {
    let run = run_check(2, &[], &["flood"]);
    assert_ok(&run);
    assert!(run.stdout.contains("flood ok"), "{}", run.stdout);
}

#[test]
fn truncation_is_reported_and_keeps_the_first_bytes() {
    let run = run_check(2, &[], &["truncate"]);
    assert_ok(&run);
    assert_eq!(
        run.stdout.matches("truncated as expected").count(),
        2,
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("truncate ok"), "{}", run.stdout);
    // The message says what happened, with the sizes.
    assert!(run.stdout.contains("100"), "{}", run.stdout);
}

#[test]
fn synchronous_send_completes_only_after_the_receive_is_posted() {
    let run = run_check(2, &[], &["ssend"]);
    assert_ok(&run);
    assert_eq!(
        run.stdout
            .matches("completed only after the receive")
            .count(),
        2,
        "{}",
        run.stdout
    );
}

#[test]
fn send_to_self_works_on_world_and_self() {
    let run = run_check(2, &[], &["self"]);
    assert_ok(&run);
    assert_eq!(run.stdout.matches("self ok").count(), 2, "{}", run.stdout);
}

#[test]
fn without_the_self_btl_a_send_to_self_fails_with_the_hint() {
    let program = check_program();
    let run = mpirun(&[
        "-n",
        "1",
        "--mca",
        "btl",
        "^self",
        "--mca",
        "btl_tcp_if_include",
        "lo",
        &program,
        "noself",
    ]);
    assert_ok(&run);
    let out = &run.stdout;
    assert!(
        out.contains("send to self refused (Unreachable)"),
        "{out}\n{}",
        run.stderr
    );
    assert!(out.contains("rank 0"), "{out}");
    assert!(out.contains("tcp"), "the btls tried are named: {out}");
    assert!(
        out.contains("self btl"),
        "the hint names the self btl: {out}"
    );
    assert!(out.contains("^self"), "the hint shows the setting: {out}");
}

#[test]
fn two_tcp_links_both_carry_a_striped_stream() {
    let run = run_check(
        2,
        &[
            "--mca",
            "btl_tcp_links",
            "2",
            "--mca",
            "btl_base_verbose",
            "30",
        ],
        &["stream"],
    );
    assert_ok(&run);
    assert!(run.stdout.contains("stream ok"), "{}", run.stdout);
    // Rank 0 connects both of its links to rank 1.
    let connects: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("connect") && l.contains("link 1"))
        .collect();
    assert!(
        !connects.is_empty(),
        "no connection on link 1:\n{}",
        run.stderr
    );
}

#[test]
fn a_peer_killed_mid_transfer_ends_the_job_with_a_report() {
    let start = Instant::now();
    let run = run_check(2, &[], &["killed"]);
    assert_ne!(run.code(), 0);
    assert!(
        run.stderr.contains("rank 1") && run.stderr.contains("SIGKILL"),
        "the report names the rank and the signal:\n{}",
        run.stderr
    );
    assert!(start.elapsed() < Duration::from_secs(50));
}

/// Runs `p2p_check stdin_go` on 2 ranks; once both listen, `strangers`
/// connects to their ports (the sockets stay open until the job ended),
/// then rank 0 is told to go. Returns the job's status, stdout and stderr.
fn stdin_go_with_strangers(
    strangers: impl FnOnce(&[u16]) -> Vec<std::net::TcpStream>,
) -> (std::process::ExitStatus, String, String) {
    let program = check_program();
    let (mut cmd, marker) = command(&[
        "-n",
        "2",
        "--mca",
        "btl",
        "self,tcp",
        "--mca",
        "btl_tcp_if_include",
        "lo",
        "--mca",
        "btl_base_verbose",
        "20",
        &program,
        "stdin_go",
    ]);
    cmd.stdin(Stdio::piped());
    let mut child = cmd.spawn().expect("mpirun starts");
    let mut stdin = child.stdin.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    // Find the ports the ranks listen on.
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line.clone());
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let mut ports = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while ports.len() < 2 && Instant::now() < deadline {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(100)) {
            if let Some(rest) = line.split("listening on ").nth(1) {
                if let Some(port) = rest
                    .split_whitespace()
                    .next()
                    .and_then(|a| a.rsplit(':').next())
                    .and_then(|p| {
                        p.trim_end_matches(|c: char| !c.is_ascii_digit())
                            .parse::<u16>()
                            .ok()
                    })
                {
                    ports.push(port);
                }
            }
        }
    }
    assert!(!ports.is_empty(), "no rank logged its listening port");
    // The ranks deal with strangers from inside MPI calls (rank 1 is
    // waiting in one; rank 0 once it has read "go").
    let strangers = strangers(&ports);
    stdin.write_all(b"go\n").unwrap();
    drop(stdin);
    let mut stdout = child.stdout.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > HARD_TIMEOUT {
            let _ = killpg(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
            panic!("the job did not finish");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let out = out_t.join().unwrap();
    let err = reader.join().unwrap();
    drop(strangers);
    assert_no_survivors(&marker);
    (status, out, err)
}

#[test]
fn a_stranger_connecting_to_a_rank_is_refused_and_nothing_is_delivered() {
    // Garbage, and a well-formed-looking but wrong hello.
    let (status, out, err) = stdin_go_with_strangers(|ports| {
        let mut strangers = Vec::new();
        for &port in ports {
            for junk in [&b"GET / HTTP/1.0\r\n\r\n"[..], &[0u8; 64][..]] {
                if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
                    let _ = s.write_all(junk);
                    strangers.push(s);
                }
            }
        }
        strangers
    });
    assert!(status.success(), "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("only the job's messages arrived"), "{out}");
    assert!(err.contains("refused"), "the refusal is logged:\n{err}");
}

#[test]
fn strangers_holding_hundreds_of_idle_connections_cannot_stop_the_job() {
    // 300 silent connections on each rank's port, made before the ranks
    // connect to each other (more than the 256 that may be in their
    // handshake at once).
    let (status, out, err) = stdin_go_with_strangers(|ports| {
        let mut strangers = Vec::new();
        for &port in ports {
            let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
            for _ in 0..300 {
                if let Ok(s) =
                    std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200))
                {
                    strangers.push(s);
                }
            }
        }
        assert!(
            strangers.len() >= 300,
            "only {} connections made",
            strangers.len()
        );
        strangers
    });
    assert!(status.success(), "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("only the job's messages arrived"), "{out}");
    // Refusals are logged one by one only up to a burst per rank, then
    // summarized: the job's output does not grow with the crowd.
    let one_by_one = err.matches("refused a tcp connection").count();
    assert!(
        one_by_one <= 2 * 10,
        "{one_by_one} refusals logged one by one:\n{err}"
    );
}

#[test]
fn bad_ranks_and_tags_are_refused_and_receives_cancel() {
    let run = run_check(2, &[], &["errors"]);
    assert_ok(&run);
    assert!(
        run.stdout
            .contains("rank 2 is not in MPI_COMM_WORLD (ranks 0 to 1)"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("tag -5 is not valid"), "{}", run.stdout);
    assert_eq!(run.stdout.matches("errors ok").count(), 2, "{}", run.stdout);
}

#[test]
fn thread_levels_are_enforced_and_multiple_threads_communicate() {
    let run = run_check(1, &[], &["funneled"]);
    assert_ok(&run);
    assert!(run.stdout.contains("funneled refused"), "{}", run.stdout);
    let run = run_check(2, &[], &["threads"]);
    assert_ok(&run);
    assert_eq!(
        run.stdout.matches("threads ok").count(),
        2,
        "{}",
        run.stdout
    );
}

#[test]
fn setting_both_tcp_interface_lists_is_an_error_naming_both() {
    let program = check_program();
    let run = mpirun(&[
        "-n",
        "2",
        "--mca",
        "btl",
        "self,tcp",
        "--mca",
        "btl_tcp_if_include",
        "lo",
        "--mca",
        "btl_tcp_if_exclude",
        "eth0",
        &program,
        "wildcard",
    ]);
    assert_ne!(run.code(), 0);
    let err = &run.stderr;
    assert!(
        err.contains("btl = \"self,tcp\" (command line) cannot be used"),
        "{err}"
    );
    assert!(
        err.contains("btl_tcp_if_include (\"lo\") and btl_tcp_if_exclude (\"eth0\") are both set"),
        "{err}"
    );
}

#[test]
fn an_unreachable_peer_error_says_why_the_other_btls_were_not_used() {
    // sm is left out, loopback is left out by default and "*" excludes
    // the rest: tcp has no interface, so only self runs and rank 1 cannot
    // reach rank 0.
    let program = check_program();
    let run = mpirun(&[
        "-n",
        "2",
        "--mca",
        "btl",
        "^sm",
        "--mca",
        "btl_tcp_if_exclude",
        "*",
        &program,
        "wildcard",
    ]);
    assert_ne!(run.code(), 0);
    let err = &run.stderr;
    assert!(err.contains("cannot reach rank"), "{err}");
    assert!(err.contains("self only reaches its own process"), "{err}");
    assert!(
        err.contains("Btls not in use in this process: tcp (not available"),
        "{err}"
    );
}

fn example(name: &str) -> String {
    built(name).display().to_string()
}

#[test]
fn the_oxmpi_examples_run_on_1_to_4_ranks() {
    for name in ["hello", "ring", "pingpong"] {
        let program = example(name);
        for n in ["1", "2", "3", "4"] {
            let mut args = vec!["-n", n];
            args.extend(TCP);
            args.push(&program);
            let run = mpirun(&args);
            assert_eq!(
                run.code(),
                0,
                "{name} on {n} ranks failed\nstdout:\n{}\nstderr:\n{}",
                run.stdout,
                run.stderr
            );
        }
    }
}

#[test]
fn hello_runs_with_the_default_btls() {
    let program = example("hello");
    let run = mpirun(&["-n", "2", &program]);
    assert_ok(&run);
    assert!(
        run.stdout.contains("Hello from rank 1 of 2"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_misspelt_component_parameter_is_reported_once_for_the_job() {
    // mpirun does not load btl components, so only the ranks can tell that
    // no component declares the name: rank 0 says so, once.
    let hello = built("hello").display().to_string();
    let mut args = vec!["-n", "3"];
    args.extend(TCP);
    args.extend(["--mca", "btl_tcp_if_inclde", "lo", &hello]);
    let run = mpirun(&args);
    assert_ok(&run);
    let warnings: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("unknown parameter btl_tcp_if_inclde"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", run.stderr);
    assert!(
        warnings[0].contains("Did you mean btl_tcp_if_include?"),
        "{}",
        run.stderr
    );
    // Framework-level names are mpirun's to check: no rank repeats them.
    let mut args = vec!["-n", "2"];
    args.extend(TCP);
    args.extend(["--mca", "btl_base_verbos", "0", &hello]);
    let run = mpirun(&args);
    assert_ok(&run);
    assert_eq!(
        run.stderr
            .matches("unknown parameter btl_base_verbos")
            .count(),
        1,
        "{}",
        run.stderr
    );
}
