//! The component's parameters (full names `btl_sm_<name>`), declared once
//! on [`Config`]: `Config::DECLS` is the table exported in the root module,
//! `Config::default()` the declared defaults and `Config::read` the values
//! the core resolved. The parameters every btl has are the btl framework's
//! ([`CommonParams`]), registered with sm's defaults ([`COMMON`]).

use oxmpi_framework_btl::common::{CommonParams, CommonSpec, Setting};
use oxmpi_framework_btl::module::{flags, BtlModuleInfo};
use oxmpi_plugin_api::{ParamEnum, Params};

/// How messages past the eager limit move (`btl_sm_single_copy_mechanism`).
#[derive(ParamEnum, Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mechanism {
    /// Through the shared segment, in fragments of at most
    /// `btl_sm_max_send_size` bytes (two copies).
    None = 0,
    /// Linux cross-memory attach: the receiver reads the sender's buffer
    /// (`process_vm_readv`) or the sender writes the receiver's
    /// (`process_vm_writev`), one copy.
    Cma = 1,
}

/// Largest fragment buffer (`btl_sm_max_send_size`) accepted.
pub const MAX_FRAGMENT: usize = 4 << 20;

/// Largest single get or put the module offers (the pml splits larger
/// transfers).
pub const MAX_RDMA: usize = 1 << 30;

/// sm's settings of the common btl parameters.
pub const COMMON: CommonSpec = CommonSpec {
    exclusivity: Setting::with_help(
        "65535",
        "Exclusivity of the sm module: for each peer the pml uses only the btls of the highest \
         exclusivity that reach it. The default is above tcp's (100), so peers on the same node \
         use shared memory only, and below self's (65536).",
    ),
    eager_limit: Setting::with_help(
        "8k",
        "Largest message (payload bytes) the pml sends to a peer on this node in one eager \
         fragment; larger ones use a rendezvous (and, with cross-memory attach, one copy). \
         At most btl_sm_max_send_size. The default is twice Open MPI's: an 8 KiB message \
         copied through a fragment buffer arrives sooner than the rendezvous and cross-memory \
         read it would otherwise take.",
    ),
    rndv_eager_limit: Setting::with_help(
        "32k",
        "Payload bytes the rendezvous fragment of a large message carries over sm when the \
         message is not moved with one copy. At most btl_sm_max_send_size.",
    ),
    max_send_size: Setting::with_help(
        "32k",
        "Size in bytes of each fragment buffer in the shared segment: the largest payload of one \
         fragment (from 64 bytes to 4 MiB).",
    ),
    latency: Setting::with_help("1", "Latency rating of the sm module (lower is faster)."),
    bandwidth: Setting::with_help(
        "20000",
        "Bandwidth rating of the sm module in Mbit/s, used to weigh btls that reach the same \
         peer.",
    ),
    flags: Setting::with_help(
        "7",
        "Capabilities of the sm module as a bit set: 0x1 send, 0x2 put, 0x4 get. Put and get \
         need btl_sm_single_copy_mechanism = cma and are dropped (with a notice at verbose \
         level) when it is none or cross-memory attach is not allowed; the send bit is \
         required.",
    ),
};

