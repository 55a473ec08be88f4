//! Shared-memory segment files: [`create`] makes a new file of a given
//! size and maps it shared, for a component (btl sm, coll sm) whose
//! processes then map the same file. On failure after the file was made,
//! the file is removed, so nothing is left behind. [`prefetch`] holds the
//! cache hints both components give for a segment's lines.

pub mod prefetch;

use memmap2::MmapRaw;
use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Creates the file `path` (mode 0600; it must not exist), sizes it to
/// `len` bytes and maps it shared, readable and writable. Its pages are
/// zero. `owner` (such as `"coll sm"`) is named in the messages: "the
/// shared segment `path` of `owner`".
///
/// # Errors
///
/// The file cannot be created (it exists, or the directory refuses), sized
/// or mapped; the message names the file, and the file is removed when it
/// was made.
pub fn create(path: &Path, len: usize, owner: Option<&str>) -> Result<MmapRaw, String> {
    let name = match owner {
        Some(owner) => format!("the shared segment {} of {owner}", path.display()),
        None => format!("the shared segment {}", path.display()),
    };
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("cannot create {name}: {e}"))?;
    let fail = |what: &str, e: std::io::Error| {
        let _ = std::fs::remove_file(path);
        format!("cannot {what} {name} ({len} bytes): {e}")
    };
    file.set_len(len as u64).map_err(|e| fail("size", e))?;
    MmapRaw::map_raw(&file).map_err(|e| fail("map", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_file_is_mapped_shared_and_an_existing_one_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg");
        let map = create(&path, 8192, Some("tests")).unwrap();
        assert_eq!(map.len(), 8192);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 8192);
        // SAFETY: in bounds; nobody else uses the mapping.
        unsafe { map.as_mut_ptr().add(100).write(7) };
        assert_eq!(
            std::fs::read(&path).unwrap()[100],
            7,
            "shared with the file"
        );
        let why = create(&path, 8192, Some("tests")).unwrap_err();
        assert!(
            why.starts_with(&format!(
                "cannot create the shared segment {} of tests:",
                path.display()
            )),
            "{why}"
        );
        let why = create(&path, 8192, None).unwrap_err();
        assert!(
            why.starts_with(&format!(
                "cannot create the shared segment {}:",
                path.display()
            )),
            "{why}"
        );
    }

    #[test]
    fn a_file_that_cannot_be_sized_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg");
        let why = create(&path, usize::MAX, None).unwrap_err();
        assert!(why.starts_with("cannot size the shared segment"), "{why}");
        assert!(!path.exists());
    }
}
