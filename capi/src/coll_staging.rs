//! Staging buffers for collectives over non-contiguous datatypes.
//!
//! The MPI layer's collectives move bytes. A side of a call (what a rank
//! sends, or where it receives) in a type that is not contiguous goes
//! through a staging buffer that holds its elements in the type's packed
//! form, block after block in rank order: a send side is packed before
//! the call starts; a receive side is unpacked into the user's buffer
//! after the call completed ([`Staged::finish`], which the blocking call
//! runs after the call and a non-blocking one's request when it
//! completes). Counts and displacements of a staged side are given to the
//! MPI layer in bytes of that packed layout: block `i` of `counts[i]`
//! elements starts where block `i − 1` ends in the staging buffer, and is
//! unpacked to `buf + displs[i] × extent` in the user's.

use crate::errors::{Fail, ERR_COUNT};
use oxmpi_datatype::{Datatype, Pair};

/// The form the reduction kernels take the elements of a pair type in:
/// each pair laid out as the C struct (the value at 0, the `int` index
/// after it, padding to the pair's extent), where the packed form has no
/// padding. A staged reduction over a derived type of pairs holds its
/// elements in this wide form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wide {
    /// Bytes of the value.
    value: usize,
    /// Where the index lies in a wide pair.
    index_at: usize,
    /// Bytes of a wide pair (the pair type's extent).
    extent: usize,
}

impl Wide {
    /// The wide form of `pair`.
    pub fn of(pair: Pair) -> Wide {
        let dt = Datatype::pair(pair);
        Wide {
            value: pair.value().size(),
            // The index is the type's last value, and an int.
            index_at: (dt.true_extent() - 4) as usize,
            extent: dt.extent() as usize,
        }
    }

    /// Bytes of a packed pair.
    fn packed(self) -> usize {
        self.value + 4
    }

    /// Bytes of the wide form of `packed` bytes of pairs.
    fn widened(self, packed: usize) -> usize {
        packed / self.packed() * self.extent
    }

    /// Lays the packed pairs of `packed` out wide in `wide` (as many as
    /// both hold; padding is left as it was).
    fn widen(self, packed: &[u8], wide: &mut [u8]) {
        let (v, i) = (self.value, self.index_at);
        for (p, w) in packed
            .chunks_exact(self.packed())
            .zip(wide.chunks_exact_mut(self.extent))
        {
            w[..v].copy_from_slice(&p[..v]);
            w[i..i + 4].copy_from_slice(&p[v..]);
        }
    }

    /// The wide form of the packed pairs `packed`, in a new buffer.
    pub fn wide_copy(self, packed: &[u8]) -> Vec<u8> {
        let mut out = vec![0; self.widened(packed.len())];
        self.widen(packed, &mut out);
        out
    }

    /// Packs the wide pairs of `wide` into `packed` (as many as both
    /// hold).
    pub fn narrow(self, wide: &[u8], packed: &mut [u8]) {
        let (v, i) = (self.value, self.index_at);
        for (w, p) in wide
            .chunks_exact(self.extent)
            .zip(packed.chunks_exact_mut(self.packed()))
        {
            p[..v].copy_from_slice(&w[..v]);
            p[v..].copy_from_slice(&w[i..i + 4]);
        }
    }
}

/// Elements of a staged side: `count` elements of the side's type whose
/// origin is `at` bytes from the user's buffer, and whose packed form
/// starts at byte `packed` of the staging buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    /// Bytes from the user's buffer to the first element's origin.
    pub at: isize,
    /// Elements.
    pub count: usize,
    /// Bytes from the staging buffer's start to the block's packed form.
    pub packed: usize,
}

#[cold]
fn too_large(what: &str) -> Fail {
    Fail::new(
        ERR_COUNT,
        format!("{what} passes the address space; use smaller counts or displacements"),
    )
}

