//! Binding policies (`--bind-to`), the default policy rule, and which PUs
//! each rank of a node is bound to.
//!
//! The rules follow Open MPI v4 (its `rmaps_base_binding.c`):
//!
//! - A rank mapped to an object (by `--map-by`) is bound to an object of the
//!   binding level that shares CPUs with it: the one containing it when the
//!   binding level is coarser (mapped to core 3, bound to its package), or
//!   the least-loaded one inside it when finer (mapped to package 1, bound
//!   to one of its cores in turn). A rank without a mapped object is dealt
//!   round-robin over all objects of the level.
//! - `--cpu-set` (logical PU indexes) restricts everything: an object is
//!   used only if it has a PU in the set, and a rank bound to it gets only
//!   those PUs. With `--bind-to none` and a cpu-set, ranks are bound to the
//!   whole cpu-set (as Open MPI does).
//! - Binding more ranks to an object than it has CPUs (cores; for a
//!   hardware thread, 1) is an error unless overload is allowed
//!   (`--bind-to core:overload-allowed`), Open MPI's "binding more
//!   processes than cpus on a resource".
//! - The default policy (not asked for by the user) never fails: where a
//!   user's request would be an error (no such level, overload), the ranks
//!   are left unbound.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

use crate::cpulist::CpuList;
use crate::topology::{ObjectLevel, Topology};

/// What to bind each rank to (`--bind-to`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BindPolicy {
    /// Do not bind (`none`): ranks may run anywhere in the available set.
    None,
    /// One hardware thread (`hwthread`).
    HwThread,
    /// One core with all its hardware threads (`core`).
    Core,
    /// One package (`package`, also `socket`).
    Package,
    /// One NUMA node's CPUs (`numa`).
    Numa,
}

/// The qualifiers of a `--bind-to` directive (`core:overload-allowed`).
/// `Default`: everything off (a user's policy, strict).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BindOptions {
    /// Allow more ranks on an object than it has CPUs (`overload-allowed`,
    /// also `overload`). Default: off, which makes that an error.
    pub overload_allowed: bool,
    /// When the machine has no object of the policy's level, leave ranks
    /// unbound instead of failing (`if-supported`). Default: off.
    pub if_supported: bool,
    /// The policy is the default one, not the user's: whatever would be an
    /// error (missing level, overload) leaves all ranks unbound instead.
    /// Never set by parsing; set by [`BindRequest::default_for`].
    pub is_default: bool,
}

/// A whole `--bind-to` directive: a policy and its qualifiers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BindRequest {
    /// The policy.
    pub policy: BindPolicy,
    /// Its qualifiers.
    pub options: BindOptions,
}

/// A `--bind-to` value that could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum BindPolicyError {
    /// The policy word is not one of the accepted ones.
    #[error("unknown --bind-to value `{0}`: expected one of none, hwthread, core, package (or socket), numa")]
    Unknown(String),
    /// A qualifier after `:` is not one of the accepted ones.
    #[error("unknown --bind-to qualifier `{0}`: expected overload-allowed or if-supported (as in `core:overload-allowed,if-supported`)")]
    UnknownQualifier(String),
}

/// Where the mapper placed one rank of this node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProcPlacement {
    /// The rank's index among the job's ranks on this node (0..).
    pub local_rank: usize,
    /// The object the rank was mapped to, as (level, logical index within
    /// that level), or `None` when the mapper did not pick one (by-slot or
    /// by-node mapping).
    pub mapped_object: Option<(ObjectLevel, usize)>,
}

