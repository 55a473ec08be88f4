//! The armed receive: a shortcut for the message that completes the only
//! posted receive.
//!
//! When a receive from one rank is posted while no other receive is, and
//! nothing from that rank waits out of order, the next in-order message
//! from that rank on that communicator goes to this receive if its tag
//! fits: no other posted receive comes before it in MPI's matching order.
//! The engine keeps such a receive *armed*. An eager MATCH that fits it
//! (right sender, communicator, tag and sequence number, no longer than
//! the buffer) is copied into the buffer and the receive is *fired*: its
//! status is known at once, and the matcher and the request records are
//! brought up to date later, when the engine is next entered for anything
//! but starting a send (a send touches none of that state, so the answer
//! to a message goes out first). Settling replays the arrival in the
//! matcher, which removes the receive and moves the sender's sequence on
//! exactly as a normal arrival would have.
//!
//! Anything else that arrives from the armed receive's sender, a cancel of
//! it and the loss of its sender disarm it first: the receive is still
//! posted in the matcher, so the normal path takes over unchanged.

use std::ptr;

use oxmpi_framework_btl::bytes;
use oxmpi_framework_pml::module::{Completion, RecvArgs, RequestError, RequestStatus, ANY_SOURCE};
use oxmpi_matching::{ContextId, Envelope, InOrder, Tag};
use oxmpi_plugin_api::verbosity;

use super::{Engine, Kind, Stored, Transport};
use crate::light::is_light;
use crate::requests::{Failure, Op, RecvPhase};
use crate::wire::MatchInfo;

/// Where the armed receive stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// No receive is armed.
    Idle,
    /// `request` is armed.
    Armed,
    /// A message landed in `request`'s buffer; the matcher and the request
    /// record still have to learn it.
    Fired,
}

/// The armed receive (see the module docs).
#[derive(Debug)]
pub(super) struct Armed {
    state: State,
    /// The receive's request handle.
    request: u64,
    /// The sender it receives from.
    peer: u32,
    /// Its communicator's context id.
    context: u32,
    /// The tag it asks for (or `ANY_TAG`).
    tag: Tag,
    /// The sequence number the next in-order message from `peer` on
    /// `context` carries.
    sequence: u64,
    /// Its buffer (writable for `capacity` bytes until it completes).
    buf: *mut u8,
    /// Its capacity.
    capacity: usize,
    /// Its completion slot (null: none).
    done: *const Completion,
    /// The fired message's tag.
    fired_tag: i32,
    /// The fired message's length.
    fired_len: usize,
    /// Whether the fired receive was released, through `take` or its
    /// completion slot (its record goes when settled).
    released: bool,
    /// Messages delivered this way so far.
    pub(super) deliveries: u64,
}

impl Armed {
    /// Nothing armed.
    pub(super) const fn idle() -> Armed {
        Armed {
            state: State::Idle,
            request: 0,
            peer: 0,
            context: 0,
            tag: Tag::Any,
            sequence: 0,
            buf: ptr::null_mut(),
            capacity: 0,
            done: ptr::null(),
            fired_tag: 0,
            fired_len: 0,
            released: false,
            deliveries: 0,
        }
    }

    /// The status of the fired receive.
    #[inline]
    fn status(&self) -> RequestStatus {
        RequestStatus {
            source: self.peer as i32,
            tag: self.fired_tag,
            count: self.fired_len,
            cancelled: false,
            error: RequestError::None,
        }
    }
}

impl<T: Transport> Engine<T> {
    /// Arms receive `h`, just posted with `args` (and not matched), when
    /// it is the only posted receive, names its sender, and nothing from
    /// that sender is held back; a receive already armed stays armed.
    #[inline]
    pub(super) fn arm(&mut self, h: u64, args: &RecvArgs) {
        if self.armed.state != State::Idle
            || args.source == ANY_SOURCE
            || self.matcher.posted_len() != 1
        {
            return;
        }
        let context = ContextId(args.context);
        if self.matcher.held_back(context, args.source) != 0 {
            return;
        }
        self.armed = Armed {
            state: State::Armed,
            request: h,
            peer: args.source as u32,
            context: args.context,
            tag: Tag::from_raw(args.tag),
            sequence: self.matcher.expected_sequence(context, args.source),
            buf: args.buf,
            capacity: args.len,
            done: args.done,
            fired_tag: 0,
            fired_len: 0,
            released: false,
            deliveries: self.armed.deliveries,
        };
    }

    /// Whether a receive is armed for messages from `peer` (not fired).
    #[inline]
    pub(super) fn armed_for(&self, peer: u32) -> bool {
        self.armed.state == State::Armed && self.armed.peer == peer
    }

