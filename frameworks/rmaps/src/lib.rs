//! The `rmaps` framework: Resource mapping: places a job's processes on nodes and slots.
//!
//! Selection: one mapper per job, the usable one with the highest priority. The core declares the selection parameter `rmaps` and
//! `rmaps_base_verbose` for it; this crate declares the rest of the
//! framework-wide parameters and, as components arrive, the module interface
//! they implement.

pub mod hosts;

use oxmpi_plugin_api::{FrameworkInfo, ParamDecl, SelectionKind, Version};

/// Version of the interface between the rmaps framework and its components.
pub const INTERFACE_VERSION: Version = Version::new(1, 0, 0);

/// Framework-wide parameters beyond the selection and verbosity ones.
pub const BASE_PARAMS: &[ParamDecl] = &[];

/// Description of the rmaps framework for the core.
pub static FRAMEWORK: FrameworkInfo = FrameworkInfo {
    name: "rmaps",
    description: "Resource mapping: places a job's processes on nodes and slots",
    interface_version: INTERFACE_VERSION,
    selection: SelectionKind::Single,
    base_params: BASE_PARAMS,
};
