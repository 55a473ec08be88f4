//! Communicators: the table behind [`Comm`] handles, the translation
//! between communicator and job ranks, and creating and freeing them
//! (dup, split, split by node, create from a group, free, compare).
//!
//! `MPI_COMM_WORLD` and `MPI_COMM_SELF` are entries 0 and 1 and never go;
//! their ranks and context ids are answered without the table. Every
//! other communicator is an entry made by a collective call over its
//! parent: the members agree on a context id (the AND of every member's
//! free ids over the parent, with the retry protocol of `oxmpi-groups` so
//! that creations running at once in several threads never take the same
//! id), and each member offers the new communicator to the coll
//! components. A freed entry's handle is refused afterwards; its context
//! id is free again in this process.

use super::coll::CommColl;
use super::{Comm, Error, ErrorClass, Runtime};
use abi_stable::std_types::{RSlice, RStr};
use oxmpi_framework_coll::module::{CollCall, CollKind, CommDesc, ElementCode, OpCode};
use oxmpi_groups::{split_group, validate_color, ContextIds, Group, Reservation, SplitEntry};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, RwLock};

/// The context id of `MPI_COMM_WORLD`.
pub(crate) const WORLD_CONTEXT: u32 = 0;

/// The context id of `MPI_COMM_SELF`.
pub(crate) const SELF_CONTEXT: u32 = 1;

/// One communicator.
pub(crate) struct CommEntry {
    /// Its context id.
    pub(crate) context: u32,
    /// This process's rank in it.
    pub(crate) rank: u32,
    /// Its members' job ranks, in rank order.
    pub(crate) group: Group,
    /// Its name (for messages and logs).
    pub(crate) name: String,
    /// The coll components serving it.
    pub(crate) coll: Mutex<CommColl>,
    /// Per operation code, the chosen component: what a call needs, read
    /// without `coll`'s lock (fixed from the choice until
    /// the communicator goes, when no collective runs on it).
    pub(crate) first: super::coll::FirstProviders,
    /// Whether a collective runs on it (a blocking one, or the start of a
    /// non-blocking one): a second one at once is refused
    /// (`Runtime::claim_for_collective`).
    pub(crate) collective_running: AtomicBool,
}

impl CommEntry {
    /// The entry of a communicator with `context`, this process's `rank`
    /// in `group`, its `name` and the coll components chosen for it.
    pub(crate) fn new(
        context: u32,
        rank: u32,
        group: Group,
        name: String,
        coll: CommColl,
    ) -> CommEntry {
        CommEntry {
            context,
            rank,
            group,
            name,
            first: coll.first_providers(),
            coll: Mutex::new(coll),
            collective_running: AtomicBool::new(false),
        }
    }
}

/// The communicators of this process, and the context-id pool.
pub(crate) struct Comms {
    table: RwLock<Vec<Option<Arc<CommEntry>>>>,
    /// `MPI_COMM_WORLD` and `MPI_COMM_SELF` (also in `table`), which never
    /// go before finalize: found without the table's lock.
    predefined: [Arc<CommEntry>; 2],
    ids: Mutex<ContextIds>,
}

/// How two communicators relate (`MPI_Comm_compare`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CommRelation {
    /// The same communicator (`MPI_IDENT`).
    Identical,
    /// The same members in the same order (`MPI_CONGRUENT`).
    Congruent,
    /// The same members in another order (`MPI_SIMILAR`).
    Similar,
    /// Anything else (`MPI_UNEQUAL`).
    Unequal,
}

impl Comms {
    /// The table with `MPI_COMM_WORLD` and `MPI_COMM_SELF`.
    /// The pool's ids stop at the pml's largest context id (`max_context`)
    /// when that is below the pool's default size.
    pub(crate) fn new(world: CommEntry, self_comm: CommEntry, max_context: u32) -> Comms {
        // Ids 0 and 1 (world and self) are never in the pool.
        let predefined = [Arc::new(world), Arc::new(self_comm)];
        let limit = max_context
            .saturating_add(1)
            .min(oxmpi_groups::DEFAULT_LIMIT);
        Comms {
            table: RwLock::new(predefined.iter().cloned().map(Some).collect()),
            predefined,
            ids: Mutex::new(ContextIds::with_limit(limit).unwrap_or_else(|_| ContextIds::new())),
        }
    }

    /// Every live entry (for finalize).
    pub(crate) fn take_all(&self) -> Vec<Arc<CommEntry>> {
        let mut t = self.table.write().unwrap_or_else(|e| e.into_inner());
        t.iter_mut().filter_map(Option::take).collect()
    }
}

