//! btl component `self`: delivers a process's messages to itself.
//!
//! One module (index 0, label `self`) that reaches exactly one peer: the
//! process's own rank ([`JobIdentity::rank`]). It publishes no contact card.
//! The module is described with `flags::LOOPBACK`, so a pml may deliver a
//! fragment it can order itself (ob1: an eager message) during its own
//! send, as Open MPI's self btl does during `send`; what it sends through
//! the btl is delivered as below.
//!
//! [`SelfState`] implements the safe [`Btl`] trait and
//! [`export_btl_component!`](oxmpi_framework_btl::export_btl_component)
//! generates the exported table ([`MODULE`]): the exclusive-entry check,
//! the panic guard and the checks of every send's header and pointers are
//! the adapter's (`oxmpi_framework_btl::adapter`).
//!
//! [`send`](Btl::send) copies the header into an entry of a queue and
//! never calls back. A payload of at most [`INLINE_PAYLOAD`] bytes is
//! copied into the entry too, and the send answers [`Sent::Done`] (the
//! pml's send is then complete before it returns, and the delivery needs
//! no `on_header` and no `on_send_done`); a larger one is kept, and the
//! send answers [`Sent::Queued`]. Each [`progress`](Btl::progress) call
//! delivers, in order, every queued fragment: a copied one with
//! `on_fragment` alone, its payload in the entry; a kept one with
//! `on_header` — if the pml answered a destination, the payload is copied
//! there (one `memcpy`), otherwise the sender's payload is handed over in
//! place ([`Arrived::InPlace`]) — then `on_fragment`, then `on_send_done`
//! with the send's cookie. The queue's storage is kept and reused, so a
//! process that has reached its peak number of queued fragments never
//! allocates again, and a progress call with nothing queued returns at
//! once.
//!
//! A send the adapter refuses (a header longer than [`MAX_HEADER`], a null
//! pointer with a non-zero length) answers `Failed` before the btl sees it,
//! and the adapter logs why. A send the self btl itself refuses — to a
//! module or an endpoint that does not exist — answers `Failed`, the next
//! progress reports the reason once through `on_peer_failed`, fragments
//! queued for the peer are dropped without `on_send_done` (as the interface
//! requires for a lost peer), and later sends fail.
//!
//! Parameters (Open MPI's names and defaults; see [`params`]):
//! `btl_self_exclusivity` (65536), `btl_self_eager_limit` (1024),
//! `btl_self_rndv_eager_limit` (128k), `btl_self_max_send_size` (16k),
//! `btl_self_latency` (0), `btl_self_bandwidth` (100), `btl_self_flags` (1).

pub mod params;

use oxmpi_framework_btl::adapter::{Arrived, Btl, Payload, Pml, Sent, Started};
use oxmpi_framework_btl::module::{JobIdentity, MAX_HEADER};
use oxmpi_plugin_api::verbosity;
use oxmpi_plugin_api::Params as _;
use oxmpi_plugin_api::{ComponentContext, ComponentError, Lifecycle, QueryReply, Version};
use params::Config;

/// Framework of the component.
pub const FRAMEWORK: &str = "btl";
/// Name of the component.
pub const COMPONENT: &str = "self";
/// Index of the component's only module.
pub const MODULE_INDEX: u32 = 0;
/// Priority the query reports (btl is a multi-select framework: every
/// usable btl is kept; the priority only orders them).
pub const PRIORITY: i32 = 0;

/// The component's lifecycle.
pub struct SelfBtl;

impl Lifecycle for SelfBtl {
    fn query(_ctx: &ComponentContext) -> Result<QueryReply, ComponentError> {
        Ok(QueryReply::Usable { priority: PRIORITY })
    }
}

/// Payloads up to this many bytes are copied at `send` (which then
/// answers `Done`); larger ones are delivered from the sender's buffer.
pub const INLINE_PAYLOAD: usize = 256;

/// One queued fragment. Entries are written in place and reused, never
/// moved (one is a few hundred bytes).
struct Entry {
    header: [u8; MAX_HEADER],
    header_len: usize,
    /// A payload copied at `send`: its first `copied_len` bytes.
    copied: [u8; INLINE_PAYLOAD],
    copied_len: usize,
    /// A payload kept instead, given back with `on_send_done` after
    /// delivery.
    kept: Option<Payload>,
}

impl Entry {
    const EMPTY: Entry = Entry {
        header: [0; MAX_HEADER],
        header_len: 0,
        copied: [0; INLINE_PAYLOAD],
        copied_len: 0,
        kept: None,
    };
}

/// The self btl between calls (see the crate docs).
pub struct SelfState {
    rank: u32,
    /// Fragments not yet delivered, oldest first: the first `queued`
    /// entries (the rest are kept for reuse).
    entries: Vec<Entry>,
    queued: usize,
    /// Set once a send named a module or endpoint that does not exist;
    /// later sends fail.
    failed: bool,
    /// Why, until progress reports it.
    failure_to_report: Option<String>,
}

