//! The allocation a Slurm job was given, read from its environment.
//!
//! - `SLURM_JOB_NODELIST` (or the older `SLURM_NODELIST`): a Slurm host
//!   list such as `node[01-04,07]` or `a[1-2],b3,c[05-06,9]`. Ranges keep
//!   the zero padding of their first number; several bracket groups in one
//!   name expand as a product (`r[1-2]n[1-2]` is `r1n1,r1n2,r2n1,r2n2`).
//! - `SLURM_TASKS_PER_NODE` (else `SLURM_JOB_CPUS_PER_NODE`): slots per
//!   node in the same order, `N` or `N(xR)` for R nodes in a row, e.g.
//!   `2(x3),1`.
//!
//! Slurm never gives `max_slots`: it is unlimited (oversubscribing still
//! needs `--map-by :OVERSUBSCRIBE`).

use crate::allocation::{AllocError, Allocation, AllocationSource, NodeSpec};
use oxmpi_plugin_api::text::excerpt;
use std::collections::HashMap;

/// Most host names a host list may expand to (guards against
/// `n[0-9999999999]`).
pub const MAX_NODES: usize = 1_000_000;

/// A Slurm variable that does not parse: names the variable's text and
/// what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlurmError(pub String);

impl std::fmt::Display for SlurmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SlurmError {}

/// One piece of a host name: literal text, or a bracket of ranges.
enum Piece<'a> {
    Text(&'a str),
    Ranges(Vec<(u64, u64, usize)>),
}

/// Expands a Slurm host list (`node[01-04,07],login1`) into host names,
/// in order. Errors on unbalanced or nested brackets, empty names,
/// non-numeric or descending ranges, and lists longer than [`MAX_NODES`].
pub fn expand_nodelist(list: &str) -> Result<Vec<String>, SlurmError> {
    let bad = |why: String| SlurmError(format!("host list \"{}\": {why}", excerpt(list)));
    let mut names = Vec::new();
    for item in split_top_level(list).map_err(|w| bad(w.into()))? {
        let item = item.trim();
        if item.is_empty() {
            return Err(bad("empty host name (two commas in a row?)".into()));
        }
        let pieces = pieces(item).map_err(|w| bad(format!("in \"{}\": {w}", excerpt(item))))?;
        let mut count: usize = 1;
        for p in &pieces {
            if let Piece::Ranges(ranges) = p {
                let n = ranges.iter().try_fold(0usize, |acc, &(lo, hi, _)| {
                    (hi - lo)
                        .checked_add(1)
                        .and_then(|n| usize::try_from(n).ok())
                        .and_then(|n| acc.checked_add(n))
                });
                count = n.and_then(|n| count.checked_mul(n)).unwrap_or(usize::MAX);
            }
        }
        if count > MAX_NODES.saturating_sub(names.len()) {
            return Err(bad(format!("expands to more than {MAX_NODES} hosts")));
        }
        let mut expanded = vec![String::new()];
        for p in &pieces {
            match p {
                Piece::Text(t) => expanded.iter_mut().for_each(|s| s.push_str(t)),
                Piece::Ranges(ranges) => {
                    let mut next = Vec::with_capacity(expanded.len());
                    for prefix in &expanded {
                        for &(lo, hi, width) in ranges {
                            for n in lo..=hi {
                                next.push(format!("{prefix}{n:0width$}"));
                            }
                        }
                    }
                    expanded = next;
                }
            }
        }
        names.extend(expanded);
    }
    Ok(names)
}

