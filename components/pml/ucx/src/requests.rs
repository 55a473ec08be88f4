//! The request entry points of pml ucx ([`Requests`] for [`Ucx`]):
//! sends with `ucp_tag_send_nbx` / `ucp_tag_send_sync_nbx`, receives with
//! `ucp_tag_recv_nbx`, probes with `ucp_tag_probe_nb`, matched receives
//! with `ucp_tag_msg_recv_nbx`, cancellation with `ucp_request_cancel`,
//! and progress with `ucp_worker_progress`.

use crate::pml::{Peer, Ucx};
use crate::slab::{self, Kind, Slab, Slot, State};
use crate::tag;
use crate::ucp::{is_peer_failure, started, status_text, Started};
use oxmpi_framework_pml::adapter::{Requests, BROKEN};
use oxmpi_framework_pml::module::{
    Limits, Pieces, RecvArgs, RequestError, RequestStatus, SendArgs, SendMode, ANY_SOURCE, ANY_TAG,
};
use oxmpi_ucx_sys as sys;
use std::ffi::c_void;

/// UCP's datatype of plain bytes (`ucp_dt_make_contig(1)`).
pub const BYTES: sys::ucp_datatype_t =
    (1 << sys::UCP_DATATYPE_SHIFT) | sys::UCP_DATATYPE_CONTIG as sys::ucp_datatype_t;

/// Fills a completed slot's status (and sentence) from UCP's outcome.
pub(crate) fn complete(
    s: &mut Slot,
    outcome: sys::ucs_status_t,
    info: &sys::ucp_tag_recv_info_t,
    me: u32,
    peers: &[Peer],
) {
    s.state = State::Complete;
    let mut status = RequestStatus::default();
    match s.kind {
        Kind::Send(dest) => {
            let lost = peers.get(dest as usize).and_then(|p| p.failed.as_deref());
            if outcome != sys::UCS_OK {
                status.error = if lost.is_some() || is_peer_failure(outcome) {
                    RequestError::PeerFailed
                } else {
                    RequestError::Other
                };
                s.error = match lost {
                    Some(why) => format!("a send from rank {me} to rank {dest} failed: {why}"),
                    None => format!(
                        "a send from rank {me} to rank {dest} failed in UCX: {}",
                        status_text(outcome)
                    ),
                };
            }
        }
        Kind::Recv(source) => {
            if outcome == sys::UCS_ERR_CANCELED && s.peer_lost {
                status.source = source;
                status.error = RequestError::PeerFailed;
                let why = peers
                    .get(source as usize)
                    .and_then(|p| p.failed.as_deref())
                    .unwrap_or("its sender failed");
                s.error = format!("a receive from rank {source} on rank {me} failed: {why}");
            } else if outcome == sys::UCS_ERR_CANCELED {
                status.source = source;
                status.tag = ANY_TAG;
                status.cancelled = true;
            } else {
                status.source = tag::source_of(info.sender_tag) as i32;
                status.tag = tag::tag_of(info.sender_tag);
                status.count = info.length.min(s.capacity);
                if outcome == sys::UCS_OK && info.length > s.capacity {
                    status.error = RequestError::Truncated;
                    s.error = format!(
                        "message of {} bytes from rank {} (tag {}) truncated to the {}-byte receive buffer",
                        info.length, status.source, status.tag, s.capacity
                    );
                } else if outcome == sys::UCS_ERR_MESSAGE_TRUNCATED {
                    status.error = RequestError::Truncated;
                    status.count = s.capacity;
                    s.error = format!(
                        "message from rank {} (tag {}) longer than the {}-byte receive buffer was truncated by UCX \
                         (with pml_ucx_keep_truncated false its bytes are not kept)",
                        status.source, status.tag, s.capacity
                    );
                } else if outcome != sys::UCS_OK {
                    status.error = if is_peer_failure(outcome) {
                        RequestError::PeerFailed
                    } else {
                        RequestError::Other
                    };
                    s.error = format!(
                        "a receive on rank {me} failed in UCX: {}",
                        status_text(outcome)
                    );
                }
            }
        }
    }
    s.status = status;
}

