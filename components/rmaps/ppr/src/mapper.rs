//! The ppr mapper (`--map-by ppr:N:RESOURCE`): N processes on each
//! resource (node, package, NUMA domain, core, hardware thread) of every
//! node of the app, node by node, resource by resource.
//!
//! `-n` defaults to N × the resources of the app's nodes; more than that is
//! an error, fewer stops early. A node that cannot take its share (slots,
//! or `max_slots`, see [`oxmpi_framework_rmaps::base`]) is an error naming it.

use oxmpi_framework_rmaps::base::{run, Ctx, Placement};
use oxmpi_framework_rmaps::MapRequest;
use oxmpi_framework_rmaps::Mapper;
use oxmpi_framework_rmaps::Resource;
use oxmpi_framework_rmaps::{JobMap, ObjectRef};
use oxmpi_framework_rmaps::{MapBy, MapPolicy};
use oxmpi_framework_rmaps::{MapError, MapErrorKind};

/// The ppr component.
pub struct Ppr;

fn place(ctx: &mut Ctx<'_>, app: usize, nodes: &[usize]) -> Result<Vec<Placement>, MapError> {
    let MapBy::Ppr { count, resource } = ctx.req.policy.map_by.clone() else {
        unreachable!("the ppr mapper only accepts ppr policies")
    };
    let share = |ctx: &Ctx<'_>, i: usize| {
        u64::from(count) * u64::from(ctx.nodes[i].topology.count(resource))
    };
    let total: u64 = nodes.iter().map(|&i| share(ctx, i)).sum();
    let n = match ctx.req.apps[app].np {
        Some(n) => u64::from(ctx.check_np(app, n)?),
        None => total,
    };
    let policy = ctx.req.policy.map_by.clone();
    if n > u64::from(oxmpi_framework_rmaps::base::MAX_PROCS) {
        return Err(MapError::new(
            MapErrorKind::BadRequest,
            format!(
                "{}--map-by {policy} gives {n} ranks, more than a job can have; give -n",
                ctx.app_label(app)
            ),
        ));
    }
    if n > total {
        return Err(MapError::new(
            MapErrorKind::PprTooFew,
            format!(
                "{}--map-by {policy} places at most {total} ranks on the {} host(s) of the job ({count} per {resource}), and {n} were requested; nothing was launched. Give fewer ranks with -n or a larger count.",
                ctx.app_label(app),
                nodes.len()
            ),
        ));
    }
    let mut out = Vec::with_capacity(n as usize);
    for &i in nodes {
        if out.len() as u64 >= n {
            break;
        }
        let wanted = u64::from(ctx.nodes[i].used) + share(ctx, i).min(n - out.len() as u64);
        let objects = ctx.nodes[i].topology.count(resource);
        for index in 0..objects {
            for _ in 0..count {
                if out.len() as u64 >= n {
                    break;
                }
                if !ctx.nodes[i].under_limit() {
                    return Err(ctx.node_full(app, i, wanted, &format!("--map-by {policy} puts")));
                }
                let object = (resource != Resource::Node).then_some(ObjectRef {
                    kind: resource,
                    index,
                });
                out.push(ctx.place(i, object));
            }
        }
    }
    Ok(out)
}

impl Mapper for Ppr {
    type Params = crate::Params;
    const NAME: &'static str = "ppr";

    fn accepts(&self, policy: &MapPolicy) -> bool {
        matches!(policy.map_by, MapBy::Ppr { .. })
    }

    fn map(&self, req: &MapRequest, _params: &crate::Params) -> Result<JobMap, MapError> {
        run(req, Self::NAME, place)
    }
}
