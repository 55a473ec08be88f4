//! [`Ucx`]: the pml's state (UCP's context and worker, the peers'
//! endpoints, the request slab) and its [`Pml`] side: `init`, the modex
//! card, lazy endpoints and what happens when a peer fails. The request
//! entry points are in [`crate::requests`].

use crate::requests::BYTES;
use crate::slab::{Events, Kind, PeerArg, Slab, Slot, State};
use crate::tag::MAX_RANKS;
use crate::ucp::{self, status_text, Started, Ucp};
use crate::UcxParams;
use oxmpi_framework_btl::module::JobIdentity;
use oxmpi_framework_pml::adapter::{CandidateBtl, Core, MtlHandle, Pml};
use oxmpi_framework_pml::module::{PmlTransport, RequestError};
use oxmpi_plugin_api::{verbosity, ComponentContext, Params as _};
use oxmpi_ucx_sys as sys;
use std::time::{Duration, Instant};

/// The modex key of a rank's worker address.
pub const MODEX_KEY: &str = "pml_ucx";

/// How long `finalize` waits for the endpoints to close.
const CLOSE_LIMIT: Duration = Duration::from_secs(10);

/// One peer (by job rank).
pub(crate) struct Peer {
    /// Its endpoint, once connected.
    pub ep: sys::ucp_ep_h,
    /// Why it cannot be used (a failed connection or a lost peer).
    pub failed: Option<String>,
    /// The error handler's argument (kept until the worker is gone).
    arg: *mut PeerArg,
}

/// The pml ucx of this process (see the crate docs).
pub struct Ucx {
    /// The slab must drop after the worker (in `Drop`, the worker goes
    /// first), since UCP's callbacks point into it.
    pub(crate) ucp: Option<Ucp>,
    pub(crate) slab: Slab,
    pub(crate) peers: Vec<Peer>,
    pub(crate) core: Core,
    pub(crate) log: ComponentContext,
    pub(crate) rank: u32,
    /// Whether endpoints ask for UCP's peer error handling
    /// (`pml_ucx_peer_failure`).
    pub(crate) peer_errors: bool,
    /// Whether receives keep the first bytes of a truncated message
    /// (`pml_ucx_keep_truncated`): they then all use the slot datatype.
    pub(crate) keep_truncated: bool,
    /// UCP's generic datatype over request slots ([`crate::slab::SLOT_OPS`]):
    /// for messages in pieces, and for receives that keep truncated
    /// messages.
    pub(crate) slot_datatype: sys::ucp_datatype_t,
}

// SAFETY: the raw pointers are UCP's handles (used by one thread at a
// time: the adapter admits one entry at a time), the MPI layer's buffers
// and completion slots (valid on whichever thread it calls from), and
// the slab's own memory.
unsafe impl Send for Ucx {}

impl Ucx {
    /// The endpoint to `rank`, created on first use from its modex card.
    ///
    /// # Errors
    ///
    /// Why the peer cannot be reached, with its kind.
    pub(crate) fn endpoint(&mut self, rank: u32) -> Result<sys::ucp_ep_h, (RequestError, String)> {
        let Some(peer) = self.peers.get(rank as usize) else {
            return Err((
                RequestError::Other,
                format!(
                    "pml ucx: rank {rank} is not in the job of {} ranks",
                    self.peers.len()
                ),
            ));
        };
        if let Some(why) = &peer.failed {
            return Err((RequestError::PeerFailed, why.clone()));
        }
        if !peer.ep.is_null() {
            return Ok(peer.ep);
        }
        self.connect(rank)
    }

