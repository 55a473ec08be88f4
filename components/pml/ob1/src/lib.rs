#![warn(missing_docs)]

//! pml component `ob1`: MPI point-to-point over btls — eager sends,
//! rendezvous with a pipeline of fragments or with the btls' get/put (RGET,
//! RPUT), synchronous sends, per-peer btl choice and striping over several
//! btl modules.
//!
//! The component implements the pml framework's safe `Pml` trait
//! ([`Ob1`]) and exports it with `export_pml_component!`, which generates
//! its [`PmlModule`](oxmpi_framework_pml::module::PmlModule) ([`MODULE`]),
//! the receivers its btls call back, and the one process-global state: an
//! entry point that finds another one running (a nested call, two
//! threads) is refused in every build profile, and a panic stops the pml —
//! every later call is refused with a sentence naming the first internal
//! error, and `test` reports the request complete in error (see
//! `oxmpi_framework_pml::adapter`). The MPI layer selects it
//! (`pml_ob1_priority`, default 20) and calls it under its lock (see
//! `oxmpi_framework_pml::module` for the contract). Matching is the tested
//! engine of `oxmpi-matching`.
//!
//! # Initialization
//!
//! `PmlModule::init` calls each selected btl's `init` with the receiver
//! the adapter made for it (its `ctx` names the btl). A btl whose `init` fails, or that
//! finds no module, is skipped and its reason logged through the btl's own
//! context at level 10; the reason is kept for unreachable-peer messages.
//! For each btl with modules, ob1 publishes its contact card under
//! `btl_<name>` — **even an empty card**, so a peer can tell "runs there
//! and needs no card" from "does not run there" — and registers the btl's
//! `progress`. If no btl has a module, `init` fails with one sentence
//! listing every btl and why.
//!
//! # Peers
//!
//! A peer is resolved lazily, the first time ob1 sends to it (or must
//! answer its rendezvous): for each usable btl, its card is read with
//! `modex_get(rank, "btl_<name>")` and every module of the btl is asked
//! with `add_peer`. Of the modules that reach the peer, only those of the
//! **highest exclusivity** are kept (so `self` beats `tcp` for one's own
//! rank). Among them:
//!
//! - the **eager list** is those of the lowest latency; eager messages,
//!   the first fragment of a rendezvous and ACKs go round-robin over it;
//! - **FRAGs** of large messages are striped over all kept modules in
//!   proportion to their bandwidth (weight = bandwidth / Σ bandwidth, equal
//!   weights when every bandwidth is 0): each FRAG goes to the module that
//!   would finish it first relative to its weight, so after many FRAGs the
//!   byte counts are in the ratio of the bandwidths.
//!
//! If no module reaches the peer, sends to it fail with a sentence naming
//! both ranks and every btl with its reason, e.g. `rank 0 cannot reach
//! rank 3: tcp: no interface pair can connect; sm: rank 3 published no
//! btl_sm contact card (the btl does not run there)` (the MPI layer adds
//! the hint about `self` when the peer is the process itself). The answer
//! is remembered. A receive from such a peer just stays posted.
//!
//! # Protocol
//!
//! Headers (the private module `wire` has the byte layout; the README a
//! table) are little-endian, type byte first, at most 48 bytes (the btl
//! limit is 64): MATCH (type 1, 32 bytes), RNDV (2, 40), ACK (3, 40), FRAG
//! (4, 24), RGET (5, 48) and FIN (6, 24).
//!
//! - **Eager** (standard send, `len ≤ eager_limit` of the chosen module —
//!   payload bytes; the header does not count): one MATCH fragment with
//!   context, source rank, tag, sequence and length, and the whole message.
//!   The send completes when the btl answers `Done` or calls
//!   `on_send_done`.
//! - **Rendezvous** (larger messages, and every synchronous send): a RNDV
//!   fragment carries the match information, the sender's request id, the
//!   SYNC flag for `MPI_Ssend`, and the first `min(len, rndv_eager_limit)`
//!   bytes. When a receive matches it (at once, or when posted later), the
//!   receiver copies those bytes and sends an ACK with both request ids and
//!   the number of bytes it takes (`min(len, receive buffer)`). The sender
//!   then sends FRAGs of `max_send_size` (per module) from the end of the
//!   first chunk up to that number, striped as above, with at most
//!   `pml_ob1_send_pipeline_depth` fragments held by btls (`Queued`, not yet
//!   `on_send_done`) at once. The receiver places each FRAG's payload
//!   **directly into the user buffer** by answering `buf + offset` from
//!   `on_header`, so large messages are not copied by ob1. The receive
//!   completes when all wanted bytes arrived; the send when the ACK came
//!   and every fragment is done.
//! - **Synchronous sends** always use the rendezvous, even when small: the
//!   RNDV then carries the whole message (if it fits `rndv_eager_limit`) and
//!   the send completes only on the receiver's ACK, i.e. after the match.
//! - **Truncation**: a message longer than the receive buffer fills the
//!   buffer with its first bytes and completes the receive with `Truncated`
//!   (`count` = buffer size). For a rendezvous the ACK asks only for the
//!   bytes that fit, so the sender sends no more; data beyond the buffer
//!   is never written (a fragment that fits partly is copied in part).
//! - **Ordering**: sequence numbers count per (context, destination) on the
//!   sender; the matcher holds back early arrivals (striping and eager
//!   round-robin over several modules reorder), so MPI's non-overtaking
//!   rule holds.
//! - **RGET**: when a message would need FRAGs (longer than
//!   `rndv_eager_limit`, and at least the largest `min_rdma_message` of the
//!   peer's modules), every module chosen for the peer offers GET and
//!   `pml_ob1_use_rdma` is on (default), the sender sends a RGET carrying
//!   its buffer's address and no payload. The receive that matches it
//!   issues gets of the bytes it takes straight into its buffer — each at
//!   most the lane's `max_rdma_size`, at most `pml_ob1_send_pipeline_depth`
//!   queued at once, striped over the lanes that offer GET in proportion to
//!   their bandwidth — from `progress` (never from a callback), completes
//!   when all finished and sends a FIN naming the send, which then
//!   completes (a synchronous send therefore after the match, and the send
//!   buffer stays readable until the receiver is done with it). A receiver
//!   whose lanes to the sender offer no GET (or with RDMA off) answers with
//!   an ACK instead, and the sender falls back to FRAGs from offset 0.
//! - **RPUT**: otherwise, when every module offers PUT, the RNDV (first
//!   chunk as usual) says the sender can put; the receiver's ACK then
//!   carries its buffer's address (when it still expects bytes), the
//!   sender puts the rest there (limits and striping as for gets), queues a
//!   FIN and completes once every put finished; the receive completes on
//!   the FIN. Truncation works as for FRAGs: only `wanted` bytes move.
//! - Otherwise large messages use the send pipeline. A get/put answered
//!   `Failed` or finished with a failed status fails the peer (the btl
//!   reports it lost, too).
//!
//! # Receiving
//!
//! An eager message that matches a posted receive is copied once, from the
//! btl's memory into the user buffer. One that arrives first is copied into
//! a pooled buffer (power-of-two classes, reused: a stream of small
//! unexpected messages allocates nothing once warm), and copied again when
//! its receive is posted. Messages held back for ordering are pooled too.
//! `iprobe` reports the full length of a waiting message, rendezvous or
//! not.
//!
//! The **armed receive** shortens the common case of a blocking receive:
//! a receive that names its sender, posted while no other receive is and
//! nothing of that sender is held back, would match that sender's next
//! in-order message on its communicator if the tag fits. ob1 keeps it
//! armed; such an eager MATCH is copied into the buffer and completes the
//! receive at once (the waiting MPI layer gets it released), and the
//! matcher and the request record learn it later: at the next entry, or
//! just after the next send is handed to its btl, by replaying the arrival
//! in the matcher. Any other traffic from that sender, a cancel of the
//! receive and the loss of the sender disarm it first.
//!
//! # No re-entry
//!
//! ob1 never calls a btl from inside a btl callback: a callback only
//! updates state and queues work (ACKs, FRAGs after an ACK, retries), and
//! `PmlModule::progress` does the sending. **The MPI layer must call the
//! pml's `progress` after the btls' progress functions** in every progress
//! round (waits and tests), or ACKs and FRAGs never leave. `isend` and
//! `irecv` send directly when they can (the first fragment; an ACK for a
//! rendezvous a new receive matched). A btl answering `WouldBlock` is
//! retried from `progress`, on the same module for a first fragment.
//!
//! # Requests
//!
//! Handles are generation-checked slab indices (`u64`, never 0); a stale
//! handle is refused. A receive posted with a completion slot is kept
//! *light* (buffer, capacity, slot, source and tag, in a slab of its own)
//! until it needs a full record: an eager message that fits completes it
//! through the slot without one; a rendezvous, a truncation, a cancel, a
//! free before completion or the loss of its sender promotes it, and its
//! handle resolves to the record from then on. `test` fills the status (source job rank, tag, bytes
//! received, `Truncated`, `PeerFailed`); `request_error` gives the sentence,
//! e.g. `message of 100 bytes from rank 1 (tag 5) truncated to the 64-byte
//! receive buffer`. `free` of an incomplete request detaches it: it still
//! completes (its buffer must stay valid until then) and is released then.
//! `cancel` succeeds for a receive that has not matched. `test` of an
//! unknown handle reports completion with error `Other` and
//! `request_error` says the handle is unknown.
//!
//! # Peer failure
//!
//! When a btl reports a peer lost (`on_peer_failed`, or a send answered
//! `Failed`), ob1 logs it once (level 10) and completes with `PeerFailed`
//! every pending send to it, every receive naming it as source and every
//! receive in rendezvous with it; `ANY_SOURCE` receives stay posted. Later
//! sends to it fail at once with a sentence; later receives from it take
//! eager messages that already arrived, else fail. One module losing the
//! peer fails the peer: fragments queued on that module are gone.
//!
//! # Costs
//!
//! The hot paths (eager send, eager receive matched to a posted receive,
//! FRAG placement, gets, puts and their completions) allocate nothing in
//! steady state and take no lock: the
//! request slab and matcher reuse their slots, the per-peer sequence map
//! is touched once per context.

