//! The bindings reach the system's UCX: a UCP context with the tag
//! feature and a worker come up over the transports every Debian build
//! carries, and the worker answers its address.

use oxmpi_ucx_sys::*;
use std::mem::MaybeUninit;

#[test]
fn a_tag_context_and_worker_come_up_and_give_an_address() {
    // SAFETY: the parameter blocks are zeroed and then filled with the
    // fields their masks name, as UCP requires; every handle UCP answers
    // is checked for success before use and released once, in reverse
    // order of creation.
    unsafe {
        let mut config: *mut ucp_config_t = std::ptr::null_mut();
        let st = ucp_config_read(std::ptr::null(), std::ptr::null(), &mut config);
        assert_eq!(st, UCS_OK, "ucp_config_read");
        let mut params: ucp_params_t = MaybeUninit::zeroed().assume_init();
        params.field_mask = UCP_PARAM_FIELD_FEATURES as u64;
        params.features = UCP_FEATURE_TAG as u64;
        let mut context: ucp_context_h = std::ptr::null_mut();
        let st = ucp_init(&params, config, &mut context);
        ucp_config_release(config);
        assert_eq!(st, UCS_OK, "ucp_init");
        let mut wparams: ucp_worker_params_t = MaybeUninit::zeroed().assume_init();
        wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE as u64;
        wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
        let mut worker: ucp_worker_h = std::ptr::null_mut();
        let st = ucp_worker_create(context, &wparams, &mut worker);
        assert_eq!(st, UCS_OK, "ucp_worker_create");
        let mut address: *mut ucp_address_t = std::ptr::null_mut();
        let mut len = 0usize;
        let st = ucp_worker_get_address(worker, &mut address, &mut len);
        assert_eq!(st, UCS_OK, "ucp_worker_get_address");
        assert!(len > 0);
        ucp_worker_release_address(worker, address);
        ucp_worker_destroy(worker);
        ucp_cleanup(context);
    }
}
