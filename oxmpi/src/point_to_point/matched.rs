//! Matched receives: the [`Message`] a matched probe
//! ([`Source::matched_probe`](super::Source::matched_probe)) took out of
//! matching, which only its own receive can take.

use super::{element_of, exactly_one, finish_receive, Status};
use crate::datatype::stage::Incoming;
use crate::datatype::{contiguous_bytes_mut, BufferMut, Equivalence};
use crate::error::Error;
use oxmpi_mpi_core::Runtime;

/// A message taken out of matching by a matched probe (`MPI_Message`).
/// Receive it with one of the `matched_receive` methods; dropping it
/// unreceived discards it (its bytes are received into a scratch buffer),
/// so it never stays stuck in the MPI layer.
pub struct Message {
    runtime: &'static Runtime,
    /// The MPI layer's message; `None` once received.
    message: Option<oxmpi_mpi_core::Message>,
    /// What the probe found.
    status: Status,
}

impl Message {
    /// The message of a matched probe, and its status.
    pub(super) fn new(
        runtime: &'static Runtime,
        message: oxmpi_mpi_core::Message,
        status: Status,
    ) -> (Message, Status) {
        let m = Message {
            runtime,
            message: Some(message),
            status,
        };
        (m, status)
    }

    /// What the probe found: sender, tag and size.
    pub fn status(&self) -> Status {
        self.status
    }

    /// Receives the message into `len` bytes at `buf`; checks that whole
    /// elements of `element` arrived.
    ///
    /// # Safety
    /// `buf..buf + len` is valid for writes for the duration of the call.
    unsafe fn receive_bytes(
        &mut self,
        buf: *mut u8,
        len: usize,
        element: (usize, &'static str),
    ) -> Result<Status, Error> {
        let Some(m) = self.message.take() else {
            return Err(Error::new(
                crate::ErrorClass::Request,
                "the message was received already",
            ));
        };
        // SAFETY: the caller's promise; the call waits for the receive.
        let id = unsafe { self.runtime.imrecv(m, buf, len) }?;
        finish_receive(self.runtime, id, element)
    }

    /// Receives the message into `buf` (`MPI_Mrecv`).
    ///
    /// # Errors
    /// `Truncate` if the message is longer than `buf` (which then holds its
    /// first bytes); `Buffer` if it is not a whole number of elements;
    /// `ProcFailed`, `Finalized`, `ThreadLevel`.
    pub fn matched_receive_into<B: BufferMut + ?Sized>(
        mut self,
        buf: &mut B,
    ) -> Result<Status, Error> {
        let element = element_of::<B::Item>();
        if B::Item::CONTIGUOUS {
            let bytes = contiguous_bytes_mut(buf.as_items_mut());
            // SAFETY: `bytes` is exclusively borrowed for the whole call.
            return unsafe { self.receive_bytes(bytes.as_mut_ptr(), bytes.len(), element) };
        }
        let items = buf.as_items_mut();
        let len = items.len() * element.0;
        let incoming = Incoming::fresh(items);
        // SAFETY: the staging bytes (`len`) are owned here for the whole
        // call; the buffer stays exclusively borrowed until they are
        // unpacked into it.
        unsafe {
            let status = self.receive_bytes(incoming.ptr, len, element)?;
            incoming.finish(status.bytes);
            Ok(status)
        }
    }

    /// Receives a message of exactly one `T`.
    ///
    /// # Errors
    /// `Buffer` when the message is not one `T`; as
    /// [`matched_receive_into`](Message::matched_receive_into) otherwise.
    pub fn matched_receive<T: Equivalence>(self) -> Result<(T, Status), Error> {
        if self.status.bytes != T::PACKED_SIZE {
            // Refused before receiving: the message is discarded on drop.
            exactly_one::<T>(&self.status)?;
        }
        let mut value = [T::ZERO];
        let status = self.matched_receive_into(&mut value[..])?;
        Ok((value[0], status))
    }

    /// Receives the whole message into a new `Vec` (its size is known from
    /// the probe, so nothing can come in between).
    ///
    /// # Errors
    /// `Buffer` if it is not a whole number of `T`; as
    /// [`matched_receive_into`](Message::matched_receive_into) otherwise.
    pub fn matched_receive_vec<T: Equivalence>(self) -> Result<(Vec<T>, Status), Error> {
        let n = self.status.bytes.div_ceil(T::PACKED_SIZE);
        let mut items = vec![T::ZERO; n];
        let status = self.matched_receive_into(&mut items[..])?;
        Ok((items, status))
    }
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Message")
            .field("received", &self.message.is_none())
            .field("status", &self.status)
            .finish()
    }
}

impl Drop for Message {
    fn drop(&mut self) {
        if self.message.is_some() {
            let mut scratch = vec![0u8; self.status.bytes];
            let len = scratch.len();
            // SAFETY: `scratch` is owned here for the whole call. Errors
            // are dropped: the message is being discarded.
            let _ = unsafe { self.receive_bytes(scratch.as_mut_ptr(), len, (1, "u8")) };
        }
    }
}
