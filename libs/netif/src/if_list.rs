//! An include list and an exclude list of network interfaces (the tcp btl's
//! `btl_tcp_if_include` / `btl_tcp_if_exclude`): parsing them and choosing
//! the interfaces a component uses (reference 001 §4, §5, §7, §13, §14;
//! see docs/references.md). The caller names its two parameters
//! ([`ParamNames`]); every message uses those names.
//!
//! # The lists
//!
//! Each parameter is a comma-separated list (spaces around items are
//! ignored, empty items too). An item is one of:
//!
//! - an interface **name**, `eth0`, or an alias label, `eth0:1`;
//! - a name **pattern** with `*` (any run of characters) and `?` (one
//!   character), `eth*`;
//! - a **network** in CIDR notation, `192.168.1.0/24` or `fd00:1::/64`;
//! - a single **address**, `10.0.0.5` (an oxmpi addition, see below).
//!
//! Setting both parameters is an error ([`IfListError::BothSet`]); Open
//! MPI prints a message and silently disables the tcp BTL instead.
//!
//! # Matching, and where it differs from Open MPI
//!
//! - **Networks match exactly** (reference 001 §7: "You must specify the
//!   CIDR notation for a given network precisely ... if you have two IP
//!   networks 10.10.0.0/24 and 10.10.1.0/24, Open MPI will not recognize
//!   either of them if you specify 10.10.0.0/16"). `192.168.0.0/16` matches
//!   an interface whose own network is `192.168.0.0/16` — not an interface
//!   on `192.168.1.0/24`, although its address lies inside. When a network
//!   item matches nothing but is related to an interface's network (one
//!   inside the other), the returned [`Notice::Unmatched`] names that
//!   network so the user can write it instead. Both families work (Open
//!   MPI's lists take IPv4 networks only).
//! - **Names match exactly** in both lists. Open MPI matches exclude names
//!   as prefixes (`eth1` also leaves out `eth10`–`eth19`, `lo` leaves out
//!   `lowpan0`); here a prefix needs a pattern, `eth*`, and an exclude item
//!   that matches nothing but is a prefix of existing names gets a warning
//!   that says so.
//! - **Excluding a device excludes its aliases**: the exclude item `eth0`
//!   also leaves out `eth0:1` (the same device: using the alias would use
//!   the device the user wanted to avoid). An include item selects the
//!   names it matches only: `eth0` selects the addresses labelled `eth0`,
//!   not the alias `eth0:1`.
//! - **Loopback is left out unless an include item selects it** (reference
//!   001 §4, §11: "The lo0 interfaces are excluded"). Open MPI gets this
//!   from the default value of `btl_tcp_if_exclude` (`127.0.0.1/8,sppp`),
//!   so setting the exclude list brings loopback back (the reference's
//!   example must list `lo` again; ompi#14029). Here the exclude list
//!   defaults to empty and loopback stays out whatever it says. (`sppp`, a
//!   BSD synchronous-PPP device, has no Linux counterpart and is not
//!   special.)
//! - **Down interfaces are never used** (reference 001 §7: Open MPI uses
//!   "all 'up' IP networks"); one that an include item names gets a
//!   warning.
//! - **Items that match nothing** are reported as [`Notice`]s, never
//!   errors: a warning for the include list (Open MPI: fatal for a name, a
//!   warning for a network), information for the exclude list unless a
//!   hint applies. If nothing at all is usable, [`Notice::NothingUsable`]
//!   says so; whether that ends the component is the caller's decision.
//!
//! # Devices with several addresses, aliases (reference 001 §13, §14)
//!
//! The reference says Open MPI cannot use a device with more than one IP
//! address, nor tell a virtual interface (`eth0:0`) from its device, and
//! that the include and exclude lists do not help. oxmpi uses **one
//! address per device**, chosen among the addresses that passed the lists:
//!
//! 1. IPv4 addresses come first, then IPv6 addresses other than link-local,
//!    then (only when an include item selects them) IPv6 link-local ones.
//! 2. If exactly one address of the first kind present is selected, it is
//!    used and the device's other addresses are skipped
//!    ([`SkipReason::OtherAddressUsed`]); a device's IPv4 address plus its
//!    automatic `fe80::` address is the common case.
//! 3. If several are, the device is **refused**: none of its addresses is
//!    used ([`SkipReason::SeveralAddresses`]) and
//!    [`Notice::SeveralAddresses`] tells the user to pick one — with the
//!    lists, which here apply per address and per alias label, so
//!    `btl_tcp_if_exclude=eth0:1` or `btl_tcp_if_include=10.10.0.3` does
//!    resolve it (unlike in Open MPI).
//!
//! IPv6 link-local addresses (`fe80::/10`) are left out unless an include
//! item selects them: every IPv6-enabled device has one, they reach only
//! their own link, and connecting to one needs the scope of the right
//! device.
//!
//! The weights and the pairing of the selected interfaces with a peer's
//! are in [`reachability`](crate::reachability) and
//! [`matching`](crate::matching).

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

