//! The algorithms as non-blocking collectives: over a non-blocking
//! transport their futures give control back while messages are in
//! flight, so one rank can drive several collectives at once (each over
//! its own transport and tag), in any interleaving, and every result is
//! still the sequential reference.

mod common;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use common::{check, seed, Case};
use oxmpi_collectives::testkit::{self, Options};
use oxmpi_collectives::{
    allgather_ring, allreduce_recursive_doubling, alltoall_pairwise, barrier_dissemination,
    bcast_binomial, reduce_binomial, CollError, ElementType, Op, Reduction, SendBuf, Transport,
};

type Collective<'a> = Pin<Box<dyn Future<Output = Result<Vec<u8>, CollError>> + 'a>>;

const COUNT: usize = 37;

fn block(rank: u32, len: usize) -> Vec<u8> {
    common::bytes(seed(&[rank.into(), len as u64, 11]), len)
}

/// Every rank starts a barrier, an allreduce, a reduce, a bcast, an
/// alltoall and an allgather at once, each over a fork of its transport
/// with a tag of its own, and polls them in turn (the first `skew` polls
/// of rank `r` go to collective `r % 6` only, so ranks progress them in
/// different orders).
fn six_at_once(size: u32, synchronous_sends: bool) {
    let options = Options {
        nonblocking: true,
        synchronous_sends,
        ..Options::default()
    };
    let sum = Case::Pre(Op::Sum, ElementType::Int32);
    let results = testkit::run_with(&options, size, |t| {
        let rank = t.rank();
        let n = size as usize;
        let mine = sum.input(seed(&[rank.into(), 5]), COUNT);
        let mut transports: Vec<_> = (0..6).map(|_| t.fork()).collect();
        let mut it = transports.iter_mut();
        let (tb, ta, tr, tc, tt, tg) = (
            it.next().unwrap(),
            it.next().unwrap(),
            it.next().unwrap(),
            it.next().unwrap(),
            it.next().unwrap(),
            it.next().unwrap(),
        );
        let mine_a = mine.clone();
        let mine_r = mine.clone();
        let futures: Vec<Collective<'_>> = vec![
            Box::pin(async move { barrier_dissemination(tb, -1).await.map(|()| Vec::new()) }),
            Box::pin(async move {
                let mut out = vec![0; mine_a.len()];
                let mut op = Reduction::Predefined {
                    op: Op::Sum,
                    ty: ElementType::Int32,
                };
                allreduce_recursive_doubling(ta, SendBuf::Buf(&mine_a), &mut out, &mut op, -2)
                    .await
                    .map(|()| out)
            }),
            Box::pin(async move {
                let mut out = vec![0; mine_r.len()];
                let mut op = Reduction::Predefined {
                    op: Op::Sum,
                    ty: ElementType::Int32,
                };
                let root = size - 1;
                reduce_binomial(tr, SendBuf::Buf(&mine_r), &mut out, root, &mut op, -3)
                    .await
                    .map(|()| out)
            }),
            Box::pin(async move {
                let mut buf = if rank == 0 {
                    block(99, 1000)
                } else {
                    vec![0; 1000]
                };
                bcast_binomial(tc, &mut buf, 0, -4).await.map(|()| buf)
            }),
            Box::pin(async move {
                let send = block(rank, 3 * n);
                let mut out = vec![0; 3 * n];
                alltoall_pairwise(tt, SendBuf::Buf(&send), &mut out, -5)
                    .await
                    .map(|()| out)
            }),
            Box::pin(async move {
                let send = block(rank, 5);
                let mut out = vec![0; 5 * n];
                allgather_ring(tg, SendBuf::Buf(&send), &mut out, -6)
                    .await
                    .map(|()| out)
            }),
        ];
        let mut futures = futures;
        // Skew: poll only one collective for a while first.
        let first = rank as usize % futures.len();
        let mut cx = Context::from_waker(Waker::noop());
        let mut early = None;
        for _ in 0..50 {
            match futures[first].as_mut().poll(&mut cx) {
                Poll::Ready(v) => {
                    early = Some(v);
                    break;
                }
                Poll::Pending => {}
            }
        }
        let mut outs = if let Some(early) = early {
            let mut rest: Vec<Collective<'_>> = Vec::new();
            let mut taken = None;
            for (i, f) in futures.into_iter().enumerate() {
                if i == first {
                    taken = Some(f);
                } else {
                    rest.push(f);
                }
            }
            drop(taken);
            let mut outs = testkit::drive(rest, Duration::from_secs(20));
            outs.insert(first, early);
            outs
        } else {
            testkit::drive(futures, Duration::from_secs(20))
        };
        for t in &transports {
            t.assert_idle();
        }
        let outs: Vec<Vec<u8>> = outs.drain(..).map(|r| r.unwrap()).collect();
        outs
    });
    let inputs: Vec<Vec<u8>> = (0..size)
        .map(|r| sum.input(seed(&[r.into(), 5]), COUNT))
        .collect();
    let total = sum.fold(&inputs);
    for (rank, outs) in results.iter().enumerate() {
        let rank = rank as u32;
        let ctx = format!("size {size} rank {rank} synchronous {synchronous_sends}");
        check(&outs[1], &total, format!("allreduce, {ctx}"));
        if rank == size - 1 {
            check(&outs[2], &total, format!("reduce at the root, {ctx}"));
        }
        check(&outs[3], &block(99, 1000), format!("bcast, {ctx}"));
        let want: Vec<u8> = (0..size)
            .flat_map(|src| {
                block(src, 3 * size as usize)[3 * rank as usize..3 * rank as usize + 3].to_vec()
            })
            .collect();
        check(&outs[4], &want, format!("alltoall, {ctx}"));
        let want: Vec<u8> = (0..size).flat_map(|r| block(r, 5)).collect();
        check(&outs[5], &want, format!("allgather, {ctx}"));
    }
}

