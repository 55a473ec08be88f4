//! Fragments waiting in a fast box reach the pml in batches: one
//! `on_fragments` call for up to `Fragments::CAPACITY` of them and a
//! quarter of the ring, in ring order, at most `btl_sm_poll_batch` per
//! progress call.

use super::conformance::job_dir;
use crate::SmBtl;
use oxmpi_framework_btl::adapter::Fragments;
use oxmpi_framework_btl::testkit::drive::Cluster;
use oxmpi_plugin_api::testkit::{clear_param, lock, set_param};
use oxmpi_plugin_api::ParamValue;

const PAYLOAD: [u8; 8] = [3; 8];
/// A payload whose record takes 768 bytes.
static BIG: [u8; 700] = [5; 700];

/// A 32-byte header naming fragment `n`.
fn header(n: u32) -> [u8; 32] {
    let mut h = [0u8; 32];
    h[..4].copy_from_slice(&n.to_le_bytes());
    h
}

#[test]
fn waiting_fragments_arrive_in_batches_in_order_up_to_the_poll_limit() {
    // The job directory's lock first, then the kit's (see reply.rs).
    let (_env, dir) = job_dir(2);
    let _kit = lock();
    set_param("btl_sm_fbox_threshold", ParamValue::Int(1));
    set_param("btl_sm_fbox_size", ParamValue::Int(8192));
    set_param("btl_sm_poll_batch", ParamValue::Int(50));
    let mut c = Cluster::<SmBtl>::values("sm", 2).unwrap();
    let to1 = c.connect(0, 0, 1).unwrap();
    // The first fragment goes through the queue and claims the box.
    c.send_accepted(0, 0, to1, &header(0), &PAYLOAD, 0);
    c.pump("the first fragment", |c| {
        c.recorder(1).fragments().len() == 1
    });
    let before = c.recorder(1).counts();
    // 100 one-line records wait in the box (8 KiB holds 128).
    for n in 1..=100 {
        c.send(0, 0, to1, &header(n), &PAYLOAD, 0);
    }
    assert_eq!(c.recorder(1).fragments().len(), 1, "nothing delivered yet");
    let cap = Fragments::CAPACITY;
    for round in 1..=2 {
        assert_eq!(c.progress(1), 50, "round {round}: the poll limit");
        let counts = c.recorder(1).counts();
        assert_eq!(counts.fragments - before.fragments, 50 * round);
        // 50 = 32 + 18 with the capacity of 32: two batches per round.
        let per_round = 50usize.div_ceil(cap);
        assert_eq!(counts.batches - before.batches, per_round * round);
    }
    assert_eq!(c.progress(1), 0);
    let got: Vec<u32> = c
        .recorder(1)
        .fragments()
        .iter()
        .map(|f| {
            assert_eq!(f.peer, 0);
            assert_eq!(f.payload, PAYLOAD);
            u32::from_le_bytes(f.header[..4].try_into().unwrap())
        })
        .collect();
    assert_eq!(got, (0..=100).collect::<Vec<u32>>(), "ring order");
    // The room came back: another 100 fit without progress on rank 1.
    for n in 101..=200 {
        c.send_accepted(0, 0, to1, &header(n), &PAYLOAD, 0);
    }
    c.pump("the second hundred", |c| {
        c.recorder(1).fragments().len() == 201
    });
    // Larger records: a batch ends once it holds a quarter of the ring
    // (2 KiB here), three records of 768 bytes.
    let before = c.recorder(1).counts();
    for n in 201..=208 {
        c.send(0, 0, to1, &header(n), &BIG, 0);
    }
    assert_eq!(c.progress(1), 8);
    let counts = c.recorder(1).counts();
    assert_eq!(counts.fragments - before.fragments, 8);
    assert_eq!(counts.batches - before.batches, 3, "3 + 3 + 2 records");
    let last = c.recorder(1).fragments().pop().unwrap();
    assert_eq!(
        (last.header, last.payload),
        (header(208).to_vec(), BIG.to_vec())
    );
    c.assert_clean("batches");
    clear_param("btl_sm_poll_batch");
    clear_param("btl_sm_fbox_size");
    clear_param("btl_sm_fbox_threshold");
    drop(dir);
}
