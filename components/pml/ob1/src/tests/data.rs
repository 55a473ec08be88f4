//! Data integrity and ordering.

use oxmpi_framework_pml::module::{RequestError, SendMode, ANY_SOURCE, ANY_TAG};

use super::fake::{btl, module, pattern, Order, World};

/// Two modules of one btl, equal latency (eager round-robin over both),
/// bandwidth 3:1.
fn two_lanes(eager: usize, rndv: usize, max_send: usize) -> World {
    let mut a = module("tcp0", 100, 10, 3000);
    let mut b = module("tcp1", 100, 10, 1000);
    for m in [&mut a, &mut b] {
        m.eager_limit = eager;
        m.rndv_eager_limit = rndv;
        m.max_send_size = max_send;
    }
    World::new(2, vec![btl("tcp", vec![a, b])], 8)
}

/// Every size from 0 to 70 KiB with a 64 KiB eager limit (so both sides of
/// it), over two striped modules delivering in a random order, payloads
/// queued (read at delivery), every 7th send refused; receives posted
/// before and after the message, every 5th send synchronous.
#[test]
fn every_size_up_to_70k_around_the_eager_limit() {
    let mut w = two_lanes(64 << 10, 4 << 10, 2 << 10);
    w.order(Order::Random(0x5eed));
    {
        let mut net = w.net.borrow_mut();
        net.queue_payloads = true;
        net.wouldblock_every = 7;
    }
    let max = 70 << 10;
    let data = pattern(max + 200, 1);
    let mut rbuf = vec![0u8; max + 16];
    for size in 0..=max {
        let off = size % 97;
        let msg = &data[off..off + size];
        rbuf[size..size + 16].fill(0xEE);
        let mode = if size % 5 == 0 {
            SendMode::Synchronous
        } else {
            SendMode::Standard
        };
        let tag = (size % 3) as i32;
        let (s, r) = if size % 2 == 0 {
            let r = w.irecv_into(1, rbuf.as_mut_ptr(), size + 16, 0, tag);
            (w.isend(0, 1, msg, tag, mode).unwrap(), r)
        } else {
            let s = w.isend(0, 1, msg, tag, mode).unwrap();
            (s, w.irecv_into(1, rbuf.as_mut_ptr(), size + 16, 0, tag))
        };
        w.run_until("a message", |w| w.done(0, s) && w.done(1, r));
        let st = w.test(1, r).unwrap();
        assert_eq!((st.source, st.tag, st.count), (0, tag, size), "size {size}");
        assert_eq!(st.error, RequestError::None);
        assert!(rbuf[..size] == *msg, "data of size {size}");
        assert!(
            rbuf[size..size + 16].iter().all(|&b| b == 0xEE),
            "overrun at size {size}"
        );
        assert_eq!(w.test(0, s).unwrap().error, RequestError::None);
        w.engines[0].free(s);
        w.engines[1].free(r);
    }
    w.settle();
    for e in &w.engines {
        assert_eq!(e.stats().live_requests, 0);
    }
    let net = w.net.borrow();
    let (a, b) = (net.stat(0, 0, 0), net.stat(0, 0, 1));
    // Eager messages alternate between the two modules.
    assert!(a.matches > 20_000 && b.matches > 20_000, "{a:?} {b:?}");
    // Every FRAG landed directly in the receive buffer.
    assert!(a.frag_bytes + b.frag_bytes > 0);
    assert_eq!(a.direct_bytes + b.direct_bytes, a.frag_bytes + b.frag_bytes);
    assert!(
        net.max_queued <= 8,
        "pipeline depth exceeded: {}",
        net.max_queued
    );
}

/// Powers of two up to 8 MiB and odd sizes, striped over two modules.
#[test]
fn powers_of_two_to_8mib_and_odd_sizes_striped() {
    let mut w = two_lanes(4096, 1024, 64 << 10);
    w.order(Order::Random(42));
    w.net.borrow_mut().queue_payloads = true;
    let mut sizes: Vec<usize> = (0..=23).map(|k| 1usize << k).collect();
    for k in 4..=23 {
        sizes.push((1 << k) - 1);
        sizes.push((1 << k) + 1);
    }
    sizes.extend([3, 1000, 12_345, 999_999, 3_000_001]);
    let data = pattern(8 << 20 | 1, 2);
    let mut rbuf = vec![0u8; (8 << 20) + 1];
    for (i, &size) in sizes.iter().enumerate() {
        let msg = &data[..size];
        let r = w.irecv(1, &mut rbuf[..size], 0, i as i32);
        let s = w.isend(0, 1, msg, i as i32, SendMode::Standard).unwrap();
        w.run_until("a large message", |w| w.done(0, s) && w.done(1, r));
        assert_eq!(w.test(1, r).unwrap().count, size);
        assert!(rbuf[..size] == *msg, "data of size {size}");
        w.engines[0].free(s);
        w.engines[1].free(r);
    }
    assert!(w.net.borrow().max_queued > 1, "no pipelining happened");
}

