//! [`Session`]: one start of a pml component, through its exported
//! [`PmlModule`] table and a [`PmlHandle`], as rank 0 of a one-rank job
//! over the kit's [`loopback`] btl and a fresh
//! [`KitCore`] — from `init` to `finalize`.
//!
//! The session owns the message buffers it hands the pml ([`Buf`]): they
//! live until after the pml's `finalize`, so a request the test freed or
//! left running can never point at freed memory. The methods that let the
//! pml run (`isend`, `irecv`, progress rounds, waits) take `&mut self`,
//! and reading a buffer ([`Session::bytes`]) borrows the session, so no
//! test holds a view of a buffer while the pml may write it.

use super::core::{KitCore, KIT_HANDLE};
use super::loopback;
use super::pieces::Strided;
use crate::handle::PmlHandle;
use crate::module::{
    BtlCandidate, Completion, PmlModule, PmlSignals, RecvArgs, RequestError, RequestStatus,
    SendArgs, SendMode, ANY_SOURCE, ANY_TAG,
};
use oxmpi_framework_btl::module::JobIdentity;
use oxmpi_plugin_api::testkit;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The longest [`Session::wait`] waits for one request.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// The identity of the kit's one-rank job.
pub const IDENTITY: JobIdentity = JobIdentity {
    job_id: 0x7e57_0b1e,
    secret: [0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210],
    rank: 0,
    size: 1,
};

/// A buffer a [`Session`] owns (made with [`Session::buffer`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Buf {
    session: u64,
    index: usize,
    len: usize,
}

impl Buf {
    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// One start of a pml component; see the module docs. Dropping it
/// finalizes the pml (if [`Session::finalize`] did not) and then frees
/// the buffers.
pub struct Session {
    pml: PmlHandle,
    core: &'static KitCore,
    serial: u64,
    buffers: Vec<*mut [u8]>,
    finalized: bool,
}

static SERIAL: AtomicU64 = AtomicU64::new(1);

impl Session {
    /// Starts the pml `table` (component `component`, whose parameters the
    /// fake services answer) over the kit's loopback btl, with the
    /// loopback's counters and violations cleared but its behaviour kept
    /// (set it with [`loopback::set_behaviour`] first), and fences the
    /// modex.
    ///
    /// # Errors
    ///
    /// The pml's sentence when its `init` fails.
    pub fn start(table: &'static PmlModule, component: &'static str) -> Result<Session, String> {
        let behaviour = loopback::behaviour();
        loopback::reset();
        loopback::set_behaviour(behaviour);
        Session::start_over(table, component, &[loopback::candidate()])
    }

    /// Starts the pml over the given btl candidates (the kit's loopback
    /// or others a test made), without touching the loopback's state.
    ///
    /// # Errors
    ///
    /// The pml's sentence when its `init` fails.
    pub fn start_over(
        table: &'static PmlModule,
        component: &'static str,
        btls: &[BtlCandidate],
    ) -> Result<Session, String> {
        let pml = PmlHandle::new(table, testkit::context("pml", component));
        let core = KitCore::leak(IDENTITY.rank);
        pml.init(&IDENTITY, core, btls)?;
        core.fence();
        Ok(Session {
            pml,
            core,
            serial: SERIAL.fetch_add(1, Ordering::Relaxed),
            buffers: Vec::new(),
            finalized: false,
        })
    }

    /// The pml's entry points that need no buffer (`test`, `take`,
    /// `free`, `cancel`, `iprobe`, `request_error`), which also answer for
    /// the requests that completed during `isend`/`irecv`.
    pub fn pml(&self) -> KitPml {
        KitPml {
            pml: self.pml,
            core: self.core,
        }
    }

    /// The session's MPI layer.
    pub fn core(&self) -> &'static KitCore {
        self.core
    }

    /// A buffer holding `bytes`, owned by the session.
    pub fn buffer(&mut self, bytes: Vec<u8>) -> Buf {
        let len = bytes.len();
        self.buffers.push(Box::into_raw(bytes.into_boxed_slice()));
        Buf {
            session: self.serial,
            index: self.buffers.len() - 1,
            len,
        }
    }

    fn raw(&self, buf: Buf) -> *mut u8 {
        assert_eq!(
            buf.session, self.serial,
            "a buffer of another session was used"
        );
        self.buffers[buf.index].cast::<u8>()
    }

