//! rmaps component `ppr`: Processes-per-resource mapper: ppr:N:node|package|numa|core.
//!
//! The mapping itself is the framework's shared, tested mapping library
//! (`oxmpi_framework_rmaps::ppr`); this component is the unit the core
//! finds, selects by priority and asks to map a job through the
//! layout-checked [`RmapsModule`]. Parameter: `rmaps_ppr_priority`
//! (default 90; mpirun tries usable mappers from the highest priority
//! down and the first that accepts the job's policy maps it).

use abi_stable::std_types::{RResult, RStr, RString};
use oxmpi_framework_rmaps::module::{serve_accepts, serve_map, RmapsModule};
use oxmpi_framework_rmaps::ppr::Ppr;
use oxmpi_plugin_api::{
    ComponentContext, ComponentError, Lifecycle, ParamDecl, ParamType, ParamValue, QueryReply,
    Version,
};

/// The component's parameters.
pub static PARAMS: &[ParamDecl] = &[ParamDecl::new(
    "priority",
    ParamType::Int,
    "90",
    9,
    "Selection priority of the ppr mapper: usable mappers are tried from the highest priority down, and the first that accepts the job's mapping policy maps it.",
)];

/// The component's lifecycle.
pub struct Component;

impl Lifecycle for Component {
    fn query(ctx: &ComponentContext) -> Result<QueryReply, ComponentError> {
        let priority = match ctx.param("priority") {
            Some(ParamValue::Int(p)) => i32::try_from(p).unwrap_or(i32::MAX),
            _ => 90,
        };
        Ok(QueryReply::Usable { priority })
    }
}

extern "C" fn accepts(policy_json: RStr<'_>) -> bool {
    serve_accepts(&Ppr, policy_json)
}

extern "C" fn map(request_json: RStr<'_>) -> RResult<RString, RString> {
    serve_map(&Ppr, request_json)
}

/// The component's rmaps module.
pub static MODULE: RmapsModule = RmapsModule { accepts, map };

oxmpi_plugin_api::export_component! {
    lifecycle: Component,
    framework: "rmaps",
    component: "ppr",
    version: Version::new(1, 0, 0),
    interface: oxmpi_framework_rmaps::INTERFACE_VERSION,
    description: "Processes-per-resource mapper: ppr:N:node|package|numa|core",
    params: PARAMS,
    module: &MODULE,
}
