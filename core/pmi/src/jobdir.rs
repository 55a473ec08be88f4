//! The job's session directory: one private directory per job where
//! components keep the files the job shares (shared-memory segments), and
//! which is removed with everything in it when the job ends.
//!
//! mpirun creates it before launching, tells the ranks its path in
//! [`JOB_DIR_VAR`], and removes it when the job ends (its guardian does
//! when mpirun is killed). A singleton creates its own on first use and
//! removes it at finalize and at exit.
//!
//! It lives under `/dev/shm` when that is a tmpfs directory this user can
//! write, else under `$TMPDIR` (an absolute path), else `/tmp`
//! ([`base_dir`]). Its name, `oxmpi-<uid>-<pid>-<job id>`, names the user,
//! the process that owns it (mpirun, or the singleton) and the job, so a
//! later job of the same user can remove directories whose owner died
//! without cleaning up ([`sweep_stale`]).
//!
//! A directory is created with mode 0700 and never reused: a path that
//! already exists (a symbolic link, another user's directory, or a
//! directory left behind) is an error naming it, and it is left as it is.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Environment variable carrying the job directory's path to the ranks.
pub const JOB_DIR_VAR: &str = "OXMPI_JOB_DIR";

/// Environment variable naming the directory in which job directories are
/// made, instead of [`base_dir`]'s choice (for tests, or a site that wants
/// another place).
pub const BASE_DIR_VAR: &str = "OXMPI_JOB_DIR_BASE";

/// Prefix of every job directory's name.
const PREFIX: &str = "oxmpi-";

/// The tmpfs magic number of `statfs`.
const TMPFS_MAGIC: i64 = 0x0102_1994;

/// The directory where job directories are made: `$OXMPI_JOB_DIR_BASE` if
/// set (not empty), else `/dev/shm` if it is a tmpfs directory this user
/// can write, else `$TMPDIR` if it is an absolute path (and valid UTF-8),
/// else `/tmp`.
pub fn base_dir() -> PathBuf {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    if let Some(base) = var(BASE_DIR_VAR) {
        return PathBuf::from(base);
    }
    choose_base(Path::new("/dev/shm"), var("TMPDIR").as_deref())
}

/// [`base_dir`]'s choice between a shared-memory directory and the
/// temporary directory.
fn choose_base(shm: &Path, tmpdir: Option<&str>) -> PathBuf {
    if is_writable_tmpfs(shm) {
        return shm.to_path_buf();
    }
    match tmpdir {
        Some(t) if Path::new(t).is_absolute() => PathBuf::from(t),
        _ => PathBuf::from("/tmp"),
    }
}

fn is_writable_tmpfs(dir: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: an all-zero statfs is a valid value for the kernel to
    // overwrite; statfs reads the NUL-terminated path `c` and writes only
    // into `st`; access only reads the path.
    unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        libc::statfs(c.as_ptr(), &mut st) == 0
            && st.f_type as i64 == TMPFS_MAGIC
            && libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) == 0
    }
}

/// The name of the directory of job `job_id` owned by process `pid`:
/// `oxmpi-<uid>-<pid>-<job id as 16 hex digits>`.
pub fn dir_name(uid: u32, pid: u32, job_id: u64) -> String {
    format!("{PREFIX}{uid}-{pid}-{job_id:016x}")
}

/// The path of this process's directory for job `job_id` under
/// [`base_dir`].
pub fn default_path(job_id: u64) -> PathBuf {
    base_dir().join(dir_name(euid(), std::process::id(), job_id))
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and touches no memory.
    unsafe { libc::geteuid() }
}

/// The owning process of a job directory named `name` of user `uid`, if
/// the name has that shape.
fn owner_pid(name: &str, uid: u32) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    let (user, rest) = rest.split_once('-')?;
    let (pid, job) = rest.split_once('-')?;
    let shaped = user.parse::<u32>().ok()? == uid
        && job.len() == 16
        && job.bytes().all(|b| b.is_ascii_hexdigit());
    shaped.then(|| pid.parse().ok()).flatten()
}

/// A job directory this process created; dropping it removes the
/// directory and everything in it.
#[derive(Debug)]
pub struct JobDir {
    path: PathBuf,
    removed: bool,
}

