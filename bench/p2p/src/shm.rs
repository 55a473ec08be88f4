//! The shared-memory pieces of the floors (`src/bin/shm_floor.rs`): a
//! mapping shared by two processes (`MAP_SHARED` over a memfd the peer
//! inherits), the cache line the ping-pong runs through, the control block
//! the two sides coordinate with, and single-copy reads from another
//! process (`process_vm_readv`).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes a [`PingLine`] carries besides its sequence number.
pub const PAYLOAD: usize = 56;

/// One cache line: a sequence number and up to [`PAYLOAD`] bytes of
/// message. The writer stores the payload, then the sequence number with
/// release ordering; the reader waits for the number with acquire ordering,
/// then loads the payload. Each side writes only when the other is waiting,
/// so the payload words are never written and read at once.
#[repr(C, align(64))]
#[derive(Debug)]
pub struct PingLine {
    seq: AtomicU64,
    payload: [AtomicU64; PAYLOAD / 8],
}

const _: () = assert!(std::mem::size_of::<PingLine>() == 64);

impl PingLine {
    /// Stores `msg` (its first [`PAYLOAD`] bytes: callers check sizes
    /// beforehand), then publishes it as number `seq`.
    #[inline]
    pub fn post(&self, msg: &[u8], seq: u64) {
        for (word, chunk) in self.payload.iter().zip(msg.chunks(8)) {
            let mut bytes = [0u8; 8];
            bytes[..chunk.len()].copy_from_slice(chunk);
            word.store(u64::from_ne_bytes(bytes), Ordering::Relaxed);
        }
        self.seq.store(seq, Ordering::Release);
    }

    /// The number of the last message posted (acquire: once it is the
    /// awaited number, [`take`](PingLine::take) sees that message).
    #[inline]
    pub fn seq(&self) -> u64 {
        self.seq.load(Ordering::Acquire)
    }

    /// Copies the payload into `out` (at most [`PAYLOAD`] bytes).
    #[inline]
    pub fn take(&self, out: &mut [u8]) {
        for (word, chunk) in self.payload.iter().zip(out.chunks_mut(8)) {
            let bytes = word.load(Ordering::Relaxed).to_ne_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }
}

/// The control block of the single-copy floor: the peer publishes its
/// buffer here, the leader posts commands (`command` counts them) and the
/// peer acknowledges each (`done` counts them). All fields start at 0.
#[repr(C, align(64))]
#[derive(Debug, Default)]
pub struct Control {
    /// Commands posted by the leader (release after the arguments).
    pub command: AtomicU64,
    /// Commands carried out by the peer (release after the work).
    pub done: AtomicU64,
    /// What the last command asks for (the program defines the codes).
    pub op: AtomicU64,
    /// First argument of the last command.
    pub size: AtomicU64,
    /// Second argument of the last command.
    pub seed: AtomicU64,
    /// The peer's buffer address (in the peer's address space).
    pub addr: AtomicU64,
    /// The peer's buffer length in bytes.
    pub len: AtomicU64,
}

/// What the shared mapping holds: the ping-pong line and, on a line of its
/// own, the control block.
#[repr(C)]
#[derive(Debug)]
pub struct Shared {
    /// The cache line of the ping-pong floor.
    pub ping: PingLine,
    /// The control block of the single-copy floor.
    pub control: Control,
}

/// A [`Shared`] block in a `MAP_SHARED` mapping of a memfd, which a child
/// process inherits (the descriptor is not close-on-exec) and maps with
/// [`SharedMap::open`]. Unmapped on drop.
#[derive(Debug)]
pub struct SharedMap {
    fd: OwnedFd,
    ptr: NonNull<Shared>,
}

impl SharedMap {
    /// Creates a zeroed block in a new memfd and maps it.
    ///
    /// # Errors
    /// `memfd_create`, `ftruncate` or `mmap` failing, as a sentence.
    pub fn create() -> Result<SharedMap, String> {
        // SAFETY: the name is a NUL-terminated literal; flags 0 ask for a
        // descriptor that stays open across exec, for the peer.
        let raw = unsafe { libc::memfd_create(c"oxmpi-shm-floor".as_ptr(), 0) };
        if raw < 0 {
            return Err(os_error("cannot create the shared memory (memfd_create)"));
        }
        // SAFETY: memfd_create just returned `raw`, open and owned by no
        // one else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let len = std::mem::size_of::<Shared>() as libc::off_t;
        // SAFETY: plain system call on a descriptor this function owns.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), len) } != 0 {
            return Err(os_error("cannot size the shared memory (ftruncate)"));
        }
        SharedMap::map(fd)
    }

