//! The ABI contract between the oxmpi core and its component libraries.
//!
//! Every component is a `cdylib` exporting one abi_stable root module,
//! [`ComponentRootRef`]. The core loads it with
//! `abi_stable::library::lib_header_from_path(path)?.init_root_module::<ComponentRootRef>()`,
//! which checks the layout of every type in this crate against the layout the
//! component was built with.
//!
//! This crate holds types and the thin glue a component needs to export
//! them ([`export_component!`], [`export`], [`guard`]), the parameter derive
//! ([`Params`], [`ParamEnum`]) with what it needs: the value parser
//! ([`value`]) and the declaration checks ([`params::check_decl`]), shared
//! with the core so that a default means what the same text means from a
//! user; the named verbosity levels ([`verbosity`]); and [`text::excerpt`],
//! the helper that core and framework crates share for quoting user text in
//! messages. It has no other logic and does no I/O.
//!
//! # Evolving the ABI
//!
//! - [`ComponentRoot`] and [`Services`] are abi_stable *prefix* types: new
//!   fields may only be **appended** at the end, after the
//!   `last_prefix_field`, which stays where it is (it marks the fields every
//!   library must have; moving it would refuse older libraries). A library
//!   built against an older, shorter prefix keeps loading, and the accessor
//!   of each appended field returns `None` for it (`missing_field(option)`).
//! - Every other type here is frozen: changing a field, a variant or a
//!   field order is a breaking change.
//! - A breaking change bumps the **major** version of this crate (its
//!   package version is the ABI version, see `VERSION_STRINGS` of
//!   [`ComponentRootRef`]). A component built against another major version
//!   is then rejected cleanly at load time with a message naming the file
//!   and both versions.
//! - Each framework additionally has its own interface version
//!   ([`FrameworkInfo::interface_version`]), checked by the core with semver
//!   rules: same major, and a component's minor no newer than the core's.

// The workspace lints, written in the crate: component authors build this
// crate outside the workspace (docs/writing-a-component.md).
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs, rust_2018_idioms)]

/// Version of this ABI (the package version of this crate).
pub const ABI_VERSION: &str = env!("CARGO_PKG_VERSION");

pub mod component;
pub mod export;
pub mod framework;
pub mod guard;
pub mod instance;
pub mod module;
pub mod params;
pub mod serial;
pub mod services;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
pub mod text;
pub mod value;
pub mod verbosity;
pub mod version;

// The derives name `::oxmpi_plugin_api`, also inside this crate's tests.
#[allow(unused_extern_crates)] // used by the derives' expansions in tests
extern crate self as oxmpi_plugin_api;

pub use component::{
    ComponentError, ComponentRoot, ComponentRootRef, ErrorKind, Lifecycle, QueryReply,
};
pub use framework::{ComponentAlias, FrameworkInfo, SelectionKind};
pub use instance::{EntryError, Instance};
pub use module::ModuleTable;
/// `#[derive(Params)]`: a component's parameters declared once on a typed
/// struct (see [`Params`]); `#[derive(ParamEnum)]`: the type of an `enum`
/// parameter (see [`ParamEnum`]).
pub use oxmpi_plugin_api_derive::{ParamEnum, Params};
pub use params::{
    flags, EnumValue, IntRange, Level, ParamDecl, ParamEnum, ParamField, ParamGroup, ParamType,
    ParamValue, Params, Synonym, Tier,
};
pub use services::{ComponentContext, Services, ServicesRef};
pub use version::Version;

/// The abi_stable items the export macros ([`export_component!`], and the
/// framework crates' macros built on it) and component code name, so that a
/// component crate depends on the oxmpi crates only, never on abi_stable
/// directly.
pub mod reexports {
    pub use abi_stable::export_root_module;
    pub use abi_stable::library::LibHeader;
    pub use abi_stable::prefix_type::{PrefixTypeTrait, WithMetadata};
    pub use abi_stable::std_types::{ROption, RResult, RSlice, RStr, RString, RVec};
}
