//! The local IP interfaces, from `getifaddrs`, as the framework's
//! [`Interface`] values (one per address), with each device's link speed.

use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::sync::Mutex;

use oxmpi_netif::interfaces::{Interface, DEFAULT_BANDWIDTH_MBPS};

use crate::sys;

/// The listing the query made, left for the `init` that follows it.
static QUERIED: Mutex<Option<Vec<Interface>>> = Mutex::new(None);

/// [`local_interfaces`], for the component's query, whose listing the
/// next [`interfaces_for_init`] takes instead of listing again (a listing
/// costs two netlink dumps and a read of every device's link speed, and
/// the query runs milliseconds before `init`).
///
/// # Errors
///
/// The `getifaddrs` error, if it fails.
pub fn interfaces_for_query() -> io::Result<Vec<Interface>> {
    let list = local_interfaces()?;
    *QUERIED.lock().unwrap_or_else(|e| e.into_inner()) = Some(list.clone());
    Ok(list)
}

/// The query's listing if one is waiting (taken: a later `init` lists
/// again), otherwise [`local_interfaces`].
///
/// # Errors
///
/// The `getifaddrs` error, if it fails.
pub fn interfaces_for_init() -> io::Result<Vec<Interface>> {
    let queried = QUERIED.lock().unwrap_or_else(|e| e.into_inner()).take();
    match queried {
        Some(list) => Ok(list),
        None => local_interfaces(),
    }
}

/// Every IPv4 and IPv6 address of every device, in the order
/// `getifaddrs` reports them. Each entry's bandwidth is the device's link
/// speed ([`link_speed_mbps`]).
///
/// # Errors
///
/// The `getifaddrs` error, if it fails.
pub fn local_interfaces() -> io::Result<Vec<Interface>> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: head is valid for writing; freed below.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut out = Vec::new();
    let mut speeds: HashMap<String, u32> = HashMap::new();
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: cur is an element of the list getifaddrs returned.
        let ifa = unsafe { &*cur };
        cur = ifa.ifa_next;
        // SAFETY: the addresses are valid or null (to_socket_addr checks).
        let (Some(addr), mask) = (unsafe { sys::to_socket_addr(ifa.ifa_addr) }, unsafe {
            sys::to_socket_addr(ifa.ifa_netmask)
        }) else {
            continue;
        };
        if ifa.ifa_name.is_null() {
            continue;
        }
        // SAFETY: ifa_name is a NUL-terminated string.
        let name = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) }
            .to_string_lossy()
            .into_owned();
        let device = name.split(':').next().unwrap_or(&name).to_owned();
        let prefix_len = mask.map_or(max_prefix(addr.ip()), |m| prefix_of(m.ip()));
        let flags = ifa.ifa_flags;
        let bandwidth = *speeds
            .entry(device.clone())
            .or_insert_with(|| link_speed_mbps(&device).unwrap_or(DEFAULT_BANDWIDTH_MBPS));
        let index = match addr {
            std::net::SocketAddr::V6(a) if a.scope_id() != 0 => a.scope_id(),
            _ => sys::if_index(&device),
        };
        let iface = Interface::new(name, index, addr.ip(), prefix_len)
            .with_up(flags & libc::IFF_UP as libc::c_uint != 0)
            .with_loopback(
                flags & libc::IFF_LOOPBACK as libc::c_uint != 0 || addr.ip().is_loopback(),
            )
            .with_bandwidth(bandwidth);
        out.push(iface);
    }
    // SAFETY: head came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    Ok(out)
}

/// The link speed of `device` in Mbit/s from `/sys/class/net/<device>/speed`,
/// or None when unknown (virtual devices, loopback, a down link reports -1).
pub fn link_speed_mbps(device: &str) -> Option<u32> {
    if device.is_empty() || device.contains('/') || device.starts_with('.') {
        return None;
    }
    let text = std::fs::read_to_string(format!("/sys/class/net/{device}/speed")).ok()?;
    parse_speed(&text)
}

/// Parses the contents of a sysfs `speed` file.
pub(crate) fn parse_speed(text: &str) -> Option<u32> {
    let v: i64 = text.trim().parse().ok()?;
    u32::try_from(v).ok().filter(|&v| v > 0)
}

fn max_prefix(addr: IpAddr) -> u8 {
    if addr.is_ipv4() {
        32
    } else {
        128
    }
}

/// The prefix length of a netmask (its leading one bits).
pub(crate) fn prefix_of(mask: IpAddr) -> u8 {
    match mask {
        IpAddr::V4(m) => u32::from(m).leading_ones() as u8,
        IpAddr::V6(m) => u128::from(m).leading_ones() as u8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_from_masks() {
        assert_eq!(prefix_of("255.255.255.0".parse().unwrap()), 24);
        assert_eq!(prefix_of("255.0.0.0".parse().unwrap()), 8);
        assert_eq!(prefix_of("0.0.0.0".parse().unwrap()), 0);
        assert_eq!(prefix_of("255.255.255.255".parse().unwrap()), 32);
        assert_eq!(prefix_of("ffff:ffff:ffff:ffff::".parse().unwrap()), 64);
    }

    #[test]
    fn speeds() {
        assert_eq!(parse_speed("10000\n"), Some(10_000));
        assert_eq!(parse_speed("-1\n"), None);
        assert_eq!(parse_speed("0"), None);
        assert_eq!(parse_speed("garbage"), None);
        assert_eq!(link_speed_mbps("../etc"), None);
    }

    #[test]
    fn this_host_has_loopback() {
        let ifs = local_interfaces().expect("getifaddrs");
        let lo = ifs
            .iter()
            .find(|i| i.addr == IpAddr::from([127, 0, 0, 1]))
            .expect("127.0.0.1 is configured");
        assert!(lo.is_loopback());
        assert!(lo.up);
        assert_eq!(lo.prefix_len, 8);
        assert!(lo.index > 0);
    }
}
