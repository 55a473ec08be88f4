//! The ABI contract between the oxmpi core and its component libraries.
//!
//! Every component is a `cdylib` exporting one abi_stable root module,
//! [`ComponentRootRef`]. The core loads it with
//! `abi_stable::library::lib_header_from_path(path)?.init_root_module::<ComponentRootRef>()`,
//! which checks the layout of every type in this crate against the layout the
//! component was built with.
//!
//! This crate holds types and the thin glue a component needs to export
//! them ([`export_component!`], [`guard`]), and [`text::excerpt`], the one
//! pure helper that core and framework crates share for quoting user text
//! in messages; it has no other logic and does no I/O.
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

/// Version of this ABI (the package version of this crate).
pub const ABI_VERSION: &str = env!("CARGO_PKG_VERSION");

pub mod component;
pub mod framework;
pub mod guard;
pub mod module;
pub mod params;
pub mod services;
pub mod text;
pub mod version;

pub use component::{
    ComponentError, ComponentRoot, ComponentRootRef, ErrorKind, Lifecycle, QueryReply,
};
pub use framework::{FrameworkInfo, SelectionKind};
pub use module::ModuleTable;
pub use params::{flags, EnumValue, IntRange, ParamDecl, ParamType, ParamValue, Synonym};
pub use services::{ComponentContext, Services, ServicesRef};
pub use version::Version;

/// Re-exports used by [`export_component!`] so component crates name one path.
pub mod reexports {
    pub use abi_stable::export_root_module;
    pub use abi_stable::prefix_type::PrefixTypeTrait;
    pub use abi_stable::std_types::{ROption, RResult, RSlice, RStr};
}
