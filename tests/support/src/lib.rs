//! Test-only helpers shared by the workspace's integration tests (a
//! dev-dependency only; never part of a shipped crate).
//!
//! Many tests run what `cargo test` does not build for them: `mpirun`
//! starts jobs whose ranks load the component libraries (`libmca_*.so`)
//! from the cargo output directory, tests install the test components of
//! `tests/fixtures/` into temporary component directories, and process
//! tests run example programs such as `pmi_hello`. `cargo test` builds a
//! package's own binaries and examples, but it leaves the cdylibs of other
//! packages in `deps/` (or does not build them at all), and a single
//! `--test` builds no example.
//!
//! [`build_workspace`] closes that gap: the first call in a test process
//! runs
//!
//! ```text
//! $CARGO build --workspace --lib --bins --examples --profile <P> --target-dir <D> [--target <T>]
//! ```
//!
//! in the workspace root, with the profile, target directory and target
//! triple of the running test (read from the test executable's path,
//! `<D>[/<T>]/<profile dir>/deps/<test>`), so every program, example and
//! library sits where the tests and `mpirun` look for them. Later calls
//! return the same answer without running cargo again. When everything is
//! already built, the call costs one cargo invocation that finds nothing
//! to do. A failed build fails the calling test with cargo's output.
//!
//! Test binaries that start together (`cargo nextest`, or two `cargo test`
//! runs at once) take turns through an exclusive lock on
//! `<D>/oxmpi-test-build.lock`: the first builds, the others then find
//! everything fresh.

#![forbid(unsafe_code)]

use nix::fcntl::{Flock, FlockArg};
use std::ffi::{OsStr, OsString};
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The workspace root (this crate is `tests/support` of it).
const WORKSPACE_ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// The file whose lock serializes the builds of concurrent test binaries,
/// in the target directory.
const LOCK_FILE: &str = "oxmpi-test-build.lock";

/// Where the running test's cargo build puts its output, as read from the
/// test executable's path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The target directory (`target/` unless the build chose another).
    pub target_dir: PathBuf,
    /// The target triple, when the test was built with `--target`.
    pub triple: Option<OsString>,
    /// The profile's output directory (`<target_dir>[/<triple>]/debug`):
    /// programs and libraries, with examples in its `examples/`.
    pub profile_dir: PathBuf,
    /// The cargo profile that writes to `profile_dir`: `dev` for `debug`,
    /// otherwise the directory's name (`release`, or a custom profile).
    pub profile: OsString,
}

impl Layout {
    /// The layout of the test executable at `exe`, which cargo puts in
    /// `<target_dir>[/<triple>]/<profile dir>/deps/`. A triple directory is
    /// recognized by the `CACHEDIR.TAG` cargo writes in the target
    /// directory: if the directory above the profile directory has none
    /// but the one above that does, the middle one is the triple.
    ///
    /// # Errors
    ///
    /// A sentence naming `exe` when it is not in a `deps/` directory two
    /// levels below another directory.
    pub fn of_test_executable(exe: &Path) -> Result<Layout, String> {
        let not_cargo = || {
            format!(
                "the test executable {} is not in a cargo output directory (<target>/<profile>/deps/); run the tests with cargo test",
                exe.display()
            )
        };
        let deps = exe.parent().ok_or_else(not_cargo)?;
        if deps.file_name() != Some(OsStr::new("deps")) {
            return Err(not_cargo());
        }
        let profile_dir = deps.parent().ok_or_else(not_cargo)?;
        let dir_name = profile_dir.file_name().ok_or_else(not_cargo)?;
        let above = profile_dir.parent().ok_or_else(not_cargo)?;
        let (target_dir, triple) = match above.parent() {
            Some(top)
                if !above.join("CACHEDIR.TAG").is_file() && top.join("CACHEDIR.TAG").is_file() =>
            {
                (top, above.file_name().map(OsStr::to_os_string))
            }
            _ => (above, None),
        };
        let profile = if dir_name == "debug" {
            OsString::from("dev")
        } else {
            dir_name.to_os_string()
        };
        Ok(Layout {
            target_dir: target_dir.to_path_buf(),
            triple,
            profile_dir: profile_dir.to_path_buf(),
            profile,
        })
    }

    /// The arguments of the build that puts every program, example and
    /// library of the workspace into this layout.
    pub fn build_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = [
            "build",
            "--workspace",
            "--lib",
            "--bins",
            "--examples",
            "--profile",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        args.push(self.profile.clone());
        args.push("--target-dir".into());
        args.push(self.target_dir.clone().into_os_string());
        if let Some(triple) = &self.triple {
            args.push("--target".into());
            args.push(triple.clone());
        }
        args
    }
}

