//! [`Serialized`]: the one process-global state of a component whose
//! entry points its framework calls one at a time (and any other state
//! that one thread uses almost always, such as the C library's request
//! table).
//!
//! A component library is loaded once per process and its framework calls
//! it through plain `extern "C"` functions, so its state is a `static`.
//! Every framework contract says the caller never enters a component twice
//! at once (the MPI layer's lock) and that a component never calls back
//! into its caller from an entry point that does not allow it. `Serialized`
//! does not trust that: an entry that finds the state entered — a nested
//! call on the same thread, or a second thread — gets [`Reentered`]
//! instead of a second `&mut` to the state. The check holds in every build
//! profile, so no contract violation by a caller can make the component
//! alias its state.
//!
//! **Cost.** An atomic read-modify-write per entry costs more than the
//! rest of a small entry point, and almost every entry of a process comes
//! from one thread (the one that initialized MPI). So the state is
//! *biased* to the first thread that enters it, its *owner*: the owner
//! enters with plain atomic loads and stores (its own `owner_in` flag, then
//! a check that no other thread holds the `lock`), and any other thread
//! takes the `lock` with an atomic swap and then checks the owner's flag.
//! The two sides form a Dekker-style exclusion (each writes its flag, then
//! reads the other's), which needs a full memory fence between the write
//! and the read on both sides; the owner's fence is made by the other side
//! on its behalf with the Linux `membarrier` system call (private
//! expedited: every running thread of the process executes a full fence),
//! so the owner pays only a compiler fence. After [`UNBIAS_AFTER`] entries
//! from other threads (a program calling MPI from several threads), the
//! bias is given up for good — `owner` becomes [`UNBIASED`], after a
//! second `membarrier` that makes every later owner entry see it — and
//! every thread takes the `lock` (one swap, no system call). Where
//! `membarrier` is not available (another OS, or refused by the kernel),
//! the state is never biased. A process that forks after the state was
//! biased keeps the bias in the child, where the `membarrier` registration
//! may not hold: there, entries from threads other than the owner are
//! refused (never admitted unsafely); MPI processes do not fork after
//! initialization.
//!
//! The framework adapters (`oxmpi_framework_btl::adapter`,
//! `oxmpi_framework_pml::adapter`) wrap every entry point in
//! [`Serialized::entry`] and the panic guard; components do not use this
//! type directly.

use std::cell::UnsafeCell;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{compiler_fence, fence, AtomicBool, AtomicU32, AtomicUsize, Ordering};

/// `owner` before the first entry.
const UNOWNED: usize = 0;
/// `owner` once the bias is given up (or could not be set up).
const UNBIASED: usize = usize::MAX;
/// Entries from threads other than the owner after which the bias is
/// given up.
pub const UNBIAS_AFTER: u32 = 64;

/// A value entered by one caller at a time; see the module documentation.
pub struct Serialized<T> {
    /// The thread biased to ([`thread_id`]), [`UNOWNED`] or [`UNBIASED`].
    owner: AtomicUsize,
    /// Whether the owner is entering or inside; written by the owner only.
    owner_in: AtomicBool,
    /// Taken (swap) by entries from other threads.
    lock: AtomicBool,
    /// Entries through `lock` while biased (read and written under it).
    foreign: AtomicU32,
    value: UnsafeCell<Option<T>>,
}

// SAFETY: the value is only reached through `enter`, which hands out one
// `&mut` at a time: the owner holds `owner_in` and has seen `lock` free,
// or another thread holds `lock` and has seen `owner_in` clear after a
// process-wide fence (see the module documentation and `enter`); the
// releasing stores that end an entry and the acquiring loads and swap that
// begin one order the value's memory between threads. `T: Send` because
// the value may be entered from several threads in turn.
unsafe impl<T: Send> Sync for Serialized<T> {}

/// An entry found the state already entered (see [`Serialized`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reentered;

impl fmt::Display for Reentered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "the component was entered while one of its entry points was still running (a nested call, or two threads at once); the framework contract forbids this, so the call was refused",
        )
    }
}

impl std::error::Error for Reentered {}

