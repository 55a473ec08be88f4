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
use std::sync::Arc;

use oxmpi_framework_btl::adapter::{Payload, Pml, Sent};
use oxmpi_framework_btl::module::MAX_HEADER;

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
    /// The pml's payload, while it is still read (the send answered
    /// `Queued`; the token goes back through `send_done`); `None` for a
    /// fragment without payload (answered `Done`, the header is copied).
    pub payload: Option<Payload>,
    /// Bytes of head and payload already written.
    pub written: usize,
}

impl Pending {
    #[inline]
    fn payload_len(&self) -> usize {
        self.payload.as_ref().map_or(0, Payload::len)
    }

    #[inline]
    fn total(&self) -> usize {
        self.head_len + self.payload_len()
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
    pub fd: Option<Arc<OwnedFd>>,
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
    /// The write error (the connection is lost), with the payload given
    /// back.
    #[inline]
    pub fn try_send_now(
        &mut self,
        header: &[u8],
        payload: Payload,
    ) -> Result<Sent, (io::Error, Payload)> {
        let mut socket = Socket(self.raw);
        self.try_send_now_to(&mut socket, header, payload)
    }

    /// [`Endpoint::try_send_now`] with the bytes written to `sink` (the
    /// socket in a process; a scripted stream in the framing tests).
    ///
    /// # Errors
    ///
    /// The write error, with the payload given back.
    #[inline]
    pub fn try_send_now_to<W: ByteSink>(
        &mut self,
        sink: &mut W,
        header: &[u8],
        payload: Payload,
    ) -> Result<Sent, (io::Error, Payload)> {
        let payload_len = payload.len();
        let mut head = [0u8; HEAD_CAP];
        let head_len = wire::put_frame_header(&mut head, header, payload_len);
        let sent = if payload_len <= INLINE_MAX {
            // Small: one contiguous buffer and a plain send() (cheaper in
            // the kernel than a gathered sendmsg).
            let mut frame = [0u8; HEAD_CAP + INLINE_MAX];
            frame[..head_len].copy_from_slice(&head[..head_len]);
            frame[head_len..head_len + payload_len].copy_from_slice(payload.as_slice());
            sink.send(&frame[..head_len + payload_len])
        } else {
            let iov = [
                libc::iovec {
                    iov_base: head.as_mut_ptr().cast(),
                    iov_len: head_len,
                },
                libc::iovec {
                    iov_base: payload.as_ptr().cast_mut().cast(),
                    iov_len: payload_len,
                },
            ];
            // SAFETY: head is ours; the payload token's bytes are readable
            // for its length while it exists.
            unsafe { sink.send_iov(&iov) }
        };
        let written = match sent {
            Ok(n) => n,
            Err(e) if would_block(&e) => 0,
            Err(e) => return Err((e, payload)),
        };
        if written == head_len + payload_len {
            return Ok(Sent::Done(payload));
        }
        Ok(self.enqueue(head, head_len, payload, written))
    }

    /// Queues a fragment (nothing of it written yet).
    pub fn queue_new(&mut self, header: &[u8], payload: Payload) -> Sent {
        let mut head = [0u8; HEAD_CAP];
        let head_len = wire::put_frame_header(&mut head, header, payload.len());
        self.enqueue(head, head_len, payload, 0)
    }

    fn enqueue(
        &mut self,
        head: [u8; HEAD_CAP],
        head_len: usize,
        payload: Payload,
        written: usize,
    ) -> Sent {
        // The header is copied; only an unwritten payload is still needed.
        let (kept, answer) = if payload.is_empty() {
            (None, Sent::Done(payload))
        } else {
            (Some(payload), Sent::Queued)
        };
        self.queue.push_back(Pending {
            head,
            head_len,
            payload: kept,
            written,
        });
        answer
    }

    /// Writes queued fragments until the socket is full or the queue
    /// empty, giving each finished payload back through
    /// [`Pml::send_done`]. Returns the number of payloads given back.
    ///
    /// # Errors
    ///
    /// The write error (the connection is lost).
    pub fn flush(&mut self, pml: &Pml<'_>) -> io::Result<usize> {
        let mut socket = Socket(self.raw);
        self.flush_to(&mut socket, pml)
    }

    /// [`Endpoint::flush`] with the bytes written to `sink`.
    ///
    /// # Errors
    ///
    /// The write error.
    pub fn flush_to<W: ByteSink>(&mut self, sink: &mut W, pml: &Pml<'_>) -> io::Result<usize> {
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
                let bytes = p.payload.as_ref().map_or(&[][..], Payload::as_slice);
                if p.written < p.head_len {
                    iov[n_iov] = libc::iovec {
                        iov_base: p.head[p.written..].as_ptr().cast_mut().cast(),
                        iov_len: p.head_len - p.written,
                    };
                    n_iov += 1;
                    if !bytes.is_empty() {
                        iov[n_iov] = libc::iovec {
                            iov_base: bytes.as_ptr().cast_mut().cast(),
                            iov_len: bytes.len(),
                        };
                        n_iov += 1;
                    }
                } else {
                    // The entry is unfinished: off < its payload's length.
                    let rest = &bytes[p.written - p.head_len..];
                    iov[n_iov] = libc::iovec {
                        iov_base: rest.as_ptr().cast_mut().cast(),
                        iov_len: rest.len(),
                    };
                    n_iov += 1;
                }
                asked += p.total() - p.written;
            }
            // SAFETY: the heads are ours; each payload token's bytes are
            // readable while the token is in the queue.
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
                    if let Some(payload) = self.queue.pop_front().and_then(|p| p.payload) {
                        pml.send_done(payload);
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
        self.fd = Some(Arc::new(fd));
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
    pub fn adopt(&mut self, fd: Arc<OwnedFd>, nodelay: bool) -> Result<(), String> {
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

    /// Lets go of the connection and drops the queue (its payloads are
    /// not given back through `send_done`: the peer is lost);
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
