//! Shared by the integration tests.

/// The machine of Open MPI's FAQ example for `--cpu-set` (reference 000):
/// 2 sockets × 14 cores × 2 hwthreads, the second thread of core N being
/// P#(N+28) (`PU L#1 (P#28)`, `PU L#14 (P#7)`, `PU L#15 (P#35)`), as an
/// hwloc synthetic description.
pub fn faq_machine() -> String {
    let indexes: Vec<String> = (0..56)
        .map(|l| ((l / 28) * 14 + (l % 28) / 2 + (l % 2) * 28).to_string())
        .collect();
    format!("package:2 core:14 pu:2(indexes={})", indexes.join(","))
}
