//! The component: its declarations, what it declines and why, what it
//! passes on, and calls through `Coll::run` by two ranks (threads) that
//! make, map and remove a segment file in a job directory.

use super::ops::call;
use crate::ops::{call_bytes, takes};
use crate::params::{Limits, SmParams, OVERSUBSCRIBED_SPINS};
use crate::place::Place;
use crate::{SmColl, SmComm};
use oxmpi_framework_coll::adapter::{Coll, CommInfo, Core, Served};
use oxmpi_framework_coll::handle::core_table;
use oxmpi_framework_coll::module::{CollKind, ElementCode, OpCode, OpSet};
use oxmpi_framework_coll::testkit::NoServices;
use oxmpi_plugin_api::Params as _;

#[test]
fn parameter_declarations_are_valid_for_the_core() {
    SmParams::check_declarations().unwrap();
    let d = SmParams::default();
    assert_eq!(
        (d.priority, d.slot_size, d.buffers, d.max_size),
        (40, 32768, 32, 4 << 20)
    );
    assert_eq!(
        (d.oversubscribed_slot_size, d.oversubscribed_buffers),
        (128 << 10, 16)
    );
    for decl in SmParams::DECLS {
        let full = format!("coll_sm_{}", decl.name);
        assert_eq!(oxmpi_mca::registry::check_decl(&full, decl), None, "{full}");
    }
}

#[test]
fn an_oversubscribed_node_spins_less_and_has_larger_slots() {
    let d = SmParams::default();
    let fits = Limits::new(&d, 2, 2).unwrap();
    let over = Limits::new(&d, 4, 2).unwrap();
    assert_eq!(fits.spin_count, d.spin_count);
    assert_eq!(over.spin_count, OVERSUBSCRIBED_SPINS);
    assert_eq!((fits.slots.size, fits.slots.buffers), (32 << 10, 32));
    assert_eq!((over.slots.size, over.slots.buffers), (128 << 10, 16));
    assert_eq!(over.max_size, fits.max_size);
    // 0 keeps the slots of a node that fits.
    let off = SmParams {
        oversubscribed_slot_size: 0,
        ..SmParams::default()
    };
    let over = Limits::new(&off, 4, 2).unwrap();
    assert_eq!((over.slots.size, over.slots.buffers), (32 << 10, 32));
    let tiny = SmParams {
        oversubscribed_slot_size: 100,
        ..SmParams::default()
    };
    assert_eq!(
        Limits::new(&tiny, 2, 2).unwrap_err(),
        "coll_sm_oversubscribed_slot_size is 100 bytes: it takes 0 (use coll_sm_slot_size) or at \
         least 4096"
    );
    assert_eq!(crate::params::count_cpu_list("0-1\n"), Some(2));
    assert_eq!(crate::params::count_cpu_list("0-3,6,8-9"), Some(7));
    assert_eq!(crate::params::count_cpu_list("x"), None);
    assert_eq!(crate::params::count_cpu_list("3-1"), None);
    assert!(crate::params::node_cores() >= 1);
}

fn core() -> Core {
    static SERVICES: NoServices = NoServices;
    Core::new(core_table(&SERVICES))
}

fn component(place: Result<Place, String>) -> SmColl {
    SmColl::new(
        &SmParams::default(),
        place,
        core(),
        oxmpi_plugin_api::testkit::context("coll", "sm"),
    )
    .unwrap()
}

fn place(dir: &std::path::Path) -> Place {
    Place {
        dir: dir.to_path_buf(),
        job: "00c0ffee".into(),
        local_size: 2,
    }
}

fn info<'a>(members: &'a [u32], rank: u32, name: &'a str) -> CommInfo<'a> {
    CommInfo {
        context: 4,
        rank,
        members,
        name,
    }
}

