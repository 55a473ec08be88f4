//! One process's shared segment: a file `sm-<job id>-<rank>` in the job
//! directory,
//! mapped by its owner and by every process of the node that talks to it.
//!
//! The layout (offsets in bytes; every part starts on a 64-byte line):
//!
//! | part | what | written by |
//! |---|---|---|
//! | line 0 | the header: magic (stored last), owner rank and pid, the sizes below | owner, once |
//! | line 1 | `attached`: processes that mapped the segment | attachers |
//! | line 2 | `fbox_claimed`: fast boxes handed out | senders |
//! | line 3 | `fifo_tail`: the receive queue's next free position | senders |
//! | shared gets | [`ASSIST_SLOTS`] lines, one per get shared with a peer (see [`crate::assist`]) | owner, the peer asked |
//! | queue | `fifo_cells` cells of 16 bytes (sequence, value) | senders, owner |
//! | fast boxes | `fbox_count` × (control line + `fbox_size` bytes) | one sender each, owner |
//! | fragments | `frag_count` × (line of state + 64-byte header + `frag_size`) | owner, then one receiver |
//!
//! The sizes are read back from the header when a peer attaches, so
//! processes whose parameters differ still agree on each other's layout.
//! A new file's pages are zero (tmpfs and regular files alike), which is
//! every counter's and flag's initial value; only the queue's sequence
//! numbers are written before the magic.
//!
//! This file holds the component's raw shared-memory accesses; the
//! protocols on top ([`crate::fifo`], [`crate::fbox`], the fragment
//! buffers) use its safe accessors.

use memmap2::MmapRaw;
use std::fs::{File, OpenOptions};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Bytes of one cache line, the alignment of every part.
pub const LINE: usize = 64;

/// The magic of a ready segment (stored last, with release ordering).
const MAGIC: u64 = u64::from_le_bytes(*b"oxmpism2");

/// Bytes of the state line at the start of each fragment buffer.
const FRAG_STATE: usize = LINE;

/// Bytes kept for the header of a fragment in a fragment buffer.
pub const FRAG_HEADER: usize = 64;

/// Shared-get slots in each segment.
pub const ASSIST_SLOTS: u32 = 64;

/// The bit of a record's header length that marks a message of the sm
/// btls to each other (handled by sm, never delivered to the pml).
pub const CONTROL: u64 = 1 << 31;

/// The sizes of a segment's parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    /// Cells of the receive queue (a power of two).
    pub fifo_cells: u32,
    /// Number of fast boxes.
    pub fbox_count: u32,
    /// Bytes of each fast box's ring (a multiple of 64).
    pub fbox_size: u32,
    /// Number of fragment buffers.
    pub frag_count: u32,
    /// Payload bytes of each fragment buffer.
    pub frag_size: u32,
}

/// Offsets of the parts, from [`Sizes`].
#[derive(Clone, Copy, Debug)]
struct Layout {
    sizes: Sizes,
    fifo: usize,
    fboxes: usize,
    fbox_stride: usize,
    frags: usize,
    frag_stride: usize,
    total: usize,
}

impl Layout {
    fn new(sizes: Sizes) -> Option<Layout> {
        let fifo = (4 + ASSIST_SLOTS as usize) * LINE;
        let fboxes = fifo.checked_add((sizes.fifo_cells as usize).checked_mul(16)?)?;
        let fbox_stride = LINE.checked_add(sizes.fbox_size as usize)?;
        let frags = fboxes.checked_add((sizes.fbox_count as usize).checked_mul(fbox_stride)?)?;
        let frag_stride =
            (FRAG_STATE + FRAG_HEADER + sizes.frag_size as usize).next_multiple_of(LINE);
        let total = frags.checked_add((sizes.frag_count as usize).checked_mul(frag_stride)?)?;
        Some(Layout {
            sizes,
            fifo,
            fboxes,
            fbox_stride,
            frags,
            frag_stride,
            total,
        })
    }
}

/// Line 0 of a segment.
#[repr(C)]
struct Header {
    magic: AtomicU64,
    rank: u32,
    pid: u32,
    sizes: [u32; 5],
}