/// `ranks` blocks of `count` elements of `dt`, one after another in the
/// user's buffer (block `i` at `i × count × extent`) as in the staging
/// buffer; and the staging buffer's size.
///
/// # Errors
///
/// `MPI_ERR_COUNT` when a size or offset overflows.
pub fn uniform(
    what: &str,
    dt: &Datatype,
    ranks: usize,
    count: usize,
) -> Result<(Vec<Block>, usize), Fail> {
    let packed = count
        .checked_mul(dt.size())
        .ok_or_else(|| too_large(what))?;
    let stride = isize::try_from(count)
        .ok()
        .and_then(|c| c.checked_mul(dt.extent()))
        .ok_or_else(|| too_large(what))?;
    let blocks = (0..ranks)
        .map(|i| {
            Some(Block {
                at: stride.checked_mul(isize::try_from(i).ok()?)?,
                count,
                packed: packed.checked_mul(i)?,
            })
        })
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| too_large(what))?;
    let total = packed.checked_mul(ranks).ok_or_else(|| too_large(what))?;
    Ok((blocks, total))
}

/// The blocks of a `v` side in `dt`: `counts[i]` elements at `displs[i]`
/// extents of `dt` from the user's buffer, packed one after another in
/// rank order; and the staging buffer's size.
///
/// # Errors
///
/// `MPI_ERR_COUNT` when a size or offset overflows.
pub fn varying(
    what: &str,
    dt: &Datatype,
    counts: &[usize],
    displs: &[usize],
) -> Result<(Vec<Block>, usize), Fail> {
    let mut total = 0usize;
    let mut blocks = Vec::with_capacity(counts.len());
    for (&count, &displ) in counts.iter().zip(displs) {
        let at = isize::try_from(displ)
            .ok()
            .and_then(|d| d.checked_mul(dt.extent()))
            .ok_or_else(|| too_large(what))?;
        blocks.push(Block {
            at,
            count,
            packed: total,
        });
        total = count
            .checked_mul(dt.size())
            .and_then(|b| total.checked_add(b))
            .ok_or_else(|| too_large(what))?;
    }
    Ok((blocks, total))
}

/// The byte counts and displacements of `blocks` of `dt` in the staging
/// buffer, as the MPI layer takes them for a `v` side.
pub fn byte_layout(dt: &Datatype, blocks: &[Block]) -> (Box<[usize]>, Box<[usize]>) {
    // The sizes were checked when the blocks were laid out.
    let counts = blocks.iter().map(|b| b.count * dt.size()).collect();
    let displs = blocks.iter().map(|b| b.packed).collect();
    (counts, displs)
}

/// Packs `blocks` of `dt` from the user's buffer `buf` into `out` (which
/// the blocks' packed forms fit).
///
/// # Safety
///
/// The blocks' elements at `buf` are readable and do not overlap `out`.
unsafe fn pack_into(dt: &Datatype, buf: *const u8, blocks: &[Block], out: &mut [u8]) {
    for b in blocks {
        let end = b.packed + b.count * dt.size();
        // SAFETY: the block's elements are readable (the caller's
        // promise); `out` is the staging buffer, not the user's.
        unsafe {
            dt.pack_raw(
                buf.wrapping_offset(b.at),
                b.count,
                0,
                &mut out[b.packed..end],
            )
        };
    }
}

/// A staged receive side: the call writes the staging buffer, which is
/// then unpacked into the blocks of the user's buffer.
pub struct Unpack {
    /// The staging buffer.
    staging: Vec<u8>,
    /// The side's type.
    dt: Datatype,
    /// The user's buffer.
    buf: *mut u8,
    /// Where the elements go.
    blocks: Vec<Block>,
    /// Whether the result is unpacked (false where the staged side is
    /// input only: at the root of a bcast, and at rank 0 of an exscan,
    /// whose result MPI leaves undefined).
    unpacks: bool,
    /// The wide form the staging buffer holds pairs in, if it does
    /// (otherwise it holds the packed form).
    wide: Option<Wide>,
}

