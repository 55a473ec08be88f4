//! Mapping and ranking policies: `--map-by`, `--rank-by` and the
//! parameters `rmaps_default_mapping_policy` / `rmaps_default_ranking_policy`.
//!
//! `--map-by` grammar (case-insensitive; any unambiguous prefix of a
//! keyword is accepted, as in Open MPI 5):
//!
//! ```text
//! [POLICY][:MODIFIER]...
//! POLICY    slot | node | core | hwthread | package | socket | numa | seq
//!           | ppr:N:RESOURCE        (RESOURCE: node | package | socket | numa | core | hwthread)
//! MODIFIER  OVERSUBSCRIBE | NOOVERSUBSCRIBE | PE=n | HWTCPUS | CORECPUS | SPAN
//! ```
//!
//! Modifiers may also be separated by commas (`core:PE=2,SPAN`, the Open
//! MPI 4 form). A value made only of modifiers (`:OVERSUBSCRIBE`) keeps the
//! default policy and changes only what it names.
//!
//! An installed rmaps component may declare more policy names
//! ([`crate::module::PolicyName`]); [`parse_map_by_with`] accepts them
//! (whole words or unambiguous prefixes, followed by modifiers) as
//! [`MapBy::Named`], and lists them among the accepted values.

use crate::topology::Resource;
use oxmpi_plugin_api::text::excerpt;
use std::fmt;

/// Where processes go.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum MapBy {
    /// Fill each node's slots before moving to the next (the default).
    Slot,
    /// One process per node in turn.
    Node,
    /// Like `Slot` across nodes; inside a node, one process per hardware
    /// thread in turn.
    Hwthread,
    /// Like `Slot` across nodes; inside a node, one process per core in turn.
    Core,
    /// Like `Slot` across nodes; inside a node, one process per NUMA domain
    /// in turn.
    Numa,
    /// Like `Slot` across nodes; inside a node, one process per package in
    /// turn.
    Package,
    /// One process per hostfile line, in order (the seq mapper).
    Seq,
    /// `ppr:N:RESOURCE`: N processes on each resource of every node (the
    /// ppr mapper).
    Ppr {
        /// Processes per resource (at least 1).
        count: u32,
        /// The resource.
        resource: Resource,
    },
    /// A policy name an installed rmaps component declared (lower case);
    /// that component maps the job.
    Named(String),
}

impl MapBy {
    /// The object type processes are spread over inside a node, for the
    /// by-object policies (`core`, `package`, …); `None` otherwise.
    pub fn object(&self) -> Option<Resource> {
        match self {
            MapBy::Hwthread => Some(Resource::Hwthread),
            MapBy::Core => Some(Resource::Core),
            MapBy::Numa => Some(Resource::Numa),
            MapBy::Package => Some(Resource::Package),
            _ => None,
        }
    }
}

impl fmt::Display for MapBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MapBy::Slot => f.write_str("slot"),
            MapBy::Node => f.write_str("node"),
            MapBy::Hwthread => f.write_str("hwthread"),
            MapBy::Core => f.write_str("core"),
            MapBy::Numa => f.write_str("numa"),
            MapBy::Package => f.write_str("package"),
            MapBy::Seq => f.write_str("seq"),
            MapBy::Ppr { count, resource } => write!(f, "ppr:{count}:{resource}"),
            MapBy::Named(name) => f.write_str(name),
        }
    }
}

/// A parsed `--map-by` or `rmaps_default_mapping_policy` value: only what it
/// states (`None` = not said).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MapDirective {
    /// The policy, `None` for a value made only of modifiers.
    pub map_by: Option<MapBy>,
    /// `Some(true)` for `:OVERSUBSCRIBE`, `Some(false)` for `:NOOVERSUBSCRIBE`.
    pub oversubscribe: Option<bool>,
    /// `:PE=n`: processors per process.
    pub pe: Option<u32>,
    /// `Some(true)` for `:HWTCPUS`, `Some(false)` for `:CORECPUS`.
    pub hwtcpus: Option<bool>,
    /// `Some(true)` for `:SPAN`.
    pub span: Option<bool>,
}