    /// Maps the block of the memfd inherited as descriptor `raw` (the
    /// number [`SharedMap::raw_fd`] gave in the parent), taking it over.
    ///
    /// # Errors
    /// `raw` not an open descriptor, or one smaller than a [`Shared`]
    /// block, or `mmap` failing, as a sentence.
    pub fn open(raw: RawFd) -> Result<SharedMap, String> {
        // SAFETY: F_GETFD only reads the descriptor table.
        if raw < 0 || unsafe { libc::fcntl(raw, libc::F_GETFD) } < 0 {
            return Err(format!(
                "descriptor {raw} is not open (the shared memory is passed by the leader)"
            ));
        }
        // SAFETY: `raw` is open (checked above); it was inherited for this
        // purpose, and nothing else in this program opens or closes it.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: a zeroed stat is a valid value for fstat to overwrite.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fstat writes one stat into `st`, which it may.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
            return Err(os_error("cannot inspect the shared memory (fstat)"));
        }
        if (st.st_size as u64) < std::mem::size_of::<Shared>() as u64 {
            return Err(format!(
                "descriptor {raw} holds {} bytes, not the {}-byte shared block",
                st.st_size,
                std::mem::size_of::<Shared>()
            ));
        }
        SharedMap::map(fd)
    }

    fn map(fd: OwnedFd) -> Result<SharedMap, String> {
        // SAFETY: a new shared read-write mapping of `fd`'s first bytes,
        // which the file has (sized by the caller); the kernel picks the
        // address, so no existing memory is affected.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                std::mem::size_of::<Shared>(),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(os_error("cannot map the shared memory (mmap)"));
        }
        let ptr = NonNull::new(ptr.cast::<Shared>())
            .ok_or("mmap returned a null address for the shared memory")?;
        Ok(SharedMap { fd, ptr })
    }

    /// The descriptor number, for the peer's command line.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// The shared block.
    pub fn shared(&self) -> &Shared {
        // SAFETY: the mapping is page-aligned (more than Shared's 64-byte
        // alignment), as long as Shared, and lives until drop; its bytes
        // start zeroed (a new memfd) and are only ever changed through
        // atomics, so they always form a valid Shared of atomics; other
        // processes write it only through atomics too.
        unsafe { self.ptr.as_ref() }
    }
}

impl Drop for SharedMap {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, of this length, which no
        // reference outlives (`shared` borrows self).
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), std::mem::size_of::<Shared>()) };
    }
}

