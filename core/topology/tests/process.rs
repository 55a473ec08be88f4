//! Bindings applied to real processes on this machine, read back from
//! /proc/PID/status (Cpus_allowed_list) and compared with the report.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

use oxmpi_topology::{
    binding_report, compute_bindings, read_cpus_allowed, BindPolicy, BindingReport, CpuList,
    PreparedBinding, ProcPlacement, Topology,
};

/// Start `sleep 5` bound to `cpus` by the pre-exec hook.
fn spawn_bound(cpus: &CpuList) -> Child {
    let prepared = PreparedBinding::new(cpus).unwrap();
    let mut cmd = Command::new("sleep");
    cmd.arg("5").stdin(Stdio::null());
    // SAFETY: apply_in_child only calls sched_setaffinity on memory prepared
    // before the fork (async-signal-safe, no allocation).
    unsafe {
        cmd.pre_exec(move || prepared.apply_in_child());
    }
    cmd.spawn().unwrap()
}

fn stop(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

fn has_two_cpus(t: &Topology) -> bool {
    let own = read_cpus_allowed(std::process::id()).unwrap();
    if t.num_hwthreads() < 2 || !t.cpus().contains(1) || !own.includes(t.cpus()) {
        assert!(
            std::env::var("OXMPI_REQUIRE_CPUS").as_deref() != Ok("2"),
            "needs 2 usable PUs (topology {}, allowed {own}) and OXMPI_REQUIRE_CPUS=2",
            t.cpus()
        );
        eprintln!(
            "skipped: needs 2 usable PUs (topology {}, allowed {own})",
            t.cpus()
        );
        return false;
    }
    true
}

#[test]
fn sleep_bound_to_pu_1() {
    let t = Topology::local().unwrap();
    if !has_two_cpus(t) {
        return;
    }
    let pu1 = CpuList::parse("1").unwrap();
    let child = spawn_bound(&pu1);
    let seen = read_cpus_allowed(child.id());
    stop(child);
    assert_eq!(seen.unwrap().to_string(), "1");
}

/// Two ranks with the default policy for 2 ranks (core): each process's real
/// binding is the computed one, and its report is the one mpirun would print.
#[test]
fn report_matches_real_binding() {
    let t = Topology::local().unwrap();
    if !has_two_cpus(t) {
        return;
    }
    let procs: Vec<ProcPlacement> = (0..2)
        .map(|local_rank| ProcPlacement {
            local_rank,
            mapped_object: None,
        })
        .collect();
    let policy = oxmpi_topology::default_policy(2, false);
    assert_eq!(policy, BindPolicy::Core);
    let bindings = compute_bindings(t, &procs, policy, None).unwrap();
    let children: Vec<Child> = bindings.iter().map(spawn_bound).collect();
    let seen: Vec<_> = children.iter().map(|c| read_cpus_allowed(c.id())).collect();
    children.into_iter().for_each(stop);
    for (rank, (computed, seen)) in bindings.iter().zip(seen).enumerate() {
        let seen = seen.unwrap();
        assert_eq!(&seen, computed, "rank {rank}");
        assert_eq!(binding_report(t, &seen), binding_report(t, computed));
        assert!(matches!(
            binding_report(t, &seen),
            BindingReport::Bound { .. }
        ));
    }
}

#[test]
fn refused_binding_fails_the_spawn() {
    // A CPU that does not exist: the kernel says EINVAL and spawn fails.
    let t = Topology::local().unwrap();
    let absent: CpuList = [t.cpus().as_slice().last().copied().unwrap_or(0) + 1000]
        .into_iter()
        .collect();
    let prepared = PreparedBinding::new(&absent).unwrap();
    let mut cmd = Command::new("sleep");
    cmd.arg("5");
    // SAFETY: as in `spawn_bound`: the hook only calls sched_setaffinity
    // on the mask `PreparedBinding::new` built before the fork, which is
    // async-signal-safe and allocates nothing.
    unsafe {
        cmd.pre_exec(move || prepared.apply_in_child());
    }
    match cmd.spawn() {
        Ok(child) => {
            stop(child);
            panic!("binding to CPU {absent} should fail");
        }
        Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EINVAL)),
    }
}
