//! The kit's own tests: its loopback btl passes the btl conformance suite.

use super::loopback::{self, Loopback, LOOPBACK};
use oxmpi_framework_btl::testkit::conformance::{self, Subject};

#[test]
fn the_loopback_btl_passes_the_btl_conformance_suite() {
    conformance::run::<Loopback>(&Subject::new(loopback::COMPONENT, &LOOPBACK).needs_card(true));
    loopback::reset();
}
