//! The suite against test mappers, each exported through the generated
//! module layer: a correct one passes (and is asked over a hundred jobs), and
//! each broken one fails at the check that names what it broke.

use super::conformance::{self, Capacity, Subject};
use crate::base::{run, Ctx, Placement};
use crate::error::{MapError, MapErrorKind};
use crate::jobmap::JobMap;
use crate::module::PolicyName;
use crate::policy::MapPolicy;
use crate::request::MapRequest;
use crate::Mapper;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(oxmpi_plugin_api::Params, Clone, Debug, PartialEq, Eq)]
pub struct Params {
    /// Priority of the test mapper.
    #[param(default = "1", level = Developer(All))]
    pub priority: i32,
}

const QUIRK: &[PolicyName] = &[PolicyName::new(
    "quirk",
    "A test mapper's policy: by slot, with its quirk.",
)];

/// By slot, as round_robin maps it.
fn by_slot(ctx: &mut Ctx<'_>, app: usize, nodes: &[usize]) -> Result<Vec<Placement>, MapError> {
    let n = ctx.np_or_slots(app, nodes)?;
    ctx.check_capacity(app, nodes, n)?;
    Ok(ctx.fill(nodes, n, None))
}

/// Defines test mapper `$name` (policy `quirk`) in module `$module`,
/// mapping with `$map` (a `fn(&MapRequest) -> Result<JobMap, MapError>`)
/// and accepting with `$accepts`.
macro_rules! test_mapper {
    ($module:ident, $name:literal, $map:expr, $accepts:expr) => {
        mod $module {
            use super::*;

            pub struct M;

            impl Mapper for M {
                type Params = Params;
                const NAME: &'static str = $name;
                const POLICIES: &'static [PolicyName] = QUIRK;

                fn accepts(&self, policy: &MapPolicy) -> bool {
                    let accepts: fn(&MapPolicy) -> bool = $accepts;
                    accepts(policy)
                }

                fn map(&self, req: &MapRequest, _params: &Params) -> Result<JobMap, MapError> {
                    let map: fn(&MapRequest) -> Result<JobMap, MapError> = $map;
                    map(req)
                }
            }

            crate::__mapper_module!(M, Params);
        }
    };
}

static GOOD_JOBS: AtomicUsize = AtomicUsize::new(0);

test_mapper!(
    good,
    "good",
    |req| {
        GOOD_JOBS.fetch_add(1, Ordering::Relaxed);
        run(req, "good", by_slot)
    },
    |_| false
);

test_mapper!(
    double_rank,
    "double_rank",
    |req| {
        let mut map = run(req, "double_rank", by_slot)?;
        if map.size() >= 2 {
            let last = map.nodes.last_mut().and_then(|n| n.procs.last_mut());
            if let Some(p) = last {
                p.rank = 0;
                p.app_rank = 0;
            }
        }
        Ok(map)
    },
    |_| false
);

test_mapper!(
    no_limits,
    "no_limits",
    |req| run(req, "no_limits", |ctx, app, nodes| {
        let n = ctx.np_or_slots(app, nodes)?;
        // Fills every slot, then piles the rest on the first host,
        // whatever its limit.
        let mut out = Vec::new();
        for &i in nodes {
            while out.len() < n as usize && ctx.nodes[i].under_slots() {
                out.push(ctx.place(i, None));
            }
        }
        while out.len() < n as usize {
            out.push(ctx.place(nodes[0], None));
        }
        Ok(out)
    }),
    |_| false
);

test_mapper!(
    panics_on_zero,
    "panics_on_zero",
    |req| {
        assert!(
            req.apps.iter().all(|a| a.np != Some(0)),
            "-n 0 surprised it"
        );
        run(req, "panics_on_zero", by_slot)
    },
    |_| false
);

static FLAKY_CALLS: AtomicUsize = AtomicUsize::new(0);

test_mapper!(
    flaky,
    "flaky",
    |req| {
        let odd = FLAKY_CALLS.fetch_add(1, Ordering::Relaxed) % 2 == 1;
        run(req, "flaky", move |ctx, app, nodes| {
            let mut order = nodes.to_vec();
            if odd {
                order.reverse();
            }
            by_slot(ctx, app, &order)
        })
    },
    |_| false
);

test_mapper!(greedy, "greedy", |req| run(req, "greedy", by_slot), |_| {
    true
});

test_mapper!(
    wrong_kind,
    "wrong_kind",
    |req| run(req, "wrong_kind", by_slot).map_err(|e| {
        if e.kind == MapErrorKind::NotEnoughSlots {
            MapError::new(MapErrorKind::BadRequest, e.message)
        } else {
            e
        }
    }),
    |_| false
);

