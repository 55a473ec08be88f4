//! The receive side: `irecv`, matching arrived MATCH and RNDV messages
//! (in order, or held back and pooled), and delivering a matched message
//! to its receive (the eager copy, or the ACK of a rendezvous).

use std::ptr;

use oxmpi_framework_pml::module::{RecvArgs, RequestError, RequestStatus, ANY_SOURCE};
use oxmpi_matching::{
    ContextId, Envelope, InOrder, Incoming, Match, PostedRecv, RecvId, Source, Tag, UnexpectedId,
};
use oxmpi_plugin_api::verbosity;

use super::{Ctrl, Engine, Kind, Stored, Transport};
use crate::light::{is_light, Light, Named};
use crate::requests::{Failure, Op, RecvPhase, RecvReq, Request};
use crate::wire::MatchInfo;

impl<T: Transport> Engine<T> {
    /// Posts a receive, never completing it during the call (the tests'
    /// way to post one; the entry point uses
    /// [`irecv_or_complete`](Engine::irecv_or_complete)).
    ///
    /// # Safety
    ///
    /// `args.buf` must be writable for `args.len` bytes until the request
    /// completes.
    #[cfg(test)]
    pub(crate) unsafe fn irecv(&mut self, args: &RecvArgs) -> Result<u64, String> {
        self.settle();
        self.check_recv(args)?;
        // SAFETY: the caller's promise.
        Ok(unsafe { self.post(args) })
    }

    /// Posts a receive or completes it at once (`Requests::irecv`): an eager message that arrived before it
    /// and fits its buffer is copied there and the receive completes
    /// without a request (0, with `status`); any other arrived message it
    /// matches is delivered to a new request, as a posted receive would
    /// have it.
    ///
    /// # Safety
    ///
    /// As for [`Engine::irecv`].
    pub(crate) unsafe fn irecv_or_complete(
        &mut self,
        args: &RecvArgs,
        status: &mut RequestStatus,
    ) -> Result<u64, String> {
        self.settle();
        self.check_recv(args)?;
        let Some((envelope, stored)) = self.matcher.take_matching(
            ContextId(args.context),
            Source::from_raw(args.source),
            Tag::from_raw(args.tag),
        ) else {
            // SAFETY: the caller's promise.
            return Ok(unsafe { self.post(args) });
        };
        // SAFETY: the caller's promise.
        Ok(unsafe { self.receive_arrived(args, envelope, stored, status) })
    }

    /// `Pml::improbe`: the oldest arrived message a receive with these
    /// arguments would match, claimed (out of matching) under its
    /// unexpected-queue handle, with its status.
    pub(crate) fn improbe(
        &mut self,
        context: u32,
        source: i32,
        tag: i32,
    ) -> Option<(u64, RequestStatus)> {
        self.settle();
        let (id, e) = self.matcher.mprobe(
            ContextId(context),
            Source::from_raw(source),
            Tag::from_raw(tag),
        )?;
        let status = RequestStatus {
            source: e.source,
            tag: e.tag,
            count: e.len,
            cancelled: false,
            error: RequestError::None,
        };
        Some((id.to_bits(), status))
    }

    /// `Pml::imrecv`: receives the message [`Engine::improbe`] claimed
    /// under `message` into `args`'s buffer, completing at once (0, with
    /// `status`) or through a new request, as `irecv_or_complete` does.
    ///
    /// # Errors
    /// A sentence when no claimed message has that handle.
    ///
    /// # Safety
    /// As for [`Engine::irecv`].
    pub(crate) unsafe fn imrecv(
        &mut self,
        message: u64,
        args: &RecvArgs,
        status: &mut RequestStatus,
    ) -> Result<u64, String> {
        self.settle();
        if args.buf.is_null() && args.len > 0 {
            return Err(self.invalid_recv(args));
        }
        let taken =
            UnexpectedId::from_bits(message).and_then(|id| self.matcher.take_unexpected(id));
        let Some((envelope, stored)) = taken else {
            return Err(format!(
                "rank {} has no matched message {message:#x}: it was received already, or never \
                 returned by a matched probe",
                self.rank
            ));
        };
        let args = RecvArgs {
            source: envelope.source,
            tag: envelope.tag,
            ..*args
        };
        // SAFETY: the caller's promise.
        Ok(unsafe { self.receive_arrived(&args, envelope, stored, status) })
    }

