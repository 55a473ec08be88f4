//! Statuses and request ids: what a receive reports, and how a request
//! of this process is named (a pml handle with its completion slot, or
//! the outcome of an operation that completed as it started).

use oxmpi_framework_pml::module::RequestStatus;

/// The outcome of a receive or probe (`MPI_Status`); sends report zeros.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct Status {
    /// Rank of the sender in the communicator used.
    pub source: i32,
    /// Tag of the message.
    pub tag: i32,
    /// Bytes received (a probe: the message's length).
    pub count: usize,
    /// Whether the request was cancelled.
    pub cancelled: bool,
}

impl Status {
    /// The status of a request the pml reports with `st`, its source the
    /// sender's rank in the request's communicator (`source`).
    pub(super) fn of_request(st: &RequestStatus, source: i32) -> Status {
        Status {
            source,
            tag: st.tag,
            count: st.count,
            cancelled: st.cancelled,
        }
    }
}

/// A request of this process: a pml handle (with the completion slot the
/// pml publishes it in, for the requests this layer starts), or an
/// operation that completed without error while it started, with its
/// outcome.
///
/// Three words, each written whole: the caller reads the value right
/// after the call, and a word assembled from narrower stores cannot be
/// forwarded to that read (the processor waits for the stores to land).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct RequestId {
    /// The pml's handle; 0 for an operation complete at its start.
    handle: u64,
    /// The outcome of an operation complete at its start: source (high
    /// half) and tag (low half). For a pending one: its completion slot
    /// plus 1 (0: none; the pml is asked).
    source_tag: u64,
    /// Its byte count, with `cancelled` in the top bit.
    count_cancelled: u64,
}

/// The `cancelled` bit of [`RequestId::count_cancelled`].
const CANCELLED_BIT: u64 = 1 << 63;

/// The handle of a [`RequestId::in_slot`] (not 0, not a collective's).
pub(super) const BY_SLOT: u64 = u64::MAX >> 1;

/// The handle a completion slot records for a receive that completed at
/// its start and keeps its status in the slot
/// ([`Runtime::irecv_held`](super::Runtime::irecv_held)): the pml holds
/// nothing under it.
pub(super) const HELD: u64 = (u64::MAX >> 1) - 1;

impl RequestId {
    /// A request the pml holds under `handle` (not 0), without a
    /// completion slot.
    pub fn pending(handle: u64) -> Self {
        RequestId {
            handle,
            source_tag: 0,
            count_cancelled: 0,
        }
    }

    /// A request the pml holds under `handle` (not 0) and publishes in
    /// completion slot `slot` of the runtime's board.
    pub(super) fn pending_in(handle: u64, slot: u32) -> Self {
        RequestId {
            handle,
            source_tag: u64::from(slot) + 1,
            count_cancelled: 0,
        }
    }

    /// The completion slot of a pending request, if it has one.
    #[inline]
    pub(super) fn slot(&self) -> Option<u32> {
        if self.handle == 0 || self.source_tag == 0 {
            return None;
        }
        Some((self.source_tag - 1) as u32)
    }

    /// The number of the completion slot a pending request of a send or
    /// receive this runtime started is published in (`None` for one
    /// complete at its start, a collective's, or one of
    /// [`RequestId::pending`]). The number names the request while it is
    /// held: [`RequestId::in_slot`] gives it back.
    #[inline]
    pub fn slot_number(&self) -> Option<u32> {
        self.slot()
    }

    /// The request published in completion slot `slot` (a number
    /// [`RequestId::slot_number`] answered). Its [`RequestId::handle`] is
    /// a placeholder: the runtime reads the pml's handle from the slot.
    /// Once the request is released, waits and tests of this id fail with
    /// `Request` (until the slot is taken by another request).
    #[inline]
    pub fn in_slot(slot: u32) -> Self {
        RequestId {
            handle: BY_SLOT,
            source_tag: u64::from(slot) + 1,
            count_cancelled: 0,
        }
    }

    /// An operation that completed without error while it started.
    pub fn completed(status: Status) -> Self {
        RequestId {
            handle: 0,
            source_tag: (u64::from(status.source as u32) << 32) | u64::from(status.tag as u32),
            count_cancelled: status.count as u64 | if status.cancelled { CANCELLED_BIT } else { 0 },
        }
    }

    /// The pml's handle (0 for an operation complete at its start).
    #[inline]
    pub fn handle(&self) -> u64 {
        self.handle
    }

    /// The outcome, if the operation completed while it started (nothing
    /// then needs to wait for it or release it).
    #[inline]
    pub fn outcome(&self) -> Option<Status> {
        (self.handle == 0).then_some(Status {
            source: (self.source_tag >> 32) as u32 as i32,
            tag: self.source_tag as u32 as i32,
            count: (self.count_cancelled & !CANCELLED_BIT) as usize,
            cancelled: self.count_cancelled & CANCELLED_BIT != 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{RequestId, Status};

    #[test]
    fn a_completed_request_id_keeps_its_whole_status() {
        for status in [
            Status::default(),
            Status {
                source: 3,
                tag: 17,
                count: 8,
                cancelled: false,
            },
            Status {
                source: i32::MAX,
                tag: i32::MAX,
                count: (1 << 63) - 1,
                cancelled: true,
            },
            Status {
                source: -1,
                tag: -1,
                count: 0,
                cancelled: true,
            },
        ] {
            let id = RequestId::completed(status);
            assert_eq!(id.handle(), 0);
            assert_eq!(id.outcome(), Some(status));
        }
    }

    #[test]
    fn a_pending_request_id_has_no_outcome() {
        let id = RequestId::pending(0x5_0000_0007);
        assert_eq!(id.handle(), 0x5_0000_0007);
        assert_eq!(id.outcome(), None);
        assert_ne!(id, RequestId::pending(0x6_0000_0007));
        assert_eq!(id.slot_number(), None, "no completion slot");
    }

    #[test]
    fn a_slotted_request_id_is_named_by_its_slot() {
        for slot in [0, 1, 255, 256, u32::MAX - 1, u32::MAX] {
            let started = RequestId::pending_in(0x9_0000_0001, slot);
            assert_eq!(started.slot_number(), Some(slot));
            let named = RequestId::in_slot(slot);
            assert_eq!(named.slot_number(), Some(slot));
            assert_eq!(named.outcome(), None);
            assert_eq!(
                named.handle() & super::super::nbc::NB_BIT,
                0,
                "not a collective's"
            );
        }
        let done = RequestId::completed(Status::default());
        assert_eq!(done.slot_number(), None);
    }
}
