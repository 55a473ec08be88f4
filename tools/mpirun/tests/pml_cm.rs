//! pml cm over mtl ofi end to end: real jobs under mpirun with `--mca pml
//! cm` and libfabric's tcp provider (`tcp;ofi_rxm`, named with
//! `mtl_ofi_provider_include`, as the default exclude list leaves it
//! out), running the `p2p_check` scenarios, the `oxmpi` examples and the
//! collectives' checks on 2 and 4 ranks, in the default tag layout and in
//! `ofi_tag_2`; scalable endpoints (`mtl_ofi_thread_grouping`) over the
//! sockets provider, the one here that has them; the selection (ob1
//! stays the default without a fabric device, and
//! `pml_base_verbose`/`mtl_base_verbose` say why) and the errors of wrong
//! settings.

mod common;

use common::pmls::{all_output, assert_ok, program_prints, run_over, Transport};
use common::*;

/// cm over libfabric's tcp provider, in each tag layout the provider
/// offers (it has no FI_REMOTE_CQ_DATA with FI_DIRECTED_RECV, so `auto`
/// is `ofi_tag_1`).
const TRANSPORTS: [Transport; 2] = [
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
    Transport {
        name: "cm/ofi tcp, ofi_tag_2",
        options: &[
            "--mca",
            "pml",
            "cm",
            "--mca",
            "mtl_ofi_provider_include",
            "tcp",
            "--mca",
            "mtl_ofi_tag_mode",
            "ofi_tag_2",
        ],
    },
];

