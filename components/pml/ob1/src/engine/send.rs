//! The send side: `isend` (argument checks, protocol choice, sequence
//! numbers), the first fragment (MATCH or RNDV), the FRAG pipeline of an
//! acknowledged rendezvous, queued ACKs, and the pml's own `progress`.

use std::ptr;

use oxmpi_framework_btl::module::SendOutcome;
use oxmpi_framework_pml::module::{RequestError, SendArgs, SendMode, ANY_TAG};
use oxmpi_plugin_api::verbosity;

use super::peers::Link;
use super::{bytes_of, clause, nonnull, Ctrl, Engine, Kind, Push, Transport};
use crate::requests::{Op, Protocol, Request, SendReq};
use crate::wire::{self, Header, MatchInfo, FLAG_PUT, FLAG_SYNC};

impl<T: Transport> Engine<T> {
    /// Starts a send (`PmlModule::isend`): the request handle, or the
    /// sentence saying why it cannot start with its kind (`Unreachable`,
    /// `PeerFailed`, or `Other` for invalid arguments).
    ///
    /// # Safety
    ///
    /// `args.buf` must be readable for `args.len` bytes until the request
    /// completes.
    pub(crate) unsafe fn isend(&mut self, args: &SendArgs) -> Result<u64, (RequestError, String)> {
        // SAFETY: the caller's promise.
        let started = unsafe { self.start_send(args) };
        // A fired receive is settled once the send is out (see `armed`).
        self.settle();
        started
    }

    /// [`Engine::isend`] before settling a fired receive.
    ///
    /// # Safety
    ///
    /// As for [`Engine::isend`].
    #[inline(always)]
    unsafe fn start_send(&mut self, args: &SendArgs) -> Result<u64, (RequestError, String)> {
        let dest = args.dest;
        if dest >= self.size || (args.buf.is_null() && args.len > 0) || args.tag == ANY_TAG {
            return Err((RequestError::Other, self.invalid_send(args)));
        }
        if let Err(e) = self.resolve(dest) {
            return Err((RequestError::Unreachable, e));
        }
        let peer = &mut self.peers[dest as usize];
        if peer.failed.is_some() {
            return Err((RequestError::PeerFailed, self.lost_peer(dest)));
        }
        let Link::Reachable(route) = &mut peer.link else {
            return Err((RequestError::Other, self.no_route(dest)));
        };
        let lane = route.next_eager();
        let (first_module, first_endpoint, loopback) = (
            route.lanes[lane].module,
            route.lanes[lane].endpoint,
            route.lanes[lane].loopback,
        );
        let info = &self.modules[first_module].info;
        let sync = args.mode == SendMode::Synchronous;
        // RDMA for what the send pipeline would move in FRAGs.
        let rdma = self.use_rdma && args.len > info.rndv_eager_limit && args.len >= route.min_rdma;
        let (protocol, first_len) = if !sync && args.len <= info.eager_limit {
            (Protocol::Eager, args.len)
        } else if rdma && route.all_get {
            (Protocol::Rget, 0)
        } else {
            (Protocol::Rendezvous, args.len.min(info.rndv_eager_limit))
        };
        let offer_put = protocol == Protocol::Rendezvous && rdma && route.all_put;
        let sequence = peer.next_sequence(args.context);
        let mut outcome = None;
        if protocol == Protocol::Eager {
            // The MATCH goes out before any request exists: a btl that
            // takes it at once (`Done`) leaves nothing to track, and the
            // send completes here (handle 0). Otherwise the request is made
            // in the slot whose handle the btl was given as the cookie.
            let info = MatchInfo {
                context: args.context,
                source: self.rank,
                tag: args.tag,
                sequence,
                len: args.len as u64,
            };
            if loopback {
                // A message to this process through a loopback module is
                // delivered here, as the btl would deliver it: matched,
                // kept as unexpected or held back by its sequence number.
                // SAFETY: the caller keeps `args.buf` readable for
                // `args.len` bytes (this function's contract); it is not
                // null when `len > 0` (checked above).
                let payload = unsafe { bytes_of(args.buf, args.len) };
                self.incoming(self.rank, info, Kind::Eager, payload);
                return Ok(0);
            }
            let bytes = wire::encode_match(&info);
            let m = &self.modules[first_module];
            let sent = self.transport.send(
                m.btl,
                m.index,
                first_endpoint,
                &bytes,
                nonnull(args.buf, args.len),
                args.len,
                self.requests.vacant(),
            );
            if sent == SendOutcome::Done {
                return Ok(0);
            }
            outcome = Some((sent, first_module));
        }
        Ok(self.track_send(
            args,
            SendPlan {
                sync,
                sequence,
                protocol,
                lane,
                first_len,
                offer_put,
                outcome,
            },
        ))
    }

