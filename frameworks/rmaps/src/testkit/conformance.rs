//! The rmaps conformance suite: what every mapper component's tests run.
//!
//! [`run`] takes a [`Subject`] — the component's name, its exported
//! `MODULE`, and the policies it serves with how many processes each
//! places where ([`Capacity`]) — and checks, through [`RmapsHandle`] (so
//! the generated `extern "C"` layer, its JSON and its panic guard run):
//!
//! 1. its module reports `accepts` failures (interface 2.1), its policy
//!    names are valid, and every name it declares is among the served
//!    policies;
//! 2. it accepts every served policy, with `:OVERSUBSCRIBE`,
//!    `:NOOVERSUBSCRIBE` or neither, and declines every other policy
//!    (each built-in kind it does not serve and a name nobody declares);
//!    asked to map a declined policy anyway, it answers a
//!    [`NoMapper`](MapErrorKind::NoMapper) error;
//! 3. malformed JSON, to `accepts` and to `map`, answers a
//!    [`BadRequest`](MapErrorKind::BadRequest) error, and so do well-formed
//!    requests that make no sense (no app, no host, `-n 0`, more ranks
//!    than a job may have, a host outside the allocation);
//! 4. over the standard allocations ([`cases::standard_layouts`](super::cases::standard_layouts): one host
//!    with one slot, one host with four, three hosts of uneven slots, hosts
//!    with topology, hosts with `max_slots`), for each served policy, with
//!    each oversubscription mode, jobs of 1 process, of the default size,
//!    exactly fitting, one more than fits, and the exact job on the same
//!    hosts one slot short: each answers what the rules predict
//!    ([`cases::predict`](super::cases::predict)) — a map, or an error of the right kind (an
//!    oversubscribing job without permission is a
//!    [`NotEnoughSlots`](MapErrorKind::NotEnoughSlots) error, never a map
//!    and never a panic) — and every map has every rank 0..n-1 exactly
//!    once, numbered app by app, no host above its slots unless allowed
//!    (and never above its limit), the oversubscribed mark where a host
//!    has more processes than slots, local ranks in rank order, objects
//!    the host has, and renders as `--display-map` text and JSON;
//! 5. the same request maps to the same map every time;
//! 6. two apps of one process each are numbered app by app and placed as
//!    the capacity says (the second app starting again, or going on), and
//!    `--rank-by node` or `slot` renumbers without moving processes;
//! 7. nothing panicked: a [`ComponentFailed`](MapErrorKind::ComponentFailed)
//!    answer anywhere fails the suite.
//!
//! Every served policy must meet an oversubscribing job both refused and
//! allowed somewhere among the standard allocations; the suite says so if
//! a policy never does (serve one that places more than one process on a
//! host).
//!
//! # Example
//!
//! A mapper component's tests call it once with its `MODULE`:
//!
//! ```ignore
//! use oxmpi_framework_rmaps::testkit::conformance::{self, Capacity, Subject};
//! use oxmpi_framework_rmaps::Resource;
//!
//! #[test]
//! fn the_rmaps_conformance_suite_passes() {
//!     conformance::run(
//!         &Subject::new("ppr", crate::MODULE)
//!             .serves("ppr:2:node", Capacity::PerResource { count: 2, resource: Resource::Node })
//!             .serves("ppr:1:core", Capacity::PerResource { count: 1, resource: Resource::Core }),
//!     );
//! }
//! ```
//!
//! A component that adds its own policy name serves it by that name
//! (`.serves("reverse", Capacity::Slots)`).

pub use super::cases::Capacity;
use super::cases::{
    exact_demand, predict, request, size, standard_layouts, tight, two_apps_of_one, Expect, Layout,
    Mode,
};
use super::check::map_holds;
use crate::allocation::{AllocationSource, HostFilter};
use crate::error::{MapError, MapErrorKind};
use crate::handle::RmapsHandle;
use crate::jobmap::JobMap;
use crate::module::RmapsModuleRef;
use crate::policy::{parse_map_by, parse_map_by_with, MapBy, MapPolicy, RankBy};
use crate::request::{AppRequest, MapRequest};
use crate::MAX_PROCS;
use std::mem::discriminant;

