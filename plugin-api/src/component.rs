//! The root module every component library exports, and the Rust-side trait
//! a component implements to fill it.

use crate::module::ModuleTable;
use crate::{ComponentContext, ParamDecl, Version};
use abi_stable::library::RootModule;
use abi_stable::sabi_types::VersionStrings;
use abi_stable::std_types::{ROption, RResult, RSlice, RStr, RString};
use abi_stable::StableAbi;
use std::fmt;

/// Why a lifecycle entry point did not succeed.
#[repr(u8)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The component cannot run here (no device, missing library, …); it is
    /// dropped quietly (logged at the framework's verbosity).
    NotAvailable,
    /// The entry point failed; the component is skipped with a warning.
    Failed,
    /// The entry point panicked; the panic was caught inside the component.
    Panicked,
}

/// An error returned by a component entry point.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct ComponentError {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// Human-readable reason (one sentence, no trailing period needed).
    pub message: RString,
}

impl ComponentError {
    /// The component cannot run on this system.
    pub fn not_available(message: impl Into<String>) -> Self {
        ComponentError {
            kind: ErrorKind::NotAvailable,
            message: RString::from(message.into()),
        }
    }

    /// The entry point failed.
    pub fn failed(message: impl Into<String>) -> Self {
        ComponentError {
            kind: ErrorKind::Failed,
            message: RString::from(message.into()),
        }
    }
}

impl fmt::Display for ComponentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            ErrorKind::NotAvailable => write!(f, "not available: {}", self.message),
            ErrorKind::Failed => write!(f, "{}", self.message),
            ErrorKind::Panicked => write!(f, "panicked: {}", self.message),
        }
    }
}

/// Answer of a component's query.
#[repr(u8)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub enum QueryReply {
    /// The component can be used, with this priority (higher wins).
    Usable {
        /// Selection priority.
        priority: i32,
    },
    /// The component declines, and says why.
    Declined {
        /// Reason shown in verbose output.
        reason: RString,
    },
}

/// The root module of a component library.
///
/// Append-only: new fields go after `close` (see the crate documentation).
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = ComponentRootRef)))]
#[sabi(missing_field(option))]
pub struct ComponentRoot {
    /// Framework name (`btl`); must match the file name.
    pub framework: RStr<'static>,
    /// Component name (`tcp`); must match the file name.
    pub component: RStr<'static>,
    /// The component's own version.
    pub component_version: Version,
    /// Version of the framework interface the component was built against.
    pub interface_version: Version,
    /// One-line description.
    pub description: RStr<'static>,
    /// Parameter declarations (names relative to `<fw>_<component>_`).
    pub params: RSlice<'static, ParamDecl>,
    /// Called once after the parameters are resolved; `NotAvailable` drops
    /// the component quietly.
    pub register: extern "C" fn(ComponentContext) -> RResult<(), ComponentError>,
    /// Called when the framework opens the component.
    pub open: extern "C" fn(ComponentContext) -> RResult<(), ComponentError>,
    /// Asks whether the component can be used here, and at what priority.
    pub query: extern "C" fn(ComponentContext) -> RResult<QueryReply, ComponentError>,
    /// Releases what `open` acquired.
    #[sabi(last_prefix_field)]
    pub close: extern "C" fn(ComponentContext) -> RResult<(), ComponentError>,
    /// The framework-specific entry points, if the framework has any (see
    /// [`crate::module`]). Optional: its accessor returns `None` for a
    /// library built before the field existed.
    pub module: ROption<ModuleTable>,
}

impl RootModule for ComponentRootRef {
    abi_stable::declare_root_module_statics! {ComponentRootRef}
    const BASE_NAME: &'static str = "oxmpi_component";
    const NAME: &'static str = "oxmpi_component";
    const VERSION_STRINGS: VersionStrings = abi_stable::package_version_strings!();
}

