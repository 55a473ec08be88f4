//! Generates the bindings to the system's libfabric and compiles the
//! shims of its static inline functions (most of libfabric's data path:
//! `fi_tsend`, `fi_cq_read`, `fi_endpoint`, … dispatch through operation
//! tables in the headers).

use oxmpi_sys_build::bindgen::callbacks::{IntKind, ParseCallbacks};
use oxmpi_sys_build::{generate, Library};

/// Types the headers' integer macros: the `FI_E…` error numbers as
/// `i32` (libfabric returns them negated), every other `FI_…` flag as
/// `u64`, the type of the capability and operation flags they are or-ed
/// into (bindgen would pick the narrowest type that holds each value).
#[derive(Debug)]
struct FlagWidths;

impl ParseCallbacks for FlagWidths {
    fn int_macro(&self, name: &str, _value: i64) -> Option<IntKind> {
        // `FI_EVENT` is the one flag whose name starts like an error's.
        if name.starts_with("FI_E") && name != "FI_EVENT" {
            Some(IntKind::I32)
        } else if name.starts_with("FI_") {
            Some(IntKind::U64)
        } else {
            None
        }
    }
}

fn main() {
    let lib = Library {
        crate_name: "oxmpi-ofi-sys",
        pkg_config: "libfabric",
        min_version: "1.17",
        display: "libfabric",
        debian_package: "libfabric-dev",
        shim_library: "oxmpi_fabric_inline",
    };
    generate(&lib, |b| {
        b.allowlist_function("fi_.*")
            .allowlist_type("fi_.*|fid.*")
            .allowlist_var("FI_.*")
            .parse_callbacks(Box::new(FlagWidths))
    });
}