/// Builds UCP's parameters for a receive of `datatype` into `slot`, whose
/// outcome is written to `info` if it completes during the call.
fn recv_params(
    datatype: sys::ucp_datatype_t,
    slot: *mut Slot,
    info: &mut sys::ucp_tag_recv_info_t,
) -> sys::ucp_request_param_t {
    sys::ucp_request_param_t {
        op_attr_mask: sys::UCP_OP_ATTR_FIELD_CALLBACK
            | sys::UCP_OP_ATTR_FIELD_USER_DATA
            | sys::UCP_OP_ATTR_FIELD_DATATYPE
            | sys::UCP_OP_ATTR_FIELD_RECV_INFO
            // UCP 1.13 fills no receive information for a receive it
            // completes during the call: it is asked to call back instead.
            | sys::UCP_OP_ATTR_FLAG_NO_IMM_CMPL,
        cb: sys::ucp_request_param_t__bindgen_ty_1 {
            recv: Some(slab::recv_done),
        },
        datatype,
        user_data: slot.cast(),
        recv_info: sys::ucp_request_param_t__bindgen_ty_2 { tag_info: info },
        ..Default::default()
    }
}

/// The sentence of a receive into a null buffer.
#[cold]
fn null_buffer(me: u32, len: usize) -> String {
    format!("rank {me} cannot post a receive of {len} bytes: the buffer is a null pointer")
}

impl Ucx {
    /// The sentence of a send with a null buffer or `ANY_TAG`.
    #[cold]
    fn bad_send(&self, args: &SendArgs) -> String {
        if args.tag == ANY_TAG {
            format!(
                "rank {} cannot send with tag MPI_ANY_TAG (-1) to rank {}: a send names its tag",
                self.rank, args.dest
            )
        } else {
            format!(
                "rank {} cannot send {} bytes to rank {}: the buffer is a null pointer",
                self.rank, args.len, args.dest
            )
        }
    }

    /// The datatype, buffer and count UCP receives into for `slot`
    /// (whose buffer and capacity are set): the user's bytes, or the slot
    /// itself with the slot datatype for a message in pieces or a receive
    /// that keeps truncated messages.
    fn recv_target(
        &self,
        slot: *mut Slot,
        pieces: Option<&Pieces>,
    ) -> (sys::ucp_datatype_t, *mut c_void, usize) {
        if pieces.is_none() && !self.keep_truncated {
            // SAFETY: the slot just set up; UCP holds nothing of it.
            return unsafe { (BYTES, (*slot).buf.cast(), (*slot).capacity) };
        }
        // SAFETY: as above.
        unsafe {
            (*slot).pieces = pieces.copied();
            (*slot).packed_size = if self.keep_truncated {
                slab::UNBOUNDED
            } else {
                (*slot).capacity
            };
        }
        (self.slot_datatype, slot.cast(), 1)
    }

    /// What a receive UCP started answered: 0 with `status` when it
    /// completed without error during the call, otherwise its handle.
    fn posted(
        &mut self,
        slot: *mut Slot,
        answer: sys::ucs_status_ptr_t,
        info: &sys::ucp_tag_recv_info_t,
        immediate: &mut RequestStatus,
    ) -> u64 {
        // SAFETY: the slot just allocated; nothing else refers to it.
        let s = unsafe { &mut *slot };
        match started(answer) {
            Started::Later(request) if s.outcome == sys::UCS_INPROGRESS => {
                s.ucx = request;
                return Slab::handle(slot);
            }
            Started::Later(request) => {
                // UCP called back during the call (it is asked to, as its
                // immediate completion gives no sender tag): the receive
                // is complete, and its event is taken back.
                self.ucp().finished(request);
                let events = self.slab.events();
                // SAFETY: the slab's events; no callback runs here.
                unsafe {
                    if (*events).finished.last() == Some(&slab::index_of(slot)) {
                        (*events).finished.pop();
                    }
                }
                let (outcome, info) = (s.outcome, s.info);
                complete(s, outcome, &info, self.rank, &self.peers);
            }
            Started::Now(outcome) => complete(s, outcome, info, self.rank, &self.peers),
        }
        if s.status.error == RequestError::None {
            *immediate = s.status;
            self.slab.release(slot);
            return 0;
        }
        if !s.done.is_null() {
            // SAFETY: the caller's live completion slot.
            unsafe { (*s.done).fail() };
        }
        Slab::handle(slot)
    }