/// ANY_SOURCE/ANY_TAG receives get one sender's messages in send order,
/// whether posted before or after they arrive; with two senders each
/// sender's order holds.
#[test]
fn wildcard_receives_get_messages_in_send_order() {
    let mut w = World::new(3, vec![btl("tcp", vec![module("tcp0", 100, 10, 1000)])], 8);
    w.order(Order::Random(7));
    let n = 60;
    let msgs: Vec<Vec<u8>> = (0..n).map(|i| pattern(i * 150, i as u64)).collect();
    // Half the receives posted before anything is sent.
    let mut bufs: Vec<Vec<u8>> = (0..2 * n).map(|_| vec![0u8; 10_000]).collect();
    let mut recvs = Vec::new();
    let (early, late) = bufs.split_at_mut(n);
    for b in early.iter_mut() {
        recvs.push(w.irecv(1, b, ANY_SOURCE, ANY_TAG));
    }
    let mut sends = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        for from in [0, 2] {
            sends.push((
                from,
                w.isend(from, 1, m, (i % 4) as i32, SendMode::Standard)
                    .unwrap(),
            ));
        }
    }
    w.settle();
    for b in late.iter_mut() {
        recvs.push(w.irecv(1, b, ANY_SOURCE, ANY_TAG));
    }
    w.settle();
    let mut next = [0usize; 3];
    for (k, &r) in recvs.iter().enumerate() {
        let st = w.test(1, r).expect("receive complete");
        let from = st.source as usize;
        let i = next[from];
        next[from] += 1;
        assert_eq!(st.tag, (i % 4) as i32);
        assert_eq!(st.count, msgs[i].len());
        assert!(
            bufs[k][..st.count] == msgs[i][..],
            "message {i} from {from}"
        );
    }
    assert_eq!(next, [n, 0, n]);
    for (from, s) in sends {
        assert!(w.done(from, s));
    }
}

/// Eager messages alternate over two modules and the later module's
/// channel always delivers first, so messages arrive out of order; the
/// receiver still matches them in send order (eager and rendezvous mixed).
#[test]
fn non_overtaking_holds_when_striped_modules_reorder() {
    let mut w = two_lanes(2048, 512, 4096);
    w.order(Order::HighModuleFirst);
    w.net.borrow_mut().burst = 64;
    let sizes: Vec<usize> = (0..200)
        .map(|i| [10, 3000, 700, 0, 2048, 2049, 9000][i % 7])
        .collect();
    let msgs: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &s)| pattern(s, i as u64 + 9))
        .collect();
    let sends: Vec<u64> = msgs
        .iter()
        .map(|m| w.isend(0, 1, m, 5, SendMode::Standard).unwrap())
        .collect();
    // Half posted now (some messages are in flight), half after arrival.
    let mut bufs: Vec<Vec<u8>> = (0..msgs.len()).map(|_| vec![0u8; 9000]).collect();
    let mut recvs = Vec::new();
    let (a, b) = bufs.split_at_mut(100);
    for buf in a.iter_mut() {
        recvs.push(w.irecv(1, buf, 0, ANY_TAG));
    }
    w.settle();
    for buf in b.iter_mut() {
        recvs.push(w.irecv(1, buf, 0, ANY_TAG));
    }
    w.settle();
    for (i, &r) in recvs.iter().enumerate() {
        let st = w.test(1, r).unwrap();
        assert_eq!(st.count, sizes[i], "message {i}");
        assert!(
            bufs[i][..sizes[i]] == msgs[i][..],
            "message {i} out of order"
        );
    }
    for s in sends {
        assert!(w.done(0, s));
    }
    let net = w.net.borrow();
    let seqs: Vec<u64> = net
        .arrivals
        .iter()
        .filter(|a| a.0 == 0)
        .map(|a| a.2)
        .collect();
    assert!(
        seqs.windows(2).any(|p| p[1] < p[0]),
        "the network did not reorder; the test proves nothing"
    );
}

