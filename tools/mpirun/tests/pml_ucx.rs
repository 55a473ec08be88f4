//! pml ucx end to end: real jobs under mpirun with `--mca pml ucx` over
//! three sets of UCX transports (`-x UCX_TLS=tcp`, `posix,self`,
//! `cma,tcp`; cma alone cannot carry small messages), running the
//! `p2p_check` scenarios (core/mpi/examples) and the `oxmpi` examples on
//! 2 and 4 ranks; and the selection: ob1 is preferred on a host without
//! InfiniBand, and `pml_base_verbose` says why.

mod common;

use common::pmls::{all_output, assert_ok, program_prints, run_over, Transport};
use common::*;

/// The UCX transport sets every job runs over.
const TRANSPORTS: [Transport; 3] = [
    Transport {
        name: "UCX_TLS=tcp",
        options: &["--mca", "pml", "ucx", "-x", "UCX_TLS=tcp"],
    },
    Transport {
        name: "UCX_TLS=posix,self",
        options: &["--mca", "pml", "ucx", "-x", "UCX_TLS=posix,self"],
    },
    Transport {
        name: "UCX_TLS=cma,tcp",
        options: &["--mca", "pml", "ucx", "-x", "UCX_TLS=cma,tcp"],
    },
];

/// Runs a `p2p_check` scenario on `n` ranks over each transport set.
fn scenario(n: usize, args: &[&str], expect: &str, times: usize) {
    common::pmls::scenario(&TRANSPORTS, n, args, expect, times);
}

#[test]
fn every_size_up_to_16_mib_arrives_intact() {
    scenario(2, &["sizes", "16777216"], "sizes ok", 2);
}

#[test]
fn wildcard_receives_keep_each_senders_order_on_4_ranks() {
    scenario(4, &["wildcard"], "wildcard ok (600 messages in order)", 1);
}

#[test]
fn ten_thousand_unexpected_messages_arrive_in_order() {
    scenario(2, &["flood"], "flood ok", 1);
}

#[test]
fn a_truncated_receive_is_reported_and_says_so() {
    scenario(2, &["truncate"], "truncated as expected", 2);
    // The sentence names the sender, the tag and the buffer.
    let program = built("p2p_check").display().to_string();
    let run = run_over(&TRANSPORTS[0], 2, &program, &["truncate"]);
    assert_ok(&run, "truncate");
    assert!(
        run.stdout.contains(
            "message from rank 1 (tag 0) longer than the 64-byte receive buffer was truncated"
        ),
        "{}",
        run.stdout
    );
}

#[test]
fn a_synchronous_send_completes_only_after_its_receive() {
    scenario(2, &["ssend"], "completed only after the receive", 2);
}

#[test]
fn sends_to_self_work_on_world_and_self() {
    scenario(2, &["self"], "self ok", 2);
}

#[test]
fn bad_ranks_and_tags_are_refused_and_a_receive_is_cancelled() {
    let program = built("p2p_check").display().to_string();
    for t in &TRANSPORTS {
        let run = run_over(t, 2, &program, &["errors"]);
        assert_ok(&run, &format!("p2p_check errors over {}", t.name));
        assert_eq!(
            run.stdout.matches("bad rank refused").count(),
            2,
            "{}",
            run.stdout
        );
        assert_eq!(
            run.stdout.matches("bad tag refused").count(),
            2,
            "{}",
            run.stdout
        );
        // The MPI layer bounds tags by the tag layout's limit.
        assert!(
            run.stdout.contains("tags go from 0 to 8388607"),
            "{}",
            run.stdout
        );
    }
}

#[test]
fn the_oxmpi_examples_run_on_2_and_4_ranks() {
    for name in ["hello", "ring", "pingpong"] {
        let program = built(name).display().to_string();
        for t in &TRANSPORTS {
            for n in [2, 4] {
                let run = run_over(t, n, &program, &[]);
                assert_ok(&run, &format!("{name} on {n} ranks over {}", t.name));
            }
        }
    }
    let program = built("pingpong").display().to_string();
    let run = run_over(&TRANSPORTS[2], 2, &program, &[]);
    assert!(run.stdout.contains("pingpong: ok"), "{}", run.stdout);
}

#[test]
fn ob1_is_preferred_without_infiniband_and_the_verbose_log_says_why() {
    let hello = built("hello").display().to_string();
    let run = mpirun(&[
        "-n",
        "2",
        "--mca",
        "pml",
        "ob1,ucx",
        "--mca",
        "pml_base_verbose",
        "100",
        &hello,
    ]);
    assert_ok(&run, "hello with pml ob1,ucx");
    let out = all_output(&run);
    assert!(
        out.contains("pml:ucx: UCX lists the transports")
            && out.contains("none is one of pml_ucx_tls (rc_verbs,ud_verbs,rc_mlx5,dc_mlx5,ud_mlx5,cuda_ipc,rocm_ipc)")
            && out.contains("so pml ucx asks for priority 19"),
        "{out}"
    );
    assert!(
        out.contains("pml:ucx: not selected: priority 19, ob1 has 20"),
        "{out}"
    );
    assert!(out.contains("pml:ob1: selected (priority 20)"), "{out}");
}