/// One policy the subject serves.
#[derive(Clone, Debug)]
pub struct Served {
    /// As given to [`Subject::serves`].
    pub text: String,
    /// Parsed (the suite sets `oversubscribe` itself).
    pub policy: MapPolicy,
    /// How many processes it places where.
    pub capacity: Capacity,
}

/// The component under test.
#[derive(Clone, Debug)]
pub struct Subject {
    /// Its name (`round_robin`): the maps must name it.
    pub component: &'static str,
    /// Its module (the `MODULE` of `export_mapper_component!`).
    pub handle: RmapsHandle,
    /// The policies it serves (none until [`Subject::serves`]).
    pub served: Vec<Served>,
}

impl Subject {
    /// Component `component` with module `module`, serving nothing yet.
    pub fn new(component: &'static str, module: RmapsModuleRef) -> Subject {
        Subject {
            component,
            handle: RmapsHandle::new(module),
            served: Vec::new(),
        }
    }

    /// Adds a policy it serves, in `--map-by` syntax (the component's
    /// own names are accepted), placing as `capacity` says.
    ///
    /// # Panics
    ///
    /// When `policy` does not parse, or states `:OVERSUBSCRIBE`,
    /// `:NOOVERSUBSCRIBE` (the suite adds those) or `:PE` (which the
    /// suite's predictions do not model).
    pub fn serves(mut self, policy: &str, capacity: Capacity) -> Subject {
        let names: Vec<&str> = self
            .handle
            .policy_names()
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        let parsed = parse_map_by_with(policy, &names)
            .unwrap_or_else(|e| panic!("{}: served policy {policy:?}: {e}", self.component));
        assert!(
            parsed.oversubscribe.is_none() && parsed.pe.is_none(),
            "{}: served policy {policy:?}: give it without :OVERSUBSCRIBE, :NOOVERSUBSCRIBE and :PE (the suite adds the first two and does not model :PE)",
            self.component
        );
        self.served.push(Served {
            text: policy.to_string(),
            policy: MapPolicy::from(parsed),
            capacity,
        });
        self
    }
}

/// Runs the whole suite on `subject` (see the module docs).
///
/// # Panics
///
/// At the first check that fails, with a message naming the component,
/// the job and what was wrong.
pub fn run(subject: &Subject) {
    assert!(
        !subject.served.is_empty(),
        "{}: the subject serves no policy: describe them with Subject::serves",
        subject.component
    );
    declarations(subject);
    accepts_and_declines(subject);
    malformed_input(subject);
    senseless_requests(subject);
    for served in &subject.served {
        standard_jobs(subject, served);
        apps_and_ranking(subject, served);
    }
}

fn with_mode(policy: &MapPolicy, mode: Mode) -> MapPolicy {
    MapPolicy {
        oversubscribe: mode.value(),
        ..policy.clone()
    }
}

/// Maps `request`; a `ComponentFailed` answer fails the suite.
fn map(subject: &Subject, what: &str, request: &MapRequest) -> Result<JobMap, MapError> {
    let answer = subject.handle.map(request);
    if let Err(e) = &answer {
        assert!(
            e.kind != MapErrorKind::ComponentFailed,
            "{}: {what}: the component failed: {}",
            subject.component,
            e.message
        );
    }
    answer
}

/// 1. The module and its declarations.
fn declarations(subject: &Subject) {
    let name = subject.component;
    assert!(
        subject.handle.checks_accepts(),
        "{name}: its module has no accepts_checked entry (rmaps interface 2.1): rebuild it with export_mapper_component!"
    );
    for p in subject.handle.policy_names() {
        if let Err(e) = p.check() {
            panic!("{name}: declared {e}");
        }
        assert!(
            subject
                .served
                .iter()
                .any(|s| s.policy.map_by == MapBy::Named(p.name.as_str().to_string())),
            "{name}: it declares the policy name \"{}\", which the subject does not serve: describe it with Subject::serves",
            p.name
        );
    }
}

