//! [`Ofi`]: the MTL's state (the endpoint, the tag layout, the peers'
//! addresses and the requests), its start-up ([`discover`], then
//! `Mtl::init`) and the request entry points.

use crate::fabric::{
    error_text, Completion as Event, Endpoint, FiAddr, Hints, InfoList, NO_ADDRESS,
};
use crate::providers::{none_usable, offered, Choice};
use crate::requests::{Kind, Slots};
use crate::tags::{Proto, ProviderTagSupport, TagLayout, TagMode};
use crate::OfiParams;
use oxmpi_framework_btl::module::JobIdentity;
use oxmpi_framework_mtl::adapter::{Core, Mtl, Requests};
use oxmpi_framework_requests::{
    publish_completion, Limits, RecvArgs, RequestError, RequestStatus, SendArgs, SendMode,
    ANY_SOURCE,
};
use oxmpi_ofi_sys as ofi;
use oxmpi_plugin_api::{verbosity, ComponentContext, Params as _};
use std::time::{Duration, Instant};

/// Why the MTL cannot run.
pub enum Refusal {
    /// Nothing here for it (no provider may be used): a decline.
    Declined(String),
    /// A setting is wrong (both lists set, a bad tag mode, `ofi_tag_full`
    /// without what it needs): a failure the user must fix.
    Failed(String),
}

/// What discovery found: the provider to use and its tag layout.
pub struct Found {
    /// `fi_getinfo`'s answer for that provider (the entry to open).
    pub list: InfoList,
    /// The provider's name.
    pub provider: String,
    /// The tag layout.
    pub layout: TagLayout,
}

/// Finds the provider to use and its tag layout, logging each provider
/// considered and why it was passed over.
///
/// # Errors
///
/// [`Refusal::Declined`] when no provider may be used;
/// [`Refusal::Failed`] for a wrong setting.
pub fn discover(ctx: &ComponentContext, params: &OfiParams) -> Result<Found, Refusal> {
    crate::fabric::settle_provider_environment(ctx);
    let choice = Choice::from_params(&params.provider_include, &params.provider_exclude)
        .map_err(Refusal::Failed)?;
    let mode: TagMode = params
        .tag_mode
        .parse()
        .map_err(|e: String| Refusal::Failed(format!("mtl_ofi_tag_mode: {e}")))?;
    let devices = crate::providers::fabric_devices(std::path::Path::new("/"));
    if let Some(why) = crate::providers::nothing_to_find(&choice, &devices) {
        return Err(Refusal::Declined(why));
    }
    if !devices.is_empty() {
        ctx.log(
            verbosity::COMPONENT,
            &format!("fabric devices: {}", devices.join(", ")),
        );
    }
    let list = InfoList::query(&Hints::default()).map_err(Refusal::Declined)?;
    let verdicts = offered(&list, &choice, crate::fabric::library_version());
    for v in &verdicts {
        let verdict = match &v.allowed {
            Ok(()) => "may be used".to_string(),
            Err(why) => format!("skipped: {why}"),
        };
        ctx.log(
            verbosity::COMPONENT,
            &format!("provider {}: {verdict}", v.name),
        );
    }
    let Some(provider) = verdicts
        .iter()
        .find(|v| v.allowed.is_ok())
        .map(|v| v.name.clone())
    else {
        return Err(Refusal::Declined(none_usable(&verdicts)));
    };
    // What the full layout needs, asked of this provider alone.
    let scalable = params.thread_grouping;
    let full = InfoList::query(&Hints {
        full_tag_caps: true,
        scalable,
        provider: Some(provider.clone()),
    })
    .map_err(Refusal::Declined)?;
    let (list, has_full) = match full.find(&provider) {
        Some(entry) if entry.cq_data_size() >= 4 => (full, true),
        _ => {
            let plain = InfoList::query(&Hints {
                full_tag_caps: false,
                scalable,
                provider: Some(provider.clone()),
            })
            .map_err(Refusal::Declined)?;
            (plain, false)
        }
    };
    let entry = list.find(&provider).ok_or_else(|| {
        Refusal::Declined(if scalable {
            no_scalable_endpoints(&provider)
        } else {
            format!("provider {provider} no longer answers fi_getinfo")
        })
    })?;
    if scalable && entry.max_contexts() < 2 {
        return Err(Refusal::Declined(no_scalable_endpoints(&provider)));
    }
    let support = ProviderTagSupport {
        name: provider.clone(),
        remote_cq_data: has_full,
        directed_recv: has_full,
        mem_tag_format: entry.mem_tag_format(),
    };
    let layout = TagLayout::choose(mode, &support).map_err(Refusal::Failed)?;
    ctx.log(
        verbosity::COMPONENT,
        &format!(
            "provider {provider} (domain {}): {layout}; inject size {}, largest message {}",
            entry.domain(),
            entry.inject_size(),
            entry.max_msg_size()
        ),
    );
    Ok(Found {
        list,
        provider,
        layout,
    })
}

