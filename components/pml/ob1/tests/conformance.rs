//! ob1 runs the pml framework's conformance suite through its exported
//! table, over the kit's loopback btl (see
//! `oxmpi_framework_pml::testkit::conformance`): once with its default
//! parameters, once with a fragment pipeline of one.

use mca_pml_ob1::MODULE;
use oxmpi_framework_pml::testkit::conformance::{self, Subject};
use oxmpi_plugin_api::ParamValue;

#[test]
fn the_pml_conformance_suite_passes() {
    conformance::run(&Subject::new("ob1", &MODULE));
}

#[test]
fn the_suite_passes_with_a_pipeline_of_one() {
    conformance::run(
        &Subject::new("ob1", &MODULE).param("pml_ob1_send_pipeline_depth", ParamValue::Int(1)),
    );
}
