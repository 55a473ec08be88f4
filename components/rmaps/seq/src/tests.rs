//! The rmaps conformance suite, through the exported module: seq places
//! one process per line of the allocation's host sequence.

use oxmpi_framework_rmaps::testkit::conformance::{self, Capacity, Subject};

#[test]
fn the_rmaps_conformance_suite_passes() {
    conformance::run(&Subject::new("seq", crate::MODULE).serves("seq", Capacity::HostLines));
}
