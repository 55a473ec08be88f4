//! IP interfaces as data: one [`Interface`] per address of a network
//! device, and [`Cidr`] networks.
//!
//! Nothing here asks the operating system anything. The tcp component
//! enumerates the local interfaces (getifaddrs, ethtool speed, parameter
//! overrides such as `btl_tcp_bandwidth_<if>`) and reads the remote ones
//! from the peer's contact card; it hands both to
//! [`IfSelection::select`](crate::if_list::IfSelection::select) and
//! [`pair_interfaces`](crate::matching::pair_interfaces) as plain values.
//!
//! An interface entry is one *address* on one *device*, the way
//! `getifaddrs` reports them: a device with two IPv4 addresses is two
//! entries with the same [`Interface::index`]; an alias address carries the
//! alias label as its name (`eth0:1`, reference 001 §13/§14).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Bandwidth assumed for an interface whose speed is unknown, in Mbit/s.
///
/// Open MPI uses the ethtool speed of the device, or this value when the
/// speed cannot be read (its `MCA_BTL_TCP_BTL_BANDWIDTH`).
pub const DEFAULT_BANDWIDTH_MBPS: u32 = 100;

/// One address of one network device, local or remote.
///
/// Fields are public so the tcp component can build entries from whatever
/// it reads; [`Interface::new`] fills in the usual defaults.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Interface {
    /// The name `getifaddrs` reports for this address: the device name
    /// (`eth0`) or, for an address added with an alias label, the label
    /// (`eth0:1`). The part before `:` is the device ([`Interface::device`]).
    pub name: String,
    /// The kernel interface index of the device. Entries with the same
    /// index are addresses of one device (aliases share their device's
    /// index). For a remote interface, the index the peer published.
    pub index: u32,
    /// The address.
    pub addr: IpAddr,
    /// The length of the network prefix (the netmask), 0–32 for IPv4 and
    /// 0–128 for IPv6. Larger values are treated as the maximum.
    pub prefix_len: u8,
    /// Whether the device is up (`IFF_UP`). Down interfaces are never
    /// selected. Default `true`.
    pub up: bool,
    /// Whether the device is a loopback device (`IFF_LOOPBACK`). A loopback
    /// *address* (127.0.0.0/8, `::1`) counts as loopback too, whatever this
    /// flag says ([`Interface::is_loopback`]). Default: whether `addr` is a
    /// loopback address.
    pub loopback: bool,
    /// Bandwidth in Mbit/s, used by the reachability weights. Default
    /// [`DEFAULT_BANDWIDTH_MBPS`]. 0 means unknown.
    pub bandwidth_mbps: u32,
}

impl Interface {
    /// An up interface with the default bandwidth; `loopback` is set when
    /// `addr` is a loopback address.
    pub fn new(name: impl Into<String>, index: u32, addr: IpAddr, prefix_len: u8) -> Self {
        Interface {
            name: name.into(),
            index,
            addr,
            prefix_len,
            up: true,
            loopback: addr.is_loopback(),
            bandwidth_mbps: DEFAULT_BANDWIDTH_MBPS,
        }
    }

    /// Parses `addr/prefix` (`"10.8.47.1/24"`) for [`Interface::new`].
    ///
    /// # Errors
    ///
    /// [`CidrError`] when `addr_prefix` is not an address with a prefix
    /// length (host bits may be set: this is an interface address, not a
    /// network).
    pub fn parse(
        name: impl Into<String>,
        index: u32,
        addr_prefix: &str,
    ) -> Result<Self, CidrError> {
        let (addr, prefix_len) = parse_addr_prefix(addr_prefix)?;
        Ok(Interface::new(name, index, addr, prefix_len))
    }

    /// The same interface with `bandwidth_mbps` set.
    #[must_use]
    pub fn with_bandwidth(mut self, mbps: u32) -> Self {
        self.bandwidth_mbps = mbps;
        self
    }

    /// The same interface with `up` set.
    #[must_use]
    pub fn with_up(mut self, up: bool) -> Self {
        self.up = up;
        self
    }