    /// Receives an arrived message taken out of matching into `args`'s
    /// buffer: an eager one that fits is copied and completes at once (0,
    /// with `status`); any other is delivered to a new request, as a
    /// posted receive would have it.
    ///
    /// # Safety
    /// As for [`Engine::irecv`].
    unsafe fn receive_arrived(
        &mut self,
        args: &RecvArgs,
        envelope: Envelope,
        stored: Stored,
        status: &mut RequestStatus,
    ) -> u64 {
        if stored.kind == Kind::Eager && envelope.len <= args.len {
            let bytes = stored.data.as_deref().unwrap_or(&[]);
            let n = bytes.len().min(envelope.len);
            if n > 0 {
                // SAFETY: the buffer holds `args.len >= envelope.len >= n`
                // bytes (the caller's promise); `bytes` are ours.
                unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), args.buf, n) };
            }
            *status = RequestStatus {
                source: envelope.source,
                tag: envelope.tag,
                count: envelope.len,
                cancelled: false,
                error: RequestError::None,
            };
            if let Some(v) = stored.data {
                self.pool.give(v);
            }
            return 0;
        }
        let h = self.new_recv(args);
        let m = Match {
            recv: RecvId(h),
            capacity: args.len,
            envelope,
            payload: stored,
        };
        self.deliver_at_post(m);
        h
    }

    /// Refuses a receive from a rank outside the job or into a null buffer.
    #[inline]
    fn check_recv(&self, args: &RecvArgs) -> Result<(), String> {
        // A negative source is past every rank as a `u32`; `|` keeps the
        // common case free of branches.
        let bad_source = args.source as u32 >= self.size && args.source != ANY_SOURCE;
        let bad_buffer = args.buf.is_null() & (args.len != 0);
        if bad_source | bad_buffer {
            return Err(self.invalid_recv(args));
        }
        Ok(())
    }

    /// The sentence of a receive with invalid arguments.
    #[cold]
    #[inline(never)]
    fn invalid_recv(&self, args: &RecvArgs) -> String {
        if args.source != ANY_SOURCE && (args.source < 0 || args.source as u32 >= self.size) {
            format!(
                "rank {} cannot receive from rank {}: the job has {} ranks (0 to {}; -1 for any source)",
                self.rank,
                args.source,
                self.size,
                self.size - 1
            )
        } else {
            format!(
                "rank {} cannot post a receive of {} bytes: the buffer is a null pointer",
                self.rank, args.len
            )
        }
    }

    /// A new receive request for `args`, posted.
    #[inline]
    fn new_recv(&mut self, args: &RecvArgs) -> u64 {
        self.requests.insert_with(|| {
            Request::new(
                Op::Recv(RecvReq {
                    buf: args.buf,
                    capacity: args.len,
                    source: args.source,
                    tag: args.tag,
                    phase: RecvPhase::Posted,
                    light: 0,
                }),
                args.done,
            )
        })
    }

    /// Makes a request for a checked receive and posts it (matching an
    /// arrived message at once if one fits): a light receive when it has a
    /// completion slot (see [`crate::light`]), else a full one.
    ///
    /// # Safety
    ///
    /// As for [`Engine::irecv`].
    unsafe fn post(&mut self, args: &RecvArgs) -> u64 {
        let h = if args.done.is_null() {
            self.new_recv(args)
        } else {
            self.requests.insert_light(Light::of(args))
        };
        let posted = PostedRecv {
            context: ContextId(args.context),
            source: Source::from_raw(args.source),
            tag: Tag::from_raw(args.tag),
            capacity: args.len,
            id: RecvId(h),
        };
        match self.matcher.post_recv(posted) {
            Some(m) => self.deliver_at_post(m),
            None => {
                if args.source >= 0 && self.peers[args.source as usize].failed.is_some() {
                    let peer = args.source as u32;
                    if self.matcher.cancel_recv(RecvId(h)) {
                        if let Some(full) = self.full(h) {
                            self.fail_request(full, peer);
                        }
                    }
                } else {
                    self.arm(h, args);
                }
            }
        }
        h
    }

    /// Delivers an arrived message a receive matched as it was posted, and
    /// sends the ACK of a rendezvous at once.
    fn deliver_at_post(&mut self, m: Match<Stored>) {
        self.deliver(m, &[]);
        if !self.ctrl.is_empty() {
            self.flush_ctrl();
        }
    }

    /// Hands a matched message to its receive: copies the bytes that came
    /// with it (`m.payload.data`, or `inline` when still in the btl's
    /// memory), then completes an eager receive, or queues the ACK of a
    /// rendezvous.
    pub(super) fn deliver(&mut self, m: Match<Stored>, inline: &[u8]) {
        let Match {
            recv,
            envelope,
            payload: Stored { kind, data },
            ..
        } = m;
        let bytes: &[u8] = match &data {
            Some(v) => v,
            None => inline,
        };
        let mut h = recv.0;
        if is_light(h) {
            if kind == Kind::Eager && self.land_light(h, &envelope, bytes) {
                if let Some(v) = data {
                    self.pool.give(v);
                }
                return;
            }
            // Anything but an eager message that fits needs the record.
            h = self.requests.promote(h).unwrap_or(h);
        }
        let Some(r) = self.requests.get_mut(h) else {
            self.matched_unknown(h);
            if let Some(v) = data {
                self.pool.give(v);
            }
            return;
        };
        let Some((wanted, n)) = land(r, &envelope, bytes) else {
            if let Some(v) = data {
                self.pool.give(v);
            }
            return;
        };
        let Op::Recv(q) = &mut r.op else {
            return;
        };
        match kind {
            Kind::Eager => {
                q.phase = RecvPhase::Done;
                self.finish(h);
            }
            Kind::Rendezvous { .. } | Kind::Rget { .. }
                if self.peers[envelope.source as usize].failed.is_some() =>
            {
                let peer = envelope.source as u32;
                r.status.count = n;
                r.status.error = RequestError::PeerFailed;
                r.failure = Failure::PeerFailed { peer };
                q.phase = RecvPhase::Done;
                self.finish(h);
            }
            Kind::Rget { sender, addr } => {
                let peer = envelope.source as u32;
                if wanted == 0 {
                    self.ctrl.push_back(Ctrl::Fin {
                        peer,
                        request: sender,
                        bytes: 0,
                    });
                    q.phase = RecvPhase::Done;
                    self.finish(h);
                } else {
                    q.phase = RecvPhase::Get {
                        peer,
                        sender,
                        remote: addr,
                        wanted,
                        next: 0,
                        outstanding: 0,
                    };
                    self.active.push_back(h);
                }
            }
            Kind::Rendezvous { sender, put } => {
                let peer = envelope.source as u32;
                {
                    // The sender puts the rest when it can and the receive
                    // still expects bytes after the first ones.
                    let addr = if put && self.use_rdma && n < wanted {
                        q.buf as u64
                    } else {
                        0
                    };
                    self.ctrl.push_back(Ctrl::Ack {
                        peer,
                        sender,
                        receiver: h,
                        wanted,
                        addr,
                    });
                    if n >= wanted {
                        q.phase = RecvPhase::Done;
                        self.finish(h);
                    } else {
                        q.phase = RecvPhase::Rendezvous {
                            peer,
                            wanted,
                            received: n,
                        };
                    }
                }
            }
        }
        if let Some(v) = data {
            self.pool.give(v);
        }
    }

    /// Completes receive `h`, matched by the eager message `envelope`
    /// whose bytes are `bytes` (still in the btl's memory).
    #[inline]
    fn deliver_eager(&mut self, mut h: u64, envelope: &Envelope, bytes: &[u8]) {
        if is_light(h) {
            if self.land_light(h, envelope, bytes) {
                return;
            }
            // A truncation needs the record.
            h = self.requests.promote(h).unwrap_or(h);
        }
        let Some(r) = self.requests.get_mut(h) else {
            self.matched_unknown(h);
            return;
        };
        if land(r, envelope, bytes).is_none() {
            return;
        }
        if let Op::Recv(q) = &mut r.op {
            q.phase = RecvPhase::Done;
        }
        // `finish` without looking the request up again.
        if r.mark_complete() {
            self.requests.remove(h);
        }
    }

    /// Completes light receive `h` with the eager message `envelope`
    /// (whose bytes are `bytes`) if it fits the buffer: copies the bytes,
    /// publishes the status in the receive's slot and releases the
    /// receive. False (nothing done) when it does not fit or `h` is not a
    /// posted light receive.
    #[inline(always)]
    fn land_light(&mut self, h: u64, envelope: &Envelope, bytes: &[u8]) -> bool {
        let Named::Posted { index, light } = self.requests.named(h) else {
            return false;
        };
        let len = envelope.len;
        if len > light.capacity {
            return false;
        }
        let n = bytes.len().min(len);
        if n > 0 {
            // SAFETY: the buffer holds `capacity >= len >= n` bytes until
            // the receive completes (irecv's contract); overlap is allowed,
            // as in `land`.
            unsafe { oxmpi_framework_btl::bytes::copy(bytes.as_ptr(), light.buf, n) };
        }
        let status = RequestStatus {
            source: envelope.source,
            tag: envelope.tag,
            count: len,
            cancelled: false,
            error: RequestError::None,
        };
        // SAFETY: a light receive's slot is the one it was posted with,
        // not null, and valid until published: a free promotes the receive
        // first (the `Completion` contract).
        unsafe { (*light.done).publish(&status) };
        self.requests.release_light(index);
        true
    }

    /// The full request of receive `h`: `h` itself, or for a light
    /// receive the request it is promoted to (now, if it was not);
    /// `None` for an unknown light handle.
    #[inline]
    pub(super) fn full(&mut self, h: u64) -> Option<u64> {
        if is_light(h) {
            self.requests.promote(h)
        } else {
            Some(h)
        }
    }

    /// Logs a match naming a request that does not exist (a bug).
    #[cold]
    fn matched_unknown(&self, h: u64) {
        self.transport.log(
            verbosity::ERROR,
            &format!("internal error: a message matched request {h:#x}, which does not exist"),
        );
    }

    /// A MATCH or RNDV arrived: match it, queue it or hold it back.
    #[inline]
    pub(super) fn incoming(&mut self, peer: u32, info: MatchInfo, kind: Kind, payload: &[u8]) {
        self.clear_for(peer);
        let len = usize::try_from(info.len).unwrap_or(usize::MAX);
        let consistent = info.source == peer
            && match kind {
                Kind::Eager => payload.len() == len,
                Kind::Rendezvous { .. } => payload.len() <= len,
                Kind::Rget { .. } => payload.is_empty(),
            };
        if !consistent {
            return self.malformed(peer, &info, payload.len());
        }
        let envelope = Envelope {
            context: ContextId(info.context),
            source: peer as i32,
            tag: info.tag,
            sequence: info.sequence,
            len,
            sync: kind != Kind::Eager,
        };
        if kind == Kind::Eager {
            // The common case, without moving a match value: in order,
            // matched straight from the btl's memory, or queued with a copy.
            let pool = &mut self.pool;
            let stored = || Stored {
                kind,
                data: Some(pool.copy(payload)),
            };
            match self.matcher.arrive_in_order(&envelope, stored) {
                InOrder::Matched { recv, .. } => {
                    self.deliver_eager(recv.0, &envelope, payload);
                    return;
                }
                InOrder::Queued(_) => return,
                InOrder::NotInOrder => {}
            }
        }
        self.incoming_any(peer, envelope, kind, payload)
    }

    /// Logs a MATCH or RNDV whose header contradicts its sender or payload
    /// (it is dropped).
    #[cold]
    #[inline(never)]
    fn malformed(&self, peer: u32, info: &MatchInfo, payload: usize) {
        self.transport.log(
            verbosity::ERROR,
            &format!(
                "dropped a malformed message header from rank {peer}: source {}, length {}, {payload} payload bytes",
                info.source,
                info.len,
            ),
        );
    }

    /// [`Engine::incoming`] for a rendezvous, or an eager message out of
    /// order: matched, queued or held back by `Matcher::incoming`.
    #[inline(never)]
    fn incoming_any(&mut self, peer: u32, envelope: Envelope, kind: Kind, payload: &[u8]) {
        // In order, the payload is matched straight from the btl's memory;
        // a message held back for an earlier one is copied first.
        let pool = &mut self.pool;
        let outcome =
            self.matcher
                .incoming_keeping(envelope, Stored { kind, data: None }, |stored| {
                    stored.data = Some(pool.copy(payload));
                });
        match outcome {
            // Stored bytes, if any, win over `payload` in deliver.
            Incoming::Matched(m) => self.deliver(m, payload),
            Incoming::Queued(id) => {
                if let Some(p) = self.matcher.unexpected_payload_mut(id) {
                    if p.data.is_none() {
                        p.data = Some(self.pool.copy(payload));
                    }
                }
            }
            Incoming::HeldBack => {}
            other => self.odd_outcome(peer, other),
        }
        while let Some(released) = self.matcher.next_released() {
            if let Incoming::Matched(m) = released {
                self.deliver(m, &[]);
            }
        }
    }

    #[cold]
    pub(super) fn odd_outcome(&mut self, peer: u32, outcome: Incoming<Stored>) {
        match outcome {
            Incoming::Duplicate {
                envelope,
                payload,
                expected,
            } => {
                self.transport.log(
                    verbosity::ERROR,
                    &format!(
                        "dropped a duplicate message from rank {peer} (context {}, sequence {}, expected {expected}): a btl delivered it twice",
                        envelope.context, envelope.sequence
                    ),
                );
                if let Some(v) = payload.data {
                    self.pool.give(v);
                }
            }
            other => self.transport.log(
                verbosity::ERROR,
                &format!("internal error: unexpected matching outcome {other:?} for a message from rank {peer}"),
            ),
        }
    }
}

