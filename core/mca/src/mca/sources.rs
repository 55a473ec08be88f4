//! Where assignments come from: the core's and the frameworks' own
//! declarations, then the environment (`OXMPI_MCA_*`, with the source
//! markers mpirun forwards), the command line, tune files, the override
//! file and the parameter files.

use super::{Assignment, Mca, McaInputs, ENV_PREFIX, ENV_SOURCE_PREFIX};
use crate::core_params::{self, OVERRIDE_FILE, PARAM_FILES};
use crate::files::{self, LineError};
use crate::input_file::read_input_file;
use crate::source::Source;
use crate::tune::{self, TuneEntry};
use oxmpi_plugin_api::text::excerpt;
use oxmpi_plugin_api::FrameworkInfo;
use std::collections::HashMap;
use std::path::PathBuf;
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
    pub(super) fn declare_builtin(&mut self) {
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

    pub(super) fn collect_direct_sources(&mut self, env: &HashMap<&str, &str>, inputs: &McaInputs) {
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

    pub(super) fn read_param_files(&mut self) {
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
}
