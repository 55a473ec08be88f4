//! coll component `sm`: the small and medium collectives of communicators
//! whose processes share this node, through a shared-memory segment per
//! communicator (flags and data slots), not through point-to-point
//! messages.
//!
//! # What it takes
//!
//! It provides barrier, bcast, reduce, allreduce, gather, scatter,
//! allgather and alltoall ([`ops`], [`reduce`]) for every communicator of
//! two or more processes of a job whose processes are all on this node
//! (`OXMPI_COMM_WORLD_LOCAL_SIZE` = `OXMPI_COMM_WORLD_SIZE`, with a job
//! directory, see [`place`]), at priority `coll_sm_priority` (40, above
//! tuned's 30). A call of more than `coll_sm_max_size` bytes per process
//! (4 MiB; [`ops::call_bytes`] says what is counted) is **passed on**:
//! the MPI layer runs it with the next component by priority (tuned). On
//! a node with more of the job's processes than cores, the segments have
//! fewer, larger slots (`coll_sm_oversubscribed_slot_size`, 128 KiB, and
//! `coll_sm_oversubscribed_buffers`, 16): there each step that waits for
//! every process costs a round of the scheduler. The `v` forms, scans,
//! reduce-scatters and non-blocking collectives come from the other
//! components.
//!
//! # The segment
//!
//! One per communicator ([`segment`]), made at its first sm collective
//! ([`attach`]): the member of rank 0 creates the file
//! `coll-sm-<job id>-<context id>-<its job rank>` in the job directory,
//! the others map it as soon as it is marked ready (waiting up to
//! `coll_sm_attach_timeout_ms`, then failing with the file's name), and
//! the creator removes the file once all have mapped it: from then on
//! only the mappings hold the memory, which the kernel frees when the
//! processes end, however they end (and mpirun removes the job directory
//! anyway). It holds per member a control line (`done`: the last step the
//! member finished reading), `coll_sm_buffers` (32) data slots of
//! `coll_sm_slot_size` bytes (32 KiB) used by turns, each starting with its
//! `arrived` flag in the line of the first data bytes, and
//! `coll_sm_small_buffers` (512) small slots of 120 bytes for the small
//! pieces of the operations whose writers run ahead (bcast, gather,
//! reduce).
//!
//! # The protocol
//!
//! See [`member`]: a call is a sequence of steps counted alike by every
//! member; in a step a writer waits until every reader finished the step
//! that last used its slot, fills it and publishes `arrived` (release);
//! readers wait for `arrived` (acquire) and copy or fold the data. A call
//! larger than a slot moves in pieces, one step each, pipelined through
//! the slots; a member that only writes (a bcast root, the senders of a
//! reduce) runs up to `coll_sm_buffers` steps ahead of its readers, or
//! `coll_sm_small_buffers` steps when its pieces fit in small slots.
//! Reductions fold in rank order, so user operations that do not commute
//! get MPI's result; `MPI_IN_PLACE` has MPI's meaning for
//! each operation.
//!
//! # Waiting
//!
//! A wait checks its flag `coll_sm_spin_count` times (at most 16 when
//! the node has more of the job's processes than cores), then yields the
//! core between checks, running a round of the MPI layer's progress
//! engine every `coll_sm_progress_every` yields so point-to-point traffic
//! keeps moving.

pub mod attach;
pub mod member;
pub mod ops;
pub mod params;
pub mod place;
pub mod reduce;
pub mod segment;

use member::{Member, Waiter};
use oxmpi_framework_coll::adapter::{Coll, CommInfo, Core, Offer, Served};
use oxmpi_framework_coll::module::{CollCall, OpSet};
use oxmpi_plugin_api::{
    verbosity, ComponentContext, ComponentError, Lifecycle, Params, QueryReply, Version,
};
use params::{Limits, SmParams};
use place::Place;
use std::sync::Arc;

/// Bytes of a slot each member needs at least: a communicator with more
/// members than the slot size divided by this is declined.
pub const MIN_SLOT_PER_MEMBER: usize = 64;

/// The component's lifecycle: always usable (it declines communicators,
/// not processes).
pub struct Component;

impl Lifecycle for Component {
    fn query(ctx: &ComponentContext) -> Result<QueryReply, ComponentError> {
        let params = SmParams::read(ctx).map_err(ComponentError::failed)?;
        Ok(QueryReply::Usable {
            priority: params.priority,
        })
    }
}

/// The component's process-wide value.
pub struct SmColl {
    priority: i32,
    limits: Limits,
    /// Where the segments go, or why sm serves nothing here.
    place: Result<Place, String>,
    core: Core,
    context: ComponentContext,
}

