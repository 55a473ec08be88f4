//! The values the matching engine works with: context ids, sources, tags,
//! envelopes, posted receives, identifiers, outcomes and statuses.

use std::fmt;

/// The raw value of `MPI_ANY_SOURCE` (Open MPI's value, −1), for
/// [`Source::from_raw`] and [`Source::to_raw`].
pub const ANY_SOURCE_RAW: i32 = -1;

/// The raw value of `MPI_ANY_TAG` (Open MPI's value, −1), for
/// [`Tag::from_raw`] and [`Tag::to_raw`]. The library's internal tags are
/// other negative values (see [`Tag`]).
pub const ANY_TAG_RAW: i32 = -1;

/// `MPI_ANY_SOURCE`: a receive or probe that accepts a message from any rank
/// of the communicator.
pub const ANY_SOURCE: Source = Source::Any;

/// `MPI_ANY_TAG`: a receive or probe that accepts any **non-negative** tag.
pub const ANY_TAG: Tag = Tag::Any;

/// A communicator's context id: messages match only receives posted with
/// the same context id, so communicators never see each other's traffic.
///
/// The communicator layer allocates context ids (an intra-communicator
/// typically uses one for point-to-point and one for collectives); the
/// matcher treats them as opaque numbers. Reusing an id after a
/// communicator is freed requires [`Matcher::remove_context`] first, so
/// that per-peer sequence numbers restart at 0.
///
/// [`Matcher::remove_context`]: crate::Matcher::remove_context
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContextId(pub u32);

impl From<u32> for ContextId {
    fn from(id: u32) -> Self {
        ContextId(id)
    }
}

impl fmt::Display for ContextId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The source a receive or probe accepts: one rank of the communicator, or
/// any rank ([`ANY_SOURCE`]).
///
/// Ranks are the sender's rank in the communicator (the `source` of an
/// [`Envelope`]), so they are non-negative; a `Rank` with a negative value
/// never matches any message. `MPI_PROC_NULL` is not a source for the
/// matcher: a receive from it completes at once in the request layer and
/// never reaches here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// `MPI_ANY_SOURCE`: any rank.
    Any,
    /// Exactly this rank.
    Rank(i32),
}

impl Source {
    /// The source for a raw MPI value: [`ANY_SOURCE_RAW`] (−1) is
    /// [`Source::Any`], anything else is that rank.
    pub const fn from_raw(raw: i32) -> Source {
        if raw == ANY_SOURCE_RAW {
            Source::Any
        } else {
            Source::Rank(raw)
        }
    }

    /// The raw MPI value: [`ANY_SOURCE_RAW`] for [`Source::Any`], else the rank.
    pub const fn to_raw(self) -> i32 {
        match self {
            Source::Any => ANY_SOURCE_RAW,
            Source::Rank(rank) => rank,
        }
    }

    /// Whether a message from `rank` fits this source.
    #[inline]
    pub const fn matches(self, rank: i32) -> bool {
        match self {
            Source::Any => true,
            Source::Rank(r) => r == rank,
        }
    }
}

/// The tag a receive or probe accepts: one tag, or any non-negative tag
/// ([`ANY_TAG`]).
///
/// **Negative tags are reserved for the library's own traffic** (collectives,
/// one-sided and other internal protocols run over point-to-point on the
/// user's communicator), as in Open MPI: such a message is matched only by
/// a receive posted with exactly that tag, and **never by [`Tag::Any`]**, so
/// a user's `MPI_ANY_TAG` receive cannot steal it. `MPI_Send` with a
/// negative tag is an error the request layer reports (`MPI_ERR_TAG`)
/// before anything reaches the matcher; the matcher itself accepts any
/// `i32`. Internal tags should avoid −1, the raw value of `MPI_ANY_TAG`
/// (Open MPI's collective tags start at −10).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tag {
    /// `MPI_ANY_TAG`: any tag ≥ 0.
    Any,
    /// Exactly this tag (negative values are internal tags).
    Value(i32),
}

impl Tag {
    /// The tag for a raw MPI value: [`ANY_TAG_RAW`] (−1) is [`Tag::Any`],
    /// anything else is that tag.
    pub const fn from_raw(raw: i32) -> Tag {
        if raw == ANY_TAG_RAW {
            Tag::Any
        } else {
            Tag::Value(raw)
        }
    }

    /// The raw MPI value: [`ANY_TAG_RAW`] for [`Tag::Any`], else the tag.
    pub const fn to_raw(self) -> i32 {
        match self {
            Tag::Any => ANY_TAG_RAW,
            Tag::Value(tag) => tag,
        }
    }