impl Unpack {
    /// A staging buffer of `total` bytes for `blocks` of `dt` at `buf`.
    pub fn new(dt: &Datatype, buf: *mut u8, blocks: Vec<Block>, total: usize) -> Unpack {
        Unpack {
            staging: vec![0; total],
            dt: dt.clone(),
            buf,
            blocks,
            unpacks: true,
            wide: None,
        }
    }

    /// The staging buffer holds the elements, pairs of `wide`'s type, in
    /// the wide form.
    pub fn widened(mut self, wide: Wide) -> Unpack {
        self.staging = vec![0; wide.widened(self.staging.len())];
        self.wide = Some(wide);
        self
    }

    /// Bytes of the packed form of the staging buffer's elements.
    fn packed_len(&self) -> usize {
        match self.wide {
            Some(w) => self.staging.len() / w.extent * w.packed(),
            None => self.staging.len(),
        }
    }

    /// The staged side is input only here: nothing is unpacked.
    pub fn input_only(mut self) -> Unpack {
        self.unpacks = false;
        self
    }

    /// Packs the user's elements of the blocks `which` selects into the
    /// staging buffer: the input of a call in place.
    ///
    /// # Safety
    ///
    /// Those blocks' elements in the user's buffer are readable.
    pub unsafe fn prefill(&mut self, which: impl Fn(usize) -> bool) {
        let chosen: Vec<Block> = (0..self.blocks.len())
            .filter(|&i| which(i))
            .map(|i| self.blocks[i])
            .collect();
        match self.wide {
            // SAFETY: the caller's promise; the staging buffer is ours.
            None => unsafe { pack_into(&self.dt, self.buf, &chosen, &mut self.staging) },
            Some(w) => {
                let mut packed = vec![0; self.packed_len()];
                // SAFETY: as above, into a buffer of our own.
                unsafe { pack_into(&self.dt, self.buf, &chosen, &mut packed) };
                w.widen(&packed, &mut self.staging);
            }
        }
    }

    /// Keeps only the first `count` elements of the first block for the
    /// unpacking (the result of an in-place reduction whose input is
    /// longer than its result).
    pub fn result_only(&mut self, count: usize) {
        self.blocks.truncate(1);
        if let Some(b) = self.blocks.first_mut() {
            b.count = b.count.min(count);
        }
    }
}

/// What a collective call over non-contiguous types holds besides the
/// user's memory: packed copies of its send sides and its staged receive
/// side.
#[derive(Default)]
pub struct Staged {
    /// Packed send sides (held, read by the call).
    held: Vec<Vec<u8>>,
    /// The receive side, unpacked when the call completed.
    recv: Option<Unpack>,
}

// SAFETY: the raw pointer is the user's receive buffer, which MPI lets any
// thread complete a request on; it is written only by `finish`, whose
// caller promises the call completed.
unsafe impl Send for Staged {}

impl Staged {
    /// Packs `blocks` of `dt` at the user's `buf` into a new buffer of
    /// `total` bytes that `self` keeps, and answers it.
    ///
    /// # Safety
    ///
    /// The blocks' elements at `buf` are readable.
    pub unsafe fn pack(
        &mut self,
        dt: &Datatype,
        buf: *const u8,
        blocks: &[Block],
        total: usize,
    ) -> *const u8 {
        let mut out = vec![0u8; total];
        // SAFETY: the caller's promise; `out` is new.
        unsafe { pack_into(dt, buf, blocks, &mut out) };
        self.hold(out)
    }

