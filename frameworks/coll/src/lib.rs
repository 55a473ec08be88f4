//! The `coll` framework: collective operations, chosen per communicator.
//!
//! Selection: every usable component is kept; each communicator takes each
//! operation from the highest-priority component that provides it. The
//! core declares the selection parameter `coll` and `coll_base_verbose`
//! for it; this crate declares the rest of the framework-wide parameters
//! and the module interface coll components implement ([`module`]): a
//! component implements the safe [`adapter::Coll`] trait and exports it
//! with [`export_coll_component!`]; the MPI layer drives it through
//! [`handle::CollHandle`].

// The workspace lints, written in the crate: component authors build this
// crate outside the workspace (docs/writing-a-component.md).
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs, rust_2018_idioms)]

use oxmpi_plugin_api::{FrameworkInfo, ParamDecl, SelectionKind, Version};

pub mod adapter;
#[cfg(feature = "collectives")]
pub mod buffers;
pub mod handle;
pub mod module;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
#[cfg(feature = "collectives")]
pub mod transport;

/// Version of the interface between the coll framework and its components.
pub const INTERFACE_VERSION: Version = Version::new(2, 0, 0);

/// Framework-wide parameters beyond the selection and verbosity ones.
pub const BASE_PARAMS: &[ParamDecl] = &[];

/// Description of the coll framework for the core.
pub static FRAMEWORK: FrameworkInfo = FrameworkInfo {
    name: "coll",
    description: "Collective operations, chosen per communicator",
    interface_version: INTERFACE_VERSION,
    selection: SelectionKind::Multi,
    base_params: BASE_PARAMS,
    component_aliases: &[],
};

#[doc(hidden)]
pub use oxmpi_plugin_api as __plugin_api;
