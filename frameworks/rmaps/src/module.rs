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
                    MapErrorKind::BadRequest,
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
            MapErrorKind::BadRequest,
            format!("the {} mapper failed: {panic}", mapper.name()),
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
                MapErrorKind::BadRequest,
                format!("the mapper returned a map that cannot be read: {e}"),
            )
        }),
        RResult::RErr(e) => Err(serde_json::from_str(e.as_str()).unwrap_or_else(|_| {
            MapError::new(MapErrorKind::BadRequest, format!("the mapper failed: {e}"))
        })),
    }
}
