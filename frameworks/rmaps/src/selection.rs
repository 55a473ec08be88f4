//! Choosing the mapper of a job — the one selection path mpirun, the
//! tests and the benchmarks share.
//!
//! The caller hands in the usable components' modules with their
//! priorities ([`Candidate`]; mpirun takes them from the core's query, so
//! the `rmaps` selection parameter has already left excluded components
//! out). [`select`] tries them from the highest priority down (ties by
//! name) and the first that accepts the policy maps the job; a candidate
//! whose `accepts` fails (it panicked, or could not read the policy) is
//! passed over and handed to the caller to report ([`PassedOver`],
//! [`accepts_failure`]), never skipped silently.
//! [`policy_names`] gathers the `--map-by` names they declared, for
//! [`crate::policy::parse_map_by_with`].

use crate::error::{MapError, MapErrorKind};
use crate::handle::RmapsHandle;
use crate::jobmap::JobMap;
use crate::module::{PolicyName, RmapsModuleRef};
use crate::policy::MapPolicy;
use crate::request::MapRequest;
use std::path::PathBuf;

/// A usable rmaps component.
#[derive(Clone)]
pub struct Candidate {
    /// Component name.
    pub name: String,
    /// Its priority (the answer of its query).
    pub priority: i32,
    /// Its module, through the caller-side handle.
    pub handle: RmapsHandle,
    /// The library it was loaded from, for messages (`None`, the default,
    /// for a component linked into the program, as in tests).
    pub library: Option<PathBuf>,
}

impl Candidate {
    /// A candidate (no library path).
    pub fn new(name: impl Into<String>, priority: i32, module: RmapsModuleRef) -> Candidate {
        Candidate {
            name: name.into(),
            priority,
            handle: RmapsHandle::new(module),
            library: None,
        }
    }

    /// The same candidate, loaded from `library`.
    pub fn with_library(mut self, library: impl Into<PathBuf>) -> Candidate {
        self.library = Some(library.into());
        self
    }

    /// `name (library path)`, or the name alone without a path.
    pub fn label(&self) -> String {
        match &self.library {
            Some(path) => format!("{} ({})", self.name, path.display()),
            None => self.name.clone(),
        }
    }
}

impl std::fmt::Debug for Candidate {
    /// Name and priority.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (priority {})", self.name, self.priority)
    }
}

/// Why [`select`] went past a candidate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PassedOver {
    /// It does not map by the policy.
    Declined,
    /// Its `accepts` failed: [`MapErrorKind::ComponentFailed`] when it
    /// panicked (a bug to report: see [`accepts_failure`]),
    /// [`MapErrorKind::BadRequest`] when it could not read the policy (built
    /// against an older interface that does not know it).
    Failed(MapError),
}

/// No candidate accepts the policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoMapper {
    /// Every candidate asked, in the order asked, and why it was passed
    /// over.
    pub tried: Vec<(String, PassedOver)>,
}

impl NoMapper {
    /// The candidates that declined, in the order asked.
    pub fn declined(&self) -> Vec<&str> {
        self.tried
            .iter()
            .filter(|(_, why)| *why == PassedOver::Declined)
            .map(|(name, _)| name.as_str())
            .collect()
    }

