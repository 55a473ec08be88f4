//! `mpiexec`: see the oxmpi_mpirun library.

fn main() -> std::process::ExitCode {
    oxmpi_mpirun::main()
}
