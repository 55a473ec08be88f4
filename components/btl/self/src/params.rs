//! Parameters of the self btl (full names `btl_self_<name>`), with Open
//! MPI's names and defaults, and the module description they produce.
//!
//! The self btl has only the parameters every btl has, declared by the btl
//! framework ([`CommonParams`]); this file gives their defaults and help
//! texts.

use oxmpi_framework_btl::common::{CommonParams, CommonSpec, Setting};
use oxmpi_framework_btl::module::{flags, BtlModuleInfo};
use oxmpi_plugin_api::Params;

/// The self btl's settings of the common btl parameters. Exclusivity 65536
/// is Open MPI's "high" exclusivity, so the pml never uses another btl to
/// reach its own process; bandwidth 100 is Open MPI's value (it only
/// matters against other btls reaching the same peer, and none does because
/// of the exclusivity); flags: send only (the self btl offers no get/put).
pub const COMMON: CommonSpec = CommonSpec {
    exclusivity: Setting::with_help(
        "65536",
        "Exclusivity of the self btl: for each peer the pml uses only the btls with the highest exclusivity that reach it. The default (65536, high) makes self the only btl used for a process's messages to itself.",
    ),
    eager_limit: Setting::with_help(
        "1024",
        "Largest message, in bytes, the pml sends to its own process in one eager fragment; larger messages use the rendezvous protocol. At least 1.",
    ),
    rndv_eager_limit: Setting::with_help(
        "128k",
        "Bytes of a larger message carried by its first (rendezvous) fragment on the self btl. At least 1.",
    ),
    max_send_size: Setting::with_help(
        "16k",
        "Largest payload, in bytes, of one fragment after the rendezvous on the self btl. At least 1.",
    ),
    latency: Setting::with_help("0", "Latency rating of the self btl (lower is faster)."),
    bandwidth: Setting::with_help(
        "100",
        "Bandwidth rating of the self btl in Mbit/s, used to weigh btls that reach the same peer.",
    ),
    flags: Setting::with_help(
        "1",
        "Capabilities of the self btl as a bit set: 0x1 send. The self btl only sends (this version has no put or get), so other bits are ignored with a notice; the send bit is required.",
    ),
};

/// The self btl's parameter values: `Config::DECLS` is the table exported
/// in the root module, `Config::read` reads them through the core.
#[derive(Params, Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// `btl_self_exclusivity`, `_eager_limit`, `_rndv_eager_limit`,
    /// `_max_send_size`, `_latency`, `_bandwidth` and `_flags` (`flags` as
    /// set, before unsupported bits are dropped).
    #[param(group = COMMON)]
    pub btl: CommonParams,
}

impl Config {
    /// The module description, and a notice if `flags` asked for
    /// capabilities the self btl does not have (they are dropped).
    ///
    /// Errors: a size of 0, or flags without the send bit.
    pub fn module_info(&self) -> Result<(BtlModuleInfo, Option<String>), String> {
        let defaults = Config::default().btl;
        let size = |name: &str, value: usize, default: usize| -> Result<usize, String> {
            if value == 0 {
                return Err(format!(
                    "btl_self_{name} is 0; it must be at least 1 byte (default {default})"
                ));
            }
            Ok(value)
        };
        let p = &self.btl;
        let eager_limit = size("eager_limit", p.eager_limit, defaults.eager_limit)?;
        let rndv_eager_limit = size(
            "rndv_eager_limit",
            p.rndv_eager_limit,
            defaults.rndv_eager_limit,
        )?;
        let max_send_size = size("max_send_size", p.max_send_size, defaults.max_send_size)?;
        if p.flags & flags::SEND == 0 {
            return Err(format!(
                "btl_self_flags = {:#x} lacks the send bit (0x1), and sending is the only way the self btl moves data; set btl_self_flags to 1 (the default)",
                p.flags
            ));
        }
        let notice = (p.flags != flags::SEND).then(|| {
            format!(
                "btl_self_flags = {:#x} asks for capabilities the self btl does not have (it only sends); using {:#x}",
                p.flags,
                flags::SEND
            )
        });
        Ok((
            BtlModuleInfo {
                label: "self".into(),
                eager_limit,
                rndv_eager_limit,
                max_send_size,
                exclusivity: p.exclusivity,
                latency: p.latency,
                bandwidth: p.bandwidth,
                // Loopback: the pml may deliver what it sends itself
                // during the send (see `flags::LOOPBACK`).
                flags: flags::SEND | flags::LOOPBACK,
                max_rdma_size: 0,
                min_rdma_message: 0,
            },
            notice,
        ))
    }
}
