//! Parameter files: `name = value` lines.
//!
//! Syntax: blank lines and lines starting with `#` are ignored; every other
//! line is `name = value` with optional blanks around `=`. A value may be
//! wrapped in double or single quotes, which are removed. An unquoted value
//! ends at ` #` (a `#` preceded by a blank starts a comment); a `#` inside a
//! word (`a#b`) is part of the value. `name =` sets an empty value. Names use
//! `[A-Za-z0-9_.-]`. Within one file the last line for a name wins.
//!
//! A malformed line is reported with its file and line; the other lines of
//! the file still count. Messages quote at most an excerpt of the line
//! ([`excerpt`]).

use oxmpi_plugin_api::text::excerpt;
use std::fmt;
use std::path::{Path, PathBuf};

/// One `name = value` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileEntry {
    /// Parameter name as written.
    pub name: String,
    /// Value with quotes and comment removed.
    pub value: String,
    /// 1-based line number.
    pub line: usize,
}

/// A malformed line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineError {
    /// The file.
    pub path: PathBuf,
    /// 1-based line number.
    pub line: usize,
    /// The line as written.
    pub text: String,
    /// What is wrong with it.
    pub problem: String,
    /// What a line of this kind of file looks like, for the message.
    pub expected: &'static str,
}

/// The form of parameter file lines, as [`LineError::expected`] says it.
pub const PARAM_FILE_FORM: &str =
    "Parameter file lines have the form `name = value` (blank lines and lines starting with # are ignored)";

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: {}: \"{}\". {}; fix or remove the line.",
            self.path.display(),
            self.line,
            self.problem,
            excerpt(self.text.trim_end()),
            self.expected
        )
    }
}

/// Whether `name` is a syntactically valid parameter name (letters,
/// digits, `_`, `.` and `-`; the plugin API's rule, which declarations
/// follow too).
pub use oxmpi_plugin_api::params::valid_name;

/// Removes one pair of surrounding quotes; errors on an unterminated quote or
/// text after the closing quote (other than a ` #` comment).
fn unquote(raw: &str) -> Result<String, String> {
    let raw = raw.trim();
    let Some(quote) = raw.chars().next().filter(|c| *c == '"' || *c == '\'') else {
        // Unquoted: cut at a `#` that follows a blank.
        let cut = raw
            .char_indices()
            .find(|(i, c)| *c == '#' && raw[..*i].ends_with([' ', '\t']))
            .map(|(i, _)| i)
            .unwrap_or(raw.len());
        return Ok(raw[..cut].trim_end().to_string());
    };
    let body = &raw[1..];
    let Some(end) = body.find(quote) else {
        return Err(format!(
            "the value has an opening {quote} but no closing one"
        ));
    };
    let rest = body[end + 1..].trim();
    if !rest.is_empty() && !rest.starts_with('#') {
        return Err(format!("unexpected text after the closing {quote}"));
    }
    Ok(body[..end].to_string())
}

/// Parses the text of a parameter file.
pub fn parse(path: &Path, text: &str) -> (Vec<FileEntry>, Vec<LineError>) {
    let mut entries = Vec::new();
    let mut errors = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let error = |problem: String| LineError {
            path: path.to_path_buf(),
            line: i + 1,
            text: line.to_string(),
            problem,
            expected: PARAM_FILE_FORM,
        };
        let Some((name, raw_value)) = trimmed.split_once('=') else {
            errors.push(error("no `=` on the line".into()));
            continue;
        };
        let name = name.trim();
        if name.is_empty() {
            errors.push(error("no parameter name before `=`".into()));
            continue;
        }
        if !valid_name(name) {
            errors.push(error(format!(
                "\"{}\" is not a valid parameter name (letters, digits, _ . - only)",
                excerpt(name)
            )));
            continue;
        }
        match unquote(raw_value) {
            Ok(value) => entries.push(FileEntry {
                name: name.to_string(),
                value,
                line: i + 1,
            }),
            Err(problem) => errors.push(error(problem)),
        }
    }
    (entries, errors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse_str(text: &str) -> (Vec<FileEntry>, Vec<LineError>) {
        parse(Path::new("/etc/x.conf"), text)
    }

    fn entry(name: &str, value: &str, line: usize) -> FileEntry {
        FileEntry {
            name: name.into(),
            value: value.into(),
            line,
        }
    }

    #[test]
    fn accepts_the_documented_syntax() {
        let text = "# comment\n\n  btl = tcp,self\nbtl_tcp_if_include=eth0\nx = \"a b\" # note\ny = 'q'\nz =\nw = a#b\nv = 3 # trailing\n";
        let (entries, errors) = parse_str(text);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            entries,
            vec![
                entry("btl", "tcp,self", 3),
                entry("btl_tcp_if_include", "eth0", 4),
                entry("x", "a b", 5),
                entry("y", "q", 6),
                entry("z", "", 7),
                entry("w", "a#b", 8),
                entry("v", "3", 9),
            ]
        );
    }

    #[test]
    fn malformed_lines_name_file_and_line_and_quote_the_text() {
        let (entries, errors) =
            parse_str("ok = 1\njust words\n= 5\nbad name = 2\nq = \"open\nr = \"x\" y\n");
        assert_eq!(entries, vec![entry("ok", "1", 1)]);
        let lines: Vec<usize> = errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, vec![2, 3, 4, 5, 6]);
        let msg = errors[0].to_string();
        assert!(
            msg.starts_with("/etc/x.conf:2: no `=` on the line: \"just words\""),
            "{msg}"
        );
        assert!(
            errors[3].problem.contains("no closing"),
            "{}",
            errors[3].problem
        );
    }

    #[test]
    fn errors_quote_an_excerpt_of_a_long_line() {
        let (_, errors) = parse_str(&format!("{} words\n", "x".repeat(10_000)));
        let msg = errors[0].to_string();
        assert!(
            msg.starts_with(&format!(
                "/etc/x.conf:1: no `=` on the line: \"{}…(10006 bytes)\". ",
                "x".repeat(80)
            )),
            "{msg}"
        );
        let (_, errors) = parse_str(&format!("a b{} = 1\n", "y".repeat(10_000)));
        let msg = errors[0].to_string();
        assert!(msg.len() < 600, "{msg}");
        assert!(
            msg.contains("…(10003 bytes)\" is not a valid parameter name"),
            "{msg}"
        );
    }

    proptest! {
        #[test]
        fn never_panics(text in "(?s).{0,200}") {
            let _ = parse_str(&text);
        }

        #[test]
        fn messages_stay_short(
            head in "(?s).{0,100}",
            filler in prop::sample::select(vec!["x", "=", " ", "\"", "'", "#", "é", "\u{1b}"]),
            repeat in 0usize..20_000,
            tail in "(?s).{0,100}",
        ) {
            let (_, errors) = parse_str(&format!("{head}{}{tail}", filler.repeat(repeat)));
            for e in errors {
                let msg = e.to_string();
                // The path, two excerpts (80 characters escaped to at most
                // 10 bytes each, and a length) and the fixed text.
                prop_assert!(msg.len() < 2 * (80 * 10 + 24) + 400, "{}", msg);
            }
        }

        #[test]
        fn well_formed_lines_round_trip(name in "[a-z][a-z0-9_]{0,20}", value in "[a-zA-Z0-9_,./:-]{0,20}") {
            let (entries, errors) = parse_str(&format!("{name} = {value}\n"));
            prop_assert!(errors.is_empty());
            prop_assert_eq!(entries, vec![entry(&name, &value, 1)]);
        }
    }
}
