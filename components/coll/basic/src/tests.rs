//! The basic component: declarations, what it takes, and every operation
//! through its choice of algorithm (`call::run`), run over the in-memory
//! transport for communicator sizes 2 to 8 on both sides of the crossover,
//! against sequential references.

use super::*;
use abi_stable::std_types::RSlice;
use oxmpi_collectives::{testkit, Transport};
use oxmpi_framework_coll::module::{CollKind, ElementCode, OpCode, UserOp};

#[test]
fn parameter_declarations_are_valid_for_the_core() {
    BasicParams::check_declarations().unwrap();
    assert_eq!(
        BasicParams::default(),
        BasicParams {
            priority: 10,
            crossover: 4
        }
    );
    for decl in BasicParams::DECLS {
        let full = format!("coll_basic_{}", decl.name);
        assert_eq!(oxmpi_mca::registry::check_decl(&full, decl), None, "{full}");
    }
}

/// Sizes and crossovers: every size with the linear algorithms (crossover
/// above it) and with the logarithmic ones (crossover 2).
fn cases() -> Vec<(u32, u32)> {
    (2..=8).flat_map(|n| [(n, 1000), (n, 2)]).collect()
}

/// Element `i` of rank `r`'s data.
fn val(r: u32, i: usize) -> i64 {
    i64::from(r + 1) * 1_000_003 + i as i64 * 7919
}

