//! The round_robin mapper: `--map-by slot | node | core | hwthread |
//! package | numa`.
//!
//! - **slot** (default): fill each node's slots before the next node.
//!   When every node's slots are used and processes remain (allowed only
//!   with oversubscription, see [`oxmpi_framework_rmaps::base`]), go round the nodes again
//!   giving each up to its slot count more, skipping nodes at their limit.
//!   With `node0 slots=2 max_slots=20` and `node1` likewise, `-n 8` places
//!   ranks 0,1 on node0, 2,3 on node1, 4,5 on node0, 6,7 on node1.
//! - **node**: one process per node in turn, skipping nodes whose slots are
//!   used up; once all are, one more per node in turn, skipping nodes at
//!   their limit. The same hostfile with `-n 8` alternates node0, node1.
//! - **core, hwthread, package, numa**: across nodes like slot; inside a
//!   node each process goes to the next object of that kind in turn
//!   ([`oxmpi_framework_rmaps::MappedProc::object`]). With `:SPAN`, like node instead,
//!   giving each node one process per object per visit.
//!
//! `-n` defaults to the free slots of the app's hosts.

use oxmpi_framework_rmaps::base::{run, Ctx, Placement};
use oxmpi_framework_rmaps::JobMap;
use oxmpi_framework_rmaps::MapError;
use oxmpi_framework_rmaps::MapRequest;
use oxmpi_framework_rmaps::Mapper;
use oxmpi_framework_rmaps::{MapBy, MapPolicy};

/// The round_robin component.
pub struct RoundRobin;

fn place(ctx: &mut Ctx<'_>, app: usize, nodes: &[usize]) -> Result<Vec<Placement>, MapError> {
    let n = ctx.np_or_slots(app, nodes)?;
    ctx.check_capacity(app, nodes, n)?;
    let req = ctx.req;
    let policy = &req.policy;
    Ok(match &policy.map_by {
        MapBy::Node => ctx.deal(nodes, n, None),
        other => match other.object() {
            Some(kind) if policy.span => ctx.deal(nodes, n, Some(kind)),
            object => ctx.fill(nodes, n, object),
        },
    })
}

impl Mapper for RoundRobin {
    type Params = crate::Params;
    const NAME: &'static str = "round_robin";

    fn accepts(&self, policy: &MapPolicy) -> bool {
        matches!(
            policy.map_by,
            MapBy::Slot
                | MapBy::Node
                | MapBy::Core
                | MapBy::Hwthread
                | MapBy::Package
                | MapBy::Numa
        )
    }

    fn map(&self, req: &MapRequest, _params: &crate::Params) -> Result<JobMap, MapError> {
        run(req, Self::NAME, place)
    }
}
