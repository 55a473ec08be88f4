//! The receiving side: accepted connections while they present their
//! hello ([`Accepting`]), then every established connection, accepted or
//! made by this process, while it carries fragments ([`Inbound`]: the
//! socket's reader).

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::Instant;

use oxmpi_framework_btl::adapter::{Arrived, Destination, Pml};
use oxmpi_framework_btl::module::MAX_HEADER;

use crate::outbound::would_block;
use crate::stream::{ByteSource, Socket};
use crate::sys;
use crate::wire::{self, FRAME_HEADER_LEN, HELLO_LEN};

/// Size of each connection's receive buffer.
pub const RECV_BUF: usize = 256 * 1024;

/// A payload remainder at least this large is received straight into its
/// destination; a smaller one goes through the receive buffer (which may
/// then also take in the following frames with the same call).
const DIRECT_MIN: usize = 4 * 1024;

/// After a fragment at least this large, the next read takes only a frame
/// header's worth of bytes, so that the next payload (probably large as
/// well) lands in its destination instead of the buffer.
const LARGE: usize = 16 * 1024;

/// The most bytes a frame header plus pml header take.
const HEAD_PROBE: usize = FRAME_HEADER_LEN + MAX_HEADER;

/// Most `recv` calls per connection per progress call.
const MAX_RECVS: usize = 16;

/// pml-header length that marks the goodbye frame (sent at finalize, no
/// payload): the connection then ends cleanly.
pub const BYE_HLEN: u16 = u16::MAX;

/// An accepted connection that has not yet presented a valid hello (or
/// whose acknowledgement is still being written).
pub struct Accepting {
    /// The socket.
    pub fd: OwnedFd,
    /// Where it comes from (if the kernel said).
    pub remote: Option<SocketAddr>,
    /// The local interface (listener) it arrived on.
    pub iface: usize,
    /// The hello as received so far.
    pub hello: [u8; HELLO_LEN],
    /// Hello bytes received.
    pub got: usize,
    /// Once the hello is valid: (module, peer rank) and ack bytes written.
    pub accepted: Option<(u32, u32)>,
    /// Acknowledgement bytes written.
    pub ack_done: usize,
    /// When the hello must be complete.
    pub deadline: Instant,
}

/// What reading a hello produced.
pub enum HelloProgress {
    /// More bytes are needed.
    Waiting,
    /// All bytes are there.
    Complete,
    /// The connection ended or failed before that; the clause says how.
    Lost(String),
}

impl Accepting {
    /// Reads more of the hello.
    pub fn read_hello(&mut self) -> HelloProgress {
        while self.got < HELLO_LEN {
            // SAFETY: the hello buffer has HELLO_LEN - got bytes left.
            let r = unsafe {
                sys::recv(
                    self.fd.as_raw_fd(),
                    self.hello.as_mut_ptr().add(self.got),
                    HELLO_LEN - self.got,
                )
            };
            match r {
                Ok(0) => {
                    return HelloProgress::Lost(format!(
                        "it closed the connection after {} of the {HELLO_LEN} handshake bytes",
                        self.got
                    ))
                }
                Ok(n) => self.got += n,
                Err(e) if would_block(&e) => return HelloProgress::Waiting,
                Err(e) => return HelloProgress::Lost(format!("reading its handshake failed: {e}")),
            }
        }
        HelloProgress::Complete
    }

    /// Writes more of the acknowledgement: Ok(true) when all of it is out.
    ///
    /// # Errors
    ///
    /// The write error.
    pub fn write_ack(&mut self, ack: &[u8; wire::ACK_LEN]) -> io::Result<bool> {
        while self.ack_done < ack.len() {
            match sys::send(self.fd.as_raw_fd(), &ack[self.ack_done..]) {
                Ok(n) => self.ack_done += n,
                Err(e) if would_block(&e) => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }
}

/// Why an inbound connection ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    /// The peer said goodbye, then closed: not a failure.
    Clean,
    /// Anything else; the clause says what happened.
    Failed(String),
}

/// A fragment whose header was delivered but whose payload is still
/// arriving.
struct Partial {
    active: bool,
    header: [u8; MAX_HEADER],
    header_len: usize,
    /// Where the pml wants the payload; `None`: the reader's side buffer.
    dest: Option<Destination>,
    total: usize,
    got: usize,
}

/// The reader of an established connection (accepted, or made by this
/// process once the acknowledgement is read). The socket may also be an
/// endpoint's sending socket (the `Arc` is shared).
pub struct Inbound {
    fd: Arc<OwnedFd>,
    raw: RawFd,
    /// The module its fragments arrive on.
    pub module: u32,
    /// The peer's rank.
    pub peer: u32,
    /// The peer's address (for an accepted connection where it comes
    /// from, for one this process made where the peer listens).
    pub remote: Option<SocketAddr>,
    /// Whether the peer made the connection (this process accepted it).
    pub accepted: bool,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    large: bool,
    partial: Partial,
    side: Vec<u8>,
    bye: bool,
}

impl Inbound {
    /// Reads `fd`, a connection whose handshake is complete (nothing
    /// after the handshake has been read from it yet); `accepted` says
    /// whether the peer made it.
    pub fn new(
        fd: Arc<OwnedFd>,
        module: u32,
        peer: u32,
        remote: Option<SocketAddr>,
        accepted: bool,
    ) -> Inbound {
        let raw = fd.as_raw_fd();
        Inbound {
            fd,
            raw,
            module,
            peer,
            remote,
            accepted,
            buf: vec![0u8; RECV_BUF].into_boxed_slice(),
            start: 0,
            end: 0,
            large: false,
            partial: Partial {
                active: false,
                header: [0; MAX_HEADER],
                header_len: 0,
                dest: None,
                total: 0,
                got: 0,
            },
            side: Vec::new(),
            bye: false,
        }
    }

