//! The rmaps module: what an rmaps component hands the core (through
//! [`oxmpi_plugin_api::ModuleTable`], layout-checked), and the component
//! side of its entry points (the caller side is
//! [`RmapsHandle`](crate::handle::RmapsHandle)).
//!
//! Mapping runs once per job, far from any hot path, so requests and maps
//! cross the library boundary as JSON text (the serde forms of
//! [`MapPolicy`], [`MapRequest`], [`JobMap`](crate::JobMap) and [`MapError`]).
//!
//! [`RmapsModule`] is an abi_stable *prefix* type (handed over as
//! [`RmapsModuleRef`]): fields may be appended after `map` (the last
//! prefix field) in a minor version of the interface, and the core reads an
//! appended field a component does not have as absent. The appended
//! fields:
//!
//! | interface | field | a component without it |
//! |---|---|---|
//! | 2.0 | `policies`: the `--map-by` names it adds | adds none |
//! | 2.1 | `accepts_checked`: `accepts` that tells a panic or unreadable input from "no" | its `accepts` answer is read as before: a panic or unreadable input reads as "no" |
//!
//! [`export_mapper_component!`](crate::export_mapper_component) fills every
//! field through [`serve_accepts`], [`serve_accepts_checked`] and
//! [`serve_map`] (each under the panic guard).

use crate::mapper::{Mapper, MapperParams};
use crate::{MapBy, MapError, MapErrorKind, MapPolicy, MapRequest};
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

/// Entry points of an rmaps component (see the module docs for the
/// appended fields).
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = RmapsModuleRef)))]
#[sabi(missing_field(option))]
pub struct RmapsModule {
    /// Whether the component maps jobs with this policy (JSON of a
    /// [`MapPolicy`]); unreadable input and a panic answer false. Callers
    /// use `accepts_checked` when the component has it.
    pub accepts: extern "C" fn(policy_json: RStr<'_>) -> bool,
    /// Maps a job: JSON of a [`MapRequest`] in, JSON of the [`JobMap`](crate::JobMap) out,
    /// or JSON of the [`MapError`] (a request whose policy the component
    /// does not accept is a [`MapErrorKind::NoMapper`] error).
    #[sabi(last_prefix_field)]
    pub map: extern "C" fn(request_json: RStr<'_>) -> RResult<RString, RString>,
    /// The `--map-by` policy names the component adds (appended in 2.0:
    /// absent in a component that predates it, read as none).
    pub policies: RSlice<'static, PolicyName>,
    /// Whether the component maps jobs with this policy, telling failures
    /// apart (appended in 2.1): `Ok(answer)`, or JSON of a [`MapError`] —
    /// [`MapErrorKind::BadRequest`] for unreadable input,
    /// [`MapErrorKind::ComponentFailed`] when the component panicked.
    pub accepts_checked: extern "C" fn(policy_json: RStr<'_>) -> RResult<bool, RString>,
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
///
/// This is the only state a mapper component has, and it is deliberately
/// not an [`oxmpi_plugin_api::Instance`] (which the btl and pml adapters
/// use for their components' state):
///
/// - a [`Mapper`] maps through `&self` and is `Sync`, and `map` gets a
///   clone of the parameters, so no entry point mutates state a panic
///   could leave half-updated: poisoning would only turn one bad request
///   into a component that refuses every later job;
/// - `map` must work before any `query` (with the declared defaults: tests
///   and benchmarks map through a component's `candidate()`), while an
///   `Instance` refuses every entry before its `init` installed a state;
/// - the lock is held only to store or clone the values (no component code
///   runs under it), so a nested or concurrent entry can neither deadlock
///   nor alias anything, and needs no refusal. A panic while it is held
///   (a `Clone` impl that panics) leaves the old or the new value whole, so
///   the lock's poisoning is ignored.
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

/// Reads the policy JSON the core sent.
fn read_policy<M: Mapper>(policy_json: RStr<'_>) -> Result<MapPolicy, RString> {
    serde_json::from_str(policy_json.as_str()).map_err(|e| {
        error_json(
            MapErrorKind::BadRequest,
            format!(
                "the {} mapper could not read the mapping policy it was asked about: {e}",
                M::NAME
            ),
        )
    })
}

/// Component side of [`RmapsModule::accepts`] (interface 2.0): false for
/// unreadable input and after a panic.
pub fn serve_accepts<M: Mapper>(mapper: &M, policy_json: RStr<'_>) -> bool {
    matches!(
        serve_accepts_checked(mapper, policy_json),
        RResult::ROk(true)
    )
}

/// Component side of [`RmapsModule::accepts_checked`]: the answer, or
/// JSON of a [`MapError`] — `BadRequest` for unreadable input,
/// `ComponentFailed` (naming the panic and where it happened) when the
/// mapper's [`Mapper::accepts`] panicked.
pub fn serve_accepts_checked<M: Mapper>(
    mapper: &M,
    policy_json: RStr<'_>,
) -> RResult<bool, RString> {
    let outcome = oxmpi_plugin_api::guard::call(|| {
        Ok(read_policy::<M>(policy_json).map(|policy| accepts(mapper, &policy)))
    });
    match outcome.into_result() {
        Ok(Ok(answer)) => RResult::ROk(answer),
        Ok(Err(e)) => RResult::RErr(e),
        Err(panic) => RResult::RErr(error_json(
            MapErrorKind::ComponentFailed,
            format!("the {} mapper's accepts {panic}", M::NAME),
        )),
    }
}

/// Component side of [`RmapsModule::map`], with the parameters `query`
/// read: a request whose policy the mapper does not accept is refused
/// ([`MapErrorKind::NoMapper`]) without calling [`Mapper::map`], unreadable
/// input is a [`MapErrorKind::BadRequest`], and a panic becomes a
/// [`MapErrorKind::ComponentFailed`] error naming it.
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
        if !accepts(mapper, &request.policy) {
            return Ok(Err(error_json(
                MapErrorKind::NoMapper,
                format!(
                    "the {} mapper does not map by {}; the job goes to a mapper that accepts its policy (the rmaps selection asks each one)",
                    M::NAME,
                    request.policy
                ),
            )));
        }
        Ok(match mapper.map(&request, params) {
            Ok(map) => serde_json::to_string(&map).map(RString::from).map_err(|e| {
                error_json(
                    MapErrorKind::ComponentFailed,
                    format!("the {} mapper cannot encode its map: {e}", M::NAME),
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