    /// As [`Staged::pack`], with the pairs of `wide`'s type laid out wide.
    ///
    /// # Safety
    ///
    /// As [`Staged::pack`].
    pub unsafe fn pack_wide(
        &mut self,
        dt: &Datatype,
        wide: Wide,
        buf: *const u8,
        blocks: &[Block],
        total: usize,
    ) -> *const u8 {
        let mut packed = vec![0u8; total];
        // SAFETY: the caller's promise; `packed` is new.
        unsafe { pack_into(dt, buf, blocks, &mut packed) };
        self.hold(wide.wide_copy(&packed))
    }

    /// Keeps the packed send side `out` and answers where it starts.
    fn hold(&mut self, out: Vec<u8>) -> *const u8 {
        let p = out.as_ptr();
        // The vector's heap memory stays where it is when the vector
        // moves into `held`.
        self.held.push(out);
        p
    }

    /// Keeps `u` as the call's receive side and answers its staging
    /// buffer.
    pub fn receive(&mut self, mut u: Unpack) -> *mut u8 {
        let p = u.staging.as_mut_ptr();
        // As in `pack`: the heap memory does not move with `u`.
        self.recv = Some(u);
        p
    }

    /// Unpacks the staged receive side into the user's buffer.
    ///
    /// # Safety
    ///
    /// The call completed (the staging buffer is final, and the user's
    /// buffer is the application's again), and the receive side's
    /// elements in the user's buffer are writable.
    pub unsafe fn finish(&self) {
        let Some(u) = self.recv.as_ref().filter(|u| u.unpacks) else {
            return;
        };
        let narrowed;
        let packed = match u.wide {
            None => &u.staging,
            Some(w) => {
                let mut p = vec![0; u.packed_len()];
                w.narrow(&u.staging, &mut p);
                narrowed = p;
                &narrowed
            }
        };
        let size = u.dt.size();
        for b in &u.blocks {
            let input = &packed[b.packed..b.packed + b.count * size];
            // SAFETY: the caller's promise; the staging buffer is not the
            // user's memory.
            unsafe {
                u.dt.unpack_raw(input, u.buf.wrapping_offset(b.at), b.count, 0)
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxmpi_datatype::Primitive;

    fn int_vector() -> Datatype {
        // Two ints, one int apart: size 8, extent 12.
        Datatype::vector(2, 1, 2, &Datatype::predefined(Primitive::Int)).unwrap()
    }

    #[test]
    fn uniform_blocks_follow_one_another_in_both_buffers() {
        let (blocks, total) = uniform("recvcount", &int_vector(), 3, 2).unwrap();
        assert_eq!(total, 48);
        let at: Vec<_> = blocks.iter().map(|b| (b.at, b.count, b.packed)).collect();
        assert_eq!(at, [(0, 2, 0), (24, 2, 16), (48, 2, 32)]);
    }

    #[test]
    fn varying_blocks_are_packed_in_rank_order_whatever_the_displacements() {
        let dt = int_vector();
        let (blocks, total) = varying("recvcounts", &dt, &[1, 0, 2], &[5, 9, 0]).unwrap();
        assert_eq!(total, 24);
        let at: Vec<_> = blocks.iter().map(|b| (b.at, b.count, b.packed)).collect();
        assert_eq!(at, [(60, 1, 0), (108, 0, 8), (0, 2, 8)]);
        let (c, d) = byte_layout(&dt, &blocks);
        assert_eq!((&*c, &*d), (&[8, 0, 16][..], &[0, 8, 8][..]));
    }

    #[test]
    fn sizes_that_overflow_are_refused() {
        let f = uniform("recvcount", &int_vector(), 2, usize::MAX / 4).unwrap_err();
        assert_eq!(f.class, ERR_COUNT);
        assert!(f.message.contains("recvcount"), "{}", f.message);
        let f = varying("displs", &int_vector(), &[1], &[usize::MAX / 2]).unwrap_err();
        assert!(f.message.contains("displs"), "{}", f.message);
    }

    #[test]
    fn a_staged_side_unpacks_into_its_blocks_and_leaves_the_gaps() {
        let dt = int_vector();
        let mut user = [-1i32; 9];
        let (blocks, total) = varying("displs", &dt, &[1, 1], &[2, 0]).unwrap();
        let mut s = Staged::default();
        let p = s.receive(Unpack::new(&dt, user.as_mut_ptr().cast(), blocks, total));
        let packed: Vec<u8> = [10i32, 11, 20, 21]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        // SAFETY: the staging buffer holds `total` (16) bytes.
        unsafe { std::ptr::copy_nonoverlapping(packed.as_ptr(), p, 16) };
        // SAFETY: every block lies inside `user`.
        unsafe { s.finish() };
        assert_eq!(user, [20, -1, 21, -1, -1, -1, 10, -1, 11]);
    }

    #[test]
    fn prefill_packs_the_chosen_blocks_only() {
        let dt = int_vector();
        let user: Vec<i32> = (0..12).collect();
        let (blocks, total) = uniform("recvcount", &dt, 2, 2).unwrap();
        let mut u = Unpack::new(&dt, user.as_ptr().cast_mut().cast(), blocks, total);
        // SAFETY: the blocks lie inside `user`.
        unsafe { u.prefill(|i| i == 1) };
        let got: Vec<i32> = u
            .staging
            .chunks(4)
            .map(|c| i32::from_ne_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(got, [0, 0, 0, 0, 6, 8, 9, 11]);
    }

    #[test]
    fn pairs_are_laid_out_as_c_structs_and_packed_back() {
        let w = Wide::of(Pair::ShortInt);
        assert_eq!((w.value, w.index_at, w.extent), (2, 4, 8));
        let d = Wide::of(Pair::DoubleInt);
        assert_eq!((d.value, d.index_at, d.extent), (8, 8, 16));
        // Two packed short-int pairs: 6 bytes each.
        let packed = [1u8, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];
        let wide = w.wide_copy(&packed);
        assert_eq!(wide, [1, 2, 0, 0, 3, 4, 5, 6, 7, 8, 0, 0, 9, 10, 11, 12]);
        let mut back = [0u8; 12];
        w.narrow(&wide, &mut back);
        assert_eq!(back, packed);
    }

    #[test]
    fn a_wide_staged_side_prefills_and_unpacks_through_the_packed_form() {
        // Short-int pairs one pair apart with a pair's gap: extent 16.
        let pair = Datatype::pair(Pair::ShortInt);
        let dt = Datatype::vector(1, 1, 2, &pair).unwrap();
        let dt = Datatype::resized(&dt, 0, 16).unwrap();
        let mut user = [0xEEu8; 32];
        for (k, b) in [(0usize, 10u8), (16, 20)] {
            user[k..k + 2].copy_from_slice(&[b, b + 1]);
            user[k + 4..k + 8].copy_from_slice(&[b + 2, b + 3, b + 4, b + 5]);
        }
        let (blocks, total) = uniform("count", &dt, 1, 2).unwrap();
        assert_eq!(total, 12);
        let mut u =
            Unpack::new(&dt, user.as_mut_ptr(), blocks, total).widened(Wide::of(Pair::ShortInt));
        // SAFETY: both elements lie inside `user`.
        unsafe { u.prefill(|_| true) };
        assert_eq!(
            u.staging,
            [10, 11, 0, 0, 12, 13, 14, 15, 20, 21, 0, 0, 22, 23, 24, 25]
        );
        u.staging[0] = 99;
        u.staging[12] = 98;
        let mut s = Staged::default();
        s.receive(u);
        // SAFETY: as above.
        unsafe { s.finish() };
        assert_eq!(&user[..8], &[99, 11, 0xEE, 0xEE, 12, 13, 14, 15]);
        assert_eq!(&user[16..24], &[20, 21, 0xEE, 0xEE, 98, 23, 24, 25]);
        assert!(user[8..16].iter().chain(&user[24..]).all(|&b| b == 0xEE));
    }
}
