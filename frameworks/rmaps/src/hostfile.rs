//! Hostfile grammar (`--hostfile FILE`, also `--machinefile`).
//!
//! One host per line: `[USER@]NAME [ATTRIBUTE=VALUE]...`. `#` starts a
//! comment that runs to the end of the line; blank lines are ignored;
//! spaces around `=` are allowed. Attributes:
//!
//! | attribute | synonyms | meaning |
//! |---|---|---|
//! | `slots` | `count`, `cpu` | processes that fit without oversubscribing |
//! | `max_slots` | `max-slots`, `slots_max`, `slots-max`, `cpu_max`, `max_cpu`, `count_max`, `max_count` | hard limit on processes |
//! | `username` | | login name for remote launch |
//! | `port` | | port for remote launch |
//!
//! Errors name the file and line (`my-hosts:3: ...`): a bad token (a word
//! that is not `ATTRIBUTE=VALUE`, a bad host name), a value that is not a
//! whole number, a negative `slots`, `max_slots` lower than `slots`, an
//! attribute given twice on a line, an unknown attribute.
//!
//! How lines add up per host is [`Hostfile::nodes`].

use crate::allocation::NodeSpec;
use crate::hosts::{host_name_problem, HostError};
use oxmpi_plugin_api::text::excerpt;
use std::path::{Path, PathBuf};

/// One host line of a hostfile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostLine {
    /// Host name as written (without `user@`).
    pub name: String,
    /// `slots=N`, if given.
    pub slots: Option<u32>,
    /// `max_slots=M`, if given.
    pub max_slots: Option<u32>,
    /// `user@` or `username=`, if given.
    pub username: Option<String>,
    /// `port=`, if given.
    pub port: Option<u16>,
    /// Line number in the file (from 1).
    pub line: usize,
}

/// A parsed hostfile: its path (for messages) and its host lines in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hostfile {
    /// Where it was read from, as the user gave it.
    pub path: PathBuf,
    /// Host lines in file order (comments and blank lines dropped).
    pub lines: Vec<HostLine>,
}

const SLOTS: &[&str] = &["slots", "count", "cpu"];
const MAX_SLOTS: &[&str] = &[
    "max_slots",
    "max-slots",
    "slots_max",
    "slots-max",
    "cpu_max",
    "max_cpu",
    "count_max",
    "max_count",
];
const FORM: &str = "Hostfile lines are `NAME [slots=N] [max_slots=M]`";

impl Hostfile {
    /// Parses a hostfile's text. `path` is used only in messages. An empty
    /// file (or one with only comments) parses to no lines; deciding
    /// whether that is an error is the caller's job.
    pub fn parse(path: &Path, text: &str) -> Result<Hostfile, HostError> {
        let mut lines = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            if let Some(line) = parse_line(path, i + 1, raw)? {
                lines.push(line);
            }
        }
        Ok(Hostfile {
            path: path.to_path_buf(),
            lines,
        })
    }

    /// The file's hosts, each once, in order of first appearance, with
    /// their lines added up:
    ///
    /// - a line with `slots=N` counts N slots; a line with only
    ///   `max_slots=M` counts M; a bare line counts 1 — except that a host
    ///   on a single bare line gets `default_slots` (its processor cores,
    ///   or hardware threads with `:HWTCPUS`) and `slots_given = false`;
    ///   so a host listed on three bare lines has 3 slots, as in a
    ///   machinefile;
    /// - `max_slots` is the sum of the lines' `max_slots`, or unlimited
    ///   (`None`) if any of its lines has none.
    ///
    /// Every node's `topology` is left `None`.
    pub fn nodes(&self, default_slots: u32) -> Vec<NodeSpec> {
        let mut nodes: Vec<NodeSpec> = Vec::new();
        let mut lines_per_node: Vec<u32> = Vec::new();
        let mut index = std::collections::HashMap::new();
        for line in &self.lines {
            let given = line.slots.or(line.max_slots);
            let i = *index.entry(line.name.clone()).or_insert_with(|| {
                nodes.push(NodeSpec {
                    name: line.name.clone(),
                    slots: 0,
                    max_slots: Some(0),
                    slots_given: false,
                    topology: None,
                });
                lines_per_node.push(0);
                nodes.len() - 1
            });
            let node = &mut nodes[i];
            lines_per_node[i] += 1;
            node.slots = node.slots.saturating_add(given.unwrap_or(1));
            node.slots_given |= given.is_some();
            node.max_slots = match (node.max_slots, line.max_slots) {
                (Some(a), Some(b)) => Some(a.saturating_add(b)),
                _ => None,
            };
        }
        for (node, lines) in nodes.iter_mut().zip(lines_per_node) {
            if !node.slots_given && lines == 1 {
                node.slots = default_slots;
            } else if lines > 1 {
                node.slots_given = true;
            }
        }
        nodes
    }
}