/// Splits on commas outside brackets.
fn split_top_level(list: &str) -> Result<Vec<&str>, &'static str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in list.char_indices() {
        match c {
            '[' if depth > 0 => return Err("nested brackets"),
            '[' => depth = 1,
            ']' if depth == 0 => return Err("] without ["),
            ']' => depth = 0,
            ',' if depth == 0 => {
                parts.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth > 0 {
        return Err("[ without ]");
    }
    parts.push(&list[start..]);
    Ok(parts)
}

fn pieces(item: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = item;
    while !rest.is_empty() {
        match rest.find('[') {
            None => {
                out.push(Piece::Text(rest));
                rest = "";
            }
            Some(open) => {
                if open > 0 {
                    out.push(Piece::Text(&rest[..open]));
                }
                let close = rest.find(']').ok_or("[ without ]")?;
                out.push(Piece::Ranges(ranges(&rest[open + 1..close])?));
                rest = &rest[close + 1..];
            }
        }
    }
    if out
        .iter()
        .any(|p| matches!(p, Piece::Text(t) if t.chars().any(char::is_whitespace)))
    {
        return Err("spaces inside a host name".into());
    }
    Ok(out)
}

fn ranges(text: &str) -> Result<Vec<(u64, u64, usize)>, String> {
    let number = |s: &str| -> Result<u64, String> {
        let s = s.trim();
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "\"{}\" is not a number in [{}]",
                excerpt(s),
                excerpt(text)
            ));
        }
        s.parse::<u64>()
            .map_err(|_| format!("\"{}\" is too large in [{}]", excerpt(s), excerpt(text)))
    };
    let mut out = Vec::new();
    for range in text.split(',') {
        let (lo_text, hi_text) = range.split_once('-').unwrap_or((range, range));
        let (lo, hi) = (number(lo_text)?, number(hi_text)?);
        if lo > hi {
            return Err(format!("the range {} goes down", excerpt(range)));
        }
        out.push((lo, hi, lo_text.trim().len()));
    }
    Ok(out)
}

/// Parses a Slurm per-node count list (`2(x3),1` is `[2, 2, 2, 1]`).
/// Errors on anything that is not `N` or `N(xR)` with R ≥ 1, and on lists
/// longer than [`MAX_NODES`].
pub fn parse_tasks_per_node(text: &str) -> Result<Vec<u32>, SlurmError> {
    let bad = |why: String| {
        SlurmError(format!(
            "\"{}\": {why} (expected counts like 2(x3),1: N, or N(xR) for R nodes with N each, separated by commas)",
            excerpt(text)
        ))
    };
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim) {
        let (n, repeat) = match item.split_once('(') {
            Some((n, rest)) => {
                let r = rest
                    .strip_suffix(')')
                    .and_then(|r| r.trim().strip_prefix(['x', 'X']))
                    .ok_or_else(|| bad(format!("\"{}\" is not N(xR)", excerpt(item))))?;
                let r = r
                    .trim()
                    .parse::<usize>()
                    .ok()
                    .filter(|&r| r > 0)
                    .ok_or_else(|| bad(format!("bad repeat count in \"{}\"", excerpt(item))))?;
                (n.trim(), r)
            }
            None => (item, 1),
        };
        let n = n
            .parse::<u32>()
            .map_err(|_| bad(format!("\"{}\" is not a count", excerpt(n))))?;
        if repeat > MAX_NODES.saturating_sub(out.len()) {
            return Err(bad(format!("more than {MAX_NODES} nodes")));
        }
        out.extend(std::iter::repeat_n(n, repeat));
    }
    Ok(out)
}

