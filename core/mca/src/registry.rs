//! The table of declared parameters: core, framework and component ones,
//! with their synonyms.

use oxmpi_plugin_api::{flags, ParamDecl};
use std::collections::HashMap;

/// A declared parameter and its owner.
#[derive(Clone, Debug)]
pub struct ParamInfo {
    /// Full name (`btl_tcp_eager_limit`, `btl_base_verbose`, `btl`).
    pub full_name: String,
    /// Owning framework (`mca` for the core's own parameters).
    pub framework: String,
    /// Owning component (`base` for framework-wide and core parameters).
    pub component: String,
    /// The declaration.
    pub decl: ParamDecl,
    /// Deprecated synonyms the core added for the old names of a renamed
    /// component, as (synonym, old component name): `btl_vader_x` and
    /// `vader` for `btl_sm_x` ([`Registry::add_alias_synonyms`]). Empty for
    /// most parameters.
    pub alias_synonyms: Vec<(String, String)>,
}

impl ParamInfo {
    /// Whether only the default or the override file may set it.
    pub fn read_only(&self) -> bool {
        self.decl.flags & flags::READ_ONLY != 0
    }

    /// Whether the parameter itself is deprecated.
    pub fn deprecated(&self) -> bool {
        self.decl.flags & flags::DEPRECATED != 0
    }
}

/// How a name refers to a parameter.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct NameRef {
    /// Index into [`Registry::params`].
    pub param: usize,
    /// `Some(deprecated)` when the name is a synonym.
    pub synonym: Option<bool>,
}

/// All declared parameters.
#[derive(Default, Debug)]
pub struct Registry {
    params: Vec<ParamInfo>,
    names: HashMap<String, NameRef>,
}

/// Problems with a declaration, or `None` if it is well-formed (the
/// plugin API's check, which components' tests run too).
pub use oxmpi_plugin_api::params::check_decl;

impl Registry {
    /// Adds a parameter. Errors if its name or a synonym is already taken.
    pub fn declare(
        &mut self,
        framework: &str,
        component: &str,
        full_name: String,
        decl: ParamDecl,
    ) -> Result<(), String> {
        let synonyms: Vec<(String, bool)> = decl
            .synonyms
            .iter()
            .map(|s| (s.name.to_string(), s.deprecated))
            .collect();
        for name in std::iter::once(&full_name).chain(synonyms.iter().map(|(n, _)| n)) {
            if let Some(existing) = self.names.get(name) {
                let owner = &self.params[existing.param];
                return Err(format!(
                    "parameter name {name} is already declared by {}/{}",
                    owner.framework, owner.component
                ));
            }
        }
        let index = self.params.len();
        self.names.insert(
            full_name.clone(),
            NameRef {
                param: index,
                synonym: None,
            },
        );
        for (name, deprecated) in synonyms {
            self.names.insert(
                name,
                NameRef {
                    param: index,
                    synonym: Some(deprecated),
                },
            );
        }
        self.params.push(ParamInfo {
            full_name,
            framework: framework.to_string(),
            component: component.to_string(),
            decl,
            alias_synonyms: Vec::new(),
        });
        Ok(())
    }

    /// Gives every parameter of component `current` of `framework`
    /// (`btl_sm_<rest>`) the deprecated synonym
    /// `<framework>_<old>_<rest>` (`btl_vader_<rest>`), where `old` is an
    /// old name of the component. A name already declared — by the
    /// component itself (as a synonym of its own) or by anyone else — is
    /// left as it is. Returns one sentence per name left out because
    /// another parameter has it, naming that parameter's owner.
    pub fn add_alias_synonyms(&mut self, framework: &str, current: &str, old: &str) -> Vec<String> {
        let prefix = format!("{framework}_{current}_");
        let mut skipped = Vec::new();
        for index in 0..self.params.len() {
            let info = &self.params[index];
            if info.framework != framework || info.component != current {
                continue;
            }
            let Some(rest) = info.full_name.strip_prefix(&prefix) else {
                continue;
            };
            let synonym = format!("{framework}_{old}_{rest}");
            if let Some(existing) = self.names.get(&synonym) {
                if existing.param == index {
                    // The parameter's own synonym, as declared.
                    continue;
                }
                let owner = &self.params[existing.param];
                skipped.push(format!(
                    "{synonym} is not made a synonym of {}: {}/{} already declares that name",
                    info.full_name, owner.framework, owner.component
                ));
                continue;
            }
            self.names.insert(
                synonym.clone(),
                NameRef {
                    param: index,
                    synonym: Some(true),
                },
            );
            self.params[index]
                .alias_synonyms
                .push((synonym, old.to_string()));
        }
        skipped
    }

    /// The old component name behind `name` when `name` is a synonym the
    /// core added for a renamed component ([`Registry::add_alias_synonyms`]).
    pub fn alias_synonym_origin(&self, name: &str) -> Option<&str> {
        let r = self.lookup(name)?;
        self.params[r.param]
            .alias_synonyms
            .iter()
            .find(|(s, _)| s == name)
            .map(|(_, old)| old.as_str())
    }

    /// Looks a name (full name or synonym) up.
    pub fn lookup(&self, name: &str) -> Option<NameRef> {
        self.names.get(name).copied()
    }

