//! Checks communicator attributes and hints: keyvals that copy on
//! duplication (cloned, by a closure, or not at all), values deleted
//! when replaced, deleted explicitly, and when a communicator is freed
//! (a value's `Drop` counts it), splits that copy nothing, the
//! predefined attributes, and `Info` hints through `set_info`,
//! `duplicate_with_info` and duplication; each new communicator also
//! carries a message around a ring.
//!
//! Run: `mpirun -n 3 attr_check`. Every rank prints
//! `attr ok (<n> checks)`; on a failure it prints what differed and the
//! job is aborted.

#![forbid(unsafe_code)]

use oxmpi::attribute::{Info, Keyval};
use oxmpi::topology::{Color, SimpleCommunicator};
use oxmpi::traits::*;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[path = "support/checks.rs"]
mod checks;

use checks::{BoxError, Checks};

/// Values whose deletion is counted.
static DELETED: AtomicUsize = AtomicUsize::new(0);

/// (Checks compare the number inside, never a `Tracked` made to compare
/// with, whose drop would count.)
#[derive(Clone, Debug)]
struct Tracked(i32);

impl Drop for Tracked {
    fn drop(&mut self) {
        DELETED.fetch_add(1, Ordering::SeqCst);
    }
}

fn deleted() -> usize {
    DELETED.load(Ordering::SeqCst)
}

/// A message around a ring of `comm`.
fn ring(comm: &SimpleCommunicator, c: &mut Checks, what: &str) -> Result<(), BoxError> {
    let (rank, size) = (comm.rank(), comm.size());
    let next = comm.process_at_rank((rank + 1) % size);
    let previous = comm.process_at_rank((rank + size - 1) % size);
    let (got, _) = oxmpi::point_to_point::send_receive::<i32, _, _, _>(&rank, &next, &previous)?;
    c.same(what, &got, &previous.rank())
}

fn run(world: &SimpleCommunicator, c: &mut Checks) -> Result<(), BoxError> {
    let rank = world.rank();
    let cloned = Keyval::<Tracked>::cloned();
    let plain = Keyval::<Tracked>::new();
    let bumped = Keyval::<i64>::with_copy(|v| Some(v + 1));
    let refused = Keyval::<i64>::with_copy(|_| None);

    world.set_attribute(&cloned, Tracked(rank));
    world.set_attribute(&plain, Tracked(-1));
    world.set_attribute(&bumped, 10 * i64::from(rank));
    world.set_attribute(&refused, 5);
    c.same(
        "get",
        &world.attribute(&bumped).as_deref(),
        &Some(&(10 * i64::from(rank))),
    )?;

    // Replacing a value deletes the old one.
    let before = deleted();
    world.set_attribute(&plain, Tracked(-2));
    c.same("replaced value deleted", &deleted(), &(before + 1))?;

    let before = deleted();
    {
        let dup = world.duplicate()?;
        ring(&dup, c, "ring on the duplicate")?;
        c.same(
            "cloned copy",
            &dup.attribute(&cloned).map(|t| t.0),
            &Some(rank),
        )?;
        c.same("not copied", &dup.attribute(&plain).map(|t| t.0), &None)?;
        c.same(
            "copied by closure",
            &dup.attribute(&bumped).as_deref(),
            &Some(&(10 * i64::from(rank) + 1)),
        )?;
        c.same("copy refused", &dup.attribute(&refused), &None)?;
        // The duplicate's own values are its own.
        dup.set_attribute(&bumped, -7);
        c.same(
            "world keeps its value",
            &world.attribute(&bumped).as_deref(),
            &Some(&(10 * i64::from(rank))),
        )?;
        // A duplicate of the duplicate copies again.
        let dup2 = dup.duplicate()?;
        c.same(
            "copied twice",
            &dup2.attribute(&bumped).as_deref(),
            &Some(&-6),
        )?;
        c.same(
            "cloned twice",
            &dup2.attribute(&cloned).map(|t| t.0),
            &Some(rank),
        )?;
        c.same("nothing deleted yet", &deleted(), &before)?;
    }
    // Freeing the two duplicates deleted their clones of Tracked.
    c.same("values deleted on free", &deleted(), &(before + 2))?;

    // Explicit delete: the communicator lets go; the value goes with the
    // last Arc.
    let held: Arc<Tracked> = world.delete_attribute(&plain)?;
    c.same("deleted value returned", &held.0, &-2)?;
    c.same(
        "gone after delete",
        &world.attribute(&plain).map(|t| t.0),
        &None,
    )?;
    let before = deleted();
    drop(held);
    c.same("dropped with its last Arc", &deleted(), &(before + 1))?;
    let e = world.delete_attribute(&plain).unwrap_err();
    c.same("delete of nothing", &e.class(), &oxmpi::ErrorClass::Arg)?;

    // A split copies no attributes.
    let half = world
        .split_by_color(Color::with_value(rank % 2))?
        .ok_or("split gave no communicator")?;
    ring(&half, c, "ring on the split")?;
    c.same(
        "split copies nothing",
        &half.attribute(&cloned).map(|t| t.0),
        &None,
    )?;

    // Predefined attributes.
    c.same("tag_ub", &world.tag_ub(), &oxmpi::TAG_UB)?;
    c.same("universe size", &world.universe_size(), &world.size())?;
    c.same("wtime is not global", &world.wtime_is_global(), &false)?;
    c.same("appnum", &world.appnum(), &0)?;
    c.same("no host", &world.host(), &None)?;

    // Hints.
    c.same("no hints at first", &world.info(), &Info::new())?;
    let mut info = Info::new();
    info.set("mpi_assert_no_any_tag", "true")?;
    info.set("oxmpi_note", &format!("rank {rank}"))?;
    let hinted = world.duplicate_with_info(&info)?;
    ring(&hinted, c, "ring on the hinted duplicate")?;
    c.same("dup_with_info hints", &hinted.info(), &info)?;
    c.same(
        "dup_with_info copies attributes",
        &hinted.attribute(&cloned).map(|t| t.0),
        &Some(rank),
    )?;
    let again = hinted.duplicate()?;
    c.same(
        "hints copied on dup",
        &again.info().get("oxmpi_note"),
        &Some(format!("rank {rank}").as_str()),
    )?;
    world.set_info(&info);
    c.same(
        "set_info round trip",
        &world.info().nth_key(1),
        &Some("oxmpi_note"),
    )?;
    world.set_info(&Info::new());
    c.same("hints replaced", &world.info().nkeys(), &0)?;
    Ok(())
}

fn main() -> ExitCode {
    checks::main_with("attr_check", "attr", run)
}
