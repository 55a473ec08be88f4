//! The btl conformance suite of the test kit, run on sm with both copy
//! mechanisms.

use crate::{Mechanism, SmBtl, MODULE};
use oxmpi_framework_btl::testkit::conformance::{self, Subject};
use oxmpi_plugin_api::ParamValue;

/// Serializes the tests that set the job directory's variables.
static ENV: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Points the process's job directory at a fresh temporary directory for
/// `ranks` local processes, for as long as the guard lives.
pub(crate) fn job_dir(ranks: u32) -> (std::sync::MutexGuard<'static, ()>, tempfile::TempDir) {
    let guard = ENV.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    std::env::set_var(crate::place::JOB_DIR_VAR, dir.path());
    std::env::set_var(crate::place::LOCAL_SIZE_VAR, ranks.to_string());
    (guard, dir)
}

fn subject(mechanism: Mechanism) -> Subject {
    Subject::new("sm", &MODULE)
        .ranks(3)
        .reaches_itself(false)
        .needs_card(true)
        .param(
            "btl_sm_single_copy_mechanism",
            ParamValue::Int(mechanism as i64),
        )
}

#[test]
fn the_btl_conformance_suite_passes_with_single_copy() {
    let (_env, dir) = job_dir(3);
    conformance::run::<SmBtl>(&subject(Mechanism::Cma));
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "segments left"
    );
}

#[test]
fn the_btl_conformance_suite_passes_with_copies_through_the_segment() {
    let (_env, dir) = job_dir(3);
    conformance::run::<SmBtl>(&subject(Mechanism::None));
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "segments left"
    );
}
