//! The component's parameters (full names `btl_tcp_<name>`), declared
//! once on [`Config`]: `Config::DECLS` is the table exported in the root
//! module, `Config::default()` the declared defaults and `Config::read` the
//! values the core resolved. The parameters every btl has are the btl
//! framework's ([`CommonParams`]), registered with tcp's defaults
//! ([`COMMON`]).

use std::time::Duration;

use oxmpi_framework_btl::common::{CommonParams, CommonSpec, Setting};
use oxmpi_plugin_api::{ParamEnum, Params};

use crate::card::MAX_LINKS;

/// Smallest nonzero `btl_tcp_sndbuf` / `btl_tcp_rcvbuf` accepted.
pub const MIN_SOCKET_BUFFER: i32 = 16 * 1024;

/// An address family `btl_tcp_disable_family` leaves out.
#[derive(ParamEnum, Copy, Clone, Debug, PartialEq, Eq)]
pub enum Family {
    /// Both families are used.
    None = 0,
    /// IPv4 is not used.
    Ipv4 = 4,
    /// IPv6 is not used.
    Ipv6 = 6,
}

/// The full names of tcp's interface lists, for the messages of
/// [`IfSelection::parse`](oxmpi_netif::if_list::IfSelection::parse).
pub const IF_PARAMS: oxmpi_netif::if_list::ParamNames = oxmpi_netif::if_list::ParamNames {
    include: "btl_tcp_if_include",
    exclude: "btl_tcp_if_exclude",
};

/// tcp's settings of the common btl parameters.
pub const COMMON: CommonSpec = CommonSpec {
    exclusivity: Setting::with_help(
        "100",
        "Exclusivity of the tcp modules: for each peer the pml uses only the modules of the \
         highest exclusivity that reach it (self is higher).",
    ),
    eager_limit: Setting::with_help(
        "64k",
        "Largest message (payload bytes) the pml sends eagerly over tcp.",
    ),
    rndv_eager_limit: Setting::with_help(
        "64k",
        "Payload bytes the pml sends with the rendezvous header of a large message over tcp.",
    ),
    max_send_size: Setting::with_help(
        "128k",
        "Largest payload of one fragment of a pipelined message over tcp.",
    ),
    latency: Setting::with_help(
        "100",
        "Latency rating of link 0 of each interface (lower is faster; eager sends use the \
         lowest). Further links get twice this.",
    ),
    bandwidth: Setting::with_help(
        "0",
        "Bandwidth rating in Mbit/s of link 0 of each interface (large messages are striped in \
         proportion). 0 reads the link speed from /sys/class/net/<device>/speed, or uses 100 \
         when it is unknown. Further links get half.",
    ),
    flags: Setting::with_help(
        "1",
        "Capability bits of the tcp modules, as Open MPI's btl flags. tcp supports only SEND \
         (0x1); other bits are ignored with a warning.",
    ),
};

/// The resolved parameters. Each field's doc comment is its help text.
#[derive(Params, Clone, Debug, PartialEq)]
pub struct Config {
    /// Comma-separated list of the interfaces to use: names (eth0, an alias label eth0:1),
    /// name patterns (eth*), networks in CIDR notation matched exactly against each
    /// interface's own network (192.168.1.0/24 does not match an interface on 192.168.1.0/25),
    /// or single addresses. Loopback is used only when this list names it. Mutually exclusive
    /// with btl_tcp_if_exclude.
    #[param(default = "", level = User(Basic))]
    pub if_include: String,
    /// Comma-separated list of the interfaces not to use (same items as btl_tcp_if_include;
    /// a device name also leaves out its aliases). Loopback is left out whatever this says
    /// (unlike Open MPI, whose default exclude list is what leaves it out), so the list need
    /// not mention it. Mutually exclusive with btl_tcp_if_include.
    #[param(default = "", level = User(Basic))]
    pub if_exclude: String,
    /// Number of tcp modules (and so connections to each peer) per interface. Link 0 gets the
    /// interface's bandwidth and latency ratings; every further link half the bandwidth and
    /// twice the latency, as in Open MPI.
    #[param(default = "1", level = Tuner(Basic), range = 1..=MAX_LINKS)]
    pub links: u32,
    /// Lowest port to listen on for IPv4. Ports are tried in order from here, so the first
    /// free one is used. 0 lets the operating system choose any free port (then
    /// btl_tcp_port_range_v4 is not used).
    #[param(default = "1024", level = User(Detailed), range = 0..=65535)]
    pub port_min_v4: u16,
    /// Number of ports tried for IPv4, from btl_tcp_port_min_v4 up (never beyond 65535).
    #[param(default = "64511", level = User(Detailed), range = 1..=65535)]
    pub port_range_v4: u32,
    /// Lowest port to listen on for IPv6; as btl_tcp_port_min_v4.
    #[param(default = "1024", level = User(Detailed), range = 0..=65535)]
    pub port_min_v6: u16,
    /// Number of ports tried for IPv6; as btl_tcp_port_range_v4.
    #[param(default = "64511", level = User(Detailed), range = 1..=65535)]
    pub port_range_v6: u32,
    /// Socket send buffer size in bytes (SO_SNDBUF); 0 leaves the operating system's default
    /// (and its automatic tuning). Otherwise at least 16384: smaller buffers can stall
    /// transfers.
    #[param(default = "0", level = Tuner(Basic), range = 0..=i32::MAX)]
    pub sndbuf: i32,
    /// Socket receive buffer size in bytes (SO_RCVBUF); 0 leaves the operating system's
    /// default (and its automatic tuning). Otherwise at least 16384: smaller buffers (the
    /// kernel's minimum, about 2 KiB) can stall transfers.
    #[param(default = "0", level = Tuner(Basic), range = 0..=i32::MAX)]
    pub rcvbuf: i32,
    /// Whether to keep Nagle's algorithm on. Off by default: connections set TCP_NODELAY, so
    /// small fragments leave at once.
    #[param(default = "false", level = Tuner(Basic))]
    pub use_nagle: bool,
    /// An address family not to use: none, ipv4 (4) or ipv6 (6).
    #[param(default = "none", level = User(Detailed))]
    pub disable_family: Family,
    /// `btl_tcp_exclusivity`, `_eager_limit`, `_rndv_eager_limit`, `_max_send_size`,
    /// `_latency`, `_bandwidth` and `_flags`.
    #[param(group = COMMON)]
    pub btl: CommonParams,
    /// How long an accepted connection may take to present its hello
    /// (2 s; not a parameter, tests shorten it).
    #[param(skip = Duration::from_secs(2))]
    pub handshake_timeout: Duration,
}

