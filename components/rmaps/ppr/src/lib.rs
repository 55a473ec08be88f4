//! rmaps component `ppr`: Processes-per-resource mapper: ppr:N:node|package|numa|core.
//!
//! The mapping itself is the framework's shared, tested mapping library
//! (`oxmpi_framework_rmaps::ppr`); this component is the unit the core
//! finds, selects by priority and asks to map a job through the
//! layout-checked `RmapsModule`. Parameter: `rmaps_ppr_priority`
//! (default 90; mpirun tries usable mappers from the highest priority
//! down and the first that accepts the job's policy maps it).

oxmpi_framework_rmaps::export_mapper_component! {
    mapper: oxmpi_framework_rmaps::ppr::Ppr,
    name: "ppr",
    priority: 90,
    description: "Processes-per-resource mapper: ppr:N:node|package|numa|core",
}