    /// The same interface with the loopback flag set.
    #[must_use]
    pub fn with_loopback(mut self, loopback: bool) -> Self {
        self.loopback = loopback;
        self
    }

    /// The device name: the name up to its first `:` (`eth0` for `eth0:1`).
    pub fn device(&self) -> &str {
        device_of(&self.name)
    }

    /// The alias label after the device name (`1` for `eth0:1`), if any.
    pub fn alias(&self) -> Option<&str> {
        self.name.split_once(':').map(|(_, alias)| alias)
    }

    /// Whether this is a loopback interface: the loopback flag, or a
    /// loopback address.
    pub fn is_loopback(&self) -> bool {
        self.loopback || self.addr.is_loopback()
    }

    /// Whether the address is an IPv6 link-local address (`fe80::/10`).
    pub fn is_ipv6_link_local(&self) -> bool {
        matches!(self.addr, IpAddr::V6(a) if is_ipv6_link_local(&a))
    }

    /// The network the interface is on: its address with the host bits
    /// cleared, and its prefix length.
    pub fn network(&self) -> Cidr {
        Cidr::network_of(self.addr, self.prefix_len)
    }
}

impl fmt::Display for Interface {
    /// `eth0 10.8.47.1/24`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}/{}",
            self.name,
            self.addr,
            self.prefix_len.min(max_prefix(self.addr))
        )
    }
}

/// The device part of an interface name (up to the first `:`).
pub(crate) fn device_of(name: &str) -> &str {
    name.split_once(':').map_or(name, |(device, _)| device)
}

/// An IP network in CIDR notation: an address whose host bits are all
/// clear, and a prefix length.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Cidr {
    addr: IpAddr,
    prefix_len: u8,
}

impl Cidr {
    /// The network containing `addr` with a `prefix_len`-bit prefix (host
    /// bits cleared; a prefix beyond the family's width is clamped).
    pub fn network_of(addr: IpAddr, prefix_len: u8) -> Cidr {
        let prefix_len = prefix_len.min(max_prefix(addr));
        Cidr {
            addr: mask(addr, prefix_len),
            prefix_len,
        }
    }

    /// Parses `a.b.c.d/len` or `ipv6/len` as a network.
    ///
    /// # Errors
    ///
    /// [`CidrError`] when there is no `/len`, the address or length does not
    /// parse, the length exceeds the family's width, or host bits are set
    /// (`192.168.1.5/24`: the error names the network, `192.168.1.0/24`).
    pub fn parse(text: &str) -> Result<Cidr, CidrError> {
        let (addr, prefix_len) = parse_addr_prefix(text)?;
        let cidr = Cidr::network_of(addr, prefix_len);
        if cidr.addr != addr {
            return Err(CidrError::HostBitsSet {
                text: text.to_owned(),
                network: cidr,
            });
        }
        Ok(cidr)
    }

    /// The network address.
    pub fn addr(&self) -> IpAddr {
        self.addr
    }

    /// The prefix length.
    pub fn prefix_len(&self) -> u8 {
        self.prefix_len
    }

    /// Whether `addr` lies inside this network (same family, same first
    /// `prefix_len` bits).
    pub fn contains(&self, addr: IpAddr) -> bool {
        addr.is_ipv4() == self.addr.is_ipv4() && mask(addr, self.prefix_len) == self.addr
    }

    /// Whether `other` is this network or a smaller network inside it.
    pub fn covers(&self, other: &Cidr) -> bool {
        other.prefix_len >= self.prefix_len && self.contains(other.addr)
    }
}

impl fmt::Display for Cidr {
    /// `192.168.1.0/24`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix_len)
    }
}

