//! coll component `self`: the collectives of communicators of one process
//! (`MPI_COMM_SELF`, and any communicator a split or a group leaves with
//! one member).
//!
//! With one member every operation is a local copy: the contribution goes
//! from the send buffer to the receive buffer (nothing with
//! `MPI_IN_PLACE`), a barrier and a bcast do nothing, and `exscan` leaves
//! the receive buffer alone (MPI leaves rank 0's result undefined). It
//! declines every communicator of more than one process. Its priority
//! (`coll_self_priority`, 75, Open MPI's) puts it above `basic` and `tuned`
//! for the communicators it takes.

use oxmpi_framework_coll::adapter::{Coll, CommInfo, Core, Offer, Operation, Served};
use oxmpi_framework_coll::module::{CollCall, CollKind, OpSet};
use oxmpi_plugin_api::{ComponentContext, ComponentError, Lifecycle, Params, QueryReply, Version};

/// The component's parameters (full names `coll_self_<name>`).
#[derive(Params, Clone, Debug, PartialEq, Eq)]
pub struct SelfParams {
    /// Priority of the self component for the communicators of one process it takes (default
    /// 75, Open MPI's): each operation of a communicator comes from the highest-priority
    /// component that provides it.
    #[param(
        default = "75",
        level = Developer(All),
        help = "Priority of the self coll component for communicators of one process: each \
                operation of a communicator comes from the highest-priority component that \
                provides it."
    )]
    pub priority: i32,
}

/// The component's lifecycle: always usable (it declines communicators,
/// not processes).
pub struct Component;

impl Lifecycle for Component {
    fn query(ctx: &ComponentContext) -> Result<QueryReply, ComponentError> {
        let params = SelfParams::read(ctx).map_err(ComponentError::failed)?;
        Ok(QueryReply::Usable {
            priority: params.priority,
        })
    }
}

/// The component's process-wide value.
pub struct SelfColl {
    priority: i32,
}

/// What the component keeps for a communicator: nothing.
pub struct SelfComm;

impl Coll for SelfColl {
    type Comm = SelfComm;

    fn init(context: &ComponentContext, _core: Core) -> Result<Self, String> {
        let params = SelfParams::read(context)?;
        Ok(SelfColl {
            priority: params.priority,
        })
    }

    fn comm_query(&self, comm: &CommInfo<'_>) -> Result<Offer<SelfComm>, String> {
        if comm.size() != 1 {
            return Err(format!(
                "{} has {} processes; the self component serves communicators of one",
                comm.name,
                comm.size()
            ));
        }
        Ok(Offer {
            priority: self.priority,
            ops: OpSet::ALL,
            nb_ops: OpSet::ALL,
            comm: SelfComm,
        })
    }

    fn run(&self, _comm: &mut SelfComm, call: &CollCall<'_>) -> Result<Served, String> {
        local(call).map(|()| Served::Done)
    }

    /// Does the copies at once: the operation is complete when started
    /// (its first poll answers it).
    fn start(
        &self,
        _comm: &mut SelfComm,
        call: &CollCall<'_>,
        _tag: i32,
    ) -> Result<Operation, String> {
        let outcome = local(call);
        // SAFETY: the future holds only its outcome (an owned value).
        Ok(unsafe { Operation::new(std::future::ready(outcome)) })
    }
}

/// The one-process result of `call`: the copies it implies.
fn local(call: &CollCall<'_>) -> Result<(), String> {
    let first = |v: &[usize], what: &str| -> Result<usize, String> {
        v.first()
            .copied()
            .ok_or_else(|| format!("{} on one process needs one {what}", call.kind.name()))
    };
    match call.kind {
        CollKind::Barrier | CollKind::Bcast | CollKind::Exscan => Ok(()),
        CollKind::Reduce | CollKind::Allreduce | CollKind::Scan | CollKind::ReduceScatterBlock => {
            copy(call.send, 0, call.recv, 0, call.count * call.elem_size())
        }
        CollKind::ReduceScatter => {
            let n = first(call.counts.as_slice(), "count")?;
            copy(call.send, 0, call.recv, 0, n * call.elem_size())
        }
        CollKind::Gather | CollKind::Allgather | CollKind::Alltoall => {
            copy(call.send, 0, call.recv, 0, call.count)
        }
        CollKind::Scatter => {
            if call.recv.is_null() {
                return Ok(());
            }
            copy(call.send, 0, call.recv, 0, call.count)
        }
        CollKind::Gatherv | CollKind::Allgatherv => {
            let (n, at) = (
                first(call.counts.as_slice(), "count")?,
                first(call.displs.as_slice(), "displacement")?,
            );
            if call.send.is_null() {
                return Ok(());
            }
            if call.count > n {
                return Err(truncated(call.kind, call.count, n));
            }
            copy(call.send, 0, call.recv, at, call.count)
        }
        CollKind::Scatterv => {
            if call.recv.is_null() {
                return Ok(());
            }
            let (n, at) = (
                first(call.counts.as_slice(), "count")?,
                first(call.displs.as_slice(), "displacement")?,
            );
            if n > call.count {
                return Err(truncated(call.kind, n, call.count));
            }
            copy(call.send, at, call.recv, 0, n)
        }
        CollKind::Alltoallv => {
            if call.send.is_null() {
                return Ok(());
            }
            let n = first(call.send_counts.as_slice(), "send count")?;
            let from = first(call.send_displs.as_slice(), "send displacement")?;
            let room = first(call.counts.as_slice(), "count")?;
            let at = first(call.displs.as_slice(), "displacement")?;
            if n > room {
                return Err(truncated(call.kind, n, room));
            }
            copy(call.send, from, call.recv, at, n)
        }
    }
}

/// The sentence of a block longer than its destination.
fn truncated(kind: CollKind, len: usize, room: usize) -> String {
    format!(
        "{}: a block of {len} bytes does not fit the {room} bytes the receive side gives it",
        kind.name()
    )
}

/// Copies `len` bytes from `send + from` to `recv + at` (nothing when
/// `send` is null: `MPI_IN_PLACE`, the data is in place already).
fn copy(send: *const u8, from: usize, recv: *mut u8, at: usize, len: usize) -> Result<(), String> {
    if send.is_null() || len == 0 {
        return Ok(());
    }
    if recv.is_null() {
        return Err("the receive buffer is a null pointer".to_string());
    }
    // SAFETY: the MPI layer's promise for a call (`CollHandle::run`): the
    // send buffer is readable and the receive buffer writable for the
    // extents the call's counts and displacements give, which these are.
    // `copy` allows the two to overlap.
    unsafe { std::ptr::copy(send.add(from), recv.add(at), len) };
    Ok(())
}

oxmpi_framework_coll::export_coll_component! {
    coll: SelfColl,
    lifecycle: Component,
    component: "self",
    version: Version::new(1, 0, 0),
    description: "Collectives of communicators of one process (local copies)",
    params: SelfParams::DECLS,
}

#[cfg(test)]
mod tests;