/// What the query found, for the `init` that follows it in the same
/// process (the parameters do not change in between): libfabric is asked
/// once.
static DISCOVERED: std::sync::Mutex<Option<Found>> = std::sync::Mutex::new(None);

/// Keeps what the query found for `init`.
pub fn keep_for_init(found: Found) {
    *DISCOVERED.lock().unwrap_or_else(|e| e.into_inner()) = Some(found);
}

/// What the query found, once.
fn kept_from_query() -> Option<Found> {
    DISCOVERED.lock().unwrap_or_else(|e| e.into_inner()).take()
}

/// The modex key of this MTL's contact card.
const CARD: &str = "mtl_ofi";

/// A peer's address: not looked up yet, inserted, or why it cannot be.
#[derive(Clone, Debug)]
enum Peer {
    Unknown,
    Known(FiAddr),
    Failed(String),
}

/// Why the MTL declines `mtl_ofi_thread_grouping` over `provider`.
fn no_scalable_endpoints(provider: &str) -> String {
    format!(
        "mtl_ofi_thread_grouping asks for a scalable endpoint, and provider {provider} offers none \
         (one transmit and receive context per endpoint, or no named receive contexts); unset \
         mtl_ofi_thread_grouping, or choose a provider that has them with \
         mtl_ofi_provider_include (sockets does)"
    )
}

/// The context pairs of the endpoint: 1 without thread grouping; with
/// it, `wanted` (0: one per CPU of this host) up to what the provider
/// allows, and at least 2.
fn context_pairs(grouping: bool, wanted: u32, allowed: usize) -> usize {
    if !grouping {
        return 1;
    }
    let wanted = match wanted {
        0 => std::thread::available_parallelism().map_or(2, |n| n.get()),
        n => n as usize,
    };
    wanted.clamp(2, allowed.max(2))
}

/// The MTL's state.
pub struct Ofi {
    ep: Endpoint,
    layout: TagLayout,
    provider: String,
    core: Core,
    rank: u32,
    size: u32,
    peers: Vec<Peer>,
    slots: Slots,
    /// Completions read in one batch (kept for its capacity).
    events: Vec<Event>,
    inject_size: usize,
    max_msg_size: usize,
    /// Acknowledgements libfabric had no room for: (lane, peer, tag).
    pending_acks: Vec<(usize, FiAddr, u64)>,
    /// Whether every peer's address is in the address vector.
    all_inserted: bool,
    context: ComponentContext,
}

/// The sentence of a `what` of `len` bytes at a null buffer.
#[cold]
fn null_buffer(what: &str, len: usize) -> String {
    format!("mtl ofi: a {what} of {len} bytes at a null buffer")
}

/// How long `cancel` and a probe wait for libfabric to answer.
const CANCEL_WAIT: Duration = Duration::from_secs(5);

