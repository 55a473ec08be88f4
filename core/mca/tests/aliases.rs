//! Old names of renamed components (`FrameworkInfo::component_aliases`):
//! in selection parameters, where they stand for the current name with a
//! note given once per process, and in parameter names, where every
//! parameter of the renamed component gets a deprecated synonym.
//!
//! The btl framework's own alias (`vader` -> `sm`) is tested without any
//! `sm` component: the translation does not depend on it. With components,
//! a btl framework description made for these tests names `gemini` as the
//! old name of the `twin` fixture.

mod common;

use common::{Diagnostics, Fixture, World};
use oxmpi_mca::selection::Filter;
use oxmpi_mca::{Selected, Severity, Source};
use oxmpi_plugin_api::{ComponentAlias, FrameworkInfo, SelectionKind};

/// The btl framework, with `gemini` as the old name of the `twin` fixture
/// besides btl's own `vader` -> `sm`.
static BTL_WITH_GEMINI: FrameworkInfo = FrameworkInfo {
    name: "btl",
    description: "btl, with an old name for the twin fixture",
    interface_version: oxmpi_framework_btl::INTERFACE_VERSION,
    selection: SelectionKind::Multi,
    base_params: oxmpi_framework_btl::BASE_PARAMS,
    component_aliases: &[
        ComponentAlias {
            old: "vader",
            current: "sm",
        },
        ComponentAlias {
            old: "gemini",
            current: "twin",
        },
    ],
};

const VADER_NOTE: &str = "btl component \"vader\" is now called \"sm\"; \"vader\" still works but is deprecated: use \"sm\"";
const GEMINI_NOTE: &str = "btl component \"gemini\" is now called \"twin\"; \"gemini\" still works but is deprecated: use \"twin\"";

/// A world whose btl framework is [`BTL_WITH_GEMINI`], with the `fixture`
/// and `twin` components installed.
fn gemini_world() -> World {
    let mut w = World::new();
    w.frameworks = vec![&BTL_WITH_GEMINI, &oxmpi_framework_pml::FRAMEWORK];
    w.install(Fixture::Good, "libmca_btl_fixture.so");
    w.install(Fixture::Twin, "libmca_btl_twin.so");
    w
}

fn selected(list: &[(&str, i32)]) -> Vec<Selected> {
    list.iter()
        .map(|(name, priority)| Selected {
            name: name.to_string(),
            priority: *priority,
        })
        .collect()
}

#[test]
fn excluding_vader_excludes_sm_with_one_note_per_process() {
    let mut w = World::new();
    w.set_mca("btl", "^vader");
    let (mca, d) = w.init();
    let note = d.expect_one(Severity::Warning, &[VADER_NOTE]);
    assert_eq!(
        note,
        format!("{VADER_NOTE} (btl = \"^vader\", from command line)")
    );
    assert_eq!(d.0.len(), 1, "{d}");
    assert_eq!(d.0[0].param.as_deref(), Some("btl"));
    assert_eq!(mca.filter("btl"), Some(Filter::Exclude(vec!["sm".into()])));
    // Opening the framework again and again does not repeat the note.
    for _ in 0..3 {
        let fw = mca.open_framework("btl").expect("btl opens");
        fw.close();
        let later = Diagnostics(mca.take_diagnostics());
        assert!(later.is_empty(), "{later}");
    }
}

#[test]
fn including_vader_asks_for_sm_even_when_sm_is_not_installed() {
    let mut w = World::new();
    w.set_param_env("btl", "self,vader");
    let (mca, d) = w.init();
    assert_eq!(d.0.len(), 2, "{d}");
    assert_eq!(
        d.0[0].severity,
        Severity::Warning,
        "the note comes first: {d}"
    );
    assert_eq!(
        d.0[0].message,
        format!("{VADER_NOTE} (btl = \"self,vader\", from environment)")
    );
    let error = d.expect_one(Severity::Error, &["not available"]);
    assert!(
        error.contains("asks for components self, sm that are not available"),
        "{error}"
    );
    assert_eq!(
        mca.filter("btl"),
        Some(Filter::Include(vec!["self".into(), "sm".into()]))
    );
    // The failing open repeats the error, not the note.
    assert!(mca.open_framework("btl").is_err());
    assert!(Diagnostics(mca.take_diagnostics())
        .matching(&[VADER_NOTE])
        .is_empty());
}

