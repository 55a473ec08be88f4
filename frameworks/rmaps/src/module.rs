//! The rmaps module: what an rmaps component hands the core (through
//! [`oxmpi_plugin_api::ModuleTable`], layout-checked), and the adapters on
//! both sides.
//!
//! Mapping runs once per job, far from any hot path, so requests and maps
//! cross the library boundary as JSON text (the serde forms of
//! [`MapPolicy`], [`MapRequest`], [`JobMap`] and [`MapError`]).
//!
//! [`RmapsModule`] is an abi_stable *prefix* type (handed over as
//! [`RmapsModuleRef`]): fields may be appended after `map` (the last
//! prefix field) in a minor version of the interface, and the core reads an
//! appended field a component does not have as absent. `policies`, the
//! `--map-by` names a component adds, is the first such field.

use crate::mapper::{Mapper, MapperParams};
use crate::{JobMap, MapBy, MapError, MapErrorKind, MapPolicy, MapRequest};
use abi_stable::std_types::{RResult, RSlice, RStr, RString};
use abi_stable::StableAbi;
use std::sync::Mutex;

/// A `--map-by` policy name a component adds, with the help text
/// `oxmpi_info` shows for it. The name is a lower-case word (letters,
/// digits, `_`, `-`) that is not a built-in policy; the user may follow it
/// with the usual modifiers (`reverse:OVERSUBSCRIBE`).
#[repr(C)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq)]
pub struct PolicyName {
    /// The name, as the user writes it after `--map-by`.
    pub name: RStr<'static>,
    /// One sentence on what it does.
    pub help: RStr<'static>,
}

impl PolicyName {
    /// A policy name and its help text.
    pub const fn new(name: &'static str, help: &'static str) -> PolicyName {
        PolicyName {
            name: RStr::from_str(name),
            help: RStr::from_str(help),
        }
    }

    /// Why this name cannot be a component policy, if it cannot.
    pub fn check(&self) -> Result<(), String> {
        let name = self.name.as_str();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
        {
            return Err(format!(
                "policy name \"{}\" is not a lower-case word (letters, digits, _ and -)",
                oxmpi_plugin_api::text::excerpt(name)
            ));
        }
        if crate::policy::is_builtin_policy(name) {
            return Err(format!(
                "policy name \"{name}\" is a built-in --map-by policy"
            ));
        }
        if self.help.trim().is_empty() {
            return Err(format!("policy name \"{name}\" has no help text"));
        }
        Ok(())
    }
}

/// Entry points of an rmaps component.
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = RmapsModuleRef)))]
#[sabi(missing_field(option))]
pub struct RmapsModule {
    /// Whether the component maps jobs with this policy (JSON of a
    /// [`MapPolicy`]); unreadable input answers false.
    pub accepts: extern "C" fn(policy_json: RStr<'_>) -> bool,
    /// Maps a job: JSON of a [`MapRequest`] in, JSON of the [`JobMap`] out,
    /// or JSON of the [`MapError`].
    #[sabi(last_prefix_field)]
    pub map: extern "C" fn(request_json: RStr<'_>) -> RResult<RString, RString>,
    /// The `--map-by` policy names the component adds (appended field:
    /// absent in a component that predates it, read as none).
    pub policies: RSlice<'static, PolicyName>,
}

impl RmapsModuleRef {
    /// The policy names the component declared (none if its module
    /// predates the field).
    pub fn policy_names(self) -> &'static [PolicyName] {
        self.policies().map_or(&[], |s| s.as_slice())
    }
}

fn error_json(kind: MapErrorKind, message: String) -> RString {
    serde_json::to_string(&MapError::new(kind, message))
        .unwrap_or_default()
        .into()
}

/// The parameters a component's `query` read, kept for its `map` (the
/// core queries a component before it maps with it). Before any query
/// (a test running a request through the component directly), the
/// declared defaults.
pub struct ParamsCell<P>(Mutex<Option<P>>);

impl<P: MapperParams> ParamsCell<P> {
    /// An empty cell.
    pub const fn new() -> Self {
        ParamsCell(Mutex::new(None))
    }

    /// Keeps the values `query` read.
    pub fn set(&self, params: P) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(params);
    }

    /// The values kept, or the declared defaults.
    pub fn get(&self) -> P {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .unwrap_or_default()
    }
}

impl<P: MapperParams> Default for ParamsCell<P> {
    /// An empty cell.
    fn default() -> Self {
        Self::new()
    }
}

/// Whether `mapper` maps jobs with `policy`: a policy name it declared
/// ([`Mapper::POLICIES`]) or one its [`Mapper::accepts`] takes.
pub fn accepts<M: Mapper>(mapper: &M, policy: &MapPolicy) -> bool {
    match &policy.map_by {
        MapBy::Named(name) if M::POLICIES.iter().any(|p| p.name.as_str() == name) => true,
        _ => mapper.accepts(policy),
    }
}

/// Component side of [`RmapsModule::accepts`].
pub fn serve_accepts<M: Mapper>(mapper: &M, policy_json: RStr<'_>) -> bool {
    let outcome = oxmpi_plugin_api::guard::call(|| {
        Ok(serde_json::from_str::<MapPolicy>(policy_json.as_str())
            .is_ok_and(|p| accepts(mapper, &p)))
    });
    outcome.into_result().unwrap_or(false)
}

/// Component side of [`RmapsModule::map`], with the parameters `query`
/// read; a panic becomes a mapping error.
pub fn serve_map<M: Mapper>(
    mapper: &M,
    params: &M::Params,
    request_json: RStr<'_>,
) -> RResult<RString, RString> {
    let outcome = oxmpi_plugin_api::guard::call(|| {
        let request: MapRequest = match serde_json::from_str(request_json.as_str()) {
            Ok(r) => r,
            Err(e) => {
                return Ok(Err(error_json(
                    MapErrorKind::BadRequest,
                    format!("the {} mapper could not read the request: {e}", M::NAME),
                )))
            }
        };
        Ok(match mapper.map(&request, params) {
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
            format!("the {} mapper {panic}", M::NAME),
        )),
    }
}

/// Core side: asks a component whether it maps jobs with `policy`.
pub fn call_accepts(module: RmapsModuleRef, policy: &MapPolicy) -> bool {
    match serde_json::to_string(policy) {
        Ok(json) => (module.accepts())(RStr::from_str(&json)),
        Err(_) => false,
    }
}

/// Core side: maps a job through a component.
pub fn call_map(module: RmapsModuleRef, request: &MapRequest) -> Result<JobMap, MapError> {
    let json = serde_json::to_string(request).map_err(|e| {
        MapError::new(
            MapErrorKind::BadRequest,
            format!("cannot encode the request: {e}"),
        )
    })?;
    match (module.map())(RStr::from_str(&json)) {
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
