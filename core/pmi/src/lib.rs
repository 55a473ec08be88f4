//! The PMI-1 "simple" wire protocol of oxmpi, both sides, as MPICH's hydra
//! launcher speaks it.
//!
//! - [`wire`]: the line codec (`cmd=<name> key=value ...\n`).
//! - [`frame`]: cutting a byte stream into messages.
//! - [`server`]: [`PmiServer`], the launcher's pure state machine.
//! - [`client`]: [`PmiClient`], what a rank uses (put, barrier, get, abort,
//!   finalize), including the singleton case.
//! - [`launch`]: the environment variables that connect the two.
//! - [`kvs`]: the job's key-value space and its limits.
//! - [`mapping`]: the `PMI_process_mapping` value (which node runs which
//!   rank).
//! - [`local`]: a small thread-per-rank host for the server, for tests.

pub mod client;
pub mod error;
pub mod frame;
pub mod kvs;
pub mod launch;
pub mod local;
pub mod mapping;
pub mod server;
pub mod wire;

pub use client::PmiClient;
pub use error::PmiError;
pub use kvs::{Kvs, Maxes};
pub use launch::Launch;
pub use server::{Action, JobInfo, PmiServer};
pub use wire::{Message, WireError};
