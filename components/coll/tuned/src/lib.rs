//! coll component `tuned`: several algorithms per collective operation
//! (those of `oxmpi-collectives`), chosen per call by fixed decision rules
//! on the communicator size and the message size ([`decide`]), or — with
//! `coll_tuned_use_dynamic_rules` — by `coll_tuned_<op>_algorithm` (with
//! `_algorithm_segmentsize` for the segmented algorithms) and by a rules
//! file (`coll_tuned_dynamic_rules_filename`, Open MPI's format, see
//! [`rules`]). It serves communicators of two or more processes at
//! priority `coll_tuned_priority` (30, Open MPI's), above `basic`.
//!
//! Open MPI ignores `coll_tuned_<op>_algorithm` without dynamic rules,
//! silently. tuned ignores it too (so a job means the same under both),
//! but rank 0 says so once, naming the parameters and what to set. A
//! rules file that cannot be read or parsed (the sentence gives its file
//! and line), or that names an algorithm an operation does not have (the
//! file, the operation, the communicator and message sizes), is an error
//! shown whatever the verbosity, and tuned then stays out (basic serves).

pub mod decide;
pub mod params;
pub mod rules;

use decide::{choose, rule_op, valid_algorithms};
use oxmpi_collectives::block_on;
use oxmpi_framework_coll::adapter::{Coll, CommInfo, Core, Offer, Operation, Served};
use oxmpi_framework_coll::module::{CollCall, CollKind, OpSet, OwnedCall, TAG_FIRST};
use oxmpi_framework_coll::transport::{CommTransport, OwnedComm, Scratch};
use oxmpi_plugin_api::{
    verbosity, ComponentContext, ComponentError, Lifecycle, Params, QueryReply, Version,
};
use params::TunedParams;
use rules::RulesFile;
use std::sync::atomic::{AtomicBool, Ordering};

/// The component's lifecycle: always usable.
pub struct Component;

impl Lifecycle for Component {
    fn query(ctx: &ComponentContext) -> Result<QueryReply, ComponentError> {
        let params = TunedParams::read(ctx).map_err(ComponentError::failed)?;
        Ok(QueryReply::Usable {
            priority: params.priority,
        })
    }
}

/// The component's process-wide value.
pub struct TunedColl {
    params: TunedParams,
    rules: Option<RulesFile>,
    core: Core,
    context: ComponentContext,
    /// Whether the note about algorithms set without dynamic rules was
    /// given.
    noted: AtomicBool,
}

/// What the component keeps for a communicator.
pub struct TunedComm {
    context: u32,
    rank: u32,
    members: Vec<u32>,
    /// The transport's storage, kept between calls.
    scratch: Scratch,
}