fn parse_line(path: &Path, number: usize, raw: &str) -> Result<Option<HostLine>, HostError> {
    let line = raw.split('#').next().unwrap_or("").trim();
    if line.is_empty() {
        return Ok(None);
    }
    let err = |what: String| {
        HostError(format!(
            "{}:{number}: {what}: \"{}\". {FORM}.",
            path.display(),
            excerpt(raw.trim())
        ))
    };
    let (first, rest) = match line.find(char::is_whitespace) {
        Some(at) => (&line[..at], line[at..].trim_start()),
        None => (line, ""),
    };
    let (user, name) = match first.split_once('@') {
        Some((u, n)) if !u.is_empty() => (Some(u.to_string()), n),
        Some(_) => {
            return Err(err(format!(
                "\"{}\" has an empty user name before @",
                excerpt(first)
            )))
        }
        None => (None, first),
    };
    if name.starts_with('^') || name.starts_with('+') {
        return Err(err(format!(
            "\"{}\" (excluding a host with ^ or a relative +n host) is not supported; list the hosts to use",
            excerpt(name)
        )));
    }
    if name.contains('=') {
        return Err(err(format!(
            "the line starts with \"{}\", not a host name",
            excerpt(name)
        )));
    }
    if let Some(problem) = host_name_problem(name) {
        return Err(err(format!("\"{}\" {problem}", excerpt(name))));
    }
    let mut host = HostLine {
        name: name.to_string(),
        slots: None,
        max_slots: None,
        username: user,
        port: None,
        line: number,
    };
    for (key, value) in attributes(rest).map_err(|w| {
        err(format!(
            "unexpected \"{}\" (expected ATTRIBUTE=VALUE after the host name)",
            excerpt(w)
        ))
    })? {
        let lower = key.to_ascii_lowercase();
        let number = || -> Result<u32, HostError> {
            let n = value.parse::<i64>().map_err(|_| {
                err(format!(
                    "{key} needs a whole number, not \"{}\"",
                    excerpt(value)
                ))
            })?;
            if n < 0 {
                return Err(err(format!("{key} cannot be negative ({n})")));
            }
            u32::try_from(n).map_err(|_| err(format!("{key}={n} is too large")))
        };
        let twice = || err(format!("{key} is given twice on this line"));
        if SLOTS.contains(&lower.as_str()) {
            if host.slots.is_some() {
                return Err(twice());
            }
            host.slots = Some(number()?);
        } else if MAX_SLOTS.contains(&lower.as_str()) {
            if host.max_slots.is_some() {
                return Err(twice());
            }
            host.max_slots = Some(number()?);
        } else if lower == "username" {
            if value.is_empty() {
                return Err(err("username needs a value".into()));
            }
            host.username = Some(value.to_string());
        } else if lower == "port" {
            host.port = Some(value.parse::<u16>().map_err(|_| {
                err(format!(
                    "port needs a number from 0 to 65535, not \"{}\"",
                    excerpt(value)
                ))
            })?);
        } else {
            return Err(err(format!(
                "unknown attribute \"{}\" (known: slots, max_slots, username, port)",
                excerpt(key)
            )));
        }
    }
    if let (Some(slots), Some(max)) = (host.slots, host.max_slots) {
        if max < slots {
            return Err(err(format!("max_slots={max} is less than slots={slots}")));
        }
    }
    Ok(Some(host))
}

