//! The conformance suite's jobs: the standard allocations, the requests
//! made over them, and what each must answer ([`Expect`]), predicted from
//! the oversubscription rules of [`crate::base`] and the subject's
//! [`Capacity`].

use crate::allocation::{Allocation, AllocationSource, NodeSpec};
use crate::error::MapErrorKind;
use crate::policy::MapPolicy;
use crate::request::{AppRequest, MapRequest};
use crate::topology::{Resource, Topology};

/// Hardware assumed for hosts of a standard allocation whose topology is
/// not given: 1 package, 1 NUMA domain, 2 cores, 4 hardware threads.
pub const DEFAULT_TOPOLOGY: Topology = Topology::new(1, 1, 2, 4);

/// How many processes a mapper places for a policy, and where: what the
/// suite predicts each answer from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capacity {
    /// Up to the hosts' slots in all (then, where oversubscription is
    /// allowed, more, up to each host's limit), every slot used before any
    /// host is oversubscribed, each app starting at the first host with a
    /// free slot; `-n` defaults to the free slots, and more
    /// processes than the hosts may take is a
    /// [`NotEnoughSlots`](MapErrorKind::NotEnoughSlots) or
    /// [`MaxSlotsExhausted`](MapErrorKind::MaxSlotsExhausted) error
    /// (round_robin's policies, the `reverse` fixture).
    Slots,
    /// One process per line of the allocation's host sequence, in order
    /// (a host listed k times gets k processes), each app going on where
    /// the previous one stopped; `-n` defaults to the
    /// number of lines, and more processes than lines is a
    /// [`SeqTooFew`](MapErrorKind::SeqTooFew) error (seq).
    HostLines,
    /// `count` processes on each `resource` of every host, host by host,
    /// each app starting again at the first host; `-n` defaults to all of
    /// them, and more is a [`PprTooFew`](MapErrorKind::PprTooFew) error
    /// (ppr).
    PerResource {
        /// Processes per resource.
        count: u32,
        /// The resource.
        resource: Resource,
    },
}

/// What `:OVERSUBSCRIBE` says in a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Nothing said: the explicit host list allows up to `max_slots`.
    Unsaid,
    /// `:OVERSUBSCRIBE`.
    Allowed,
    /// `:NOOVERSUBSCRIBE`.
    Refused,
}

impl Mode {
    /// Every mode.
    pub const ALL: [Mode; 3] = [Mode::Unsaid, Mode::Allowed, Mode::Refused];

    /// The policy's `oversubscribe` field.
    pub fn value(self) -> Option<bool> {
        match self {
            Mode::Unsaid => None,
            Mode::Allowed => Some(true),
            Mode::Refused => Some(false),
        }
    }

    /// Most processes `node` may take (`None`: unlimited), by the table of
    /// [`crate::base`].
    pub fn limit(self, node: &NodeSpec) -> Option<u64> {
        let slots = u64::from(node.slots);
        let max = node.max_slots.map(u64::from);
        match self {
            Mode::Allowed => max,
            Mode::Unsaid => Some(max.map_or(slots, |m| m.max(slots))),
            Mode::Refused => Some(slots),
        }
    }
}

/// One standard allocation.
#[derive(Clone, Debug)]
pub struct Layout {
    /// What it is, without its hosts.
    pub name: String,
    /// What it is with its hosts, for messages.
    pub label: String,
    /// Its hosts.
    pub hosts: Vec<NodeSpec>,
}

fn host(name: &str, slots: u32, max_slots: Option<u32>, topology: Option<Topology>) -> NodeSpec {
    NodeSpec {
        name: name.to_string(),
        slots,
        max_slots,
        slots_given: true,
        topology,
    }
}

impl Layout {
    fn new(label: &str, hosts: Vec<NodeSpec>) -> Layout {
        let list: Vec<String> = hosts
            .iter()
            .map(|h| {
                let mut s = format!("{} slots={}", h.name, h.slots);
                if let Some(m) = h.max_slots {
                    s.push_str(&format!(" max_slots={m}"));
                }
                if let Some(t) = h.topology {
                    s.push_str(&format!(
                        " ({} packages, {} NUMA, {} cores, {} hwthreads)",
                        t.packages, t.numas, t.cores, t.hwthreads
                    ));
                }
                s
            })
            .collect();
        Layout {
            name: label.to_string(),
            label: format!("{label} [{}]", list.join(", ")),
            hosts,
        }
    }

