//! A non-contiguous layout for the tests of a pml that takes messages in
//! pieces ([`Strided`]): blocks of equal length at a fixed distance, as
//! an MPI vector type lays them out, with the [`Pieces`] description the
//! pml reads them through.

use crate::module::Pieces;
use std::ffi::c_void;

/// `count` blocks of `block` bytes, `stride` bytes apart from start to
/// start; their packed form is the blocks one after another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Strided {
    /// Bytes per block (at least 1).
    pub block: usize,
    /// Distance from one block's start to the next (at least `block`).
    pub stride: usize,
}

impl Strided {
    /// Blocks of `block` bytes, `stride` apart.
    ///
    /// # Panics
    ///
    /// When `block` is 0 or `stride` is below it (a bug in the test).
    pub const fn new(block: usize, stride: usize) -> Strided {
        assert!(
            block > 0 && stride >= block,
            "a strided layout needs 0 < block <= stride"
        );
        Strided { block, stride }
    }

    /// The packed length of `count` blocks.
    pub fn packed(&self, count: usize) -> usize {
        self.block * count
    }

    /// The bytes of a buffer that `count` blocks reach from its start.
    pub fn reach(&self, count: usize) -> usize {
        match count {
            0 => 0,
            n => (n - 1) * self.stride + self.block,
        }
    }

    /// The packed form of the first `count` blocks of `bytes`.
    pub fn gather(&self, bytes: &[u8], count: usize) -> Vec<u8> {
        (0..count)
            .flat_map(|i| &bytes[i * self.stride..i * self.stride + self.block])
            .copied()
            .collect()
    }

    /// Whether `at` lies in one of the first `count` blocks.
    pub fn covers(&self, at: usize, count: usize) -> bool {
        at < self.reach(count) && at % self.stride < self.block
    }

    /// The description of `count` blocks from `origin`, for
    /// `isend_pieces` and `irecv_pieces`.
    pub fn pieces(&'static self, origin: *mut u8, count: usize) -> Pieces {
        Pieces {
            layout: (self as *const Strided).cast(),
            origin,
            count,
            pack,
            unpack,
        }
    }

    /// Calls `copy(offset in the buffer, offset in the packed form, len)`
    /// for the parts of packed bytes `skip .. skip + len` of `count`
    /// blocks; answers how many bytes they cover.
    fn visit(
        &self,
        count: usize,
        skip: usize,
        len: usize,
        mut copy: impl FnMut(usize, usize, usize),
    ) -> usize {
        let n = len.min(self.packed(count).saturating_sub(skip));
        let mut done = 0;
        while done < n {
            let at = skip + done;
            let (index, within) = (at / self.block, at % self.block);
            let take = (self.block - within).min(n - done);
            copy(index * self.stride + within, done, take);
            done += take;
        }
        n
    }
}

/// [`Pieces::pack`] of a [`Strided`] layout.
///
/// # Safety
///
/// `layout` is a live `Strided`; its blocks from `origin` are readable;
/// `out` is writable for `len` bytes and does not overlap them.
unsafe extern "C" fn pack(
    layout: *const c_void,
    origin: *const u8,
    count: usize,
    skip: usize,
    out: *mut u8,
    len: usize,
) -> usize {
    // SAFETY: the caller's promise.
    let layout = unsafe { &*layout.cast::<Strided>() };
    layout.visit(count, skip, len, |from, to, n| {
        // SAFETY: `from .. from + n` is inside a block and `to .. to + n`
        // inside `out` (the caller's promise).
        unsafe { std::ptr::copy_nonoverlapping(origin.add(from), out.add(to), n) }
    })
}

/// [`Pieces::unpack`] of a [`Strided`] layout.
///
/// # Safety
///
/// `layout` is a live `Strided`; its blocks from `origin` are writable
/// and nothing else accesses them; `data` is readable for `len` bytes and
/// does not overlap them.
unsafe extern "C" fn unpack(
    layout: *const c_void,
    origin: *mut u8,
    count: usize,
    skip: usize,
    data: *const u8,
    len: usize,
) -> usize {
    // SAFETY: the caller's promise.
    let layout = unsafe { &*layout.cast::<Strided>() };
    layout.visit(count, skip, len, |to, from, n| {
        // SAFETY: `to .. to + n` is inside a block and `from .. from + n`
        // inside `data` (the caller's promise).
        unsafe { std::ptr::copy_nonoverlapping(data.add(from), origin.add(to), n) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    static LAYOUT: Strided = Strided::new(3, 5);

    #[test]
    fn packing_in_windows_gathers_the_blocks_and_unpacking_scatters_them_back() {
        let mut source: Vec<u8> = (0..LAYOUT.reach(7) as u8).collect();
        let whole = LAYOUT.gather(&source, 7);
        assert_eq!(&whole[..6], &[0, 1, 2, 5, 6, 7]);
        let pieces = LAYOUT.pieces(source.as_mut_ptr(), 7);
        for window in [1usize, 2, 4, 21, 64] {
            let mut packed = Vec::new();
            let mut skip = 0;
            loop {
                let mut out = vec![0u8; window];
                // SAFETY: the live layout and buffer; `out` holds `window`.
                let n = unsafe { pieces.pack_into(skip, out.as_mut_ptr(), window) };
                if n == 0 {
                    break;
                }
                packed.extend_from_slice(&out[..n]);
                skip += n;
            }
            assert_eq!(packed, whole, "window {window}");
            let mut target = vec![0xEEu8; source.len()];
            let back = LAYOUT.pieces(target.as_mut_ptr(), 7);
            for (i, chunk) in packed.chunks(window).enumerate() {
                // SAFETY: as above.
                let used = unsafe { back.unpack_from(i * window, chunk.as_ptr(), chunk.len()) };
                assert_eq!(used, chunk.len());
            }
            for (at, &b) in target.iter().enumerate() {
                let want = if LAYOUT.covers(at, 7) {
                    source[at]
                } else {
                    0xEE
                };
                assert_eq!(b, want, "window {window}, byte {at}");
            }
        }
        // Past the data: nothing is written or used.
        let mut out = [0u8; 4];
        // SAFETY: as above.
        assert_eq!(unsafe { pieces.pack_into(21, out.as_mut_ptr(), 4) }, 0);
    }
}