/// A mapped segment (the owner's or a peer's).
pub struct Segment {
    map: MmapRaw,
    layout: Layout,
    rank: u32,
    pid: u32,
    path: PathBuf,
}

// SAFETY: the mapping is shared memory every access to which goes through
// atomics or through the protocols' hand-over rules (a buffer is written
// by one side, then handed over with release/acquire ordering); the value
// holds no thread-bound state.
unsafe impl Send for Segment {}

/// The path of rank `rank`'s segment of job `job` in `dir`.
pub fn path_of(dir: &Path, job: u64, rank: u32) -> PathBuf {
    dir.join(format!("sm-{job:x}-{rank}"))
}

impl Segment {
    /// Creates this process's segment at `path` (mode 0600, which must not
    /// exist) with `sizes`, for `rank`.
    ///
    /// # Errors
    ///
    /// The sizes overflow, or the file cannot be created, sized or mapped;
    /// the message names the file.
    pub fn create(path: &Path, rank: u32, sizes: Sizes) -> Result<Segment, String> {
        let layout = Layout::new(sizes)
            .ok_or_else(|| format!("the shared segment's sizes overflow ({sizes:?})"))?;
        let map = oxmpi_shmfile::create(path, layout.total, None)?;
        let pid = std::process::id();
        let segment = Segment {
            map,
            layout,
            rank,
            pid,
            path: path.to_path_buf(),
        };
        // SAFETY: the file is new and mapped only here; nothing else reads
        // the header before the magic is stored below, and line 0 is
        // aligned and large enough for `Header`.
        unsafe {
            let header = segment.map.as_mut_ptr().cast::<Header>();
            (*header).rank = rank;
            (*header).pid = pid;
            (*header).sizes = [
                sizes.fifo_cells,
                sizes.fbox_count,
                sizes.fbox_size,
                sizes.frag_count,
                sizes.frag_size,
            ];
        }
        for i in 0..sizes.fifo_cells as usize {
            segment.fifo_cell(i).0.store(i as u64, Ordering::Relaxed);
        }
        segment.header().magic.store(MAGIC, Ordering::Release);
        Ok(segment)
    }

