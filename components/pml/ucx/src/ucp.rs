//! UCP's context, worker and endpoints, with UCX's statuses as sentences.
//! Everything that hands UCP a parameter block is here; the request
//! callbacks are in [`crate::slab`].

use crate::uct::c_text;
use oxmpi_ucx_sys as sys;
use std::ffi::c_void;
use std::ptr;

/// UCX's text for a status (`Message truncated`, `Endpoint timeout`, …).
pub fn status_text(st: sys::ucs_status_t) -> String {
    // SAFETY: `ucs_status_string` answers a static string for any value.
    let text = c_text(unsafe { sys::ucs_status_string(st) });
    if text.is_empty() {
        format!("status {st}")
    } else {
        text
    }
}

/// UCX's version (`1.13.1`).
pub fn version() -> String {
    // SAFETY: `ucp_get_version_string` answers a static string.
    c_text(unsafe { sys::ucp_get_version_string() })
}

/// Whether a request's status says its peer is gone: the link and
/// endpoint failure ranges of `ucs_status_t`, a reset or lost
/// connection, an unreachable peer, an I/O error.
pub fn is_peer_failure(st: sys::ucs_status_t) -> bool {
    (sys::UCS_ERR_LAST_ENDPOINT_FAILURE..=sys::UCS_ERR_FIRST_LINK_FAILURE).contains(&st)
        || matches!(
            st,
            sys::UCS_ERR_CONNECTION_RESET
                | sys::UCS_ERR_NOT_CONNECTED
                | sys::UCS_ERR_UNREACHABLE
                | sys::UCS_ERR_IO_ERROR
        )
}

/// What a non-blocking UCP call answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Started {
    /// It completed during the call with this status.
    Now(sys::ucs_status_t),
    /// It runs: UCP's request, freed with `ucp_request_free` once done.
    Later(*mut c_void),
}

/// Reads a `ucs_status_ptr_t`: null is `UCS_OK`, the last 100 addresses
/// are error statuses, anything else is a request (UCX's
/// `UCS_PTR_IS_PTR`, `UCS_PTR_STATUS`).
pub fn started(p: sys::ucs_status_ptr_t) -> Started {
    let raw = p as usize;
    if raw.wrapping_sub(1) < (sys::UCS_ERR_LAST as isize as usize).wrapping_sub(1) {
        Started::Later(p)
    } else {
        Started::Now(raw as isize as sys::ucs_status_t)
    }
}

/// One UCP context with its one worker (single-threaded: the MPI layer
/// serializes every call). Dropping it destroys the worker, then the
/// context.
pub struct Ucp {
    context: sys::ucp_context_h,
    worker: sys::ucp_worker_h,
}

impl Ucp {
    /// Reads UCX's configuration from the `UCX_*` environment variables
    /// and starts a context with the tag feature (sized for `ranks`
    /// endpoints) and one worker.
    ///
    /// # Errors
    ///
    /// A sentence naming the call that failed, UCX's status and what to
    /// check.
    pub fn start(ranks: u32) -> Result<Ucp, String> {
        let config = read_config()?;
        let params = sys::ucp_params_t {
            field_mask: u64::from(
                sys::UCP_PARAM_FIELD_FEATURES | sys::UCP_PARAM_FIELD_ESTIMATED_NUM_EPS,
            ),
            features: u64::from(sys::UCP_FEATURE_TAG),
            estimated_num_eps: ranks as usize,
            ..Default::default()
        };
        let mut context: sys::ucp_context_h = ptr::null_mut();
        // SAFETY: a parameter block whose mask names the fields set, and
        // the configuration just read; UCP writes the context on success.
        let st = unsafe {
            sys::ucp_init_version(
                sys::UCP_API_MAJOR,
                sys::UCP_API_MINOR,
                &params,
                config,
                &mut context,
            )
        };
        // SAFETY: the configuration `ucp_config_read` answered, released
        // once; the context keeps its own copy.
        unsafe { sys::ucp_config_release(config) };
        if st != sys::UCS_OK {
            return Err(format!(
                "UCX could not start (ucp_init: {}); check the UCX_* environment variables \
                 (UCX_TLS, UCX_NET_DEVICES) and `ucx_info -d`, or choose another pml with --mca pml ob1",
                status_text(st)
            ));
        }
        let wparams = sys::ucp_worker_params_t {
            field_mask: u64::from(sys::UCP_WORKER_PARAM_FIELD_THREAD_MODE),
            thread_mode: sys::UCS_THREAD_MODE_SINGLE,
            ..Default::default()
        };
        let mut worker: sys::ucp_worker_h = ptr::null_mut();
        // SAFETY: a live context and a parameter block whose mask names
        // the field set.
        let st = unsafe { sys::ucp_worker_create(context, &wparams, &mut worker) };
        if st != sys::UCS_OK {
            // SAFETY: the context created above, released once.
            unsafe { sys::ucp_cleanup(context) };
            return Err(format!(
                "UCX could not create its worker (ucp_worker_create: {}); check UCX_TLS and `ucx_info -d`",
                status_text(st)
            ));
        }
        Ok(Ucp { context, worker })
    }

