//! rmaps component `seq`: Sequential mapper: one process per hostfile line, in order.
//!
//! The mapping itself is the framework's shared, tested mapping library
//! (`oxmpi_framework_rmaps::seq`); this component is the unit the core
//! finds, selects by priority and asks to map a job through the
//! layout-checked `RmapsModule`. Parameter: `rmaps_seq_priority`
//! (default 60; mpirun tries usable mappers from the highest priority
//! down and the first that accepts the job's policy maps it).

oxmpi_framework_rmaps::export_mapper_component! {
    mapper: oxmpi_framework_rmaps::seq::Seq,
    name: "seq",
    priority: 60,
    description: "Sequential mapper: one process per hostfile line, in order",
}
