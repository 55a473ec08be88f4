//! Fast boxes: a ring in the receiver's segment that one sender writes
//! and the receiver polls, for small fragments.
//!
//! A record at absolute position `p` (a multiple of 64; its offset in the
//! ring is `p % size`) is a tag word (8 bytes), a 4-byte lengths word
//! (header bytes in bits 0–7, bit 8 for sm's own control records, payload
//! bytes from bit 9), the header and the payload, padded to whole cache
//! lines: a record of up to 64 bytes (ob1's 20-byte MATCH header and up to
//! 32 payload bytes) is one line, never two. The sender writes
//! everything but the tag, then the tag (release); the receiver polls the
//! tag word at its position (acquire), so a record costs the receiver one
//! cache-line transfer when it fits in a line. The tag mixes `p` with the box's random key: words
//! an earlier lap left, header or payload bytes included, do not read as a
//! record (the chance is 2^-64). A record that does not fit before the
//! ring's end is preceded by a skip record whose lengths word is all ones.
//! The receiver publishes its consumed position after the records it
//! looked at were delivered (a batch of them at a time); the sender reads
//! it only when its last copy says the ring is full.

use crate::segment::{Ring, Segment, FRAG_HEADER, LINE};
use std::sync::atomic::Ordering;

/// Lines of a record, its first included, that [`FboxIn::prefetch`]
/// asks for; the processor's own prefetching takes over for longer ones.
const PREFETCH_LINES: usize = 16;

/// Bytes of a record before its header: tag and lengths.
const HEAD: usize = 12;

/// The lengths word of a skip record (its header length, 255, is more
/// than any record's).
const SKIP: u32 = u32::MAX;

/// Bits of the lengths word that hold the header length.
const HEADER_BITS: u32 = 0xff;

/// The lengths word's bit of a control record (sm's own).
const CONTROL_BIT: u32 = 1 << 8;

/// Where the payload length starts in the lengths word.
const PAYLOAD_SHIFT: u32 = 9;

// The largest record payload (half of the largest box, 1 MiB) fits the
// lengths word.
const _: () = assert!((1u64 << (32 - PAYLOAD_SHIFT)) > (1 << 20) / 2);

/// The lengths word of a record.
#[inline]
fn lengths(header: usize, payload: usize, control: bool) -> u32 {
    header as u32 | (payload as u32) << PAYLOAD_SHIFT | if control { CONTROL_BIT } else { 0 }
}

/// The tag of the record at `pos` in a box with `key` (never 0).
#[inline]
fn tag(key: u64, pos: u64) -> u64 {
    let t = (pos + 1).wrapping_mul(key | 1) ^ key.rotate_left(29);
    t.max(1)
}

/// Bytes a fragment takes in a ring.
#[inline]
pub fn record_len(header: usize, payload: usize) -> usize {
    (HEAD + header + payload).next_multiple_of(LINE)
}

/// The sender's side of one fast box.
pub struct FboxOut {
    index: u32,
    key: u64,
    pos: u64,
    /// `pos % size`, kept to spare a division per record.
    off: usize,
    consumed: u64,
    size: usize,
}

impl FboxOut {
    /// Claims a fast box in `segment` (the receiver's) for sender `rank`,
    /// with a fresh random key; `None` when every box is taken.
    pub fn claim(segment: &Segment, rank: u32, key: u64) -> Option<FboxOut> {
        let sizes = segment.sizes();
        if sizes.fbox_count == 0 {
            return None;
        }
        let index = segment.fbox_claimed().fetch_add(1, Ordering::Relaxed);
        if index >= sizes.fbox_count {
            return None;
        }
        segment.fbox_key(index).store(key, Ordering::Relaxed);
        segment.fbox_owner(index).store(rank + 1, Ordering::Release);
        Some(FboxOut {
            index,
            key,
            pos: 0,
            off: 0,
            consumed: 0,
            size: sizes.fbox_size as usize,
        })
    }

