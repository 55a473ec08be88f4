//! Binding the current process (its own test binary: nothing else runs in
//! it, so changing its affinity disturbs no other test).

use oxmpi_topology::apply::{bind_current_process, current_binding};
use oxmpi_topology::{read_cpus_allowed, CpuList, Topology};

#[test]
fn bind_and_restore_current_process() {
    let t = Topology::local().unwrap();
    let original = read_cpus_allowed(std::process::id()).unwrap();
    if t.num_hwthreads() < 2 || !original.includes(t.cpus()) {
        assert!(
            std::env::var("OXMPI_REQUIRE_CPUS").as_deref() != Ok("2"),
            "needs 2 usable PUs and OXMPI_REQUIRE_CPUS=2"
        );
        eprintln!("skipped: needs 2 usable PUs");
        return;
    }
    let pu1: CpuList = [t.hwthreads()[1].os_index].into_iter().collect();
    bind_current_process(&pu1).unwrap();
    let main_thread = read_cpus_allowed(std::process::id()).unwrap();
    let this_thread = current_binding().unwrap();
    // A thread started now inherits the binding.
    let child_thread = std::thread::spawn(|| current_binding().unwrap())
        .join()
        .unwrap();
    bind_current_process(&original).unwrap();
    assert_eq!(main_thread, pu1);
    assert_eq!(this_thread, pu1);
    assert_eq!(child_thread, pu1);
    assert_eq!(current_binding().unwrap(), original);
}