/// The resolved parameters. Each field's doc comment is its help text.
#[derive(Params, Clone, Debug, PartialEq)]
pub struct Config {
    /// How messages past the eager limit move: cma (one copy through Linux cross-memory
    /// attach, process_vm_readv/process_vm_writev) or none (fragments through the shared
    /// segment). When cma is asked for but the kernel or its ptrace policy forbids it, sm uses
    /// none and says so at verbose level (btl_base_verbose 20).
    #[param(default = "cma", level = User(Basic))]
    pub single_copy_mechanism: Mechanism,
    /// Bytes of each fast box: a ring in the receiver's segment written by one sender only, for
    /// small fragments (a fragment whose header and payload take at most half the box). A
    /// multiple of 64, from 256 bytes to 1 MiB. The pages are used only as records reach them;
    /// the default holds a burst of 64 messages of up to about 1 KiB each before their sender
    /// has to wait for the receiver or turn to the receive queue.
    #[param(default = "64k", level = Tuner(Basic), range = 256..=1048576)]
    pub fbox_size: usize,
    /// Number of fast boxes in each process's segment: the first this many peers that send it
    /// btl_sm_fbox_threshold fragments get one; the others use the receive queue only. 0 turns
    /// fast boxes off.
    #[param(default = "32", level = Tuner(Basic), range = 0..=1024)]
    pub fbox_max: u32,
    /// Fragments a process sends to a peer through the receive queue before it asks for a fast
    /// box in that peer's segment (1: at the first fragment).
    #[param(default = "16", level = Tuner(Detailed), range = 1..=1000000)]
    pub fbox_threshold: u32,
    /// Entries of each process's receive queue (a power of two, from 16 to 1048576): how many
    /// fragments may wait for it at once; a sender finding the queue full tries again later.
    #[param(default = "4096", level = Tuner(Detailed), range = 16..=1048576)]
    pub fifo_size: u32,
    /// Fragment buffers of btl_sm_max_send_size bytes in each process's segment (from 4 to
    /// 65536): how many fragments it may have in flight through receive queues at once. The
    /// pages are used only as fragments need them.
    #[param(default = "256", level = Tuner(Detailed), range = 4..=65536)]
    pub free_list_max: u32,
    /// Most fragments one progress call delivers from the receive queue (from 1 to 65536); the
    /// rest wait for the next call, so one busy sender cannot hold a process in its progress.
    #[param(default = "64", level = Tuner(Detailed), range = 1..=65536)]
    pub poll_batch: u32,
    /// Smallest get, in bytes, that the two processes share when single copy is in use: the
    /// receiver reads the first half of the sender's buffer while the sender writes the second
    /// half into the receiver's, so both cores copy at once. If the sender does not start its
    /// half by the time the receiver finished its own, the receiver copies it too. 0 turns
    /// sharing off (the receiver copies everything).
    #[param(default = "64k", level = Tuner(Detailed), range = 0..=1073741824)]
    pub shared_get_min: usize,
    /// Whether a process that has just received a small fragment from a peer it sent something
    /// to since the one before asks the processor for the cache line its next fast-box record to
    /// that peer goes into, in a state it may write (PREFETCHW on x86-64, PRFM PSTL1KEEP on
    /// AArch64). The peer polls that line; a reply written soon after then finds it on its way
    /// instead of first taking it from the peer's cache, which shortens a small-message round
    /// trip. Only alternating traffic (a message, then its answer) does it.
    #[param(default = "true", level = Tuner(Detailed))]
    pub reply_prefetch: bool,
    /// `btl_sm_exclusivity`, `_eager_limit`, `_rndv_eager_limit`, `_max_send_size`,
    /// `_latency`, `_bandwidth` and `_flags`.
    #[param(group = COMMON)]
    pub btl: CommonParams,
}

