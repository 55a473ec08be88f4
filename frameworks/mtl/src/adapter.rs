//! The component side of the mtl interface: an mtl implements the shared
//! [`Requests`] trait (the request entry points; see
//! [`oxmpi_framework_requests::serve`]) and [`Mtl`] (its `init`), and
//! [`export_mtl_component!`](crate::export_mtl_component) generates the
//! `extern "C"` [`MtlModule`] table, the one process-global state
//! ([`oxmpi_plugin_api::Instance`]: exclusive entry checked, panics caught
//! and the component stopped after one) and the component's root module.
//!
//! A refused entry answers as the shared entries do, with the sentence
//! `mtl <component> <entry>: <why>`; a refused `init` installs nothing.

use crate::module::{Limits, MpiServices, MtlModule};
use abi_stable::std_types::RString;
use oxmpi_framework_btl::module::JobIdentity;
use oxmpi_framework_requests::serve::install;
pub use oxmpi_framework_requests::serve::{request_table, Requests, Served};
pub use oxmpi_framework_requests::services::Core;
use oxmpi_plugin_api::ComponentContext;

/// What an mtl component implements (one value per process, created by
/// [`Mtl::init`]). Every method is called with exclusive access.
pub trait Mtl: Requests {
    /// Opens the network over the MPI layer's `core` (publishing this
    /// process's address through its modex). `Err`: the component cannot
    /// run, in one sentence or more. Its [`Requests::limits`] are asked
    /// right after.
    fn init(context: &ComponentContext, identity: &JobIdentity, core: Core)
        -> Result<Self, String>;
}

/// An exported mtl: its [`Mtl`] and the [`Served`] state
/// [`export_mtl_component!`](crate::export_mtl_component) implements.
pub trait Exported: Mtl + Served {}

impl<M: Mtl + Served> Exported for M {}

/// The `extern "C"` table for `M` (what
/// [`export_mtl_component!`](crate::export_mtl_component) exports).
pub const fn table<M: Exported>() -> MtlModule {
    MtlModule {
        init: init::<M>,
        requests: request_table::<M>(),
    }
}

unsafe extern "C" fn init<M: Exported>(
    context: &ComponentContext,
    identity: &JobIdentity,
    core: MpiServices,
    limits: &mut Limits,
    error: &mut RString,
) -> bool {
    install::<M>(context, limits, error, || {
        M::init(context, identity, Core::new(core))
    })
}

/// Exports an mtl component: the [`Mtl`] implementation's instance and
/// [`MtlModule`] table (as `MODULE`), and the component's root module
/// (through [`oxmpi_plugin_api::export_component!`]).
///
/// ```ignore
/// oxmpi_framework_mtl::export_mtl_component! {
///     mtl: MyMtl,                 // impl Requests + Mtl for MyMtl { … }
///     lifecycle: MyComponent,     // impl Lifecycle for MyComponent { … }
///     component: "mine",
///     version: Version::new(1, 0, 0),
///     description: "What it does",
///     params: <MyParams as oxmpi_plugin_api::Params>::DECLS,
/// }
/// ```
#[macro_export]
macro_rules! export_mtl_component {
    (
        mtl: $mtl:ty,
        lifecycle: $lifecycle:ty,
        component: $comp:expr,
        version: $ver:expr,
        description: $desc:expr,
        params: $params:expr $(,)?
    ) => {
        /// The component's mtl module table (generated from its `Mtl`).
        pub static MODULE: $crate::module::MtlModule = $crate::adapter::table::<$mtl>();

        $crate::__requests::impl_served!($mtl, framework: "mtl", component: $comp);

        $crate::__plugin_api::export_component! {
            lifecycle: $lifecycle,
            framework: "mtl",
            component: $comp,
            version: $ver,
            interface: $crate::INTERFACE_VERSION,
            description: $desc,
            params: $params,
            module: &MODULE,
        }
    };
}
