//! The byte stream under a connection: where a reader's bytes come from
//! ([`ByteSource`]) and where a writer's bytes go ([`ByteSink`]). A
//! connected socket is both ([`Socket`]); the framing tests drive the
//! readers and writers through scripted streams that cut the bytes at
//! every boundary.

use std::io;
use std::os::fd::RawFd;

use crate::sys;

/// Where a connection's reader takes its bytes from.
pub trait ByteSource {
    /// Receives at most `len` bytes into `buf` without blocking: the
    /// count received (0 at end of stream), or an error (`WouldBlock` when
    /// nothing is there yet).
    ///
    /// # Safety
    ///
    /// `buf` must be writable for `len` bytes.
    unsafe fn recv(&mut self, buf: *mut u8, len: usize) -> io::Result<usize>;
}

/// Where a connection's writer puts its bytes.
pub trait ByteSink {
    /// Writes a prefix of `data` without blocking: the count written, or
    /// an error (`WouldBlock` when nothing fits).
    fn send(&mut self, data: &[u8]) -> io::Result<usize>;

    /// Writes a prefix of the concatenation of `iov` without blocking.
    ///
    /// # Safety
    ///
    /// Every entry of `iov` must be readable for its length.
    unsafe fn send_iov(&mut self, iov: &[libc::iovec]) -> io::Result<usize>;
}

/// A connected nonblocking socket, by its descriptor (owned elsewhere).
#[derive(Clone, Copy, Debug)]
pub struct Socket(pub RawFd);

impl ByteSource for Socket {
    #[inline]
    unsafe fn recv(&mut self, buf: *mut u8, len: usize) -> io::Result<usize> {
        // SAFETY: the caller's promise on buf.
        unsafe { sys::recv(self.0, buf, len) }
    }
}

impl ByteSink for Socket {
    #[inline]
    fn send(&mut self, data: &[u8]) -> io::Result<usize> {
        sys::send(self.0, data)
    }

    #[inline]
    unsafe fn send_iov(&mut self, iov: &[libc::iovec]) -> io::Result<usize> {
        // SAFETY: the caller's promise on iov.
        unsafe { sys::send_iov(self.0, iov) }
    }
}
