//! The `mtl` framework: Matching transport layer: tag-matching networks driven by the cm pml.
//!
//! Selection: one MTL per process, the usable one with the highest
//! priority. The MPI layer opens this framework only when a pml that
//! drives an MTL (`cm`) is among the pml candidates, and such a pml is
//! usable only when an MTL is. The core declares the selection parameter
//! `mtl` and `mtl_base_verbose` for it; this crate declares the rest of
//! the framework-wide parameters and the module interface mtl components
//! implement ([`module`]): a component implements the shared
//! [`Requests`](oxmpi_framework_requests::serve::Requests) trait and
//! [`adapter::Mtl`] (its `init`) and exports them with
//! [`export_mtl_component!`]; the pml drives it through
//! [`handle::MtlHandle`].
//!
//! An MTL serves the whole point-to-point request interface (the one a
//! pml serves: [`oxmpi_framework_requests`]) — matching, synchronous
//! sends, probes and cancellation happen in the network library — so the
//! pml over it only starts it and passes requests on.

// The workspace lints, written in the crate: component authors build this
// crate outside the workspace (docs/writing-a-component.md).
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs, rust_2018_idioms)]

use oxmpi_plugin_api::{FrameworkInfo, ParamDecl, SelectionKind, Version};

pub mod adapter;
pub mod handle;
pub mod module;

/// Version of the interface between the mtl framework and its components.
pub const INTERFACE_VERSION: Version = Version::new(3, 0, 0);

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

#[doc(hidden)]
pub use oxmpi_framework_requests as __requests;
#[doc(hidden)]
pub use oxmpi_plugin_api as __plugin_api;
