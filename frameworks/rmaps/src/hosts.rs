//! Host lists: `--host a,b:2` items and host name rules; the allocation
//! layer ([`crate::allocation`]) adds them up.
//!
//! `--host` entries are `NAME` (1 slot) or `NAME:N` (N slots); a host named
//! more than once adds up its slots (`--host a:2,a` gives `a` 3 slots).
//! IPv6 addresses are written `[fe80::1]` or `[fe80::1]:2`. Errors name the
//! option and the value.

use oxmpi_plugin_api::text::excerpt;
use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;

/// A host list error: what is wrong and where (option and value, or
/// `file:line`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostError(pub String);

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HostError {}

/// One item of a `--host` list, in order, not aggregated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostItem {
    /// Host name.
    pub name: String,
    /// The `:N` suffix, `None` when absent (which counts as 1 slot).
    pub slots: Option<u32>,
}

/// The longest host name accepted, in bytes: 255, as many as a DNS name
/// can have on the wire (a name of 253 characters and its two end marks).
pub const MAX_HOST_NAME_LEN: usize = 255;

/// Why `name` cannot be a host name, worded to follow the quoted name
/// (`"x y" is not a host name`), or `None` when it can be one: 1 to
/// [`MAX_HOST_NAME_LEN`] bytes of letters, digits, `-`, `.`, `_`, and
/// `:`/`[`/`]` for IPv6 addresses.
pub(crate) fn host_name_problem(name: &str) -> Option<String> {
    let allowed =
        |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'[' | b']' | b':');
    if name.is_empty() || !name.bytes().all(allowed) {
        Some("is not a host name".into())
    } else if name.len() > MAX_HOST_NAME_LEN {
        Some(format!(
            "is not a host name: it is longer than {MAX_HOST_NAME_LEN} characters"
        ))
    } else {
        None
    }
}

/// Whether two host names denote the same host: equal ignoring case, or
/// one is the short form of the other (`node03` and
/// `node03.cluster.example`). IP addresses must match exactly.
pub fn same_host(a: &str, b: &str) -> bool {
    if a.eq_ignore_ascii_case(b) {
        return true;
    }
    if a.parse::<IpAddr>().is_ok() || b.parse::<IpAddr>().is_ok() {
        return false;
    }
    let short = |s: &str| s.split('.').next().unwrap_or(s).to_ascii_lowercase();
    (!a.contains('.') || !b.contains('.')) && short(a) == short(b)
}

/// Finds hosts by name the way [`same_host`] compares them, in constant
/// time: an exact match (ignoring case) first, else a short/long form match.
#[derive(Clone, Debug, Default)]
pub(crate) struct HostIndex {
    exact: HashMap<String, usize>,
    short: HashMap<String, usize>,
}

impl HostIndex {
    /// Records `name` as entry `index` (the first entry of a name wins).
    pub fn insert(&mut self, name: &str, index: usize) {
        let lower = name.to_ascii_lowercase();
        if lower.parse::<IpAddr>().is_err() {
            let short = lower.split('.').next().unwrap_or(&lower).to_string();
            self.short.entry(short).or_insert(index);
        }
        self.exact.entry(lower).or_insert(index);
    }

    /// The entry that is the same host as `name`, if any.
    pub fn find(&self, name: &str) -> Option<usize> {
        let lower = name.to_ascii_lowercase();
        if let Some(&i) = self.exact.get(&lower) {
            return Some(i);
        }
        if lower.parse::<IpAddr>().is_ok() {
            return None;
        }
        match lower.split_once('.') {
            // A short name matches a long one.
            None => self.short.get(&lower).copied(),
            // A long name matches a short one (no dot: exact holds it).
            Some((short, _)) => self.exact.get(short).copied(),
        }
    }
}

