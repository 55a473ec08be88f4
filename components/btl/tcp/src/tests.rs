//! Tests of the tcp component: two or more `TcpBtl` instances in one
//! process ("ranks") talking over loopback, driven by one thread in turn,
//! each with the btl test kit's contract-checking recorder as its pml; the
//! framing of a connection checked without sockets; the exported table;
//! and the kit's conformance suite.

mod conformance;
mod data;
mod exported;
mod failures;
mod framing;
mod handshake;
mod harness;
mod peers;
mod setup;
mod shared;