/// Reads and checks the rules file of `params`, if dynamic rules are on
/// and one is named.
///
/// # Errors
///
/// The file cannot be read or parsed, or names an algorithm an operation
/// does not have (file and line in the sentence).
pub fn load_rules(params: &TunedParams) -> Result<Option<RulesFile>, String> {
    if !params.use_dynamic_rules || params.dynamic_rules_filename.is_empty() {
        return Ok(None);
    }
    let path = std::path::Path::new(&params.dynamic_rules_filename);
    let file = RulesFile::read(path).map_err(|e| e.to_string())?;
    for kind in CollKind::ALL {
        let Some(op) = rule_op(kind) else {
            continue;
        };
        for comm in file.rules_for(op) {
            for rule in &comm.rules {
                if rule.algorithm != 0 && !valid_algorithms(kind).contains(&rule.algorithm) {
                    return Err(format!(
                        "{}: {} algorithm {} (communicator size {}, message size {}) is not one tuned has; it has {}",
                        path.display(),
                        kind.name(),
                        rule.algorithm,
                        comm.comm_size,
                        rule.msg_size,
                        valid_algorithms(kind)
                            .iter()
                            .map(u32::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
            }
        }
    }
    Ok(Some(file))
}

impl TunedColl {
    /// Rank 0's one note about algorithms set without dynamic rules.
    fn note_ignored(&self) {
        if self.params.use_dynamic_rules || self.noted.swap(true, Ordering::Relaxed) {
            return;
        }
        let forced = self.params.forced();
        if forced.is_empty() {
            return;
        }
        let list = forced
            .iter()
            .map(|(name, value)| format!("{name} = {value}"))
            .collect::<Vec<_>>()
            .join(", ");
        self.context.log(
            verbosity::ERROR,
            &format!(
                "warning: {list} {} not used because coll_tuned_use_dynamic_rules is false; set \
                 coll_tuned_use_dynamic_rules true (e.g. --mca coll_tuned_use_dynamic_rules 1) to use {}",
                if forced.len() == 1 { "is" } else { "are" },
                if forced.len() == 1 { "it" } else { "them" }
            ),
        );
    }
}

impl Coll for TunedColl {
    type Comm = TunedComm;

    fn init(context: &ComponentContext, core: Core) -> Result<Self, String> {
        let params = TunedParams::read(context)?;
        let rules = load_rules(&params).map_err(|why| {
            context.log(
                verbosity::ERROR,
                &format!("{why}; the tuned component is not used (basic serves the collectives)"),
            );
            why
        })?;
        if let Some(r) = &rules {
            let ops: Vec<&str> = r.ops().map(|o| o.name()).collect();
            context.log(
                verbosity::COMPONENT,
                &format!(
                    "rules file {} read: rules for {}",
                    params.dynamic_rules_filename,
                    ops.join(", ")
                ),
            );
        }
        Ok(TunedColl {
            params,
            rules,
            core,
            context: *context,
            noted: AtomicBool::new(false),
        })
    }

    fn comm_query(&self, comm: &CommInfo<'_>) -> Result<Offer<TunedComm>, String> {
        if comm.context == 0 && comm.rank == 0 {
            self.note_ignored();
        }
        if comm.size() < 2 {
            return Err(format!(
                "{} has one process; the tuned component serves communicators of two or more",
                comm.name
            ));
        }
        Ok(Offer {
            priority: self.params.priority,
            ops: OpSet::ALL,
            nb_ops: OpSet::ALL,
            comm: TunedComm {
                context: comm.context,
                rank: comm.rank,
                members: comm.members.to_vec(),
                scratch: Scratch::default(),
            },
        })
    }

    fn run(&self, comm: &mut TunedComm, call: &CollCall<'_>) -> Result<Served, String> {
        let n = comm.members.len() as u32;
        let (choice, _) = choose(&self.params, self.rules.as_ref(), call, n);
        let mut transport = CommTransport::new(
            &self.core,
            comm.context,
            comm.rank,
            &comm.members,
            &mut comm.scratch,
        );
        let tag = TAG_FIRST - call.kind as i32;
        // SAFETY: the MPI layer's promise for a call (`CollHandle::run`).
        block_on(unsafe { decide::run(&mut transport, call, choice, tag) }).map(|()| Served::Done)
    }

    /// The same algorithm choice as a blocking call's, over the operation's
    /// own transport and the MPI layer's tag.
    fn start(
        &self,
        comm: &mut TunedComm,
        call: &CollCall<'_>,
        tag: i32,
    ) -> Result<Operation, String> {
        let n = comm.members.len() as u32;
        let (choice, _) = choose(&self.params, self.rules.as_ref(), call, n);
        let mut owned = OwnedComm::new(self.core, comm.context, comm.rank, &comm.members);
        let call = OwnedCall::new(call);
        let future = async move {
            let view = call.view();
            let mut transport = owned.transport();
            // SAFETY: the MPI layer's promise for a started call
            // (`CollHandle::start`): its buffers are valid until the
            // operation completes.
            let run = unsafe { decide::run(&mut transport, &view, choice, tag) };
            run.await
        };
        // SAFETY: the future holds owned values, the call's buffers and
        // user operation (which MPI lets the library use from any thread
        // until completion) and the services (any thread).
        Ok(unsafe { Operation::new(future) })
    }
}

oxmpi_framework_coll::export_coll_component! {
    coll: TunedColl,
    lifecycle: Component,
    component: "tuned",
    version: Version::new(1, 0, 0),
    description: "Several algorithms per collective, chosen by fixed decision rules on \
                  communicator and message size, or by the user (dynamic rules, a rules file)",
    params: TunedParams::DECLS,
}

#[cfg(test)]
mod tests;