/// The mapping policy of a job, after combining the parameter and the
/// command line ([`MapPolicy::resolve`]).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MapPolicy {
    /// The policy. Default: [`MapBy::Slot`].
    pub map_by: MapBy,
    /// `Some(true)`: more processes than slots allowed, up to `max_slots`.
    /// `Some(false)`: never more processes than slots. `None` (default):
    /// allowed on the implicit local host; with an explicit host list, only
    /// up to the `max_slots` a hostfile gives (see the crate docs).
    pub oversubscribe: Option<bool>,
    /// Processors (cores, or hardware threads with `hwtcpus`) per process.
    /// Default `None` (one, not reserved).
    pub pe: Option<u32>,
    /// Count hardware threads rather than cores as processors (default
    /// false). Also makes hosts without a slot count get one slot per
    /// hardware thread.
    pub hwtcpus: bool,
    /// For the by-object policies (core, hwthread, package, numa), go round
    /// the nodes placing one process per object per visit instead of
    /// filling one node first (default false; no effect on slot, node, seq
    /// and ppr).
    pub span: bool,
}

impl Default for MapPolicy {
    /// By slot, no modifiers.
    fn default() -> Self {
        MapPolicy {
            map_by: MapBy::Slot,
            oversubscribe: None,
            pe: None,
            hwtcpus: false,
            span: false,
        }
    }
}

impl MapPolicy {
    /// Combines the parameter `rmaps_default_mapping_policy` (`param`) and
    /// `--map-by` (`cli`). The command line wins for everything it states;
    /// what it does not state comes from the parameter, then from
    /// [`MapPolicy::default`]. So `rmaps_default_mapping_policy=:oversubscribe`
    /// with `--map-by node` maps by node and allows oversubscription.
    pub fn resolve(param: Option<&MapDirective>, cli: Option<&MapDirective>) -> MapPolicy {
        let pick =
            |f: &dyn Fn(&MapDirective) -> bool| cli.filter(|d| f(d)).or(param.filter(|d| f(d)));
        let default = MapPolicy::default();
        MapPolicy {
            map_by: pick(&|d| d.map_by.is_some())
                .and_then(|d| d.map_by.clone())
                .unwrap_or(default.map_by),
            oversubscribe: pick(&|d| d.oversubscribe.is_some()).and_then(|d| d.oversubscribe),
            pe: pick(&|d| d.pe.is_some()).and_then(|d| d.pe),
            hwtcpus: pick(&|d| d.hwtcpus.is_some())
                .and_then(|d| d.hwtcpus)
                .unwrap_or(default.hwtcpus),
            span: pick(&|d| d.span.is_some())
                .and_then(|d| d.span)
                .unwrap_or(default.span),
        }
    }
}

impl From<MapDirective> for MapPolicy {
    /// The policy a single directive gives (`--map-by` with no parameter).
    fn from(d: MapDirective) -> Self {
        MapPolicy::resolve(None, Some(&d))
    }
}

impl fmt::Display for MapPolicy {
    /// The canonical form, e.g. `node:OVERSUBSCRIBE:PE=2`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.map_by)?;
        match self.oversubscribe {
            Some(true) => f.write_str(":OVERSUBSCRIBE")?,
            Some(false) => f.write_str(":NOOVERSUBSCRIBE")?,
            None => {}
        }
        if let Some(pe) = self.pe {
            write!(f, ":PE={pe}")?;
        }
        if self.hwtcpus {
            f.write_str(":HWTCPUS")?;
        }
        if self.span {
            f.write_str(":SPAN")?;
        }
        Ok(())
    }
}

/// How ranks are numbered once processes are placed (`--rank-by`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum RankBy {
    /// Node by node: all processes of the first node, then the next (Open
    /// MPI's `slot`).
    Slot,
    /// One process of each node in turn.
    Node,
    /// Node by node; inside a node, by object of this kind (all processes
    /// of package 0, then package 1, …). Processes placed without an
    /// object (`--map-by slot`) keep their placement order.
    Object(Resource),
}

