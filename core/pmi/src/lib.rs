//! The PMI-1 "simple" wire protocol of oxmpi, both sides, as MPICH's hydra
//! launcher speaks it.
//!
//! - [`wire`]: the line codec (`cmd=<name> key=value ...\n`).
//! - [`frame`]: cutting a byte stream into messages.
//! - [`server`]: [`PmiServer`], the launcher's pure state machine.
//! - [`kvs`]: the job's key-value space and its limits.
//! - [`mapping`]: the `PMI_process_mapping` value (which node runs which
//!   rank).

pub mod frame;
pub mod kvs;
pub mod mapping;
pub mod server;
pub mod wire;

pub use kvs::{Kvs, Maxes};
pub use server::{Action, JobInfo, PmiServer};
pub use wire::{Message, WireError};
