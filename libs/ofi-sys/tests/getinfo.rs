//! The bindings reach the system's libfabric: the inline shims
//! (`fi_allocinfo`) and the library's own functions (`fi_getinfo`,
//! `fi_freeinfo`) work together, and the providers every Debian build
//! carries (tcp, shm) answer for tagged messages on reliable datagram
//! endpoints.

use oxmpi_ofi_sys::*;
use std::ffi::CStr;

/// The providers `fi_getinfo` offers for tagged RDM endpoints.
fn tagged_rdm_providers() -> Vec<String> {
    // SAFETY: `fi_allocinfo` answers a zeroed `fi_info` with its
    // attribute blocks allocated (or null on allocation failure, checked);
    // the hints are filled before `fi_getinfo` reads them, and both lists
    // are freed once, by `fi_freeinfo`.
    unsafe {
        let hints = fi_allocinfo();
        assert!(!hints.is_null(), "fi_allocinfo failed");
        (*hints).caps = FI_TAGGED;
        (*(*hints).ep_attr).type_ = FI_EP_RDM;
        let mut info: *mut fi_info = std::ptr::null_mut();
        let rc = fi_getinfo(
            fi_make_version(1, 17),
            std::ptr::null(),
            std::ptr::null(),
            0,
            hints,
            &mut info,
        );
        fi_freeinfo(hints);
        assert_eq!(rc, 0, "fi_getinfo answered {rc}");
        let mut names = Vec::new();
        let mut at = info;
        while !at.is_null() {
            let name = (*(*at).fabric_attr).prov_name;
            names.push(CStr::from_ptr(name).to_string_lossy().into_owned());
            at = (*at).next;
        }
        fi_freeinfo(info);
        names
    }
}

#[test]
fn tcp_and_shm_offer_tagged_rdm_endpoints() {
    let names = tagged_rdm_providers();
    for want in ["tcp", "shm"] {
        assert!(
            names.iter().any(|n| n.split(';').any(|part| part == want)),
            "no {want} provider among {names:?}"
        );
    }
}

#[test]
fn the_version_macro_matches_the_library() {
    // SAFETY: `fi_version` takes nothing and only answers a number.
    let v = unsafe { fi_version() };
    assert!(
        v >= fi_make_version(1, 17),
        "libfabric {}.{}",
        v >> 16,
        v & 0xffff
    );
}