/// Copies the bytes that came with a message matched by receive `r` into
/// its buffer (`bytes`: ours or the btl's, at most what the receive takes)
/// and sets its status: `(wanted, copied)`, the bytes the receive takes
/// (`min(message, buffer)`) and those copied now. `None` if `r` is not a
/// receive.
#[inline]
fn land(r: &mut Request, envelope: &Envelope, bytes: &[u8]) -> Option<(usize, usize)> {
    let Op::Recv(q) = &mut r.op else {
        return None;
    };
    let len = envelope.len;
    let wanted = len.min(q.capacity);
    let n = bytes.len().min(wanted);
    if n > 0 {
        // SAFETY: the receive buffer holds `capacity >= wanted >= n` bytes
        // (irecv's contract); `bytes` is ours or the btl's, and `copy`
        // allows overlap (a btl handing a send's payload over in place may
        // show bytes of a buffer that overlaps this one).
        unsafe { oxmpi_framework_btl::bytes::copy(bytes.as_ptr(), q.buf, n) };
    }
    let truncated = len > q.capacity;
    r.status = RequestStatus {
        source: envelope.source,
        tag: envelope.tag,
        count: wanted,
        cancelled: false,
        error: if truncated {
            RequestError::Truncated
        } else {
            RequestError::None
        },
    };
    r.failure = if truncated {
        Failure::Truncated { len }
    } else {
        Failure::None
    };
    Some((wanted, n))
}
