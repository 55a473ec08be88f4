//! `mpiexec`: see the oxmpi_mpirun library.

#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    oxmpi_mpirun::main()
}