#[test]
fn a_list_naming_vader_and_sm_names_one_component() {
    let mut w = World::new();
    w.set_mca("btl", "vader,sm,vader");
    let (mca, d) = w.init();
    assert_eq!(d.matching(&[VADER_NOTE]).len(), 1, "{d}");
    let error = d.expect_one(Severity::Error, &["not available"]);
    assert!(
        error.contains("asks for component sm that is not available"),
        "{error}"
    );
    assert_eq!(mca.filter("btl"), Some(Filter::Include(vec!["sm".into()])));
}

#[test]
fn mpirun_notes_the_old_name_in_a_ranks_framework() {
    // mpirun declares btl's framework-level parameters only, and checks
    // the selection's syntax: the note is the job's, given there.
    let mut w = World::new();
    w.frameworks = vec![&oxmpi_framework_rmaps::FRAMEWORK];
    w.base_frameworks = vec![&oxmpi_framework_btl::FRAMEWORK];
    w.set_mca("btl", "tcp,self,vader");
    let (mca, d) = w.init();
    d.expect_one(Severity::Warning, &[VADER_NOTE]);
    assert!(d.errors().is_empty(), "{d}");
    assert_eq!(
        mca.filter("btl"),
        Some(Filter::Include(vec![
            "tcp".into(),
            "self".into(),
            "sm".into()
        ]))
    );
}

#[test]
fn an_old_name_selects_and_excludes_the_renamed_component() {
    let mut w = gemini_world();
    w.set_mca("btl", "fixture,gemini");
    let (mca, d) = w.init();
    d.expect_one(Severity::Warning, &[GEMINI_NOTE]);
    assert_eq!(d.0.len(), 1, "{d}");
    let mut fw = mca.open_framework("btl").unwrap();
    assert_eq!(fw.components(), ["fixture", "twin"]);
    assert_eq!(
        fw.select().unwrap(),
        selected(&[("fixture", 10), ("twin", 10)])
    );
    fw.close();
    assert!(mca.take_diagnostics().is_empty());

    let mut w = gemini_world();
    w.set_mca("btl", "^gemini");
    let (mca, d) = w.init();
    d.expect_one(Severity::Warning, &[GEMINI_NOTE]);
    let mut fw = mca.open_framework("btl").unwrap();
    assert_eq!(fw.components(), ["fixture"]);
    assert_eq!(fw.select().unwrap(), selected(&[("fixture", 10)]));
    assert!(fw
        .reasons()
        .iter()
        .any(|(n, r)| n == "twin" && r.starts_with("excluded by btl = \"^gemini\"")));
}

#[test]
fn every_parameter_of_the_renamed_component_answers_to_the_old_name() {
    let mut w = gemini_world();
    w.set_param_env("btl_gemini_priority", "33");
    w.write_user_file("btl_gemini_priority = 5\n");
    let (mca, d) = w.init();
    let warning = d.expect_one(Severity::Warning, &["btl_gemini_priority"]);
    assert_eq!(
        warning,
        "parameter btl_gemini_priority (set by environment variable OXMPI_MCA_btl_gemini_priority) is deprecated; use btl_twin_priority instead (btl component gemini is now called twin)"
    );
    assert_eq!(d.0.len(), 1, "{d}");
    let r = mca.value("btl_twin_priority").unwrap();
    assert_eq!(r.value.as_i64(), Some(33));
    assert!(
        matches!(&r.source, Source::Environment { variable } if variable == "OXMPI_MCA_btl_gemini_priority")
    );
    assert_eq!(mca.value("btl_gemini_priority"), Some(r));
    // The component reads its parameter under its current name.
    let mut fw = mca.open_framework("btl").unwrap();
    assert_eq!(
        fw.select().unwrap(),
        selected(&[("twin", 33), ("fixture", 10)])
    );
    // The synonym is listed with the parameter, deprecated; the fixture's
    // own synonym is untouched and it gets none.
    let registry = mca.registry();
    let twin = registry.lookup("btl_twin_priority").unwrap().param;
    assert_eq!(registry.synonyms_of(twin), [("btl_gemini_priority", true)]);
    let eager = registry.lookup("btl_fixture_eager_limit").unwrap().param;
    assert_eq!(
        registry.synonyms_of(eager),
        [("btl_fixture_old_eager_limit", true)]
    );
    assert!(registry.lookup("btl_gemini_base_verbose").is_none());
}

