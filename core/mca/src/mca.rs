//! [`Mca`]: one process's view of parameters and components.
//!
//! Start-up order:
//! 1. declare the core's parameters and those of the frameworks the program
//!    loads ([`McaInputs::frameworks`]);
//! 2. collect assignments from the environment (`OXMPI_MCA_<name>`, with an
//!    optional `OXMPI_MCA_SOURCE_<name>` = `COMMAND_LINE` or
//!    `TUNE:<path>:<line>` marking values forwarded by mpirun), the command
//!    line, tune files and the override file;
//! 3. resolve `mca_base_param_files` from those and read the parameter files;
//! 4. resolve the core's parameters, scan `mca_base_component_path`, declare
//!    the loaded components' parameters;
//! 5. resolve everything; report invalid values, unknown names, deprecated
//!    names, load failures and invalid selections.
//!
//! Nothing here panics or exits on bad input: problems become
//! [`Diagnostic`]s that the program prints ([`Mca::take_diagnostics`]).

use crate::core_params::{
    self, COMPONENT_PATH, OVERRIDE_FILE, PARAM_FILES, SHOW_LOAD_ERRORS, VERBOSE, WARN_UNKNOWN,
};
use crate::files::{self, LineError};
use crate::input_file::read_input_file;
use crate::paths::{user_component_dir, InstallPaths};
use crate::registry::{check_decl, ParamInfo, Registry};
use crate::repository::{self, LoadFailure, LoadedComponent, ModuleLayout, Repository};
use crate::selection::Filter;
use crate::source::Source;
use crate::tune::{self, TuneEntry};
use crate::value::{self, Value};
use crate::{log, services, suggest, FRAMEWORK_NAMES};
use oxmpi_plugin_api::text::excerpt;
use oxmpi_plugin_api::FrameworkInfo;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Prefix of parameter environment variables.
pub const ENV_PREFIX: &str = "OXMPI_MCA_";
/// Prefix of the variables that carry a forwarded value's original source.
pub const ENV_SOURCE_PREFIX: &str = "OXMPI_MCA_SOURCE_";

/// Everything a process's parameters come from.
#[derive(Clone, Debug, Default)]
pub struct McaInputs {
    /// Program name used in messages (`oxmpi_info`).
    pub program: String,
    /// The environment (only `OXMPI_MCA_*`, `HOME` and `OXMPI_PREFIX` are read).
    pub env: Vec<(String, String)>,
    /// `--mca NAME VALUE` pairs, in order.
    pub command_line: Vec<(String, String)>,
    /// Tune files (`--tune FILE`), in order; a later file wins.
    pub tune_files: Vec<PathBuf>,
    /// The running program, to find the install (dev tree or prefix).
    pub exe: Option<PathBuf>,
    /// `OXMPI_MCA_*` variables whose value is not UTF-8 text (each is an
    /// error: parameter values are text).
    pub env_not_text: Vec<String>,
    /// Layouts of the framework module tables, checked when a component
    /// library is loaded: each program passes those of the frameworks whose
    /// modules it uses (the core knows no framework's module type). A
    /// framework not listed has its modules checked only when they are used.
    pub module_layouts: Vec<ModuleLayout>,
    /// The frameworks this program loads, in the order the info tool lists
    /// them: their parameters are declared and checked and their component
    /// libraries loaded. The files of the other frameworks of
    /// [`FRAMEWORK_NAMES`] are not opened, and settings of their parameters
    /// are neither checked nor reported as unknown (the program that loads
    /// them checks them). The core depends on no framework crate.
    pub frameworks: Vec<&'static FrameworkInfo>,
    /// Frameworks this program does not load but whose framework-level
    /// parameters (`<fw>`, `<fw>_base_*`) it declares and checks, because
    /// it passes them on: mpirun checks the ranks' btl, pml, … settings
    /// before launching. Their component files are not opened, their
    /// selection is checked for syntax only, and settings of their
    /// component parameters are left to the program that loads them.
    pub base_frameworks: Vec<&'static FrameworkInfo>,
}

impl McaInputs {
    /// Inputs from this process's environment and executable path.
    pub fn from_process(program: &str) -> McaInputs {
        // One pass: text variables are kept; a parameter variable whose
        // value is not text is remembered for its error.
        let mut env = Vec::new();
        let mut env_not_text = Vec::new();
        for (key, value) in std::env::vars_os() {
            let Ok(key) = key.into_string() else { continue };
            match value.into_string() {
                Ok(value) => env.push((key, value)),
                Err(_) if key.starts_with(ENV_PREFIX) => env_not_text.push(key),
                Err(_) => {}
            }
        }
        McaInputs {
            program: program.to_string(),
            env,
            command_line: Vec::new(),
            tune_files: Vec::new(),
            exe: std::env::current_exe().ok(),
            env_not_text,
            module_layouts: Vec::new(),
            frameworks: Vec::new(),
            base_frameworks: Vec::new(),
        }
    }
}