    /// Starts a send (see [`Requests::isend`]), from `pieces` when the
    /// message lies in pieces.
    ///
    /// # Safety
    ///
    /// As for [`Requests::isend`] (and [`Requests::isend_pieces`]).
    unsafe fn start_send(
        &mut self,
        args: &SendArgs,
        pieces: Option<&Pieces>,
    ) -> Result<u64, (RequestError, String)> {
        // A message in pieces may start at address 0 (MPI_BOTTOM with
        // absolute displacements).
        if (args.buf.is_null() && args.len > 0 && pieces.is_none()) || args.tag == ANY_TAG {
            return Err((RequestError::Other, self.bad_send(args)));
        }
        let ep = self.endpoint(args.dest)?;
        let ucp_tag = tag::send_tag(args.tag, self.rank, args.context);
        let kind = Kind::Send(args.dest);
        // A contiguous send mostly completes during the call: its slot is
        // only named to UCP (the one the next `alloc` hands out, which no
        // callback takes) and taken when UCP answers a request. UCP packs
        // a message in pieces through its slot during the call: that
        // slot is taken first.
        let slot = match pieces {
            None => self.slab.next_free(),
            Some(_) => self.slab.alloc(kind, args.done),
        };
        let mut params = sys::ucp_request_param_t {
            op_attr_mask: sys::UCP_OP_ATTR_FIELD_CALLBACK | sys::UCP_OP_ATTR_FIELD_USER_DATA,
            cb: sys::ucp_request_param_t__bindgen_ty_1 {
                send: Some(slab::send_done),
            },
            user_data: slot.cast(),
            ..Default::default()
        };
        let (buf, count) = match pieces {
            None => (args.buf.cast::<c_void>(), args.len),
            Some(p) => {
                // SAFETY: the slot just allocated; UCP holds nothing of it.
                unsafe {
                    (*slot).buf = args.buf.cast_mut();
                    (*slot).capacity = args.len;
                    (*slot).packed_size = args.len;
                    (*slot).pieces = Some(*p);
                }
                params.op_attr_mask |= sys::UCP_OP_ATTR_FIELD_DATATYPE;
                params.datatype = self.slot_datatype;
                (slot.cast_const().cast::<c_void>(), 1)
            }
        };
        // SAFETY: the buffer stays readable and unchanged until the
        // request completes (the caller's promise); the slot stays valid
        // while UCP holds it (the slab's); the parameter block names the
        // fields set.
        let answer = unsafe {
            match args.mode {
                SendMode::Standard => sys::ucp_tag_send_nbx(ep, buf, count, ucp_tag, &params),
                SendMode::Synchronous => {
                    sys::ucp_tag_send_sync_nbx(ep, buf, count, ucp_tag, &params)
                }
            }
        };
        match started(answer) {
            Started::Later(request) => {
                if pieces.is_none() {
                    let taken = self.slab.alloc(kind, args.done);
                    debug_assert_eq!(taken, slot, "the slot named to UCP is taken");
                }
                // SAFETY: the slot just taken; its callback has not run
                // (UCP calls back from progress, never during the send).
                unsafe { (*slot).ucx = request };
                Ok(Slab::handle(slot))
            }
            Started::Now(sys::UCS_OK) => {
                if pieces.is_some() {
                    self.slab.release(slot);
                }
                Ok(0)
            }
            Started::Now(st) => {
                if pieces.is_some() {
                    self.slab.release(slot);
                }
                let kind = if is_peer_failure(st) {
                    RequestError::PeerFailed
                } else {
                    RequestError::Other
                };
                Err((
                    kind,
                    format!(
                        "a send from rank {} to rank {} of {} bytes failed in UCX: {}",
                        self.rank,
                        args.dest,
                        args.len,
                        status_text(st)
                    ),
                ))
            }
        }
    }

