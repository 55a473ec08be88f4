//! Resolving parameters: the value in effect for each (the valid
//! assignment from the highest source), the rows of [`Mca::explain`], the
//! checks of each assignment, warnings about deprecated and unknown names,
//! and publishing the values to components.

use super::{Assignment, ExplainRow, Mca, Resolved};
use crate::core_params::{self, PARAM_FILES, SHOW_LOAD_ERRORS, VERBOSE, WARN_UNKNOWN};
use crate::registry::ParamInfo;
use crate::source::Source;
use crate::value::{self, Value};
use crate::{log, services, suggest};
use oxmpi_plugin_api::text::excerpt;
use std::collections::{HashMap, HashSet};
impl Mca {
    /// Resolves one parameter: the valid assignment from the highest source
    /// wins (the later one within a source), else the default.
    pub(super) fn resolve_one(&self, index: usize) -> (Resolved, Vec<String>) {
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
    pub(super) fn rows_for(&self, index: usize) -> Vec<ExplainRow> {
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
    pub(super) fn resolve_all(&self) -> (Vec<Resolved>, Vec<String>, Vec<(String, String)>) {
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
                    let replacement = if let Some(old) = self.registry.alias_synonym_origin(&a.name)
                    {
                        format!(
                            "use {} instead ({} component {old} is now called {})",
                            info.full_name, info.framework, info.component
                        )
                    } else if r.synonym.is_some() {
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

    pub(super) fn apply_verbosity(&self) {
        log::set_verbosity("mca", self.int_value(VERBOSE).unwrap_or(0) as i32);
        for info in self.declared_frameworks() {
            let v = self
                .int_value(&format!("{}_base_verbose", info.name))
                .unwrap_or(0);
            log::set_verbosity(info.name, v as i32);
        }
    }

    pub(super) fn report_unknown_names(&self) {
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

    pub(super) fn publish(&self) {
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
}
