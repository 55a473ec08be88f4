//! The selection parameter `<fw>` (`a,b` = only these, `^a,b` = all but
//! these) and the choice among usable components.
//!
//! Blanks around names are ignored. A `^` at the start applies to the whole
//! list (`^a,b` excludes both; `^a,^b` means the same). A `^` on a later
//! item of an include list (`a,^b`) mixes the two forms and is an error; so
//! is an empty name. Including a
//! component that is not available is an error listing the available ones;
//! excluding one that is not available is only logged. Errors quote at
//! most an excerpt of the value and of the names ([`excerpt`]).
//!
//! An old name of a renamed component ([`ComponentAlias`], btl `vader`)
//! stands for its current name (`sm`) whether that component is installed
//! or not; the parsed filter holds current names only, each once (`vader,sm`
//! is `sm`). The caller notes the old names used ([`renamed_note`]).

use oxmpi_plugin_api::text::excerpt;
use oxmpi_plugin_api::{ComponentAlias, SelectionKind};
use std::fmt;

/// A parsed selection parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Filter {
    /// Empty value: every component.
    All,
    /// Only these.
    Include(Vec<String>),
    /// All but these.
    Exclude(Vec<String>),
}

/// An invalid selection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectionError(pub String);

impl fmt::Display for SelectionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SelectionError {}

impl Filter {
    /// Parses the value of parameter `framework`, set by `source`, reading
    /// the old names of `aliases` (the framework's
    /// [`component_aliases`](oxmpi_plugin_api::FrameworkInfo::component_aliases))
    /// as the current ones. Errors on a list that mixes included and
    /// excluded names or has an empty name.
    pub fn parse(
        framework: &str,
        value: &str,
        source: &str,
        aliases: &[ComponentAlias],
    ) -> Result<Filter, SelectionError> {
        Filter::parse_noting_aliases(framework, value, source, aliases).map(|(filter, _)| filter)
    }

