//! [`copy`]: the byte copy of fragment headers and payloads, which are
//! mostly a few dozen bytes: a copy of up to 32 bytes is two overlapping
//! pairs of loads and stores inline, where the C library's `memmove`
//! costs a call and its own size dispatch (more than the copy itself).

use std::ptr;

/// Copies `n` bytes from `src` to `dst`; the ranges may overlap
/// (`memmove`'s contract). Copies of up to 32 bytes read every byte
/// before writing any, inline; longer ones call [`ptr::copy`].
///
/// # Safety
///
/// `src` is readable and `dst` writable for `n` bytes (either may be
/// dangling when `n` is 0).
#[inline(always)]
pub unsafe fn copy(src: *const u8, dst: *mut u8, n: usize) {
    // SAFETY: in every arm the reads and writes stay inside the first `n`
    // bytes (each pair starts at 0 and ends at `n`), which the caller
    // promised; unaligned accesses are used throughout, and every arm
    // reads all its bytes before it writes any (overlap is allowed).
    unsafe {
        if n >= 16 {
            if n > 32 {
                ptr::copy(src, dst, n);
                return;
            }
            let a = ptr::read_unaligned(src.cast::<u128>());
            let b = ptr::read_unaligned(src.add(n - 16).cast::<u128>());
            ptr::write_unaligned(dst.cast::<u128>(), a);
            ptr::write_unaligned(dst.add(n - 16).cast::<u128>(), b);
        } else if n >= 8 {
            let a = ptr::read_unaligned(src.cast::<u64>());
            let b = ptr::read_unaligned(src.add(n - 8).cast::<u64>());
            ptr::write_unaligned(dst.cast::<u64>(), a);
            ptr::write_unaligned(dst.add(n - 8).cast::<u64>(), b);
        } else if n >= 4 {
            let a = ptr::read_unaligned(src.cast::<u32>());
            let b = ptr::read_unaligned(src.add(n - 4).cast::<u32>());
            ptr::write_unaligned(dst.cast::<u32>(), a);
            ptr::write_unaligned(dst.add(n - 4).cast::<u32>(), b);
        } else if n > 0 {
            let (a, b, c) = (*src, *src.add(n / 2), *src.add(n - 1));
            *dst = a;
            *dst.add(n / 2) = b;
            *dst.add(n - 1) = c;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_length_is_copied_exactly_and_nothing_past_it() {
        let src: Vec<u8> = (0..80u8)
            .map(|i| i.wrapping_mul(37).wrapping_add(1))
            .collect();
        for n in 0..=70 {
            for offset in 0..3 {
                let mut dst = vec![0xeeu8; 80];
                // SAFETY: both buffers hold `offset + n <= 73` bytes.
                unsafe { copy(src.as_ptr().add(offset), dst.as_mut_ptr().add(1), n) };
                assert_eq!(&dst[1..1 + n], &src[offset..offset + n], "n {n}");
                assert_eq!(dst[0], 0xee);
                assert!(dst[1 + n..].iter().all(|&b| b == 0xee), "n {n}");
            }
        }
    }

    #[test]
    fn overlapping_ranges_copy_as_memmove_does() {
        for n in 0..=48 {
            for shift in 1..=20 {
                let orig: Vec<u8> = (0..100u8).collect();
                let mut forward = orig.clone();
                let mut expected = orig.clone();
                expected.copy_within(10..10 + n, 10 + shift);
                // SAFETY: both ranges lie inside the 100-byte buffer.
                unsafe {
                    let p = forward.as_mut_ptr();
                    copy(p.add(10), p.add(10 + shift), n);
                }
                assert_eq!(forward, expected, "forward n {n} shift {shift}");
                let mut backward = orig.clone();
                let mut expected = orig.clone();
                expected.copy_within(10 + shift..10 + shift + n, 10);
                // SAFETY: as above.
                unsafe {
                    let p = backward.as_mut_ptr();
                    copy(p.add(10 + shift), p.add(10), n);
                }
                assert_eq!(backward, expected, "backward n {n} shift {shift}");
            }
        }
    }
}