impl Mtl for Ofi {
    fn init(
        context: &ComponentContext,
        identity: &JobIdentity,
        core: Core,
    ) -> Result<Self, String> {
        let params = OfiParams::read(context)?;
        let found = match kept_from_query() {
            Some(found) => found,
            None => discover(context, &params).map_err(|r| match r {
                Refusal::Declined(s) | Refusal::Failed(s) => s,
            })?,
        };
        if let Some(max) = found.layout.max_source() {
            if identity.size.saturating_sub(1) > max {
                return Err(format!(
                    "the job has {} ranks, and the {} tag layout carries source ranks up to {max}; \
                     use --mca mtl_ofi_tag_mode ofi_tag_full with a provider that supports it",
                    identity.size,
                    found.layout.name()
                ));
            }
        }
        let entry = found
            .list
            .find(&found.provider)
            .ok_or_else(|| format!("provider {} vanished", found.provider))?;
        let pairs = context_pairs(
            params.thread_grouping,
            params.num_ctxts,
            entry.max_contexts(),
        );
        let ep = Endpoint::open(entry, params.progress_event_cnt as usize, pairs)
            .map_err(|e| format!("provider {}: {e}", found.provider))?;
        if params.thread_grouping {
            context.log(
                verbosity::COMPONENT,
                &format!(
                    "scalable endpoint of provider {} with {pairs} transmit and receive context \
                     pairs (of {} allowed); a communicator uses pair (context id mod {pairs})",
                    found.provider,
                    entry.max_contexts()
                ),
            );
        }
        let name = ep.name()?;
        let mut card = Vec::with_capacity(1 + found.provider.len() + name.len());
        card.push(found.provider.len() as u8);
        card.extend_from_slice(found.provider.as_bytes());
        card.extend_from_slice(&name);
        core.modex_put(CARD, &card)?;
        Ok(Ofi {
            inject_size: entry.inject_size(),
            max_msg_size: entry.max_msg_size(),
            ep,
            layout: found.layout,
            provider: found.provider,
            core,
            rank: identity.rank,
            size: identity.size,
            peers: vec![Peer::Unknown; identity.size as usize],
            slots: Slots::new(),
            events: Vec::with_capacity(params.progress_event_cnt as usize),
            pending_acks: Vec::new(),
            all_inserted: false,
            context: *context,
        })
    }
}

impl Ofi {
    /// The address of job rank `rank`, inserted on first use.
    fn peer(&mut self, rank: u32) -> Result<FiAddr, String> {
        match &self.peers[rank as usize] {
            Peer::Known(a) => return Ok(*a),
            Peer::Failed(why) => return Err(why.clone()),
            Peer::Unknown => {}
        }
        let answer = self.resolve(rank);
        self.peers[rank as usize] = match &answer {
            Ok(a) => Peer::Known(*a),
            Err(why) => Peer::Failed(why.clone()),
        };
        answer
    }

    fn resolve(&mut self, rank: u32) -> Result<FiAddr, String> {
        let card = self
            .core
            .modex_get(rank, CARD)
            .map_err(|e| format!("rank {} cannot reach rank {rank}: {e}", self.rank))?
            .ok_or_else(|| {
                format!(
                    "rank {} cannot reach rank {rank}: it published no mtl_ofi address (it does \
                     not run the ofi MTL)",
                    self.rank
                )
            })?;
        let n = *card.first().unwrap_or(&0) as usize;
        let (name, address) = card
            .get(1..1 + n)
            .zip(card.get(1 + n..))
            .ok_or_else(|| format!("rank {rank}'s mtl_ofi address is malformed"))?;
        let theirs = String::from_utf8_lossy(name);
        if theirs != self.provider {
            return Err(format!(
                "rank {} uses libfabric provider {} and rank {rank} provider {theirs}; every rank \
                 must use the same one: choose it with --mca mtl_ofi_provider_include",
                self.rank, self.provider
            ));
        }
        let addr = self
            .ep
            .insert(address)
            .map_err(|e| format!("rank {rank}'s address: {e}"))?;
        self.context.log(
            verbosity::TRACE,
            &format!("rank {rank}: address inserted as {addr}"),
        );
        Ok(addr)
    }

