//! The outcome of applying the lists to a host's interfaces: a
//! [`Selection`] of one [`Decision`] per interface entry, each used or
//! skipped ([`Verdict`]) with its reason ([`UseReason`], [`SkipReason`]).

use std::fmt;

use super::{IfSpec, Level, Notice};
use crate::interfaces::Interface;

/// The result of [`IfSelection::select`](super::IfSelection::select).
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
