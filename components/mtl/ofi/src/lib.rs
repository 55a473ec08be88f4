#![warn(missing_docs)]

//! mtl component `ofi`: MPI point-to-point over libfabric's tagged
//! messages on reliable-datagram endpoints (`fi_tagged(3)`), for the cm
//! pml.
//!
//! # Providers
//!
//! `fi_getinfo` lists the providers that offer tagged messages on RDM
//! endpoints here, best first; the first one `mtl_ofi_provider_include` /
//! `mtl_ofi_provider_exclude` allow is used (the two are mutually
//! exclusive: setting both is an error). An item names a provider by its
//! whole name (`tcp;ofi_rxm`) or by one of the layers of a layered
//! provider (`tcp`, `ofi_rxm`), without regard to case. The default
//! exclude list leaves out the providers that run everywhere (shm, tcp,
//! udp, sockets, …): over them the btls are as fast, so ob1 stays the
//! default unless a real fabric is there or the user names one
//! (`--mca mtl_ofi_provider_include shm`). When no provider may be used,
//! the component declines with every provider and its reason (logged at
//! `mtl_base_verbose` 10 as they are considered).
//!
//! # Tags
//!
//! The envelope travels in the 64-bit OFI tag as `mtl_ofi_tag_mode` lays
//! it out ([`tags`]): `ofi_tag_1`, `ofi_tag_2`, `ofi_tag_full` (the source
//! rank in the remote CQ data; needs `FI_REMOTE_CQ_DATA` and
//! `FI_DIRECTED_RECV`, and fails clearly without them) or `auto` (full
//! when the provider has both, else `ofi_tag_1`). The layout's limits
//! become the job's `MPI_TAG_UB` and largest communicator id.
//!
//! # Operations
//!
//! Sends of at most the provider's inject size go through `fi_tinject`
//! and complete at once; others through `fi_tsend`, completed from the
//! completion queue. A synchronous send sets the sync protocol bit and
//! waits for an acknowledgement the receiver sends when its receive
//! completes. Receives are `fi_trecv` with the layout's ignore bits;
//! probes are `FI_PEEK` receives, matched probes `FI_PEEK | FI_CLAIM`
//! and their receive `FI_CLAIM`; cancellation is `fi_cancel`. Progress
//! reads the completion queue `mtl_ofi_progress_event_cnt` entries at a
//! time until it is empty. Addresses are exchanged through the modex
//! (`mtl_ofi`, with the provider's name, so ranks on different providers
//! fail with both names) and inserted into the address vector when a
//! peer is first used.
//!
mod component;
mod fabric;
mod providers;
mod requests;
pub mod tags;

pub use component::Ofi;
use oxmpi_plugin_api::{
    verbosity, ComponentContext, ComponentError, Lifecycle, Params, QueryReply, Version,
};

/// The component's parameters (`mtl_ofi_<name>`), declared once:
/// `OfiParams::DECLS` is the table exported in the root module.
#[derive(Params, Clone, Debug, PartialEq, Eq)]
pub struct OfiParams {
    /// Selection priority of the ofi MTL (default 25).
    #[param(
        default = "25",
        level = Developer(All),
        help = "Selection priority of the ofi MTL among the MTLs."
    )]
    pub priority: i32,
    /// Providers to use, comma-separated (empty: every one the exclude
    /// list allows). Mutually exclusive with mtl_ofi_provider_exclude.
    #[param(
        default = "",
        level = User(Basic),
        help = "Comma-separated list of the libfabric providers the ofi MTL may use, by name \
                (tcp;ofi_rxm) or by one layer of a layered provider (tcp). Empty: every provider \
                mtl_ofi_provider_exclude allows. Mutually exclusive with mtl_ofi_provider_exclude."
    )]
    pub provider_include: String,
    /// Providers not to use, comma-separated (default: the providers that
    /// run everywhere).
    #[param(
        default = "shm,sockets,tcp,udp,rstream,usnic,net",
        level = User(Basic),
        help = "Comma-separated list of the libfabric providers the ofi MTL does not use. The \
                default leaves out the providers that run on any machine (shared memory, TCP, \
                UDP, sockets), over which the btls are as fast. Mutually exclusive with \
                mtl_ofi_provider_include."
    )]
    pub provider_exclude: String,
    /// How the envelope travels in the OFI tag (default auto).
    #[param(
        default = "auto",
        level = User(Detailed),
        help = "Layout of the MPI envelope in the 64-bit OFI tag: ofi_tag_1 (context id 12 bits, \
                source 18, tag 32), ofi_tag_2 (context id 24, source 18, tag 20), ofi_tag_full \
                (context id 28, tag 32, the source in remote CQ data; needs FI_REMOTE_CQ_DATA and \
                FI_DIRECTED_RECV), or auto (ofi_tag_full when the provider has both, else \
                ofi_tag_1)."
    )]
    pub tag_mode: String,
    /// Completion-queue entries read per call while draining it (default
    /// 100).
    #[param(
        default = "100",
        level = Tuner(Detailed),
        range = 1..=65536,
        help = "Completion-queue entries the ofi MTL reads per call; progress reads until the \
                queue is empty."
    )]
    pub progress_event_cnt: u32,
    /// Whether communicators use the context pairs of a scalable endpoint
    /// (default false).
    #[param(
        default = "false",
        level = User(Detailed),
        help = "Open a scalable endpoint and give each communicator one of its transmit and \
                receive context pairs (its context id modulo the pairs, the same on every rank), \
                so that threads driving different communicators use different contexts. Needs a \
                provider with scalable endpoints and named receive contexts; the ofi MTL \
                declines with the reason otherwise."
    )]
    pub thread_grouping: bool,
    /// Context pairs of the scalable endpoint (default 0: one per CPU).
    #[param(
        default = "0",
        level = Tuner(Detailed),
        range = 0..=4096,
        help = "Transmit and receive context pairs of the scalable endpoint \
                mtl_ofi_thread_grouping opens: 0 for one per CPU of the host; at least 2, and at \
                most what the provider allows (communicators share pairs beyond that)."
    )]
    pub num_ctxts: u32,
}

/// The component's lifecycle: usable when a provider may be used and its
/// tag layout fits (see the crate docs).
pub struct Component;

impl Lifecycle for Component {
    fn query(ctx: &ComponentContext) -> Result<QueryReply, ComponentError> {
        let params = OfiParams::read(ctx).map_err(ComponentError::failed)?;
        match component::discover(ctx, &params) {
            Ok(found) => {
                ctx.log(
                    verbosity::COMPONENT,
                    &format!("usable over provider {} ({})", found.provider, found.layout),
                );
                component::keep_for_init(found);
                Ok(QueryReply::Usable {
                    priority: params.priority,
                })
            }
            Err(component::Refusal::Declined(reason)) => Ok(QueryReply::Declined {
                reason: reason.into(),
            }),
            Err(component::Refusal::Failed(why)) => Err(ComponentError::failed(why)),
        }
    }
}

oxmpi_framework_mtl::export_mtl_component! {
    mtl: Ofi,
    lifecycle: Component,
    component: "ofi",
    version: Version::new(1, 0, 0),
    description: "MPI point-to-point over libfabric's tagged messages (RDM endpoints)",
    params: OfiParams::DECLS,
}
