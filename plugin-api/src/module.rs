//! A framework's module table, handed from a component to the core.
//!
//! The generic root module cannot name every framework's types (framework
//! crates depend on this one), so a component hands over its framework
//! module as a [`ModuleTable`]: a pointer to a `'static` table together with
//! the table's abi_stable type layout. The core checks that layout against
//! the type its framework crate expects before it uses the table, exactly
//! as abi_stable checks root modules, so a component built against another
//! version of the framework's module type is refused instead of crashing.
//!
//! A framework's module type is a plain `#[repr(C)]` struct deriving
//! `StableAbi` (not a prefix type): changing it is a breaking change of the
//! framework interface (bump its major version).

use abi_stable::type_layout::TypeLayout;
use abi_stable::StableAbi;
use std::ffi::c_void;

/// A type-erased `&'static T` plus `T`'s layout.
#[repr(C)]
#[derive(StableAbi, Copy, Clone)]
pub struct ModuleTable {
    /// Layout of the table's type, as the component was built.
    pub layout: &'static TypeLayout,
    /// The table (`&'static T` cast to a pointer).
    pub table: *const c_void,
}

// SAFETY: the table is a `'static` shared reference to a `Sync` value (see
// `ModuleTable::of`).
unsafe impl Send for ModuleTable {}
// SAFETY: as above.
unsafe impl Sync for ModuleTable {}

impl ModuleTable {
    /// Wraps a framework module table.
    pub fn of<T: StableAbi + Sync>(table: &'static T) -> ModuleTable {
        ModuleTable {
            layout: <T as StableAbi>::LAYOUT,
            table: table as *const T as *const c_void,
        }
    }
}
