//! Point-to-point communication: processes, sending, receiving, probing,
//! statuses, and send-receive.
//!
//! A [`Process`] (from [`Communicator::process_at_rank`]) is a
//! [`Destination`] and a [`Source`]; an [`AnyProcess`] (from
//! [`Communicator::any_process`]) is a `Source` that matches every sender.
//! Calls without a tag send with tag 0 and receive with [`ANY_TAG`].
//!
//! Blocking calls return when the buffer may be used again (a standard
//! send may return before the receiver has matched it; a synchronous send
//! returns only after). A receive into a buffer accepts a message up to the
//! buffer's size ([`Status::byte_count`] says how much arrived); a longer
//! message is an error of class `Truncate`.

use crate::datatype::stage::{pack, Incoming, Outgoing, Staging};
use crate::datatype::{
    contiguous_bytes, contiguous_bytes_mut, element_count, element_count_of, partial_element_error,
    Buffer, BufferMut, Equivalence,
};
use crate::error::Error;
use crate::request::{self, wait_released, Kind, Request, Scope};
use crate::topology::{Communicator, Rank, SimpleCommunicator};
use oxmpi_mpi_core::{RequestId, SendMode, ANY_SOURCE};

mod matched;
pub use matched::Message;

/// A message tag (`0..=TAG_UB`; [`ANY_TAG`] on receives).
pub type Tag = i32;

/// The tag of a receive or probe that accepts every tag (`MPI_ANY_TAG`).
pub const ANY_TAG: Tag = oxmpi_mpi_core::ANY_TAG;

/// The largest valid tag (`MPI_TAG_UB`).
pub const TAG_UB: Tag = oxmpi_mpi_core::TAG_UB;

/// The tag of sends that name none.
pub const DEFAULT_TAG: Tag = 0;

/// What a receive or probe found (`MPI_Status`): sender, tag, size.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Status {
    source: Rank,
    tag: Tag,
    bytes: usize,
    cancelled: bool,
}

impl From<oxmpi_mpi_core::Status> for Status {
    fn from(s: oxmpi_mpi_core::Status) -> Status {
        Status {
            source: s.source,
            tag: s.tag,
            bytes: s.count,
            cancelled: s.cancelled,
        }
    }
}

impl Status {
    /// Rank of the sender in the communicator used (0 for a send).
    pub fn source_rank(&self) -> Rank {
        self.source
    }

    /// Tag of the message (0 for a send).
    pub fn tag(&self) -> Tag {
        self.tag
    }

    /// Size of the message in bytes (for a probe: of the message
    /// waiting); a type with padding takes its packed size per element.
    pub fn byte_count(&self) -> usize {
        self.bytes
    }

    /// Size of the message in elements of `T`, or `None` if it is not a
    /// whole number of them.
    pub fn count<T: Equivalence>(&self) -> Option<usize> {
        element_count::<T>(self.bytes)
    }

    /// Whether the request was cancelled ([`Request::cancel`]).
    pub fn is_cancelled(&self) -> bool {
        self.cancelled
    }
}

mod private {
    use oxmpi_mpi_core::{Comm, Runtime};

    /// Where a process is (only this crate reads it).
    pub struct Endpoint {
        pub(crate) runtime: &'static Runtime,
        pub(crate) comm: Comm,
        pub(crate) rank: i32,
    }

    pub trait Sealed {
        /// The process's endpoint.
        fn endpoint(&self) -> Endpoint;
        /// The endpoint to receive from or probe; a process of negative
        /// rank is an error here (the MPI layer would read -1 as any
        /// source).
        fn source_endpoint(&self) -> Result<Endpoint, crate::Error> {
            Ok(self.endpoint())
        }
    }
}

use private::{Endpoint, Sealed};

/// A process of a communicator, by rank.
#[derive(Copy, Clone, Debug)]
pub struct Process<'a> {
    pub(crate) comm: &'a SimpleCommunicator,
    rank: Rank,
}

impl<'a> Process<'a> {
    pub(crate) fn new(comm: &'a SimpleCommunicator, rank: Rank) -> Self {
        Process { comm, rank }
    }

    /// The process's rank in its communicator.
    pub fn rank(&self) -> Rank {
        self.rank
    }

    /// Whether this is the calling process.
    pub fn is_self(&self) -> bool {
        self.rank == self.comm.rank()
    }
}

