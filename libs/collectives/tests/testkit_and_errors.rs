//! The test transport's own guarantees (order, lengths, deadlock and
//! leftover detection, eager mode), and argument errors.

mod common;

use oxmpi_collectives::block_on;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use common::{bytes, check, Case};
use oxmpi_collectives::testkit::{self, Options};
use oxmpi_collectives::{
    allreduce_rabenseifner, allreduce_ring, alltoall_bruck, bcast_binomial, bcast_linear, exchange,
    recv, reduce_linear, send, CollError, ElementType, Op, Reduction, SendBuf, Transport,
};

fn panic_message(f: impl FnOnce()) -> String {
    let payload = catch_unwind(AssertUnwindSafe(f)).expect_err("expected a panic");
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

fn quick() -> Options {
    Options {
        timeout: Duration::from_millis(300),
        ..Options::default()
    }
}

#[test]
fn messages_on_one_tag_keep_their_order() {
    testkit::run(2, |t| {
        if t.rank() == 0 {
            for i in 0..5u8 {
                block_on(send(t, 1, -3, &[i; 3])).unwrap();
            }
        } else {
            let mut bufs = [[9u8; 3]; 5];
            let mut recvs: Vec<(u32, &mut [u8])> =
                bufs.iter_mut().map(|b| (0, &mut b[..])).collect();
            block_on(exchange(t, -3, &[], &mut recvs)).unwrap();
            for (i, b) in bufs.iter().enumerate() {
                assert_eq!(b, &[i as u8; 3]);
            }
        }
    });
}

#[test]
fn tags_are_matched_exactly() {
    let eager = Options {
        synchronous_sends: false,
        ..quick()
    };
    testkit::run_with(&eager, 2, |t| {
        if t.rank() == 0 {
            block_on(send(t, 1, -1, b"one")).unwrap();
            block_on(send(t, 1, -2, b"two")).unwrap();
        } else {
            // Received in the other order: the tags keep them apart.
            let (mut a, mut b) = ([0u8; 3], [0u8; 3]);
            block_on(recv(t, 0, -2, &mut b)).unwrap();
            block_on(recv(t, 0, -1, &mut a)).unwrap();
            assert_eq!((&a, &b), (b"one", b"two"));
        }
    });
}

#[test]
fn a_wrong_length_is_an_error() {
    let results = testkit::run(2, |t| {
        if t.rank() == 0 {
            block_on(send(t, 1, -1, &[1, 2, 3, 4])).map_err(|e| e.to_string())
        } else {
            let mut buf = [0u8; 3];
            match block_on(recv(t, 0, -1, &mut buf)) {
                Err(CollError::Length {
                    from: 0,
                    tag: -1,
                    expected: 3,
                    actual: 4,
                }) => Ok(()),
                other => Err(format!("{other:?}")),
            }
        }
    });
    assert!(results.iter().all(Result::is_ok), "{results:?}");
}

#[test]
fn ranks_disagreeing_on_a_length_get_a_length_error() {
    let results = testkit::run(3, |t| {
        let mut buf = vec![0u8; if t.rank() == 0 { 4 } else { 3 }];
        block_on(bcast_linear(t, &mut buf, 0, -1))
    });
    assert!(results[0].is_ok());
    assert!(matches!(results[1], Err(CollError::Length { .. })));
    assert!(matches!(results[2], Err(CollError::Length { .. })));
}

#[test]
fn a_deadlock_panics_with_what_was_waited_for() {
    let message = panic_message(|| {
        testkit::run_with(&quick(), 2, |t| {
            let peer = 1 - t.rank();
            let mut buf = [0u8; 8];
            block_on(recv(t, peer, -5, &mut buf)).unwrap();
        });
    });
    assert!(message.contains("deadlock"), "{message}");
    assert!(message.contains("receive from rank"), "{message}");
    assert!(message.contains("tag -5 (8 bytes)"), "{message}");
}

#[test]
fn a_synchronous_send_without_a_receive_deadlocks() {
    let message = panic_message(|| {
        testkit::run_with(&quick(), 2, |t| {
            if t.rank() == 0 {
                block_on(send(t, 1, -1, b"lost")).unwrap();
            }
        });
    });
    assert!(
        message.contains("send to rank 1 tag -1 (4 bytes), not received yet"),
        "{message}"
    );
}

#[test]
fn an_unreceived_eager_message_fails_the_run() {
    let eager = Options {
        synchronous_sends: false,
        ..quick()
    };
    let message = panic_message(|| {
        testkit::run_with(&eager, 2, |t| {
            if t.rank() == 0 {
                block_on(send(t, 1, -1, b"lost")).unwrap();
            }
        });
    });
    assert!(message.contains("never received"), "{message}");
    assert!(
        message.contains("to rank 1 from rank 0 tag -1"),
        "{message}"
    );
}

#[test]
fn a_request_never_waited_fails_the_run() {
    static DATA: [u8; 4] = [1, 2, 3, 4];
    let eager = Options {
        synchronous_sends: false,
        ..quick()
    };
    let message = panic_message(|| {
        testkit::run_with(&eager, 2, |t| {
            if t.rank() == 0 {
                // SAFETY: `DATA` is a static: readable forever.
                let _req = unsafe { t.isend(1, -1, DATA.as_ptr(), DATA.len()) }.unwrap();
            } else {
                let mut buf = [0u8; 4];
                block_on(recv(t, 0, -1, &mut buf)).unwrap();
            }
        });
    });
    assert!(message.contains("never waited"), "{message}");
}

#[test]
fn a_panicking_rank_releases_the_others() {
    let message = panic_message(|| {
        testkit::run(3, |t| {
            if t.rank() == 2 {
                panic!("rank two fails");
            }
            let mut buf = [0u8; 1];
            // Waits for rank 2, which never sends: released by its panic.
            block_on(recv(t, 2, -1, &mut buf)).unwrap();
        });
    });
    assert_eq!(message, "rank two fails");
}

#[test]
fn algorithms_run_with_eager_sends_and_a_dyn_transport() {
    let eager = Options {
        synchronous_sends: false,
        ..Options::default()
    };
    for size in 1..=8 {
        testkit::run_with(&eager, size, |t| {
            let t: &mut dyn Transport = t;
            let mut buf = if t.rank() == 0 {
                bytes(1, 100)
            } else {
                vec![0; 100]
            };
            block_on(bcast_binomial(t, &mut buf, 0, -1)).unwrap();
            check(&buf, &bytes(1, 100), "bcast");
            let input: Vec<u8> = (0..size * 3).map(|i| (i + t.rank() * 7) as u8).collect();
            let mut out = vec![0; input.len()];
            block_on(alltoall_bruck(t, SendBuf::Buf(&input), &mut out, -2)).unwrap();
            let rank = t.rank();
            let want: Vec<u8> = (0..size)
                .flat_map(|from| (0..3).map(move |k| (rank * 3 + k + from * 7) as u8))
                .collect();
            check(&out, &want, "alltoall");
            let x = Case::MatMul.input(t.rank().into(), 5);
            let mut r = vec![0; x.len()];
            Case::MatMul
                .with(|op| block_on(allreduce_ring(t, SendBuf::Buf(&x), &mut r, op, -3)))
                .unwrap();
            let inputs: Vec<Vec<u8>> = (0..size).map(|q| Case::MatMul.input(q.into(), 5)).collect();
            check(&r, &Case::MatMul.fold(&inputs), "allreduce");
        });
    }
}

#[test]
fn argument_errors_come_before_any_message() {
    testkit::run(3, |t| {
        let mut buf = [0u8; 4];
        assert!(matches!(
            block_on(bcast_binomial(t, &mut buf, 3, -1)),
            Err(CollError::InvalidArgument(_))
        ));
        // MPI_SUM is not defined on MPI_C_BOOL.
        let mut op = Reduction::Predefined {
            op: Op::Sum,
            ty: ElementType::Bool,
        };
        let x = [1u8; 4];
        let err = block_on(allreduce_rabenseifner(
            t,
            SendBuf::Buf(&x),
            &mut buf,
            &mut op,
            -1,
        ))
        .unwrap_err();
        assert!(matches!(err, CollError::Reduce(_)), "{err}");
        // Not a whole number of 4-byte elements.
        let mut op = Reduction::Predefined {
            op: Op::Sum,
            ty: ElementType::Int32,
        };
        let mut odd = [0u8; 6];
        let err = block_on(allreduce_ring(
            t,
            SendBuf::Buf(&[0; 6]),
            &mut odd,
            &mut op,
            -1,
        ))
        .unwrap_err();
        assert!(matches!(err, CollError::InvalidArgument(_)), "{err}");
        // IN_PLACE off the root of a reduce.
        if t.rank() != 0 {
            let err =
                block_on(reduce_linear(t, SendBuf::InPlace, &mut buf, 0, &mut op, -1)).unwrap_err();
            assert!(matches!(err, CollError::InvalidArgument(_)), "{err}");
        }
        assert_eq!(t.messages_sent(), 0);
    });
}

#[test]
fn a_user_operation_error_is_returned() {
    let results = testkit::run(2, |t| {
        let mut apply =
            |_: &[u8], _: &mut [u8]| -> Result<(), CollError> { Err(CollError::User("no".into())) };
        let mut op = Reduction::User {
            elem_size: 2,
            commutative: false,
            apply: &mut apply,
        };
        let x = [0u8; 4];
        let mut out = [0u8; 4];
        block_on(reduce_linear(t, SendBuf::Buf(&x), &mut out, 0, &mut op, -1))
    });
    assert!(matches!(results[0], Err(CollError::User(_))));
    assert!(results[1].is_ok());
}