    /// Sum of the hosts' slots.
    pub fn slots(&self) -> u64 {
        self.hosts.iter().map(|h| u64::from(h.slots)).sum()
    }

    /// The allocation, as a hostfile listing each host once per slot
    /// would give it: its sequence goes round the hosts, one line per host
    /// with a slot left per round (`a b c b c b` for 1, 3 and 2 slots).
    pub fn allocation(&self) -> Allocation {
        let mut sequence = Vec::new();
        let most = self.hosts.iter().map(|h| h.slots).max().unwrap_or(0);
        for round in 0..most {
            for h in self.hosts.iter().filter(|h| h.slots > round) {
                sequence.push(h.name.clone());
            }
        }
        Allocation {
            nodes: self.hosts.clone(),
            source: AllocationSource::Hostfile {
                path: "conformance-hosts".into(),
            },
            sequence,
        }
    }
}

/// The standard allocations: one host with one slot, one host with four,
/// three hosts of uneven slots, hosts with topology (one given, one
/// assumed: [`DEFAULT_TOPOLOGY`]), and hosts with `max_slots`.
pub fn standard_layouts() -> Vec<Layout> {
    vec![
        Layout::new("one host with one slot", vec![host("h0", 1, None, None)]),
        Layout::new("one host with four slots", vec![host("h0", 4, None, None)]),
        Layout::new(
            "three hosts of uneven slots",
            vec![
                host("a", 1, None, None),
                host("b", 3, None, None),
                host("c", 2, None, None),
            ],
        ),
        Layout::new(
            "hosts with topology",
            vec![
                host("t0", 4, None, Some(Topology::new(2, 2, 4, 8))),
                host("t1", 2, None, None),
            ],
        ),
        Layout::new(
            "hosts with max_slots",
            vec![host("m0", 2, Some(4), None), host("m1", 1, Some(1), None)],
        ),
    ]
}

/// A one-app request over `allocation`.
pub fn request(allocation: Allocation, policy: MapPolicy, np: Option<u32>) -> MapRequest {
    MapRequest {
        allocation,
        apps: vec![AppRequest { np, hosts: None }],
        policy,
        rank_by: None,
        default_topology: DEFAULT_TOPOLOGY,
    }
}

/// What a request must answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expect {
    /// A map; with `Some`, exactly this many processes on each allocation
    /// host (by index).
    Maps(Option<Vec<u64>>),
    /// An error of this kind.
    Fails(MapErrorKind),
}

/// The allocation index of every process a walking mapper (`HostLines`,
/// `PerResource`) would place, in order, before `-n` cuts it.
pub fn walk(capacity: Capacity, allocation: &Allocation, default: Topology) -> Vec<usize> {
    match capacity {
        Capacity::Slots => Vec::new(),
        Capacity::HostLines => allocation
            .sequence
            .iter()
            .filter_map(|name| allocation.position(name))
            .collect(),
        Capacity::PerResource { count, resource } => allocation
            .nodes
            .iter()
            .enumerate()
            .flat_map(|(i, n)| {
                let share = count as usize * n.topology.unwrap_or(default).count(resource) as usize;
                std::iter::repeat_n(i, share)
            })
            .collect(),
    }
}

/// The processes `request` asks for (`-n`, or its default) under
/// `capacity`.
pub fn size(capacity: Capacity, request: &MapRequest) -> u64 {
    let np = request.apps[0].np.map(u64::from);
    match capacity {
        Capacity::Slots => np.unwrap_or(request.allocation.total_slots()),
        _ => {
            np.unwrap_or(walk(capacity, &request.allocation, request.default_topology).len() as u64)
        }
    }
}

