//! The layering rules of `docs/components.md` ("Layout and layering"),
//! checked over the output of
//! `cargo metadata --format-version 1 --no-deps`.
//!
//! Each workspace crate has a [`Layer`], from where its manifest is:
//! `plugin-api/…`, `core/<c>`, `frameworks/<fw>`, `libs/<l>`,
//! `components/<fw>/<c>` and `tests/fixtures/<f>` (test components),
//! `tools/<t>`, `oxmpi`, `capi`, `bench/<b>`, `tests/<t>` (programs, the
//! Rust and C APIs, and tests). A
//! crate anywhere else is a violation until it is given a layer here.
//!
//! The rules, over normal and build dependencies (dev-dependencies only
//! build tests and benches, never a shipped library or program, and are not
//! checked) on workspace crates (third-party crates are always allowed):
//!
//! 1. the plugin API depends only on the plugin API (its derive crate);
//! 2. a component depends only on the plugin API, framework crates and
//!    `libs/` crates — never on core, a program or another component;
//! 3. nothing depends on a component;
//! 4. a framework crate depends only on the plugin API, other framework
//!    crates and `libs/` crates — never on core;
//! 5. a `libs/` crate depends only on the plugin API and other `libs/`
//!    crates (pure code: no core, no framework);
//! 6. a core crate never depends on a framework crate — the MCA core
//!    (`oxmpi-mca`) in particular takes its frameworks from the program —
//!    except the pairs in [`CORE_USES_FRAMEWORK`] (the MPI layer calls the
//!    btl, mtl, pml and coll modules it selected), and never on a program.

#![forbid(unsafe_code)]

use serde_json::Value;
use std::collections::HashMap;
use std::fmt;

/// Where a workspace crate sits in the layering.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layer {
    /// `plugin-api/` and its derive crate.
    PluginApi,
    /// `core/<c>`.
    Core,
    /// `frameworks/<fw>`.
    Framework,
    /// `libs/<l>`.
    Lib,
    /// `components/<fw>/<c>`, and the test components of `tests/fixtures/`.
    Component,
    /// Programs, the Rust and C APIs, benchmarks and test crates:
    /// `tools/`, `oxmpi`, `capi`, `bench/`, `tests/<t>`.
    Program,
}

/// The core crates allowed to depend on a framework crate, with that
/// framework crate: the MPI layer drives the btl and pml modules.
pub const CORE_USES_FRAMEWORK: &[(&str, &str)] = &[
    ("oxmpi-mpi-core", "oxmpi-framework-btl"),
    ("oxmpi-mpi-core", "oxmpi-framework-mtl"),
    ("oxmpi-mpi-core", "oxmpi-framework-pml"),
    ("oxmpi-mpi-core", "oxmpi-framework-coll"),
];

/// The layer of the crate whose manifest is at `relative` (a path relative
/// to the workspace root, `/`-separated), or `None` for a place the rules do
/// not know.
pub fn layer_of(relative: &str) -> Option<Layer> {
    let dir = relative.strip_suffix("Cargo.toml")?.trim_end_matches('/');
    let parts: Vec<&str> = dir.split('/').collect();
    match parts.as_slice() {
        ["plugin-api"] | ["plugin-api", _] => Some(Layer::PluginApi),
        ["core", _] => Some(Layer::Core),
        ["frameworks", _] => Some(Layer::Framework),
        ["libs", _] => Some(Layer::Lib),
        ["components", _, _] | ["tests", "fixtures", _] => Some(Layer::Component),
        ["tools", _] | ["oxmpi"] | ["capi"] | ["bench", _] | ["tests", _] => Some(Layer::Program),
        _ => None,
    }
}

/// One broken rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The crate that depends.
    pub from: String,
    /// The crate depended on, or `None` for a crate in no known place.
    pub to: Option<String>,
    /// Which rule, in words.
    pub rule: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.to {
            Some(to) => write!(f, "{} depends on {}: {}", self.from, to, self.rule),
            None => write!(f, "{}: {}", self.from, self.rule),
        }
    }
}

