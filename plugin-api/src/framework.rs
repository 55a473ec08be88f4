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
}
