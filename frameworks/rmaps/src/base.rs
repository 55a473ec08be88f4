//! What every mapper shares (Open MPI's rmaps "base"): per-node usage and
//! limits, the oversubscription rules, capacity checks and their messages,
//! processor reservation for `:PE=n`, and turning placements into a
//! [`JobMap`].
//!
//! Limits per node, by oversubscription mode:
//!
//! | mode | when | a node takes at most |
//! |---|---|---|
//! | allowed | `:OVERSUBSCRIBE`, or no host list at all (implicit local host) | `max_slots`, unlimited if none |
//! | up to max_slots | nothing said, explicit host list or scheduler | `max_slots` if the hostfile gives one, else `slots` |
//! | refused | `:NOOVERSUBSCRIBE` | `slots` |
//!
//! With `:PE=n`, a node's slots count as at most `cpus / n` (cpus = cores,
//! or hardware threads with `:HWTCPUS`).
//!
//! A mapper's [`crate::Mapper::map`] is usually one call to [`run`] with a
//! function that places one app's processes using [`Ctx`]'s helpers
//! ([`Ctx::fill`] and [`Ctx::deal`] for round-robin placements,
//! [`Ctx::place`] for one process, [`Ctx::check_capacity`] and
//! [`Ctx::node_full`] for the capacity errors every mapper words the
//! same way).

use crate::allocation::{name_list, AllocationSource};
use crate::error::{MapError, MapErrorKind};
use crate::jobmap::{JobMap, MappedNode, MappedProc, ObjectRef};
use crate::policy::RankBy;
use crate::request::MapRequest;
use crate::topology::{Resource, Topology};
use std::collections::HashMap;

/// Most processes an app may ask for (guards against a mistyped `-n`
/// exhausting memory).
pub const MAX_PROCS: u32 = 1 << 24;

/// How far a node may be filled (see the table above).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Oversub {
    /// Up to `max_slots`, unlimited if none.
    Allowed,
    /// Up to `max_slots` if the hostfile gives one, else `slots`.
    UpToMax,
    /// Up to `slots`.
    Refused,
}

/// One node while mapping.
#[derive(Clone, Debug)]
pub struct NodeState {
    /// Slots after the `:PE` cap.
    pub slots: u32,
    /// Most processes it may take in this mode (`None`: unlimited).
    pub limit: Option<u32>,
    /// Processes placed so far (all apps).
    pub used: u32,
    /// Its hardware (the request's default topology if the allocation
    /// gave none).
    pub topology: Topology,
}

impl NodeState {
    /// Whether it has a free slot.
    pub fn under_slots(&self) -> bool {
        self.used < self.slots
    }

    /// Whether it may take one more process in this oversubscription mode.
    pub fn under_limit(&self) -> bool {
        self.limit.is_none_or(|l| self.used < l)
    }
}

/// Where one process goes (made by [`Ctx::place`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Allocation index of its node.
    pub node: usize,
    /// The object it was placed on, if any.
    pub object: Option<ObjectRef>,
    /// Processors reserved for it with `:PE=n`.
    pub cpus: Vec<u32>,
}

/// Mapping state of a job.
pub struct Ctx<'a> {
    /// The request.
    pub req: &'a MapRequest,
    /// Every node of the allocation, by allocation index.
    pub nodes: Vec<NodeState>,
    /// The oversubscription mode.
    pub over: Oversub,
    /// Next line of the allocation's sequence for the seq mapper.
    pub seq_cursor: usize,
    /// Next processor per (node, object index) for `:PE`.
    cpu_cursor: HashMap<(usize, u32), u32>,
}