fn i64_bytes(v: &[i64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

fn i64s(b: &[u8]) -> Vec<i64> {
    b.chunks_exact(8)
        .map(|c| i64::from_ne_bytes(c.try_into().unwrap()))
        .collect()
}

/// Runs `call` as built by `make` on every rank of a communicator of `n`;
/// each rank's receive buffer afterwards.
fn run_all<F>(n: u32, crossover: u32, make: F) -> Vec<Vec<u8>>
where
    F: Fn(u32, &mut Vec<u8>, &mut Vec<u8>) -> CollCall<'static> + Sync,
{
    testkit::run(n, |t| {
        let (mut send, mut recv) = (Vec::new(), Vec::new());
        let mut call = make(t.rank(), &mut send, &mut recv);
        if call.kind == CollKind::Bcast {
            call.send = recv.as_ptr();
        } else if !call.send.is_null() {
            call.send = send.as_ptr();
        }
        call.recv = if recv.is_empty() {
            std::ptr::null_mut()
        } else {
            recv.as_mut_ptr()
        };
        // SAFETY: the buffers live across the call and have the lengths
        // the call's fields give.
        oxmpi_collectives::block_on(unsafe { call::run(t, &call, crossover, -20) }).unwrap();
        recv
    })
}

/// A call of `kind` marked to use the send buffer (its pointer is set by
/// `run_all`).
fn with_send(kind: CollKind) -> CollCall<'static> {
    let mut c = CollCall::new(kind);
    c.send = std::ptr::NonNull::dangling().as_ptr();
    c
}

#[test]
fn allreduce_sums_and_keeps_rank_order_for_a_non_commutative_operation() {
    for (n, crossover) in cases() {
        for count in [0usize, 3, 1000] {
            let want: Vec<i64> = (0..count)
                .map(|i| (0..n).map(|r| val(r, i)).sum())
                .collect();
            let got = run_all(n, crossover, |r, send, recv| {
                *send = i64_bytes(&(0..count).map(|i| val(r, i)).collect::<Vec<_>>());
                *recv = vec![0; count * 8];
                let mut c = with_send(CollKind::Allreduce);
                c.count = count;
                c.element = ElementCode::Int64;
                c.op = OpCode::Sum;
                c
            });
            for (r, g) in got.iter().enumerate() {
                assert_eq!(
                    i64s(g),
                    want,
                    "n {n} crossover {crossover} count {count} rank {r}"
                );
            }
            // In place.
            let got = run_all(n, crossover, |r, _, recv| {
                *recv = i64_bytes(&(0..count).map(|i| val(r, i)).collect::<Vec<_>>());
                let mut c = CollCall::new(CollKind::Allreduce);
                c.count = count;
                c.element = ElementCode::Int64;
                c.op = OpCode::Sum;
                c
            });
            assert!(got.iter().all(|g| i64s(g) == want), "in place, n {n}");
        }
        // The left projection reduces to rank 0's values in rank order.
        let got = run_all(n, crossover, |r, send, recv| {
            *send = i64_bytes(&[val(r, 0), val(r, 1)]);
            *recv = vec![0; 16];
            let mut c = with_send(CollKind::Allreduce);
            c.count = 2;
            c.element = ElementCode::User;
            c.op = OpCode::User;
            c.user = left_projection();
            c
        });
        assert!(
            got.iter().all(|g| i64s(g) == [val(0, 0), val(0, 1)]),
            "n {n}"
        );
    }
}

/// `inout = input`: associative, not commutative.
fn left_projection() -> UserOp {
    unsafe extern "C" fn left(
        _: *mut std::ffi::c_void,
        input: *const u8,
        inout: *mut u8,
        count: usize,
    ) -> bool {
        // SAFETY: the component passes `count` 8-byte elements at both.
        unsafe { std::ptr::copy(input, inout, count * 8) };
        true
    }
    UserOp {
        func: Some(left),
        ctx: std::ptr::null_mut(),
        elem_size: 8,
        commutative: false,
    }
}

#[test]
fn rooted_operations_reach_and_leave_every_root() {
    for (n, crossover) in cases() {
        let count = 5usize;
        for root in 0..n {
            // bcast
            let got = run_all(n, crossover, |r, _, recv| {
                *recv = if r == root {
                    vec![9; count]
                } else {
                    vec![0; count]
                };
                let mut c = CollCall::new(CollKind::Bcast);
                c.count = count;
                c.root = root;
                c
            });
            assert!(
                got.iter().all(|g| g == &vec![9u8; count]),
                "bcast n {n} root {root}"
            );
            // reduce (max over i64)
            let got = run_all(n, crossover, |r, send, recv| {
                *send = i64_bytes(
                    &(0..count)
                        .map(|i| val(r, i) * if i % 2 == 0 { 1 } else { -1 })
                        .collect::<Vec<_>>(),
                );
                *recv = if r == root {
                    vec![0; count * 8]
                } else {
                    Vec::new()
                };
                let mut c = with_send(CollKind::Reduce);
                c.count = count;
                c.element = ElementCode::Int64;
                c.op = OpCode::Max;
                c.root = root;
                c
            });
            let want: Vec<i64> = (0..count)
                .map(|i| {
                    (0..n)
                        .map(|r| val(r, i) * if i % 2 == 0 { 1 } else { -1 })
                        .max()
                        .unwrap()
                })
                .collect();
            assert_eq!(i64s(&got[root as usize]), want, "reduce n {n} root {root}");
            // gather, then scatter it back
            let got = run_all(n, crossover, |r, send, recv| {
                *send = vec![r as u8; count];
                *recv = if r == root {
                    vec![0; count * n as usize]
                } else {
                    Vec::new()
                };
                let mut c = with_send(CollKind::Gather);
                c.count = count;
                c.root = root;
                c
            });
            let all: Vec<u8> = (0..n).flat_map(|r| vec![r as u8; count]).collect();
            assert_eq!(got[root as usize], all, "gather n {n} root {root}");
            let got = run_all(n, crossover, |r, send, recv| {
                *send = if r == root { all.clone() } else { Vec::new() };
                *recv = vec![0; count];
                let mut c = CollCall::new(CollKind::Scatter);
                if r == root {
                    c.send = std::ptr::NonNull::dangling().as_ptr();
                }
                c.count = count;
                c.root = root;
                c
            });
            for (r, g) in got.iter().enumerate() {
                assert_eq!(
                    g,
                    &vec![r as u8; count],
                    "scatter n {n} root {root} rank {r}"
                );
            }
        }
    }
}

#[test]
fn v_operations_place_uneven_blocks() {
    for (n, crossover) in cases() {
        // Rank r contributes r + 1 bytes at displacement 2 * r * (r + 1) / 2 + r.
        let counts: Vec<usize> = (0..n as usize).map(|r| r + 1).collect();
        let displs: Vec<usize> = (0..n as usize).map(|r| r * (r + 1) / 2 + r).collect();
        let extent = displs[n as usize - 1] + counts[n as usize - 1];
        let mut want = vec![0u8; extent];
        for r in 0..n as usize {
            want[displs[r]..displs[r] + counts[r]].fill(r as u8 + 1);
        }
        let (c_ref, d_ref): (&'static [usize], &'static [usize]) = (
            Box::leak(counts.clone().into_boxed_slice()),
            Box::leak(displs.clone().into_boxed_slice()),
        );
        for kind in [CollKind::Gatherv, CollKind::Allgatherv] {
            let got = run_all(n, crossover, |r, send, recv| {
                *send = vec![r as u8 + 1; r as usize + 1];
                let at_root = kind == CollKind::Allgatherv || r == 0;
                *recv = if at_root { vec![0; extent] } else { Vec::new() };
                let mut c = with_send(kind);
                c.count = r as usize + 1;
                c.counts = RSlice::from_slice(c_ref);
                c.displs = RSlice::from_slice(d_ref);
                c
            });
            assert_eq!(got[0], want, "{kind:?} n {n}");
            if kind == CollKind::Allgatherv {
                assert!(got.iter().all(|g| g == &want), "{kind:?} n {n}");
            }
        }
        let got = run_all(n, crossover, |r, send, recv| {
            *send = if r == 0 { want.clone() } else { Vec::new() };
            *recv = vec![0; r as usize + 1];
            let mut c = CollCall::new(CollKind::Scatterv);
            if r == 0 {
                c.send = std::ptr::NonNull::dangling().as_ptr();
            }
            c.count = r as usize + 1;
            c.counts = RSlice::from_slice(c_ref);
            c.displs = RSlice::from_slice(d_ref);
            c
        });
        for (r, g) in got.iter().enumerate() {
            assert_eq!(g, &vec![r as u8 + 1; r + 1], "scatterv n {n} rank {r}");
        }
    }
}

#[test]
fn all_to_all_and_all_gather_move_every_block() {
    for (n, crossover) in cases() {
        let count = 3usize;
        let got = run_all(n, crossover, |r, send, recv| {
            *send = (0..n)
                .flat_map(|j| vec![(r * 16 + j) as u8; count])
                .collect();
            *recv = vec![0; count * n as usize];
            let mut c = with_send(CollKind::Alltoall);
            c.count = count;
            c
        });
        for (me, g) in got.iter().enumerate() {
            let want: Vec<u8> = (0..n)
                .flat_map(|r| vec![(r * 16 + me as u32) as u8; count])
                .collect();
            assert_eq!(g, &want, "alltoall n {n} rank {me}");
        }
        let got = run_all(n, crossover, |r, send, recv| {
            *send = vec![r as u8 + 7; count];
            *recv = vec![0; count * n as usize];
            let mut c = with_send(CollKind::Allgather);
            c.count = count;
            c
        });
        let want: Vec<u8> = (0..n).flat_map(|r| vec![r as u8 + 7; count]).collect();
        assert!(got.iter().all(|g| g == &want), "allgather n {n}");
    }
}

#[test]
fn scans_and_reduce_scatter_give_each_rank_its_part() {
    for (n, crossover) in cases() {
        let count = 4usize;
        let mine = |r: u32| (0..count).map(|i| val(r, i)).collect::<Vec<_>>();
        let prefix = |upto: u32| -> Vec<i64> {
            (0..count)
                .map(|i| (0..upto).map(|r| val(r, i)).sum())
                .collect()
        };
        for kind in [CollKind::Scan, CollKind::Exscan] {
            let got = run_all(n, crossover, |r, send, recv| {
                *send = i64_bytes(&mine(r));
                *recv = vec![0; count * 8];
                let mut c = with_send(kind);
                c.count = count;
                c.element = ElementCode::Int64;
                c.op = OpCode::Sum;
                c
            });
            for (r, g) in got.iter().enumerate() {
                let r = r as u32;
                let want = match kind {
                    CollKind::Scan => prefix(r + 1),
                    _ if r == 0 => vec![0; count],
                    _ => prefix(r),
                };
                assert_eq!(i64s(g), want, "{kind:?} n {n} rank {r}");
            }
        }
        // reduce_scatter_block: rank r gets block r of the sum.
        let got = run_all(n, crossover, |r, send, recv| {
            *send = i64_bytes(
                &(0..count * n as usize)
                    .map(|i| val(r, i))
                    .collect::<Vec<_>>(),
            );
            *recv = vec![0; count * 8];
            let mut c = with_send(CollKind::ReduceScatterBlock);
            c.count = count;
            c.element = ElementCode::Int64;
            c.op = OpCode::Sum;
            c
        });
        for (me, g) in got.iter().enumerate() {
            let want: Vec<i64> = (0..count)
                .map(|i| (0..n).map(|r| val(r, me * count + i)).sum())
                .collect();
            assert_eq!(i64s(g), want, "reduce_scatter_block n {n} rank {me}");
        }
    }
}

#[test]
fn barriers_complete_at_every_size() {
    for (n, crossover) in cases() {
        let got = run_all(n, crossover, |_, _, _| CollCall::new(CollKind::Barrier));
        assert_eq!(got.len(), n as usize);
    }
}

#[test]
fn an_operation_that_does_not_apply_to_the_type_is_refused_before_any_message() {
    let got = testkit::run(2, |t| {
        let mut c = CollCall::new(CollKind::Allreduce);
        let (send, mut recv) = ([0u8; 8], [0u8; 8]);
        c.send = send.as_ptr();
        c.recv = recv.as_mut_ptr();
        c.count = 1;
        c.element = ElementCode::Float64;
        c.op = OpCode::Band;
        // SAFETY: 8-byte buffers for one double.
        oxmpi_collectives::block_on(unsafe { call::run(t, &c, 4, -20) }).unwrap_err()
    });
    assert_eq!(got[0], "MPI_BAND is not defined for MPI_DOUBLE elements");
}

#[test]
fn the_exported_table_takes_communicators_of_two_or_more() {
    use oxmpi_framework_coll::handle::CollHandle;
    use oxmpi_framework_coll::module::CommDesc;
    use oxmpi_plugin_api::reexports::RStr;
    let _kit = oxmpi_plugin_api::testkit::lock();
    static CORE: oxmpi_framework_coll::testkit::NoServices =
        oxmpi_framework_coll::testkit::NoServices;
    let handle = CollHandle::new(&MODULE, oxmpi_plugin_api::testkit::context("coll", "basic"));
    handle.init(&CORE).unwrap();
    let one = [3u32];
    let desc = CommDesc {
        context: 1,
        rank: 0,
        members: RSlice::from_slice(&one),
        name: RStr::from_str("MPI_COMM_SELF"),
    };
    assert_eq!(
        handle.comm_query(&desc).unwrap_err(),
        "MPI_COMM_SELF has one process; the basic component serves communicators of two or more"
    );
    let two = [0u32, 1];
    let world = CommDesc {
        members: RSlice::from_slice(&two),
        name: RStr::from_str("MPI_COMM_WORLD"),
        ..desc
    };
    let answer = handle.comm_query(&world).unwrap();
    assert_eq!((answer.priority, answer.ops), (10, OpSet::ALL));
    // A collective whose sends the MPI layer refuses fails with its words.
    let mut call = CollCall::new(CollKind::Barrier);
    call.count = 0;
    // SAFETY: a live handle; a barrier has no buffers.
    let err = unsafe { handle.run(answer.module, &call) }.unwrap_err();
    assert!(err.contains("no messages in this test"), "{err}");
    // SAFETY: the live handle, no call in progress.
    unsafe { handle.comm_release(answer.module) };
    handle.finalize();
}
