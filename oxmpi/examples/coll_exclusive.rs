//! One collective at a time on a communicator, as the MPI layer enforces
//! it at every thread level:
//!
//! - a barrier on `MPI_COMM_WORLD` called by a user operation inside an
//!   all-reduce on the world is refused with a message, while a barrier
//!   on `MPI_COMM_SELF` inside it runs;
//! - once the all-reduce returns, the world takes collectives again
//!   (the user operation ran on at least one rank);
//! - a barrier from a thread other than the initializing one is refused
//!   with a thread-level error at `single` and `funneled`, and runs at
//!   `serialized` and `multiple`.
//!
//! Run: `mpirun -n 2 coll_exclusive LEVEL` (LEVEL one of `single`,
//! `funneled`, `serialized`, `multiple`; any number of ranks from 2).
//! Every rank prints `exclusive ok` when all passed; otherwise what
//! differed, and the job is aborted.

#![forbid(unsafe_code)]

use oxmpi::collective::{SystemOperation, UserOperation};
use oxmpi::topology::SimpleCommunicator;
use oxmpi::traits::*;
use oxmpi::{ErrorClass, Threading};
use std::process::ExitCode;
use std::sync::Mutex;

type BoxError = Box<dyn std::error::Error>;

/// What the refused barrier's message says.
const REFUSAL: &str =
    "barrier on MPI_COMM_WORLD: another collective is running on this communicator";

fn checks(
    world: &SimpleCommunicator,
    self_comm: &SimpleCommunicator,
    level: Threading,
) -> Result<(), BoxError> {
    // Inside a user operation of an all-reduce on the world.
    let inner = Mutex::new(Vec::new());
    let sum = UserOperation::commutative(|input: &[i64], inout: &mut [i64]| {
        let on_world = world.barrier().map_err(|e| e.to_string());
        let on_self = self_comm.barrier().map_err(|e| e.to_string());
        inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((on_world, on_self));
        for (o, i) in inout.iter_mut().zip(input) {
            *o += *i;
        }
    });
    let mut total = 0i64;
    world.all_reduce_into(&1i64, &mut total, sum)?;
    if total != i64::from(world.size()) {
        return Err(format!("the all-reduce gave {total}, not {}", world.size()).into());
    }
    let inner = inner.into_inner().unwrap_or_else(|e| e.into_inner());
    let ran = inner.len() as i64;
    for (on_world, on_self) in inner {
        match on_world {
            Err(e) if e.contains(REFUSAL) => {}
            other => {
                return Err(format!(
                    "a barrier on the world inside the all-reduce gave {other:?}, not the \
                     refusal \"{REFUSAL}…\""
                )
                .into())
            }
        }
        on_self.map_err(|e| format!("a barrier on MPI_COMM_SELF inside the all-reduce: {e}"))?;
    }
    // The world is free again. (An algorithm may fold on some ranks
    // only; the operation must have run somewhere.)
    let mut runs = 0i64;
    world.all_reduce_into(&ran, &mut runs, SystemOperation::sum())?;
    if runs == 0 {
        return Err("the user operation ran on no rank".into());
    }
    // From another thread.
    let from_thread = std::thread::scope(|s| s.spawn(|| world.barrier()).join())
        .map_err(|_| "the other thread panicked")?;
    match (level, from_thread) {
        (Threading::Single | Threading::Funneled, Err(e))
            if e.class() == ErrorClass::ThreadLevel =>
        {
            println!("rank {}: other thread refused: {e}", world.rank());
        }
        (Threading::Serialized | Threading::Multiple, Ok(())) => {}
        (level, other) => {
            return Err(format!("a barrier from another thread at {level:?} gave {other:?}").into())
        }
    }
    world.barrier()?;
    Ok(())
}

fn main() -> ExitCode {
    let level = match std::env::args().nth(1).as_deref() {
        Some("single") => Threading::Single,
        Some("funneled") => Threading::Funneled,
        Some("serialized") => Threading::Serialized,
        Some("multiple") => Threading::Multiple,
        other => {
            eprintln!(
                "coll_exclusive: give the thread level: single, funneled, serialized or \
                 multiple (got {other:?})"
            );
            return ExitCode::FAILURE;
        }
    };
    let (universe, provided) = match oxmpi::initialize_with_threading(level) {
        Ok(u) => u,
        Err(e) => {
            eprintln!("coll_exclusive: {e}");
            return ExitCode::FAILURE;
        }
    };
    let world = universe.world();
    if world.size() < 2 {
        eprintln!("coll_exclusive: run it on 2 or more ranks");
        return ExitCode::FAILURE;
    }
    match checks(&world, &universe.self_comm(), provided) {
        Ok(()) => {
            println!("rank {}: exclusive ok", world.rank());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("rank {}: {e}", world.rank());
            world.abort(1)
        }
    }
}
