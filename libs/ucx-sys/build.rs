//! Generates the bindings to the system's UCX (UCP and the parts of UCS
//! its interface uses) and compiles the shims of its static inline
//! functions (`ucp_init`, which calls `ucp_init_version` with the
//! headers' version).

use std::env;
use std::path::PathBuf;

/// The oldest UCX the bindings are written for (Debian 12's).
const MIN_VERSION: &str = "1.13";

fn main() {
    let lib = match pkg_config::Config::new()
        .atleast_version(MIN_VERSION)
        .probe("ucx")
    {
        Ok(lib) => lib,
        Err(e) => {
            eprintln!(
                "oxmpi-ucx-sys: UCX {MIN_VERSION} or later was not found through pkg-config ({e}); on Debian or Ubuntu install it with `apt-get install libucx-dev`"
            );
            std::process::exit(1);
        }
    };
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let manifest =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let header = manifest.join("wrapper.h");
    println!("cargo:rerun-if-changed={}", header.display());
    let shims = out.join("ucp_inline");
    let includes: Vec<String> = lib
        .include_paths
        .iter()
        .map(|p| format!("-I{}", p.display()))
        .collect();
    let bindings = bindgen::Builder::default()
        .header(header.to_string_lossy())
        .clang_args(&includes)
        .allowlist_function("ucp_.*|ucs_status_string|ucs_cpu_set_.*")
        .allowlist_type("ucp_.*|ucs_.*")
        .allowlist_var("UCP_.*|UCS_.*")
        .default_enum_style(bindgen::EnumVariation::Consts)
        .prepend_enum_name(false)
        .derive_default(true)
        .layout_tests(false)
        .wrap_static_fns(true)
        .wrap_static_fns_path(&shims)
        .generate();
    let bindings = match bindings {
        Ok(b) => b,
        Err(e) => {
            eprintln!("oxmpi-ucx-sys: bindgen could not read UCX's headers: {e}; it needs libclang (`apt-get install clang libclang-dev`)");
            std::process::exit(1);
        }
    };
    bindings
        .write_to_file(out.join("bindings.rs"))
        .expect("write the bindings to OUT_DIR");
    cc::Build::new()
        .file(shims.with_extension("c"))
        .include(&manifest)
        .includes(&lib.include_paths)
        .warnings(false)
        .compile("oxmpi_ucp_inline");
}