impl Sealed for Process<'_> {
    #[inline]
    fn endpoint(&self) -> Endpoint {
        Endpoint {
            runtime: self.comm.runtime,
            comm: self.comm.comm,
            rank: self.rank,
        }
    }

    #[inline]
    fn source_endpoint(&self) -> Result<Endpoint, Error> {
        if self.rank < 0 {
            return Err(self.negative_source());
        }
        Ok(self.endpoint())
    }
}

impl Process<'_> {
    /// The error of a receive or probe from a negative rank.
    #[cold]
    #[inline(never)]
    fn negative_source(&self) -> Error {
        Error::new(
            crate::ErrorClass::Rank,
            format!(
                "source rank {} is not in {} (ranks 0 to {}); to receive from any rank, use any_process()",
                self.rank,
                self.comm.name(),
                self.comm.size() - 1
            ),
        )
    }
}

/// Every process of a communicator, as a source: receives and probes match
/// the first message from anyone (`MPI_ANY_SOURCE`).
#[derive(Copy, Clone, Debug)]
pub struct AnyProcess<'a> {
    comm: &'a SimpleCommunicator,
}

impl<'a> AnyProcess<'a> {
    pub(crate) fn new(comm: &'a SimpleCommunicator) -> Self {
        AnyProcess { comm }
    }
}

impl Sealed for AnyProcess<'_> {
    fn endpoint(&self) -> Endpoint {
        Endpoint {
            runtime: self.comm.runtime,
            comm: self.comm.comm,
            rank: ANY_SOURCE,
        }
    }
}

/// Starts a send of `bytes`.
///
/// # Safety
/// `bytes` stays valid and unchanged until MPI releases the request.
// Always inlined: called, its result came back through memory in pieces
// the caller read back whole (a stalled load on every send).
#[inline(always)]
unsafe fn start_send(
    ep: &Endpoint,
    bytes: &[u8],
    tag: Tag,
    mode: SendMode,
) -> Result<RequestId, Error> {
    // SAFETY: isend needs `bytes` valid and unchanged until MPI releases
    // the request, which is exactly what this function's caller promises.
    Ok(unsafe {
        ep.runtime
            .isend(ep.comm, ep.rank, tag, bytes.as_ptr(), bytes.len(), mode)
    }?)
}

/// Posts a receive into `len` bytes at `buf`.
///
/// # Safety
/// `buf..buf + len` stays valid and untouched until MPI releases the
/// request.
// Always inlined, as `start_send`.
#[inline(always)]
unsafe fn start_receive(
    ep: &Endpoint,
    buf: *mut u8,
    len: usize,
    tag: Tag,
) -> Result<RequestId, Error> {
    // SAFETY: irecv needs `buf..buf + len` valid for writes and untouched
    // by anything else until MPI releases the request, which is exactly
    // what this function's caller promises.
    Ok(unsafe { ep.runtime.irecv(ep.comm, ep.rank, tag, buf, len) }?)
}

#[inline]
fn blocking_send(ep: &Endpoint, bytes: &[u8], tag: Tag, mode: SendMode) -> Result<(), Error> {
    // SAFETY: `bytes` is borrowed until `wait_released` returns, which is
    // when MPI has released the request.
    let id = unsafe { start_send(ep, bytes, tag, mode) }?;
    wait_released(ep.runtime, id)?;
    Ok(())
}