    /// Inserts every peer's address (once, at the first operation: the
    /// modex is complete by then). Some providers (shm) deliver a message
    /// that arrives before its receive is posted only from a peer in the
    /// address vector.
    fn insert_all(&mut self) {
        if self.all_inserted {
            return;
        }
        self.all_inserted = true;
        for rank in 0..self.size {
            if let Err(e) = self.peer(rank) {
                self.context.log(verbosity::COMPONENT, &e);
            }
        }
    }

    /// The remote CQ data of this rank's sends (its rank, in the full
    /// layout).
    fn data(&self) -> Option<u64> {
        self.layout
            .source_in_cq_data()
            .then_some(u64::from(self.rank))
    }

    /// Reads the completion queue until it is empty; answers the number of
    /// completions.
    fn drain(&mut self) -> Result<usize, String> {
        let mut total = 0;
        let mut events = std::mem::take(&mut self.events);
        let outcome = loop {
            match self.ep.read_completions(&mut events) {
                Ok(0) => break Ok(total),
                Ok(n) => {
                    total += n;
                    for e in &events {
                        self.complete(e);
                    }
                }
                Err(e) => break Err(e),
            }
        };
        self.events = events;
        outcome
    }

    /// Drains, for a caller that must wait for libfabric (no room to post,
    /// a probe's answer); a failing queue is logged once per call.
    fn wait_step(&mut self) {
        if let Err(e) = self.drain() {
            self.context
                .log(verbosity::ERROR, &format!("completion queue: {e}"));
        }
        self.retry_acks();
    }

    /// Sends the acknowledgements libfabric had no room for.
    fn retry_acks(&mut self) {
        while let Some(&(lane, dest, tag)) = self.pending_acks.last() {
            let data = self.data();
            // SAFETY: an empty message (no bytes read).
            match unsafe { self.ep.inject(lane, std::ptr::null(), 0, dest, tag, data) } {
                Ok(true) => {
                    self.pending_acks.pop();
                }
                Ok(false) => return,
                Err(e) => {
                    self.context
                        .log(verbosity::ERROR, &format!("acknowledgement lost: {e}"));
                    self.pending_acks.pop();
                }
            }
        }
    }

    /// Handles one completion.
    fn complete(&mut self, e: &Event) {
        // SAFETY: every operation is posted with a context block of these
        // slots, and a slot is not released while its operation runs.
        let Some(index) = (unsafe { self.slots.of_context(e.context) }) else {
            self.context.log(
                verbosity::ERROR,
                "a completion for an unknown operation was ignored",
            );
            return;
        };
        let kind = self.slots.get(index).kind;
        match kind {
            Kind::Send { acked, dest, .. } => {
                if let Some((err, _)) = e.error {
                    let s = self.slots.get(index);
                    s.status.error = RequestError::PeerFailed;
                    s.error = Some(format!(
                        "send from rank {} to rank {dest} failed: {}",
                        self.rank,
                        error_text(err.into())
                    ));
                }
                self.slots.get(index).kind = Kind::Send {
                    sent: true,
                    acked,
                    dest,
                };
                if acked || e.error.is_some() {
                    self.finish(index);
                }
            }
            Kind::AckRecv { owner } => {
                self.slots.release(index);
                let Some(owner) = self.slots.find(owner) else {
                    return;
                };
                if let Kind::Send { sent, dest, .. } = self.slots.get(owner).kind {
                    self.slots.get(owner).kind = Kind::Send {
                        sent,
                        acked: true,
                        dest,
                    };
                    if sent {
                        self.finish(owner);
                    }
                }
            }
            Kind::Recv => self.received(index, e),
            Kind::Peek { claim } => {
                let found = e.error.is_none();
                if found {
                    let d = self.layout.decode(e.tag, e.data);
                    let s = self.slots.get(index);
                    s.status = RequestStatus {
                        source: d.source as i32,
                        tag: d.tag,
                        count: e.len,
                        ..RequestStatus::default()
                    };
                }
                let s = self.slots.get(index);
                s.kind = if found && claim {
                    Kind::Claimed
                } else {
                    Kind::Probed { found }
                };
                s.complete = true;
            }
            Kind::Free | Kind::Probed { .. } | Kind::Claimed => {
                self.context.log(
                    verbosity::ERROR,
                    "a completion for a request with no operation running was ignored",
                );
            }
        }
    }

