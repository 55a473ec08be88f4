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
use oxmpi_datatype::Datatype;

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
        // SAFETY: the caller's promise; the staging buffer is ours.
        unsafe { pack_into(&self.dt, self.buf, &chosen, &mut self.staging) };
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
        let size = u.dt.size();
        for b in &u.blocks {
            let input = &u.staging[b.packed..b.packed + b.count * size];
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
}
