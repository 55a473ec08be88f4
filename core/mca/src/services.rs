//! The services table handed to components, backed by this process's
//! resolved parameters and verbosity settings.

use crate::log;
use abi_stable::prefix_type::PrefixTypeTrait;
use abi_stable::std_types::{ROption, RStr};
use oxmpi_plugin_api::{ComponentContext, ParamValue, Services, ServicesRef};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

fn values() -> &'static RwLock<Arc<HashMap<String, ParamValue>>> {
    static VALUES: OnceLock<RwLock<Arc<HashMap<String, ParamValue>>>> = OnceLock::new();
    VALUES.get_or_init(Default::default)
}

/// Publishes the resolved values components read (full names and synonyms).
pub(crate) fn publish(map: HashMap<String, ParamValue>) {
    *values().write().unwrap_or_else(|e| e.into_inner()) = Arc::new(map);
}

extern "C" fn param_value(full_name: RStr<'_>) -> ROption<ParamValue> {
    let map = values().read().unwrap_or_else(|e| e.into_inner()).clone();
    map.get(full_name.as_str()).cloned().into()
}

extern "C" fn verbosity(framework: RStr<'_>) -> i32 {
    log::verbosity(framework.as_str())
}

extern "C" fn emit(framework: RStr<'_>, component: RStr<'_>, level: i32, message: RStr<'_>) {
    log::log(
        framework.as_str(),
        component.as_str(),
        level,
        message.as_str(),
    );
}

/// The services table (built once).
pub fn services() -> ServicesRef {
    static TABLE: OnceLock<ServicesRef> = OnceLock::new();
    *TABLE.get_or_init(|| {
        Services {
            param_value,
            verbosity,
            log: emit,
        }
        .leak_into_prefix()
    })
}

/// The context passed to a component's entry points.
pub fn context(framework: RStr<'static>, component: RStr<'static>) -> ComponentContext {
    ComponentContext {
        services: services(),
        framework,
        component,
    }
}