/// One value given to one name by one source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    /// The name as written (may be a synonym or unknown).
    pub name: String,
    /// The value as written.
    pub value: String,
    /// Where it came from.
    pub source: Source,
}

impl Assignment {
    /// How the user wrote it, for messages (`environment variable
    /// OXMPI_MCA_x`); a name quoted in it is an [`excerpt`].
    pub fn origin(&self) -> String {
        match &self.source {
            Source::Environment { variable } => {
                format!("environment variable {}", excerpt(variable))
            }
            Source::CommandLine => format!("--mca {} on the command line", excerpt(&self.name)),
            other => other.to_string(),
        }
    }
}

/// The value in effect for a parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved {
    /// Parsed value.
    pub value: Value,
    /// As the info tool prints it.
    pub text: String,
    /// Winning source.
    pub source: Source,
}

/// How serious a diagnostic is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Severity {
    /// Worth telling; the process goes on.
    Warning,
    /// A setting is wrong; programs should refuse to run a job.
    Error,
}

/// A message for the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Warning or error.
    pub severity: Severity,
    /// One paragraph: what, where from, what to do.
    pub message: String,
    /// The parameter it is about (its full name, or the name as the user
    /// wrote it when no parameter has it), when it is about one.
    pub param: Option<String>,
}

/// One row of [`Mca::explain`].
#[derive(Clone, Debug, PartialEq)]
pub struct ExplainRow {
    /// The assignment (the default appears as a `Default` source).
    pub assignment: Assignment,
    /// The printed value, or why it was rejected.
    pub outcome: Result<String, String>,
    /// Whether this row is the value in effect.
    pub wins: bool,
}

/// One process's parameters and components.
pub struct Mca {
    program: String,
    home: Option<PathBuf>,
    paths: InstallPaths,
    registry: Registry,
    assignments: Vec<Assignment>,
    resolved: Vec<Resolved>,
    repository: Repository,
    param_files: Vec<(PathBuf, bool)>,
    exports: Vec<(String, Option<String>)>,
    module_layouts: Vec<ModuleLayout>,
    frameworks: Vec<&'static FrameworkInfo>,
    base_frameworks: Vec<&'static FrameworkInfo>,
    lifecycle_failures: Mutex<Vec<LoadFailure>>,
    diagnostics: Mutex<Vec<Diagnostic>>,
}

fn env_source(env: &HashMap<&str, &str>, name: &str) -> Source {
    let variable = format!("{ENV_PREFIX}{name}");
    match env.get(format!("{ENV_SOURCE_PREFIX}{name}").as_str()) {
        Some(&"COMMAND_LINE") => Source::CommandLine,
        Some(marker) => match marker
            .strip_prefix("TUNE:")
            .and_then(|rest| rest.rsplit_once(':'))
            .and_then(|(p, l)| Some((p, l.parse::<usize>().ok()?)))
        {
            Some((path, line)) => Source::Tune {
                path: path.into(),
                line,
            },
            None => Source::Environment { variable },
        },
        None => Source::Environment { variable },
    }
}

