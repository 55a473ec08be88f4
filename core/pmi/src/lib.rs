//! The PMI-1 "simple" wire protocol of oxmpi, both sides, as MPICH's hydra
//! launcher speaks it.
//!
//! - [`wire`]: the line codec (`cmd=<name> key=value ...\n`).
//! - [`frame`]: cutting a byte stream into messages.

pub mod frame;
pub mod wire;

pub use wire::{Message, WireError};