impl Config {
    /// Checks the values that no declared range covers.
    ///
    /// # Errors
    ///
    /// A message naming the parameter and what to do.
    pub fn check(&self) -> Result<(), String> {
        for (name, value) in [
            ("btl_tcp_eager_limit", self.btl.eager_limit),
            ("btl_tcp_rndv_eager_limit", self.btl.rndv_eager_limit),
            ("btl_tcp_max_send_size", self.btl.max_send_size),
        ] {
            if value == 0 {
                return Err(format!("{name} is 0; it must be at least 1 byte"));
            }
        }
        for (name, value) in [
            ("btl_tcp_sndbuf", self.sndbuf),
            ("btl_tcp_rcvbuf", self.rcvbuf),
        ] {
            if value > 0 && value < MIN_SOCKET_BUFFER {
                return Err(format!(
                    "{name} is {value} bytes; use 0 (the system's default, which the kernel \
                     tunes) or at least {MIN_SOCKET_BUFFER}: the kernel rounds smaller values up \
                     to a buffer of about 2 KiB, which can stall transfers"
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxmpi_framework_btl::module::flags;
    use oxmpi_plugin_api::value::parse;
    use oxmpi_plugin_api::ParamValue;

    #[test]
    fn declarations_are_well_formed_and_defaults_parse() {
        Config::check_declarations().unwrap();
        for decl in Config::DECLS {
            let full = format!("btl_tcp_{}", decl.name);
            assert_eq!(oxmpi_mca::registry::check_decl(&full, decl), None);
        }
        assert_eq!(Config::DECLS.len(), 18);
    }

    #[test]
    fn interface_list_names_are_the_declared_parameters() {
        for name in [IF_PARAMS.include, IF_PARAMS.exclude] {
            let short = name.strip_prefix("btl_tcp_").unwrap();
            assert!(
                Config::DECLS.iter().any(|d| d.name == short),
                "{name} is not declared"
            );
        }
    }

    #[test]
    fn defaults_are_the_declared_ones() {
        let d = Config::default();
        assert_eq!(
            (
                d.links,
                d.port_min_v4,
                d.port_range_v4,
                d.port_min_v6,
                d.port_range_v6
            ),
            (1, 1024, 64511, 1024, 64511)
        );
        assert_eq!((d.sndbuf, d.rcvbuf, d.use_nagle), (0, 0, false));
        assert_eq!(d.disable_family, Family::None);
        assert_eq!(
            d.btl,
            CommonParams {
                exclusivity: 100,
                eager_limit: 65536,
                rndv_eager_limit: 65536,
                max_send_size: 131072,
                latency: 100,
                bandwidth: 0,
                flags: flags::SEND,
            }
        );
        assert_eq!(d.handshake_timeout, Duration::from_secs(2));
    }

    #[test]
    fn ranges_are_the_cores_to_enforce() {
        let decl = |name: &str| {
            Config::DECLS
                .iter()
                .find(|d| d.name.as_str() == name)
                .unwrap()
        };
        let links = decl("links");
        assert!(parse(links, &(MAX_LINKS + 1).to_string(), None).is_err());
        assert!(parse(links, "0", None).is_err());
        assert!(parse(decl("port_min_v4"), "65536", None).is_err());
        assert!(parse(decl("sndbuf"), "-1", None).is_err());
        assert_eq!(
            parse(decl("disable_family"), "IPv6", None).map(|v| v.to_abi()),
            Ok(ParamValue::Int(6))
        );
        assert!(parse(decl("disable_family"), "5", None).is_err());
    }

    #[test]
    fn socket_buffers_are_zero_or_large_enough() {
        let with = |sndbuf, rcvbuf| Config {
            sndbuf,
            rcvbuf,
            ..Config::default()
        };
        assert_eq!(with(0, 0).check(), Ok(()));
        assert_eq!(with(MIN_SOCKET_BUFFER, 1 << 20).check(), Ok(()));
        let e = with(0, 1).check().unwrap_err();
        assert!(e.starts_with("btl_tcp_rcvbuf is 1 bytes"), "{e}");
        assert!(e.contains("at least 16384"), "{e}");
        let e = with(MIN_SOCKET_BUFFER - 1, 0).check().unwrap_err();
        assert!(e.starts_with("btl_tcp_sndbuf is 16383 bytes"), "{e}");
        let zero = Config {
            btl: CommonParams {
                max_send_size: 0,
                ..Config::default().btl
            },
            ..Config::default()
        };
        assert_eq!(
            zero.check(),
            Err("btl_tcp_max_send_size is 0; it must be at least 1 byte".into())
        );
    }
}
