//! The MCA base of oxmpi.
//!
//! - [`value`] (the plugin API's parser), [`source`], [`files`], [`tune`], [`registry`]: parameter
//!   types, sources and their precedence, parameter and tune files, the
//!   table of declarations.
//! - [`repository`]: finds and loads component libraries.
//! - [`selection`], [`framework`]: include/exclude lists and the framework
//!   lifecycle (open, query, select, close).
//! - [`mca`]: [`Mca`], which ties them together for one process.
//! - [`log`]: `<fw>_base_verbose` diagnostics through `tracing`.
//! - [`input_file`]: the bounded reader of every file a user names
//!   (parameter, tune and host files).

pub mod core_params;
pub mod crash_signals;
pub mod files;
pub mod framework;
pub mod input_file;
pub mod levels;
pub mod log;
pub mod mca;
pub mod paths;
pub mod registry;
pub mod repository;
pub mod selection;
pub mod services;
pub mod source;
pub mod suggest;
pub mod tune;
/// Parsing and printing parameter values by type: the plugin API's parser,
/// which components use for their defaults too (there is only one).
pub use oxmpi_plugin_api::value;

pub use framework::{McaError, OpenFramework, Selected};
pub use mca::{Assignment, Diagnostic, ExplainRow, Mca, McaInputs, Resolved, Severity};
pub use source::Source;
pub use value::Value;

/// The name of every framework of oxmpi, sorted. The core depends on no
/// framework crate: each program hands it the frameworks it loads
/// ([`McaInputs::frameworks`]). These names only let a program tell a
/// framework it does not load (whose component files it leaves unopened and
/// whose parameters it does not check: a rank and `OXMPI_MCA_rmaps_*`) from
/// a misspelt or unknown one. `oxmpi_info`, which loads every framework,
/// tests that this list names exactly the framework crates.
pub const FRAMEWORK_NAMES: &[&str] = &["btl", "coll", "mtl", "pml", "rmaps"];

/// Version of oxmpi.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
