//! The framework lifecycle (open → query → select → close) with real
//! component libraries: panics and failures are contained and reported,
//! declines carry their reason, priorities (read by the component through
//! the services table) decide the order, and names are checked.

mod common;

use abi_stable::std_types::{RSome, RStr};
use common::{Fixture, World};
use oxmpi_mca::{McaError, Selected, Severity, Source};
use oxmpi_plugin_api::ParamValue;

fn selected(list: &[(&str, i32)]) -> Vec<Selected> {
    list.iter()
        .map(|(name, priority)| Selected {
            name: name.to_string(),
            priority: *priority,
        })
        .collect()
}

/// The reason recorded for `component` by the open framework.
fn reason_for<'a>(reasons: &'a [(String, String)], component: &str) -> &'a str {
    reasons
        .iter()
        .find(|(n, _)| n == component)
        .map(|(_, r)| r.as_str())
        .unwrap_or_else(|| panic!("no reason recorded for {component}: {reasons:?}"))
}

#[test]
fn panicking_open_is_a_warning_and_the_good_component_is_still_selected() {
    let w = World::new();
    let good = w.install(Fixture::Good, "libmca_btl_fixture.so");
    let panicky = w.install(Fixture::Panics, "libmca_btl_panicky.so");
    let (mca, d) = w.init();
    assert!(
        d.is_empty(),
        "loading runs no component code that can panic: {d}"
    );
    assert_eq!(mca.repository().components.len(), 2);

    let mut fw = mca.open_framework("btl").expect("btl opens");
    assert_eq!(fw.components(), ["fixture"]);
    let d = common::Diagnostics(mca.take_diagnostics());
    let warning = d.expect_one(Severity::Warning, &[&panicky.display().to_string()]);
    assert!(
        warning.starts_with(&format!(
            "skipped component library {} (btl component panicky): its open panicked: ",
            panicky.display()
        )),
        "{warning}"
    );
    assert!(
        warning.ends_with(
            ". This is a bug in the component: report it to its authors, and leave it out with --mca btl ^panicky meanwhile."
        ),
        "{warning}"
    );
    // The panic's own message and location are reported, once.
    assert!(
        warning.contains("'the panicky fixture always panics in open' at "),
        "{warning}"
    );
    assert!(warning.contains("lib.rs:"), "{warning}");
    assert_eq!(d.0.len(), 1, "{d}");
    assert!(reason_for(fw.reasons(), "panicky").starts_with("open failed: panicked: "));

    assert_eq!(fw.select().unwrap(), selected(&[("fixture", 10)]));
    fw.close();
    // The process goes on: the library stays loaded and can be opened again.
    let mut again = mca.open_framework("btl").unwrap();
    assert_eq!(again.select().unwrap(), selected(&[("fixture", 10)]));
    assert!(mca.repository().components.iter().any(|c| c.path == good));
}

#[test]
fn failing_open_is_a_warning_naming_the_library() {
    let mut w = World::new();
    let good = w.install(Fixture::Good, "libmca_btl_fixture.so");
    w.install(Fixture::Twin, "libmca_btl_twin.so");
    w.set_param_env("btl_fixture_fail_open", "yes");
    let (mca, d) = w.init();
    assert!(d.is_empty(), "{d}");
    let mut fw = mca.open_framework("btl").unwrap();
    assert_eq!(fw.components(), ["twin"]);
    let d = common::Diagnostics(mca.take_diagnostics());
    let warning = d.expect_one(Severity::Warning, &["its open failed"]);
    assert_eq!(
        warning,
        format!(
            "skipped component library {} (btl component fixture): its open failed: btl_fixture_fail_open is set, so open fails. Fix what the component reports, or leave it out with --mca btl ^fixture.",
            good.display()
        )
    );
    assert_eq!(mca.failures().len(), 1);
    assert_eq!(mca.failures()[0].path, good);
    assert_eq!(
        reason_for(fw.reasons(), "fixture"),
        "open failed: btl_fixture_fail_open is set, so open fails"
    );
    assert_eq!(fw.select().unwrap(), selected(&[("twin", 10)]));
}

#[test]
fn declining_query_gives_its_reason_without_a_warning() {
    let mut w = World::new();
    w.install(Fixture::Good, "libmca_btl_fixture.so");
    w.install(Fixture::Twin, "libmca_btl_twin.so");
    w.set_mca("btl_fixture_decline", "no fixture network on this host");
    let (mca, d) = w.init();
    assert!(d.is_empty(), "{d}");
    let mut fw = mca.open_framework("btl").unwrap();
    assert_eq!(fw.components(), ["fixture", "twin"]);
    let candidates = fw.query().to_vec();
    assert_eq!(candidates.len(), 2);
    assert_eq!(candidates[0].name, "fixture");
    assert_eq!(candidates[0].priority, None);
    assert_eq!(
        reason_for(fw.reasons(), "fixture"),
        "declined: no fixture network on this host"
    );
    assert_eq!(fw.select().unwrap(), selected(&[("twin", 10)]));
    assert!(mca.take_diagnostics().is_empty());
}