impl JobDir {
    /// Creates the directory `path`, mode 0700, owned by this user.
    ///
    /// # Errors
    /// The path already exists (a symbolic link, which is not followed;
    /// another user's file or directory; or a directory of ours, which may
    /// be another job's) or cannot be created; the message names the path
    /// and what to do. Nothing that existed is changed.
    pub fn create(path: &Path) -> Result<JobDir, String> {
        let shown = path.display();
        if let Err(e) = DirBuilder::new().mode(0o700).create(path) {
            return Err(match e.kind() {
                io::ErrorKind::AlreadyExists => format!(
                    "cannot create the job directory {shown}: {}; oxmpi uses only a directory it creates itself, so remove it if it is stale",
                    describe_existing(path)
                ),
                _ => format!(
                    "cannot create the job directory {shown}: {e}; set TMPDIR (or {BASE_DIR_VAR}) to a directory you can write"
                ),
            });
        }
        let dir = JobDir {
            path: path.to_path_buf(),
            removed: false,
        };
        // The mode, whatever the umask; through a descriptor that does not
        // follow symbolic links.
        let file = open_dir_nofollow(path)
            .and_then(|f| {
                f.set_permissions(std::fs::Permissions::from_mode(0o700))?;
                Ok(f)
            })
            .map_err(|e| format!("cannot set up the job directory {shown}: {e}"))?;
        drop(file);
        Ok(dir)
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the directory and everything in it (symbolic links inside
    /// are removed, never followed). Dropping the `JobDir` does the same.
    ///
    /// # Errors
    /// Something in it cannot be removed; the message names the directory.
    pub fn remove(mut self) -> Result<(), String> {
        self.removed = true;
        remove_tree(&self.path)
    }
}

impl Drop for JobDir {
    fn drop(&mut self) {
        if !self.removed {
            let _ = remove_tree(&self.path);
        }
    }
}

/// Removes the directory `path` and everything in it, without following
/// symbolic links; a path that no longer exists is not an error.
///
/// # Errors
/// Something cannot be removed; the message names the path.
pub fn remove_tree(path: &Path) -> Result<(), String> {
    match std::fs::remove_dir_all(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(format!(
            "cannot remove the job directory {}: {e}",
            path.display()
        )),
        _ => Ok(()),
    }
}

fn open_dir_nofollow(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// What is at `path`, which exists, for an error message.
fn describe_existing(path: &Path) -> String {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            "it already exists as a symbolic link (not followed)".to_string()
        }
        Ok(m) if m.uid() != euid() => {
            format!("it already exists and belongs to user id {}", m.uid())
        }
        Ok(m) if m.is_dir() => "a directory of that name already exists".to_string(),
        Ok(_) => "a file of that name already exists".to_string(),
        Err(e) => format!("it exists but cannot be examined ({e})"),
    }
}

/// Checks that `path`, given by a launcher, is a job directory this
/// process may use: an absolute path to a directory (not a symbolic link)
/// of this user that no other user can access.
///
/// # Errors
/// A sentence naming the path and what is wrong.
pub fn check_given(path: &Path) -> Result<(), String> {
    let shown = path.display();
    let bad = |what: String| {
        Err(format!(
            "the job directory {shown} from {JOB_DIR_VAR} {what}; {JOB_DIR_VAR} is set by mpirun, do not set it by hand"
        ))
    };
    if !path.is_absolute() {
        return bad("is not an absolute path".to_string());
    }
    let m = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) => return bad(format!("cannot be used: {e}")),
    };
    if m.file_type().is_symlink() {
        return bad("is a symbolic link".to_string());
    }
    if !m.is_dir() {
        return bad("is not a directory".to_string());
    }
    if m.uid() != euid() {
        return bad(format!("belongs to user id {}, not to this user", m.uid()));
    }
    if m.mode() & 0o077 != 0 {
        return bad(format!(
            "is accessible to other users (mode {:o})",
            m.mode() & 0o7777
        ));
    }
    Ok(())
}

/// Removes, in `base`, the job directories of this user whose owning
/// process no longer exists (left behind by a process killed with SIGKILL,
/// which cannot clean up), except `keep`'s. Returns how many it removed.
///
/// One directory listing and, per directory of this user's whose owner is
/// another process, one `kill(pid, 0)`; a directory is removed only if it
/// is a directory of this user (not a symbolic link). Errors are ignored:
/// the sweep is a courtesy.
pub fn sweep_stale(base: &Path, keep: Option<&Path>) -> usize {
    let uid = euid();
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir(base) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| owner_pid(n, uid)) else {
            continue;
        };
        let path = entry.path();
        if pid == me || keep == Some(path.as_path()) || process_exists(pid) {
            continue;
        }
        let ours = std::fs::symlink_metadata(&path)
            .is_ok_and(|m| m.is_dir() && !m.file_type().is_symlink() && m.uid() == uid);
        if ours && remove_tree(&path).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Whether process `pid` exists (in this pid namespace). A pid that does