/// Why the bindings could not be computed.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum BindError {
    /// The `--cpu-set` list is empty.
    #[error("--cpu-set is empty: give logical CPUs such as `0,2-3`")]
    EmptyCpuSet,
    /// A `--cpu-set` entry names a logical CPU this node does not have.
    #[error("--cpu-set names logical CPU {cpu}, but this node has {available} (0-{last})", last = available.saturating_sub(1))]
    CpuSetOutOfRange {
        /// The offending logical index.
        cpu: usize,
        /// How many PUs the node has.
        available: usize,
    },
    /// The node has no object of the level to bind to.
    #[error("cannot bind to {level}: this node has no {level} objects (use --bind-to none, another level, or add the if-supported qualifier)")]
    MissingLevel {
        /// The level asked for.
        level: ObjectLevel,
    },
    /// No object of the level has a PU inside `--cpu-set`.
    #[error("cannot bind to {level}: no {level} has a CPU in --cpu-set")]
    NothingInCpuSet {
        /// The level asked for.
        level: ObjectLevel,
    },
    /// A rank is mapped to an object the node does not have.
    #[error("local rank {local_rank} is mapped to {level} {index}, but this node has {available} {level} objects")]
    BadMappedObject {
        /// The rank.
        local_rank: usize,
        /// The mapped level.
        level: ObjectLevel,
        /// The mapped logical index.
        index: usize,
        /// How many objects of that level the node has.
        available: usize,
    },
    /// A rank is mapped to an object with no PU inside `--cpu-set`, or no
    /// object of the binding level shares a PU with it.
    #[error("local rank {local_rank} is mapped to {level} {index}, which has no CPU to bind to (check --cpu-set)")]
    MappedOutsideCpuSet {
        /// The rank.
        local_rank: usize,
        /// The mapped level.
        level: ObjectLevel,
        /// The mapped logical index.
        index: usize,
    },
    /// More ranks than CPUs on one object (Open MPI: "binding more
    /// processes than cpus on a resource").
    #[error("binding more processes than cpus on a resource: {procs} processes on {level} {index}, which has {cpus} cpus (add the overload-allowed qualifier, as in --bind-to {level}:overload-allowed, or bind to a larger object or to none)")]
    Overload {
        /// The binding level.
        level: ObjectLevel,
        /// The object's logical index.
        index: usize,
        /// How many ranks would be bound to it.
        procs: usize,
        /// How many CPUs it has (cores; 1 for a core or hardware thread).
        cpus: usize,
    },
}

impl BindPolicy {
    /// Parse a `--bind-to` policy word, without qualifiers: `none`,
    /// `hwthread`, `core`, `package` or `socket`, `numa` (any case, blanks
    /// around it ignored).
    ///
    /// # Errors
    ///
    /// [`BindPolicyError::Unknown`] (its message lists the accepted words).
    pub fn parse(text: &str) -> Result<BindPolicy, BindPolicyError> {
        match text.trim().to_ascii_lowercase().as_str() {
            "none" => Ok(BindPolicy::None),
            "hwthread" => Ok(BindPolicy::HwThread),
            "core" => Ok(BindPolicy::Core),
            "package" | "socket" => Ok(BindPolicy::Package),
            "numa" => Ok(BindPolicy::Numa),
            _ => Err(BindPolicyError::Unknown(text.trim().to_string())),
        }
    }

    /// The level bound to; `None` for [`BindPolicy::None`].
    pub fn level(self) -> Option<ObjectLevel> {
        match self {
            BindPolicy::None => None,
            BindPolicy::HwThread => Some(ObjectLevel::HwThread),
            BindPolicy::Core => Some(ObjectLevel::Core),
            BindPolicy::Package => Some(ObjectLevel::Package),
            BindPolicy::Numa => Some(ObjectLevel::Numa),
        }
    }
}

impl FromStr for BindPolicy {
    type Err = BindPolicyError;

    /// Same as [`BindPolicy::parse`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        BindPolicy::parse(s)
    }
}

impl fmt::Display for BindPolicy {
    /// The canonical word: `none`, `hwthread`, `core`, `package`, `numa`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.level() {
            None => f.write_str("none"),
            Some(level) => level.fmt(f),
        }
    }
}