/// One entry into a [`Serialized`] state ([`Serialized::entry`]): the
/// only `&mut` to the value while it lives; dropping it (also when
/// unwinding) ends the entry. It stays on the thread that entered.
pub struct Entry<'a, T> {
    /// The flag the entry holds (the owner's `owner_in`, or `lock`).
    flag: &'a AtomicBool,
    value: &'a mut Option<T>,
    /// Not `Send`: the entry ends on the thread that made it.
    _thread: PhantomData<*const ()>,
}

impl<'a, T> Entry<'a, T> {
    /// An entry holding `flag` over `value`.
    ///
    /// # Safety
    ///
    /// The caller set `flag` so that no other `&mut` to `value`'s content
    /// exists until `flag` is cleared, which the entry does when dropped.
    #[inline(always)]
    unsafe fn new(flag: &'a AtomicBool, value: &'a UnsafeCell<Option<T>>) -> Self {
        Entry {
            flag,
            // SAFETY: the caller's promise: this is the only reference
            // until the flag is cleared.
            value: unsafe { &mut *value.get() },
            _thread: PhantomData,
        }
    }
}

impl<T> Deref for Entry<'_, T> {
    type Target = Option<T>;
    #[inline(always)]
    fn deref(&self) -> &Option<T> {
        self.value
    }
}

impl<T> DerefMut for Entry<'_, T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Option<T> {
        self.value
    }
}

impl<T> Drop for Entry<'_, T> {
    #[inline(always)]
    fn drop(&mut self) {
        self.flag.store(false, Ordering::Release);
    }
}

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod os {
    use libc::{c_int, syscall, SYS_membarrier as SYS_MEMBARRIER};
    use std::sync::atomic::{AtomicU8, Ordering};

    // The membarrier commands (linux/membarrier.h), which the libc crate
    // does not define.
    const MEMBARRIER_CMD_PRIVATE_EXPEDITED: c_int = 1 << 3;
    const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: c_int = 1 << 4;

    /// A number that no other live thread of the process has, never 0 or
    /// `usize::MAX`: the thread pointer, which the x86-64 TLS ABI makes the
    /// first word of the thread's control block (`%fs:0`, what
    /// `pthread_self` answers) and which aarch64 keeps in `tpidr_el0`. Read
    /// inline: a call to `pthread_self` through the shared library's PLT
    /// costs about as much as the rest of the owner's entry.
    #[inline]
    pub(super) fn thread_id() -> usize {
        let tp: usize;
        // SAFETY: reads the word at the thread pointer, which the TLS ABI
        // keeps valid (pointing to itself) for the thread's life; no other
        // memory or flags are touched.
        #[cfg(target_arch = "x86_64")]
        unsafe {
            std::arch::asm!("mov {}, fs:0", out(reg) tp, options(nostack, readonly, preserves_flags, pure))
        };
        // SAFETY: reads a register.
        #[cfg(target_arch = "aarch64")]
        unsafe {
            std::arch::asm!("mrs {}, tpidr_el0", out(reg) tp, options(nostack, nomem, preserves_flags, pure))
        };
        tp
    }

    /// `pthread_self`, to check [`thread_id`] against (tests).
    #[cfg(test)]
    pub(super) fn pthread_id() -> usize {
        // SAFETY: `pthread_self` has no preconditions.
        unsafe { libc::pthread_self() as usize }
    }

    /// 0: not tried yet, 1: usable, 2: not available.
    static HEAVY: AtomicU8 = AtomicU8::new(0);

    /// Registers this process for `heavy_fence` once; whether it can be
    /// used.
    #[cold]
    pub(super) fn heavy_fence_available() -> bool {
        match HEAVY.load(Ordering::Acquire) {
            1 => true,
            2 => false,
            _ => {
                // SAFETY: the membarrier system call with a command and
                // two zero arguments touches no memory of ours.
                let ok = unsafe {
                    syscall(
                        SYS_MEMBARRIER,
                        MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
                        0 as c_int,
                        0 as c_int,
                    )
                } == 0;
                HEAVY.store(if ok { 1 } else { 2 }, Ordering::Release);
                ok
            }
        }
    }

    /// Makes every running thread of the process execute a full memory
    /// fence before this returns (threads not running pass one when they
    /// are scheduled). False if the kernel refused (then nothing is
    /// ordered).
    pub(super) fn heavy_fence() -> bool {
        // SAFETY: as in `heavy_fence_available`; the process registered
        // (the owner is set only after `heavy_fence_available` said so).
        unsafe {
            syscall(
                SYS_MEMBARRIER,
                MEMBARRIER_CMD_PRIVATE_EXPEDITED,
                0 as c_int,
                0 as c_int,
            ) == 0
        }
    }
}

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
mod os {
    /// The address of a thread-local byte: distinct between live threads.
    #[inline]
    pub(super) fn thread_id() -> usize {
        thread_local! {
            static MARK: u8 = const { 0 };
        }
        MARK.with(|m| std::ptr::from_ref(m) as usize)
    }