    /// [`Filter::parse`], also returning the aliases whose old name the
    /// list uses, once each, in the order the list first uses them.
    pub fn parse_noting_aliases<'a>(
        framework: &str,
        value: &str,
        source: &str,
        aliases: &'a [ComponentAlias],
    ) -> Result<(Filter, Vec<&'a ComponentAlias>), SelectionError> {
        let value = value.trim();
        if value.is_empty() {
            return Ok((Filter::All, Vec::new()));
        }
        let items: Vec<&str> = value.split(',').map(str::trim).collect();
        let negated = items[0].starts_with('^');
        if let Some(stray) = items
            .iter()
            .skip(1)
            .find(|i| i.starts_with('^'))
            .filter(|_| !negated)
        {
            let first_pos = excerpt(items[0]);
            let stray = excerpt(stray);
            let value = excerpt(value);
            return Err(SelectionError(format!(
                "parameter {framework} = \"{value}\" (from {source}) mixes included ({first_pos}) and excluded ({stray}) components. \
A ^ at the start excludes every component listed after it: \"^tcp,self\" uses all {framework} components except tcp and self. \
Without ^ the list names the only components to use: \"tcp,self\". Use one form or the other."
            )));
        }
        let written: Vec<&str> = items
            .iter()
            .map(|i| i.trim_start_matches('^').trim())
            .collect();
        if written.iter().any(|n| n.is_empty()) {
            return Err(SelectionError(format!(
                "parameter {framework} = \"{}\" (from {source}) has an empty component name; list component names separated by commas, such as \"tcp,self\"",
                excerpt(value)
            )));
        }
        let mut names: Vec<String> = Vec::with_capacity(written.len());
        // Names seen, so a huge list is deduplicated in linear time.
        let mut seen: std::collections::HashSet<&str> =
            std::collections::HashSet::with_capacity(written.len());
        let mut renamed: Vec<&'a ComponentAlias> = Vec::new();
        for name in written {
            let current = match aliases.iter().find(|a| a.old == name) {
                Some(alias) => {
                    if !renamed.iter().any(|r| r.old == alias.old) {
                        renamed.push(alias);
                    }
                    alias.current
                }
                None => name,
            };
            if seen.insert(current) {
                names.push(current.to_string());
            }
        }
        let filter = if negated {
            Filter::Exclude(names)
        } else {
            Filter::Include(names)
        };
        Ok((filter, renamed))
    }

    /// Whether the filter lets `component` be used.
    pub fn allows(&self, component: &str) -> bool {
        match self {
            Filter::All => true,
            Filter::Include(names) => names.iter().any(|n| n == component),
            Filter::Exclude(names) => !names.iter().any(|n| n == component),
        }
    }

    /// Whether the user named `component` explicitly to be used.
    pub fn requests(&self, component: &str) -> bool {
        matches!(self, Filter::Include(names) if names.iter().any(|n| n == component))
    }

    /// Checks that every included component is available. `not_loaded`
    /// answers why a component's library did not load (one sentence), or
    /// `None`; it is asked only about missing components, each of which
    /// it has a reason for is named with it.
    ///
    /// # Errors
    ///
    /// An included component is not available: the message names it,
    /// the parameter and its source, what is available, and where to look.
    pub fn check_available(
        &self,
        framework: &str,
        value: &str,
        source: &str,
        available: &[&str],
        not_loaded: impl Fn(&str) -> Option<String>,
    ) -> Result<(), SelectionError> {
        let Filter::Include(names) = self else {
            return Ok(());
        };
        let missing: Vec<&str> = names
            .iter()
            .map(String::as_str)
            .filter(|n| !available.contains(n))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let listing = if available.is_empty() {
            format!("No {framework} components are installed")
        } else {
            format!("Available {framework} components: {}", available.join(", "))
        };
        let why: String = missing
            .iter()
            .filter_map(|&m| Some((m, not_loaded(m)?)))
            .map(|(n, reason)| format!(" {n}: {}.", reason.trim_end_matches('.')))
            .collect();
        Err(SelectionError(format!(
            "parameter {framework} = \"{}\" (from {source}) asks for {} {} that {} not available.{why} {listing}. \
Run `oxmpi_info --show-failed` to see component libraries that failed to load, and `oxmpi_info --path` for where components are searched.",
            excerpt(value.trim()),
            if missing.len() == 1 { "component" } else { "components" },
            excerpt(&missing.join(", ")),
            if missing.len() == 1 { "is" } else { "are" },
        )))
    }
}

/// The note for a selection parameter `framework` = `value` (set by
/// `source`) that uses the old name of `alias`: what the component is
/// called now, and that the old name still works but is deprecated.
pub fn renamed_note(framework: &str, alias: &ComponentAlias, value: &str, source: &str) -> String {
    let (old, current) = (alias.old, alias.current);
    format!(
        "{framework} component \"{old}\" is now called \"{current}\"; \"{old}\" still works but is deprecated: use \"{current}\" ({framework} = \"{}\", from {source})",
        excerpt(value.trim())
    )
}

/// A component whose query answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// Component name.
    pub name: String,
    /// Its priority, or `None` if it declined.
    pub priority: Option<i32>,
}