    #[cold]
    fn connect(&mut self, rank: u32) -> Result<sys::ucp_ep_h, (RequestError, String)> {
        let me = self.rank;
        let unreachable = |why: String| (RequestError::Unreachable, why);
        let card = match self.core.modex_get(rank, MODEX_KEY) {
            Ok(Some(card)) => card,
            Ok(None) => {
                return Err(unreachable(format!(
                    "rank {me} cannot reach rank {rank} over pml ucx: rank {rank} published no UCX \
                     worker address ({MODEX_KEY}); every rank must use the same pml (--mca pml ucx)"
                )))
            }
            Err(why) => {
                return Err(unreachable(format!(
                    "rank {me} cannot read rank {rank}'s UCX worker address from the modex: {why}"
                )))
            }
        };
        let events = self.slab.events();
        let arg = Box::into_raw(Box::new(PeerArg { rank, events }));
        let ucp = self.ucp();
        // SAFETY: `arg` is freed only after the worker is destroyed (in
        // `Drop`), so it outlives the endpoint.
        let mut made = unsafe {
            ucp.connect(
                &card,
                self.peer_errors,
                crate::slab::peer_failed,
                arg.cast(),
            )
        };
        if made.is_err() && self.peer_errors {
            // No transport to the peer offers peer error handling (UCX
            // 1.13's shared memory does not): connect without it.
            // SAFETY: as above.
            let plain = unsafe { ucp.connect(&card, false, crate::slab::peer_failed, arg.cast()) };
            if plain.is_ok() {
                self.log.log(
                    verbosity::COMPONENT,
                    &format!(
                        "rank {me}: no UCX transport to rank {rank} handles peer failures ({}); \
                         connected without (a failure of rank {rank} is then reported by the launcher)",
                        made.as_ref().err().map_or("", String::as_str)
                    ),
                );
            }
            made = plain;
        }
        let peer = &mut self.peers[rank as usize];
        peer.arg = arg;
        match made {
            Ok(ep) => {
                peer.ep = ep;
                self.log.log(
                    verbosity::TRACE,
                    &format!("rank {me} connected to rank {rank}"),
                );
                Ok(ep)
            }
            Err(why) => {
                let why = format!(
                    "rank {me} cannot connect to rank {rank} over UCX ({why}); check that UCX_TLS \
                     offers a transport both ranks share (`ucx_info -d`)"
                );
                peer.failed = Some(why.clone());
                Err(unreachable(why))
            }
        }
    }

    /// Runs what UCP's callbacks reported: completes finished requests
    /// and fails lost peers. Returns how many requests completed.
    pub(crate) fn drain(&mut self) -> usize {
        let events: *mut Events = self.slab.events();
        let mut completed = 0;
        loop {
            // SAFETY: the slab's events; no callback runs during this
            // function (it calls nothing that progresses the worker except
            // `ucp_request_cancel`, whose callbacks append to the lists,
            // and the loop reads them again afterwards).
            let next = unsafe { (*events).finished.pop() };
            if let Some(index) = next {
                completed += self.finish(self.slab.at(index));
                continue;
            }
            // SAFETY: as above.
            let lost = unsafe { (*events).failed.pop() };
            match lost {
                Some((rank, status)) => self.peer_lost(rank, status),
                None => break,
            }
        }
        completed
    }

    /// Completes a slot whose UCP request finished; 1 if it completed.
    fn finish(&mut self, slot: *mut Slot) -> usize {
        // SAFETY: a slot of the slab whose callback has run; nothing else
        // refers to it during this function.
        let s = unsafe { &mut *slot };
        if s.state != State::Running {
            return 0;
        }
        let ucp = self.ucp();
        if !s.ucx.is_null() {
            // The callback ran, so the request is complete; freed once.
            ucp.finished(s.ucx);
            s.ucx = std::ptr::null_mut();
        }
        let outcome = s.outcome;
        let info = s.info;
        crate::requests::complete(s, outcome, &info, self.rank, &self.peers);
        if s.detached {
            self.slab.release(slot);
            return 1;
        }
        // SAFETY: the caller's slot, valid until the request is released
        // or freed (the `Completion` contract); not freed (not detached).
        if unsafe { oxmpi_framework_pml::module::publish_completion(s.done, &s.status) } {
            self.slab.release(slot);
        }
        1
    }

