//! What a mapper is asked to do.

use crate::allocation::{Allocation, HostFilter, ResolvedHosts};
use crate::policy::{MapPolicy, RankBy};
use crate::topology::Topology;

/// One app (program) of the job.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AppRequest {
    /// `-n`: number of processes. `None` (default): the slots of the app's
    /// hosts that earlier apps left free (round_robin), the number of
    /// lines of its host list (seq), or N × resources (ppr).
    pub np: Option<u32>,
    /// The hosts the app may use; `None` (default) for the whole
    /// allocation.
    pub hosts: Option<HostFilter>,
}

/// A job to map.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MapRequest {
    /// The job's hosts.
    pub allocation: Allocation,
    /// Its apps, in command-line order (ranks are numbered app by app).
    pub apps: Vec<AppRequest>,
    /// The mapping policy.
    pub policy: MapPolicy,
    /// `--rank-by`; `None` (default) numbers ranks in the order processes
    /// were placed, which is what the reference's by-slot and by-node
    /// examples show.
    pub rank_by: Option<RankBy>,
    /// Hardware assumed for nodes whose `topology` is `None` (the local
    /// host's). Default: [`Topology::default`].
    pub default_topology: Topology,
}

impl MapRequest {
    /// A request for `apps` over `hosts` (from [`crate::allocation::resolve`]),
    /// one [`AppRequest`] per `np` (apps beyond `hosts.app_hosts` get the
    /// whole allocation), with no `--rank-by`, assuming the local host's
    /// hardware for nodes whose topology is unknown.
    pub fn new(hosts: ResolvedHosts, nps: &[Option<u32>], policy: MapPolicy) -> MapRequest {
        let default_topology = hosts.default_topology;
        let mut filters = hosts.app_hosts.into_iter();
        let apps = nps
            .iter()
            .map(|&np| AppRequest {
                np,
                hosts: filters.next().flatten(),
            })
            .collect();
        MapRequest {
            allocation: hosts.allocation,
            apps,
            policy,
            rank_by: None,
            default_topology,
        }
    }
}