test_mapper!(
    one_per_host,
    "one_per_host",
    |req| run(req, "one_per_host", |ctx, app, nodes| {
        let n = match ctx.req.apps[app].np {
            Some(n) => ctx.check_np(app, n)? as usize,
            None => nodes.len(),
        };
        if n > nodes.len() {
            return Err(MapError::new(
                MapErrorKind::PprTooFew,
                format!("{n} processes for {} hosts", nodes.len()),
            ));
        }
        Ok(nodes[..n].iter().map(|&i| ctx.place(i, None)).collect())
    }),
    |_| false
);

/// The suite's panic message on `subject`, or `None` when it passed.
fn failure(subject: &Subject) -> Option<String> {
    let outcome = std::panic::catch_unwind(|| conformance::run(subject));
    outcome.err().map(|payload| {
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}

fn fails_with(subject: &Subject, wanted: &[&str]) {
    let message = failure(subject).expect("the suite passed a broken mapper");
    for w in wanted {
        assert!(message.contains(w), "{w:?} not in: {message}");
    }
}

#[test]
fn a_correct_mapper_passes_after_a_hundred_jobs_and_more() {
    let subject = Subject::new("good", good::MODULE).serves("quirk", Capacity::Slots);
    if let Some(why) = failure(&subject) {
        panic!("{why}");
    }
    let jobs = GOOD_JOBS.load(Ordering::Relaxed);
    assert!(jobs > 100, "only {jobs} jobs reached the mapper");
}

#[test]
fn a_rank_mapped_twice_fails() {
    fails_with(
        &Subject::new("double_rank", double_rank::MODULE).serves("quirk", Capacity::Slots),
        &["double_rank: --map-by quirk", "rank 0 is mapped twice"],
    );
}

#[test]
fn oversubscribing_without_permission_fails() {
    fails_with(
        &Subject::new("no_limits", no_limits::MODULE).serves("quirk", Capacity::Slots),
        &[
            "no_limits: --map-by quirk",
            "where a NotEnoughSlots error was due",
        ],
    );
}

#[test]
fn a_panic_on_a_senseless_request_fails() {
    fails_with(
        &Subject::new("panics_on_zero", panics_on_zero::MODULE).serves("quirk", Capacity::Slots),
        &[
            "panics_on_zero: -n 0: the component failed: the panics_on_zero mapper panicked: '-n 0 surprised it'",
        ],
    );
}

#[test]
fn a_map_that_changes_between_calls_fails() {
    fails_with(
        &Subject::new("flaky", flaky::MODULE).serves("quirk", Capacity::Slots),
        &["the same request mapped differently the second time"],
    );
}

#[test]
fn accepting_a_policy_it_does_not_serve_fails() {
    fails_with(
        &Subject::new("greedy", greedy::MODULE).serves("quirk", Capacity::Slots),
        &[
            "greedy: asked whether it maps by slot, which the subject does not serve, it answered Ok(true)",
        ],
    );
}

#[test]
fn an_error_of_the_wrong_kind_fails() {
    fails_with(
        &Subject::new("wrong_kind", wrong_kind::MODULE).serves("quirk", Capacity::Slots),
        &["answered a BadRequest error where NotEnoughSlots was due"],
    );
}

#[test]
fn a_policy_that_never_oversubscribes_is_reported() {
    let per_host = Capacity::PerResource {
        count: 1,
        resource: crate::Resource::Node,
    };
    fails_with(
        &Subject::new("one_per_host", one_per_host::MODULE).serves("quirk", per_host),
        &["--map-by quirk never oversubscribed a host of the standard allocations"],
    );
    // Described as what it is not, it fails on the first mismatch.
    fails_with(
        &Subject::new("one_per_host", one_per_host::MODULE).serves("quirk", Capacity::Slots),
        &["one_per_host: --map-by quirk on one host with one slot [h0 slots=1], -n 2: answered a PprTooFew error where NotEnoughSlots was due"],
    );
}

#[test]
fn the_subject_must_describe_every_declared_policy_and_no_modifier() {
    fails_with(
        &Subject::new("good", good::MODULE).serves("slot", Capacity::Slots),
        &["it declares the policy name \"quirk\", which the subject does not serve"],
    );
    fails_with(
        &Subject::new("good", good::MODULE),
        &["the subject serves no policy"],
    );
    let modifier = std::panic::catch_unwind(|| {
        Subject::new("good", good::MODULE).serves("quirk:OVERSUBSCRIBE", Capacity::Slots)
    });
    assert!(modifier.is_err());
}