    /// Makes the request of a send that did not complete in `isend`, and
    /// starts it (or records what the btl answered for its first
    /// fragment); its handle.
    #[inline(never)]
    fn track_send(&mut self, args: &SendArgs, plan: SendPlan) -> u64 {
        let dest = args.dest;
        let h = self.requests.insert_with(|| {
            Request::new(
                Op::Send(SendReq {
                    buf: args.buf,
                    len: args.len,
                    dest,
                    tag: args.tag,
                    context: args.context,
                    sync: plan.sync,
                    sequence: plan.sequence,
                    protocol: plan.protocol,
                    lane: plan.lane,
                    first_len: plan.first_len,
                    started: false,
                    acked: false,
                    receiver: 0,
                    end: args.len,
                    next: plan.first_len,
                    outstanding: 0,
                    put_addr: 0,
                    fin_queued: false,
                    offer_put: plan.offer_put,
                }),
                args.done,
            )
        });
        let taken = match plan.outcome {
            None => self.start(h),
            Some((sent, module)) => self.first_sent(h, sent, dest, module),
        };
        if !taken {
            self.active.push_back(h);
        }
        h
    }

    /// The sentence of a send with invalid arguments (a rank outside the
    /// job, a null buffer, `MPI_ANY_TAG`).
    #[cold]
    #[inline(never)]
    fn invalid_send(&self, args: &SendArgs) -> String {
        let dest = args.dest;
        if dest >= self.size {
            format!(
                "rank {} cannot send to rank {dest}: the job has {} ranks (0 to {})",
                self.rank,
                self.size,
                self.size - 1
            )
        } else if args.buf.is_null() && args.len > 0 {
            format!(
                "rank {} cannot send {} bytes to rank {dest}: the buffer is a null pointer",
                self.rank, args.len
            )
        } else {
            format!(
                "rank {} cannot send to rank {dest} with tag {ANY_TAG}: that is MPI_ANY_TAG, which no receive can match",
                self.rank
            )
        }
    }

    /// The sentence of a send to a lost peer.
    #[cold]
    #[inline(never)]
    fn lost_peer(&self, dest: u32) -> String {
        let reason = self.peers[dest as usize].failed.as_deref().unwrap_or("");
        format!(
            "rank {} cannot send to rank {dest}: rank {dest} was lost ({})",
            self.rank,
            clause(reason)
        )
    }

    /// The sentence of a send to a peer whose route was not resolved.
    #[cold]
    #[inline(never)]
    fn no_route(&self, dest: u32) -> String {
        format!(
            "rank {} cannot send to rank {dest}: no route was resolved",
            self.rank
        )
    }

    /// Records what the btl (module `module`) answered for the first
    /// fragment of send `h` to `dest`. False if it would block.
    fn first_sent(&mut self, h: u64, sent: SendOutcome, dest: u32, module: usize) -> bool {
        match sent {
            SendOutcome::WouldBlock => false,
            SendOutcome::Done | SendOutcome::Queued => {
                if let Some(Request {
                    op: Op::Send(s), ..
                }) = self.requests.get_mut(h)
                {
                    s.started = true;
                    if sent == SendOutcome::Queued {
                        s.outstanding += 1;
                    }
                }
                self.check_send(h);
                true
            }
            SendOutcome::Failed => {
                self.send_failed(dest, module);
                true
            }
        }
    }