    /// Maps the segment at `path`: `Ok(None)` while it does not exist or
    /// is not ready yet (its owner is still creating it).
    ///
    /// # Errors
    ///
    /// The file cannot be opened or mapped for another reason, or its
    /// header does not describe its size (not a segment of this version).
    pub fn attach(path: &Path) -> Result<Option<Segment>, String> {
        let file = match OpenOptions::new().read(true).write(true).open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(format!(
                    "cannot open the shared segment {}: {e}",
                    path.display()
                ))
            }
        };
        Self::map_ready(&file, path)
    }

    fn map_ready(file: &File, path: &Path) -> Result<Option<Segment>, String> {
        let len = file
            .metadata()
            .map_err(|e| format!("cannot read the size of {}: {e}", path.display()))?
            .len() as usize;
        if len < LINE {
            return Ok(None);
        }
        let map = MmapRaw::map_raw(file)
            .map_err(|e| format!("cannot map the shared segment {}: {e}", path.display()))?;
        // SAFETY: the mapping has at least one line, aligned (page
        // aligned); the magic is an atomic.
        let header = unsafe { &*map.as_ptr().cast::<Header>() };
        if header.magic.load(Ordering::Acquire) != MAGIC {
            return Ok(None);
        }
        let [fifo_cells, fbox_count, fbox_size, frag_count, frag_size] = header.sizes;
        let sizes = Sizes {
            fifo_cells,
            fbox_count,
            fbox_size,
            frag_count,
            frag_size,
        };
        let layout = Layout::new(sizes)
            .filter(|l| {
                l.total == len && fifo_cells.is_power_of_two() && (fbox_size as usize).is_multiple_of(LINE)
            })
            .ok_or_else(|| {
                format!(
                    "{} is not a shared segment of this oxmpi version (its header describes {sizes:?} in {len} bytes)",
                    path.display()
                )
            })?;
        Ok(Some(Segment {
            rank: header.rank,
            pid: header.pid,
            map,
            layout,
            path: path.to_path_buf(),
        }))
    }

    fn header(&self) -> &Header {
        // SAFETY: line 0 is the header (checked or written at mapping).
        unsafe { &*self.map.as_ptr().cast::<Header>() }
    }

    /// The atomic at `offset`, which is in bounds and 8-aligned.
    fn u64_at(&self, offset: usize) -> &AtomicU64 {
        debug_assert!(offset.is_multiple_of(8) && offset + 8 <= self.layout.total);
        // SAFETY: in bounds and aligned (every caller computes `offset`
        // from the layout); shared words are only accessed atomically.
        unsafe { &*self.map.as_ptr().add(offset).cast::<AtomicU64>() }
    }

    /// The atomic at `offset`, which is in bounds and 4-aligned.
    fn u32_at(&self, offset: usize) -> &AtomicU32 {
        debug_assert!(offset.is_multiple_of(4) && offset + 4 <= self.layout.total);
        // SAFETY: as in `u64_at`.
        unsafe { &*self.map.as_ptr().add(offset).cast::<AtomicU32>() }
    }

    /// The owner's rank.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// The owner's process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The sizes of the parts.
    pub fn sizes(&self) -> Sizes {
        self.layout.sizes
    }

    /// Processes that mapped the segment (the owner not counted).
    pub fn attached(&self) -> &AtomicU32 {
        self.u32_at(LINE)
    }

    /// Fast boxes handed out (may pass `fbox_count`: the claims that
    /// found none left).
    pub fn fbox_claimed(&self) -> &AtomicU32 {
        self.u32_at(2 * LINE)
    }

    /// The receive queue's next free position.
    pub fn fifo_tail(&self) -> &AtomicU64 {
        self.u64_at(3 * LINE)
    }

    /// Shared-get slot `i`: its state word (generation and state) and its
    /// destination address, source address and length.
    pub fn assist(&self, i: u32) -> (&AtomicU64, [&AtomicU64; 3]) {
        debug_assert!(i < ASSIST_SLOTS);
        let at = (4 + i as usize) * LINE;
        (
            self.u64_at(at),
            [
                self.u64_at(at + 8),
                self.u64_at(at + 16),
                self.u64_at(at + 24),
            ],
        )
    }

    /// Cell `i` of the receive queue: its sequence and value.
    pub fn fifo_cell(&self, i: usize) -> (&AtomicU64, &AtomicU64) {
        debug_assert!(i < self.layout.sizes.fifo_cells as usize);
        let at = self.layout.fifo + i * 16;
        (self.u64_at(at), self.u64_at(at + 8))
    }

    fn fbox_base(&self, i: u32) -> usize {
        debug_assert!(i < self.layout.sizes.fbox_count);
        self.layout.fboxes + i as usize * self.layout.fbox_stride
    }

    /// Fast box `i`'s owner (its sender's rank + 1; 0 while unclaimed).
    pub fn fbox_owner(&self, i: u32) -> &AtomicU32 {
        self.u32_at(self.fbox_base(i))
    }

    /// Fast box `i`'s key: mixed into every record's tag, so bytes left by
    /// an earlier lap never read as a record.
    pub fn fbox_key(&self, i: u32) -> &AtomicU64 {
        self.u64_at(self.fbox_base(i) + 8)
    }

    /// Fast box `i`'s consumed position (stored by the receiver).
    pub fn fbox_consumed(&self, i: u32) -> &AtomicU64 {
        self.u64_at(self.fbox_base(i) + 16)
    }

    /// Fast box `i`'s ring (`fbox_size` bytes after its control line),
    /// its address worked out once for the several accesses of a record
    /// or a batch of them.
    #[inline]
    pub fn fbox_ring(&self, i: u32) -> Ring<'_> {
        let at = self.fbox_base(i) + LINE;
        Ring {
            // In bounds: the layout puts every ring inside the mapping.
            base: self.map.as_mut_ptr().wrapping_add(at),
            size: self.layout.sizes.fbox_size as usize,
            _segment: PhantomData,
        }
    }

    fn frag_base(&self, i: u32) -> usize {
        debug_assert!(i < self.layout.sizes.frag_count);
        self.layout.frags + i as usize * self.layout.frag_stride
    }

    /// Fragment buffer `i`'s busy flag (1 from when its owner fills it
    /// until the receiver has delivered it).
    pub fn frag_busy(&self, i: u32) -> &AtomicU32 {
        self.u32_at(self.frag_base(i))
    }

    /// Fills fragment buffer `i` with `header` (at most [`FRAG_HEADER`]
    /// bytes) and `payload` (at most `frag_size` bytes).
    ///
    /// # Panics
    ///
    /// When either is too long (a bug of the caller).
    /// A `control` fragment is sm's own (see [`CONTROL`]).
    pub fn frag_fill(&self, i: u32, header: &[u8], payload: &[u8], control: bool) {
        assert!(
            header.len() <= FRAG_HEADER && payload.len() <= self.layout.sizes.frag_size as usize
        );
        let base = self.frag_base(i);
        self.u64_at(base + 8).store(
            header.len() as u64 | (payload.len() as u64) << 32 | if control { CONTROL } else { 0 },
            Ordering::Relaxed,
        );
        // SAFETY: in bounds (checked); the buffer is free (its busy flag
        // was 0 and only its owner, this process, sets it), so no other
        // process reads it until it is handed over through the queue.
        unsafe {
            let p = self.map.as_mut_ptr().add(base + FRAG_STATE);
            std::ptr::copy_nonoverlapping(header.as_ptr(), p, header.len());
            std::ptr::copy_nonoverlapping(payload.as_ptr(), p.add(FRAG_HEADER), payload.len());
        }
    }

    /// Fragment buffer `i`'s header and payload and whether it is a
    /// control fragment, or `None` when its lengths are out of bounds (a
    /// damaged segment).
    pub fn frag_contents(&self, i: u32) -> Option<(bool, &[u8], &[u8])> {
        let base = self.frag_base(i);
        let lens = self.u64_at(base + 8).load(Ordering::Relaxed);
        let control = lens & CONTROL != 0;
        let (header_len, payload_len) = ((lens & (CONTROL - 1)) as usize, (lens >> 32) as usize);
        if header_len > FRAG_HEADER || payload_len > self.layout.sizes.frag_size as usize {
            return None;
        }
        // SAFETY: in bounds (checked); the buffer was handed over through
        // the queue (acquire), and its owner does not touch it until the
        // busy flag is cleared.
        unsafe {
            let p = self.map.as_ptr().add(base + FRAG_STATE);
            Some((
                control,
                std::slice::from_raw_parts(p, header_len),
                std::slice::from_raw_parts(p.add(FRAG_HEADER), payload_len),
            ))
        }
    }
}

