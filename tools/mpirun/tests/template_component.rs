//! The out-of-tree component path, end to end: the SDK crates are packaged
//! with `cargo package`, the template component (`templates/rmaps-example`)
//! is built from a copy outside the workspace against those packages
//! (`scripts/build-template-component.sh`), and its library, dropped into
//! a component directory of its own, maps real jobs with its `--map-by
//! block` policy and its parameter `rmaps_example_block_size`, and is listed
//! by `oxmpi_info` with that parameter.
//!
//! The build needs crates.io (for abi_stable and the other third-party
//! crates) and reuses `target/template-component`, so only the first run
//! compiles them. A build that fails fails this test with the script's
//! output.

mod common;

use common::*;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Longest the script may take (the first build compiles abi_stable,
/// serde and syn on a shared machine).
const BUILD_TIMEOUT: Duration = Duration::from_secs(900);

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The cargo target directory the workspace is built in (mpirun is in
/// `<target>/<profile>/`).
fn target_dir() -> PathBuf {
    mpirun_path()
        .parent()
        .and_then(Path::parent)
        .expect("mpirun is built in <target>/<profile>/")
        .to_path_buf()
}

/// Runs the build script into `out`; panics with its output if it fails.
fn build_template(out: &Path) {
    let script = repository().join("scripts/build-template-component.sh");
    let mut cmd = Command::new("bash");
    cmd.arg(&script)
        .arg(out)
        .env(
            "OXMPI_TEMPLATE_TARGET_DIR",
            target_dir().join("template-component"),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Ok(cargo) = std::env::var("CARGO") {
        cmd.env("CARGO", cargo);
    }
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    let pid = child.id() as i32;
    let out_pipe = child.stdout.take().unwrap();
    let err_pipe = child.stderr.take().unwrap();
    let read = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut pipe, &mut text).ok();
            text
        })
    };
    let (out_t, err_t) = (read(Box::new(out_pipe)), read(Box::new(err_pipe)));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > BUILD_TIMEOUT {
            // SAFETY: killing the process group this test started.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            let _ = child.wait();
            panic!(
                "{} did not finish within {BUILD_TIMEOUT:?}; its process group was killed",
                script.display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let (stdout, stderr) = (out_t.join().unwrap(), err_t.join().unwrap());
    assert!(
        status.success(),
        "the template component could not be built against the packaged SDK crates ({status}).\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}"
    );
}

/// Versions of the packaged SDK crates, from the directories the script
/// unpacked them into (`<name>-<version>`).
fn packaged_version(name: &str) -> String {
    let sdk = target_dir().join("template-component/sdk");
    let prefix = format!("{name}-");
    let found: Vec<String> = std::fs::read_dir(&sdk)
        .unwrap_or_else(|e| panic!("{}: {e}", sdk.display()))
        .flatten()
        .filter_map(|e| {
            let file = e.file_name().to_string_lossy().into_owned();
            let version = file.strip_prefix(&prefix)?.to_string();
            version
                .starts_with(|c: char| c.is_ascii_digit())
                .then_some(version)
        })
        .collect();
    assert_eq!(
        found.len(),
        1,
        "packages of {name} in {}: {found:?}",
        sdk.display()
    );
    found.into_iter().next().unwrap()
}

/// `(mapper, host of each rank)` of a `--display-map=json` output.
fn mapped(stdout: &str) -> (String, Vec<String>) {
    let v: serde_json::Value = serde_json::from_str(stdout).expect("the map is JSON");
    let mut ranks: Vec<(u64, String)> = Vec::new();
    for node in v["nodes"].as_array().unwrap() {
        for p in node["procs"].as_array().unwrap() {
            ranks.push((
                p["rank"].as_u64().unwrap(),
                node["name"].as_str().unwrap().to_string(),
            ));
        }
    }
    ranks.sort();
    (
        v["mapper"].as_str().unwrap().to_string(),
        ranks.into_iter().map(|(_, h)| h).collect(),
    )
}

fn hosts(list: &[&str]) -> Vec<String> {
    list.iter().map(|h| h.to_string()).collect()
}

#[test]
fn the_template_component_builds_from_the_packages_and_maps_real_jobs() {
    let dir = tempfile::tempdir().unwrap();
    build_template(dir.path());
    let library = dir.path().join("libmca_rmaps_example.so");
    assert!(library.is_file(), "{} was not installed", library.display());

    // Each framework crate's package carries its interface version.
    for (name, interface) in [
        (
            "oxmpi-framework-btl",
            oxmpi_framework_btl::INTERFACE_VERSION,
        ),
        (
            "oxmpi-framework-pml",
            oxmpi_framework_pml::INTERFACE_VERSION,
        ),
        (
            "oxmpi-framework-mtl",
            oxmpi_framework_mtl::INTERFACE_VERSION,
        ),
        (
            "oxmpi-framework-coll",
            oxmpi_framework_coll::INTERFACE_VERSION,
        ),
        (
            "oxmpi-framework-rmaps",
            oxmpi_framework_rmaps::INTERFACE_VERSION,
        ),
    ] {
        let version = packaged_version(name);
        let major_minor = format!("{}.{}.", interface.major, interface.minor);
        assert!(
            version.starts_with(&major_minor),
            "{name} {version} is packaged for interface {interface}: its major.minor must be the interface's"
        );
    }

    let path = format!("{}:SYSTEM_DEFAULT", dir.path().display());

    // Its policy, with its defaults, then with its parameter set.
    let map = |extra: &[&str]| {
        let mut args = vec!["--mca", "mca_base_component_path", path.as_str()];
        args.extend_from_slice(extra);
        args.extend([
            "--do-not-launch",
            "--display-map=json",
            "--host",
            "a:4,b:4",
            "-n",
            "6",
            "--map-by",
            "block",
            "true",
        ]);
        let run = mpirun_in(&args, &["OXMPI_MCA_"], &[] as &[(&str, &str)]);
        assert_eq!(run.code(), 0, "{}", run.stderr);
        assert_eq!(run.stderr, "");
        mapped(&run.stdout)
    };
    assert_eq!(
        map(&[]),
        ("example".into(), hosts(&["a", "a", "b", "b", "a", "a"]))
    );
    assert_eq!(
        map(&["--mca", "rmaps_example_block_size", "3"]),
        ("example".into(), hosts(&["a", "a", "a", "b", "b", "b"]))
    );

    // A real job: the ranks run with the extra directory on their path too.
    let hello = built("hello").display().to_string();
    let mut args = vec![
        "-n",
        "4",
        "--mca",
        "mca_base_component_path",
        path.as_str(),
        "--map-by",
        "block",
        "--display-map",
    ];
    args.extend(TCP);
    args.push(hello.as_str());
    let run = mpirun_in(&args, &["OXMPI_MCA_"], &[] as &[(&str, &str)]);
    assert_eq!(
        run.code(),
        0,
        "stdout: {}\nstderr: {}",
        run.stdout,
        run.stderr
    );
    assert!(
        run.stdout
            .contains("Mapper: example\tMapping policy: block\t"),
        "{}",
        run.stdout
    );
    for rank in 0..4 {
        assert!(
            run.stdout.contains(&format!("Hello from rank {rank} of 4")),
            "{}",
            run.stdout
        );
    }

    // oxmpi_info lists it, its policy and its parameter, and no failure.
    let info = |args: &[&str]| {
        let out = Command::new(built("oxmpi_info"))
            .args(args)
            .env("OXMPI_MCA_mca_base_component_path", &path)
            .stdin(Stdio::null())
            .output()
            .expect("oxmpi_info runs");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "oxmpi_info {args:?}: {stderr}");
        (stdout, stderr)
    };
    let (out, err) = info(&["--parsable", "--level", "9"]);
    assert_eq!(err, "");
    let abi = out
        .lines()
        .find_map(|l| l.strip_prefix("oxmpi:version:plugin_abi:"))
        .map(str::to_string);
    assert_eq!(
        abi,
        Some(packaged_version("oxmpi-plugin-api")),
        "the plugin ABI version is oxmpi-plugin-api's package version:\n{out}"
    );
    let expected = [
        "mca:rmaps:example:version:component:0.1.0\n".to_string(),
        format!("mca:rmaps:example:path:{}\n", library.display()),
        "mca:rmaps:example:policy:block:Deals processes to the hosts in blocks".to_string(),
    ];
    for line in &expected {
        assert!(out.contains(line.as_str()), "no {line:?} in:\n{out}");
    }
    let (params, err) = info(&["--parsable", "--param", "rmaps", "example", "--level", "9"]);
    assert_eq!(err, "");
    for line in [
        "mca:rmaps:example:param:rmaps_example_block_size:value:2\n",
        "mca:rmaps:example:param:rmaps_example_block_size:level:1\n",
        "mca:rmaps:example:param:rmaps_example_block_size:range:1 - 65536\n",
        "mca:rmaps:example:param:rmaps_example_priority:value:20\n",
    ] {
        assert!(params.contains(line), "no {line:?} in:\n{params}");
    }
    let (failed, err) = info(&["--parsable", "--show-failed"]);
    assert_eq!(err, "");
    assert!(
        !failed.contains("rmaps_example"),
        "the template component is listed as failed:\n{failed}"
    );
}