impl fmt::Display for RankBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RankBy::Slot => f.write_str("slot"),
            RankBy::Node => f.write_str("node"),
            RankBy::Object(r) => write!(f, "{r}"),
        }
    }
}

/// A policy string that does not parse. The message names the option or
/// parameter, the value, what is wrong and what is accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyError(pub String);

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PolicyError {}

const MAP_POLICIES: &[&str] = &[
    "slot", "node", "core", "hwthread", "package", "socket", "numa", "seq", "ppr",
];
const RESOURCES: &[&str] = &["node", "package", "socket", "numa", "core", "hwthread"];
const MODIFIERS: &[&str] = &[
    "OVERSUBSCRIBE",
    "NOOVERSUBSCRIBE",
    "PE",
    "HWTCPUS",
    "CORECPUS",
    "SPAN",
];
const RANK_POLICIES: &[&str] = &[
    "slot", "node", "package", "socket", "numa", "core", "hwthread",
];
const UNSUPPORTED: &[&str] = &[
    "l1cache", "l2cache", "l3cache", "board", "rankfile", "pe-list",
];

const MAP_BY_HELP: &str =
    "accepted: slot, node, core, hwthread, package (or socket), numa, seq or ppr:N:RESOURCE \
(RESOURCE one of node, package, socket, numa, core, hwthread), optionally followed by modifiers \
:OVERSUBSCRIBE, :NOOVERSUBSCRIBE, :PE=n, :HWTCPUS, :CORECPUS, :SPAN (case does not matter)";

/// What `--map-by` accepts, with the policy names installed components
/// declared (`extra`).
fn map_by_help(extra: &[&str]) -> String {
    if extra.is_empty() {
        return MAP_BY_HELP.to_string();
    }
    MAP_BY_HELP.replacen(
        " or ppr:N:RESOURCE",
        &format!(
            ", ppr:N:RESOURCE or a policy of an installed rmaps component ({})",
            extra.join(", ")
        ),
        1,
    )
}

/// Whether `name` is a built-in `--map-by` policy keyword (case-insensitive),
/// which no component may declare again.
pub fn is_builtin_policy(name: &str) -> bool {
    MAP_POLICIES.iter().any(|k| k.eq_ignore_ascii_case(name))
}

/// Matches `word` against `keywords` ignoring case: an exact match, or the
/// only keyword `word` is a prefix of.
fn keyword<'k>(word: &str, keywords: &[&'k str]) -> Result<&'k str, Vec<&'k str>> {
    let lower = word.to_ascii_lowercase();
    if let Some(k) = keywords.iter().find(|k| k.eq_ignore_ascii_case(&lower)) {
        return Ok(k);
    }
    let matches: Vec<&'k str> = keywords
        .iter()
        .copied()
        .filter(|k| !lower.is_empty() && k.to_ascii_lowercase().starts_with(&lower))
        .collect();
    match matches.as_slice() {
        [only] => Ok(only),
        _ => Err(matches),
    }
}

fn resource(word: &str) -> Option<Resource> {
    match keyword(word, RESOURCES).ok()? {
        "node" => Some(Resource::Node),
        "package" | "socket" => Some(Resource::Package),
        "numa" => Some(Resource::Numa),
        "core" => Some(Resource::Core),
        _ => Some(Resource::Hwthread),
    }
}

fn unknown(
    label: &str,
    text: &str,
    what: &str,
    word: &str,
    candidates: Vec<&str>,
    help: &str,
) -> PolicyError {
    let unsupported = UNSUPPORTED.iter().any(|u| u.eq_ignore_ascii_case(word));
    let (text, word) = (excerpt(text), excerpt(word));
    let why = if unsupported {
        format!("{what} \"{word}\" is not supported by oxmpi")
    } else if candidates.len() > 1 {
        format!(
            "{what} \"{word}\" is ambiguous (it could be {})",
            candidates.join(" or ")
        )
    } else {
        format!("unknown {what} \"{word}\"")
    };
    PolicyError(format!("{label} {text}: {why}; {help}"))
}