/// What the component keeps for a communicator.
pub struct SmComm {
    context: u32,
    rank: u32,
    /// The members' job ranks.
    members: Vec<u32>,
    name: String,
    /// This process's side of the segment, from the first sm call on.
    member: Option<Member>,
    /// Scratch for the allreduce shares, kept between calls.
    scratch: Vec<u8>,
}

impl SmColl {
    /// The component over `place` with `params` (what `init` makes from
    /// the process's environment).
    ///
    /// # Errors
    ///
    /// A parameter value [`Limits::new`] refuses.
    pub fn new(
        params: &SmParams,
        place: Result<Place, String>,
        core: Core,
        context: ComponentContext,
    ) -> Result<SmColl, String> {
        let cores = params::node_cores();
        let local = place.as_ref().map_or(1, |p| p.local_size);
        Ok(SmColl {
            priority: params.priority,
            limits: Limits::new(params, local, cores)?,
            place,
            core,
            context,
        })
    }

    /// The segment of `comm`, made or mapped at its first call, and the
    /// communicator's scratch.
    #[inline]
    fn member<'c>(
        &self,
        comm: &'c mut SmComm,
    ) -> Result<(&'c mut Member, &'c mut Vec<u8>), String> {
        if comm.member.is_none() {
            self.attach(comm)?;
        }
        match &mut comm.member {
            Some(member) => Ok((member, &mut comm.scratch)),
            None => Err("internal error: no segment after making it".to_string()),
        }
    }

    /// Makes or maps the segment of `comm`.
    #[cold]
    fn attach(&self, comm: &mut SmComm) -> Result<(), String> {
        let place = self.place.as_ref().map_err(Clone::clone)?;
        let creator = comm.members[0];
        let path = place.segment_path(comm.context, creator);
        let progress = || {
            self.core.progress();
        };
        let patience = attach::Patience {
            timeout: self.limits.attach_timeout,
            progress: &progress,
        };
        let n = comm.members.len();
        let seg = if comm.rank == 0 {
            attach::create(&path, n, self.limits.slots, &patience)?
        } else {
            attach::attach(&path, n, creator, &patience)?
        };
        self.context.log(
            verbosity::INFO,
            &format!(
                "{}: shared segment {} mapped ({n} processes, {} slots of {} bytes and {} \
                 small slots each)",
                comm.name,
                path.display(),
                seg.buffers(),
                seg.slot_size(),
                seg.small_buffers()
            ),
        );
        comm.member = Some(Member::new(Arc::new(seg), comm.rank as usize));
        Ok(())
    }
}

impl Coll for SmColl {
    type Comm = SmComm;

    fn init(context: &ComponentContext, core: Core) -> Result<Self, String> {
        let params = SmParams::read(context)?;
        SmColl::new(&params, Place::of_process(), core, *context)
    }

    fn comm_query(&self, comm: &CommInfo<'_>) -> Result<Offer<SmComm>, String> {
        let n = comm.members.len();
        if n < 2 {
            return Err(format!(
                "{} has one process; the sm component serves communicators of two or more",
                comm.name
            ));
        }
        if let Err(why) = &self.place {
            return Err(why.clone());
        }
        if n > self.limits.slots.size / MIN_SLOT_PER_MEMBER {
            return Err(format!(
                "{} has {n} processes, more than coll_sm_slot_size ({} bytes) / \
                 {MIN_SLOT_PER_MEMBER} bytes per process allows; raise coll_sm_slot_size",
                comm.name, self.limits.slots.size
            ));
        }
        Ok(Offer {
            priority: self.priority,
            ops: ops::PROVIDED,
            nb_ops: OpSet::NONE,
            comm: SmComm {
                context: comm.context,
                rank: comm.rank,
                members: comm.members.to_vec(),
                name: comm.name.to_string(),
                member: None,
                scratch: Vec::new(),
            },
        })
    }

    fn run(&self, comm: &mut SmComm, call: &CollCall<'_>) -> Result<Served, String> {
        let n = comm.members.len();
        if !ops::takes(call, n, &self.limits) {
            return Ok(Served::PassedOn);
        }
        let progress = || {
            self.core.progress();
        };
        let wait = Waiter {
            spins: self.limits.spin_count,
            progress_every: self.limits.progress_every,
            progress: &progress,
            give_up: None,
        };
        let (member, scratch) = self.member(comm)?;
        // SAFETY: the MPI layer's promise for a call (`CollHandle::run`):
        // its buffers are valid for what its fields say, and every member
        // makes the same call.
        unsafe { ops::run(member, &wait, scratch, call) }?;
        Ok(Served::Done)
    }
}

oxmpi_framework_coll::export_coll_component! {
    coll: SmColl,
    lifecycle: Component,
    component: "sm",
    version: Version::new(1, 0, 0),
    description: "Small and medium collectives of the processes of one node through a shared \
                  segment per communicator",
    params: SmParams::DECLS,
}

#[cfg(test)]
mod tests;
