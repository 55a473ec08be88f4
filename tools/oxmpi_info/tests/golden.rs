//! Byte-for-byte golden tests of the three output formats, in a world with
//! the fixture component installed, a user file and an environment value.
//! Temporary paths are replaced by `$HOME` and `$PREFIX`. After an intended
//! change of the output, run `UPDATE_GOLDEN=1 cargo test -p oxmpi-info` and
//! review the diff of `tests/golden/`.

mod common;

use common::{assert_golden, built_library, stderr, stdout, World};

fn world() -> World {
    let w = World::new().env("OXMPI_MCA_btl_fixture_priority", "25");
    w.install_fixture();
    w.write_user_file("# user settings\nbtl_base_verbose = 30\n");
    w
}

fn check(args: &[&str], golden: &str) {
    let w = world();
    let o = w.run(args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o), "", "no diagnostics expected");
    assert_golden(golden, &w.normalize(&stdout(&o)));
}

#[test]
fn pretty_all() {
    check(&["--all"], "all.txt");
}

#[test]
fn parsable_all() {
    check(&["--all", "--parsable"], "all.parsable");
}

#[test]
fn json_all() {
    check(&["--all", "--json"], "all.json");
}

#[test]
fn pretty_default_view() {
    check(&[], "default.txt");
}

#[test]
fn pretty_component_params() {
    check(
        &["--param", "btl", "fixture", "--level", "9"],
        "btl-fixture.txt",
    );
}

#[test]
fn pretty_and_parsable_show_failed_with_every_kind_of_failure() {
    let w = World::new().env("OXMPI_MCA_rmaps_faulty_panic_in", "query");
    w.install_fixture();
    let dir = w.component_dir();
    std::fs::copy(
        built_library("liboxmpi_fixture_rmaps_faults.so"),
        dir.join("libmca_rmaps_faulty.so"),
    )
    .unwrap();
    std::fs::copy(
        built_library("liboxmpi_fixture_wrong_module.so"),
        dir.join("libmca_btl_oddmodule.so"),
    )
    .unwrap();
    std::fs::write(dir.join("libmca_btl_x.so.bak"), "x").unwrap();
    std::fs::write(dir.join("mine.so"), "x").unwrap();
    for (args, golden) in [
        (&["--show-failed"][..], "show-failed.txt"),
        (&["--show-failed", "--parsable"][..], "show-failed.parsable"),
    ] {
        let o = w.run(args);
        assert!(o.status.success(), "{}", stderr(&o));
        // The two skipped libraries, each warned about once.
        assert_eq!(stderr(&o).lines().count(), 2, "{}", stderr(&o));
        assert_golden(golden, &w.normalize(&stdout(&o)));
    }
}