/// The workspace's build output, once [`build_workspace`] has built it.
#[derive(Debug)]
pub struct Artifacts {
    layout: Layout,
}

impl Artifacts {
    /// The profile's output directory (`target/debug` in a plain
    /// `cargo test`): the programs, the libraries (component libraries
    /// `libmca_<fw>_<c>.so`, test components `liboxmpi_fixture_<f>.so`),
    /// and `examples/`. Programs of the workspace run from here find the
    /// component libraries next to them.
    pub fn dir(&self) -> &Path {
        &self.layout.profile_dir
    }

    /// A program of the workspace (`<dir>/<name>`).
    ///
    /// # Panics
    ///
    /// When the build made no such file: the name is not a binary of the
    /// workspace.
    pub fn program(&self, name: &str) -> PathBuf {
        self.existing(self.dir().join(name), "program")
    }

    /// An example of the workspace (`<dir>/examples/<name>`).
    ///
    /// # Panics
    ///
    /// When the build made no such file: the name is not an example of
    /// the workspace.
    pub fn example(&self, name: &str) -> PathBuf {
        self.existing(self.dir().join("examples").join(name), "example")
    }

    /// A library of the workspace by file name (`<dir>/<file>`, e.g.
    /// `liboxmpi_fixture_good.so`).
    ///
    /// # Panics
    ///
    /// When the build made no such file: no library target of the
    /// workspace has that file name.
    pub fn library(&self, file: &str) -> PathBuf {
        self.existing(self.dir().join(file), "library")
    }

    fn existing(&self, path: PathBuf, what: &str) -> PathBuf {
        assert!(
            path.is_file(),
            "{} is missing after `cargo {}`: no {what} of the workspace has that name",
            path.display(),
            display_args(&self.layout.build_args()),
        );
        path
    }
}

/// Builds every program, example and library of the workspace into the
/// running test's output directory, once per test process (see the crate
/// documentation), and returns where they are.
///
/// # Panics
///
/// When the test executable is not in a cargo output directory, or when
/// the build fails; the message holds cargo's output. Every later call in
/// the process panics with the same message without building again.
pub fn build_workspace() -> &'static Artifacts {
    static BUILT: OnceLock<Result<Artifacts, String>> = OnceLock::new();
    match BUILT.get_or_init(build) {
        Ok(artifacts) => artifacts,
        Err(message) => panic!("{message}"),
    }
}

fn build() -> Result<Artifacts, String> {
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find the test executable's path: {e}"))?;
    let layout = Layout::of_test_executable(&exe)?;
    // The cargo running the tests; when a test runs outside cargo, the
    // cargo that built this crate.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let args = layout.build_args();
    let _lock = lock(&layout.target_dir);
    let output = Command::new(&cargo)
        .args(&args)
        .current_dir(WORKSPACE_ROOT)
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .map_err(|e| {
            format!(
                "cannot run {} to build the workspace for this test: {e}",
                Path::new(&cargo).display()
            )
        })?;
    if !output.status.success() {
        return Err(format!(
            "`cargo {}` in {WORKSPACE_ROOT} failed ({}); the tests need the workspace's programs, examples and libraries built. Cargo said:\n{}{}",
            display_args(&args),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
        ));
    }
    Ok(Artifacts { layout })
}

/// Takes the build lock of `target_dir`, waiting for another test binary's
/// build to finish. Without the lock (a file system that refuses it) the
/// build still runs: cargo's own lock keeps concurrent builds correct, the
/// lock only spares the others a wait on cargo's.
fn lock(target_dir: &Path) -> Option<Flock<std::fs::File>> {
    let path = target_dir.join(LOCK_FILE);
    let file = match OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
    {
        Ok(file) => file,
        Err(e) => {
            eprintln!(
                "oxmpi-test-support: cannot open {}: {e}; building without it",
                path.display()
            );
            return None;
        }
    };
    match Flock::lock(file, FlockArg::LockExclusive) {
        Ok(locked) => Some(locked),
        Err((_, errno)) => {
            eprintln!(
                "oxmpi-test-support: cannot lock {}: {errno}; building without it",
                path.display()
            );
            None
        }
    }
}

fn display_args(args: &[OsString]) -> String {
    args.iter()
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests;