impl<'a> Ctx<'a> {
    fn new(req: &'a MapRequest) -> Ctx<'a> {
        let p = &req.policy;
        let over = match p.oversubscribe {
            Some(true) => Oversub::Allowed,
            Some(false) => Oversub::Refused,
            None if req.allocation.source == AllocationSource::Local => Oversub::Allowed,
            None => Oversub::UpToMax,
        };
        let nodes = req
            .allocation
            .nodes
            .iter()
            .map(|n| {
                let topology = n.topology.unwrap_or(req.default_topology);
                let slots = match p.pe {
                    Some(pe) => n.slots.min(topology.cpus(p.hwtcpus) / pe),
                    None => n.slots,
                };
                let limit = match over {
                    // A node with fewer processors than PE holds no process,
                    // oversubscribed or not.
                    _ if p.pe.is_some_and(|pe| topology.cpus(p.hwtcpus) < pe) => Some(0),
                    Oversub::Allowed => n.max_slots,
                    Oversub::UpToMax => Some(n.max_slots.map_or(slots, |m| m.max(slots))),
                    Oversub::Refused => Some(slots),
                };
                NodeState {
                    slots,
                    limit,
                    used: 0,
                    topology,
                }
            })
            .collect();
        Ctx {
            req,
            nodes,
            over,
            seq_cursor: 0,
            cpu_cursor: HashMap::new(),
        }
    }

    /// Allocation indexes of the nodes app `app` may use, in its order.
    pub fn app_nodes(&self, app: usize) -> Result<Vec<usize>, MapError> {
        let alloc = &self.req.allocation;
        let nodes: Vec<usize> = match &self.req.apps[app].hosts {
            None => (0..alloc.nodes.len()).collect(),
            Some(filter) => {
                let index: HashMap<&str, usize> = alloc
                    .nodes
                    .iter()
                    .enumerate()
                    .map(|(i, n)| (n.name.as_str(), i))
                    .collect();
                filter
                    .nodes
                    .iter()
                    .map(|name| {
                        index.get(name.as_str()).copied().ok_or_else(|| {
                            MapError::new(
                                MapErrorKind::BadRequest,
                                format!(
                                    "{}host {name} is not in the allocation ({})",
                                    self.app_label(app),
                                    alloc.source
                                ),
                            )
                        })
                    })
                    .collect::<Result<_, _>>()?
            }
        };
        if nodes.is_empty() {
            return Err(MapError::new(
                MapErrorKind::BadRequest,
                format!("{}no host to run on", self.app_label(app)),
            ));
        }
        Ok(nodes)
    }

    /// `"app 1: "` in a job of several apps, `""` otherwise.
    pub fn app_label(&self, app: usize) -> String {
        if self.req.apps.len() > 1 {
            format!("app {app}: ")
        } else {
            String::new()
        }
    }

    /// Free slots (not counting oversubscription) on `nodes`.
    pub fn free_slots(&self, nodes: &[usize]) -> u64 {
        nodes
            .iter()
            .map(|&i| u64::from(self.nodes[i].slots.saturating_sub(self.nodes[i].used)))
            .sum()
    }

    /// The app's `-n`, or its default: the slots its own host list gives,
    /// or the free slots of the whole allocation.
    pub fn np_or_slots(&self, app: usize, nodes: &[usize]) -> Result<u32, MapError> {
        if let Some(n) = self.req.apps[app].np {
            return self.check_np(app, n);
        }
        let slots = match &self.req.apps[app].hosts {
            Some(f) => f.slots.iter().map(|&s| u64::from(s)).sum(),
            None => self.free_slots(nodes),
        };
        if slots == 0 {
            return Err(MapError::new(
                MapErrorKind::NotEnoughSlots,
                format!(
                    "{}no free slot to size the job from: give the number of ranks with -n",
                    self.app_label(app)
                ),
            ));
        }
        let n = u32::try_from(slots).unwrap_or(u32::MAX);
        self.check_np(app, n)
    }

    /// Rejects `-n 0` and more than [`MAX_PROCS`].
    pub fn check_np(&self, app: usize, n: u32) -> Result<u32, MapError> {
        if n == 0 {
            return Err(MapError::new(
                MapErrorKind::BadRequest,
                format!(
                    "{}-n 0: an app needs at least one rank",
                    self.app_label(app)
                ),
            ));
        }
        if n > MAX_PROCS {
            return Err(MapError::new(
                MapErrorKind::BadRequest,
                format!(
                    "{}-n {n}: more than the {MAX_PROCS} ranks a job may have",
                    self.app_label(app)
                ),
            ));
        }
        Ok(n)
    }

    /// Where app `app`'s hosts came from: its own hostfile or --host, else
    /// the job's allocation.
    fn source_note(&self, app: usize) -> String {
        let own = self
            .req
            .apps
            .get(app)
            .and_then(|a| a.hosts.as_ref())
            .and_then(|h| h.source.as_ref());
        format!(
            " (hosts from {})",
            own.unwrap_or(&self.req.allocation.source)
        )
    }

    fn pe_note(&self) -> String {
        match self.req.policy.pe {
            Some(pe) => format!(
                "; with PE={pe} a node holds at most its {} divided by {pe}",
                if self.req.policy.hwtcpus {
                    "hardware threads"
                } else {
                    "cores"
                }
            ),
            None => String::new(),
        }
    }

    fn slot_entry(&self, i: usize) -> String {
        let n = &self.nodes[i];
        let name = &self.req.allocation.nodes[i].name;
        let mut text = format!("{name} ({}", n.slots);
        if let Some(limit) = n.limit.filter(|&l| l > n.slots) {
            text.push_str(&format!(", up to {limit} with its max_slots"));
        }
        if n.used > 0 {
            text.push_str(&format!(", {} used by earlier apps", n.used));
        }
        text.push(')');
        text
    }

    fn oversubscribe_advice(&self) -> &'static str {
        if self.over == Oversub::Refused {
            "use --map-by :OVERSUBSCRIBE instead of :NOOVERSUBSCRIBE to run more ranks than slots, up to max_slots"
        } else {
            "use --map-by :OVERSUBSCRIBE to run more ranks than slots, up to max_slots"
        }
    }

