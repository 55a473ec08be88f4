//! A communicator's shared segment: a file `coll-sm-<job>-<context>-<creator>`
//! in the job directory (or, in tests, an anonymous mapping shared by
//! threads), and its layout. This file holds the component's raw accesses
//! to the mapping; the protocol on top ([`crate::member`]) uses them.
//!
//! The layout (offsets in bytes):
//!
//! | part | what | written by |
//! |---|---|---|
//! | line 0 | header: magic (stored last, release), members, buffers per member, slot size, creator's pid | creator, once |
//! | line 1 | `attached`: members other than the creator that mapped the segment | attachers |
//! | control | per member a [`CONTROL`]-byte line: `done`, the last step it finished reading | that member |
//! | slots | per member `buffers` slots of [`SLOT_HEADER`] + slot size bytes rounded up to [`CONTROL`]: `arrived` (the step whose data the slot holds, stored last with release ordering) then the data | that member |
//!
//! The data starts right after a slot's `arrived` word, in the same cache
//! line: a contribution of up to 56 bytes travels with its flag in one
//! line. Parts are 128 bytes apart (two lines), so the processor's
//! adjacent-line prefetch does not make neighbours share. A new file's
//! pages are zero, every flag's initial value.

use memmap2::{MmapOptions, MmapRaw};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Bytes of a cache line.
pub const LINE: usize = 64;

/// Stride of the control lines and alignment of the slots.
pub const CONTROL: usize = 128;

/// Bytes before a slot's data: its `arrived` word.
pub const SLOT_HEADER: usize = 8;

/// The fewest slots per member (step `s` uses slot `s % buffers`).
pub const MIN_BUFFERS: usize = 2;

/// The magic of a ready segment (stored last, with release ordering).
const MAGIC: u64 = u64::from_le_bytes(*b"oxcollm1");

/// Line 0 of a segment.
#[repr(C)]
struct Header {
    magic: AtomicU64,
    members: u32,
    buffers: u32,
    slot_size: u64,
    pid: u32,
}

/// Offsets of the parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Layout {
    members: usize,
    slot_size: usize,
    buffers: usize,
    slot_stride: usize,
    slots: usize,
    total: usize,
}

impl Layout {
    fn new(members: usize, slot_size: usize, buffers: usize) -> Option<Layout> {
        if buffers < MIN_BUFFERS {
            return None;
        }
        let control = 2 * LINE;
        let slots = control.checked_add(members.checked_mul(CONTROL)?)?;
        let slot_stride = SLOT_HEADER
            .checked_add(slot_size)?
            .checked_next_multiple_of(CONTROL)?;
        let total = slots.checked_add(members.checked_mul(buffers)?.checked_mul(slot_stride)?)?;
        Some(Layout {
            members,
            slot_size,
            buffers,
            slot_stride,
            slots,
            total,
        })
    }
}

/// A mapped segment.
pub struct Segment {
    map: MmapRaw,
    layout: Layout,
    path: Option<PathBuf>,
}

// SAFETY: the mapping is shared memory; every access to a shared word is
// atomic, and the data of a slot is written by its owner only between
// hand-overs ordered by release/acquire on the slot's `arrived` word and
// the readers' `done` words (crate::member). The value holds no
// thread-bound state.
unsafe impl Send for Segment {}
// SAFETY: as above: `&Segment` gives atomics, and data only through the
// protocol's hand-overs.
unsafe impl Sync for Segment {}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment")
            .field("path", &self.path)
            .field("members", &self.layout.members)
            .field("slot_size", &self.layout.slot_size)
            .finish_non_exhaustive()
    }
}