/// The error of a handle that names no live communicator.
#[cold]
fn freed(comm: Comm) -> Error {
    Error::new(
        ErrorClass::Comm,
        format!(
            "communicator {} does not exist: it was freed, or never created",
            comm.0
        ),
    )
}

/// The name of a derived communicator.
fn derived_name(how: &str, parent: &str, context: u32) -> String {
    format!("{how} of {parent} (context {context})")
}

impl Runtime {
    /// The entry of `comm`.
    ///
    /// # Errors
    /// `Comm` for a freed or unknown handle.
    pub(crate) fn entry(&self, comm: Comm) -> Result<Arc<CommEntry>, Error> {
        if let Some(e) = self.comms.predefined.get(comm.0 as usize) {
            return Ok(e.clone());
        }
        let t = self.comms.table.read().unwrap_or_else(|e| e.into_inner());
        t.get(comm.0 as usize)
            .and_then(Option::clone)
            .ok_or_else(|| freed(comm))
    }

    /// Runs `f` on `comm`'s entry; `MPI_COMM_WORLD` and `MPI_COMM_SELF`
    /// without touching a reference count.
    ///
    /// # Errors
    /// `Comm` for a freed communicator.
    #[inline]
    pub(crate) fn with_entry<R>(
        &self,
        comm: Comm,
        f: impl FnOnce(&CommEntry) -> R,
    ) -> Result<R, Error> {
        match self.comms.predefined.get(comm.0 as usize) {
            Some(e) => Ok(f(e)),
            None => Ok(f(&*self.entry(comm)?)),
        }
    }

    /// `comm`'s context id.
    #[inline]
    pub(crate) fn context_of(&self, comm: Comm) -> Result<u32, Error> {
        match comm {
            Comm::World => Ok(WORLD_CONTEXT),
            Comm::SelfComm => Ok(SELF_CONTEXT),
            _ => Ok(self.entry(comm)?.context),
        }
    }

    /// `comm`'s name.
    pub fn comm_name(&self, comm: Comm) -> String {
        match comm {
            Comm::World => "MPI_COMM_WORLD".into(),
            Comm::SelfComm => "MPI_COMM_SELF".into(),
            _ => self.entry(comm).map_or_else(
                |_| format!("communicator {} (freed)", comm.0),
                |e| e.name.clone(),
            ),
        }
    }

    /// The rank in `comm` of job rank `world` (`None` if not a member).
    pub(crate) fn comm_source(&self, comm: Comm, world: i32) -> Option<i32> {
        match comm {
            Comm::World => Some(world),
            Comm::SelfComm => Some(0),
            _ => {
                let e = self.entry(comm).ok()?;
                e.group
                    .rank_of(u32::try_from(world).ok()?)
                    .map(|r| r as i32)
            }
        }
    }

    /// The members of `comm` as a group of job ranks.
    ///
    /// # Errors
    /// `Comm` for a freed handle.
    pub fn comm_group(&self, comm: Comm) -> Result<Group, Error> {
        match comm {
            Comm::World => Ok(Group::world(self.size)),
            Comm::SelfComm => Group::new(vec![self.rank])
                .map_err(|e| Error::new(ErrorClass::Other, e.to_string())),
            _ => Ok(self.entry(comm)?.group.clone()),
        }
    }

    /// An allreduce over `comm` of `words` with `op` (for the agreements
    /// below).
    fn agree(&self, comm: Comm, words: &mut [u64], op: OpCode) -> Result<(), Error> {
        let mut call = CollCall::new(CollKind::Allreduce);
        call.recv = words.as_mut_ptr().cast();
        call.count = words.len();
        call.element = ElementCode::UInt64;
        call.op = op;
        // SAFETY: `words` holds `count` u64s for the call (in place).
        unsafe { self.collective(comm, &call) }
    }