    /// Asks for the lines a record of `len` bytes at the next position
    /// takes (up to the ring's end), in a state this process may write
    /// ([`Ring::prefetch_for_write`]), ahead of a record expected
    /// soon: the receiver polls the first of them and read the others a
    /// lap ago, so otherwise the record's stores first have to take them
    /// from the receiver's cache.
    #[inline]
    pub fn prepare(&self, segment: &Segment, len: usize) {
        let ring = segment.fbox_ring(self.index);
        let mut off = self.off;
        let end = (self.off + len).min(self.size);
        while off < end {
            ring.prefetch_for_write(off);
            off += LINE;
        }
    }

    /// Whether a record of `len` bytes goes through the box at all (at
    /// most half the ring, so large fragments cannot starve small ones).
    #[inline]
    pub fn takes(&self, len: usize) -> bool {
        len <= self.size / 2
    }

    /// Writes one record of `len` bytes ([`record_len`]); false when the
    /// ring has no room (nothing is written). A `control` record is sm's
    /// own (the lengths word's control bit). Inlined into the btl's send,
    /// which then makes no call of its own for a record that fits.
    #[inline(always)]
    pub fn write(
        &mut self,
        segment: &Segment,
        header: &[u8],
        payload: &[u8],
        len: usize,
        control: bool,
    ) -> bool {
        let mut off = self.off;
        let wrap = if off + len > self.size {
            self.size - off
        } else {
            0
        };
        if (self.pos - self.consumed) as usize + wrap + len > self.size {
            self.consumed = segment.fbox_consumed(self.index).load(Ordering::Acquire);
            if (self.pos - self.consumed) as usize + wrap + len > self.size {
                return false;
            }
        }
        let ring = segment.fbox_ring(self.index);
        if wrap > 0 {
            ring.half_word(off + 8).store(SKIP, Ordering::Relaxed);
            ring.word(off)
                .store(tag(self.key, self.pos), Ordering::Release);
            self.pos += wrap as u64;
            off = 0;
        }
        ring.write(off + HEAD, header);
        ring.write(off + HEAD + header.len(), payload);
        ring.half_word(off + 8).store(
            lengths(header.len(), payload.len(), control),
            Ordering::Relaxed,
        );
        ring.word(off)
            .store(tag(self.key, self.pos), Ordering::Release);
        self.pos += len as u64;
        self.off = off + len;
        if self.off == self.size {
            self.off = 0;
        }
        true
    }
}

/// What the receiver found in a box.
pub enum Polled {
    /// No new record.
    Empty,
    /// A record: where its header starts in the ring, and its lengths.
    Record {
        /// Offset of the header in the ring.
        offset: usize,
        /// Header bytes.
        header: usize,
        /// Payload bytes.
        payload: usize,
        /// A record of sm's own (the lengths word's control bit).
        control: bool,
    },
    /// A record whose lengths do not fit the box (a damaged segment).
    Damaged,
}

/// A read position in an inbound box: the receiver looks at several
/// records ([`FboxIn::peek`], [`FboxIn::step`]) before it gives their room
/// back ([`FboxIn::consume_to`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cursor {
    pos: u64,
    /// `pos % size`, kept to spare a division per record.
    off: usize,
    /// `tag(key, pos)`, kept to spare its multiplication per poll.
    expected: u64,
}

/// The receiver's side of one fast box.
pub struct FboxIn {
    /// The box's index in the receiver's segment.
    pub index: u32,
    /// The sender's rank.
    pub sender: u32,
    key: u64,
    /// Where the next unconsumed record is.
    at: Cursor,
    size: usize,
}

impl FboxIn {
    /// The receiver's side of box `index` of its own `segment`, once its
    /// sender published its owner word; `None` while the claim is not
    /// finished.
    pub fn open(segment: &Segment, index: u32) -> Option<FboxIn> {
        let owner = segment.fbox_owner(index).load(Ordering::Acquire);
        (owner != 0).then(|| {
            let key = segment.fbox_key(index).load(Ordering::Relaxed);
            FboxIn {
                index,
                sender: owner - 1,
                key,
                at: Cursor {
                    pos: 0,
                    off: 0,
                    expected: tag(key, 0),
                },
                size: segment.sizes().fbox_size as usize,
            }
        })
    }