/// One fast box's ring in a mapped segment ([`Segment::fbox_ring`]): its
/// words and bytes by offset from the ring's start. Every offset is
/// checked against the ring's size (words in debug builds: their offsets
/// come from the ring's own positions).
pub struct Ring<'a> {
    /// The ring's first byte, inside the segment's mapping.
    base: *mut u8,
    /// The ring's size in bytes (a multiple of [`LINE`]).
    size: usize,
    _segment: PhantomData<&'a Segment>,
}

impl<'a> Ring<'a> {
    /// The word at `offset` (8-aligned, inside the ring).
    #[inline]
    pub fn word(&self, offset: usize) -> &'a AtomicU64 {
        debug_assert!(offset.is_multiple_of(8) && offset + 8 <= self.size);
        // SAFETY: inside the ring (the callers' offsets are positions in
        // it, checked in debug builds), which lies in the mapping that
        // `'a` keeps alive; 8-aligned because the ring starts on a line.
        // Shared words are only accessed atomically.
        unsafe { &*self.base.add(offset).cast::<AtomicU64>() }
    }

    /// The 32-bit word at `offset` (a multiple of 4, inside the ring).
    #[inline]
    pub fn half_word(&self, offset: usize) -> &'a AtomicU32 {
        debug_assert!(offset.is_multiple_of(4) && offset + 4 <= self.size);
        // SAFETY: as in `word`, 4-aligned.
        unsafe { &*self.base.add(offset).cast::<AtomicU32>() }
    }

    /// Asks for the line at `offset` (less than the ring's size) for
    /// reading, ahead of a read that needs it.
    #[inline]
    pub fn prefetch_for_read(&self, offset: usize) {
        debug_assert!(offset < self.size);
        oxmpi_shmfile::prefetch::for_read(self.base.wrapping_add(offset));
    }

    /// Asks the processor for the cache line at `offset` in a state this
    /// process may write (a hint: on x86-64 `PREFETCHW`, on AArch64
    /// `PRFM PSTL1KEEP`, elsewhere nothing).
    #[inline]
    pub fn prefetch_for_write(&self, offset: usize) {
        debug_assert!(offset < self.size);
        oxmpi_shmfile::prefetch::for_write(self.base.wrapping_add(offset));
    }

    /// Copies `bytes` into the ring at `offset`.
    ///
    /// # Panics
    ///
    /// When the range passes the ring's end (a bug of the caller).
    #[inline]
    pub fn write(&self, offset: usize, bytes: &[u8]) {
        assert!(offset + bytes.len() <= self.size);
        // SAFETY: in bounds (checked) of the mapping `'a` keeps alive; the
        // range is free space of the ring, which only this process (its
        // one sender) writes until it publishes the record's tag.
        unsafe {
            oxmpi_framework_btl::bytes::copy(bytes.as_ptr(), self.base.add(offset), bytes.len())
        }
    }

    /// The `len` bytes at `offset`.
    ///
    /// # Panics
    ///
    /// When the range passes the ring's end.
    #[inline]
    pub fn bytes(&self, offset: usize, len: usize) -> &'a [u8] {
        assert!(offset + len <= self.size);
        // SAFETY: in bounds (checked) of the mapping `'a` keeps alive; a
        // published record, which its sender does not touch until the
        // receiver moves the consumed position past it.
        unsafe { std::slice::from_raw_parts(self.base.add(offset), len) }
    }
}

