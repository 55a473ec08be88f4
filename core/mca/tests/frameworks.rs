//! Each program hands the core the frameworks it loads
//! (`McaInputs::frameworks`) and those whose framework-level parameters it
//! only checks (`McaInputs::base_frameworks`): files of other frameworks are
//! not opened, and their parameters are neither checked nor unknown.

mod common;

use common::{Fixture, World};
use oxmpi_mca::{McaError, Severity};

/// A rank: btl and pml only.
fn rank_world() -> World {
    let mut w = World::new();
    w.frameworks = vec![
        &oxmpi_framework_btl::FRAMEWORK,
        &oxmpi_framework_pml::FRAMEWORK,
    ];
    w
}

#[test]
fn a_rank_leaves_rmaps_files_and_settings_alone() {
    let mut w = rank_world();
    w.install(Fixture::Good, "libmca_btl_fixture.so");
    // Not a library: opening it would be a load failure.
    let rmaps = w.write_component_file("libmca_rmaps_junk.so", b"junk");
    w.set_param_env("rmaps", "junk");
    w.set_param_env("rmaps_base_mapping_policy", "slot");
    w.set_param_env("rmaps_junk_anything", "1");
    let (mca, d) = w.init();
    assert!(d.warnings().is_empty() && d.errors().is_empty(), "{d}");
    assert!(mca.failures().is_empty(), "{:?}", mca.failures());
    assert_eq!(mca.repository().not_loaded, [rmaps]);
    let names: Vec<&str> = mca.frameworks().iter().map(|f| f.name).collect();
    assert_eq!(names, ["btl", "pml"]);
    let loaded: Vec<&str> = mca
        .repository()
        .components
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(loaded, ["fixture"]);
    assert!(mca.value("rmaps_base_mapping_policy").is_none());
    match mca.open_framework("rmaps") {
        Err(e @ McaError::NotLoaded(..)) => assert_eq!(
            e.to_string(),
            "mca-test does not load the rmaps framework (it loads: btl, pml)"
        ),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("rmaps opened in a rank"),
    };
}

#[test]
fn a_rank_still_checks_its_own_frameworks_and_unknown_framework_names() {
    let mut w = rank_world();
    w.install(Fixture::Good, "libmca_btl_fixture.so");
    w.write_component_file("libmca_nosuchfw_x.so", b"junk");
    w.set_param_env("btl_fixture_priorty", "1");
    w.set_param_env("rmasp_base_verbose", "1");
    w.set_param_env("btl", "nosuch");
    let (mca, d) = w.init();
    d.expect_one(
        Severity::Warning,
        &["unknown parameter btl_fixture_priorty"],
    );
    d.expect_one(Severity::Warning, &["unknown parameter rmasp_base_verbose"]);
    d.expect_one(Severity::Error, &["asks for component nosuch"]);
    let failures = mca.failures();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(
        failures[0]
            .reason
            .contains("no framework named \"nosuchfw\" (known: btl, coll, mtl, pml, rmaps)"),
        "{}",
        failures[0].reason
    );
}

#[test]
fn mpirun_checks_the_ranks_framework_parameters_but_not_their_components() {
    let mut w = World::new();
    w.frameworks = vec![&oxmpi_framework_rmaps::FRAMEWORK];
    w.base_frameworks = vec![&oxmpi_framework_btl::FRAMEWORK];
    let btl = w.install(Fixture::Good, "libmca_btl_fixture.so");
    w.set_mca("btl_base_verbos", "1");
    w.set_mca("btl_fixture_priority", "5");
    w.set_mca("btl", "self,tcp");
    w.set_mca("pml_ob1_anything", "1");
    let (mca, d) = w.init();
    d.expect_one(
        Severity::Warning,
        &["unknown parameter btl_base_verbos", "btl_base_verbose"],
    );
    assert_eq!(d.warnings().len(), 1, "{d}");
    assert!(d.errors().is_empty(), "{d}");
    assert_eq!(mca.repository().not_loaded, [btl]);
    assert!(mca.repository().components.is_empty());
    assert_eq!(mca.value("btl").unwrap().text, "self,tcp");

    // The selection's syntax is still checked.
    w.command_line.retain(|(name, _)| name != "btl");
    w.set_mca("btl", "self,^tcp");
    let (_, d) = w.init();
    d.expect_one(
        Severity::Error,
        &["mixes included (self) and excluded (^tcp)"],
    );
}