/// The built-in policy kinds and a name nobody declares.
fn probes() -> Vec<MapPolicy> {
    let mut out: Vec<MapPolicy> = [
        "slot",
        "node",
        "core",
        "hwthread",
        "package",
        "numa",
        "seq",
        "ppr:1:node",
        "ppr:2:core",
    ]
    .iter()
    .map(|t| MapPolicy::from(parse_map_by(t).expect("a built-in policy")))
    .collect();
    out.push(MapPolicy {
        map_by: MapBy::Named("conformance-nobody".into()),
        ..MapPolicy::default()
    });
    out
}

fn same_kind(a: &MapBy, b: &MapBy) -> bool {
    match (a, b) {
        (MapBy::Named(x), MapBy::Named(y)) => x == y,
        _ => discriminant(a) == discriminant(b),
    }
}

/// 2. Served policies are accepted, others declined and refused by `map`.
fn accepts_and_declines(subject: &Subject) {
    let name = subject.component;
    for served in &subject.served {
        for mode in Mode::ALL {
            let policy = with_mode(&served.policy, mode);
            match subject.handle.accepts(&policy) {
                Ok(true) => {}
                other => panic!("{name}: asked whether it maps by {policy}, which it serves, it answered {other:?}"),
            }
        }
    }
    let layout = &standard_layouts()[1];
    for policy in probes() {
        if subject
            .served
            .iter()
            .any(|s| same_kind(&s.policy.map_by, &policy.map_by))
        {
            continue;
        }
        match subject.handle.accepts(&policy) {
            Ok(false) => {}
            other => panic!("{name}: asked whether it maps by {policy}, which the subject does not serve, it answered {other:?} (describe every policy it serves with Subject::serves)"),
        }
        let what = format!("mapping by {policy}, which it declines");
        match map(
            subject,
            &what,
            &request(layout.allocation(), policy.clone(), Some(1)),
        ) {
            Err(e) if e.kind == MapErrorKind::NoMapper => {}
            other => panic!("{name}: {what}: answered {other:?}, not a NoMapper error"),
        }
    }
}

/// 3. Malformed JSON.
fn malformed_input(subject: &Subject) {
    let name = subject.component;
    let valid = serde_json::to_string(&request(
        standard_layouts()[2].allocation(),
        subject.served[0].policy.clone(),
        Some(2),
    ))
    .expect("a request encodes");
    let deep = "[".repeat(100_000);
    let mut texts: Vec<&str> = vec![
        "",
        "{",
        "null",
        "42",
        "[]",
        "\"slot\"",
        "{\"map_by\": 7}",
        "\u{7f}\u{0} not JSON",
        &deep,
    ];
    for text in &texts {
        match subject.handle.accepts_json(text) {
            Err(e) if e.kind == MapErrorKind::BadRequest => {}
            other => panic!(
                "{name}: accepts of malformed input {:?} answered {other:?}, not a BadRequest error",
                oxmpi_plugin_api::text::excerpt(text)
            ),
        }
    }
    texts.push(&valid[..valid.len() / 2]);
    texts.push("{\"allocation\": null, \"apps\": [], \"policy\": null}");
    for text in &texts {
        match subject.handle.map_json(text) {
            Err(e) if e.kind == MapErrorKind::BadRequest => {}
            other => panic!(
                "{name}: map of malformed input {:?} answered {other:?}, not a BadRequest error",
                oxmpi_plugin_api::text::excerpt(text)
            ),
        }
    }
}