mod component;
mod engine;
mod light;
mod pool;
mod requests;
mod wire;

#[cfg(test)]
mod tests;

pub use component::Ob1;
use oxmpi_plugin_api::{ComponentContext, ComponentError, Lifecycle, Params, QueryReply, Version};

/// The component's parameters (`pml_ob1_<name>`), declared once:
/// `Ob1Params::DECLS` is the table exported in the root module.
#[derive(Params, Clone, Debug, PartialEq, Eq)]
pub struct Ob1Params {
    /// Selection priority of the ob1 pml: the usable pml with the highest priority is used
    /// (default 20, Open MPI's).
    #[param(
        default = "20",
        level = Developer(All),
        help = "Selection priority of the ob1 pml: the usable pml with the highest priority is used."
    )]
    pub priority: i32,
    /// Fragments of one rendezvous send that btls may hold at once (1 to 65536). The
    /// default, 8: Open MPI uses 3 (for RDMA operations); with the send pipeline over TCP,
    /// 8 fragments of `btl_tcp_max_send_size` (128 KiB) keep 1 MiB queued, enough to keep a
    /// socket's send buffer full while the btl reports completions, at a bounded memory cost.
    #[param(
        default = "8",
        level = Tuner(Basic),
        range = 1..=65536,
        help = "Fragments of one large (rendezvous) send that btls may hold at once. More keeps a \
                transport busier at the cost of memory the btl holds; fewer limits one message's share \
                of the links. At least 1."
    )]
    pub send_pipeline_depth: u32,
    /// Whether large messages use the btls' get/put (RGET, RPUT) when every module chosen
    /// for a peer offers them (default true); false keeps the send pipeline, for comparison.
    #[param(
        default = "true",
        level = Tuner(Basic),
        help = "Whether large messages are moved with the btls' get/put (RGET when every btl \
                module chosen for the peer offers get, RPUT when they offer put) instead of the \
                send pipeline. Off, ob1 always uses the send pipeline."
    )]
    pub use_rdma: bool,
}

/// The component's lifecycle: usable wherever it loads, at
/// `pml_ob1_priority`.
pub struct Component;

impl Lifecycle for Component {
    fn query(ctx: &ComponentContext) -> Result<QueryReply, ComponentError> {
        let params = Ob1Params::read(ctx).map_err(ComponentError::failed)?;
        Ok(QueryReply::Usable {
            priority: params.priority,
        })
    }
}

oxmpi_framework_pml::export_pml_component! {
    pml: Ob1,
    lifecycle: Component,
    component: "ob1",
    version: Version::new(1, 0, 0),
    description: "MPI point-to-point over btls: eager, rendezvous with a fragment pipeline, \
                  synchronous sends, striping over btl modules",
    params: Ob1Params::DECLS,
}