/// Receives into `len` bytes at `buf`, blocking; checks whole elements.
///
/// # Safety
/// `buf..buf + len` is valid for writes for the duration of the call.
#[inline]
unsafe fn blocking_receive(
    ep: &Endpoint,
    buf: *mut u8,
    len: usize,
    tag: Tag,
    element: (usize, &'static str),
) -> Result<Status, Error> {
    // SAFETY: the buffer is valid until `wait_released` returns, which is
    // when MPI has released the request.
    let id = unsafe { start_receive(ep, buf, len, tag) }?;
    finish_receive(ep.runtime, id, element)
}

/// Waits for receive `id` and checks that whole elements arrived.
#[inline]
fn finish_receive(
    runtime: &oxmpi_mpi_core::Runtime,
    id: RequestId,
    element: (usize, &'static str),
) -> Result<Status, Error> {
    let status = Status::from(wait_released(runtime, id)?);
    let (size, name) = element;
    if element_count_of(status.bytes, size).is_none() {
        return Err(partial_element_error(
            status.bytes,
            name,
            size,
            status.source,
            status.tag,
        ));
    }
    Ok(status)
}

fn element_of<T: Equivalence>() -> (usize, &'static str) {
    (T::PACKED_SIZE, T::NAME)
}

/// Sends `items`, blocking: their bytes, or their packed form for a type
/// with padding.
#[inline(always)]
fn send_items<T: Equivalence>(
    ep: &Endpoint,
    items: &[T],
    tag: Tag,
    mode: SendMode,
) -> Result<(), Error> {
    if T::CONTIGUOUS {
        blocking_send(ep, contiguous_bytes(items), tag, mode)
    } else {
        blocking_send(ep, &pack(items), tag, mode)
    }
}

/// Receives one `T` through `receive` (a receive into bytes): exactly
/// one value's bytes must arrive.
#[inline(always)]
fn receive_one<T: Equivalence>(
    receive: impl FnOnce(&mut [u8]) -> Result<Status, Error>,
) -> Result<(T, Status), Error> {
    let mut value = T::ZERO;
    if T::CONTIGUOUS {
        // Received as bytes, so that any size other than one `T` gets the
        // single-value message.
        let status = receive(contiguous_bytes_mut(std::slice::from_mut(&mut value)))?;
        exactly_one::<T>(&status)?;
        return Ok((value, status));
    }
    let mut packed = vec![0u8; T::PACKED_SIZE];
    let status = receive(&mut packed)?;
    exactly_one::<T>(&status)?;
    // SAFETY: `value` is one `T`, the datatype's reach for one element,
    // borrowed exclusively here; `packed` is a separate allocation.
    unsafe {
        T::datatype().unpack_raw(&packed, std::ptr::from_mut(&mut value).cast(), 1, 0);
    }
    Ok((value, status))
}

/// Something messages can be sent to: a [`Process`].
pub trait Destination: Sealed {
    /// The rank messages go to.
    fn destination_rank(&self) -> Rank {
        self.endpoint().rank
    }

    /// Sends `buf` with tag 0 (`MPI_Send`); returns when `buf` may be
    /// reused.
    ///
    /// # Errors
    /// `Rank` (no such rank), `Unreachable` (no transport reaches it; the
    /// message says why), `ProcFailed`, `Finalized`, `ThreadLevel`.
    fn send<B: Buffer + ?Sized>(&self, buf: &B) -> Result<(), Error> {
        self.send_with_tag(buf, DEFAULT_TAG)
    }

    /// Sends `buf` with `tag` (`0..=TAG_UB`).
    ///
    /// # Errors
    /// As [`send`](Destination::send), and `Tag` for an invalid tag.
    fn send_with_tag<B: Buffer + ?Sized>(&self, buf: &B, tag: Tag) -> Result<(), Error> {
        send_items(&self.endpoint(), buf.as_items(), tag, SendMode::Standard)
    }

    /// Sends `buf` with tag 0 and returns only once the receiver has
    /// matched it (`MPI_Ssend`).
    ///
    /// # Errors
    /// As [`send`](Destination::send).
    fn synchronous_send<B: Buffer + ?Sized>(&self, buf: &B) -> Result<(), Error> {
        self.synchronous_send_with_tag(buf, DEFAULT_TAG)
    }

    /// Synchronous send with `tag`.
    ///
    /// # Errors
    /// As [`send_with_tag`](Destination::send_with_tag).
    fn synchronous_send_with_tag<B: Buffer + ?Sized>(
        &self,
        buf: &B,
        tag: Tag,
    ) -> Result<(), Error> {
        send_items(&self.endpoint(), buf.as_items(), tag, SendMode::Synchronous)
    }

    /// Starts sending `buf` with tag 0 (`MPI_Isend`); `buf` stays borrowed
    /// until the request completes (at the latest when `scope` ends).
    ///
    /// # Errors
    /// As [`send`](Destination::send) (reported when starting; the
    /// request's own errors come from `wait`/`test`).
    fn immediate_send<'a, S: Scope<'a>, B: Buffer + ?Sized>(
        &self,
        scope: S,
        buf: &'a B,
    ) -> Result<Request<'a, S>, Error> {
        self.immediate_send_with_tag(scope, buf, DEFAULT_TAG)
    }

    /// Starts sending `buf` with `tag`.
    ///
    /// # Errors
    /// As [`send_with_tag`](Destination::send_with_tag).
    fn immediate_send_with_tag<'a, S: Scope<'a>, B: Buffer + ?Sized>(
        &self,
        scope: S,
        buf: &'a B,
        tag: Tag,
    ) -> Result<Request<'a, S>, Error> {
        immediate_send_mode(
            &self.endpoint(),
            scope,
            buf.as_items(),
            tag,
            SendMode::Standard,
        )
    }

    /// Starts a synchronous send of `buf` with tag 0 (`MPI_Issend`): the
    /// request completes once the receiver has matched it.
    ///
    /// # Errors
    /// As [`send`](Destination::send).
    fn immediate_synchronous_send<'a, S: Scope<'a>, B: Buffer + ?Sized>(
        &self,
        scope: S,
        buf: &'a B,
    ) -> Result<Request<'a, S>, Error> {
        self.immediate_synchronous_send_with_tag(scope, buf, DEFAULT_TAG)
    }

    /// Starts a synchronous send of `buf` with `tag`.
    ///
    /// # Errors
    /// As [`send_with_tag`](Destination::send_with_tag).
    fn immediate_synchronous_send_with_tag<'a, S: Scope<'a>, B: Buffer + ?Sized>(
        &self,
        scope: S,
        buf: &'a B,
        tag: Tag,
    ) -> Result<Request<'a, S>, Error> {
        immediate_send_mode(
            &self.endpoint(),
            scope,
            buf.as_items(),
            tag,
            SendMode::Synchronous,
        )
    }
}

