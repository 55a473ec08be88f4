//! Buffers for data that arrives before its receive: unexpected eager
//! messages, the first bytes of unexpected rendezvous messages, and
//! messages held back for ordering.
//!
//! Buffers come in power-of-two size classes from 64 bytes to 1 MiB and
//! go back to their class's free list when the message is received, so a
//! steady stream of small unexpected messages allocates nothing. Each class
//! keeps at most [`CLASS_BYTES`] bytes of free buffers (at least
//! [`CLASS_MIN_KEEP`] buffers); more are dropped. Larger data gets an exact
//! allocation that is not kept.

/// Smallest class: 2^6 = 64 bytes.
const MIN_SHIFT: u32 = 6;
/// Largest class: 2^20 = 1 MiB.
const MAX_SHIFT: u32 = 20;
const CLASSES: usize = (MAX_SHIFT - MIN_SHIFT + 1) as usize;
/// Free bytes a class keeps at most.
pub(crate) const CLASS_BYTES: usize = 4 << 20;
/// Free buffers a class keeps at least (whatever their size).
pub(crate) const CLASS_MIN_KEEP: usize = 4;

/// The pool of free buffers, by size class.
#[derive(Debug, Default)]
pub(crate) struct Pool {
    classes: [Vec<Vec<u8>>; CLASSES],
    /// Number of buffers allocated so far (for tests and diagnostics).
    pub allocations: u64,
}

/// The class of a buffer able to hold `len` bytes, if pooled.
#[inline]
fn class_of(len: usize) -> Option<usize> {
    if len > 1 << MAX_SHIFT {
        return None;
    }
    let shift = len.next_power_of_two().trailing_zeros().max(MIN_SHIFT);
    Some((shift - MIN_SHIFT) as usize)
}

impl Pool {
    /// A copy of `data` in a pooled buffer (an empty `Vec`, allocating
    /// nothing, when `data` is empty).
    #[inline]
    pub(crate) fn copy(&mut self, data: &[u8]) -> Vec<u8> {
        if data.is_empty() {
            return Vec::new();
        }
        let mut v = match class_of(data.len()) {
            Some(c) => match self.classes[c].pop() {
                Some(v) => v,
                None => {
                    self.allocations += 1;
                    Vec::with_capacity(1 << (c as u32 + MIN_SHIFT))
                }
            },
            None => {
                self.allocations += 1;
                Vec::with_capacity(data.len())
            }
        };
        v.clear();
        v.extend_from_slice(data);
        v
    }

    /// Returns a buffer from [`Pool::copy`].
    #[inline]
    pub(crate) fn give(&mut self, v: Vec<u8>) {
        let cap = v.capacity();
        if cap == 0 || !cap.is_power_of_two() {
            return;
        }
        let Some(c) = class_of(cap) else { return };
        if 1usize << (c as u32 + MIN_SHIFT) != cap {
            return;
        }
        let keep = (CLASS_BYTES / cap).max(CLASS_MIN_KEEP);
        let list = &mut self.classes[c];
        if list.len() < keep {
            list.push(v);
        }
    }

    /// Number of free buffers held.
    #[cfg(test)]
    pub(crate) fn free_buffers(&self) -> usize {
        self.classes.iter().map(Vec::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        assert_eq!(class_of(1), Some(0));
        assert_eq!(class_of(64), Some(0));
        assert_eq!(class_of(65), Some(1));
        assert_eq!(class_of(1 << 20), Some(CLASSES - 1));
        assert_eq!(class_of((1 << 20) + 1), None);
    }

    #[test]
    fn buffers_are_reused() {
        let mut p = Pool::default();
        let a = p.copy(b"hello");
        assert_eq!(a, b"hello");
        assert_eq!(a.capacity(), 64);
        p.give(a);
        let b = p.copy(b"world!");
        assert_eq!(b, b"world!");
        assert_eq!(p.allocations, 1);
        assert!(p.copy(&[]).is_empty());
        assert_eq!(p.allocations, 1);
        let big = p.copy(&vec![7u8; (1 << 20) + 3]);
        assert_eq!(big.len(), (1 << 20) + 3);
        p.give(big); // not pooled
        assert_eq!(p.free_buffers(), 0);
        p.give(b);
        assert_eq!(p.free_buffers(), 1);
    }

    #[test]
    fn classes_are_capped() {
        let mut p = Pool::default();
        let bufs: Vec<_> = (0..10).map(|_| p.copy(&[1u8; 1 << 20])).collect();
        for b in bufs {
            p.give(b);
        }
        assert_eq!(p.free_buffers(), CLASS_MIN_KEEP);
    }
}