    /// Sends the first fragment of send `h` (MATCH or RNDV). False if the
    /// btl would block.
    #[inline]
    pub(super) fn start(&mut self, h: u64) -> bool {
        let Some(r) = self.requests.get_mut(h) else {
            return true;
        };
        if r.complete {
            return true;
        }
        let Op::Send(s) = &mut r.op else {
            return true;
        };
        let info = MatchInfo {
            context: s.context,
            source: self.rank,
            tag: s.tag,
            sequence: s.sequence,
            len: s.len as u64,
        };
        let header = match s.protocol {
            Protocol::Eager => Header::Match(info),
            Protocol::Rendezvous => Header::Rndv {
                info,
                flags: if s.sync { FLAG_SYNC } else { 0 } | if s.offer_put { FLAG_PUT } else { 0 },
                sender: h,
            },
            Protocol::Rget => Header::Rget {
                info,
                flags: if s.sync { FLAG_SYNC } else { 0 },
                sender: h,
                addr: s.buf as u64,
            },
        };
        let mut bytes = [0u8; 64];
        let n = header.encode(&mut bytes);
        let dest = s.dest;
        let Link::Reachable(route) = &self.peers[dest as usize].link else {
            return true;
        };
        let lane = &route.lanes[s.lane];
        let module = lane.module;
        let m = &self.modules[module];
        let outcome = self.transport.send(
            m.btl,
            m.index,
            lane.endpoint,
            &bytes[..n],
            nonnull(s.buf, s.first_len),
            s.first_len,
            h,
        );
        self.first_sent(h, outcome, dest, module)
    }

    /// Sends FRAGs of rendezvous send `h` while the pipeline has room.
    /// Returns what stopped it and the number of FRAGs sent.
    pub(super) fn push_frags(&mut self, h: u64) -> (Push, usize) {
        let mut sent = 0;
        loop {
            let Some(r) = self.requests.get_mut(h) else {
                return (Push::Finished, sent);
            };
            if r.complete {
                return (Push::Finished, sent);
            }
            let Op::Send(s) = &mut r.op else {
                return (Push::Finished, sent);
            };
            if s.next >= s.end {
                self.check_send(h);
                return (Push::Finished, sent);
            }
            if s.outstanding >= self.depth {
                return (Push::Waiting, sent);
            }
            let dest = s.dest;
            let Link::Reachable(route) = &mut self.peers[dest as usize].link else {
                return (Push::Finished, sent);
            };
            let li = route.next_stripe();
            let lane = &mut route.lanes[li];
            let m = &self.modules[lane.module];
            let size = lane.frag.min(s.end - s.next);
            let mut bytes = [0u8; 64];
            let n = Header::Frag {
                receiver: s.receiver,
                offset: s.next as u64,
            }
            .encode(&mut bytes);
            // SAFETY: `next < end <= len`: inside the caller's buffer.
            let payload = unsafe { s.buf.add(s.next) };
            let outcome =
                self.transport
                    .send(m.btl, m.index, lane.endpoint, &bytes[..n], payload, size, h);
            match outcome {
                SendOutcome::Done | SendOutcome::Queued => {
                    s.next += size;
                    lane.striped += size as u64;
                    if outcome == SendOutcome::Queued {
                        s.outstanding += 1;
                    }
                    sent += 1;
                }
                SendOutcome::WouldBlock => return (Push::Blocked, sent),
                SendOutcome::Failed => {
                    let module = lane.module;
                    self.send_failed(dest, module);
                    return (Push::Finished, sent);
                }
            }
        }
    }

