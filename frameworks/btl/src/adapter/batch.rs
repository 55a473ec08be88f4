//! [`Fragments`]: whole fragments a btl collects from its memory and hands
//! to the pml in one callback ([`Pml::fragments`](super::Pml::fragments)).

use crate::module::{FragmentRef, MAX_HEADER};
use std::marker::PhantomData;
use std::mem::MaybeUninit;

/// Up to [`Fragments::CAPACITY`] whole fragments whose header and payload
/// live in the btl's memory for `'a` (a shared-memory ring, say), to be
/// delivered together: the pml is entered once for all of them instead of
/// once per fragment. Building one allocates and writes nothing.
pub struct Fragments<'a> {
    /// The first `len` are set (by `push`).
    items: [MaybeUninit<FragmentRef>; Fragments::CAPACITY],
    len: usize,
    _bytes: PhantomData<&'a [u8]>,
}

/// A fragment [`Fragments::push`] did not take, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The batch holds [`Fragments::CAPACITY`] fragments already: deliver
    /// it first.
    Full,
    /// The header is longer than [`MAX_HEADER`] bytes.
    HeaderTooLong,
}

impl<'a> Fragments<'a> {
    /// Most fragments one batch holds.
    pub const CAPACITY: usize = 32;

    /// An empty batch.
    #[inline]
    pub fn new() -> Fragments<'a> {
        Fragments {
            items: [const { MaybeUninit::uninit() }; Fragments::CAPACITY],
            len: 0,
            _bytes: PhantomData,
        }
    }

    /// Adds a fragment from `peer` (delivered after those already in the
    /// batch).
    ///
    /// # Errors
    ///
    /// [`Refused::Full`] when the batch is full, [`Refused::HeaderTooLong`]
    /// for a header past [`MAX_HEADER`] bytes; nothing is added.
    #[inline]
    pub fn push(&mut self, peer: u32, header: &'a [u8], payload: &'a [u8]) -> Result<(), Refused> {
        if self.len == Fragments::CAPACITY {
            return Err(Refused::Full);
        }
        if header.len() > MAX_HEADER {
            return Err(Refused::HeaderTooLong);
        }
        self.items[self.len] = MaybeUninit::new(FragmentRef {
            peer,
            header_len: header.len() as u32,
            header: header.as_ptr(),
            payload: payload.as_ptr(),
            payload_len: payload.len(),
        });
        self.len += 1;
        Ok(())
    }

    /// Number of fragments in the batch.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the batch holds no fragment.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the batch holds [`Fragments::CAPACITY`] fragments.
    #[inline]
    pub fn is_full(&self) -> bool {
        self.len == Fragments::CAPACITY
    }

    /// Empties the batch.
    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// The fragments, in the order they were pushed; every pointer is valid
    /// for `'a`.
    #[inline]
    pub(crate) fn as_refs(&self) -> &[FragmentRef] {
        // SAFETY: `push` set the first `len` items (`len` only grows
        // through it, and `clear` sets it to 0), and `MaybeUninit<T>` has
        // `T`'s layout.
        unsafe { std::slice::from_raw_parts(self.items.as_ptr().cast::<FragmentRef>(), self.len) }
    }
}

impl Default for Fragments<'_> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_keeps_order_and_refuses_past_capacity_or_a_long_header() {
        let bytes: Vec<u8> = (0..=255).collect();
        let mut batch = Fragments::new();
        assert!(batch.is_empty());
        assert_eq!(
            batch.push(1, &bytes[..MAX_HEADER + 1], &[]),
            Err(Refused::HeaderTooLong)
        );
        for i in 0..Fragments::CAPACITY {
            batch
                .push(i as u32, &bytes[i..i + 4], &bytes[i..i + 8])
                .unwrap();
        }
        assert!(batch.is_full());
        assert_eq!(batch.push(99, &bytes[..1], &[]), Err(Refused::Full));
        let refs = batch.as_refs();
        assert_eq!(refs.len(), Fragments::CAPACITY);
        for (i, f) in refs.iter().enumerate() {
            assert_eq!(f.peer, i as u32);
            assert_eq!(f.header_len, 4);
            assert_eq!(f.header, bytes[i..].as_ptr());
            assert_eq!(f.payload_len, 8);
        }
    }
}