    /// The worker (for the request calls).
    pub fn worker(&self) -> sys::ucp_worker_h {
        self.worker
    }

    /// The worker's address, which peers connect to.
    ///
    /// # Errors
    ///
    /// UCX's status in a sentence.
    pub fn address(&self) -> Result<Vec<u8>, String> {
        let mut address: *mut sys::ucp_address_t = ptr::null_mut();
        let mut len = 0usize;
        // SAFETY: a live worker; UCP writes both out-parameters.
        let st = unsafe { sys::ucp_worker_get_address(self.worker, &mut address, &mut len) };
        if st != sys::UCS_OK {
            return Err(format!(
                "UCX could not give its worker's address (ucp_worker_get_address: {})",
                status_text(st)
            ));
        }
        // SAFETY: UCP answered `len` readable bytes at `address`, kept
        // until released below.
        let bytes = unsafe { std::slice::from_raw_parts(address.cast::<u8>(), len) }.to_vec();
        // SAFETY: the address answered above, released once.
        unsafe { sys::ucp_worker_release_address(self.worker, address) };
        Ok(bytes)
    }

    /// An endpoint to the worker at `address`; with `peer_errors`, its
    /// failures are reported to `on_error(arg, ep, status)` from the
    /// worker's progress (UCP's peer error handling, which only some
    /// transports offer).
    ///
    /// # Errors
    ///
    /// UCX's status in a sentence.
    ///
    /// # Safety
    ///
    /// `arg` stays valid for `on_error` until the endpoint is closed and
    /// the worker destroyed.
    pub unsafe fn connect(
        &self,
        address: &[u8],
        peer_errors: bool,
        on_error: unsafe extern "C" fn(*mut c_void, sys::ucp_ep_h, sys::ucs_status_t),
        arg: *mut c_void,
    ) -> Result<sys::ucp_ep_h, String> {
        let params = sys::ucp_ep_params_t {
            field_mask: u64::from(
                sys::UCP_EP_PARAM_FIELD_REMOTE_ADDRESS
                    | sys::UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE
                    | sys::UCP_EP_PARAM_FIELD_ERR_HANDLER,
            ),
            address: address.as_ptr().cast(),
            err_mode: if peer_errors {
                sys::UCP_ERR_HANDLING_MODE_PEER
            } else {
                sys::UCP_ERR_HANDLING_MODE_NONE
            },
            err_handler: sys::ucp_err_handler {
                cb: Some(on_error),
                arg,
            },
            ..Default::default()
        };
        let mut ep: sys::ucp_ep_h = ptr::null_mut();
        // SAFETY: a live worker; the address bytes are a worker address
        // the peer published and live for the call (UCP copies what it
        // keeps); `arg` lives as long as the caller promises.
        let st = unsafe { sys::ucp_ep_create(self.worker, &params, &mut ep) };
        if st != sys::UCS_OK {
            return Err(format!("ucp_ep_create: {}", status_text(st)));
        }
        Ok(ep)
    }

    /// One round of the worker's progress; the number of events.
    #[inline]
    pub fn progress(&self) -> usize {
        // SAFETY: a live worker, used by one thread at a time.
        unsafe { sys::ucp_worker_progress(self.worker) as usize }
    }

    /// Receives and drops every message that arrived and was never
    /// received (a program may finalize with some), so that UCX has none
    /// to warn about when the worker goes; waits at most `limit` for each.
    /// Answers how many there were.
    pub fn discard_unexpected(&self, limit: std::time::Duration) -> usize {
        let mut count = 0;
        let mut scratch: Vec<u8> = Vec::new();
        loop {
            let mut info = sys::ucp_tag_recv_info_t::default();
            // SAFETY: a live worker; a zero mask matches every message,
            // which is removed from UCP's queue (remove = 1); UCP fills
            // `info` when it finds one.
            let msg = unsafe { sys::ucp_tag_probe_nb(self.worker, 0, 0, 1, &mut info) };
            if msg.is_null() {
                return count;
            }
            count += 1;
            scratch.resize(info.length, 0);
            let params = sys::ucp_request_param_t::default();
            // SAFETY: `scratch` holds `info.length` bytes and outlives the
            // receive (waited for below, or left to UCP with the worker);
            // the message was claimed by the probe and is received once.
            let answer = unsafe {
                sys::ucp_tag_msg_recv_nbx(
                    self.worker,
                    scratch.as_mut_ptr().cast(),
                    info.length,
                    msg,
                    &params,
                )
            };
            if let Started::Later(request) = started(answer) {
                let start = std::time::Instant::now();
                while self.finished(request).is_none() {
                    if start.elapsed() > limit {
                        return count;
                    }
                    self.progress();
                }
            }
        }
    }