impl Segment {
    /// Creates the segment at `path` (mode 0600; it must not exist) for
    /// `members` processes with `buffers` slots of `slot_size` bytes each,
    /// and marks it ready.
    ///
    /// # Errors
    ///
    /// The sizes overflow, or the file cannot be created, sized or mapped;
    /// the message names the file.
    pub fn create(
        path: &Path,
        members: usize,
        slot_size: usize,
        buffers: usize,
    ) -> Result<Segment, String> {
        let layout = Self::layout(members, slot_size, buffers)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| {
                format!(
                    "cannot create the shared segment {} of coll sm: {e}",
                    path.display()
                )
            })?;
        let fail = |what: &str, e: std::io::Error| {
            let _ = std::fs::remove_file(path);
            format!(
                "cannot {what} the shared segment {} of coll sm ({} bytes): {e}",
                path.display(),
                layout.total
            )
        };
        file.set_len(layout.total as u64)
            .map_err(|e| fail("size", e))?;
        let map = MmapRaw::map_raw(&file).map_err(|e| fail("map", e))?;
        let segment = Segment {
            map,
            layout,
            path: Some(path.to_path_buf()),
        };
        segment.init_header();
        Ok(segment)
    }

    /// An anonymous segment for `members` threads of this process (tests,
    /// and communicators whose members are threads).
    ///
    /// # Errors
    ///
    /// The sizes overflow or the memory cannot be mapped.
    pub fn anonymous(members: usize, slot_size: usize, buffers: usize) -> Result<Segment, String> {
        let layout = Self::layout(members, slot_size, buffers)?;
        let map = MmapOptions::new()
            .len(layout.total)
            .map_anon()
            .map_err(|e| format!("cannot map {} bytes of memory: {e}", layout.total))?;
        let segment = Segment {
            map: MmapRaw::from(map),
            layout,
            path: None,
        };
        segment.init_header();
        Ok(segment)
    }

    fn layout(members: usize, slot_size: usize, buffers: usize) -> Result<Layout, String> {
        Layout::new(members, slot_size, buffers).ok_or_else(|| {
            format!(
                "a shared segment for {members} processes with {buffers} slots of {slot_size} \
                 bytes each is too large (or has fewer than {MIN_BUFFERS} slots)"
            )
        })
    }

    /// Writes the header of a new mapping and marks it ready.
    fn init_header(&self) {
        // SAFETY: the mapping is new and nobody reads its header before
        // the magic is stored below; line 0 is page aligned and larger
        // than `Header`.
        unsafe {
            let header = self.map.as_mut_ptr().cast::<Header>();
            (*header).members = self.layout.members as u32;
            (*header).buffers = self.layout.buffers as u32;
            (*header).slot_size = self.layout.slot_size as u64;
            (*header).pid = std::process::id();
        }
        self.header().magic.store(MAGIC, Ordering::Release);
    }

    /// Maps the segment at `path` for a communicator of `members`:
    /// `Ok(None)` while it does not exist or is not ready (its creator is
    /// still making it).
    ///
    /// # Errors
    ///
    /// The file cannot be opened or mapped for another reason, or it is
    /// not a segment for `members` processes of this version.
    pub fn attach(path: &Path, members: usize) -> Result<Option<Segment>, String> {
        let file = match OpenOptions::new().read(true).write(true).open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(format!(
                    "cannot open the shared segment {} of coll sm: {e}",
                    path.display()
                ))
            }
        };
        Self::map_ready(&file, path, members)
    }

    fn map_ready(file: &File, path: &Path, members: usize) -> Result<Option<Segment>, String> {
        let len = file
            .metadata()
            .map_err(|e| format!("cannot read the size of {}: {e}", path.display()))?
            .len() as usize;
        if len < 2 * LINE {
            return Ok(None);
        }
        let map = MmapRaw::map_raw(file).map_err(|e| {
            format!(
                "cannot map the shared segment {} of coll sm: {e}",
                path.display()
            )
        })?;
        // SAFETY: the mapping has at least two lines and is page aligned;
        // the magic is an atomic, and the other fields are written before
        // it is stored (release) and never after.
        let header = unsafe { &*map.as_ptr().cast::<Header>() };
        if header.magic.load(Ordering::Acquire) != MAGIC {
            return Ok(None);
        }
        let layout = Layout::new(
            header.members as usize,
            header.slot_size as usize,
            header.buffers as usize,
        );
        match layout {
            // Mapped before the creator sized the file: map again.
            Some(l) if l.total > len => Ok(None),
            Some(l) if l.total == len && l.members == members => Ok(Some(Segment {
                map,
                layout: l,
                path: Some(path.to_path_buf()),
            })),
            _ => Err(format!(
                "{} is not a coll sm segment of this oxmpi version for {members} processes (its \
                 header says {} processes, {} buffers of {} bytes each, in {len} bytes)",
                path.display(),
                header.members,
                header.buffers,
                header.slot_size
            )),
        }
    }

    fn header(&self) -> &Header {
        // SAFETY: line 0 is the header (written or checked at mapping).
        unsafe { &*self.map.as_ptr().cast::<Header>() }
    }

    /// The 8-aligned, in-bounds atomic at `offset`.
    fn u64_at(&self, offset: usize) -> &AtomicU64 {
        debug_assert!(offset.is_multiple_of(8) && offset + 8 <= self.layout.total);
        // SAFETY: in bounds and aligned (every caller computes `offset`
        // from the layout); shared words are only accessed atomically.
        unsafe { &*self.map.as_ptr().add(offset).cast::<AtomicU64>() }
    }

    /// The segment's file, if it has one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The number of members.
    pub fn members(&self) -> usize {
        self.layout.members
    }

    /// Bytes of each slot's data.
    pub fn slot_size(&self) -> usize {
        self.layout.slot_size
    }

    /// Slots per member.
    pub fn buffers(&self) -> usize {
        self.layout.buffers
    }

    /// The creator's process id.
    pub fn creator_pid(&self) -> u32 {
        self.header().pid
    }

    /// Members other than the creator that mapped the segment.
    pub fn attached(&self) -> &AtomicU32 {
        // SAFETY: line 1 is in bounds and aligned; only accessed atomically.
        unsafe { &*self.map.as_ptr().add(LINE).cast::<AtomicU32>() }
    }

    /// Member `q`'s `done` word.
    pub fn done(&self, q: usize) -> &AtomicU64 {
        debug_assert!(q < self.layout.members);
        self.u64_at(2 * LINE + q * CONTROL)
    }

    fn slot_offset(&self, q: usize, buffer: usize) -> usize {
        debug_assert!(q < self.layout.members && buffer < self.layout.buffers);
        self.layout.slots + (q * self.layout.buffers + buffer) * self.layout.slot_stride
    }

    /// The `arrived` word of member `q`'s slot `buffer`.
    pub fn arrived(&self, q: usize, buffer: usize) -> &AtomicU64 {
        self.u64_at(self.slot_offset(q, buffer))
    }

    /// The data of member `q`'s slot `buffer`, for reading.
    ///
    /// # Safety
    ///
    /// Nobody writes those bytes while the slice lives: the caller saw the
    /// slot's `arrived` word at the step it reads (acquire), and its owner
    /// writes it again only once the caller published `done` for that step.
    pub unsafe fn data(&self, q: usize, buffer: usize) -> &[u8] {
        let at = self.slot_offset(q, buffer) + SLOT_HEADER;
        // SAFETY: in bounds (the layout); no writer meanwhile (the
        // caller's promise).
        unsafe { std::slice::from_raw_parts(self.map.as_ptr().add(at), self.layout.slot_size) }
    }

    /// The data of member `q`'s slot `buffer`, for writing.
    ///
    /// # Safety
    ///
    /// The caller is member `q`, every member finished reading the slot's
    /// previous contents (their `done` words say so), nobody else holds a
    /// slice of it, and the slice is dropped before the slot's `arrived`
    /// word is stored.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn data_mut(&self, q: usize, buffer: usize) -> &mut [u8] {
        let at = self.slot_offset(q, buffer) + SLOT_HEADER;
        // SAFETY: in bounds (the layout); exclusive (the caller's promise).
        unsafe {
            std::slice::from_raw_parts_mut(self.map.as_mut_ptr().add(at), self.layout.slot_size)
        }
    }

    /// Removes the segment's file (the mappings keep the memory).
    ///
    /// # Errors
    ///
    /// The file cannot be removed (one already gone is not an error).
    pub fn unlink(&self) -> Result<(), String> {
        match &self.path {
            Some(p) => match std::fs::remove_file(p) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(format!(
                    "cannot remove the shared segment {} of coll sm: {e}",
                    p.display()
                )),
            },
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_keeps_parts_apart_and_aligned() {
        let l = Layout::new(3, 4096, 2).unwrap();
        assert_eq!(l.slots, 2 * LINE + 3 * CONTROL);
        assert_eq!(l.slot_stride, 4096 + CONTROL);
        assert_eq!(l.total, l.slots + 6 * l.slot_stride);
        assert!(Layout::new(usize::MAX / 2, 4096, 2).is_none());
        assert!(Layout::new(3, 4096, 1).is_none());
        let s = Segment::anonymous(3, 4096, 2).unwrap();
        let base = s.map.as_ptr() as usize;
        for q in 0..3 {
            assert_eq!((s.done(q) as *const _ as usize - base) % CONTROL, 0);
            for b in 0..2 {
                let at = s.arrived(q, b) as *const _ as usize - base;
                assert_eq!(at % CONTROL, 0);
                assert!(at + SLOT_HEADER + 4096 <= l.total);
            }
        }
    }

    #[test]
    fn a_file_segment_is_seen_only_when_ready_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg");
        assert!(Segment::attach(&path, 2).unwrap().is_none());
        // A file that is still being made (magic not stored) is not ready.
        std::fs::write(&path, vec![0u8; 4096]).unwrap();
        assert!(Segment::attach(&path, 2).unwrap().is_none());
        std::fs::remove_file(&path).unwrap();
        let made = Segment::create(&path, 2, 4096, 3).unwrap();
        assert!(Segment::create(&path, 2, 4096, 3)
            .unwrap_err()
            .contains("cannot create the shared segment"));
        let seen = Segment::attach(&path, 2).unwrap().unwrap();
        assert_eq!(
            (seen.members(), seen.slot_size(), seen.buffers()),
            (2, 4096, 3)
        );
        assert_eq!(seen.creator_pid(), std::process::id());
        made.arrived(1, 2).store(7, Ordering::Release);
        assert_eq!(seen.arrived(1, 2).load(Ordering::Acquire), 7);
        let wrong = Segment::attach(&path, 3).err().unwrap();
        assert!(wrong.contains("not a coll sm segment"), "{wrong}");
        made.unlink().unwrap();
        assert!(!path.exists());
        made.unlink().unwrap();
    }
}