    /// A receive completed (with `e`).
    fn received(&mut self, index: u32, e: &Event) {
        let d = self.layout.decode(e.tag, e.data);
        let mut status = RequestStatus {
            source: d.source as i32,
            tag: d.tag,
            count: e.len,
            ..RequestStatus::default()
        };
        let mut sentence = None;
        let mut acknowledge = d.proto == Proto::Sync;
        match e.error {
            None => {}
            Some((err, overflow)) if err == ofi::FI_ETRUNC as i32 => {
                status.error = RequestError::Truncated;
                status.count = self.slots.get(index).len;
                sentence = Some(format!(
                    "message from rank {} (tag {}) truncated: {} bytes arrived for a {}-byte buffer",
                    d.source,
                    d.tag,
                    status.count + overflow,
                    status.count
                ));
            }
            Some((err, _)) if err == ofi::FI_ECANCELED => {
                status = RequestStatus {
                    cancelled: true,
                    ..RequestStatus::default()
                };
                acknowledge = false;
            }
            Some((err, _)) => {
                status.error = RequestError::Other;
                sentence = Some(format!("receive failed: {}", error_text(err.into())));
                acknowledge = false;
            }
        }
        if acknowledge {
            self.acknowledge(d.context, d.source, d.tag);
        }
        let s = self.slots.get(index);
        s.status = status;
        s.error = sentence;
        self.finish(index);
    }

    /// Sends the acknowledgement of a synchronous send from `source`.
    fn acknowledge(&mut self, context: u32, source: u32, tag: i32) {
        let dest = match self.peer(source) {
            Ok(a) => a,
            Err(e) => {
                self.context
                    .log(verbosity::ERROR, &format!("cannot acknowledge: {e}"));
                return;
            }
        };
        let ack = self.layout.send_tag(context, self.rank, tag, Proto::Ack);
        let data = self.data();
        self.context.log(
            verbosity::TRACE,
            &format!("acknowledging a synchronous send of rank {source} (tag {ack:#x})"),
        );
        let lane = self.lane_of(context);
        // SAFETY: an empty message.
        match unsafe { self.ep.inject(lane, std::ptr::null(), 0, dest, ack, data) } {
            Ok(true) => {}
            Ok(false) => self.pending_acks.push((lane, dest, ack)),
            Err(e) => self.context.log(
                verbosity::ERROR,
                &format!("acknowledgement to rank {source} failed: {e}"),
            ),
        }
    }

    /// Request `index` is complete: published and released, or kept for
    /// its caller.
    fn finish(&mut self, index: u32) {
        let s = self.slots.get(index);
        s.complete = true;
        if s.freed {
            self.slots.release(index);
            return;
        }
        let (done, status) = (s.done, s.status);
        // SAFETY: the slot the request was started with, which its caller
        // keeps until it reads a completion or frees the request (then
        // `freed` is set and the slot never written).
        if unsafe { publish_completion(done, &status) } {
            self.slots.release(index);
        }
    }

    /// Posts with `post` until libfabric takes it, reading completions
    /// while it has no room.
    fn post_until(
        &mut self,
        mut post: impl FnMut(&mut Endpoint) -> Result<bool, String>,
    ) -> Result<(), String> {
        loop {
            if post(&mut self.ep)? {
                return Ok(());
            }
            self.wait_step();
        }
    }

    /// The endpoint lane of communicator context id `context`: one of a
    /// scalable endpoint's context pairs (the same on every rank), or the
    /// one lane of a plain endpoint.
    #[inline]
    fn lane_of(&self, context: u32) -> usize {
        match self.ep.lanes() {
            // No division on the path of a plain endpoint's every message.
            1 => 0,
            lanes => context as usize % lanes,
        }
    }