    /// Fails unless `n` more processes fit on `nodes`.
    pub fn check_capacity(&self, app: usize, nodes: &[usize], n: u32) -> Result<(), MapError> {
        let room = |limit: &dyn Fn(&NodeState, usize) -> Option<u32>| -> Option<u64> {
            nodes.iter().try_fold(0u64, |acc, &i| {
                let s = &self.nodes[i];
                limit(s, i).map(|l| acc + u64::from(l.saturating_sub(s.used)))
            })
        };
        let fits = room(&|s, _| s.limit).is_none_or(|r| u64::from(n) <= r);
        if fits {
            return Ok(());
        }
        let max_room = room(&|_, i| self.req.allocation.nodes[i].max_slots);
        let label = self.app_label(app);
        if self.over != Oversub::Allowed && max_room.is_none_or(|r| u64::from(n) <= r) {
            let free = self.free_slots(nodes);
            let list = name_list(
                nodes
                    .iter()
                    .map(|&i| self.slot_entry(i))
                    .collect::<Vec<_>>()
                    .iter()
                    .map(String::as_str),
            );
            return Err(MapError::new(
                MapErrorKind::NotEnoughSlots,
                format!(
                    "{label}not enough slots: {n} ranks requested, {free} slots on {list}{}{}; nothing was launched. \
To go on, {}; or give fewer ranks with -n, or more slots (slots=N in a hostfile, --host NAME:N).",
                    self.source_note(app),
                    self.pe_note(),
                    self.oversubscribe_advice()
                ),
            ));
        }
        let total = max_room.unwrap_or(0);
        let entries: Vec<String> = nodes
            .iter()
            .map(|&i| {
                let node = &self.req.allocation.nodes[i];
                format!(
                    "{} (max_slots {})",
                    node.name,
                    node.max_slots.unwrap_or(node.slots)
                )
            })
            .collect();
        Err(MapError::new(
            MapErrorKind::MaxSlotsExhausted,
            format!(
                "{label}all max_slots exhausted: {n} ranks requested, the hosts allow at most {total} more: {}{}; nothing was launched. \
Give fewer ranks with -n, or raise max_slots in the hostfile.",
                name_list(entries.iter().map(String::as_str)),
                self.source_note(app)
            ),
        ))
    }

