//! Request records: a slab with generation-checked `u64` handles.
//!
//! A handle is `generation << 32 | slot`. A slot's generation starts at 1
//! and changes each time the slot is released, so a stale handle (a freed
//! request, or one whose slot was reused) is refused, and no valid handle
//! is 0 (which the wire protocol uses as "no request"). Generations stay
//! below 2^30, so a handle's two top bits are always clear: bit 63 the pml
//! interface leaves to the MPI layer, bit 62 marks the handles of light
//! receives, which [`Requests`] keeps beside the records (see [`crate::light`]).

use oxmpi_framework_pml::module::{publish_completion, Completion, RequestError, RequestStatus};

use crate::light::{Light, Lights, Named, GENERATION_MASK};

/// The protocol a send uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// One MATCH fragment with the whole message.
    Eager,
    /// RNDV with the first bytes, ACK, then FRAGs (or puts and a FIN).
    Rendezvous,
    /// RGET with the buffer's address; the receiver gets the message and
    /// answers FIN (or an ACK, falling back to FRAGs).
    Rget,
}

/// A send in progress.
#[derive(Debug)]
pub(crate) struct SendReq {
    /// The message (valid until the request completes).
    pub buf: *const u8,
    /// Its length.
    pub len: usize,
    /// Receiver's job rank.
    pub dest: u32,
    /// Tag.
    pub tag: i32,
    /// Context id.
    pub context: u32,
    /// Synchronous mode.
    pub sync: bool,
    /// Sequence number on (context, dest).
    pub sequence: u64,
    /// Eager or rendezvous.
    pub protocol: Protocol,
    /// The lane (of the peer's route) of the first fragment.
    pub lane: usize,
    /// Bytes the first fragment carries.
    pub first_len: usize,
    /// Whether the btl accepted the first fragment.
    pub started: bool,
    /// Whether the receiver's ACK arrived (rendezvous).
    pub acked: bool,
    /// The receiver's request id (from the ACK).
    pub receiver: u64,
    /// Bytes to send in all (after the ACK: what the receiver wants).
    pub end: usize,
    /// Offset of the next FRAG.
    pub next: usize,
    /// Fragments and puts a btl still reads (returned `Queued`, no
    /// `on_send_done`/`on_rdma_done` yet).
    pub outstanding: u32,
    /// Address of the receive buffer to put into (from the ACK, when the
    /// route offers put); 0: FRAGs.
    pub put_addr: u64,
    /// Whether the FIN after the puts was queued.
    pub fin_queued: bool,
    /// Whether the RNDV tells the receiver the sender can put.
    pub offer_put: bool,
}

/// Where a receive stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RecvPhase {
    /// Posted in the matcher, not matched.
    Posted,
    /// Matched a rendezvous from `peer`: FRAGs fill the buffer.
    Rendezvous {
        /// The sender.
        peer: u32,
        /// Bytes the receive takes (`min(message, buffer)`).
        wanted: usize,
        /// Bytes of those that arrived.
        received: usize,
    },
    /// Matched a RGET from `peer`: gets fill the buffer from the
    /// sender's, then a FIN tells the sender.
    Get {
        /// The sender.
        peer: u32,
        /// The sender's request id (for the FIN).
        sender: u64,
        /// Address of the sender's buffer.
        remote: u64,
        /// Bytes the receive takes (`min(message, buffer)`).
        wanted: usize,
        /// Offset of the next get.
        next: usize,
        /// Gets a btl still runs (returned `Queued`, no `on_rdma_done`).
        outstanding: u32,
    },
    /// Finished (complete).
    Done,
}

/// A receive in progress.
#[derive(Debug)]
pub(crate) struct RecvReq {
    /// The buffer.
    pub buf: *mut u8,
    /// Its capacity.
    pub capacity: usize,
    /// Source asked for (job rank or `ANY_SOURCE`).
    pub source: i32,
    /// Tag asked for (or `ANY_TAG`).
    pub tag: i32,
    /// The phase.
    pub phase: RecvPhase,
    /// The light handle this receive was promoted from (0: none): the
    /// matcher and the caller know it by that handle, released with it.
    pub light: u64,
}

impl RecvReq {
    /// The id the matcher knows receive `handle` by.
    #[inline]
    pub(crate) fn matcher_id(&self, handle: u64) -> u64 {
        if self.light != 0 {
            self.light
        } else {
            handle
        }
    }
}

/// Either kind.
#[derive(Debug)]
pub(crate) enum Op {
    /// A send.
    Send(SendReq),
    /// A receive.
    Recv(RecvReq),
}

/// Why a request completed in error (the sentence is built on demand).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// No error.
    None,
    /// The message (`len` bytes) was longer than the receive buffer.
    Truncated {
        /// The message's length.
        len: usize,
    },
    /// The peer failed (its reason is kept with the peer).
    PeerFailed {
        /// The failed peer.
        peer: u32,
    },
    /// Another failure, with its sentence.
    Message(String),
}