impl SelfState {
    /// Why a send to `module`/`endpoint` breaks the interface, if it does.
    fn refusal(&self, module: u32, endpoint: u64) -> Option<String> {
        if module != MODULE_INDEX {
            return Some(format!(
                "the pml sent on self module {module}, which does not exist (the self btl has one module, index {MODULE_INDEX})"
            ));
        }
        if endpoint != u64::from(self.rank) {
            return Some(format!(
                "the pml sent to self endpoint {endpoint}, which add_peer never returned (the only endpoint is {})",
                self.rank
            ));
        }
        None
    }

    /// Delivers one fragment through the pml's callbacks.
    #[inline]
    fn deliver(rank: u32, pml: &Pml<'_>, entry: &mut Entry) {
        let header = &entry.header[..entry.header_len];
        let Some(payload) = entry.kept.take() else {
            // The whole fragment is here: no `on_header`, and the send
            // was finished at `send`.
            let bytes = Arrived::Bytes(&entry.copied[..entry.copied_len]);
            pml.fragment(MODULE_INDEX, rank, header, bytes);
            return;
        };
        match pml.header(MODULE_INDEX, rank, header, payload.len()) {
            Some(mut dest) => {
                dest.copy_from_payload(&payload);
                pml.fragment(MODULE_INDEX, rank, header, Arrived::Placed(dest));
            }
            None => pml.fragment(MODULE_INDEX, rank, header, Arrived::InPlace(&payload)),
        }
        pml.send_done(payload);
    }
}

impl Btl for SelfState {
    fn init(context: &ComponentContext, identity: &JobIdentity) -> Result<Started<Self>, String> {
        let (info, notice) = Config::read(context)?.module_info()?;
        if let Some(notice) = notice {
            context.log(verbosity::ERROR, &notice);
        }
        context.log(
            verbosity::INFO,
            &format!(
                "one module for rank {}: eager limit {} B, rendezvous eager limit {} B, max send size {} B, exclusivity {}",
                identity.rank,
                info.eager_limit,
                info.rndv_eager_limit,
                info.max_send_size,
                info.exclusivity
            ),
        );
        let state = SelfState {
            rank: identity.rank,
            entries: Vec::new(),
            queued: 0,
            failed: false,
            failure_to_report: None,
        };
        Ok(Started::Ready(state, vec![info]))
    }

    fn add_peer(&mut self, module: u32, peer: u32, _card: &[u8]) -> Result<u64, String> {
        if module != MODULE_INDEX {
            return Err(format!(
                "the self btl has one module (index {MODULE_INDEX}); there is no module {module}"
            ));
        }
        if peer != self.rank {
            return Err(format!(
                "self only reaches its own process (rank {})",
                self.rank
            ));
        }
        Ok(u64::from(peer))
    }

    #[inline]
    fn send(&mut self, module: u32, endpoint: u64, header: &[u8], payload: Payload) -> Sent {
        if self.failed {
            return Sent::Failed(payload);
        }
        if let Some(why) = self.refusal(module, endpoint) {
            self.failed = true;
            self.failure_to_report = Some(why);
            // Dropping the tokens drops the queued sends: no on_send_done
            // for a lost peer.
            for entry in &mut self.entries[..self.queued] {
                entry.kept = None;
            }
            self.queued = 0;
            return Sent::Failed(payload);
        }
        if self.queued == self.entries.len() {
            self.entries.push(Entry::EMPTY);
        }
        let entry = &mut self.entries[self.queued];
        self.queued += 1;
        // The adapter passes at most MAX_HEADER bytes.
        entry.header[..header.len()].copy_from_slice(header);
        entry.header_len = header.len();
        let len = payload.len();
        if len <= INLINE_PAYLOAD {
            entry.copied[..len].copy_from_slice(payload.as_slice());
            entry.copied_len = len;
            Sent::Done(payload)
        } else {
            entry.kept = Some(payload);
            Sent::Queued
        }
    }

    #[inline]
    fn progress(&mut self, pml: &Pml<'_>) -> usize {
        if self.queued == 0 && self.failure_to_report.is_none() {
            return 0;
        }
        let mut events = 0;
        if let Some(why) = self.failure_to_report.take() {
            pml.peer_failed(MODULE_INDEX, self.rank, &why);
            events += 1;
        }
        // No send can come in while this runs (a callback's nested entry
        // is refused), so the queue is delivered whole and emptied.
        let rank = self.rank;
        for entry in &mut self.entries[..self.queued] {
            Self::deliver(rank, pml, entry);
            events += 1;
        }
        self.queued = 0;
        events
    }
}

oxmpi_framework_btl::export_btl_component! {
    btl: SelfState,
    lifecycle: SelfBtl,
    component: COMPONENT,
    version: Version::new(1, 0, 0),
    description: "Delivers a process's messages to itself",
    params: <Config as oxmpi_plugin_api::Params>::DECLS,
}

#[cfg(test)]
mod tests;
