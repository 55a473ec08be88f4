//! `<fw>_base_verbose` logs every selection decision through `tracing`, in
//! the `[host:pid] fw:component: message` format, and nothing below the
//! configured level.

mod common;

use common::{Fixture, World};
use oxmpi_mca::log::McaFormat;
use std::io::Write;
use std::sync::{Arc, Mutex};

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs `f` with the MCA log format and returns what it logged.
fn logged(f: impl FnOnce()) -> String {
    let buffer = Buffer::default();
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .event_format(McaFormat::new())
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::with_default(subscriber, f);
    let bytes = buffer.0.lock().unwrap().clone();
    String::from_utf8(bytes).unwrap()
}

/// Runs open + query + select of btl with the fixture, twin and panicky
/// components installed, and returns what was logged.
fn select_btl_with(verbose: &str, selection: Option<&str>) -> String {
    let mut world = World::new();
    world.install(Fixture::Good, "libmca_btl_fixture.so");
    world.install(Fixture::Twin, "libmca_btl_twin.so");
    world.install(Fixture::Panics, "libmca_btl_panicky.so");
    world.set_param_env("btl_base_verbose", verbose);
    world.set_param_env("btl_fixture_priority", "42");
    if let Some(s) = selection {
        world.set_param_env("btl", s);
    }
    logged(|| {
        let (mca, _) = world.init();
        let mut fw = mca.open_framework("btl").expect("btl opens");
        fw.select().expect("multi-select never fails");
        fw.close();
    })
}

#[test]
fn component_level_logs_every_decision_with_prefix() {
    let log = select_btl_with("component", Some("^twin"));
    let prefix = format!("[{}:{}] ", gethostname(), std::process::id());
    for line in log.lines() {
        assert!(line.starts_with(&prefix), "bad prefix: {line}");
    }
    let expect = [
        "btl:twin: excluded by btl = \"^twin\" (from environment)",
        "btl:panicky: skipped component library ",
        "btl:fixture: query: usable, priority 42",
        "btl:fixture: selected (priority 42)",
    ];
    for e in expect {
        assert!(log.contains(e), "missing {e:?} in:\n{log}");
    }
    assert!(
        log.contains("(btl component panicky): its open panicked: "),
        "{log}"
    );
    assert!(
        !log.contains("opening "),
        "info-level lines must not print at 10:\n{log}"
    );
}

#[test]
fn info_level_adds_detail_and_default_level_is_silent() {
    let log = select_btl_with("info", None);
    assert!(log.contains("btl:fixture: opening "), "{log}");
    assert!(log.contains("btl:twin: selected"), "{log}");
    let quiet = select_btl_with("0", None);
    assert_eq!(quiet, "", "nothing is logged at verbosity 0");
}

#[test]
fn near_miss_file_names_are_logged_at_mca_base_verbose_component() {
    let capture = |verbose: &str| {
        let mut world = World::new();
        let near = world.write_component_file("libmca_rmapsmine.so", b"x");
        world.set_param_env("mca_base_verbose", verbose);
        let log = logged(|| {
            let (_, d) = world.init();
            assert!(d.is_empty(), "{d}");
        });
        (near, log)
    };
    let (near, log) = capture("component");
    assert!(
        log.contains(&format!(
            "mca:base: {} was ignored: the name does not match libmca_<framework>_<component>.so.",
            near.display()
        )),
        "{log}"
    );
    let (_, quiet) = capture("0");
    assert_eq!(quiet, "");
}

fn gethostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}
