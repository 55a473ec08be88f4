//! The mapper components and per-job selection.
//!
//! Each mapper says which policies it handles ([`Mapper::accepts`]); for a
//! job, the highest-priority mapper that accepts the policy and that the
//! selection allows maps it (as with Open MPI's `rmaps` selection).
//!
//! | component | priority | policies |
//! |---|---|---|
//! | `ppr` | 90 | `ppr:N:RESOURCE` |
//! | `seq` | 60 | `seq` |
//! | `round_robin` | 10 | `slot`, `node`, `core`, `hwthread`, `package`, `numa` |

use crate::error::{MapError, MapErrorKind};
use crate::jobmap::JobMap;
use crate::policy::MapPolicy;
use crate::request::MapRequest;
use crate::{ppr::Ppr, round_robin::RoundRobin, seq::Seq};

/// A mapper component.
pub trait Mapper: Sync {
    /// Component name (`round_robin`, `seq`, `ppr`).
    fn name(&self) -> &'static str;
    /// Selection priority; higher wins.
    fn priority(&self) -> u32;
    /// Whether it can map a job with this policy (otherwise it declines).
    fn accepts(&self, policy: &MapPolicy) -> bool;
    /// Maps the job. Errors leave nothing half-done: the caller launches
    /// nothing.
    fn map(&self, req: &MapRequest) -> Result<JobMap, MapError>;
}

impl std::fmt::Debug for dyn Mapper {
    /// The component name and priority.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (priority {})", self.name(), self.priority())
    }
}

static MAPPERS: [&dyn Mapper; 3] = [&Ppr, &Seq, &RoundRobin];

/// Every mapper component, highest priority first.
pub fn mappers() -> &'static [&'static dyn Mapper] {
    &MAPPERS
}

/// The mapper for `policy`: the highest-priority one that accepts it and
/// whose name `allowed` accepts (the `rmaps` selection parameter).
/// Errors name the policy and say which mappers declined or were excluded.
pub fn select(
    policy: &MapPolicy,
    allowed: &dyn Fn(&str) -> bool,
) -> Result<&'static dyn Mapper, MapError> {
    let mut declined = Vec::new();
    let mut excluded = Vec::new();
    for m in mappers() {
        if !m.accepts(policy) {
            declined.push(m.name());
        } else if !allowed(m.name()) {
            excluded.push(m.name());
        } else {
            return Ok(*m);
        }
    }
    Err(MapError::new(
        MapErrorKind::NoMapper,
        format!(
            "no rmaps component can map --map-by {policy}: {} excluded by the rmaps selection parameter, {} declined; allow {} (for example --mca rmaps {})",
            if excluded.is_empty() { "none".to_string() } else { excluded.join(", ") },
            declined.join(", "),
            if excluded.is_empty() { "a mapper for this policy".to_string() } else { excluded.join(" or ") },
            excluded.first().copied().unwrap_or("round_robin"),
        ),
    ))
}

/// Maps a job with the mapper [`select`] picks, all components allowed.
pub fn map_job(req: &MapRequest) -> Result<JobMap, MapError> {
    select(&req.policy, &|_| true)?.map(req)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{parse_map_by, MapPolicy};

    fn policy(text: &str) -> MapPolicy {
        MapPolicy::from(parse_map_by(text).unwrap())
    }

    #[test]
    fn each_policy_has_one_mapper() {
        for (text, want) in [
            ("slot", "round_robin"),
            ("node", "round_robin"),
            ("core", "round_robin"),
            ("hwthread", "round_robin"),
            ("package", "round_robin"),
            ("numa", "round_robin"),
            ("seq", "seq"),
            ("ppr:2:node", "ppr"),
        ] {
            let p = policy(text);
            assert_eq!(select(&p, &|_| true).unwrap().name(), want, "{text}");
            let accepting: Vec<&str> = mappers()
                .iter()
                .filter(|m| m.accepts(&p))
                .map(|m| m.name())
                .collect();
            assert_eq!(accepting, [want], "{text}");
        }
    }

    #[test]
    fn priorities_descend() {
        let p: Vec<u32> = mappers().iter().map(|m| m.priority()).collect();
        assert_eq!(p, [90, 60, 10]);
    }

    #[test]
    fn excluded_mapper_is_reported() {
        let e = select(&policy("seq"), &|name| name != "seq").unwrap_err();
        assert_eq!(e.kind, MapErrorKind::NoMapper);
        assert!(
            e.message
                .contains("seq excluded by the rmaps selection parameter"),
            "{e}"
        );
        assert!(e.message.contains("ppr, round_robin declined"), "{e}");
    }
}