    /// The bytes of `buf` now.
    pub fn bytes(&self, buf: Buf) -> &[u8] {
        // SAFETY: the session's own allocation of `buf.len` bytes, alive
        // until the session drops; the pml writes it only while one of
        // the session's `&mut self` methods runs, which this borrow
        // excludes.
        unsafe { std::slice::from_raw_parts(self.raw(buf), buf.len) }
    }

    /// The bytes of `buf`, writable (to reuse a buffer whose request
    /// completed).
    pub fn bytes_mut(&mut self, buf: Buf) -> &mut [u8] {
        // SAFETY: as in `bytes`, and `&mut self` excludes every other view.
        unsafe { std::slice::from_raw_parts_mut(self.raw(buf), buf.len) }
    }

    /// Starts a send of all of `buf` to `dest`.
    ///
    /// # Errors
    ///
    /// The pml's refusal: its kind and sentence.
    pub fn isend(
        &mut self,
        buf: Buf,
        dest: u32,
        tag: i32,
        context: u32,
        mode: SendMode,
    ) -> Result<u64, (RequestError, String)> {
        match self.start_send(buf, dest, tag, context, mode, std::ptr::null())? {
            0 => Ok(self.core.keep_immediate(RequestStatus::default())),
            h => Ok(h),
        }
    }

    /// [`Session::isend`] with the completion slot `done`: the pml's own
    /// answer (0 for a send complete during the call, whose slot the pml
    /// leaves alone).
    ///
    /// # Errors
    ///
    /// The pml's refusal: its kind and sentence.
    pub fn isend_published(
        &mut self,
        buf: Buf,
        dest: u32,
        tag: i32,
        mode: SendMode,
        done: &'static Completion,
    ) -> Result<u64, (RequestError, String)> {
        self.start_send(buf, dest, tag, 0, mode, done)
    }

    /// Hands a send of all of `buf` to the pml; its answer.
    fn start_send(
        &mut self,
        buf: Buf,
        dest: u32,
        tag: i32,
        context: u32,
        mode: SendMode,
        done: *const Completion,
    ) -> Result<u64, (RequestError, String)> {
        let args = SendArgs {
            buf: self.raw(buf),
            len: buf.len,
            dest,
            tag,
            context,
            mode,
            done,
        };
        // SAFETY: the buffer lives until after the pml's finalize, and the
        // session hands out no writable view of it while the pml may
        // read it (a test rewrites a buffer only after its send
        // completed); a slot is `'static`.
        unsafe { self.pml.isend(&args) }
    }

    /// Posts a receive into the first `len` bytes of `buf`.
    ///
    /// # Errors
    ///
    /// The pml's refusal.
    ///
    /// # Panics
    ///
    /// When `len` passes the end of `buf` (a bug in the test).
    pub fn irecv(
        &mut self,
        buf: Buf,
        len: usize,
        source: i32,
        tag: i32,
        context: u32,
    ) -> Result<u64, String> {
        let args = self.recv_args(buf, len, source, tag, context);
        // SAFETY: as in `start_send`; nothing else writes the buffer.
        let posted = unsafe { self.pml.irecv(&args) }?;
        Ok(self.handle_of(posted))
    }

    /// [`Session::irecv`] (context 0) with the completion slot `done`:
    /// the pml's own answer (handle 0 and the status for a receive
    /// complete during the call, whose slot the pml leaves alone).
    ///
    /// # Errors
    ///
    /// The pml's refusal.
    ///
    /// # Panics
    ///
    /// When `len` passes the end of `buf` (a bug in the test).
    pub fn irecv_published(
        &mut self,
        buf: Buf,
        len: usize,
        source: i32,
        tag: i32,
        done: &'static Completion,
    ) -> Result<(u64, RequestStatus), String> {
        let args = RecvArgs {
            done,
            ..self.recv_args(buf, len, source, tag, 0)
        };
        // SAFETY: as in `start_send`; nothing else writes the buffer.
        unsafe { self.pml.irecv(&args) }
    }

    /// The arguments of a receive into the first `len` bytes of `buf`.
    ///
    /// # Panics
    ///
    /// When `len` passes the end of `buf` (a bug in the test).
    fn recv_args(&self, buf: Buf, len: usize, source: i32, tag: i32, context: u32) -> RecvArgs {
        assert!(
            len <= buf.len,
            "a receive of {len} bytes into a {}-byte buffer",
            buf.len
        );
        RecvArgs {
            buf: self.raw(buf),
            len,
            source,
            tag,
            context,
            done: std::ptr::null(),
        }
    }

