//! The sm component's parameters (full names `coll_sm_<name>`), declared
//! once here next to [`Limits`], which is how the rest of the component
//! reads them.

use crate::segment::Slots;
use oxmpi_plugin_api::Params;

/// The component's parameters.
#[derive(Params, Clone, Debug, PartialEq, Eq)]
pub struct SmParams {
    /// Priority of the sm coll component for communicators whose processes share this node
    /// (default 40, above tuned's 30): each operation of a communicator comes from the
    /// highest-priority component that provides it; calls larger than coll_sm_max_size go to
    /// the next one.
    #[param(default = "40",
        level = Developer(All))]
    pub priority: i32,
    /// Bytes of each data slot of the shared segment (each process of a communicator has
    /// coll_sm_buffers of them, used by turns). A call's data moves through the slots in pieces
    /// of at most this size, pipelined; the segment of a communicator of n processes holds n
    /// times coll_sm_buffers slots (tmpfs gives pages only as they are touched). The creator's
    /// value holds for the whole communicator.
    #[param(default = "32k",
        level = Tuner(Basic),
        size,
        range = 4096..=1073741824)]
    pub slot_size: usize,
    /// Slots of each process in the shared segment, used by turns: a process may run this many
    /// steps ahead of the slowest reader of its slot (a bcast root, the senders of a reduce),
    /// and a call larger than a slot is pipelined through them. The creator's value holds for
    /// the whole communicator.
    #[param(default = "32", level = Tuner(Detailed), range = 2..=256)]
    pub buffers: u32,
    /// Small slots (120 bytes each, 128 with their flag) of each process in the shared segment,
    /// used by turns for the pieces of bcast, gather and reduce that fit in one: a bcast root or
    /// the senders of a reduce of small data may run this many calls ahead of the slowest
    /// reader, which keeps them going while a reader waits for a core on an oversubscribed node.
    /// The creator's value holds for the whole communicator.
    #[param(default = "512", level = Tuner(Detailed), range = 2..=65536)]
    pub small_buffers: u32,
    /// Largest call the sm component takes, in bytes per process (bcast: the buffer;
    /// reductions: the vector; gather, scatter, allgather, alltoall: the bytes each process
    /// sends or receives in all). Larger calls go to the next component by priority (tuned). 0
    /// passes every call on but barriers. Every process of a job must use the same value.
    #[param(default = "4m", level = Tuner(Basic), size)]
    pub max_size: usize,
    /// Bytes of each data slot of the segments this process creates on a node with more of the
    /// job's processes than cores, in place of coll_sm_slot_size (0 keeps coll_sm_slot_size and
    /// coll_sm_buffers there too). There every step that waits for every process costs a round
    /// of the scheduler, so fewer, larger pieces make large allreduces and alltoalls several
    /// times faster. The creator's value holds for the whole communicator.
    #[param(default = "128k",
        level = Tuner(Detailed),
        size,
        range = 0..=1073741824)]
    pub oversubscribed_slot_size: usize,
    /// Slots of each process in the segments this process creates on a node with more of the
    /// job's processes than cores, in place of coll_sm_buffers, when
    /// coll_sm_oversubscribed_slot_size is not 0. The creator's value holds for the whole
    /// communicator.
    #[param(default = "16", level = Tuner(Detailed), range = 2..=256)]
    pub oversubscribed_buffers: u32,
    /// Times a process checks a flag of the shared segment before its wait starts giving the
    /// core away (sched_yield) between checks. On a node with more of the job's processes than
    /// cores, sm yields after at most 16 checks whatever this says.
    #[param(default = "1000",
        level = Tuner(Detailed),
        range = 0..=100000000)]
    pub spin_count: u32,
    /// While a wait on the shared segment yields the core, one round of the MPI layer's
    /// progress engine runs every this many yields, so point-to-point traffic keeps moving
    /// during a long wait.
    #[param(default = "16",
        level = Tuner(Detailed),
        range = 1..=1000000)]
    pub progress_every: u32,
    /// Milliseconds a process waits, at a communicator's first sm collective, for the shared
    /// segment to appear (its other processes) or for every process to map it (its creator, the
    /// lowest rank), before the collective fails with an error that names the file.
    #[param(default = "120000",
        level = Tuner(Detailed),
        range = 1..=86400000)]
    pub attach_timeout_ms: u32,
}

/// The figures the collectives run with, from [`SmParams`] and the node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The slots of each process in a segment this process creates.
    pub slots: Slots,
    /// Largest call taken, in bytes per process.
    pub max_size: usize,
    /// Checks of a flag before yielding.
    pub spin_count: u32,
    /// Yields between two rounds of progress.
    pub progress_every: u32,
    /// How long to wait for the segment at a communicator's first call.
    pub attach_timeout: std::time::Duration,
}

/// The smallest slot (coll_sm_slot_size's lower bound).
pub const MIN_SLOT_SIZE: usize = 4096;

/// Spins at most, on a node with more of the job's processes than cores.
pub const OVERSUBSCRIBED_SPINS: u32 = 16;

/// The node's online processors (`/sys/devices/system/cpu/online`, a list
/// of ranges such as `0-3,6`), not this process's affinity: a rank bound
/// to one core still shares the node with the others. Falls back to the
/// processors this process may use.
pub fn node_cores() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|text| count_cpu_list(&text))
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The processors in a kernel CPU list (`0-3,6`), if it parses.
pub fn count_cpu_list(text: &str) -> Option<usize> {
    let mut total = 0usize;
    for part in text.trim().split(',') {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.parse::<usize>().ok()?, b.parse::<usize>().ok()?),
            None => {
                let a = part.parse::<usize>().ok()?;
                (a, a)
            }
        };
        total += b.checked_sub(a)? + 1;
    }
    (total > 0).then_some(total)
}

impl Limits {
    /// The limits of `params` on a node where `local_size` of the job's
    /// processes share `cores` cores (when they do not fit: fewer spins,
    /// and the oversubscribed slots).
    ///
    /// # Errors
    ///
    /// `coll_sm_oversubscribed_slot_size` is neither 0 nor at least
    /// [`MIN_SLOT_SIZE`].
    pub fn new(params: &SmParams, local_size: u32, cores: usize) -> Result<Limits, String> {
        if (1..MIN_SLOT_SIZE).contains(&params.oversubscribed_slot_size) {
            return Err(format!(
                "coll_sm_oversubscribed_slot_size is {} bytes: it takes 0 (use coll_sm_slot_size) \
                 or at least {MIN_SLOT_SIZE}",
                params.oversubscribed_slot_size
            ));
        }
        let oversubscribed = local_size as usize > cores;
        let spin_count = if oversubscribed {
            params.spin_count.min(OVERSUBSCRIBED_SPINS)
        } else {
            params.spin_count
        };
        let (slot_size, buffers) = if oversubscribed && params.oversubscribed_slot_size > 0 {
            (
                params.oversubscribed_slot_size,
                params.oversubscribed_buffers,
            )
        } else {
            (params.slot_size, params.buffers)
        };
        Ok(Limits {
            slots: Slots {
                size: slot_size,
                buffers: buffers as usize,
                small_buffers: params.small_buffers as usize,
            },
            max_size: params.max_size,
            spin_count,
            progress_every: params.progress_every,
            attach_timeout: std::time::Duration::from_millis(u64::from(params.attach_timeout_ms)),
        })
    }
}