    /// A context id every member of `parent` agrees on, claimed here.
    fn agree_on_context(&self, parent: Comm) -> Result<u32, Error> {
        let priority = u64::from(self.context_of(parent)?);
        let lock = || self.comms.ids.lock().unwrap_or_else(|e| e.into_inner());
        let fail = |e: &dyn std::fmt::Display| Error::new(ErrorClass::Other, e.to_string());
        lock().begin_creation(priority).map_err(|e| fail(&e))?;
        let outcome = (|| loop {
            let mut mask = lock().round_mask(priority).map_err(|e| fail(&e))?;
            self.agree(parent, &mut mask, OpCode::Band)?;
            let reservation = lock().reserve_tentative(&mask).map_err(|e| fail(&e))?;
            let (ok, reserved) = match reservation {
                Reservation::Reserved(id) => (true, Some(id)),
                Reservation::Busy(_) | Reservation::Contended => (false, None),
                Reservation::Exhausted => {
                    let bound = if self.limits.max_context < oxmpi_groups::DEFAULT_LIMIT {
                        format!(
                            " (the {} pml carries context ids up to {})",
                            self.pml_name, self.limits.max_context
                        )
                    } else {
                        String::new()
                    };
                    return Err(Error::new(
                        ErrorClass::Other,
                        format!("no context id is free in every member: too many communicators exist{bound}; free some"),
                    ));
                }
            };
            let mut vote = [u64::from(ok)];
            self.agree(parent, &mut vote, OpCode::Band)?;
            match (vote[0] == 1, reserved) {
                (true, Some(id)) => {
                    lock().confirm(id).map_err(|e| fail(&e))?;
                    return Ok(id);
                }
                (_, Some(id)) => lock().abandon(id).map_err(|e| fail(&e))?,
                _ => {}
            }
        })();
        // Only fails for a priority that did not begin, which cannot be.
        let _ = lock().end_creation(priority);
        outcome
    }

    /// Makes the entry of a communicator of `group` (which holds this
    /// process) with `context`, offers it to the coll components and
    /// returns its handle.
    fn install(&self, group: Group, context: u32, name: String) -> Result<Comm, Error> {
        let rank = group.rank_of(self.rank).ok_or_else(|| {
            Error::new(
                ErrorClass::Other,
                "internal error: a new communicator without this process",
            )
        })?;
        let coll = {
            let colls = self.colls.lock().unwrap_or_else(|e| e.into_inner());
            colls.choose(&CommDesc {
                context,
                rank,
                members: RSlice::from_slice(group.members()),
                name: RStr::from_str(&name),
            })
        };
        let entry = Arc::new(CommEntry::new(context, rank, group, name, coll));
        let mut t = self.comms.table.write().unwrap_or_else(|e| e.into_inner());
        let slot = match t.iter().skip(2).position(Option::is_none) {
            Some(i) => i + 2,
            None => {
                t.push(None);
                t.len() - 1
            }
        };
        t[slot] = Some(entry);
        Ok(Comm(slot as u32))
    }

    /// Gives context id `id` back to this process's pool.
    fn release_context(&self, id: u32) {
        // Fails only for an id not in use, which every caller just claimed.
        let _ = self
            .comms
            .ids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .release(id);
    }

    /// `MPI_Comm_dup`: a new communicator of the same members, in the same
    /// order, with a context of its own. Collective over `comm`.
    ///
    /// # Errors
    /// `Comm` for a freed handle; the agreement's errors.
    pub fn comm_dup(&self, comm: Comm) -> Result<Comm, Error> {
        let group = self.comm_group(comm)?;
        let context = self.agree_on_context(comm)?;
        let name = derived_name("dup", &self.comm_name(comm), context);
        self.install(group, context, name)
    }

    /// `MPI_Comm_split`: the members of `comm` with the same `color` form
    /// a communicator, ranked by `key` then by their rank in `comm`;
    /// `None` for a process whose color is [`oxmpi_groups::UNDEFINED`].
    /// Collective over `comm`.
    ///
    /// # Errors
    /// `Arg` for a negative color other than `UNDEFINED` (every member
    /// fails alike); `Comm`; the agreement's errors.
    pub fn comm_split(&self, comm: Comm, color: i32, key: i32) -> Result<Option<Comm>, Error> {
        let parent = self.comm_group(comm)?;
        let n = parent.size() as usize;
        // Every member's (color, key), as two u64 words (sign kept).
        let mut all = vec![0u64; 2 * n];
        let mine = [color as u32 as u64, key as u32 as u64];
        let mut call = CollCall::new(CollKind::Allgather);
        call.send = mine.as_ptr().cast();
        call.recv = all.as_mut_ptr().cast();
        call.count = 16;
        // SAFETY: 16 bytes to send, 16 per member to receive.
        unsafe { self.collective(comm, &call) }?;
        let entries: Vec<SplitEntry> = all
            .chunks_exact(2)
            .map(|w| SplitEntry {
                color: w[0] as u32 as i32,
                key: w[1] as u32 as i32,
            })
            .collect();
        // Checked after the exchange, so every member fails alike.
        for e in &entries {
            validate_color(e.color).map_err(|e| Error::new(ErrorClass::Arg, e.to_string()))?;
        }
        let context = self.agree_on_context(comm)?;
        let group = split_group(&parent, &entries, color)
            .map_err(|e| Error::new(ErrorClass::Arg, e.to_string()))?;
        match group {
            None => {
                // Not a member of any part: the id this process agreed to
                // is not used here.
                self.release_context(context);
                Ok(None)
            }
            Some(g) => {
                let name = derived_name(
                    &format!("split (color {color})"),
                    &self.comm_name(comm),
                    context,
                );
                self.install(g, context, name).map(Some)
            }
        }
    }

