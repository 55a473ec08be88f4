//! Shared helpers of the MCA integration tests: an isolated "world" (home,
//! install prefix, component directory, parameter sources) and the
//! test-only component libraries cargo builds from `tests/fixtures/`.
//!
//! Nothing here touches the real process environment: every variable is
//! passed to [`Mca::init`] through [`McaInputs::env`].
//!
//! The MCA keeps some process-wide state (the parameter values published to
//! components, framework verbosity), so a [`World`] holds a global lock for
//! as long as it lives: tests that build one run one at a time. The lock is
//! re-entrant within a thread, so one test may hold several worlds.

#![allow(dead_code)]

use oxmpi_mca::repository::ModuleLayout;
use oxmpi_mca::{Diagnostic, Mca, McaInputs, Severity};
use oxmpi_plugin_api::FrameworkInfo;
use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// A component library built from `tests/fixtures/`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Fixture {
    /// btl `fixture`, driven by its parameters (`tests/fixtures/good`).
    Good,
    /// btl `twin`, a second usable component (`tests/fixtures/twin`).
    Twin,
    /// btl `panicky`, panics in open (`tests/fixtures/panics`).
    Panics,
    /// btl `future`, declares btl interface 99.0.0 (`tests/fixtures/wrong_interface`).
    WrongInterface,
    /// A root module with an incompatible layout (`tests/fixtures/abi_mismatch`).
    AbiMismatch,
    /// btl `oddmodule`, a btl module table of another layout (`tests/fixtures/wrong_module`).
    WrongModule,
    /// btl `dupe`, declares one parameter name twice (`tests/fixtures/params_dup`).
    ParamsDup,
    /// btl `clash`, a synonym that is btl `fixture`'s parameter name (`tests/fixtures/params_clash`).
    ParamsClash,
    /// rmaps `faulty`, panics where `rmaps_faulty_panic_in` says and in map (`tests/fixtures/rmaps_faults`).
    RmapsFaults,
}

impl Fixture {
    /// The file cargo builds (`liboxmpi_fixture_<x>.so`).
    pub fn library_file_name(self) -> &'static str {
        match self {
            Fixture::Good => "liboxmpi_fixture_good.so",
            Fixture::Twin => "liboxmpi_fixture_twin.so",
            Fixture::Panics => "liboxmpi_fixture_panics.so",
            Fixture::WrongInterface => "liboxmpi_fixture_wrong_interface.so",
            Fixture::AbiMismatch => "liboxmpi_fixture_abi_mismatch.so",
            Fixture::WrongModule => "liboxmpi_fixture_wrong_module.so",
            Fixture::ParamsDup => "liboxmpi_fixture_params_dup.so",
            Fixture::ParamsClash => "liboxmpi_fixture_params_clash.so",
            Fixture::RmapsFaults => "liboxmpi_fixture_rmaps_faults.so",
        }
    }

    /// The library, built for this test run (in `target/<profile>/`).
    pub fn built_path(self) -> PathBuf {
        oxmpi_test_support::build_workspace().library(self.library_file_name())
    }
}

/// A real ELF shared library that is not an oxmpi component (libm).
pub fn system_libm() -> PathBuf {
    let dirs = [
        "/lib/x86_64-linux-gnu",
        "/usr/lib/x86_64-linux-gnu",
        "/lib/aarch64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/lib64",
        "/usr/lib64",
        "/lib",
        "/usr/lib",
    ];
    dirs.iter()
        .map(|d| Path::new(d).join("libm.so.6"))
        .find(|p| p.is_file())
        .expect("libm.so.6 in a standard library directory")
}

thread_local! {
    /// The global lock, while this thread's worlds hold it.
    static HELD: RefCell<Option<MutexGuard<'static, ()>>> = const { RefCell::new(None) };
    /// How many worlds of this thread are alive.
    static WORLDS: Cell<usize> = const { Cell::new(0) };
}

/// Holds the global lock while at least one [`World`] of this thread is
/// alive (re-entrant, so a test may build a second world before dropping
/// the first).
struct Serial;

impl Serial {
    fn acquire() -> Serial {
        static LOCK: Mutex<()> = Mutex::new(());
        if WORLDS.with(Cell::get) == 0 {
            let guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
            HELD.with(|h| *h.borrow_mut() = Some(guard));
        }
        WORLDS.with(|w| w.set(w.get() + 1));
        Serial
    }
}