    /// Checks a receive's or probe's arguments; answers the source's
    /// address for a directed receive.
    fn recv_address(&mut self, context: u32, source: i32) -> Result<FiAddr, String> {
        if context > self.layout.max_context() {
            return Err(format!(
                "context id {context} is beyond the {} layout's largest, {}",
                self.layout.name(),
                self.layout.max_context()
            ));
        }
        if source == ANY_SOURCE {
            return Ok(NO_ADDRESS);
        }
        if source < 0 || source as u32 >= self.size {
            return Err(format!("source rank {source} is not a rank of the job"));
        }
        if self.layout.source_in_cq_data() {
            self.peer(source as u32)
        } else {
            Ok(NO_ADDRESS)
        }
    }

    /// A probe: posts a peek and reads completions until it is answered.
    fn probe(
        &mut self,
        context: u32,
        source: i32,
        tag: i32,
        claim: bool,
    ) -> Option<(u32, RequestStatus)> {
        self.insert_all();
        let src = self.recv_address(context, source).ok()?;
        let (t, ignore) = self.layout.recv_match(context, source, tag);
        let index = self.slots.take(Kind::Peek { claim }, std::ptr::null());
        let lane = self.lane_of(context);
        {
            let s = self.slots.get(index);
            s.lane = lane;
            s.claim = (src, t, ignore);
        }
        let ctx = self.slots.context(index);
        let flags = if claim {
            ofi::FI_PEEK | ofi::FI_CLAIM
        } else {
            ofi::FI_PEEK
        };
        // SAFETY: no buffer; the context is the slot's, kept until its
        // completion is read below.
        let posted = self.post_until(|ep| unsafe {
            ep.recv_with(lane, std::ptr::null_mut(), 0, src, t, ignore, ctx, flags)
        });
        if let Err(e) = posted {
            self.context.log(verbosity::ERROR, &format!("probe: {e}"));
            self.slots.release(index);
            return None;
        }
        let until = Instant::now() + CANCEL_WAIT;
        while !self.slots.get(index).complete {
            if Instant::now() > until {
                // The provider never answered the peek: the slot stays
                // until it does (its completion then finds it a probe).
                self.context.log(
                    verbosity::ERROR,
                    &format!("provider {} did not answer a probe", self.provider),
                );
                return None;
            }
            self.wait_step();
        }
        let s = self.slots.get(index);
        let found = matches!(s.kind, Kind::Claimed | Kind::Probed { found: true });
        let status = s.status;
        if found && claim {
            return Some((index, status));
        }
        self.slots.release(index);
        found.then_some((index, status))
    }
}

