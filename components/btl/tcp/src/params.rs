//! The component's parameters (full names `btl_tcp_<name>`) and the
//! [`Config`] read from them.

use std::time::Duration;

use oxmpi_framework_btl::module::flags;
use oxmpi_plugin_api::{ComponentContext, EnumValue, ParamDecl, ParamType, ParamValue};

use crate::card::MAX_LINKS;

const FAMILY_VALUES: &[EnumValue] = &[
    EnumValue::new(0, "none"),
    EnumValue::new(4, "ipv4"),
    EnumValue::new(6, "ipv6"),
];

/// Smallest nonzero `btl_tcp_sndbuf` / `btl_tcp_rcvbuf` accepted.
pub const MIN_SOCKET_BUFFER: i32 = 16 * 1024;
/// The parameter table exported in the component's root module.
pub static PARAMS: &[ParamDecl] = &[
    ParamDecl::new(
        "if_include",
        ParamType::String,
        "",
        1,
        "Comma-separated list of the interfaces to use: names (eth0, an alias label eth0:1), \
         name patterns (eth*), networks in CIDR notation matched exactly against each \
         interface's own network (192.168.1.0/24 does not match an interface on 192.168.1.0/25), \
         or single addresses. Loopback is used only when this list names it. Mutually exclusive \
         with btl_tcp_if_exclude.",
    ),
    ParamDecl::new(
        "if_exclude",
        ParamType::String,
        "",
        1,
        "Comma-separated list of the interfaces not to use (same items as btl_tcp_if_include; \
         a device name also leaves out its aliases). Loopback is left out whatever this says \
         (unlike Open MPI, whose default exclude list is what leaves it out), so the list need \
         not mention it. Mutually exclusive with btl_tcp_if_include.",
    ),
    ParamDecl::new(
        "links",
        ParamType::Int,
        "1",
        4,
        "Number of tcp modules (and so connections to each peer) per interface. Link 0 gets the \
         interface's bandwidth and latency ratings; every further link half the bandwidth and \
         twice the latency, as in Open MPI.",
    )
    .with_range(1, MAX_LINKS as i64),
    ParamDecl::new(
        "port_min_v4",
        ParamType::Int,
        "1024",
        2,
        "Lowest port to listen on for IPv4. Ports are tried in order from here, so the first \
         free one is used. 0 lets the operating system choose any free port (then \
         btl_tcp_port_range_v4 is not used).",
    )
    .with_range(0, 65535),
    ParamDecl::new(
        "port_range_v4",
        ParamType::Int,
        "64511",
        2,
        "Number of ports tried for IPv4, from btl_tcp_port_min_v4 up (never beyond 65535).",
    )
    .with_range(1, 65535),
    ParamDecl::new(
        "port_min_v6",
        ParamType::Int,
        "1024",
        2,
        "Lowest port to listen on for IPv6; as btl_tcp_port_min_v4.",
    )
    .with_range(0, 65535),
    ParamDecl::new(
        "port_range_v6",
        ParamType::Int,
        "64511",
        2,
        "Number of ports tried for IPv6; as btl_tcp_port_range_v4.",
    )
    .with_range(1, 65535),
    ParamDecl::new(
        "sndbuf",
        ParamType::Int,
        "0",
        4,
        "Socket send buffer size in bytes (SO_SNDBUF); 0 leaves the operating system's default \
         (and its automatic tuning). Otherwise at least 16384: smaller buffers can stall \
         transfers.",
    )
    .with_range(0, i32::MAX as i64),
    ParamDecl::new(
        "rcvbuf",
        ParamType::Int,
        "0",
        4,
        "Socket receive buffer size in bytes (SO_RCVBUF); 0 leaves the operating system's \
         default (and its automatic tuning). Otherwise at least 16384: smaller buffers (the \
         kernel's minimum, about 2 KiB) can stall transfers.",
    )
    .with_range(0, i32::MAX as i64),
    ParamDecl::new(
        "use_nagle",
        ParamType::Bool,
        "false",
        4,
        "Whether to keep Nagle's algorithm on. Off by default: connections set TCP_NODELAY, so \
         small fragments leave at once.",
    ),
    ParamDecl::new(
        "disable_family",
        ParamType::Enum,
        "none",
        2,
        "An address family not to use: none, ipv4 (4) or ipv6 (6).",
    )
    .with_enum(FAMILY_VALUES),
    ParamDecl::new(
        "exclusivity",
        ParamType::Int,
        "100",
        7,
        "Exclusivity of the tcp modules: for each peer the pml uses only the modules of the \
         highest exclusivity that reach it (self is higher).",
    )
    .with_range(0, u32::MAX as i64),
    ParamDecl::new(
        "eager_limit",
        ParamType::Size,
        "64k",
        4,
        "Largest message (payload bytes) the pml sends eagerly over tcp.",
    ),
    ParamDecl::new(
        "rndv_eager_limit",
        ParamType::Size,
        "64k",
        4,
        "Payload bytes the pml sends with the rendezvous header of a large message over tcp.",
    ),
    ParamDecl::new(
        "max_send_size",
        ParamType::Size,
        "128k",
        4,
        "Largest payload of one fragment of a pipelined message over tcp.",
    ),
    ParamDecl::new(
        "latency",
        ParamType::Int,
        "100",
        5,
        "Latency rating of link 0 of each interface (lower is faster; eager sends use the \
         lowest). Further links get twice this.",
    )
    .with_range(0, u32::MAX as i64),
    ParamDecl::new(
        "bandwidth",
        ParamType::Int,
        "0",
        5,
        "Bandwidth rating in Mbit/s of link 0 of each interface (large messages are striped in \
         proportion). 0 reads the link speed from /sys/class/net/<device>/speed, or uses 100 \
         when it is unknown. Further links get half.",
    )
    .with_range(0, u32::MAX as i64),
    ParamDecl::new(
        "flags",
        ParamType::Int,
        "1",
        5,
        "Capability bits of the tcp modules, as Open MPI's btl flags. tcp supports only SEND \
         (0x1); other bits are ignored with a warning.",
    )
    .with_range(0, u32::MAX as i64),
];

