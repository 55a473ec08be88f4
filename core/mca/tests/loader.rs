//! The component repository against real libraries: every kind of library
//! that must be skipped is skipped with a warning that names its full path
//! and the reason, and the good component next to it still loads.

mod common;

use common::{system_libm, Diagnostics, Fixture, World};
use oxmpi_mca::repository::LoadFailure;
use oxmpi_mca::{Mca, Severity};
use std::path::Path;

/// The failure recorded for `path`, which must be the only one for it.
fn failure<'m>(mca: &'m Mca, path: &Path) -> &'m LoadFailure {
    let found: Vec<&LoadFailure> = mca
        .repository()
        .failures
        .iter()
        .filter(|f| f.path == path)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "expected one failure for {}, got {:#?}",
        path.display(),
        mca.repository().failures
    );
    found[0]
}

/// Checks that `path` was skipped for a reason containing `reason`, with a
/// warning that names the full path and gives that reason.
fn assert_skipped<'m>(
    mca: &'m Mca,
    diagnostics: &Diagnostics,
    path: &Path,
    reason: &str,
) -> &'m LoadFailure {
    let f = failure(mca, path);
    assert!(
        f.reason.contains(reason),
        "reason of {}: {}",
        path.display(),
        f.reason
    );
    assert!(!f.hint.is_empty());
    let full_path = path.display().to_string();
    assert!(full_path.starts_with('/'), "{full_path}");
    let warning = diagnostics.expect_one(Severity::Warning, &[&full_path]);
    assert!(
        warning.starts_with(&format!("skipped component library {full_path} ")),
        "{warning}"
    );
    assert!(warning.contains(reason), "{warning}");
    assert!(
        !mca.repository().components.iter().any(|c| c.path == path),
        "{} must not be loaded",
        path.display()
    );
    f
}

fn loaded_names(mca: &Mca) -> Vec<String> {
    mca.repository()
        .components
        .iter()
        .map(|c| format!("{}/{}", c.framework, c.name))
        .collect()
}

#[test]
fn good_fixture_loads_and_declares_its_parameters() {
    let w = World::new();
    let path = w.install(Fixture::Good, "libmca_btl_fixture.so");
    let (mca, d) = w.init();
    assert!(d.is_empty(), "{d}");
    assert_eq!(loaded_names(&mca), ["btl/fixture"]);
    let c = &mca.repository().components[0];
    assert_eq!(c.path, path);
    assert_eq!(c.interface_version, oxmpi_framework_btl::INTERFACE_VERSION);
    for name in [
        "btl_fixture_priority",
        "btl_fixture_decline",
        "btl_fixture_fail_open",
        "btl_fixture_eager_limit",
    ] {
        let r = mca
            .value(name)
            .unwrap_or_else(|| panic!("{name} is declared"));
        assert_eq!(r.source, oxmpi_mca::Source::Default, "{name}");
    }
    assert_eq!(mca.int_value("btl_fixture_priority"), Some(10));
    assert_eq!(mca.int_value("btl_fixture_eager_limit"), Some(65536));
    assert_eq!(
        mca.repository().searched,
        std::slice::from_ref(&w.components)
    );
}

#[test]
fn fixture_library_names_never_match_the_component_pattern() {
    for fixture in [
        Fixture::Good,
        Fixture::Twin,
        Fixture::Panics,
        Fixture::WrongInterface,
        Fixture::AbiMismatch,
        Fixture::WrongModule,
        Fixture::ParamsDup,
        Fixture::ParamsClash,
        Fixture::RmapsFaults,
    ] {
        let name = fixture.library_file_name();
        assert_eq!(
            oxmpi_mca::repository::component_file_name(name),
            None,
            "{name}"
        );
    }
}

#[test]
fn junk_file_is_skipped_as_not_loadable() {
    let w = World::new();
    let good = w.install(Fixture::Good, "libmca_btl_fixture.so");
    let junk = w.write_component_file("libmca_btl_junk.so", b"this is not an ELF file\n");
    let (mca, d) = w.init();
    let f = assert_skipped(&mca, &d, &junk, "the dynamic loader cannot load it");
    assert_eq!(
        (f.framework.as_str(), f.component.as_str()),
        ("btl", "junk")
    );
    // The loader's own reason is kept, not just "dlopen failed".
    assert!(f.reason.contains("junk.so"), "{}", f.reason);
    assert_eq!(d.0.len(), 1, "{d}");
    assert_eq!(mca.repository().components[0].path, good);
}