/// 3. Well-formed requests that make no sense.
fn senseless_requests(subject: &Subject) {
    let name = subject.component;
    let base = request(
        standard_layouts()[2].allocation(),
        subject.served[0].policy.clone(),
        Some(2),
    );
    let mut cases: Vec<(&str, MapRequest)> = Vec::new();
    let mut r = base.clone();
    r.apps.clear();
    cases.push(("a job without apps", r));
    let mut r = base.clone();
    r.allocation.nodes.clear();
    r.allocation.sequence.clear();
    cases.push(("an allocation without hosts", r));
    let mut r = base.clone();
    r.apps[0].np = Some(0);
    cases.push(("-n 0", r));
    let mut r = base.clone();
    r.apps[0].np = Some(MAX_PROCS + 1);
    cases.push(("more ranks than a job may have", r));
    let mut r = base.clone();
    r.apps[0].hosts = Some(HostFilter {
        nodes: vec!["elsewhere".into()],
        slots: vec![1],
        sequence: vec!["elsewhere".into()],
        source: Some(AllocationSource::HostOption),
    });
    cases.push(("an app host outside the allocation", r));
    for (what, r) in cases {
        match map(subject, what, &r) {
            Err(e) if e.kind == MapErrorKind::BadRequest => {}
            other => panic!("{name}: {what}: answered {other:?}, not a BadRequest error"),
        }
    }
}

/// Maps one predicted job and checks the answer; returns the map.
fn job(
    subject: &Subject,
    served: &Served,
    what: &str,
    request: &MapRequest,
    mode: Mode,
) -> Option<JobMap> {
    let name = subject.component;
    let expect = predict(served.capacity, request, mode);
    let answer = map(subject, what, request);
    match (&expect, answer) {
        (Expect::Fails(kind), Err(e)) => {
            assert!(
                e.kind == *kind,
                "{name}: {what}: answered a {:?} error where {kind:?} was due: {}",
                e.kind,
                e.message
            );
            assert!(
                !e.message.trim().is_empty(),
                "{name}: {what}: an error without a message"
            );
            None
        }
        (Expect::Fails(kind), Ok(m)) => panic!(
            "{name}: {what}: mapped {} processes on {:?} where a {kind:?} error was due",
            m.size(),
            m.nodes
                .iter()
                .map(|n| (&n.name, n.procs.len()))
                .collect::<Vec<_>>()
        ),
        (Expect::Maps(_), Err(e)) => panic!(
            "{name}: {what}: answered a {:?} error where a map was due: {}",
            e.kind, e.message
        ),
        (Expect::Maps(_), Ok(m)) => {
            let slots_first = served.capacity == Capacity::Slots;
            if let Err(why) = map_holds(name, request, mode, &expect, slots_first, &m) {
                panic!("{name}: {what}: {why}");
            }
            let again = map(subject, what, request);
            assert!(
                again.as_ref() == Ok(&m),
                "{name}: {what}: the same request mapped differently the second time"
            );
            Some(m)
        }
    }
}

/// 4 and 5. Every standard allocation, size and mode.
fn standard_jobs(subject: &Subject, served: &Served) {
    let name = subject.component;
    let mut refused = 0;
    let mut allowed = 0;
    for layout in standard_layouts() {
        let mut jobs: Vec<(String, MapRequest, Mode)> = Vec::new();
        for mode in Mode::ALL {
            let policy = with_mode(&served.policy, mode);
            let base = request(layout.allocation(), policy.clone(), None);
            let default = size(served.capacity, &base);
            let mut sizes = vec![None, Some(1), Some(default), Some(default + 1)];
            if let Some(max) = layout
                .hosts
                .iter()
                .map(|h| h.max_slots.map(u64::from))
                .sum::<Option<u64>>()
            {
                sizes.push(Some(max + 1));
            }
            for np in sizes {
                let np = np.map(|n| u32::try_from(n).expect("a small job"));
                let mut r = base.clone();
                r.apps[0].np = np;
                let n = np.map_or_else(|| "the default -n".to_string(), |n| format!("-n {n}"));
                jobs.push((
                    format!("--map-by {policy} on {}, {n}", layout.label),
                    r,
                    mode,
                ));
            }
            if served.capacity == Capacity::HostLines {
                let mut r = base.clone();
                let first = r.allocation.nodes[0].name.clone();
                r.allocation.sequence.push(first.clone());
                jobs.push((
                    format!(
                        "--map-by {policy} on {} with one more line for {first}",
                        layout.label
                    ),
                    r,
                    mode,
                ));
            }
            if let Some(short) = tight(served.capacity, &layout) {
                let demand: u64 = exact_demand(served.capacity, &layout).iter().sum();
                let mut allocation = short.allocation();
                allocation.sequence = layout.allocation().sequence;
                let r = request(
                    allocation,
                    policy.clone(),
                    Some(u32::try_from(demand).expect("a small job")),
                );
                jobs.push((
                    format!("--map-by {policy} on {}, -n {demand}", short.label),
                    r,
                    mode,
                ));
            }
        }
        for (what, r, mode) in jobs {
            let expect = predict(served.capacity, &r, mode);
            let over = oversubscribes(served.capacity, &r);
            if let Some(m) = job(subject, served, &what, &r, mode) {
                if m.oversubscribed() {
                    allowed += 1;
                }
            } else if over && expect == Expect::Fails(MapErrorKind::NotEnoughSlots) {
                refused += 1;
            }
        }
    }
    assert!(
        refused > 0 && allowed > 0,
        "{name}: --map-by {} never oversubscribed a host of the standard allocations ({refused} refused, {allowed} allowed): serve a policy that places more than one process on a host",
        served.text
    );
}