/// The resolved parameters (see [`PARAMS`] for each one's meaning).
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// `btl_tcp_if_include`.
    pub if_include: String,
    /// `btl_tcp_if_exclude`.
    pub if_exclude: String,
    /// `btl_tcp_links`, 1–64.
    pub links: u32,
    /// `btl_tcp_port_min_v4`.
    pub port_min_v4: u16,
    /// `btl_tcp_port_range_v4`.
    pub port_range_v4: u32,
    /// `btl_tcp_port_min_v6`.
    pub port_min_v6: u16,
    /// `btl_tcp_port_range_v6`.
    pub port_range_v6: u32,
    /// `btl_tcp_sndbuf` (0: OS default).
    pub sndbuf: i32,
    /// `btl_tcp_rcvbuf` (0: OS default).
    pub rcvbuf: i32,
    /// `btl_tcp_use_nagle`.
    pub use_nagle: bool,
    /// `btl_tcp_disable_family`: 0, 4 or 6.
    pub disable_family: u8,
    /// `btl_tcp_exclusivity`.
    pub exclusivity: u32,
    /// `btl_tcp_eager_limit`.
    pub eager_limit: usize,
    /// `btl_tcp_rndv_eager_limit`.
    pub rndv_eager_limit: usize,
    /// `btl_tcp_max_send_size`.
    pub max_send_size: usize,
    /// `btl_tcp_latency`.
    pub latency: u32,
    /// `btl_tcp_bandwidth` (0: link speed).
    pub bandwidth: u32,
    /// `btl_tcp_flags`.
    pub flags: u32,
    /// How long an accepted connection may take to present its hello
    /// (2 s; not a parameter, tests shorten it).
    pub handshake_timeout: Duration,
}

impl Default for Config {
    /// The declared defaults.
    fn default() -> Self {
        Config {
            if_include: String::new(),
            if_exclude: String::new(),
            links: 1,
            port_min_v4: 1024,
            port_range_v4: 64511,
            port_min_v6: 1024,
            port_range_v6: 64511,
            sndbuf: 0,
            rcvbuf: 0,
            use_nagle: false,
            disable_family: 0,
            exclusivity: 100,
            eager_limit: 64 * 1024,
            rndv_eager_limit: 64 * 1024,
            max_send_size: 128 * 1024,
            latency: 100,
            bandwidth: 0,
            flags: flags::SEND,
            handshake_timeout: Duration::from_secs(2),
        }
    }
}