/// not fit a `pid_t` does not.
fn process_exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks that the process exists and
    // may be signalled; it sends nothing and touches no memory.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn creates_a_private_directory_and_removes_it_with_its_contents() {
        let base = tempfile::tempdir().unwrap();
        let path = base.path().join(dir_name(euid(), std::process::id(), 7));
        let dir = JobDir::create(&path).unwrap();
        let m = std::fs::symlink_metadata(&path).unwrap();
        assert!(m.is_dir());
        assert_eq!(m.mode() & 0o7777, 0o700);
        check_given(&path).unwrap();
        std::fs::create_dir(path.join("sub")).unwrap();
        std::fs::write(path.join("sub/segment"), b"x").unwrap();
        // A link inside pointing out: removed, its target kept.
        let outside = base.path().join("outside");
        std::fs::write(&outside, b"keep").unwrap();
        symlink(&outside, path.join("link")).unwrap();
        dir.remove().unwrap();
        assert!(!path.exists());
        assert_eq!(std::fs::read(&outside).unwrap(), b"keep");
    }

    #[test]
    fn drop_removes_the_directory() {
        let base = tempfile::tempdir().unwrap();
        let path = base.path().join("job");
        {
            let _dir = JobDir::create(&path).unwrap();
            std::fs::write(path.join("f"), b"x").unwrap();
        }
        assert!(!path.exists());
    }

    #[test]
    fn an_existing_symlink_is_refused_and_not_followed() {
        let base = tempfile::tempdir().unwrap();
        let target = base.path().join("target");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("precious"), b"x").unwrap();
        let path = base.path().join("job");
        symlink(&target, &path).unwrap();
        let e = JobDir::create(&path).unwrap_err();
        assert!(e.contains(&path.display().to_string()), "{e}");
        assert!(e.contains("symbolic link"), "{e}");
        assert!(std::fs::symlink_metadata(&path)
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(target.join("precious").exists());
        assert!(check_given(&path).unwrap_err().contains("symbolic link"));
    }

    #[test]
    fn an_existing_directory_is_refused_and_kept() {
        let base = tempfile::tempdir().unwrap();
        let path = base.path().join("job");
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("theirs"), b"x").unwrap();
        let e = JobDir::create(&path).unwrap_err();
        assert!(e.contains("already exists"), "{e}");
        assert!(path.join("theirs").exists());
    }

    #[test]
    fn a_directory_others_can_read_is_not_accepted_from_the_launcher() {
        let base = tempfile::tempdir().unwrap();
        let path = base.path().join("job");
        std::fs::create_dir(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(check_given(&path).unwrap_err().contains("other users"));
        assert!(check_given(Path::new("relative"))
            .unwrap_err()
            .contains("absolute"));
        assert!(check_given(&base.path().join("missing")).is_err());
    }

    #[test]
    fn names_carry_user_pid_and_job() {
        let name = dir_name(1000, 4242, 0xabc);
        assert_eq!(name, "oxmpi-1000-4242-0000000000000abc");
        assert_eq!(owner_pid(&name, 1000), Some(4242));
        assert_eq!(owner_pid(&name, 1001), None);
        assert_eq!(owner_pid("oxmpi-1000-4242-xyz", 1000), None);
        assert_eq!(owner_pid("other", 1000), None);
    }

    #[test]
    fn sweep_removes_directories_of_dead_processes_only() {
        let base = tempfile::tempdir().unwrap();
        let uid = euid();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let stale = base.path().join(dir_name(uid, dead, 1));
        std::fs::create_dir(&stale).unwrap();
        std::fs::write(stale.join("segment"), b"x").unwrap();
        let live = base
            .path()
            .join(dir_name(uid, std::os::unix::process::parent_id(), 2));
        std::fs::create_dir(&live).unwrap();
        let mine = base.path().join(dir_name(uid, std::process::id(), 3));
        std::fs::create_dir(&mine).unwrap();
        let other_user = base.path().join(dir_name(uid.wrapping_add(1), dead, 4));
        std::fs::create_dir(&other_user).unwrap();
        // A link with a stale name: its target is never touched.
        let target = base.path().join("target");
        std::fs::create_dir(&target).unwrap();
        let link = base.path().join(dir_name(uid, dead, 5));
        symlink(&target, &link).unwrap();
        assert_eq!(sweep_stale(base.path(), None), 1);
        assert!(!stale.exists());
        assert!(live.exists() && mine.exists() && other_user.exists());
        assert!(target.exists());
    }

    #[test]
    fn base_prefers_a_writable_tmpfs_then_tmpdir_then_tmp() {
        let plain = tempfile::tempdir().unwrap();
        if is_writable_tmpfs(Path::new("/dev/shm")) {
            assert_eq!(
                choose_base(Path::new("/dev/shm"), Some("/x")),
                PathBuf::from("/dev/shm")
            );
        }
        // A directory that is not a tmpfs (or is missing) is passed over.
        let missing = plain.path().join("missing");
        assert_eq!(
            choose_base(&missing, Some("/scratch/t")),
            PathBuf::from("/scratch/t")
        );
        assert_eq!(choose_base(&missing, Some("rel")), PathBuf::from("/tmp"));
        assert_eq!(choose_base(&missing, None), PathBuf::from("/tmp"));
    }
}
