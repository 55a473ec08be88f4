#![warn(missing_docs)]

//! pml component `ucx`: MPI point-to-point over UCX's UCP tag-matching
//! API, with no btl and no MTL (`PmlTransport::Own`): UCX does the
//! matching, the protocols (eager, rendezvous, zero-copy) and chooses
//! its transports itself (`UCX_TLS`, `UCX_NET_DEVICES` and every other
//! `UCX_*` variable apply; mpirun forwards them with `-x`).
//!
//! # Selection
//!
//! `query` lists the transports UCX offers on this host (UCT's own
//! listing, [`uct`]) and rates them ([`selection`]): a transport of
//! `pml_ucx_tls` on a device matching `pml_ucx_devices` (by default the
//! InfiniBand/RoCE transports on `mlx*` devices, Open MPI 4.1's lists)
//! gives priority `pml_ucx_priority` (51, above ob1's 20); otherwise the
//! priority is 19, so on a host with only TCP and shared memory ob1 stays
//! the default and `--mca pml ucx` still selects ucx. The transports
//! found and the reason for the priority are logged at verbosity
//! `component` (`--mca pml_base_verbose 10`). When UCX cannot list its
//! transports, or refuses its `UCX_*` configuration, the component
//! declines with the reason.
//!
//! # Init
//!
//! `ucp_config_read` (the `UCX_*` environment), `ucp_init_version` with
//! the tag feature, one worker in `UCS_THREAD_MODE_SINGLE` (the MPI layer
//! serializes every call), and the worker's address published in the
//! modex under `pml_ucx`. A peer's address is read on first use and its
//! endpoint created then. With `pml_ucx_peer_failure` (default false)
//! endpoints ask for UCP's peer error handling: when a peer fails, its
//! sends fail and receives naming it complete with `PeerFailed` and a
//! sentence naming the rank, instead of hanging. Only some transports
//! offer it (UCX 1.13's posix and sysv shared memory do not, so ranks of
//! one host then talk over tcp or cma); to a peer that no such transport
//! reaches the endpoint is made without it, and logged. Off, UCX uses
//! shared memory within a host and a failed peer is reported by the
//! launcher, as with Open MPI's pml ucx.
//!
//! # Messages
//!
//! The MPI envelope goes in UCP's 64-bit tag ([`tag`]: 24 bits of MPI
//! tag, 20 of source rank, 20 of context id), so tags reach 8,388,607
//! (`MPI_TAG_UB`), internal tags down to −8,388,608, context ids
//! 1,048,575 and jobs 1,048,576 ranks; `Requests::limits` answers them and
//! the MPI layer refuses what is beyond. Sends use `ucp_tag_send_nbx`
//! (`ucp_tag_send_sync_nbx` for synchronous sends); a send UCP completes
//! during the call is answered as handle 0. Receives use
//! `ucp_tag_recv_nbx` with the tag mask of their wildcards; one that
//! completes during the call is answered as handle 0 with its status.
//! `iprobe` is `ucp_tag_probe_nb` without removal, `improbe` with removal
//! (the message kept under a handle for `imrecv`, `ucp_tag_msg_recv_nbx`),
//! `cancel` of an unmatched receive `ucp_request_cancel` (it completes
//! `cancelled`), `progress` `ucp_worker_progress`.
//!
//! **Truncation.** UCP drops the whole of a message longer than the
//! receive buffer (MPI leaves the buffer undefined after an overflow): the
//! receive reports `Truncated` with `count` the buffer's length, and by
//! default keeps nothing of the message, so receives stay contiguous and
//! UCP places large messages without a copy. With
//! `pml_ucx_keep_truncated` receives use a UCP generic datatype that takes
//! any length and writes only what fits, so a truncated receive keeps the
//! message's first bytes, as ob1 does; the cost is that UCP then fills
//! every receive by copying (its zero-copy rendezvous needs a contiguous
//! receive).
//!
//! **Non-contiguous datatypes.** The pml takes messages in pieces
//! (`TAKES_PIECES`): the elements of a non-contiguous MPI datatype stay
//! where they are, and UCP packs and unpacks them a window at a time
//! through the same generic datatype (the slab's `SLOT_OPS`), whose
//! "buffer" is the request's slot holding the MPI layer's
//! `Pieces` description.
//!
//! # Requests
//!
//! Handles are generation-checked indices of a slab whose slots never
//! move ([`slab`]); a slot is the `user_data` of its UCP request, whose
//! callback records the outcome in it. A request that completes without
//! error is released into its completion slot, as the pml contract asks;
//! one in error stays for `request_error`. Nothing on the paths of sends,
//! receives and completions allocates once the slab is warm.
//!
//! # Finalize
//!
//! Endpoints are closed (flushed; a failed peer's at once) while the
//! worker progresses, for at most 10 seconds; requests still running are
//! cancelled; then the worker and the context are destroyed.

mod pml;
mod requests;
pub mod selection;
mod slab;
pub mod tag;
mod ucp;
pub mod uct;