fn immediate_send_mode<'a, S: Scope<'a>, T: Equivalence>(
    ep: &Endpoint,
    scope: S,
    items: &'a [T],
    tag: Tag,
    mode: SendMode,
) -> Result<Request<'a, S>, Error> {
    if T::CONTIGUOUS {
        // SAFETY: `items` is borrowed for 'a, and the scope waits for the
        // request before 'a can end (see `request`).
        let id = unsafe { start_send(ep, contiguous_bytes(items), tag, mode) }?;
        return Ok(Request::new(ep.runtime, id, scope, Kind::Send));
    }
    let out = Outgoing::of(items);
    // SAFETY: the packed bytes `out` points to (`items.len()` packed
    // elements) move into the request, which keeps them until MPI releases
    // it (or hands them to its scope, which does).
    let bytes = unsafe { std::slice::from_raw_parts(out.ptr, items.len() * T::PACKED_SIZE) };
    // SAFETY: as just said.
    let id = unsafe { start_send(ep, bytes, tag, mode) }?;
    let kind = Kind::staged(Kind::Send, Staging::new(Some(out), None));
    Ok(Request::new(ep.runtime, id, scope, kind))
}

impl Destination for Process<'_> {}

/// Something messages can be received from: a [`Process`] or
/// [`AnyProcess`].
pub trait Source: Sealed {
    /// The rank messages come from (-1, `MPI_ANY_SOURCE`, for [`AnyProcess`]).
    fn source_rank(&self) -> Rank {
        self.endpoint().rank
    }

    /// Receives one value of `T` with any tag (`MPI_Recv`).
    ///
    /// # Errors
    /// `Truncate` if the message is longer than one `T`; `Buffer` if it is
    /// shorter; `Rank`, `ProcFailed`, `Finalized`, `ThreadLevel`.
    fn receive<T: Equivalence>(&self) -> Result<(T, Status), Error> {
        self.receive_with_tag(ANY_TAG)
    }

    /// Receives one value of `T` with `tag` (or [`ANY_TAG`]).
    ///
    /// # Errors
    /// As [`receive`](Source::receive), and `Tag` for an invalid tag.
    fn receive_with_tag<T: Equivalence>(&self, tag: Tag) -> Result<(T, Status), Error> {
        receive_one(|bytes| self.receive_into_with_tag(bytes, tag))
    }

    /// Receives a message with any tag into `buf` (up to its size).
    ///
    /// # Errors
    /// `Truncate` if the message is longer than `buf` (which then holds its
    /// first bytes); `Buffer` if it is not a whole number of elements;
    /// `Rank`, `ProcFailed`, `Finalized`, `ThreadLevel`.
    fn receive_into<B: BufferMut + ?Sized>(&self, buf: &mut B) -> Result<Status, Error> {
        self.receive_into_with_tag(buf, ANY_TAG)
    }