    /// A peer was lost: later sends to it fail, and receives naming it
    /// complete with `PeerFailed`.
    #[cold]
    fn peer_lost(&mut self, rank: u32, status: sys::ucs_status_t) {
        let me = self.rank;
        let Some(peer) = self.peers.get_mut(rank as usize) else {
            return;
        };
        if peer.failed.is_some() {
            return;
        }
        let why = format!(
            "rank {me} lost its connection to rank {rank} over UCX ({}); rank {rank} probably failed",
            status_text(status)
        );
        self.log.log(verbosity::COMPONENT, &why);
        peer.failed = Some(why);
        let worker = self.worker();
        for index in self.slab.in_use() {
            let slot = self.slab.at(index);
            // SAFETY: a slot in use; no reference to it is live.
            let (state, kind, request) = unsafe { ((*slot).state, (*slot).kind, (*slot).ucx) };
            if state == State::Running && kind == Kind::Recv(rank as i32) && !request.is_null() {
                // SAFETY: as above.
                unsafe { (*slot).peer_lost = true };
                // SAFETY: a running receive of this worker; its callback
                // reports the cancellation (drained by the caller's loop).
                unsafe { sys::ucp_request_cancel(worker, request) };
            }
        }
    }

    /// UCP (between `init` and `finalize`).
    #[inline]
    pub(crate) fn ucp(&self) -> &Ucp {
        self.ucp.as_ref().expect("the worker lives until finalize")
    }

    /// The worker.
    #[inline]
    pub(crate) fn worker(&self) -> sys::ucp_worker_h {
        self.ucp().worker()
    }

    /// Cancels the receives still running, closes every endpoint
    /// (flushing it, or at once for a failed peer and a peer that still
    /// has sends running, which can only end with their receives),
    /// progressing until all closed or [`CLOSE_LIMIT`] passed; then drops
    /// UCP.
    pub(crate) fn shut_down(&mut self) {
        let Some(ucp) = self.ucp.as_ref() else {
            return;
        };
        let worker = ucp.worker();
        let live = if self.slab.live() > 0 {
            self.slab.in_use()
        } else {
            Vec::new()
        };
        if !live.is_empty() {
            self.log.log(
                verbosity::COMPONENT,
                &format!(
                    "finalize with {} request(s) not freed; they are dropped",
                    live.len()
                ),
            );
        }
        let mut sending = vec![false; self.peers.len()];
        for &index in &live {
            let slot = self.slab.at(index);
            // SAFETY: a slot in use; no reference to it is live.
            let (state, kind, request) = unsafe { ((*slot).state, (*slot).kind, (*slot).ucx) };
            if state != State::Running || request.is_null() {
                continue;
            }
            match kind {
                Kind::Send(dest) => sending[dest as usize] = true,
                // SAFETY: a running receive of this worker; its callback
                // reports the cancellation.
                Kind::Recv(_) => unsafe { sys::ucp_request_cancel(worker, request) },
            }
        }
        let dropped = ucp.discard_unexpected(CLOSE_LIMIT);
        if dropped > 0 {
            self.log.log(
                verbosity::COMPONENT,
                &format!(
                    "finalize: {dropped} message(s) that arrived were never received; dropped"
                ),
            );
        }
        let mut closing = Vec::new();
        for (rank, peer) in self.peers.iter_mut().enumerate() {
            if peer.ep.is_null() {
                continue;
            }
            match ucp.close(peer.ep, peer.failed.is_some() || sending[rank]) {
                Started::Later(request) => closing.push((rank, request)),
                Started::Now(st) if st != sys::UCS_OK && !ucp::is_peer_failure(st) => {
                    self.log.log(
                        verbosity::COMPONENT,
                        &format!("closing the endpoint to rank {rank}: {}", status_text(st)),
                    );
                }
                Started::Now(_) => {}
            }
            peer.ep = std::ptr::null_mut();
        }
        let start = Instant::now();
        while !closing.is_empty() && start.elapsed() < CLOSE_LIMIT {
            ucp.progress();
            closing.retain(|&(_, request)| ucp.finished(request).is_none());
        }
        if !closing.is_empty() {
            let ranks: Vec<String> = closing.iter().map(|(r, _)| r.to_string()).collect();
            self.log.log(
                verbosity::COMPONENT,
                &format!(
                    "the endpoints to rank(s) {} did not close within {} s; UCX drops them with the worker",
                    ranks.join(", "),
                    CLOSE_LIMIT.as_secs()
                ),
            );
        }
        // What finished (cancelled receives, purged sends) is freed back
        // to UCP; what did not is released to UCP, which frees it when it
        // ends or with the worker.
        self.drain();
        for index in self.slab.in_use() {
            let slot = self.slab.at(index);
            // SAFETY: a slot in use; no reference to it is live.
            let request = unsafe { std::mem::replace(&mut (*slot).ucx, std::ptr::null_mut()) };
            if !request.is_null() {
                // SAFETY: a request of this worker that has not finished;
                // released once, and never used again.
                unsafe { sys::ucp_request_free(request) };
            }
        }
        // The worker and context go before the slab and the error
        // handlers' arguments, which their callbacks point into.
        self.ucp = None;
        if self.slot_datatype != BYTES {
            // SAFETY: the generic datatype made in `init`, destroyed once,
            // now that no request uses it.
            unsafe { sys::ucp_dt_destroy(self.slot_datatype) };
            self.slot_datatype = BYTES;
        }
    }
}