use crate::interfaces::{device_of, Cidr, CidrError, Interface};

/// The names of the caller's two parameters, for messages (the tcp btl
/// passes `btl_tcp_if_include` and `btl_tcp_if_exclude`); this crate knows
/// no parameter name of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamNames {
    /// The include parameter's name.
    pub include: &'static str,
    /// The exclude parameter's name.
    pub exclude: &'static str,
}

/// One item of an include or exclude list.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum IfSpec {
    /// An interface name or alias label, matched exactly (`eth0`,
    /// `eth0:1`). In the exclude list a name without `:` also matches the
    /// device's aliases.
    Name(String),
    /// A name pattern: `*` matches any run of characters, `?` one
    /// character (`eth*`). In the exclude list it also matches an alias
    /// whose device name matches.
    Pattern(String),
    /// A network, matched exactly against each interface's own network
    /// (address and prefix length).
    Network(Cidr),
    /// One address, matched against each interface's address.
    Address(IpAddr),
}

impl IfSpec {
    /// Parses one trimmed, non-empty item of `param`.
    fn parse(
        param: &'static str,
        exclude_param: &'static str,
        item: &str,
    ) -> Result<IfSpec, IfListError> {
        let bad = |problem| IfListError::BadItem {
            param,
            item: item.to_owned(),
            problem,
        };
        if item.starts_with('^') {
            return Err(bad(ItemProblem::Caret { exclude_param }));
        }
        if item.chars().any(char::is_whitespace) {
            return Err(bad(ItemProblem::Whitespace));
        }
        if let Some(c) = item.chars().find(|c| c.is_control()) {
            return Err(bad(ItemProblem::ControlChar(c)));
        }
        if item.contains('/') {
            return Cidr::parse(item)
                .map(IfSpec::Network)
                .map_err(|e| bad(ItemProblem::Network(e)));
        }
        if let Ok(addr) = item.parse::<IpAddr>() {
            return Ok(IfSpec::Address(addr));
        }
        if item.contains(['*', '?']) {
            return Ok(IfSpec::Pattern(item.to_owned()));
        }
        Ok(IfSpec::Name(item.to_owned()))
    }

    /// Whether this item, in a list of `kind`, matches `iface`.
    pub fn matches(&self, kind: ListKind, iface: &Interface) -> bool {
        let whole_device = kind == ListKind::Exclude;
        match self {
            IfSpec::Name(name) => {
                iface.name == *name
                    || (whole_device && !name.contains(':') && iface.device() == name)
            }
            IfSpec::Pattern(pattern) => {
                glob_match(pattern, &iface.name)
                    || (whole_device && glob_match(pattern, iface.device()))
            }
            IfSpec::Network(net) => iface.network() == *net,
            IfSpec::Address(addr) => iface.addr == *addr,
        }
    }
}

impl fmt::Display for IfSpec {
    /// The item as it would be written in the list.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IfSpec::Name(s) | IfSpec::Pattern(s) => f.write_str(s),
            IfSpec::Network(net) => write!(f, "{net}"),
            IfSpec::Address(addr) => write!(f, "{addr}"),
        }
    }
}