impl BindRequest {
    /// Parse a whole `--bind-to` value: a policy word
    /// ([`BindPolicy::parse`]) optionally followed by `:` and qualifiers
    /// separated by `,` or `:` — `overload-allowed` (or `overload`),
    /// `if-supported` — in any case, as in Open MPI v4
    /// (`core:overload-allowed,if-supported`) and v5 (`core:OVERLOAD`).
    ///
    /// # Errors
    ///
    /// [`BindPolicyError::Unknown`] for the policy word,
    /// [`BindPolicyError::UnknownQualifier`] for a qualifier.
    pub fn parse(text: &str) -> Result<BindRequest, BindPolicyError> {
        let (word, qualifiers) = match text.split_once(':') {
            Some((w, q)) => (w, Some(q)),
            None => (text, None),
        };
        let policy = BindPolicy::parse(word)?;
        let mut options = BindOptions::default();
        for q in qualifiers.into_iter().flat_map(|q| q.split([',', ':'])) {
            match q.trim().to_ascii_lowercase().as_str() {
                "overload-allowed" | "overload" => options.overload_allowed = true,
                "if-supported" => options.if_supported = true,
                _ => return Err(BindPolicyError::UnknownQualifier(q.trim().to_string())),
            }
        }
        Ok(BindRequest { policy, options })
    }

    /// Open MPI's default binding ([`default_policy`]) with
    /// [`BindOptions::is_default`] set, so it never makes a job fail.
    pub fn default_for(num_procs: usize, oversubscribed: bool) -> BindRequest {
        BindRequest {
            policy: default_policy(num_procs, oversubscribed),
            options: BindOptions {
                is_default: true,
                ..BindOptions::default()
            },
        }
    }
}

/// Open MPI's default binding policy: [`BindPolicy::None`] when the node is
/// oversubscribed (more ranks than slots), otherwise [`BindPolicy::Core`]
/// for at most 2 processes and [`BindPolicy::Package`] above. Open MPI v4
/// counts the job's processes (`np`); pass that, or the node's count if
/// the launcher decides per node.
pub fn default_policy(num_procs: usize, oversubscribed: bool) -> BindPolicy {
    if oversubscribed {
        BindPolicy::None
    } else if num_procs <= 2 {
        BindPolicy::Core
    } else {
        BindPolicy::Package
    }
}

/// The PUs (OS indexes) each rank of this node is bound to, in the order of
/// `procs`, with strict options (no overload, no if-supported); see
/// [`compute_bindings_with`].
///
/// # Errors
///
/// As [`compute_bindings_with`].
pub fn compute_bindings(
    topology: &Topology,
    procs: &[ProcPlacement],
    policy: BindPolicy,
    cpu_set: Option<&CpuList>,
) -> Result<Vec<CpuList>, BindError> {
    compute_bindings_with(topology, procs, policy, cpu_set, BindOptions::default())
}

