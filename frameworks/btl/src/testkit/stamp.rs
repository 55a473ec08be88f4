//! Known payloads and *stamped* headers, so that a receiver can check what
//! arrived without keeping a copy of what was sent.
//!
//! A stamped header starts with [`STAMP_LEN`] bytes: a magic number, the
//! stream (one sender's endpoint), the fragment's sequence number in that
//! stream, its payload length and the seed of its payload's pattern
//! ([`pattern`]); filler up to the header's length follows. The
//! [`Recorder`](super::Recorder) recognizes stamped headers and checks
//! length, content and order of every stamped fragment it receives.

use crate::module::MAX_HEADER;

/// Bytes of a stamp at the start of a header.
pub const STAMP_LEN: usize = 28;

const MAGIC: [u8; 4] = *b"oxTK";

/// The byte at `index` of the pattern with `seed`: position-dependent, so
/// a shifted, truncated or misplaced copy differs.
#[inline]
pub fn pattern_byte(seed: u32, index: usize) -> u8 {
    let x = (index as u64 ^ (u64::from(seed) << 32)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (x >> 56) as u8 ^ (index as u8)
}

/// `len` bytes of the pattern with `seed`.
pub fn pattern(len: usize, seed: u32) -> Vec<u8> {
    (0..len).map(|i| pattern_byte(seed, i)).collect()
}

/// The first index where `bytes` differs from the pattern with `seed`.
pub fn first_mismatch(bytes: &[u8], seed: u32) -> Option<usize> {
    bytes
        .iter()
        .enumerate()
        .position(|(i, &b)| b != pattern_byte(seed, i))
}

/// The stamp of one fragment (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// The stream: one sender's endpoint (unique within a test).
    pub stream: u32,
    /// The fragment's position in its stream, from 0.
    pub seq: u64,
    /// The payload's length in bytes.
    pub payload_len: u64,
    /// The seed of the payload's [`pattern`].
    pub seed: u32,
}

impl Stamp {
    /// The header carrying this stamp, `len` bytes long (at least
    /// [`STAMP_LEN`], at most [`MAX_HEADER`]; values outside are clamped),
    /// as a buffer and its length.
    pub fn header(&self, len: usize) -> ([u8; MAX_HEADER], usize) {
        let len = len.clamp(STAMP_LEN, MAX_HEADER);
        let mut h = [0u8; MAX_HEADER];
        h[..4].copy_from_slice(&MAGIC);
        h[4..8].copy_from_slice(&self.stream.to_le_bytes());
        h[8..16].copy_from_slice(&self.seq.to_le_bytes());
        h[16..24].copy_from_slice(&self.payload_len.to_le_bytes());
        h[24..28].copy_from_slice(&self.seed.to_le_bytes());
        for (i, b) in h[STAMP_LEN..len].iter_mut().enumerate() {
            *b = pattern_byte(self.stream ^ 0x5A5A, i);
        }
        (h, len)
    }

    /// The stamp a header carries, if it is stamped.
    pub fn parse(header: &[u8]) -> Option<Stamp> {
        if header.len() < STAMP_LEN || header[..4] != MAGIC {
            return None;
        }
        let u32_at =
            |at: usize| u32::from_le_bytes(header[at..at + 4].try_into().unwrap_or([0; 4]));
        let u64_at =
            |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().unwrap_or([0; 8]));
        Some(Stamp {
            stream: u32_at(4),
            seq: u64_at(8),
            payload_len: u64_at(16),
            seed: u32_at(24),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_survives_its_header_and_patterns_differ_by_seed_and_position() {
        let s = Stamp {
            stream: 3,
            seq: 1 << 40,
            payload_len: 65536,
            seed: 9,
        };
        for len in [0, STAMP_LEN, 40, MAX_HEADER, 1000] {
            let (h, n) = s.header(len);
            assert_eq!(n, len.clamp(STAMP_LEN, MAX_HEADER));
            assert_eq!(Stamp::parse(&h[..n]), Some(s));
        }
        assert_eq!(Stamp::parse(&[0; 40]), None);
        assert_eq!(Stamp::parse(&s.header(STAMP_LEN).0[..STAMP_LEN - 1]), None);
        let a = pattern(4096, 1);
        assert_eq!(first_mismatch(&a, 1), None);
        assert!(first_mismatch(&a, 2).is_some());
        assert!(
            first_mismatch(&a[1..], 1).is_some(),
            "a shifted copy differs"
        );
        let mut b = a.clone();
        b[4000] ^= 1;
        assert_eq!(first_mismatch(&b, 1), Some(4000));
    }
}