/// Parses a `--map-by` value. Errors name `--map-by`, the value, the
/// offending word and list what is accepted.
pub fn parse_map_by(text: &str) -> Result<MapDirective, PolicyError> {
    parse_directive("--map-by", text, &[])
}

/// Parses a `--map-by` value, also accepting the policy names installed
/// rmaps components declared (`extra`, lower case, none of them a built-in
/// keyword: see [`crate::selection::policy_names`]) as [`MapBy::Named`].
/// Errors list the built-in policies and `extra`.
pub fn parse_map_by_with(text: &str, extra: &[&str]) -> Result<MapDirective, PolicyError> {
    parse_directive("--map-by", text, extra)
}

/// Parses a value of the parameter `rmaps_default_mapping_policy` (same
/// grammar as `--map-by`; `:oversubscribe` alone keeps the default policy
/// and allows oversubscription). Errors name the parameter.
pub fn parse_default_mapping_policy(text: &str) -> Result<MapDirective, PolicyError> {
    parse_directive("rmaps_default_mapping_policy", text, &[])
}

/// [`parse_default_mapping_policy`], also accepting the policy names
/// installed components declared (as [`parse_map_by_with`]).
pub fn parse_default_mapping_policy_with(
    text: &str,
    extra: &[&str],
) -> Result<MapDirective, PolicyError> {
    parse_directive("rmaps_default_mapping_policy", text, extra)
}

fn parse_directive(label: &str, text: &str, extra: &[&str]) -> Result<MapDirective, PolicyError> {
    let value = text.trim();
    let shown = excerpt(value);
    let help = map_by_help(extra);
    if value.is_empty() {
        return Err(PolicyError(format!("{label}: empty value; {help}")));
    }
    let mut tokens = value.split([':', ',']).map(str::trim);
    let mut d = MapDirective::default();
    let first = tokens.next().unwrap_or("");
    if !first.is_empty() {
        let keywords: Vec<&str> = MAP_POLICIES
            .iter()
            .copied()
            .chain(extra.iter().copied())
            .collect();
        let policy = keyword(first, &keywords)
            .map_err(|c| unknown(label, value, "mapping policy", first, c, &help))?;
        d.map_by = Some(match policy {
            "slot" => MapBy::Slot,
            "node" => MapBy::Node,
            "core" => MapBy::Core,
            "hwthread" => MapBy::Hwthread,
            "package" | "socket" => MapBy::Package,
            "numa" => MapBy::Numa,
            "seq" => MapBy::Seq,
            named if !is_builtin_policy(named) => MapBy::Named(named.to_ascii_lowercase()),
            _ => {
                let usage = "ppr needs a count and a resource, e.g. ppr:2:package";
                let count = tokens.next().unwrap_or("");
                let count = match count.parse::<u32>() {
                    Ok(n) if n > 0 => n,
                    _ if count.is_empty() => {
                        return Err(PolicyError(format!("{label} {shown}: {usage}")))
                    }
                    _ => {
                        return Err(PolicyError(format!(
                            "{label} {shown}: the ppr count \"{}\" must be a whole number of at least 1 ({usage})",
                            excerpt(count)
                        )))
                    }
                };
                let word = tokens.next().unwrap_or("");
                if word.is_empty() {
                    return Err(PolicyError(format!("{label} {shown}: {usage}")));
                }
                let resource = resource(word).ok_or_else(|| {
                    PolicyError(format!(
                        "{label} {shown}: unknown ppr resource \"{}\"; accepted: {}",
                        excerpt(word),
                        RESOURCES.join(", ")
                    ))
                })?;
                MapBy::Ppr { count, resource }
            }
        });
    }
    for token in tokens {
        if token.is_empty() {
            return Err(PolicyError(format!(
                "{label} {shown}: empty modifier (two separators in a row?); {help}"
            )));
        }
        let (word, arg) = match token.split_once('=') {
            Some((w, a)) => (w.trim(), Some(a.trim())),
            None => (token, None),
        };
        let modifier = keyword(word, MODIFIERS)
            .map_err(|c| unknown(label, value, "modifier", word, c, &help))?;
        if modifier != "PE" && arg.is_some() {
            return Err(PolicyError(format!(
                "{label} {shown}: the modifier {modifier} takes no value"
            )));
        }
        let set = |slot: &mut Option<bool>, on: bool, other: &str| {
            if *slot == Some(!on) {
                return Err(PolicyError(format!(
                    "{label} {shown}: {modifier} and {other} contradict each other; give one"
                )));
            }
            *slot = Some(on);
            Ok(())
        };
        match modifier {
            "OVERSUBSCRIBE" => set(&mut d.oversubscribe, true, "NOOVERSUBSCRIBE")?,
            "NOOVERSUBSCRIBE" => set(&mut d.oversubscribe, false, "OVERSUBSCRIBE")?,
            "HWTCPUS" => set(&mut d.hwtcpus, true, "CORECPUS")?,
            "CORECPUS" => set(&mut d.hwtcpus, false, "HWTCPUS")?,
            "SPAN" => d.span = Some(true),
            _ => {
                let n = arg.unwrap_or("");
                let pe = n.parse::<u32>().ok().filter(|&n| n > 0).ok_or_else(|| {
                    PolicyError(format!(
                        "{label} {shown}: PE needs a number of processors per process of at least 1, as in PE=2 (got \"{}\")",
                        excerpt(n)
                    ))
                })?;
                if d.pe.is_some_and(|old| old != pe) {
                    return Err(PolicyError(format!(
                        "{label} {shown}: PE is given twice with different values"
                    )));
                }
                d.pe = Some(pe);
            }
        }
    }
    Ok(d)
}

