//! Where oxmpi is installed: prefix, configuration directory, component
//! directories.
//!
//! - `OXMPI_PREFIX` set: that prefix (a relocated install); parameter files in
//!   `$OXMPI_PREFIX/etc`, components in `$OXMPI_PREFIX/lib/oxmpi`.
//! - A dev build (the program runs from a cargo `target/<profile>` directory
//!   of a checkout that has `etc/oxmpi-mca-params.conf`): the checkout is the
//!   prefix, its `etc/` holds the parameter files, and the components are the
//!   ones cargo built next to the program.
//! - Otherwise the program is in `<prefix>/bin`.

use std::path::{Path, PathBuf};

/// Name of the system parameter file.
pub const SYSTEM_PARAM_FILE: &str = "oxmpi-mca-params.conf";
/// Name of the system override file.
pub const OVERRIDE_PARAM_FILE: &str = "oxmpi-mca-params-override.conf";

/// How the install layout was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Layout {
    /// From `OXMPI_PREFIX`.
    Relocated,
    /// A cargo build inside a source checkout.
    DevTree,
    /// `<prefix>/bin/<program>`.
    Installed,
}

/// The install's directories.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstallPaths {
    /// How the layout was found.
    pub layout: Layout,
    /// Install prefix (the checkout, in a dev tree).
    pub prefix: PathBuf,
    /// Directory of the programs.
    pub bindir: PathBuf,
    /// Directory of the system parameter and override files.
    pub sysconfdir: PathBuf,
    /// Component directory of the install (`<prefix>/lib/oxmpi`), or the
    /// cargo output directory in a dev tree.
    pub component_dir: PathBuf,
}

impl InstallPaths {
    /// Finds the layout from the running program's path and `OXMPI_PREFIX`.
    pub fn detect(exe: Option<&Path>, prefix_override: Option<&str>) -> InstallPaths {
        if let Some(prefix) = prefix_override.filter(|p| !p.is_empty()) {
            return Self::under_prefix(PathBuf::from(prefix), Layout::Relocated);
        }
        let exe_dir = exe
            .and_then(Path::parent)
            .map(|d| {
                if d.ends_with("deps") || d.ends_with("examples") {
                    d.parent().unwrap_or(d)
                } else {
                    d
                }
            })
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        if let Some(checkout) = dev_checkout(&exe_dir) {
            return InstallPaths {
                layout: Layout::DevTree,
                bindir: exe_dir.clone(),
                sysconfdir: checkout.join("etc"),
                component_dir: exe_dir,
                prefix: checkout,
            };
        }
        let prefix = exe_dir.parent().map(Path::to_path_buf).unwrap_or(exe_dir);
        Self::under_prefix(prefix, Layout::Installed)
    }

    fn under_prefix(prefix: PathBuf, layout: Layout) -> InstallPaths {
        InstallPaths {
            layout,
            bindir: prefix.join("bin"),
            sysconfdir: prefix.join("etc"),
            component_dir: prefix.join("lib").join("oxmpi"),
            prefix,
        }
    }

    /// The system parameter file.
    pub fn system_param_file(&self) -> PathBuf {
        self.sysconfdir.join(SYSTEM_PARAM_FILE)
    }

    /// The system override file.
    pub fn override_param_file(&self) -> PathBuf {
        self.sysconfdir.join(OVERRIDE_PARAM_FILE)
    }
}

/// The user's parameter file, `$HOME/.oxmpi/mca-params.conf`.
pub fn user_param_file(home: &Path) -> PathBuf {
    home.join(".oxmpi").join("mca-params.conf")
}

/// The user's component directory, `$HOME/.oxmpi/components`.
pub fn user_component_dir(home: &Path) -> PathBuf {
    home.join(".oxmpi").join("components")
}

/// If `dir` is `<checkout>/target/<profile>` (or deeper) of a checkout with
/// an `etc/oxmpi-mca-params.conf`, the checkout.
fn dev_checkout(dir: &Path) -> Option<PathBuf> {
    let target = dir
        .ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == "target"))?;
    let checkout = target.parent()?;
    checkout
        .join("etc")
        .join(SYSTEM_PARAM_FILE)
        .is_file()
        .then(|| checkout.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_override_wins() {
        let p = InstallPaths::detect(Some(Path::new("/usr/bin/oxmpi_info")), Some("/opt/ox"));
        assert_eq!(p.layout, Layout::Relocated);
        assert_eq!(
            p.system_param_file(),
            PathBuf::from("/opt/ox/etc/oxmpi-mca-params.conf")
        );
        assert_eq!(p.component_dir, PathBuf::from("/opt/ox/lib/oxmpi"));
    }

    #[test]
    fn installed_layout_from_bindir() {
        let p = InstallPaths::detect(Some(Path::new("/nonexistent/ox/bin/oxmpi_info")), None);
        assert_eq!(p.layout, Layout::Installed);
        assert_eq!(p.prefix, PathBuf::from("/nonexistent/ox"));
        assert_eq!(
            p.override_param_file(),
            PathBuf::from("/nonexistent/ox/etc/oxmpi-mca-params-override.conf")
        );
    }

    #[test]
    fn dev_tree_detected_from_target_dir() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("etc")).unwrap();
        std::fs::write(dir.path().join("etc").join(SYSTEM_PARAM_FILE), "").unwrap();
        let exe = dir.path().join("target/debug/deps/test-123");
        let p = InstallPaths::detect(Some(&exe), None);
        assert_eq!(p.layout, Layout::DevTree);
        assert_eq!(p.component_dir, dir.path().join("target/debug"));
        assert_eq!(p.sysconfdir, dir.path().join("etc"));
    }
}
