//! The caller side of the rmaps interface: [`RmapsHandle`], an rmaps
//! component's layout-checked module with safe methods that return
//! `Result`s, for the selection ([`crate::selection`]), mpirun and the
//! tests.
//!
//! A component of interface 2.1 or later answers `accepts` through
//! [`RmapsModule::accepts_checked`](crate::module::RmapsModule::accepts_checked),
//! so a panic inside it ([`MapErrorKind::ComponentFailed`]) or a policy it
//! cannot read ([`MapErrorKind::BadRequest`]) is an error, not a "no". A
//! component built against 2.0 lacks that field: its answer is read the
//! old way, where both read as "no" ([`RmapsHandle::checks_accepts`] tells
//! which).

use crate::error::{MapError, MapErrorKind};
use crate::jobmap::JobMap;
use crate::module::{PolicyName, RmapsModuleRef};
use crate::policy::MapPolicy;
use crate::request::MapRequest;
use abi_stable::std_types::{RResult, RStr, RString};

/// One rmaps component as its callers use it.
#[derive(Clone, Copy)]
pub struct RmapsHandle {
    module: RmapsModuleRef,
}

impl std::fmt::Debug for RmapsHandle {
    /// Its policy names and whether it reports `accepts` failures.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RmapsHandle")
            .field(
                "policies",
                &self
                    .policy_names()
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("checks_accepts", &self.checks_accepts())
            .finish()
    }
}

/// The error a component answered (JSON of a [`MapError`]), or, when that
/// cannot be read, a `ComponentFailed` error quoting it.
fn answered_error(text: RString, entry: &str) -> MapError {
    serde_json::from_str(text.as_str()).unwrap_or_else(|_| {
        MapError::new(
            MapErrorKind::ComponentFailed,
            format!(
                "the mapper's {entry} failed with an answer that is not a mapping error: {}",
                oxmpi_plugin_api::text::excerpt(&text)
            ),
        )
    })
}

impl RmapsHandle {
    /// Wraps a component's module (layout-checked by the core when the
    /// library was loaded, or a component's own `MODULE` in tests).
    pub fn new(module: RmapsModuleRef) -> Self {
        RmapsHandle { module }
    }

    /// The module it wraps.
    pub fn module(&self) -> RmapsModuleRef {
        self.module
    }

    /// The `--map-by` policy names the component adds (none when its
    /// module predates them).
    pub fn policy_names(&self) -> &'static [PolicyName] {
        self.module.policy_names()
    }

    /// Whether the component reports failures of `accepts` (interface 2.1
    /// and later); when false, a panic or unreadable input in its
    /// `accepts` reads as "no".
    pub fn checks_accepts(&self) -> bool {
        self.module.accepts_checked().is_some()
    }

    /// Whether the component maps jobs with `policy`.
    ///
    /// # Errors
    ///
    /// [`MapErrorKind::ComponentFailed`] when its `accepts` panicked (the
    /// message names the panic and where it happened) or answered
    /// something unreadable; [`MapErrorKind::BadRequest`] when it could
    /// not read the policy (a component built against an older interface
    /// may not know every policy).
    pub fn accepts(&self, policy: &MapPolicy) -> Result<bool, MapError> {
        let json = serde_json::to_string(policy).map_err(|e| {
            MapError::new(
                MapErrorKind::BadRequest,
                format!("cannot encode the mapping policy {policy}: {e}"),
            )
        })?;
        self.accepts_json(&json)
    }

    /// [`accepts`](Self::accepts) with the policy's JSON text as given
    /// (for tests and diagnostics that send the component any text).
    ///
    /// # Errors
    ///
    /// As [`accepts`](Self::accepts); malformed text is a
    /// [`MapErrorKind::BadRequest`] (a "no" from a component without
    /// `accepts_checked`).
    pub fn accepts_json(&self, policy_json: &str) -> Result<bool, MapError> {
        let text = RStr::from_str(policy_json);
        match self.module.accepts_checked() {
            Some(checked) => match checked(text) {
                RResult::ROk(answer) => Ok(answer),
                RResult::RErr(e) => Err(answered_error(e, "accepts")),
            },
            None => Ok((self.module.accepts())(text)),
        }
    }

    /// Maps a job through the component.
    ///
    /// # Errors
    ///
    /// The component's [`MapError`] (what was wrong with the job, of the
    /// kind that says so); [`MapErrorKind::NoMapper`] when it does not
    /// accept the request's policy; [`MapErrorKind::ComponentFailed`] when
    /// it panicked or answered something unreadable.
    pub fn map(&self, request: &MapRequest) -> Result<JobMap, MapError> {
        let json = serde_json::to_string(request).map_err(|e| {
            MapError::new(
                MapErrorKind::BadRequest,
                format!("cannot encode the request: {e}"),
            )
        })?;
        self.map_json(&json)
    }

    /// [`map`](Self::map) with the request's JSON text as given (for tests
    /// and diagnostics that send the component any text).
    ///
    /// # Errors
    ///
    /// As [`map`](Self::map); malformed text is a
    /// [`MapErrorKind::BadRequest`].
    pub fn map_json(&self, request_json: &str) -> Result<JobMap, MapError> {
        match (self.module.map())(RStr::from_str(request_json)) {
            RResult::ROk(map) => serde_json::from_str(map.as_str()).map_err(|e| {
                MapError::new(
                    MapErrorKind::ComponentFailed,
                    format!("the mapper returned a map that cannot be read: {e}"),
                )
            }),
            RResult::RErr(e) => Err(answered_error(e, "map")),
        }
    }
}

#[cfg(test)]
mod tests;