    /// The error for a mapper (ppr, seq) that must put `wanted` processes
    /// in total on node `i`, which cannot take them.
    pub fn node_full(&self, app: usize, i: usize, wanted: u64, why: &str) -> MapError {
        let node = &self.req.allocation.nodes[i];
        let state = &self.nodes[i];
        let label = self.app_label(app);
        if self.over != Oversub::Allowed && node.max_slots.is_none_or(|m| wanted <= u64::from(m)) {
            MapError::new(
                MapErrorKind::NotEnoughSlots,
                format!(
                    "{label}not enough slots: {why} {wanted} ranks on {}, which has {} slot{}{}{}; nothing was launched. \
To go on, {}; or give fewer ranks with -n.",
                    node.name,
                    state.slots,
                    if state.slots == 1 { "" } else { "s" },
                    self.source_note(app),
                    self.pe_note(),
                    self.oversubscribe_advice()
                ),
            )
        } else {
            MapError::new(
                MapErrorKind::MaxSlotsExhausted,
                format!(
                    "{label}all max_slots exhausted: {why} {wanted} ranks on {}, whose max_slots is {}{}; nothing was launched. \
Give fewer ranks with -n, or raise max_slots in the hostfile.",
                    node.name,
                    node.max_slots.unwrap_or(node.slots),
                    self.source_note(app)
                ),
            )
        }
    }

    /// Places one process on node `i` (on `object`, if any), reserving
    /// `:PE` processors.
    pub fn place(&mut self, i: usize, object: Option<ObjectRef>) -> Placement {
        self.nodes[i].used += 1;
        let cpus = match self.req.policy.pe {
            None => Vec::new(),
            Some(pe) => {
                let topo = self.nodes[i].topology;
                let unit = if self.req.policy.hwtcpus {
                    Resource::Hwthread
                } else {
                    Resource::Core
                };
                let total = topo.count(unit);
                let (lo, hi) = match object {
                    Some(o) => {
                        let n = topo.count(o.kind);
                        let lo = topo.convert(o.kind, o.index, unit);
                        let hi = if o.index + 1 >= n {
                            total
                        } else {
                            topo.convert(o.kind, o.index + 1, unit)
                        };
                        (lo, hi.max(lo + 1))
                    }
                    None => (0, total),
                };
                let width = hi - lo;
                if width < pe {
                    // The object is smaller than PE: take the processors
                    // that follow it too.
                    (0..pe).map(|k| (lo + k) % total).collect()
                } else {
                    let cursor = self
                        .cpu_cursor
                        .entry((i, object.map_or(u32::MAX, |o| o.index)))
                        .or_insert(0);
                    let cpus = (0..pe).map(|k| lo + (*cursor + k) % width).collect();
                    *cursor = (*cursor + pe) % width;
                    cpus
                }
            }
        };
        Placement {
            node: i,
            object,
            cpus,
        }
    }

    /// How many objects of `kind` apart consecutive processes on node `i`
    /// go: 1, or with `:PE=n` enough objects to hold n processors (2 cores
    /// apart with `core:PE=2`).
    fn step(&self, i: usize, kind: Resource) -> u32 {
        let Some(pe) = self.req.policy.pe else {
            return 1;
        };
        let topo = self.nodes[i].topology;
        let cpus = u64::from(topo.cpus(self.req.policy.hwtcpus));
        let objects = u64::from(topo.count(kind));
        (u64::from(pe) * objects).div_ceil(cpus).clamp(1, objects) as u32
    }

