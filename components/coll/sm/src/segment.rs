//! A communicator's shared segment: a file `coll-sm-<job>-<context>-<creator>`
//! in the job directory (or, in tests, an anonymous mapping shared by
//! threads), and its layout. This file holds the component's raw accesses
//! to the mapping; the protocol on top ([`crate::member`]) uses them.
//!
//! The layout (offsets in bytes):
//!
//! | part | what | written by |
//! |---|---|---|
//! | line 0 | header: magic (stored last, release), members, buffers and small buffers per member, slot size, creator's pid | creator, once |
//! | line 1 | `attached`: members other than the creator that mapped the segment | attachers |
//! | control | per member a [`CONTROL`]-byte line: `done`, the last step it finished reading | that member |
//! | small slots | per member `small buffers` small slots of [`CONTROL`] bytes, one after the other: `arrived`, then up to [`SMALL_DATA`] bytes of data | that member |
//! | slots | per member `buffers` slots of [`SLOT_HEADER`] + slot size bytes rounded up to [`CONTROL`]: `arrived` (the step whose data the slot holds, stored last with release ordering) then the data | that member |
//!
//! The data starts right after a slot's `arrived` word, in the same cache
//! line: a contribution of up to 56 bytes travels with its flag in one
//! line, and a small slot's 120 bytes in one 128-byte pair of lines.
//! Small slots are many and cheap (128 bytes each), for the operations
//! whose writers run ahead of their readers (see [`crate::ops`]). Parts
//! are 128 bytes apart (two lines), so the processor's adjacent-line
//! prefetch does not make neighbours share. A new file's pages are zero,
//! every flag's initial value; the pages up to the slots are mapped when
//! the segment is (they are touched at every small step).

use memmap2::{MmapOptions, MmapRaw};
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Bytes of a cache line.
pub const LINE: usize = 64;

/// Stride of the control lines and alignment of the slots.
pub const CONTROL: usize = 128;

/// Bytes before a slot's data: its `arrived` word.
pub const SLOT_HEADER: usize = 8;

/// Bytes of data a small slot holds (its [`CONTROL`] bytes but the
/// `arrived` word).
pub const SMALL_DATA: usize = CONTROL - SLOT_HEADER;

/// The fewest slots per member (step `s` uses slot `s % buffers`).
pub const MIN_BUFFERS: usize = 2;

/// The slots of each member of a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slots {
    /// Bytes of each slot's data.
    pub size: usize,
    /// Slots per member (at least [`MIN_BUFFERS`]).
    pub buffers: usize,
    /// Small slots per member (at least [`MIN_BUFFERS`]).
    pub small_buffers: usize,
}

/// The magic of a ready segment (stored last, with release ordering).
const MAGIC: u64 = u64::from_le_bytes(*b"oxcollm2");

/// Line 0 of a segment.
#[repr(C)]
struct Header {
    magic: AtomicU64,
    members: u32,
    buffers: u32,
    slot_size: u64,
    pid: u32,
    small_buffers: u32,
}

/// Offsets of the parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Layout {
    members: usize,
    slot_size: usize,
    buffers: usize,
    small_buffers: usize,
    slot_stride: usize,
    small: usize,
    slots: usize,
    total: usize,
}

