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

mod components;
mod resolve;
mod sources;

use crate::paths::InstallPaths;
use crate::registry::{ParamInfo, Registry};
use crate::repository::{LoadFailure, ModuleLayout, Repository};
use crate::selection::Filter;
use crate::source::Source;
use crate::value::Value;
use crate::{log, suggest, FRAMEWORK_NAMES};
use oxmpi_plugin_api::text::excerpt;
use oxmpi_plugin_api::{ComponentAlias, FrameworkInfo};
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
    /// The framework of the component library it is about, when it is
    /// about one that did not load.
    pub framework: Option<String>,
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
    /// (framework, old name) of the component aliases whose use in a
    /// selection parameter was already noted.
    noted_aliases: Mutex<HashSet<(&'static str, &'static str)>>,
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
            noted_aliases: Mutex::new(HashSet::new()),
        };
        mca.declare_builtin();
        for info in mca.declared_frameworks() {
            if let Some(problem) = info.alias_problem() {
                mca.error(format!(
                    "{problem}; old component names of the {} framework may be read wrongly: report this to the oxmpi developers",
                    info.name
                ));
            }
        }
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
        self.push(Severity::Warning, message, None, None);
    }

    fn warn_about(&self, param: String, message: String) {
        self.push(Severity::Warning, message, Some(param), None);
    }

    /// A warning about a component library of `framework` that did not
    /// load.
    fn warn_library(&self, framework: &str, message: String) {
        self.push(
            Severity::Warning,
            message,
            None,
            Some(framework.to_string()),
        );
    }

    fn error(&self, message: String) {
        self.push(Severity::Error, message, None, None);
    }

    fn push(
        &self,
        severity: Severity,
        message: String,
        param: Option<String>,
        framework: Option<String>,
    ) {
        let mut d = self.diagnostics.lock().unwrap_or_else(|e| e.into_inner());
        if !d.iter().any(|x| x.message == message) {
            d.push(Diagnostic {
                severity,
                message,
                param,
                framework,
            });
        }
    }

    /// The selection filter of a framework, if its parameter parses (old
    /// component names read as current ones; nothing is noted).
    pub fn filter(&self, framework: &str) -> Option<Filter> {
        let r = self.value(framework)?;
        Filter::parse(
            framework,
            r.value.as_str().unwrap_or(""),
            &r.source.to_string(),
            self.component_aliases(framework),
        )
        .ok()
    }

    /// The old names of renamed components of `framework`
    /// ([`FrameworkInfo::component_aliases`]); none for a framework whose
    /// parameters this program does not declare.
    pub fn component_aliases(&self, framework: &str) -> &'static [ComponentAlias] {
        self.declared_frameworks()
            .find(|f| f.name == framework)
            .map_or(&[], |f| f.component_aliases)
    }

    /// The current name of component `name` of `framework`: the new name
    /// if `name` is an old one ([`ComponentAlias`]), else `name`.
    pub fn current_component_name<'a>(&self, framework: &str, name: &'a str) -> &'a str {
        self.component_aliases(framework)
            .iter()
            .find(|a| a.old == name)
            .map_or(name, |a| a.current)
    }

    /// Parses the selection parameter `framework` = `text` (set by
    /// `source`), and warns once per process about each old component name
    /// it uses, however often the framework is opened (mpirun's note about
    /// a rank's framework is the job's: ranks under mpirun keep such
    /// warnings to themselves).
    fn parse_selection(
        &self,
        framework: &str,
        text: &str,
        source: &str,
    ) -> Result<Filter, crate::selection::SelectionError> {
        let Some(info) = self.declared_frameworks().find(|f| f.name == framework) else {
            return Filter::parse(framework, text, source, &[]);
        };
        let (filter, renamed) =
            Filter::parse_noting_aliases(framework, text, source, info.component_aliases)?;
        for alias in renamed {
            let first = self
                .noted_aliases
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert((info.name, alias.old));
            if first {
                self.warn_about(
                    framework.to_string(),
                    crate::selection::renamed_note(framework, alias, text, source),
                );
            }
        }
        Ok(filter)
    }

    /// The selection filter of a framework, checked against the loaded
    /// components. The first use of an old component name in it is a
    /// warning ([`crate::selection::renamed_note`]).
    pub fn filter_checked(
        &self,
        framework: &str,
    ) -> Result<Filter, crate::selection::SelectionError> {
        let r = self.value(framework).ok_or_else(|| {
            crate::selection::SelectionError(format!("unknown framework {framework}"))
        })?;
        let text = r.value.as_str().unwrap_or("");
        let source = r.source.to_string();
        let filter = self.parse_selection(framework, text, &source)?;
        let mut available: Vec<&str> = self
            .repository
            .components
            .iter()
            .filter(|c| c.framework == framework)
            .map(|c| c.name.as_str())
            .collect();
        available.sort();
        let not_loaded = |component: &str| {
            self.repository
                .failures
                .iter()
                .find(|f| f.framework == framework && f.component == component)
                .map(|f| f.as_reason())
        };
        filter.check_available(framework, text, &source, &available, not_loaded)?;
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

    /// Known names closest to `name`; a deprecated synonym among them is
    /// replaced by the name of its parameter (`btl_vader_eagr_limit`
    /// suggests `btl_sm_eager_limit`, not the old spelling).
    pub fn suggest(&self, name: &str) -> Vec<String> {
        let mut names: Vec<String> = suggest::nearest(name, self.registry.all_names())
            .into_iter()
            .map(|n| match self.registry.lookup(&n) {
                Some(r) if r.synonym == Some(true) => {
                    self.registry.params()[r.param].full_name.clone()
                }
                _ => n,
            })
            .collect();
        names.sort();
        names.dedup();
        names
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