/// The PUs (OS indexes, as `sched_setaffinity` wants them) each rank of this
/// node is bound to, in the order of `procs`.
///
/// `cpu_set` is `--cpu-set`: logical PU indexes that the job may use.
/// Ranks are handled in ascending `local_rank` order; each goes to the
/// least-loaded eligible object (ties: the lowest logical index), which is
/// round-robin for ranks without a mapped object. An unbound rank
/// ([`BindPolicy::None`], or a fallback of `if_supported`/`is_default`)
/// gets the whole available set: the cpu-set, or every PU of the node —
/// the report then says "not bound", and a launcher need not apply it.
///
/// # Errors
///
/// - [`BindError::EmptyCpuSet`], [`BindError::CpuSetOutOfRange`]: a bad
///   `--cpu-set` (checked for every policy, `none` included);
/// - [`BindError::MissingLevel`]: the node has no object of the level
///   (unless `if_supported` or `is_default`);
/// - [`BindError::NothingInCpuSet`]: no object of the level has a PU in
///   the cpu-set;
/// - [`BindError::BadMappedObject`], [`BindError::MappedOutsideCpuSet`]: a
///   rank's mapped object does not exist or has nothing to bind to;
/// - [`BindError::Overload`]: an object would get more ranks than it has
///   CPUs (unless `overload_allowed` or `is_default`).
pub fn compute_bindings_with(
    topology: &Topology,
    procs: &[ProcPlacement],
    policy: BindPolicy,
    cpu_set: Option<&CpuList>,
    options: BindOptions,
) -> Result<Vec<CpuList>, BindError> {
    let available = match cpu_set {
        None => topology.cpus().clone(),
        Some(set) => logical_to_os(topology, set)?,
    };
    let unbound = || vec![available.clone(); procs.len()];
    let Some(level) = policy.level() else {
        return Ok(unbound());
    };
    let Some(objects) = topology.objects(level) else {
        if options.if_supported || options.is_default {
            return Ok(unbound());
        }
        return Err(BindError::MissingLevel { level });
    };

    // Eligible objects: (logical index, its PUs in the available set, cpus).
    let candidates: Vec<(usize, CpuList, usize)> = objects
        .iter()
        .enumerate()
        .filter_map(|(index, cpus)| {
            let cpus = cpus.intersection(&available);
            (!cpus.is_empty()).then(|| {
                let ncpus = cpu_count(topology, level, &cpus);
                (index, cpus, ncpus)
            })
        })
        .collect();
    if candidates.is_empty() {
        return Err(BindError::NothingInCpuSet { level });
    }

    let mut order: Vec<usize> = (0..procs.len()).collect();
    order.sort_by_key(|&i| procs[i].local_rank);
    let mut load = vec![0usize; candidates.len()];
    let mut result = vec![CpuList::new(); procs.len()];
    for i in order {
        let proc = procs[i];
        let within = match proc.mapped_object {
            None => None,
            Some((mlevel, mindex)) => {
                Some(mapped_cpus(topology, &available, proc, mlevel, mindex)?)
            }
        };
        let chosen = candidates
            .iter()
            .enumerate()
            .filter(|(_, (_, cpus, _))| match &within {
                None => true,
                Some(w) => cpus.intersects(w),
            })
            .min_by_key(|&(c, (index, _, _))| (load[c], *index))
            .map(|(c, _)| c);
        let Some(c) = chosen else {
            let (level, index) = proc.mapped_object.unwrap_or((level, 0));
            return Err(BindError::MappedOutsideCpuSet {
                local_rank: proc.local_rank,
                level,
                index,
            });
        };
        load[c] += 1;
        let (index, cpus, ncpus) = &candidates[c];
        if load[c] > *ncpus && !options.overload_allowed {
            if options.is_default {
                return Ok(unbound());
            }
            return Err(BindError::Overload {
                level,
                index: *index,
                procs: load[c],
                cpus: *ncpus,
            });
        }
        result[i] = cpus.clone();
    }
    Ok(result)
}

/// The `--cpu-set` logical indexes as OS indexes.
fn logical_to_os(topology: &Topology, set: &CpuList) -> Result<CpuList, BindError> {
    if set.is_empty() {
        return Err(BindError::EmptyCpuSet);
    }
    set.iter()
        .map(|cpu| {
            topology
                .os_index_of(cpu)
                .ok_or(BindError::CpuSetOutOfRange {
                    cpu,
                    available: topology.num_hwthreads(),
                })
        })
        .collect::<Result<Vec<usize>, BindError>>()
        .map(|v| v.into_iter().collect())
}

/// The available PUs of a rank's mapped object.
fn mapped_cpus(
    topology: &Topology,
    available: &CpuList,
    proc: ProcPlacement,
    level: ObjectLevel,
    index: usize,
) -> Result<CpuList, BindError> {
    let objects = topology.objects(level).unwrap_or_default();
    let Some(cpus) = objects.get(index) else {
        return Err(BindError::BadMappedObject {
            local_rank: proc.local_rank,
            level,
            index,
            available: objects.len(),
        });
    };
    let cpus = cpus.intersection(available);
    if cpus.is_empty() {
        return Err(BindError::MappedOutsideCpuSet {
            local_rank: proc.local_rank,
            level,
            index,
        });
    }
    Ok(cpus)
}

