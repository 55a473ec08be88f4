//! The rmaps module: what an rmaps component hands the core (through
//! [`oxmpi_plugin_api::ModuleTable`], layout-checked), and the adapters on
//! both sides.
//!
//! Mapping runs once per job, far from any hot path, so requests and maps
//! cross the library boundary as JSON text (the serde forms of
//! [`MapPolicy`], [`MapRequest`], [`JobMap`] and [`MapError`]); the module
//! type itself stays two plain function pointers.

use crate::{JobMap, MapError, MapErrorKind, MapPolicy, MapRequest, Mapper};
use abi_stable::std_types::{RResult, RStr, RString};
use abi_stable::StableAbi;

/// Entry points of an rmaps component.
#[repr(C)]
#[derive(StableAbi)]
pub struct RmapsModule {
    /// Whether the component maps jobs with this policy (JSON of a
    /// [`MapPolicy`]); unreadable input answers false.
    pub accepts: extern "C" fn(policy_json: RStr<'_>) -> bool,
    /// Maps a job: JSON of a [`MapRequest`] in, JSON of the [`JobMap`] out,
    /// or JSON of the [`MapError`].
    pub map: extern "C" fn(request_json: RStr<'_>) -> RResult<RString, RString>,
}

fn error_json(kind: MapErrorKind, message: String) -> RString {
    serde_json::to_string(&MapError::new(kind, message))
        .unwrap_or_default()
        .into()
}

/// Component side of [`RmapsModule::accepts`].
pub fn serve_accepts(mapper: &dyn Mapper, policy_json: RStr<'_>) -> bool {
    let outcome = oxmpi_plugin_api::guard::call(|| {
        Ok(serde_json::from_str::<MapPolicy>(policy_json.as_str())
            .is_ok_and(|p| mapper.accepts(&p)))
    });
    outcome.into_result().unwrap_or(false)
}

/// Component side of [`RmapsModule::map`]; a panic becomes a mapping error.
pub fn serve_map(mapper: &dyn Mapper, request_json: RStr<'_>) -> RResult<RString, RString> {
    let outcome = oxmpi_plugin_api::guard::call(|| {
        let request: MapRequest = match serde_json::from_str(request_json.as_str()) {
            Ok(r) => r,
            Err(e) => {
                return Ok(Err(error_json(
                    MapErrorKind::BadRequest,
                    format!(
                        "the {} mapper could not read the request: {e}",
                        mapper.name()
                    ),
                )))
            }
        };
        Ok(match mapper.map(&request) {
            Ok(map) => serde_json::to_string(&map).map(RString::from).map_err(|e| {
                error_json(
                    MapErrorKind::ComponentFailed,
                    format!("cannot encode the map: {e}"),
                )
            }),
            Err(e) => Err(serde_json::to_string(&e).unwrap_or_default().into()),
        })
    });
    match outcome.into_result() {
        Ok(Ok(map)) => RResult::ROk(map),
        Ok(Err(e)) => RResult::RErr(e),
        Err(panic) => RResult::RErr(error_json(
            MapErrorKind::ComponentFailed,
            format!("the {} mapper {panic}", mapper.name()),
        )),
    }
}

/// Core side: asks a component whether it maps jobs with `policy`.
pub fn call_accepts(module: &RmapsModule, policy: &MapPolicy) -> bool {
    match serde_json::to_string(policy) {
        Ok(json) => (module.accepts)(RStr::from_str(&json)),
        Err(_) => false,
    }
}

/// Core side: maps a job through a component.
pub fn call_map(module: &RmapsModule, request: &MapRequest) -> Result<JobMap, MapError> {
    let json = serde_json::to_string(request).map_err(|e| {
        MapError::new(
            MapErrorKind::BadRequest,
            format!("cannot encode the request: {e}"),
        )
    })?;
    match (module.map)(RStr::from_str(&json)) {
        RResult::ROk(map) => serde_json::from_str(map.as_str()).map_err(|e| {
            MapError::new(
                MapErrorKind::ComponentFailed,
                format!("the mapper returned a map that cannot be read: {e}"),
            )
        }),
        RResult::RErr(e) => Err(serde_json::from_str(e.as_str()).unwrap_or_else(|_| {
            MapError::new(
                MapErrorKind::ComponentFailed,
                format!("the mapper failed: {}", oxmpi_plugin_api::text::excerpt(&e)),
            )
        })),
    }
}

/// Defines a complete rmaps component around a [`Mapper`] of this crate:
/// its `priority` parameter (`rmaps_<name>_priority`, declared with
/// `#[derive(oxmpi_plugin_api::Params)]` on the struct `Params`, with a
/// test that checks the declaration), a query answering
/// that priority, the [`RmapsModule`] and the exported root module. The
/// component crate depends on `abi_stable`, `oxmpi-plugin-api` and this
/// crate.
///
/// ```ignore
/// oxmpi_framework_rmaps::export_mapper_component! {
///     mapper: oxmpi_framework_rmaps::seq::Seq,
///     name: "seq",
///     priority: 60,
///     description: "Sequential mapper",
/// }
/// ```
#[macro_export]
macro_rules! export_mapper_component {
    (mapper: $mapper:expr, name: $name:literal, priority: $prio:literal, description: $desc:literal $(,)?) => {
        /// The component's parameters (`rmaps_<name>_<param>`), declared
        /// once: `Params::DECLS` is the table in the root module.
        #[derive(::oxmpi_plugin_api::Params, Clone, Debug, PartialEq, Eq)]
        pub struct Params {
            /// `rmaps_<name>_priority`.
            #[param(
                default = concat!($prio),
                level = Developer(All),
                help = concat!(
                    "Selection priority of the ",
                    $name,
                    " mapper: usable mappers are tried from the highest priority down, and the first that accepts the job's mapping policy maps it."
                )
            )]
            pub priority: i32,
        }

        /// The component's lifecycle.
        pub struct Component;

        impl ::oxmpi_plugin_api::Lifecycle for Component {
            fn query(
                ctx: &::oxmpi_plugin_api::ComponentContext,
            ) -> Result<::oxmpi_plugin_api::QueryReply, ::oxmpi_plugin_api::ComponentError> {
                let params = <Params as ::oxmpi_plugin_api::Params>::read(ctx)
                    .map_err(::oxmpi_plugin_api::ComponentError::failed)?;
                Ok(::oxmpi_plugin_api::QueryReply::Usable { priority: params.priority })
            }
        }

        #[cfg(test)]
        mod __oxmpi_mapper_params_tests {
            use ::oxmpi_plugin_api::Params as _;

            #[test]
            fn declarations_are_valid_and_the_default_is_the_priority() {
                super::Params::check_declarations().unwrap();
                assert_eq!(super::Params::default().priority, $prio);
                assert_eq!(
                    <super::Params as ::oxmpi_plugin_api::Params>::DECLS[0].name.as_str(),
                    "priority"
                );
            }
        }

        extern "C" fn accepts(policy_json: ::abi_stable::std_types::RStr<'_>) -> bool {
            $crate::module::serve_accepts(&$mapper, policy_json)
        }

        extern "C" fn map(
            request_json: ::abi_stable::std_types::RStr<'_>,
        ) -> ::abi_stable::std_types::RResult<::abi_stable::std_types::RString, ::abi_stable::std_types::RString> {
            $crate::module::serve_map(&$mapper, request_json)
        }

        /// The component's rmaps module.
        pub static MODULE: $crate::module::RmapsModule = $crate::module::RmapsModule { accepts, map };

        ::oxmpi_plugin_api::export_component! {
            lifecycle: Component,
            framework: "rmaps",
            component: $name,
            version: ::oxmpi_plugin_api::Version::new(1, 0, 0),
            interface: $crate::INTERFACE_VERSION,
            description: $desc,
            params: <Params as ::oxmpi_plugin_api::Params>::DECLS,
            module: &MODULE,
        }
    };
}