/// Whether `from` may depend on `to`; the rule broken otherwise.
fn allowed(from: (&str, Layer), to: (&str, Layer)) -> Result<(), &'static str> {
    use Layer::*;
    if to.1 == Component {
        return Err("nothing depends on a component");
    }
    let ok = match from.1 {
        PluginApi => to.1 == PluginApi,
        Component => matches!(to.1, PluginApi | Framework | Lib),
        Framework => matches!(to.1, PluginApi | Framework | Lib),
        Lib => matches!(to.1, PluginApi | Lib),
        Core => match to.1 {
            Framework => CORE_USES_FRAMEWORK.contains(&(from.0, to.0)),
            Program => false,
            _ => true,
        },
        Program => true,
    };
    if ok {
        return Ok(());
    }
    Err(match from.1 {
        PluginApi => "the plugin API depends on nothing of the workspace but itself",
        Component => "a component depends only on the plugin API, framework crates and libs/ crates",
        Framework => "a framework crate depends only on the plugin API, framework crates and libs/ crates, never on core",
        Lib => "a libs/ crate depends only on the plugin API and libs/ crates",
        Core if to.1 == Framework => "a core crate does not depend on framework crates (the MCA core takes its frameworks from the program; see CORE_USES_FRAMEWORK)",
        Core => "a core crate does not depend on a program",
        Program => unreachable!("programs may depend on anything but components"),
    })
}