    /// Receives what has arrived on the socket and delivers every complete
    /// fragment to `pml` ([`Pml::header`], then [`Pml::fragment`]). Does at
    /// most a bounded number of `recv` calls. Returns the number of
    /// fragments delivered.
    ///
    /// # Errors
    ///
    /// [`Ended`] when the connection is over: after a goodbye, or on end
    /// of stream, a read error or a damaged stream (the fragments complete
    /// before that point are delivered first).
    #[inline]
    pub fn service(&mut self, pml: &Pml<'_>) -> Result<usize, (usize, Ended)> {
        let mut socket = Socket(self.raw);
        self.service_guarded(&mut socket, pml)
    }

    /// [`Inbound::service_from`], with a panic inside the reader (a bug)
    /// turned into the end of this connection: the peer is then failed
    /// once, with the panic's message, and the reader never runs again.
    ///
    /// # Errors
    ///
    /// As [`Inbound::service`].
    #[inline]
    pub fn service_guarded<S: ByteSource>(
        &mut self,
        src: &mut S,
        pml: &Pml<'_>,
    ) -> Result<usize, (usize, Ended)> {
        match oxmpi_plugin_api::guard::catch(|| self.service_from(src, pml)) {
            Ok(outcome) => outcome,
            Err(e) => Err((
                0,
                Ended::Failed(format!(
                    "the tcp btl failed while reading the connection (an internal error; \
                     please report it): {}",
                    e.message
                )),
            )),
        }
    }

