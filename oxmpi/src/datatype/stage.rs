//! Staging buffers for element types with padding: a send buffer packed
//! into bytes MPI reads, and bytes MPI writes that are unpacked into the
//! receive buffer once the operation completes. For types without
//! padding (`T::CONTIGUOUS`, a constant) nothing is staged: MPI reads
//! and writes the elements themselves, and every check here folds away.

use super::Equivalence;
use oxmpi_datatype::Datatype;

/// The packed form of `items` (their data bytes in field order, no
/// padding).
pub(crate) fn pack<T: Equivalence>(items: &[T]) -> Vec<u8> {
    let mut out = vec![0u8; items.len() * T::PACKED_SIZE];
    // SAFETY: the datatype's reach for `len` elements is inside the slice
    // (it describes fields of `T` at their offsets, extent `size_of::<T>`),
    // and it reads only those fields' bytes, never padding; `out` is a
    // separate allocation.
    unsafe { T::datatype().pack_raw(items.as_ptr().cast(), items.len(), 0, &mut out) };
    out
}

/// A send buffer as MPI reads it: the elements, or their packed form.
pub(crate) struct Outgoing {
    /// Where MPI reads.
    pub(crate) ptr: *const u8,
    /// The packed form `ptr` points into (types with padding).
    packed: Option<Vec<u8>>,
}

impl Outgoing {
    /// `items` to send.
    #[inline(always)]
    pub(crate) fn of<T: Equivalence>(items: &[T]) -> Outgoing {
        if T::CONTIGUOUS {
            return Outgoing {
                ptr: items.as_ptr().cast(),
                packed: None,
            };
        }
        let packed = pack(items);
        Outgoing {
            ptr: packed.as_ptr(),
            packed: Some(packed),
        }
    }
}

/// A receive buffer's address, kept by a request until it completes (an
/// exclusive borrow the request holds for its lifetime).
struct Destination(*mut u8);

// SAFETY: the pointer stands for a `&'a mut [T]` the request borrows
// (`T: Send + Sync`), which may move between threads as the borrow may.
unsafe impl Send for Destination {}
// SAFETY: as above; shared access never writes through it (only the
// completion, which holds the request exclusively or is its only user).
unsafe impl Sync for Destination {}

/// Bytes MPI writes, unpacked into the receive buffer at completion.
pub(crate) struct Unpack {
    bytes: Vec<u8>,
    dest: Destination,
    count: usize,
    datatype: &'static Datatype,
}

impl Unpack {
    /// Unpacks the first `received` bytes (whole elements) into the
    /// receive buffer.
    ///
    /// # Safety
    /// MPI no longer writes the staging bytes, and the receive buffer is
    /// still exclusively borrowed for this (the request's or the call's
    /// borrow).
    pub(crate) unsafe fn finish(&self, received: usize) {
        let data = &self.bytes[..received.min(self.bytes.len())];
        // SAFETY: the buffer holds `count` elements, the reach of the
        // datatype for them, exclusively borrowed (the caller's promise);
        // the staging bytes are a separate allocation.
        unsafe { self.datatype.unpack_raw(data, self.dest.0, self.count, 0) };
    }

    /// The staging bytes' length.
    pub(crate) fn len(&self) -> usize {
        self.bytes.len()
    }
}

/// A receive buffer as MPI writes it: the elements, or staging bytes.
pub(crate) struct Incoming {
    /// Where MPI writes (and, for in-place operations, reads).
    pub(crate) ptr: *mut u8,
    unpack: Option<Unpack>,
}

impl Incoming {
    /// `items` to receive into (and, for in-place and broadcast, to send
    /// from). For a type with padding the staging bytes start as the
    /// packed form of `items`, so elements the operation does not write
    /// keep their values.
    #[inline(always)]
    pub(crate) fn of<T: Equivalence>(items: &mut [T]) -> Incoming {
        if T::CONTIGUOUS {
            return Incoming::direct(items);
        }
        Incoming::staged(items, pack(items))
    }

    /// `items` to receive a message into: for a type with padding the
    /// staging bytes start zeroed (only what arrives is unpacked).
    #[inline(always)]
    pub(crate) fn fresh<T: Equivalence>(items: &mut [T]) -> Incoming {
        if T::CONTIGUOUS {
            return Incoming::direct(items);
        }
        let zeros = vec![0u8; items.len() * T::PACKED_SIZE];
        Incoming::staged(items, zeros)
    }

    /// Unpacks the first `received` bytes into the receive buffer (a
    /// receive completed); nothing for a type without padding.
    ///
    /// # Safety
    /// As [`Unpack::finish`].
    #[inline(always)]
    pub(crate) unsafe fn finish(&self, received: usize) {
        if let Some(u) = &self.unpack {
            // SAFETY: the caller's promise.
            unsafe { u.finish(received) }
        }
    }

    #[inline(always)]
    fn direct<T: Equivalence>(items: &mut [T]) -> Incoming {
        Incoming {
            ptr: items.as_mut_ptr().cast(),
            unpack: None,
        }
    }

    fn staged<T: Equivalence>(items: &mut [T], mut bytes: Vec<u8>) -> Incoming {
        Incoming {
            ptr: bytes.as_mut_ptr(),
            unpack: Some(Unpack {
                dest: Destination(items.as_mut_ptr().cast()),
                count: items.len(),
                datatype: T::datatype(),
                bytes,
            }),
        }
    }
}

/// What an operation on types with padding keeps until it completes.
#[derive(Default)]
pub(crate) struct Staging {
    /// The packed send buffer (MPI reads it until completion).
    send: Option<Vec<u8>>,
    /// The staging bytes of the receive buffer.
    pub(crate) recv: Option<Unpack>,
}

impl Staging {
    /// Nothing staged (types without padding, or no buffers).
    pub(crate) const NONE: Staging = Staging {
        send: None,
        recv: None,
    };

    /// The staging of a send buffer and a receive buffer.
    #[inline(always)]
    pub(crate) fn new(send: Option<Outgoing>, recv: Option<Incoming>) -> Staging {
        Staging {
            send: send.and_then(|s| s.packed),
            recv: recv.and_then(|r| r.unpack),
        }
    }

    /// Whether nothing is staged.
    #[inline(always)]
    pub(crate) fn is_empty(&self) -> bool {
        self.send.is_none() && self.recv.is_none()
    }

    /// Unpacks the whole staging receive buffer (a collective completed).
    ///
    /// # Safety
    /// As [`Unpack::finish`].
    #[inline(always)]
    pub(crate) unsafe fn finish_all(&self) {
        if let Some(u) = &self.recv {
            // SAFETY: the caller's promise.
            unsafe { u.finish(u.len()) }
        }
    }
}