#[test]
fn shared_library_that_is_not_a_component_lacks_the_root_module_symbol() {
    let w = World::new();
    let libm = w.components.join("libmca_btl_libm.so");
    std::fs::copy(system_libm(), &libm).unwrap();
    w.install(Fixture::Good, "libmca_btl_fixture.so");
    let (mca, d) = w.init();
    let f = assert_skipped(&mca, &d, &libm, "does not export the root module symbol");
    assert!(
        f.reason.contains("it is not an oxmpi component"),
        "{}",
        f.reason
    );
    assert!(f.hint.contains("export_component!"), "{}", f.hint);
    assert_eq!(loaded_names(&mca), ["btl/fixture"]);
}

#[test]
fn wrong_interface_major_version_is_rejected() {
    let w = World::new();
    let path = w.install(Fixture::WrongInterface, "libmca_btl_future.so");
    w.install(Fixture::Good, "libmca_btl_fixture.so");
    let (mca, d) = w.init();
    let f = assert_skipped(
        &mca,
        &d,
        &path,
        "it implements version 99.0.0 of the btl interface, and this oxmpi provides version 3.0.0",
    );
    assert!(f.hint.contains("Rebuild"), "{}", f.hint);
    assert_eq!(loaded_names(&mca), ["btl/fixture"]);
}

/// A library that did not load is one of its framework's reasons, so "no
/// usable component" names it instead of reading as "none installed",
/// and its warning says which framework it is of (a rank under mpirun
/// shows the warnings of the frameworks mpirun does not open).
#[test]
fn a_library_that_did_not_load_is_a_reason_of_its_framework() {
    let w = World::new();
    let path = w.install(Fixture::WrongInterface, "libmca_btl_future.so");
    let (mca, d) = w.init();
    let warning =
        d.0.iter()
            .find(|x| x.message.contains("libmca_btl_future.so"))
            .expect("a warning about the library");
    assert_eq!(warning.framework.as_deref(), Some("btl"));
    let fw = mca.open_framework("btl").expect("btl opens");
    let reasons = fw.reasons();
    let (name, why) = reasons
        .iter()
        .find(|(n, _)| n == "future")
        .unwrap_or_else(|| panic!("no reason for future: {reasons:?}"));
    assert_eq!(name, "future");
    assert!(
        why.contains(&format!("its library {} did not load", path.display()))
            && why.contains("version 99.0.0 of the btl interface"),
        "{why}"
    );
}

#[test]
fn abi_layout_mismatch_is_summarized_with_the_full_text_in_detail() {
    let w = World::new();
    let path = w.install(Fixture::AbiMismatch, "libmca_btl_skewed.so");
    w.install(Fixture::Good, "libmca_btl_fixture.so");
    let (mca, d) = w.init();
    let f = assert_skipped(&mca, &d, &path, "its plugin interface types differ");
    // A short summary naming the first mismatched field …
    assert!(
        f.reason
            .contains("ComponentRoot.framework: mismatched type: expected RStr<'a>, found u32"),
        "{}",
        f.reason
    );
    assert!(f.reason.len() < 400, "the summary is short: {}", f.reason);
    assert!(!f.reason.contains('\n'), "{}", f.reason);
    // … and abi_stable's long report kept for verbose output.
    let detail = f.detail.as_deref().expect("the full layout report");
    assert!(detail.len() > 1000, "{detail}");
    assert!(detail.contains("Layout of expected type"), "{detail}");
    assert!(detail.contains("Error:mismatched type"), "{detail}");
    let warning = d.expect_one(Severity::Warning, &[&path.display().to_string()]);
    assert!(
        !warning.contains('\n'),
        "the warning is one paragraph: {warning}"
    );
    assert!(!warning.contains("Layout of expected type"), "{warning}");
    assert_eq!(loaded_names(&mca), ["btl/fixture"]);
}

#[test]
fn file_name_that_does_not_match_the_declared_component_is_rejected() {
    let w = World::new();
    let path = w.install(Fixture::Good, "libmca_btl_other.so");
    let (mca, d) = w.init();
    let f = assert_skipped(
        &mca,
        &d,
        &path,
        "the library declares itself as btl component fixture, which does not match its file name",
    );
    assert_eq!(f.hint, "Rename it to libmca_btl_fixture.so.");
    assert!(loaded_names(&mca).is_empty());
    // Its parameters are not declared either.
    assert!(mca.value("btl_fixture_priority").is_none());
}

#[test]
fn unknown_framework_in_the_file_name_is_rejected_without_loading() {
    let w = World::new();
    let path = w.install(Fixture::Good, "libmca_nosuchfw_fixture.so");
    let (mca, d) = w.init();
    let f = assert_skipped(&mca, &d, &path, "there is no framework named \"nosuchfw\"");
    assert!(
        f.reason.contains("known: btl, coll, mtl, pml, rmaps"),
        "{}",
        f.reason
    );
    assert!(loaded_names(&mca).is_empty());
}

