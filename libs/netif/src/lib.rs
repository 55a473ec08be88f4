//! Network interface lists, reachability and pairing for oxmpi's network
//! components (today the tcp btl): pure code, no process state, no
//! parameter names of its own.
//!
//! - [`interfaces`]: one entry per address of a host, networks and devices;
//! - [`if_list`]: include/exclude lists (names, patterns, addresses,
//!   networks), parsed and applied with the caller's parameter names
//!   ([`if_list::ParamNames`]) in every message;
//! - [`reachability`]: the weight of a connection between two interfaces;
//! - [`matching`]: the maximum-weight pairing of a host's interfaces with a
//!   peer's (Kuhn–Munkres).

#![forbid(unsafe_code)]

pub mod if_list;
pub mod interfaces;
pub mod matching;
pub mod reachability;
#[cfg(test)]
mod tests;
