//! The sm btl's state and its [`Btl`] implementation: sends through fast
//! boxes or fragment buffers and receive queues, get and put through
//! cross-memory attach, progress that polls this process's boxes and
//! queue, and the attaching (then unlinking) of the node's segments.

use crate::assist::{self, Offer, Offers, Outcome};
use crate::card::{node_identity, Card};
use crate::fbox::{record_len, FboxIn, FboxOut, Polled};
use crate::params::{Config, Mechanism};
use crate::place::Place;
use crate::segment::{path_of, Segment, Sizes, LINE};
use crate::{cma, fifo};
use oxmpi_framework_btl::adapter::{
    Arrived, Btl, Fragments, GetBuffer, Payload, Pml, PutBuffer, Rdma, Sent, Started,
};
use oxmpi_framework_btl::module::{JobIdentity, RdmaStatus};
use oxmpi_plugin_api::{verbosity, ComponentContext, Params as _};
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::Ordering;

/// The only module's index.
pub const MODULE: u32 = 0;

/// Progress calls between the first two tries to attach the segments of
/// the node's processes not attached yet; the interval doubles after each
/// try that attached nothing, up to [`ATTACH_EVERY_MAX`] (a process of
/// the node that does not run sm never makes one, and each try opens a
/// file per missing rank).
const ATTACH_EVERY: u32 = 256;

/// The longest interval between two tries to attach, in progress calls.
const ATTACH_EVERY_MAX: u32 = 1 << 24;

/// What [`SmBtl::transmit`] did.
enum Tx {
    /// Written; nothing of the caller's is held.
    Done,
    /// No room (fast box, buffers or queue); nothing was written.
    Full,
    /// The peer is lost (or was never added).
    Lost,
}

/// One rank of the job, as this process sees it.
#[derive(Default)]
struct Peer {
    /// Its segment, once attached.
    segment: Option<Segment>,
    /// This process's fast box in its segment.
    out: Option<FboxOut>,
    /// No fast box is left in its segment.
    no_fbox: bool,
    /// Fragments sent to it through its queue.
    queued: u32,
    /// The last fragment buffer sent to it, while it may be undelivered:
    /// until it is, later fragments go through the queue too (order).
    last_frag: Option<u32>,
    /// Index in `SmBtl::inbound` of its fast box in this process's
    /// segment.
    inbound: Option<usize>,
    /// Why it was lost, once it is.
    failed: Option<String>,
    /// Whether this process sent it something since the last fragment
    /// from its fast box was delivered (the traffic alternates, as a
    /// request and its reply do).
    answered: bool,
}

/// The sm btl between calls (see the crate docs).
pub struct SmBtl {
    rank: u32,
    job: u64,
    place: Place,
    node: String,
    own: Segment,
    single_copy: bool,
    /// The probe word peers read (with single copy).
    probe: Option<cma::Probe>,
    fbox_threshold: u32,
    poll_batch: u32,
    /// `btl_sm_reply_prefetch`.
    reply_prefetch: bool,
    /// Fast-box records asked for ahead of an expected reply.
    reply_prefetches: u64,
    /// Indexed by rank.
    peers: Vec<Peer>,
    /// Segments of other processes attached.
    attached: u32,
    /// Progress calls since the last try to attach the rest.
    attach_tick: u32,
    /// Progress calls between two tries (see [`ATTACH_EVERY`]).
    attach_every: u32,
    /// Fast boxes of this segment looked at (claimed or not).
    fbox_seen: u32,
    /// The fast boxes other processes write to this one.
    inbound: Vec<FboxIn>,
    /// The receive queue's consumer position.
    fifo_head: u64,
    /// The rank + 1 each fragment buffer was last sent to (0: none).
    frag_peer: Vec<u32>,
    /// Peers lost, to report from the next progress call.
    to_report: Vec<u32>,
    /// Where fast box keys come from.
    keys: std::collections::hash_map::RandomState,
    /// Smallest get shared with the peer (0: none).
    shared_get_min: usize,
    /// This process's offers of halves of gets.
    offers: Offers,
    /// Gets whose second half a peer took, until it finishes.
    shared: Vec<SharedGet>,
    /// Calls of `finish_shared_gets`, to check on copying peers now and
    /// then.
    shared_tick: u32,
}