/// Which list an item comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ListKind {
    /// The include list: only what the list names.
    Include,
    /// The exclude list: everything but what the list names.
    Exclude,
}

/// What the two parameters asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IfMode {
    /// Neither list is set: every up interface that is not loopback (and
    /// not IPv6 link-local).
    Default,
    /// Only the interfaces the items match (loopback and link-local
    /// included when matched). An empty list selects nothing; parsing
    /// never produces one.
    Include(Vec<IfSpec>),
    /// Every up, non-loopback interface except those the items match.
    Exclude(Vec<IfSpec>),
}

/// The parsed include/exclude setting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IfSelection {
    params: ParamNames,
    mode: IfMode,
}

impl IfSelection {
    /// Parses the values of the include and exclude parameters `params`
    /// names (both default to the empty string, which means "not set"; a
    /// value of only commas and spaces counts as empty). Messages name the
    /// parameters by `params`.
    ///
    /// # Errors
    ///
    /// - [`IfListError::BothSet`] when both lists have items;
    /// - [`IfListError::BadItem`] for an item that is neither a name, a
    ///   pattern, an address nor a network (`10.0.0.0/33`, `192.168.1.5/24`
    ///   with host bits set, `eth0 eth1` without a comma, `^eth0`).
    pub fn parse(
        params: ParamNames,
        include: &str,
        exclude: &str,
    ) -> Result<IfSelection, IfListError> {
        let inc = parse_list(params.include, params.exclude, include)?;
        let exc = parse_list(params.exclude, params.exclude, exclude)?;
        let mode = match (inc.is_empty(), exc.is_empty()) {
            (true, true) => IfMode::Default,
            (false, true) => IfMode::Include(inc),
            (true, false) => IfMode::Exclude(exc),
            (false, false) => {
                return Err(IfListError::BothSet {
                    params,
                    include: include.trim().to_owned(),
                    exclude: exclude.trim().to_owned(),
                })
            }
        };
        Ok(IfSelection { params, mode })
    }

    /// What was asked for.
    pub fn mode(&self) -> &IfMode {
        &self.mode
    }

    /// The parameter names used in messages.
    pub fn params(&self) -> ParamNames {
        self.params
    }

