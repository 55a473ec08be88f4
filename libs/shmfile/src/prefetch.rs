//! Cache hints for a shared segment's lines: ask the processor for a line
//! another process is about to publish (or this one is about to write)
//! ahead of the access that needs it. A hint reads and writes no memory,
//! so any address is fine, mapped or not; on processors other than x86-64
//! and AArch64 both functions do nothing.

/// Asks the processor to fetch the cache line at `p` for reading
/// (`PREFETCHT0` on x86-64, `PRFM PLDL1KEEP` on AArch64).
#[inline(always)]
pub fn for_read(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 only hints the cache: it reads and writes no
    // memory the program sees, changes no register or flag, and never
    // faults, whatever the address.
    unsafe {
        std::arch::asm!("prefetcht0 [{0}]", in(reg) p, options(nostack, preserves_flags, readonly));
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: PRFM only hints the cache, as above.
    unsafe {
        std::arch::asm!("prfm pldl1keep, [{0}]", in(reg) p, options(nostack, preserves_flags, readonly));
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let _ = p;
}

/// Asks the processor to fetch the cache line at `p` in a state this
/// process may write without a further transfer (`PREFETCHW` on x86-64,
/// `PRFM PSTL1KEEP` on AArch64).
#[inline(always)]
pub fn for_write(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHW only hints the cache, as `for_read`'s PREFETCHT0.
    unsafe {
        std::arch::asm!("prefetchw [{0}]", in(reg) p, options(nostack, preserves_flags, readonly));
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: PRFM only hints the cache, as above.
    unsafe {
        std::arch::asm!("prfm pstl1keep, [{0}]", in(reg) p, options(nostack, preserves_flags, readonly));
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_leave_memory_as_it_was_and_accept_any_address() {
        let data = [7u8; 256];
        for i in (0..data.len()).step_by(64) {
            for_read(data.as_ptr().wrapping_add(i));
            for_write(data.as_ptr().wrapping_add(i));
        }
        // Addresses no mapping holds: a hint never faults.
        for_read(std::ptr::null());
        for_write(usize::MAX as *const u8);
        assert!(data.iter().all(|&b| b == 7));
    }
}
