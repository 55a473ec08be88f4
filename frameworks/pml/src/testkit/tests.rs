//! The kit's own tests: its loopback btl passes the btl conformance suite,
//! sending only and with get and put (answered at once or queued).

use super::loopback::{self, Behaviour, Loopback, RdmaAnswer, RdmaOffer, LOOPBACK};
use oxmpi_framework_btl::testkit::conformance::{self, Subject};

#[test]
fn the_loopback_btl_passes_the_btl_conformance_suite() {
    let subject = Subject::new(loopback::COMPONENT, &LOOPBACK).needs_card(true);
    loopback::reset();
    conformance::run::<Loopback>(&subject);
    for rdma_answer in [RdmaAnswer::Queued, RdmaAnswer::Done] {
        loopback::reset();
        loopback::set_behaviour(Behaviour {
            rdma: RdmaOffer::Both,
            rdma_answer,
            ..Behaviour::DEFAULT
        });
        conformance::run::<Loopback>(&subject);
        let stats = loopback::stats();
        assert!(
            stats.gets > 0 && stats.puts > 0 && stats.rdma_bytes > 0,
            "the suite ran no get/put on a loopback offering both ({rdma_answer:?}): {stats:?}"
        );
        if rdma_answer == RdmaAnswer::Queued {
            assert_eq!(stats.rdma_done, stats.rdma_queued, "{stats:?}");
        }
    }
    loopback::reset();
}
