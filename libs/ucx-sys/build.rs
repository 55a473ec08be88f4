//! Generates the bindings to the system's UCX (UCP and the parts of UCS
//! its interface uses) and compiles the shims of its static inline
//! functions (`ucp_init`, which calls `ucp_init_version` with the
//! headers' version).

use oxmpi_sys_build::{generate, Library};

fn main() {
    let lib = Library {
        crate_name: "oxmpi-ucx-sys",
        pkg_config: "ucx",
        min_version: "1.13",
        display: "UCX",
        debian_package: "libucx-dev",
        shim_library: "oxmpi_ucp_inline",
    };
    generate(&lib, |b| {
        b.allowlist_function("ucp_.*|ucs_status_string|ucs_cpu_set_.*")
            .allowlist_type("ucp_.*|ucs_.*")
            .allowlist_var("UCP_.*|UCS_.*")
    });
}