impl Drop for Serial {
    fn drop(&mut self) {
        let left = WORLDS.with(|w| {
            w.set(w.get() - 1);
            w.get()
        });
        if left == 0 {
            HELD.with(|h| h.borrow_mut().take());
        }
    }
}

/// An isolated set of inputs for [`Mca::init`].
///
/// Layout under one temporary directory:
/// `home/` (HOME; the user file is `home/.oxmpi/mca-params.conf`),
/// `prefix/` (OXMPI_PREFIX; `prefix/etc/` holds the system and override
/// files), `components/` (the component path, unless a test sets another).
pub struct World {
    _serial: Serial,
    /// The temporary directory holding everything.
    pub root: tempfile::TempDir,
    /// HOME.
    pub home: PathBuf,
    /// OXMPI_PREFIX.
    pub prefix: PathBuf,
    /// The default component directory of this world.
    pub components: PathBuf,
    /// Environment passed to `Mca::init`, besides HOME and OXMPI_PREFIX.
    pub env: Vec<(String, String)>,
    /// `--mca NAME VALUE` pairs.
    pub command_line: Vec<(String, String)>,
    /// `--tune FILE` files.
    pub tune_files: Vec<PathBuf>,
    /// Module layouts checked at load time (none unless a test sets them).
    pub module_layouts: Vec<ModuleLayout>,
    /// The frameworks the program loads: every one unless a test says
    /// otherwise (as `oxmpi_info`).
    pub frameworks: Vec<&'static FrameworkInfo>,
    /// Frameworks whose framework-level parameters only are declared (none
    /// unless a test sets them, as mpirun does).
    pub base_frameworks: Vec<&'static FrameworkInfo>,
}

/// Every framework, as `oxmpi_info` hands them to the core.
pub fn all_frameworks() -> Vec<&'static FrameworkInfo> {
    vec![
        &oxmpi_framework_btl::FRAMEWORK,
        &oxmpi_framework_coll::FRAMEWORK,
        &oxmpi_framework_mtl::FRAMEWORK,
        &oxmpi_framework_pml::FRAMEWORK,
        &oxmpi_framework_rmaps::FRAMEWORK,
    ]
}

impl World {
    /// A world whose component path is its (empty) `components/` directory.
    pub fn new() -> World {
        let serial = Serial::acquire();
        let root = tempfile::tempdir().expect("a temporary directory");
        let home = root.path().join("home");
        let prefix = root.path().join("prefix");
        let components = root.path().join("components");
        for dir in [&home, &prefix.join("etc"), &components] {
            std::fs::create_dir_all(dir).expect("creating the world's directories");
        }
        let mut world = World {
            _serial: serial,
            root,
            home,
            prefix,
            components,
            env: Vec::new(),
            command_line: Vec::new(),
            tune_files: Vec::new(),
            module_layouts: Vec::new(),
            frameworks: all_frameworks(),
            base_frameworks: Vec::new(),
        };
        let path = world.components.display().to_string();
        world.set_env("OXMPI_MCA_mca_base_component_path", &path);
        world
    }

    /// A new directory `name` under the world's root.
    pub fn dir(&self, name: &str) -> PathBuf {
        let dir = self.root.path().join(name);
        std::fs::create_dir_all(&dir).expect("creating a directory");
        dir
    }

    /// Copies `fixture` into the world's component directory as `file_name`.
    pub fn install(&self, fixture: Fixture, file_name: &str) -> PathBuf {
        self.install_in(&self.components, fixture, file_name)
    }

    /// Copies `fixture` into `dir` as `file_name`.
    pub fn install_in(&self, dir: &Path, fixture: Fixture, file_name: &str) -> PathBuf {
        copy_file(&fixture.built_path(), &dir.join(file_name))
    }

    /// Writes `contents` as `file_name` in the component directory.
    pub fn write_component_file(&self, file_name: &str, contents: &[u8]) -> PathBuf {
        let path = self.components.join(file_name);
        std::fs::write(&path, contents).expect("writing a component file");
        path
    }

    /// Sets (or replaces) an environment variable for `Mca::init`.
    pub fn set_env(&mut self, name: &str, value: &str) -> &mut Self {
        self.env.retain(|(k, _)| k != name);
        self.env.push((name.to_string(), value.to_string()));
        self
    }

    /// Sets `OXMPI_MCA_<param>`.
    pub fn set_param_env(&mut self, param: &str, value: &str) -> &mut Self {
        self.set_env(&format!("OXMPI_MCA_{param}"), value)
    }

