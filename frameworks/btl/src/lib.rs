//! The `btl` framework: Byte transfer layer: moves bytes between two processes (shared memory, TCP, verbs, libfabric).
//!
//! Selection: every usable BTL is kept; the pml chooses among them per peer by exclusivity, then bandwidth. The core declares the selection parameter `btl` and
//! `btl_base_verbose` for it; this crate declares the rest of the
//! framework-wide parameters, the parameters every btl registers with its
//! own defaults ([`common`]) and the module interface btls implement
//! ([`module`]): the safe [`adapter::Btl`] trait a btl implements, the
//! caller side ([`handle::BtlHandle`]) and, with the feature `testkit`, the
//! test kit and conformance suite every btl component's tests use
//! (`testkit`).

// The workspace lints, written in the crate: component authors build this
// crate outside the workspace (docs/writing-a-component.md).
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs, rust_2018_idioms)]

use oxmpi_plugin_api::{ComponentAlias, FrameworkInfo, ParamDecl, SelectionKind, Version};

pub mod adapter;
pub mod bytes;
pub mod common;
pub mod handle;
pub mod module;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;

/// Version of the interface between the btl framework and its components.
pub const INTERFACE_VERSION: Version = Version::new(3, 0, 0);

/// Framework-wide parameters beyond the selection and verbosity ones.
pub const BASE_PARAMS: &[ParamDecl] = &[];

/// Old names of renamed btl components: `vader` is the shared-memory btl's
/// old name (as in Open MPI 5), now `sm`. `--mca btl self,vader` selects
/// `sm` (with a one-time note), and every `btl_sm_<x>` parameter also
/// answers to the deprecated synonym `btl_vader_<x>`.
pub const COMPONENT_ALIASES: &[ComponentAlias] = &[ComponentAlias::new("vader", "sm")];

/// Description of the btl framework for the core.
pub static FRAMEWORK: FrameworkInfo = FrameworkInfo {
    name: "btl",
    description: "Byte transfer layer: moves bytes between two processes (shared memory, TCP, verbs, libfabric)",
    interface_version: INTERFACE_VERSION,
    selection: SelectionKind::Multi,
    base_params: BASE_PARAMS,
    component_aliases: COMPONENT_ALIASES,
};

#[doc(hidden)]
pub use oxmpi_plugin_api as __plugin_api;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vader_is_the_old_name_of_sm() {
        assert_eq!(FRAMEWORK.alias_problem(), None);
        assert_eq!(FRAMEWORK.current_component_name("vader"), "sm");
        assert_eq!(
            FRAMEWORK.old_component_names("sm").collect::<Vec<_>>(),
            ["vader"]
        );
    }
}
