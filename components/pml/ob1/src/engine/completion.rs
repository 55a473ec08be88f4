//! Requests seen from the MPI layer: completing them (`finish`,
//! `check_send`), and `test`, `free`, `cancel`, `iprobe` and the sentence
//! of `request_error`.

use oxmpi_framework_pml::module::{RequestError, RequestStatus, ANY_SOURCE, ANY_TAG};
use oxmpi_matching::{ContextId, RecvId, Source, Tag};

use super::{clause, tag_text, Ctrl, Engine, Transport};
use crate::light::{is_light, Named};
use crate::requests::{Failure, Op, Protocol, RecvPhase, Request};

/// What a handle from the caller names (see [`Engine::resolve_request`]).
enum Resolved {
    /// The full request with this handle.
    Full(u64),
    /// A light receive still posted (running).
    Posted,
    /// Nothing.
    Unknown,
}

impl<T: Transport> Engine<T> {
    /// Marks `h` complete; releases it if the caller already freed it.
    #[inline]
    pub(super) fn finish(&mut self, h: u64) {
        if self.requests.get_mut(h).is_some_and(Request::mark_complete) {
            self.requests.remove(h);
        }
    }

    /// Completes send `h` if nothing of it is left (after puts, once the
    /// FIN that tells the receiver is queued).
    #[inline]
    pub(super) fn check_send(&mut self, h: u64) {
        let Some(r) = self.requests.get_mut(h) else {
            return;
        };
        if r.complete {
            return;
        }
        let Op::Send(s) = &mut r.op else {
            return;
        };
        let moved = s.started && s.outstanding == 0 && s.acked && s.next >= s.end;
        if moved && s.protocol == Protocol::Rendezvous && s.put_addr != 0 && !s.fin_queued {
            s.fin_queued = true;
            self.ctrl.push_back(Ctrl::Fin {
                peer: s.dest,
                request: s.receiver,
                bytes: s.end,
            });
        }
        let done = match s.protocol {
            Protocol::Eager => s.started && s.outstanding == 0,
            Protocol::Rendezvous | Protocol::Rget => moved,
        };
        if done {
            r.status = RequestStatus {
                source: s.dest as i32,
                tag: s.tag,
                count: s.len,
                cancelled: false,
                error: RequestError::None,
            };
            self.finish(h);
        }
    }

    /// `PmlModule::test`: the status once complete; an unknown handle is
    /// "complete" with error `Other` (see [`Engine::request_error`]).
    #[inline]
    pub(crate) fn test(&self, h: u64) -> Option<RequestStatus> {
        if let Some(status) = self.fired_answer(h) {
            return Some(status);
        }
        let h = match self.resolve_request(h) {
            Resolved::Full(full) => full,
            Resolved::Posted => return None,
            Resolved::Unknown => return Some(unknown_status()),
        };
        match self.requests.get(h) {
            Some(r) if !r.detached => r.complete.then_some(r.status),
            _ => Some(unknown_status()),
        }
    }

    /// `PmlModule::take`: `test`, releasing an error-free complete
    /// request with the same lookup.
    #[inline]
    pub(crate) fn take(&mut self, h: u64) -> Option<RequestStatus> {
        if let Some(status) = self.take_fired(h) {
            return Some(status);
        }
        self.settle();
        let h = match self.resolve_request(h) {
            Resolved::Full(full) => full,
            Resolved::Posted => return None,
            Resolved::Unknown => return Some(unknown_status()),
        };
        self.requests
            .take_complete(h)
            .unwrap_or_else(|()| Some(unknown_status()))
    }

    /// What handle `h` from the caller names: a full request (itself, or
    /// the one a light receive was promoted to), a light receive still
    /// posted, or nothing.
    #[inline]
    fn resolve_request(&self, h: u64) -> Resolved {
        if !is_light(h) {
            return Resolved::Full(h);
        }
        match self.requests.named(h) {
            Named::Posted { .. } => Resolved::Posted,
            Named::Promoted(full) => Resolved::Full(full),
            Named::Unknown => Resolved::Unknown,
        }
    }

