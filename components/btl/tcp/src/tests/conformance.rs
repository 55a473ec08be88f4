//! The btl conformance suite of the test kit, run on tcp: two ranks over
//! loopback, through the exported table and through `TcpBtl` values.

use crate::{TcpBtl, MODULE};
use oxmpi_framework_btl::testkit::conformance::{self, Subject};
use oxmpi_plugin_api::ParamValue;

#[test]
fn the_btl_conformance_suite_passes() {
    conformance::run::<TcpBtl>(
        &Subject::new("tcp", &MODULE)
            .ranks(2)
            .reaches_itself(false)
            .needs_card(true)
            .param("btl_tcp_if_include", ParamValue::Str("lo".into())),
    );
}
