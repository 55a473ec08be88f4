//! The services table the core passes to components.
//!
//! Statics in a cdylib are private copies, so everything a component needs
//! from the process reaches it through this table. It is an append-only
//! prefix type: a new service is a new field after the last one, so a
//! component built against an older table still loads.

use crate::ParamValue;
use abi_stable::std_types::{ROption, RStr};
use abi_stable::StableAbi;

/// Functions the core offers to every component.
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = ServicesRef)))]
#[sabi(missing_field(option))]
pub struct Services {
    /// The resolved value of the parameter with this full name, or `None`
    /// if no framework or component declares it.
    pub param_value: extern "C" fn(full_name: RStr<'_>) -> ROption<ParamValue>,
    /// Current verbosity (0–100, -1 for none) of a framework.
    pub verbosity: extern "C" fn(framework: RStr<'_>) -> i32,
    /// Emits a diagnostic line `[host:pid] fw:component: message` if the
    /// framework's verbosity is at least `level`.
    #[sabi(last_prefix_field)]
    pub log: extern "C" fn(framework: RStr<'_>, component: RStr<'_>, level: i32, message: RStr<'_>),
}

/// What a lifecycle entry point receives.
#[repr(C)]
#[derive(StableAbi, Copy, Clone)]
pub struct ComponentContext {
    /// The core's services.
    pub services: ServicesRef,
    /// This component's framework name.
    pub framework: RStr<'static>,
    /// This component's name.
    pub component: RStr<'static>,
}

impl ComponentContext {
    /// The value of this component's parameter `name` (the part after
    /// `<fw>_<component>_`), or `None` if it is not declared.
    pub fn param(&self, name: &str) -> Option<ParamValue> {
        let full = format!("{}_{}_{}", self.framework, self.component, name);
        (self.services.param_value())(RStr::from_str(&full)).into_option()
    }

    /// Logs `message` at verbosity `level` of this component's framework.
    pub fn log(&self, level: i32, message: &str) {
        (self.services.log())(
            self.framework,
            self.component,
            level,
            RStr::from_str(message),
        );
    }
}
