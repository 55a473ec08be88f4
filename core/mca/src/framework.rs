//! Framework lifecycle: open the components the selection parameter
//! allows, query them, select, close.
//!
//! Every decision is logged at the framework's verbosity
//! ([`log::COMPONENT`] = 10): excluded by parameter, not available,
//! failed, declined and why, usable with priority, selected. A component
//! whose entry point fails or panics is skipped and recorded as a
//! [`LoadFailure`] (the same one-paragraph warning as a library that fails
//! to load; see [`Mca::failures`]).

use crate::mca::Mca;
use crate::repository::{LoadFailure, LoadedComponent};
use crate::selection::{choose, Candidate, Filter, SelectionError};
use crate::{crash_signals, log, services};
use abi_stable::std_types::RResult;
use oxmpi_plugin_api::{ComponentError, ErrorKind, FrameworkInfo, QueryReply, SelectionKind};

/// Errors of the framework lifecycle.
#[derive(Debug, thiserror::Error)]
pub enum McaError {
    /// No framework of that name.
    #[error("there is no framework named \"{0}\" (known: {1})")]
    UnknownFramework(String, String),
    /// A framework this program does not load (see `McaInputs::frameworks`).
    #[error("{1} does not load the {0} framework (it loads: {2})")]
    NotLoaded(String, String, String),
    /// The selection parameter is invalid.
    #[error(transparent)]
    Selection(#[from] SelectionError),
    /// A single-select framework has no usable component.
    #[error("{0}")]
    NothingUsable(String),
}

/// A framework whose allowed components are open.
pub struct OpenFramework<'m> {
    mca: &'m Mca,
    info: &'static FrameworkInfo,
    opened: Vec<&'m LoadedComponent>,
    candidates: Vec<Candidate>,
    reasons: Vec<(String, String)>,
}

/// A selected component.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selected {
    /// Component name.
    pub name: String,
    /// Its priority.
    pub priority: i32,
}

fn describe(e: &ComponentError) -> String {
    e.to_string()
}

/// The failure to record when entry point `step` of `c` returned `e`, or
/// `None` when the component only said it is not available here.
fn lifecycle_failure(c: &LoadedComponent, step: &str, e: &ComponentError) -> Option<LoadFailure> {
    let (what, hint) = match e.kind {
        ErrorKind::NotAvailable => return None,
        ErrorKind::Failed => (
            "failed",
            format!(
                "Fix what the component reports, or leave it out with --mca {} ^{}.",
                c.framework, c.name
            ),
        ),
        ErrorKind::Panicked => (
            "panicked",
            format!(
                "This is a bug in the component: report it to its authors, and leave it out with --mca {} ^{} meanwhile.",
                c.framework, c.name
            ),
        ),
    };
    Some(LoadFailure {
        path: c.path.clone(),
        framework: c.framework.clone(),
        component: c.name.clone(),
        reason: format!("its {step} {what}: {}", e.message),
        hint,
        detail: None,
    })
}

impl Mca {
    /// Runs `register`, `open`, `query` and `close` of every loaded
    /// component, whatever the selection parameters say, and records the
    /// ones that fail or panic (see [`Mca::failures`]); a component that is
    /// not available here or declines is not a failure. This is what
    /// `oxmpi_info --show-failed` does, so that it lists every component a
    /// job would skip.
    pub fn probe_components(&self) {
        for c in &self.repository().components {
            let ctx = services::context(c.root.framework(), c.root.component());
            let outcome = match (c.root.register())(ctx) {
                RResult::RErr(e) => Err(("register", e)),
                RResult::ROk(()) => match (c.root.open())(ctx) {
                    RResult::RErr(e) => Err(("open", e)),
                    RResult::ROk(()) => {
                        let query = match (c.root.query())(ctx) {
                            RResult::RErr(e) => Err(("query", e)),
                            RResult::ROk(_) => Ok(()),
                        };
                        match ((c.root.close())(ctx), query) {
                            (_, Err(e)) => Err(e),
                            (RResult::RErr(e), Ok(())) => Err(("close", e)),
                            (RResult::ROk(()), Ok(())) => Ok(()),
                        }
                    }
                },
            };
            if let Err((step, e)) = outcome {
                if let Some(failure) = lifecycle_failure(c, step, &e) {
                    self.record_lifecycle_failure(failure);
                } else {
                    log::log(
                        &c.framework,
                        &c.name,
                        log::COMPONENT,
                        &format!("not available ({step}): {}", e.message),
                    );
                }
            }
        }
    }

