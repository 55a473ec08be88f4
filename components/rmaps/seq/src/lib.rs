//! rmaps component `seq`: Sequential mapper: one process per hostfile line, in order.
//!
//! The mapping algorithm lives here ([`mapper`]), built on the framework's
//! shared helpers (`oxmpi_framework_rmaps::base`: node limits,
//! oversubscription, capacity messages, `:PE` reservation, the job map);
//! [`oxmpi_framework_rmaps::export_mapper_component!`] makes it the
//! component the core finds, selects by priority and asks to map a job
//! through the layout-checked `RmapsModule`. Parameter: `rmaps_seq_priority`
//! (default 60; mpirun tries usable mappers from the highest priority
//! down and the first that accepts the job's policy maps it).

#![forbid(unsafe_code)]

pub mod mapper;

oxmpi_framework_rmaps::export_mapper_component! {
    mapper: mapper::Seq,
    name: "seq",
    priority: 60,
    description: "Sequential mapper: one process per hostfile line, in order",
}

#[cfg(test)]
mod tests;
