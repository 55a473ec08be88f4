//! One item of an include or exclude list ([`IfSpec`]): parsing an item and a
//! whole comma list, and matching an item against an interface (names,
//! `*`/`?` patterns, networks, addresses).

use std::fmt;
use std::net::IpAddr;

use super::{IfListError, ItemProblem, ListKind};
use crate::interfaces::{Cidr, Interface};

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

/// Splits a comma list into items.
pub(super) fn parse_list(
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
