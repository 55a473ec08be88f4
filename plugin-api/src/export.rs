//! The exported root-module header, written without abi_stable's
//! `#[export_root_module]` attribute.
//!
//! That attribute expands to paths under `::abi_stable`, so every crate
//! using it must depend on abi_stable itself. [`export_component!`]
//! instead names only this crate: it declares a type implementing
//! [`RootModuleSource`] and exports, under abi_stable's symbol name
//! ([`ROOT_MODULE_SYMBOL`]), the [`LibHeader`] that [`lib_header`] builds
//! for it. The header is the one the attribute generates: abi_stable's ABI
//! header, the root module's constants (its name, the plugin ABI version
//! strings of this crate, the layout of [`ComponentRootRef`] for the
//! layout check) and a constructor that builds the root module once,
//! catching a panic, exactly as `__call_root_module_loader` does for the
//! attribute. The core loads it with `lib_header_from_path`, unchanged.
//!
//! [`export_component!`]: crate::export_component

use crate::ComponentRootRef;
use abi_stable::library::{CheckTypeLayout, LibHeader, RootModuleResult};

/// The name of the `#[no_mangle]` static holding a library's
/// [`LibHeader`]: abi_stable's `ROOT_MODULE_LOADER_NAME` (a test checks
/// that they agree). [`export_component!`](crate::export_component)
/// writes the same name as an identifier.
pub const ROOT_MODULE_SYMBOL: &str = "_1as_0lib_1header_0root_bmodule_bloader";

/// What [`lib_header`] exports: the function that builds a component's
/// root module. Implemented by
/// [`export_component!`](crate::export_component), never by hand.
pub trait RootModuleSource: 'static {
    /// Builds the root module (called once, when the core first loads the
    /// library).
    fn root_module() -> ComponentRootRef;
}

/// The constructor abi_stable calls through the header: builds the root
/// module, registers it as the library's module and catches a panic (an
/// unwinding panic becomes `RootModuleError::Unwound`).
extern "C" fn construct<S: RootModuleSource>() -> RootModuleResult {
    abi_stable::library::__call_root_module_loader(S::root_module)
}

/// The header a component library exports under [`ROOT_MODULE_SYMBOL`]
/// for the root module `S` builds, with its layout included for the
/// core's layout check.
pub const fn lib_header<S: RootModuleSource>() -> LibHeader {
    // SAFETY: `from_constructor` requires that the constructor's
    // `PrefixRef<ErasedPrefix>` was cast from a `PrefixRef` of the module
    // type it is instantiated with. `construct::<S>` returns what
    // `__call_root_module_loader` makes of a `ComponentRootRef` (it casts
    // that module's prefix reference), and the header is instantiated with
    // `ComponentRootRef`.
    unsafe { LibHeader::from_constructor::<ComponentRootRef>(construct::<S>, CheckTypeLayout::Yes) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ComponentContext, ComponentError, Lifecycle, QueryReply, Version};

    /// A component exported into this test binary.
    struct Probe;

    impl Lifecycle for Probe {
        fn query(_: &ComponentContext) -> Result<QueryReply, ComponentError> {
            Ok(QueryReply::Usable { priority: 7 })
        }
    }

    crate::export_component! {
        lifecycle: Probe,
        framework: "rmaps",
        component: "probe",
        version: Version::new(2, 3, 4),
        interface: Version::new(1, 0, 0),
        description: "Export probe",
        params: &[],
    }

    #[test]
    fn the_symbol_is_abi_stables_root_module_loader_name() {
        assert_eq!(
            ROOT_MODULE_SYMBOL,
            abi_stable::library::ROOT_MODULE_LOADER_NAME
        );
        let name = stringify!(_1as_0lib_1header_0root_bmodule_bloader);
        assert_eq!(name, ROOT_MODULE_SYMBOL);
    }

    #[test]
    fn the_exported_header_passes_abi_stables_checks_and_builds_the_root_module() {
        let header = &__oxmpi_component_export::_1as_0lib_1header_0root_bmodule_bloader;
        assert_eq!(header.version_strings().version, crate::ABI_VERSION);
        assert!(
            header.layout().is_some(),
            "the root module's layout is exported for the core's check"
        );
        let root = header
            .init_root_module::<ComponentRootRef>()
            .expect("the header's version and layout checks pass");
        assert_eq!(root.framework().as_str(), "rmaps");
        assert_eq!(root.component().as_str(), "probe");
        assert_eq!(root.component_version(), Version::new(2, 3, 4));
        assert_eq!(root.description().as_str(), "Export probe");
        assert!(root.params().is_empty());
    }
}
