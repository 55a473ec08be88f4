//! The transports and devices UCX offers on this host, from UCT's own
//! listing (its components, their memory domains, and each domain's
//! transport resources) — what `ucx_info -d` prints, without parsing
//! anything. Memory domains are opened with their configuration read
//! from the `UCX_*` environment variables and closed again at once.

use crate::selection::Resource;
use crate::ucp::status_text;
use oxmpi_ucx_sys as sys;
use std::ffi::{c_char, c_uint, CStr};
use std::ptr;

/// A fixed-size C name field as text (up to its first NUL).
fn name_of(field: &[c_char]) -> String {
    let bytes: Vec<u8> = field
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Every transport on every device UCT lists, in its order, without
/// repeats; memory domains that cannot be opened are left out and named
/// in the second list (`component/md: why`).
///
/// # Errors
///
/// A sentence when UCT cannot list its components at all.
pub fn resources() -> Result<(Vec<Resource>, Vec<String>), String> {
    let mut components: *mut sys::uct_component_h = ptr::null_mut();
    let mut count: c_uint = 0;
    // SAFETY: UCT fills both out-parameters on success; the list is
    // released below with its own function.
    let st = unsafe { sys::uct_query_components(&mut components, &mut count) };
    if st != sys::UCS_OK {
        return Err(format!(
            "UCX could not list its transport components (uct_query_components: {}); \
             check that the UCX installation (libucx0) is complete",
            status_text(st)
        ));
    }
    let mut found = Vec::new();
    let mut skipped = Vec::new();
    for i in 0..count as usize {
        // SAFETY: `components` holds `count` handles until released.
        let component = unsafe { *components.add(i) };
        scan_component(component, &mut found, &mut skipped);
    }
    // SAFETY: the list `uct_query_components` answered, released once.
    unsafe { sys::uct_release_component_list(components) };
    Ok((found, skipped))
}

/// Adds the resources of one UCT component's memory domains.
fn scan_component(
    component: sys::uct_component_h,
    found: &mut Vec<Resource>,
    skipped: &mut Vec<String>,
) {
    let mut attr = sys::uct_component_attr_t {
        field_mask: u64::from(
            sys::UCT_COMPONENT_ATTR_FIELD_NAME | sys::UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT,
        ),
        ..Default::default()
    };
    // SAFETY: a component handle from the live list, and an attribute
    // block whose mask names only fields that need no memory of ours.
    let st = unsafe { sys::uct_component_query(component, &mut attr) };
    if st != sys::UCS_OK {
        skipped.push(format!("a component: {}", status_text(st)));
        return;
    }
    let cname = name_of(&attr.name);
    let mut mds = vec![sys::uct_md_resource_desc_t::default(); attr.md_resource_count as usize];
    if mds.is_empty() {
        return;
    }
    attr.field_mask = u64::from(sys::UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES);
    attr.md_resources = mds.as_mut_ptr();
    // SAFETY: `md_resources` points to `md_resource_count` entries, as the
    // call requires.
    let st = unsafe { sys::uct_component_query(component, &mut attr) };
    if st != sys::UCS_OK {
        skipped.push(format!("{cname}: {}", status_text(st)));
        return;
    }
    for md in &mds {
        let mdname = name_of(&md.md_name);
        if let Err(why) = scan_md(component, md, found) {
            skipped.push(format!("{cname}/{mdname}: {why}"));
        }
    }
}

/// Adds the resources of one memory domain.
fn scan_md(
    component: sys::uct_component_h,
    md: &sys::uct_md_resource_desc_t,
    found: &mut Vec<Resource>,
) -> Result<(), String> {
    let mut config: *mut sys::uct_md_config_t = ptr::null_mut();
    // SAFETY: a live component handle; null prefix and file read the
    // default `UCX_` environment; the configuration is released below.
    let st = unsafe { sys::uct_md_config_read(component, ptr::null(), ptr::null(), &mut config) };
    if st != sys::UCS_OK {
        return Err(format!("uct_md_config_read: {}", status_text(st)));
    }
    let mut handle: sys::uct_md_h = ptr::null_mut();
    // SAFETY: the name is a NUL-terminated field UCT filled; the
    // configuration was read for this component.
    let st = unsafe { sys::uct_md_open(component, md.md_name.as_ptr(), config, &mut handle) };
    // SAFETY: the configuration `uct_md_config_read` answered, released
    // once (the open domain keeps what it needs).
    unsafe { sys::uct_config_release(config.cast()) };
    if st != sys::UCS_OK {
        return Err(format!("uct_md_open: {}", status_text(st)));
    }
    let mut list: *mut sys::uct_tl_resource_desc_t = ptr::null_mut();
    let mut count: c_uint = 0;
    // SAFETY: an open memory domain; UCT fills both out-parameters.
    let st = unsafe { sys::uct_md_query_tl_resources(handle, &mut list, &mut count) };
    if st == sys::UCS_OK {
        for i in 0..count as usize {
            // SAFETY: `list` holds `count` entries until released.
            let tl = unsafe { &*list.add(i) };
            let r = Resource {
                transport: name_of(&tl.tl_name),
                device: name_of(&tl.dev_name),
            };
            if !found.contains(&r) {
                found.push(r);
            }
        }
        // SAFETY: the list UCT answered, released once.
        unsafe { sys::uct_release_tl_resource_list(list) };
    }
    // SAFETY: the domain opened above, closed once.
    unsafe { sys::uct_md_close(handle) };
    if st != sys::UCS_OK {
        return Err(format!("uct_md_query_tl_resources: {}", status_text(st)));
    }
    Ok(())
}

/// A C string field's text (for messages).
pub(crate) fn c_text(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: UCX's strings are NUL-terminated and static or live for the
    // call; a non-null pointer from it is one of those.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_ucx_build_lists_the_self_transport() {
        let (found, _skipped) = resources().expect("UCT lists its components");
        assert!(
            found
                .iter()
                .any(|r| r.transport == "self" && r.device.starts_with("memory")),
            "{found:?}"
        );
        assert!(found.iter().any(|r| r.transport == "tcp"), "{found:?}");
    }

    #[test]
    fn names_stop_at_the_first_nul() {
        let field: [c_char; 6] = [b't' as c_char, b'c' as c_char, b'p' as c_char, 0, 65, 66];
        assert_eq!(name_of(&field), "tcp");
        let full: [c_char; 3] = [b'a' as c_char, b'b' as c_char, b'c' as c_char];
        assert_eq!(name_of(&full), "abc");
    }
}