    /// Receives a message with `tag` (or [`ANY_TAG`]) into `buf`.
    ///
    /// # Errors
    /// As [`receive_into`](Source::receive_into), and `Tag`.
    fn receive_into_with_tag<B: BufferMut + ?Sized>(
        &self,
        buf: &mut B,
        tag: Tag,
    ) -> Result<Status, Error> {
        let element = element_of::<B::Item>();
        if B::Item::CONTIGUOUS {
            let bytes = contiguous_bytes_mut(buf.as_items_mut());
            // SAFETY: `bytes` is exclusively borrowed for the whole call.
            return unsafe {
                blocking_receive(
                    &self.source_endpoint()?,
                    bytes.as_mut_ptr(),
                    bytes.len(),
                    tag,
                    element,
                )
            };
        }
        let ep = self.source_endpoint()?;
        let items = buf.as_items_mut();
        let len = items.len() * element.0;
        let incoming = Incoming::fresh(items);
        // SAFETY: the staging bytes (`len`) are owned here for the whole
        // call; the buffer stays exclusively borrowed until they are
        // unpacked into it.
        unsafe {
            let status = blocking_receive(&ep, incoming.ptr, len, tag, element)?;
            incoming.finish(status.bytes);
            Ok(status)
        }
    }

    /// Receives a whole message with any tag into a new `Vec` (probes for
    /// its size first).
    ///
    /// # Errors
    /// `Buffer` if it is not a whole number of `T`; as
    /// [`receive_into`](Source::receive_into) otherwise.
    fn receive_vec<T: Equivalence>(&self) -> Result<(Vec<T>, Status), Error> {
        self.receive_vec_with_tag(ANY_TAG)
    }

    /// Receives a whole message with `tag` (or [`ANY_TAG`]) into a new
    /// `Vec`. The message is found by a matched probe, so the one received
    /// is the one whose size was probed, whatever other threads receive
    /// meanwhile.
    ///
    /// # Errors
    /// As [`receive_vec`](Source::receive_vec), and `Tag`.
    fn receive_vec_with_tag<T: Equivalence>(&self, tag: Tag) -> Result<(Vec<T>, Status), Error> {
        let (message, _) = self.matched_probe_with_tag(tag)?;
        message.matched_receive_vec()
    }

