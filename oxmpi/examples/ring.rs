//! Passes a token around the ring of ranks (0 → 1 → ... → N-1 → 0) for
//! several laps; each rank checks the token it receives and passes on a
//! new one. The token is a slice of `i64` whose length changes from lap to
//! lap (1 element, 16, then 100 000 = 800 KB, large enough for the
//! rendezvous protocol); every element encodes the number of hops so far.
//!
//! Run: `mpirun -n 4 ring` (any number of ranks; with 1 rank, rank 0 sends
//! to itself). Exits 0 only if every check passed; otherwise prints why
//! and aborts the job.

#![forbid(unsafe_code)]

use oxmpi::point_to_point::send_receive_into_with_tags;
use oxmpi::topology::SimpleCommunicator;
use oxmpi::traits::*;
use std::process::ExitCode;

type BoxError = Box<dyn std::error::Error>;

/// Token length of each lap.
const LAPS: [usize; 3] = [1, 16, 100_000];

/// The token after `hops` sends.
fn token(hops: i64, len: usize) -> Vec<i64> {
    (0..len as i64).map(|k| hops * 1_000_003 + k).collect()
}

fn check(got: &[i64], hops: i64, from: i32, lap: usize) -> Result<(), BoxError> {
    let want = token(hops, got.len());
    match got.iter().zip(&want).position(|(g, w)| g != w) {
        None => Ok(()),
        Some(k) => Err(format!(
            "lap {lap}: the token from rank {from} has {} at element {k}; expected {} (after {hops} hops)",
            got[k], want[k]
        )
        .into()),
    }
}

fn run(world: &SimpleCommunicator) -> Result<(), BoxError> {
    let (rank, size) = (world.rank(), world.size());
    let next = world.process_at_rank((rank + 1) % size);
    let previous = world.process_at_rank((rank + size - 1) % size);
    for (lap, &len) in LAPS.iter().enumerate() {
        let tag = lap as i32;
        let start = (lap as i64) * i64::from(size);
        let mut got = vec![0i64; len];
        let status = if rank == 0 {
            // Send and receive at once: with one rank, rank 0 is its own
            // neighbour on both sides.
            let status = send_receive_into_with_tags(
                &token(start + 1, len),
                &next,
                tag,
                &mut got[..],
                &previous,
                tag,
            )?;
            check(&got, start + i64::from(size), previous.rank(), lap)?;
            status
        } else {
            let status = previous.receive_into_with_tag(&mut got[..], tag)?;
            check(&got, start + i64::from(rank), previous.rank(), lap)?;
            next.send_with_tag(&token(start + i64::from(rank) + 1, len)[..], tag)?;
            status
        };
        if status.source_rank() != previous.rank()
            || status.tag() != tag
            || status.count::<i64>() != Some(len)
        {
            return Err(format!(
                "lap {lap}: status says {} elements from rank {} with tag {}; expected {len} from rank {} with tag {tag}",
                status.byte_count() / 8,
                status.source_rank(),
                status.tag(),
                previous.rank()
            )
            .into());
        }
    }
    if rank == 0 {
        println!(
            "ring: {} laps around {size} rank(s) with tokens of {:?} elements, checked at every hop",
            LAPS.len(),
            LAPS
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    let universe = match oxmpi::initialize() {
        Ok(u) => u,
        Err(e) => {
            eprintln!("ring: cannot initialize MPI: {e}");
            return ExitCode::FAILURE;
        }
    };
    let world = universe.world();
    if let Err(e) = run(&world) {
        eprintln!("ring: rank {}: {e}", world.rank());
        world.abort(1);
    }
    match universe.finalize() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ring: rank {}: finalize failed: {e}", world.rank());
            ExitCode::FAILURE
        }
    }
}
