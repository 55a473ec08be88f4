//! The workspace as it is keeps the layering rules of `docs/components.md`.

use std::path::Path;
use std::process::Command;

fn workspace_metadata() -> serde_json::Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(&root)
        .output()
        .expect("running cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
}

#[test]
fn the_workspace_keeps_the_layering_rules() {
    let metadata = workspace_metadata();
    let violations = oxmpi_layering::check(&metadata).expect("cargo metadata output");
    let text: Vec<String> = violations.iter().map(ToString::to_string).collect();
    assert!(text.is_empty(), "layering violations:\n{}", text.join("\n"));
}

/// The directory under frameworks/ of the request types of the pml
/// interface, which other interfaces may share
/// (`oxmpi-framework-requests`).
const SHARED_INTERFACE: &str = "requests";

/// The rules see the crates they are about (a metadata with no components
/// or frameworks would pass vacuously).
#[test]
fn every_framework_crate_is_known_to_the_core_and_components_are_seen() {
    let metadata = workspace_metadata();
    let root = metadata["workspace_root"].as_str().unwrap().to_string();
    let mut frameworks = Vec::new();
    let mut components = 0;
    for p in metadata["packages"].as_array().unwrap() {
        let manifest = p["manifest_path"].as_str().unwrap();
        let relative = manifest
            .strip_prefix(&root)
            .unwrap()
            .trim_start_matches('/');
        match oxmpi_layering::layer_of(relative) {
            Some(oxmpi_layering::Layer::Framework) => {
                frameworks.push(relative.split('/').nth(1).unwrap().to_string())
            }
            Some(oxmpi_layering::Layer::Component) => components += 1,
            _ => {}
        }
    }
    frameworks.sort();
    // The one interface crate under frameworks/ that is no framework: the
    // request types of the pml interface.
    frameworks.retain(|f| f != SHARED_INTERFACE);
    assert_eq!(frameworks, oxmpi_mca::FRAMEWORK_NAMES);
    assert!(components >= 6, "{components} components");
}
