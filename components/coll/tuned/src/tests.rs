//! The tuned component: declarations, the fixed decision, what forces an
//! algorithm and when, the rules file's checks, the note about ignored
//! settings, and every algorithm of every tunable operation run over the
//! in-memory transport against sequential references.

use super::*;
use crate::decide::{fixed, Choice, Source};
use crate::params::{AllreduceAlgorithm, BcastAlgorithm};
use abi_stable::std_types::RSlice;
use oxmpi_collectives::{testkit, Transport};
use oxmpi_framework_coll::handle::core_table;
use oxmpi_framework_coll::module::{ElementCode, OpCode};
use oxmpi_plugin_api::testkit as kit;
use oxmpi_plugin_api::ParamValue;

#[test]
fn parameter_declarations_are_valid_for_the_core() {
    TunedParams::check_declarations().unwrap();
    let d = TunedParams::default();
    assert_eq!((d.priority, d.use_dynamic_rules), (30, false));
    assert!(d.forced().is_empty());
    for decl in TunedParams::DECLS {
        let full = format!("coll_tuned_{}", decl.name);
        assert_eq!(oxmpi_mca::registry::check_decl(&full, decl), None, "{full}");
    }
}

#[test]
fn the_fixed_decision_follows_size_and_message_size() {
    let a = |kind, n, bytes, c| fixed(kind, n, bytes, c).algorithm;
    assert_eq!(a(CollKind::Allreduce, 2, 1 << 20, true), 4, "2 ranks: ring");
    assert_eq!(
        a(CollKind::Allreduce, 2, 8, true),
        3,
        "small: recursive doubling"
    );
    assert_eq!(a(CollKind::Allreduce, 8, 8, true), 3);
    assert_eq!(
        a(CollKind::Allreduce, 8, 1 << 20, true),
        6,
        "large: Rabenseifner"
    );
    assert_eq!(
        a(CollKind::Allreduce, 8, 1 << 20, false),
        3,
        "non-commutative"
    );
    assert_eq!(a(CollKind::Bcast, 8, 8, true), 6);
    assert_eq!(a(CollKind::Bcast, 8, 1 << 20, true), 8);
    assert_eq!(a(CollKind::Bcast, 2, 1 << 20, true), 6);
    assert_eq!(a(CollKind::Barrier, 4, 0, true), 3);
    assert_eq!(a(CollKind::Barrier, 5, 0, true), 7);
    assert_eq!(a(CollKind::Reduce, 8, 1 << 20, true), 3);
    assert_eq!(a(CollKind::Reduce, 8, 1 << 20, false), 5);
    assert_eq!(a(CollKind::Alltoall, 16, 8, true), 3);
    assert_eq!(a(CollKind::Alltoall, 4, 8, true), 1);
    assert_eq!(a(CollKind::Allgather, 4, 8, true), 3);
    assert_eq!(a(CollKind::Allgather, 6, 8, true), 2);
    assert_eq!(a(CollKind::Allgather, 6, 1 << 20, true), 4);
}

fn allreduce_call(count: usize) -> CollCall<'static> {
    let mut c = CollCall::new(CollKind::Allreduce);
    c.count = count;
    c.element = ElementCode::Float64;
    c.op = OpCode::Sum;
    c
}

#[test]
fn an_algorithm_is_forced_only_with_dynamic_rules_and_wins_over_the_rules_file() {
    let mut p = TunedParams {
        allreduce_algorithm: AllreduceAlgorithm::Ring,
        allreduce_algorithm_segmentsize: 4096,
        ..TunedParams::default()
    };
    let call = allreduce_call(1);
    assert_eq!(choose(&p, None, &call, 4).1, Source::Fixed);
    p.use_dynamic_rules = true;
    let rules = RulesFile::parse("1\n2\n1\n2\n1\n0 6 0 0\n", "test").unwrap();
    assert_eq!(
        choose(&p, Some(&rules), &call, 4),
        (
            Choice {
                algorithm: 4,
                segment: 4096
            },
            Source::Forced
        )
    );
    p.allreduce_algorithm = AllreduceAlgorithm::Ignore;
    assert_eq!(choose(&p, Some(&rules), &call, 4).0.algorithm, 6);
    assert_eq!(choose(&p, Some(&rules), &call, 4).1, Source::Rules);
    // Below the file's smallest communicator size: the fixed decision.
    assert_eq!(choose(&p, Some(&rules), &call, 1).1, Source::Fixed);
    // An operation the file does not name: the fixed decision.
    let mut bcast = CollCall::new(CollKind::Bcast);
    bcast.count = 8;
    assert_eq!(choose(&p, Some(&rules), &bcast, 4).1, Source::Fixed);
    p.bcast_algorithm = BcastAlgorithm::BasicLinear;
    assert_eq!(choose(&p, Some(&rules), &bcast, 4).0.algorithm, 1);
}