    /// Decides, for every entry of `interfaces` (one per address, as
    /// enumerated on this host), whether the component uses it and why, and
    /// collects the [`Notice`]s worth telling the user. The decisions are
    /// in the order of `interfaces`; the rules are in the
    /// [module documentation](self).
    pub fn select(&self, interfaces: &[Interface]) -> Selection {
        let params = self.params;
        let mut verdicts: Vec<Verdict> = Vec::with_capacity(interfaces.len());
        let mut notices = Vec::new();
        let (kind, items): (Option<ListKind>, &[IfSpec]) = match &self.mode {
            IfMode::Default => (None, &[]),
            IfMode::Include(items) => (Some(ListKind::Include), items),
            IfMode::Exclude(items) => (Some(ListKind::Exclude), items),
        };
        let mut item_matched = vec![false; items.len()];

        // 1. The lists, up, loopback, link-local: per address.
        for (pos, iface) in interfaces.iter().enumerate() {
            let first_match = kind.and_then(|k| {
                let mut found = None;
                for (i, item) in items.iter().enumerate() {
                    if item.matches(k, iface) {
                        item_matched[i] = true;
                        found.get_or_insert(i);
                    }
                }
                found
            });
            let duplicate = interfaces[..pos]
                .iter()
                .any(|o| o.index == iface.index && o.addr == iface.addr);
            let verdict = match (kind, first_match) {
                _ if duplicate => Verdict::Skip(SkipReason::Duplicate),
                (Some(ListKind::Include), None) => Verdict::Skip(SkipReason::NotIncluded {
                    param: params.include,
                }),
                (Some(ListKind::Include), Some(i)) if !iface.up => {
                    notices.push(Notice::IncludedButDown {
                        param: params.include,
                        item: items[i].clone(),
                        interface: iface.to_string(),
                    });
                    Verdict::Skip(SkipReason::Down)
                }
                (Some(ListKind::Include), Some(i)) => Verdict::Use(UseReason::Included {
                    param: params.include,
                    item: items[i].clone(),
                }),
                (Some(ListKind::Exclude), Some(i)) => Verdict::Skip(SkipReason::Excluded {
                    param: params.exclude,
                    item: items[i].clone(),
                }),
                _ if !iface.up => Verdict::Skip(SkipReason::Down),
                _ if iface.is_loopback() => Verdict::Skip(SkipReason::Loopback {
                    param: params.include,
                }),
                _ if iface.is_ipv6_link_local() => Verdict::Skip(SkipReason::Ipv6LinkLocal {
                    param: params.include,
                }),
                (Some(ListKind::Exclude), None) => Verdict::Use(UseReason::NotExcluded {
                    param: params.exclude,
                }),
                (None, _) => Verdict::Use(UseReason::Default),
            };
            verdicts.push(verdict);
        }

        // 2. One address per device.
        one_address_per_device(interfaces, &mut verdicts, params, kind, &mut notices);

        // 3. Items that matched nothing.
        if let Some(kind) = kind {
            for (item, _) in items.iter().zip(&item_matched).filter(|(_, m)| !**m) {
                notices.push(Notice::Unmatched {
                    param: match kind {
                        ListKind::Include => params.include,
                        ListKind::Exclude => params.exclude,
                    },
                    kind,
                    item: item.clone(),
                    hint: hint_for(item, interfaces),
                });
            }
        }

        // 4. Host-local bridges used by default (reference 001 §7).
        if kind != Some(ListKind::Include) {
            for (iface, verdict) in interfaces.iter().zip(&verdicts) {
                if verdict.is_use() && looks_host_local(iface.device()) {
                    notices.push(Notice::HostLocalDevice {
                        param: params.exclude,
                        interface: iface.to_string(),
                        device: iface.device().to_owned(),
                    });
                }
            }
        }

        // 5. Nothing left.
        if !verdicts.iter().any(Verdict::is_use) {
            notices.push(Notice::NothingUsable {
                params,
                mode: kind,
                count: interfaces.len(),
            });
        }

        Selection {
            decisions: interfaces
                .iter()
                .cloned()
                .zip(verdicts)
                .map(|(interface, verdict)| Decision { interface, verdict })
                .collect(),
            notices,
        }
    }
}

/// Rule 2 and 3 of the module documentation: among the addresses of one
/// device (same kernel index) still to be used, keep the single best one,
/// or none when several tie (with a [`Notice::SeveralAddresses`]).
fn one_address_per_device(
    interfaces: &[Interface],
    verdicts: &mut [Verdict],
    params: ParamNames,
    kind: Option<ListKind>,
    notices: &mut Vec<Notice>,
) {
    let mut devices: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (pos, verdict) in verdicts.iter().enumerate() {
        if verdict.is_use() {
            devices.entry(interfaces[pos].index).or_default().push(pos);
        }
    }
    for positions in devices.values() {
        let Some(best) = positions
            .iter()
            .map(|&p| address_rank(&interfaces[p]))
            .min()
        else {
            continue;
        };
        let chosen: Vec<usize> = positions
            .iter()
            .copied()
            .filter(|&p| address_rank(&interfaces[p]) == best)
            .collect();
        if let [one] = chosen[..] {
            for &p in positions {
                if p != one {
                    verdicts[p] = Verdict::Skip(SkipReason::OtherAddressUsed {
                        used: interfaces[one].to_string(),
                    });
                }
            }
        } else {
            let addresses: Vec<String> =
                chosen.iter().map(|&p| interfaces[p].to_string()).collect();
            for &p in positions {
                verdicts[p] = Verdict::Skip(SkipReason::SeveralAddresses {
                    addresses: addresses.clone(),
                });
            }
            let first = &interfaces[chosen[0]];
            notices.push(Notice::SeveralAddresses {
                params,
                mode: kind,
                device: first.device().to_owned(),
                index: first.index,
                addresses: chosen.iter().map(|&p| interfaces[p].clone()).collect(),
            });
        }
    }
}

