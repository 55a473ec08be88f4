//! The endpoint against libfabric's own providers in this process: the
//! matching of arrived messages, and a scalable endpoint's lanes.

use super::*;

/// Two endpoints of `provider` in this process, each with `contexts`
/// context pairs (1: plain endpoints).
fn pair(provider: &str, contexts: usize) -> (Endpoint, Endpoint, FiAddr, FiAddr) {
    let list = InfoList::query(&Hints {
        provider: Some(provider.to_string()),
        scalable: contexts > 1,
        ..Hints::default()
    })
    .unwrap();
    let info = list.find(provider).expect("provider answers");
    let mut a = Endpoint::open(info, 8, contexts).unwrap();
    let mut b = Endpoint::open(info, 8, contexts).unwrap();
    assert_eq!((a.lanes(), b.lanes()), (contexts, contexts));
    let (na, nb) = (a.name().unwrap(), b.name().unwrap());
    let b_at_a = a.insert(&nb).unwrap();
    let a_at_b = b.insert(&na).unwrap();
    (a, b, b_at_a, a_at_b)
}

fn wait_one(e: &mut Endpoint, other: &mut Endpoint) -> Completion {
    let mut out = Vec::new();
    for _ in 0..1_000_000 {
        let mut scratch = Vec::new();
        let _ = other.read_completions(&mut scratch);
        if e.read_completions(&mut out).unwrap() > 0 {
            return out[0];
        }
    }
    panic!("no completion");
}

fn poll_both(a: &mut Endpoint, b: &mut Endpoint) {
    let mut scratch = Vec::new();
    let _ = a.read_completions(&mut scratch);
    let _ = b.read_completions(&mut scratch);
}

#[test]
fn a_message_that_arrived_first_matches_a_receive_through_its_ignore_bits() {
    let provider = "tcp;ofi_rxm";
    let (mut a, mut b, b_at_a, _) = pair(provider, 1);
    let msg = *b"early!!!";
    let mut ctx = new_context();
    // The sync bit (32) set in the message, ignored by the receive.
    // SAFETY: `msg` and `ctx` outlive the completion read below.
    while !unsafe { a.send(0, msg.as_ptr(), 8, b_at_a, 0x1_0000_0005, None, &mut ctx) }.unwrap() {
        poll_both(&mut a, &mut b);
    }
    for _ in 0..1000 {
        poll_both(&mut a, &mut b);
    }
    let mut got = [0u8; 8];
    let mut rctx = new_context();
    // SAFETY: `got` and `rctx` outlive the completion read below.
    while !unsafe { b.recv(0, got.as_mut_ptr(), 8, NO_ADDRESS, 5, 1 << 32, &mut rctx) }.unwrap() {
        poll_both(&mut a, &mut b);
    }
    let c = wait_one(&mut b, &mut a);
    assert_eq!(c.error, None);
    assert_eq!(c.tag, 0x1_0000_0005);
    assert_eq!(&got, &msg);
}

#[test]
fn a_scalable_endpoint_delivers_each_lane_to_the_same_lane_of_its_peer() {
    let provider = "sockets";
    let (mut a, mut b, b_at_a, a_at_b) = pair(provider, 4);
    // A receive on lane 1 that the message to lane 2 must not reach,
    // and the directed one on lane 2 that it must.
    let mut wrong = [0u8; 8];
    let mut right = [0u8; 8];
    let (mut wctx, mut rctx, mut sctx) = (new_context(), new_context(), new_context());
    // SAFETY: the buffers and contexts outlive the completions read
    // below (the lane-1 receive is cancelled and its completion read).
    unsafe {
        assert!(b
            .recv(1, wrong.as_mut_ptr(), 8, NO_ADDRESS, 7, 0, &mut wctx)
            .unwrap());
        assert!(b
            .recv(2, right.as_mut_ptr(), 8, a_at_b, 7, 0, &mut rctx)
            .unwrap());
    }
    let msg = *b"lane two";
    // SAFETY: as above.
    while !unsafe { a.send(2, msg.as_ptr(), 8, b_at_a, 7, None, &mut sctx) }.unwrap() {
        poll_both(&mut a, &mut b);
    }
    let c = wait_one(&mut b, &mut a);
    assert_eq!(
        c.context, &mut rctx as *mut OpContext,
        "lane 2's receive completed"
    );
    assert_eq!((c.error, c.len, c.tag), (None, 8, 7));
    assert_eq!(&right, &msg);
    assert_eq!(wrong, [0u8; 8], "lane 1's receive saw nothing");
    b.cancel(1, &mut wctx);
    let c = wait_one(&mut b, &mut a);
    assert_eq!(c.context, &mut wctx as *mut OpContext);
    assert_eq!(c.error.map(|(e, _)| e), Some(ofi::FI_ECANCELED));
}