#[test]
fn every_rejection_at_once_leaves_the_good_component() {
    let w = World::new();
    w.write_component_file("libmca_btl_junk.so", b"junk");
    std::fs::copy(system_libm(), w.components.join("libmca_btl_libm.so")).unwrap();
    w.install(Fixture::WrongInterface, "libmca_btl_future.so");
    w.install(Fixture::AbiMismatch, "libmca_btl_skewed.so");
    w.install(Fixture::Good, "libmca_btl_other.so");
    w.install(Fixture::Good, "libmca_nosuchfw_fixture.so");
    w.install(Fixture::Good, "libmca_btl_fixture.so");
    w.write_component_file("README", b"not a candidate");
    w.write_component_file("libmca_btl_fixture.so.1", b"not a candidate");
    let (mca, d) = w.init();
    assert_eq!(loaded_names(&mca), ["btl/fixture"]);
    assert_eq!(
        mca.repository().failures.len(),
        6,
        "{:#?}",
        mca.repository().failures
    );
    assert_eq!(d.warnings().len(), 6, "{d}");
    assert!(d.errors().is_empty(), "{d}");
}

#[test]
fn first_directory_wins_and_later_copies_are_shadowed() {
    let mut w = World::new();
    let first = w.dir("first");
    let second = w.dir("second");
    let winner = w.install_in(&first, Fixture::Good, "libmca_btl_fixture.so");
    let hidden = w.install_in(&second, Fixture::Good, "mca_btl_fixture.so");
    let path = format!("{}:{}", first.display(), second.display());
    w.set_param_env("mca_base_component_path", &path);
    let (mca, d) = w.init();
    assert!(d.is_empty(), "{d}");
    assert_eq!(mca.repository().searched, [first.clone(), second.clone()]);
    assert_eq!(mca.repository().components.len(), 1);
    assert_eq!(mca.repository().components[0].path, winner);
    let shadowed = &mca.repository().shadowed;
    assert_eq!(shadowed.len(), 1, "{shadowed:?}");
    assert_eq!(
        (shadowed[0].framework.as_str(), shadowed[0].name.as_str()),
        ("btl", "fixture")
    );
    assert_eq!(shadowed[0].path, hidden);
    assert_eq!(shadowed[0].used, winner);

    // The other order: the other copy wins.
    let path = format!("{}:{}", second.display(), first.display());
    w.set_param_env("mca_base_component_path", &path);
    let (mca, _) = w.init();
    assert_eq!(mca.repository().components[0].path, hidden);
    assert_eq!(mca.repository().shadowed[0].path, winner);
}

#[test]
fn show_load_errors_none_hides_the_warning_unless_the_component_is_requested() {
    let mut w = World::new();
    let junk = w.write_component_file("libmca_btl_junk.so", b"junk");
    w.install(Fixture::Good, "libmca_btl_fixture.so");
    w.set_param_env("mca_base_component_show_load_errors", "none");
    let (mca, d) = w.init();
    assert!(d.is_empty(), "{d}");
    // Still recorded, for oxmpi_info --show-failed.
    failure(&mca, &junk);

    // Asking for it by name shows the load error again (with what to do
    // about it), next to the selection error, which names the library and
    // why it did not load.
    w.set_mca("btl", "junk");
    let (mca, d) = w.init();
    let full_path = junk.display().to_string();
    let warning = d.expect_one(
        Severity::Warning,
        &[&format!("skipped component library {full_path}")],
    );
    assert!(
        warning.contains("the dynamic loader cannot load it"),
        "{warning}"
    );
    let error = d.expect_one(
        Severity::Error,
        &["asks for component junk that is not available"],
    );
    assert!(
        error.contains(&format!(
            "junk: its library {full_path} did not load: the dynamic loader cannot load it"
        )) && error.contains("Available btl components: fixture."),
        "{error}"
    );
    failure(&mca, &junk);
}

#[test]
fn show_load_errors_with_an_unknown_framework_is_an_invalid_value() {
    let mut w = World::new();
    let junk = w.write_component_file("libmca_btl_junk.so", b"junk");
    w.set_param_env("mca_base_component_show_load_errors", "none");
    w.set_mca("mca_base_component_show_load_errors", "bogus");
    let (mca, d) = w.init();
    let error = d.expect_one(Severity::Error, &["mca_base_component_show_load_errors"]);
    assert_eq!(
        error,
        "invalid value \"bogus\" for parameter mca_base_component_show_load_errors (from --mca mca_base_component_show_load_errors on the command line): \"bogus\" is not a framework (known: btl, coll, mtl, pml, rmaps). Expected \"all\", \"none\" (also yes/no, true/false, 1/0), or a comma-separated list of framework or framework/component names (\"btl,pml/ucx\"), with one ^ in front to report all but those."
    );
    // As for any invalid value, the next source wins: the environment's
    // "none" hides the load failure.
    assert_eq!(
        mca.value("mca_base_component_show_load_errors")
            .unwrap()
            .text,
        "none"
    );
    assert!(d.matching(&[&junk.display().to_string()]).is_empty(), "{d}");
    assert_eq!(d.0.len(), 1, "{d}");
}