    /// Whether a record (or a skip record) waits at the box's position:
    /// one load and a compare, for the idle poll.
    #[inline]
    pub fn ready(&self, segment: &Segment) -> bool {
        self.ready_at(&segment.fbox_ring(self.index), &self.at)
    }

    #[inline]
    fn ready_at(&self, ring: &Ring<'_>, at: &Cursor) -> bool {
        ring.word(at.off).load(Ordering::Acquire) == at.expected
    }

    /// Bytes of records after which the receiver gives their room back
    /// before it looks at more: a quarter of the ring, so that the sender
    /// keeps room to write while the receiver delivers (in a 4 KiB box,
    /// a batch of one-line records is 16 of them; a record of a quarter of
    /// the ring or more goes alone).
    #[inline]
    pub fn batch_bytes(&self) -> usize {
        self.size / 4
    }

    /// Where the next unconsumed record is.
    #[inline]
    pub fn cursor(&self) -> Cursor {
        self.at
    }

    /// Moves `at` by `len` bytes (wrapping at the ring's end).
    #[inline]
    fn advance(&self, at: &mut Cursor, len: usize) {
        at.pos += len as u64;
        at.off += len;
        if at.off == self.size {
            at.off = 0;
        }
        at.expected = tag(self.key, at.pos);
    }

    /// Looks at the record at `at` in this box's `ring` (its segment's
    /// [`Segment::fbox_ring`]), moving `at` to the ring's start over a
    /// skip record (the record itself stays where it is: see
    /// [`FboxIn::step`]).
    #[inline]
    pub fn peek(&self, ring: &Ring<'_>, at: &mut Cursor) -> Polled {
        loop {
            let off = at.off;
            if !self.ready_at(ring, at) {
                return Polled::Empty;
            }
            let lens = ring.half_word(off + 8).load(Ordering::Relaxed);
            if lens == SKIP {
                self.advance(at, self.size - off);
                continue;
            }
            let control = lens & CONTROL_BIT != 0;
            let (header, payload) = (
                (lens & HEADER_BITS) as usize,
                (lens >> PAYLOAD_SHIFT) as usize,
            );
            if header > FRAG_HEADER || off + record_len(header, payload) > self.size {
                return Polled::Damaged;
            }
            return Polled::Record {
                offset: off + HEAD,
                header,
                payload,
                control,
            };
        }
    }

    /// Asks for the lines after the first of the record [`FboxIn::peek`]
    /// found at `offset` (its header's), `len` bytes long in all
    /// ([`record_len`]), up to [`PREFETCH_LINES`] lines: they then arrive
    /// while the record is matched, not one after another when its
    /// payload is copied.
    #[inline]
    pub fn prefetch(&self, ring: &Ring<'_>, offset: usize, len: usize) {
        let start = offset - HEAD;
        let end = start + len.min(PREFETCH_LINES * LINE);
        let mut line = start + LINE;
        while line < end {
            ring.prefetch_for_read(line);
            line += LINE;
        }
    }

    /// Moves `at` past the record [`FboxIn::peek`] found there, `len`
    /// bytes long in all ([`record_len`]).
    #[inline]
    pub fn step(&self, at: &mut Cursor, len: usize) {
        self.advance(at, len);
    }

