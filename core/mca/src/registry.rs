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
        });
        Ok(())
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

    /// The synonyms of parameter `index`.
    pub fn synonyms_of(&self, index: usize) -> Vec<(&str, bool)> {
        self.params[index]
            .decl
            .synonyms
            .iter()
            .map(|s| (s.name.as_str(), s.deprecated))
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
}