/// What a component implements; [`crate::export_component!`] turns it into
/// a root module whose entry points catch panics.
pub trait Lifecycle {
    /// See [`ComponentRoot::register`]. Default: succeeds.
    fn register(_ctx: &ComponentContext) -> Result<(), ComponentError> {
        Ok(())
    }
    /// See [`ComponentRoot::open`]. Default: succeeds.
    fn open(_ctx: &ComponentContext) -> Result<(), ComponentError> {
        Ok(())
    }
    /// See [`ComponentRoot::query`].
    fn query(ctx: &ComponentContext) -> Result<QueryReply, ComponentError>;
    /// See [`ComponentRoot::close`]. Default: succeeds.
    fn close(_ctx: &ComponentContext) -> Result<(), ComponentError> {
        Ok(())
    }
}

/// Exports a component's root module.
///
/// ```ignore
/// oxmpi_plugin_api::export_component! {
///     lifecycle: MyComponent,
///     framework: "btl",
///     component: "example",
///     version: Version::new(1, 0, 0),
///     interface: oxmpi_framework_btl::FRAMEWORK.interface_version,
///     description: "An example",
///     params: PARAMS,
/// }
/// ```
///
/// The expansion names only this crate (as `$crate`), so the component
/// crate needs no dependency on abi_stable. It exports the root module
/// under abi_stable's symbol name (see [`crate::export`]). A component of
/// a framework with a module type adds `module: &MODULE` (a `&'static`
/// table of that type) after `params`. One component per library: a
/// second `export_component!` in the same crate is a duplicate-symbol
/// error.
#[macro_export]
macro_rules! export_component {
    (
        lifecycle: $ty:ty,
        framework: $fw:expr,
        component: $comp:expr,
        version: $ver:expr,
        interface: $iface:expr,
        description: $desc:expr,
        params: $params:expr
        $(, module: $module:expr)? $(,)?
    ) => {
        #[doc(hidden)]
        pub mod __oxmpi_component_export {
            use super::*;
            use $crate::reexports::{PrefixTypeTrait, RResult, RSlice, RStr};

            extern "C" fn register(
                ctx: $crate::ComponentContext,
            ) -> RResult<(), $crate::ComponentError> {
                $crate::guard::call(|| <$ty as $crate::Lifecycle>::register(&ctx))
            }
            extern "C" fn open(
                ctx: $crate::ComponentContext,
            ) -> RResult<(), $crate::ComponentError> {
                $crate::guard::call(|| <$ty as $crate::Lifecycle>::open(&ctx))
            }
            extern "C" fn query(
                ctx: $crate::ComponentContext,
            ) -> RResult<$crate::QueryReply, $crate::ComponentError> {
                $crate::guard::call(|| <$ty as $crate::Lifecycle>::query(&ctx))
            }
            extern "C" fn close(
                ctx: $crate::ComponentContext,
            ) -> RResult<(), $crate::ComponentError> {
                $crate::guard::call(|| <$ty as $crate::Lifecycle>::close(&ctx))
            }

            /// The component's root module.
            pub fn component_root() -> $crate::ComponentRootRef {
                $crate::ComponentRoot {
                    framework: RStr::from_str($fw),
                    component: RStr::from_str($comp),
                    component_version: $ver,
                    interface_version: $iface,
                    description: RStr::from_str($desc),
                    params: RSlice::from_slice($params),
                    register,
                    open,
                    query,
                    close,
                    module: $crate::__module_option!($($module)?),
                }
                .leak_into_prefix()
            }

            /// The source of the exported header's root module.
            pub struct Root;

            impl $crate::export::RootModuleSource for Root {
                fn root_module() -> $crate::ComponentRootRef {
                    component_root()
                }
            }

            /// The library's abi_stable header, under abi_stable's symbol
            /// name (`oxmpi_plugin_api::export::ROOT_MODULE_SYMBOL`).
            #[no_mangle]
            pub static _1as_0lib_1header_0root_bmodule_bloader: $crate::reexports::LibHeader =
                $crate::export::lib_header::<Root>();
        }
    };
}

/// Implementation detail of [`export_component!`]: the optional module.
#[doc(hidden)]
#[macro_export]
macro_rules! __module_option {
    () => {
        $crate::reexports::ROption::RNone
    };
    ($module:expr) => {
        $crate::reexports::ROption::RSome($crate::module::ModuleTable::of($module))
    };
}
