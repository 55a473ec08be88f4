//! The kit's own tests: the conformance suite passes on a well-behaved
//! btl and fails on one that breaks the contract; the cluster drives the
//! exported table and values alike.

use super::conformance::{self, Subject};
use super::echo::{table_of, Echo, REORDERS, WELL};
use super::{pattern, services, Cluster, Event, Placement};
use crate::module::SendOutcome;

#[test]
fn the_suite_passes_on_a_well_behaved_btl() {
    conformance::run::<Echo<WELL>>(&Subject::new("echo", table_of::<WELL>()));
}

#[test]
fn the_suite_fails_on_a_btl_that_reorders() {
    let caught = std::panic::catch_unwind(|| {
        conformance::run::<Echo<REORDERS>>(&Subject::new("echo-reorders", table_of::<REORDERS>()))
    });
    let panic = caught.expect_err("the suite must fail a btl that delivers out of order");
    let text = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    assert!(text.contains("out of order"), "{text}");
}

#[test]
fn the_suite_refuses_a_subject_that_reaches_nothing() {
    let caught = std::panic::catch_unwind(|| {
        conformance::run::<Echo<WELL>>(
            &Subject::new("echo", table_of::<WELL>()).reaches_itself(false),
        )
    });
    assert!(caught.is_err());
}

#[test]
fn a_table_rank_and_a_value_rank_deliver_alike() {
    let _lock = services::lock();
    let data = pattern(300, 3);
    for with_table in [true, false] {
        let mut c = if with_table {
            Cluster::<Echo<WELL>>::with_table(table_of::<WELL>(), "echo", 1).unwrap()
        } else {
            Cluster::<Echo<WELL>>::values("echo", 1).unwrap()
        };
        assert_eq!(c.handle(0).is_some(), with_table);
        assert_eq!(c.value_mut(0).is_some(), !with_table);
        let ep = c.connect(0, 0, 0).unwrap();
        c.recorder(0)
            .place_next([Placement::Destination, Placement::BtlHeld]);
        assert_eq!(c.send(0, 0, ep, b"one", &data, 1), SendOutcome::Queued);
        assert_eq!(c.send(0, 0, ep, b"two", &data, 2), SendOutcome::Queued);
        assert!(c.recorder(0).events().is_empty(), "no callback from send");
        assert_eq!(c.progress(0), 2);
        let frags = c.recorder(0).fragments();
        assert_eq!(frags.len(), 2);
        assert!(frags[0].landed && frags[0].payload == data);
        assert_eq!(frags[1].placement, Placement::BtlHeld);
        assert_eq!(frags[1].payload_addr, data.as_ptr() as usize, "in place");
        assert_eq!(c.recorder(0).send_dones(), [1, 2]);
        assert!(matches!(
            c.recorder(0).events()[0],
            Event::Header {
                payload_len: 300,
                ..
            }
        ));
        c.assert_clean("two fragments");
    }
}

#[test]
fn the_suite_passes_on_a_btl_with_get_and_put() {
    use super::echo::RDMA;
    conformance::run::<Echo<RDMA>>(&Subject::new("echo-rdma", table_of::<RDMA>()));
}

#[test]
fn the_suite_fails_on_a_btl_whose_get_moves_nothing() {
    use super::echo::RDMA_LAZY;
    let caught = std::panic::catch_unwind(|| {
        conformance::run::<Echo<RDMA_LAZY>>(&Subject::new("echo-lazy", table_of::<RDMA_LAZY>()))
    });
    let panic = caught.expect_err("the suite must fail a btl whose get/put moves no byte");
    let text = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    assert!(text.contains("differs from the source"), "{text}");
}

#[test]
fn a_get_finishes_once_on_progress_and_a_refused_one_never() {
    use super::echo::RDMA;
    use crate::module::{RdmaOutcome, RdmaStatus};
    let _lock = services::lock();
    let remote = pattern(5000, 9);
    let mut local = vec![0u8; 5000];
    let mut c = Cluster::<Echo<RDMA>>::with_table(table_of::<RDMA>(), "echo", 1).unwrap();
    let ep = c.connect(0, 0, 0).unwrap();
    // SAFETY: both buffers outlive the cluster, declared before it.
    let outcome = unsafe {
        c.get(
            0,
            0,
            ep,
            local.as_mut_ptr(),
            remote.as_ptr() as u64,
            5000,
            4,
        )
    };
    assert_eq!(outcome, RdmaOutcome::Queued);
    assert!(
        c.recorder(0).rdma_dones().is_empty(),
        "no callback from get"
    );
    // SAFETY: refused before the btl sees it (too long).
    let refused = unsafe {
        c.get(
            0,
            0,
            ep,
            local.as_mut_ptr(),
            remote.as_ptr() as u64,
            200_000,
            5,
        )
    };
    assert_eq!(refused, RdmaOutcome::Failed);
    assert_eq!(c.progress(0), 1);
    assert_eq!(c.recorder(0).rdma_dones(), [(4, RdmaStatus::Done)]);
    c.assert_clean("one get");
    drop(c);
    assert_eq!(local, remote);
}
