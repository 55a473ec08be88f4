//! The wrappers as programs: their refusals, a `-showme` that names this
//! checkout's header directory and cargo's output directory, and the
//! pkg-config files `-showme:pkgconfig` writes, read by `pkg-config`.

use std::process::Command;

fn mpicc() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mpicc"))
}

#[test]
fn a_missing_compiler_is_named_with_the_variable_that_picks_another() {
    let out = mpicc()
        .args(["-o", "app", "app.c"])
        .env("OXMPI_CC", "/nonexistent/cc")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot run the compiler '/nonexistent/cc'") && err.contains("OXMPI_CC"),
        "{err}"
    );
}

#[test]
fn no_arguments_is_refused_with_an_example() {
    let out = mpicc().output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no input files"));
}

#[test]
fn showme_names_the_checkout_and_the_cargo_directory() {
    let out = Command::new(env!("CARGO_BIN_EXE_mpicxx"))
        .arg("-showme:incdirs")
        .output()
        .unwrap();
    assert!(out.status.success());
    let inc = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        std::path::Path::new(&inc).join("mpi.h").is_file(),
        "{inc} has no mpi.h"
    );
    let out = mpicc().arg("-showme:libdirs").output().unwrap();
    let lib = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let exe = std::path::PathBuf::from(env!("CARGO_BIN_EXE_mpicc"));
    assert_eq!(std::path::Path::new(&lib), exe.parent().unwrap());
}

/// `pkg-config ARGS` with `dir` first on `PKG_CONFIG_PATH`: its output
/// (trimmed), or the failure.
fn pkg_config(dir: &str, args: &[&str]) -> String {
    let out = Command::new("pkg-config")
        .args(args)
        .env("PKG_CONFIG_PATH", dir)
        .output()
        .expect("pkg-config is missing: apt-get install pkg-config (scripts/system-packages.txt lists it)");
    assert!(
        out.status.success(),
        "pkg-config {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The trimmed output of `mpicc ARGS`, which must succeed.
fn shows(args: &[&str], prefix: Option<&std::path::Path>) -> String {
    let mut cmd = mpicc();
    cmd.args(args);
    if let Some(p) = prefix {
        cmd.env("OXMPI_PREFIX", p);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "mpicc {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn pkg_config_files_give_the_wrappers_flags() {
    let dir = shows(&["-showme:pkgconfig"], None);
    let exe = std::path::PathBuf::from(env!("CARGO_BIN_EXE_mpicc"));
    assert_eq!(
        std::path::Path::new(&dir),
        exe.parent().unwrap().join("pkgconfig")
    );
    let flags = format!(
        "{} {}",
        shows(&["-showme:compile"], None),
        shows(&["-showme:link"], None)
    );
    let inc = shows(&["-showme:incdirs"], None);
    assert!(
        flags.starts_with(&format!("-I{inc} -L")) && flags.ends_with(" -lmpi"),
        "{flags}"
    );
    for name in ["oxmpi", "ompi", "ompi-c", "ompi-cxx"] {
        assert_eq!(
            pkg_config(&dir, &["--cflags", "--libs", name]),
            flags,
            "{name}.pc"
        );
        assert_eq!(
            pkg_config(&dir, &["--modversion", name]),
            env!("CARGO_PKG_VERSION")
        );
    }
}

#[test]
fn an_install_gets_pkg_config_files_for_its_prefix() {
    let tmp = tempfile::tempdir().unwrap();
    let prefix = tmp.path().join("ox");
    let dir = shows(&["-showme:pkgconfig"], Some(&prefix));
    assert_eq!(std::path::Path::new(&dir), prefix.join("lib/pkgconfig"));
    let lib = prefix.join("lib").display().to_string();
    assert_eq!(
        pkg_config(&dir, &["--cflags", "--libs", "ompi-c"]),
        format!(
            "-I{} -L{lib} -Wl,-rpath,{lib} -lmpi",
            prefix.join("include").display()
        )
    );
    // A second run finds them current and leaves them as they are.
    let before = std::fs::metadata(prefix.join("lib/pkgconfig/oxmpi.pc"))
        .unwrap()
        .modified()
        .unwrap();
    shows(&["-showme:pkgconfig"], Some(&prefix));
    let after = std::fs::metadata(prefix.join("lib/pkgconfig/oxmpi.pc"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(before, after);
}

#[test]
fn pkg_config_files_that_cannot_be_written_are_refused_with_the_directory() {
    let tmp = tempfile::tempdir().unwrap();
    // `lib` is a file, so `lib/pkgconfig` cannot be made (even by root).
    std::fs::write(tmp.path().join("lib"), "").unwrap();
    let out = mpicc()
        .arg("-showme:pkgconfig")
        .env("OXMPI_PREFIX", tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot write the pkg-config files of this install")
            && err.contains(&tmp.path().join("lib/pkgconfig").display().to_string()),
        "{err}"
    );
}
