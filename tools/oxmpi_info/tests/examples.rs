//! The examples of the MCA core issue, run against the real binary in an
//! isolated HOME and install prefix.

mod common;

use common::{built_library, stderr, stdout, World};

fn parsable_field(out: &str, key: &str) -> Option<String> {
    out.lines()
        .find(|l| l.contains(&format!(":{key}:")) || l.ends_with(&format!(":{key}:")))
        .map(|l| l.splitn(7, ':').nth(6).unwrap_or("").to_string())
}

fn verbose_line(out: &str, field: &str) -> String {
    out.lines()
        .find(|l| l.starts_with(&format!("mca:btl:base:param:btl_base_verbose:{field}:")))
        .unwrap_or_else(|| panic!("no {field} line in:\n{out}"))
        .to_string()
}

#[test]
fn environment_value_is_shown_with_its_source_in_parsable_output() {
    let w = World::new().env("OXMPI_MCA_btl_base_verbose", "20");
    let o = w.run(&["--param", "btl", "base", "--level", "9", "--parsable"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    // `grep btl_base_verbose:value | cut -d: -f7`
    let value = verbose_line(&out, "value");
    assert_eq!(value.split(':').nth(6), Some("20"));
    assert_eq!(
        verbose_line(&out, "source"),
        "mca:btl:base:param:btl_base_verbose:source:environment"
    );
    assert_eq!(
        verbose_line(&out, "level"),
        "mca:btl:base:param:btl_base_verbose:level:8"
    );
    assert!(parsable_field(&out, "btl_base_verbose:type").is_some());
}

#[test]
fn user_file_then_environment_then_command_line() {
    let w = World::new();
    let file = w.write_user_file("# site\n\nbtl_base_verbose = 30\n");
    let args = ["--param", "btl", "base", "--level", "9", "--parsable"];
    let out = stdout(&w.run(&args));
    assert_eq!(
        verbose_line(&out, "value"),
        "mca:btl:base:param:btl_base_verbose:value:30"
    );
    assert_eq!(
        verbose_line(&out, "source"),
        format!(
            "mca:btl:base:param:btl_base_verbose:source:\"file ({}:3)\"",
            file.display()
        )
    );

    let w = w.env("OXMPI_MCA_btl_base_verbose", "20");
    let out = stdout(&w.run(&args));
    assert_eq!(
        verbose_line(&out, "value"),
        "mca:btl:base:param:btl_base_verbose:value:20"
    );
    assert_eq!(
        verbose_line(&out, "source"),
        "mca:btl:base:param:btl_base_verbose:source:environment"
    );

    let mut with_mca = vec!["--mca", "btl_base_verbose", "40"];
    with_mca.extend(args);
    let out = stdout(&w.run(&with_mca));
    assert_eq!(
        verbose_line(&out, "value"),
        "mca:btl:base:param:btl_base_verbose:value:40"
    );
    assert_eq!(
        verbose_line(&out, "source"),
        "mca:btl:base:param:btl_base_verbose:source:command line"
    );
}

#[test]
fn misspelled_environment_variable_gets_a_suggestion() {
    let w = World::new().env("OXMPI_MCA_btl_base_verbos", "1");
    let o = w.run(&[]);
    assert!(o.status.success());
    let err = stderr(&o);
    assert!(err.contains("unknown parameter btl_base_verbos"), "{err}");
    assert!(err.contains("OXMPI_MCA_btl_base_verbos"), "{err}");
    assert!(err.contains("Did you mean btl_base_verbose?"), "{err}");

    let silenced = World::new()
        .env("OXMPI_MCA_btl_base_verbos", "1")
        .env("OXMPI_MCA_mca_base_warn_unknown", "0");
    assert_eq!(stderr(&silenced.run(&[])), "");
}

#[test]
fn misspelled_file_key_and_mca_name_get_suggestions_with_their_origin() {
    let w = World::new();
    let file = w.write_user_file("btl_base_verbosee = 1\n");
    let err = stderr(&w.run(&["--mca", "pml_base_verbos", "1"]));
    assert!(
        err.contains(&format!("file ({}:1)", file.display())),
        "{err}"
    );
    assert!(
        err.contains("--mca pml_base_verbos on the command line"),
        "{err}"
    );
    assert!(err.contains("Did you mean pml_base_verbose?"), "{err}");
}

#[test]
fn junk_component_library_warns_with_full_path_and_is_listed_as_failed() {
    let w = World::new();
    let junk = w.component_dir().join("libmca_btl_junk.so");
    std::fs::write(&junk, "this is not a shared library\n").unwrap();
    let o = w.run(&[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains(&junk.display().to_string()), "{err}");
    assert!(err.contains("warning: skipped component library"), "{err}");

    let o = w.run(&["--show-failed"]);
    assert!(o.status.success());
    let out = stdout(&o);
    assert!(out.contains("junk (failed to load)"), "{out}");
    assert!(out.contains(&junk.display().to_string()), "{out}");

    let out = stdout(&w.run(&["--show-failed", "--parsable"]));
    let line = out
        .lines()
        .find(|l| l.starts_with("mca:btl:junk:failed:"))
        .expect(&out);
    assert!(line.contains(&junk.display().to_string()), "{line}");

    let quiet = World::new().env("OXMPI_MCA_mca_base_component_show_load_errors", "none");
    std::fs::write(quiet.component_dir().join("libmca_btl_junk.so"), "junk").unwrap();
    assert_eq!(stderr(&quiet.run(&[])), "");
}

#[test]
fn mixing_include_and_exclude_is_an_error_that_explains_negation() {
    let w = World::new();
    w.install_fixture();
    let o = w.run(&["--mca", "btl", "fixture,^self"]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("mixes included (fixture) and excluded (^self)"),
        "{err}"
    );
    assert!(
        err.contains("A ^ at the start excludes every component listed after it"),
        "{err}"
    );
    assert_eq!(stdout(&o), "");
}

#[test]
fn unavailable_component_lists_the_available_ones() {
    let w = World::new();
    w.install_fixture();
    let o = w.run(&["--mca", "btl", "nosuch"]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("asks for component nosuch that is not available"),
        "{err}"
    );
    assert!(err.contains("Available btl components: fixture."), "{err}");

    let empty = World::new();
    let err = stderr(&empty.run(&["--mca", "btl", "nosuch"]));
    assert!(err.contains("No btl components are installed"), "{err}");
}

#[test]
fn invalid_values_name_parameter_value_source_and_accepted_values() {
    let w = World::new();
    w.install_fixture();
    let file = w.write_system_file("btl_fixture_priority = 4x\n");
    let o = w.run(&[]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("invalid value \"4x\" for parameter btl_fixture_priority"),
        "{err}"
    );
    assert!(
        err.contains(&format!("file ({}:1)", file.display())),
        "{err}"
    );
    assert!(err.contains("Expected an integer from"), "{err}");
}

#[test]
fn malformed_file_line_names_file_and_line() {
    let w = World::new();
    let file = w.write_user_file("btl = fixture\nnot a setting\n");
    let o = w.run(&[]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "{}:2: no `=` on the line: \"not a setting\"",
            file.display()
        )),
        "{err}"
    );
}

#[test]
fn explain_lists_every_source_in_precedence_order() {
    let w = World::new().env("OXMPI_MCA_btl_base_verbose", "20");
    let system = w.write_system_file("btl_base_verbose = 5\n");
    let user = w.write_user_file("btl_base_verbose = 30\n");
    let o = w.run(&[
        "--mca",
        "btl_base_verbose",
        "40",
        "--explain",
        "btl_base_verbose",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("  ") && l.contains('"'))
        .collect();
    let order: Vec<usize> = [
        "command line (--mca)",
        "environment (OXMPI_MCA_btl_base_verbose)",
        &format!("file ({}:1)", user.display()),
        &format!("file ({}:1)", system.display()),
        "default",
    ]
    .iter()
    .map(|s| {
        lines
            .iter()
            .position(|l| l.contains(s))
            .unwrap_or_else(|| panic!("{s} missing in\n{out}"))
    })
    .collect();
    assert_eq!(order, vec![0, 1, 2, 3, 4], "{out}");
    assert!(
        lines[0].starts_with("  * ") && lines[0].contains("\"40\"  <- in effect"),
        "{out}"
    );
    assert!(
        out.contains("Value in effect: \"40\" (from command line)"),
        "{out}"
    );

    let o = w.run(&["--explain", "btl_base_verbos"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("Did you mean btl_base_verbose?"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn param_selection_errors_name_what_exists() {
    let w = World::new();
    w.install_fixture();
    let err = stderr(&w.run(&["--param", "bogus", "all"]));
    assert!(err.contains("no framework named \"bogus\""), "{err}");
    let err = stderr(&w.run(&["--param", "btl", "tcp"]));
    assert!(err.contains("installed: fixture"), "{err}");
    // An old component name stands for the current one.
    let err = stderr(&w.run(&["--param", "btl", "vader"]));
    assert!(
        err.contains("--param btl vader: no btl component named \"sm\" (formerly \"vader\") is installed (installed: fixture;"),
        "{err}"
    );
    let out = stdout(&w.run(&["--param", "btl", "fixture", "--level", "9", "--parsable"]));
    assert!(
        out.contains("mca:btl:fixture:param:btl_fixture_priority:value:10"),
        "{out}"
    );
    assert!(!out.contains("btl_base_verbose"), "{out}");
}

#[test]
fn level_filters_parameters() {
    let w = World::new();
    let level1 = stdout(&w.run(&["--param", "all", "all", "--parsable"]));
    assert!(
        !level1.contains("btl_base_verbose"),
        "level 8 parameter shown at level 1"
    );
    let level9 = stdout(&w.run(&["--param", "all", "all", "--level", "9", "--parsable"]));
    assert!(level9.contains("mca:btl:base:param:btl_base_verbose:value:0"));
    let bad = w.run(&["--level", "10"]);
    assert!(!bad.status.success());
}

#[test]
fn excluded_component_is_marked_disabled() {
    let w = World::new().env("OXMPI_MCA_btl", "^fixture");
    w.install_fixture();
    let out = stdout(&w.run(&["--parsable"]));
    assert!(out.contains("mca:btl:fixture:disabled:true"), "{out}");
    let out = stdout(&w.run(&[]));
    assert!(out.contains("MCA (-) btl: fixture"), "{out}");
}

#[test]
fn path_and_version() {
    let w = World::new();
    let out = stdout(&w.run(&["--path", "sysconfdir"]));
    assert_eq!(w.normalize(&out), "              Sysconfdir: $PREFIX/etc\n");
    let out = stdout(&w.run(&["--path", "componentpath", "--parsable"]));
    assert_eq!(
        w.normalize(&out),
        "path:componentpath:\"$PREFIX/lib/oxmpi:$HOME/.oxmpi/components\"\n"
    );
    let err = stderr(&w.run(&["--path", "nowhere"]));
    assert!(err.contains("unknown path name"), "{err}");
    let out = stdout(&w.run(&["--version"]));
    assert!(out.starts_with("oxmpi "), "{out}");
}

#[test]
fn tune_file_sits_between_files_and_environment() {
    let w = World::new();
    w.write_user_file("btl_base_verbose = 30\n");
    let tune = w.home.path().join("job.tune");
    std::fs::write(&tune, "--mca btl_base_verbose 50 -x FOO=1\n").unwrap();
    let t = tune.display().to_string();
    let args = [
        "--tune",
        &t,
        "--param",
        "btl",
        "base",
        "--level",
        "9",
        "--parsable",
    ];
    let out = stdout(&w.run(&args));
    assert_eq!(
        verbose_line(&out, "value"),
        "mca:btl:base:param:btl_base_verbose:value:50"
    );
    assert_eq!(
        verbose_line(&out, "source"),
        format!("mca:btl:base:param:btl_base_verbose:source:\"tune file ({t}:1)\"")
    );
    let w = w.env("OXMPI_MCA_btl_base_verbose", "20");
    let out = stdout(&w.run(&args));
    assert_eq!(
        verbose_line(&out, "value"),
        "mca:btl:base:param:btl_base_verbose:value:20"
    );
}

#[test]
fn json_output_parses_and_carries_sources() {
    let w = World::new().env("OXMPI_MCA_btl_fixture_priority", "77");
    let lib = w.install_fixture();
    let o = w.run(&["--all", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let btl = v["frameworks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "btl")
        .unwrap();
    assert_eq!(btl["components"][0]["name"], "fixture");
    assert_eq!(btl["components"][0]["path"], lib.display().to_string());
    let p = v["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "btl_fixture_priority")
        .unwrap();
    assert_eq!(p["value"], "77");
    assert_eq!(p["source"], "environment");
    assert_eq!(p["type"], "int");
}

#[test]
fn dev_build_uses_the_checkout_etc_and_its_template_is_valid() {
    let home = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_oxmpi_info"))
        .env_clear()
        .env("HOME", home.path())
        .args(["--path", "all", "--parsable"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "",
        "the template etc/oxmpi-mca-params.conf must be valid input"
    );
    let checkout = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap();
    let out = stdout(&o);
    let sysconfdir = out
        .lines()
        .find_map(|l| l.strip_prefix("path:sysconfdir:"))
        .expect(&out);
    assert_eq!(
        std::path::Path::new(sysconfdir).canonicalize().unwrap(),
        checkout.join("etc")
    );
    let files = out
        .lines()
        .find_map(|l| l.strip_prefix("path:paramfiles:"))
        .expect(&out);
    // The system file exists (no "(not found)" after it); the user file does not.
    assert!(files.ends_with("etc/oxmpi-mca-params.conf"), "{files}");
}

#[test]
fn show_failed_opens_and_queries_components_and_lists_every_kind_of_failure() {
    let w = World::new().env("OXMPI_MCA_rmaps_faulty_panic_in", "query");
    let faulty = w.component_dir().join("libmca_rmaps_faulty.so");
    std::fs::copy(built_library("liboxmpi_fixture_rmaps_faults.so"), &faulty).unwrap();
    let odd = w.component_dir().join("libmca_btl_oddmodule.so");
    std::fs::copy(built_library("liboxmpi_fixture_wrong_module.so"), &odd).unwrap();
    let near = w.component_dir().join("libmca_rmapsmine.so");
    std::fs::write(&near, "x").unwrap();

    // Listing components does not run their code; the module layout is
    // checked when the library loads.
    let o = w.run(&[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "warning: skipped component library {} (btl component oddmodule): its btl module table has another layout",
            odd.display()
        )),
        "{err}"
    );
    assert!(!err.contains("faulty"), "{err}");
    assert!(
        !err.contains("rmapsmine"),
        "not at default verbosity: {err}"
    );
    let out = stdout(&o);
    assert!(out.contains("MCA rmaps: faulty"), "{out}");
    assert!(!out.contains("oddmodule"), "{out}");

    let o = w.run(&["--show-failed"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let query_warning = format!(
        "oxmpi_info: warning: skipped component library {} (rmaps component faulty): its query panicked: 'the faulty fixture panics in query (rmaps_faulty_panic_in)' at ",
        faulty.display()
    );
    assert!(err.contains(&query_warning), "{err}");
    let out = stdout(&o);
    assert!(!out.contains("Failed components: none"), "{out}");
    assert!(
        out.contains(&format!(
            "MCA btl: oddmodule (failed to load) {}: its btl module table has another layout",
            odd.display()
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "MCA rmaps: faulty (failed) {}: its query panicked: ",
            faulty.display()
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "Ignored file: {} was ignored: the name does not match libmca_<framework>_<component>.so.",
            near.display()
        )),
        "{out}"
    );

    let out = stdout(&w.run(&["--show-failed", "--parsable"]));
    let line = out
        .lines()
        .find(|l| l.starts_with("mca:rmaps:faulty:failed:"))
        .expect(&out);
    assert!(line.contains("its query panicked"), "{line}");
    assert!(
        out.lines()
            .any(|l| l == format!("mca:ignored:{}", near.display())),
        "{out}"
    );

    // Without the panic, the probe finds nothing wrong with faulty.
    let calm = World::new();
    std::fs::copy(
        built_library("liboxmpi_fixture_rmaps_faults.so"),
        calm.component_dir().join("libmca_rmaps_faulty.so"),
    )
    .unwrap();
    let o = calm.run(&["--show-failed"]);
    assert_eq!(stderr(&o), "");
    assert!(
        stdout(&o).contains("Failed components: none"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn near_miss_of_a_component_selected_by_name_warns_at_default_verbosity() {
    let w = World::new();
    let near = w.component_dir().join("libmca_rmaps_mine.so.1");
    std::fs::write(&near, "x").unwrap();
    let o = w.run(&["--mca", "rmaps", "mine"]);
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "oxmpi_info: warning: {} was ignored: the name does not match libmca_<framework>_<component>.so.",
            near.display()
        )),
        "{err}"
    );
    assert!(
        err.contains("asks for component mine that is not available"),
        "{err}"
    );
}

#[test]
fn an_rmaps_component_shows_its_policy_names_and_parameters() {
    let w = World::new();
    std::fs::copy(
        built_library("liboxmpi_fixture_rmaps_reverse.so"),
        w.component_dir().join("libmca_rmaps_reverse.so"),
    )
    .unwrap();
    let o = w.run(&[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("MCA rmaps policy: --map-by reverse (reverse) Places processes as slot does, numbered in reverse"),
        "{out}"
    );
    let o = w.run(&["--parsable"]);
    let out = stdout(&o);
    assert!(
        out.contains("mca:rmaps:reverse:policy:reverse:\"Places processes as slot does"),
        "{out}"
    );
    let o = w.run(&["--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rmaps = v["frameworks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "rmaps")
        .unwrap();
    assert_eq!(rmaps["components"][0]["policies"][0]["name"], "reverse");
    let o = w.run(&[
        "--param",
        "rmaps",
        "reverse",
        "--level",
        "9",
        "--mca",
        "rmaps_reverse_skip",
        "3",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("rmaps_reverse_skip"), "{out}");
    assert!(out.contains("rmaps_reverse_priority"), "{out}");
    assert!(
        out.contains("Slots left empty at the end of the allocation before rank 0."),
        "{out}"
    );
}

#[test]
fn an_old_component_name_in_the_selection_is_noted_once() {
    let w = World::new().env("OXMPI_MCA_btl", "^vader");
    w.install_fixture();
    let o = w.run(&["--param", "btl", "all", "--level", "9", "--parsable"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let note = "oxmpi_info: warning: btl component \"vader\" is now called \"sm\"; \"vader\" still works but is deprecated: use \"sm\" (btl = \"^vader\", from environment)";
    assert_eq!(err.matches(note).count(), 1, "{err}");
    // Excluding sm leaves the fixture enabled.
    let out = stdout(&o);
    assert!(
        out.contains("mca:btl:fixture:param:btl_fixture_priority:disabled:false"),
        "{out}"
    );
}

#[test]
fn explain_says_when_a_name_is_deprecated() {
    let w = World::new();
    w.install_fixture();
    let o = w.run(&["--explain", "btl_fixture_old_eager_limit"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains(
            "  (btl_fixture_old_eager_limit is a deprecated name for btl_fixture_eager_limit)\n"
        ),
        "{out}"
    );
}