use oxmpi_plugin_api::{
    verbosity, ComponentContext, ComponentError, Lifecycle, Params, QueryReply, Version,
};
pub use pml::Ucx;

/// Open MPI 4.1's `pml_ucx_tls`: the transports that make UCX preferred.
pub const DEFAULT_TLS: &str = "rc_verbs,ud_verbs,rc_mlx5,dc_mlx5,ud_mlx5,cuda_ipc,rocm_ipc";

/// The component's parameters (`pml_ucx_<name>`), declared once:
/// `UcxParams::DECLS` is the table exported in the root module.
#[derive(Params, Clone, Debug, PartialEq, Eq)]
pub struct UcxParams {
    /// Selection priority when UCX offers a preferred transport (default
    /// 51, Open MPI's).
    #[param(
        default = "51",
        level = Developer(All),
        help = "Selection priority of the ucx pml when UCX offers one of the transports of \
                pml_ucx_tls on a device matching pml_ucx_devices; otherwise it asks for 19 \
                (below ob1's 20), or this value if lower. The usable pml with the highest \
                priority is used; --mca pml ucx selects ucx whatever its priority."
    )]
    pub priority: i32,
    /// Transports that make UCX the preferred pml (default Open MPI 4.1's list).
    #[param(
        default = DEFAULT_TLS,
        level = User(Detailed),
        help = "Comma-separated list of the UCX transports (UCT names, as `ucx_info -d` prints \
                them) whose presence gives the ucx pml its priority pml_ucx_priority; 'any' \
                stands for every transport, '*' and '?' are wildcards. It only rates the pml: \
                which transports UCX uses is UCX_TLS's business (mpirun -x UCX_TLS=...)."
    )]
    pub tls: Vec<String>,
    /// Devices that make UCX the preferred pml (default `mlx*`).
    #[param(
        default = "mlx*",
        level = User(Detailed),
        help = "Comma-separated list of device names (UCT names: mlx5_0:1, eth0, memory) on \
                which a transport of pml_ucx_tls gives the ucx pml its priority; 'any' stands \
                for every device, '*' and '?' are wildcards. UCX_NET_DEVICES chooses the \
                devices UCX uses."
    )]
    pub devices: Vec<String>,
    /// Whether a truncated receive keeps the message's first bytes (default false).
    #[param(
        default = "false",
        level = Tuner(Basic),
        help = "Whether receives keep the first bytes of a message longer than their buffer \
                (receives then use a UCX generic datatype, which UCX fills by copying). Off, \
                receives are contiguous, UCX may place large messages without a copy, and a \
                truncated receive keeps none of the message."
    )]
    pub keep_truncated: bool,
    /// Whether endpoints use UCX's peer error handling (default false).
    #[param(
        default = "false",
        level = Tuner(Basic),
        help = "Whether endpoints ask for UCX's peer error handling, so that the failure of a \
                peer fails the requests that involve it (with a sentence naming the rank) \
                instead of leaving them waiting. UCX then uses only transports that offer it \
                (in UCX 1.13 not posix and sysv shared memory: ranks of one host talk over tcp \
                or cma); to a peer no such transport reaches, the endpoint is made without it. \
                Off, UCX may use every transport, and a failed peer is reported by the launcher."
    )]
    pub peer_failure: bool,
}

/// The component's lifecycle: `query` rates the transports UCX offers.
pub struct Component;

impl Lifecycle for Component {
    fn query(ctx: &ComponentContext) -> Result<QueryReply, ComponentError> {
        let params = UcxParams::read(ctx).map_err(ComponentError::failed)?;
        let declined = |reason: String| {
            ctx.log(verbosity::COMPONENT, &format!("declined: {reason}"));
            Ok(QueryReply::Declined {
                reason: reason.into(),
            })
        };
        if let Err(why) = ucp::check_config() {
            return declined(why);
        }
        let (found, skipped) = match uct::resources() {
            Ok(listed) => listed,
            Err(why) => return declined(why),
        };
        for s in &skipped {
            ctx.log(
                verbosity::INFO,
                &format!("memory domain left out of the listing: {s}"),
            );
        }
        if found.is_empty() {
            return declined(
                "UCX lists no transport on this host (`ucx_info -d` shows none); check its installation"
                    .to_string(),
            );
        }
        let rating = selection::rate(&found, &params.tls, &params.devices, params.priority);
        ctx.log(
            verbosity::COMPONENT,
            &selection::explain(&found, &params.tls, &params.devices, &rating),
        );
        Ok(QueryReply::Usable {
            priority: rating.priority,
        })
    }
}

oxmpi_framework_pml::export_pml_component! {
    pml: Ucx,
    lifecycle: Component,
    component: "ucx",
    version: Version::new(1, 0, 0),
    description: "MPI point-to-point over UCX's UCP tag matching (its own transports: \
                  InfiniBand, RoCE, TCP, shared memory)",
    params: UcxParams::DECLS,
}

#[cfg(test)]
mod tests;
