//! Component libraries: the directories searched, loading and declaring
//! each component's parameters, the failures of loading and of lifecycle
//! entry points (and which of them to show), and checking the frameworks'
//! selections against what was loaded.

use super::Mca;
use crate::core_params::{COMPONENT_PATH, SHOW_LOAD_ERRORS};
use crate::log;
use crate::paths::user_component_dir;
use crate::registry::check_decl;
use crate::repository::{self, LoadFailure, LoadedComponent};
use crate::selection::Filter;
use oxmpi_plugin_api::text::excerpt;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
impl Mca {
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
    /// ([`Repository::failures`](crate::repository::Repository::failures)),
    /// then those whose lifecycle entry points failed or panicked so far in
    /// this process (see [`Mca::probe_components`]).
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

    pub(super) fn load_components(&mut self) {
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
        self.add_alias_synonyms(&kept);
        repo.components = kept;
        self.repository = repo;
    }

    /// Gives the parameters of each renamed component the deprecated
    /// synonyms of its old names (`btl_vader_<x>` for `btl_sm_<x>`), after
    /// every component declared its own names, so that a name some
    /// component declares is never taken from it, whatever the load order.
    fn add_alias_synonyms(&mut self, components: &[LoadedComponent]) {
        for component in components {
            let Some(info) = self
                .frameworks
                .iter()
                .copied()
                .find(|f| f.name == component.framework)
            else {
                continue;
            };
            for old in info.old_component_names(&component.name) {
                let skipped =
                    self.registry
                        .add_alias_synonyms(&component.framework, &component.name, old);
                for message in skipped {
                    log::log("mca", "base", log::INFO, &message);
                }
            }
        }
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
                Some((fw, comp)) => {
                    fw == failure.framework
                        && (comp == failure.component
                            || self.current_component_name(fw, comp) == failure.component)
                }
                None => item == failure.framework,
            });
        matches != negate
    }

    pub(super) fn report_load_failures(&self) {
        for failure in &self.repository.failures {
            if self.show_load_error(failure) {
                self.warn_library(&failure.framework, failure.message());
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

    pub(super) fn check_selections(&self) {
        for info in &self.frameworks {
            if let Err(e) = self.filter_checked(info.name) {
                self.error(e.to_string());
            }
        }
        // Components of these are not loaded here: the syntax only.
        for info in &self.base_frameworks {
            if let Some(r) = self.value(info.name) {
                let text = r.value.as_str().unwrap_or("");
                if let Err(e) = self.parse_selection(info.name, text, &r.source.to_string()) {
                    self.error(e.to_string());
                }
            }
        }
    }
}
