//! Every rank exchanges a message with every other rank, says so, and
//! then ends the way it is asked to; `tools/mpirun/tests/job_dir.rs` runs
//! it over `--mca btl self,sm` to check that the shared-memory btl leaves
//! nothing behind however a job ends.
//!
//! Run: `mpirun -n <ranks> all_pairs [--late RANK FILE] END`, where END is
//!
//! - `finalize`: finalize and exit with status 0;
//! - `hold FILE`: rank 0 waits (progressing MPI) until FILE exists, then
//!   tells every other rank, which waits for that in a receive; all
//!   finalize and exit with status 0;
//! - `block`: every rank waits in a receive that nothing matches, until
//!   the job is killed;
//! - `panic FILE` or `abort FILE`: the last rank waits (progressing MPI)
//!   until FILE exists, then panics (status 101) or aborts (SIGABRT)
//!   without finalizing; the others wait as with `block`.
//!
//! With `--late RANK FILE`, rank RANK waits before initializing MPI until
//! FILE exists, printing `late <rank> dir <job directory>` first; the
//! other ranks meanwhile initialize (and wait for it in the wire-up).
//!
//! After the exchange each rank prints `attached <rank> pid <pid> dir
//! <job directory>`. A wrong argument or a failed check prints why on
//! standard error and exits with status 2 (arguments) or 1 (checks).

#![forbid(unsafe_code)]

use oxmpi::point_to_point::send_receive;
use oxmpi::topology::SimpleCommunicator;
use oxmpi::traits::*;
use oxmpi::Universe;
use std::path::{Path, PathBuf};
use std::process::exit;
use std::time::Duration;

/// The tag of the message that lets the ranks of `hold` finalize.
const RELEASE: i32 = 7;
/// A tag no message carries.
const NEVER: i32 = 9;

/// How the run ends.
enum End {
    Finalize,
    Hold(PathBuf),
    Block,
    Panic(PathBuf),
    Abort(PathBuf),
}

/// The command line: the rank that starts late and its file, the end.
struct Args {
    late: Option<(i32, PathBuf)>,
    end: End,
}

const USAGE: &str =
    "usage: all_pairs [--late RANK FILE] finalize|hold FILE|block|panic FILE|abort FILE";

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut word = args.next().ok_or(USAGE)?;
    let mut late = None;
    if word == "--late" {
        let rank = args.next().ok_or(USAGE)?;
        let rank = rank
            .parse::<i32>()
            .map_err(|_| format!("--late takes a rank, not {rank:?}; {USAGE}"))?;
        let file = args.next().ok_or(USAGE)?;
        late = Some((rank, PathBuf::from(file)));
        word = args.next().ok_or(USAGE)?;
    }
    let end = match word.as_str() {
        "finalize" => End::Finalize,
        "hold" => End::Hold(PathBuf::from(args.next().ok_or(USAGE)?)),
        "block" => End::Block,
        "panic" => End::Panic(PathBuf::from(args.next().ok_or(USAGE)?)),
        "abort" => End::Abort(PathBuf::from(args.next().ok_or(USAGE)?)),
        other => return Err(format!("unknown end {other:?}; {USAGE}")),
    };
    if let Some(extra) = args.next() {
        return Err(format!("unexpected argument {extra:?}; {USAGE}"));
    }
    Ok(Args { late, end })
}

fn job_dir() -> String {
    std::env::var("OXMPI_JOB_DIR").unwrap_or_default()
}

/// Waits until `file` exists; with `world`, progressing MPI meanwhile.
fn wait_for(file: &Path, world: Option<&SimpleCommunicator>) {
    while !file.exists() {
        if let Some(world) = world {
            if let Err(e) = world.any_process().immediate_probe_with_tag(NEVER) {
                fail(world, format!("probe: {e}"));
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn fail(world: &SimpleCommunicator, what: impl std::fmt::Display) -> ! {
    eprintln!("all_pairs: rank {}: {what}", world.rank());
    exit(1)
}

/// Exchanges `rank * 1000 + peer` with every peer, in increasing order of
/// the pair (lower rank, higher rank), which every rank agrees on.
fn exchange(world: &SimpleCommunicator) {
    let (rank, size) = (world.rank(), world.size());
    for peer in (0..size).filter(|&p| p != rank) {
        let other = world.process_at_rank(peer);
        let sent = i64::from(rank * 1000 + peer);
        match send_receive::<i64, _, _, _>(&sent, &other, &other) {
            Ok((got, _)) if got == i64::from(peer * 1000 + rank) => {}
            Ok((got, _)) => fail(world, format!("rank {peer} sent {got}")),
            Err(e) => fail(world, format!("exchange with rank {peer}: {e}")),
        }
    }
}

/// Waits in a receive nothing matches.
fn block(world: &SimpleCommunicator) -> ! {
    match world.any_process().receive_with_tag::<u8>(NEVER) {
        Ok((_, status)) => fail(
            world,
            format!(
                "a message with tag {NEVER} from rank {}",
                status.source_rank()
            ),
        ),
        Err(e) => fail(world, format!("the blocking receive failed: {e}")),
    }
}

fn finalize(universe: Universe, world: &SimpleCommunicator) {
    if let Err(e) = universe.finalize() {
        fail(world, format!("finalize: {e}"));
    }
}

fn main() {
    let args = parse(std::env::args().skip(1)).unwrap_or_else(|e| {
        eprintln!("all_pairs: {e}");
        exit(2)
    });
    if let Some((late, file)) = &args.late {
        let rank = std::env::var("OXMPI_COMM_WORLD_RANK").unwrap_or_default();
        if rank == late.to_string() {
            println!("late {rank} dir {}", job_dir());
            wait_for(file, None);
        }
    }
    // A panic drops the universe while unwinding, which does not
    // finalize (the other ranks wait in a receive): the rank ends at once,
    // as a crash does.
    let universe = oxmpi::initialize().unwrap_or_else(|e| {
        eprintln!("all_pairs: cannot initialize MPI: {e}");
        exit(1)
    });
    let world = universe.world();
    exchange(&world);
    println!(
        "attached {} pid {} dir {}",
        world.rank(),
        std::process::id(),
        job_dir()
    );
    let last = world.rank() == world.size() - 1;
    match args.end {
        End::Finalize => finalize(universe, &world),
        End::Hold(file) => {
            if world.rank() == 0 {
                wait_for(&file, Some(&world));
                for peer in 1..world.size() {
                    if let Err(e) = world.process_at_rank(peer).send_with_tag(&1u8, RELEASE) {
                        fail(&world, format!("release of rank {peer}: {e}"));
                    }
                }
            } else if let Err(e) = world.process_at_rank(0).receive_with_tag::<u8>(RELEASE) {
                fail(&world, format!("waiting for the release: {e}"));
            }
            finalize(universe, &world);
        }
        End::Panic(file) if last => {
            wait_for(&file, Some(&world));
            panic!("all_pairs: rank {} panics as asked", world.rank())
        }
        End::Abort(file) if last => {
            wait_for(&file, Some(&world));
            std::process::abort()
        }
        End::Block | End::Panic(_) | End::Abort(_) => block(&world),
    }
}