/// 10,000 small messages arrive before any receive; then receives take
/// them all. A second flood reuses the pooled buffers.
#[test]
fn ten_thousand_unexpected_small_messages() {
    let mut w = World::new(2, vec![btl("tcp", vec![module("tcp0", 100, 10, 1000)])], 8);
    w.net.borrow_mut().burst = 256;
    let n = 10_000;
    let msgs: Vec<Vec<u8>> = (0..n).map(|i| pattern(i % 65, i as u64)).collect();
    let mut allocations = Vec::new();
    for round in 0..2 {
        let sends: Vec<u64> = msgs
            .iter()
            .enumerate()
            .map(|(i, m)| {
                w.isend(0, 1, m, (i % 10) as i32, SendMode::Standard)
                    .unwrap()
            })
            .collect();
        w.settle();
        assert_eq!(w.engines[1].stats().unexpected, n, "round {round}");
        for s in sends {
            assert!(w.done(0, s));
            w.engines[0].free(s);
        }
        let mut buf = [0u8; 64];
        for (i, m) in msgs.iter().enumerate() {
            let r = w.irecv(1, &mut buf, 0, (i % 10) as i32);
            let st = w.test(1, r).expect("matched at once");
            assert_eq!(st.count, m.len());
            assert_eq!(&buf[..m.len()], &m[..], "message {i}");
            w.engines[1].free(r);
        }
        assert_eq!(w.engines[1].stats().unexpected, 0);
        assert_eq!(w.engines[1].stats().live_requests, 0);
        allocations.push(w.engines[1].stats().pool_allocations);
    }
    assert!(allocations[0] > 0);
    assert_eq!(allocations[1], allocations[0], "the second flood allocated");
}

/// Zero-byte messages, eager and synchronous, with null buffers.
#[test]
fn zero_byte_messages_with_null_buffers() {
    let mut w = World::new(2, vec![btl("tcp", vec![module("tcp0", 100, 10, 1000)])], 8);
    for mode in [SendMode::Standard, SendMode::Synchronous] {
        let args = oxmpi_framework_pml::module::SendArgs {
            buf: std::ptr::null(),
            len: 0,
            dest: 1,
            tag: 3,
            context: 0,
            mode,
            done: std::ptr::null(),
        };
        // SAFETY: no bytes are read.
        let s = unsafe { w.engines[0].isend(&args) }.unwrap();
        let r = w.irecv_into(1, std::ptr::null_mut(), 0, 0, 3);
        w.run_until("empty message", |w| w.done(0, s) && w.done(1, r));
        let st = w.test(1, r).unwrap();
        assert_eq!((st.count, st.error), (0, RequestError::None));
    }
}

/// One round of each kind of traffic: eager to a posted receive, eager
/// unexpected, rendezvous, synchronous.
fn traffic_round(w: &mut World, small: &[u8], big: &[u8], sbuf: &mut [u8], bbuf: &mut [u8]) {
    let r = w.irecv(1, sbuf, 0, 1);
    let s = w.isend(0, 1, small, 1, SendMode::Standard).unwrap();
    w.run_until("posted eager", |w| w.done(0, s) && w.done(1, r));
    w.free(0, s);
    w.free(1, r);

    let s = w.isend(0, 1, small, 2, SendMode::Standard).unwrap();
    w.settle();
    let r = w.irecv(1, sbuf, 0, 2);
    w.run_until("unexpected eager", |w| w.done(0, s) && w.done(1, r));
    w.free(0, s);
    w.free(1, r);

    let r = w.irecv(1, bbuf, ANY_SOURCE, ANY_TAG);
    let s = w.isend(0, 1, big, 3, SendMode::Standard).unwrap();
    w.run_until("rendezvous", |w| w.done(0, s) && w.done(1, r));
    w.free(0, s);
    w.free(1, r);

    let s = w.isend(0, 1, small, 4, SendMode::Synchronous).unwrap();
    let r = w.irecv(1, sbuf, 0, 4);
    w.run_until("synchronous", |w| w.done(0, s) && w.done(1, r));
    w.free(0, s);
    w.free(1, r);
}

/// Once warm, the engine allocates nothing for eager, unexpected,
/// rendezvous and synchronous traffic (the fake network's own allocations
/// are not counted).
#[test]
fn steady_state_traffic_allocates_nothing() {
    let mut w = two_lanes(4096, 1024, 8192);
    w.net.borrow_mut().queue_payloads = true;
    let small = pattern(200, 1);
    let big = pattern(100_000, 2);
    let mut sbuf = vec![0u8; 200];
    let mut bbuf = vec![0u8; 100_000];
    for _ in 0..50 {
        traffic_round(&mut w, &small, &big, &mut sbuf, &mut bbuf);
    }
    let before = super::alloc::allocations();
    for _ in 0..300 {
        traffic_round(&mut w, &small, &big, &mut sbuf, &mut bbuf);
    }
    assert_eq!(
        super::alloc::allocations() - before,
        0,
        "allocations in steady state"
    );
    assert!(sbuf == small && bbuf == big);
    // The counter works: a first contact with a new peer allocates.
    let mut w3 = World::new(3, vec![btl("tcp", vec![module("tcp0", 100, 10, 1000)])], 8);
    let before = super::alloc::allocations();
    let _ = w3.isend(2, 0, &small, 0, SendMode::Standard).unwrap();
    assert!(super::alloc::allocations() > before);
}
