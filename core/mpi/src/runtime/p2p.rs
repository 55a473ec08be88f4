//! Sends and receives: the checks of ranks and tags, and the hand-over
//! of a send or receive to the pml with its completion slot.

use super::comms::WORLD_CONTEXT;
use super::request::HELD;
use super::*;

impl Runtime {
    /// The job rank of rank `rank` of `comm` (`what` names it in the
    /// error: "destination", "source").
    #[inline(always)]
    fn world_rank(&self, comm: Comm, rank: i32, what: &str) -> Result<u32, Error> {
        if comm == Comm::World && self.is_job_rank(rank) {
            return Ok(rank as u32);
        }
        self.world_rank_other(comm, rank, what)
    }

    /// [`Runtime::world_rank`] past its common case.
    #[inline(never)]
    fn world_rank_other(&self, comm: Comm, rank: i32, what: &str) -> Result<u32, Error> {
        match comm {
            Comm::SelfComm if rank == 0 => Ok(self.rank),
            Comm::World | Comm::SelfComm => {
                Err(self.rank_error(comm, rank, what, self.comm_size(comm)))
            }
            _ => {
                let e = self.entry(comm)?;
                u32::try_from(rank)
                    .ok()
                    .and_then(|r| e.group.world_rank(r))
                    .ok_or_else(|| self.rank_error(comm, rank, what, e.group.size() as i32))
            }
        }
    }

    /// The rank in `comm` of the job rank `world` a status names (a
    /// receive's or probe's source; sends report 0, kept as is). A source
    /// that is not in `comm` any more (it was freed meanwhile) stays a job
    /// rank.
    #[inline]
    pub(super) fn source_in(&self, comm: Comm, world: i32) -> i32 {
        match comm {
            Comm::World => world,
            _ => self.comm_source(comm, world).unwrap_or(world),
        }
    }

    /// The error of a rank outside `comm` (`size` ranks).
    #[cold]
    #[inline(never)]
    fn rank_error(&self, comm: Comm, rank: i32, what: &str, size: i32) -> Error {
        Error::new(
            ErrorClass::Rank,
            format!(
                "{what} rank {rank} is not in {} (ranks 0 to {})",
                self.comm_name(comm),
                size - 1
            ),
        )
    }

    /// A receive's or probe's source as a job rank ([`ANY_SOURCE`] stays).
    #[inline]
    pub(super) fn world_source(&self, comm: Comm, source: i32) -> Result<i32, Error> {
        if source == ANY_SOURCE {
            Ok(ANY_SOURCE)
        } else {
            Ok(self.world_rank(comm, source, "source")? as i32)
        }
    }

    /// Checks the two halves of an exchange on `comm` before either
    /// starts: a send to `dest` with `send_tag` and a receive from
    /// `source` (or [`ANY_SOURCE`]) with `recv_tag` (or [`ANY_TAG`]).
    /// `PROC_NULL` on either side is left to the caller.
    ///
    /// # Errors
    /// `Rank` or `Tag`, as [`Runtime::isend`] and [`Runtime::irecv`]
    /// would report them; `Comm` for a communicator that does not exist.
    pub fn check_exchange(
        &self,
        comm: Comm,
        dest: Option<i32>,
        send_tag: i32,
        source: Option<i32>,
        recv_tag: i32,
    ) -> Result<(), Error> {
        if let Some(dest) = dest {
            self.check_tag(send_tag, false)?;
            self.world_rank(comm, dest, "destination")?;
        }
        if let Some(source) = source {
            self.check_tag(recv_tag, true)?;
            self.world_source(comm, source)?;
        }
        Ok(())
    }

    /// Refuses a null buffer for a message of `len` bytes (more than 0).
    #[inline(always)]
    pub(super) fn check_buffer<T>(buf: *const T, len: usize) -> Result<(), Error> {
        if buf.is_null() && len > 0 {
            return Err(Self::buffer_error(len));
        }
        Ok(())
    }

    /// The error of a null buffer for `len` bytes.
    #[cold]
    #[inline(never)]
    fn buffer_error(len: usize) -> Error {
        Error::new(
            ErrorClass::Buffer,
            format!(
                "the buffer is a null pointer, but the message has {len} bytes; pass the data's address (a null buffer only with a count of 0)"
            ),
        )
    }

    #[inline]
    pub(super) fn check_tag(&self, tag: i32, wildcard: bool) -> Result<(), Error> {
        if self.valid_tag(tag, wildcard) {
            Ok(())
        } else {
            Err(self.tag_error(tag, wildcard))
        }
    }