    /// The handle of a receive the pml took: its own, or a kit handle
    /// keeping the status of one that completed at once.
    fn handle_of(&mut self, (h, status): (u64, RequestStatus)) -> u64 {
        match h {
            0 => self.core.keep_immediate(status),
            h => h,
        }
    }

    /// Starts a send of `count` blocks of `layout` from the start of
    /// `buf`, through the pml's `isend_pieces`.
    ///
    /// # Errors
    ///
    /// The pml's refusal: its kind and sentence.
    ///
    /// # Panics
    ///
    /// When the blocks pass the end of `buf` (a bug in the test).
    #[allow(clippy::too_many_arguments)]
    pub fn isend_pieces(
        &mut self,
        buf: Buf,
        layout: &'static Strided,
        count: usize,
        dest: u32,
        tag: i32,
        context: u32,
        mode: SendMode,
    ) -> Result<u64, (RequestError, String)> {
        assert!(
            layout.reach(count) <= buf.len,
            "blocks past the buffer's end"
        );
        let origin = self.raw(buf);
        let pieces = layout.pieces(origin, count);
        let args = SendArgs {
            buf: origin,
            len: layout.packed(count),
            dest,
            tag,
            context,
            mode,
            done: std::ptr::null(),
        };
        // SAFETY: as in `start_send`, for the blocks; the layout is
        // `'static`.
        match unsafe { self.pml.isend_pieces(&args, &pieces) }? {
            0 => Ok(self.core.keep_immediate(RequestStatus::default())),
            h => Ok(h),
        }
    }

    /// Posts a receive into `count` blocks of `layout` from the start of
    /// `buf`, through the pml's `irecv_pieces`.
    ///
    /// # Errors
    ///
    /// The pml's refusal.
    ///
    /// # Panics
    ///
    /// When the blocks pass the end of `buf` (a bug in the test).
    pub fn irecv_pieces(
        &mut self,
        buf: Buf,
        layout: &'static Strided,
        count: usize,
        source: i32,
        tag: i32,
        context: u32,
    ) -> Result<u64, String> {
        assert!(
            layout.reach(count) <= buf.len,
            "blocks past the buffer's end"
        );
        let mut args = self.recv_args(buf, 0, source, tag, context);
        args.len = layout.packed(count);
        let pieces = layout.pieces(args.buf, count);
        // SAFETY: as in `irecv`, for the blocks; the layout is `'static`.
        let posted = unsafe { self.pml.irecv_pieces(&args, &pieces) }?;
        Ok(self.handle_of(posted))
    }

    /// Receives the message the pml's `improbe` claimed under `message`
    /// into the first `len` bytes of `buf`.
    ///
    /// # Errors
    ///
    /// The pml's refusal.
    ///
    /// # Panics
    ///
    /// When `len` passes the end of `buf` (a bug in the test).
    pub fn imrecv(&mut self, message: u64, buf: Buf, len: usize) -> Result<u64, String> {
        let args = self.recv_args(buf, len, ANY_SOURCE, ANY_TAG, 0);
        // SAFETY: as in `isend`; nothing else writes the buffer.
        let posted = unsafe { self.pml.imrecv(message, &args) }?;
        Ok(self.handle_of(posted))
    }

    /// One progress round ([`KitCore::round`]).
    pub fn round(&mut self) -> usize {
        self.core.round(&self.pml)
    }

    /// `n` progress rounds.
    pub fn rounds(&mut self, n: usize) {
        for _ in 0..n {
            self.round();
        }
    }

    /// Progress rounds until `request` completes; its status.
    ///
    /// # Panics
    ///
    /// After [`DEADLINE`] without completion, naming `what`.
    pub fn wait(&mut self, request: u64, what: &str) -> RequestStatus {
        let start = Instant::now();
        let pml = self.pml();
        loop {
            if let Some(status) = pml.test(request) {
                return status;
            }
            let before = self.pml.signals().events();
            self.round();
            if self.pml.signals().events() == before && pml.test(request).is_some() {
                self.core.violation(format!(
                    "{what}: request {request:#x} completed while the pml's event counter stayed at {before} (a waiting MPI layer would not have tested it again)"
                ));
            }
            if start.elapsed() > DEADLINE {
                panic!(
                    "{what}: request {request:#x} did not complete within {} s of progress",
                    DEADLINE.as_secs()
                );
            }
        }
    }

