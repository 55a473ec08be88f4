//! The rmaps conformance suite, through the exported module.

use oxmpi_framework_rmaps::testkit::conformance::{self, Capacity, Subject};

#[test]
fn the_rmaps_conformance_suite_passes() {
    conformance::run(
        &Subject::new("round_robin", crate::MODULE)
            .serves("slot", Capacity::Slots)
            .serves("node", Capacity::Slots)
            .serves("core", Capacity::Slots)
            .serves("hwthread", Capacity::Slots)
            .serves("package", Capacity::Slots)
            .serves("numa", Capacity::Slots)
            .serves("package:SPAN", Capacity::Slots),
    );
}