    /// Adds `--mca param value`.
    pub fn set_mca(&mut self, param: &str, value: &str) -> &mut Self {
        self.command_line
            .push((param.to_string(), value.to_string()));
        self
    }

    /// The system parameter file path.
    pub fn system_file(&self) -> PathBuf {
        self.prefix.join("etc").join("oxmpi-mca-params.conf")
    }

    /// The override file path.
    pub fn override_file(&self) -> PathBuf {
        self.prefix
            .join("etc")
            .join("oxmpi-mca-params-override.conf")
    }

    /// The user parameter file path.
    pub fn user_file(&self) -> PathBuf {
        self.home.join(".oxmpi").join("mca-params.conf")
    }

    /// Writes the system parameter file.
    pub fn write_system_file(&self, text: &str) -> PathBuf {
        write(&self.system_file(), text)
    }

    /// Writes the override file.
    pub fn write_override_file(&self, text: &str) -> PathBuf {
        write(&self.override_file(), text)
    }

    /// Writes the user parameter file.
    pub fn write_user_file(&self, text: &str) -> PathBuf {
        write(&self.user_file(), text)
    }

    /// Writes a tune file and passes it with `--tune`.
    pub fn add_tune_file(&mut self, name: &str, text: &str) -> PathBuf {
        let path = write(&self.root.path().join(name), text);
        self.tune_files.push(path.clone());
        path
    }

    /// Writes an arbitrary file under the world's root.
    pub fn write_file(&self, name: &str, text: &str) -> PathBuf {
        write(&self.root.path().join(name), text)
    }

    /// The inputs `Mca::init` gets.
    pub fn inputs(&self) -> McaInputs {
        let mut env = vec![
            ("HOME".to_string(), self.home.display().to_string()),
            (
                "OXMPI_PREFIX".to_string(),
                self.prefix.display().to_string(),
            ),
        ];
        env.extend(self.env.iter().cloned());
        McaInputs {
            program: "mca-test".into(),
            env,
            command_line: self.command_line.clone(),
            tune_files: self.tune_files.clone(),
            exe: None,
            env_not_text: Vec::new(),
            module_layouts: self.module_layouts.clone(),
            frameworks: self.frameworks.clone(),
            base_frameworks: self.base_frameworks.clone(),
        }
    }

    /// Runs `Mca::init` and takes its diagnostics.
    pub fn init(&self) -> (Mca, Diagnostics) {
        let mca = Mca::init(self.inputs());
        let diagnostics = Diagnostics(mca.take_diagnostics());
        (mca, diagnostics)
    }
}

fn write(path: &Path, text: &str) -> PathBuf {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("creating a parent directory");
    }
    std::fs::write(path, text).expect("writing a file");
    path.to_path_buf()
}

fn copy_file(from: &Path, to: &Path) -> PathBuf {
    std::fs::copy(from, to)
        .unwrap_or_else(|e| panic!("copying {} to {}: {e}", from.display(), to.display()));
    to.to_path_buf()
}

/// Diagnostics with helpers for assertions.
#[derive(Clone, Debug)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    /// Messages of this severity.
    pub fn of(&self, severity: Severity) -> Vec<&str> {
        self.0
            .iter()
            .filter(|d| d.severity == severity)
            .map(|d| d.message.as_str())
            .collect()
    }

    /// Warnings.
    pub fn warnings(&self) -> Vec<&str> {
        self.of(Severity::Warning)
    }

    /// Errors.
    pub fn errors(&self) -> Vec<&str> {
        self.of(Severity::Error)
    }

    /// Messages (of any severity) containing every one of `parts`.
    pub fn matching(&self, parts: &[&str]) -> Vec<&Diagnostic> {
        self.0
            .iter()
            .filter(|d| parts.iter().all(|p| d.message.contains(p)))
            .collect()
    }

    /// The one message containing every one of `parts`, of `severity`;
    /// panics with every diagnostic otherwise.
    pub fn expect_one(&self, severity: Severity, parts: &[&str]) -> &str {
        let found = self.matching(parts);
        assert_eq!(
            found.len(),
            1,
            "expected exactly one diagnostic containing {parts:?}, got:\n{self}"
        );
        assert_eq!(found[0].severity, severity, "{}", found[0].message);
        &found[0].message
    }

    /// Whether there are no diagnostics at all.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            return writeln!(f, "  (no diagnostics)");
        }
        for d in &self.0 {
            writeln!(f, "  {:?}: {}", d.severity, d.message)?;
        }
        Ok(())
    }
}
