//! Fake core services for component tests (feature `testkit`).
//!
//! [`context`] gives a [`ComponentContext`] whose services answer the
//! parameter values a test set with [`set_param`] (full names, e.g.
//! `btl_tcp_if_include`; unset parameters answer `None`, so a component's
//! reader falls back to its declared defaults), report verbosity 100 for
//! every framework, and record every log line ([`log_lines`]). The values
//! and lines are process-global (the services table has no context
//! pointer): tests that set the same parameter differently must not run
//! at once — they hold [`lock`], which also serializes tests that use a
//! component's one process-global instance.

use crate::{ComponentContext, ParamValue, Services, ServicesRef};
use abi_stable::prefix_type::PrefixTypeTrait;
use abi_stable::std_types::{ROption, RStr};
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, OnceLock};

/// One recorded log line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// Framework name.
    pub framework: String,
    /// Component name.
    pub component: String,
    /// Verbosity level the line was logged at.
    pub level: i32,
    /// The message.
    pub message: String,
}

fn params() -> MutexGuard<'static, HashMap<String, ParamValue>> {
    static P: OnceLock<Mutex<HashMap<String, ParamValue>>> = OnceLock::new();
    P.get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

fn lines() -> MutexGuard<'static, Vec<LogLine>> {
    static L: OnceLock<Mutex<Vec<LogLine>>> = OnceLock::new();
    L.get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// Serializes the tests of one test program that set parameters or
/// enter a component's process-global instance: each holds the guard
/// while it runs. A test that failed while holding it does not block the
/// others (the lock's poisoning is ignored).
pub fn lock() -> MutexGuard<'static, ()> {
    static L: Mutex<()> = Mutex::new(());
    L.lock().unwrap_or_else(|e| e.into_inner())
}

/// Sets the value the services answer for the parameter `full_name`.
pub fn set_param(full_name: &str, value: ParamValue) {
    params().insert(full_name.to_string(), value);
}

/// Forgets a value set with [`set_param`].
pub fn clear_param(full_name: &str) {
    params().remove(full_name);
}

/// Every line logged through the fake services so far, oldest first.
pub fn log_lines() -> Vec<LogLine> {
    lines().clone()
}

/// The messages logged by one component (`framework`, `component`), with
/// their levels.
pub fn logged_by(framework: &str, component: &str) -> Vec<(i32, String)> {
    lines()
        .iter()
        .filter(|l| l.framework == framework && l.component == component)
        .map(|l| (l.level, l.message.clone()))
        .collect()
}

extern "C" fn param_value(full_name: RStr<'_>) -> ROption<ParamValue> {
    params().get(full_name.as_str()).cloned().into()
}

extern "C" fn verbosity(_framework: RStr<'_>) -> i32 {
    100
}

extern "C" fn log(framework: RStr<'_>, component: RStr<'_>, level: i32, message: RStr<'_>) {
    lines().push(LogLine {
        framework: framework.as_str().to_string(),
        component: component.as_str().to_string(),
        level,
        message: message.as_str().to_string(),
    });
}

/// The fake services table.
pub fn services() -> ServicesRef {
    static S: OnceLock<ServicesRef> = OnceLock::new();
    *S.get_or_init(|| {
        Services {
            param_value,
            verbosity,
            log,
        }
        .leak_into_prefix()
    })
}

/// A context for component `component` of `framework` over the fake
/// services (the names are leaked: tests make a handful).
pub fn context(framework: &str, component: &str) -> ComponentContext {
    ComponentContext {
        services: services(),
        framework: RStr::from_str(Box::leak(framework.to_string().into_boxed_str())),
        component: RStr::from_str(Box::leak(component.to_string().into_boxed_str())),
    }
}
