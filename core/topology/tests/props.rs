//! Property tests: the parsers never panic, CPU lists round-trip, and the
//! binding and report functions never panic on any input.

use proptest::prelude::*;

use oxmpi_topology::cpulist::MAX_CPU_INDEX;
use oxmpi_topology::{
    binding_report, compute_bindings_with, BindOptions, BindPolicy, BindRequest, CpuList,
    ObjectLevel, ProcPlacement, Topology,
};

fn level() -> impl Strategy<Value = ObjectLevel> {
    prop_oneof![
        Just(ObjectLevel::HwThread),
        Just(ObjectLevel::Core),
        Just(ObjectLevel::Package),
        Just(ObjectLevel::Numa),
    ]
}

fn policy() -> impl Strategy<Value = BindPolicy> {
    prop_oneof![
        Just(BindPolicy::None),
        Just(BindPolicy::HwThread),
        Just(BindPolicy::Core),
        Just(BindPolicy::Package),
        Just(BindPolicy::Numa),
    ]
}

proptest! {
    #[test]
    fn cpu_list_parse_never_panics(text in ".{0,64}") {
        let _ = CpuList::parse(&text);
    }

    #[test]
    fn cpu_list_parse_never_panics_on_list_like_text(text in "[0-9, \\-:x]{0,40}") {
        if let Ok(list) = CpuList::parse(&text) {
            prop_assert!(!list.is_empty());
            prop_assert!(list.iter().all(|c| c <= MAX_CPU_INDEX));
        }
    }

    #[test]
    fn cpu_list_round_trips(cpus in proptest::collection::btree_set(0..=MAX_CPU_INDEX, 1..64)) {
        let list: CpuList = cpus.iter().copied().collect();
        let text = list.to_string();
        let back = CpuList::parse(&text).unwrap();
        prop_assert_eq!(&back, &list);
        let expected: Vec<usize> = cpus.into_iter().collect();
        prop_assert_eq!(back.as_slice(), expected.as_slice());
        prop_assert_eq!(back.to_string(), text);
    }

    #[test]
    fn cpu_list_ranges_round_trip(ranges in proptest::collection::vec((0usize..2000, 0usize..50), 1..10)) {
        let text: Vec<String> = ranges.iter().map(|(a, n)| format!("{}-{}", a, a + n)).collect();
        let text = text.join(",");
        let list = CpuList::parse(&text).unwrap();
        let expected: CpuList = ranges.iter().flat_map(|&(a, n)| a..=a + n).collect();
        prop_assert_eq!(&list, &expected);
        prop_assert_eq!(CpuList::parse(&list.to_string()).unwrap(), list);
    }

    #[test]
    fn bind_to_parse_never_panics(text in ".{0,40}") {
        let _ = BindRequest::parse(&text);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn synthetic_never_panics(text in "[a-zA-Z0-9:() ,=]{0,40}") {
        if let Ok(t) = Topology::synthetic(&text) {
            prop_assert!(t.num_hwthreads() > 0);
        }
    }
}

proptest! {
    #[test]
    fn bindings_and_reports_never_panic(
        policy in policy(),
        procs in proptest::collection::vec(
            (0usize..20, proptest::option::of((level(), 0usize..20))), 0..20),
        cpu_set in proptest::option::of(proptest::collection::btree_set(0usize..20, 0..10)),
        overload_allowed: bool,
        if_supported: bool,
        is_default: bool,
    ) {
        let t = Topology::synthetic("package:2 numa:2 core:2 pu:2").unwrap();
        let procs: Vec<ProcPlacement> = procs
            .into_iter()
            .map(|(local_rank, mapped_object)| ProcPlacement { local_rank, mapped_object })
            .collect();
        let cpu_set: Option<CpuList> = cpu_set.map(|s| s.into_iter().collect());
        let options = BindOptions { overload_allowed, if_supported, is_default };
        if let Ok(bindings) = compute_bindings_with(&t, &procs, policy, cpu_set.as_ref(), options) {
            prop_assert_eq!(bindings.len(), procs.len());
            for b in &bindings {
                prop_assert!(!b.is_empty());
                prop_assert!(t.cpus().includes(b));
                let _ = binding_report(&t, b);
            }
        }
    }

    #[test]
    fn reports_never_panic(cpus in proptest::collection::btree_set(0usize..100, 0..20)) {
        let t = Topology::synthetic("package:2 core:3 pu:2").unwrap();
        let _ = binding_report(&t, &cpus.into_iter().collect());
    }
}