/// The Slurm allocation described by `env`, or `None` when neither
/// `SLURM_JOB_NODELIST` nor `SLURM_NODELIST` is set. Nodes get the slots of
/// `SLURM_TASKS_PER_NODE` (else `SLURM_JOB_CPUS_PER_NODE`), unlimited
/// `max_slots`, `slots_given = true` and no topology. A host listed twice
/// adds up. Errors name the variable and its value.
pub fn allocation_from_env(
    env: &HashMap<String, String>,
) -> Result<Option<Allocation>, AllocError> {
    let Some((list_var, list)) = ["SLURM_JOB_NODELIST", "SLURM_NODELIST"]
        .iter()
        .find_map(|v| env.get(*v).map(|value| (*v, value)))
    else {
        return Ok(None);
    };
    let names = expand_nodelist(list).map_err(|e| AllocError(format!("{list_var}: {e}")))?;
    if names.is_empty() {
        return Err(AllocError(format!("{list_var} is set but empty")));
    }
    let Some((count_var, counts)) = ["SLURM_TASKS_PER_NODE", "SLURM_JOB_CPUS_PER_NODE"]
        .iter()
        .find_map(|v| env.get(*v).map(|value| (*v, value)))
    else {
        return Err(AllocError(format!(
            "{list_var} is set but neither SLURM_TASKS_PER_NODE nor SLURM_JOB_CPUS_PER_NODE is: cannot tell how many slots each node has"
        )));
    };
    let slots = parse_tasks_per_node(counts).map_err(|e| AllocError(format!("{count_var}={e}")))?;
    if slots.len() != names.len() {
        return Err(AllocError(format!(
            "{count_var}={} gives counts for {} nodes but {list_var}={} lists {}",
            excerpt(counts),
            slots.len(),
            excerpt(list),
            names.len()
        )));
    }
    let mut nodes: Vec<NodeSpec> = Vec::with_capacity(names.len());
    let mut index: HashMap<String, usize> = HashMap::with_capacity(names.len());
    for (name, n) in names.iter().zip(slots) {
        match index.get(name) {
            Some(&i) => nodes[i].slots = nodes[i].slots.saturating_add(n),
            None => {
                index.insert(name.clone(), nodes.len());
                nodes.push(NodeSpec {
                    name: name.clone(),
                    slots: n,
                    max_slots: None,
                    slots_given: true,
                    topology: None,
                });
            }
        }
    }
    let sequence = nodes.iter().map(|n| n.name.clone()).collect();
    Ok(Some(Allocation {
        nodes,
        source: AllocationSource::Scheduler {
            name: "Slurm".into(),
            detail: format!("{list_var}={list}"),
        },
        sequence,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn expand(list: &str) -> Vec<String> {
        expand_nodelist(list).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn long_values_are_quoted_as_an_excerpt() {
        let long = format!("n[{}]", "z".repeat(100_000));
        let e = expand_nodelist(&long).unwrap_err();
        assert!(e.to_string().len() < 2_000, "{}", e.to_string().len());
        let e = parse_tasks_per_node(&"q".repeat(100_000)).unwrap_err();
        assert!(e.0.len() < 2_000, "{}", e.0.len());
    }

    #[test]
    fn brackets_padding_and_groups() {
        assert_eq!(
            expand("node[01-04,07]"),
            ["node01", "node02", "node03", "node04", "node07"]
        );
        assert_eq!(
            expand("a[1-2],b3,c[05-06,9]"),
            ["a1", "a2", "b3", "c05", "c06", "c9"]
        );
        assert_eq!(expand("n[8-11]"), ["n8", "n9", "n10", "n11"]);
        assert_eq!(expand("n[098-101]"), ["n098", "n099", "n100", "n101"]);
        assert_eq!(expand("login"), ["login"]);
        assert_eq!(expand("r[1-2]n[1-2]"), ["r1n1", "r1n2", "r2n1", "r2n2"]);
        assert_eq!(expand("[1-2]x"), ["1x", "2x"]);
        assert_eq!(expand(" a , b "), ["a", "b"]);
    }

    #[test]
    fn bad_host_lists() {
        for (list, what) in [
            ("", "empty host name"),
            ("a,,b", "empty host name"),
            ("n[1-2", "[ without ]"),
            ("n1-2]", "] without ["),
            ("n[[1]]", "nested"),
            ("n[a-b]", "not a number"),
            ("n[]", "not a number"),
            ("n[3-1]", "goes down"),
            ("n[1-2-3]", "not a number"),
            ("n[0-99999999999]", "more than"),
            ("a b", "spaces"),
        ] {
            let e = expand_nodelist(list).unwrap_err().0;
            assert!(e.contains(what), "{list}: {e}");
            assert!(e.starts_with(&format!("host list \"{list}\"")), "{e}");
        }
    }

    #[test]
    fn tasks_per_node() {
        assert_eq!(parse_tasks_per_node("2(x3),1").unwrap(), [2, 2, 2, 1]);
        assert_eq!(parse_tasks_per_node("4").unwrap(), [4]);
        assert_eq!(parse_tasks_per_node("1,2( x2 ),3").unwrap(), [1, 2, 2, 3]);
        for bad in ["", "x", "2(3)", "2(x0)", "2(x", "-1", "2(xa)", "1,,2"] {
            let e = parse_tasks_per_node(bad).unwrap_err().0;
            assert!(e.contains("expected counts like 2(x3),1"), "{bad}: {e}");
        }
        assert!(parse_tasks_per_node("1(x999999999999)").is_err());
    }

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn allocation_from_a_fake_slurm_environment() {
        assert_eq!(
            allocation_from_env(&env(&[("HOME", "/root")])).unwrap(),
            None
        );
        let a = allocation_from_env(&env(&[
            ("SLURM_JOB_ID", "42"),
            ("SLURM_JOB_NODELIST", "node[01-04]"),
            ("SLURM_TASKS_PER_NODE", "2(x3),1"),
        ]))
        .unwrap()
        .unwrap();
        let got: Vec<(&str, u32)> = a.nodes.iter().map(|n| (n.name.as_str(), n.slots)).collect();
        assert_eq!(
            got,
            [("node01", 2), ("node02", 2), ("node03", 2), ("node04", 1)]
        );
        assert!(a
            .nodes
            .iter()
            .all(|n| n.max_slots.is_none() && n.slots_given));
        assert_eq!(
            a.source,
            AllocationSource::Scheduler {
                name: "Slurm".into(),
                detail: "SLURM_JOB_NODELIST=node[01-04]".into()
            }
        );
        // Older variable names.
        let a = allocation_from_env(&env(&[
            ("SLURM_NODELIST", "a,b"),
            ("SLURM_JOB_CPUS_PER_NODE", "8(x2)"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(a.nodes[1].slots, 8);
    }

    #[test]
    fn slurm_environment_errors_name_the_variable() {
        for (pairs, what) in [
            (
                vec![("SLURM_JOB_NODELIST", "n[1-2]")],
                "neither SLURM_TASKS_PER_NODE",
            ),
            (
                vec![
                    ("SLURM_JOB_NODELIST", "n[1-2]"),
                    ("SLURM_TASKS_PER_NODE", "1(x3)"),
                ],
                "SLURM_TASKS_PER_NODE=1(x3) gives counts for 3 nodes but SLURM_JOB_NODELIST=n[1-2] lists 2",
            ),
            (
                vec![
                    ("SLURM_JOB_NODELIST", "n[2-1]"),
                    ("SLURM_TASKS_PER_NODE", "1"),
                ],
                "SLURM_JOB_NODELIST: host list",
            ),
            (
                vec![
                    ("SLURM_JOB_NODELIST", "n1"),
                    ("SLURM_TASKS_PER_NODE", "one"),
                ],
                "SLURM_TASKS_PER_NODE=\"one\"",
            ),
        ] {
            let e = allocation_from_env(&env(&pairs)).unwrap_err().0;
            assert!(e.contains(what), "{e}");
        }
    }

    proptest! {
        #[test]
        fn nodelist_never_panics(s in "[a-c0-9\\[\\],\\- ]{0,40}") {
            let _ = expand_nodelist(&s);
        }

        #[test]
        fn nodelist_any_text_never_panics(s in "\\PC{0,60}") {
            let _ = expand_nodelist(&s);
        }

        #[test]
        fn tasks_never_panic(s in "[0-9x(), ]{0,40}") {
            let _ = parse_tasks_per_node(&s);
        }

        #[test]
        fn tasks_any_text_never_panics(s in "\\PC{0,60}") {
            let _ = parse_tasks_per_node(&s);
        }

        #[test]
        fn ranges_expand_to_their_size(prefix in "[a-z]{1,5}", lo in 0u32..500, len in 0u32..50, width in 1usize..5) {
            let hi = lo + len;
            let list = format!("{prefix}[{lo:0width$}-{hi}]");
            let names = expand_nodelist(&list).unwrap();
            prop_assert_eq!(names.len() as u32, len + 1);
            prop_assert_eq!(&names[0], &format!("{prefix}{lo:0width$}"));
            for n in &names {
                prop_assert!(n.len() >= prefix.len() + width);
            }
        }

        #[test]
        fn tasks_round_trip(counts in proptest::collection::vec((0u32..100, 1usize..5), 1..10)) {
            let text: Vec<String> = counts
                .iter()
                .map(|&(n, r)| if r == 1 { n.to_string() } else { format!("{n}(x{r})") })
                .collect();
            let want: Vec<u32> = counts
                .iter()
                .flat_map(|&(n, r)| std::iter::repeat_n(n, r))
                .collect();
            prop_assert_eq!(parse_tasks_per_node(&text.join(",")).unwrap(), want);
        }
    }
}
