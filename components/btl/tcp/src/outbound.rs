//! The sending side: one [`Endpoint`] per (module, peer), with its lazily
//! made connection and its queue of fragments not yet fully written.
//!
//! An endpoint sends on exactly one socket for its whole life, chosen at
//! its first send and never changed (so its fragments stay in order): the
//! connection the peer already made to this module, if there is one (it
//! then carries data both ways), or else a connection of its own. Every
//! socket, made or accepted, is also read (see [`crate::inbound`]), so
//! when both processes connect at once the pair keeps two sockets, each
//! side sending on its own and reading both.

use std::collections::VecDeque;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::rc::Rc;

use oxmpi_framework_btl::module::{BtlReceiver, SendOutcome, MAX_HEADER};

use crate::stream::{ByteSink, Socket};
use crate::sys;
use crate::wire::{self, ACK_LEN, FRAME_HEADER_LEN};

/// Bytes of frame header plus pml header a queued fragment keeps a copy of.
pub const HEAD_CAP: usize = FRAME_HEADER_LEN + MAX_HEADER;

/// Payloads up to this size are copied next to their header and sent
/// with one plain `send`.
const INLINE_MAX: usize = 256;

/// Most queued fragments gathered into one `sendmsg`.
const GATHER: usize = 32;

/// Most `sendmsg` calls per endpoint per progress call.
const FLUSH_ROUNDS: usize = 8;

/// Where an endpoint's connection stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// No connection yet (nothing was sent to the peer).
    Idle,
    /// `connect` is in progress.
    Connecting,
    /// Connected; writing the hello.
    SendHello,
    /// Hello written; reading the acknowledgement.
    AwaitAck,
    /// Handshake done: fragments flow.
    Up,
    /// The peer finished (it said goodbye before closing).
    Finished,
    /// The connection failed; the peer is reported lost.
    Failed,
}

/// A fragment not yet fully written.
pub struct Pending {
    /// Frame header and pml header.
    pub head: [u8; HEAD_CAP],
    /// Bytes used in `head`.
    pub head_len: usize,
    /// The pml's payload (valid until `on_send_done`).
    pub payload: *const u8,
    /// Its length.
    pub payload_len: usize,
    /// Bytes of head and payload already written.
    pub written: usize,
    /// The pml's cookie.
    pub cookie: u64,
    /// Whether the pml waits for `on_send_done` (the send returned
    /// `Queued`).
    pub notify: bool,
}

impl Pending {
    fn total(&self) -> usize {
        self.head_len + self.payload_len
    }
}

/// The sending side of one (module, peer).
pub struct Endpoint {
    /// The module.
    pub module: u32,
    /// The peer's rank.
    pub peer: u32,
    /// The link number.
    pub link: u16,
    /// The peer's interface (index into its card) this endpoint connects to.
    pub remote_iface: u16,
    /// Where the peer listens.
    pub remote: SocketAddr,
    /// The local address connections are made from.
    pub local: IpAddr,
    /// The local interface index (scope of IPv6 link-local addresses).
    pub scope: u32,
    /// The connection's state.
    pub state: State,
    /// The socket, once `connect` started or an accepted connection was
    /// taken over; shared with the socket's reader (closed when both let
    /// go).
    pub fd: Option<Rc<OwnedFd>>,
    /// Its raw descriptor (-1 without one), for the hot path.
    pub raw: RawFd,
    /// Handshake bytes sent or received so far.
    pub hs_done: usize,
    /// The acknowledgement as received.
    pub ack_buf: [u8; ACK_LEN],
    /// Fragments not yet fully written, oldest first.
    pub queue: VecDeque<Pending>,
    /// Whether the endpoint is on the component's list of endpoints with
    /// work (connecting or queued data).
    pub active: bool,
}

impl Endpoint {
    /// An idle endpoint.
    pub fn new(
        module: u32,
        peer: u32,
        link: u16,
        remote_iface: u16,
        remote: SocketAddr,
        local: IpAddr,
        scope: u32,
    ) -> Endpoint {
        Endpoint {
            module,
            peer,
            link,
            remote_iface,
            remote,
            local,
            scope,
            state: State::Idle,
            fd: None,
            raw: -1,
            hs_done: 0,
            ack_buf: [0; ACK_LEN],
            queue: VecDeque::with_capacity(16),
            active: false,
        }
    }