    /// Starts closing `ep` (flushing what it still sends, or at once with
    /// `force`).
    pub fn close(&self, ep: sys::ucp_ep_h, force: bool) -> Started {
        let params = sys::ucp_request_param_t {
            op_attr_mask: sys::UCP_OP_ATTR_FIELD_FLAGS,
            flags: if force {
                sys::UCP_EP_CLOSE_FLAG_FORCE
            } else {
                0
            },
            ..Default::default()
        };
        // SAFETY: an endpoint of this worker, closed once; the parameter
        // block names only the flags.
        started(unsafe { sys::ucp_ep_close_nbx(ep, &params) })
    }

    /// Whether a request UCP answered is still running; frees it when it
    /// is not, answering its status.
    pub fn finished(&self, request: *mut c_void) -> Option<sys::ucs_status_t> {
        // SAFETY: a request UCP answered and that was not freed yet.
        let st = unsafe { sys::ucp_request_check_status(request) };
        if st == sys::UCS_INPROGRESS {
            return None;
        }
        // SAFETY: as above; freed once, now that it completed.
        unsafe { sys::ucp_request_free(request) };
        Some(st)
    }
}

impl Drop for Ucp {
    fn drop(&mut self) {
        // SAFETY: the worker and context made in `start`, destroyed once,
        // the worker first.
        unsafe {
            sys::ucp_worker_destroy(self.worker);
            sys::ucp_cleanup(self.context);
        }
    }
}

/// Reads UCX's configuration (`UCX_*` environment variables).
///
/// # Errors
///
/// A sentence with UCX's status: a variable with a value UCX refuses.
pub fn read_config() -> Result<*mut sys::ucp_config_t, String> {
    let mut config: *mut sys::ucp_config_t = ptr::null_mut();
    // SAFETY: null prefix and file: the default `UCX_` environment; UCP
    // writes the configuration on success.
    let st = unsafe { sys::ucp_config_read(ptr::null(), ptr::null(), &mut config) };
    if st != sys::UCS_OK {
        return Err(format!(
            "UCX refused its configuration (ucp_config_read: {}); check the values of the UCX_* environment variables",
            status_text(st)
        ));
    }
    Ok(config)
}

/// Checks that UCX's configuration reads (for the component's query).
///
/// # Errors
///
/// As [`read_config`].
pub fn check_config() -> Result<(), String> {
    let config = read_config()?;
    // SAFETY: the configuration just read, released once.
    unsafe { sys::ucp_config_release(config) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_pointers_are_read_as_ucx_does() {
        assert_eq!(started(ptr::null_mut()), Started::Now(sys::UCS_OK));
        let truncated = sys::UCS_ERR_MESSAGE_TRUNCATED as isize as *mut c_void;
        assert_eq!(
            started(truncated),
            Started::Now(sys::UCS_ERR_MESSAGE_TRUNCATED)
        );
        let last = sys::UCS_ERR_LAST as isize as *mut c_void;
        assert_eq!(started(last), Started::Now(sys::UCS_ERR_LAST));
        let request = 0x7f00_0000_1000usize as *mut c_void;
        assert_eq!(started(request), Started::Later(request));
        let below = (sys::UCS_ERR_LAST as isize - 1) as *mut c_void;
        assert_eq!(started(below), Started::Later(below));
    }

    #[test]
    fn statuses_read_as_sentences() {
        assert_eq!(status_text(sys::UCS_OK), "Success");
        assert_eq!(
            status_text(sys::UCS_ERR_MESSAGE_TRUNCATED),
            "Message truncated"
        );
    }

    #[test]
    fn endpoint_and_link_errors_are_peer_failures() {
        for st in [
            sys::UCS_ERR_ENDPOINT_TIMEOUT,
            sys::UCS_ERR_CONNECTION_RESET,
            sys::UCS_ERR_UNREACHABLE,
            sys::UCS_ERR_LAST_ENDPOINT_FAILURE,
            sys::UCS_ERR_FIRST_LINK_FAILURE,
        ] {
            assert!(is_peer_failure(st), "{st}: {}", status_text(st));
        }
        for st in [
            sys::UCS_OK,
            sys::UCS_ERR_MESSAGE_TRUNCATED,
            sys::UCS_ERR_CANCELED,
            sys::UCS_ERR_NO_MEMORY,
        ] {
            assert!(!is_peer_failure(st), "{st}: {}", status_text(st));
        }
    }
}
