#![warn(missing_docs)]

//! pml component `cm`: MPI point-to-point over one MTL, a network library
//! that matches tags itself (libfabric's tagged endpoints through the
//! `ofi` MTL).
//!
//! The MTL serves the whole request interface — matching, synchronous
//! sends, large messages, probes and cancellation happen in the network
//! library — so cm starts the MTL the MPI layer selected, answers its tag
//! layout's limits, and passes every request on. Its table says it runs
//! over an MTL (`PmlTransport::Mtl`): the MPI layer opens the mtl
//! framework only for it, and passes cm over, with the MTLs' reasons,
//! when no MTL is usable (so ob1 stays the default where no tag-matching
//! network is).
//!
//! Selection: `pml_cm_priority` (default 30, above ob1's 20: a usable MTL
//! is a better network than the btls).

mod component;

pub use component::Cm;
use oxmpi_plugin_api::{ComponentContext, ComponentError, Lifecycle, Params, QueryReply, Version};

/// The component's parameters (`pml_cm_<name>`), declared once:
/// `CmParams::DECLS` is the table exported in the root module.
#[derive(Params, Clone, Debug, PartialEq, Eq)]
pub struct CmParams {
    /// Selection priority of the cm pml when an MTL is usable (default
    /// 30, above ob1's 20).
    #[param(
        default = "30",
        level = Developer(All),
        help = "Selection priority of the cm pml: the usable pml with the highest priority is \
                used. cm is usable only when an MTL (a tag-matching network such as libfabric's) \
                is; then it is preferred to ob1 (priority 20)."
    )]
    pub priority: i32,
}

/// The component's lifecycle: usable wherever it loads, at
/// `pml_cm_priority` (the MPI layer sets it aside when no MTL is usable).
pub struct Component;

impl Lifecycle for Component {
    fn query(ctx: &ComponentContext) -> Result<QueryReply, ComponentError> {
        let params = CmParams::read(ctx).map_err(ComponentError::failed)?;
        Ok(QueryReply::Usable {
            priority: params.priority,
        })
    }
}

oxmpi_framework_pml::export_pml_component! {
    pml: Cm,
    lifecycle: Component,
    component: "cm",
    version: Version::new(1, 0, 0),
    description: "MPI point-to-point over one MTL (a network library that matches tags)",
    params: CmParams::DECLS,
}
