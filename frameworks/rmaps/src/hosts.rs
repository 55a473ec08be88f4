//! Host lists: `--host a,b:2` and hostfiles.
//!
//! `--host` entries are `NAME` (1 slot) or `NAME:SLOTS`; a host named more
//! than once adds up its slots. Hostfile lines are `NAME [slots=N]
//! [max_slots=M]` with `#` comments and blank lines; a host on several
//! lines adds up; a line without `slots=` gives the host
//! `default_slots` (the number of processor cores). Errors name the option
//! or file and line.

use std::fmt;
use std::path::Path;

/// One host of an allocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostEntry {
    /// Host name as written.
    pub name: String,
    /// Slots (processes that fit without oversubscribing).
    pub slots: u32,
    /// Hard limit on processes, `None` for unlimited.
    pub max_slots: Option<u32>,
}

/// A host list error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostError(pub String);

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HostError {}

fn add(hosts: &mut Vec<HostEntry>, entry: HostEntry) {
    match hosts.iter_mut().find(|h| h.name == entry.name) {
        Some(h) => {
            h.slots += entry.slots;
            h.max_slots = match (h.max_slots, entry.max_slots) {
                (Some(a), Some(b)) => Some(a + b),
                _ => None,
            };
        }
        None => hosts.push(entry),
    }
}

fn valid_host_name(name: &str) -> bool {
    !name.is_empty()
        && name.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'[' | b']' | b':')
        })
}

/// Parses the values of `--host` options (each a comma-separated list).
pub fn parse_host_option(values: &[String]) -> Result<Vec<HostEntry>, HostError> {
    let mut hosts = Vec::new();
    for value in values {
        for item in value.split(',').map(str::trim) {
            let (name, slots) = match item.rsplit_once(':') {
                Some((name, n)) => {
                    let slots = n.parse::<u32>().map_err(|_| {
                        HostError(format!(
                            "--host {value}: \"{item}\" has an invalid slot count \"{n}\" (expected NAME or NAME:SLOTS with SLOTS a whole number)"
                        ))
                    })?;
                    (name, slots)
                }
                None => (item, 1),
            };
            if !valid_host_name(name) {
                return Err(HostError(format!(
                    "--host {value}: \"{item}\" is not a host name (expected NAME or NAME:SLOTS, separated by commas)"
                )));
            }
            add(
                &mut hosts,
                HostEntry {
                    name: name.to_string(),
                    slots,
                    max_slots: None,
                },
            );
        }
    }
    Ok(hosts)
}

/// Parses a hostfile's text.
pub fn parse_hostfile(
    path: &Path,
    text: &str,
    default_slots: u32,
) -> Result<Vec<HostEntry>, HostError> {
    let mut hosts = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let err = |what: String| {
            HostError(format!(
                "{}:{}: {what}: \"{}\". Hostfile lines are `NAME [slots=N] [max_slots=M]`.",
                path.display(),
                i + 1,
                raw.trim()
            ))
        };
        let mut words = line.split_whitespace();
        let name = words.next().unwrap_or_default();
        if !valid_host_name(name) || name.contains('=') {
            return Err(err(format!("\"{name}\" is not a host name")));
        }
        let (mut slots, mut max_slots) = (None, None);
        for word in words {
            let Some((key, value)) = word.split_once('=') else {
                return Err(err(format!("unexpected \"{word}\"")));
            };
            if !matches!(key, "slots" | "cpu" | "count" | "max_slots" | "max-slots") {
                return Err(err(format!(
                    "unknown attribute \"{key}\" (known: slots, max_slots)"
                )));
            }
            let number = value
                .parse::<i64>()
                .map_err(|_| err(format!("{key} needs a whole number, not \"{value}\"")))?;
            if number < 0 {
                return Err(err(format!("{key} cannot be negative")));
            }
            let number = u32::try_from(number).map_err(|_| err(format!("{key} is too large")))?;
            match key {
                "slots" | "cpu" | "count" => slots = Some(number),
                _ => max_slots = Some(number),
            }
        }
        let slots = slots.unwrap_or(default_slots);
        if let Some(max) = max_slots {
            if max < slots {
                return Err(err(format!("max_slots={max} is less than slots={slots}")));
            }
        }
        add(
            &mut hosts,
            HostEntry {
                name: name.to_string(),
                slots,
                max_slots,
            },
        );
    }
    Ok(hosts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(name: &str, slots: u32, max: Option<u32>) -> HostEntry {
        HostEntry {
            name: name.into(),
            slots,
            max_slots: max,
        }
    }

    #[test]
    fn host_option_counts_and_adds_up() {
        let hosts = parse_host_option(&["a,b:2,c:3".into(), "a".into()]).unwrap();
        assert_eq!(
            hosts,
            vec![h("a", 2, None), h("b", 2, None), h("c", 3, None)]
        );
        assert!(parse_host_option(&["a:x".into()])
            .unwrap_err()
            .0
            .contains("invalid slot count"));
        assert!(parse_host_option(&["a,,b".into()]).is_err());
    }

    #[test]
    fn hostfile_grammar() {
        let text = "# cluster\nnode0 slots=2 max_slots=20\nnode1 slots=2 max_slots=20\n\nnode2\nnode0 slots=1 max_slots=1 # again\n";
        let hosts = parse_hostfile(Path::new("hf"), text, 4).unwrap();
        assert_eq!(
            hosts,
            vec![
                h("node0", 3, Some(21)),
                h("node1", 2, Some(20)),
                h("node2", 4, None)
            ]
        );
    }

    #[test]
    fn hostfile_errors_name_file_and_line() {
        for (text, what) in [
            ("a slots=x\n", "whole number"),
            ("a slots=-1\n", "negative"),
            ("a slots=4 max_slots=2\n", "less than"),
            ("a color=red\n", "unknown attribute"),
            ("a b\n", "unexpected"),
        ] {
            let e = parse_hostfile(Path::new("/h/hosts"), &format!("# c\n{text}"), 1)
                .unwrap_err()
                .0;
            assert!(e.starts_with("/h/hosts:2: "), "{e}");
            assert!(e.contains(what), "{e}");
        }
    }
}
