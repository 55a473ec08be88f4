//! btl component `tcp`: moves fragments between processes over TCP
//! sockets (reference 001, see `docs/references.md`).
//!
//! # Interfaces and modules
//!
//! The local interfaces come from `getifaddrs` (one entry per address,
//! with the device's `/sys/class/net/<dev>/speed` as bandwidth, 100 Mbit/s
//! when unknown). `btl_tcp_if_include` / `btl_tcp_if_exclude` choose among
//! them with the framework's [`IfSelection`](oxmpi_netif::if_list::IfSelection)
//! (names, patterns, CIDR networks matched exactly, addresses; loopback
//! only when the include list names it; one address per device, a device
//! with several candidate addresses refused with advice). Setting both
//! lists is an error: the component's query fails with a message naming
//! both parameters (Open MPI instead disables tcp silently).
//! `btl_tcp_disable_family` leaves out IPv4 or IPv6.
//!
//! Every selected address gets one module per link (`btl_tcp_links`),
//! labelled `tcp <name> link <k>`, module index `interface * links + k`.
//! Link 0 has the interface's bandwidth (`btl_tcp_bandwidth`, or the link
//! speed) and `btl_tcp_latency`; every further link half the bandwidth and
//! twice the latency, as Open MPI does.
//!
//! # Listening
//!
//! One nonblocking listener per selected address, bound to that address
//! (not `INADDR_ANY`: the process accepts connections only where the
//! lists allow it), `SO_REUSEADDR` off. The port is the first free one of
//! `btl_tcp_port_min_v4 .. +btl_tcp_port_range_v4` (`_v6` for IPv6),
//! tried in order; with the defaults (1024, 64511) that is the first free
//! port from 1024 up (ranks of one host get 1024, 1025, …; a bind attempt
//! costs about a microsecond, so even a long scan is short). Port minimum
//! 0 lets the system choose. `listening on <addr>:<port> (tcp <name>)` is
//! logged at `btl_base_verbose` ≥ 20.
//!
//! # Contact card
//!
//! A compact binary card (see [`card`] for the exact format, version byte
//! first): the link count and, per selected interface, family, loopback
//! flag, prefix length, port, bandwidth, kernel index, address and name.
//! `add_peer` decodes it; a damaged card is a clear reason, never a panic.
//!
//! # Pairing
//!
//! `add_peer(module, peer, card)` pairs this process's selected interfaces
//! with the peer's by reference 001 §11's weighted reachability and a
//! maximum-weight bipartite matching (the framework's
//! [`pair_interfaces`](oxmpi_netif::matching::pair_interfaces)):
//! at most one connection per interface on either side. The module's
//! interface either has a partner (the endpoint connects to the partner's
//! address and port, on the module's link) or the module cannot reach the
//! peer, and the reason says why. A process is never its own peer (that
//! is the self btl's job).
//!
//! # Connections
//!
//! - **Lazy, never closed**: the first `send` to an endpoint that has no
//!   connection from the peer to use (below) starts a nonblocking
//!   `connect` from the module's own address (bound, port 0); fragments
//!   are queued until the handshake completes. A connection stays open
//!   until `finalize`.
//! - **Both directions**: a connection carries fragments both ways, so
//!   two processes that talk normally share one socket per link (with a
//!   socket per direction, data never carried the other side's ACKs and
//!   the kernel sent extra pure-ACK segments on the latency path). The
//!   rule, per endpoint (module, peer): at its first send the endpoint
//!   chooses its sending socket and never changes it (so its fragments
//!   stay in order): the connection the peer made to this module, if one
//!   is established and joins the same two addresses (logged at 30:
//!   `sending to rank R on the connection it made from A:P (<label>)`),
//!   otherwise a connection of its own. Every established socket, made or
//!   accepted, is read. When both processes send first at the same time,
//!   both connect: the pair keeps two sockets, each process sending on
//!   the one it made and reading both.
//! - **Options**: `TCP_NODELAY` (unless `btl_tcp_use_nagle`),
//!   `SO_SNDBUF`/`SO_RCVBUF` when `btl_tcp_sndbuf`/`_rcvbuf` are not 0
//!   (an accepted socket inherits the buffer sizes from its listener and
//!   gets `TCP_NODELAY` when it is first used for sending).
//! - **Logging**: at `btl_base_verbose` ≥ 30 each `connect()` attempt is
//!   logged as `attempting to connect() to address A on port P (rank R,
//!   tcp eth0 link 0, from L)`, then its outcome (`connect() to address A
//!   on port P (rank R) succeeded` / `failed: <error>`), then
//!   `connected to rank R at A:P (<label>)` after the handshake.
//!
//! # Handshake
//!
//! The connector sends a 48-byte hello (magic, protocol version, link,
//! target interface, its rank, the job size, the job id, the 16-byte job
//! secret; [`wire`]); the acceptor checks all of it (the secret in
//! constant time) plus that the rank is another rank of the job, that the
//! target interface is the one it arrived on, that the link exists and
//! that the rank has no connection on that module yet, then answers a
//! 16-byte acknowledgement with its own rank, which the connector checks
//! before sending any data (it reads exactly the acknowledgement's bytes,
//! so its reader of the connection starts at the first frame). An accepted connection that fails any check,
//! closes early, or sends no complete hello within 2 s is closed and
//! logged at level 0 (shown by default):
//!
//! `refused a tcp connection from <addr:port> to <addr:port> (tcp <name>):
//! <reason>; closed it without delivering anything`
//!
//! Nothing from such a connection reaches the pml. The secret is a shared
//! token: it keeps strangers out, it does not encrypt or authenticate the
//! data stream against an on-path attacker.
//!
//! # Data path
//!
//! A frame is a 12-byte frame header (marker, pml header length, payload
//! length), the pml header and the payload. Sending: when the connection
//! is up and nothing is queued, one system call: a plain `send` of header
//! and payload copied together for payloads up to 256 bytes, a gathered
//! `sendmsg` of both for larger ones. All written → `Done`; otherwise the
//! header is copied into the queue entry (fixed-size, no allocation in
//! steady state), the pml's payload token kept and the send answered
//! `Queued` (`Done` if it has no payload), and progress writes the rest
//! (gathering up to 32 queued fragments per `sendmsg`) and gives the token
//! back (`send_done`, the receiver's `on_send_done`).
//!
//! Receiving: progress `recv`s each established connection into its 256 KiB
//! buffer and delivers every complete frame; a read shorter than asked
//! means the socket is empty, so the connection is left until the next
//! call (one system call per poll). When the pml answers a header with a
//! destination (`on_header`), the payload bytes already buffered are copied there and
//! the rest (from 4 KiB on) is received straight into it; after a
//! fragment of 16 KiB or more the next read takes only a header's worth
//! of bytes, so that large payloads land in their destination instead of
//! the buffer. Work per connection per call is bounded (16 `recv`s). Up
//! to 4 established connections are polled with one `recv` each; with
//! more, one `epoll_wait(0)` says which are readable. Every 64th progress
//! call asks an epoll set of the listeners whether a connection waits (an
//! `accept` that finds nothing is expensive).
//!
//! # Failure and finalize
//!
//! End of stream, a read or write error, or a damaged stream on any
//! connection with a peer reports the peer once per module through
//! `peer_failed` (`on_peer_failed`; fragments complete before the failure
//! are delivered first); from then on sends to it on that module answer
//! `Failed`, and its queued fragments are dropped without `send_done`. A
//! failed `connect()` or handshake does the same. Nothing is retried.
//!
//! `finalize` first writes one goodbye frame on every established socket
//! (except an endpoint's sending socket with fragments still queued on
//! it: a goodbye would land inside a frame), then closes everything. A
//! peer that receives the goodbye does not report the process as failed
//! when its connections close; after a goodbye a reset counts as a clean
//! end too (when both sides say goodbye on a shared socket, the first to
//! close may leave the other's goodbye unread, which resets the
//! connection). A process that dies without finalizing is reported. A
//! send to a peer that has finalized fails (reported, with a reason
//! saying so).
//!
//! # Entry points and threads
//!
//! [`TcpBtl`] implements the framework's safe
//! [`Btl`](oxmpi_framework_btl::adapter::Btl) trait, and
//! [`export_btl_component!`](oxmpi_framework_btl::export_btl_component)
//! generates the `extern "C"` table ([`MODULE`]) around one
//! process-global instance: each entry takes it exclusively (a nested or
//! concurrent call is refused, in every build), a panic is caught and
//! stops the component, and the next progress call then reports every
//! peer it knew as failed once ([`TcpBtl::stop`]). The pml's callbacks
//! exist only inside `progress` (a [`Pml`](oxmpi_framework_btl::adapter::Pml)
//! passed down to the readers and writers), so nothing calls the pml
//! back from `send` or `add_peer`. A queued fragment keeps the pml's
//! [`Payload`](oxmpi_framework_btl::adapter::Payload) token until it is
//! written and handed back through `send_done`; a payload received in
//! place is written through the pml's
//! [`Destination`](oxmpi_framework_btl::adapter::Destination) token.
//! A panic inside a connection's reader (a bug) ends only that
//! connection: its peer is reported failed with the panic's message.

