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

// ----- the suite catches a broken pml -----
//
// Tables that forward to ob1's but break one rule; the suite must fail on
// each, at the check for that rule.

mod broken {
    use abi_stable::std_types::RString;
    use mca_pml_ob1::{Ob1, MODULE};
    use oxmpi_framework_pml::adapter::{request_table, table};
    use oxmpi_framework_pml::module::{
        PmlModule, RecvArgs, RequestError, RequestStatus, RequestTable, SendArgs, SendMode,
    };
    use std::mem::MaybeUninit;
    use std::sync::Mutex;

    /// Handles of the sends ob1 started, and of the requests freed (a
    /// handle issued again leaves both lists, for the request it names
    /// now).
    pub static SENDS: Mutex<Vec<u64>> = Mutex::new(Vec::new());
    pub static FREED: Mutex<Vec<u64>> = Mutex::new(Vec::new());

    fn issued(handle: u64, is_send: bool) {
        FREED.lock().unwrap().retain(|&h| h != handle);
        let mut sends = SENDS.lock().unwrap();
        sends.retain(|&h| h != handle);
        if is_send {
            sends.push(handle);
        }
    }

    unsafe extern "C" fn isend_tracked(
        args: &SendArgs,
        request: &mut u64,
        kind: &mut RequestError,
        error: &mut MaybeUninit<RString>,
    ) -> bool {
        // SAFETY: ob1's entry point with the caller's arguments.
        let ok = unsafe { (MODULE.requests.isend)(args, request, kind, error) };
        if ok {
            issued(*request, true);
        }
        ok
    }

    unsafe extern "C" fn irecv_tracked(
        args: &RecvArgs,
        request: &mut u64,
        status: &mut RequestStatus,
        error: &mut MaybeUninit<RString>,
    ) -> bool {
        // SAFETY: ob1's entry point with the caller's arguments.
        let ok = unsafe { (MODULE.requests.irecv)(args, request, status, error) };
        if ok {
            issued(*request, false);
        }
        ok
    }

    unsafe extern "C" fn isend_never_synchronous(
        args: &SendArgs,
        request: &mut u64,
        kind: &mut RequestError,
        error: &mut MaybeUninit<RString>,
    ) -> bool {
        let mut standard = *args;
        standard.mode = SendMode::Standard;
        // SAFETY: ob1's entry point with the caller's arguments (only the
        // mode changed).
        unsafe { (MODULE.requests.isend)(&standard, request, kind, error) }
    }

    /// Synchronous sends complete like standard ones.
    pub static SSEND_EARLY: PmlModule = PmlModule {
        requests: RequestTable {
            isend: isend_never_synchronous,
            ..request_table::<Ob1>()
        },
        ..table::<Ob1>()
    };

    unsafe extern "C" fn cancel_never(_request: u64) -> bool {
        false
    }

    /// `cancel` never cancels.
    pub static NO_CANCEL: PmlModule = PmlModule {
        requests: RequestTable {
            cancel: cancel_never,
            ..request_table::<Ob1>()
        },
        ..table::<Ob1>()
    };

    unsafe extern "C" fn test_sends_at_once(request: u64, status: &mut RequestStatus) -> bool {
        // SAFETY: ob1's entry point with the caller's arguments.
        if unsafe { (MODULE.requests.test)(request, status) } {
            return true;
        }
        if SENDS.lock().unwrap().contains(&request) {
            *status = RequestStatus::default();
            return true;
        }
        false
    }

    /// A send reports completion before the btl is done with its buffer.
    pub static EARLY_SEND: PmlModule = PmlModule {
        requests: RequestTable {
            isend: isend_tracked,
            irecv: irecv_tracked,
            test: test_sends_at_once,
            ..request_table::<Ob1>()
        },
        ..table::<Ob1>()
    };

    unsafe extern "C" fn free_recorded(request: u64) {
        FREED.lock().unwrap().push(request);
        // SAFETY: ob1's entry point with the caller's argument.
        unsafe { (MODULE.requests.free)(request) }
    }

    unsafe extern "C" fn test_freed_never(request: u64, status: &mut RequestStatus) -> bool {
        if FREED.lock().unwrap().contains(&request) {
            return false;
        }
        // SAFETY: ob1's entry point with the caller's arguments.
        unsafe { (MODULE.requests.test)(request, status) }
    }

    /// A freed handle is "not complete" forever.
    pub static STALE_HANGS: PmlModule = PmlModule {
        requests: RequestTable {
            isend: isend_tracked,
            irecv: irecv_tracked,
            free: free_recorded,
            test: test_freed_never,
            ..request_table::<Ob1>()
        },
        ..table::<Ob1>()
    };
}

/// Runs the suite on `table` and returns the message it failed with.
fn failure(table: &'static oxmpi_framework_pml::module::PmlModule) -> String {
    let outcome = std::panic::catch_unwind(|| conformance::run(&Subject::new("ob1", table)));
    let payload = outcome.expect_err("the suite passed a broken pml");
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn the_suite_catches_a_synchronous_send_that_completes_unmatched() {
    let why = failure(&broken::SSEND_EARLY);
    assert!(
        why.contains("the synchronous send completed while no receive matched it"),
        "{why}"
    );
}

#[test]
fn the_suite_catches_a_cancel_that_does_not_cancel() {
    let why = failure(&broken::NO_CANCEL);
    assert!(
        why.contains("(synchronous sends") && why.contains("cancel"),
        "{why}"
    );
}

#[test]
fn the_suite_catches_a_send_that_completes_while_the_btl_reads_it() {
    let why = failure(&broken::EARLY_SEND);
    assert!(
        why.contains("received data differs") || why.contains("changed a"),
        "{why}"
    );
}

#[test]
fn the_suite_catches_a_freed_handle_that_never_completes() {
    let why = failure(&broken::STALE_HANGS);
    assert!(why.contains("answered \"not complete\""), "{why}");
}
