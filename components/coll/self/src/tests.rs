//! The self component: its declarations, what it takes, the copies of
//! every operation, and the exported table end to end.

use super::*;
use oxmpi_framework_coll::handle::CollHandle;
use oxmpi_framework_coll::module::{CommDesc, ElementCode, OpCode};
use oxmpi_plugin_api::reexports::{RSlice, RStr};
use oxmpi_plugin_api::testkit;

#[test]
fn parameter_declarations_are_valid_for_the_core() {
    SelfParams::check_declarations().unwrap();
    assert_eq!(SelfParams::default(), SelfParams { priority: 75 });
    for decl in SelfParams::DECLS {
        let full = format!("coll_self_{}", decl.name);
        assert_eq!(oxmpi_mca::registry::check_decl(&full, decl), None, "{full}");
    }
}

fn info<'a>(members: &'a [u32]) -> CommInfo<'a> {
    CommInfo {
        context: 7,
        rank: 0,
        members,
        name: "MPI_COMM_SELF",
    }
}

#[test]
fn takes_communicators_of_one_and_declines_the_others() {
    let coll = SelfColl { priority: 75 };
    let offer = coll.comm_query(&info(&[3])).unwrap();
    assert_eq!((offer.priority, offer.ops), (75, OpSet::ALL));
    let Err(why) = coll.comm_query(&CommInfo {
        name: "MPI_COMM_WORLD",
        ..info(&[0, 1])
    }) else {
        panic!("a communicator of two was taken")
    };
    assert_eq!(
        why,
        "MPI_COMM_WORLD has 2 processes; the self component serves communicators of one"
    );
}

fn run(call: &CollCall<'_>) -> Result<(), String> {
    SelfColl { priority: 75 }
        .run(&mut SelfComm, call)
        .map(|served| assert_eq!(served, oxmpi_framework_coll::adapter::Served::Done))
}

#[test]
fn data_movement_copies_the_one_block() {
    for kind in [
        CollKind::Gather,
        CollKind::Allgather,
        CollKind::Alltoall,
        CollKind::Scatter,
    ] {
        let send = [1u8, 2, 3, 4, 5];
        let mut recv = [0u8; 5];
        let mut call = CollCall::new(kind);
        call.send = send.as_ptr();
        call.recv = recv.as_mut_ptr();
        call.count = 4;
        run(&call).unwrap();
        assert_eq!(recv, [1, 2, 3, 4, 0], "{kind:?}");
    }
}

#[test]
fn in_place_leaves_the_data_where_it_is() {
    for kind in [
        CollKind::Allreduce,
        CollKind::Gather,
        CollKind::Alltoall,
        CollKind::Scan,
    ] {
        let mut recv = [9u8; 8];
        let mut call = CollCall::new(kind);
        call.recv = recv.as_mut_ptr();
        call.count = 2;
        call.element = ElementCode::Int32;
        call.op = OpCode::Sum;
        run(&call).unwrap();
        assert_eq!(recv, [9; 8], "{kind:?}");
    }
    // Scatter's in place is a null receive buffer at the root.
    let send = [1u8; 4];
    let mut call = CollCall::new(CollKind::Scatter);
    call.send = send.as_ptr();
    call.count = 4;
    run(&call).unwrap();
}

#[test]
fn reductions_copy_whole_elements_and_exscan_leaves_rank_0_alone() {
    let send: Vec<u8> = (0..24).collect();
    for (kind, expect) in [
        (CollKind::Reduce, 24),
        (CollKind::Allreduce, 24),
        (CollKind::Scan, 24),
        (CollKind::ReduceScatterBlock, 24),
        (CollKind::Exscan, 0),
    ] {
        let mut recv = [0u8; 32];
        let mut call = CollCall::new(kind);
        call.send = send.as_ptr();
        call.recv = recv.as_mut_ptr();
        call.count = 3;
        call.element = ElementCode::Float64;
        call.op = OpCode::Max;
        run(&call).unwrap();
        assert_eq!(&recv[..expect], &send[..expect], "{kind:?}");
        assert!(recv[expect..].iter().all(|&b| b == 0), "{kind:?}");
    }
    // A user operation's elements have its size.
    let mut recv = [0u8; 32];
    let mut call = CollCall::new(CollKind::ReduceScatter);
    call.send = send.as_ptr();
    call.recv = recv.as_mut_ptr();
    let counts = [2usize];
    call.counts = RSlice::from_slice(&counts);
    call.element = ElementCode::User;
    call.op = OpCode::User;
    call.user.elem_size = 5;
    run(&call).unwrap();
    assert_eq!(&recv[..10], &send[..10]);
    assert!(recv[10..].iter().all(|&b| b == 0));
}