    /// Whether a message with tag `tag` fits: [`Tag::Any`] accepts every
    /// tag ≥ 0 (never an internal, negative one); `Value(t)` accepts `t`.
    #[inline]
    pub const fn matches(self, tag: i32) -> bool {
        match self {
            Tag::Any => tag >= 0,
            Tag::Value(t) => t == tag,
        }
    }

    /// Whether a message tag belongs to the library's internal traffic
    /// (negative).
    pub const fn is_internal(tag: i32) -> bool {
        tag < 0
    }
}

/// The header of an incoming message, as the pml decodes it from the first
/// fragment (ob1's match header).
///
/// `sequence` numbers the messages one sender sends on one context to one
/// receiver: 0, 1, 2, … with no gaps. The matcher uses it to restore the
/// sending order when a transport delivers out of order (striping over
/// several links), which MPI's non-overtaking rule requires.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Envelope {
    /// The communicator's context id.
    pub context: ContextId,
    /// The sender's rank in that communicator (≥ 0).
    pub source: i32,
    /// The message tag (negative for internal traffic, see [`Tag`]).
    pub tag: i32,
    /// The per-(context, sender) sequence number, from 0 without gaps.
    pub sequence: u64,
    /// The message's length in bytes.
    pub len: usize,
    /// Whether the sender waits for the match (`MPI_Ssend`, or a
    /// rendezvous): the pml acknowledges the match.
    pub sync: bool,
}

impl Envelope {
    /// The status a probe reports for this message: source, tag, its full
    /// length as the count, no error.
    pub const fn probe_status(&self) -> Status {
        Status {
            source: self.source,
            tag: self.tag,
            count: self.len,
            error: None,
            cancelled: false,
        }
    }
}

/// The caller's identifier for a posted receive (typically its request's
/// index), handed back when the receive matches and used by
/// [`Matcher::cancel_recv`].
///
/// The matcher does not interpret it. Ids should be unique among the
/// receives posted at one time; with duplicates, cancelling cancels the
/// oldest of them.
///
/// [`Matcher::cancel_recv`]: crate::Matcher::cancel_recv
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecvId(pub u64);

/// A receive as the matcher sees it: what it accepts and how many bytes its
/// buffer holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PostedRecv {
    /// The communicator's context id.
    pub context: ContextId,
    /// The accepted source.
    pub source: Source,
    /// The accepted tag.
    pub tag: Tag,
    /// The receive buffer's size in bytes; a longer message still matches,
    /// truncated (see [`Match::truncated`]).
    pub capacity: usize,
    /// The caller's identifier.
    pub id: RecvId,
}

impl PostedRecv {
    /// Whether `envelope` fits this receive: same context, source and tag
    /// accepted. Capacity does not take part (a longer message matches and
    /// is truncated).
    #[inline]
    pub const fn accepts(&self, envelope: &Envelope) -> bool {
        self.context.0 == envelope.context.0
            && self.source.matches(envelope.source)
            && self.tag.matches(envelope.tag)
    }
}

/// The handle of a message stored in the unexpected queue (or claimed by
/// [`Matcher::mprobe`]). It stays valid until the message is matched,
/// taken or its context removed; after that every use of it is refused
/// (`None`), even if its slot is reused.
///
/// [`Matcher::mprobe`]: crate::Matcher::mprobe
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UnexpectedId {
    pub(crate) index: u32,
    pub(crate) generation: u32,
}

impl UnexpectedId {
    /// The handle as one word, never 0 (so 0 can mean "no message"), for
    /// passing through an interface that carries integers.
    pub const fn to_bits(self) -> u64 {
        // A slab index never reaches u32::MAX (that many nodes would not
        // fit in memory), so `index + 1` stays within the low half.
        ((self.generation as u64) << 32) | (self.index as u64 + 1)
    }

    /// The handle [`to_bits`](Self::to_bits) made; `None` for a word it
    /// cannot have made (0 in the low half). A well-formed word of a
    /// message that is gone is refused later, by the matcher.
    pub const fn from_bits(bits: u64) -> Option<UnexpectedId> {
        let low = bits as u32;
        if low == 0 {
            return None;
        }
        Some(UnexpectedId {
            index: low - 1,
            generation: (bits >> 32) as u32,
        })
    }
}

/// An error a matched receive reports in its status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum MatchError {
    /// The message was longer than the receive buffer: the first
    /// `capacity` bytes are delivered and the status carries
    /// `MPI_ERR_TRUNCATE`.
    #[error(
        "message truncated: {len} bytes arrived for a receive buffer of {capacity} bytes \
         (MPI_ERR_TRUNCATE); post a larger buffer, or probe first to learn the size"
    )]
    Truncated {
        /// The message's length in bytes.
        len: usize,
        /// The receive buffer's size in bytes.
        capacity: usize,
    },
}