/// Checks the output of `cargo metadata --format-version 1 --no-deps` of
/// the workspace at `root` (an absolute path, as in `workspace_root`).
///
/// # Errors
///
/// A message when the JSON is not cargo metadata.
pub fn check(metadata: &Value) -> Result<Vec<Violation>, String> {
    let root = metadata["workspace_root"]
        .as_str()
        .ok_or("no workspace_root in the metadata")?;
    let packages = metadata["packages"]
        .as_array()
        .ok_or("no packages in the metadata")?;
    let mut layers: HashMap<&str, Option<Layer>> = HashMap::new();
    for p in packages {
        let name = p["name"].as_str().ok_or("a package without a name")?;
        let manifest = p["manifest_path"]
            .as_str()
            .ok_or("a package without a manifest_path")?;
        let relative = manifest
            .strip_prefix(root)
            .map(|r| r.trim_start_matches('/'))
            .unwrap_or(manifest);
        layers.insert(name, layer_of(relative));
    }
    let mut violations = Vec::new();
    for p in packages {
        let from = p["name"].as_str().unwrap_or_default();
        let Some(from_layer) = layers[from] else {
            violations.push(Violation {
                from: from.to_string(),
                to: None,
                rule:
                    "the crate is in no place the layering rules name (give it a layer in tests/layering)"
                        .into(),
            });
            continue;
        };
        for d in p["dependencies"].as_array().into_iter().flatten() {
            if d["kind"].as_str() == Some("dev") || d["path"].is_null() {
                continue;
            }
            let to = d["name"].as_str().unwrap_or_default();
            let Some(&Some(to_layer)) = layers.get(to) else {
                continue;
            };
            if let Err(rule) = allowed((from, from_layer), (to, to_layer)) {
                violations.push(Violation {
                    from: from.to_string(),
                    to: Some(to.to_string()),
                    rule: rule.to_string(),
                });
            }
        }
    }
    Ok(violations)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Fake metadata: `deps` are (from, to, kind) between packages at the
    /// given relative manifest directories.
    fn metadata(packages: &[(&str, &str)], deps: &[(&str, &str, Option<&str>)]) -> Value {
        let packages: Vec<Value> = packages
            .iter()
            .map(|(name, dir)| {
                let dependencies: Vec<Value> = deps
                    .iter()
                    .filter(|(from, _, _)| from == name)
                    .map(|(_, to, kind)| {
                        let to_dir = packages.iter().find(|(n, _)| n == to).map(|(_, d)| *d);
                        json!({
                            "name": to,
                            "kind": kind,
                            "path": to_dir.map(|d| format!("/ws/{d}")),
                        })
                    })
                    .collect();
                json!({
                    "name": name,
                    "manifest_path": format!("/ws/{dir}/Cargo.toml"),
                    "dependencies": dependencies,
                })
            })
            .collect();
        json!({ "workspace_root": "/ws", "packages": packages })
    }

    const PACKAGES: &[(&str, &str)] = &[
        ("oxmpi-plugin-api", "plugin-api"),
        ("oxmpi-mca", "core/mca"),
        ("oxmpi-mpi-core", "core/mpi"),
        ("oxmpi-framework-btl", "frameworks/btl"),
        ("oxmpi-framework-pml", "frameworks/pml"),
        ("oxmpi-framework-rmaps", "frameworks/rmaps"),
        ("oxmpi-netif", "libs/netif"),
        ("oxmpi-btl-tcp", "components/btl/tcp"),
        ("oxmpi-pml-ob1", "components/pml/ob1"),
        ("oxmpi-fixture-good", "tests/fixtures/good"),
        ("mpirun", "tools/mpirun"),
    ];

    fn violations(deps: &[(&str, &str, Option<&str>)]) -> Vec<Violation> {
        check(&metadata(PACKAGES, deps)).unwrap()
    }

    /// The layering as it is today: no violation.
    #[test]
    fn the_allowed_edges_pass() {
        let ok = violations(&[
            ("oxmpi-mca", "oxmpi-plugin-api", None),
            ("oxmpi-mpi-core", "oxmpi-mca", None),
            ("oxmpi-mpi-core", "oxmpi-framework-btl", None),
            ("oxmpi-mpi-core", "oxmpi-framework-pml", None),
            ("oxmpi-framework-pml", "oxmpi-framework-btl", None),
            ("oxmpi-btl-tcp", "oxmpi-netif", None),
            ("oxmpi-btl-tcp", "oxmpi-framework-btl", None),
            ("oxmpi-pml-ob1", "oxmpi-framework-pml", None),
            ("oxmpi-pml-ob1", "oxmpi-plugin-api", Some("build")),
            ("mpirun", "oxmpi-framework-rmaps", None),
            ("mpirun", "oxmpi-mca", None),
            // Tests may use anything.
            ("oxmpi-btl-tcp", "oxmpi-mca", Some("dev")),
            ("oxmpi-mca", "oxmpi-fixture-good", Some("dev")),
            ("oxmpi-mca", "oxmpi-framework-btl", Some("dev")),
        ]);
        assert_eq!(ok, []);
    }

    fn one(deps: &[(&str, &str, Option<&str>)]) -> Violation {
        let v = violations(deps);
        assert_eq!(v.len(), 1, "{v:?}");
        v.into_iter().next().unwrap()
    }

    #[test]
    fn a_component_on_core_is_refused() {
        let v = one(&[("oxmpi-btl-tcp", "oxmpi-mca", None)]);
        assert_eq!(
            v.to_string(),
            "oxmpi-btl-tcp depends on oxmpi-mca: a component depends only on the plugin API, framework crates and libs/ crates"
        );
        // A build dependency is linked too.
        one(&[("oxmpi-btl-tcp", "oxmpi-mpi-core", Some("build"))]);
        one(&[("oxmpi-btl-tcp", "mpirun", None)]);
    }

    #[test]
    fn nothing_depends_on_a_component() {
        for from in [
            "mpirun",
            "oxmpi-mca",
            "oxmpi-pml-ob1",
            "oxmpi-framework-btl",
            "oxmpi-netif",
        ] {
            let v = one(&[(from, "oxmpi-btl-tcp", None)]);
            assert_eq!(v.rule, "nothing depends on a component", "{from}");
        }
        assert_eq!(
            one(&[("mpirun", "oxmpi-fixture-good", None)]).rule,
            "nothing depends on a component"
        );
    }

    #[test]
    fn the_mca_core_depends_on_no_framework() {
        let v = one(&[("oxmpi-mca", "oxmpi-framework-rmaps", None)]);
        assert!(
            v.rule
                .starts_with("a core crate does not depend on framework crates"),
            "{v}"
        );
        // The MPI layer's exception is for btl and pml only.
        one(&[("oxmpi-mpi-core", "oxmpi-framework-rmaps", None)]);
        one(&[("oxmpi-mca", "mpirun", None)]);
    }

    #[test]
    fn frameworks_and_libs_stay_below_core() {
        let v = one(&[("oxmpi-framework-btl", "oxmpi-mca", None)]);
        assert!(v.rule.contains("never on core"), "{v}");
        one(&[("oxmpi-netif", "oxmpi-mca", None)]);
        one(&[("oxmpi-netif", "oxmpi-framework-btl", None)]);
        one(&[("oxmpi-plugin-api", "oxmpi-netif", None)]);
    }

    #[test]
    fn a_crate_in_an_unknown_place_is_a_violation() {
        let mut packages = PACKAGES.to_vec();
        packages.push(("stray", "misc/stray"));
        let v = check(&metadata(&packages, &[])).unwrap();
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].from, "stray");
    }

    #[test]
    fn places_map_to_layers() {
        assert_eq!(
            layer_of("plugin-api/derive/Cargo.toml"),
            Some(Layer::PluginApi)
        );
        assert_eq!(
            layer_of("components/btl/tcp/Cargo.toml"),
            Some(Layer::Component)
        );
        assert_eq!(
            layer_of("tests/fixtures/good/Cargo.toml"),
            Some(Layer::Component)
        );
        assert_eq!(layer_of("tests/layering/Cargo.toml"), Some(Layer::Program));
        assert_eq!(layer_of("libs/netif/Cargo.toml"), Some(Layer::Lib));
        assert_eq!(layer_of("components/btl/Cargo.toml"), None);
        assert_eq!(layer_of("core/mca/sub/Cargo.toml"), None);
    }

    #[test]
    fn not_metadata_is_an_error() {
        assert!(check(&json!({ "packages": [] })).is_err());
        assert!(check(&json!({ "workspace_root": "/ws" })).is_err());
    }
}