    /// Places processes up to `n` on `nodes`, one node at a time: first up
    /// to each node's slots; then, if processes remain, in rounds where
    /// round r lets a node hold r × its slots (at least r), capped at its
    /// limit. `object` gives the object kind processes cycle over inside a
    /// node (by-object policies).
    pub fn fill(&mut self, nodes: &[usize], n: u32, object: Option<Resource>) -> Vec<Placement> {
        let mut out = Vec::with_capacity(n as usize);
        let obj = |ctx: &Ctx<'_>, i: usize| {
            object.map(|kind| {
                let count = u64::from(ctx.nodes[i].topology.count(kind));
                let at = u64::from(ctx.nodes[i].used) * u64::from(ctx.step(i, kind));
                ObjectRef {
                    kind,
                    index: (at % count) as u32,
                }
            })
        };
        for &i in nodes {
            while out.len() < n as usize && self.nodes[i].under_slots() {
                let o = obj(self, i);
                out.push(self.place(i, o));
            }
        }
        let mut active: Vec<usize> = nodes
            .iter()
            .copied()
            .filter(|&i| self.nodes[i].under_limit())
            .collect();
        let mut round: u64 = 2;
        while out.len() < n as usize && !active.is_empty() {
            for &i in &active {
                let s = &self.nodes[i];
                let cap = round * u64::from(s.slots.max(1));
                let cap = s.limit.map_or(cap, |l| cap.min(u64::from(l)));
                while out.len() < n as usize && u64::from(self.nodes[i].used) < cap {
                    let o = obj(self, i);
                    out.push(self.place(i, o));
                }
            }
            active.retain(|&i| self.nodes[i].under_limit());
            round += 1;
        }
        out
    }

    /// Places processes up to `n` on `nodes`, going round the nodes and
    /// giving each, per visit, one process per object of kind `object`
    /// (objects `Ctx::step` apart), or a single process: first skipping nodes
    /// whose slots are used up, then, if processes remain, nodes at their
    /// limit.
    pub fn deal(&mut self, nodes: &[usize], n: u32, object: Option<Resource>) -> Vec<Placement> {
        let mut out = Vec::with_capacity(n as usize);
        for phase in [true, false] {
            let open = |ctx: &Ctx<'_>, i: usize| {
                if phase {
                    ctx.nodes[i].under_slots()
                } else {
                    ctx.nodes[i].under_limit()
                }
            };
            let mut active: Vec<usize> = nodes.iter().copied().filter(|&i| open(self, i)).collect();
            while out.len() < n as usize && !active.is_empty() {
                for &i in &active {
                    let (count, step) = object.map_or((1, 1), |k| {
                        (self.nodes[i].topology.count(k), self.step(i, k))
                    });
                    for index in (0..count).step_by(step as usize) {
                        if out.len() >= n as usize || !open(self, i) {
                            break;
                        }
                        let o = object.map(|kind| ObjectRef { kind, index });
                        out.push(self.place(i, o));
                    }
                }
                active.retain(|&i| open(self, i));
            }
        }
        out
    }
}

/// The rank order of an app's placements: `order[r]` is the placement
/// that gets app rank `r`.
fn rank_order(
    ctx: &Ctx<'_>,
    nodes: &[usize],
    placed: &[Placement],
    rank_by: Option<RankBy>,
) -> Vec<usize> {
    let mut pos = vec![usize::MAX; ctx.nodes.len()];
    for (k, &i) in nodes.iter().enumerate() {
        pos[i] = k;
    }
    let mut order: Vec<usize> = (0..placed.len()).collect();
    match rank_by {
        None => {}
        Some(RankBy::Slot) => order.sort_by_key(|&p| pos[placed[p].node]),
        Some(RankBy::Object(kind)) => order.sort_by_key(|&p| {
            let pl = &placed[p];
            let key = pl.object.map_or(0, |o| {
                ctx.nodes[pl.node].topology.convert(o.kind, o.index, kind)
            });
            (pos[pl.node], key)
        }),
        Some(RankBy::Node) => {
            let mut buckets: Vec<std::collections::VecDeque<usize>> =
                vec![Default::default(); nodes.len()];
            for (p, pl) in placed.iter().enumerate() {
                buckets[pos[pl.node]].push_back(p);
            }
            order.clear();
            let mut live: Vec<usize> = (0..buckets.len())
                .filter(|&b| !buckets[b].is_empty())
                .collect();
            while !live.is_empty() {
                for &b in &live {
                    if let Some(p) = buckets[b].pop_front() {
                        order.push(p);
                    }
                }
                live.retain(|&b| !buckets[b].is_empty());
            }
        }
    }
    order
}

