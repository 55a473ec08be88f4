//! An isolated world for running `oxmpi_info`: a temporary HOME and install
//! prefix, an environment with nothing else in it, and the fixture component.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct World {
    pub home: tempfile::TempDir,
    pub prefix: tempfile::TempDir,
    env: Vec<(String, String)>,
}

/// A library of the workspace, built for this test run.
pub fn built_library(file: &str) -> PathBuf {
    oxmpi_test_support::build_workspace().library(file)
}

impl World {
    pub fn new() -> World {
        let world = World {
            home: tempfile::tempdir().unwrap(),
            prefix: tempfile::tempdir().unwrap(),
            env: Vec::new(),
        };
        std::fs::create_dir_all(world.prefix.path().join("etc")).unwrap();
        std::fs::create_dir_all(world.prefix.path().join("lib/oxmpi")).unwrap();
        world
    }

    pub fn component_dir(&self) -> PathBuf {
        self.prefix.path().join("lib/oxmpi")
    }

    /// Installs the fixture component as `libmca_btl_fixture.so`.
    pub fn install_fixture(&self) -> PathBuf {
        let dest = self.component_dir().join("libmca_btl_fixture.so");
        std::fs::copy(built_library("liboxmpi_fixture_good.so"), &dest).unwrap();
        dest
    }

    pub fn user_file(&self) -> PathBuf {
        self.home.path().join(".oxmpi/mca-params.conf")
    }

    pub fn write_user_file(&self, text: &str) -> PathBuf {
        let path = self.user_file();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    pub fn write_system_file(&self, text: &str) -> PathBuf {
        let path = self.prefix.path().join("etc/oxmpi-mca-params.conf");
        std::fs::write(&path, text).unwrap();
        path
    }

    pub fn env(mut self, key: &str, value: &str) -> World {
        self.env.push((key.into(), value.into()));
        self
    }

    pub fn run(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_oxmpi_info"));
        cmd.env_clear()
            .env("HOME", self.home.path())
            .env("OXMPI_PREFIX", self.prefix.path())
            .env("PATH", "/usr/bin:/bin")
            .args(args);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    }

    /// Replaces the temporary paths with `$HOME` and `$PREFIX`.
    pub fn normalize(&self, text: &str) -> String {
        text.replace(&self.prefix.path().display().to_string(), "$PREFIX")
            .replace(&self.home.path().display().to_string(), "$HOME")
    }
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Compares `actual` with the golden file `tests/golden/<name>`; with
/// `UPDATE_GOLDEN=1` in the environment, rewrites the file instead.
pub fn assert_golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e} (run with UPDATE_GOLDEN=1 to create it)",
            path.display()
        )
    });
    if expected != actual {
        for (i, (e, a)) in expected.lines().zip(actual.lines()).enumerate() {
            if e != a {
                panic!(
                    "{name} differs from the golden file at line {}:\n expected: {e}\n   actual: {a}\n(run with UPDATE_GOLDEN=1 to accept the new output)",
                    i + 1
                );
            }
        }
        panic!(
            "{name} differs from the golden file in length: expected {} lines, got {} (run with UPDATE_GOLDEN=1 to accept)",
            expected.lines().count(),
            actual.lines().count()
        );
    }
}