    /// Whether `tag` is a valid tag (or, with `wildcard`, [`ANY_TAG`]):
    /// `0..=`[`tag_ub`](Runtime::tag_ub).
    #[inline(always)]
    fn valid_tag(&self, tag: i32, wildcard: bool) -> bool {
        (0..=self.limits.max_tag).contains(&tag) || (wildcard && tag == ANY_TAG)
    }

    /// Whether `rank` is a rank of the job.
    #[inline(always)]
    fn is_job_rank(&self, rank: i32) -> bool {
        // A negative rank is past every rank as a `u32`.
        (rank as u32) < self.size
    }

    /// The error of an invalid tag.
    #[cold]
    #[inline(never)]
    fn tag_error(&self, tag: i32, wildcard: bool) -> Error {
        let bound = self.limits.max_tag;
        let why = if bound < TAG_UB && tag > bound {
            format!(" (the largest tag the {} pml carries)", self.pml_name)
        } else {
            String::new()
        };
        Error::new(
            ErrorClass::Tag,
            format!(
                "tag {tag} is not valid: tags go from 0 to {bound}{why}{}",
                if wildcard { " (or ANY_TAG)" } else { "" }
            ),
        )
    }

    /// Starts a send of `len` bytes at `buf` to rank `dest` of `comm`.
    ///
    /// # Safety
    /// `buf..buf + len` stays valid and unchanged until the request
    /// completes (a wait or test returns it).
    ///
    /// # Errors
    /// `Rank`, `Tag`, `Buffer` (a null buffer of more than 0 bytes),
    /// `Unreachable` (the message names the peer and each btl's reason, and
    /// says when the `self` btl is missing), `ProcFailed`, `Finalized`,
    /// `ThreadLevel`.
    #[inline(always)]
    pub unsafe fn isend(
        &self,
        comm: Comm,
        dest: i32,
        tag: i32,
        buf: *const u8,
        len: usize,
        mode: SendMode,
    ) -> Result<RequestId, Error> {
        self.check_tag(tag, false)?;
        let dest_world = self.world_rank(comm, dest, "destination")?;
        Self::check_buffer(buf, len)?;
        let mut state = self.enter()?;
        // SAFETY: the buffer promise is this method's own requirement.
        unsafe { self.start_send(&mut state, comm, dest_world, tag, buf, len, mode, None) }
    }

    /// Whether the pml takes messages whose elements lie in pieces
    /// ([`Runtime::isend_pieces`], [`Runtime::irecv_pieces`]). When not,
    /// the caller packs a non-contiguous message into bytes.
    pub fn takes_pieces(&self) -> bool {
        self.pml.takes_pieces()
    }

    /// Starts a send to rank `dest` of `comm` of the message `pieces`
    /// describes, `len` bytes packed; only when [`Runtime::takes_pieces`].
    ///
    /// # Safety
    /// The elements `pieces` describes, and its layout, stay valid and
    /// unchanged until the request completes.
    ///
    /// # Errors
    /// As [`Runtime::isend`].
    pub unsafe fn isend_pieces(
        &self,
        comm: Comm,
        dest: i32,
        tag: i32,
        pieces: &Pieces,
        len: usize,
        mode: SendMode,
    ) -> Result<RequestId, Error> {
        self.check_tag(tag, false)?;
        let dest_world = self.world_rank(comm, dest, "destination")?;
        let mut state = self.enter()?;
        let origin = pieces.origin.cast_const();
        // SAFETY: the elements' promise is this method's own requirement.
        unsafe {
            self.start_send(
                &mut state,
                comm,
                dest_world,
                tag,
                origin,
                len,
                mode,
                Some(pieces),
            )
        }
    }

    /// [`Runtime::isend`] in its common case only, reporting nothing: a
    /// send on the world's communicator to a rank of the job with a valid
    /// tag, at thread level `SINGLE` or `FUNNELED` from the initializing
    /// thread, which the pml takes. The request (complete already when
    /// the btl took the message at once), or `None` with nothing started:
    /// the caller then takes [`Runtime::isend`], which handles or reports
    /// whatever this declined. Leaner than the general call: no error is
    /// built on its path.
    ///
    /// # Safety
    /// As [`Runtime::isend`].
    #[inline(always)]
    pub unsafe fn isend_fast(
        &self,
        comm: Comm,
        dest: i32,
        tag: i32,
        buf: *const u8,
        len: usize,
        mode: SendMode,
    ) -> Option<RequestId> {
        if comm != Comm::World || !(self.is_job_rank(dest) & self.valid_tag(tag, false)) {
            return None;
        }
        let mut state = self.enter_single()?;
        let (slot, done) = state.board.peek();
        let args = SendArgs {
            buf,
            len,
            dest: dest as u32,
            tag,
            context: WORLD_CONTEXT,
            mode,
            done,
        };
        // A refusal is asked again by the general call, for its reason.
        // SAFETY: the caller keeps the buffer valid and unchanged until
        // the request completes (this function's contract); the slot stays
        // until read or the request freed.
        let handle = unsafe { self.pml.isend_quiet(&args) }?;
        Some(Self::send_started(&mut state, comm, slot, handle))
    }

