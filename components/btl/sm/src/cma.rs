//! Linux cross-memory attach: one copy between two processes' memory
//! (`process_vm_readv` / `process_vm_writev`), the sm module's get and put.
//!
//! The kernel allows it between processes of one user unless a policy
//! forbids it: Yama's `kernel.yama.ptrace_scope` (1 lets a process be read
//! only by its ancestors, unless it names a reader with `PR_SET_PTRACER`,
//! which [`enable`] does for any process of the user; 2 and 3 forbid it),
//! or a seccomp filter (containers often refuse the calls). Each process
//! also publishes a [`Probe`] word, which its peers read once before they
//! rely on the calls.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

/// Where Yama's policy is read.
const YAMA: &str = "/proc/sys/kernel/yama/ptrace_scope";

/// Makes this process readable by its peers and checks that the calls
/// work here; `Err` says why single copy cannot be used (the caller falls
/// back to copies through the segment).
pub fn enable() -> Result<(), String> {
    if let Ok(text) = std::fs::read_to_string(YAMA) {
        match text.trim() {
            "0" => {}
            "1" => {
                // SAFETY: prctl with PR_SET_PTRACER and an integer
                // argument reads no memory of ours.
                let r =
                    unsafe { libc::prctl(libc::PR_SET_PTRACER, libc::PR_SET_PTRACER_ANY, 0, 0, 0) };
                if r != 0 {
                    return Err(format!(
                        "{YAMA} is 1 and prctl(PR_SET_PTRACER) failed: {}",
                        io::Error::last_os_error()
                    ));
                }
            }
            other => {
                return Err(format!(
                    "{YAMA} is {other}, which forbids reading another process's memory"
                ))
            }
        }
    }
    let source = 0x5eed_u64;
    let mut copy = 0u64;
    read(
        std::process::id(),
        (&mut copy as *mut u64).cast(),
        8,
        &source as *const u64 as u64,
    )
    .map_err(|e| format!("process_vm_readv on this process failed: {e}"))?;
    if copy != source {
        return Err("process_vm_readv on this process copied the wrong bytes".into());
    }
    Ok(())
}

/// Reads `len` bytes at `remote` in process `pid` into `local`.
///
/// `local` must be writable for `len` bytes (the kernel checks `remote`:
/// a bad address is `EFAULT`, not a fault in this process).
///
/// # Errors
///
/// The system call's error (`ESRCH`: the process is gone; `EPERM`: not
/// allowed; `EFAULT`: a bad address), or `UnexpectedEof` when it moved
/// nothing.
pub fn read(pid: u32, local: *mut u8, len: usize, remote: u64) -> io::Result<()> {
    transfer(pid, local, len, remote, false)
}

/// Writes `len` bytes of `local` at `remote` in process `pid` (as
/// [`read`]; `local` must be readable for `len` bytes).
///
/// # Errors
///
/// As [`read`].
pub fn write(pid: u32, local: *const u8, len: usize, remote: u64) -> io::Result<()> {
    transfer(pid, local.cast_mut(), len, remote, true)
}

fn transfer(pid: u32, local: *mut u8, len: usize, remote: u64, write: bool) -> io::Result<()> {
    let mut done = 0usize;
    while done < len {
        let l = libc::iovec {
            // SAFETY: `done < len`, inside the caller's buffer.
            iov_base: unsafe { local.add(done) }.cast(),
            iov_len: len - done,
        };
        let r = libc::iovec {
            iov_base: (remote as usize + done) as *mut libc::c_void,
            iov_len: len - done,
        };
        // SAFETY: one local iovec inside the caller's buffer (writable for
        // a read, readable for a write, by the callers' contracts); the
        // remote iovec is only dereferenced by the kernel, in process
        // `pid`, which checks it.
        let n = unsafe {
            if write {
                libc::process_vm_writev(pid as libc::pid_t, &l, 1, &r, 1, 0)
            } else {
                libc::process_vm_readv(pid as libc::pid_t, &l, 1, &r, 1, 0)
            }
        };
        match n {
            n if n > 0 => done += n as usize,
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            _ => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
    Ok(())
}

/// A word a process publishes the address and value of (in its contact
/// card), so a peer can check it may read the process's memory before it
/// relies on it. Boxed: its address stays put while the value lives.
pub struct Probe {
    word: Box<AtomicU64>,
}

impl Probe {
    /// A probe word holding `value`.
    pub fn new(value: u64) -> Probe {
        Probe {
            word: Box::new(AtomicU64::new(value)),
        }
    }

    /// Its address (in this process).
    pub fn address(&self) -> u64 {
        &*self.word as *const AtomicU64 as u64
    }

    /// Its value.
    pub fn value(&self) -> u64 {
        self.word.load(Ordering::Relaxed)
    }
}

/// Checks that process `pid` can be read: its probe word at `address`
/// holds `value`.
///
/// # Errors
///
/// A sentence saying what failed.
pub fn check_peer(pid: u32, address: u64, value: u64) -> Result<(), String> {
    let mut copy = 0u64;
    read(pid, (&mut copy as *mut u64).cast(), 8, address)
        .map_err(|e| format!("reading process {pid}'s memory with process_vm_readv failed: {e}"))?;
    if copy != value {
        return Err(format!(
            "process {pid}'s probe word reads {copy:#x}, not {value:#x} (a different process has its pid)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_reads_and_writes_itself() {
        enable().unwrap();
        let src: Vec<u8> = (0..100_000u32).map(|i| (i * 7) as u8).collect();
        let mut dst = vec![0u8; src.len()];
        read(
            std::process::id(),
            dst.as_mut_ptr(),
            dst.len(),
            src.as_ptr() as u64,
        )
        .unwrap();
        assert_eq!(dst, src);
        let mut back = vec![0u8; src.len()];
        write(
            std::process::id(),
            src.as_ptr(),
            src.len(),
            back.as_mut_ptr() as u64,
        )
        .unwrap();
        assert_eq!(back, src);
    }

    #[test]
    fn a_bad_address_is_an_error_not_a_fault() {
        let mut dst = [0u8; 8];
        let e = read(std::process::id(), dst.as_mut_ptr(), 8, 8).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EFAULT));
        let probe = Probe::new(0xabc);
        check_peer(std::process::id(), probe.address(), probe.value()).unwrap();
        let e = check_peer(std::process::id(), probe.address(), 0xabd).unwrap_err();
        assert!(e.contains("probe word"), "{e}");
    }
}