    /// Writes a fragment at once (connection up, nothing queued); what
    /// the socket does not take is queued. Returns `Done` or `Queued` as
    /// the btl contract defines them.
    ///
    /// # Errors
    ///
    /// The write error (the connection is lost).
    ///
    /// # Safety
    ///
    /// `payload` must be readable for `payload_len` bytes, and stay valid
    /// until `Done` is returned or `on_send_done` is called.
    #[inline]
    pub unsafe fn try_send_now(
        &mut self,
        header: &[u8],
        payload: *const u8,
        payload_len: usize,
        cookie: u64,
    ) -> Result<SendOutcome, io::Error> {
        let mut socket = Socket(self.raw);
        // SAFETY: the caller's promise on payload.
        unsafe { self.try_send_now_to(&mut socket, header, payload, payload_len, cookie) }
    }

    /// [`Endpoint::try_send_now`] with the bytes written to `sink` (the
    /// socket in a process; a scripted stream in the framing tests).
    ///
    /// # Errors
    ///
    /// The write error.
    ///
    /// # Safety
    ///
    /// As [`Endpoint::try_send_now`].
    #[inline]
    pub unsafe fn try_send_now_to<W: ByteSink>(
        &mut self,
        sink: &mut W,
        header: &[u8],
        payload: *const u8,
        payload_len: usize,
        cookie: u64,
    ) -> Result<SendOutcome, io::Error> {
        let mut head = [0u8; HEAD_CAP];
        let head_len = wire::put_frame_header(&mut head, header, payload_len);
        let sent = if payload_len <= INLINE_MAX {
            // Small: one contiguous buffer and a plain send() (cheaper in
            // the kernel than a gathered sendmsg).
            let mut frame = [0u8; HEAD_CAP + INLINE_MAX];
            frame[..head_len].copy_from_slice(&head[..head_len]);
            if payload_len > 0 {
                // SAFETY: the pml guarantees payload is readable for
                // payload_len bytes.
                frame[head_len..head_len + payload_len]
                    .copy_from_slice(unsafe { std::slice::from_raw_parts(payload, payload_len) });
            }
            sink.send(&frame[..head_len + payload_len])
        } else {
            let iov = [
                libc::iovec {
                    iov_base: head.as_mut_ptr().cast(),
                    iov_len: head_len,
                },
                libc::iovec {
                    iov_base: payload.cast_mut().cast(),
                    iov_len: payload_len,
                },
            ];
            // SAFETY: head is ours; the pml guarantees payload is readable
            // for payload_len bytes.
            unsafe { sink.send_iov(&iov) }
        };
        let written = match sent {
            Ok(n) => n,
            Err(e) if would_block(&e) => 0,
            Err(e) => return Err(e),
        };
        if written == head_len + payload_len {
            return Ok(SendOutcome::Done);
        }
        Ok(self.enqueue(head, head_len, payload, payload_len, written, cookie))
    }

    /// Queues a fragment (nothing of it written yet).
    pub fn queue_new(
        &mut self,
        header: &[u8],
        payload: *const u8,
        payload_len: usize,
        cookie: u64,
    ) -> SendOutcome {
        let mut head = [0u8; HEAD_CAP];
        let head_len = wire::put_frame_header(&mut head, header, payload_len);
        self.enqueue(head, head_len, payload, payload_len, 0, cookie)
    }

    fn enqueue(
        &mut self,
        head: [u8; HEAD_CAP],
        head_len: usize,
        payload: *const u8,
        payload_len: usize,
        written: usize,
        cookie: u64,
    ) -> SendOutcome {
        // The header is copied; only an unwritten payload is still needed.
        let notify = payload_len > 0;
        self.queue.push_back(Pending {
            head,
            head_len,
            payload,
            payload_len,
            written,
            cookie,
            notify,
        });
        if notify {
            SendOutcome::Queued
        } else {
            SendOutcome::Done
        }
    }

    /// Writes queued fragments until the socket is full or the queue
    /// empty, calling `on_send_done` for each finished fragment that
    /// waits for it. Returns the number of such calls.
    ///
    /// # Errors
    ///
    /// The write error (the connection is lost).
    pub fn flush(&mut self, rx: &BtlReceiver) -> io::Result<usize> {
        let mut socket = Socket(self.raw);
        self.flush_to(&mut socket, rx)
    }