    /// Gives the room of every record before `at` (a cursor of this box,
    /// at or after [`FboxIn::cursor`]) back to the sender.
    #[inline]
    pub fn consume_to(&mut self, segment: &Segment, at: Cursor) {
        if at.pos == self.at.pos {
            return;
        }
        self.at = at;
        segment
            .fbox_consumed(self.index)
            .store(at.pos, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment::small_for_tests;

    #[test]
    fn records_wrap_and_come_out_whole_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let s = small_for_tests(dir.path(), "b", 16, 2);
        let mut out = FboxOut::claim(&s, 5, 0x1234_5678_9abc_def1).unwrap();
        let mut inn = FboxIn::open(&s, out.index).unwrap();
        assert_eq!(inn.sender, 5);
        for n in 0..500usize {
            let header = [n as u8; 7];
            let payload: Vec<u8> = (0..n % 90).map(|i| (i + n) as u8).collect();
            let len = record_len(header.len(), payload.len());
            assert!(out.takes(len));
            let control = n % 5 == 0;
            assert!(
                out.write(&s, &header, &payload, len, control),
                "room after the reader caught up"
            );
            let mut at = inn.cursor();
            match inn.peek(&s.fbox_ring(inn.index), &mut at) {
                Polled::Record {
                    offset,
                    header: h,
                    payload: p,
                    control: c,
                } => {
                    assert_eq!(c, control);
                    // Asks for the record's lines only (a line past the
                    // ring's end fails its debug assertion).
                    inn.prefetch(&s.fbox_ring(inn.index), offset, record_len(h, p));
                    assert_eq!(s.fbox_ring(inn.index).bytes(offset, h), &header);
                    assert_eq!(s.fbox_ring(inn.index).bytes(offset + h, p), &payload[..]);
                    inn.step(&mut at, record_len(h, p));
                    inn.consume_to(&s, at);
                }
                _ => panic!("record {n} missing"),
            }
            assert!(matches!(
                inn.peek(&s.fbox_ring(inn.index), &mut at),
                Polled::Empty
            ));
        }
    }

    #[test]
    fn a_full_ring_refuses_until_the_reader_consumes() {
        let dir = tempfile::tempdir().unwrap();
        let s = small_for_tests(dir.path(), "b", 16, 2);
        let mut out = FboxOut::claim(&s, 1, 99).unwrap();
        let mut inn = FboxIn::open(&s, out.index).unwrap();
        let len = record_len(8, 40);
        let mut written = 0;
        while out.write(&s, &[1; 8], &[2; 40], len, false) {
            written += 1;
        }
        assert_eq!(written, 256 / len);
        // Every record can be looked at before any is given back; the
        // writer finds room only once they are.
        let mut at = inn.cursor();
        for _ in 0..written {
            let Polled::Record {
                header, payload, ..
            } = inn.peek(&s.fbox_ring(inn.index), &mut at)
            else {
                panic!("a written record is missing")
            };
            inn.step(&mut at, record_len(header, payload));
        }
        assert!(matches!(
            inn.peek(&s.fbox_ring(inn.index), &mut at),
            Polled::Empty
        ));
        assert!(!out.write(&s, &[1; 8], &[2; 40], len, false));
        assert!(inn.ready(&s), "nothing consumed yet");
        inn.consume_to(&s, at);
        assert!(!inn.ready(&s));
        for _ in 0..written {
            assert!(out.write(&s, &[1; 8], &[2; 40], len, false));
        }
        assert!(!out.write(&s, &[1; 8], &[2; 40], len, false));
    }

    #[test]
    fn a_match_with_32_payload_bytes_takes_one_line() {
        // ob1's MATCH header is 20 bytes.
        assert_eq!(record_len(20, 32), LINE);
        assert_eq!(record_len(20, 33), 2 * LINE);
        assert_eq!(record_len(0, 0), LINE);
    }

    #[test]
    fn the_lengths_word_holds_the_largest_record_and_never_reads_as_a_skip() {
        let most = (1 << 20) / 2;
        for (header, payload, control) in [(64, most, true), (0, 0, false), (20, 32, false)] {
            let w = lengths(header, payload, control);
            assert_ne!(w, SKIP);
            assert_eq!((w & HEADER_BITS) as usize, header);
            assert_eq!((w >> PAYLOAD_SHIFT) as usize, payload);
            assert_eq!(w & CONTROL_BIT != 0, control);
        }
    }

    #[test]
    fn claims_past_the_count_find_no_box() {
        let dir = tempfile::tempdir().unwrap();
        let s = small_for_tests(dir.path(), "b", 16, 2);
        let a = FboxOut::claim(&s, 1, 7).unwrap();
        let b = FboxOut::claim(&s, 2, 8).unwrap();
        assert_ne!(a.index, b.index);
        assert!(FboxOut::claim(&s, 3, 9).is_none());
        assert_eq!(FboxIn::open(&s, b.index).unwrap().sender, 2);
    }
}