/// The preference among a device's addresses: IPv4, then IPv6 other than
/// link-local, then IPv6 link-local.
fn address_rank(iface: &Interface) -> u8 {
    match iface.addr {
        IpAddr::V4(_) => 0,
        IpAddr::V6(_) if !iface.is_ipv6_link_local() => 1,
        IpAddr::V6(_) => 2,
    }
}

/// Device names of the usual host-local virtual bridges (libvirt, Docker,
/// LXC/LXD, Podman, CNI, VirtualBox, VMware): reference 001 §7's `virbr0`
/// and the notes' `docker0` cases.
const HOST_LOCAL_PATTERNS: &[&str] = &[
    "virbr*", "docker*", "br-*", "veth*", "lxcbr*", "lxdbr*", "podman*", "cni*", "vboxnet*",
    "vmnet*",
];

fn looks_host_local(device: &str) -> bool {
    HOST_LOCAL_PATTERNS.iter().any(|p| glob_match(p, device))
}

/// Splits a comma list into items.
fn parse_list(
    param: &'static str,
    exclude_param: &'static str,
    text: &str,
) -> Result<Vec<IfSpec>, IfListError> {
    let mut items: Vec<IfSpec> = Vec::new();
    for raw in text.split(',') {
        let item = raw.trim();
        if item.is_empty() {
            continue;
        }
        let spec = IfSpec::parse(param, exclude_param, item)?;
        if !items.contains(&spec) {
            items.push(spec);
        }
    }
    Ok(items)
}

/// A hint for an item that matched nothing.
fn hint_for(item: &IfSpec, interfaces: &[Interface]) -> Option<Hint> {
    let mut names: Vec<String> = Vec::new();
    let mut networks: Vec<(String, Cidr)> = Vec::new();
    match item {
        IfSpec::Name(prefix) | IfSpec::Pattern(prefix) => {
            for iface in interfaces {
                let device = device_of(&iface.name);
                for name in [iface.name.as_str(), device] {
                    if name.starts_with(prefix.as_str()) && !names.iter().any(|n| n == name) {
                        names.push(name.to_owned());
                    }
                }
            }
            names.sort();
            (!names.is_empty()).then_some(Hint::Prefix(names))
        }
        IfSpec::Network(net) => {
            for iface in interfaces {
                let own = iface.network();
                if (net.covers(&own) || own.covers(net))
                    && !networks.contains(&(iface.name.clone(), own))
                {
                    networks.push((iface.name.clone(), own));
                }
            }
            (!networks.is_empty()).then_some(Hint::Networks(networks))
        }
        IfSpec::Address(addr) => {
            for iface in interfaces {
                let own = iface.network();
                if own.addr() == *addr && !networks.contains(&(iface.name.clone(), own)) {
                    networks.push((iface.name.clone(), own));
                }
            }
            (!networks.is_empty()).then_some(Hint::Networks(networks))
        }
    }
}

/// Wildcard match: `*` any run of characters (also none), `?` exactly one.
pub(crate) fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    // Where the last `*` was, and the text position it currently covers up to.
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// The result of [`IfSelection::select`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    /// One decision per input interface, in input order.
    pub decisions: Vec<Decision>,
    /// What is worth telling the user (see [`Notice::level`]).
    pub notices: Vec<Notice>,
}

impl Selection {
    /// The interfaces to use, in input order (at most one per device).
    pub fn used(&self) -> impl Iterator<Item = &Interface> {
        self.decisions
            .iter()
            .filter(|d| d.verdict.is_use())
            .map(|d| &d.interface)
    }

    /// The notices of at least `level` (`Level::Warn` for the ones to show
    /// by default).
    pub fn notices_at(&self, level: Level) -> impl Iterator<Item = &Notice> {
        self.notices.iter().filter(move |n| n.level() >= level)
    }
}

/// What happens to one interface entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The entry.
    pub interface: Interface,
    /// Used or skipped, and why.
    pub verdict: Verdict,
}

impl Decision {
    /// Whether the interface is used.
    pub fn is_used(&self) -> bool {
        self.verdict.is_use()
    }
}

