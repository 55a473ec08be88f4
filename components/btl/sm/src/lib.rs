//! btl component `sm`: moves fragments between processes of one node
//! through shared memory, and large messages with one copy through Linux
//! cross-memory attach. Its old name `vader` still selects it, and every
//! `btl_vader_<x>` parameter is a deprecated synonym of `btl_sm_<x>`.
//!
//! Each process creates one segment, a file `sm-<job id>-<rank>` in the job
//! directory mpirun makes (under `/dev/shm`; see [`place`]), holding (see
//! [`segment`]):
//!
//! - its **receive queue** ([`fifo`]): a bounded lock-free queue every
//!   process of the node may append to, of 64-bit entries naming a sender
//!   and one of the sender's fragment buffers;
//! - **fast boxes** ([`fbox`]): rings that one sender each writes small
//!   fragments into and this process polls, so a small message costs about
//!   one cache-line transfer; a sender claims one after
//!   `btl_sm_fbox_threshold` fragments through the queue, while any are
//!   left (`btl_sm_fbox_max`);
//! - its **fragment buffers**: `btl_sm_free_list_max` buffers of
//!   `btl_sm_max_send_size` bytes it fills (copy in) and names in a
//!   receiver's queue; the receiver delivers from them (copy out) and
//!   frees them.
//!
//! A fragment to a peer goes through the peer's fast box when it fits (at
//! most half the box), and while no earlier fragment to the peer waits in
//! the queue; otherwise through a fragment buffer and the queue. The
//! receiver, given a queue entry, first delivers what the sender put in
//! its fast box, so fragments arrive in the order they were sent. A full
//! box, queue or buffer pool makes `send` answer `WouldBlock`.
//!
//! Messages past the eager limit: with `btl_sm_single_copy_mechanism =
//! cma` (the default) the module offers get and put ([`cma`]): the pml's
//! receiver reads the sender's buffer with `process_vm_readv` (or the
//! sender writes with `process_vm_writev`). When the kernel or its ptrace
//! policy forbids it, sm says so (at warning verbosity) and moves them in
//! fragments through the segment, as with `none`. A get of
//! `btl_sm_shared_get_min` bytes or more is shared with the sender
//! ([`assist`]): the receiver reads the first half while the sender writes
//! the second, so both cores copy; a half the sender has not started when
//! the receiver finished its own is taken back.
//!
//! Nothing is left behind: each process maps every segment of the node as
//! soon as it exists (at `add_peer`, at a queue entry, and from progress
//! until all are mapped); the one that completes a segment's set of
//! mappers unlinks its file, so from then on only the mappings keep the
//! memory, and the kernel frees it when the processes end, however they
//! end. mpirun removes the job directory itself at the end.
//!
//! The contact card ([`card`]) carries the node identity (host name and
//! boot id), so `add_peer` refuses peers on other nodes (tcp carries
//! those), and the probe word that lets a peer check cross-memory attach
//! works before it is used.

#![warn(missing_docs)]

use oxmpi_framework_btl::module::JobIdentity;
use oxmpi_plugin_api::{ComponentContext, ComponentError, Lifecycle, Params, QueryReply, Version};

pub mod assist;
pub mod btl;
pub mod card;
pub mod cma;
pub mod fbox;
pub mod fifo;
pub mod params;
pub mod place;
pub mod segment;

#[cfg(test)]
mod tests;

pub use btl::SmBtl;
pub use params::{Config, Mechanism};

/// Name of the component.
pub const COMPONENT: &str = "sm";

/// The component's lifecycle: the query declines where sm has nothing to
/// do (no other process of the job on this node, no job directory).
pub struct Component;

impl Lifecycle for Component {
    fn query(ctx: &ComponentContext) -> Result<QueryReply, ComponentError> {
        let config = Config::read(ctx).map_err(ComponentError::failed)?;
        config.module_info(false).map_err(ComponentError::failed)?;
        // The query has no job identity; a process of a job of several
        // sees OXMPI_COMM_WORLD_LOCAL_SIZE, a singleton does not.
        let identity = JobIdentity {
            job_id: 0,
            secret: [0; 2],
            rank: 0,
            size: 2,
        };
        place::Place::of_process(&identity).map_err(ComponentError::not_available)?;
        Ok(QueryReply::Usable { priority: 0 })
    }
}

oxmpi_framework_btl::export_btl_component! {
    btl: SmBtl,
    lifecycle: Component,
    component: COMPONENT,
    version: Version::new(1, 0, 0),
    description: "Moves fragments between processes of one node through shared memory, large messages with one copy through cross-memory attach",
    params: <Config as oxmpi_plugin_api::Params>::DECLS,
}
