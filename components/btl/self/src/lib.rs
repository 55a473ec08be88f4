//! btl component `self`: delivers a process's messages to itself.
//!
//! One module (index 0, label `self`) that reaches exactly one peer: the
//! process's own rank ([`JobIdentity::rank`]). It publishes no contact card.
//!
//! [`SelfState`] implements the safe [`Btl`] trait and
//! [`export_btl_component!`](oxmpi_framework_btl::export_btl_component)
//! generates the exported table ([`MODULE`]): the exclusive-entry check,
//! the panic guard and the checks of every send's header and pointers are
//! the adapter's (`oxmpi_framework_btl::adapter`).
//!
//! [`send`](Btl::send) copies the header into an entry of a queue, keeps
//! the payload, and answers [`Sent::Queued`]; it never calls back. Each
//! [`progress`](Btl::progress) call delivers, in order, every queued
//! fragment: `on_header`; if the pml answered a destination, the payload is
//! copied there (one `memcpy`), otherwise the sender's payload is handed
//! over in place ([`Arrived::InPlace`]); then `on_fragment`; then
//! `on_send_done` with the send's cookie. The queue's storage is kept and
//! reused, so a process that has reached its peak number of queued
//! fragments never allocates again, and a progress call with nothing queued
//! returns at once.
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
use std::collections::VecDeque;

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

/// One queued fragment.
struct Entry {
    header: [u8; MAX_HEADER],
    header_len: usize,
    payload: Payload,
}

/// The self btl between calls (see the crate docs).
pub struct SelfState {
    rank: u32,
    /// Fragments not yet delivered, oldest first.
    queue: VecDeque<Entry>,
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
    fn deliver(&self, pml: &Pml<'_>, entry: Entry) {
        let header = &entry.header[..entry.header_len];
        match pml.header(MODULE_INDEX, self.rank, header, entry.payload.len()) {
            Some(mut dest) => {
                dest.copy_from_payload(&entry.payload);
                pml.fragment(MODULE_INDEX, self.rank, header, Arrived::Placed(dest));
            }
            None => pml.fragment(
                MODULE_INDEX,
                self.rank,
                header,
                Arrived::InPlace(&entry.payload),
            ),
        }
        pml.send_done(entry.payload);
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
            queue: VecDeque::with_capacity(64),
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
            self.queue.clear();
            return Sent::Failed(payload);
        }
        // The adapter passes at most MAX_HEADER bytes.
        let mut entry = Entry {
            header: [0; MAX_HEADER],
            header_len: header.len(),
            payload,
        };
        entry.header[..header.len()].copy_from_slice(header);
        self.queue.push_back(entry);
        Sent::Queued
    }

    #[inline]
    fn progress(&mut self, pml: &Pml<'_>) -> usize {
        if self.queue.is_empty() && self.failure_to_report.is_none() {
            return 0;
        }
        let mut events = 0;
        if let Some(why) = self.failure_to_report.take() {
            pml.peer_failed(MODULE_INDEX, self.rank, &why);
            events += 1;
        }
        while let Some(entry) = self.queue.pop_front() {
            self.deliver(pml, entry);
            events += 1;
        }
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
