//! What the checking examples (`attr_check`, `derive_check`) share: a
//! counter of comparisons that fails with both values, and a `main` that
//! runs the checks on `MPI_COMM_WORLD` and reports per rank.

use oxmpi::topology::SimpleCommunicator;
use oxmpi::traits::*;
use std::process::ExitCode;

/// Any error a check returns.
pub type BoxError = Box<dyn std::error::Error>;

/// The comparisons made so far.
pub struct Checks {
    /// How many.
    pub done: usize,
}

impl Checks {
    /// Counts a comparison; an error naming `what` with both values when
    /// `got` is not `want`.
    pub fn same<T: PartialEq + std::fmt::Debug>(
        &mut self,
        what: &str,
        got: &T,
        want: &T,
    ) -> Result<(), BoxError> {
        self.done += 1;
        if got == want {
            Ok(())
        } else {
            Err(format!("{what}: got {got:?}, expected {want:?}").into())
        }
    }
}

/// Initializes MPI and runs `checks` on the world: prints
/// "rank R: `label` ok (N checks)" and succeeds, or prints the failure
/// under `program`'s name and aborts the job.
pub fn main_with(
    program: &str,
    label: &str,
    checks: impl FnOnce(&SimpleCommunicator, &mut Checks) -> Result<(), BoxError>,
) -> ExitCode {
    let universe = match oxmpi::initialize() {
        Ok(u) => u,
        Err(e) => {
            eprintln!("{program}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let world = universe.world();
    let mut c = Checks { done: 0 };
    match checks(&world, &mut c) {
        Ok(()) => {
            println!("rank {}: {label} ok ({} checks)", world.rank(), c.done);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("rank {}: {program} failed: {e}", world.rank());
            world.abort(1)
        }
    }
}