/// Parses a `--rank-by` value: `slot`, `node`, `package` (or `socket`),
/// `numa`, `core` or `hwthread`, case-insensitive, unambiguous prefixes
/// accepted. Errors name `--rank-by` and list what is accepted.
pub fn parse_rank_by(text: &str) -> Result<RankBy, PolicyError> {
    parse_ranking("--rank-by", text)
}

/// Parses a value of the parameter `rmaps_default_ranking_policy` (same
/// grammar as `--rank-by`).
pub fn parse_default_ranking_policy(text: &str) -> Result<RankBy, PolicyError> {
    parse_ranking("rmaps_default_ranking_policy", text)
}

fn parse_ranking(label: &str, text: &str) -> Result<RankBy, PolicyError> {
    let value = text.trim();
    let shown = excerpt(value);
    let accepted =
        "accepted: slot, node, package (or socket), numa, core, hwthread (case does not matter)";
    if value.contains(':') || value.contains(',') {
        return Err(PolicyError(format!(
            "{label} {shown}: ranking takes no modifiers; {accepted}"
        )));
    }
    match keyword(value, RANK_POLICIES) {
        Ok("slot") => Ok(RankBy::Slot),
        Ok("node") => Ok(RankBy::Node),
        Ok(word) => Ok(RankBy::Object(resource(word).unwrap_or(Resource::Core))),
        Err(c) if c.len() > 1 => Err(PolicyError(format!(
            "{label} {shown}: \"{shown}\" is ambiguous (it could be {}); {accepted}",
            c.join(" or ")
        ))),
        Err(_) => Err(PolicyError(format!(
            "{label} {shown}: unknown ranking policy \"{shown}\"; {accepted}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map_by(text: &str) -> MapDirective {
        parse_map_by(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn long_values_are_quoted_as_an_excerpt() {
        let long = format!("slot:{}", "x".repeat(100_000));
        let e = parse_map_by(&long).unwrap_err().0;
        assert!(
            e.len() < 2_000 && e.contains("…(100005 bytes)"),
            "{}",
            e.len()
        );
        let e = parse_rank_by(&"y".repeat(100_000)).unwrap_err().0;
        assert!(e.len() < 2_000, "{}", e.len());
        let e = parse_map_by(&format!("ppr:{}:core", "9".repeat(100_000)))
            .unwrap_err()
            .0;
        assert!(e.len() < 2_000, "{}", e.len());
    }

    #[test]
    fn policies_case_insensitive() {
        for (text, want) in [
            ("slot", MapBy::Slot),
            ("SLOT", MapBy::Slot),
            ("Node", MapBy::Node),
            ("core", MapBy::Core),
            ("hwthread", MapBy::Hwthread),
            ("package", MapBy::Package),
            ("socket", MapBy::Package),
            ("NUMA", MapBy::Numa),
            ("seq", MapBy::Seq),
            ("so", MapBy::Package),
            ("sl", MapBy::Slot),
            ("hw", MapBy::Hwthread),
        ] {
            assert_eq!(map_by(text).map_by, Some(want), "{text}");
        }
    }

    #[test]
    fn ppr() {
        assert_eq!(
            map_by("ppr:2:package").map_by,
            Some(MapBy::Ppr {
                count: 2,
                resource: Resource::Package
            })
        );
        assert_eq!(
            map_by("PPR:4:Socket:oversubscribe"),
            MapDirective {
                map_by: Some(MapBy::Ppr {
                    count: 4,
                    resource: Resource::Package
                }),
                oversubscribe: Some(true),
                ..Default::default()
            }
        );
        assert_eq!(
            map_by("ppr:1:node,SPAN").map_by,
            Some(MapBy::Ppr {
                count: 1,
                resource: Resource::Node
            })
        );
        for (bad, what) in [
            ("ppr", "needs a count and a resource"),
            ("ppr:2", "needs a count and a resource"),
            ("ppr:0:node", "at least 1"),
            ("ppr:x:node", "at least 1"),
            ("ppr:2:board", "unknown ppr resource \"board\""),
        ] {
            let e = parse_map_by(bad).unwrap_err().0;
            assert!(e.starts_with(&format!("--map-by {bad}:")), "{e}");
            assert!(e.contains(what), "{bad}: {e}");
        }
    }

    #[test]
    fn modifiers() {
        let d = map_by("node:OVERSUBSCRIBE");
        assert_eq!(d.map_by, Some(MapBy::Node));
        assert_eq!(d.oversubscribe, Some(true));
        assert_eq!(map_by(":NOOVERSUBSCRIBE").oversubscribe, Some(false));
        assert_eq!(map_by(":oversubscribe").map_by, None);
        let d = map_by("core:pe=2:hwtcpus:span");
        assert_eq!(
            d,
            MapDirective {
                map_by: Some(MapBy::Core),
                oversubscribe: None,
                pe: Some(2),
                hwtcpus: Some(true),
                span: Some(true)
            }
        );
        assert_eq!(map_by("package:PE=2,SPAN").pe, Some(2));
        assert_eq!(map_by(":CORECPUS").hwtcpus, Some(false));
        assert_eq!(map_by("slot:over").oversubscribe, Some(true));
        assert_eq!(map_by("slot:noover").oversubscribe, Some(false));
    }

    #[test]
    fn errors_say_what_is_accepted() {
        for (bad, what) in [
            ("", "empty value"),
            ("bogus", "unknown mapping policy \"bogus\""),
            ("s", "ambiguous"),
            ("l3cache", "not supported"),
            ("slot:FOO", "unknown modifier \"FOO\""),
            ("slot::OVERSUBSCRIBE", "empty modifier"),
            ("slot:OVERSUBSCRIBE:NOOVERSUBSCRIBE", "contradict"),
            ("slot:HWTCPUS:CORECPUS", "contradict"),
            ("core:PE=0", "at least 1"),
            ("core:PE", "at least 1"),
            ("core:PE=2:PE=3", "twice"),
            ("slot:SPAN=1", "takes no value"),
        ] {
            let e = parse_map_by(bad).unwrap_err().0;
            assert!(e.starts_with("--map-by"), "{e}");
            assert!(e.contains(what), "{bad:?}: {e}");
        }
        let e = parse_map_by("bogus").unwrap_err().0;
        assert!(e.contains("slot, node, core, hwthread, package"), "{e}");
        assert!(e.contains(":OVERSUBSCRIBE"), "{e}");
        let e = parse_default_mapping_policy("bogus").unwrap_err().0;
        assert!(e.starts_with("rmaps_default_mapping_policy bogus:"), "{e}");
    }

    #[test]
    fn default_parameter_values() {
        assert_eq!(
            parse_default_mapping_policy("slot").unwrap().map_by,
            Some(MapBy::Slot)
        );
        assert_eq!(
            parse_default_mapping_policy("node").unwrap().map_by,
            Some(MapBy::Node)
        );
        let d = parse_default_mapping_policy(":oversubscribe").unwrap();
        assert_eq!(d.map_by, None);
        assert_eq!(d.oversubscribe, Some(true));
        let p = MapPolicy::resolve(Some(&d), None);
        assert_eq!(p.map_by, MapBy::Slot);
        assert_eq!(p.oversubscribe, Some(true));
    }

    #[test]
    fn resolution_command_line_wins_per_field() {
        let param = parse_default_mapping_policy("node:oversubscribe:PE=2").unwrap();
        let cli = map_by("core:NOOVERSUBSCRIBE");
        let p = MapPolicy::resolve(Some(&param), Some(&cli));
        assert_eq!(p.map_by, MapBy::Core);
        assert_eq!(p.oversubscribe, Some(false));
        assert_eq!(p.pe, Some(2));
        let p = MapPolicy::resolve(Some(&param), Some(&map_by(":span")));
        assert_eq!(p.map_by, MapBy::Node);
        assert!(p.span);
        assert_eq!(MapPolicy::resolve(None, None), MapPolicy::default());
        assert_eq!(MapPolicy::default().map_by, MapBy::Slot);
    }

    #[test]
    fn display_is_canonical_and_reparses() {
        for text in [
            "slot",
            "node:OVERSUBSCRIBE",
            "core:NOOVERSUBSCRIBE:PE=2:HWTCPUS:SPAN",
            "ppr:2:package",
            "seq",
        ] {
            let p = MapPolicy::from(map_by(text));
            assert_eq!(p.to_string(), text);
            assert_eq!(MapPolicy::from(map_by(&p.to_string())), p);
        }
        assert_eq!(MapPolicy::from(map_by("socket")).to_string(), "package");
    }

    #[test]
    fn rank_by() {
        assert_eq!(parse_rank_by("slot"), Ok(RankBy::Slot));
        assert_eq!(parse_rank_by("NODE"), Ok(RankBy::Node));
        assert_eq!(
            parse_rank_by("socket"),
            Ok(RankBy::Object(Resource::Package))
        );
        assert_eq!(parse_rank_by("numa"), Ok(RankBy::Object(Resource::Numa)));
        assert_eq!(parse_rank_by("core"), Ok(RankBy::Object(Resource::Core)));
        assert_eq!(
            parse_rank_by("hwthread"),
            Ok(RankBy::Object(Resource::Hwthread))
        );
        assert_eq!(parse_default_ranking_policy("node"), Ok(RankBy::Node));
        for (bad, what) in [
            ("bogus", "unknown ranking policy"),
            ("s", "ambiguous"),
            ("slot:span", "no modifiers"),
            ("", "unknown ranking policy"),
        ] {
            let e = parse_rank_by(bad).unwrap_err().0;
            assert!(e.starts_with("--rank-by"), "{e}");
            assert!(e.contains(what), "{bad:?}: {e}");
            assert!(e.contains("accepted: slot, node"), "{e}");
        }
        assert_eq!(RankBy::Object(Resource::Package).to_string(), "package");
    }
}