    /// Posts a receive with any tag into `buf` (`MPI_Irecv`); `buf` stays
    /// borrowed until the request completes (at the latest when `scope`
    /// ends).
    ///
    /// # Errors
    /// `Rank`, `Finalized`, `ThreadLevel` when posting; the receive's own
    /// errors come from `wait`/`test`.
    fn immediate_receive_into<'a, S: Scope<'a>, B: BufferMut + ?Sized>(
        &self,
        scope: S,
        buf: &'a mut B,
    ) -> Result<Request<'a, S>, Error> {
        self.immediate_receive_into_with_tag(scope, buf, ANY_TAG)
    }

    /// Posts a receive with `tag` (or [`ANY_TAG`]) into `buf`.
    ///
    /// # Errors
    /// As [`immediate_receive_into`](Source::immediate_receive_into), and
    /// `Tag`.
    fn immediate_receive_into_with_tag<'a, S: Scope<'a>, B: BufferMut + ?Sized>(
        &self,
        scope: S,
        buf: &'a mut B,
        tag: Tag,
    ) -> Result<Request<'a, S>, Error> {
        let (element_size, element_name) = element_of::<B::Item>();
        let ep = self.source_endpoint()?;
        let kind = Kind::Receive {
            element_size,
            element_name,
        };
        if B::Item::CONTIGUOUS {
            let bytes = contiguous_bytes_mut(buf.as_items_mut());
            // SAFETY: `bytes` is exclusively borrowed for 'a, and the scope
            // waits for the request before 'a can end (see `request`).
            let id = unsafe { start_receive(&ep, bytes.as_mut_ptr(), bytes.len(), tag) }?;
            return Ok(Request::new(ep.runtime, id, scope, kind));
        }
        let items = buf.as_items_mut();
        let len = items.len() * element_size;
        let incoming = Incoming::fresh(items);
        // SAFETY: the staging bytes move into the request, which keeps
        // them until MPI releases it (or hands them to its scope, which
        // does); the buffer they are unpacked into is borrowed for 'a.
        let id = unsafe { start_receive(&ep, incoming.ptr, len, tag) }?;
        let kind = Kind::staged(kind, Staging::new(None, Some(incoming)));
        Ok(Request::new(ep.runtime, id, scope, kind))
    }

    /// Waits for a message with any tag and returns its status without
    /// receiving it (`MPI_Probe`).
    ///
    /// # Errors
    /// `Rank`, `Finalized`, `ThreadLevel`.
    fn probe(&self) -> Result<Status, Error> {
        self.probe_with_tag(ANY_TAG)
    }

    /// Waits for a message with `tag` (or [`ANY_TAG`]).
    ///
    /// # Errors
    /// As [`probe`](Source::probe), and `Tag`.
    fn probe_with_tag(&self, tag: Tag) -> Result<Status, Error> {
        let ep = self.source_endpoint()?;
        Ok(ep.runtime.probe(ep.comm, ep.rank, tag)?.into())
    }

    /// Whether a message with any tag has arrived (`MPI_Iprobe`): its
    /// status, or `None`.
    ///
    /// # Errors
    /// As [`probe`](Source::probe).
    fn immediate_probe(&self) -> Result<Option<Status>, Error> {
        self.immediate_probe_with_tag(ANY_TAG)
    }

    /// Whether a message with `tag` (or [`ANY_TAG`]) has arrived.
    ///
    /// # Errors
    /// As [`probe`](Source::probe), and `Tag`.
    fn immediate_probe_with_tag(&self, tag: Tag) -> Result<Option<Status>, Error> {
        let ep = self.source_endpoint()?;
        Ok(ep.runtime.iprobe(ep.comm, ep.rank, tag)?.map(Status::from))
    }

    /// Waits for a message with any tag and takes it out of matching
    /// (`MPI_Mprobe`): no other receive or probe (of another thread) can
    /// take it; only the returned [`Message`] receives it.
    ///
    /// # Errors
    /// As [`probe`](Source::probe).
    fn matched_probe(&self) -> Result<(Message, Status), Error> {
        self.matched_probe_with_tag(ANY_TAG)
    }

    /// Waits for a message with `tag` (or [`ANY_TAG`]) and takes it out
    /// of matching.
    ///
    /// # Errors
    /// As [`probe`](Source::probe), and `Tag`.
    fn matched_probe_with_tag(&self, tag: Tag) -> Result<(Message, Status), Error> {
        let ep = self.source_endpoint()?;
        let (m, s) = ep.runtime.mprobe(ep.comm, ep.rank, tag)?;
        Ok(Message::new(ep.runtime, m, s.into()))
    }

    /// Takes a message with any tag out of matching if one has arrived
    /// (`MPI_Improbe`).
    ///
    /// # Errors
    /// As [`probe`](Source::probe).
    fn immediate_matched_probe(&self) -> Result<Option<(Message, Status)>, Error> {
        self.immediate_matched_probe_with_tag(ANY_TAG)
    }

    /// Takes a message with `tag` (or [`ANY_TAG`]) out of matching if one
    /// has arrived.
    ///
    /// # Errors
    /// As [`probe`](Source::probe), and `Tag`.
    fn immediate_matched_probe_with_tag(
        &self,
        tag: Tag,
    ) -> Result<Option<(Message, Status)>, Error> {
        let ep = self.source_endpoint()?;
        Ok(ep
            .runtime
            .improbe(ep.comm, ep.rank, tag)?
            .map(|(m, s)| Message::new(ep.runtime, m, s.into())))
    }
}

impl Source for Process<'_> {}
impl Source for AnyProcess<'_> {}

/// Checks that a receive of one `T` got exactly one.
fn exactly_one<T: Equivalence>(status: &Status) -> Result<(), Error> {
    if status.bytes == T::PACKED_SIZE {
        return Ok(());
    }
    Err(Error::new(
        crate::ErrorClass::Buffer,
        format!(
            "expected one {} ({} bytes), but the message from rank {} (tag {}) has {} bytes; receive it into a slice or with receive_vec",
            T::NAME,
            T::PACKED_SIZE,
            status.source,
            status.tag,
            status.bytes
        ),
    ))
}

/// Sends `msg` to `destination` with tag 0 while receiving into `buf` from
/// `source` with any tag (`MPI_Sendrecv`); safe with any message sizes,
/// including to and from this process.
///
/// # Errors
/// The receive's error, else the send's (see [`Destination::send`] and
/// [`Source::receive_into`]).
pub fn send_receive_into<M, D, B, S>(
    msg: &M,
    destination: &D,
    buf: &mut B,
    source: &S,
) -> Result<Status, Error>
where
    M: Buffer + ?Sized,
    D: Destination,
    B: BufferMut + ?Sized,
    S: Source,
{
    send_receive_into_with_tags(msg, destination, DEFAULT_TAG, buf, source, ANY_TAG)
}

