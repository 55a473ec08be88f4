//! The wrappers as programs: their refusals, and a `-showme` that names
//! this checkout's header directory and cargo's output directory.

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
