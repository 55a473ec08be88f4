//! The `mtl` framework: Matching transport layer: tag-matching networks driven by the cm pml.
//!
//! Selection: one MTL per process, the usable one with the highest priority. The core declares the selection parameter `mtl` and
//! `mtl_base_verbose` for it; this crate declares the rest of the
//! framework-wide parameters. It defines no module interface, and no mtl
//! component exists.

// The workspace lints, written in the crate: component authors build this
// crate outside the workspace (docs/writing-a-component.md).
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs, rust_2018_idioms)]

use oxmpi_plugin_api::{FrameworkInfo, ParamDecl, SelectionKind, Version};

/// Version of the interface between the mtl framework and its components.
pub const INTERFACE_VERSION: Version = Version::new(1, 0, 0);

/// Framework-wide parameters beyond the selection and verbosity ones.
pub const BASE_PARAMS: &[ParamDecl] = &[];

/// Description of the mtl framework for the core.
pub static FRAMEWORK: FrameworkInfo = FrameworkInfo {
    name: "mtl",
    description: "Matching transport layer: tag-matching networks driven by the cm pml",
    interface_version: INTERFACE_VERSION,
    selection: SelectionKind::Single,
    base_params: BASE_PARAMS,
    component_aliases: &[],
};
