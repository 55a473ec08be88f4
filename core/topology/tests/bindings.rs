//! Binding policies on synthetic machines bigger than the test VM.

mod common;

use common::faq_machine;

use oxmpi_topology::{
    compute_bindings, compute_bindings_with, BindError, BindOptions, BindPolicy, BindRequest,
    CpuList, ObjectLevel, ProcPlacement, Topology,
};

/// 2 packages × 2 cores × 2 hwthreads: cores {0,1} {2,3} | {4,5} {6,7}.
fn t_2x2x2() -> Topology {
    Topology::synthetic("package:2 core:2 pu:2").unwrap()
}

/// 2 packages × 2 NUMA nodes × 4 cores × 1 hwthread: nodes 0-3, 4-7 | 8-11, 12-15.
fn t_numa() -> Topology {
    Topology::synthetic("package:2 numa:2 core:4 pu:1").unwrap()
}

fn unmapped(n: usize) -> Vec<ProcPlacement> {
    (0..n)
        .map(|local_rank| ProcPlacement {
            local_rank,
            mapped_object: None,
        })
        .collect()
}

fn mapped(n: usize, level: ObjectLevel, index: usize) -> Vec<ProcPlacement> {
    (0..n)
        .map(|local_rank| ProcPlacement {
            local_rank,
            mapped_object: Some((level, index)),
        })
        .collect()
}

fn strings(bindings: &[CpuList]) -> Vec<String> {
    bindings.iter().map(ToString::to_string).collect()
}

fn bind(t: &Topology, procs: &[ProcPlacement], policy: BindPolicy) -> Vec<String> {
    strings(&compute_bindings(t, procs, policy, None).unwrap())
}

fn cpus(text: &str) -> CpuList {
    CpuList::parse(text).unwrap()
}

#[test]
fn synthetic_summaries() {
    let t = t_2x2x2();
    assert_eq!(
        (
            t.num_packages(),
            t.num_numa_nodes(),
            t.num_cores(),
            t.num_hwthreads()
        ),
        (2, 1, 4, 8)
    );
    assert_eq!(t.packages()[1].cores[0].logical_index, 2);
    assert_eq!(t.packages()[1].cores[0].hwthreads[1].os_index, 5);
    assert_eq!(t.numa_nodes()[0].cpus.to_string(), "0-7");
    let t = t_numa();
    assert_eq!(
        (
            t.num_packages(),
            t.num_numa_nodes(),
            t.num_cores(),
            t.num_hwthreads()
        ),
        (2, 4, 16, 16)
    );
    let numa: Vec<String> = t.numa_nodes().iter().map(|n| n.cpus.to_string()).collect();
    assert_eq!(numa, ["0-3", "4-7", "8-11", "12-15"]);
    let t = Topology::synthetic("core:4 pu:1").unwrap();
    assert!(!t.has_level(ObjectLevel::Package));
    assert_eq!(t.num_packages(), 0);
    assert_eq!(t.packages().len(), 1, "one pseudo-package for reports");
    let t = Topology::synthetic("package:2 pu:2").unwrap();
    assert!(!t.has_level(ObjectLevel::Core));
    assert_eq!(t.num_cores(), 0);
}

#[test]
fn bad_synthetic_descriptions() {
    for spec in ["", "bogus:2", "package:2 core:x", "pu:100000 pu:100000"] {
        let err = Topology::synthetic(spec).unwrap_err();
        assert!(err.to_string().contains("bad synthetic topology"), "{err}");
    }
}

#[test]
fn hwthread_policy() {
    let t = t_2x2x2();
    assert_eq!(
        bind(&t, &unmapped(4), BindPolicy::HwThread),
        ["0", "1", "2", "3"]
    );
    assert_eq!(bind(&t, &unmapped(8), BindPolicy::HwThread).len(), 8);
    assert_eq!(
        compute_bindings(&t, &unmapped(9), BindPolicy::HwThread, None),
        Err(BindError::Overload {
            level: ObjectLevel::HwThread,
            index: 0,
            procs: 2,
            cpus: 1
        })
    );
}