    /// [`Inbound::service`] with the bytes taken from `src` (the socket in
    /// a process; a scripted stream in the framing tests).
    ///
    /// # Errors
    ///
    /// As [`Inbound::service`].
    pub fn service_from<S: ByteSource>(
        &mut self,
        src: &mut S,
        pml: &Pml<'_>,
    ) -> Result<usize, (usize, Ended)> {
        let mut delivered = 0;
        let mut recvs = 0;
        // A read shorter than asked emptied the socket: no further read
        // in this call (it would find nothing, at a system call's cost).
        let mut drained = false;
        let cap = self.buf.len();
        loop {
            if self.partial.active {
                let p = &mut self.partial;
                let avail = self.end - self.start;
                if avail > 0 {
                    let n = avail.min(p.total - p.got);
                    let bytes = &self.buf[self.start..self.start + n];
                    match &mut p.dest {
                        Some(dest) => dest.write_at(p.got, bytes),
                        None => self.side[p.got..p.got + n].copy_from_slice(bytes),
                    }
                    self.start += n;
                    p.got += n;
                }
                if self.start == self.end {
                    // Nothing buffered: the next buffered read starts at
                    // the front (also when the header ended exactly at
                    // the end of what was buffered).
                    self.start = 0;
                    self.end = 0;
                }
                if p.got < p.total {
                    if recvs == MAX_RECVS || drained {
                        return Ok(delivered);
                    }
                    recvs += 1;
                    let left = p.total - p.got;
                    let direct = left >= DIRECT_MIN;
                    debug_assert_eq!((self.start, self.end), (0, 0));
                    let (ptr, len) = if !direct {
                        (self.buf.as_mut_ptr(), cap)
                    } else if let Some(dest) = &mut p.dest {
                        dest.tail_ptr(p.got)
                    } else {
                        let rest = &mut self.side[p.got..p.total];
                        (rest.as_mut_ptr(), rest.len())
                    };
                    // SAFETY: ptr is writable for len bytes (the rest of
                    // the destination or of the side buffer, or the whole
                    // empty receive buffer).
                    match unsafe { src.recv(ptr, len) } {
                        Ok(0) => {
                            return Err((
                                delivered,
                                Ended::Failed(format!(
                                    "the connection ended in the middle of a fragment \
                                     ({} of {} payload bytes received)",
                                    p.got, p.total
                                )),
                            ))
                        }
                        Ok(n) if direct => {
                            p.got += n;
                            drained = n < len;
                        }
                        Ok(n) => {
                            self.end = n;
                            drained = n < len;
                        }
                        Err(e) if would_block(&e) => return Ok(delivered),
                        Err(e) => {
                            return Err((delivered, Ended::Failed(format!("recv() failed: {e}"))))
                        }
                    }
                    continue;
                }
                p.active = false;
                let header = &p.header[..p.header_len];
                let payload = match p.dest.take() {
                    Some(dest) => Arrived::Placed(dest),
                    None => Arrived::Bytes(&self.side[..p.total]),
                };
                pml.fragment(self.module, self.peer, header, payload);
                delivered += 1;
                continue;
            }

            let avail = self.end - self.start;
            if avail >= FRAME_HEADER_LEN {
                let fh = &self.buf[self.start..self.start + FRAME_HEADER_LEN];
                if u16::from_le_bytes([fh[2], fh[3]]) == BYE_HLEN
                    && u16::from_le_bytes([fh[0], fh[1]]) == wire::FRAME_MARKER
                {
                    if self.bye {
                        return Err((delivered, Ended::Failed("it said goodbye twice".into())));
                    }
                    self.bye = true;
                    self.start += FRAME_HEADER_LEN;
                    continue;
                }
                if self.bye {
                    return Err((
                        delivered,
                        Ended::Failed("it sent data after saying goodbye".into()),
                    ));
                }
                let (hlen, plen) = match wire::get_frame_header(fh) {
                    Ok(v) => v,
                    Err(e) => return Err((delivered, Ended::Failed(e))),
                };
                if avail >= FRAME_HEADER_LEN + hlen {
                    let hstart = self.start + FRAME_HEADER_LEN;
                    let pstart = hstart + hlen;
                    let have = self.end - pstart;
                    let header = &self.buf[hstart..pstart];
                    let dest = pml.header(self.module, self.peer, header, plen);
                    self.large = plen >= LARGE;
                    if have >= plen {
                        let in_buf = &self.buf[pstart..pstart + plen];
                        let payload = match dest {
                            Some(mut dest) => {
                                dest.write_at(0, in_buf);
                                Arrived::Placed(dest)
                            }
                            None => Arrived::Bytes(in_buf),
                        };
                        pml.fragment(self.module, self.peer, header, payload);
                        delivered += 1;
                        self.start = pstart + plen;
                        if self.start == self.end {
                            self.start = 0;
                            self.end = 0;
                        }
                        continue;
                    }
                    if dest.is_none() && self.side.len() < plen {
                        // A damaged length must not abort the process
                        // through a failed allocation.
                        if self.side.try_reserve_exact(plen - self.side.len()).is_err() {
                            return Err((
                                delivered,
                                Ended::Failed(format!(
                                    "a fragment announces {plen} payload bytes, more than \
                                     this process can buffer"
                                )),
                            ));
                        }
                        self.side.resize(plen, 0);
                    }
                    let p = &mut self.partial;
                    p.header[..hlen].copy_from_slice(header);
                    p.header_len = hlen;
                    p.dest = dest;
                    p.total = plen;
                    p.got = 0;
                    p.active = true;
                    self.start = pstart;
                    continue;
                }
            }

            // Need more bytes: make room, then read.
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if recvs == MAX_RECVS || drained {
                return Ok(delivered);
            }
            recvs += 1;
            // After a large fragment, take only what the next frame's
            // headers can need (its payload may be large too and then
            // lands in place); the buffered bytes are always fewer than
            // that here, since a complete header would have been parsed.
            let want = if self.large && self.end < HEAD_PROBE {
                HEAD_PROBE - self.end
            } else {
                cap - self.end
            };
            // SAFETY: buf[end..end+want] is inside the buffer.
            match unsafe { src.recv(self.buf.as_mut_ptr().add(self.end), want) } {
                Ok(0) if self.bye && self.end == 0 => return Err((delivered, Ended::Clean)),
                // Both sides said goodbye on a shared socket: the peer may
                // close with our goodbye unread, which resets the
                // connection instead of closing it. Still a clean end.
                Err(e) if self.bye && self.end == 0 && !would_block(&e) => {
                    return Err((delivered, Ended::Clean))
                }
                Ok(0) if self.end == 0 => {
                    return Err((
                        delivered,
                        Ended::Failed(
                            "it closed the connection without saying goodbye \
                                       (the process ended or was killed)"
                                .into(),
                        ),
                    ))
                }
                Ok(0) => {
                    return Err((
                        delivered,
                        Ended::Failed(format!(
                            "the connection ended in the middle of a frame header ({} bytes)",
                            self.end
                        )),
                    ))
                }
                Ok(n) => {
                    self.end += n;
                    drained = n < want;
                }
                Err(e) if would_block(&e) => return Ok(delivered),
                Err(e) => return Err((delivered, Ended::Failed(format!("recv() failed: {e}")))),
            }
        }
    }

    /// Its raw descriptor.
    pub fn raw(&self) -> RawFd {
        self.raw
    }

    /// The socket (to share it with an endpoint that sends on it).
    pub fn fd(&self) -> &Arc<OwnedFd> {
        &self.fd
    }
}