    /// Progress rounds until `done` answers true.
    ///
    /// # Panics
    ///
    /// After [`DEADLINE`], naming `what`.
    pub fn wait_until(&mut self, what: &str, mut done: impl FnMut(&Session) -> bool) {
        let start = Instant::now();
        while !done(self) {
            self.round();
            if start.elapsed() > DEADLINE {
                panic!(
                    "{what}: not reached within {} s of progress",
                    DEADLINE.as_secs()
                );
            }
        }
    }

    /// Every breach of the btl's and the MPI layer's contracts the kit
    /// saw in this session.
    pub fn violations(&self) -> Vec<String> {
        let mut all = loopback::violations();
        all.extend(self.core.violations());
        all
    }

    /// Panics with the violations, if any, naming `what`.
    pub fn assert_clean(&self, what: &str) {
        let v = self.violations();
        assert!(v.is_empty(), "{what}: the pml broke a contract: {v:#?}");
    }

    /// Finalizes the pml (which finalizes the btls it started).
    pub fn finalize(mut self) {
        self.finalized = true;
        self.pml.finalize();
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if !self.finalized {
            self.pml.finalize();
        }
        for raw in self.buffers.drain(..) {
            // SAFETY: made by `Box::into_raw` in `buffer`, freed once, after
            // the pml's finalize (nothing points into it any more).
            drop(unsafe { Box::from_raw(raw) });
        }
    }
}

/// The pml as a session's test sees it (from [`Session::pml`]): its
/// entry points that need no buffer, which also answer for the requests
/// that completed during `isend`/`irecv` (kept by the kit under handles
/// with the top bit set, which a pml's own handles never reach here).
#[derive(Clone, Copy)]
pub struct KitPml {
    pml: PmlHandle,
    core: &'static KitCore,
}

/// What `test` answers for a handle nobody knows (as a pml does).
const UNKNOWN: RequestStatus = crate::adapter::BROKEN;

impl KitPml {
    /// The pml's `test` (a kit handle: its kept status).
    pub fn test(&self, request: u64) -> Option<RequestStatus> {
        if request & KIT_HANDLE != 0 {
            return Some(self.core.immediate(request, false).unwrap_or(UNKNOWN));
        }
        self.pml.test(request)
    }

    /// The pml's `take` (a kit handle: its kept status, released).
    pub fn take(&self, request: u64) -> Option<RequestStatus> {
        if request & KIT_HANDLE != 0 {
            return Some(self.core.immediate(request, true).unwrap_or(UNKNOWN));
        }
        self.pml.take(request)
    }

    /// The pml's `free` (a kit handle: released).
    pub fn free(&self, request: u64) {
        if request & KIT_HANDLE != 0 {
            self.core.immediate(request, true);
            return;
        }
        self.pml.free(request)
    }

    /// The pml's `cancel` (a kit handle: complete already, so false).
    pub fn cancel(&self, request: u64) -> bool {
        request & KIT_HANDLE == 0 && self.pml.cancel(request)
    }

    /// The pml's `request_error`.
    pub fn request_error(&self, request: u64) -> String {
        if request & KIT_HANDLE != 0 {
            return match self.core.immediate(request, false) {
                Some(_) => format!("request {request:#x} completed without error during its start"),
                None => format!("the kit has no request {request:#x}: it was freed"),
            };
        }
        self.pml.request_error(request)
    }

    /// Whether the pml takes messages in pieces.
    pub fn takes_pieces(&self) -> bool {
        self.pml.takes_pieces()
    }

    /// The pml's `iprobe`.
    pub fn iprobe(&self, context: u32, source: i32, tag: i32) -> Option<RequestStatus> {
        self.pml.iprobe(context, source, tag)
    }

    /// The pml's `improbe`.
    pub fn improbe(&self, context: u32, source: i32, tag: i32) -> Option<(u64, RequestStatus)> {
        self.pml.improbe(context, source, tag)
    }

    /// The pml's `progress`.
    pub fn progress(&self) -> usize {
        self.pml.progress()
    }

    /// The pml's signals.
    pub fn signals(&self) -> &'static PmlSignals {
        self.pml.signals()
    }
}
