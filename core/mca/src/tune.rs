//! Tune files (`--tune FILE`): command-line fragments kept in a file.
//!
//! Each line holds, split into words like a shell does (quotes group words
//! and are removed; a word starting with `#` ends the line), any number of:
//! `--mca NAME VALUE` (or `-mca`), `-x VAR` / `-x VAR=VALUE`, and
//! `NAME=VALUE` or `NAME = VALUE`. Anything else is an error naming the
//! file and line.

use crate::files::{valid_name, LineError};
use oxmpi_plugin_api::text::excerpt;
use std::path::Path;

/// One item of a tune file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TuneEntry {
    /// An MCA parameter.
    Param {
        /// Parameter name.
        name: String,
        /// Value.
        value: String,
        /// 1-based line.
        line: usize,
    },
    /// An environment export (`-x VAR` copies VAR from the environment).
    Export {
        /// Variable name.
        variable: String,
        /// The value, if given.
        value: Option<String>,
        /// 1-based line.
        line: usize,
    },
}

/// The form of tune file lines, as [`LineError::expected`] says it.
pub const TUNE_FILE_FORM: &str = "Tune file lines hold `--mca NAME VALUE` (or `-mca`), `-x VAR[=VALUE]` or `NAME = VALUE` (blank lines and lines starting with # are ignored)";

/// Parses the text of a tune file.
pub fn parse(path: &Path, text: &str) -> (Vec<TuneEntry>, Vec<LineError>) {
    let mut entries = Vec::new();
    let mut errors = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let error = |problem: String| LineError {
            path: path.to_path_buf(),
            line: line_no,
            text: line.to_string(),
            problem,
            expected: TUNE_FILE_FORM,
        };
        let Some(words) = shlex::split(line) else {
            errors.push(error("unbalanced quotes".into()));
            continue;
        };
        let mut words = words.into_iter().peekable();
        let mut line_entries = Vec::new();
        let mut problem = None;
        while let Some(word) = words.next() {
            match word.as_str() {
                "--mca" | "-mca" => match (words.next(), words.next()) {
                    (Some(name), Some(value)) if valid_name(&name) => {
                        line_entries.push(TuneEntry::Param {
                            name,
                            value,
                            line: line_no,
                        })
                    }
                    (Some(name), Some(_)) => {
                        problem = Some(format!(
                            "\"{}\" is not a valid parameter name",
                            excerpt(&name)
                        ));
                        break;
                    }
                    _ => {
                        problem = Some(format!("{word} needs a parameter name and a value"));
                        break;
                    }
                },
                "-x" => match words.next() {
                    Some(spec) => {
                        let (variable, value) = match spec.split_once('=') {
                            Some((v, val)) => (v.to_string(), Some(val.to_string())),
                            None if words.peek().map(String::as_str) == Some("=") => {
                                words.next();
                                (spec.clone(), Some(words.next().unwrap_or_default()))
                            }
                            None => (spec.clone(), None),
                        };
                        if variable.is_empty() {
                            problem = Some("-x needs a variable name".into());
                            break;
                        }
                        line_entries.push(TuneEntry::Export {
                            variable,
                            value,
                            line: line_no,
                        });
                    }
                    None => {
                        problem = Some("-x needs a variable name".into());
                        break;
                    }
                },
                _ => {
                    let (name, value) = if let Some((n, v)) = word.split_once('=') {
                        (n.to_string(), v.to_string())
                    } else if words.next_if(|w| w == "=").is_some() {
                        (word.clone(), words.next().unwrap_or_default())
                    } else {
                        problem = Some(format!(
                            "unexpected \"{}\" (expected --mca NAME VALUE, -x VAR[=VALUE] or NAME = VALUE)",
                            excerpt(&word)
                        ));
                        break;
                    };
                    if !valid_name(&name) {
                        problem = Some(format!(
                            "\"{}\" is not a valid parameter name",
                            excerpt(&name)
                        ));
                        break;
                    }
                    line_entries.push(TuneEntry::Param {
                        name,
                        value,
                        line: line_no,
                    });
                }
            }
        }
        match problem {
            Some(p) => errors.push(error(p)),
            None => entries.extend(line_entries),
        }
    }
    (entries, errors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn param(name: &str, value: &str, line: usize) -> TuneEntry {
        TuneEntry::Param {
            name: name.into(),
            value: value.into(),
            line,
        }
    }

    #[test]
    fn accepts_every_form() {
        let text = "--mca btl tcp,self\n-mca pml ob1 -x FOO\n# comment\n-x BAR=1 btl_base_verbose=10\nmpi_yield = 1   # yield\n-x BAZ = 2\n--mca x \"a b\"\n";
        let (entries, errors) = parse(Path::new("t.conf"), text);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            entries,
            vec![
                param("btl", "tcp,self", 1),
                param("pml", "ob1", 2),
                TuneEntry::Export {
                    variable: "FOO".into(),
                    value: None,
                    line: 2
                },
                TuneEntry::Export {
                    variable: "BAR".into(),
                    value: Some("1".into()),
                    line: 4
                },
                param("btl_base_verbose", "10", 4),
                param("mpi_yield", "1", 5),
                TuneEntry::Export {
                    variable: "BAZ".into(),
                    value: Some("2".into()),
                    line: 6
                },
                param("x", "a b", 7),
            ]
        );
    }

    #[test]
    fn bad_lines_are_errors() {
        let (entries, errors) = parse(
            Path::new("t.conf"),
            "--mca onlyname\nhello\n-x\n--mca x \"open\n--mca 'bad name' 1\n",
        );
        assert!(entries.is_empty(), "{entries:?}");
        assert_eq!(
            errors.iter().map(|e| e.line).collect::<Vec<_>>(),
            vec![1, 2, 3, 4, 5]
        );
        assert!(errors[1].to_string().contains("t.conf:2"), "{}", errors[1]);
        // The advice is about tune files, not parameter files.
        assert!(
            errors[1]
                .to_string()
                .contains("Tune file lines hold `--mca NAME VALUE`")
                && !errors[1].to_string().contains("Parameter file lines"),
            "{}",
            errors[1]
        );
    }

    #[test]
    fn errors_quote_an_excerpt_of_a_long_line() {
        let word = "w".repeat(10_000);
        let (_, errors) = parse(Path::new("t.conf"), &format!("{word}\n"));
        let msg = errors[0].to_string();
        assert!(msg.len() < 800, "{msg}");
        assert!(
            msg.starts_with(&format!(
                "t.conf:1: unexpected \"{}…(10000 bytes)\" (expected --mca NAME VALUE",
                "w".repeat(80)
            )),
            "{msg}"
        );
        let (_, errors) = parse(Path::new("t.conf"), &format!("--mca {word}% 1\n"));
        assert!(errors[0].to_string().len() < 800, "{}", errors[0]);
    }

    proptest! {
        #[test]
        fn never_panics(text in "(?s).{0,200}") {
            let _ = parse(Path::new("t"), &text);
        }

        #[test]
        fn messages_stay_short(
            head in "(?s).{0,100}",
            filler in prop::sample::select(vec!["x", "=", " ", "\"", "'", "#", "-x ", "%", "\u{1b}"]),
            repeat in 0usize..20_000,
            tail in "(?s).{0,100}",
        ) {
            let (_, errors) = parse(Path::new("t"), &format!("{head}{}{tail}", filler.repeat(repeat)));
            for e in errors {
                let msg = e.to_string();
                prop_assert!(msg.len() < 2 * (80 * 10 + 24) + 400, "{}", msg);
            }
        }
    }
}