/// A get whose second half the peer copies.
struct SharedGet {
    offer: Offer,
    local: GetBuffer,
    endpoint: u64,
    remote: u64,
    /// Bytes of the first half (copied by this process).
    half: usize,
    /// Whether this process's half was copied.
    own_half_ok: bool,
}

/// Calls of `finish_shared_gets` between two checks that a peer still
/// copying is alive.
const LIVENESS_EVERY: u32 = 4096;

/// Whether process `pid` exists.
fn alive(pid: u32) -> bool {
    // SAFETY: kill with signal 0 sends nothing; it only checks the pid.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

impl SmBtl {
    /// A fresh random 64-bit value.
    fn random(&self, salt: u64) -> u64 {
        let mut h = self.keys.build_hasher();
        h.write_u64(salt);
        h.write_u32(self.rank);
        h.finish()
    }

    /// Maps rank `r`'s segment if it exists and is ready; true once it is
    /// mapped. The process that completes the set of attachers unlinks
    /// the file.
    fn attach(&mut self, r: u32) -> Result<bool, String> {
        let peer = &mut self.peers[r as usize];
        if peer.segment.is_some() {
            return Ok(true);
        }
        let path = path_of(&self.place.dir, self.job, r);
        let Some(segment) = Segment::attach(&path)? else {
            return Ok(false);
        };
        if segment.rank() != r {
            return Err(format!(
                "{} belongs to rank {}, not to rank {r}",
                path.display(),
                segment.rank()
            ));
        }
        let before = segment.attached().fetch_add(1, Ordering::AcqRel);
        if let Some(local) = self.place.local_size {
            if before + 2 == local {
                // Every other process of the node has it mapped: the name
                // is no longer needed, and a crash cannot leave it behind.
                let _ = std::fs::remove_file(&path);
            }
        }
        peer.segment = Some(segment);
        self.attached += 1;
        Ok(true)
    }

    /// Tries to attach every segment of the node not attached yet.
    fn attach_rest(&mut self) {
        for r in 0..self.peers.len() as u32 {
            if r != self.rank && self.peers[r as usize].segment.is_none() {
                let _ = self.attach(r);
            }
        }
    }

    /// Whether some segment of the node is still to be attached.
    fn attaching(&self) -> bool {
        self.place
            .local_size
            .is_some_and(|local| self.attached + 1 < local)
    }

    /// Opens the fast boxes claimed in this process's segment since the
    /// last look.
    fn discover_fboxes(&mut self) {
        let count = self.own.sizes().fbox_count;
        let claimed = self.own.fbox_claimed().load(Ordering::Acquire).min(count);
        while self.fbox_seen < claimed {
            let Some(inbound) = FboxIn::open(&self.own, self.fbox_seen) else {
                return; // its sender is still writing the claim
            };
            let sender = inbound.sender;
            if let Some(peer) = self.peers.get_mut(sender as usize) {
                peer.inbound = Some(self.inbound.len());
                self.inbound.push(inbound);
            }
            self.fbox_seen += 1;
        }
    }

    /// Delivers the records of inbound fast box `k` (at most `limit`): the
    /// fragments in batches (one pml entry for up to
    /// [`Fragments::CAPACITY`] of them and [`FboxIn::batch_bytes`] of
    /// records, their room given back after the call), sm's own control
    /// records one at a time, in ring order.
    fn drain_fbox(&mut self, pml: &Pml<'_>, k: usize, limit: u32) -> usize {
        let limit = limit as usize;
        let (index, sender) = (self.inbound[k].index, self.inbound[k].sender);
        let most_bytes = self.inbound[k].batch_bytes();
        let mut events = 0;
        loop {
            let mut at = self.inbound[k].cursor();
            let mut batch = Fragments::new();
            let mut last_len = 0;
            let mut bytes = 0;
            // What ended the batch (other than a full one or the limit).
            let mut stop = Polled::Empty;
            let inbound = &self.inbound[k];
            let ring = self.own.fbox_ring(index);
            while events < limit && !batch.is_full() && bytes < most_bytes {
                match inbound.peek(&ring, &mut at) {
                    Polled::Record {
                        offset,
                        header,
                        payload,
                        control: false,
                    } => {
                        let len = record_len(header, payload);
                        if bytes == 0 && len > LINE {
                            // The first record of a batch is what a
                            // waiting receive needs soonest; later ones
                            // arrived while it waited, and the processor
                            // streams them.
                            inbound.prefetch(&ring, offset, len);
                        }
                        // One range check for the header and the payload.
                        let (h, p) = ring.bytes(offset, header + payload).split_at(header);
                        if batch.push(sender, h, p).is_err() {
                            // A header past the interface's limit: the
                            // segment is damaged (sm's senders write none).
                            stop = Polled::Damaged;
                            break;
                        }
                        inbound.step(&mut at, len);
                        last_len = len;
                        bytes += len;
                        events += 1;
                    }
                    other => {
                        stop = other;
                        break;
                    }
                }
            }
            let full = batch.is_full() || bytes >= most_bytes;
            pml.fragments(MODULE, &mut batch);
            self.inbound[k].consume_to(&self.own, at);
            if last_len > 0 {
                self.expect_reply(sender, last_len);
            }
            match stop {
                Polled::Record {
                    offset,
                    header,
                    payload,
                    control: true,
                } => {
                    let offer = Offer::decode(self.own.fbox_ring(index).bytes(offset, header));
                    self.inbound[k].step(&mut at, record_len(header, payload));
                    self.inbound[k].consume_to(&self.own, at);
                    self.serve(sender, offer);
                    events += 1;
                }
                // Stopped by a full batch (more may wait), the limit or an
                // empty ring.
                Polled::Record { .. } | Polled::Empty => {
                    if !full || events >= limit {
                        return events;
                    }
                }
                Polled::Damaged => {
                    self.lose(
                        sender,
                        format!("rank {sender}'s fast box in this process's shared segment holds a record that does not fit it (the segment is damaged)"),
                    );
                    return events;
                }
            }
        }
    }

    /// After a fragment from `sender` whose record took `len` bytes was
    /// delivered: when this process answered the one before, an answer to
    /// this one is likely, and the lines of a fast-box record as long are
    /// asked for now (`btl_sm_reply_prefetch`).
    #[inline]
    fn expect_reply(&mut self, sender: u32, len: usize) {
        let Some(p) = self.peers.get_mut(sender as usize) else {
            return;
        };
        if std::mem::take(&mut p.answered) && self.reply_prefetch {
            if let (Some(segment), Some(out)) = (&p.segment, &p.out) {
                out.prepare(segment, len);
                self.reply_prefetches += 1;
            }
        }
    }

    /// How many times the lines of a reply's fast-box record were asked
    /// for ahead (see `btl_sm_reply_prefetch`), for tests and diagnostics.
    pub fn reply_prefetches(&self) -> u64 {
        self.reply_prefetches
    }

    /// Delivers the fragment a queue entry names: first whatever its
    /// sender put in its fast box before it (order), then the fragment.
    fn deliver_queued(&mut self, pml: &Pml<'_>, entry: u64) -> usize {
        let (sender, frag) = ((entry >> 32) as u32, entry as u32);
        if sender as usize >= self.peers.len() || sender == self.rank {
            self.own_damage(format!(
                "the receive queue names rank {sender}, which is not a peer"
            ));
            return 0;
        }
        let mut events = 0;
        if self.peers[sender as usize].inbound.is_none() {
            self.discover_fboxes();
        }
        if let Some(k) = self.peers[sender as usize].inbound {
            events += self.drain_fbox(pml, k, u32::MAX);
        }
        match self.attach(sender) {
            Ok(true) => {}
            Ok(false) | Err(_) => {
                self.lose(
                    sender,
                    format!(
                        "rank {sender} queued a fragment but its shared segment cannot be mapped"
                    ),
                );
                return events;
            }
        }
        let Some(segment) = &self.peers[sender as usize].segment else {
            return events;
        };
        if frag >= segment.sizes().frag_count {
            self.lose(
                sender,
                format!(
                    "rank {sender} queued fragment buffer {frag}, which its segment does not have"
                ),
            );
            return events;
        }
        match segment.frag_contents(frag) {
            Some((false, header, payload)) => deliver(pml, sender, header, payload),
            Some((true, header, _)) => {
                let offer = Offer::decode(header);
                segment.frag_busy(frag).store(0, Ordering::Release);
                self.serve(sender, offer);
                return events + 1;
            }
            None => {
                self.lose(
                    sender,
                    format!("rank {sender}'s fragment buffer {frag} is damaged"),
                );
                return events;
            }
        }
        segment.frag_busy(frag).store(0, Ordering::Release);
        events + 1
    }

    /// Copies the half of a shared get that `requester` offered (see
    /// [`crate::assist`]), if the offer is still there.
    fn serve(&mut self, requester: u32, offer: Option<Offer>) {
        let Some(offer) = offer else {
            self.lose(
                requester,
                format!("rank {requester} sent a control fragment sm does not know"),
            );
            return;
        };
        if !matches!(self.attach(requester), Ok(true)) {
            return;
        }
        if let Some(segment) = &self.peers[requester as usize].segment {
            // A failed copy is the requester's to redo (it reads the
            // state word); nothing to report here.
            let _ = assist::serve(segment, offer);
        }
    }

    /// Finishes the shared gets whose other half ended; a peer's failed
    /// half is copied here instead.
    fn finish_shared_gets(&mut self, pml: &Pml<'_>) -> usize {
        self.shared_tick = self.shared_tick.wrapping_add(1);
        let mut events = 0;
        let mut i = 0;
        while i < self.shared.len() {
            let g = &self.shared[i];
            let mut outcome = self.offers.outcome(&self.own, g.offer);
            if outcome == Outcome::Copying && self.shared_tick.is_multiple_of(LIVENESS_EVERY) {
                // A peer that died while copying never says so.
                if !self.pid_of(g.endpoint).is_some_and(alive) {
                    outcome = Outcome::Failed;
                }
            }
            if outcome == Outcome::Copying {
                i += 1;
                continue;
            }
            let mut g = self.shared.swap_remove(i);
            self.offers.release(&self.own, g.offer);
            let mut ok = g.own_half_ok;
            if ok && outcome == Outcome::Failed {
                ok = match self.pid_of(g.endpoint) {
                    Some(pid) => {
                        let len = g.local.len() - g.half;
                        let at = g.local.as_mut_ptr().wrapping_add(g.half);
                        match cma::read(pid, at, len, g.remote + g.half as u64) {
                            Ok(()) => true,
                            Err(e) => {
                                self.rdma_failed(g.endpoint, "get", e);
                                false
                            }
                        }
                    }
                    None => false,
                };
            }
            let status = if ok {
                RdmaStatus::Done
            } else {
                RdmaStatus::Failed
            };
            // Every way to `!ok` has already marked the peer lost (with
            // the reason), which this progress call reports.
            pml.get_done(g.local, status);
            events += 1;
        }
        events
    }

    /// Marks `peer` lost for `why` (reported from the next progress).
    fn lose(&mut self, peer: u32, why: String) {
        if let Some(p) = self.peers.get_mut(peer as usize) {
            if p.failed.is_none() {
                p.failed = Some(why);
                self.to_report.push(peer);
            }
        }
    }

    /// This process's receive queue holds an entry no peer can have
    /// written: the segment is damaged, and every peer that may have
    /// written to it is lost.
    #[cold]
    fn own_damage(&mut self, why: String) {
        for peer in 0..self.peers.len() as u32 {
            if peer != self.rank && self.peers[peer as usize].segment.is_some() {
                self.lose(
                    peer,
                    format!("this process's shared segment is damaged ({why})"),
                );
            }
        }
    }

    /// Sends one fragment (the pml's, or sm's own when `control`) to the
    /// peer of `endpoint`: through its fast box when it may, else through
    /// a fragment buffer and its queue.
    #[inline(always)]
    fn transmit(&mut self, endpoint: u64, header: &[u8], bytes: &[u8], control: bool) -> Tx {
        // The common case inline: a healthy peer, nothing of it in a
        // fragment buffer, room in its fast box.
        if let Some(p) = self.peers.get_mut(endpoint as usize) {
            if let (None, None, Some(segment), Some(out)) =
                (&p.failed, p.last_frag, &p.segment, &mut p.out)
            {
                let len = record_len(header.len(), bytes.len());
                if out.takes(len) && out.write(segment, header, bytes, len, control) {
                    p.answered = true;
                    return Tx::Done;
                }
            }
        }
        self.transmit_any(endpoint, header, bytes, control)
    }

    /// [`SmBtl::transmit`] in every case: checks, the fast box once the
    /// fragments sent before have been taken, else a fragment buffer.
    #[inline(never)]
    fn transmit_any(&mut self, endpoint: u64, header: &[u8], bytes: &[u8], control: bool) -> Tx {
        let rank = self.rank;
        let Some(p) = self.peers.get_mut(endpoint as usize) else {
            return Tx::Lost;
        };
        if p.failed.is_some() {
            return Tx::Lost;
        }
        let Some(segment) = &p.segment else {
            let why =
                format!("the pml sent to sm endpoint {endpoint}, which add_peer never returned");
            self.lose(endpoint as u32, why);
            return Tx::Lost;
        };
        if let Some(out) = &mut p.out {
            let len = record_len(header.len(), bytes.len());
            let in_order = match p.last_frag {
                None => true,
                Some(f) => self.own.frag_busy(f).load(Ordering::Acquire) == 0,
            };
            if in_order {
                p.last_frag = None;
                if out.takes(len) && out.write(segment, header, bytes, len, control) {
                    p.answered = true;
                    return Tx::Done;
                }
            }
        }
        let peer = endpoint as u32;
        if bytes.len() > self.own.sizes().frag_size as usize {
            let why = format!(
                "the pml sent a fragment of {} bytes to rank {peer}, more than btl_sm_max_send_size ({} bytes)",
                bytes.len(),
                self.own.sizes().frag_size
            );
            self.lose(peer, why);
            return Tx::Lost;
        }
        let Some(frag) = self.take_frag(peer) else {
            return Tx::Full;
        };
        self.own.frag_fill(frag, header, bytes, control);
        let p = &mut self.peers[peer as usize];
        let segment = p.segment.as_ref().expect("checked above");
        if !fifo::push(segment, u64::from(rank) << 32 | u64::from(frag)) {
            self.own.frag_busy(frag).store(0, Ordering::Relaxed);
            return Tx::Full;
        }
        p.last_frag = Some(frag);
        p.queued = p.queued.saturating_add(1);
        if p.out.is_none() && !p.no_fbox && p.queued >= self.fbox_threshold {
            let key = self.random(u64::from(peer) << 32 | u64::from(frag));
            let p = &mut self.peers[peer as usize];
            let segment = p.segment.as_ref().expect("checked above");
            p.out = FboxOut::claim(segment, rank, key);
            p.no_fbox = p.out.is_none();
        }
        Tx::Done
    }

    /// A free fragment buffer of this process's, marked busy for `peer`:
    /// the lowest free one, so the few buffers a process keeps in flight
    /// stay in the caches instead of cycling through the whole pool.
    fn take_frag(&mut self, peer: u32) -> Option<u32> {
        let count = self.own.sizes().frag_count;
        for i in 0..count {
            if self.own.frag_busy(i).load(Ordering::Acquire) != 0 {
                continue;
            }
            let previous = self.frag_peer[i as usize];
            if previous != 0 {
                let p = &mut self.peers[previous as usize - 1];
                if p.last_frag == Some(i) {
                    p.last_frag = None;
                }
            }
            self.own.frag_busy(i).store(1, Ordering::Relaxed);
            self.frag_peer[i as usize] = peer + 1;
            return Some(i);
        }
        None
    }

    /// The pid of the peer of `endpoint`, if it is a live, attached peer.
    fn pid_of(&self, endpoint: u64) -> Option<u32> {
        let p = self.peers.get(endpoint as usize)?;
        if p.failed.is_some() {
            return None;
        }
        p.segment.as_ref().map(Segment::pid)
    }

    /// A get or put through cross-memory attach that failed: the peer is
    /// lost.
    fn rdma_failed(&mut self, endpoint: u64, what: &str, e: std::io::Error) {
        let peer = endpoint as u32;
        let why = match e.raw_os_error() {
            Some(libc::ESRCH) => format!("rank {peer}'s process is gone (the {what} through cross-memory attach found no process)"),
            _ => format!("a {what} of rank {peer}'s memory through cross-memory attach failed: {e}"),
        };
        self.lose(peer, why);
    }
}

impl Drop for SmBtl {
    fn drop(&mut self) {
        // Normally gone already (unlinked once every local process had
        // attached); not when some never attached.
        let _ = std::fs::remove_file(self.own.path());
    }
}

/// Hands one fragment to the pml, its payload in the segment: the whole
/// fragment is in memory, so no `on_header` asks where it should go (the
/// pml's copy out of the segment is the one copy placing would make).
#[inline]
fn deliver(pml: &Pml<'_>, sender: u32, header: &[u8], payload: &[u8]) {
    pml.fragment(MODULE, sender, header, Arrived::Bytes(payload));
}

impl Btl for SmBtl {
    fn init(context: &ComponentContext, identity: &JobIdentity) -> Result<Started<Self>, String> {
        let config = Config::read(context)?;
        let place = match Place::of_process(identity) {
            Ok(place) => place,
            Err(why) => return Ok(Started::NothingUsable(why)),
        };
        let single_copy = match config.single_copy_mechanism {
            Mechanism::None => false,
            Mechanism::Cma => match cma::enable() {
                Ok(()) => true,
                Err(why) => {
                    context.log(
                        verbosity::WARN,
                        &format!("single copy through cross-memory attach is not available here ({why}); large messages move through the shared segment instead, as with btl_sm_single_copy_mechanism = none"),
                    );
                    false
                }
            },
        };
        let (info, notice) = config.module_info(single_copy)?;
        if let Some(notice) = notice {
            context.log(verbosity::WARN, &notice);
        }
        let sizes = Sizes {
            fifo_cells: config.fifo_size,
            fbox_count: config.fbox_max,
            fbox_size: config.fbox_size as u32,
            frag_count: config.free_list_max,
            frag_size: config.btl.max_send_size as u32,
        };
        let own = Segment::create(
            &path_of(&place.dir, identity.job_id, identity.rank),
            identity.rank,
            sizes,
        )?;
        let keys = std::collections::hash_map::RandomState::new();
        let mut state = SmBtl {
            rank: identity.rank,
            job: identity.job_id,
            place,
            node: node_identity(),
            own,
            single_copy,
            probe: None,
            fbox_threshold: config.fbox_threshold,
            poll_batch: config.poll_batch,
            reply_prefetch: config.reply_prefetch,
            reply_prefetches: 0,
            peers: (0..identity.size).map(|_| Peer::default()).collect(),
            attached: 0,
            attach_tick: 0,
            attach_every: ATTACH_EVERY,
            fbox_seen: 0,
            inbound: Vec::new(),
            fifo_head: 0,
            frag_peer: vec![0; config.free_list_max as usize],
            to_report: Vec::new(),
            keys,
            shared_get_min: if single_copy {
                config.shared_get_min
            } else {
                0
            },
            offers: Offers::default(),
            shared: Vec::with_capacity(crate::segment::ASSIST_SLOTS as usize),
            shared_tick: 0,
        };
        if single_copy {
            let value = state.random(0x9e37_79b9);
            state.probe = Some(cma::Probe::new(value));
        }
        context.log(
            verbosity::INFO,
            &format!(
                "rank {}: segment {} ({} fast boxes of {} B, {} queue entries, {} fragment buffers of {} B), {} for large messages",
                identity.rank,
                state.own.path().display(),
                sizes.fbox_count,
                sizes.fbox_size,
                sizes.fifo_cells,
                sizes.frag_count,
                sizes.frag_size,
                match (single_copy, state.shared_get_min) {
                    (false, _) => "fragments through the segment".to_string(),
                    (true, 0) => "one copy through cross-memory attach (the receiver copies alone)".to_string(),
                    (true, min) => format!("one copy through cross-memory attach (gets of {min} B and more shared with the sender)"),
                }
            ),
        );
        Ok(Started::Ready(state, vec![info]))
    }

    fn contact_card(&self) -> Vec<u8> {
        Card {
            node: self.node.clone(),
            probe_address: self.probe.as_ref().map_or(0, cma::Probe::address),
            probe_value: self.probe.as_ref().map_or(0, cma::Probe::value),
        }
        .encode()
    }

    fn add_peer(&mut self, module: u32, peer: u32, card: &[u8]) -> Result<u64, String> {
        if module != MODULE {
            return Err(format!(
                "sm has one module (index {MODULE}); there is no module {module}"
            ));
        }
        if peer == self.rank {
            return Err(
                "sm does not carry a process's messages to itself (the self btl does)".into(),
            );
        }
        if peer as usize >= self.peers.len() {
            return Err(format!(
                "rank {peer} is not in this job of {} ranks",
                self.peers.len()
            ));
        }
        let card = Card::decode(card)?;
        if card.node != self.node {
            let host = card.node.split('/').next().unwrap_or_default();
            return Err(format!("rank {peer} runs on another node ({host})"));
        }
        if !self.attach(peer)? {
            return Err(format!(
                "rank {peer} runs on this node, but its shared segment {} is missing (the process ended, or its job directory differs)",
                path_of(&self.place.dir, self.job, peer).display()
            ));
        }
        // A peer without single copy (its own choice, or its kernel's) is
        // still reached: it never offers this process a get, and its pml
        // answers this process's large messages by asking for fragments.
        if self.single_copy && card.probe_address != 0 {
            let pid = self.pid_of(u64::from(peer)).unwrap_or_default();
            cma::check_peer(pid, card.probe_address, card.probe_value).map_err(|e| {
                format!("{e}; set btl_sm_single_copy_mechanism = none for every rank to copy through the segment instead")
            })?;
        }
        Ok(u64::from(peer))
    }

    #[inline]
    fn send(&mut self, _module: u32, endpoint: u64, header: &[u8], payload: Payload) -> Sent {
        match self.transmit(endpoint, header, payload.as_slice(), false) {
            Tx::Done => Sent::Done(payload),
            Tx::Full => Sent::WouldBlock(payload),
            Tx::Lost => Sent::Failed(payload),
        }
    }

    fn get(
        &mut self,
        _module: u32,
        endpoint: u64,
        remote: u64,
        mut local: GetBuffer,
    ) -> Rdma<GetBuffer> {
        let Some(pid) = self.pid_of(endpoint) else {
            return Rdma::Failed(local);
        };
        let len = local.len();
        if self.shared_get_min > 0 && len >= self.shared_get_min {
            let half = (len / 2).next_multiple_of(64).min(len);
            let destination = local.as_mut_ptr().wrapping_add(half) as u64;
            let rest = (len - half) as u64;
            if let Some(offer) =
                self.offers
                    .offer(&self.own, destination, remote + half as u64, rest)
            {
                if let Tx::Done = self.transmit(endpoint, &offer.encode(), &[], true) {
                    let own_half = cma::read(pid, local.as_mut_ptr(), half, remote);
                    if self.offers.keep(&self.own, offer) {
                        self.offers.release(&self.own, offer);
                        let whole = own_half.and_then(|()| {
                            cma::read(
                                pid,
                                local.as_mut_ptr().wrapping_add(half),
                                len - half,
                                remote + half as u64,
                            )
                        });
                        return match whole {
                            Ok(()) => Rdma::Done(local),
                            Err(e) => {
                                self.rdma_failed(endpoint, "get", e);
                                Rdma::Failed(local)
                            }
                        };
                    }
                    let own_half_ok = match own_half {
                        Ok(()) => true,
                        Err(e) => {
                            self.rdma_failed(endpoint, "get", e);
                            false
                        }
                    };
                    self.shared.push(SharedGet {
                        offer,
                        local,
                        endpoint,
                        remote,
                        half,
                        own_half_ok,
                    });
                    return Rdma::Queued;
                }
                // Not announced: nobody else can take it.
                self.offers.release(&self.own, offer);
            }
        }
        match cma::read(pid, local.as_mut_ptr(), len, remote) {
            Ok(()) => Rdma::Done(local),
            Err(e) => {
                self.rdma_failed(endpoint, "get", e);
                Rdma::Failed(local)
            }
        }
    }

    fn put(
        &mut self,
        _module: u32,
        endpoint: u64,
        remote: u64,
        local: PutBuffer,
    ) -> Rdma<PutBuffer> {
        let Some(pid) = self.pid_of(endpoint) else {
            return Rdma::Failed(local);
        };
        match cma::write(pid, local.as_ptr(), local.len(), remote) {
            Ok(()) => Rdma::Done(local),
            Err(e) => {
                self.rdma_failed(endpoint, "put", e);
                Rdma::Failed(local)
            }
        }
    }

    #[inline]
    fn progress(&mut self, pml: &Pml<'_>) -> usize {
        let mut events = 0;
        if self.attaching() {
            self.attach_tick += 1;
            if self.attach_tick >= self.attach_every {
                self.attach_tick = 0;
                let before = self.attached;
                self.attach_rest();
                if self.attached == before {
                    self.attach_every = (self.attach_every * 2).min(ATTACH_EVERY_MAX);
                }
            }
        }
        if self.fbox_seen < self.own.sizes().fbox_count
            && self.own.fbox_claimed().load(Ordering::Relaxed) > self.fbox_seen
        {
            self.discover_fboxes();
        }
        for k in 0..self.inbound.len() {
            // The idle poll stays here: one load per box.
            if self.inbound[k].ready(&self.own) {
                events += self.drain_fbox(pml, k, self.poll_batch);
            }
        }
        for _ in 0..self.poll_batch {
            match fifo::pop(&self.own, &mut self.fifo_head) {
                Some(entry) => events += self.deliver_queued(pml, entry),
                None => break,
            }
        }
        if !self.shared.is_empty() {
            events += self.finish_shared_gets(pml);
        }
        if !self.to_report.is_empty() {
            for peer in std::mem::take(&mut self.to_report) {
                if let Some(why) = &self.peers[peer as usize].failed {
                    pml.peer_failed(MODULE, peer, why);
                    events += 1;
                }
            }
        }
        events
    }

    fn stop_after_internal_error(&mut self, pml: &Pml<'_>, message: &str) {
        for (peer, p) in self.peers.iter().enumerate() {
            if p.segment.is_some() && peer as u32 != self.rank {
                pml.peer_failed(
                    MODULE,
                    peer as u32,
                    &format!("the sm btl stopped after an internal error: {message}"),
                );
            }
        }
    }
}