impl Config {
    /// Reads every parameter through `ctx`. A parameter the core does not
    /// know, or of an unexpected type, keeps its default; integers out of
    /// the declared ranges (which the core enforces) are clamped.
    pub fn read(ctx: &ComponentContext) -> Config {
        let d = Config::default();
        let int = |name: &str, default: i64| match ctx.param(name) {
            Some(ParamValue::Int(v)) => v,
            Some(ParamValue::Size(v)) => i64::try_from(v).unwrap_or(i64::MAX),
            _ => default,
        };
        let size = |name: &str, default: usize| match ctx.param(name) {
            Some(ParamValue::Size(v)) => usize::try_from(v).unwrap_or(usize::MAX),
            Some(ParamValue::Int(v)) => usize::try_from(v).unwrap_or(0),
            _ => default,
        };
        let string = |name: &str| match ctx.param(name) {
            Some(ParamValue::Str(s)) => s.into_string(),
            Some(ParamValue::List(items)) => items
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(","),
            _ => String::new(),
        };
        let clamp_u32 = |v: i64| v.clamp(0, i64::from(u32::MAX)) as u32;
        Config {
            if_include: string("if_include"),
            if_exclude: string("if_exclude"),
            links: int("links", 1).clamp(1, i64::from(MAX_LINKS)) as u32,
            port_min_v4: int("port_min_v4", 1024).clamp(0, 65535) as u16,
            port_range_v4: int("port_range_v4", 64511).clamp(1, 65535) as u32,
            port_min_v6: int("port_min_v6", 1024).clamp(0, 65535) as u16,
            port_range_v6: int("port_range_v6", 64511).clamp(1, 65535) as u32,
            sndbuf: int("sndbuf", 0).clamp(0, i64::from(i32::MAX)) as i32,
            rcvbuf: int("rcvbuf", 0).clamp(0, i64::from(i32::MAX)) as i32,
            use_nagle: matches!(ctx.param("use_nagle"), Some(ParamValue::Bool(true))),
            disable_family: match int("disable_family", 0) {
                4 => 4,
                6 => 6,
                _ => 0,
            },
            exclusivity: clamp_u32(int("exclusivity", 100)),
            eager_limit: size("eager_limit", d.eager_limit),
            rndv_eager_limit: size("rndv_eager_limit", d.rndv_eager_limit),
            max_send_size: size("max_send_size", d.max_send_size),
            latency: clamp_u32(int("latency", 100)),
            bandwidth: clamp_u32(int("bandwidth", 0)),
            flags: clamp_u32(int("flags", i64::from(flags::SEND))),
            handshake_timeout: d.handshake_timeout,
        }
    }

    /// Checks the values that no declared range covers.
    ///
    /// # Errors
    ///
    /// A message naming the parameter and what to do.
    pub fn check(&self) -> Result<(), String> {
        for (name, value) in [
            ("btl_tcp_eager_limit", self.eager_limit),
            ("btl_tcp_rndv_eager_limit", self.rndv_eager_limit),
            ("btl_tcp_max_send_size", self.max_send_size),
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

    #[test]
    fn declarations_are_well_formed_and_defaults_parse() {
        for decl in PARAMS {
            let full = format!("btl_tcp_{}", decl.name);
            assert_eq!(oxmpi_mca::registry::check_decl(&full, decl), None);
            oxmpi_mca::value::parse(decl, decl.default.as_str(), None)
                .unwrap_or_else(|e| panic!("default of {full}: {e:?}"));
        }
    }

    #[test]
    fn defaults_match_the_declarations() {
        let d = Config::default();
        let default_of = |name: &str| {
            PARAMS
                .iter()
                .find(|p| p.name.as_str() == name)
                .unwrap()
                .default
                .as_str()
        };
        assert_eq!(default_of("links"), d.links.to_string());
        assert_eq!(default_of("port_min_v4"), d.port_min_v4.to_string());
        assert_eq!(default_of("port_range_v4"), d.port_range_v4.to_string());
        assert_eq!(default_of("exclusivity"), d.exclusivity.to_string());
        assert_eq!(default_of("latency"), d.latency.to_string());
        assert_eq!(default_of("bandwidth"), d.bandwidth.to_string());
        assert_eq!(default_of("flags"), d.flags.to_string());
        assert_eq!(
            (d.eager_limit, d.rndv_eager_limit, d.max_send_size),
            (65536, 65536, 131072)
        );
        assert_eq!(default_of("eager_limit"), "64k");
        assert_eq!(default_of("max_send_size"), "128k");
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
    }
}