    /// Sends queued ACKs and FINs; returns how many went out.
    pub(super) fn flush_ctrl(&mut self) -> usize {
        let mut sent = 0;
        while let Some(&c) = self.ctrl.front() {
            let peer = c.peer();
            if self.peers[peer as usize].failed.is_some() {
                self.ctrl.pop_front();
                continue;
            }
            if let Err(sentence) = self.resolve(peer) {
                self.ctrl.pop_front();
                match c {
                    Ctrl::Ack { receiver, .. } => self.unanswerable(receiver, peer, &sentence),
                    Ctrl::Fin { .. } => self.transport.log(verbosity::COMPONENT, &sentence),
                }
                continue;
            }
            let Link::Reachable(route) = &mut self.peers[peer as usize].link else {
                self.ctrl.pop_front();
                continue;
            };
            let li = route.next_eager();
            let lane = &route.lanes[li];
            let m = &self.modules[lane.module];
            let mut bytes = [0u8; 64];
            let n = match c {
                Ctrl::Ack {
                    sender,
                    receiver,
                    wanted,
                    addr,
                    ..
                } => Header::Ack {
                    sender,
                    receiver,
                    wanted: wanted as u64,
                    addr,
                },
                Ctrl::Fin { request, bytes, .. } => Header::Fin {
                    request,
                    bytes: bytes as u64,
                },
            }
            .encode(&mut bytes);
            let outcome = self.transport.send(
                m.btl,
                m.index,
                lane.endpoint,
                &bytes[..n],
                nonnull(ptr::null(), 0),
                0,
                0,
            );
            match outcome {
                SendOutcome::WouldBlock => break,
                SendOutcome::Done | SendOutcome::Queued => {
                    self.ctrl.pop_front();
                    sent += 1;
                }
                SendOutcome::Failed => {
                    self.ctrl.pop_front();
                    let module = lane.module;
                    self.send_failed(peer, module);
                }
            }
        }
        sent
    }

    /// Whether [`progress`](Self::progress) has anything to do: queued
    /// ACKs and FINs, or sends and receives waiting for a btl.
    #[inline]
    pub(crate) fn has_work(&self) -> bool {
        !self.ctrl.is_empty() || !self.active.is_empty()
    }

    /// The pml's own progress (`PmlModule::progress`): sends queued ACKs,
    /// first fragments the btls refused before, and the FRAGs of acked
    /// rendezvous sends. Returns the number of fragments sent.
    pub(crate) fn progress(&mut self) -> usize {
        self.settle();
        let mut events = self.flush_ctrl();
        let n = self.active.len();
        for _ in 0..n {
            let Some(h) = self.active.pop_front() else {
                break;
            };
            let Some(r) = self.requests.get(h) else {
                continue;
            };
            if r.complete {
                continue;
            }
            let s = match &r.op {
                Op::Send(s) => s,
                Op::Recv(_) => {
                    // A receive issuing gets.
                    let (why, issued) = self.push_gets(h);
                    events += issued;
                    match why {
                        Push::Blocked | Push::Waiting => self.active.push_back(h),
                        Push::Finished => {}
                    }
                    continue;
                }
            };
            if !s.started {
                if self.start(h) {
                    events += 1;
                } else {
                    self.active.push_back(h);
                }
                // A started rendezvous waits for its ACK, which re-queues it.
                continue;
            }
            if s.protocol == Protocol::Rendezvous && s.acked {
                let (why, sent) = if s.put_addr != 0 {
                    self.push_puts(h)
                } else {
                    self.push_frags(h)
                };
                events += sent;
                match why {
                    Push::Blocked | Push::Waiting => self.active.push_back(h),
                    Push::Finished => {}
                }
            }
        }
        events
    }
}

/// What `isend` decided for a send it hands to `track_send`.
struct SendPlan {
    sync: bool,
    sequence: u64,
    protocol: Protocol,
    lane: usize,
    first_len: usize,
    offer_put: bool,
    /// What the btl answered for an eager MATCH sent before the request
    /// existed, and through which module; `None` when nothing was sent.
    outcome: Option<(SendOutcome, usize)>,
}
