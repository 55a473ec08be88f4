//! The `pml` framework: Point-to-point messaging layer: MPI matching and protocols over BTLs, an MTL or UCX.
//!
//! Selection: one PML per process, the usable one with the highest priority. The core declares the selection parameter `pml` and
//! `pml_base_verbose` for it; this crate declares the rest of the
//! framework-wide parameters and the module interface pml components
//! implement ([`module`]): a component implements the safe
//! [`adapter::Pml`] trait and exports it with [`export_pml_component!`];
//! the MPI layer drives it through [`handle::PmlHandle`]. With the feature
//! `testkit`, the test kit and the conformance suite every pml component's
//! tests run (`testkit`).

// The workspace lints, written in the crate: component authors build this
// crate outside the workspace (docs/writing-a-component.md).
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs, rust_2018_idioms)]

use oxmpi_plugin_api::{FrameworkInfo, ParamDecl, SelectionKind, Version};

pub mod adapter;
pub mod handle;
pub mod module;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;

/// Version of the interface between the pml framework and its components.
pub const INTERFACE_VERSION: Version = Version::new(9, 0, 0);

/// Framework-wide parameters beyond the selection and verbosity ones.
pub const BASE_PARAMS: &[ParamDecl] = &[];

/// Description of the pml framework for the core.
pub static FRAMEWORK: FrameworkInfo = FrameworkInfo {
    name: "pml",
    description:
        "Point-to-point messaging layer: MPI matching and protocols over BTLs, an MTL or UCX",
    interface_version: INTERFACE_VERSION,
    selection: SelectionKind::Single,
    base_params: BASE_PARAMS,
    component_aliases: &[],
};

#[doc(hidden)]
pub use oxmpi_framework_requests as __requests;
#[doc(hidden)]
pub use oxmpi_plugin_api as __plugin_api;