    /// Opens framework `name`: registers and opens every loaded component
    /// the selection parameter allows. Components that fail are skipped with
    /// a warning.
    pub fn open_framework(&self, name: &str) -> Result<OpenFramework<'_>, McaError> {
        let info = self
            .frameworks()
            .iter()
            .copied()
            .find(|f| f.name == name)
            .ok_or_else(|| {
                let loaded: Vec<&str> = self.frameworks().iter().map(|f| f.name).collect();
                if self.frameworks_not_loaded().contains(&name) {
                    McaError::NotLoaded(
                        name.to_string(),
                        self.program().to_string(),
                        loaded.join(", "),
                    )
                } else {
                    McaError::UnknownFramework(
                        name.to_string(),
                        self.known_framework_names().join(", "),
                    )
                }
            })?;
        let filter = self.filter_checked(name)?;
        let mut fw = OpenFramework {
            mca: self,
            info,
            opened: Vec::new(),
            candidates: Vec::new(),
            reasons: Vec::new(),
        };
        let mut components: Vec<&LoadedComponent> = self
            .repository()
            .components
            .iter()
            .filter(|c| c.framework == name)
            .collect();
        components.sort_by(|a, b| a.name.cmp(&b.name));
        for c in components {
            fw.open_one(c, &filter);
        }
        // A library of this framework that did not load is a reason too:
        // without it, "none is usable" would read as "none is installed".
        for failure in self
            .repository()
            .failures
            .iter()
            .filter(|f| f.framework == name)
        {
            fw.reasons
                .push((failure.component.clone(), failure.as_reason()));
        }
        Ok(fw)
    }
}

impl<'m> OpenFramework<'m> {
    fn log(&self, component: &str, level: i32, message: &str) {
        log::log(self.info.name, component, level, message);
    }

    fn failed(&mut self, c: &LoadedComponent, step: &str, e: &ComponentError) {
        match e.kind {
            ErrorKind::NotAvailable => {
                self.log(
                    &c.name,
                    log::COMPONENT,
                    &format!("not available ({step}): {}", e.message),
                );
                self.reasons
                    .push((c.name.clone(), format!("not available: {}", e.message)));
            }
            _ => {
                if let Some(failure) = lifecycle_failure(c, step, e) {
                    self.mca.record_lifecycle_failure(failure);
                }
                self.reasons
                    .push((c.name.clone(), format!("{step} failed: {}", describe(e))));
            }
        }
    }

    fn open_one(&mut self, c: &'m LoadedComponent, filter: &Filter) {
        if !filter.allows(&c.name) {
            let r = self.mca.value(self.info.name);
            let how = r
                .map(|r| {
                    format!(
                        "{} = \"{}\" (from {})",
                        self.info.name,
                        oxmpi_plugin_api::text::excerpt(&r.text),
                        r.source
                    )
                })
                .unwrap_or_default();
            self.log(&c.name, log::COMPONENT, &format!("excluded by {how}"));
            self.reasons
                .push((c.name.clone(), format!("excluded by {how}")));
            return;
        }
        self.log(
            &c.name,
            log::INFO,
            &format!("opening {} (version {})", c.path.display(), c.version),
        );
        let ctx = services::context(c.root.framework(), c.root.component());
        if let RResult::RErr(e) = crash_signals::kept(|| (c.root.register())(ctx)) {
            return self.failed(c, "register", &e);
        }
        if let RResult::RErr(e) = crash_signals::kept(|| (c.root.open())(ctx)) {
            return self.failed(c, "open", &e);
        }
        self.log(&c.name, log::INFO, "opened");
        self.opened.push(c);
    }

