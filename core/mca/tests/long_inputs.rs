//! Huge names and values, through `Mca::init`: every diagnostic quotes a
//! bounded excerpt (80 characters then `…(N bytes)`), and a huge unknown
//! name costs no time in "did you mean" suggestions.

mod common;

use common::{Diagnostics, World};
use oxmpi_mca::{Mca, Severity};
use std::sync::mpsc;
use std::time::Duration;

/// `Mca::init` on another thread, at most 30 seconds.
fn init_within_time(w: &World) -> Diagnostics {
    let inputs = w.inputs();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mca = Mca::init(inputs);
        let _ = tx.send(Diagnostics(mca.take_diagnostics()));
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("Mca::init took more than 30 s")
}

/// Every diagnostic is short.
fn all_short(d: &Diagnostics) {
    for m in &d.0 {
        assert!(
            m.message.len() < 1500,
            "a diagnostic of {} bytes: {}…",
            m.message.len(),
            &m.message[..1500]
        );
    }
}

#[test]
fn a_huge_unknown_name_from_the_environment() {
    let mut w = World::new();
    let name = format!("btl_{}", "x".repeat(4 << 20));
    w.set_param_env(&name, "1");
    let d = init_within_time(&w);
    all_short(&d);
    let m = d.expect_one(Severity::Warning, &["unknown parameter btl_xxx"]);
    assert!(m.contains(&format!("…({} bytes)", name.len())), "{m}");
    assert!(
        m.contains(&format!(
            "(set by environment variable OXMPI_MCA_btl_{}…({} bytes))",
            "x".repeat(80 - "OXMPI_MCA_btl_".len()),
            name.len() + "OXMPI_MCA_".len()
        )),
        "{m}"
    );
}

#[test]
fn a_huge_invalid_value_on_the_command_line() {
    let mut w = World::new();
    let value = "9".repeat(5 << 20);
    w.set_mca("btl_base_verbose", &value);
    let d = init_within_time(&w);
    all_short(&d);
    let m = d.expect_one(Severity::Error, &["invalid value"]);
    assert!(
        m.starts_with(&format!(
            "invalid value \"{}…(5242880 bytes)\" for parameter btl_base_verbose (from --mca btl_base_verbose on the command line): \"{}…(5242880 bytes)\" is not a valid choice.",
            "9".repeat(80),
            "9".repeat(80)
        )),
        "{m}"
    );
}

#[test]
fn huge_values_given_twice_and_to_a_read_only_parameter() {
    let mut w = World::new();
    w.set_mca("btl", &"a".repeat(1 << 20));
    w.set_mca("btl", &"b".repeat(1 << 20));
    w.set_param_env("mca_base_override_param_file", &"c".repeat(1 << 20));
    let d = init_within_time(&w);
    all_short(&d);
    let m = d.expect_one(Severity::Error, &["is given twice"]);
    assert!(m.contains("…(1048576 bytes)\" and \"bbb"), "{m}");
    let m = d.expect_one(Severity::Warning, &["cannot be set from"]);
    assert!(m.contains("the value \"ccc"), "{m}");
    // The selection names a component that is not there: quoted short too.
    d.expect_one(Severity::Error, &["asks for component"]);
}

#[test]
fn a_huge_selection_list() {
    let mut w = World::new();
    let list = (0..100_000)
        .map(|i| format!("c{i}"))
        .collect::<Vec<_>>()
        .join(",");
    w.set_param_env("btl", &list);
    w.set_param_env("pml", &format!("a,^{}", "b".repeat(1 << 20)));
    w.set_param_env("coll", &format!("{},,x", "d".repeat(1 << 20)));
    let d = init_within_time(&w);
    all_short(&d);
    d.expect_one(Severity::Error, &["parameter btl = \"c0,c1,"]);
    d.expect_one(Severity::Error, &["parameter pml = \"a,^bbb", "mixes"]);
    d.expect_one(
        Severity::Error,
        &["parameter coll = \"ddd", "empty component name"],
    );
}

#[test]
fn huge_lines_in_parameter_and_tune_files() {
    let mut w = World::new();
    w.write_user_file(&format!(
        "ok = 1\n{}\nbad name{} = 1\n",
        "w".repeat(900_000),
        "n".repeat(900_000 / 10)
    ));
    w.add_tune_file(
        "job.tune",
        &format!(
            "--mca {}x 1\n{}\n-x A=1 {}=2\n",
            "=".repeat(100_000),
            "u".repeat(100_000),
            "%".repeat(100_000)
        ),
    );
    let d = init_within_time(&w);
    all_short(&d);
    let file = w.user_file().display().to_string();
    d.expect_one(
        Severity::Error,
        &[
            &format!("{file}:2: no `=` on the line: \"www"),
            "…(900000 bytes)\"",
        ],
    );
    d.expect_one(
        Severity::Error,
        &[
            &format!("{file}:3: \"bad name"),
            "is not a valid parameter name",
        ],
    );
    for line in 1..=3 {
        d.expect_one(Severity::Error, &[&format!("job.tune:{line}: ")]);
    }
}

#[test]
fn an_environment_value_that_is_not_text_is_an_error() {
    let w = World::new();
    let mut inputs = w.inputs();
    inputs.env_not_text = vec!["OXMPI_MCA_btl".to_string()];
    let mca = Mca::init(inputs);
    let d = Diagnostics(mca.take_diagnostics());
    d.expect_one(
        Severity::Error,
        &["environment variable OXMPI_MCA_btl", "not valid UTF-8 text"],
    );
}