    /// Posts a receive (see [`Requests::irecv`]), into `pieces` when the
    /// elements lie in pieces.
    ///
    /// # Safety
    ///
    /// As for [`Requests::irecv`] (and [`Requests::irecv_pieces`]).
    unsafe fn post_recv(
        &mut self,
        args: &RecvArgs,
        pieces: Option<&Pieces>,
        immediate: &mut RequestStatus,
    ) -> Result<u64, String> {
        if args.source != ANY_SOURCE
            && (args.source < 0 || args.source as usize >= self.peers.len())
        {
            return Err(format!(
                "pml ucx: a receive from rank {} in a job of {} ranks",
                args.source,
                self.peers.len()
            ));
        }
        if args.buf.is_null() && args.len > 0 && pieces.is_none() {
            return Err(null_buffer(self.rank, args.len));
        }
        let (value, mask) = tag::recv_tag(args.tag, args.source, args.context);
        let slot = self.slab.alloc(Kind::Recv(args.source), args.done);
        // SAFETY: the slot just allocated.
        unsafe {
            (*slot).buf = args.buf;
            (*slot).capacity = args.len;
        }
        let (datatype, buf, count) = self.recv_target(slot, pieces);
        let mut info = sys::ucp_tag_recv_info_t::default();
        let params = recv_params(datatype, slot, &mut info);
        // SAFETY: the buffer (or the slot that names it) stays valid until
        // the request completes (the caller's promise, and the slab's);
        // the parameter block names the fields set.
        let answer =
            unsafe { sys::ucp_tag_recv_nbx(self.worker(), buf, count, value, mask, &params) };
        Ok(self.posted(slot, answer, &info, immediate))
    }

    /// Matched receive of the message kept under `message`.
    ///
    /// # Safety
    ///
    /// As for [`Requests::imrecv`].
    unsafe fn post_mrecv(
        &mut self,
        message: u64,
        args: &RecvArgs,
        immediate: &mut RequestStatus,
    ) -> Result<u64, String> {
        if args.buf.is_null() && args.len > 0 {
            return Err(null_buffer(self.rank, args.len));
        }
        let Some(slot) = self
            .slab
            .lookup(message)
            // SAFETY: a live slot of the slab.
            .filter(|&s| unsafe { (*s).state } == State::Message)
        else {
            return Err(format!(
                "pml ucx imrecv: no message is kept under handle {message:#x} (never claimed by improbe, or received already)"
            ));
        };
        // SAFETY: the live slot just found; no UCP request refers to it.
        let msg = unsafe {
            (*slot).state = State::Running;
            (*slot).done = args.done;
            (*slot).buf = args.buf;
            (*slot).capacity = args.len;
            (*slot).kind = Kind::Recv((*slot).status.source);
            (*slot).message
        };
        let (datatype, buf, count) = self.recv_target(slot, None);
        let mut info = sys::ucp_tag_recv_info_t::default();
        let params = recv_params(datatype, slot, &mut info);
        // SAFETY: as in `post_recv`; the message was claimed by
        // `ucp_tag_probe_nb` with remove and is received once.
        let answer = unsafe { sys::ucp_tag_msg_recv_nbx(self.worker(), buf, count, msg, &params) };
        Ok(self.posted(slot, answer, &info, immediate))
    }

    /// Probes for a message a receive with these arguments would match;
    /// with `remove`, claims it.
    fn probe(
        &mut self,
        context: u32,
        source: i32,
        tag_: i32,
        remove: bool,
    ) -> Option<(sys::ucp_tag_message_h, RequestStatus)> {
        let (value, mask) = tag::recv_tag(tag_, source, context);
        let mut info = sys::ucp_tag_recv_info_t::default();
        // SAFETY: a live worker; UCP fills `info` when it finds a message.
        let msg = unsafe {
            sys::ucp_tag_probe_nb(self.worker(), value, mask, i32::from(remove), &mut info)
        };
        if msg.is_null() {
            return None;
        }
        let status = RequestStatus {
            source: tag::source_of(info.sender_tag) as i32,
            tag: tag::tag_of(info.sender_tag),
            count: info.length,
            cancelled: false,
            error: RequestError::None,
        };
        Some((msg, status))
    }
}

impl Requests for Ucx {
    const TAKES_PIECES: bool = true;

    unsafe fn isend(&mut self, args: &SendArgs) -> Result<u64, (RequestError, String)> {
        // SAFETY: this method's requirement.
        unsafe { self.start_send(args, None) }
    }

    unsafe fn isend_pieces(
        &mut self,
        args: &SendArgs,
        pieces: &Pieces,
    ) -> Result<u64, (RequestError, String)> {
        // SAFETY: this method's requirement.
        unsafe { self.start_send(args, Some(pieces)) }
    }