    /// `PmlModule::free`.
    #[inline]
    pub(crate) fn free(&mut self, h: u64) {
        self.settle();
        // Its slot is the caller's again: nothing may be published there.
        self.forget_armed_slot(h);
        // A light receive still posted becomes a full request, which keeps
        // no slot once detached.
        let Some(h) = self.full(h) else {
            return;
        };
        let Some(r) = self.requests.get_mut(h) else {
            return;
        };
        if r.detached {
            return;
        }
        if r.complete {
            self.requests.remove(h);
        } else {
            r.detach();
        }
    }

    /// `PmlModule::cancel`: cancels a receive not matched yet.
    pub(crate) fn cancel(&mut self, h: u64) -> bool {
        self.settle();
        if self.is_armed(h) {
            self.disarm();
        }
        // A light receive still posted leaves the matcher first, then
        // gets the record that completes cancelled.
        let (h, cancelled) = match self.resolve_request(h) {
            Resolved::Full(full) => (full, false),
            Resolved::Posted => {
                if !self.matcher.cancel_recv(RecvId(h)) {
                    return false;
                }
                match self.requests.promote(h) {
                    Some(full) => (full, true),
                    None => return false,
                }
            }
            Resolved::Unknown => return false,
        };
        let Some(r) = self.requests.get_mut(h) else {
            return false;
        };
        if r.complete || r.detached {
            return false;
        }
        let Op::Recv(q) = &mut r.op else {
            return false;
        };
        if q.phase != RecvPhase::Posted
            || (!cancelled && !self.matcher.cancel_recv(RecvId(q.matcher_id(h))))
        {
            return false;
        }
        q.phase = RecvPhase::Done;
        r.status = RequestStatus {
            source: ANY_SOURCE,
            tag: ANY_TAG,
            count: 0,
            cancelled: true,
            error: RequestError::None,
        };
        self.finish(h);
        true
    }

    /// `PmlModule::iprobe`: source, tag and full length of the message a
    /// receive would match.
    pub(crate) fn iprobe(&self, context: u32, source: i32, tag: i32) -> Option<RequestStatus> {
        self.matcher
            .probe(
                ContextId(context),
                Source::from_raw(source),
                Tag::from_raw(tag),
            )
            .map(|e| RequestStatus {
                source: e.source,
                tag: e.tag,
                count: e.len,
                cancelled: false,
                error: RequestError::None,
            })
    }

    /// `PmlModule::request_error`: the sentence for a request.
    pub(crate) fn request_error(&self, h: u64) -> String {
        let full = match self.resolve_request(h) {
            Resolved::Full(full) => full,
            Resolved::Posted => return format!("request {h:#x} has not completed"),
            Resolved::Unknown => h,
        };
        let r = match self.requests.get(full) {
            Some(r) if !r.detached => r,
            _ => return format!("pml ob1 has no request {h:#x}: it was freed, or never issued"),
        };
        if !r.complete {
            return format!("request {h:#x} has not completed");
        }
        match (&r.failure, &r.op) {
            (Failure::None, _) if r.status.cancelled => format!("request {h:#x} was cancelled"),
            (Failure::None, _) => format!("request {h:#x} completed without error"),
            (Failure::Truncated { len }, Op::Recv(q)) => format!(
                "message of {len} bytes from rank {} (tag {}) truncated to the {}-byte receive buffer",
                r.status.source, r.status.tag, q.capacity
            ),
            (Failure::Truncated { len }, Op::Send(_)) => {
                format!("message of {len} bytes truncated")
            }
            (Failure::PeerFailed { peer }, op) => {
                let reason = self.peers[*peer as usize]
                    .failed
                    .as_deref()
                    .map(clause)
                    .unwrap_or("reason unknown");
                match op {
                    Op::Send(s) => format!(
                        "send of {} bytes to rank {peer} ({}) failed: rank {peer} was lost ({reason})",
                        s.len,
                        tag_text(s.tag)
                    ),
                    Op::Recv(_) => format!(
                        "receive from rank {peer} ({}) failed: rank {peer} was lost ({reason})",
                        tag_text(r.status.tag)
                    ),
                }
            }
            (Failure::Message(s), _) => s.clone(),
        }
    }
}

/// The status `test` answers for an unknown or freed handle (see
/// [`Engine::request_error`]).
#[inline]
pub(super) fn unknown_status() -> RequestStatus {
    RequestStatus {
        source: ANY_SOURCE,
        tag: ANY_TAG,
        count: 0,
        cancelled: false,
        error: RequestError::Other,
    }
}