impl Drop for Ucx {
    fn drop(&mut self) {
        self.shut_down();
        for peer in &mut self.peers {
            if !peer.arg.is_null() {
                // SAFETY: made by `Box::into_raw` in `connect`, freed once,
                // after the worker whose endpoint held it was destroyed.
                drop(unsafe { Box::from_raw(peer.arg) });
                peer.arg = std::ptr::null_mut();
            }
        }
    }
}

impl Pml for Ucx {
    const TRANSPORT: PmlTransport = PmlTransport::Own;

    fn init(
        context: &ComponentContext,
        identity: &JobIdentity,
        core: Core,
        _btls: &[CandidateBtl],
        _mtl: Option<MtlHandle>,
    ) -> Result<Self, String> {
        let params = UcxParams::read(context)?;
        if identity.size > MAX_RANKS {
            return Err(format!(
                "pml ucx carries jobs of at most {MAX_RANKS} ranks (20 bits of UCP's tag), and this job has {}; \
                 use --mca pml ob1",
                identity.size
            ));
        }
        let ucp = Ucp::start(identity.size)?;
        let address = ucp.address()?;
        core.modex_put(MODEX_KEY, &address).map_err(|why| {
            format!("pml ucx could not publish its UCX worker address ({MODEX_KEY}) in the modex: {why}")
        })?;
        context.log(
            verbosity::COMPONENT,
            &format!(
                "rank {} of {} uses UCX {} (worker address of {} bytes)",
                identity.rank,
                identity.size,
                ucp::version(),
                address.len()
            ),
        );
        let mut slot_datatype: sys::ucp_datatype_t = BYTES;
        // SAFETY: static operations; UCP writes the datatype on success.
        let st = unsafe {
            sys::ucp_dt_create_generic(
                &crate::slab::SLOT_OPS,
                std::ptr::null_mut(),
                &mut slot_datatype,
            )
        };
        if st != sys::UCS_OK {
            return Err(format!(
                "pml ucx could not create its generic datatype (ucp_dt_create_generic: {}); \
                 use --mca pml ob1",
                status_text(st)
            ));
        }
        let peers = (0..identity.size)
            .map(|_| Peer {
                ep: std::ptr::null_mut(),
                failed: None,
                arg: std::ptr::null_mut(),
            })
            .collect();
        Ok(Ucx {
            ucp: Some(ucp),
            slab: Slab::new(),
            peers,
            core,
            log: *context,
            rank: identity.rank,
            peer_errors: params.peer_failure,
            keep_truncated: params.keep_truncated,
            slot_datatype,
        })
    }
}