#[test]
fn show_load_errors_by_framework_and_component() {
    let mut w = World::new();
    let junk = w.write_component_file("libmca_btl_junk.so", b"junk");
    let other = w.write_component_file("libmca_pml_junk.so", b"junk");
    for (spec, shown) in [
        ("all", vec![&junk, &other]),
        ("btl", vec![&junk]),
        ("pml/junk", vec![&other]),
        ("^btl", vec![&other]),
        ("btl/other", vec![]),
    ] {
        w.set_param_env("mca_base_component_show_load_errors", spec);
        let (_, d) = w.init();
        for path in [&junk, &other] {
            let n = d.matching(&[&path.display().to_string()]).len();
            assert_eq!(
                n,
                usize::from(shown.contains(&path)),
                "spec {spec}, {}:\n{d}",
                path.display()
            );
        }
    }
}

#[test]
fn parameter_declared_twice_by_one_component_skips_it() {
    let w = World::new();
    let dupe = w.install(Fixture::ParamsDup, "libmca_btl_dupe.so");
    w.install(Fixture::Good, "libmca_btl_fixture.so");
    let (mca, d) = w.init();
    let f = assert_skipped(
        &mca,
        &d,
        &dupe,
        "it declares the parameter name btl_dupe_limit twice",
    );
    assert_eq!(f.hint, "Report this to the component's authors.");
    assert_eq!(d.0.len(), 1, "one warning, nothing else: {d}");
    assert!(
        mca.value("btl_dupe_limit").is_none(),
        "nothing of it is declared"
    );
    assert_eq!(loaded_names(&mca), ["btl/fixture"]);
}

#[test]
fn parameter_name_clash_between_components_names_both_libraries() {
    let w = World::new();
    // Name order: clash loads first and keeps the name, so fixture is skipped.
    let clash = w.install(Fixture::ParamsClash, "libmca_btl_clash.so");
    let fixture = w.install(Fixture::Good, "libmca_btl_fixture.so");
    let (mca, d) = w.init();
    let f = assert_skipped(
        &mca,
        &d,
        &fixture,
        &format!(
            "it declares the parameter name btl_fixture_priority, which btl/clash ({}) already declares",
            clash.display()
        ),
    );
    assert!(
        f.hint
            .contains("rename the parameter in one of the two components"),
        "{}",
        f.hint
    );
    assert_eq!(loaded_names(&mca), ["btl/clash"]);
    assert_eq!(d.0.len(), 1, "{d}");
}

#[test]
fn near_miss_file_names_are_logged_at_verbose_level_and_listed() {
    let mut w = World::new();
    let mine = w.write_component_file("mine.so", b"x");
    let rmapsmine = w.write_component_file("libmca_rmapsmine.so", b"x");
    let versioned = w.install(Fixture::Good, "libmca_btl_fixture.so.1");
    let backup = w.write_component_file("libmca_btl_x.so.bak", b"x");
    w.write_component_file("README", b"not a near miss");
    let (mca, d) = w.init();
    assert!(d.is_empty(), "not at default verbosity: {d}");
    let ignored: Vec<_> = mca
        .repository()
        .ignored
        .iter()
        .map(|i| i.path.clone())
        .collect();
    assert_eq!(ignored, [versioned, backup, rmapsmine.clone(), mine]);
    assert!(mca.repository().components.is_empty());

    // A file that looks like a component the user selects by name is worth
    // a warning at default verbosity, next to the selection error.
    w.set_mca("rmaps", "mine");
    let (_, d) = w.init();
    let warning = d.expect_one(Severity::Warning, &[&rmapsmine.display().to_string()]);
    assert_eq!(
        warning,
        format!(
            "{} was ignored: the name does not match libmca_<framework>_<component>.so. If it is a component, rename it to libmca_<framework>_<component>.so (the framework ends at the first _); otherwise remove it from the component directory.",
            rmapsmine.display()
        )
    );
    d.expect_one(
        Severity::Error,
        &["asks for component mine that is not available"],
    );
    assert_eq!(d.warnings().len(), 1, "{d}");
}

#[test]
fn near_miss_of_an_available_component_is_no_warning() {
    let mut w = World::new();
    w.install(Fixture::Good, "libmca_btl_fixture.so");
    let old = w.install(Fixture::Good, "libmca_btl_fixture.so.old");
    w.set_mca("btl", "fixture");
    let (mca, d) = w.init();
    assert!(
        d.is_empty(),
        "fixture is there, the old copy does not matter: {d}"
    );
    assert_eq!(mca.repository().ignored[0].path, old);
}