impl fmt::Display for Decision {
    /// `eth0 10.8.47.1/24: used (up, not loopback, no list set)`, for
    /// verbose output.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.interface, self.verdict)
    }
}

/// Used or skipped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The component uses this address.
    Use(UseReason),
    /// It does not.
    Skip(SkipReason),
}

impl Verdict {
    /// Whether this is [`Verdict::Use`].
    pub fn is_use(&self) -> bool {
        matches!(self, Verdict::Use(_))
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Use(r) => write!(f, "used ({r})"),
            Verdict::Skip(r) => write!(f, "not used: {r}"),
        }
    }
}

/// Why an interface is used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UseReason {
    /// No list is set, and it is up and not loopback.
    Default,
    /// An include item matches it.
    Included {
        /// The include parameter.
        param: &'static str,
        /// The first item that matches.
        item: IfSpec,
    },
    /// The exclude list is set and no item matches it.
    NotExcluded {
        /// The exclude parameter.
        param: &'static str,
    },
}

impl fmt::Display for UseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UseReason::Default => f.write_str("up, not loopback, no list set"),
            UseReason::Included { param, item } => write!(f, "{param} item {item}"),
            UseReason::NotExcluded { param } => write!(f, "up, not loopback, not in {param}"),
        }
    }
}

/// Why an interface is not used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SkipReason {
    /// The include list is set and no item matches it.
    NotIncluded {
        /// The include parameter.
        param: &'static str,
    },
    /// An exclude item matches it.
    Excluded {
        /// The exclude parameter.
        param: &'static str,
        /// The first item that matches.
        item: IfSpec,
    },
    /// The device is down.
    Down,
    /// A loopback interface that no include item selects.
    Loopback {
        /// The include parameter (the way to use it anyway).
        param: &'static str,
    },
    /// An IPv6 link-local address that no include item selects.
    Ipv6LinkLocal {
        /// The include parameter (the way to use it anyway).
        param: &'static str,
    },
    /// Another address of the same device is used (one per device).
    OtherAddressUsed {
        /// That address (`eth0 10.0.0.5/24`).
        used: String,
    },
    /// The device has several selected addresses of its preferred kind, so
    /// none is used (reference 001 §13); see [`Notice::SeveralAddresses`].
    SeveralAddresses {
        /// Those addresses.
        addresses: Vec<String>,
    },
    /// The same device and address appear earlier in the input.
    Duplicate,
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::NotIncluded { param } => write!(f, "not in {param}"),
            SkipReason::Excluded { param, item } => write!(f, "{param} item {item}"),
            SkipReason::Down => f.write_str("the interface is down"),
            SkipReason::Loopback { param } => {
                write!(f, "loopback (used only when {param} names it)")
            }
            SkipReason::Ipv6LinkLocal { param } => {
                write!(f, "IPv6 link-local (used only when {param} names it)")
            }
            SkipReason::OtherAddressUsed { used } => {
                write!(
                    f,
                    "the device is used through {used} (one address per device)"
                )
            }
            SkipReason::SeveralAddresses { addresses } => write!(
                f,
                "the device has several addresses ({}); choose one",
                addresses.join(", ")
            ),
            SkipReason::Duplicate => f.write_str("listed twice"),
        }
    }
}

/// How loud a [`Notice`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// For verbose output.
    Info,
    /// Show it by default: the user probably asked for something else.
    Warn,
}

/// A hint for an item that matched nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hint {
    /// Interface or device names that start with the item (Open MPI
    /// matched exclude names as prefixes).
    Prefix(Vec<String>),
    /// Interfaces whose network is related to the item: inside or around
    /// a network item, or starting at an address item (a network written
    /// without its prefix length). `(interface name, its network)`.
    Networks(Vec<(String, Cidr)>),
}