/// How many ranks an object can take without overload: 1 for a hardware
/// thread or a core, else the number of cores with a PU in `cpus` (Open
/// MPI counts cores unless told to use hardware threads as CPUs).
fn cpu_count(topology: &Topology, level: ObjectLevel, cpus: &CpuList) -> usize {
    match level {
        ObjectLevel::HwThread | ObjectLevel::Core => 1,
        ObjectLevel::Package | ObjectLevel::Numa => topology
            .packages()
            .iter()
            .flat_map(|p| p.cores.iter())
            .filter(|core| core.hwthreads.iter().any(|t| cpus.contains(t.os_index)))
            .count(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_policies() {
        assert_eq!(BindPolicy::parse("none"), Ok(BindPolicy::None));
        assert_eq!(BindPolicy::parse("HWTHREAD"), Ok(BindPolicy::HwThread));
        assert_eq!(BindPolicy::parse(" Core "), Ok(BindPolicy::Core));
        assert_eq!(BindPolicy::parse("socket"), Ok(BindPolicy::Package));
        assert_eq!(BindPolicy::parse("Package"), Ok(BindPolicy::Package));
        assert_eq!("numa".parse::<BindPolicy>(), Ok(BindPolicy::Numa));
        let err = BindPolicy::parse("board").unwrap_err();
        assert_eq!(err, BindPolicyError::Unknown("board".into()));
        let text = err.to_string();
        for word in [
            "`board`", "none", "hwthread", "core", "package", "socket", "numa",
        ] {
            assert!(text.contains(word), "{text}");
        }
        assert!(BindPolicy::parse("").is_err());
        assert!(BindPolicy::parse("cores").is_err());
        for p in [
            BindPolicy::None,
            BindPolicy::HwThread,
            BindPolicy::Core,
            BindPolicy::Package,
            BindPolicy::Numa,
        ] {
            assert_eq!(BindPolicy::parse(&p.to_string()), Ok(p));
        }
    }

    #[test]
    fn parses_requests() {
        let r = BindRequest::parse("core").unwrap();
        assert_eq!(r.policy, BindPolicy::Core);
        assert_eq!(r.options, BindOptions::default());
        let r = BindRequest::parse("socket:overload-allowed,if-supported").unwrap();
        assert_eq!(r.policy, BindPolicy::Package);
        assert!(r.options.overload_allowed && r.options.if_supported && !r.options.is_default);
        let r = BindRequest::parse("core:OVERLOAD").unwrap();
        assert!(r.options.overload_allowed && !r.options.if_supported);
        let r = BindRequest::parse("numa:IF-SUPPORTED:overload").unwrap();
        assert!(r.options.overload_allowed && r.options.if_supported);
        assert_eq!(
            BindRequest::parse("core:bogus"),
            Err(BindPolicyError::UnknownQualifier("bogus".into()))
        );
        assert_eq!(
            BindRequest::parse("core:"),
            Err(BindPolicyError::UnknownQualifier("".into()))
        );
        assert_eq!(
            BindRequest::parse("l3cache:overload"),
            Err(BindPolicyError::Unknown("l3cache".into()))
        );
    }

    #[test]
    fn default_rule() {
        assert_eq!(default_policy(1, false), BindPolicy::Core);
        assert_eq!(default_policy(2, false), BindPolicy::Core);
        assert_eq!(default_policy(3, false), BindPolicy::Package);
        assert_eq!(default_policy(64, false), BindPolicy::Package);
        assert_eq!(default_policy(1, true), BindPolicy::None);
        assert_eq!(default_policy(8, true), BindPolicy::None);
        let r = BindRequest::default_for(4, false);
        assert_eq!(r.policy, BindPolicy::Package);
        assert!(r.options.is_default && !r.options.overload_allowed);
    }
}
