//! Light receives (`crate::light`): a receive posted with a completion
//! slot completes through it when an eager message fits, and is promoted
//! to a full request for everything else — truncation, rendezvous, cancel,
//! free, the loss of its sender — with its handle resolving throughout.

use oxmpi_framework_pml::module::{
    Completed, Completion, RequestError, RequestStatus, SendMode, ANY_SOURCE, ANY_TAG,
};

use super::fake::{btl, module, pattern, World};
use crate::light::is_light;

fn world(size: u32) -> World {
    World::new(
        size,
        vec![btl("tcp", vec![module("tcp0", 100, 10, 1000)])],
        8,
    )
}

fn released(slot: &Completion) -> RequestStatus {
    match slot.read() {
        Completed::Released(st) => st,
        other => panic!("the slot says {other:?}, not released"),
    }
}

/// Live requests of `rank`, after checking that the light slab holds no
/// more entries than that (an alias left behind is a leak).
fn live(w: &World, rank: u32) -> usize {
    let stats = w.engines[rank as usize].stats();
    assert!(
        stats.light_entries <= stats.live_requests,
        "light entries {} outlive the requests ({})",
        stats.light_entries,
        stats.live_requests
    );
    stats.live_requests
}

fn promotions(w: &World, rank: u32) -> u64 {
    w.engines[rank as usize].stats().promotions
}

/// Two receives posted (so none is armed) take eager messages that fit:
/// each lands, its status is published, and nothing is left; the stale
/// handles are unknown afterwards.
#[test]
fn eager_messages_complete_light_receives_through_their_slots() {
    let mut w = world(2);
    let (a, b) = (Completion::new(), Completion::new());
    let (mut ba, mut bb) = (vec![0u8; 16], vec![0u8; 16]);
    let ra = w.irecv_slotted(1, &mut ba, 0, 7, &a);
    let rb = w.irecv_slotted(1, &mut bb, ANY_SOURCE, ANY_TAG, &b);
    assert!(is_light(ra) && is_light(rb));
    assert_eq!(live(&w, 1), 2);
    assert_eq!(w.engines[1].test(ra), None, "a posted light receive runs");
    assert_eq!(w.engines[1].take(rb), None);
    assert_eq!(
        w.engines[1].request_error(ra),
        format!("request {ra:#x} has not completed")
    );
    let (m1, m2) = (pattern(16, 1), pattern(5, 2));
    w.isend(0, 1, &m1, 7, SendMode::Standard).unwrap();
    w.isend(0, 1, &m2, 9, SendMode::Standard).unwrap();
    w.settle();
    let (sa, sb) = (released(&a), released(&b));
    assert_eq!(
        (sa.source, sa.tag, sa.count, sa.cancelled),
        (0, 7, 16, false)
    );
    assert_eq!((sb.source, sb.tag, sb.count), (0, 9, 5));
    assert_eq!(ba, m1);
    assert_eq!(&bb[..5], &m2[..]);
    assert_eq!(live(&w, 1), 0);
    assert_eq!(promotions(&w, 1), 0, "no record was made");
    for h in [ra, rb] {
        assert_eq!(w.engines[1].test(h).unwrap().error, RequestError::Other);
        assert!(!w.engines[1].cancel(h));
        w.free(1, h);
        assert!(w.engines[1]
            .request_error(h)
            .contains("it was freed, or never issued"));
    }
}

/// A message that arrived first is matched when the light receive is
/// posted, and completes it in the same call.
#[test]
fn an_arrived_message_completes_a_light_receive_at_post() {
    let mut w = world(2);
    let msg = pattern(12, 3);
    w.isend(0, 1, &msg, 2, SendMode::Standard).unwrap();
    w.settle();
    let slot = Completion::new();
    let mut buf = vec![0u8; 12];
    w.irecv_slotted(1, &mut buf, 0, 2, &slot);
    assert_eq!(released(&slot).count, 12);
    assert_eq!(buf, msg);
    assert_eq!(live(&w, 1), 0);
    assert_eq!(promotions(&w, 1), 0);
}

