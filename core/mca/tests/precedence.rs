//! Where parameter values come from, through `Mca::init`: the precedence of
//! every pair of sources, the parameter-file list, and the diagnostics for
//! bad file lines, bad values and contradictory command lines.
//!
//! Precedence, lowest to highest: default < system file < user file < tune
//! file < environment < command line < override file.

mod common;

use common::World;
use oxmpi_mca::{Mca, Severity, Source};

const PARAM: &str = "btl_base_verbose";

/// A source of parameter values, in increasing precedence.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Src {
    Default,
    SystemFile,
    UserFile,
    TuneFile,
    Environment,
    CommandLine,
    OverrideFile,
}

const ORDER: [Src; 7] = [
    Src::Default,
    Src::SystemFile,
    Src::UserFile,
    Src::TuneFile,
    Src::Environment,
    Src::CommandLine,
    Src::OverrideFile,
];

impl Src {
    /// A value of `btl_base_verbose` that only this source uses.
    fn value(self) -> &'static str {
        match self {
            Src::Default => "0",
            Src::SystemFile => "11",
            Src::UserFile => "22",
            Src::TuneFile => "33",
            Src::Environment => "44",
            Src::CommandLine => "55",
            Src::OverrideFile => "66",
        }
    }

    /// Sets `name = value` from this source (files: on line 2, after a
    /// comment), and returns the `Source` the MCA must record for it.
    fn set(self, w: &mut World, name: &str, value: &str) -> Source {
        let file_text = format!("# set by the {self:?} source\n{name} = {value}\n");
        match self {
            Src::Default => Source::Default,
            Src::SystemFile => Source::File {
                path: w.write_system_file(&file_text),
                line: 2,
                index: 1,
            },
            Src::UserFile => Source::File {
                path: w.write_user_file(&file_text),
                line: 2,
                index: 0,
            },
            Src::TuneFile => Source::Tune {
                path: w.add_tune_file(
                    "job.tune",
                    &format!("# tune\n--mca {name} {value} -x SOME_VAR\n"),
                ),
                line: 2,
            },
            Src::Environment => {
                w.set_param_env(name, value);
                Source::Environment {
                    variable: format!("OXMPI_MCA_{name}"),
                }
            }
            Src::CommandLine => {
                w.set_mca(name, value);
                Source::CommandLine
            }
            Src::OverrideFile => Source::Override {
                path: w.write_override_file(&file_text),
                line: 2,
            },
        }
    }
}

fn explain_sources(mca: &Mca, name: &str) -> Vec<(Source, bool)> {
    let (_, rows) = mca.explain(name).expect("declared");
    rows.into_iter()
        .map(|r| (r.assignment.source, r.wins))
        .collect()
}

#[test]
fn every_pair_of_sources_resolves_to_the_higher_one() {
    let mut pairs = 0;
    for (i, &low) in ORDER.iter().enumerate() {
        for &high in &ORDER[i + 1..] {
            pairs += 1;
            let mut w = World::new();
            let low_source = low.set(&mut w, PARAM, low.value());
            let high_source = high.set(&mut w, PARAM, high.value());
            let (mca, d) = w.init();
            assert!(d.is_empty(), "{low:?} < {high:?}: {d}");
            let r = mca.value(PARAM).expect("declared");
            assert_eq!(r.text, high.value(), "{low:?} < {high:?}");
            assert_eq!(
                r.value.as_i64(),
                high.value().parse().ok(),
                "{low:?} < {high:?}"
            );
            assert_eq!(r.source, high_source, "{low:?} < {high:?}");
            assert_eq!(mca.int_value(PARAM), high.value().parse().ok());

            // explain: highest first, the default last, the winner marked.
            let mut expected = vec![(high_source, true)];
            if low != Src::Default {
                expected.push((low_source, false));
            }
            expected.push((Source::Default, false));
            assert_eq!(explain_sources(&mca, PARAM), expected, "{low:?} < {high:?}");
        }
    }
    assert_eq!(pairs, 21);
}

#[test]
fn all_sources_at_once_explain_in_precedence_order() {
    let mut w = World::new();
    let sources: Vec<Source> = ORDER
        .iter()
        .map(|s| s.set(&mut w, PARAM, s.value()))
        .collect();
    let (mca, d) = w.init();
    assert!(d.is_empty(), "{d}");
    assert_eq!(mca.value(PARAM).unwrap().text, "66");
    let (info, rows) = mca.explain(PARAM).unwrap();
    assert_eq!(info.full_name, PARAM);
    let got: Vec<(Source, &str, bool)> = rows
        .iter()
        .map(|r| {
            (
                r.assignment.source.clone(),
                r.assignment.value.as_str(),
                r.wins,
            )
        })
        .collect();
    let expected: Vec<(Source, &str, bool)> = ORDER
        .iter()
        .zip(sources)
        .rev()
        .map(|(s, source)| {
            let value = if *s == Src::Default {
                "error"
            } else {
                s.value()
            };
            (source, value, *s == Src::OverrideFile)
        })
        .collect();
    assert_eq!(got, expected);
    assert!(rows.iter().all(|r| r.outcome.is_ok()), "{rows:?}");
}

