//! What the selection tells the user ([`Notice`]): items that matched
//! nothing (with a [`Hint`]), down or ambiguous devices, host-local
//! bridges, nothing usable; each with its [`Level`] and message.

use std::fmt;

use super::{IfSpec, ListKind, ParamNames};
use crate::interfaces::{Cidr, Interface};

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