/// What a completed receive or a probe reports: `MPI_Status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Status {
    /// The sender's rank (`MPI_SOURCE`); [`ANY_SOURCE_RAW`] for a cancelled
    /// receive.
    pub source: i32,
    /// The message tag (`MPI_TAG`); [`ANY_TAG_RAW`] for a cancelled receive.
    pub tag: i32,
    /// Bytes delivered: the message length, or the buffer's capacity when
    /// truncated (Open MPI's ob1 does the same); for a probe, the message's
    /// full length.
    pub count: usize,
    /// `MPI_ERROR`: `None` is `MPI_SUCCESS`.
    pub error: Option<MatchError>,
    /// Whether the receive was cancelled (`MPI_Test_cancelled`).
    pub cancelled: bool,
}

impl Status {
    /// The status of a cancelled receive: no source, no tag, count 0,
    /// `cancelled` set.
    pub const fn cancelled() -> Status {
        Status {
            source: ANY_SOURCE_RAW,
            tag: ANY_TAG_RAW,
            count: 0,
            error: None,
            cancelled: true,
        }
    }
}

/// A receive matched with a message: what the pml needs to deliver the data
/// (the message's payload, the receive's id) and to complete the request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Match<T> {
    /// The matched receive's id.
    pub recv: RecvId,
    /// The receive buffer's size in bytes.
    pub capacity: usize,
    /// The message's header.
    pub envelope: Envelope,
    /// What the caller stored with the message (eager data, a rendezvous
    /// handle, …).
    pub payload: T,
}

impl<T> Match<T> {
    /// Whether the message is longer than the buffer. It still matched
    /// (MPI semantics: the receive completes with the first `capacity`
    /// bytes and `MPI_ERR_TRUNCATE` in its status). Computed, not stored: a
    /// flag byte in the moved value cost a stalled reload on every match.
    #[inline]
    pub const fn truncated(&self) -> bool {
        self.envelope.len > self.capacity
    }

    pub(crate) fn new(recv: &PostedRecv, envelope: Envelope, payload: T) -> Match<T> {
        Match {
            recv: recv.id,
            capacity: recv.capacity,
            envelope,
            payload,
        }
    }

    /// The bytes to deliver: the message length, at most the capacity.
    pub const fn count(&self) -> usize {
        if self.truncated() {
            self.capacity
        } else {
            self.envelope.len
        }
    }

    /// The receive's status: the sender's rank and tag, the bytes delivered
    /// and [`MatchError::Truncated`] when the message did not fit.
    pub const fn status(&self) -> Status {
        Status {
            source: self.envelope.source,
            tag: self.envelope.tag,
            count: self.count(),
            error: if self.truncated() {
                Some(MatchError::Truncated {
                    len: self.envelope.len,
                    capacity: self.capacity,
                })
            } else {
                None
            },
            cancelled: false,
        }
    }
}

/// What [`Matcher::arrive_in_order`] did with a message.
///
/// [`Matcher::arrive_in_order`]: crate::Matcher::arrive_in_order
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InOrder {
    /// It matched this posted receive, which is no longer posted.
    Matched {
        /// The receive's id.
        recv: RecvId,
        /// The receive buffer's size in bytes.
        capacity: usize,
    },
    /// No posted receive fits: it was queued as unexpected.
    Queued(UnexpectedId),
    /// It is not the next message in order from its sender, or an earlier
    /// one is held back: nothing changed.
    NotInOrder,
}

/// What became of an incoming message ([`Matcher::incoming`]), or of a
/// held-back message released later ([`Matcher::next_released`], which
/// yields only `Matched` and `Queued`).
///
/// [`Matcher::incoming`]: crate::Matcher::incoming
/// [`Matcher::next_released`]: crate::Matcher::next_released
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Incoming<T> {
    /// It matched the oldest posted receive that fits, which is no longer
    /// posted.
    Matched(Match<T>),
    /// No posted receive fits: it waits in the unexpected queue (with its
    /// payload) for a receive, a probe or [`Matcher::take_unexpected`].
    ///
    /// [`Matcher::take_unexpected`]: crate::Matcher::take_unexpected
    Queued(UnexpectedId),
    /// It arrived before an earlier message from the same sender on the same
    /// context: it is held back (with its payload) until its predecessors
    /// have arrived, then matched or queued; the outcome comes out of
    /// [`Matcher::next_released`].
    ///
    /// [`Matcher::next_released`]: crate::Matcher::next_released
    HeldBack,
    /// Its sequence number was already delivered or is already held back:
    /// a transport delivered it twice (a bug below the pml). Nothing was
    /// stored; the message and its payload are handed back.
    Duplicate {
        /// The rejected message's header.
        envelope: Envelope,
        /// The rejected message's payload.
        payload: T,
        /// The sequence number the matcher expects next from that sender.
        expected: u64,
    },
}