/// Maps `req` with `place_app`, which places one app's processes (in
/// placement order) on the given nodes (the app's, from
/// [`Ctx::app_nodes`]); ranks (`--rank-by`), local ranks and the job map
/// (made by `mapper`) follow. Checks first that the job has an app and a
/// host, and that some host can hold `:PE=n`.
pub fn run(
    req: &MapRequest,
    mapper: &str,
    mut place_app: impl FnMut(&mut Ctx<'_>, usize, &[usize]) -> Result<Vec<Placement>, MapError>,
) -> Result<JobMap, MapError> {
    if req.apps.is_empty() {
        return Err(MapError::new(
            MapErrorKind::BadRequest,
            "the job has no app",
        ));
    }
    if req.allocation.nodes.is_empty() {
        return Err(MapError::new(
            MapErrorKind::BadRequest,
            format!("{} has no host", req.allocation.source),
        ));
    }
    if let Some(pe) = req.policy.pe {
        let unit = if req.policy.hwtcpus {
            "hardware threads"
        } else {
            "cores"
        };
        let fits = |n: &crate::allocation::NodeSpec| {
            n.topology
                .unwrap_or(req.default_topology)
                .cpus(req.policy.hwtcpus)
                >= pe
        };
        if !req.allocation.nodes.iter().any(fits) {
            let largest = req
                .allocation
                .nodes
                .iter()
                .map(|n| {
                    n.topology
                        .unwrap_or(req.default_topology)
                        .cpus(req.policy.hwtcpus)
                })
                .max()
                .unwrap_or(0);
            return Err(MapError::new(
                MapErrorKind::BadRequest,
                format!(
                    "PE={pe} asks for {pe} {unit} per process, but no host of the job has that many (the largest has {largest}); give PE at most {largest}"
                ),
            ));
        }
    }
    let mut ctx = Ctx::new(req);
    let mut per_node: Vec<Vec<MappedProc>> = vec![Vec::new(); req.allocation.nodes.len()];
    let mut app_sizes = Vec::with_capacity(req.apps.len());
    let mut next_rank: u32 = 0;
    for app in 0..req.apps.len() {
        let nodes = ctx.app_nodes(app)?;
        let placed = place_app(&mut ctx, app, &nodes)?;
        let size = u32::try_from(placed.len())
            .ok()
            .and_then(|s| next_rank.checked_add(s))
            .ok_or_else(|| {
                MapError::new(MapErrorKind::BadRequest, "more ranks than a job can have")
            })?;
        let order = rank_order(&ctx, &nodes, &placed, req.rank_by);
        let mut placed: Vec<Option<Placement>> = placed.into_iter().map(Some).collect();
        for (app_rank, p) in order.into_iter().enumerate() {
            let Placement { node, object, cpus } =
                placed[p].take().unwrap_or_else(|| unreachable!());
            per_node[node].push(MappedProc {
                rank: next_rank + app_rank as u32,
                app: app as u32,
                app_rank: app_rank as u32,
                local_rank: 0,
                node_rank: 0,
                object,
                cpus,
                binding: None,
            });
        }
        app_sizes.push(size - next_rank);
        next_rank = size;
    }
    let nodes = per_node
        .into_iter()
        .enumerate()
        .filter(|(_, procs)| !procs.is_empty())
        .map(|(i, mut procs)| {
            procs.sort_by_key(|p| p.rank);
            for (k, p) in procs.iter_mut().enumerate() {
                p.local_rank = k as u32;
                p.node_rank = k as u32;
            }
            let spec = &req.allocation.nodes[i];
            MappedNode {
                name: spec.name.clone(),
                slots: spec.slots,
                max_slots: spec.max_slots,
                oversubscribed: procs.len() as u64 > u64::from(spec.slots),
                procs,
            }
        })
        .collect();
    Ok(JobMap {
        nodes,
        mapper: mapper.to_string(),
        policy: req.policy.clone(),
        rank_by: req.rank_by,
        app_sizes,
    })
}
