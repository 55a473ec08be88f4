//! A per-boot cache of this machine's topology.
//!
//! hwloc's discovery takes several milliseconds, which would dominate the
//! launch of a small job. The first discovery after a change of the machine
//! is stored as JSON in a private per-user directory
//! (`$XDG_RUNTIME_DIR/oxmpi`, else `/tmp/oxmpi-<uid>`), under a key made of
//! everything that can change what hwloc sees: the host name, the boot id,
//! the online CPUs and NUMA nodes, the cgroup's effective CPU set, and this
//! crate's version. A file with another key, an unreadable file, or a
//! directory that is not owned by the user or is open to others is ignored
//! (and hwloc runs). Writes are atomic (a temporary file then a rename).
//!
//! No cache is used when `OXMPI_TOPOLOGY_CACHE=0`, or when hwloc is told to
//! read something else (`HWLOC_XMLFILE`, `HWLOC_SYNTHETIC`,
//! `HWLOC_COMPONENTS`, `HWLOC_FSROOT`).

use crate::{Topology, TopologyError};
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Where and under which key the cache lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheConfig {
    /// The private directory.
    pub dir: PathBuf,
    /// Everything the topology depends on.
    pub key: String,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Entry {
    key: String,
    topology: Topology,
}

fn read_trimmed(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "-".into())
}

fn cgroup_cpus() -> String {
    let Ok(cgroups) = std::fs::read_to_string("/proc/self/cgroup") else {
        return "-".into();
    };
    // cgroup v2: "0::/path".
    match cgroups.lines().find_map(|l| l.strip_prefix("0::")) {
        Some(path) => read_trimmed(&format!(
            "/sys/fs/cgroup{}/cpuset.cpus.effective",
            path.trim_end_matches('/')
        )),
        None => "-".into(),
    }
}

impl CacheConfig {
    /// The configuration for this process, or `None` when no cache may be
    /// used (see the module documentation).
    pub fn for_this_process() -> Option<CacheConfig> {
        if std::env::var("OXMPI_TOPOLOGY_CACHE").as_deref() == Ok("0") {
            return None;
        }
        if [
            "HWLOC_XMLFILE",
            "HWLOC_SYNTHETIC",
            "HWLOC_COMPONENTS",
            "HWLOC_FSROOT",
        ]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
        {
            return None;
        }
        // SAFETY: getuid takes no argument, touches no memory of ours and
        // cannot fail.
        let uid = unsafe { libc::getuid() };
        let dir = match std::env::var_os("XDG_RUNTIME_DIR")
            .map(PathBuf::from)
            .filter(|d| d.is_dir())
        {
            Some(runtime) => runtime.join("oxmpi"),
            None => PathBuf::from(format!("/tmp/oxmpi-{uid}")),
        };
        let key = [
            read_trimmed("/proc/sys/kernel/hostname"),
            read_trimmed("/proc/sys/kernel/random/boot_id"),
            read_trimmed("/sys/devices/system/cpu/online"),
            read_trimmed("/sys/devices/system/node/online"),
            cgroup_cpus(),
            env!("CARGO_PKG_VERSION").to_string(),
        ]
        .join("|");
        Some(CacheConfig { dir, key })
    }

    fn file(&self) -> PathBuf {
        let mut h = DefaultHasher::new();
        self.key.hash(&mut h);
        self.dir.join(format!("topology-{:016x}.json", h.finish()))
    }

    /// Whether the directory is ours and closed to others.
    fn dir_is_private(&self) -> bool {
        // SAFETY: getuid takes no argument, touches no memory of ours and
        // cannot fail.
        let uid = unsafe { libc::getuid() };
        std::fs::symlink_metadata(&self.dir)
            .is_ok_and(|m| m.is_dir() && m.uid() == uid && m.mode() & 0o077 == 0)
    }

    /// The cached topology, if there is a valid one.
    pub fn read(&self) -> Option<Topology> {
        if !self.dir_is_private() {
            return None;
        }
        let text = std::fs::read_to_string(self.file()).ok()?;
        let entry: Entry = serde_json::from_str(&text).ok()?;
        (entry.key == self.key).then_some(entry.topology)
    }