/// Something about the lists or the interfaces worth telling the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notice {
    /// A list item matched no interface of this host. Warn for the include
    /// list, and for the exclude list when there is a hint; otherwise Info.
    Unmatched {
        /// The parameter.
        param: &'static str,
        /// Its list.
        kind: ListKind,
        /// The item.
        item: IfSpec,
        /// What it may have meant.
        hint: Option<Hint>,
    },
    /// An include item names a down interface (Warn).
    IncludedButDown {
        /// The include parameter.
        param: &'static str,
        /// The item.
        item: IfSpec,
        /// The interface (`eth1 10.0.0.1/24`).
        interface: String,
    },
    /// A device with several selected addresses, none used (Warn).
    SeveralAddresses {
        /// The parameter names, for the advice.
        params: ParamNames,
        /// Which list is set, if any, for the advice.
        mode: Option<ListKind>,
        /// The device name.
        device: String,
        /// Its kernel index.
        index: u32,
        /// Its competing addresses.
        addresses: Vec<Interface>,
    },
    /// A used interface looks like a host-local virtual bridge (`virbr0`,
    /// `docker0`), which looks reachable and hangs jobs when it is not
    /// (reference 001 §7). Info: it is often harmless.
    HostLocalDevice {
        /// The exclude parameter.
        param: &'static str,
        /// The interface (`docker0 172.17.0.1/16`).
        interface: String,
        /// Its device name.
        device: String,
    },
    /// No interface is usable. Warn when a list is set, Info otherwise (a
    /// host with only loopback is normal for single-node runs).
    NothingUsable {
        /// The parameter names.
        params: ParamNames,
        /// Which list is set, if any.
        mode: Option<ListKind>,
        /// How many interface entries there were.
        count: usize,
    },
}

impl Notice {
    /// How loud it is.
    pub fn level(&self) -> Level {
        match self {
            Notice::Unmatched {
                kind: ListKind::Exclude,
                hint: None,
                ..
            } => Level::Info,
            Notice::HostLocalDevice { .. } | Notice::NothingUsable { mode: None, .. } => {
                Level::Info
            }
            _ => Level::Warn,
        }
    }
}

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Notice::Unmatched {
                param,
                kind,
                item,
                hint,
            } => {
                write!(f, "{param} item \"{item}\" matches no interface on this host")?;
                match (hint, item) {
                    (Some(Hint::Prefix(names)), _) => {
                        let what = match kind {
                            ListKind::Exclude => "leave out",
                            ListKind::Include => "use",
                        };
                        write!(
                            f,
                            "; names match exactly, not as prefixes (as Open MPI's exclude list \
                             does): to {what} {}, write \"{item}*\" or list them",
                            names.join(", ")
                        )
                    }
                    (Some(Hint::Networks(nets)), IfSpec::Address(_)) => {
                        write!(
                            f,
                            "; to name a network, give its prefix length: {}",
                            nets_text(nets)
                        )
                    }
                    (Some(Hint::Networks(nets)), _) => write!(
                        f,
                        "; a network must be given exactly as the interface has it \
                         (reference 001: 10.10.0.0/16 does not match 10.10.0.0/24): {} — \
                         write that network instead",
                        nets_text(nets)
                    ),
                    (None, _) => Ok(()),
                }
            }
            Notice::IncludedButDown {
                param,
                item,
                interface,
            } => write!(
                f,
                "{param} item \"{item}\" selects {interface}, but that interface is down; it is not used"
            ),
            Notice::SeveralAddresses {
                params,
                mode,
                device,
                index,
                addresses,
            } => {
                let list: Vec<String> = addresses.iter().map(ToString::to_string).collect();
                write!(
                    f,
                    "device {device} (index {index}) has several addresses selected ({}); oxmpi \
                     uses one address per device (reference 001 §13), so it does not use {device}. ",
                    list.join(", ")
                )?;
                let keep = &addresses[0];
                let others: Vec<String> = addresses[1..]
                    .iter()
                    // An alias label leaves out that alias only; a device
                    // name would leave out the whole device, so name the
                    // address instead.
                    .map(|i| {
                        if i.alias().is_some() {
                            i.name.clone()
                        } else {
                            i.addr.to_string()
                        }
                    })
                    .collect();
                match mode {
                    Some(ListKind::Include) => write!(
                        f,
                        "List only the one to use in {}, e.g. {}={}",
                        params.include, params.include, keep.addr
                    ),
                    Some(ListKind::Exclude) => write!(
                        f,
                        "Add the others to {}, e.g. {}=...,{}",
                        params.exclude,
                        params.exclude,
                        others.join(",")
                    ),
                    None => write!(
                        f,
                        "Choose one with {}={} or leave the others out with {}={}",
                        params.include,
                        keep.addr,
                        params.exclude,
                        others.join(",")
                    ),
                }
            }
            Notice::HostLocalDevice {
                param,
                interface,
                device,
            } => write!(
                f,
                "{interface} looks like a host-local virtual bridge; if it does not reach the \
                 other hosts, leave it out with {param}={device} (such devices look reachable \
                 and hang connections)"
            ),
            Notice::NothingUsable {
                params,
                mode,
                count,
            } => {
                write!(f, "none of the {count} interface addresses of this host is usable")?;
                match mode {
                    Some(ListKind::Include) => {
                        write!(f, " with the {} setting", params.include)
                    }
                    Some(ListKind::Exclude) => {
                        write!(f, " with the {} setting", params.exclude)
                    }
                    None => f.write_str(" (all are down, loopback or IPv6 link-local)"),
                }
            }
        }
    }
}

