use super::*;

/// A scratch directory under the system's temporary directory, removed
/// when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("oxmpi-test-support-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    /// Creates `relative` (a directory) and, when `tag`, cargo's
    /// `CACHEDIR.TAG` in it.
    fn dir(&self, relative: &str, tag: bool) -> PathBuf {
        let dir = self.0.join(relative);
        std::fs::create_dir_all(&dir).unwrap();
        if tag {
            std::fs::write(
                dir.join("CACHEDIR.TAG"),
                "Signature: 8a477f597d28d172789f06886806bc55\n",
            )
            .unwrap();
        }
        dir
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_plain_debug_build_is_the_dev_profile_in_the_target_dir() {
    let s = Scratch::new("plain");
    let target = s.dir("target", true);
    let deps = s.dir("target/debug/deps", false);
    let layout = Layout::of_test_executable(&deps.join("launch-0123abcd")).unwrap();
    assert_eq!(layout.target_dir, target);
    assert_eq!(layout.triple, None);
    assert_eq!(layout.profile_dir, target.join("debug"));
    assert_eq!(layout.profile, "dev");
    let args: Vec<String> = layout
        .build_args()
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        args,
        [
            "build",
            "--workspace",
            "--lib",
            "--bins",
            "--examples",
            "--profile",
            "dev",
            "--target-dir",
            &target.display().to_string(),
        ]
    );
}

#[test]
fn release_and_custom_profiles_keep_their_names() {
    let s = Scratch::new("profiles");
    s.dir("out", true);
    for profile in ["release", "ci-fast"] {
        let deps = s.dir(&format!("out/{profile}/deps"), false);
        let layout = Layout::of_test_executable(&deps.join("t-1")).unwrap();
        assert_eq!(layout.profile, profile);
        assert_eq!(layout.target_dir, s.0.join("out"));
    }
}

#[test]
fn a_triple_directory_is_recognized_by_the_tag_above_it() {
    let s = Scratch::new("triple");
    let target = s.dir("target", true);
    let deps = s.dir("target/x86_64-unknown-linux-gnu/debug/deps", false);
    let layout = Layout::of_test_executable(&deps.join("t-1")).unwrap();
    assert_eq!(layout.target_dir, target);
    assert_eq!(
        layout.triple.as_deref(),
        Some(OsStr::new("x86_64-unknown-linux-gnu"))
    );
    let args = layout.build_args();
    let n = args.len();
    assert_eq!(args[n - 2], "--target");
    assert_eq!(args[n - 1], "x86_64-unknown-linux-gnu");
}

#[test]
fn an_executable_outside_deps_is_refused_with_its_path() {
    let err = Layout::of_test_executable(Path::new("/usr/bin/launch-test")).unwrap_err();
    assert!(err.contains("/usr/bin/launch-test"), "{err}");
    assert!(err.contains("run the tests with cargo test"), "{err}");
    assert!(Layout::of_test_executable(Path::new("deps")).is_err());
    assert!(Layout::of_test_executable(Path::new("/deps/t")).is_err());
}

#[test]
fn a_missing_artifact_is_named_with_the_build_that_should_have_made_it() {
    let s = Scratch::new("missing");
    s.dir("target", true);
    let deps = s.dir("target/debug/deps", false);
    let artifacts = Artifacts {
        layout: Layout::of_test_executable(&deps.join("t-1")).unwrap(),
    };
    std::fs::write(s.0.join("target/debug/present"), b"").unwrap();
    assert_eq!(
        artifacts.program("present"),
        s.0.join("target/debug/present")
    );
    let err = std::panic::catch_unwind(|| artifacts.example("absent")).unwrap_err();
    let message = err.downcast_ref::<String>().unwrap();
    assert!(message.contains("examples/absent is missing"), "{message}");
    assert!(message.contains("no example of the workspace"), "{message}");
    assert!(message.contains("cargo build --workspace"), "{message}");
}

#[test]
fn the_workspace_builds_and_holds_this_crate() {
    // The real thing, as every caller uses it: the build must succeed, and
    // its output directory must hold this crate's own library.
    let artifacts = build_workspace();
    assert!(artifacts.dir().join("liboxmpi_test_support.rlib").is_file());
    assert!(std::ptr::eq(artifacts, build_workspace()));
}
