//! Parameters of the self btl (full names `btl_self_<name>`), with Open
//! MPI's names and defaults, and the module description they produce.

use oxmpi_framework_btl::module::{flags, BtlModuleInfo};
use oxmpi_plugin_api::{ComponentContext, ParamDecl, ParamType, ParamValue};

/// Default of `btl_self_exclusivity`: Open MPI's "high" exclusivity, so
/// the pml never uses another btl to reach its own process.
pub const DEFAULT_EXCLUSIVITY: u32 = 65536;
/// Default of `btl_self_eager_limit` (bytes).
pub const DEFAULT_EAGER_LIMIT: u64 = 1024;
/// Default of `btl_self_rndv_eager_limit` (bytes).
pub const DEFAULT_RNDV_EAGER_LIMIT: u64 = 128 * 1024;
/// Default of `btl_self_max_send_size` (bytes).
pub const DEFAULT_MAX_SEND_SIZE: u64 = 16 * 1024;
/// Default of `btl_self_latency`.
pub const DEFAULT_LATENCY: u32 = 0;
/// Default of `btl_self_bandwidth` (Mbit/s), Open MPI's value. It only
/// matters against other btls reaching the same peer, and none does
/// because of the exclusivity.
pub const DEFAULT_BANDWIDTH: u32 = 100;
/// Default of `btl_self_flags`: send only (interface 1.0 has no RDMA).
pub const DEFAULT_FLAGS: u32 = flags::SEND;

/// The parameter table exported in the component's root module.
pub static PARAMS: &[ParamDecl] = &[
    ParamDecl::new(
        "exclusivity",
        ParamType::Int,
        "65536",
        7,
        "Exclusivity of the self btl: for each peer the pml uses only the btls with the highest exclusivity that reach it. The default (65536, high) makes self the only btl used for a process's messages to itself.",
    )
    .with_range(0, u32::MAX as i64),
    ParamDecl::new(
        "eager_limit",
        ParamType::Size,
        "1024",
        4,
        "Largest message, in bytes, the pml sends to its own process in one eager fragment; larger messages use the rendezvous protocol. At least 1.",
    ),
    ParamDecl::new(
        "rndv_eager_limit",
        ParamType::Size,
        "128k",
        4,
        "Bytes of a larger message carried by its first (rendezvous) fragment on the self btl. At least 1.",
    ),
    ParamDecl::new(
        "max_send_size",
        ParamType::Size,
        "16k",
        4,
        "Largest payload, in bytes, of one fragment after the rendezvous on the self btl. At least 1.",
    ),
    ParamDecl::new(
        "latency",
        ParamType::Int,
        "0",
        5,
        "Latency rating of the self btl (lower is faster).",
    )
    .with_range(0, u32::MAX as i64),
    ParamDecl::new(
        "bandwidth",
        ParamType::Int,
        "100",
        5,
        "Bandwidth rating of the self btl in Mbit/s, used to weigh btls that reach the same peer.",
    )
    .with_range(0, u32::MAX as i64),
    ParamDecl::new(
        "flags",
        ParamType::Int,
        "1",
        5,
        "Capabilities of the self btl as a bit set: 0x1 send. The self btl only sends (this version has no put or get), so other bits are ignored with a notice; the send bit is required.",
    )
    .with_range(0, u32::MAX as i64),
];

/// The self btl's parameter values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    /// `btl_self_exclusivity`.
    pub exclusivity: u32,
    /// `btl_self_eager_limit`.
    pub eager_limit: u64,
    /// `btl_self_rndv_eager_limit`.
    pub rndv_eager_limit: u64,
    /// `btl_self_max_send_size`.
    pub max_send_size: u64,
    /// `btl_self_latency`.
    pub latency: u32,
    /// `btl_self_bandwidth`.
    pub bandwidth: u32,
    /// `btl_self_flags`, as set (before unsupported bits are dropped).
    pub flags: u32,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            exclusivity: DEFAULT_EXCLUSIVITY,
            eager_limit: DEFAULT_EAGER_LIMIT,
            rndv_eager_limit: DEFAULT_RNDV_EAGER_LIMIT,
            max_send_size: DEFAULT_MAX_SEND_SIZE,
            latency: DEFAULT_LATENCY,
            bandwidth: DEFAULT_BANDWIDTH,
            flags: DEFAULT_FLAGS,
        }
    }
}

fn read_u32(ctx: &ComponentContext, name: &str, default: u32) -> u32 {
    match ctx.param(name) {
        Some(ParamValue::Int(v)) => u32::try_from(v).unwrap_or(default),
        _ => default,
    }
}

fn read_size(ctx: &ComponentContext, name: &str, default: u64) -> u64 {
    match ctx.param(name) {
        Some(ParamValue::Size(v)) => v,
        _ => default,
    }
}

impl Params {
    /// Reads every parameter through `ctx`. A parameter the core does not
    /// know, of an unexpected type or out of range (the core enforces the
    /// declared ranges) keeps its default.
    pub fn read(ctx: &ComponentContext) -> Params {
        let d = Params::default();
        Params {
            exclusivity: read_u32(ctx, "exclusivity", d.exclusivity),
            eager_limit: read_size(ctx, "eager_limit", d.eager_limit),
            rndv_eager_limit: read_size(ctx, "rndv_eager_limit", d.rndv_eager_limit),
            max_send_size: read_size(ctx, "max_send_size", d.max_send_size),
            latency: read_u32(ctx, "latency", d.latency),
            bandwidth: read_u32(ctx, "bandwidth", d.bandwidth),
            flags: read_u32(ctx, "flags", d.flags),
        }
    }

    /// The module description, and a notice if `flags` asked for
    /// capabilities the self btl does not have (they are dropped).
    ///
    /// Errors: a size of 0 or one that does not fit this machine's address
    /// space, or flags without the send bit.
    pub fn module_info(&self) -> Result<(BtlModuleInfo, Option<String>), String> {
        let size = |name: &str, value: u64| -> Result<usize, String> {
            if value == 0 {
                return Err(format!(
                    "btl_self_{name} is 0; it must be at least 1 byte (default {})",
                    match name {
                        "eager_limit" => DEFAULT_EAGER_LIMIT,
                        "rndv_eager_limit" => DEFAULT_RNDV_EAGER_LIMIT,
                        _ => DEFAULT_MAX_SEND_SIZE,
                    }
                ));
            }
            usize::try_from(value).map_err(|_| {
                format!(
                    "btl_self_{name} = {value} does not fit this machine's address space; set a smaller value"
                )
            })
        };
        let eager_limit = size("eager_limit", self.eager_limit)?;
        let rndv_eager_limit = size("rndv_eager_limit", self.rndv_eager_limit)?;
        let max_send_size = size("max_send_size", self.max_send_size)?;
        if self.flags & flags::SEND == 0 {
            return Err(format!(
                "btl_self_flags = {:#x} lacks the send bit (0x1), and sending is the only way the self btl moves data; set btl_self_flags to 1 (the default)",
                self.flags
            ));
        }
        let notice = (self.flags != flags::SEND).then(|| {
            format!(
                "btl_self_flags = {:#x} asks for capabilities the self btl does not have (it only sends); using {:#x}",
                self.flags,
                flags::SEND
            )
        });
        Ok((
            BtlModuleInfo {
                label: "self".into(),
                eager_limit,
                rndv_eager_limit,
                max_send_size,
                exclusivity: self.exclusivity,
                latency: self.latency,
                bandwidth: self.bandwidth,
                flags: flags::SEND,
            },
            notice,
        ))
    }
}
