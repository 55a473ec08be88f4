//! coll component `basic`: every collective operation over point-to-point
//! messages, with the algorithms of `oxmpi-collectives`: linear ones for
//! communicators of fewer than `coll_basic_crossover` processes (4, Open
//! MPI's), logarithmic ones from there on (see [`call`] for the table).
//! It serves every communicator of two or more processes, at priority
//! `coll_basic_priority` (10, Open MPI's): below `tuned` (30) and `self`
//! (75), so it is what remains when they decline or are excluded.
//!
//! Each operation's messages go on the communicator's context with a tag
//! of its own below [`TAG_FIRST`]; collectives on one communicator run one
//! at a time (the adapter refuses a concurrent one), and MPI's ordering of
//! messages between a pair keeps successive calls apart.

pub mod call;

use oxmpi_collectives::block_on;
use oxmpi_framework_coll::adapter::{Coll, CommInfo, Core, Offer, Operation, Served};
use oxmpi_framework_coll::module::{CollCall, OpSet, OwnedCall, TAG_FIRST};
use oxmpi_framework_coll::transport::{CommTransport, OwnedComm, Scratch};
use oxmpi_plugin_api::{ComponentContext, ComponentError, Lifecycle, Params, QueryReply, Version};

/// The component's parameters (full names `coll_basic_<name>`).
#[derive(Params, Clone, Debug, PartialEq, Eq)]
pub struct BasicParams {
    /// Priority of the basic component (default 10, Open MPI's): each operation of a
    /// communicator comes from the highest-priority component that provides it.
    #[param(
        default = "10",
        level = Developer(All),
        help = "Priority of the basic coll component: each operation of a communicator comes \
                from the highest-priority component that provides it."
    )]
    pub priority: i32,
    /// Communicators of at least this many processes use the logarithmic algorithms, smaller
    /// ones the linear ones (default 4, Open MPI's).
    #[param(
        default = "4",
        level = Tuner(Detailed),
        range = 2..=1048576,
        help = "Communicators of at least this many processes use the basic component's \
                logarithmic algorithms (binomial trees, recursive doubling, Bruck); smaller ones \
                its linear algorithms."
    )]
    pub crossover: u32,
}

/// The component's lifecycle: always usable.
pub struct Component;

impl Lifecycle for Component {
    fn query(ctx: &ComponentContext) -> Result<QueryReply, ComponentError> {
        let params = BasicParams::read(ctx).map_err(ComponentError::failed)?;
        Ok(QueryReply::Usable {
            priority: params.priority,
        })
    }
}

/// The component's process-wide value.
pub struct BasicColl {
    params: BasicParams,
    core: Core,
}

/// What the component keeps for a communicator.
pub struct BasicComm {
    context: u32,
    rank: u32,
    members: Vec<u32>,
    /// The transport's storage, kept between calls.
    scratch: Scratch,
}

impl Coll for BasicColl {
    type Comm = BasicComm;

    fn init(context: &ComponentContext, core: Core) -> Result<Self, String> {
        Ok(BasicColl {
            params: BasicParams::read(context)?,
            core,
        })
    }

    fn comm_query(&self, comm: &CommInfo<'_>) -> Result<Offer<BasicComm>, String> {
        if comm.size() < 2 {
            return Err(format!(
                "{} has one process; the basic component serves communicators of two or more",
                comm.name
            ));
        }
        Ok(Offer {
            priority: self.params.priority,
            ops: OpSet::ALL,
            nb_ops: OpSet::ALL,
            comm: BasicComm {
                context: comm.context,
                rank: comm.rank,
                members: comm.members.to_vec(),
                scratch: Scratch::default(),
            },
        })
    }

    fn run(&self, comm: &mut BasicComm, call: &CollCall<'_>) -> Result<Served, String> {
        let mut transport = CommTransport::new(
            &self.core,
            comm.context,
            comm.rank,
            &comm.members,
            &mut comm.scratch,
        );
        let tag = TAG_FIRST - call.kind as i32;
        // SAFETY: the MPI layer's promise for a call (`CollHandle::run`):
        // its buffers are valid for what its fields say.
        block_on(unsafe { call::run(&mut transport, call, self.params.crossover, tag) })
            .map(|()| Served::Done)
    }

    fn start(
        &self,
        comm: &mut BasicComm,
        call: &CollCall<'_>,
        tag: i32,
    ) -> Result<Operation, String> {
        let mut owned = OwnedComm::new(self.core, comm.context, comm.rank, &comm.members);
        let call = OwnedCall::new(call);
        let crossover = self.params.crossover;
        let future = async move {
            let view = call.view();
            let mut transport = owned.transport();
            // SAFETY: the MPI layer's promise for a started call
            // (`CollHandle::start`): its buffers are valid for what its
            // fields say until the operation completes.
            let run = unsafe { call::run(&mut transport, &view, crossover, tag) };
            run.await
        };
        // SAFETY: the future holds owned values, the call's buffers and
        // user operation (which MPI lets the library use from any thread
        // until completion) and the services (any thread).
        Ok(unsafe { Operation::new(future) })
    }
}

oxmpi_framework_coll::export_coll_component! {
    coll: BasicColl,
    lifecycle: Component,
    component: "basic",
    version: Version::new(1, 0, 0),
    description: "Every collective over point-to-point messages: linear algorithms for small \
                  communicators, logarithmic ones above coll_basic_crossover",
    params: BasicParams::DECLS,
}

#[cfg(test)]
mod tests;
