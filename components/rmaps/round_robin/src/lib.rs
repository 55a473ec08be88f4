//! rmaps component `round_robin`: Round-robin mapper: by slot, node, core, hwthread, package or numa.
//!
//! The mapping itself is the framework's shared, tested mapping library
//! (`oxmpi_framework_rmaps::round_robin`); this component is the unit the core
//! finds, selects by priority and asks to map a job through the
//! layout-checked [`RmapsModule`]. Parameter: `rmaps_round_robin_priority`
//! (default 10; mpirun tries usable mappers from the highest priority
//! down and the first that accepts the job's policy maps it).

use abi_stable::std_types::{RResult, RStr, RString};
use oxmpi_framework_rmaps::module::{serve_accepts, serve_map, RmapsModule};
use oxmpi_framework_rmaps::round_robin::RoundRobin;
use oxmpi_plugin_api::{
    ComponentContext, ComponentError, Lifecycle, ParamDecl, ParamType, ParamValue, QueryReply,
    Version,
};

/// The component's parameters.
pub static PARAMS: &[ParamDecl] = &[ParamDecl::new(
    "priority",
    ParamType::Int,
    "10",
    9,
    "Selection priority of the round_robin mapper: usable mappers are tried from the highest priority down, and the first that accepts the job's mapping policy maps it.",
)];

/// The component's lifecycle.
pub struct Component;

impl Lifecycle for Component {
    fn query(ctx: &ComponentContext) -> Result<QueryReply, ComponentError> {
        let priority = match ctx.param("priority") {
            Some(ParamValue::Int(p)) => i32::try_from(p).unwrap_or(i32::MAX),
            _ => 10,
        };
        Ok(QueryReply::Usable { priority })
    }
}

extern "C" fn accepts(policy_json: RStr<'_>) -> bool {
    serve_accepts(&RoundRobin, policy_json)
}

extern "C" fn map(request_json: RStr<'_>) -> RResult<RString, RString> {
    serve_map(&RoundRobin, request_json)
}

/// The component's rmaps module.
pub static MODULE: RmapsModule = RmapsModule { accepts, map };

oxmpi_plugin_api::export_component! {
    lifecycle: Component,
    framework: "rmaps",
    component: "round_robin",
    version: Version::new(1, 0, 0),
    interface: oxmpi_framework_rmaps::INTERFACE_VERSION,
    description: "Round-robin mapper: by slot, node, core, hwthread, package or numa",
    params: PARAMS,
    module: &MODULE,
}
