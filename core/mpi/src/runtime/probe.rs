//! Probes: [`Runtime::iprobe`] and [`Runtime::probe`], which look at an
//! arrived message without taking it, and the matched forms
//! [`Runtime::improbe`] and [`Runtime::mprobe`], which take it out of
//! matching for [`Runtime::imrecv`] to receive, so that no other receive
//! or probe (another thread's) can take it in between.

use super::{Comm, Error, ErrorClass, RequestId, Runtime, Status};
use oxmpi_framework_pml::module::RecvArgs;

/// A message a matched probe took out of matching (`MPI_Message`): only
/// [`Runtime::imrecv`] can receive it, once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Message {
    /// The pml's handle of the message.
    handle: u64,
    /// The communicator it was sent on.
    comm: Comm,
}

impl Message {
    /// The communicator the message was sent on.
    pub fn comm(&self) -> Comm {
        self.comm
    }
}

impl Runtime {
    /// Whether a message that a receive from `source` with `tag` on `comm`
    /// would match has arrived (after one round of progress).
    ///
    /// # Errors
    /// `Rank`, `Tag`, `Finalized`, `ThreadLevel`.
    pub fn iprobe(&self, comm: Comm, source: i32, tag: i32) -> Result<Option<Status>, Error> {
        self.check_tag(tag, true)?;
        let source_world = self.world_source(comm, source)?;
        let mut state = self.enter()?;
        if let Some(s) = self.probe_once(comm, source_world, tag) {
            return Ok(Some(s));
        }
        self.poll(&mut state);
        Ok(self.probe_once(comm, source_world, tag))
    }

    /// One probe (called with the runtime entered).
    fn probe_once(&self, comm: Comm, source: i32, tag: i32) -> Option<Status> {
        let st = self.pml.iprobe(self.context_of(comm).ok()?, source, tag)?;
        Some(Status {
            source: self.source_in(comm, st.source),
            tag: st.tag,
            count: st.count,
            cancelled: false,
        })
    }

    /// Waits until [`iprobe`](Runtime::iprobe) finds a message.
    ///
    /// # Errors
    /// As `iprobe`.
    pub fn probe(&self, comm: Comm, source: i32, tag: i32) -> Result<Status, Error> {
        loop {
            if let Some(s) = self.iprobe(comm, source, tag)? {
                return Ok(s);
            }
            if self.yield_when_idle {
                std::thread::yield_now();
            }
        }
    }

    /// Matched probe (`MPI_Improbe`): as [`iprobe`](Runtime::iprobe), and
    /// the message found leaves matching, for [`imrecv`](Runtime::imrecv).
    ///
    /// # Errors
    /// As `iprobe`.
    pub fn improbe(
        &self,
        comm: Comm,
        source: i32,
        tag: i32,
    ) -> Result<Option<(Message, Status)>, Error> {
        self.check_tag(tag, true)?;
        let source_world = self.world_source(comm, source)?;
        let mut state = self.enter()?;
        if let Some(found) = self.mprobe_once(comm, source_world, tag) {
            return Ok(Some(found));
        }
        self.poll(&mut state);
        Ok(self.mprobe_once(comm, source_world, tag))
    }

    /// One matched probe (called with the runtime entered).
    fn mprobe_once(&self, comm: Comm, source: i32, tag: i32) -> Option<(Message, Status)> {
        let (handle, st) = self.pml.improbe(self.context_of(comm).ok()?, source, tag)?;
        let status = Status {
            source: self.source_in(comm, st.source),
            tag: st.tag,
            count: st.count,
            cancelled: false,
        };
        Some((Message { handle, comm }, status))
    }

    /// Waits until [`improbe`](Runtime::improbe) finds a message.
    ///
    /// # Errors
    /// As `iprobe`.
    pub fn mprobe(&self, comm: Comm, source: i32, tag: i32) -> Result<(Message, Status), Error> {
        loop {
            if let Some(found) = self.improbe(comm, source, tag)? {
                return Ok(found);
            }
            if self.yield_when_idle {
                std::thread::yield_now();
            }
        }
    }

    /// Receives the message a matched probe took (`MPI_Imrecv`) into `len`
    /// bytes at `buf`; the request completes as a receive's does (a longer
    /// message is truncated, with `ErrorClass::Truncate`).
    ///
    /// # Safety
    /// As [`Runtime::irecv`]: `buf..buf + len` stays valid and is not
    /// accessed until the request completes.
    ///
    /// # Errors
    /// `Buffer` for a null buffer of more than 0 bytes (the message stays
    /// claimed); `Request` when the message was received already;
    /// `Finalized`, `ThreadLevel`.
    pub unsafe fn imrecv(
        &self,
        message: Message,
        buf: *mut u8,
        len: usize,
    ) -> Result<RequestId, Error> {
        Self::check_buffer(buf, len)?;
        let mut state = self.enter()?;
        let context = self.context_of(message.comm)?;
        let (slot, done) = state.board.take(message.comm);
        let args = RecvArgs {
            buf,
            len,
            source: 0,
            tag: 0,
            context,
            done,
        };
        // SAFETY: the caller keeps the buffer valid and untouched until
        // the request completes (this function's contract); the slot stays
        // until read or the request freed.
        let started = unsafe { self.pml.imrecv(message.handle, &args) };
        match started {
            Ok((handle, st)) => {
                Ok(self.recv_started(&mut state, message.comm, slot, handle, &st, false))
            }
            Err(why) => {
                state.board.give_back(slot);
                Err(Error::new(
                    ErrorClass::Request,
                    format!("cannot receive the matched message: {why}"),
                ))
            }
        }
    }
}
