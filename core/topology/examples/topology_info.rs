//! Print a topology summary and how long loading it took.
//!
//! `cargo run -p oxmpi-topology --example topology_info [SYNTHETIC-SPEC]`:
//! without an argument, this machine (loaded 5 times: the first and the
//! fastest time are printed); with one, an hwloc synthetic description such
//! as `package:2 core:4 pu:2`.

#![forbid(unsafe_code)]

use std::time::{Duration, Instant};

use oxmpi_topology::{ObjectLevel, Topology};

fn main() {
    let spec = std::env::args().nth(1);
    let mut times = Vec::new();
    let mut topology = None;
    for _ in 0..if spec.is_some() { 1 } else { 5 } {
        let start = Instant::now();
        let loaded = match &spec {
            Some(s) => Topology::synthetic(s),
            None => Topology::load(),
        };
        times.push(start.elapsed());
        match loaded {
            Ok(t) => topology = Some(t),
            Err(e) => {
                eprintln!("topology_info: {e}");
                std::process::exit(1);
            }
        }
    }
    let Some(t) = topology else { return };
    let fastest = times.iter().min().copied().unwrap_or(Duration::ZERO);
    println!(
        "load: first {:.3} ms, fastest of {} {:.3} ms",
        times[0].as_secs_f64() * 1e3,
        times.len(),
        fastest.as_secs_f64() * 1e3
    );
    println!(
        "packages {} numa {} cores {} hwthreads {} (cpus {})",
        t.num_packages(),
        t.num_numa_nodes(),
        t.num_cores(),
        t.num_hwthreads(),
        t.cpus()
    );
    for p in t.packages() {
        println!("package L#{} P#{:?}", p.logical_index, p.os_index);
        for c in &p.cores {
            let threads: Vec<String> = c
                .hwthreads
                .iter()
                .map(|h| format!("PU L#{} P#{}", h.logical_index, h.os_index))
                .collect();
            println!("  core L#{}: {}", c.logical_index, threads.join(", "));
        }
    }
    for n in t.numa_nodes() {
        println!(
            "numa L#{} P#{:?}: cpus {}",
            n.logical_index, n.os_index, n.cpus
        );
    }
    for level in [ObjectLevel::Package, ObjectLevel::Numa, ObjectLevel::Core] {
        println!("has {level}: {}", t.has_level(level));
    }
}