impl Config {
    /// Checks the values no declared range covers and describes the
    /// module. `single_copy` is whether cross-memory attach is in use
    /// (asked for and allowed); the answer's notice says which flags were
    /// dropped, if any.
    ///
    /// # Errors
    ///
    /// A message naming the parameter and what to do.
    pub fn module_info(
        &self,
        single_copy: bool,
    ) -> Result<(BtlModuleInfo, Option<String>), String> {
        let p = &self.btl;
        if !self.fifo_size.is_power_of_two() {
            return Err(format!(
                "btl_sm_fifo_size is {}; it must be a power of two (for example {})",
                self.fifo_size,
                self.fifo_size.next_power_of_two()
            ));
        }
        if !self.fbox_size.is_multiple_of(64) {
            return Err(format!(
                "btl_sm_fbox_size is {}; it must be a multiple of 64 bytes (for example {})",
                self.fbox_size,
                self.fbox_size.next_multiple_of(64)
            ));
        }
        if !(64..=MAX_FRAGMENT).contains(&p.max_send_size) {
            return Err(format!(
                "btl_sm_max_send_size is {} bytes; it must be from 64 bytes to 4 MiB (default 32k)",
                p.max_send_size
            ));
        }
        for (name, value) in [
            ("btl_sm_eager_limit", p.eager_limit),
            ("btl_sm_rndv_eager_limit", p.rndv_eager_limit),
        ] {
            if value == 0 || value > p.max_send_size {
                return Err(format!(
                    "{name} is {value} bytes; it must be from 1 byte to btl_sm_max_send_size ({} bytes)",
                    p.max_send_size
                ));
            }
        }
        if p.flags & flags::SEND == 0 {
            return Err(format!(
                "btl_sm_flags = {:#x} lacks the send bit (0x1), which every transfer of sm needs; set btl_sm_flags to 7 (the default) or 1",
                p.flags
            ));
        }
        let offered = if single_copy {
            flags::SEND | flags::GET | flags::PUT
        } else {
            flags::SEND
        };
        let used = p.flags & offered;
        // The default asks for everything sm may offer: no notice when
        // only what is not in use is dropped from it.
        let default_flags = flags::SEND | flags::GET | flags::PUT;
        let notice = (used != p.flags && p.flags != default_flags).then(|| {
            format!(
                "btl_sm_flags = {:#x} asks for capabilities sm does not offer here ({}); using {used:#x}",
                p.flags,
                if single_copy {
                    "only send, put and get exist"
                } else {
                    "put and get need cross-memory attach, which is not in use"
                }
            )
        });
        let rdma = used & (flags::GET | flags::PUT) != 0;
        Ok((
            BtlModuleInfo {
                label: "sm".into(),
                eager_limit: p.eager_limit,
                rndv_eager_limit: p.rndv_eager_limit,
                max_send_size: p.max_send_size,
                exclusivity: p.exclusivity,
                latency: p.latency,
                bandwidth: p.bandwidth,
                flags: used,
                max_rdma_size: if rdma { MAX_RDMA } else { 0 },
                min_rdma_message: 0,
            },
            notice,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxmpi_plugin_api::value::parse;

    #[test]
    fn declarations_are_well_formed_and_defaults_parse() {
        Config::check_declarations().unwrap();
        for decl in Config::DECLS {
            let full = format!("btl_sm_{}", decl.name);
            assert_eq!(oxmpi_mca::registry::check_decl(&full, decl), None);
        }
    }

    #[test]
    fn defaults_describe_a_module_with_single_copy() {
        let d = Config::default();
        assert_eq!(d.single_copy_mechanism, Mechanism::Cma);
        assert_eq!((d.fbox_size, d.fbox_max, d.fifo_size), (65536, 32, 4096));
        let (info, notice) = d.module_info(true).unwrap();
        assert_eq!(notice, None);
        assert_eq!(info.flags, flags::SEND | flags::GET | flags::PUT);
        assert_eq!(info.max_rdma_size, MAX_RDMA);
        assert_eq!(
            (info.eager_limit, info.max_send_size, info.exclusivity),
            (8192, 32768, 65535)
        );
        let (info, notice) = d.module_info(false).unwrap();
        assert_eq!((info.flags, info.max_rdma_size), (flags::SEND, 0));
        assert_eq!(notice, None, "the default flags need no notice");
        let mut asked = Config::default();
        asked.btl.flags = flags::SEND | flags::GET;
        let (info, notice) = asked.module_info(false).unwrap();
        assert_eq!(info.flags, flags::SEND);
        assert!(notice.unwrap().contains("need cross-memory attach"));
    }

    #[test]
    fn bad_values_are_refused_with_the_parameter_named() {
        let c = Config {
            fifo_size: 1000,
            ..Config::default()
        };
        assert!(c
            .module_info(true)
            .unwrap_err()
            .contains("btl_sm_fifo_size is 1000"));
        let c = Config {
            fbox_size: 1000,
            ..Config::default()
        };
        assert!(c.module_info(true).unwrap_err().contains("multiple of 64"));
        let mut c = Config::default();
        c.btl.eager_limit = 1 << 20;
        assert!(c
            .module_info(true)
            .unwrap_err()
            .starts_with("btl_sm_eager_limit"));
        let mut c = Config::default();
        c.btl.flags = flags::GET;
        assert!(c.module_info(true).unwrap_err().contains("send bit"));
        let mut c = Config::default();
        c.btl.flags = flags::SEND;
        assert_eq!(c.module_info(true).unwrap().0.max_rdma_size, 0);
    }

    #[test]
    fn ranges_are_the_cores_to_enforce() {
        let decl = |name: &str| {
            Config::DECLS
                .iter()
                .find(|d| d.name.as_str() == name)
                .unwrap()
        };
        assert!(parse(decl("fbox_size"), "128", None).is_err());
        assert!(parse(decl("fifo_size"), "8", None).is_err());
        assert!(parse(decl("single_copy_mechanism"), "xpmem", None).is_err());
        assert!(parse(decl("single_copy_mechanism"), "none", None).is_ok());
    }
}
