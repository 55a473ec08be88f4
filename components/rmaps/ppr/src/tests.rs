//! The rmaps conformance suite, through the exported module, with a count
//! per node, per core (the standard hosts' cores, given or assumed) and
//! per hardware thread.

use oxmpi_framework_rmaps::testkit::conformance::{self, Capacity, Subject};
use oxmpi_framework_rmaps::Resource;

#[test]
fn the_rmaps_conformance_suite_passes() {
    let per = |count, resource| Capacity::PerResource { count, resource };
    conformance::run(
        &Subject::new("ppr", crate::MODULE)
            .serves("ppr:2:node", per(2, Resource::Node))
            .serves("ppr:1:core", per(1, Resource::Core))
            .serves("ppr:1:hwthread", per(1, Resource::Hwthread))
            .serves("ppr:1:package", per(1, Resource::Package)),
    );
}
