//! The receive queue in a segment: a bounded lock-free queue of 64-bit
//! descriptors with many producers (the node's other processes) and one
//! consumer (the segment's owner).
//!
//! Each cell holds a sequence number and a value. A producer claims
//! position `p` by moving the tail from `p` to `p + 1` (compare-and-swap)
//! when cell `p % n` has sequence `p` (free for this lap), writes the value
//! and stores sequence `p + 1` (release): the cell is full. The consumer
//! at position `p` takes the cell whose sequence is `p + 1` (acquire),
//! reads the value and stores sequence `p + n` (release): free for the
//! next lap. A full queue makes `push` answer false; nothing waits.

use crate::segment::Segment;
use std::sync::atomic::Ordering;

/// Appends `value` to `segment`'s receive queue; false when it is full.
pub fn push(segment: &Segment, value: u64) -> bool {
    let mask = segment.sizes().fifo_cells as u64 - 1;
    let tail = segment.fifo_tail();
    let mut pos = tail.load(Ordering::Relaxed);
    loop {
        let (seq, slot) = segment.fifo_cell((pos & mask) as usize);
        let s = seq.load(Ordering::Acquire);
        match s.wrapping_sub(pos) as i64 {
            0 => {
                match tail.compare_exchange_weak(pos, pos + 1, Ordering::Relaxed, Ordering::Relaxed)
                {
                    Ok(_) => {
                        slot.store(value, Ordering::Relaxed);
                        seq.store(pos + 1, Ordering::Release);
                        return true;
                    }
                    Err(now) => pos = now,
                }
            }
            d if d < 0 => return false,
            _ => pos = tail.load(Ordering::Relaxed),
        }
    }
}

/// Takes the value at the consumer's position `head` of the owner's own
/// `segment`, advancing `head`; `None` when the queue is empty there.
#[inline]
pub fn pop(segment: &Segment, head: &mut u64) -> Option<u64> {
    let n = segment.sizes().fifo_cells as u64;
    let (seq, slot) = segment.fifo_cell((*head & (n - 1)) as usize);
    if seq.load(Ordering::Acquire) != *head + 1 {
        return None;
    }
    let value = slot.load(Ordering::Relaxed);
    seq.store(*head + n, Ordering::Release);
    *head += 1;
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment::small_for_tests;

    #[test]
    fn values_come_out_in_order_and_a_full_queue_refuses() {
        let dir = tempfile::tempdir().unwrap();
        let s = small_for_tests(dir.path(), "q", 16, 0);
        let mut head = 0;
        for lap in 0..3u64 {
            for i in 0..16 {
                assert!(push(&s, lap * 100 + i));
            }
            assert!(!push(&s, 999), "a full queue takes nothing");
            for i in 0..16 {
                assert_eq!(pop(&s, &mut head), Some(lap * 100 + i));
            }
            assert_eq!(pop(&s, &mut head), None);
        }
    }

    #[test]
    fn many_producers_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let s = small_for_tests(dir.path(), "q", 64, 0);
        let path = dir.path().join("q");
        let per = 20_000u64;
        let producers: Vec<_> = (0..3u64)
            .map(|t| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let s = Segment::attach(&path).unwrap().unwrap();
                    for i in 0..per {
                        while !push(&s, t << 32 | i) {
                            std::thread::yield_now();
                        }
                    }
                })
            })
            .collect();
        let mut next = [0u64; 3];
        let mut head = 0;
        let mut got = 0;
        while got < 3 * per {
            match pop(&s, &mut head) {
                Some(v) => {
                    let (t, i) = ((v >> 32) as usize, v & 0xffff_ffff);
                    assert_eq!(i, next[t], "producer {t}'s values in order");
                    next[t] += 1;
                    got += 1;
                }
                None => std::thread::yield_now(),
            }
        }
        for p in producers {
            p.join().unwrap();
        }
        assert_eq!(pop(&s, &mut head), None);
    }
}