#[test]
fn a_rules_file_with_an_algorithm_an_operation_lacks_is_refused_with_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rules.conf");
    std::fs::write(&path, "1\n7\n1\n4\n1\n0 2 0 0\n").unwrap();
    let p = TunedParams {
        use_dynamic_rules: true,
        dynamic_rules_filename: path.display().to_string(),
        ..TunedParams::default()
    };
    let err = load_rules(&p).unwrap_err();
    assert_eq!(
        err,
        format!(
            "{}: bcast algorithm 2 (communicator size 4, message size 0) is not one tuned has; it has 1, 3, 6, 8",
            path.display()
        )
    );
    std::fs::write(&path, "1\n7\n1\n4\n1\n0 6 0 0\n").unwrap();
    assert!(load_rules(&p).unwrap().is_some());
    let missing = TunedParams {
        dynamic_rules_filename: dir.path().join("absent").display().to_string(),
        ..p.clone()
    };
    assert!(load_rules(&missing).unwrap_err().contains("absent"));
    let off = TunedParams {
        use_dynamic_rules: false,
        ..missing
    };
    assert!(
        load_rules(&off).unwrap().is_none(),
        "not read without dynamic rules"
    );
}

#[test]
fn rank_0_says_once_that_algorithms_set_without_dynamic_rules_are_not_used() {
    let _lock = kit::lock();
    static CORE: oxmpi_framework_coll::testkit::NoServices =
        oxmpi_framework_coll::testkit::NoServices;
    kit::set_param("coll_tuned_allreduce_algorithm", ParamValue::Int(4));
    kit::set_param("coll_tuned_bcast_algorithm", ParamValue::Int(6));
    let context = kit::context("coll", "tuned");
    let coll = TunedColl::init(&context, Core::new(core_table(&CORE))).unwrap();
    let members = [0u32, 1, 2];
    let world = CommInfo {
        context: 0,
        rank: 0,
        members: &members,
        name: "MPI_COMM_WORLD",
    };
    coll.comm_query(&world).unwrap();
    coll.comm_query(&world).unwrap();
    let notes: Vec<String> = kit::logged_by("coll", "tuned")
        .into_iter()
        .map(|(_, m)| m)
        .filter(|m| m.contains("coll_tuned_use_dynamic_rules is false"))
        .collect();
    kit::clear_param("coll_tuned_allreduce_algorithm");
    kit::clear_param("coll_tuned_bcast_algorithm");
    assert_eq!(
        notes,
        ["warning: coll_tuned_allreduce_algorithm = ring, coll_tuned_bcast_algorithm = binomial are not used because coll_tuned_use_dynamic_rules is false; set coll_tuned_use_dynamic_rules true (e.g. --mca coll_tuned_use_dynamic_rules 1) to use them"]
    );
    let one = [5u32];
    assert!(coll
        .comm_query(&CommInfo {
            context: 1,
            members: &one,
            name: "MPI_COMM_SELF",
            ..world
        })
        .is_err());
}

/// Element `i` of rank `r`'s data.
fn val(r: u32, i: usize) -> f64 {
    f64::from(r + 1) * 1000.0 + i as f64
}

