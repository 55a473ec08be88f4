//! Packing: a type's data bytes, in type-map order, into a contiguous
//! buffer and back (native representation: the bytes as they are in
//! memory), whole or a window at a time, as a transport that sends a
//! message in pieces needs.

use crate::desc::{walk, Window};
use crate::{Datatype, DatatypeError};

/// The bytes `position .. position + needed` of a pack buffer of `len`
/// bytes.
///
/// # Errors
///
/// `Truncate` when they pass its end.
pub(crate) fn span(
    name: &'static str,
    len: usize,
    position: usize,
    needed: usize,
) -> Result<std::ops::Range<usize>, DatatypeError> {
    match position.checked_add(needed) {
        Some(end) if end <= len => Ok(position..end),
        _ => Err(DatatypeError::Truncate {
            name,
            needed,
            position,
            available: len,
        }),
    }
}

impl Datatype {
    /// Data bytes of `count` elements (`MPI_Pack_size`: packing adds
    /// nothing).
    ///
    /// # Errors
    ///
    /// The size overflows.
    pub fn packed_size(&self, count: usize) -> Result<usize, DatatypeError> {
        self.size()
            .checked_mul(count)
            .ok_or(DatatypeError::Overflow {
                name: "MPI_Pack_size",
                what: "size",
            })
    }

    /// The bytes `count` elements from a buffer's origin read or write:
    /// `lo .. hi` from the origin, or `None` when they hold no data.
    pub fn reach(&self, count: usize) -> Option<(isize, isize)> {
        let t = self.inner();
        if count == 0 || t.size == 0 {
            return None;
        }
        let last = (count - 1) as isize * self.extent();
        Some((t.true_lb + last.min(0), t.true_ub + last.max(0)))
    }

    /// Visits the pieces of `count` elements at `origin`'s displacements
    /// that fall in the window of the packed stream that starts `skip`
    /// bytes in and is `len` bytes long: `visit(disp, packed_at, len)`.
    fn pieces(
        &self,
        count: usize,
        skip: usize,
        len: usize,
        mut visit: impl FnMut(isize, usize, usize),
    ) {
        let t = self.inner();
        if t.size == 0 || len == 0 {
            return;
        }
        let extent = self.extent();
        let mut at = 0;
        if self.is_contiguous() {
            visit(skip as isize, 0, len);
            return;
        }
        let first = skip / t.size;
        let mut window = Window {
            skip: skip - first * t.size,
            left: len,
        };
        for i in first..count {
            if window.left == 0 {
                break;
            }
            walk(
                &t.nodes,
                i as isize * extent,
                &mut window,
                &mut |disp, _, _, n| {
                    visit(disp, at, n);
                    at += n;
                },
            );
        }
    }

    /// Clamps a window to the data of `count` elements: the bytes
    /// available from `skip` on, at most `want`.
    fn window(&self, count: usize, skip: usize, want: usize) -> usize {
        let total = self.size().saturating_mul(count);
        total.saturating_sub(skip).min(want)
    }

    /// Packs bytes `skip .. skip + out.len()` of the packed form of
    /// `count` elements at `origin` into `out` (fewer when the data end
    /// first) and answers how many it wrote.
    ///
    /// # Safety
    ///
    /// The bytes [`Datatype::reach`] gives for `count`, from `origin`, are
    /// readable, and `out` does not overlap them.
    pub unsafe fn pack_raw(
        &self,
        origin: *const u8,
        count: usize,
        skip: usize,
        out: &mut [u8],
    ) -> usize {
        let n = self.window(count, skip, out.len());
        let dst = out.as_mut_ptr();
        self.pieces(count, skip, n, |disp, at, len| {
            // SAFETY: `origin + disp .. + len` is inside the reach the
            // caller vouched for; `at + len ≤ n ≤ out.len()`; no overlap
            // (the caller's promise).
            unsafe { std::ptr::copy_nonoverlapping(origin.wrapping_offset(disp), dst.add(at), len) }
        });
        n
    }