#[test]
fn a_component_the_caller_declines_is_passed_over_with_the_callers_reason() {
    let mut w = World::new();
    w.install(Fixture::Good, "libmca_btl_fixture.so");
    w.install(Fixture::Twin, "libmca_btl_twin.so");
    w.set_mca("btl_fixture_priority", "30");
    let (mca, d) = w.init();
    assert!(d.is_empty(), "{d}");
    let mut fw = mca.open_framework("btl").unwrap();
    fw.decline("fixture", "its transport has no usable component");
    // Declining twice, or declining what is not usable, changes nothing.
    fw.decline("fixture", "again");
    fw.decline("absent", "not installed");
    assert_eq!(
        reason_for(fw.reasons(), "fixture"),
        "declined: its transport has no usable component"
    );
    assert_eq!(fw.reasons().len(), 1, "{:?}", fw.reasons());
    assert_eq!(fw.select().unwrap(), selected(&[("twin", 10)]));
}

#[test]
fn priority_decides_the_order_of_usable_components() {
    for (fixture, twin, expected) in [
        ("5", "20", vec![("twin", 20), ("fixture", 5)]),
        ("30", "20", vec![("fixture", 30), ("twin", 20)]),
        ("-1", "0", vec![("twin", 0), ("fixture", -1)]),
    ] {
        let mut w = World::new();
        w.install(Fixture::Good, "libmca_btl_fixture.so");
        w.install(Fixture::Twin, "libmca_btl_twin.so");
        w.set_param_env("btl_fixture_priority", fixture);
        w.set_mca("btl_twin_priority", twin);
        let (mca, d) = w.init();
        assert!(d.is_empty(), "{d}");
        let mut fw = mca.open_framework("btl").unwrap();
        assert_eq!(
            fw.select().unwrap(),
            selected(&expected),
            "fixture {fixture}, twin {twin}"
        );
    }
}

#[test]
fn equal_priorities_are_ordered_by_name_not_by_load_order() {
    let mut w = World::new();
    let first = w.dir("first");
    let second = w.dir("second");
    // twin is found first, yet fixture comes first: ties go by name.
    w.install_in(&first, Fixture::Twin, "libmca_btl_twin.so");
    w.install_in(&second, Fixture::Good, "libmca_btl_fixture.so");
    for path in [
        format!("{}:{}", first.display(), second.display()),
        format!("{}:{}", second.display(), first.display()),
    ] {
        w.set_param_env("mca_base_component_path", &path);
        let (mca, d) = w.init();
        assert!(d.is_empty(), "{d}");
        let mut fw = mca.open_framework("btl").unwrap();
        assert_eq!(
            fw.select().unwrap(),
            selected(&[("fixture", 10), ("twin", 10)]),
            "{path}"
        );
    }
}

#[test]
fn component_reads_its_parameters_through_the_services_table() {
    let mut w = World::new();
    w.install(Fixture::Good, "libmca_btl_fixture.so");
    w.set_param_env("btl_fixture_priority", "77");
    w.write_system_file("btl_fixture_eager_limit = 1m\n");
    let (mca, d) = w.init();
    assert!(d.is_empty(), "{d}");

    // What the core publishes …
    let services = oxmpi_mca::services::services();
    let lookup = |name: &str| (services.param_value())(RStr::from_str(name));
    assert_eq!(lookup("btl_fixture_priority"), RSome(ParamValue::Int(77)));
    assert_eq!(
        lookup("btl_fixture_eager_limit"),
        RSome(ParamValue::Size(1 << 20))
    );
    assert_eq!(
        lookup("btl_fixture_old_eager_limit"),
        RSome(ParamValue::Size(1 << 20))
    );
    assert_eq!(
        lookup("btl_fixture_fail_open"),
        RSome(ParamValue::Bool(false))
    );
    assert!(lookup("btl_fixture_no_such_param").is_none());

    // … is what the component sees in its query.
    let mut fw = mca.open_framework("btl").unwrap();
    assert_eq!(fw.select().unwrap(), selected(&[("fixture", 77)]));
}