    unsafe fn irecv_pieces(
        &mut self,
        args: &RecvArgs,
        pieces: &Pieces,
        status: &mut RequestStatus,
    ) -> Result<u64, String> {
        // SAFETY: this method's requirement.
        unsafe { self.post_recv(args, Some(pieces), status) }
    }

    unsafe fn irecv(&mut self, args: &RecvArgs, status: &mut RequestStatus) -> Result<u64, String> {
        // SAFETY: this method's requirement.
        unsafe { self.post_recv(args, None, status) }
    }

    #[inline]
    fn test(&mut self, request: u64) -> Option<RequestStatus> {
        let Some(slot) = self.slab.lookup(request) else {
            return Some(BROKEN);
        };
        // SAFETY: a live slot; no callback runs during `test`.
        let (state, status) = unsafe { ((*slot).state, (*slot).status) };
        match state {
            State::Running => None,
            State::Complete => Some(status),
            // A claimed message is no request: complete in error.
            _ => Some(BROKEN),
        }
    }

    fn request_error(&mut self, request: u64) -> String {
        let Some(slot) = self.slab.lookup(request) else {
            return format!("pml ucx has no request {request:#x}: it was freed, or never issued");
        };
        // SAFETY: a live slot; nothing else refers to it during the call.
        let s = unsafe { &*slot };
        match s.state {
            State::Message => format!(
                "handle {request:#x} is a message claimed by improbe, not a request; receive it with imrecv"
            ),
            State::Running => format!("request {request:#x} has not completed"),
            _ if s.error.is_empty() => format!("request {request:#x} completed without error"),
            _ => s.error.clone(),
        }
    }

    fn free(&mut self, request: u64) {
        let Some(slot) = self.slab.lookup(request) else {
            return;
        };
        // SAFETY: a live slot; nothing else refers to it during the call.
        let s = unsafe { &mut *slot };
        match s.state {
            // Still runs: released when UCP reports it, its completion
            // slot never written.
            State::Running => s.detached = true,
            // A claimed message UCP keeps until received: it stays with
            // UCP until the worker goes.
            _ => self.slab.release(slot),
        }
    }

    fn cancel(&mut self, request: u64) -> bool {
        let Some(slot) = self.slab.lookup(request) else {
            return false;
        };
        // SAFETY: a live slot; no callback runs while these are read.
        let (state, kind, ucx) = unsafe { ((*slot).state, (*slot).kind, (*slot).ucx) };
        if state != State::Running || !matches!(kind, Kind::Recv(_)) || ucx.is_null() {
            return false;
        }
        // SAFETY: a running receive of this worker. UCP completes it with
        // UCS_ERR_CANCELED through its callback at once when it has not
        // matched, and does nothing when it has.
        unsafe { sys::ucp_request_cancel(self.worker(), ucx) };
        // SAFETY: as above; read before the drain may release the slot.
        let cancelled = unsafe { (*slot).outcome } == sys::UCS_ERR_CANCELED;
        self.drain();
        cancelled
    }

    fn iprobe(&mut self, context: u32, source: i32, tag_: i32) -> Option<RequestStatus> {
        self.probe(context, source, tag_, false).map(|(_, st)| st)
    }

    fn improbe(&mut self, context: u32, source: i32, tag_: i32) -> Option<(u64, RequestStatus)> {
        let (msg, status) = self.probe(context, source, tag_, true)?;
        let slot = self.slab.alloc(Kind::Recv(status.source), std::ptr::null());
        // SAFETY: the slot just allocated; UCP holds nothing of it.
        unsafe {
            (*slot).state = State::Message;
            (*slot).message = msg;
            (*slot).status = status;
        }
        Some((Slab::handle(slot), status))
    }

    unsafe fn imrecv(
        &mut self,
        message: u64,
        args: &RecvArgs,
        status: &mut RequestStatus,
    ) -> Result<u64, String> {
        // SAFETY: this method's requirement.
        unsafe { self.post_mrecv(message, args, status) }
    }

    #[inline]
    fn progress(&mut self) -> usize {
        let events = self.ucp().progress();
        events + self.drain()
    }

    /// Always: UCX moves data (and answers its peers' connection
    /// requests) only while its worker is progressed.
    fn has_work(&self) -> bool {
        true
    }

    fn limits(&self) -> Limits {
        tag::LIMITS
    }

    fn finalize(mut self) {
        self.shut_down();
    }
}