    /// Unpacks `input`, bytes `skip ..` of the packed form of `count`
    /// elements, into the elements at `origin`, and answers how many
    /// bytes it used (fewer than `input.len()` when the data end first).
    ///
    /// # Safety
    ///
    /// The bytes [`Datatype::reach`] gives for `count`, from `origin`, are
    /// writable and nothing else accesses them meanwhile, and `input` does
    /// not overlap them.
    pub unsafe fn unpack_raw(
        &self,
        input: &[u8],
        origin: *mut u8,
        count: usize,
        skip: usize,
    ) -> usize {
        let n = self.window(count, skip, input.len());
        let src = input.as_ptr();
        self.pieces(count, skip, n, |disp, at, len| {
            // SAFETY: as in `pack_raw`, with the roles swapped.
            unsafe { std::ptr::copy_nonoverlapping(src.add(at), origin.wrapping_offset(disp), len) }
        });
        n
    }

    /// Checks that `count` elements at byte `origin` of a buffer of `len`
    /// bytes stay inside it.
    pub(crate) fn check_reach(
        &self,
        name: &'static str,
        count: usize,
        origin: usize,
        len: usize,
    ) -> Result<(), DatatypeError> {
        if let Some((lo, hi)) = self.reach(count) {
            let o = origin as i128;
            if o + (lo as i128) < 0 || o + hi as i128 > len as i128 {
                return Err(DatatypeError::OutOfBuffer {
                    name,
                    count,
                    lo,
                    hi,
                    len,
                });
            }
        }
        Ok(())
    }

    /// Packs `count` elements whose origin is byte `origin` of `buf` into
    /// `out` at `*position`, and advances `*position` past them
    /// (`MPI_Pack`).
    ///
    /// # Errors
    ///
    /// The elements reach outside `buf`; `out` has no room for them from
    /// `*position` (nothing is written then).
    pub fn pack(
        &self,
        buf: &[u8],
        origin: usize,
        count: usize,
        out: &mut [u8],
        position: &mut usize,
    ) -> Result<(), DatatypeError> {
        const NAME: &str = "MPI_Pack";
        self.check_reach(NAME, count, origin, buf.len())?;
        let needed = self.packed_size(count)?;
        let range = span(NAME, out.len(), *position, needed)?;
        let room = &mut out[range];
        // SAFETY: the reach is inside `buf` (checked); `out` is another
        // slice, so they do not overlap.
        let n = unsafe { self.pack_raw(buf.as_ptr().wrapping_add(origin), count, 0, room) };
        *position += n;
        Ok(())
    }

    /// Unpacks `count` elements from `input` at `*position` into the
    /// elements whose origin is byte `origin` of `buf`, and advances
    /// `*position` past them (`MPI_Unpack`).
    ///
    /// # Errors
    ///
    /// The elements reach outside `buf`; `input` holds fewer bytes than
    /// they take from `*position` (nothing is written then).
    pub fn unpack(
        &self,
        input: &[u8],
        position: &mut usize,
        buf: &mut [u8],
        origin: usize,
        count: usize,
    ) -> Result<(), DatatypeError> {
        const NAME: &str = "MPI_Unpack";
        self.check_reach(NAME, count, origin, buf.len())?;
        let needed = self.packed_size(count)?;
        let data = &input[span(NAME, input.len(), *position, needed)?];
        // SAFETY: the reach is inside `buf` (checked), which the `&mut`
        // borrow makes exclusive; `input` is another slice.
        let n = unsafe { self.unpack_raw(data, buf.as_mut_ptr().wrapping_add(origin), count, 0) };
        *position += n;
        Ok(())
    }

    /// The primitive values in the first `bytes` bytes of the packed form
    /// of elements of the type (`MPI_Get_elements` for a message of
    /// `bytes` bytes), or `None` when those bytes end inside a value.
    pub fn values_in(&self, bytes: usize) -> Option<usize> {
        let t = self.inner();
        if t.size == 0 {
            return Some(0);
        }
        let whole = bytes / t.size;
        let mut values = whole * t.values;
        let mut window = Window {
            skip: 0,
            left: bytes - whole * t.size,
        };
        let mut cut = false;
        walk(&t.nodes, 0, &mut window, &mut |_, prim, _, len| {
            values += len / prim.size();
            cut |= len % prim.size() != 0;
        });
        (!cut).then_some(values)
    }
}