fn nets_text(nets: &[(String, Cidr)]) -> String {
    nets.iter()
        .map(|(name, net)| format!("{name} is on {net}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A bad include or exclude setting. The message names the parameter and
/// the item and says what to write instead; the caller adds where the value
/// came from (file and line, environment variable, command line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IfListError {
    /// Both lists are set; only one may be (reference 001 §7: "only one of
    /// the two should be set").
    BothSet {
        /// The parameter names.
        params: ParamNames,
        /// The include value as given (trimmed).
        include: String,
        /// The exclude value as given (trimmed).
        exclude: String,
    },
    /// An item of a list does not parse.
    BadItem {
        /// The parameter.
        param: &'static str,
        /// The item as given (trimmed).
        item: String,
        /// What is wrong with it.
        problem: ItemProblem,
    },
}

/// What is wrong with a list item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ItemProblem {
    /// It contains `/` but is not a network (`10.0.0.0/33`, `10.0.0.5/24`).
    Network(CidrError),
    /// It contains a space (`eth0 eth1`: items are separated by commas).
    Whitespace,
    /// It contains a control character.
    ControlChar(char),
    /// It starts with `^` (that is the syntax of component selection, not
    /// of these lists).
    Caret {
        /// The exclude parameter (where interfaces to avoid go).
        exclude_param: &'static str,
    },
}

impl fmt::Display for IfListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IfListError::BothSet {
                params,
                include,
                exclude,
            } => write!(
                f,
                "{inc} (\"{include}\") and {exc} (\"{exclude}\") are both set, but only one of \
                 them may be: list the interfaces to use in {inc}, or the ones to avoid in {exc}, \
                 and unset the other. Loopback is left out unless {inc} names it, so {exc} need \
                 not mention it",
                inc = params.include,
                exc = params.exclude,
            ),
            IfListError::BadItem {
                param,
                item,
                problem,
            } => {
                write!(f, "{param}: item \"{item}\": ")?;
                match problem {
                    ItemProblem::Network(e) => write!(f, "{e}"),
                    ItemProblem::Whitespace => {
                        f.write_str("contains a space; separate items with commas (eth0,eth1)")
                    }
                    ItemProblem::ControlChar(c) => {
                        write!(f, "contains the control character {c:?}")
                    }
                    ItemProblem::Caret { exclude_param } if exclude_param == param => write!(
                        f,
                        "'^' does not negate items here, and {param} already lists what to leave \
                         out: write \"{}\"",
                        item.trim_start_matches('^')
                    ),
                    ItemProblem::Caret { exclude_param } => write!(
                        f,
                        "'^' does not negate items here; to leave interfaces out, list them in \
                         {exclude_param} instead (and unset {param})"
                    ),
                }
            }
        }
    }
}

impl std::error::Error for IfListError {}

#[cfg(test)]
mod tests;