/// Runs a `p2p_check` scenario over cm in the default layout (the
/// layouts differ only in the tag's bits, checked by the tags module's
/// tests; `ofi_tag_2` runs the error and collective checks below).
fn scenario(n: usize, args: &[&str], expect: &str, times: usize) {
    common::pmls::scenario(&TRANSPORTS[..1], n, args, expect, times);
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
fn a_truncated_receive_is_reported_and_the_connection_carries_on() {
    // The scenario receives a message after the truncations.
    scenario(2, &["truncate"], "truncated as expected", 2);
    scenario(2, &["truncate"], "truncate ok", 1);
}

#[test]
fn a_synchronous_send_completes_only_after_its_receive() {
    scenario(2, &["ssend"], "completed only after the receive", 2);
}

#[test]
fn sends_to_self_and_streams_work() {
    scenario(2, &["self"], "self ok", 2);
    scenario(2, &["stream"], "stream ok", 1);
}

#[test]
fn bad_ranks_and_tags_are_refused_up_to_each_layouts_largest_tag() {
    let program = built("p2p_check").display().to_string();
    for (t, bound) in TRANSPORTS.iter().zip(["2147483647", "524287"]) {
        let run = run_over(t, 2, &program, &["errors"]);
        assert_ok(&run, &format!("p2p_check errors over {}", t.name));
        assert_eq!(run.stdout.matches("errors ok").count(), 2, "{}", run.stdout);
        assert!(
            run.stdout.contains(&format!("tags go from 0 to {bound}")),
            "{}: {}",
            t.name,
            run.stdout
        );
    }
}

#[test]
fn the_oxmpi_examples_run_on_2_and_4_ranks() {
    for name in ["hello", "ring", "pingpong"] {
        let program = built(name).display().to_string();
        for n in [2, 4] {
            let run = run_over(&TRANSPORTS[0], n, &program, &[]);
            assert_ok(&run, &format!("{name} on {n} ranks over cm"));
        }
    }
}

#[test]
fn blocking_and_non_blocking_collectives_run_over_cm() {
    // Internal (negative) tags down to the collectives' lowest fit
    // ofi_tag_2's 20-bit tag field.
    for (name, expect) in [
        ("coll_check", "coll ok"),
        ("nbc_check", "nbc ok"),
        ("comm_check", "comm ok"),
    ] {
        program_prints(&TRANSPORTS, name, 4, &[], expect, 4);
    }
}

/// cm over a scalable endpoint of libfabric's sockets provider with 4
/// context pairs: communicators use different pairs.
const GROUPED: Transport = Transport {
    name: "cm/ofi sockets, thread grouping",
    options: &[
        "--mca",
        "pml",
        "cm",
        "--mca",
        "mtl_ofi_provider_include",
        "sockets",
        "--mca",
        "mtl_ofi_thread_grouping",
        "1",
        "--mca",
        "mtl_ofi_num_ctxts",
        "4",
        "--mca",
        "mtl_base_verbose",
        "10",
    ],
};

#[test]
fn scalable_endpoints_carry_each_communicator_on_its_context_pair() {
    let grouped = [GROUPED];
    for (args, expect, times) in [
        (&["sizes", "4194304"][..], "sizes ok", 2),
        (&["wildcard"][..], "wildcard ok", 1),
        (&["truncate"][..], "truncate ok", 1),
        (&["threads"][..], "threads ok", 2),
    ] {
        common::pmls::scenario(&grouped, 2, args, expect, times);
    }
    // Communicators of several context ids: every pair in use.
    for (name, expect) in [
        ("comm_check", "comm ok"),
        ("coll_check", "coll ok"),
        ("nbc_check", "nbc ok"),
    ] {
        program_prints(&grouped, name, 4, &[], expect, 4);
    }
    let run = run_over(&GROUPED, 2, &built("hello").display().to_string(), &[]);
    assert_ok(&run, "hello over a scalable endpoint");
    assert_eq!(
        all_output(&run)
            .matches(
                "scalable endpoint of provider sockets with 4 transmit and receive context pairs"
            )
            .count(),
        2,
        "{}",
        all_output(&run)
    );
}

#[test]
fn thread_grouping_over_a_provider_without_scalable_endpoints_is_declined_with_the_reason() {
    let run = hello_with(&[
        "--mca",
        "pml",
        "cm",
        "--mca",
        "mtl_ofi_provider_include",
        "tcp",
        "--mca",
        "mtl_ofi_thread_grouping",
        "1",
    ]);
    assert_ne!(run.code(), 0, "{}", run.stdout);
    let out = all_output(&run);
    assert!(
        out.contains(
            "mtl_ofi_thread_grouping asks for a scalable endpoint, and provider tcp;ofi_rxm offers none"
        ),
        "{out}"
    );
    assert!(out.contains("unset mtl_ofi_thread_grouping"), "{out}");
}

fn hello_with(extra: &[&str]) -> Run {
    let hello = built("hello").display().to_string();
    let mut args = vec!["-n", "2"];
    args.extend(extra);
    args.push(&hello);
    mpirun(&args)
}

#[test]
fn ob1_stays_the_default_without_a_fabric_device_and_the_log_says_why() {
    let run = hello_with(&[
        "--mca",
        "pml_base_verbose",
        "100",
        "--mca",
        "mtl_base_verbose",
        "100",
    ]);
    assert_ok(&run, "hello with the default pml");
    let out = all_output(&run);
    assert!(out.contains("pml:ob1: selected (priority 20)"), "{out}");
    assert!(
        out.contains("pml:cm: declined: no usable mtl component (ofi: declined: this host has no fabric device"),
        "{out}"
    );
}

#[test]
fn the_chosen_provider_and_tag_layout_are_logged() {
    let run = hello_with(&[
        "--mca",
        "pml",
        "cm",
        "--mca",
        "mtl_ofi_provider_include",
        "tcp",
        "--mca",
        "mtl_base_verbose",
        "100",
    ]);
    assert_ok(&run, "hello over cm");
    let out = all_output(&run);
    assert!(
        out.contains("mtl:ofi: provider tcp;ofi_rxm: may be used"),
        "{out}"
    );
    assert!(
        out.contains("mtl:ofi: provider shm: skipped: not in mtl_ofi_provider_include"),
        "{out}"
    );
    assert!(
        out.contains(
            "ofi_tag_1: context id 12 bits (max 4095), source 18 bits (max 262143), tag 32 bits"
        ),
        "{out}"
    );
}

#[test]
fn wrong_settings_fail_with_what_to_do() {
    // ofi_tag_full needs what the tcp provider does not offer together.
    let run = hello_with(&[
        "--mca",
        "pml",
        "cm",
        "--mca",
        "mtl_ofi_provider_include",
        "tcp",
        "--mca",
        "mtl_ofi_tag_mode",
        "ofi_tag_full",
    ]);
    assert_ne!(run.code(), 0, "{}", run.stdout);
    let out = all_output(&run);
    assert!(out.contains("ofi_tag_full"), "{out}");
    assert!(
        out.contains("FI_REMOTE_CQ_DATA") || out.contains("FI_DIRECTED_RECV"),
        "{out}"
    );
    // Both provider lists set.
    let run = hello_with(&[
        "--mca",
        "pml",
        "cm",
        "--mca",
        "mtl_ofi_provider_include",
        "tcp",
        "--mca",
        "mtl_ofi_provider_exclude",
        "shm",
    ]);
    assert_ne!(run.code(), 0, "{}", run.stdout);
    assert!(
        all_output(&run).contains("are both set; they are mutually exclusive"),
        "{}",
        all_output(&run)
    );
    // libfabric 1.17's shm provider cannot carry MPI's matching.
    let run = hello_with(&[
        "--mca",
        "pml",
        "cm",
        "--mca",
        "mtl_ofi_provider_include",
        "shm",
    ]);
    assert_ne!(run.code(), 0, "{}", run.stdout);
    let out = all_output(&run);
    assert!(
        out.contains("shm provider cannot carry MPI's matching"),
        "{out}"
    );
    assert!(out.contains("use the sm btl"), "{out}");
}
