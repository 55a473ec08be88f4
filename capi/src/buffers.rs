//! Typed buffers as the MPI layer takes them: the user's memory itself
//! when the type is contiguous, else a packed copy (sends) or a staging
//! buffer unpacked when the receive completes.

use crate::errors::Fail;
use crate::handles::{Layout, Typed};
use oxmpi_datatype::Datatype;
use std::ffi::c_void;

/// A send's data.
pub enum Outgoing {
    /// The user's bytes.
    Direct(*const u8, usize),
    /// A copy: packed for a non-contiguous type, or one the user's
    /// buffer may overwrite ([`Outgoing::copied`]).
    Packed(Vec<u8>),
}

impl Outgoing {
    /// `count` elements of `ty` at `buf`.
    ///
    /// # Safety
    ///
    /// The elements' bytes are readable.
    ///
    /// # Errors
    ///
    /// The size overflows.
    #[inline]
    pub unsafe fn new(buf: *const c_void, count: usize, ty: &Typed) -> Result<Outgoing, Fail> {
        match ty.layout(count)? {
            Layout::Contiguous(len) => Ok(Outgoing::Direct(buf.cast(), len)),
            Layout::Packed(dt, len) => {
                let mut packed = vec![0u8; len];
                // SAFETY: the elements are readable (the caller's promise);
                // the copy is a new vector.
                unsafe { dt.pack_raw(buf.cast(), count, 0, &mut packed) };
                Ok(Outgoing::Packed(packed))
            }
        }
    }

    /// A copy of `count` elements of `ty` at `buf` (packed when the type
    /// is not contiguous), which the user's buffer may overwrite.
    ///
    /// # Safety
    ///
    /// The elements' bytes are readable.
    ///
    /// # Errors
    ///
    /// The size overflows.
    pub unsafe fn copied(buf: *const c_void, count: usize, ty: &Typed) -> Result<Outgoing, Fail> {
        // SAFETY: the caller's promise.
        match unsafe { Outgoing::new(buf, count, ty) }? {
            Outgoing::Direct(_, 0) => Ok(Outgoing::Packed(Vec::new())),
            Outgoing::Direct(p, len) => {
                // SAFETY: `len` readable bytes at `p` (the caller's
                // promise), which is not null as `len` is not 0.
                let bytes = unsafe { std::slice::from_raw_parts(p, len) };
                Ok(Outgoing::Packed(bytes.to_vec()))
            }
            packed => Ok(packed),
        }
    }

    /// The bytes to send.
    pub fn bytes(&self) -> (*const u8, usize) {
        match self {
            Outgoing::Direct(p, n) => (*p, *n),
            Outgoing::Packed(v) => (v.as_ptr(), v.len()),
        }
    }
}

/// A receive's destination.
pub enum Incoming {
    /// The user's bytes.
    Direct(*mut u8, usize),
    /// A staging buffer, unpacked when the receive completes (boxed: the
    /// rare case, kept out of the size of every request).
    Staged(Box<Staging>),
}

/// A staged receive: the bytes arrive in `staging` and are unpacked into
/// `count` elements of `dt` at `buf`.
pub struct Staging {
    /// The received bytes.
    staging: Vec<u8>,
    /// The receive's type.
    dt: Datatype,
    /// The user's buffer.
    buf: *mut u8,
    /// Its elements.
    count: usize,
}

// SAFETY: the raw pointers are the user's buffers, which MPI lets any
// thread complete a request on; nothing here dereferences them without the
// caller's promise.
unsafe impl Send for Incoming {}
// SAFETY: as above.
unsafe impl Send for Outgoing {}

impl Incoming {
    /// `count` elements of `ty` at `buf`.
    ///
    /// # Errors
    ///
    /// The size overflows.
    #[inline]
    pub fn new(buf: *mut c_void, count: usize, ty: &Typed) -> Result<Incoming, Fail> {
        Ok(match ty.layout(count)? {
            Layout::Contiguous(len) => Incoming::Direct(buf.cast(), len),
            Layout::Packed(dt, len) => Incoming::Staged(Box::new(Staging {
                staging: vec![0u8; len],
                dt: dt.clone(),
                buf: buf.cast(),
                count,
            })),
        })
    }

    /// Where the bytes go.
    pub fn bytes(&mut self) -> (*mut u8, usize) {
        match self {
            Incoming::Direct(p, n) => (*p, *n),
            Incoming::Staged(s) => (s.staging.as_mut_ptr(), s.staging.len()),
        }
    }

    /// Puts the first `received` bytes where the user wants them.
    ///
    /// # Safety
    ///
    /// The user's elements are writable and nothing else uses them.
    pub unsafe fn finish(&self, received: usize) {
        if let Incoming::Staged(s) = self {
            let n = received.min(s.staging.len());
            // SAFETY: the caller's promise.
            unsafe { s.dt.unpack_raw(&s.staging[..n], s.buf, s.count, 0) };
        }
    }
}