/// Why a CIDR or `address/prefix` text does not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CidrError {
    /// No `/len` part.
    MissingPrefix {
        /// The text as given.
        text: String,
    },
    /// The part before `/` is not an IPv4 or IPv6 address.
    BadAddress {
        /// The text as given.
        text: String,
    },
    /// The part after `/` is not a number within the family's width (32 for
    /// IPv4, 128 for IPv6).
    BadPrefix {
        /// The text as given.
        text: String,
        /// The family's maximum prefix length.
        max: u8,
    },
    /// A network with host bits set (`192.168.1.5/24`).
    HostBitsSet {
        /// The text as given.
        text: String,
        /// The network it probably means (`192.168.1.0/24`).
        network: Cidr,
    },
}

impl fmt::Display for CidrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CidrError::MissingPrefix { text } => write!(
                f,
                "\"{text}\" has no prefix length: write a network as address/length, e.g. 192.168.1.0/24"
            ),
            CidrError::BadAddress { text } => {
                write!(f, "\"{text}\": the part before '/' is not an IPv4 or IPv6 address")
            }
            CidrError::BadPrefix { text, max } => write!(
                f,
                "\"{text}\": the prefix length after '/' must be a number from 0 to {max}"
            ),
            CidrError::HostBitsSet { text, network } => write!(
                f,
                "\"{text}\" is not a network address (host bits are set): the network is {network}"
            ),
        }
    }
}

impl std::error::Error for CidrError {}

/// Parses `addr/len` without checking host bits.
fn parse_addr_prefix(text: &str) -> Result<(IpAddr, u8), CidrError> {
    let Some((addr_text, len_text)) = text.split_once('/') else {
        return Err(CidrError::MissingPrefix {
            text: text.to_owned(),
        });
    };
    let addr: IpAddr = addr_text.parse().map_err(|_| CidrError::BadAddress {
        text: text.to_owned(),
    })?;
    let max = max_prefix(addr);
    let bad_prefix = || CidrError::BadPrefix {
        text: text.to_owned(),
        max,
    };
    // Digits only: `u8::from_str` would accept "+24".
    if len_text.is_empty() || len_text.len() > 3 || !len_text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad_prefix());
    }
    let len: u8 = len_text.parse().map_err(|_| bad_prefix())?;
    if len > max {
        return Err(bad_prefix());
    }
    Ok((addr, len))
}

/// 32 for IPv4, 128 for IPv6.
pub(crate) fn max_prefix(addr: IpAddr) -> u8 {
    match addr {
        IpAddr::V4(_) => 32,
        IpAddr::V6(_) => 128,
    }
}

/// `addr` with all but the first `prefix_len` bits cleared.
pub(crate) fn mask(addr: IpAddr, prefix_len: u8) -> IpAddr {
    match addr {
        IpAddr::V4(a) => {
            let bits = u32::from(a);
            let len = u32::from(prefix_len.min(32));
            let kept = bits
                .checked_shr(32 - len)
                .unwrap_or(0)
                .checked_shl(32 - len);
            IpAddr::V4(Ipv4Addr::from(kept.unwrap_or(0)))
        }
        IpAddr::V6(a) => {
            let bits = u128::from(a);
            let len = u32::from(prefix_len.min(128));
            let kept = bits
                .checked_shr(128 - len)
                .unwrap_or(0)
                .checked_shl(128 - len);
            IpAddr::V6(Ipv6Addr::from(kept.unwrap_or(0)))
        }
    }
}