#[test]
fn by_default_ucx_is_not_chosen_on_this_host() {
    let hello = built("hello").display().to_string();
    let run = mpirun(&["-n", "2", "--mca", "pml_base_verbose", "100", &hello]);
    assert_ok(&run, "hello with the default pml");
    let out = all_output(&run);
    assert!(out.contains("pml:ucx: not selected: priority 19"), "{out}");
    assert!(!out.contains("pml:ucx: selected"), "{out}");
}

#[test]
fn a_listed_transport_gives_ucx_its_priority_and_the_log_names_it() {
    let hello = built("hello").display().to_string();
    let run = mpirun(&[
        "-n",
        "2",
        "--mca",
        "pml",
        "ob1,ucx",
        "--mca",
        "pml_ucx_tls",
        "tcp",
        "--mca",
        "pml_ucx_devices",
        "any",
        "--mca",
        "pml_base_verbose",
        "100",
        "-x",
        "UCX_TLS=tcp",
        &hello,
    ]);
    assert_ok(&run, "hello with pml_ucx_tls tcp");
    let out = all_output(&run);
    assert!(
        out.contains("tcp/lo")
            && out
                .contains("match pml_ucx_tls and pml_ucx_devices, so pml ucx asks for priority 51"),
        "{out}"
    );
    assert!(out.contains("pml:ucx: selected (priority 51)"), "{out}");
    assert!(out.contains("uses UCX 1."), "{out}");
}

#[test]
fn a_bad_ucx_setting_fails_init_with_the_reason() {
    let hello = built("hello").display().to_string();
    let run = mpirun(&[
        "-n",
        "1",
        "--mca",
        "pml",
        "ucx",
        "-x",
        "UCX_TLS=no_such_transport",
        &hello,
    ]);
    assert_ne!(run.code(), 0, "{}", run.stdout);
    let out = all_output(&run);
    assert!(
        out.contains("the ucx pml could not start: UCX could not start (ucp_init: No such device)"),
        "{out}"
    );
    assert!(
        out.contains("check the UCX_* environment variables"),
        "{out}"
    );
}

#[test]
fn blocking_and_non_blocking_collectives_run_over_ucx() {
    for (name, expect) in [("coll_check", "coll ok"), ("nbc_check", "nbc ok")] {
        program_prints(&TRANSPORTS, name, 4, &[], expect, 4);
    }
}

#[test]
fn with_peer_error_handling_jobs_run_and_shared_memory_falls_back_without_it() {
    let with = |tls: &'static str| Transport {
        name: tls,
        options: match tls {
            "UCX_TLS=tcp" => &[
                "--mca",
                "pml",
                "ucx",
                "--mca",
                "pml_ucx_peer_failure",
                "true",
                "--mca",
                "pml_base_verbose",
                "10",
                "-x",
                "UCX_TLS=tcp",
            ],
            _ => &[
                "--mca",
                "pml",
                "ucx",
                "--mca",
                "pml_ucx_peer_failure",
                "true",
                "--mca",
                "pml_base_verbose",
                "10",
                "-x",
                "UCX_TLS=posix,self",
            ],
        },
    };
    let program = built("p2p_check").display().to_string();
    let tcp = run_over(&with("UCX_TLS=tcp"), 2, &program, &["sizes", "1048576"]);
    assert_ok(&tcp, "sizes with peer error handling over tcp");
    assert!(
        !all_output(&tcp).contains("handles peer failures"),
        "{}",
        all_output(&tcp)
    );
    let shm = run_over(
        &with("UCX_TLS=posix,self"),
        2,
        &program,
        &["sizes", "1048576"],
    );
    assert_ok(&shm, "sizes with peer error handling over posix,self");
    assert_eq!(shm.stdout.matches("sizes ok").count(), 2, "{}", shm.stdout);
    assert!(
        all_output(&shm).contains("handles peer failures")
            && all_output(&shm).contains("connected without"),
        "the fallback is logged: {}",
        all_output(&shm)
    );
}

#[test]
fn ranks_that_chose_different_pmls_stop_with_both_choices_named() {
    let hello = built("hello").display().to_string();
    // Rank 1 alone asks for ucx (through its own environment); rank 0
    // takes the default.
    let script =
        format!("if [ \"$PMI_RANK\" = 1 ]; then export OXMPI_MCA_pml=ucx; fi; exec '{hello}'");
    let run = mpirun(&["-n", "2", "sh", "-c", &script]);
    assert_ne!(run.code(), 0, "{}", run.stdout);
    let out = all_output(&run);
    assert!(
        out.contains("rank 0 uses the ob1 pml and rank 1 the ucx pml")
            && out.contains("every rank of a job must use the same one"),
        "{out}"
    );
}