/// Whether the job needs more processes on some host than its slots.
fn oversubscribes(capacity: Capacity, r: &MapRequest) -> bool {
    match predict(capacity, r, Mode::Allowed) {
        Expect::Maps(Some(counts)) => counts
            .iter()
            .zip(&r.allocation.nodes)
            .any(|(&c, h)| c > u64::from(h.slots)),
        Expect::Maps(None) => size(capacity, r) > r.allocation.total_slots(),
        Expect::Fails(_) => false,
    }
}

/// 6. Two apps, and `--rank-by`.
fn apps_and_ranking(subject: &Subject, served: &Served) {
    let layouts: Vec<Layout> = standard_layouts();
    let uneven = &layouts[2];
    let policy = with_mode(&served.policy, Mode::Allowed);
    let mut r = request(uneven.allocation(), policy.clone(), Some(1));
    r.apps.push(AppRequest {
        np: Some(1),
        hosts: None,
    });
    let what = format!("two apps of -n 1 each by {policy} on {}", uneven.label);
    match map(subject, &what, &r) {
        Ok(m) => {
            let counts = two_apps_of_one(served.capacity, &r.allocation, r.default_topology);
            let expect = Expect::Maps(Some(counts));
            if let Err(why) = map_holds(subject.component, &r, Mode::Allowed, &expect, false, &m) {
                panic!("{}: {what}: {why}", subject.component);
            }
        }
        Err(e) => panic!(
            "{}: {what}: answered a {:?} error: {}",
            subject.component, e.kind, e.message
        ),
    }

    let plain = request(uneven.allocation(), policy.clone(), None);
    let what = format!("--map-by {policy} on {}", uneven.label);
    let Some(placed) = job(subject, served, &what, &plain, Mode::Allowed) else {
        panic!("{}: {what}: no map to rank", subject.component);
    };
    let counts: Vec<u64> = plain
        .allocation
        .nodes
        .iter()
        .map(|h| {
            placed
                .nodes
                .iter()
                .find(|n| n.name == h.name)
                .map_or(0, |n| n.procs.len() as u64)
        })
        .collect();
    for rank_by in [RankBy::Node, RankBy::Slot] {
        let mut r = plain.clone();
        r.rank_by = Some(rank_by);
        let what = format!("{what}, --rank-by {rank_by}");
        match map(subject, &what, &r) {
            Ok(m) => {
                let expect = Expect::Maps(Some(counts.clone()));
                if let Err(why) =
                    map_holds(subject.component, &r, Mode::Allowed, &expect, false, &m)
                {
                    panic!("{}: {what}: {why}", subject.component);
                }
            }
            Err(e) => panic!(
                "{}: {what}: answered a {:?} error: {}",
                subject.component, e.kind, e.message
            ),
        }
    }
}
