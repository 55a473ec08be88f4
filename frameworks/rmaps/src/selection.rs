//! Choosing the mapper of a job — the one selection path mpirun, the
//! tests and the benchmarks share.
//!
//! The caller hands in the usable components' modules with their
//! priorities ([`Candidate`]; mpirun takes them from the core's query, so
//! the `rmaps` selection parameter has already left excluded components
//! out). [`select`] tries them from the highest priority down (ties by
//! name) and the first that accepts the policy maps the job.
//! [`policy_names`] gathers the `--map-by` names they declared, for
//! [`crate::policy::parse_map_by_with`].

use crate::error::{MapError, MapErrorKind};
use crate::jobmap::JobMap;
use crate::module::{call_accepts, call_map, PolicyName, RmapsModuleRef};
use crate::policy::MapPolicy;
use crate::request::MapRequest;

/// A usable rmaps component.
#[derive(Clone)]
pub struct Candidate {
    /// Component name.
    pub name: String,
    /// Its priority (the answer of its query).
    pub priority: i32,
    /// Its module.
    pub module: RmapsModuleRef,
}

impl Candidate {
    /// A candidate.
    pub fn new(name: impl Into<String>, priority: i32, module: RmapsModuleRef) -> Candidate {
        Candidate {
            name: name.into(),
            priority,
            module,
        }
    }
}

impl std::fmt::Debug for Candidate {
    /// Name and priority.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (priority {})", self.name, self.priority)
    }
}

/// No candidate accepts the policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoMapper {
    /// The candidates that declined, in the order they were asked.
    pub declined: Vec<String>,
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
/// [`by_priority`] order that accepts it. `declined` is told each one
/// that did not (for logging).
pub fn select(
    candidates: &[Candidate],
    policy: &MapPolicy,
    mut declined: impl FnMut(&Candidate),
) -> Result<Candidate, NoMapper> {
    let mut ordered = candidates.to_vec();
    by_priority(&mut ordered);
    let mut names = Vec::new();
    for c in ordered {
        if call_accepts(c.module, policy) {
            return Ok(c);
        }
        declined(&c);
        names.push(c.name);
    }
    Err(NoMapper { declined: names })
}

/// Selects a mapper for `request` and maps it (tests and benchmarks; mpirun
/// adds its own messages around [`select`] and
/// [`crate::module::call_map`]).
pub fn map_with(candidates: &[Candidate], request: &MapRequest) -> Result<JobMap, MapError> {
    let chosen = select(candidates, &request.policy, |_| {}).map_err(|e| {
        MapError::new(
            MapErrorKind::NoMapper,
            format!(
                "no rmaps component maps by {} (tried: {})",
                request.policy.map_by,
                e.declined.join(", ")
            ),
        )
    })?;
    call_map(chosen.module, request)
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
        for p in c.module.policy_names() {
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
