//! rmaps component `round_robin`: Round-robin mapper: by slot, node, core, hwthread, package or numa.
//!
//! The mapping itself is the framework's shared, tested mapping library
//! (`oxmpi_framework_rmaps::round_robin`); this component is the unit the core
//! finds, selects by priority and asks to map a job through the
//! layout-checked `RmapsModule`. Parameter: `rmaps_round_robin_priority`
//! (default 10; mpirun tries usable mappers from the highest priority
//! down and the first that accepts the job's policy maps it).

oxmpi_framework_rmaps::export_mapper_component! {
    mapper: oxmpi_framework_rmaps::round_robin::RoundRobin,
    name: "round_robin",
    priority: 10,
    description: "Round-robin mapper: by slot, node, core, hwthread, package or numa",
}
