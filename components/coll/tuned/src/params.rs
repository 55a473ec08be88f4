//! The tuned component's parameters (full names `coll_tuned_<name>`) and
//! the algorithm enums of the operations users can force, numbered as Open
//! MPI numbers them where oxmpi has the same algorithm (so existing rules
//! files and settings keep their meaning).

use oxmpi_plugin_api::{ParamEnum, Params};

/// `coll_tuned_allreduce_algorithm`.
#[derive(ParamEnum, Copy, Clone, Debug, PartialEq, Eq)]
pub enum AllreduceAlgorithm {
    /// The fixed decision.
    Ignore = 0,
    /// Reduce to rank 0, then bcast, both linear.
    BasicLinear = 1,
    /// Reduce, then bcast (binomial trees).
    Nonoverlapping = 2,
    /// Recursive doubling.
    RecursiveDoubling = 3,
    /// Ring (reduce-scatter, then allgather).
    Ring = 4,
    /// Ring in segments of `coll_tuned_allreduce_algorithm_segmentsize`.
    SegmentedRing = 5,
    /// Recursive halving, then recursive doubling.
    Rabenseifner = 6,
}

/// `coll_tuned_bcast_algorithm`.
#[derive(ParamEnum, Copy, Clone, Debug, PartialEq, Eq)]
pub enum BcastAlgorithm {
    /// The fixed decision.
    Ignore = 0,
    /// The root sends to every rank.
    BasicLinear = 1,
    /// A chain in segments of `coll_tuned_bcast_algorithm_segmentsize`.
    Pipeline = 3,
    /// A binomial tree.
    Binomial = 6,
    /// Scatter, then allgather.
    ScatterAllgather = 8,
}

/// `coll_tuned_reduce_algorithm`.
#[derive(ParamEnum, Copy, Clone, Debug, PartialEq, Eq)]
pub enum ReduceAlgorithm {
    /// The fixed decision.
    Ignore = 0,
    /// Every rank sends to the root.
    Linear = 1,
    /// A chain in segments of `coll_tuned_reduce_algorithm_segmentsize`.
    Pipeline = 3,
    /// A binomial tree.
    Binomial = 5,
}

/// `coll_tuned_barrier_algorithm`.
#[derive(ParamEnum, Copy, Clone, Debug, PartialEq, Eq)]
pub enum BarrierAlgorithm {
    /// The fixed decision.
    Ignore = 0,
    /// Fan-in to rank 0, fan-out.
    Linear = 1,
    /// Recursive doubling.
    RecursiveDoubling = 3,
    /// Bruck.
    Bruck = 4,
    /// Dissemination.
    Dissemination = 7,
}

/// `coll_tuned_alltoall_algorithm`.
#[derive(ParamEnum, Copy, Clone, Debug, PartialEq, Eq)]
pub enum AlltoallAlgorithm {
    /// The fixed decision.
    Ignore = 0,
    /// Every send and receive posted at once.
    Linear = 1,
    /// One partner per step.
    Pairwise = 2,
    /// Bruck's log-step exchange.
    ModifiedBruck = 3,
}

/// `coll_tuned_allgather_algorithm`.
#[derive(ParamEnum, Copy, Clone, Debug, PartialEq, Eq)]
pub enum AllgatherAlgorithm {
    /// The fixed decision.
    Ignore = 0,
    /// Gather to rank 0, then bcast.
    Linear = 1,
    /// Bruck.
    Bruck = 2,
    /// Recursive doubling (Bruck when the size is not a power of two).
    RecursiveDoubling = 3,
    /// Ring.
    Ring = 4,
}

/// `coll_tuned_gather_algorithm` and `coll_tuned_scatter_algorithm`.
#[derive(ParamEnum, Copy, Clone, Debug, PartialEq, Eq)]
pub enum RootedAlgorithm {
    /// The fixed decision.
    Ignore = 0,
    /// The root talks to every rank.
    BasicLinear = 1,
    /// A binomial tree.
    Binomial = 2,
}