/// What a one-app `request` over a standard allocation must answer.
pub fn predict(capacity: Capacity, request: &MapRequest, mode: Mode) -> Expect {
    let nodes = &request.allocation.nodes;
    let n = size(capacity, request);
    if capacity == Capacity::Slots {
        let room: Option<u64> = nodes.iter().map(|h| mode.limit(h)).sum();
        if room.is_none_or(|r| n <= r) {
            return Expect::Maps(None);
        }
        let max_room: Option<u64> = nodes.iter().map(|h| h.max_slots.map(u64::from)).sum();
        return Expect::Fails(
            if mode != Mode::Allowed && max_room.is_none_or(|r| n <= r) {
                MapErrorKind::NotEnoughSlots
            } else {
                MapErrorKind::MaxSlotsExhausted
            },
        );
    }
    let walk = walk(capacity, &request.allocation, request.default_topology);
    if n == 0 || n > walk.len() as u64 {
        return Expect::Fails(match capacity {
            Capacity::HostLines => MapErrorKind::SeqTooFew,
            _ => MapErrorKind::PprTooFew,
        });
    }
    let walk = &walk[..n as usize];
    let mut wanted = vec![0u64; nodes.len()];
    for &i in walk {
        wanted[i] += 1;
    }
    let mut placed = vec![0u64; nodes.len()];
    for &i in walk {
        placed[i] += 1;
        if mode.limit(&nodes[i]).is_some_and(|l| placed[i] > l) {
            let within_max = nodes[i].max_slots.is_none_or(|m| wanted[i] <= u64::from(m));
            return Expect::Fails(if mode != Mode::Allowed && within_max {
                MapErrorKind::NotEnoughSlots
            } else {
                MapErrorKind::MaxSlotsExhausted
            });
        }
    }
    Expect::Maps(Some(wanted))
}

/// Processes each host of `layout` gets when the job fills it exactly
/// under `capacity` (its slots, or its lines, or its share of resources).
pub fn exact_demand(capacity: Capacity, layout: &Layout) -> Vec<u64> {
    match capacity {
        Capacity::Slots | Capacity::HostLines => {
            layout.hosts.iter().map(|h| u64::from(h.slots)).collect()
        }
        Capacity::PerResource { .. } => {
            let allocation = layout.allocation();
            let mut d = vec![0u64; layout.hosts.len()];
            for i in walk(capacity, &allocation, DEFAULT_TOPOLOGY) {
                d[i] += 1;
            }
            d
        }
    }
}

/// The same hosts with exactly the slots the exact job needs, but one
/// fewer on the first host that needs two or more, so that the exact job
/// oversubscribes it; `None` when no host needs two, or the layout has
/// `max_slots` (a limit below the slots would not be a real hostfile).
pub fn tight(capacity: Capacity, layout: &Layout) -> Option<Layout> {
    if layout.hosts.iter().any(|h| h.max_slots.is_some()) {
        return None;
    }
    let demand = exact_demand(capacity, layout);
    let first = demand.iter().position(|&d| d >= 2)?;
    let mut hosts = layout.hosts.clone();
    for (i, h) in hosts.iter_mut().enumerate() {
        let want = demand[i].max(1) - u64::from(i == first);
        h.slots = u32::try_from(want).unwrap_or(u32::MAX);
    }
    Some(Layout::new(
        &format!("{}, one slot short of the exact job", layout.name),
        hosts,
    ))
}

/// Processes per host of `allocation` (by index) when two apps of one
/// process each are mapped with oversubscription allowed.
pub fn two_apps_of_one(capacity: Capacity, allocation: &Allocation, default: Topology) -> Vec<u64> {
    let mut counts = vec![0u64; allocation.nodes.len()];
    match capacity {
        Capacity::Slots => {
            for _ in 0..2 {
                let free = (0..counts.len())
                    .find(|&i| counts[i] < u64::from(allocation.nodes[i].slots))
                    .unwrap_or(0);
                counts[free] += 1;
            }
        }
        Capacity::HostLines => {
            for i in walk(capacity, allocation, default).into_iter().take(2) {
                counts[i] += 1;
            }
        }
        Capacity::PerResource { .. } => {
            if let Some(&first) = walk(capacity, allocation, default).first() {
                counts[first] += 2;
            }
        }
    }
    counts
}