#[test]
fn an_invalid_value_is_an_error_and_the_next_source_wins() {
    let mut w = World::new();
    let system = Src::SystemFile.set(&mut w, PARAM, "11");
    w.set_param_env(PARAM, "loud");
    let (mca, d) = w.init();
    let error = d.expect_one(Severity::Error, &["\"loud\""]);
    assert!(
        error.starts_with(
            "invalid value \"loud\" for parameter btl_base_verbose (from environment variable OXMPI_MCA_btl_base_verbose): "
        ),
        "{error}"
    );
    assert!(
        error.contains("Expected one of -1 \"none\", 0 \"error\""),
        "{error}"
    );
    assert!(error.contains("or a number from 0 to 100."), "{error}");
    let r = mca.value(PARAM).unwrap();
    assert_eq!((r.text.as_str(), &r.source), ("11", &system));

    // explain shows the rejected row first, not winning, with the reason.
    let (_, rows) = mca.explain(PARAM).unwrap();
    assert_eq!(rows.len(), 3);
    assert!(!rows[0].wins);
    assert_eq!(rows[0].outcome.as_ref().unwrap_err(), error);
    assert!(rows[1].wins && rows[1].assignment.source == system);
}

#[test]
fn invalid_values_name_parameter_value_source_and_accepted_values() {
    let mut w = World::new();
    w.install(common::Fixture::Good, "libmca_btl_fixture.so");
    let system = w.write_system_file("btl_fixture_fail_open = maybe\n");
    w.set_mca("btl_fixture_priority", "high");
    w.add_tune_file("t.tune", "btl_fixture_eager_limit=-5\n");
    let (mca, d) = w.init();
    assert_eq!(d.errors().len(), 3, "{d}");
    let e = d.expect_one(Severity::Error, &["btl_fixture_fail_open"]);
    assert!(
        e.starts_with(&format!(
            "invalid value \"maybe\" for parameter btl_fixture_fail_open (from file ({}:1)): ",
            system.display()
        )),
        "{e}"
    );
    assert!(e.contains("Expected a boolean: 1/0, true/false"), "{e}");
    let e = d.expect_one(Severity::Error, &["btl_fixture_priority"]);
    assert!(
        e.starts_with("invalid value \"high\" for parameter btl_fixture_priority (from --mca btl_fixture_priority on the command line): "),
        "{e}"
    );
    assert!(e.contains("Expected an integer from"), "{e}");
    let e = d.expect_one(Severity::Error, &["btl_fixture_eager_limit"]);
    assert!(e.contains("\"-5\""), "{e}");
    assert!(e.contains("(from tune file ("), "{e}");
    assert!(e.contains("t.tune:1))"), "{e}");
    assert!(e.contains("Expected a non-negative size"), "{e}");
    // The defaults stay in effect.
    assert_eq!(mca.bool_value("btl_fixture_fail_open"), Some(false));
    assert_eq!(mca.int_value("btl_fixture_priority"), Some(10));
    assert_eq!(mca.int_value("btl_fixture_eager_limit"), Some(65536));
}

#[test]
fn param_files_replaces_the_file_list_leftmost_wins() {
    let mut w = World::new();
    w.write_system_file("btl_base_verbose = 11\npml_base_verbose = 11\n");
    w.write_user_file("btl_base_verbose = 22\n");
    let a = w.write_file("a.conf", "btl_base_verbose = 1\n");
    let b = w.write_file("b.conf", "btl_base_verbose = 2\ncoll_base_verbose = 3\n");
    let list = format!("{},{}", a.display(), b.display());
    w.set_param_env("mca_base_param_files", &list);
    let (mca, d) = w.init();
    assert!(d.is_empty(), "{d}");
    assert_eq!(mca.param_files(), [(a.clone(), true), (b.clone(), true)]);
    let r = mca.value("btl_base_verbose").unwrap();
    assert_eq!(r.text, "1");
    assert_eq!(
        r.source,
        Source::File {
            path: a.clone(),
            line: 1,
            index: 0
        }
    );
    let r = mca.value("coll_base_verbose").unwrap();
    assert_eq!(
        (r.text.as_str(), &r.source),
        (
            "3",
            &Source::File {
                path: b.clone(),
                line: 2,
                index: 1
            }
        )
    );
    // The system and user files are not read.
    assert_eq!(
        mca.value("pml_base_verbose").unwrap().source,
        Source::Default
    );

    // The same from the command line; a listed file that does not exist
    // is a warning.
    let mut w2 = World::new();
    let missing = w2.root.path().join("missing.conf");
    let c = w2.write_file("c.conf", "btl_base_verbose = 7\n");
    w2.set_mca(
        "mca_base_param_files",
        &format!("{},{}", missing.display(), c.display()),
    );
    let (mca, d) = w2.init();
    assert_eq!(
        mca.param_files(),
        [(missing.clone(), false), (c.clone(), true)]
    );
    assert_eq!(mca.value("btl_base_verbose").unwrap().text, "7");
    let warning = d.expect_one(Severity::Warning, &[&missing.display().to_string()]);
    assert!(warning.contains("does not exist"), "{warning}");
    assert!(warning.contains("set by command line"), "{warning}");
    assert_eq!(d.0.len(), 1, "{d}");
}