    /// Stores `topology` (best effort: failures are ignored).
    pub fn write(&self, topology: &Topology) {
        let _ = std::fs::DirBuilder::new().mode(0o700).create(&self.dir);
        if !self.dir_is_private() {
            return;
        }
        let entry = Entry {
            key: self.key.clone(),
            topology: topology.clone(),
        };
        let Ok(text) = serde_json::to_string(&entry) else {
            return;
        };
        let tmp = self
            .dir
            .join(format!(".topology.{}.tmp", std::process::id()));
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|mut f| f.write_all(text.as_bytes()));
        if written.is_err() || std::fs::rename(&tmp, self.file()).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
}

/// This machine's topology: from the cache when valid, else discovered by
/// hwloc (and cached).
pub fn load_local() -> Result<Topology, TopologyError> {
    load_with(CacheConfig::for_this_process().as_ref(), Topology::load)
}

/// [`load_local`] with an explicit cache and discovery (for tests).
pub fn load_with(
    cache: Option<&CacheConfig>,
    discover: impl FnOnce() -> Result<Topology, TopologyError>,
) -> Result<Topology, TopologyError> {
    if let Some(t) = cache.and_then(CacheConfig::read) {
        return Ok(t);
    }
    let topology = discover()?;
    if let Some(c) = cache {
        c.write(&topology);
    }
    Ok(topology)
}

/// The cache file for a configuration (for tests and diagnostics).
pub fn cache_file(config: &CacheConfig) -> PathBuf {
    config.file()
}

/// Whether `dir` would be accepted as the cache directory.
pub fn is_private_dir(dir: &Path) -> bool {
    CacheConfig {
        dir: dir.to_path_buf(),
        key: String::new(),
    }
    .dir_is_private()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn config(dir: &Path, key: &str) -> CacheConfig {
        CacheConfig {
            dir: dir.join("cache"),
            key: key.into(),
        }
    }

    #[test]
    fn discovery_runs_once_then_the_cache_answers() {
        let root = tempfile::tempdir().unwrap();
        let c = config(root.path(), "k1");
        let machine = Topology::synthetic("package:2 core:2 pu:2").unwrap();
        let first = load_with(Some(&c), || Ok(machine.clone())).unwrap();
        assert_eq!(first, machine);
        let again = load_with(Some(&c), || panic!("the cache must answer")).unwrap();
        assert_eq!(again, machine);
        let meta = std::fs::metadata(&c.dir).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o700);
        assert!(std::fs::read_dir(&c.dir).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".tmp")));
    }

    #[test]
    fn another_key_misses() {
        let root = tempfile::tempdir().unwrap();
        let machine = Topology::synthetic("package:1 core:2 pu:1").unwrap();
        load_with(Some(&config(root.path(), "old boot")), || {
            Ok(machine.clone())
        })
        .unwrap();
        let other = Topology::synthetic("package:1 core:4 pu:1").unwrap();
        let got = load_with(Some(&config(root.path(), "new boot")), || Ok(other.clone())).unwrap();
        assert_eq!(got, other);
    }

    #[test]
    fn a_directory_open_to_others_is_not_trusted() {
        let root = tempfile::tempdir().unwrap();
        let c = config(root.path(), "k");
        let machine = Topology::synthetic("package:1 core:2 pu:1").unwrap();
        load_with(Some(&c), || Ok(machine.clone())).unwrap();
        std::fs::set_permissions(&c.dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(!is_private_dir(&c.dir));
        let fresh = Topology::synthetic("package:1 core:3 pu:1").unwrap();
        assert_eq!(load_with(Some(&c), || Ok(fresh.clone())).unwrap(), fresh);
    }

    #[test]
    fn a_corrupt_file_is_ignored_and_replaced() {
        let root = tempfile::tempdir().unwrap();
        let c = config(root.path(), "k");
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&c.dir)
            .unwrap();
        std::fs::write(cache_file(&c), "{ not json").unwrap();
        let machine = Topology::synthetic("package:1 core:2 pu:1").unwrap();
        assert_eq!(
            load_with(Some(&c), || Ok(machine.clone())).unwrap(),
            machine
        );
        assert_eq!(
            load_with(Some(&c), || panic!("cached now")).unwrap(),
            machine
        );
    }
}