    /// The candidates asked, in order, as a list for messages: `ppr,
    /// faulty (its accepts failed), seq`.
    pub fn tried_list(&self) -> String {
        self.tried
            .iter()
            .map(|(name, why)| match why {
                PassedOver::Declined => name.clone(),
                PassedOver::Failed(_) => format!("{name} (its accepts failed)"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Orders `candidates` as selection tries them: highest priority first,
/// ties by name.
pub fn by_priority(candidates: &mut [Candidate]) {
    candidates.sort_by(|a, b| {
        b.priority
            .cmp(&a.priority)
            .then_with(|| a.name.cmp(&b.name))
    });
}

/// The candidate that maps jobs with `policy`: the first of
/// [`by_priority`] order that accepts it. `passed_over` is told each one
/// that did not, and why (a failed `accepts` is for the caller to report:
/// [`accepts_failure`] words it).
///
/// # Errors
///
/// [`NoMapper`] when no candidate accepts the policy.
pub fn select(
    candidates: &[Candidate],
    policy: &MapPolicy,
    mut passed_over: impl FnMut(&Candidate, &PassedOver),
) -> Result<Candidate, NoMapper> {
    let mut ordered = candidates.to_vec();
    by_priority(&mut ordered);
    let mut tried = Vec::new();
    for c in ordered {
        let why = match c.handle.accepts(policy) {
            Ok(true) => return Ok(c),
            Ok(false) => PassedOver::Declined,
            Err(e) => PassedOver::Failed(e),
        };
        passed_over(&c, &why);
        tried.push((c.name, why));
    }
    Err(NoMapper { tried })
}

/// The warning for a candidate whose `accepts` failed with `error` when
/// asked about `policy`: which component (and library), what happened, and
/// what to do.
pub fn accepts_failure(candidate: &Candidate, policy: &MapPolicy, error: &MapError) -> String {
    let label = candidate.label();
    let name = &candidate.name;
    if error.kind == MapErrorKind::BadRequest {
        format!(
            "rmaps component {label} could not read the mapping policy {policy}, so it was passed over: {error}. It was probably built against an older rmaps interface; rebuild it, or leave it out with --mca rmaps ^{name}."
        )
    } else {
        format!(
            "rmaps component {label} failed when asked whether it maps by {policy}, so it was passed over: {error}. This is a bug in the component: report it to its authors; --mca rmaps ^{name} leaves it out."
        )
    }
}

/// Selects a mapper for `request` and maps it (tests and benchmarks; mpirun
/// adds its own messages around [`select`] and [`RmapsHandle::map`]).
///
/// # Errors
///
/// The chosen mapper's error; [`MapErrorKind::NoMapper`] when no candidate
/// accepts the policy; [`MapErrorKind::ComponentFailed`] when a candidate's
/// `accepts` panicked on the way (nothing reports a failure here, so it is
/// not passed over silently).
pub fn map_with(candidates: &[Candidate], request: &MapRequest) -> Result<JobMap, MapError> {
    let mut failed = None;
    let chosen = select(candidates, &request.policy, |c, why| {
        if let PassedOver::Failed(e) = why {
            if e.kind == MapErrorKind::ComponentFailed && failed.is_none() {
                failed = Some(MapError::new(
                    MapErrorKind::ComponentFailed,
                    accepts_failure(c, &request.policy, e),
                ));
            }
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    let chosen = chosen.map_err(|e| {
        MapError::new(
            MapErrorKind::NoMapper,
            format!(
                "no rmaps component maps by {} (tried: {})",
                request.policy.map_by,
                e.tried_list()
            ),
        )
    })?;
    chosen.handle.map(request)
}

/// A policy name a component declared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeclaredPolicy {
    /// The component.
    pub component: String,
    /// The name and its help.
    pub policy: PolicyName,
}

/// The policy names `candidates` declared, in [`by_priority`] order, and
/// a message for each one left out: a name that is not valid
/// ([`PolicyName::check`]) or that a component of higher priority already
/// declared.
pub fn policy_names(candidates: &[Candidate]) -> (Vec<DeclaredPolicy>, Vec<String>) {
    let mut ordered = candidates.to_vec();
    by_priority(&mut ordered);
    let mut names: Vec<DeclaredPolicy> = Vec::new();
    let mut problems = Vec::new();
    for c in ordered {
        for p in c.handle.policy_names() {
            if let Err(e) = p.check() {
                problems.push(format!("rmaps component {}: {e}; it is ignored", c.name));
            } else if let Some(first) = names.iter().find(|d| d.policy.name == p.name) {
                problems.push(format!(
                    "rmaps components {} and {} both declare the policy name \"{}\"; --map-by {} goes to {}, whose priority is higher",
                    first.component, c.name, p.name, p.name, first.component
                ));
            } else {
                names.push(DeclaredPolicy {
                    component: c.name.clone(),
                    policy: *p,
                });
            }
        }
    }
    (names, problems)
}