    /// Delivers an eager MATCH (`info`, decoded from the delivery with
    /// `payload`) to the armed receive if it is the message that receive
    /// matches and fits its buffer: true when taken (the receive is
    /// fired). The caller checked [`Engine::armed_for`] for the MATCH's
    /// sender.
    #[inline]
    pub(super) fn fire(&mut self, info: &MatchInfo, payload: &[u8]) -> bool {
        let a = &mut self.armed;
        let len = payload.len();
        if info.context != a.context
            || info.sequence != a.sequence
            || len > a.capacity
            || !a.tag.matches(info.tag)
        {
            return false;
        }
        if len > 0 {
            // SAFETY: the receive's buffer is writable for `capacity >=
            // len` bytes until it completes (irecv's contract), and it has
            // not completed: it is armed. `copy` allows overlap, as in
            // `land`.
            unsafe { bytes::copy(payload.as_ptr(), a.buf, len) };
        }
        a.state = State::Fired;
        a.fired_tag = info.tag;
        a.fired_len = len;
        a.deliveries += 1;
        // Published at once: the waiter reads its slot; the record goes
        // when settled.
        a.released = !a.done.is_null();
        if a.released {
            // SAFETY: the slot the armed receive started with; the caller
            // has not freed the receive (a free of an armed receive clears `done`).
            unsafe { (*a.done).publish(&a.status()) };
        }
        true
    }

    /// Before anything from `peer` goes through the matcher: settles a
    /// fired receive, and disarms one armed for `peer`.
    #[inline]
    pub(super) fn clear_for(&mut self, peer: u32) {
        match self.armed.state {
            State::Idle => {}
            State::Armed => {
                if self.armed.peer == peer {
                    self.armed.state = State::Idle;
                }
            }
            State::Fired => self.settle_fired(),
        }
    }

    /// Forgets the armed receive (it stays posted in the matcher, which
    /// takes over); a fired one is settled first.
    #[inline]
    pub(super) fn disarm(&mut self) {
        match self.armed.state {
            State::Idle => {}
            State::Armed => self.armed.state = State::Idle,
            State::Fired => self.settle_fired(),
        }
    }

    /// Brings the matcher and the request records up to date with a fired
    /// receive, if there is one.
    #[inline]
    pub(super) fn settle(&mut self) {
        if self.armed.state == State::Fired {
            self.settle_fired();
        }
    }

    /// [`Engine::settle`] for a fired receive.
    #[inline(never)]
    fn settle_fired(&mut self) {
        let a = &self.armed;
        let (h, released, status) = (a.request, a.released, a.status());
        let envelope = Envelope {
            context: ContextId(a.context),
            source: a.peer as i32,
            tag: a.fired_tag,
            sequence: a.sequence,
            len: a.fired_len,
            sync: false,
        };
        self.armed.state = State::Idle;
        let outcome = self.matcher.arrive_in_order(&envelope, || Stored {
            kind: Kind::Eager,
            data: None,
        });
        match outcome {
            InOrder::Matched { recv, .. } if recv.0 == h => {}
            other => self.transport.log(
                verbosity::ERROR,
                &format!(
                    "internal error: the matcher disagrees with the armed receive {h:#x}: {other:?}"
                ),
            ),
        }
        if released {
            if is_light(h) {
                self.requests.remove_light(h);
            } else {
                self.requests.remove(h);
            }
            return;
        }
        let Some(h) = self.full(h) else {
            return;
        };
        let Some(r) = self.requests.get_mut(h) else {
            return;
        };
        if let Op::Recv(q) = &mut r.op {
            q.phase = RecvPhase::Done;
        }
        r.status = status;
        r.failure = Failure::None;
        if r.mark_complete() {
            self.requests.remove(h);
        }
    }

    /// `test` of the fired receive `h`: its status, or the answer for an
    /// unknown handle once it was released (its record stays until
    /// settled); `None` when `h` is not the fired receive.
    #[inline]
    pub(super) fn fired_answer(&self, h: u64) -> Option<RequestStatus> {
        let a = &self.armed;
        (a.state == State::Fired && a.request == h).then(|| {
            if a.released {
                super::completion::unknown_status()
            } else {
                a.status()
            }
        })
    }

    /// `take` of the fired receive, not released yet: its status, and it
    /// is released.
    #[inline]
    pub(super) fn take_fired(&mut self, h: u64) -> Option<RequestStatus> {
        let a = &mut self.armed;
        if a.state != State::Fired || a.request != h || a.released {
            return None;
        }
        a.released = true;
        Some(a.status())
    }

    /// The caller freed receive `h`: if it is armed, its message still
    /// lands, but its slot is never written (the record, freed, goes when
    /// settled).
    #[inline]
    pub(super) fn forget_armed_slot(&mut self, h: u64) {
        if self.is_armed(h) {
            self.armed.done = ptr::null();
        }
    }

    /// Whether `h` is the armed (not fired) receive.
    #[inline]
    pub(super) fn is_armed(&self, h: u64) -> bool {
        self.armed.state == State::Armed && self.armed.request == h
    }
}
