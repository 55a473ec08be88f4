//! Exports the weak `MPI_*` aliases: rustc's own version script keeps only
//! the `#[no_mangle]` items (the `PMPI_*` functions) global, so a second
//! one adds the aliases defined in assembly.

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={dir}/exports.map");
    println!("cargo:rerun-if-changed=exports.map");
}