fn f64_bytes(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

fn f64s(b: &[u8]) -> Vec<f64> {
    b.chunks_exact(8)
        .map(|c| f64::from_ne_bytes(c.try_into().unwrap()))
        .collect()
}

/// Runs `kind` with `algorithm` on `n` ranks over the in-memory transport;
/// each rank's receive buffer (the buffer itself for bcast).
fn run_algorithm(kind: CollKind, algorithm: u32, n: u32, count: usize) -> Vec<Vec<u8>> {
    testkit::run(n, |t| {
        let r = t.rank();
        let mine: Vec<f64> = (0..count).map(|i| val(r, i)).collect();
        let (mut send, mut recv): (Vec<u8>, Vec<u8>) = match kind {
            CollKind::Bcast => (
                Vec::new(),
                if r == 1 % n {
                    f64_bytes(&mine)
                } else {
                    vec![0; count * 8]
                },
            ),
            CollKind::Gather => (
                f64_bytes(&mine),
                if r == 0 {
                    vec![0; count * 8 * n as usize]
                } else {
                    Vec::new()
                },
            ),
            CollKind::Scatter => (
                if r == 0 {
                    (0..n)
                        .flat_map(|q| f64_bytes(&(0..count).map(|i| val(q, i)).collect::<Vec<_>>()))
                        .collect()
                } else {
                    Vec::new()
                },
                vec![0; count * 8],
            ),
            CollKind::Allgather => (f64_bytes(&mine), vec![0; count * 8 * n as usize]),
            CollKind::Alltoall => (
                (0..n)
                    .flat_map(|q| {
                        f64_bytes(
                            &(0..count)
                                .map(|i| val(r, i) + f64::from(q) / 8.0)
                                .collect::<Vec<_>>(),
                        )
                    })
                    .collect(),
                vec![0; count * 8 * n as usize],
            ),
            CollKind::Barrier => (Vec::new(), Vec::new()),
            _ => (
                f64_bytes(&mine),
                if kind != CollKind::Reduce || r == 0 {
                    vec![0; count * 8]
                } else {
                    Vec::new()
                },
            ),
        };
        let mut call = CollCall::new(kind);
        call.count = if kind.reduces() { count } else { count * 8 };
        call.element = ElementCode::Float64;
        call.op = OpCode::Sum;
        call.root = if kind == CollKind::Bcast { 1 % n } else { 0 };
        call.send = if kind == CollKind::Bcast {
            recv.as_ptr()
        } else if send.is_empty() {
            std::ptr::null()
        } else {
            send.as_ptr()
        };
        call.recv = if recv.is_empty() {
            std::ptr::null_mut()
        } else {
            recv.as_mut_ptr()
        };
        let _ = &mut send;
        let counts: [usize; 0] = [];
        call.counts = RSlice::from_slice(&counts);
        let choice = Choice {
            algorithm,
            segment: 24,
        };
        // SAFETY: the buffers live across the call with the lengths its
        // fields give.
        oxmpi_collectives::block_on(unsafe { decide::run(t, &call, choice, -20) }).unwrap();
        recv
    })
}

#[test]
fn every_algorithm_of_every_tunable_operation_gives_the_reference_result() {
    let count = 5usize;
    for n in 2..=8u32 {
        let sum: Vec<f64> = (0..count)
            .map(|i| (0..n).map(|r| val(r, i)).sum())
            .collect();
        let all: Vec<f64> = (0..n)
            .flat_map(|r| (0..count).map(move |i| val(r, i)))
            .collect();
        for kind in [
            CollKind::Allreduce,
            CollKind::Reduce,
            CollKind::Bcast,
            CollKind::Barrier,
            CollKind::Gather,
            CollKind::Scatter,
            CollKind::Allgather,
            CollKind::Alltoall,
        ] {
            for &a in valid_algorithms(kind) {
                let got = run_algorithm(kind, a, n, count);
                let what = format!("{kind:?} algorithm {a} on {n}");
                match kind {
                    CollKind::Allreduce => assert!(got.iter().all(|g| f64s(g) == sum), "{what}"),
                    CollKind::Reduce => assert_eq!(f64s(&got[0]), sum, "{what}"),
                    CollKind::Bcast => {
                        let want: Vec<f64> = (0..count).map(|i| val(1 % n, i)).collect();
                        assert!(got.iter().all(|g| f64s(g) == want), "{what}");
                    }
                    CollKind::Barrier => assert_eq!(got.len(), n as usize, "{what}"),
                    CollKind::Gather => assert_eq!(f64s(&got[0]), all, "{what}"),
                    CollKind::Scatter => {
                        for (r, g) in got.iter().enumerate() {
                            let want: Vec<f64> = (0..count).map(|i| val(r as u32, i)).collect();
                            assert_eq!(f64s(g), want, "{what} rank {r}");
                        }
                    }
                    CollKind::Allgather => assert!(got.iter().all(|g| f64s(g) == all), "{what}"),
                    CollKind::Alltoall => {
                        for (me, g) in got.iter().enumerate() {
                            let want: Vec<f64> = (0..n)
                                .flat_map(|r| (0..count).map(move |i| val(r, i) + me as f64 / 8.0))
                                .collect();
                            assert_eq!(f64s(g), want, "{what} rank {me}");
                        }
                    }
                    _ => unreachable!(),
                }
            }
        }
    }
}
