//! `mpicxx`: see the crate documentation.

fn main() {
    std::process::exit(oxmpi_mpicc::main(oxmpi_mpicc::Language::Cxx));
}
