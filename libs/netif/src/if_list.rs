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

mod decision;
mod error;
mod notice;
mod spec;

pub use decision::{Decision, Selection, SkipReason, UseReason, Verdict};
pub use error::{IfListError, ItemProblem};
pub use notice::{Hint, Level, Notice};
pub use spec::IfSpec;

use std::collections::BTreeMap;
use std::net::IpAddr;

use crate::interfaces::{device_of, Cidr, Interface};
use spec::{glob_match, parse_list};

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

#[cfg(test)]
mod tests;
