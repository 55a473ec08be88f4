//! The build script of an oxmpi `-sys` crate, written once: [`generate`]
//! finds a system library through pkg-config (and links it), generates
//! bindings from the crate's `wrapper.h` with bindgen into
//! `$OUT_DIR/bindings.rs`, and compiles the shims bindgen writes for the
//! headers' static inline functions, which keep their names. Failures
//! stop the build with a sentence that names the Debian package to
//! install.

pub use bindgen;

use std::env;
use std::path::PathBuf;

/// A system library a `-sys` crate binds.
#[derive(Debug, Clone, Copy)]
pub struct Library<'a> {
    /// The crate, for the messages (`oxmpi-ofi-sys`).
    pub crate_name: &'a str,
    /// Its pkg-config name (`libfabric`).
    pub pkg_config: &'a str,
    /// The oldest version the bindings are written for (`1.17`).
    pub min_version: &'a str,
    /// What the library is called in messages (`libfabric`).
    pub display: &'a str,
    /// The Debian package with its headers (`libfabric-dev`).
    pub debian_package: &'a str,
    /// The name of the compiled shim library (`oxmpi_fabric_inline`).
    pub shim_library: &'a str,
}

/// Finds `lib`, generates the bindings of the crate's `wrapper.h` with the
/// common settings (constant-style enums without their name prefixed,
/// `Default` derived, no layout tests, shims for static inline functions)
/// and what `configure` adds (allowlists, callbacks), and compiles the
/// shims. Exits the build script with a message when the library or
/// libclang is missing.
///
/// # Panics
///
/// When `OUT_DIR` or `CARGO_MANIFEST_DIR` is unset (cargo always sets
/// them for a build script) or the bindings cannot be written there.
pub fn generate(lib: &Library<'_>, configure: impl FnOnce(bindgen::Builder) -> bindgen::Builder) {
    let found = match pkg_config::Config::new()
        .atleast_version(lib.min_version)
        .probe(lib.pkg_config)
    {
        Ok(found) => found,
        Err(e) => {
            eprintln!(
                "{}: {} {} or later was not found through pkg-config ({e}); on Debian or Ubuntu install it with `apt-get install {}`",
                lib.crate_name, lib.display, lib.min_version, lib.debian_package
            );
            std::process::exit(1);
        }
    };
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let manifest =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let header = manifest.join("wrapper.h");
    println!("cargo:rerun-if-changed={}", header.display());
    let shims = out.join("inline_shims");
    let builder = bindgen::Builder::default()
        .header(header.to_string_lossy())
        .clang_args(
            found
                .include_paths
                .iter()
                .map(|p| format!("-I{}", p.display())),
        )
        .default_enum_style(bindgen::EnumVariation::Consts)
        .prepend_enum_name(false)
        .derive_default(true)
        .layout_tests(false)
        .wrap_static_fns(true)
        .wrap_static_fns_path(&shims);
    let bindings = match configure(builder).generate() {
        Ok(b) => b,
        Err(e) => {
            eprintln!(
                "{}: bindgen could not read {}'s headers: {e}; it needs libclang (`apt-get install clang libclang-dev`)",
                lib.crate_name, lib.display
            );
            std::process::exit(1);
        }
    };
    bindings
        .write_to_file(out.join("bindings.rs"))
        .expect("write the bindings to OUT_DIR");
    cc::Build::new()
        .file(shims.with_extension("c"))
        .include(&manifest)
        .includes(&found.include_paths)
        .warnings(false)
        .compile(lib.shim_library);
}