impl Requests for Ofi {
    unsafe fn isend(&mut self, args: &SendArgs) -> Result<u64, (RequestError, String)> {
        let other = |s: String| (RequestError::Other, s);
        if args.buf.is_null() && args.len > 0 {
            return Err(other(null_buffer("send", args.len)));
        }
        self.layout
            .check(args.context, self.rank, args.tag)
            .map_err(other)?;
        if args.dest >= self.size {
            return Err(other(format!(
                "rank {} is not a rank of the job",
                args.dest
            )));
        }
        if args.len > self.max_msg_size {
            return Err(other(format!(
                "a message of {} bytes is larger than provider {} carries ({} bytes)",
                args.len, self.provider, self.max_msg_size
            )));
        }
        self.insert_all();
        let dest = self
            .peer(args.dest)
            .map_err(|e| (RequestError::Unreachable, e))?;
        let sync = args.mode == SendMode::Synchronous;
        let proto = if sync { Proto::Sync } else { Proto::Standard };
        let tag = self
            .layout
            .send_tag(args.context, self.rank, args.tag, proto);
        let data = self.data();
        let lane = self.lane_of(args.context);
        if !sync && args.len <= self.inject_size {
            // SAFETY: the buffer is readable for `len` bytes (this
            // method's promise) and copied before the call returns.
            self.post_until(|ep| unsafe { ep.inject(lane, args.buf, args.len, dest, tag, data) })
                .map_err(|e| {
                    (
                        RequestError::PeerFailed,
                        format!("send to rank {}: {e}", args.dest),
                    )
                })?;
            return Ok(0);
        }
        let index = self.slots.take(
            Kind::Send {
                sent: false,
                acked: !sync,
                dest: args.dest,
            },
            args.done,
        );
        let mut ack_slot = None;
        if sync {
            let (t, ignore) = self.layout.ack_match(args.context, args.dest, args.tag);
            let from = if self.layout.source_in_cq_data() {
                dest
            } else {
                NO_ADDRESS
            };
            let owner = self.slots.handle(index);
            let ack = self.slots.take(Kind::AckRecv { owner }, std::ptr::null());
            self.slots.get(ack).lane = lane;
            let ctx = self.slots.context(ack);
            // SAFETY: an empty receive; the context is the ack slot's,
            // kept until its completion.
            let posted = self.post_until(|ep| unsafe {
                ep.recv(lane, std::ptr::null_mut(), 0, from, t, ignore, ctx)
            });
            if let Err(e) = posted {
                self.slots.release(ack);
                self.slots.release(index);
                return Err(other(e));
            }
            ack_slot = Some(ack);
        }
        let ctx = self.slots.context(index);
        // SAFETY: the buffer stays valid until the request completes (this
        // method's promise); the context is the slot's, kept until its
        // completion.
        let posted = self
            .post_until(|ep| unsafe { ep.send(lane, args.buf, args.len, dest, tag, data, ctx) });
        match posted {
            Ok(()) => Ok(self.slots.handle(index)),
            Err(e) => {
                // A synchronous send's acknowledgement receive is
                // cancelled; its completion finds this handle stale.
                self.slots.release(index);
                if let Some(ack) = ack_slot {
                    let ctx = self.slots.context(ack);
                    self.ep.cancel(lane, ctx);
                }
                Err((
                    RequestError::PeerFailed,
                    format!("send to rank {}: {e}", args.dest),
                ))
            }
        }
    }

    unsafe fn irecv(
        &mut self,
        args: &RecvArgs,
        _status: &mut RequestStatus,
    ) -> Result<u64, String> {
        if args.buf.is_null() && args.len > 0 {
            return Err(null_buffer("receive", args.len));
        }
        self.insert_all();
        let src = self.recv_address(args.context, args.source)?;
        let (t, ignore) = self.layout.recv_match(args.context, args.source, args.tag);
        let index = self.slots.take(Kind::Recv, args.done);
        let lane = self.lane_of(args.context);
        {
            let s = self.slots.get(index);
            s.buf = args.buf;
            s.len = args.len;
            s.lane = lane;
        }
        let ctx = self.slots.context(index);
        // SAFETY: the buffer stays writable and untouched until the
        // request completes (this method's promise); the context is the
        // slot's, kept until its completion.
        let posted =
            self.post_until(|ep| unsafe { ep.recv(lane, args.buf, args.len, src, t, ignore, ctx) });
        match posted {
            Ok(()) => Ok(self.slots.handle(index)),
            Err(e) => {
                self.slots.release(index);
                Err(e)
            }
        }
    }

    fn test(&mut self, request: u64) -> Option<RequestStatus> {
        let Some(index) = self.slots.find(request) else {
            return Some(oxmpi_framework_requests::serve::BROKEN);
        };
        let s = self.slots.get(index);
        (s.complete && matches!(s.kind, Kind::Send { .. } | Kind::Recv)).then_some(s.status)
    }

    fn request_error(&mut self, request: u64) -> String {
        match self.slots.find(request) {
            Some(index) => self
                .slots
                .get(index)
                .error
                .clone()
                .unwrap_or_else(|| "the request completed without error".to_string()),
            None => format!("mtl ofi knows no request {request:#x} (freed, or never issued)"),
        }
    }

    fn free(&mut self, request: u64) {
        let Some(index) = self.slots.find(request) else {
            return;
        };
        let s = self.slots.get(index);
        if s.complete || matches!(s.kind, Kind::Claimed) {
            self.slots.release(index);
        } else {
            s.freed = true;
        }
    }