    /// [`Endpoint::flush`] with the bytes written to `sink`.
    ///
    /// # Errors
    ///
    /// The write error.
    pub fn flush_to<W: ByteSink>(&mut self, sink: &mut W, rx: &BtlReceiver) -> io::Result<usize> {
        let mut done = 0;
        for _ in 0..FLUSH_ROUNDS {
            if self.queue.is_empty() {
                break;
            }
            let mut iov = [libc::iovec {
                iov_base: std::ptr::null_mut(),
                iov_len: 0,
            }; 2 * GATHER];
            let mut n_iov = 0;
            let mut asked = 0;
            for p in self.queue.iter().take(GATHER) {
                if p.written < p.head_len {
                    iov[n_iov] = libc::iovec {
                        iov_base: p.head[p.written..].as_ptr().cast_mut().cast(),
                        iov_len: p.head_len - p.written,
                    };
                    n_iov += 1;
                    if p.payload_len > 0 {
                        iov[n_iov] = libc::iovec {
                            iov_base: p.payload.cast_mut().cast(),
                            iov_len: p.payload_len,
                        };
                        n_iov += 1;
                    }
                } else {
                    let off = p.written - p.head_len;
                    iov[n_iov] = libc::iovec {
                        // SAFETY: off < payload_len (the entry is unfinished).
                        iov_base: unsafe { p.payload.add(off) }.cast_mut().cast(),
                        iov_len: p.payload_len - off,
                    };
                    n_iov += 1;
                }
                asked += p.total() - p.written;
            }
            // SAFETY: the heads are ours; payloads stay valid until
            // on_send_done (the pml's promise).
            let mut n = match unsafe { sink.send_iov(&iov[..n_iov]) } {
                Ok(n) => n,
                Err(e) if would_block(&e) => break,
                Err(e) => return Err(e),
            };
            let full = n == asked;
            while n > 0 {
                let Some(front) = self.queue.front_mut() else {
                    break;
                };
                let left = front.total() - front.written;
                if n >= left {
                    n -= left;
                    let (notify, cookie) = (front.notify, front.cookie);
                    self.queue.pop_front();
                    if notify {
                        // SAFETY: the pml's callback with its own context.
                        unsafe { (rx.on_send_done)(rx.ctx, cookie) };
                        done += 1;
                    }
                } else {
                    front.written += n;
                    n = 0;
                }
            }
            if !full {
                break;
            }
        }
        Ok(done)
    }

    /// Starts connecting: socket options, bind to the local address,
    /// nonblocking `connect`.
    ///
    /// # Errors
    ///
    /// What failed, as a clause.
    pub fn start_connect(&mut self, nodelay: bool, sndbuf: i32, rcvbuf: i32) -> Result<(), String> {
        let fd = sys::tcp_socket(self.local).map_err(|e| format!("socket() failed: {e}"))?;
        if nodelay {
            sys::set_int(&fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1)
                .map_err(|e| format!("setting TCP_NODELAY failed: {e}"))?;
        }
        if sndbuf > 0 {
            sys::set_int(&fd, libc::SOL_SOCKET, libc::SO_SNDBUF, sndbuf)
                .map_err(|e| format!("setting SO_SNDBUF to {sndbuf} failed: {e}"))?;
        }
        if rcvbuf > 0 {
            sys::set_int(&fd, libc::SOL_SOCKET, libc::SO_RCVBUF, rcvbuf)
                .map_err(|e| format!("setting SO_RCVBUF to {rcvbuf} failed: {e}"))?;
        }
        let local = sys::RawAddr::new(SocketAddr::new(self.local, 0), self.scope);
        sys::bind(&fd, &local)
            .map_err(|e| format!("binding the local address {} failed: {e}", self.local))?;
        let remote = sys::RawAddr::new(self.remote, self.scope);
        let now = sys::connect(&fd, &remote).map_err(|e| format!("connect() failed: {e}"))?;
        self.raw = fd.as_raw_fd();
        self.fd = Some(Rc::new(fd));
        self.state = if now {
            State::SendHello
        } else {
            State::Connecting
        };
        self.hs_done = 0;
        Ok(())
    }

    /// Takes over `fd`, a connection the peer made to this module whose
    /// handshake is complete, as this endpoint's sending socket (only for
    /// an endpoint that has not sent yet): it is up at once.
    ///
    /// # Errors
    ///
    /// Setting `TCP_NODELAY` failed (an accepted socket does not have it
    /// from the listener), as a clause.
    pub fn adopt(&mut self, fd: Rc<OwnedFd>, nodelay: bool) -> Result<(), String> {
        debug_assert_eq!(self.state, State::Idle);
        if nodelay {
            sys::set_int(&fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1)
                .map_err(|e| format!("setting TCP_NODELAY failed: {e}"))?;
        }
        self.raw = fd.as_raw_fd();
        self.fd = Some(fd);
        self.state = State::Up;
        Ok(())
    }

    /// Lets go of the connection and drops the queue (no `on_send_done`);
    /// the socket closes once its reader lets go too.
    pub fn close(&mut self, state: State) {
        self.state = state;
        self.fd = None;
        self.raw = -1;
        self.queue.clear();
    }
}

/// Whether an I/O error means "try again later".
#[inline]
pub fn would_block(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
    )
}