/// A truncated eager message promotes the receive: the slot says failed,
/// and the light handle answers the status and sentence until freed.
#[test]
fn truncation_promotes_and_the_light_handle_reports_it() {
    let mut w = world(2);
    let other = Completion::new();
    let mut spare = vec![0u8; 4];
    let keep = w.irecv_slotted(1, &mut spare, 0, 99, &other);
    let slot = Completion::new();
    let mut buf = [0xEEu8; 12];
    let r = w.irecv_slotted(1, &mut buf[..8], 0, 1, &slot);
    let msg = pattern(10, 4);
    w.isend(0, 1, &msg, 1, SendMode::Standard).unwrap();
    w.settle();
    assert_eq!(slot.read(), Completed::Failed);
    assert_eq!(promotions(&w, 1), 1);
    let st = w.engines[1].test(r).expect("complete");
    assert_eq!((st.source, st.tag, st.count), (0, 1, 8));
    assert_eq!(st.error, RequestError::Truncated);
    assert_eq!(&buf[..8], &msg[..8]);
    assert!(buf[8..].iter().all(|&b| b == 0xEE));
    assert_eq!(
        w.engines[1].request_error(r),
        "message of 10 bytes from rank 0 (tag 1) truncated to the 8-byte receive buffer"
    );
    assert_eq!(w.engines[1].take(r).unwrap().error, RequestError::Truncated);
    w.free(1, r);
    assert_eq!(w.engines[1].test(r).unwrap().error, RequestError::Other);
    assert!(w.engines[1].cancel(keep));
    assert!(released(&other).cancelled);
    assert_eq!(live(&w, 1), 0);
}

/// A rendezvous into a light receive (posted first, and arriving first)
/// goes through a promoted request and still completes through the slot.
#[test]
fn a_rendezvous_completes_a_promoted_receive_through_its_slot() {
    for posted_first in [true, false] {
        let mut w = world(2);
        let msg = pattern(20_000, 5);
        let (slot, other) = (Completion::new(), Completion::new());
        let mut buf = vec![0u8; 20_000];
        let mut spare = vec![0u8; 4];
        let keep = w.irecv_slotted(1, &mut spare, 0, 99, &other);
        let mut r = 0;
        if posted_first {
            r = w.irecv_slotted(1, &mut buf, 0, 3, &slot);
        }
        let s = w.isend(0, 1, &msg, 3, SendMode::Standard).unwrap();
        w.settle();
        if !posted_first {
            r = w.irecv_slotted(1, &mut buf, 0, 3, &slot);
        }
        w.settle();
        assert!(is_light(r));
        let st = released(&slot);
        assert_eq!((st.source, st.tag, st.count), (0, 3, 20_000));
        assert!(buf == msg, "the message arrived whole");
        assert_eq!(w.wait(0, s).error, RequestError::None);
        assert_eq!(promotions(&w, 1), 1);
        assert!(w.engines[1].cancel(keep));
        assert_eq!(live(&w, 1), 0, "the record and its alias are gone");
        assert_eq!(w.engines[1].test(r).unwrap().error, RequestError::Other);
    }
}

/// A cancelled light receive publishes a cancelled status and leaves
/// matching: the message sent afterwards waits for another receive.
#[test]
fn cancelling_a_light_receive_publishes_cancelled() {
    let mut w = world(2);
    let slot = Completion::new();
    let mut buf = vec![0xEEu8; 8];
    let r = w.irecv_slotted(1, &mut buf, ANY_SOURCE, 4, &slot);
    assert!(w.engines[1].cancel(r));
    let st = released(&slot);
    assert!(st.cancelled);
    assert_eq!((st.source, st.tag, st.count), (ANY_SOURCE, ANY_TAG, 0));
    assert!(!w.engines[1].cancel(r), "cancelled once");
    assert_eq!(live(&w, 1), 0);
    let msg = pattern(8, 6);
    w.isend(0, 1, &msg, 4, SendMode::Standard).unwrap();
    w.settle();
    assert!(buf.iter().all(|&b| b == 0xEE));
    assert_eq!(w.engines[1].stats().unexpected, 1);
    let mut next = vec![0u8; 8];
    let n = w.irecv(1, &mut next, 0, 4);
    w.wait(1, n);
    assert_eq!(next, msg);
}