#[test]
fn param_files_none_reads_no_file() {
    let mut w = World::new();
    w.write_system_file("btl_base_verbose = 11\n");
    w.write_user_file("btl_base_verbose = 22\n");
    w.write_override_file("pml_base_verbose = 5\n");
    w.set_param_env("mca_base_param_files", "none");
    let (mca, d) = w.init();
    assert!(d.is_empty(), "{d}");
    assert!(mca.param_files().is_empty(), "{:?}", mca.param_files());
    assert_eq!(
        mca.value("btl_base_verbose").unwrap().source,
        Source::Default
    );
    // The override file is not in the list: it is always read.
    assert_eq!(mca.value("pml_base_verbose").unwrap().text, "5");
}

#[test]
fn default_file_list_is_user_then_system() {
    let w = World::new();
    let (mca, d) = w.init();
    assert!(d.is_empty(), "{d}");
    assert_eq!(
        mca.param_files(),
        [(w.user_file(), false), (w.system_file(), false)]
    );
}

#[test]
fn param_files_cannot_be_set_from_a_parameter_file() {
    let w = World::new();
    let other = w.write_file("other.conf", "btl_base_verbose = 9\n");
    let system = w.write_system_file(&format!("mca_base_param_files = {}\n", other.display()));
    let (mca, d) = w.init();
    let warning = d.expect_one(Severity::Warning, &["mca_base_param_files"]);
    assert!(
        warning.contains("parameter files cannot set it"),
        "{warning}"
    );
    assert!(
        warning.contains(&format!("{}:1", system.display())),
        "{warning}"
    );
    assert_eq!(
        mca.value("btl_base_verbose").unwrap().source,
        Source::Default
    );
}

#[test]
fn malformed_file_lines_are_errors_naming_file_and_line() {
    let mut w = World::new();
    let system = w.write_system_file("# system\nbtl_base_verbose = 11\njust words\n");
    let user = w.write_user_file("= 5\n");
    let over = w.write_override_file("pml_base_verbose = \"unterminated\n");
    let tune = w.add_tune_file("bad.tune", "--mca onlyname\n");
    let (mca, d) = w.init();
    assert_eq!(d.errors().len(), 4, "{d}");
    assert!(d.warnings().is_empty(), "{d}");
    for (path, line, problem) in [
        (&system, 3, "no `=` on the line: \"just words\""),
        (&user, 1, "no parameter name before `=`"),
        (&over, 1, "no closing"),
        (&tune, 1, "--mca needs a parameter name and a value"),
    ] {
        let location = format!("{}:{line}: ", path.display());
        let e = d.expect_one(Severity::Error, &[&location]);
        assert!(e.starts_with(&location), "{e}");
        assert!(e.contains(problem), "{e}");
    }
    // The good lines of a file with a bad one still count.
    assert_eq!(mca.value("btl_base_verbose").unwrap().text, "11");
}

#[test]
fn mca_given_twice_with_different_values_is_an_error() {
    let mut w = World::new();
    w.set_mca(PARAM, "1").set_mca(PARAM, "2");
    let (_, d) = w.init();
    let e = d.expect_one(Severity::Error, &["given twice"]);
    assert_eq!(
        e,
        "--mca btl_base_verbose is given twice with different values (\"1\" and \"2\"); give it once"
    );
    assert_eq!(d.0.len(), 1, "{d}");

    // The same value twice is harmless.
    let mut w2 = World::new();
    w2.set_mca(PARAM, "3").set_mca(PARAM, "3");
    let (mca, d) = w2.init();
    assert!(d.is_empty(), "{d}");
    assert_eq!(mca.value(PARAM).unwrap().text, "3");
}

#[test]
fn within_one_source_the_later_assignment_wins() {
    let mut w = World::new();
    w.write_system_file("btl_base_verbose = 1\nbtl_base_verbose = 2\n");
    w.add_tune_file("a.tune", "--mca pml_base_verbose 1\n");
    w.add_tune_file("b.tune", "--mca pml_base_verbose 2\n");
    let (mca, d) = w.init();
    assert!(d.is_empty(), "{d}");
    let r = mca.value("btl_base_verbose").unwrap();
    assert_eq!(
        (r.text.as_str(), &r.source),
        (
            "2",
            &Source::File {
                path: w.system_file(),
                line: 2,
                index: 1
            }
        )
    );
    let r = mca.value("pml_base_verbose").unwrap();
    assert_eq!(r.text, "2");
    assert!(
        matches!(&r.source, Source::Tune { path, line: 1 } if path.ends_with("b.tune")),
        "{:?}",
        r.source
    );
}