/// One request.
#[derive(Debug)]
pub(crate) struct Request {
    /// The operation.
    pub op: Op,
    /// Whether it completed.
    pub complete: bool,
    /// Freed by the caller before completing: released when it completes.
    pub detached: bool,
    /// Status (valid once complete).
    pub status: RequestStatus,
    /// Error detail (valid once complete).
    pub failure: Failure,
    /// The caller's completion slot (null: none, or freed by the caller);
    /// see [`Completion`].
    pub done: *const Completion,
}

impl Request {
    /// A new, incomplete request that publishes its completion in `done`
    /// (null: none).
    pub(crate) fn new(op: Op, done: *const Completion) -> Request {
        Request {
            op,
            complete: false,
            detached: false,
            status: RequestStatus::default(),
            failure: Failure::None,
            done,
        }
    }

    /// Marks it complete (its status set) and publishes that in its
    /// completion slot; true if it is to be released now: the caller
    /// freed it already, or its slot received its error-free status.
    #[inline]
    pub(crate) fn mark_complete(&mut self) -> bool {
        self.complete = true;
        // SAFETY: `done` is the slot the request started with, valid until
        // published or until the caller frees the request, which clears it
        // (the `Completion` contract).
        self.detached || unsafe { publish_completion(self.done, &self.status) }
    }

    /// The caller freed the request: it is released once complete, and
    /// its slot is never written again.
    #[inline]
    pub(crate) fn detach(&mut self) {
        self.detached = true;
        self.done = std::ptr::null();
    }
}

struct Slot {
    generation: u32,
    req: Option<Request>,
}

/// The slab of requests, and the light receives beside it.
#[derive(Default)]
pub(crate) struct Requests {
    slots: Vec<Slot>,
    free: Vec<u32>,
    live: usize,
    light: Lights,
    /// Light receives promoted to full requests so far.
    promotions: u64,
}

#[inline]
fn split(handle: u64) -> (usize, u32) {
    ((handle & 0xffff_ffff) as usize, (handle >> 32) as u32)
}

impl Requests {
    /// Stores a request; returns its handle (never 0).
    #[inline]
    #[cfg(test)]
    pub(crate) fn insert(&mut self, req: Request) -> u64 {
        self.insert_with(|| req)
    }