/// Parses the values of `--host` options (each a comma-separated list) into
/// items, in order and not aggregated (the seq mapper needs the order).
pub fn parse_host_items(values: &[String]) -> Result<Vec<HostItem>, HostError> {
    let mut items = Vec::new();
    for value in values {
        for item in value.split(',').map(str::trim) {
            let bad = |why: String| {
                HostError(format!(
                    "--host {}: {why} (expected NAME or NAME:N with N a number of slots of at least 1, separated by commas)",
                    excerpt(value)
                ))
            };
            let quoted = excerpt(item);
            let (name, count) = if let Some(inner) = item.strip_prefix('[') {
                match inner.split_once(']') {
                    Some((addr, "")) => (addr, None),
                    Some((addr, rest)) => match rest.strip_prefix(':') {
                        Some(n) => (addr, Some(n)),
                        None => return Err(bad(format!("\"{quoted}\" has text after ]"))),
                    },
                    None => return Err(bad(format!("\"{quoted}\" has no closing ]"))),
                }
            } else if item.matches(':').count() > 1 {
                (item, None)
            } else {
                match item.split_once(':') {
                    Some((name, n)) => (name, Some(n)),
                    None => (item, None),
                }
            };
            let slots = match count {
                None => None,
                Some(n) => match n.parse::<u32>() {
                    Ok(0) => return Err(bad(format!("\"{quoted}\" gives the host no slots"))),
                    Ok(n) => Some(n),
                    Err(_) => {
                        return Err(bad(format!(
                            "\"{quoted}\" has an invalid slot count \"{}\"",
                            excerpt(n)
                        )))
                    }
                },
            };
            if let Some(problem) = host_name_problem(name) {
                return Err(bad(format!("\"{quoted}\" {problem}")));
            }
            items.push(HostItem {
                name: name.to_string(),
                slots,
            });
        }
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(name: &str, slots: Option<u32>) -> HostItem {
        HostItem {
            name: name.into(),
            slots,
        }
    }

    #[test]
    fn host_items_keep_order_and_ipv6() {
        assert_eq!(
            parse_host_items(&["b:2, a ,b".into(), "[fe80::1]:3,[::1],fe80::2".into()]).unwrap(),
            vec![
                item("b", Some(2)),
                item("a", None),
                item("b", None),
                item("fe80::1", Some(3)),
                item("::1", None),
                item("fe80::2", None),
            ]
        );
    }

    #[test]
    fn host_option_errors() {
        for (value, what) in [
            ("a:x", "invalid slot count \"x\""),
            ("a:-1", "invalid slot count"),
            ("a:0", "no slots"),
            ("a,,b", "\"\" is not a host name"),
            ("a b", "\"a b\" is not a host name"),
            ("[::1", "no closing ]"),
            ("[::1]x", "text after ]"),
            (":2", "not a host name"),
        ] {
            let e = parse_host_items(&[value.into()]).unwrap_err().0;
            assert!(e.starts_with(&format!("--host {value}: ")), "{e}");
            assert!(e.contains(what), "{value}: {e}");
        }
    }

    #[test]
    fn host_option_errors_quote_bounded_excerpts() {
        let huge = "h".repeat(1_000_000);
        for value in [
            format!("{huge}:x"),
            format!("a:{huge}"),
            format!("[{huge}"),
            format!("{huge}/"),
            huge.clone(),
        ] {
            let e = parse_host_items(&[value]).unwrap_err().0;
            assert!(e.len() < 500, "{} bytes: {}", e.len(), &e[..500]);
            assert!(e.contains("bytes)"), "{e}");
        }
        let e = parse_host_items(&[huge]).unwrap_err().0;
        assert!(e.contains("longer than 255 characters"), "{e}");
        assert_eq!(
            parse_host_items(&["n".repeat(255)]).unwrap(),
            vec![item(&"n".repeat(255), None)]
        );
    }

    proptest::proptest! {
        #[test]
        fn host_items_never_panic(values in proptest::collection::vec("(?s).{0,60}", 0..4)) {
            let _ = parse_host_items(&values);
        }
    }

    #[test]
    fn same_host_rules() {
        assert!(same_host("node03", "node03"));
        assert!(same_host("Node03", "node03"));
        assert!(same_host("node03", "node03.cluster.example"));
        assert!(same_host("node03.cluster.example", "node03"));
        assert!(!same_host("node03.a.example", "node03.b.example"));
        assert!(!same_host("node03", "node3"));
        assert!(!same_host("10.0.0.1", "10"));
        assert!(same_host("10.0.0.1", "10.0.0.1"));
    }

    #[test]
    fn host_index_agrees_with_same_host() {
        let names = [
            "node03",
            "Node04.cluster.example",
            "10.0.0.1",
            "login",
            "login.b.example",
            "fe80::1",
        ];
        let mut index = HostIndex::default();
        for (i, n) in names.iter().enumerate() {
            index.insert(n, i);
        }
        for probe in [
            "node03",
            "NODE03",
            "node03.cluster.example",
            "node04",
            "node04.cluster.example",
            "node04.other.example",
            "10.0.0.1",
            "10",
            "login",
            "login.a.example",
            "fe80::1",
            "nothere",
        ] {
            let linear = names.iter().position(|n| same_host(n, probe));
            assert_eq!(index.find(probe), linear, "{probe}");
        }
    }
}
