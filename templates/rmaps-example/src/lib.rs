//! rmaps component `example`: adds the `--map-by` policy `block`, which
//! deals a job's processes to its hosts in blocks of consecutive ranks.
//!
//! With `rmaps_example_block_size` B (default 2), ranks 0..B go to the
//! first host, the next B to the second, and so on round the hosts, until
//! every process is placed. A host whose slots are used up is skipped; when
//! every host is full, the rounds go on over the hosts that may be
//! oversubscribed (`--map-by block:OVERSUBSCRIBE`, or a local run), up to
//! their limits. `-n` defaults to the free slots of the allocation, as with
//! `--map-by slot`. Block size 1 places as `--map-by node` does; a block
//! at least as large as every host's slots places as `--map-by slot` does.
//!
//! ```text
//! mpirun --host a:4,b:4 -n 6 --map-by block hostname       # a a b b a a
//! mpirun --mca rmaps_example_block_size 3 --host a:4,b:4 -n 6 --map-by block hostname
//!                                                           # a a a b b b
//! ```

use oxmpi_framework_rmaps::base::{run, Ctx, Placement};
use oxmpi_framework_rmaps::{JobMap, MapError, MapRequest, Mapper, PolicyName};

/// The component's parameters (`rmaps_example_<name>`).
#[derive(oxmpi_plugin_api::Params, Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Selection priority of the example mapper. It maps only its own
    /// policy, so its priority matters only against another component
    /// offering `block`.
    #[param(default = "20", level = Developer(All))]
    pub priority: i32,
    /// Consecutive ranks placed on one host before the next host's turn
    /// (--map-by block).
    #[param(default = "2", level = User(Basic), range = 1..=65536)]
    pub block_size: u32,
}

/// The mapper.
pub struct Block;

impl Mapper for Block {
    type Params = Config;
    const NAME: &'static str = "example";
    const POLICIES: &'static [PolicyName] = &[PolicyName::new(
        "block",
        "Deals processes to the hosts in blocks of rmaps_example_block_size consecutive ranks, round the hosts.",
    )];

    fn map(&self, req: &MapRequest, params: &Config) -> Result<JobMap, MapError> {
        run(req, Self::NAME, |ctx, app, nodes| {
            place_in_blocks(ctx, app, nodes, params.block_size)
        })
    }
}

/// Places app `app`'s processes on `nodes` in blocks of `block` (at
/// least 1): first on hosts with free slots, then on hosts that may take
/// more (oversubscription), each pass going round the hosts in order.
fn place_in_blocks(
    ctx: &mut Ctx,
    app: usize,
    nodes: &[usize],
    block: u32,
) -> Result<Vec<Placement>, MapError> {
    let n = ctx.np_or_slots(app, nodes)?;
    ctx.check_capacity(app, nodes, n)?;
    let n = n as usize;
    let block = block.max(1);
    let mut placed = Vec::with_capacity(n);
    for within_slots in [true, false] {
        let open = |ctx: &Ctx, i: usize| {
            if within_slots {
                ctx.nodes[i].under_slots()
            } else {
                ctx.nodes[i].under_limit()
            }
        };
        let mut active: Vec<usize> = nodes.iter().copied().filter(|&i| open(ctx, i)).collect();
        while placed.len() < n && !active.is_empty() {
            for &i in &active {
                let mut in_block = 0;
                while in_block < block && placed.len() < n && open(ctx, i) {
                    placed.push(ctx.place(i, None));
                    in_block += 1;
                }
            }
            active.retain(|&i| open(ctx, i));
        }
    }
    Ok(placed)
}

oxmpi_framework_rmaps::export_mapper_component! {
    mapper: Block,
    name: "example",
    params: Config,
    description: "Deals ranks to hosts in blocks of consecutive ranks (--map-by block)",
    // The package version (oxmpi_info shows it).
    version: oxmpi_plugin_api::Version::new(0, 1, 0),
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxmpi_framework_rmaps::allocation::{Allocation, AllocationSource, NodeSpec};
    use oxmpi_framework_rmaps::selection::map_with;
    use oxmpi_framework_rmaps::{AppRequest, MapBy, MapPolicy, Topology};

    fn request(np: Option<u32>, slots: u32, oversubscribe: Option<bool>) -> MapRequest {
        let node = |name: &str| NodeSpec {
            name: name.into(),
            slots,
            max_slots: None,
            slots_given: true,
            topology: None,
        };
        MapRequest {
            allocation: Allocation {
                nodes: vec![node("a"), node("b")],
                sequence: vec![],
                source: AllocationSource::HostOption,
            },
            apps: vec![AppRequest { np, hosts: None }],
            policy: MapPolicy {
                map_by: MapBy::Named("block".into()),
                oversubscribe,
                ..MapPolicy::default()
            },
            rank_by: None,
            default_topology: Topology::default(),
        }
    }

    fn config(block_size: u32) -> Config {
        Config {
            block_size,
            ..Config::default()
        }
    }

    #[test]
    fn the_policy_is_offered_to_this_component_with_its_defaults() {
        let map = map_with(&[candidate()], &request(Some(6), 4, None)).unwrap();
        assert_eq!(map.mapper, "example");
        assert_eq!(map.rank_hosts(), ["a", "a", "b", "b", "a", "a"]);
    }

    #[test]
    fn the_block_size_sets_how_many_consecutive_ranks_share_a_host() {
        let map = Block.map(&request(Some(6), 4, None), &config(3)).unwrap();
        assert_eq!(map.rank_hosts(), ["a", "a", "a", "b", "b", "b"]);
        let map = Block.map(&request(Some(4), 4, None), &config(1)).unwrap();
        assert_eq!(map.rank_hosts(), ["a", "b", "a", "b"]);
    }

    #[test]
    fn full_hosts_are_skipped_and_np_defaults_to_the_free_slots() {
        // Block 3 on hosts of 2 slots: a block ends where a host is full.
        let map = Block.map(&request(None, 2, None), &config(3)).unwrap();
        assert_eq!(map.rank_hosts(), ["a", "a", "b", "b"]);
    }

    #[test]
    fn more_ranks_than_slots_needs_oversubscription() {
        let err = Block
            .map(&request(Some(5), 2, Some(false)), &config(2))
            .unwrap_err();
        assert!(err.to_string().contains("not enough slots"), "{err}");
        let map = Block
            .map(&request(Some(6), 2, Some(true)), &config(2))
            .unwrap();
        assert_eq!(map.rank_hosts(), ["a", "a", "b", "b", "a", "a"]);
    }
}