#[test]
fn core_policy() {
    let t = t_2x2x2();
    assert_eq!(
        bind(&t, &unmapped(4), BindPolicy::Core),
        ["0-1", "2-3", "4-5", "6-7"]
    );
    let err = compute_bindings(&t, &unmapped(5), BindPolicy::Core, None).unwrap_err();
    assert_eq!(
        err,
        BindError::Overload {
            level: ObjectLevel::Core,
            index: 0,
            procs: 2,
            cpus: 1
        }
    );
    let text = err.to_string();
    assert!(text.contains("more processes than cpus"), "{text}");
    assert!(text.contains("core:overload-allowed"), "{text}");
    let allowed = BindOptions {
        overload_allowed: true,
        ..BindOptions::default()
    };
    let b = compute_bindings_with(&t, &unmapped(5), BindPolicy::Core, None, allowed).unwrap();
    assert_eq!(strings(&b), ["0-1", "2-3", "4-5", "6-7", "0-1"]);
}

#[test]
fn package_policy() {
    let t = t_2x2x2();
    assert_eq!(
        bind(&t, &unmapped(4), BindPolicy::Package),
        ["0-3", "4-7", "0-3", "4-7"]
    );
    // Package 0 has 2 cores: a third rank on it is an overload.
    assert_eq!(
        compute_bindings(&t, &unmapped(5), BindPolicy::Package, None),
        Err(BindError::Overload {
            level: ObjectLevel::Package,
            index: 0,
            procs: 3,
            cpus: 2
        })
    );
    let t = t_numa();
    assert_eq!(bind(&t, &unmapped(2), BindPolicy::Package), ["0-7", "8-15"]);
}

#[test]
fn numa_policy() {
    let t = t_numa();
    assert_eq!(
        bind(&t, &unmapped(8), BindPolicy::Numa),
        ["0-3", "4-7", "8-11", "12-15", "0-3", "4-7", "8-11", "12-15"]
    );
    assert_eq!(bind(&t, &unmapped(16), BindPolicy::Numa).len(), 16);
    assert!(matches!(
        compute_bindings(&t, &unmapped(17), BindPolicy::Numa, None),
        Err(BindError::Overload {
            level: ObjectLevel::Numa,
            index: 0,
            procs: 5,
            cpus: 4
        })
    ));
    // One NUMA node holding the whole machine.
    let t = t_2x2x2();
    assert_eq!(bind(&t, &unmapped(2), BindPolicy::Numa), ["0-7", "0-7"]);
}

#[test]
fn none_policy_is_the_available_set() {
    let t = t_2x2x2();
    assert_eq!(bind(&t, &unmapped(3), BindPolicy::None), ["0-7"; 3]);
    // More ranks than CPUs is fine when not binding.
    assert_eq!(bind(&t, &unmapped(20), BindPolicy::None).len(), 20);
    let b = compute_bindings(&t, &unmapped(2), BindPolicy::None, Some(&cpus("1,4"))).unwrap();
    assert_eq!(strings(&b), ["1,4", "1,4"]);
}

#[test]
fn mapped_objects() {
    let t = t_2x2x2();
    // Coarser binding level: the package containing the mapped core.
    assert_eq!(
        bind(&t, &mapped(1, ObjectLevel::Core, 3), BindPolicy::Package),
        ["4-7"]
    );
    // Finer binding level: the cores inside the mapped package, in turn.
    assert_eq!(
        bind(&t, &mapped(2, ObjectLevel::Package, 1), BindPolicy::Core),
        ["4-5", "6-7"]
    );
    assert_eq!(
        bind(
            &t,
            &mapped(3, ObjectLevel::Package, 1),
            BindPolicy::HwThread
        ),
        ["4", "5", "6"]
    );
    // Two ranks mapped to PU 6 bound to its core: overload unless allowed.
    assert!(matches!(
        compute_bindings(
            &t,
            &mapped(2, ObjectLevel::HwThread, 6),
            BindPolicy::Core,
            None
        ),
        Err(BindError::Overload {
            index: 3,
            procs: 2,
            ..
        })
    ));
    let allowed = BindOptions {
        overload_allowed: true,
        ..BindOptions::default()
    };
    let b = compute_bindings_with(
        &t,
        &mapped(2, ObjectLevel::HwThread, 6),
        BindPolicy::Core,
        None,
        allowed,
    )
    .unwrap();
    assert_eq!(strings(&b), ["6-7", "6-7"]);
    let t = t_numa();
    assert_eq!(
        bind(&t, &mapped(2, ObjectLevel::Numa, 2), BindPolicy::Core),
        ["8", "9"]
    );
    assert_eq!(
        bind(&t, &mapped(1, ObjectLevel::Core, 5), BindPolicy::Numa),
        ["4-7"]
    );
    // Mixed: ranks mapped to NUMA nodes 3, 3, 0 bound to packages.
    let procs = [
        ProcPlacement {
            local_rank: 0,
            mapped_object: Some((ObjectLevel::Numa, 3)),
        },
        ProcPlacement {
            local_rank: 1,
            mapped_object: Some((ObjectLevel::Numa, 3)),
        },
        ProcPlacement {
            local_rank: 2,
            mapped_object: Some((ObjectLevel::Numa, 0)),
        },
    ];
    assert_eq!(
        bind(&t, &procs, BindPolicy::Package),
        ["8-15", "8-15", "0-7"]
    );
}