/// Splits `key=value key = value ...`; on a word that is not part of such
/// a pair, returns that word.
fn attributes(text: &str) -> Result<Vec<(&str, &str)>, &str> {
    let mut out = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let key_end = rest
            .find(|c: char| c.is_whitespace() || c == '=')
            .unwrap_or(rest.len());
        let key = &rest[..key_end];
        let after = rest[key_end..].trim_start();
        let word_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let Some(after_eq) = after.strip_prefix('=') else {
            return Err(&rest[..word_end]);
        };
        if key.is_empty() {
            return Err(&rest[..word_end]);
        }
        let after_eq = after_eq.trim_start();
        let value_end = after_eq.find(char::is_whitespace).unwrap_or(after_eq.len());
        out.push((key, &after_eq[..value_end]));
        rest = after_eq[value_end..].trim_start();
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Hostfile {
        Hostfile::parse(Path::new("hf"), text).unwrap_or_else(|e| panic!("{e}"))
    }

    fn node(name: &str, slots: u32, max: Option<u32>, given: bool) -> NodeSpec {
        NodeSpec {
            name: name.into(),
            slots,
            max_slots: max,
            slots_given: given,
            topology: None,
        }
    }

    #[test]
    fn reference_example_hostfile() {
        // The commented example hostfile of the reference.
        let text = "# This is an example hostfile. Comments begin with #.\n#\n\
# Since no slots are specified, the number of slots defaults to the\n\
# number of processor cores available on the machine.\nfoo.example.com\n\
# We want to allow launching a maximum of 2 processes on this host\n\
# (e.g., potentially because it has two processor cores):\nbar.example.com slots=2\n";
        let hf = parse(text);
        assert_eq!(hf.lines.len(), 2);
        assert_eq!(hf.lines[0].line, 5);
        assert_eq!(hf.lines[1].line, 8);
        assert_eq!(
            hf.nodes(4),
            vec![
                node("foo.example.com", 4, None, false),
                node("bar.example.com", 2, None, true)
            ]
        );
    }

    #[test]
    fn attributes_and_synonyms() {
        let hf = parse(
            "a slots=2 max_slots=4\nb count=3\nc cpu = 5  max-slots= 6\nd max_slots=3\nalice@e port=22 username=bob\nf SLOTS=1 slots_max=1 # trailing\n",
        );
        let l = &hf.lines;
        assert_eq!((l[0].slots, l[0].max_slots), (Some(2), Some(4)));
        assert_eq!((l[1].slots, l[1].max_slots), (Some(3), None));
        assert_eq!((l[2].slots, l[2].max_slots), (Some(5), Some(6)));
        assert_eq!((l[3].slots, l[3].max_slots), (None, Some(3)));
        assert_eq!(l[4].name, "e");
        assert_eq!(l[4].username.as_deref(), Some("bob"));
        assert_eq!(l[4].port, Some(22));
        assert_eq!((l[5].slots, l[5].max_slots), (Some(1), Some(1)));
        // Only max_slots: slots = max_slots.
        assert_eq!(hf.nodes(8)[3], node("d", 3, Some(3), true));
    }

    #[test]
    fn repeated_hosts_add_up() {
        let hf = parse(
            "node0 slots=2 max_slots=20\nnode1 slots=2\nnode0 slots=1 max_slots=1\nm\nm\nm\nn slots=2\nn\n",
        );
        assert_eq!(
            hf.nodes(16),
            vec![
                node("node0", 3, Some(21), true),
                node("node1", 2, None, true),
                node("m", 3, None, true),
                node("n", 3, None, true),
            ]
        );
        // A max_slots on one line only: the other line is unlimited.
        let hf = parse("a slots=1 max_slots=2\na slots=1\n");
        assert_eq!(hf.nodes(4), vec![node("a", 2, None, true)]);
    }

    #[test]
    fn blank_lines_comments_and_crlf() {
        let hf = parse("\n   \n# only a comment\r\n  a  \r\n\tb slots=1\t# c\r\n");
        assert_eq!(hf.lines.len(), 2);
        assert_eq!(hf.lines[0].name, "a");
        assert_eq!(hf.lines[0].line, 4);
        assert!(parse("# nothing\n").lines.is_empty());
    }

    #[test]
    fn every_error_names_file_and_line() {
        for (text, what) in [
            ("a slots=x", "slots needs a whole number, not \"x\""),
            ("a slots=", "slots needs a whole number"),
            ("a slots=-1", "slots cannot be negative"),
            ("a max_slots=-3", "max_slots cannot be negative"),
            ("a slots=4 max_slots=2", "max_slots=2 is less than slots=4"),
            ("a color=red", "unknown attribute \"color\""),
            ("a b", "unexpected \"b\""),
            ("a slots 2", "unexpected \"slots\""),
            ("a =2", "unexpected \"=2\""),
            ("a slots=1 slots=2", "slots is given twice"),
            ("a slots=1 count=2", "count is given twice"),
            ("slots=2", "not a host name"),
            ("a/b slots=1", "\"a/b\" is not a host name"),
            ("@a", "empty user name"),
            ("^a", "not supported"),
            ("a port=99999", "port needs a number"),
            ("a slots=99999999999", "too large"),
        ] {
            let e = Hostfile::parse(Path::new("/h/hosts"), &format!("# c\n\n{text}\n"))
                .unwrap_err()
                .0;
            assert!(e.starts_with("/h/hosts:3: "), "{e}");
            assert!(e.contains(what), "{text}: {e}");
            assert!(e.contains(FORM), "{e}");
        }
    }

    #[test]
    fn errors_quote_a_bounded_excerpt_of_the_line() {
        let line = format!("a {}", "x".repeat(5 * 1024 * 1024));
        let e = Hostfile::parse(Path::new("/h/hosts"), &line).unwrap_err().0;
        assert!(e.len() < 500, "{} bytes: {}", e.len(), &e[..500]);
        assert!(e.starts_with("/h/hosts:1: unexpected \"xxxx"), "{e}");
        assert!(e.contains("…(5242880 bytes)\""), "{e}");
        assert!(e.contains("…(5242882 bytes)\". "), "{e}");
        for line in [
            format!("a {}=1", "k".repeat(100_000)),
            format!("a slots={}", "9".repeat(100_000)),
            format!("a port={}", "9".repeat(100_000)),
            format!("{}=2", "h".repeat(100_000)),
            format!("^{}", "h".repeat(100_000)),
            format!("@{}", "h".repeat(100_000)),
            format!("{}/", "h".repeat(100_000)),
        ] {
            let e = Hostfile::parse(Path::new("hf"), &line).unwrap_err().0;
            assert!(e.len() < 600, "{} bytes: {}", e.len(), &e[..600]);
        }
    }

    #[test]
    fn host_names_are_at_most_255_bytes() {
        let ok = "n".repeat(255);
        assert_eq!(parse(&format!("{ok} slots=1\n")).lines[0].name, ok);
        let long = "n".repeat(256);
        let e = Hostfile::parse(Path::new("hf"), &long).unwrap_err().0;
        assert!(
            e.contains("is not a host name: it is longer than 255 characters"),
            "{e}"
        );
    }

    proptest::proptest! {
        #[test]
        fn parse_never_panics_and_errors_stay_short(
            head in "(?s).{0,200}",
            filler in proptest::sample::select(vec!["x", "=", " ", "@", "é", "\u{1b}"]),
            repeat in 0usize..20_000,
            tail in "(?s).{0,100}",
        ) {
            let text = format!("{head}{}{tail}", filler.repeat(repeat));
            if let Err(e) = Hostfile::parse(Path::new("hf"), &text) {
                // At most two excerpts of 80 characters (each escaped to at
                // most 10 bytes, plus the length) and the fixed text.
                proptest::prop_assert!(e.0.len() < 2 * (80 * 10 + 24) + 400, "{}", e.0);
            }
        }

        #[test]
        fn parse_never_panics_on_host_lines(
            lines in proptest::collection::vec(
                "[a-z@^+=#. \t]{0,6}( [a-z_-]{0,9} ?= ?[-0-9a-z]{0,12}){0,4}",
                0..20,
            )
        ) {
            let _ = Hostfile::parse(Path::new("hf"), &lines.join("\n"));
        }
    }
}
