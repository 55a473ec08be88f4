//! `--report-bindings` lines, checked against the examples of reference 000
//! (Open MPI FAQ, "What is cpu-set?") and of Open MPI v4's documentation.

mod common;

use common::faq_machine;
use oxmpi_topology::{
    binding_report, compute_bindings, report_line, BindPolicy, BindingReport, CpuList,
    ProcPlacement, Topology,
};

fn cpus(text: &str) -> CpuList {
    CpuList::parse(text).unwrap()
}

/// `mpirun --report-bindings -n 4 --oversubscribe --cpu-set 14,15,0,1
/// --bind-to hwthread --map-by hwthread hostname` on the FAQ's machine.
#[test]
fn faq_cpu_set_example() {
    let t = Topology::synthetic(&faq_machine()).unwrap();
    let procs: Vec<ProcPlacement> = (0..4)
        .map(|local_rank| ProcPlacement {
            local_rank,
            mapped_object: None,
        })
        .collect();
    let bindings =
        compute_bindings(&t, &procs, BindPolicy::HwThread, Some(&cpus("14,15,0,1"))).unwrap();
    let lines: Vec<String> = bindings
        .iter()
        .enumerate()
        .map(|(rank, b)| report_line("clx-orion-001", 25028, rank, &t, b))
        .collect();
    let expected = [
        "[clx-orion-001:25028] MCW rank 0 bound to socket 0[core 0[hwt 0]]: [B./../../../../../../../../../../../../..][../../../../../../../../../../../../../..]",
        "[clx-orion-001:25028] MCW rank 1 bound to socket 0[core 0[hwt 1]]: [.B/../../../../../../../../../../../../..][../../../../../../../../../../../../../..]",
        "[clx-orion-001:25028] MCW rank 2 bound to socket 0[core 7[hwt 0]]: [../../../../../../../B./../../../../../..][../../../../../../../../../../../../../..]",
        "[clx-orion-001:25028] MCW rank 3 bound to socket 0[core 7[hwt 1]]: [../../../../../../../.B/../../../../../..][../../../../../../../../../../../../../..]",
    ];
    assert_eq!(lines, expected);
    // The OS indexes behind them (hwloc-ls: PU L#1 is P#28, L#14 P#7, L#15 P#35).
    let os: Vec<String> = bindings.iter().map(ToString::to_string).collect();
    assert_eq!(os, ["0", "28", "7", "35"]);
}

/// Open MPI v4's doc example: `socket 0[core 0[hwt 0-1]], socket 0[core
/// 1[hwt 0-1]]: [BB/BB/../..][../../../..]`, here from binding to package 0
/// restricted by --cpu-set 0-3.
#[test]
fn several_cores() {
    let t = Topology::synthetic("package:2 core:4 pu:2").unwrap();
    let procs = [ProcPlacement {
        local_rank: 0,
        mapped_object: None,
    }];
    let b = compute_bindings(&t, &procs, BindPolicy::Package, Some(&cpus("0-3"))).unwrap();
    assert_eq!(
        report_line("host", 1, 0, &t, &b[0]),
        "[host:1] MCW rank 0 bound to socket 0[core 0[hwt 0-1]], socket 0[core 1[hwt 0-1]]: [BB/BB/../..][../../../..]"
    );
}

#[test]
fn core_indexes_are_machine_wide() {
    let t = Topology::synthetic("package:2 core:2 pu:2").unwrap();
    assert_eq!(
        binding_report(&t, &cpus("4-7")),
        BindingReport::Bound {
            description: "socket 1[core 2[hwt 0-1]], socket 1[core 3[hwt 0-1]]".into(),
            map: "[../..][BB/BB]".into(),
        }
    );
    assert_eq!(
        binding_report(&t, &cpus("1,5")),
        BindingReport::Bound {
            description: "socket 0[core 0[hwt 1]], socket 1[core 2[hwt 1]]".into(),
            map: "[.B/..][.B/..]".into(),
        }
    );
}

#[test]
fn hwthread_ranges() {
    let t = Topology::synthetic("package:1 core:2 pu:4").unwrap();
    assert_eq!(
        report_line("n", 2, 5, &t, &cpus("0,2-3")),
        "[n:2] MCW rank 5 bound to socket 0[core 0[hwt 0,2-3]]: [B.BB/....]"
    );
    // The brief's illustration on a 3+3-core machine.
    let t = Topology::synthetic("package:2 core:3 pu:2").unwrap();
    assert_eq!(
        report_line("host", 9, 0, &t, &cpus("0")),
        "[host:9] MCW rank 0 bound to socket 0[core 0[hwt 0]]: [B./../..][../../..]"
    );
}

#[test]
fn not_bound() {
    let t = Topology::synthetic("package:2 core:2 pu:2").unwrap();
    let line = "[host:42] MCW rank 3 is not bound (or bound to all available processors)";
    // Bound to everything.
    assert_eq!(report_line("host", 42, 3, &t, &cpus("0-7")), line);
    // Bound to more than the machine (ignored CPUs outside it).
    assert_eq!(report_line("host", 42, 3, &t, &cpus("0-100")), line);
    // Bound to nothing the topology knows.
    assert_eq!(report_line("host", 42, 3, &t, &CpuList::new()), line);
    assert_eq!(report_line("host", 42, 3, &t, &cpus("50")), line);
    assert_eq!(binding_report(&t, &cpus("0-7")), BindingReport::NotBound);
    // Everything but one PU is a binding.
    assert!(matches!(
        binding_report(&t, &cpus("0-6")),
        BindingReport::Bound { .. }
    ));
}

#[test]
fn machines_without_packages_or_cores() {
    // No package: one pseudo-socket 0, as Open MPI does.
    let t = Topology::synthetic("core:3 pu:1").unwrap();
    assert_eq!(
        report_line("h", 1, 0, &t, &cpus("1")),
        "[h:1] MCW rank 0 bound to socket 0[core 1[hwt 0]]: [./B/.]"
    );
    // No core: each PU is its own core.
    let t = Topology::synthetic("package:2 pu:2").unwrap();
    assert_eq!(
        report_line("h", 1, 0, &t, &cpus("3")),
        "[h:1] MCW rank 0 bound to socket 1[core 3[hwt 0]]: [./.][./B]"
    );
}