#[test]
fn v_forms_use_their_counts_and_displacements_and_refuse_overflow() {
    let send: Vec<u8> = (10..20).collect();
    let (counts, displs) = ([6usize], [3usize]);
    let mut recv = [0u8; 10];
    let mut call = CollCall::new(CollKind::Gatherv);
    call.send = send.as_ptr();
    call.recv = recv.as_mut_ptr();
    call.count = 5;
    call.counts = RSlice::from_slice(&counts);
    call.displs = RSlice::from_slice(&displs);
    run(&call).unwrap();
    assert_eq!(recv, [0, 0, 0, 10, 11, 12, 13, 14, 0, 0]);
    call.count = 7;
    assert_eq!(
        run(&call).unwrap_err(),
        "gatherv: a block of 7 bytes does not fit the 6 bytes the receive side gives it"
    );

    let mut recv = [0u8; 6];
    let mut call = CollCall::new(CollKind::Scatterv);
    call.send = send.as_ptr();
    call.recv = recv.as_mut_ptr();
    call.count = 6;
    call.counts = RSlice::from_slice(&counts);
    call.displs = RSlice::from_slice(&displs);
    run(&call).unwrap();
    assert_eq!(recv, [13, 14, 15, 16, 17, 18]);

    let (scounts, sdispls) = ([4usize], [1usize]);
    let mut recv = [0u8; 10];
    let mut call = CollCall::new(CollKind::Alltoallv);
    call.send = send.as_ptr();
    call.recv = recv.as_mut_ptr();
    call.counts = RSlice::from_slice(&counts);
    call.displs = RSlice::from_slice(&displs);
    call.send_counts = RSlice::from_slice(&scounts);
    call.send_displs = RSlice::from_slice(&sdispls);
    run(&call).unwrap();
    assert_eq!(recv, [0, 0, 0, 11, 12, 13, 14, 0, 0, 0]);

    let call = CollCall::new(CollKind::Allgatherv);
    assert_eq!(
        run(&call).unwrap_err(),
        "allgatherv on one process needs one count"
    );
}

#[test]
fn the_exported_table_serves_a_communicator_of_one() {
    let _kit = testkit::lock();
    static CORE: oxmpi_framework_coll::testkit::NoServices =
        oxmpi_framework_coll::testkit::NoServices;
    let handle = CollHandle::new(&MODULE, testkit::context("coll", "self"));
    handle.init(&CORE).unwrap();
    assert_eq!(
        handle.init(&CORE).unwrap_err(),
        "coll self init: already initialized (init called twice without finalize)"
    );
    let members = [5u32];
    let desc = CommDesc {
        context: 1,
        rank: 0,
        members: RSlice::from_slice(&members),
        name: RStr::from_str("MPI_COMM_SELF"),
    };
    let answer = handle.comm_query(&desc).unwrap();
    assert_eq!((answer.priority, answer.ops), (75, OpSet::ALL));
    let send = [4u8, 3, 2, 1];
    let mut recv = [0u8; 4];
    let mut call = CollCall::new(CollKind::Allgather);
    call.send = send.as_ptr();
    call.recv = recv.as_mut_ptr();
    call.count = 4;
    // SAFETY: a handle from comm_query; the buffers hold 4 bytes.
    unsafe { handle.run(answer.module, &call) }.unwrap();
    assert_eq!(recv, send);
    let two = [5u32, 6];
    let wide = CommDesc {
        members: RSlice::from_slice(&two),
        name: RStr::from_str("MPI_COMM_WORLD"),
        ..desc
    };
    assert!(handle
        .comm_query(&wide)
        .unwrap_err()
        .contains("has 2 processes"));
    // SAFETY: the live handle, no call in progress.
    unsafe { handle.comm_release(answer.module) };
    handle.finalize();
    assert_eq!(
        handle.comm_query(&desc).unwrap_err(),
        "coll self comm_query: the component is not initialized"
    );
}
