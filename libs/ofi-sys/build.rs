//! Generates the bindings to the system's libfabric and compiles the
//! shims of its static inline functions (most of libfabric's data path:
//! `fi_tsend`, `fi_cq_read`, `fi_endpoint`, … dispatch through operation
//! tables in the headers).

use std::env;
use std::path::PathBuf;

/// Types the headers' integer macros: the `FI_E…` error numbers as
/// `i32` (libfabric returns them negated), every other `FI_…` flag as
/// `u64`, the type of the capability and operation flags they are or-ed
/// into (bindgen would pick the narrowest type that holds each value).
#[derive(Debug)]
struct FlagWidths;

impl bindgen::callbacks::ParseCallbacks for FlagWidths {
    fn int_macro(&self, name: &str, _value: i64) -> Option<bindgen::callbacks::IntKind> {
        use bindgen::callbacks::IntKind;
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

/// The oldest libfabric the bindings are written for (Debian 12's).
const MIN_VERSION: &str = "1.17";

fn main() {
    let lib = match pkg_config::Config::new()
        .atleast_version(MIN_VERSION)
        .probe("libfabric")
    {
        Ok(lib) => lib,
        Err(e) => {
            eprintln!(
                "oxmpi-ofi-sys: libfabric {MIN_VERSION} or later was not found through pkg-config ({e}); on Debian or Ubuntu install it with `apt-get install libfabric-dev`"
            );
            std::process::exit(1);
        }
    };
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let manifest =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let header = manifest.join("wrapper.h");
    println!("cargo:rerun-if-changed={}", header.display());
    let shims = out.join("fabric_inline");
    let includes: Vec<String> = lib
        .include_paths
        .iter()
        .map(|p| format!("-I{}", p.display()))
        .collect();
    let bindings = bindgen::Builder::default()
        .header(header.to_string_lossy())
        .clang_args(&includes)
        .allowlist_function("fi_.*")
        .allowlist_type("fi_.*|fid.*")
        .allowlist_var("FI_.*")
        .default_enum_style(bindgen::EnumVariation::Consts)
        .prepend_enum_name(false)
        .parse_callbacks(Box::new(FlagWidths))
        .derive_default(true)
        .layout_tests(false)
        .wrap_static_fns(true)
        .wrap_static_fns_path(&shims)
        .generate();
    let bindings = match bindings {
        Ok(b) => b,
        Err(e) => {
            eprintln!("oxmpi-ofi-sys: bindgen could not read libfabric's headers: {e}; it needs libclang (`apt-get install clang libclang-dev`)");
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
        .compile("oxmpi_fabric_inline");
}
