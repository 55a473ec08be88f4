//! Start-up cost of the MCA: the time a process spends loading and
//! selecting components.
//!
//! Measured in-process, with `std::time::Instant` over many iterations
//! (median and p90):
//!
//! - `Mca::init` — declare the core's parameters, read every source, scan
//!   the component path, load each library's root module and parameter
//!   table, resolve everything;
//! - open + query + select of every framework (`open_framework(fw)?.select()`;
//!   a single-select framework with no usable component returns an error,
//!   which is counted, not fatal), closing them again;
//! - both together: what a process pays before it can use its components.
//!
//! The component path is the dev build directory (`target/release`, where
//! cargo puts every `libmca_*.so` of the workspace) plus a temporary
//! directory holding copies of the test fixtures (`liboxmpi_fixture_good.so`
//! as `libmca_btl_fixture.so`, `liboxmpi_fixture_twin.so` as
//! `libmca_btl_twin.so`) when cargo has built them.
//!
//! Libraries are loaded once per process and never unloaded (abi_stable), so
//! the first `Mca::init` is reported on its own ("cold": dlopen, relocation,
//! layout checks) and the repeated ones measure the warm path.
//!
//! Run: `cargo bench -p oxmpi-mca --bench startup [-- --iterations N --tsv FILE]`.
//! `--tsv FILE` writes `measurement<TAB>median_ns<TAB>p90_ns` rows for
//! `scripts/bench-mca.sh`, which prints them with its target table.

use oxmpi_mca::{Mca, McaInputs};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Test fixtures copied into the component directory: (built file, installed as).
const FIXTURES: &[(&str, &str)] = &[
    ("liboxmpi_fixture_good.so", "libmca_btl_fixture.so"),
    ("liboxmpi_fixture_twin.so", "libmca_btl_twin.so"),
];

struct Options {
    iterations: usize,
    tsv: Option<PathBuf>,
}

fn options() -> Options {
    let mut opts = Options {
        iterations: 300,
        tsv: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--iterations" | "-n" => {
                opts.iterations = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|n| *n > 0)
                    .unwrap_or_else(|| {
                        eprintln!("startup: --iterations needs a positive number");
                        std::process::exit(2)
                    })
            }
            "--tsv" => opts.tsv = args.next().map(PathBuf::from),
            // `cargo bench` passes `--bench`; ignore it and any filter.
            _ => {}
        }
    }
    opts
}

/// Summary of a sample: (median, p90), nearest-rank.
fn summarize(samples: &mut [Duration]) -> (Duration, Duration) {
    samples.sort();
    let rank = |q: f64| {
        let k = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
        samples[k - 1]
    };
    (rank(0.5), rank(0.9))
}

fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us >= 1000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{us:.1} µs")
    }
}

/// Outcome of selecting every framework once.
#[derive(Default, PartialEq, Eq, Debug)]
struct Selection {
    /// Frameworks whose selection succeeded, with the chosen components.
    selected: Vec<(String, Vec<String>)>,
    /// Frameworks whose selection returned an error.
    failed: Vec<String>,
}

fn select_all(mca: &Mca) -> Selection {
    let mut out = Selection::default();
    for fw in mca.frameworks() {
        let result = mca
            .open_framework(fw.name)
            .and_then(|mut open| open.select());
        match result {
            Ok(chosen) => out.selected.push((
                fw.name.to_string(),
                chosen.into_iter().map(|s| s.name).collect(),
            )),
            Err(_) => out.failed.push(fw.name.to_string()),
        }
    }
    let _ = mca.take_diagnostics();
    out
}

fn find_built(dirs: &[&Path], file: &str) -> Option<PathBuf> {
    dirs.iter().map(|d| d.join(file)).find(|p| p.is_file())
}

