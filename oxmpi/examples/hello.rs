//! Every rank prints `Hello from rank R of N` and sends that greeting, and
//! a number derived from its rank, to rank 0; rank 0 receives them from any
//! source by tag and checks that every rank greeted exactly once with the
//! right text and number.
//!
//! Run: `mpirun -n 4 hello` (any number of ranks, including 1). Exits 0
//! only if every check passed; otherwise prints why and aborts the job.

#![forbid(unsafe_code)]

use oxmpi::topology::SimpleCommunicator;
use oxmpi::traits::*;
use oxmpi::Tag;
use std::process::ExitCode;

type BoxError = Box<dyn std::error::Error>;

const GREETING_TAG: Tag = 1;
const NUMBER_TAG: Tag = 2;

fn greeting(rank: i32, size: i32) -> String {
    format!("Hello from rank {rank} of {size}")
}

fn number(rank: i32, size: i32) -> u64 {
    ((rank as u64) << 32) | (size as u64 * 7919)
}

fn run(world: &SimpleCommunicator) -> Result<(), BoxError> {
    let (rank, size) = (world.rank(), world.size());
    let text = greeting(rank, size);
    println!("{text}");
    let mine = number(rank, size);
    let root = world.process_at_rank(0);
    oxmpi::request::scope(|scope| -> Result<(), BoxError> {
        let sends = vec![
            root.immediate_send_with_tag(scope, text.as_bytes(), GREETING_TAG)?,
            root.immediate_send_with_tag(scope, &mine, NUMBER_TAG)?,
        ];
        if rank == 0 {
            let mut greeted = vec![false; size as usize];
            for _ in 0..size {
                let (bytes, status) = world
                    .any_process()
                    .receive_vec_with_tag::<u8>(GREETING_TAG)?;
                let from = status.source_rank();
                if !(0..size).contains(&from) || greeted[from as usize] {
                    return Err(format!(
                        "a greeting came from rank {from}, which is not a rank or already greeted"
                    )
                    .into());
                }
                greeted[from as usize] = true;
                let got = String::from_utf8_lossy(&bytes);
                if got != greeting(from, size) || status.tag() != GREETING_TAG {
                    return Err(format!(
                        "rank {from} sent {got:?} with tag {}; expected {:?} with tag {GREETING_TAG}",
                        status.tag(),
                        greeting(from, size)
                    )
                    .into());
                }
                let (n, status) = world
                    .process_at_rank(from)
                    .receive_with_tag::<u64>(NUMBER_TAG)?;
                if n != number(from, size) || status.source_rank() != from {
                    return Err(format!(
                        "rank {from} sent number {n:#x}; expected {:#x}",
                        number(from, size)
                    )
                    .into());
                }
            }
            println!("hello: rank 0 received the greetings of all {size} ranks");
        }
        oxmpi::request::wait_all(sends)?;
        Ok(())
    })
}

fn main() -> ExitCode {
    let universe = match oxmpi::initialize() {
        Ok(u) => u,
        Err(e) => {
            eprintln!("hello: cannot initialize MPI: {e}");
            return ExitCode::FAILURE;
        }
    };
    let world = universe.world();
    if let Err(e) = run(&world) {
        eprintln!("hello: rank {}: {e}", world.rank());
        world.abort(1);
    }
    match universe.finalize() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hello: rank {}: finalize failed: {e}", world.rank());
            ExitCode::FAILURE
        }
    }
}