#![warn(missing_docs)]

use oxmpi_plugin_api::{ComponentContext, ComponentError, Lifecycle, Params, QueryReply, Version};

pub mod btl;
pub mod card;
pub mod discover;
pub mod inbound;
pub mod outbound;
pub mod params;
pub mod refusals;
pub mod stream;
mod sys;
pub mod wire;

#[cfg(test)]
mod tests;

pub use btl::{InitError, TcpBtl};
pub use params::{Config, Family};

/// The component's lifecycle: the query checks the interface lists and
/// that some interface is usable.
pub struct Component;

/// The query's decision, without the component context (tests use it).
///
/// # Errors
///
/// `Failed` for a bad include/exclude setting (both set, a bad item),
/// `NotAvailable` when no interface is usable or none can be listed.
pub fn query_with(cfg: &Config) -> Result<QueryReply, ComponentError> {
    let candidates = discover::interfaces_for_query().map_err(|e| {
        ComponentError::not_available(format!("cannot list the network interfaces: {e}"))
    })?;
    match btl::select_interfaces(cfg, &candidates, None) {
        Ok(_) => Ok(QueryReply::Usable { priority: 0 }),
        Err(InitError::Failed(msg)) => Err(ComponentError::failed(msg)),
        Err(InitError::NothingUsable(msg)) => Err(ComponentError::not_available(msg)),
    }
}

impl Lifecycle for Component {
    fn query(ctx: &ComponentContext) -> Result<QueryReply, ComponentError> {
        query_with(&Config::read(ctx).map_err(ComponentError::failed)?)
    }
}

oxmpi_framework_btl::export_btl_component! {
    btl: TcpBtl,
    lifecycle: Component,
    component: "tcp",
    version: Version::new(1, 0, 0),
    description: "Moves fragments between processes over TCP sockets",
    params: <Config as oxmpi_plugin_api::Params>::DECLS,
}
