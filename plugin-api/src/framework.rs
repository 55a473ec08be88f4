//! What a framework crate tells the core about itself (plain Rust data; it
//! does not cross the component ABI).

use crate::{ParamDecl, Version};

/// How many components of a framework a process uses.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SelectionKind {
    /// Exactly one: the usable component with the highest priority
    /// (ties broken by component name). Used by pml, mtl, rmaps.
    Single,
    /// Every usable component, ordered by priority then name. Used by btl
    /// (chosen per peer later) and coll (chosen per communicator later).
    Multi,
}

/// An old name of a renamed component, still accepted but deprecated
/// (btl `vader`, now `sm`).
///
/// The core reads the old name as the current one wherever a component
/// name is given: in the selection parameter (`--mca btl self,vader` uses
/// `sm`, `--mca btl ^vader` leaves `sm` out, with a one-time note naming
/// the new name), and in parameter names: every parameter
/// `<fw>_<current>_<rest>` of the component also answers to the deprecated
/// synonym `<fw>_<old>_<rest>`, unless that name is declared already. A
/// component library whose name is an old name is not loaded.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ComponentAlias {
    /// The old name (`vader`); it cannot be the name of an installed
    /// component.
    pub old: &'static str,
    /// The component's current name (`sm`); the component need not be
    /// installed.
    pub current: &'static str,
}

impl ComponentAlias {
    /// `old` is a deprecated name of component `current`.
    pub const fn new(old: &'static str, current: &'static str) -> ComponentAlias {
        ComponentAlias { old, current }
    }
}

/// Static description of a framework, exported by its crate as `FRAMEWORK`.
#[derive(Debug)]
pub struct FrameworkInfo {
    /// Framework name (`btl`); never contains `_`.
    pub name: &'static str,
    /// One-line description for the info tool.
    pub description: &'static str,
    /// Version of the interface between this framework and its components.
    pub interface_version: Version,
    /// Single- or multi-select.
    pub selection: SelectionKind,
    /// Framework-wide parameters (`<fw>_base_<name>`), besides the selection
    /// parameter `<fw>` and `<fw>_base_verbose`, which the core declares for
    /// every framework. Names here are the part after `<fw>_base_`.
    pub base_params: &'static [ParamDecl],
    /// Old names of renamed components of this framework, old → current
    /// (see [`ComponentAlias`]); empty for most frameworks. Each old name
    /// appears once, differs from its current name and is no alias's
    /// current name ([`FrameworkInfo::alias_problem`]).
    pub component_aliases: &'static [ComponentAlias],
}

impl FrameworkInfo {
    /// The alias whose old name is `name`, if `name` is an old name.
    pub fn alias_of(&self, name: &str) -> Option<&'static ComponentAlias> {
        self.component_aliases.iter().find(|a| a.old == name)
    }

    /// The current name of component `name`: its alias's current name if
    /// `name` is an old name, `name` itself otherwise.
    pub fn current_component_name<'a>(&self, name: &'a str) -> &'a str {
        self.alias_of(name).map_or(name, |a| a.current)
    }

    /// The old names of component `current` (none for most components).
    pub fn old_component_names<'a>(
        &'a self,
        current: &'a str,
    ) -> impl Iterator<Item = &'static str> + 'a {
        self.component_aliases
            .iter()
            .filter(move |a| a.current == current)
            .map(|a| a.old)
    }

    /// What is wrong with [`FrameworkInfo::component_aliases`], or `None`:
    /// a name that is empty or holds a blank, `,`, `^` or `/` (it could not
    /// be written in a selection list), an old name equal to its current
    /// name, an old name given twice, or an old name that is also an
    /// alias's current name (renames do not chain: map every old name to
    /// the newest one).
    pub fn alias_problem(&self) -> Option<String> {
        let fw = self.name;
        let unusable =
            |n: &str| n.is_empty() || n.chars().any(|c| c.is_whitespace() || ",^/".contains(c));
        for (i, a) in self.component_aliases.iter().enumerate() {
            if let Some(bad) = [a.old, a.current].into_iter().find(|n| unusable(n)) {
                return Some(format!(
                    "{fw} component alias \"{}\" -> \"{}\": the name \"{bad}\" is empty or contains a blank, ',', '^' or '/'",
                    a.old, a.current
                ));
            }
            if a.old == a.current {
                return Some(format!(
                    "{fw} component alias \"{}\" -> \"{}\" maps a name to itself",
                    a.old, a.current
                ));
            }
            if self.component_aliases[..i].iter().any(|b| b.old == a.old) {
                return Some(format!(
                    "{fw} component alias \"{}\" is declared twice",
                    a.old
                ));
            }
            if let Some(b) = self.component_aliases.iter().find(|b| b.current == a.old) {
                return Some(format!(
                    "{fw} component aliases chain: \"{}\" -> \"{}\" -> \"{}\"; map \"{}\" to \"{}\" directly",
                    b.old, a.old, a.current, b.old, a.current
                ));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framework(aliases: &'static [ComponentAlias]) -> FrameworkInfo {
        FrameworkInfo {
            name: "btl",
            description: "test",
            interface_version: Version::new(1, 0, 0),
            selection: SelectionKind::Multi,
            base_params: &[],
            component_aliases: aliases,
        }
    }

    #[test]
    fn old_names_map_to_current_ones() {
        let fw = framework(&[ComponentAlias {
            old: "vader",
            current: "sm",
        }]);
        assert_eq!(fw.alias_problem(), None);
        assert_eq!(fw.current_component_name("vader"), "sm");
        assert_eq!(fw.current_component_name("sm"), "sm");
        assert_eq!(fw.current_component_name("tcp"), "tcp");
        assert_eq!(fw.alias_of("vader").map(|a| a.current), Some("sm"));
        assert_eq!(fw.alias_of("sm"), None);
        assert_eq!(fw.old_component_names("sm").collect::<Vec<_>>(), ["vader"]);
        assert_eq!(fw.old_component_names("tcp").count(), 0);
        let none = framework(&[]);
        assert_eq!(none.current_component_name("vader"), "vader");
        assert_eq!(none.alias_problem(), None);
    }

    #[test]
    fn bad_aliases_are_described() {
        let problem = |a: &'static [ComponentAlias]| framework(a).alias_problem().unwrap();
        assert!(problem(&[ComponentAlias {
            old: "",
            current: "sm"
        }])
        .contains("is empty"));
        assert!(problem(&[ComponentAlias {
            old: "va der",
            current: "sm"
        }])
        .contains("contains a blank"));
        assert!(problem(&[ComponentAlias {
            old: "^vader",
            current: "sm"
        }])
        .contains("'^'"));
        assert!(problem(&[ComponentAlias {
            old: "sm",
            current: "sm"
        }])
        .contains("maps a name to itself"));
        let twice = problem(&[
            ComponentAlias {
                old: "vader",
                current: "sm",
            },
            ComponentAlias {
                old: "vader",
                current: "shm",
            },
        ]);
        assert!(twice.contains("\"vader\" is declared twice"), "{twice}");
        let chain = problem(&[
            ComponentAlias {
                old: "vader",
                current: "sm",
            },
            ComponentAlias {
                old: "sm",
                current: "shm",
            },
        ]);
        assert!(
            chain.contains("\"vader\" -> \"sm\" -> \"shm\"; map \"vader\" to \"shm\" directly"),
            "{chain}"
        );
    }
}