impl Mca {
    /// Builds the process's view from `inputs`. Never fails: problems are
    /// kept as diagnostics.
    pub fn init(inputs: McaInputs) -> Mca {
        let env: HashMap<&str, &str> = inputs
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let home = env.get("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
        let paths = InstallPaths::detect(inputs.exe.as_deref(), env.get("OXMPI_PREFIX").copied());
        let mut mca = Mca {
            program: inputs.program.clone(),
            home,
            paths,
            registry: Registry::default(),
            assignments: Vec::new(),
            resolved: Vec::new(),
            repository: Repository::default(),
            param_files: Vec::new(),
            exports: Vec::new(),
            module_layouts: inputs.module_layouts.clone(),
            frameworks: inputs.frameworks.clone(),
            base_frameworks: inputs
                .base_frameworks
                .iter()
                .copied()
                .filter(|b| !inputs.frameworks.iter().any(|f| f.name == b.name))
                .collect(),
            lifecycle_failures: Mutex::new(Vec::new()),
            diagnostics: Mutex::new(Vec::new()),
        };
        mca.declare_builtin();
        mca.collect_direct_sources(&env, &inputs);
        mca.read_param_files();
        // Resolve what is declared so far: it drives the scan.
        let (resolved, _, _) = mca.resolve_all();
        mca.resolved = resolved;
        mca.apply_verbosity();
        mca.load_components();
        let (resolved, errors, warnings) = mca.resolve_all();
        mca.resolved = resolved;
        mca.apply_verbosity();
        for (param, w) in warnings {
            mca.warn_about(param, w);
        }
        for e in errors {
            mca.error(e);
        }
        mca.report_load_failures();
        mca.report_unknown_names();
        mca.check_selections();
        mca.publish();
        mca
    }

    fn warn(&self, message: String) {
        self.push(Severity::Warning, message, None);
    }

    fn warn_about(&self, param: String, message: String) {
        self.push(Severity::Warning, message, Some(param));
    }

    fn error(&self, message: String) {
        self.push(Severity::Error, message, None);
    }

    fn push(&self, severity: Severity, message: String, param: Option<String>) {
        let mut d = self.diagnostics.lock().unwrap_or_else(|e| e.into_inner());
        if !d.iter().any(|x| x.message == message) {
            d.push(Diagnostic {
                severity,
                message,
                param,
            });
        }
    }

    /// Records a component whose `register`, `open`, `query` or `close`
    /// failed or panicked: logged at verbosity `component` of its framework
    /// and of `mca`, kept for [`Mca::failures`], and a warning when
    /// [`crate::core_params::SHOW_LOAD_ERRORS`] (or a selection naming the
    /// component) asks for it, once per library and reason.
    pub(crate) fn record_lifecycle_failure(&self, failure: LoadFailure) {
        for fw in [failure.framework.as_str(), "mca"] {
            log::log(fw, &failure.component, log::COMPONENT, &failure.message());
        }
        let new = {
            let mut list = self
                .lifecycle_failures
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let new = !list
                .iter()
                .any(|f| f.path == failure.path && f.reason == failure.reason);
            if new {
                list.push(failure.clone());
            }
            new
        };
        if new && self.show_load_error(&failure) {
            self.warn(failure.message());
        }
    }

    /// Every component library that was skipped: those that failed to load
    /// ([`Repository::failures`]), then those whose lifecycle entry points
    /// failed or panicked so far in this process (see
    /// [`Mca::probe_components`]).
    pub fn failures(&self) -> Vec<LoadFailure> {
        let lifecycle = self
            .lifecycle_failures
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        self.repository
            .failures
            .iter()
            .chain(lifecycle.iter())
            .cloned()
            .collect()
    }

    fn declare_builtin(&mut self) {
        for decl in core_params::core_params(&self.paths, self.home.as_deref()) {
            let full = format!("mca_base_{}", decl.name);
            self.registry
                .declare("mca", "base", full, decl)
                .expect("core parameter names are unique");
        }
        for decl in core_params::mpi_params() {
            let full = format!("mpi_{}", decl.name);
            self.registry
                .declare("mpi", "base", full, decl)
                .expect("MPI parameter names are unique");
        }
        let declared: Vec<&'static FrameworkInfo> = self.declared_frameworks().collect();
        for info in declared {
            let [selection, verbose] = core_params::framework_params(info);
            let fw = info.name;
            self.registry
                .declare(fw, "base", fw.to_string(), selection)
                .expect("framework names are unique");
            self.registry
                .declare(fw, "base", format!("{fw}_base_verbose"), verbose)
                .expect("framework names are unique");
            for decl in info.base_params {
                self.registry
                    .declare(fw, "base", format!("{fw}_base_{}", decl.name), *decl)
                    .expect("framework base parameter names are unique");
            }
        }
    }

    fn line_errors(&self, errors: Vec<LineError>) {
        for e in errors {
            self.error(e.to_string());
        }
    }

    fn collect_direct_sources(&mut self, env: &HashMap<&str, &str>, inputs: &McaInputs) {
        for variable in &inputs.env_not_text {
            self.error(format!(
                "environment variable {}: its value is not valid UTF-8 text, and parameter values are text; set it to a text value or unset it",
                excerpt(variable)
            ));
        }
        let mut from_env: Vec<Assignment> = env
            .iter()
            .filter(|(k, _)| !k.starts_with(ENV_SOURCE_PREFIX))
            .filter_map(|(k, v)| {
                let name = k.strip_prefix(ENV_PREFIX)?;
                (!name.is_empty()).then(|| Assignment {
                    name: name.to_string(),
                    value: v.to_string(),
                    source: env_source(env, name),
                })
            })
            .collect();
        from_env.sort_by(|a, b| a.name.cmp(&b.name));
        self.assignments.extend(from_env);

        let mut seen: HashMap<&str, &str> = HashMap::new();
        for (name, value) in &inputs.command_line {
            if let Some(previous) = seen.insert(name, value) {
                if previous != value {
                    self.error(format!(
                        "--mca {} is given twice with different values (\"{}\" and \"{}\"); give it once",
                        excerpt(name),
                        excerpt(previous),
                        excerpt(value)
                    ));
                }
            }
            self.assignments.push(Assignment {
                name: name.clone(),
                value: value.clone(),
                source: Source::CommandLine,
            });
        }

        for path in &inputs.tune_files {
            match read_input_file(path, "tune file") {
                Ok(text) => {
                    let (entries, errors) = tune::parse(path, &text);
                    self.line_errors(errors);
                    for entry in entries {
                        match entry {
                            TuneEntry::Param { name, value, line } => {
                                self.assignments.push(Assignment {
                                    name,
                                    value,
                                    source: Source::Tune {
                                        path: path.clone(),
                                        line,
                                    },
                                })
                            }
                            TuneEntry::Export {
                                variable, value, ..
                            } => self.exports.push((variable, value)),
                        }
                    }
                }
                Err(e) => self.error(format!("{e}; the path was given with --tune")),
            }
        }

        // No override file is the normal case; one that exists but cannot
        // be read is an error, since the settings it enforces would be lost.
        let override_file = self.paths.override_param_file();
        match read_input_file(&override_file, "override parameter file") {
            Ok(text) => {
                let (entries, errors) = files::parse(&override_file, &text);
                self.line_errors(errors);
                self.assignments
                    .extend(entries.into_iter().map(|e| Assignment {
                        name: e.name,
                        value: e.value,
                        source: Source::Override {
                            path: override_file.clone(),
                            line: e.line,
                        },
                    }));
            }
            Err(e) if e.is_not_found() => {}
            Err(e) => self.error(format!(
                "{e}. Its values beat every other source and its place is fixed by the installation ({OVERRIDE_FILE}), so the file must be fixed: ask the administrator of this installation"
            )),
        }
    }

    fn read_param_files(&mut self) {
        let index = self.registry.lookup(PARAM_FILES).expect("declared").param;
        let (winner, errors) = self.resolve_one(index);
        for e in errors {
            self.error(e);
        }
        let list = winner
            .value
            .as_list()
            .map(<[String]>::to_vec)
            .unwrap_or_default();
        let explicit = winner.source != Source::Default;
        if list.len() == 1 && list[0].eq_ignore_ascii_case("none") {
            return;
        }
        for (i, file) in list.iter().enumerate() {
            let path = PathBuf::from(file);
            match read_input_file(&path, "parameter file") {
                Ok(text) => {
                    self.param_files.push((path.clone(), true));
                    let (entries, errors) = files::parse(&path, &text);
                    self.line_errors(errors);
                    self.assignments
                        .extend(entries.into_iter().map(|e| Assignment {
                            name: e.name,
                            value: e.value,
                            source: Source::File {
                                path: path.clone(),
                                line: e.line,
                                index: i,
                            },
                        }));
                }
                Err(e) if e.is_not_found() => {
                    self.param_files.push((path.clone(), false));
                    if explicit {
                        self.warn(format!(
                            "parameter file {} does not exist (listed in {PARAM_FILES}, set by {}); it was skipped",
                            path.display(),
                            winner.source
                        ));
                    }
                }
                Err(e) => {
                    self.param_files.push((path.clone(), false));
                    let listed = if explicit {
                        format!("set by {}", winner.source)
                    } else {
                        "by default".to_string()
                    };
                    self.error(format!(
                        "{e}. It is read because {PARAM_FILES} lists it ({listed}); fix the file, or set {PARAM_FILES} without it"
                    ));
                }
            }
        }
    }

    /// Resolves one parameter: the valid assignment from the highest source
    /// wins (the later one within a source), else the default.
    fn resolve_one(&self, index: usize) -> (Resolved, Vec<String>) {
        let rows = self.rows_for(index);
        let mut errors = Vec::new();
        for row in &rows {
            if let Err(e) = &row.outcome {
                if row.assignment.source != Source::Default {
                    errors.push(e.clone());
                }
            }
        }
        let info = &self.registry.params()[index];
        let winner = rows
            .into_iter()
            .find(|r| r.wins)
            .and_then(|r| {
                let value =
                    value::parse(&info.decl, &r.assignment.value, self.home.as_deref()).ok()?;
                Some(Resolved {
                    text: value::display(&info.decl, &value),
                    value,
                    source: r.assignment.source,
                })
            })
            .unwrap_or_else(|| Resolved {
                value: Value::Str(info.decl.default.to_string()),
                text: info.decl.default.to_string(),
                source: Source::Default,
            });
        (winner, errors)
    }

    /// Every assignment of parameter `index`, highest precedence first, the
    /// default last; `wins` marks the one in effect.
    fn rows_for(&self, index: usize) -> Vec<ExplainRow> {
        let info = &self.registry.params()[index];
        let mut rows: Vec<(usize, &Assignment)> = self
            .assignments
            .iter()
            .enumerate()
            .filter(|(_, a)| {
                self.registry
                    .lookup(&a.name)
                    .is_some_and(|r| r.param == index)
            })
            .collect();
        rows.sort_by(|(ia, a), (ib, b)| b.source.rank().cmp(&a.source.rank()).then(ib.cmp(ia)));
        let default = Assignment {
            name: info.full_name.clone(),
            value: info.decl.default.to_string(),
            source: Source::Default,
        };
        let mut out: Vec<ExplainRow> = rows
            .into_iter()
            .map(|(_, a)| a)
            .chain(std::iter::once(&default))
            .map(|a| ExplainRow {
                assignment: a.clone(),
                outcome: self.check_assignment(info, a),
                wins: false,
            })
            .collect();
        if let Some(first_ok) = out.iter_mut().find(|r| r.outcome.is_ok()) {
            first_ok.wins = true;
        }
        out
    }

    fn check_assignment(&self, info: &ParamInfo, a: &Assignment) -> Result<String, String> {
        let allowed_sources = if info.read_only() {
            matches!(a.source, Source::Default | Source::Override { .. })
        } else if info.full_name == PARAM_FILES {
            !matches!(a.source, Source::File { .. })
        } else {
            true
        };
        if !allowed_sources {
            return Err(format!(
                "{} cannot be set from {} ({}); the value \"{}\" was ignored",
                info.full_name,
                a.origin(),
                if info.read_only() {
                    "it is read-only"
                } else {
                    "parameter files cannot set it"
                },
                excerpt(&a.value)
            ));
        }
        let checked = value::parse(&info.decl, &a.value, self.home.as_deref()).and_then(|v| {
            if info.full_name == SHOW_LOAD_ERRORS {
                let known = self.known_framework_names();
                core_params::check_show_load_errors(v.as_str().unwrap_or(""), &known)
                    .map_err(value::ValueError)?;
            }
            Ok(v)
        });
        let expected = || {
            if info.full_name == SHOW_LOAD_ERRORS {
                core_params::SHOW_LOAD_ERRORS_ACCEPTED.to_string()
            } else {
                value::accepted_values(&info.decl)
            }
        };
        match checked {
            Ok(v) => Ok(value::display(&info.decl, &v)),
            Err(e) => Err(format!(
                "invalid value \"{}\" for parameter {} (from {}): {}. Expected {}.",
                excerpt(&a.value),
                info.full_name,
                a.origin(),
                e.0,
                expected()
            )),
        }
    }

    /// Resolves every declared parameter: the values, the errors, and the
    /// warnings with the parameter each is about.
    fn resolve_all(&self) -> (Vec<Resolved>, Vec<String>, Vec<(String, String)>) {
        let mut resolved = Vec::with_capacity(self.registry.params().len());
        let mut errors = Vec::new();
        let mut warnings = Vec::new();
        for index in 0..self.registry.params().len() {
            let (r, errs) = self.resolve_one(index);
            for e in errs {
                // Ignored settings of read-only parameters are warnings.
                if e.contains("cannot be set from") {
                    warnings.push((self.registry.params()[index].full_name.clone(), e));
                } else {
                    errors.push(e);
                }
            }
            resolved.push(r);
        }
        let mut warned = HashSet::new();
        for a in &self.assignments {
            if let Some(r) = self.registry.lookup(&a.name) {
                let info = &self.registry.params()[r.param];
                if (r.synonym == Some(true) || (r.synonym.is_none() && info.deprecated()))
                    && warned.insert(a.name.clone())
                {
                    let replacement = if r.synonym.is_some() {
                        format!("use {} instead", info.full_name)
                    } else {
                        "it will be removed".to_string()
                    };
                    warnings.push((
                        a.name.clone(),
                        format!(
                            "parameter {} (set by {}) is deprecated; {replacement}",
                            a.name,
                            a.origin()
                        ),
                    ));
                }
            }
        }
        (resolved, errors, warnings)
    }

    fn apply_verbosity(&self) {
        log::set_verbosity("mca", self.int_value(VERBOSE).unwrap_or(0) as i32);
        for info in self.declared_frameworks() {
            let v = self
                .int_value(&format!("{}_base_verbose", info.name))
                .unwrap_or(0);
            log::set_verbosity(info.name, v as i32);
        }
    }

    /// The component directories, in search order.
    pub fn component_dirs(&self) -> Vec<PathBuf> {
        let value = self
            .value(COMPONENT_PATH)
            .and_then(|r| r.value.as_str().map(String::from))
            .unwrap_or_default();
        let mut dirs = Vec::new();
        for part in value.split(':').filter(|p| !p.is_empty()) {
            match part {
                "SYSTEM_DEFAULT" | "SYS_DEFAULT" => dirs.push(self.paths.component_dir.clone()),
                "USER_DEFAULT" | "USR_DEFAULT" => {
                    if let Some(home) = &self.home {
                        dirs.push(user_component_dir(home));
                    }
                }
                dir => dirs.push(PathBuf::from(dir)),
            }
        }
        dirs
    }

    fn load_components(&mut self) {
        let mut repo = repository::scan(
            &self.component_dirs(),
            &self.frameworks,
            &self.frameworks_not_loaded(),
            &self.module_layouts,
        );
        let mut kept: Vec<LoadedComponent> = Vec::new();
        for component in std::mem::take(&mut repo.components) {
            let decls = component.root.params();
            if let Some((reason, hint)) = self.param_problem(&component, &kept) {
                repo.failures.push(LoadFailure {
                    path: component.path.clone(),
                    framework: component.framework.clone(),
                    component: component.name.clone(),
                    reason,
                    hint: hint.into(),
                    detail: None,
                });
                continue;
            }
            for d in decls.iter() {
                let full = format!("{}_{}_{}", component.framework, component.name, d.name);
                // param_problem checked every name, so this cannot clash.
                if let Err(e) =
                    self.registry
                        .declare(&component.framework, &component.name, full, *d)
                {
                    self.error(format!(
                        "component library {} ({} component {}): {e}; report this to the oxmpi developers",
                        component.path.display(),
                        component.framework,
                        component.name
                    ));
                }
            }
            log::log(
                "mca",
                "base",
                log::INFO,
                &format!(
                    "loaded {} component {} from {}",
                    component.framework,
                    component.name,
                    component.path.display()
                ),
            );
            kept.push(component);
        }
        repo.components = kept;
        self.repository = repo;
    }

    /// Why `component`'s parameter table cannot be declared, with what to
    /// do: a declaration that breaks the rules, a name (or synonym) the
    /// component declares twice, or one the core, a framework or an
    /// earlier component (in `kept`) already declares, naming that owner
    /// and its library.
    fn param_problem(
        &self,
        component: &LoadedComponent,
        kept: &[LoadedComponent],
    ) -> Option<(String, &'static str)> {
        const AUTHORS: &str = "Report this to the component's authors.";
        const CLASH: &str = "The library loaded first keeps the name: rename the parameter in one of the two components, or remove one of them from the component path.";
        let mut own: HashSet<String> = HashSet::new();
        for d in component.root.params().iter() {
            let full = format!("{}_{}_{}", component.framework, component.name, d.name);
            if let Some(problem) = check_decl(&full, d) {
                return Some((
                    format!("it declares an invalid parameter: {problem}"),
                    AUTHORS,
                ));
            }
            let names =
                std::iter::once(full.clone()).chain(d.synonyms.iter().map(|s| s.name.to_string()));
            for name in names {
                if !own.insert(name.clone()) {
                    return Some((
                        format!("it declares the parameter name {} twice", excerpt(&name)),
                        AUTHORS,
                    ));
                }
                if let Some(r) = self.registry.lookup(&name) {
                    let owner = &self.registry.params()[r.param];
                    let by = if owner.framework == "mca" || owner.framework == "mpi" {
                        "the oxmpi core".to_string()
                    } else if owner.component == "base" {
                        format!("the {} framework", owner.framework)
                    } else {
                        let file = kept
                            .iter()
                            .find(|c| c.framework == owner.framework && c.name == owner.component)
                            .map(|c| format!(" ({})", c.path.display()))
                            .unwrap_or_default();
                        format!("{}/{}{file}", owner.framework, owner.component)
                    };
                    return Some((
                        format!(
                            "it declares the parameter name {}, which {by} already declares",
                            excerpt(&name)
                        ),
                        CLASH,
                    ));
                }
            }
        }
        None
    }

    fn show_load_error(&self, failure: &LoadFailure) -> bool {
        if self
            .filter(&failure.framework)
            .is_some_and(|f| f.requests(&failure.component))
        {
            return true;
        }
        let spec = self
            .value(SHOW_LOAD_ERRORS)
            .and_then(|r| r.value.as_str().map(String::from))
            .unwrap_or_default();
        let spec = spec.trim();
        match spec.to_ascii_lowercase().as_str() {
            "all" | "yes" | "1" | "true" => return true,
            "none" | "no" | "0" | "false" | "" => return false,
            _ => {}
        }
        let (negate, list) = match spec.strip_prefix('^') {
            Some(rest) => (true, rest),
            None => (false, spec),
        };
        let matches = list
            .split(',')
            .map(str::trim)
            .any(|item| match item.split_once('/') {
                Some((fw, comp)) => fw == failure.framework && comp == failure.component,
                None => item == failure.framework,
            });
        matches != negate
    }

    fn report_load_failures(&self) {
        for failure in &self.repository.failures {
            if self.show_load_error(failure) {
                self.warn(failure.message());
            }
            for fw in [failure.framework.as_str(), "mca"] {
                log::log(fw, &failure.component, log::COMPONENT, &failure.message());
                if let Some(detail) = &failure.detail {
                    log::log(fw, &failure.component, log::INFO, detail);
                }
            }
        }
        for ignored in &self.repository.ignored {
            log::log("mca", "base", log::COMPONENT, &ignored.message());
            if self.looks_requested(&ignored.path) {
                self.warn(ignored.message());
            }
        }
    }

    /// Whether a file's name looks like a component the user selected by
    /// name and that is not available: it contains the name of a framework
    /// whose selection parameter includes components by name, and one of
    /// those names that no loaded component has.
    fn looks_requested(&self, path: &Path) -> bool {
        let Some(file_name) = path.file_name().map(|n| n.to_string_lossy()) else {
            return false;
        };
        self.frameworks.iter().any(|info| {
            let Some(Filter::Include(names)) = self.filter(info.name) else {
                return false;
            };
            file_name.contains(info.name)
                && names.iter().any(|n| {
                    file_name.contains(n.as_str())
                        && !self
                            .repository
                            .components
                            .iter()
                            .any(|c| c.framework == info.name && &c.name == n)
                })
        })
    }

    fn report_unknown_names(&self) {
        if self.bool_value(WARN_UNKNOWN) == Some(false) {
            return;
        }
        let mut warned = HashSet::new();
        for a in &self.assignments {
            if self.registry.lookup(&a.name).is_some()
                || self.unchecked_framework_of(&a.name).is_some()
                || !warned.insert(a.name.clone())
            {
                continue;
            }
            let hint = suggest::did_you_mean(&self.suggest(&a.name));
            self.warn_about(a.name.clone(), format!(
                "unknown parameter {} (set by {}): no installed framework or component declares it. {hint}`oxmpi_info --param all all --level 9` lists every parameter; {WARN_UNKNOWN}=0 silences this warning.",
                excerpt(&a.name),
                a.origin()
            ));
        }
    }

    fn check_selections(&self) {
        for info in &self.frameworks {
            if let Err(e) = self.filter_checked(info.name) {
                self.error(e.to_string());
            }
        }
        // Components of these are not loaded here: the syntax only.
        for info in &self.base_frameworks {
            if let Some(r) = self.value(info.name) {
                let text = r.value.as_str().unwrap_or("");
                if let Err(e) = Filter::parse(info.name, text, &r.source.to_string()) {
                    self.error(e.to_string());
                }
            }
        }
    }

    fn publish(&self) {
        let mut map = HashMap::new();
        for (i, info) in self.registry.params().iter().enumerate() {
            let v = self.resolved[i].value.to_abi();
            for (syn, _) in self.registry.synonyms_of(i) {
                map.insert(syn.to_string(), v.clone());
            }
            map.insert(info.full_name.clone(), v);
        }
        services::publish(map);
    }

    /// The selection filter of a framework, if its parameter parses.
    pub fn filter(&self, framework: &str) -> Option<Filter> {
        let r = self.value(framework)?;
        Filter::parse(
            framework,
            r.value.as_str().unwrap_or(""),
            &r.source.to_string(),
        )
        .ok()
    }

    /// The selection filter of a framework, checked against the loaded
    /// components.
    pub fn filter_checked(
        &self,
        framework: &str,
    ) -> Result<Filter, crate::selection::SelectionError> {
        let r = self.value(framework).ok_or_else(|| {
            crate::selection::SelectionError(format!("unknown framework {framework}"))
        })?;
        let text = r.value.as_str().unwrap_or("");
        let source = r.source.to_string();
        let filter = Filter::parse(framework, text, &source)?;
        let mut available: Vec<&str> = self
            .repository
            .components
            .iter()
            .filter(|c| c.framework == framework)
            .map(|c| c.name.as_str())
            .collect();
        available.sort();
        filter.check_available(framework, text, &source, &available)?;
        if let Filter::Exclude(names) = &filter {
            for n in names.iter().filter(|n| !available.contains(&n.as_str())) {
                log::log(
                    framework,
                    "base",
                    log::COMPONENT,
                    &format!(
                        "{framework} = \"{}\" excludes {}, which is not installed",
                        excerpt(text),
                        excerpt(n)
                    ),
                );
            }
        }
        Ok(filter)
    }

    /// Known names closest to `name`.
    pub fn suggest(&self, name: &str) -> Vec<String> {
        suggest::nearest(name, self.registry.all_names())
    }

    /// Takes the diagnostics gathered so far.
    pub fn take_diagnostics(&self) -> Vec<Diagnostic> {
        std::mem::take(&mut *self.diagnostics.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Prints and clears the diagnostics on stderr as
    /// `<program>: warning: …` / `<program>: error: …`; returns whether any
    /// was an error.
    pub fn print_diagnostics(&self) -> bool {
        let mut had_error = false;
        for d in self.take_diagnostics() {
            let label = match d.severity {
                Severity::Warning => "warning",
                Severity::Error => {
                    had_error = true;
                    "error"
                }
            };
            eprintln!("{}: {label}: {}", self.program, d.message);
        }
        had_error
    }

    /// The value in effect for a full name (or synonym).
    pub fn value(&self, name: &str) -> Option<&Resolved> {
        let r = self.registry.lookup(name)?;
        self.resolved.get(r.param)
    }

    /// The value of an `Int`, `Enum` or `Size` parameter.
    pub fn int_value(&self, name: &str) -> Option<i64> {
        self.value(name)?.value.as_i64()
    }

    /// The value of a `Bool` parameter.
    pub fn bool_value(&self, name: &str) -> Option<bool> {
        self.value(name)?.value.as_bool()
    }

    /// Every source that sets `name`, highest precedence first, with the
    /// default last; `None` if nothing declares the name.
    pub fn explain(&self, name: &str) -> Option<(&ParamInfo, Vec<ExplainRow>)> {
        let r = self.registry.lookup(name)?;
        Some((&self.registry.params()[r.param], self.rows_for(r.param)))
    }

    /// The value in effect for parameter `index` of [`Mca::registry`].
    pub fn resolved(&self, index: usize) -> &Resolved {
        &self.resolved[index]
    }

    /// Declared parameters.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Every assignment from every source.
    pub fn assignments(&self) -> &[Assignment] {
        &self.assignments
    }

    /// Components found, failed and shadowed.
    pub fn repository(&self) -> &Repository {
        &self.repository
    }

    /// Install directories.
    pub fn paths(&self) -> &InstallPaths {
        &self.paths
    }

    /// The home directory, if known.
    pub fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }

    /// Parameter files in `mca_base_param_files` order, with whether each exists.
    pub fn param_files(&self) -> &[(PathBuf, bool)] {
        &self.param_files
    }

    /// `-x` exports from tune files: (variable, value or `None` to copy).
    pub fn exports(&self) -> &[(String, Option<String>)] {
        &self.exports
    }

    /// The frameworks this program loads ([`McaInputs::frameworks`]).
    pub fn frameworks(&self) -> &[&'static FrameworkInfo] {
        &self.frameworks
    }

    /// The frameworks of [`FRAMEWORK_NAMES`] this program does not load.
    pub fn frameworks_not_loaded(&self) -> Vec<&'static str> {
        FRAMEWORK_NAMES
            .iter()
            .copied()
            .filter(|n| !self.frameworks.iter().any(|f| f.name == *n))
            .collect()
    }

    /// Every framework name the core knows: those it loads, those whose
    /// base parameters it declares and those of [`FRAMEWORK_NAMES`], sorted.
    pub fn known_framework_names(&self) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = self.declared_frameworks().map(|f| f.name).collect();
        names.extend(self.frameworks_not_loaded());
        names.sort_unstable();
        names.dedup();
        names
    }

    /// The frameworks whose framework-level parameters are declared: those
    /// loaded, then [`McaInputs::base_frameworks`].
    fn declared_frameworks(&self) -> impl Iterator<Item = &'static FrameworkInfo> + '_ {
        self.frameworks.iter().chain(&self.base_frameworks).copied()
    }

    /// The framework whose parameters this program leaves to another when
    /// `name` is one of them: `rmaps` for `rmaps_base_mapping_policy` in a
    /// rank (which does not load rmaps), `btl` for `btl_tcp_if_include` in
    /// mpirun (which checks btl's framework-level parameters only). Such a
    /// name is not declared here, and not unknown either.
    pub fn unchecked_framework_of(&self, name: &str) -> Option<&'static str> {
        self.frameworks_not_loaded().into_iter().find(|fw| {
            let Some(rest) = name.strip_prefix(fw) else {
                return false;
            };
            if self.base_frameworks.iter().any(|b| b.name == *fw) {
                rest.starts_with('_') && !rest.starts_with("_base_")
            } else {
                rest.is_empty() || rest.starts_with('_')
            }
        })
    }

    /// Program name used in messages.
    pub fn program(&self) -> &str {
        &self.program
    }
}