/// A light receive freed while posted still receives its message (MPI
/// completes a freed receive), never writes its slot again, and is
/// released when it completes — eager, armed or not, and rendezvous.
#[test]
fn a_freed_light_receive_lands_without_touching_its_slot() {
    for (len, armed) in [(8, true), (8, false), (20_000, false)] {
        let mut w = world(2);
        let other = Completion::new();
        let mut spare = vec![0u8; 4];
        let keep = (!armed).then(|| w.irecv_slotted(1, &mut spare, 0, 99, &other));
        let slot = Completion::new();
        let mut buf = vec![0u8; len];
        let r = w.irecv_slotted(1, &mut buf, 0, 1, &slot);
        w.free(1, r);
        let msg = pattern(len, 7);
        w.isend(0, 1, &msg, 1, SendMode::Standard).unwrap();
        w.settle();
        assert!(buf == msg, "the freed receive landed");
        assert_eq!(slot.read(), Completed::Running, "its slot is untouched");
        assert_eq!(
            w.engines[1].stats().armed_deliveries,
            u64::from(armed),
            "armed: {armed}"
        );
        assert_eq!(promotions(&w, 1), 1, "a free promotes");
        if let Some(k) = keep {
            assert!(w.engines[1].cancel(k));
        }
        assert_eq!(live(&w, 1), 0);
    }
}

/// Losing the sender fails a posted light receive from it (the slot says
/// failed, the handle has the sentence); one from any source stays posted.
#[test]
fn losing_the_sender_fails_a_light_receive_from_it() {
    let mut w = world(3);
    let (slot, any) = (Completion::new(), Completion::new());
    let (mut buf, mut abuf) = (vec![0xEEu8; 8], vec![0u8; 8]);
    let r = w.irecv_slotted(1, &mut buf, 0, 1, &slot);
    let ra = w.irecv_slotted(1, &mut abuf, ANY_SOURCE, 1, &any);
    w.engines[1].on_peer_failed(0, 0, 0, "connection reset");
    assert_eq!(slot.read(), Completed::Failed);
    let st = w.engines[1].test(r).unwrap();
    assert_eq!(st.error, RequestError::PeerFailed);
    assert_eq!((st.source, st.tag), (0, 1));
    assert_eq!(
        w.engines[1].request_error(r),
        "receive from rank 0 (tag 1) failed: rank 0 was lost (tcp0: connection reset)"
    );
    w.free(1, r);
    assert_eq!(any.read(), Completed::Running);
    assert_eq!(w.engines[1].test(ra), None, "any source stays posted");
    let msg = pattern(8, 8);
    w.isend(2, 1, &msg, 1, SendMode::Standard).unwrap();
    w.settle();
    assert_eq!(released(&any).source, 2);
    assert_eq!(abuf, msg);
    assert_eq!(live(&w, 1), 0);
    // A receive posted after the loss fails at once.
    let late = Completion::new();
    let l = w.irecv_slotted(1, &mut buf, 0, 2, &late);
    assert_eq!(late.read(), Completed::Failed);
    assert_eq!(
        w.engines[1].test(l).unwrap().error,
        RequestError::PeerFailed
    );
    w.free(1, l);
    assert_eq!(live(&w, 1), 0);
}

/// The only posted receive is armed with its light handle: the message
/// lands at once through the slot, and settling releases the entry.
#[test]
fn an_armed_light_receive_lands_and_settles() {
    let mut w = world(2);
    let mut buf = vec![0u8; 8];
    for i in 0..3u64 {
        let slot = Completion::new();
        let r = w.irecv_slotted(1, &mut buf, 0, ANY_TAG, &slot);
        let msg = pattern(8, 10 + i);
        w.isend(0, 1, &msg, i as i32, SendMode::Standard).unwrap();
        assert!(w.deliver_one());
        assert_eq!(released(&slot).tag, i as i32);
        assert_eq!(buf, msg);
        assert_eq!(w.engines[1].stats().armed_deliveries, i + 1);
        w.settle();
        assert_eq!(w.engines[1].test(r).unwrap().error, RequestError::Other);
        assert_eq!(live(&w, 1), 0);
        assert_eq!(promotions(&w, 1), 0);
    }
}
