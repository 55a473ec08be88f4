//! Framework diagnostics through `tracing`, filtered by `<fw>_base_verbose`.
//!
//! Each framework has a verbosity from -1 (none) to 100; a message at level
//! L prints when the framework's verbosity is at least L. Selection
//! decisions log at [`COMPONENT`] (10), so `--mca btl_base_verbose 10`
//! answers "which BTL did I get, and why?". Lines read
//! `[host:pid] fw:component: message`.

use std::collections::HashMap;
use std::fmt;
use std::sync::{OnceLock, RwLock};
use tracing::field::{Field, Visit};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

pub use oxmpi_plugin_api::verbosity::{COMPONENT, DEBUG, ERROR, INFO, MAX, TRACE, WARN};

fn table() -> &'static RwLock<HashMap<String, i32>> {
    static TABLE: OnceLock<RwLock<HashMap<String, i32>>> = OnceLock::new();
    TABLE.get_or_init(Default::default)
}

/// Sets a framework's verbosity (`mca` is the MCA base itself).
pub fn set_verbosity(framework: &str, level: i32) {
    table()
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .insert(framework.to_string(), level);
}

/// A framework's verbosity (0 if never set).
pub fn verbosity(framework: &str) -> i32 {
    table()
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(framework)
        .copied()
        .unwrap_or(ERROR)
}

/// Whether a message at `level` of `framework` would print.
pub fn enabled(framework: &str, level: i32) -> bool {
    level >= 0 && verbosity(framework) >= level
}

/// Emits `message` for `framework`/`component` if the framework's verbosity
/// is at least `level`.
pub fn log(framework: &str, component: &str, level: i32, message: &str) {
    if enabled(framework, level) {
        tracing::info!(target: "oxmpi", framework, component, "{message}");
    }
}

/// Formats events as `[host:pid] fw:component: message`.
pub struct McaFormat {
    prefix: String,
}

impl McaFormat {
    /// A formatter for this host and process.
    pub fn new() -> Self {
        McaFormat {
            prefix: format!(
                "[{}:{}]",
                gethostname::gethostname().to_string_lossy(),
                std::process::id()
            ),
        }
    }
}

impl Default for McaFormat {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Default)]
struct Fields {
    framework: String,
    component: String,
    message: String,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "framework" => self.framework = value.to_string(),
            "component" => self.component = value.to_string(),
            "message" => self.message = value.to_string(),
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            self.message = format!("{value:?}");
        } else {
            self.record_str(field, &format!("{value:?}"));
        }
    }
}

impl<S, N> FormatEvent<S, N> for McaFormat
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> fmt::Result {
        let mut fields = Fields::default();
        event.record(&mut fields);
        if fields.framework.is_empty() {
            writeln!(writer, "{} {}", self.prefix, fields.message)
        } else {
            writeln!(
                writer,
                "{} {}:{}: {}",
                self.prefix, fields.framework, fields.component, fields.message
            )
        }
    }
}

/// Installs a subscriber that prints diagnostics to stderr in the MCA
/// format, unless the process already has one. Safe to call repeatedly.
pub fn init_stderr_logging() {
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .event_format(McaFormat::new())
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds() {
        set_verbosity("testfw", 20);
        assert!(enabled("testfw", 10));
        assert!(enabled("testfw", 20));
        assert!(!enabled("testfw", 21));
        set_verbosity("testfw", -1);
        assert!(!enabled("testfw", 0));
        assert!(enabled("unsetfw", 0));
        assert!(!enabled("unsetfw", 10));
    }
}