/// The resolved parameters. Each field's doc comment is its help text.
#[derive(Params, Clone, Debug, PartialEq)]
pub struct TunedParams {
    /// Priority of the tuned component (default 30, Open MPI's): each operation of a
    /// communicator comes from the highest-priority component that provides it.
    #[param(default = "30", level = Developer(All))]
    pub priority: i32,
    /// Whether the coll_tuned_<op>_algorithm parameters and the rules file are used; without
    /// it tuned uses its fixed decision rules and says so once when an algorithm parameter is
    /// set.
    #[param(default = "false", level = Tuner(Basic))]
    pub use_dynamic_rules: bool,
    /// A rules file (Open MPI's format: per collective, communicator sizes, and per size
    /// message sizes with an algorithm, a fan-out and a segment size) consulted when
    /// coll_tuned_use_dynamic_rules is true and no coll_tuned_<op>_algorithm forces the
    /// operation. Empty: none.
    #[param(default = "", level = Tuner(Detailed))]
    pub dynamic_rules_filename: String,
    /// Which allreduce algorithm to use when coll_tuned_use_dynamic_rules is true (ignore: the
    /// rules file or the fixed decision).
    #[param(default = "ignore", level = Tuner(Detailed))]
    pub allreduce_algorithm: AllreduceAlgorithm,
    /// Segment size in bytes of the segmented ring allreduce (0: 64 KiB).
    #[param(default = "0", level = Tuner(Detailed), range = 0..=1073741824)]
    pub allreduce_algorithm_segmentsize: usize,
    /// Which bcast algorithm to use when coll_tuned_use_dynamic_rules is true.
    #[param(default = "ignore", level = Tuner(Detailed))]
    pub bcast_algorithm: BcastAlgorithm,
    /// Segment size in bytes of the pipeline bcast (0: 64 KiB).
    #[param(default = "0", level = Tuner(Detailed), range = 0..=1073741824)]
    pub bcast_algorithm_segmentsize: usize,
    /// Which reduce algorithm to use when coll_tuned_use_dynamic_rules is true.
    #[param(default = "ignore", level = Tuner(Detailed))]
    pub reduce_algorithm: ReduceAlgorithm,
    /// Segment size in bytes of the pipeline reduce (0: 64 KiB).
    #[param(default = "0", level = Tuner(Detailed), range = 0..=1073741824)]
    pub reduce_algorithm_segmentsize: usize,
    /// Which barrier algorithm to use when coll_tuned_use_dynamic_rules is true.
    #[param(default = "ignore", level = Tuner(Detailed))]
    pub barrier_algorithm: BarrierAlgorithm,
    /// Which alltoall algorithm to use when coll_tuned_use_dynamic_rules is true.
    #[param(default = "ignore", level = Tuner(Detailed))]
    pub alltoall_algorithm: AlltoallAlgorithm,
    /// Which allgather algorithm to use when coll_tuned_use_dynamic_rules is true.
    #[param(default = "ignore", level = Tuner(Detailed))]
    pub allgather_algorithm: AllgatherAlgorithm,
    /// Which gather algorithm to use when coll_tuned_use_dynamic_rules is true.
    #[param(default = "ignore", level = Tuner(Detailed))]
    pub gather_algorithm: RootedAlgorithm,
    /// Which scatter algorithm to use when coll_tuned_use_dynamic_rules is true.
    #[param(default = "ignore", level = Tuner(Detailed))]
    pub scatter_algorithm: RootedAlgorithm,
}

impl TunedParams {
    /// The `coll_tuned_<op>_algorithm` parameters set to something other
    /// than `ignore`: (parameter name, value name).
    pub fn forced(&self) -> Vec<(&'static str, &'static str)> {
        fn set<E: ParamEnum>(name: &'static str, e: E) -> Option<(&'static str, &'static str)> {
            (e.number() != 0).then(|| (name, e.name()))
        }
        [
            set("coll_tuned_allreduce_algorithm", self.allreduce_algorithm),
            set("coll_tuned_bcast_algorithm", self.bcast_algorithm),
            set("coll_tuned_reduce_algorithm", self.reduce_algorithm),
            set("coll_tuned_barrier_algorithm", self.barrier_algorithm),
            set("coll_tuned_alltoall_algorithm", self.alltoall_algorithm),
            set("coll_tuned_allgather_algorithm", self.allgather_algorithm),
            set("coll_tuned_gather_algorithm", self.gather_algorithm),
            set("coll_tuned_scatter_algorithm", self.scatter_algorithm),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}
