//! Named verbosity levels of framework diagnostics.
//!
//! Each framework has a verbosity from -1 (none) to 100, set by
//! `<framework>_base_verbose`; a message logged at level L (with
//! [`crate::ComponentContext::log`]) prints when the framework's verbosity
//! is at least L. These are Open MPI's names and numbers; the same names are
//! accepted as values of `<framework>_base_verbose`
//! ([`crate::params::VERBOSITY_VALUES`]). Components log with these
//! constants (or a constant of their own between two of them), never with
//! bare numbers.

/// Errors: always shown unless the verbosity is `none` (-1).
pub const ERROR: i32 = 0;
/// Selection decisions: chosen, declined, excluded (`btl_base_verbose 10`
/// answers "which BTL did I get, and why?").
pub const COMPONENT: i32 = 10;
/// Warnings.
pub const WARN: i32 = 20;
/// More detail on each step.
pub const INFO: i32 = 40;
/// Tracing of individual operations.
pub const TRACE: i32 = 60;
/// Debugging output.
pub const DEBUG: i32 = 80;
/// Everything.
pub const MAX: i32 = 100;