/// Picks the components to use: the usable ones ordered by priority (highest
/// first) then name; single-select keeps only the first. The order never
/// depends on the order in which components were loaded.
pub fn choose(kind: SelectionKind, candidates: &[Candidate]) -> Vec<(String, i32)> {
    let mut usable: Vec<(String, i32)> = candidates
        .iter()
        .filter_map(|c| c.priority.map(|p| (c.name.clone(), p)))
        .collect();
    usable.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    if kind == SelectionKind::Single {
        usable.truncate(1);
    }
    usable
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: &str) -> Result<Filter, SelectionError> {
        Filter::parse("btl", v, "command line", &[])
    }

    #[test]
    fn include_exclude_and_all() {
        assert_eq!(parse(""), Ok(Filter::All));
        assert_eq!(
            parse(" tcp , self "),
            Ok(Filter::Include(vec!["tcp".into(), "self".into()]))
        );
        assert_eq!(
            parse("^tcp,self"),
            Ok(Filter::Exclude(vec!["tcp".into(), "self".into()]))
        );
        assert_eq!(
            parse("^tcp,^self"),
            Ok(Filter::Exclude(vec!["tcp".into(), "self".into()]))
        );
        let f = parse("^tcp").unwrap();
        assert!(f.allows("self") && !f.allows("tcp") && !f.requests("self"));
        let f = parse("tcp").unwrap();
        assert!(f.allows("tcp") && !f.allows("self") && f.requests("tcp"));
    }

    #[test]
    fn mixing_is_an_error_that_explains_negation() {
        let e = parse("tcp,^self").unwrap_err().to_string();
        assert!(
            e.contains("mixes included (tcp) and excluded (^self)"),
            "{e}"
        );
        assert!(
            e.contains("A ^ at the start excludes every component listed after it"),
            "{e}"
        );
        assert!(e.contains("from command line"), "{e}");
    }

    #[test]
    fn empty_names_are_errors() {
        assert!(parse("tcp,,self").is_err());
        assert!(parse("^").is_err());
        assert!(parse("tcp,").is_err());
    }

    #[test]
    fn unavailable_included_component_lists_available_ones() {
        let f = parse("nosuch").unwrap();
        let e = f
            .check_available("btl", "nosuch", "command line", &["self", "tcp"], |_| None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("asks for component nosuch that is not available"),
            "{e}"
        );
        assert!(e.contains("Available btl components: self, tcp."), "{e}");
        let e = f
            .check_available("btl", "nosuch", "command line", &[], |_| None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("No btl components are installed"), "{e}");
        assert!(parse("^nosuch")
            .unwrap()
            .check_available("btl", "^nosuch", "x", &["tcp"], |_| None)
            .is_ok());
    }

    #[test]
    fn an_included_component_whose_library_did_not_load_is_named_with_why() {
        let not_loaded = |name: &str| {
            (name == "junk").then(|| {
                "its library /x/libmca_btl_junk.so did not load: it is not a shared library."
                    .to_string()
            })
        };
        let e = parse("junk,self")
            .unwrap()
            .check_available(
                "btl",
                "junk,self",
                "command line",
                &["self", "tcp"],
                not_loaded,
            )
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("asks for component junk that is not available. junk: its library /x/libmca_btl_junk.so did not load: it is not a shared library. Available btl components: self, tcp."),
            "{e}"
        );
        // A library that did not load but is not asked for is not named.
        let e = parse("nosuch")
            .unwrap()
            .check_available("btl", "nosuch", "command line", &["self"], not_loaded)
            .unwrap_err()
            .to_string();
        assert!(!e.contains("junk"), "{e}");
    }

    const VADER: &[ComponentAlias] = &[ComponentAlias::new("vader", "sm")];

    /// The filter and the old names used, for btl with `vader` -> `sm`.
    fn parse_aliased(v: &str) -> (Filter, Vec<&'static str>) {
        let (filter, renamed) = Filter::parse_noting_aliases("btl", v, "command line", VADER)
            .unwrap_or_else(|e| panic!("{v}: {e}"));
        (filter, renamed.iter().map(|a| a.old).collect())
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn an_old_name_is_read_as_the_current_one() {
        assert_eq!(
            parse_aliased("self,vader"),
            (Filter::Include(names(&["self", "sm"])), vec!["vader"])
        );
        let (f, renamed) = parse_aliased(" vader ");
        assert_eq!(renamed, ["vader"]);
        assert!(f.allows("sm") && f.requests("sm") && !f.allows("vader") && !f.allows("tcp"));
        // Current names and names without an alias are left alone.
        assert_eq!(
            parse_aliased("sm,tcp"),
            (Filter::Include(names(&["sm", "tcp"])), vec![])
        );
        // No aliases: the old name is just a name.
        assert_eq!(parse("vader"), Ok(Filter::Include(names(&["vader"]))));
        assert_eq!(parse_aliased(""), (Filter::All, vec![]));
    }

    #[test]
    fn excluding_an_old_name_excludes_the_current_component() {
        let (f, renamed) = parse_aliased("^vader");
        assert_eq!(f, Filter::Exclude(names(&["sm"])));
        assert_eq!(renamed, ["vader"]);
        assert!(!f.allows("sm") && f.allows("tcp") && f.allows("self"));
        assert_eq!(
            parse_aliased("^tcp,^vader").0,
            Filter::Exclude(names(&["tcp", "sm"]))
        );
        assert_eq!(
            parse_aliased("^vader,tcp").0,
            Filter::Exclude(names(&["sm", "tcp"]))
        );
    }

    #[test]
    fn old_and_current_names_together_count_once() {
        for v in ["vader,sm", "sm,vader", "vader,vader", "sm,vader,sm"] {
            let (f, renamed) = parse_aliased(v);
            assert_eq!(f, Filter::Include(names(&["sm"])), "{v}");
            assert_eq!(renamed, ["vader"], "{v}: each old name is reported once");
        }
        let (f, _) = parse_aliased("^vader,sm,tcp,vader");
        assert_eq!(f, Filter::Exclude(names(&["sm", "tcp"])));
        assert_eq!(parse("tcp,tcp"), Ok(Filter::Include(names(&["tcp"]))));
        // Listed once, so an include of both is available when sm is.
        assert!(parse_aliased("vader,sm")
            .0
            .check_available("btl", "vader,sm", "command line", &["self", "sm"], |_| None)
            .is_ok());
    }

    #[test]
    fn the_grammar_still_applies_to_lists_with_old_names() {
        let mixed = Filter::parse("btl", "self,^vader", "command line", VADER)
            .unwrap_err()
            .to_string();
        assert!(
            mixed.contains("mixes included (self) and excluded (^vader)"),
            "{mixed}"
        );
        assert!(Filter::parse("btl", "vader,,self", "x", VADER).is_err());
        assert!(Filter::parse("btl", "^", "x", VADER).is_err());
    }

    #[test]
    fn an_old_name_of_a_component_that_is_not_installed_is_still_translated() {
        let (f, renamed) = parse_aliased("self,vader");
        assert_eq!(renamed, ["vader"]);
        let e = f
            .check_available(
                "btl",
                "self,vader",
                "command line",
                &["self", "tcp"],
                |_| None,
            )
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("asks for component sm that is not available"),
            "{e}"
        );
        assert!(e.contains("Available btl components: self, tcp."), "{e}");
        assert!(parse_aliased("^vader")
            .0
            .check_available("btl", "^vader", "command line", &["tcp"], |_| None)
            .is_ok());
    }

    #[test]
    fn the_note_names_both_names_and_where_the_list_came_from() {
        let note = renamed_note("btl", &VADER[0], " self,vader ", "command line");
        assert_eq!(
            note,
            "btl component \"vader\" is now called \"sm\"; \"vader\" still works but is deprecated: use \"sm\" (btl = \"self,vader\", from command line)"
        );
    }

    #[test]
    fn choice_is_by_priority_then_name_not_load_order() {
        let c = |n: &str, p: Option<i32>| Candidate {
            name: n.into(),
            priority: p,
        };
        let cands = [
            c("zeta", Some(20)),
            c("alpha", Some(20)),
            c("mid", Some(30)),
            c("no", None),
        ];
        assert_eq!(
            choose(SelectionKind::Single, &cands),
            vec![("mid".into(), 30)]
        );
        assert_eq!(
            choose(SelectionKind::Multi, &cands),
            vec![
                ("mid".into(), 30),
                ("alpha".into(), 20),
                ("zeta".into(), 20)
            ]
        );
        let tie = [c("zeta", Some(5)), c("alpha", Some(5))];
        assert_eq!(
            choose(SelectionKind::Single, &tie),
            vec![("alpha".into(), 5)]
        );
        let mut reversed = tie.to_vec();
        reversed.reverse();
        assert_eq!(
            choose(SelectionKind::Single, &reversed),
            vec![("alpha".into(), 5)]
        );
        assert!(choose(SelectionKind::Single, &[c("no", None)]).is_empty());
    }
}