#[test]
fn a_misspelt_old_name_suggests_the_current_parameter() {
    let mut w = gemini_world();
    w.set_param_env("btl_gemini_priorty", "1");
    let (_mca, d) = w.init();
    let warning = d.expect_one(Severity::Warning, &["btl_gemini_priorty"]);
    assert!(
        warning.contains("Did you mean btl_twin_priority?"),
        "{warning}"
    );
}

#[test]
fn a_library_named_after_an_old_name_is_not_loaded() {
    let mut w = World::new();
    w.frameworks = vec![&BTL_WITH_GEMINI];
    let old = w.install(Fixture::Twin, "libmca_btl_gemini.so");
    let (mca, d) = w.init();
    assert!(mca.repository().components.is_empty());
    let failures = mca.failures();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert_eq!(failures[0].path, old);
    assert_eq!(failures[0].component, "gemini");
    let warning = d.expect_one(Severity::Warning, &[&old.display().to_string()]);
    assert!(
        warning.contains("\"gemini\" is the old name of btl component \"twin\""),
        "{warning}"
    );
    assert!(
        warning.contains("remove it from the component path"),
        "{warning}"
    );
}

#[test]
fn an_invalid_alias_table_is_an_error_for_the_developers() {
    static CHAINED: FrameworkInfo = FrameworkInfo {
        name: "btl",
        description: "btl, with chained old names",
        interface_version: oxmpi_framework_btl::INTERFACE_VERSION,
        selection: SelectionKind::Multi,
        base_params: oxmpi_framework_btl::BASE_PARAMS,
        component_aliases: &[
            ComponentAlias {
                old: "vader",
                current: "sm",
            },
            ComponentAlias {
                old: "sm",
                current: "shm",
            },
        ],
    };
    let mut w = World::new();
    w.frameworks = vec![&CHAINED];
    let (_mca, d) = w.init();
    let error = d.expect_one(Severity::Error, &["component aliases chain"]);
    assert!(
        error.ends_with("report this to the oxmpi developers"),
        "{error}"
    );
}

#[test]
fn show_load_errors_reads_old_component_names_too() {
    static BTL_WITH_OLD_PANICKY: FrameworkInfo = FrameworkInfo {
        name: "btl",
        description: "btl, with an old name for the panicking fixture",
        interface_version: oxmpi_framework_btl::INTERFACE_VERSION,
        selection: SelectionKind::Multi,
        base_params: oxmpi_framework_btl::BASE_PARAMS,
        component_aliases: &[ComponentAlias {
            old: "oldpanicky",
            current: "panicky",
        }],
    };
    let warnings_for = |spec: &str| {
        let mut w = World::new();
        w.frameworks = vec![&BTL_WITH_OLD_PANICKY];
        w.install(Fixture::Panics, "libmca_btl_panicky.so");
        w.set_param_env("mca_base_component_show_load_errors", spec);
        let (mca, d) = w.init();
        assert!(d.is_empty(), "{spec}: {d}");
        drop(mca.open_framework("btl").unwrap());
        Diagnostics(mca.take_diagnostics())
            .matching(&["btl component panicky): its open panicked"])
            .len()
    };
    assert_eq!(warnings_for("btl/oldpanicky"), 1);
    assert_eq!(warnings_for("btl/panicky"), 1);
    assert_eq!(warnings_for("btl/other"), 0);
    assert_eq!(warnings_for("^btl/oldpanicky"), 0);
}