    pub(super) fn heavy_fence_available() -> bool {
        false
    }

    pub(super) fn heavy_fence() -> bool {
        false
    }
}

/// A number that no other live thread of the process has, never 0 or
/// `usize::MAX`, read without a thread-local lookup on Linux (x86-64 and
/// aarch64: the thread pointer). A thread that ended may leave its number
/// to a later thread, so it tells live threads apart, not threads over
/// the process's life.
#[inline]
pub fn thread_id() -> usize {
    os::thread_id()
}

impl<T> Serialized<T> {
    /// An empty state (`None` until the component's `init` fills it).
    pub const fn new() -> Self {
        Serialized {
            owner: AtomicUsize::new(UNOWNED),
            owner_in: AtomicBool::new(false),
            lock: AtomicBool::new(false),
            foreign: AtomicU32::new(0),
            value: UnsafeCell::new(None),
        }
    }

    /// Runs `f` on the state.
    ///
    /// # Errors
    ///
    /// [`Reentered`] when another entry is running (then `f` is not run).
    #[inline]
    pub fn enter<R>(&self, f: impl FnOnce(&mut Option<T>) -> R) -> Result<R, Reentered> {
        let mut entry = self.entry()?;
        Ok(f(&mut entry))
    }

    /// Takes the state for one entry, which lasts until the returned
    /// [`Entry`] is dropped (also when unwinding). [`Serialized::enter`]
    /// is this with a closure; the adapters use this form so that the
    /// whole entry inlines into the entry point, with no closure
    /// environment built and read back.
    ///
    /// # Errors
    ///
    /// [`Reentered`] when another entry is running.
    #[inline(always)]
    pub fn entry(&self) -> Result<Entry<'_, T>, Reentered> {
        let me = os::thread_id();
        if self.owner.load(Ordering::Relaxed) != me {
            return self.entry_locked(me);
        }
        // The owner's side. Only this thread writes `owner_in` while it is
        // clear, so a set flag is this thread's own entry: a nested call.
        if self.owner_in.load(Ordering::Relaxed) {
            return Err(Reentered);
        }
        self.owner_in.store(true, Ordering::Relaxed);
        // The other side's `membarrier` stands for a full fence here: a
        // thread that took `lock` and then fenced either sees `owner_in`
        // set, or its `lock` (and a later `owner`) is seen by the loads
        // below. The compiler must not move them above the store.
        compiler_fence(Ordering::SeqCst);
        // Acquire: pairs with the release of `lock` by the last other
        // thread that entered (and keeps the `owner` load after it).
        let locked = self.lock.load(Ordering::Acquire);
        if locked || self.owner.load(Ordering::Relaxed) != me {
            self.owner_in.store(false, Ordering::Release);
            if locked {
                return Err(Reentered);
            }
            // The bias was given up meanwhile.
            return self.entry_locked(me);
        }
        // SAFETY: this thread set `owner_in` and then saw `lock` free and
        // itself still the owner; any other thread takes `lock` and then,
        // after a process-wide fence, finds `owner_in` set and backs out
        // (or, with the bias given up, this thread saw `UNBIASED` instead).
        // So no other `&mut` to the value exists until the entry clears
        // `owner_in` when dropped.
        Ok(unsafe { Entry::new(&self.owner_in, &self.value) })
    }

    /// An entry by a thread other than the owner (or with no bias).
    #[cold]
    #[inline(never)]
    fn entry_locked(&self, me: usize) -> Result<Entry<'_, T>, Reentered> {
        if self.lock.swap(true, Ordering::Acquire) {
            return Err(Reentered);
        }
        // Releases `lock` on every way out that does not admit the entry.
        let refuse = |this: &Self| {
            this.lock.store(false, Ordering::Release);
            Err(Reentered)
        };
        match self.owner.load(Ordering::Relaxed) {
            UNBIASED => {}
            UNOWNED => {
                // The first entry: no owner ever ran, so none can be
                // inside. Bias to this thread if the owner's fences can be
                // made for it.
                let next = if os::heavy_fence_available() {
                    me
                } else {
                    UNBIASED
                };
                self.owner.store(next, Ordering::Relaxed);
            }
            _ => {
                fence(Ordering::SeqCst);
                if !os::heavy_fence() {
                    // Cannot happen once registered; refuse rather than
                    // guess.
                    return refuse(self);
                }
                fence(Ordering::SeqCst);
                // After the process-wide fence the owner's `owner_in` store
                // is visible if it came before its check of `lock` (which
                // then saw it taken, or will); otherwise the owner sees
                // `lock` taken. Acquire: pairs with the owner's last exit.
                if self.owner_in.load(Ordering::Acquire) {
                    return refuse(self);
                }
                let foreign = self.foreign.load(Ordering::Relaxed) + 1;
                self.foreign.store(foreign, Ordering::Relaxed);
                if foreign >= UNBIAS_AFTER {
                    // Give the bias up. The second fence makes `UNBIASED`
                    // visible to every owner entry that checks `owner`
                    // after it; one that checked before saw `lock` taken
                    // (it was taken before the first fence) and backs out.
                    let owner = self.owner.swap(UNBIASED, Ordering::Relaxed);
                    fence(Ordering::SeqCst);
                    if !os::heavy_fence() {
                        // Keep the bias (an owner that saw `UNBIASED`
                        // only backs out to the locked path).
                        self.owner.store(owner, Ordering::Relaxed);
                        return refuse(self);
                    }
                }
            }
        }
        // SAFETY: this thread holds `lock` (the swap above), and the owner,
        // if any, is not inside and cannot enter while `lock` is held (see
        // `entry`), so no other `&mut` to the value exists until the entry
        // releases `lock` when dropped.
        Ok(unsafe { Entry::new(&self.lock, &self.value) })
    }

    /// Whether an entry is running now (for diagnostics and tests).
    pub fn is_entered(&self) -> bool {
        self.owner_in.load(Ordering::Relaxed) || self.lock.load(Ordering::Relaxed)
    }
}

