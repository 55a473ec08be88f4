//! Mapping errors.

use std::fmt;

/// What kind of mapping failure (for callers that react differently; the
/// message is for people).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum MapErrorKind {
    /// More processes than slots and oversubscription not allowed.
    NotEnoughSlots,
    /// More processes than the hosts' `max_slots` allow in total.
    MaxSlotsExhausted,
    /// The request names a host the allocation does not have, gives an
    /// app no host, or asks for zero processes.
    BadRequest,
    /// `ppr:N:RESOURCE` cannot place that many processes.
    PprTooFew,
    /// The seq mapper ran out of host lines.
    SeqTooFew,
    /// No mapper accepts the policy (or the selection excluded it).
    NoMapper,
    /// The mapper itself failed: it panicked, or its answer could not be
    /// read (a bug in the component, not in the request).
    ComponentFailed,
}

/// A job that cannot be mapped; nothing should be launched. The message
/// says what was wrong, where it came from and what to do.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MapError {
    /// The kind of failure.
    pub kind: MapErrorKind,
    /// The full message.
    pub message: String,
}

impl MapError {
    /// An error of `kind` with `message`.
    pub fn new(kind: MapErrorKind, message: impl Into<String>) -> Self {
        MapError {
            kind,
            message: message.into(),
        }
    }
}

impl fmt::Display for MapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for MapError {}