#[test]
fn results_follow_input_order_and_ranks_are_dealt_in_rank_order() {
    let t = t_2x2x2();
    let procs: Vec<ProcPlacement> = unmapped(4).into_iter().rev().collect();
    assert_eq!(
        bind(&t, &procs, BindPolicy::Core),
        ["6-7", "4-5", "2-3", "0-1"]
    );
}

#[test]
fn bad_mapped_objects() {
    let t = t_2x2x2();
    assert_eq!(
        compute_bindings(&t, &mapped(1, ObjectLevel::Core, 9), BindPolicy::Core, None),
        Err(BindError::BadMappedObject {
            local_rank: 0,
            level: ObjectLevel::Core,
            index: 9,
            available: 4
        })
    );
    let t = Topology::synthetic("core:4 pu:1").unwrap();
    assert!(matches!(
        compute_bindings(
            &t,
            &mapped(1, ObjectLevel::Package, 0),
            BindPolicy::Core,
            None
        ),
        Err(BindError::BadMappedObject { available: 0, .. })
    ));
    // Mapped to package 1, but --cpu-set holds only package 0's PUs.
    let t = t_2x2x2();
    let err = compute_bindings(
        &t,
        &mapped(1, ObjectLevel::Package, 1),
        BindPolicy::Core,
        Some(&cpus("0-3")),
    )
    .unwrap_err();
    assert_eq!(
        err,
        BindError::MappedOutsideCpuSet {
            local_rank: 0,
            level: ObjectLevel::Package,
            index: 1
        }
    );
}

#[test]
fn missing_levels() {
    let t = Topology::synthetic("core:4 pu:1").unwrap();
    let err = compute_bindings(&t, &unmapped(2), BindPolicy::Package, None).unwrap_err();
    assert_eq!(
        err,
        BindError::MissingLevel {
            level: ObjectLevel::Package
        }
    );
    assert!(err.to_string().contains("no package objects"), "{err}");
    let if_supported = BindRequest::parse("package:if-supported").unwrap();
    let b = compute_bindings_with(
        &t,
        &unmapped(2),
        if_supported.policy,
        None,
        if_supported.options,
    )
    .unwrap();
    assert_eq!(strings(&b), ["0-3", "0-3"]);
    let t = Topology::synthetic("package:2 pu:2").unwrap();
    assert_eq!(
        compute_bindings(&t, &unmapped(1), BindPolicy::Core, None),
        Err(BindError::MissingLevel {
            level: ObjectLevel::Core
        })
    );
    // Hardware threads always exist.
    assert_eq!(bind(&t, &unmapped(2), BindPolicy::HwThread), ["0", "1"]);
}