impl Layout {
    fn new(
        members: usize,
        slot_size: usize,
        buffers: usize,
        small_buffers: usize,
    ) -> Option<Layout> {
        if buffers < MIN_BUFFERS || small_buffers < MIN_BUFFERS || small_buffers > u32::MAX as usize
        {
            return None;
        }
        let control = 2 * LINE;
        let small = control.checked_add(members.checked_mul(CONTROL)?)?;
        let slots = small.checked_add(members.checked_mul(small_buffers)?.checked_mul(CONTROL)?)?;
        let slot_stride = SLOT_HEADER
            .checked_add(slot_size)?
            .checked_next_multiple_of(CONTROL)?;
        let total = slots.checked_add(members.checked_mul(buffers)?.checked_mul(slot_stride)?)?;
        Some(Layout {
            members,
            slot_size,
            buffers,
            small_buffers,
            slot_stride,
            small,
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
    /// `members` processes with `slots` each, and marks it ready.
    ///
    /// # Errors
    ///
    /// The sizes overflow, or the file cannot be created, sized or mapped;
    /// the message names the file.
    pub fn create(path: &Path, members: usize, slots: Slots) -> Result<Segment, String> {
        let layout = Self::layout(members, slots)?;
        let map = oxmpi_shmfile::create(path, layout.total, Some("coll sm"))?;
        Ok(Self::made(map, layout, Some(path.to_path_buf())))
    }

    /// An anonymous segment for `members` threads of this process (tests,
    /// and communicators whose members are threads).
    ///
    /// # Errors
    ///
    /// The sizes overflow or the memory cannot be mapped.
    pub fn anonymous(members: usize, slots: Slots) -> Result<Segment, String> {
        let layout = Self::layout(members, slots)?;
        let map = MmapOptions::new()
            .len(layout.total)
            .map_anon()
            .map_err(|e| format!("cannot map {} bytes of memory: {e}", layout.total))?;
        Ok(Self::made(MmapRaw::from(map), layout, None))
    }

    /// A new mapping of `layout`, its pages up to the slots mapped and
    /// its header written and marked ready.
    fn made(map: MmapRaw, layout: Layout, path: Option<PathBuf>) -> Segment {
        let segment = Segment { map, layout, path };
        segment.populate();
        segment.init_header();
        segment
    }

    fn layout(members: usize, slots: Slots) -> Result<Layout, String> {
        let Slots {
            size: slot_size,
            buffers,
            small_buffers,
        } = slots;
        Layout::new(members, slot_size, buffers, small_buffers).ok_or_else(|| {
            format!(
                "a shared segment for {members} processes with {buffers} slots of {slot_size} \
                 bytes and {small_buffers} small slots each is too large (or has fewer than \
                 {MIN_BUFFERS} slots of a kind)"
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
            (*header).small_buffers = self.layout.small_buffers as u32;
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
            header.small_buffers as usize,
        );
        match layout {
            // Mapped before the creator sized the file: map again.
            Some(l) if l.total > len => Ok(None),
            Some(l) if l.total == len && l.members == members => {
                let segment = Segment {
                    map,
                    layout: l,
                    path: Some(path.to_path_buf()),
                };
                segment.populate();
                Ok(Some(segment))
            }
            _ => Err(format!(
                "{} is not a coll sm segment of this oxmpi version for {members} processes (its \
                 header says {} processes, {} buffers of {} bytes and {} small buffers each, in \
                 {len} bytes)",
                path.display(),
                header.members,
                header.buffers,
                header.slot_size,
                header.small_buffers
            )),
        }
    }

    /// Maps the pages of the header, the control lines and the small
    /// slots now (`MADV_POPULATE_WRITE`), so that the first pass of a
    /// stream of small calls through the small slots takes no page
    /// faults. A hint: a kernel without it (before Linux 5.14) leaves the
    /// pages to be mapped at first touch.
    fn populate(&self) {
        #[cfg(target_os = "linux")]
        let _ = self
            .map
            .advise_range(memmap2::Advice::PopulateWrite, 0, self.layout.slots);
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

    /// Small slots per member.
    pub fn small_buffers(&self) -> usize {
        self.layout.small_buffers
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

    fn small_offset(&self, q: usize, buffer: usize) -> usize {
        debug_assert!(q < self.layout.members && buffer < self.layout.small_buffers);
        self.layout.small + (q * self.layout.small_buffers + buffer) * CONTROL
    }

    /// Where member `q`'s slot `buffer` (`small`: its small slot) starts,
    /// and the bytes of its data.
    #[inline]
    fn area(&self, q: usize, buffer: usize, small: bool) -> (usize, usize) {
        if small {
            (self.small_offset(q, buffer), SMALL_DATA)
        } else {
            (self.slot_offset(q, buffer), self.layout.slot_size)
        }
    }

    /// The `arrived` word of member `q`'s slot `buffer` (`small`: of its
    /// small slot `buffer`).
    #[inline]
    pub fn arrived(&self, q: usize, buffer: usize, small: bool) -> &AtomicU64 {
        self.u64_at(self.area(q, buffer, small).0)
    }

    /// Asks the processor for the lines of member `q`'s slot `buffer`
    /// (`small`: of its small slot) that hold its first `len` data bytes,
    /// but for the line of its `arrived` word: a reader about to wait for
    /// a slot its writer has probably filled already then fetches those
    /// lines together with the flag's, not one after another once it
    /// sees the flag. A hint only: it reads and writes nothing.
    #[inline]
    pub fn prefetch_data(&self, q: usize, buffer: usize, small: bool, len: usize) {
        let (at, size) = self.area(q, buffer, small);
        // Slots start on a line (their stride is a multiple of CONTROL).
        let end = at + SLOT_HEADER + len.min(size);
        let mut line = at + LINE;
        while line < end {
            oxmpi_shmfile::prefetch::for_read(self.map.as_ptr().wrapping_add(line));
            line += LINE;
        }
    }

    /// The data of member `q`'s slot `buffer`, for reading.
    ///
    /// # Safety
    ///
    /// Nobody writes those bytes while the slice lives: the caller saw the
    /// slot's `arrived` word at the step it reads (acquire), and its owner
    /// writes it again only once the caller published `done` for that step.
    pub unsafe fn data(&self, q: usize, buffer: usize, small: bool) -> &[u8] {
        let (at, len) = self.area(q, buffer, small);
        // SAFETY: in bounds (the layout); no writer meanwhile (the
        // caller's promise).
        unsafe { std::slice::from_raw_parts(self.map.as_ptr().add(at + SLOT_HEADER), len) }
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
    pub unsafe fn data_mut(&self, q: usize, buffer: usize, small: bool) -> &mut [u8] {
        let (at, len) = self.area(q, buffer, small);
        // SAFETY: in bounds (the layout); exclusive (the caller's promise).
        unsafe { std::slice::from_raw_parts_mut(self.map.as_mut_ptr().add(at + SLOT_HEADER), len) }
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

/// Test shorthand for [`Slots`].
#[cfg(test)]
pub fn slots(size: usize, buffers: usize, small_buffers: usize) -> Slots {
    Slots {
        size,
        buffers,
        small_buffers,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_keeps_parts_apart_and_aligned() {
        let l = Layout::new(3, 4096, 2, 5).unwrap();
        assert_eq!(l.small, 2 * LINE + 3 * CONTROL);
        assert_eq!(l.slots, l.small + 15 * CONTROL);
        assert_eq!(l.slot_stride, 4096 + CONTROL);
        assert_eq!(l.total, l.slots + 6 * l.slot_stride);
        assert!(Layout::new(usize::MAX / 2, 4096, 2, 2).is_none());
        assert!(Layout::new(3, 4096, 1, 2).is_none());
        assert!(Layout::new(3, 4096, 2, 1).is_none());
        let s = Segment::anonymous(3, slots(4096, 2, 5)).unwrap();
        let base = s.map.as_ptr() as usize;
        for q in 0..3 {
            assert_eq!((s.done(q) as *const _ as usize - base) % CONTROL, 0);
            for b in 0..2 {
                let at = s.arrived(q, b, false) as *const _ as usize - base;
                assert_eq!(at % CONTROL, 0);
                assert!(at >= l.slots && at + SLOT_HEADER + 4096 <= l.total);
            }
            for b in 0..5 {
                // A member's small slots follow each other.
                let small = s.arrived(q, b, true) as *const _ as usize - base;
                assert_eq!(small, l.small + (q * 5 + b) * CONTROL);
                assert!(small + CONTROL <= l.slots);
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
        let made = Segment::create(&path, 2, slots(4096, 3, 7)).unwrap();
        assert!(Segment::create(&path, 2, slots(4096, 3, 7))
            .unwrap_err()
            .contains("cannot create the shared segment"));
        let seen = Segment::attach(&path, 2).unwrap().unwrap();
        assert_eq!(
            (
                seen.members(),
                seen.slot_size(),
                seen.buffers(),
                seen.small_buffers()
            ),
            (2, 4096, 3, 7)
        );
        assert_eq!(seen.creator_pid(), std::process::id());
        made.arrived(1, 2, false).store(7, Ordering::Release);
        assert_eq!(seen.arrived(1, 2, false).load(Ordering::Acquire), 7);
        made.arrived(1, 6, true).store(8, Ordering::Release);
        assert_eq!(seen.arrived(1, 6, true).load(Ordering::Acquire), 8);
        let wrong = Segment::attach(&path, 3).err().unwrap();
        assert!(wrong.contains("not a coll sm segment"), "{wrong}");
        made.unlink().unwrap();
        assert!(!path.exists());
        made.unlink().unwrap();
    }
}