    /// `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)`: the members of `comm`
    /// on this node, ranked by `key` then by their rank in `comm`.
    /// Collective over `comm`.
    ///
    /// # Errors
    /// As [`Runtime::comm_split`].
    pub fn comm_split_shared(&self, comm: Comm, key: i32) -> Result<Comm, Error> {
        // The node: its host name and boot id, hashed to a color every
        // process of the node computes alike.
        let node = node_color();
        let parent = self.comm_group(comm)?;
        let n = parent.size() as usize;
        let mut colors = vec![0u64; n];
        let mine = [node];
        let mut call = CollCall::new(CollKind::Allgather);
        call.send = mine.as_ptr().cast();
        call.recv = colors.as_mut_ptr().cast();
        call.count = 8;
        // SAFETY: 8 bytes to send, 8 per member to receive.
        unsafe { self.collective(comm, &call) }?;
        // The color of a node: the comm rank of its first process.
        let color = colors.iter().position(|&c| c == node).unwrap_or(0) as i32;
        self.comm_split(comm, color, key)?.ok_or_else(|| {
            Error::new(
                ErrorClass::Other,
                "internal error: a shared split left this process out",
            )
        })
    }

    /// `MPI_Comm_create`: a communicator of the members of `group` (a
    /// subset of `comm`'s, in `group`'s order); `None` for a process not
    /// in it. Collective over `comm`; every member passes the same group.
    ///
    /// # Errors
    /// `Group` when `group` has a process outside `comm`; `Comm`; the
    /// agreement's errors.
    pub fn comm_create(&self, comm: Comm, group: &Group) -> Result<Option<Comm>, Error> {
        let parent = self.comm_group(comm)?;
        if let Some(&w) = group.members().iter().find(|&&w| !parent.contains(w)) {
            return Err(Error::new(
                ErrorClass::Group,
                format!(
                    "the group has job rank {w}, which is not in {}; a communicator made from {} can only have its members",
                    self.comm_name(comm),
                    self.comm_name(comm)
                ),
            ));
        }
        let context = self.agree_on_context(comm)?;
        if !group.contains(self.rank) {
            self.release_context(context);
            return Ok(None);
        }
        let name = derived_name("create", &self.comm_name(comm), context);
        self.install(group.clone(), context, name).map(Some)
    }

    /// `MPI_Comm_free`: the handle no longer names a communicator; its
    /// coll modules are released and its context id is free again here.
    /// Operations still pending on it complete; their statuses name the
    /// source by job rank if the communicator is gone by then.
    ///
    /// # Errors
    /// `Comm` for `MPI_COMM_WORLD`, `MPI_COMM_SELF` or a freed handle.
    pub fn comm_free(&self, comm: Comm) -> Result<(), Error> {
        if comm == Comm::World || comm == Comm::SelfComm {
            return Err(Error::new(
                ErrorClass::Comm,
                format!("{} cannot be freed", self.comm_name(comm)),
            ));
        }
        let entry = {
            let mut t = self.comms.table.write().unwrap_or_else(|e| e.into_inner());
            t.get_mut(comm.0 as usize)
                .and_then(Option::take)
                .ok_or_else(|| freed(comm))?
        };
        {
            let colls = self.colls.lock().unwrap_or_else(|e| e.into_inner());
            colls.release(&mut entry.coll.lock().unwrap_or_else(|e| e.into_inner()));
        }
        self.release_context(entry.context);
        Ok(())
    }

    /// `MPI_Comm_compare`.
    ///
    /// # Errors
    /// `Comm` for a freed handle.
    pub fn comm_compare(&self, a: Comm, b: Comm) -> Result<CommRelation, Error> {
        if a == b {
            self.comm_group(a)?;
            return Ok(CommRelation::Identical);
        }
        let (ga, gb) = (self.comm_group(a)?, self.comm_group(b)?);
        Ok(match ga.compare(&gb) {
            oxmpi_groups::Comparison::Ident => CommRelation::Congruent,
            oxmpi_groups::Comparison::Similar => CommRelation::Similar,
            oxmpi_groups::Comparison::Unequal => CommRelation::Unequal,
        })
    }
}

/// This node's color for a shared split: a hash of the host name and the
/// boot id (processes of one node agree; of two nodes, almost surely not).
fn node_color() -> u64 {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    // FNV-1a: the same in every process, whatever build made it.
    let text = format!("{}\n{}", host.trim(), boot.trim());
    text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
