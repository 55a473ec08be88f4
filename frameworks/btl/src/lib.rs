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

use oxmpi_plugin_api::{FrameworkInfo, ParamDecl, SelectionKind, Version};

pub mod adapter;
pub mod common;
pub mod handle;
pub mod module;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;

/// Version of the interface between the btl framework and its components.
pub const INTERFACE_VERSION: Version = Version::new(2, 0, 0);

/// Framework-wide parameters beyond the selection and verbosity ones.
pub const BASE_PARAMS: &[ParamDecl] = &[];

/// Description of the btl framework for the core.
pub static FRAMEWORK: FrameworkInfo = FrameworkInfo {
    name: "btl",
    description: "Byte transfer layer: moves bytes between two processes (shared memory, TCP, verbs, libfabric)",
    interface_version: INTERFACE_VERSION,
    selection: SelectionKind::Multi,
    base_params: BASE_PARAMS,
};

#[doc(hidden)]
pub use oxmpi_plugin_api as __plugin_api;