/// Reads `local.len()` bytes at address `remote` of process `pid` into
/// `local`, in one `process_vm_readv` call (more only if the kernel copies
/// part of the bytes).
///
/// # Errors
/// The kernel's refusal as a sentence: no permission (`ptrace` rules,
/// Yama's `ptrace_scope`, a seccomp profile), no such process, or an
/// address outside the peer's memory.
#[inline]
pub fn read_remote(pid: libc::pid_t, remote: usize, local: &mut [u8]) -> Result<(), String> {
    let mut done = 0;
    while done < local.len() {
        let rest = &mut local[done..];
        let liov = libc::iovec {
            iov_base: rest.as_mut_ptr().cast(),
            iov_len: rest.len(),
        };
        let riov = libc::iovec {
            iov_base: (remote + done) as *mut libc::c_void,
            iov_len: rest.len(),
        };
        // SAFETY: the local iovec covers `rest`, memory this function
        // borrows exclusively; the remote one is only read, in the other
        // process, and the kernel checks it (EFAULT outside its memory).
        let n = unsafe { libc::process_vm_readv(pid, &liov, 1, &riov, 1, 0) };
        if n <= 0 {
            let err = io::Error::last_os_error();
            let hint = match err.raw_os_error() {
                Some(libc::EPERM) => {
                    " (this kernel or container forbids reading another process's memory: \
                     ptrace permission, kernel.yama.ptrace_scope, or a seccomp profile)"
                }
                _ => "",
            };
            return Err(if n == 0 {
                format!("process_vm_readv from pid {pid} at {remote:#x} copied nothing")
            } else {
                format!(
                    "process_vm_readv of {} bytes from pid {pid} at {:#x} failed: {err}{hint}",
                    rest.len(),
                    remote + done
                )
            });
        }
        done += n as usize;
    }
    Ok(())
}

fn os_error(what: &str) -> String {
    format!("{what}: {}", io::Error::last_os_error())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{fill, verify};

    #[test]
    fn two_mappings_of_one_memfd_share_their_bytes() {
        let a = SharedMap::create().expect("create");
        // SAFETY: dup of a descriptor `a` owns; the copy is handed to open.
        let dup = unsafe { libc::dup(a.raw_fd()) };
        assert!(dup >= 0);
        let b = SharedMap::open(dup).expect("open the copy");
        assert_eq!(b.shared().ping.seq(), 0, "a new block starts zeroed");
        a.shared().ping.post(&[1, 2, 3, 4, 5, 6, 7, 8, 9], 5);
        assert_eq!(b.shared().ping.seq(), 5);
        let mut got = [0u8; 9];
        b.shared().ping.take(&mut got);
        assert_eq!(got, [1, 2, 3, 4, 5, 6, 7, 8, 9]);
        b.shared().control.addr.store(77, Ordering::Relaxed);
        assert_eq!(a.shared().control.addr.load(Ordering::Relaxed), 77);
    }

    #[test]
    fn open_refuses_closed_or_small_descriptors() {
        let err = SharedMap::open(-1).unwrap_err();
        assert!(err.contains("not open"), "{err}");
        let mut fds = [0; 2];
        // SAFETY: pipe writes two descriptors into `fds`.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let err = SharedMap::open(fds[0]).unwrap_err();
        assert!(err.contains("not the"), "{err}");
        // SAFETY: the write end is still ours (open took the read end).
        unsafe { libc::close(fds[1]) };
    }

    #[test]
    fn ping_line_carries_every_size_up_to_its_payload() {
        let map = SharedMap::create().unwrap();
        let line = &map.shared().ping;
        for size in [0, 1, 7, 8, 9, 55, PAYLOAD] {
            let mut msg = vec![0u8; size];
            fill(&mut msg, size as u32);
            line.post(&msg, size as u64 + 1);
            assert_eq!(line.seq(), size as u64 + 1);
            let mut got = vec![0xA5u8; size];
            line.take(&mut got);
            assert_eq!(verify(&got, size as u32), Ok(()), "size {size}");
        }
    }

    #[test]
    fn read_remote_copies_from_a_process_and_reports_bad_addresses() {
        let pid = std::process::id() as libc::pid_t;
        let mut src = vec![0u8; 300_000];
        fill(&mut src, 9);
        let mut dst = vec![0u8; src.len()];
        // Reading one's own memory needs no ptrace permission.
        read_remote(pid, src.as_ptr() as usize, &mut dst).expect("read own memory");
        assert_eq!(verify(&dst, 9), Ok(()));
        let err = read_remote(pid, 8, &mut dst[..16]).unwrap_err();
        assert!(
            err.contains("process_vm_readv") && err.contains("0x8"),
            "{err}"
        );
        assert_eq!(read_remote(pid, 8, &mut []), Ok(()), "nothing to read");
    }
}