    /// Stores the request `make` builds, building it in its slot (a
    /// request is large: built elsewhere and moved, it costs a `memcpy`);
    /// returns its handle (never 0).
    #[inline(always)]
    pub(crate) fn insert_with(&mut self, make: impl FnOnce() -> Request) -> u64 {
        self.live += 1;
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                let i = u32::try_from(self.slots.len()).expect("more than 2^32 live requests");
                self.slots.push(Slot {
                    generation: 1,
                    req: None,
                });
                i
            }
        };
        let slot = &mut self.slots[index as usize];
        // A free slot holds `None` (nothing to drop), so the request is
        // written in place.
        slot.req.get_or_insert_with(make);
        (u64::from(slot.generation) << 32) | u64::from(index)
    }

    /// The handle the next [`insert_with`](Self::insert_with) returns
    /// (for a btl cookie given before the request is made).
    #[inline]
    pub(crate) fn vacant(&self) -> u64 {
        match self.free.last() {
            Some(&i) => (u64::from(self.slots[i as usize].generation) << 32) | u64::from(i),
            None => (1 << 32) | self.slots.len() as u64,
        }
    }

    /// The request with this handle, if it is live.
    #[inline]
    pub(crate) fn get(&self, handle: u64) -> Option<&Request> {
        let (i, g) = split(handle);
        let slot = self.slots.get(i)?;
        if slot.generation != g {
            return None;
        }
        slot.req.as_ref()
    }

    /// The request with this handle, if it is live, mutably.
    #[inline]
    pub(crate) fn get_mut(&mut self, handle: u64) -> Option<&mut Request> {
        let (i, g) = split(handle);
        let slot = self.slots.get_mut(i)?;
        if slot.generation != g {
            return None;
        }
        slot.req.as_mut()
    }

    /// Releases a request (dropped in its slot, not moved out); its handle
    /// becomes stale. False if the handle was not live.
    #[inline]
    pub(crate) fn remove(&mut self, handle: u64) -> bool {
        let (i, g) = split(handle);
        let Some(slot) = self.slots.get_mut(i) else {
            return false;
        };
        if slot.generation != g || slot.req.is_none() {
            return false;
        }
        self.vacate(i);
        true
    }

    /// Empties live slot `i` (dropping its request in place) and makes its
    /// handle stale, and the light handle of a promoted receive with it.
    #[inline]
    fn vacate(&mut self, i: usize) {
        if let Some(Request {
            op: Op::Recv(RecvReq { light, .. }),
            ..
        }) = self.slots[i].req
        {
            if light != 0 {
                self.light.vacate(light);
            }
        }
        let slot = &mut self.slots[i];
        slot.req = None;
        slot.generation = (slot.generation + 1) & GENERATION_MASK;
        slot.generation = slot.generation.max(1);
        self.free.push(i as u32);
        self.live -= 1;
    }

    /// In one lookup: the status of request `handle` once it is complete
    /// (`Ok(None)` while it runs), and its release if it completed without
    /// error (one in error stays, for its sentence). `Err` for a handle
    /// that is not live or was freed by its caller.
    #[inline]
    pub(crate) fn take_complete(&mut self, handle: u64) -> Result<Option<RequestStatus>, ()> {
        let (i, g) = split(handle);
        let slot = self.slots.get_mut(i).ok_or(())?;
        if slot.generation != g {
            return Err(());
        }
        let r = slot.req.as_ref().ok_or(())?;
        if r.detached {
            return Err(());
        }
        if !r.complete {
            return Ok(None);
        }
        let status = r.status;
        if status.error == RequestError::None {
            self.vacate(i);
        }
        Ok(Some(status))
    }

    /// Handles of all live requests (for the rare whole-table walks).
    pub(crate) fn handles(&self) -> Vec<u64> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.req.is_some())
            .map(|(i, s)| (u64::from(s.generation) << 32) | i as u64)
            .collect()
    }

    /// Number of live requests: records, and light receives still posted
    /// (a promoted one is counted by its record).
    pub(crate) fn live(&self) -> usize {
        self.live + self.light.posted()
    }

    /// Entries of the light slab in use: posted receives and the aliases
    /// of promoted ones.
    pub(crate) fn light_entries(&self) -> usize {
        self.light.used()
    }

    /// Light receives promoted to full requests so far.
    pub(crate) fn promotions(&self) -> u64 {
        self.promotions
    }

    /// Stores a posted light receive; returns its handle.
    #[inline(always)]
    pub(crate) fn insert_light(&mut self, light: Light) -> u64 {
        self.light.insert(light)
    }

    /// What light handle `handle` names.
    #[inline(always)]
    pub(crate) fn named(&self, handle: u64) -> Named {
        self.light.named(handle)
    }

    /// Releases the posted light receive at `index` (completed through
    /// its slot).
    #[inline(always)]
    pub(crate) fn release_light(&mut self, index: usize) {
        self.light.vacate_at(index);
    }

    /// Releases light handle `handle`: the posted receive, or the request
    /// it was promoted to.
    pub(crate) fn remove_light(&mut self, handle: u64) {
        match self.light.named(handle) {
            Named::Posted { index, .. } => self.light.vacate_at(index),
            Named::Promoted(full) => {
                self.remove(full);
            }
            Named::Unknown => {}
        }
    }

    /// The full request of light handle `handle`: the one it was promoted
    /// to, or a new one made now from the posted receive (still posted in
    /// the matcher under `handle`). `None` for an unknown handle.
    pub(crate) fn promote(&mut self, handle: u64) -> Option<u64> {
        let (index, l) = match self.light.named(handle) {
            Named::Posted { index, light } => (index, light),
            Named::Promoted(full) => return Some(full),
            Named::Unknown => return None,
        };
        let full = self.insert_with(|| {
            Request::new(
                Op::Recv(RecvReq {
                    buf: l.buf,
                    capacity: l.capacity,
                    source: l.source,
                    tag: l.tag,
                    phase: RecvPhase::Posted,
                    light: handle,
                }),
                l.done,
            )
        });
        self.light.promote_at(index, full);
        self.promotions += 1;
        Some(full)
    }

    /// The light receives from `source` still posted (for the walk when a
    /// peer is lost).
    pub(crate) fn light_posted_from(&self, source: i32) -> Vec<u64> {
        self.light.posted_from(source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recv() -> Request {
        Request::new(
            Op::Recv(RecvReq {
                buf: std::ptr::null_mut(),
                capacity: 0,
                source: 0,
                tag: 0,
                phase: RecvPhase::Posted,
                light: 0,
            }),
            std::ptr::null(),
        )
    }

    #[test]
    fn handles_are_generation_checked() {
        let mut r = Requests::default();
        let a = r.insert(recv());
        assert_ne!(a, 0);
        assert!(r.get(a).is_some());
        assert!(r.remove(a));
        assert!(r.get(a).is_none());
        assert!(!r.remove(a));
        let next = r.vacant();
        let b = r.insert(recv());
        assert_eq!(b, next, "vacant names the next handle");
        assert_eq!(a & 0xffff_ffff, b & 0xffff_ffff, "slot reused");
        assert_eq!(r.vacant(), 1 << 32 | 1, "a new slot's handle");
        assert_ne!(a, b);
        assert!(r.get(a).is_none());
        assert!(r.get_mut(b).is_some());
        assert_eq!(r.handles(), vec![b]);
        assert_eq!(r.live(), 1);
        assert!(r.get(0).is_none());
        assert!(r.get(u64::MAX).is_none());
    }
}