#[test]
fn cpu_set_restricts_objects() {
    let t = t_2x2x2();
    let set = cpus("1,4-5");
    let b = compute_bindings(&t, &unmapped(3), BindPolicy::HwThread, Some(&set)).unwrap();
    assert_eq!(strings(&b), ["1", "4", "5"]);
    let b = compute_bindings(&t, &unmapped(2), BindPolicy::Core, Some(&set)).unwrap();
    assert_eq!(strings(&b), ["1", "4-5"]);
    let b = compute_bindings(&t, &unmapped(2), BindPolicy::Package, Some(&set)).unwrap();
    assert_eq!(strings(&b), ["1", "4-5"]);
    // Package 0 keeps one core inside the set: 2 ranks there overload it.
    let b = compute_bindings(&t, &unmapped(3), BindPolicy::Package, Some(&set));
    assert_eq!(
        b,
        Err(BindError::Overload {
            level: ObjectLevel::Package,
            index: 0,
            procs: 2,
            cpus: 1
        })
    );
    // Only package 0 is in the set: both ranks go there.
    let b = compute_bindings(&t, &unmapped(2), BindPolicy::Package, Some(&cpus("0-3"))).unwrap();
    assert_eq!(strings(&b), ["0-3", "0-3"]);
    let t = t_numa();
    let set = cpus("0,5,10,15");
    let b = compute_bindings(&t, &unmapped(4), BindPolicy::Numa, Some(&set)).unwrap();
    assert_eq!(strings(&b), ["0", "5", "10", "15"]);
    assert!(matches!(
        compute_bindings(&t, &unmapped(5), BindPolicy::Numa, Some(&set)),
        Err(BindError::Overload { cpus: 1, .. })
    ));
}

#[test]
fn cpu_set_is_logical() {
    // PU L#1 is P#28 here, as on the machine of Open MPI's FAQ example.
    let t = Topology::synthetic(&faq_machine()).unwrap();
    let b = compute_bindings(&t, &unmapped(2), BindPolicy::HwThread, Some(&cpus("0-1"))).unwrap();
    assert_eq!(strings(&b), ["0", "28"]);
    let b = compute_bindings(&t, &unmapped(1), BindPolicy::Core, Some(&cpus("14-15"))).unwrap();
    assert_eq!(strings(&b), ["7,35"]);
}

#[test]
fn cpu_set_errors() {
    let t = t_2x2x2();
    for policy in [BindPolicy::None, BindPolicy::Core] {
        let err = compute_bindings(&t, &unmapped(1), policy, Some(&cpus("0,99"))).unwrap_err();
        assert_eq!(
            err,
            BindError::CpuSetOutOfRange {
                cpu: 99,
                available: 8
            }
        );
        assert!(err.to_string().contains("logical CPU 99"), "{err}");
        assert!(err.to_string().contains("(0-7)"), "{err}");
        assert_eq!(
            compute_bindings(&t, &unmapped(1), policy, Some(&CpuList::new())),
            Err(BindError::EmptyCpuSet)
        );
    }
}

#[test]
fn default_policy_never_fails() {
    // Three ranks: package; package 0 of this machine has 2 cores → would
    // overload; the default leaves them unbound instead.
    let t = Topology::synthetic("package:1 core:2 pu:1").unwrap();
    let r = BindRequest::default_for(3, false);
    assert_eq!(r.policy, BindPolicy::Package);
    let b = compute_bindings_with(&t, &unmapped(3), r.policy, None, r.options).unwrap();
    assert_eq!(strings(&b), ["0-1"; 3]);
    // The same request from the user is an error.
    assert!(compute_bindings(&t, &unmapped(3), BindPolicy::Package, None).is_err());
    // Two ranks: core.
    let r = BindRequest::default_for(2, false);
    let b = compute_bindings_with(&t, &unmapped(2), r.policy, None, r.options).unwrap();
    assert_eq!(strings(&b), ["0", "1"]);
    // No packages: the default leaves ranks unbound.
    let t = Topology::synthetic("core:4 pu:1").unwrap();
    let r = BindRequest::default_for(4, false);
    let b = compute_bindings_with(&t, &unmapped(4), r.policy, None, r.options).unwrap();
    assert_eq!(strings(&b), ["0-3"; 4]);
    // Oversubscribed: none.
    let r = BindRequest::default_for(8, true);
    assert_eq!(r.policy, BindPolicy::None);
    let b = compute_bindings_with(&t, &unmapped(8), r.policy, None, r.options).unwrap();
    assert_eq!(strings(&b), ["0-3"; 8]);
}

#[test]
fn no_procs_no_bindings() {
    let t = t_2x2x2();
    for policy in [BindPolicy::None, BindPolicy::Core, BindPolicy::Numa] {
        assert_eq!(compute_bindings(&t, &[], policy, None), Ok(vec![]));
    }
}