    /// Names of the open components.
    pub fn components(&self) -> Vec<&str> {
        self.opened.iter().map(|c| c.name.as_str()).collect()
    }

    /// Asks every open component whether it can run here.
    pub fn query(&mut self) -> &[Candidate] {
        self.candidates.clear();
        for c in self.opened.clone() {
            let ctx = services::context(c.root.framework(), c.root.component());
            let priority = match crash_signals::kept(|| (c.root.query())(ctx)) {
                RResult::ROk(QueryReply::Usable { priority }) => {
                    self.log(
                        &c.name,
                        log::COMPONENT,
                        &format!("query: usable, priority {priority}"),
                    );
                    Some(priority)
                }
                RResult::ROk(QueryReply::Declined { reason }) => {
                    self.log(
                        &c.name,
                        log::COMPONENT,
                        &format!("query: declined: {reason}"),
                    );
                    self.reasons
                        .push((c.name.clone(), format!("declined: {reason}")));
                    None
                }
                RResult::RErr(e) => {
                    self.failed(c, "query", &e);
                    None
                }
            };
            self.candidates.push(Candidate {
                name: c.name.clone(),
                priority,
            });
        }
        &self.candidates
    }

    /// Sets aside a component its query found usable, for a `reason` the
    /// caller found (a pml whose transport has no usable component): it
    /// is logged and kept among the [`reasons`](OpenFramework::reasons)
    /// as `declined: <reason>`, and [`select`](OpenFramework::select)
    /// passes it over. Queries first when nothing was queried yet.
    pub fn decline(&mut self, name: &str, reason: &str) {
        if self.candidates.is_empty() {
            self.query();
        }
        if let Some(c) = self
            .candidates
            .iter_mut()
            .find(|c| c.name == name && c.priority.is_some())
        {
            c.priority = None;
            self.log(name, log::COMPONENT, &format!("declined: {reason}"));
            self.reasons
                .push((name.to_string(), format!("declined: {reason}")));
        }
    }

    /// Selects: the best component for single-select frameworks (an error
    /// if none is usable), every usable one for multi-select frameworks.
    pub fn select(&mut self) -> Result<Vec<Selected>, McaError> {
        if self.candidates.is_empty() {
            self.query();
        }
        let chosen = choose(self.info.selection, &self.candidates);
        for (name, priority) in &chosen {
            self.log(
                name,
                log::COMPONENT,
                &format!("selected (priority {priority})"),
            );
        }
        if self.info.selection == SelectionKind::Single {
            if let Some((best, best_priority)) = chosen.first() {
                for c in self.candidates.iter().filter(|c| &c.name != best) {
                    if let Some(p) = c.priority {
                        self.log(
                            &c.name,
                            log::COMPONENT,
                            &format!("not selected: priority {p}, {best} has {best_priority}"),
                        );
                    }
                }
            }
        }
        if chosen.is_empty() && self.info.selection == SelectionKind::Single {
            let why = if self.reasons.is_empty() {
                format!("no {} components are installed", self.info.name)
            } else {
                self.reasons
                    .iter()
                    .map(|(n, r)| format!("{n}: {r}"))
                    .collect::<Vec<_>>()
                    .join("; ")
            };
            return Err(McaError::NothingUsable(format!(
                "no usable {} component ({why}). Check the {} parameter and `oxmpi_info --param {} all`.",
                self.info.name, self.info.name, self.info.name
            )));
        }
        Ok(chosen
            .into_iter()
            .map(|(name, priority)| Selected { name, priority })
            .collect())
    }

    /// Why each component that is not usable was set aside.
    pub fn reasons(&self) -> &[(String, String)] {
        &self.reasons
    }

    /// Closes every open component (also done on drop).
    pub fn close(mut self) {
        self.close_all();
    }

    fn close_all(&mut self) {
        for c in std::mem::take(&mut self.opened) {
            let ctx = services::context(c.root.framework(), c.root.component());
            if let RResult::RErr(e) = (c.root.close())(ctx) {
                self.failed(c, "close", &e);
            }
        }
    }
}

impl Drop for OpenFramework<'_> {
    fn drop(&mut self) {
        self.close_all();
    }
}
