//! Typed buffers as the MPI layer takes them: the user's memory itself
//! when the type is contiguous, else a packed copy (sends) or a staging
//! buffer unpacked when the receive completes — or, for a pml that takes
//! messages in pieces, the user's memory with its type ([`InPieces`]), which
//! the pml packs and unpacks a window at a time.

use crate::errors::Fail;
use crate::handles::{Layout, Typed};
use oxmpi_datatype::Datatype;
use oxmpi_mpi_core::Pieces;
use std::ffi::c_void;

/// A non-contiguous message left in the user's memory: its type (kept
/// alive until the request completes, at an address that does not move)
/// and the description the pml reads it through.
pub struct InPieces {
    /// The elements' type (the description's `layout`).
    dt: Datatype,
    /// What the pml is handed.
    pieces: Pieces,
}

impl InPieces {
    /// `count` elements of `dt` at `origin`, boxed so the description's
    /// layout pointer stays put.
    fn new(dt: &Datatype, origin: *mut u8, count: usize) -> Box<InPieces> {
        let mut boxed = Box::new(InPieces {
            dt: dt.clone(),
            pieces: Pieces {
                layout: std::ptr::null(),
                origin,
                count,
                pack: pack_pieces,
                unpack: unpack_pieces,
            },
        });
        boxed.pieces.layout = (&boxed.dt as *const Datatype).cast();
        boxed
    }

    /// The description the pml is handed.
    pub fn pieces(&self) -> &Pieces {
        &self.pieces
    }
}

/// [`Pieces::pack`] for a [`Datatype`].
///
/// # Safety
///
/// `layout` is the `Datatype` of an [`InPieces`] whose request runs; the
/// elements at `origin` are readable; `out` is writable for `len` bytes
/// and does not overlap them.
unsafe extern "C" fn pack_pieces(
    layout: *const c_void,
    origin: *const u8,
    count: usize,
    skip: usize,
    out: *mut u8,
    len: usize,
) -> usize {
    // SAFETY: the caller's promise.
    let (dt, out) = unsafe {
        (
            &*layout.cast::<Datatype>(),
            std::slice::from_raw_parts_mut(out, len),
        )
    };
    // SAFETY: the caller's promise.
    unsafe { dt.pack_raw(origin, count, skip, out) }
}

/// [`Pieces::unpack`] for a [`Datatype`].
///
/// # Safety
///
/// `layout` is the `Datatype` of an [`InPieces`] whose request runs; the
/// elements at `origin` are writable and nothing else accesses them;
/// `data` is readable for `len` bytes and does not overlap them.
unsafe extern "C" fn unpack_pieces(
    layout: *const c_void,
    origin: *mut u8,
    count: usize,
    skip: usize,
    data: *const u8,
    len: usize,
) -> usize {
    // SAFETY: the caller's promise.
    let (dt, data) = unsafe {
        (
            &*layout.cast::<Datatype>(),
            std::slice::from_raw_parts(data, len),
        )
    };
    // SAFETY: the caller's promise.
    unsafe { dt.unpack_raw(data, origin, count, skip) }
}

/// A send's data.
pub enum Outgoing {
    /// The user's bytes.
    Direct(*const u8, usize),
    /// A copy: packed for a non-contiguous type, or one the user's
    /// buffer may overwrite ([`Outgoing::copied`]).
    Packed(Vec<u8>),
    /// The user's elements of a non-contiguous type, for a pml that
    /// takes them in pieces, with their packed length.
    InPieces(Box<InPieces>, usize),
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

    /// `count` elements of `ty` at `buf` for a pml that takes messages in
    /// pieces when `in_pieces`: a non-contiguous type then stays in the
    /// user's memory; otherwise as [`Outgoing::new`].
    ///
    /// # Safety
    ///
    /// The elements' bytes are readable.
    ///
    /// # Errors
    ///
    /// The size overflows.
    #[inline]
    pub unsafe fn for_pml(
        buf: *const c_void,
        count: usize,
        ty: &Typed,
        in_pieces: bool,
    ) -> Result<Outgoing, Fail> {
        if in_pieces {
            if let Layout::Packed(dt, len) = ty.layout(count)? {
                return Ok(Outgoing::InPieces(
                    InPieces::new(dt, buf.cast_mut().cast(), count),
                    len,
                ));
            }
        }
        // SAFETY: the caller's promise.
        unsafe { Outgoing::new(buf, count, ty) }
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

    /// The bytes to send (for elements in pieces: their origin and
    /// packed length).
    pub fn bytes(&self) -> (*const u8, usize) {
        match self {
            Outgoing::Direct(p, n) => (*p, *n),
            Outgoing::Packed(v) => (v.as_ptr(), v.len()),
            Outgoing::InPieces(p, n) => (p.pieces.origin.cast_const(), *n),
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
    /// The user's elements of a non-contiguous type, for a pml that
    /// takes them in pieces, with their packed length.
    InPieces(Box<InPieces>, usize),
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

    /// `count` elements of `ty` at `buf` for a pml that takes messages in
    /// pieces when `in_pieces`: a non-contiguous type then stays in the
    /// user's memory; otherwise as [`Incoming::new`].
    ///
    /// # Errors
    ///
    /// The size overflows.
    #[inline]
    pub fn for_pml(
        buf: *mut c_void,
        count: usize,
        ty: &Typed,
        in_pieces: bool,
    ) -> Result<Incoming, Fail> {
        if in_pieces {
            if let Layout::Packed(dt, len) = ty.layout(count)? {
                return Ok(Incoming::InPieces(
                    InPieces::new(dt, buf.cast(), count),
                    len,
                ));
            }
        }
        Incoming::new(buf, count, ty)
    }

    /// Where the bytes go (for elements in pieces: their origin and
    /// packed length).
    pub fn bytes(&mut self) -> (*mut u8, usize) {
        match self {
            Incoming::Direct(p, n) => (*p, *n),
            Incoming::Staged(s) => (s.staging.as_mut_ptr(), s.staging.len()),
            Incoming::InPieces(p, n) => (p.pieces.origin, *n),
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