#[test]
fn deprecated_synonym_warns_once_and_sets_the_real_parameter() {
    let mut w = World::new();
    w.install(Fixture::Good, "libmca_btl_fixture.so");
    w.write_system_file("btl_fixture_old_eager_limit = 32k\n");
    w.set_param_env("btl_fixture_old_eager_limit", "128k");
    w.set_mca("btl_fixture_old_eager_limit", "256k");
    let (mca, d) = w.init();
    let warnings = d.matching(&["btl_fixture_old_eager_limit"]);
    assert_eq!(warnings.len(), 1, "{d}");
    assert_eq!(warnings[0].severity, Severity::Warning);
    assert!(
        warnings[0]
            .message
            .contains("is deprecated; use btl_fixture_eager_limit instead"),
        "{}",
        warnings[0].message
    );
    assert_eq!(d.0.len(), 1, "no unknown-name warning for a synonym: {d}");
    let r = mca.value("btl_fixture_eager_limit").unwrap();
    assert_eq!(r.value.as_i64(), Some(256 * 1024));
    assert_eq!(r.source, Source::CommandLine);
    assert_eq!(mca.value("btl_fixture_old_eager_limit"), Some(r));
}

#[test]
fn unknown_component_parameter_gets_a_suggestion() {
    let mut w = World::new();
    w.install(Fixture::Good, "libmca_btl_fixture.so");
    w.set_param_env("btl_fixture_priorty", "5");
    let file = w.write_user_file("# site\nbtl_fixture_fail_opne = 1\n");
    let (mca, d) = w.init();
    let warning = d.expect_one(Severity::Warning, &["btl_fixture_priorty"]);
    assert!(
        warning.starts_with("unknown parameter btl_fixture_priorty (set by environment variable OXMPI_MCA_btl_fixture_priorty)"),
        "{warning}"
    );
    assert!(
        warning.contains("Did you mean btl_fixture_priority?"),
        "{warning}"
    );
    let warning = d.expect_one(Severity::Warning, &["btl_fixture_fail_opne"]);
    assert!(
        warning.contains(&format!("{}:2", file.display())),
        "{warning}"
    );
    assert!(
        warning.contains("Did you mean btl_fixture_fail_open?"),
        "{warning}"
    );
    assert_eq!(d.0.len(), 2, "{d}");
    // The typo set nothing.
    assert_eq!(mca.int_value("btl_fixture_priority"), Some(10));

    // Without the component, its parameter is not suggested.
    let mut w2 = World::new();
    w2.set_param_env("btl_fixture_priorty", "5");
    let (_, d) = w2.init();
    let warning = d.expect_one(Severity::Warning, &["btl_fixture_priorty"]);
    assert!(!warning.contains("btl_fixture_priority"), "{warning}");
}

#[test]
fn selection_parameter_excludes_and_requests_by_name() {
    let mut w = World::new();
    w.install(Fixture::Good, "libmca_btl_fixture.so");
    w.install(Fixture::Twin, "libmca_btl_twin.so");
    w.set_param_env("btl", "twin");
    let (mca, d) = w.init();
    assert!(d.is_empty(), "{d}");
    let mut fw = mca.open_framework("btl").unwrap();
    assert_eq!(fw.components(), ["twin"]);
    assert_eq!(
        reason_for(fw.reasons(), "fixture"),
        "excluded by btl = \"twin\" (from environment)"
    );
    assert_eq!(fw.select().unwrap(), selected(&[("twin", 10)]));
    drop(fw);

    w.set_param_env("btl", "^twin");
    let (mca, _) = w.init();
    let mut fw = mca.open_framework("btl").unwrap();
    assert_eq!(fw.select().unwrap(), selected(&[("fixture", 10)]));
    drop(fw);

    // Asking for a component that is not installed is an error at init
    // and when the framework opens, listing what is available.
    w.set_param_env("btl", "fixture,nosuch");
    let (mca, d) = w.init();
    let error = d.expect_one(Severity::Error, &["nosuch"]);
    assert!(
        error.contains("Available btl components: fixture, twin."),
        "{error}"
    );
    match mca.open_framework("btl") {
        Err(McaError::Selection(e)) => assert!(e.to_string().contains("nosuch"), "{e}"),
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("opening btl must fail"),
    };
}

/// Installs rmaps `faulty` with `rmaps_faulty_panic_in` set to `step`.
fn faulty_world(step: &str) -> (World, std::path::PathBuf) {
    let mut w = World::new();
    let path = w.install(Fixture::RmapsFaults, "libmca_rmaps_faulty.so");
    w.set_param_env("rmaps_faulty_panic_in", step);
    (w, path)
}