    /// The request of a send the pml took as `handle` (0: complete
    /// already, and the slot `Board::peek` answered stays free; else
    /// the send takes slot `slot`).
    #[inline(always)]
    fn send_started(state: &mut State, comm: Comm, slot: u32, handle: u64) -> RequestId {
        if handle == 0 {
            // A send's status is all zeros.
            return RequestId::completed(Status::default());
        }
        state.board.claim(slot, comm);
        state.board.started(slot, handle);
        RequestId::pending_in(handle, slot)
    }

    /// Hands a send to the pml (with the runtime entered), from `pieces`
    /// when the message lies in pieces, and turns its refusal into an
    /// error with the hints about btls.
    ///
    /// # Safety
    /// As [`Runtime::isend`]: the buffer stays valid and unchanged until
    /// the request completes.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn start_send(
        &self,
        state: &mut State,
        comm: Comm,
        dest: u32,
        tag: i32,
        buf: *const u8,
        len: usize,
        mode: SendMode,
        pieces: Option<&Pieces>,
    ) -> Result<RequestId, Error> {
        let context = self.context_of(comm)?;
        // Most sends complete as they start and leave the slot free.
        let (slot, done) = state.board.peek();
        let args = SendArgs {
            buf,
            len,
            dest,
            tag,
            context,
            mode,
            done,
        };
        let started = match pieces {
            // SAFETY: the caller keeps the buffer valid and unchanged until
            // the request completes (this function's contract); the slot
            // stays until read or the request freed.
            None => unsafe { self.pml.isend(&args) },
            // SAFETY: as above, for the elements.
            Some(p) => unsafe { self.pml.isend_pieces(&args, p) },
        };
        match started {
            Ok(handle) => Ok(Self::send_started(state, comm, slot, handle)),
            // The pml's sentence names the peer.
            Err((kind, message)) => Err(self.send_refused(dest, kind, message)),
        }
    }

    /// The error of a send the pml refused: its sentence, with the hints
    /// about btls.
    #[cold]
    fn send_refused(&self, dest: u32, kind: RequestError, mut message: String) -> Error {
        let class = match kind {
            RequestError::Unreachable => ErrorClass::Unreachable,
            RequestError::PeerFailed => ErrorClass::ProcFailed,
            _ => ErrorClass::Other,
        };
        let mut add = |text: &str| {
            if !message.ends_with('.') {
                message.push('.');
            }
            message.push(' ');
            message.push_str(text);
        };
        if class == ErrorClass::Unreachable {
            if let Some(unused) = &self.unused_btls {
                add(unused);
            }
        }
        if dest == self.rank {
            if let Some(hint) = &self.self_hint {
                add(hint);
            }
        }
        Error::new(class, message)
    }

    /// Posts a receive into `len` bytes at `buf` from rank `source` of
    /// `comm` (or [`ANY_SOURCE`]) with `tag` (or [`ANY_TAG`]).
    ///
    /// # Safety
    /// `buf..buf + len` stays valid and is not accessed until the request
    /// completes.
    ///
    /// # Errors
    /// `Rank`, `Tag`, `Buffer` (a null buffer of more than 0 bytes),
    /// `Finalized`, `ThreadLevel`, or the pml's refusal.
    #[inline(always)]
    pub unsafe fn irecv(
        &self,
        comm: Comm,
        source: i32,
        tag: i32,
        buf: *mut u8,
        len: usize,
    ) -> Result<RequestId, Error> {
        // SAFETY: the buffer promise is this method's own requirement.
        unsafe { self.post_recv(comm, source, tag, buf, len, false) }
    }

    /// Posts a receive into the elements `pieces` describes, `len` bytes
    /// packed, from rank `source` of `comm` (or [`ANY_SOURCE`]) with `tag`
    /// (or [`ANY_TAG`]); only when [`Runtime::takes_pieces`].
    ///
    /// # Safety
    /// The elements `pieces` describes, and its layout, stay valid and
    /// are not accessed until the request completes.
    ///
    /// # Errors
    /// As [`Runtime::irecv`].
    pub unsafe fn irecv_pieces(
        &self,
        comm: Comm,
        source: i32,
        tag: i32,
        pieces: &Pieces,
        len: usize,
    ) -> Result<RequestId, Error> {
        self.check_tag(tag, true)?;
        let source_world = self.world_source(comm, source)?;
        let mut state = self.enter()?;
        let context = self.context_of(comm)?;
        let recv = Recv {
            context,
            source: source_world,
            tag,
            buf: pieces.origin,
            len,
        };
        // SAFETY: the elements' promise is this method's own requirement.
        unsafe { self.hand_recv(&mut state, comm, &recv, false, Some(pieces)) }
            .map_err(Self::recv_refused)
    }

    /// [`Runtime::irecv`], except that a receive that completes while it
    /// starts keeps its status in its completion slot, as a pending one
    /// would: the request always has a [`RequestId::slot_number`] (a wait
    /// or test answers it from the slot and releases it).
    ///
    /// # Safety
    /// As [`Runtime::irecv`].
    ///
    /// # Errors
    /// As [`Runtime::irecv`].
    #[inline(always)]
    pub unsafe fn irecv_held(
        &self,
        comm: Comm,
        source: i32,
        tag: i32,
        buf: *mut u8,
        len: usize,
    ) -> Result<RequestId, Error> {
        // SAFETY: the buffer promise is this method's own requirement.
        unsafe { self.post_recv(comm, source, tag, buf, len, true) }
    }

    /// [`Runtime::irecv`] in its common case only, reporting nothing: a
    /// receive on the world's communicator, from a rank of the job or
    /// [`ANY_SOURCE`], with a valid tag, at thread level `SINGLE` or
    /// `FUNNELED` from the initializing thread, which the pml takes. The
    /// request (complete already when an arrived message matched it), or
    /// `None` with nothing started: the caller then takes
    /// [`Runtime::irecv`], which handles or reports whatever this
    /// declined. Leaner than the general call: no error is built on its
    /// path.
    ///
    /// # Safety
    /// As [`Runtime::irecv`].
    #[inline(always)]
    pub unsafe fn irecv_fast(
        &self,
        comm: Comm,
        source: i32,
        tag: i32,
        buf: *mut u8,
        len: usize,
    ) -> Option<RequestId> {
        // SAFETY: the buffer promise is this method's own requirement.
        unsafe { self.post_recv_fast(comm, source, tag, buf, len, false) }
    }

    /// [`Runtime::irecv_held`] in its common case only, reporting nothing,
    /// as [`Runtime::irecv_fast`]: its completion slot's number
    /// ([`RequestId::slot_number`]; the request is [`RequestId::in_slot`]
    /// of it), or `None` with nothing started (the caller then takes
    /// [`Runtime::irecv_held`]).
    ///
    /// # Safety
    /// As [`Runtime::irecv`].
    #[inline(always)]
    pub unsafe fn irecv_held_fast(
        &self,
        comm: Comm,
        source: i32,
        tag: i32,
        buf: *mut u8,
        len: usize,
    ) -> Option<u32> {
        // SAFETY: the buffer promise is this method's own requirement.
        unsafe { self.post_recv_fast(comm, source, tag, buf, len, true) }?.slot_number()
    }

    /// [`Runtime::irecv_fast`] (`hold` false) and
    /// [`Runtime::irecv_held_fast`].
    ///
    /// # Safety
    /// As [`Runtime::irecv`].
    #[inline(always)]
    unsafe fn post_recv_fast(
        &self,
        comm: Comm,
        source: i32,
        tag: i32,
        buf: *mut u8,
        len: usize,
        hold: bool,
    ) -> Option<RequestId> {
        let source_ok = source == ANY_SOURCE || self.is_job_rank(source);
        if comm != Comm::World || !(source_ok & self.valid_tag(tag, true)) {
            return None;
        }
        let mut state = self.enter_single()?;
        // A refusal is made again by the general call, which reports it.
        let recv = Recv {
            context: WORLD_CONTEXT,
            source,
            tag,
            buf,
            len,
        };
        // SAFETY: the buffer promise is this function's own requirement.
        unsafe { self.hand_recv(&mut state, comm, &recv, hold, None) }.ok()
    }

    /// [`Runtime::irecv`] (`hold` false) and [`Runtime::irecv_held`]:
    /// checks the arguments, enters, and hands the receive to the pml.
    ///
    /// # Safety
    /// As [`Runtime::irecv`].
    #[inline(always)]
    unsafe fn post_recv(
        &self,
        comm: Comm,
        source: i32,
        tag: i32,
        buf: *mut u8,
        len: usize,
        hold: bool,
    ) -> Result<RequestId, Error> {
        self.check_tag(tag, true)?;
        let source_world = self.world_source(comm, source)?;
        Self::check_buffer(buf, len)?;
        let mut state = self.enter()?;
        // SAFETY: the buffer promise is the caller's.
        unsafe { self.start_recv(&mut state, comm, source_world, tag, buf, len, hold) }
    }

    /// Hands a receive to the pml (with the runtime entered); `hold` as
    /// in [`Runtime::recv_started`].
    ///
    /// # Safety
    /// As [`Runtime::irecv`]: the buffer stays valid and untouched until
    /// the request completes.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn start_recv(
        &self,
        state: &mut State,
        comm: Comm,
        source: i32,
        tag: i32,
        buf: *mut u8,
        len: usize,
        hold: bool,
    ) -> Result<RequestId, Error> {
        let context = self.context_of(comm)?;
        let recv = Recv {
            context,
            source,
            tag,
            buf,
            len,
        };
        // SAFETY: the buffer promise is this function's own requirement.
        unsafe { self.hand_recv(state, comm, &recv, hold, None) }.map_err(Self::recv_refused)
    }

    /// Hands receive `recv` on `comm` to the pml with a completion slot,
    /// into `pieces` when the elements lie in pieces; `hold` as in
    /// [`Runtime::recv_started`]. The pml's refusal is its sentence, with
    /// the slot given back.
    ///
    /// # Safety
    /// As [`Runtime::irecv`]: the buffer (or the elements) stays valid and
    /// untouched until the request completes.
    #[inline(always)]
    unsafe fn hand_recv(
        &self,
        state: &mut State,
        comm: Comm,
        recv: &Recv,
        hold: bool,
        pieces: Option<&Pieces>,
    ) -> Result<RequestId, String> {
        let (slot, done) = state.board.take(comm);
        let args = RecvArgs {
            buf: recv.buf,
            len: recv.len,
            source: recv.source,
            tag: recv.tag,
            context: recv.context,
            done,
        };
        let posted = match pieces {
            // SAFETY: the caller keeps the buffer valid and untouched until
            // the request completes (this function's contract); the slot
            // stays until read or the request freed.
            None => unsafe { self.pml.irecv(&args) },
            // SAFETY: as above, for the elements.
            Some(p) => unsafe { self.pml.irecv_pieces(&args, p) },
        };
        match posted {
            Ok((handle, st)) => Ok(self.recv_started(state, comm, slot, handle, &st, hold)),
            Err(error) => {
                state.board.give_back(slot);
                Err(error)
            }
        }
    }

    /// The request of a receive on `comm` the pml took with completion
    /// slot `slot`: pending, or complete already (handle 0, with `st`).
    /// A complete one gives the slot back, or with `hold` publishes `st`
    /// in it and stays slotted ([`Runtime::irecv_held`]).
    #[inline(always)]
    pub(super) fn recv_started(
        &self,
        state: &mut State,
        comm: Comm,
        slot: u32,
        handle: u64,
        st: &RequestStatus,
        hold: bool,
    ) -> RequestId {
        if handle == 0 {
            if hold {
                state.board.slot(slot).publish(st);
                state.board.started(slot, HELD);
                return RequestId::pending_in(HELD, slot);
            }
            state.board.give_back(slot);
            return RequestId::completed(Status::of_request(st, self.source_in(comm, st.source)));
        }
        state.board.started(slot, handle);
        RequestId::pending_in(handle, slot)
    }

    /// The error of a receive the pml refused.
    #[cold]
    fn recv_refused(error: String) -> Error {
        Error::new(
            ErrorClass::Other,
            format!("cannot post the receive: {error}"),
        )
    }
}

/// A receive as the pml is handed it, but its completion slot: the
/// context id, the job rank of the source (or [`ANY_SOURCE`]), the tag
/// (or [`ANY_TAG`]) and the buffer.
struct Recv {
    context: u32,
    source: i32,
    tag: i32,
    buf: *mut u8,
    len: usize,
}