#[test]
fn six_collectives_at_once_with_synchronous_sends() {
    for size in 1..=8 {
        six_at_once(size, true);
    }
}

#[test]
fn six_collectives_at_once_with_eager_sends() {
    for size in 1..=8 {
        six_at_once(size, false);
    }
}

/// An error in a non-blocking collective (a message of the wrong length)
/// completes the future with the error, and no request is left behind.
#[test]
fn a_length_mismatch_fails_the_future() {
    let options = Options {
        nonblocking: true,
        ..Options::default()
    };
    let results = testkit::run_with(&options, 2, |t| {
        let len = if t.rank() == 0 { 8 } else { 4 };
        let mut buf = vec![1u8; len];
        let out = testkit::drive(
            vec![Box::pin(bcast_binomial(t, &mut buf, 0, -1))],
            Duration::from_secs(20),
        );
        out.into_iter().next().unwrap()
    });
    assert!(results[0].is_ok());
    assert!(
        matches!(
            results[1],
            Err(CollError::Length {
                expected: 4,
                actual: 8,
                ..
            })
        ),
        "{:?}",
        results[1]
    );
}

/// A non-blocking collective gives control back while its messages are in
/// flight: rank 0 polls its part of a bcast from rank 1 before rank 1 has
/// started it, and rank 1 starts only once rank 0's future has answered
/// `Pending` (a future that blocked would never let it).
#[test]
fn a_collective_gives_control_back_while_waiting() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let options = Options {
        nonblocking: true,
        ..Options::default()
    };
    let pending_seen = AtomicBool::new(false);
    let results = testkit::run_with(&options, 2, |t| {
        let mut buf = if t.rank() == 1 {
            vec![5u8; 64]
        } else {
            vec![0u8; 64]
        };
        if t.rank() == 0 {
            let mut future = Box::pin(bcast_binomial(t, &mut buf, 1, -1));
            let mut cx = Context::from_waker(Waker::noop());
            assert!(future.as_mut().poll(&mut cx).is_pending());
            pending_seen.store(true, Ordering::Release);
            testkit::drive(vec![future], Duration::from_secs(20))
                .pop()
                .unwrap()
                .unwrap();
        } else {
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            while !pending_seen.load(Ordering::Acquire) {
                assert!(
                    std::time::Instant::now() < deadline,
                    "rank 0's bcast never gave control back"
                );
                std::thread::yield_now();
            }
            testkit::drive(
                vec![Box::pin(bcast_binomial(t, &mut buf, 1, -1))],
                Duration::from_secs(20),
            )
            .pop()
            .unwrap()
            .unwrap();
        }
        buf
    });
    assert_eq!(results, vec![vec![5u8; 64]; 2]);
}