#[test]
fn panic_in_register_open_or_query_is_a_load_failure_warning() {
    for step in ["register", "open", "query"] {
        let (w, path) = faulty_world(step);
        let (mca, d) = w.init();
        assert!(d.is_empty(), "{d}");
        assert!(mca.failures().is_empty());
        let mut fw = mca.open_framework("rmaps").unwrap();
        let usable = fw.query().iter().filter(|c| c.priority.is_some()).count();
        assert_eq!(usable, 0, "{step}");
        let d = common::Diagnostics(mca.take_diagnostics());
        let warning = d.expect_one(Severity::Warning, &[&path.display().to_string()]);
        assert!(
            warning.starts_with(&format!(
                "skipped component library {} (rmaps component faulty): its {step} panicked: 'the faulty fixture panics in {step} (rmaps_faulty_panic_in)' at ",
                path.display()
            )),
            "{warning}"
        );
        assert!(
            warning.contains("leave it out with --mca rmaps ^faulty"),
            "{warning}"
        );
        let failures = mca.failures();
        assert_eq!(failures.len(), 1, "{failures:?}");
        assert_eq!(failures[0].path, path);
        assert_eq!(failures[0].message(), warning);
        // Opening the framework again neither warns nor lists it twice.
        drop(fw);
        mca.open_framework("rmaps").unwrap().query();
        assert!(mca.take_diagnostics().is_empty());
        assert_eq!(mca.failures().len(), 1);
    }
}

#[test]
fn probe_lists_every_component_whose_entry_points_fail_whatever_the_selection() {
    let (mut w, faulty) = faulty_world("query");
    let panicky = w.install(Fixture::Panics, "libmca_btl_panicky.so");
    w.install(Fixture::Good, "libmca_btl_fixture.so");
    w.set_param_env("btl_fixture_decline", "declines, which is no failure");
    // The user excludes panicky: the probe still lists it.
    w.set_param_env("btl", "^panicky");
    let (mca, d) = w.init();
    assert!(d.is_empty(), "{d}");
    mca.probe_components();
    let failed: Vec<_> = mca
        .failures()
        .into_iter()
        .map(|f| (f.path, f.reason))
        .collect();
    assert_eq!(failed.len(), 2, "{failed:?}");
    assert_eq!(failed[0].0, panicky);
    assert!(
        failed[0].1.starts_with("its open panicked: "),
        "{}",
        failed[0].1
    );
    assert_eq!(failed[1].0, faulty);
    assert!(
        failed[1].1.starts_with("its query panicked: "),
        "{}",
        failed[1].1
    );
    let d = common::Diagnostics(mca.take_diagnostics());
    assert_eq!(d.warnings().len(), 2, "{d}");
}

#[test]
fn show_load_errors_none_hides_lifecycle_warnings_unless_the_component_is_requested() {
    let (mut w, path) = faulty_world("open");
    w.set_param_env("mca_base_component_show_load_errors", "none");
    let (mca, _) = w.init();
    mca.open_framework("rmaps").unwrap();
    assert!(mca.take_diagnostics().is_empty());
    assert_eq!(mca.failures().len(), 1, "still listed");

    w.set_param_env("rmaps", "faulty");
    let (mca, _) = w.init();
    mca.open_framework("rmaps").unwrap();
    let d = common::Diagnostics(mca.take_diagnostics());
    d.expect_one(
        Severity::Warning,
        &[&path.display().to_string(), "its open panicked"],
    );
}

/// A component's `#[derive(Params)]` reader gets what the core resolved:
/// values checked against the declaration by the core (an out-of-range one
/// is an error there and the default stays), typed by the reader.
#[test]
fn derived_params_read_what_the_core_resolved_and_the_core_enforces_ranges() {
    use oxmpi_fixture_good::params::Params;
    use oxmpi_plugin_api::Params as _;

    let mut w = World::new();
    w.install(Fixture::Good, "libmca_btl_fixture.so");
    w.set_mca("btl_fixture_priority", "3000000000");
    w.set_param_env("btl_fixture_decline", "busy");
    w.write_system_file("btl_fixture_old_eager_limit = 2m\n");
    let (_mca, d) = w.init();
    let e = d.expect_one(Severity::Error, &["btl_fixture_priority"]);
    assert!(e.contains("3000000000 is out of range"), "{e}");
    let ctx = oxmpi_mca::services::context(RStr::from_str("btl"), RStr::from_str("fixture"));
    assert_eq!(
        Params::read(&ctx),
        Ok(Params {
            priority: 10,
            decline: "busy".into(),
            fail_open: false,
            eager_limit: 2 << 20,
        })
    );
}
