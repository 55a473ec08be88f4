//! Thin wrappers over the socket system calls the component uses.
//!
//! Every socket is created nonblocking and close-on-exec and is owned by
//! an [`OwnedFd`] (closed when dropped). Errors are plain [`io::Error`]s
//! built from `errno` (no allocation); "would block" is
//! [`io::ErrorKind::WouldBlock`].

use std::io;
use std::mem;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The result of a system call returning -1 on error.
fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// The result of a system call returning a byte count or -1.
fn check_size(ret: libc::ssize_t) -> io::Result<usize> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}

/// A socket address in the kernel's representation.
pub struct RawAddr {
    storage: libc::sockaddr_storage,
    len: libc::socklen_t,
}

impl RawAddr {
    /// `addr` as a kernel address; `scope_id` is used for IPv6 link-local
    /// addresses (the interface index), ignored otherwise.
    pub fn new(addr: SocketAddr, scope_id: u32) -> RawAddr {
        // SAFETY: sockaddr_storage is plain old data; all-zero is valid.
        let mut storage: libc::sockaddr_storage = unsafe { mem::zeroed() };
        let len = match addr {
            SocketAddr::V4(a) => {
                let sin = libc::sockaddr_in {
                    sin_family: libc::AF_INET as libc::sa_family_t,
                    sin_port: a.port().to_be(),
                    sin_addr: libc::in_addr {
                        s_addr: u32::from_ne_bytes(a.ip().octets()),
                    },
                    sin_zero: [0; 8],
                };
                // SAFETY: sockaddr_storage is larger than and aligned for
                // sockaddr_in.
                unsafe {
                    std::ptr::write(
                        (&mut storage as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in>(),
                        sin,
                    )
                };
                mem::size_of::<libc::sockaddr_in>()
            }
            SocketAddr::V6(a) => {
                let link_local = a.ip().segments()[0] & 0xffc0 == 0xfe80;
                let sin6 = libc::sockaddr_in6 {
                    sin6_family: libc::AF_INET6 as libc::sa_family_t,
                    sin6_port: a.port().to_be(),
                    sin6_flowinfo: 0,
                    sin6_addr: libc::in6_addr {
                        s6_addr: a.ip().octets(),
                    },
                    sin6_scope_id: if link_local { scope_id } else { 0 },
                };
                // SAFETY: as above, for sockaddr_in6.
                unsafe {
                    std::ptr::write(
                        (&mut storage as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in6>(),
                        sin6,
                    )
                };
                mem::size_of::<libc::sockaddr_in6>()
            }
        };
        RawAddr {
            storage,
            len: len as libc::socklen_t,
        }
    }

    fn as_ptr(&self) -> *const libc::sockaddr {
        (&self.storage as *const libc::sockaddr_storage).cast()
    }
}

/// Converts a kernel address to a [`SocketAddr`] (None for other families).
///
/// # Safety
///
/// `sa` must point to a valid socket address of the family it claims.
pub unsafe fn to_socket_addr(sa: *const libc::sockaddr) -> Option<SocketAddr> {
    if sa.is_null() {
        return None;
    }
    // SAFETY: non-null (checked), and the caller promises a valid address,
    // whose first field is the family.
    let family = unsafe { (*sa).sa_family };
    match i32::from(family) {
        libc::AF_INET => {
            // SAFETY: the family says the address is a `sockaddr_in`.
            let sin = unsafe { &*sa.cast::<libc::sockaddr_in>() };
            let ip = Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
            Some(SocketAddr::V4(SocketAddrV4::new(
                ip,
                u16::from_be(sin.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the address is a `sockaddr_in6`.
            let sin6 = unsafe { &*sa.cast::<libc::sockaddr_in6>() };
            let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            Some(SocketAddr::V6(SocketAddrV6::new(
                ip,
                u16::from_be(sin6.sin6_port),
                sin6.sin6_flowinfo,
                sin6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// A new nonblocking, close-on-exec TCP socket of `addr`'s family.
pub fn tcp_socket(addr: IpAddr) -> io::Result<OwnedFd> {
    let family = match addr {
        IpAddr::V4(_) => libc::AF_INET,
        IpAddr::V6(_) => libc::AF_INET6,
    };
    // SAFETY: plain system call.
    let fd = check(unsafe {
        libc::socket(
            family,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    })?;
    // SAFETY: fd is a new descriptor nobody else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    if addr.is_ipv6() {
        // An IPv6 socket carries IPv6 only (no v4-mapped addresses).
        set_int(&fd, libc::IPPROTO_IPV6, libc::IPV6_V6ONLY, 1)?;
    }
    Ok(fd)
}

/// `setsockopt` with an `int` value.
pub fn set_int(fd: &OwnedFd, level: libc::c_int, name: libc::c_int, value: i32) -> io::Result<()> {
    // SAFETY: the option value is a valid int of the given size.
    check(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&value as *const i32).cast(),
            mem::size_of::<i32>() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// `getsockopt` of an `int` option.
pub fn get_int(fd: RawFd, level: libc::c_int, name: libc::c_int) -> io::Result<i32> {
    let mut value: i32 = 0;
    let mut len = mem::size_of::<i32>() as libc::socklen_t;
    // SAFETY: value and len are valid for writing.
    check(unsafe { libc::getsockopt(fd, level, name, (&mut value as *mut i32).cast(), &mut len) })?;
    Ok(value)
}

/// `bind`.
pub fn bind(fd: &OwnedFd, addr: &RawAddr) -> io::Result<()> {
    // SAFETY: addr is a valid address of its length.
    check(unsafe { libc::bind(fd.as_raw_fd(), addr.as_ptr(), addr.len) }).map(drop)
}

/// `listen`.
pub fn listen(fd: &OwnedFd, backlog: i32) -> io::Result<()> {
    // SAFETY: plain system call.
    check(unsafe { libc::listen(fd.as_raw_fd(), backlog) }).map(drop)
}

/// Starts a nonblocking `connect`: `Ok(true)` when connected at once,
/// `Ok(false)` when in progress.
pub fn connect(fd: &OwnedFd, addr: &RawAddr) -> io::Result<bool> {
    // SAFETY: addr is a valid address of its length.
    let ret = unsafe { libc::connect(fd.as_raw_fd(), addr.as_ptr(), addr.len) };
    if ret == 0 {
        return Ok(true);
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::EINPROGRESS) {
        Ok(false)
    } else {
        Err(err)
    }
}

/// Accepts one connection: `Ok(None)` when none is waiting.
pub fn accept(fd: &OwnedFd) -> io::Result<Option<(OwnedFd, Option<SocketAddr>)>> {
    // SAFETY: all-zero sockaddr_storage is valid.
    let mut storage: libc::sockaddr_storage = unsafe { mem::zeroed() };
    let mut len = mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: storage and len are valid for writing.
    let ret = unsafe {
        libc::accept4(
            fd.as_raw_fd(),
            (&mut storage as *mut libc::sockaddr_storage).cast(),
            &mut len,
            libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
        )
    };
    if ret < 0 {
        let err = io::Error::last_os_error();
        return match err.kind() {
            io::ErrorKind::WouldBlock => Ok(None),
            // The connection went away before we took it: nothing to do.
            _ if err.raw_os_error() == Some(libc::ECONNABORTED) => Ok(None),
            _ => Err(err),
        };
    }
    // SAFETY: ret is a new descriptor nobody else owns.
    let new = unsafe { OwnedFd::from_raw_fd(ret) };
    // SAFETY: the kernel wrote a valid address.
    let peer = unsafe { to_socket_addr((&storage as *const libc::sockaddr_storage).cast()) };
    Ok(Some((new, peer)))
}

/// The local address a socket is bound to.
pub fn local_addr(fd: &OwnedFd) -> io::Result<SocketAddr> {
    // SAFETY: all-zero sockaddr_storage is valid.
    let mut storage: libc::sockaddr_storage = unsafe { mem::zeroed() };
    let mut len = mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: storage and len are valid for writing.
    check(unsafe {
        libc::getsockname(
            fd.as_raw_fd(),
            (&mut storage as *mut libc::sockaddr_storage).cast(),
            &mut len,
        )
    })?;
    // SAFETY: the kernel wrote a valid address.
    unsafe { to_socket_addr((&storage as *const libc::sockaddr_storage).cast()) }
        .ok_or_else(|| io::Error::from(io::ErrorKind::Unsupported))
}

/// Gathers `iov` onto a stream socket without blocking and without
/// `SIGPIPE`.
///
/// # Safety
///
/// Every iovec must describe readable memory.
#[inline]
pub unsafe fn send_iov(fd: RawFd, iov: &[libc::iovec]) -> io::Result<usize> {
    // SAFETY: `msghdr` is plain data; all zeroes is an empty message.
    let mut msg: libc::msghdr = unsafe { mem::zeroed() };
    msg.msg_iov = iov.as_ptr().cast_mut();
    msg.msg_iovlen = iov.len() as _;
    // SAFETY: the message names `iov`, whose buffers the caller promises
    // readable; the kernel only reads them.
    check_size(unsafe { libc::sendmsg(fd, &msg, libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT) })
}

/// Sends bytes without blocking and without `SIGPIPE`.
pub fn send(fd: RawFd, data: &[u8]) -> io::Result<usize> {
    // SAFETY: data is readable for its length.
    check_size(unsafe {
        libc::send(
            fd,
            data.as_ptr().cast(),
            data.len(),
            libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
        )
    })
}

/// Receives up to `len` bytes into `buf` without blocking; `Ok(0)` is the
/// end of the stream.
///
/// # Safety
///
/// `buf` must be writable for `len` bytes.
#[inline]
pub unsafe fn recv(fd: RawFd, buf: *mut u8, len: usize) -> io::Result<usize> {
    // SAFETY: the caller promises `buf` writable for `len` bytes.
    check_size(unsafe { libc::recv(fd, buf.cast(), len, libc::MSG_DONTWAIT) })
}

/// Whether a nonblocking `connect` has finished: `Ok(None)` while it is in
/// progress, `Ok(Some(Ok(())))` when connected, `Ok(Some(Err(e)))` when it
/// failed with `e`.
pub fn connect_result(fd: &OwnedFd) -> io::Result<Option<io::Result<()>>> {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: pfd is a valid pollfd array of one.
    let n = check(unsafe { libc::poll(&mut pfd, 1, 0) })?;
    if n == 0 {
        return Ok(None);
    }
    let err = get_int(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_ERROR)?;
    if err != 0 {
        return Ok(Some(Err(io::Error::from_raw_os_error(err))));
    }
    if pfd.revents & (libc::POLLERR | libc::POLLHUP) != 0 {
        return Ok(Some(Err(io::Error::from(io::ErrorKind::ConnectionRefused))));
    }
    Ok(Some(Ok(())))
}

/// The kernel index of a network device, 0 if unknown.
pub fn if_index(device: &str) -> u32 {
    let Ok(name) = std::ffi::CString::new(device) else {
        return 0;
    };
    // SAFETY: name is a valid C string.
    unsafe { libc::if_nametoindex(name.as_ptr()) }
}

/// An epoll instance (level-triggered readability of sockets).
pub struct Epoll {
    fd: OwnedFd,
}

impl Epoll {
    /// A new, close-on-exec epoll instance.
    pub fn new() -> io::Result<Epoll> {
        // SAFETY: plain system call.
        let fd = check(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        Ok(Epoll {
            // SAFETY: fd is a new descriptor nobody else owns.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Watches `fd` for readability, reporting `data`.
    pub fn add(&self, fd: RawFd, data: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: data,
        };
        // SAFETY: ev is a valid event.
        check(unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) })
            .map(drop)
    }

    /// Stops watching `fd`.
    pub fn remove(&self, fd: RawFd) {
        let mut ev = libc::epoll_event { events: 0, u64: 0 };
        // SAFETY: ev is a valid event (ignored by DEL). A failure means it
        // was not watched; nothing to do.
        let _ = unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, &mut ev) };
    }

    /// The ready descriptors' data, without waiting; returns how many
    /// entries of `events` are filled.
    #[inline]
    pub fn poll(&self, events: &mut [libc::epoll_event]) -> usize {
        // SAFETY: events is writable for its length.
        let n = unsafe {
            libc::epoll_wait(
                self.fd.as_raw_fd(),
                events.as_mut_ptr(),
                events.len().min(i32::MAX as usize) as i32,
                0,
            )
        };
        usize::try_from(n).unwrap_or(0)
    }
}
