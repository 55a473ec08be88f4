//! Generates the bindings to the system's UCX (UCP, the parts of UCS its
//! interface uses, and UCT's listing of transports and devices) and
//! compiles the shims of its static inline
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
        b.allowlist_function(
            "ucp_.*|ucs_status_string|ucs_cpu_set_.*|uct_query_components|\
             uct_release_component_list|uct_component_query|uct_md_config_read|\
             uct_config_release|uct_md_open|uct_md_close|uct_md_query_tl_resources|\
             uct_release_tl_resource_list",
        )
        .allowlist_type(
            "ucp_.*|ucs_.*|uct_component_attr.*|uct_md_resource_desc.*|uct_tl_resource_desc.*|\
             uct_device_type.*",
        )
        .allowlist_var(
            "UCP_.*|UCS_.*|UCT_COMPONENT_ATTR_FIELD_.*|UCT_DEVICE_TYPE_.*|UCT_.*_NAME_MAX",
        )
    });
}