    /// Every declared parameter, in declaration order.
    pub fn params(&self) -> &[ParamInfo] {
        &self.params
    }

    /// The parameter with this full name (not a synonym).
    pub fn get(&self, full_name: &str) -> Option<&ParamInfo> {
        self.lookup(full_name)
            .filter(|r| r.synonym.is_none())
            .map(|r| &self.params[r.param])
    }

    /// Every known name, synonyms included.
    pub fn all_names(&self) -> impl Iterator<Item = &str> {
        self.names.keys().map(String::as_str)
    }

    /// The synonyms of parameter `index` as (name, deprecated): those it
    /// declares, then those added for old names of its component.
    pub fn synonyms_of(&self, index: usize) -> Vec<(&str, bool)> {
        let info = &self.params[index];
        info.decl
            .synonyms
            .iter()
            .map(|s| (s.name.as_str(), s.deprecated))
            .chain(info.alias_synonyms.iter().map(|(s, _)| (s.as_str(), true)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxmpi_plugin_api::{ParamType, Synonym};

    const OLD: &[Synonym] = &[Synonym::deprecated("btl_x_old")];

    #[test]
    fn declare_lookup_and_conflicts() {
        let mut r = Registry::default();
        let d = ParamDecl::new("new", ParamType::Int, "1", 4, "help").with_synonyms(OLD);
        r.declare("btl", "x", "btl_x_new".into(), d).unwrap();
        assert_eq!(
            r.lookup("btl_x_new"),
            Some(NameRef {
                param: 0,
                synonym: None
            })
        );
        assert_eq!(
            r.lookup("btl_x_old"),
            Some(NameRef {
                param: 0,
                synonym: Some(true)
            })
        );
        let err = r
            .declare(
                "btl",
                "y",
                "btl_x_old".into(),
                ParamDecl::new("a", ParamType::Int, "1", 1, "h"),
            )
            .unwrap_err();
        assert!(err.contains("already declared by btl/x"), "{err}");
    }

    /// A component `sm` (whose old name is `vader`) declaring `x`, `y` with
    /// its own synonym `btl_vader_y`, and `z`, whose old-name synonym
    /// another component already declares.
    fn sm_registry() -> Registry {
        const OWN: &[Synonym] = &[Synonym::alias("btl_vader_y")];
        const OTHER: &[Synonym] = &[Synonym::alias("btl_vader_z")];
        let mut r = Registry::default();
        let decl = |name| ParamDecl::new(name, ParamType::Int, "1", 4, "help");
        r.declare("btl", "base", "btl_base_x".into(), decl("x"))
            .unwrap();
        r.declare(
            "btl",
            "other",
            "btl_other_w".into(),
            decl("w").with_synonyms(OTHER),
        )
        .unwrap();
        r.declare("btl", "sm", "btl_sm_x".into(), decl("x"))
            .unwrap();
        r.declare("btl", "sm", "btl_sm_y".into(), decl("y").with_synonyms(OWN))
            .unwrap();
        r.declare("btl", "sm", "btl_sm_z".into(), decl("z"))
            .unwrap();
        r
    }

    #[test]
    fn old_component_names_give_deprecated_synonyms() {
        let mut r = sm_registry();
        let skipped = r.add_alias_synonyms("btl", "sm", "vader");
        let sm_x = r.lookup("btl_sm_x").unwrap().param;
        assert_eq!(
            r.lookup("btl_vader_x"),
            Some(NameRef {
                param: sm_x,
                synonym: Some(true)
            })
        );
        assert_eq!(r.synonyms_of(sm_x), [("btl_vader_x", true)]);
        assert_eq!(r.alias_synonym_origin("btl_vader_x"), Some("vader"));
        assert_eq!(r.alias_synonym_origin("btl_sm_x"), None);
        assert!(r.all_names().any(|n| n == "btl_vader_x"));
        // The component's own synonym stays as it declared it (not
        // deprecated), and is not listed twice.
        let sm_y = r.lookup("btl_sm_y").unwrap().param;
        assert_eq!(
            r.lookup("btl_vader_y"),
            Some(NameRef {
                param: sm_y,
                synonym: Some(false)
            })
        );
        assert_eq!(r.synonyms_of(sm_y), [("btl_vader_y", false)]);
        assert_eq!(r.alias_synonym_origin("btl_vader_y"), None);
        // A name another component declares keeps its owner.
        let other = r.lookup("btl_other_w").unwrap().param;
        assert_eq!(r.lookup("btl_vader_z").unwrap().param, other);
        let sm_z = r.lookup("btl_sm_z").unwrap().param;
        assert!(r.synonyms_of(sm_z).is_empty());
        assert_eq!(
            skipped,
            ["btl_vader_z is not made a synonym of btl_sm_z: btl/other already declares that name"]
        );
        // Only the component's parameters: not the framework's own.
        assert!(r.lookup("btl_vader_base_x").is_none());
        assert!(r.lookup("btl_base_x").is_some());
    }

    #[test]
    fn old_names_of_a_component_without_parameters_add_nothing() {
        let mut r = sm_registry();
        let names_before = r.all_names().count();
        assert!(r.add_alias_synonyms("btl", "tcp", "oldtcp").is_empty());
        assert!(r.add_alias_synonyms("pml", "sm", "vader").is_empty());
        assert_eq!(r.all_names().count(), names_before);
    }
}