#[test]
fn declines_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let sm = component(Ok(place(dir.path())));
    let why = |c: &SmColl, members: &[u32]| {
        c.comm_query(&info(members, 0, "MPI_COMM_WORLD"))
            .err()
            .unwrap()
    };
    assert_eq!(
        why(&sm, &[0]),
        "MPI_COMM_WORLD has one process; the sm component serves communicators of two or more"
    );
    let many: Vec<u32> = (0..600).collect();
    assert!(why(&sm, &many).contains("raise coll_sm_slot_size"));
    let away = component(Err(
        "only 2 of the job's 4 processes are on this node".into()
    ));
    assert_eq!(
        why(&away, &[0, 1]),
        "only 2 of the job's 4 processes are on this node"
    );
    let offer = sm.comm_query(&info(&[0, 1], 0, "MPI_COMM_WORLD")).unwrap();
    assert_eq!(offer.priority, 40);
    assert_eq!(offer.ops, crate::ops::PROVIDED);
    assert_eq!(offer.nb_ops, OpSet::NONE);
}

#[test]
fn calls_beyond_the_limit_are_passed_on_and_barriers_never() {
    let max = 65536;
    let limits = |max_size| Limits {
        max_size,
        ..Limits::new(&SmParams::default(), 2, 2).unwrap()
    };
    let l = limits(max);
    let mut c = call(CollKind::Bcast, None, None, max, 0);
    assert!(takes(&c, 4, &l));
    c.count = max + 1;
    assert!(!takes(&c, 4, &l));
    let mut c = call(CollKind::Allgather, None, None, max / 4, 0);
    assert_eq!(call_bytes(&c, 4), max);
    assert!(takes(&c, 4, &l));
    c.count += 1;
    assert!(!takes(&c, 4, &l));
    let mut c = call(CollKind::Allreduce, None, None, max / 8, 0);
    c.element = ElementCode::Float64;
    c.op = OpCode::Sum;
    assert!(takes(&c, 2, &l));
    assert!(!takes(&c, 2, &limits(max - 1)));
    let a = call(CollKind::Alltoall, None, None, max / 2, 0);
    assert!(takes(&a, 2, &l));
    assert!(!takes(&a, 2, &limits(max - 1)));
    let c = call(CollKind::Barrier, None, None, 0, 0);
    assert!(takes(&c, 2, &limits(0)));
    for kind in [CollKind::Gatherv, CollKind::Scan, CollKind::ReduceScatter] {
        assert!(!takes(&call(kind, None, None, 1, 0), 2, &l), "{kind:?}");
    }
}

#[test]
fn two_ranks_make_map_and_remove_the_segment_file_through_run() {
    let dir = tempfile::tempdir().unwrap();
    let members = [3u32, 7];
    let results: Vec<Result<(Vec<u8>, Served), String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2u32)
            .map(|r| {
                let dir = dir.path();
                s.spawn(move || {
                    let sm = component(Ok(place(dir)));
                    let mut comm: SmComm = sm
                        .comm_query(&info(&members, r, "MPI_COMM_WORLD"))
                        .unwrap()
                        .comm;
                    let input = [r as u8 + 1; 8];
                    let mut recv = [0u8; 8];
                    let mut c = call(CollKind::Allreduce, Some(&input), Some(&mut recv), 8, 0);
                    c.element = ElementCode::UInt8;
                    c.op = OpCode::Sum;
                    let served = sm.run(&mut comm, &c)?;
                    assert_eq!(served, Served::Done);
                    // The file is gone once the first call returned.
                    assert!(!dir.join("coll-sm-00c0ffee-4-3").exists());
                    let big = vec![0u8; (4 << 20) + 1];
                    let mut c = call(CollKind::Bcast, None, None, big.len(), 0);
                    c.recv = big.as_ptr().cast_mut();
                    let passed = sm.run(&mut comm, &c)?;
                    Ok((recv.to_vec(), passed))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for r in results {
        let (sum, passed) = r.unwrap();
        assert_eq!(sum, vec![3u8; 8]);
        assert_eq!(passed, Served::PassedOn);
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
