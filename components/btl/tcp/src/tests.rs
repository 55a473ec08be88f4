//! Tests of the tcp component: two or more `TcpBtl` instances in one
//! process ("ranks") talking over loopback, driven by one thread in turn.

mod conformance;
mod data;
mod framing;
mod handshake;
mod harness;
mod setup;
mod shared;