/// [`send_receive_into`] with a send tag and a receive tag (or
/// [`ANY_TAG`]).
///
/// # Errors
/// As [`send_receive_into`], and `Tag`.
pub fn send_receive_into_with_tags<M, D, B, S>(
    msg: &M,
    destination: &D,
    send_tag: Tag,
    buf: &mut B,
    source: &S,
    receive_tag: Tag,
) -> Result<Status, Error>
where
    M: Buffer + ?Sized,
    D: Destination,
    B: BufferMut + ?Sized,
    S: Source,
{
    request::scope(|scope| {
        // The receive first: if it cannot be posted, nothing was sent.
        let receive = source.immediate_receive_into_with_tag(scope, buf, receive_tag)?;
        let send = match destination.immediate_send_with_tag(scope, msg, send_tag) {
            Ok(send) => send,
            Err(e) => {
                // Nothing will come for a receive whose partner never
                // learns of it: cancel it, then release it.
                let _ = receive.cancel();
                let _ = receive.wait();
                return Err(e);
            }
        };
        let received = receive.wait();
        let sent = send.wait();
        let status = received?;
        sent?;
        Ok(status)
    })
}

/// Sends `msg` to `destination` (tag 0) and receives one `T` from `source`
/// (any tag), as [`send_receive_into`].
///
/// # Errors
/// As [`send_receive_into`]; `Buffer` if the message is not exactly one
/// `T`.
pub fn send_receive<T, M, D, S>(msg: &M, destination: &D, source: &S) -> Result<(T, Status), Error>
where
    T: Equivalence,
    M: Buffer + ?Sized,
    D: Destination,
    S: Source,
{
    send_receive_with_tags(msg, destination, DEFAULT_TAG, source, ANY_TAG)
}

/// [`send_receive`] with a send tag and a receive tag (or [`ANY_TAG`]).
///
/// # Errors
/// As [`send_receive`], and `Tag`.
pub fn send_receive_with_tags<T, M, D, S>(
    msg: &M,
    destination: &D,
    send_tag: Tag,
    source: &S,
    receive_tag: Tag,
) -> Result<(T, Status), Error>
where
    T: Equivalence,
    M: Buffer + ?Sized,
    D: Destination,
    S: Source,
{
    receive_one(|bytes| {
        send_receive_into_with_tags(msg, destination, send_tag, bytes, source, receive_tag)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(bytes: usize) -> Status {
        Status::from(oxmpi_mpi_core::Status {
            source: 3,
            tag: 17,
            count: bytes,
            cancelled: false,
        })
    }

    #[test]
    fn status_reports_sender_tag_and_sizes() {
        let s = status(24);
        assert_eq!(s.source_rank(), 3);
        assert_eq!(s.tag(), 17);
        assert_eq!(s.byte_count(), 24);
        assert_eq!(s.count::<u8>(), Some(24));
        assert_eq!(s.count::<f64>(), Some(3));
        assert_eq!(s.count::<u16>(), Some(12));
        assert_eq!(status(6).count::<i32>(), None);
        assert!(!s.is_cancelled());
        let c = Status::from(oxmpi_mpi_core::Status {
            cancelled: true,
            ..Default::default()
        });
        assert!(c.is_cancelled());
    }

    #[test]
    fn a_single_value_needs_exactly_its_size() {
        assert!(exactly_one::<u32>(&status(4)).is_ok());
        let e = exactly_one::<u64>(&status(3)).unwrap_err();
        assert_eq!(e.class(), crate::ErrorClass::Buffer);
        assert_eq!(
            e.to_string(),
            "expected one u64 (8 bytes), but the message from rank 3 (tag 17) has 3 bytes; receive it into a slice or with receive_vec"
        );
        assert!(exactly_one::<u8>(&status(0)).is_err());
    }

    #[test]
    fn tag_constants_match_the_mpi_layer() {
        assert_eq!(ANY_TAG, -1);
        assert_eq!(TAG_UB, i32::MAX);
        assert_eq!(DEFAULT_TAG, 0);
    }
}