/// `fe80::/10`.
pub(crate) fn is_ipv6_link_local(addr: &Ipv6Addr) -> bool {
    addr.segments()[0] & 0xffc0 == 0xfe80
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn mask_clears_host_bits() {
        assert_eq!(mask(ip("192.168.1.77"), 24), ip("192.168.1.0"));
        assert_eq!(mask(ip("192.168.1.77"), 16), ip("192.168.0.0"));
        assert_eq!(mask(ip("192.168.1.77"), 0), ip("0.0.0.0"));
        assert_eq!(mask(ip("192.168.1.77"), 32), ip("192.168.1.77"));
        assert_eq!(mask(ip("172.31.255.1"), 12), ip("172.16.0.0"));
        assert_eq!(mask(ip("fe80::1:2:3:4"), 64), ip("fe80::"));
        assert_eq!(mask(ip("2001:db8::1"), 128), ip("2001:db8::1"));
        assert_eq!(mask(ip("2001:db8::1"), 0), ip("::"));
        // Out-of-range prefixes are clamped, not a panic.
        assert_eq!(mask(ip("10.1.2.3"), 200), ip("10.1.2.3"));
    }

    #[test]
    fn cidr_parse_accepts_networks() {
        let c = Cidr::parse("192.168.1.0/24").unwrap();
        assert_eq!(c.addr(), ip("192.168.1.0"));
        assert_eq!(c.prefix_len(), 24);
        assert_eq!(c.to_string(), "192.168.1.0/24");
        assert_eq!(Cidr::parse("0.0.0.0/0").unwrap().prefix_len(), 0);
        assert_eq!(Cidr::parse("fe80::/64").unwrap().to_string(), "fe80::/64");
        assert_eq!(Cidr::parse("10.1.2.3/32").unwrap().prefix_len(), 32);
    }

    #[test]
    fn cidr_parse_errors_say_what_is_wrong() {
        assert!(matches!(
            Cidr::parse("10.0.0.0"),
            Err(CidrError::MissingPrefix { .. })
        ));
        assert!(matches!(
            Cidr::parse("10.0.0/8"),
            Err(CidrError::BadAddress { .. })
        ));
        assert!(matches!(
            Cidr::parse("10.0.0.0/33"),
            Err(CidrError::BadPrefix { max: 32, .. })
        ));
        assert!(matches!(
            Cidr::parse("10.0.0.0/+8"),
            Err(CidrError::BadPrefix { .. })
        ));
        assert!(matches!(
            Cidr::parse("10.0.0.0/"),
            Err(CidrError::BadPrefix { .. })
        ));
        assert!(matches!(
            Cidr::parse("::/129"),
            Err(CidrError::BadPrefix { max: 128, .. })
        ));
        let err = Cidr::parse("192.168.1.5/24").unwrap_err();
        assert_eq!(
            err,
            CidrError::HostBitsSet {
                text: "192.168.1.5/24".into(),
                network: Cidr::parse("192.168.1.0/24").unwrap()
            }
        );
        assert!(err.to_string().contains("the network is 192.168.1.0/24"));
    }

    #[test]
    fn cidr_contains_and_covers() {
        let c = Cidr::parse("192.168.0.0/16").unwrap();
        assert!(c.contains(ip("192.168.1.1")));
        assert!(!c.contains(ip("192.169.0.1")));
        assert!(!c.contains(ip("::ffff:192.168.1.1")));
        assert!(c.covers(&Cidr::parse("192.168.1.0/24").unwrap()));
        assert!(!Cidr::parse("192.168.1.0/24").unwrap().covers(&c));
    }

    #[test]
    fn interface_helpers() {
        let i = Interface::parse("eth0:1", 2, "192.168.0.3/24").unwrap();
        assert_eq!(i.device(), "eth0");
        assert_eq!(i.alias(), Some("1"));
        assert_eq!(i.network().to_string(), "192.168.0.0/24");
        assert!(i.up && !i.is_loopback());
        assert_eq!(i.bandwidth_mbps, DEFAULT_BANDWIDTH_MBPS);
        assert_eq!(i.to_string(), "eth0:1 192.168.0.3/24");

        let lo = Interface::parse("lo", 1, "127.0.0.1/8").unwrap();
        assert!(lo.loopback && lo.is_loopback());
        assert_eq!(lo.device(), "lo");
        assert_eq!(lo.alias(), None);
        // A loopback address on a device without the flag is still loopback.
        assert!(Interface::parse("dummy0", 9, "127.0.0.2/8")
            .unwrap()
            .with_loopback(false)
            .is_loopback());

        let ll = Interface::parse("eth0", 2, "fe80::218:aef2:29b4:2c4/64").unwrap();
        assert!(ll.is_ipv6_link_local());
        assert!(!Interface::parse("eth0", 2, "2001:db8::1/64")
            .unwrap()
            .is_ipv6_link_local());
    }
}