/// A small segment `name` in `dir` for unit tests: `fifo_cells` queue
/// cells, `fbox_count` fast boxes of 256 bytes, one 64-byte fragment
/// buffer.
#[cfg(test)]
pub(crate) fn small_for_tests(dir: &Path, name: &str, fifo_cells: u32, fbox_count: u32) -> Segment {
    let sizes = Sizes {
        fifo_cells,
        fbox_count,
        fbox_size: 256,
        frag_count: 1,
        frag_size: 64,
    };
    Segment::create(&dir.join(name), 0, sizes).expect("a segment in a temporary directory")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    const SIZES: Sizes = Sizes {
        fifo_cells: 8,
        fbox_count: 2,
        fbox_size: 256,
        frag_count: 2,
        frag_size: 128,
    };

    #[test]
    fn a_new_segment_is_a_private_file_of_its_layouts_size_that_peers_can_map() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_of(dir.path(), 0xab, 3);
        assert_eq!(path.file_name().unwrap(), "sm-ab-3");
        let own = Segment::create(&path, 3, SIZES).unwrap();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert!(meta.is_file());
        assert_eq!(meta.mode() & 0o7777, 0o600, "only its owner may open it");
        // Owned as the directory this process just made.
        assert_eq!(meta.uid(), std::fs::metadata(dir.path()).unwrap().uid());
        assert_eq!(meta.len() as usize, Layout::new(SIZES).unwrap().total);
        let peer = Segment::attach(&path).unwrap().expect("a ready segment");
        assert_eq!((peer.rank(), peer.pid()), (3, std::process::id()));
        assert_eq!(peer.sizes(), SIZES);
        // One mapping's write is the other's read.
        own.attached().fetch_add(1, Ordering::AcqRel);
        assert_eq!(peer.attached().load(Ordering::Acquire), 1);
    }

    #[test]
    fn an_existing_file_is_refused_and_kept_and_a_missing_one_is_not_ready() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_of(dir.path(), 1, 0);
        assert!(Segment::attach(&path).unwrap().is_none());
        std::fs::write(&path, b"theirs").unwrap();
        let why = Segment::create(&path, 0, SIZES).err().unwrap();
        assert!(
            why.contains("cannot create the shared segment") && why.contains("sm-1-0"),
            "{why}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), b"theirs");
        // Too short to hold a header: not ready yet.
        assert!(Segment::attach(&path).unwrap().is_none());
    }
}