    fn cancel(&mut self, request: u64) -> bool {
        let Some(index) = self.slots.find(request) else {
            return false;
        };
        if self.slots.get(index).kind != Kind::Recv || self.slots.get(index).complete {
            return false;
        }
        let (ctx, lane) = (self.slots.context(index), self.slots.get(index).lane);
        self.ep.cancel(lane, ctx);
        let until = Instant::now() + CANCEL_WAIT;
        while !self.slots.get(index).complete && Instant::now() < until {
            self.wait_step();
        }
        let s = self.slots.get(index);
        s.complete && s.status.cancelled
    }

    fn iprobe(&mut self, context: u32, source: i32, tag: i32) -> Option<RequestStatus> {
        self.probe(context, source, tag, false).map(|(_, st)| st)
    }

    fn improbe(&mut self, context: u32, source: i32, tag: i32) -> Option<(u64, RequestStatus)> {
        let (index, status) = self.probe(context, source, tag, true)?;
        Some((self.slots.handle(index), status))
    }

    unsafe fn imrecv(
        &mut self,
        message: u64,
        args: &RecvArgs,
        _status: &mut RequestStatus,
    ) -> Result<u64, String> {
        let index = self
            .slots
            .find(message)
            .filter(|&i| self.slots.get(i).kind == Kind::Claimed)
            .ok_or_else(|| {
                format!("mtl ofi holds no claimed message {message:#x} (received already, or never claimed)")
            })?;
        let s = self.slots.get(index);
        s.kind = Kind::Recv;
        s.complete = false;
        s.done = args.done;
        s.buf = args.buf;
        s.len = args.len;
        let (lane, (src, t, ignore)) = (s.lane, s.claim);
        let ctx = self.slots.context(index);
        // SAFETY: as in `irecv`; FI_CLAIM receives the message the peek
        // with this context claimed, on the lane and with the match it was
        // peeked with.
        let posted = self.post_until(|ep| unsafe {
            ep.recv_with(lane, args.buf, args.len, src, t, ignore, ctx, ofi::FI_CLAIM)
        });
        match posted {
            Ok(()) => Ok(message),
            Err(e) => {
                self.slots.release(index);
                Err(e)
            }
        }
    }

    fn progress(&mut self) -> usize {
        self.retry_acks();
        match self.drain() {
            Ok(n) => n,
            Err(e) => {
                self.context
                    .log(verbosity::ERROR, &format!("completion queue: {e}"));
                0
            }
        }
    }

    fn limits(&self) -> Limits {
        Limits {
            max_tag: self.layout.max_tag(),
            max_context: self.layout.max_context(),
        }
    }

    /// Sends the acknowledgements still owed, then closes the endpoint.
    fn finalize(mut self) {
        let until = Instant::now() + CANCEL_WAIT;
        while !self.pending_acks.is_empty() && Instant::now() < until {
            self.wait_step();
        }
        let live = self.slots.live();
        if live > 0 {
            self.context.log(
                verbosity::COMPONENT,
                &format!("finalize with {live} request(s) not completed; they are dropped"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_grouping_opens_between_2_and_the_providers_allowance_of_context_pairs() {
        assert_eq!(
            context_pairs(false, 8, 16),
            1,
            "no grouping: a plain endpoint"
        );
        assert_eq!(context_pairs(true, 4, 16), 4);
        assert_eq!(
            context_pairs(true, 64, 16),
            16,
            "capped at what the provider allows"
        );
        assert_eq!(context_pairs(true, 1, 16), 2, "at least 2");
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        assert_eq!(context_pairs(true, 0, 4096), cpus.max(2), "0: one per CPU");
    }

    #[test]
    fn declining_thread_grouping_names_the_provider_and_what_to_do() {
        let why = no_scalable_endpoints("tcp;ofi_rxm");
        assert!(why.contains("provider tcp;ofi_rxm offers none"), "{why}");
        assert!(why.contains("unset mtl_ofi_thread_grouping"), "{why}");
        assert!(why.contains("mtl_ofi_provider_include"), "{why}");
    }
}