fn main() {
    let opts = options();
    let exe = std::env::current_exe().expect("the benchmark's own path");
    let deps = exe
        .parent()
        .expect("the benchmark's directory")
        .to_path_buf();
    let build_dir = if deps.ends_with("deps") {
        deps.parent().unwrap_or(&deps).to_path_buf()
    } else {
        deps.clone()
    };

    let scratch = tempfile::tempdir().expect("a temporary directory");
    let home = scratch.path().join("home");
    let fixture_dir = scratch.path().join("components");
    std::fs::create_dir_all(&home).expect("creating the temporary home");
    std::fs::create_dir_all(&fixture_dir).expect("creating the component directory");
    let mut copied = Vec::new();
    for (built, installed) in FIXTURES {
        if let Some(path) = find_built(&[&deps, &build_dir], built) {
            std::fs::copy(&path, fixture_dir.join(installed)).expect("copying a fixture");
            copied.push(*installed);
        }
    }

    let component_path = format!("{}:{}", build_dir.display(), fixture_dir.display());
    let inputs = McaInputs {
        program: "startup-bench".into(),
        env: vec![
            // An empty home: the user's own parameter file must not change the figures.
            ("HOME".into(), home.display().to_string()),
            (
                "OXMPI_MCA_mca_base_component_path".into(),
                component_path.clone(),
            ),
        ],
        command_line: Vec::new(),
        tune_files: Vec::new(),
        // Finds the checkout's etc/ (dev tree), as oxmpi_info does.
        exe: Some(exe.clone()),
        env_not_text: Vec::new(),
        module_layouts: Vec::new(),
        // Every framework, as oxmpi_info loads them (a rank loads btl and pml only).
        frameworks: vec![
            &oxmpi_framework_btl::FRAMEWORK,
            &oxmpi_framework_coll::FRAMEWORK,
            &oxmpi_framework_mtl::FRAMEWORK,
            &oxmpi_framework_pml::FRAMEWORK,
            &oxmpi_framework_rmaps::FRAMEWORK,
        ],
        base_frameworks: Vec::new(),
    };

    // Cold: the first init loads every library.
    let t = Instant::now();
    let mca = Mca::init(inputs.clone());
    let cold_init = t.elapsed();
    let diagnostics = mca.take_diagnostics();
    let t = Instant::now();
    let selection = select_all(&mca);
    let cold_select = t.elapsed();

    let components: Vec<String> = mca
        .repository()
        .components
        .iter()
        .map(|c| format!("{}/{} ({})", c.framework, c.name, c.path.display()))
        .collect();
    let failures = mca.repository().failures.len();
    drop(mca);

    // Warm: the same work again and again.
    let n = opts.iterations;
    let (mut init, mut select, mut total) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for _ in 0..n {
        let input = inputs.clone();
        let t0 = Instant::now();
        let mca = Mca::init(input);
        let t1 = Instant::now();
        let s = select_all(&mca);
        let t2 = Instant::now();
        let _ = mca.take_diagnostics();
        init.push(t1 - t0);
        select.push(t2 - t1);
        total.push(t2 - t0);
        assert_eq!(s, selection, "selection changed between iterations");
        drop(mca);
    }

    let rows: Vec<(String, Duration, Option<Duration>)> = {
        let (im, ip) = summarize(&mut init);
        let (sm, sp) = summarize(&mut select);
        let (tm, tp) = summarize(&mut total);
        vec![
            (
                "Mca::init, cold (first in process, 1 run)".into(),
                cold_init,
                None,
            ),
            (
                "open+query+select all frameworks, cold (1 run)".into(),
                cold_select,
                None,
            ),
            (format!("Mca::init, warm ({n} runs)"), im, Some(ip)),
            (
                format!("open+query+select all frameworks, warm ({n} runs)"),
                sm,
                Some(sp),
            ),
            (format!("init + select, warm ({n} runs)"), tm, Some(tp)),
        ]
    };

    println!("oxmpi-mca start-up benchmark");
    println!("  component path: {component_path}");
    if copied.is_empty() {
        println!(
            "  test fixtures: not built (cargo build --release -p oxmpi-fixture-good adds one)"
        );
    } else {
        println!("  test fixtures installed: {}", copied.join(", "));
    }
    println!("  components loaded: {}", components.len());
    for c in &components {
        println!("    {c}");
    }
    println!("  libraries that failed to load: {failures}");
    println!("  diagnostics of the first init: {}", diagnostics.len());
    for d in &diagnostics {
        println!("    {:?}: {}", d.severity, d.message);
    }
    for (fw, chosen) in &selection.selected {
        let list = if chosen.is_empty() {
            "(none usable)".to_string()
        } else {
            chosen.join(", ")
        };
        println!("  selected {fw}: {list}");
    }
    if !selection.failed.is_empty() {
        println!(
            "  no usable component (selection error, expected without components): {}",
            selection.failed.join(", ")
        );
    }
    println!();
    let width = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
    println!(
        "  {:<width$} | {:>10} | {:>10}",
        "measurement", "median", "p90"
    );
    println!("  {:-<width$}-+-{:->10}-+-{:->10}", "", "", "");
    for (name, median, p90) in &rows {
        let p90 = p90.map(fmt).unwrap_or_else(|| "-".into());
        println!("  {name:<width$} | {:>10} | {p90:>10}", fmt(*median));
    }

    if let Some(path) = opts.tsv {
        let mut text = String::new();
        for (name, median, p90) in &rows {
            let p90 = p90.map(|d| d.as_nanos().to_string()).unwrap_or_default();
            text.push_str(&format!("{name}\t{}\t{p90}\n", median.as_nanos()));
        }
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    }
}