impl<T> Default for Serialized<T> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enter_gives_the_value_and_nested_entry_is_refused() {
        static S: Serialized<u32> = Serialized::new();
        S.enter(|v| *v = Some(1)).unwrap();
        let nested = S.enter(|v| {
            *v = Some(2);
            S.enter(|_| ())
        });
        assert_eq!(nested, Ok(Err(Reentered)));
        assert_eq!(S.enter(|v| *v), Ok(Some(2)));
        assert!(!S.is_entered());
    }

    #[test]
    fn a_panic_inside_releases_the_flag() {
        static S: Serialized<u32> = Serialized::new();
        let caught = std::panic::catch_unwind(|| S.enter(|_| panic!("inside")));
        assert!(caught.is_err());
        assert_eq!(S.enter(|v| v.replace(3)), Ok(None));
    }

    /// Enters `s` and adds one to its count with a pause between the read
    /// and the write (an overlap of two entries would lose an addition);
    /// whether the entry was admitted.
    fn bump_slowly(s: &Serialized<u64>) -> bool {
        s.enter(|v| {
            let n = v.as_mut().unwrap();
            let seen = *n;
            std::hint::spin_loop();
            *n = seen + 1;
        })
        .is_ok()
    }

    #[test]
    fn the_owner_and_a_few_foreign_entries_never_overlap() {
        // Fewer successful foreign entries than UNBIAS_AFTER: the owner
        // stays biased (plain stores) against the locked, fenced side.
        static S: Serialized<u64> = Serialized::new();
        S.enter(|v| *v = Some(0)).unwrap();
        let owner_entries = 200_000u64;
        let foreign = std::thread::spawn(|| {
            let mut done = 0u64;
            while done < u64::from(UNBIAS_AFTER) - 1 {
                if bump_slowly(&S) {
                    done += 1;
                }
            }
            done
        });
        let mut done = 0;
        while done < owner_entries {
            if bump_slowly(&S) {
                done += 1;
            }
        }
        let foreign_done = foreign.join().unwrap();
        assert_eq!(S.enter(|v| *v), Ok(Some(owner_entries + foreign_done)));
        assert!(!S.is_entered());
    }

    #[test]
    fn threads_taking_turns_are_never_refused_and_the_bias_is_given_up() {
        // Serialized use from several threads (an outside lock, as the MPI
        // layer's at Multiple): no refusal before or after the bias goes.
        static S: Serialized<u64> = Serialized::new();
        static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
        S.enter(|v| *v = Some(0)).unwrap();
        let rounds = 2 * u64::from(UNBIAS_AFTER);
        let threads: Vec<_> = (0..3)
            .map(|_| {
                std::thread::spawn(move || {
                    for _ in 0..rounds {
                        let _turn = TURN.lock().unwrap();
                        S.enter(|v| *v.as_mut().unwrap() += 1).unwrap();
                    }
                })
            })
            .collect();
        for _ in 0..rounds {
            let _turn = TURN.lock().unwrap();
            S.enter(|v| *v.as_mut().unwrap() += 1).unwrap();
        }
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(S.enter(|v| *v), Ok(Some(4 * rounds)));
        if os::heavy_fence_available() {
            assert_eq!(S.owner.load(Ordering::Relaxed), UNBIASED);
        }
        // Nested entries are still refused after the bias is gone.
        assert_eq!(S.enter(|_| S.enter(|_| ())), Ok(Err(Reentered)));
    }

    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn the_thread_id_is_pthread_self_and_differs_between_threads() {
        let mine = os::thread_id();
        assert_eq!(mine, os::pthread_id());
        assert_ne!(mine, 0);
        let other = std::thread::scope(|t| t.spawn(os::thread_id).join().unwrap());
        assert_ne!(other, mine);
    }

    #[test]
    fn the_first_entry_biases_to_its_thread_and_nesting_is_refused_on_both_paths() {
        static S: Serialized<u32> = Serialized::new();
        S.enter(|v| {
            *v = Some(1);
            // Nested inside the first (locked) entry.
            assert_eq!(S.enter(|_| ()), Err(Reentered));
        })
        .unwrap();
        if os::heavy_fence_available() {
            assert_eq!(S.owner.load(Ordering::Relaxed), os::thread_id());
        }
        // Nested inside an owner (plain-store) entry.
        assert_eq!(S.enter(|_| S.enter(|_| ())), Ok(Err(Reentered)));
        // Another thread while the owner is inside.
        let refused =
            S.enter(|_| std::thread::scope(|t| t.spawn(|| S.enter(|_| ())).join().unwrap()));
        assert_eq!(refused, Ok(Err(Reentered)));
        assert!(!S.is_entered());
    }

    #[test]
    fn two_threads_never_hold_the_value_at_once() {
        static S: Serialized<u64> = Serialized::new();
        static REFUSED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        S.enter(|v| *v = Some(0)).unwrap();
        let threads: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| {
                    let mut done = 0;
                    while done < 10_000 {
                        match S.enter(|v| {
                            let n = v.as_mut().unwrap();
                            let seen = *n;
                            std::hint::spin_loop();
                            *n = seen + 1;
                        }) {
                            Ok(()) => done += 1,
                            Err(Reentered) => {
                                REFUSED.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        // Every entry that ran incremented without losing an update.
        assert_eq!(S.enter(|v| *v), Ok(Some(40_000)));
    }
}
