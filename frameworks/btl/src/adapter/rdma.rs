//! The RDMA side of the safe btl interface: the tokens for the pml's local
//! buffer of a get ([`GetBuffer`]; a put's is a [`PutBuffer`]), what
//! [`Btl::get`](super::Btl::get) and [`Btl::put`](super::Btl::put) answer
//! ([`Rdma`]), and the generated `get`/`put` entry points, which refuse a
//! call the module's description does not allow without reaching the btl.

use super::{Adapted, Exported, PutBuffer};
use crate::module::{flags, BtlModuleInfo, RdmaOutcome};
use oxmpi_plugin_api::verbosity;

/// Where a get writes: `len()` writable bytes of the pml's, valid while
/// the token exists (the pml keeps them so until the btl answers
/// `Done`/`WouldBlock`/`Failed`, or gives the token back through
/// [`Pml::get_done`](super::Pml::get_done)).
pub struct GetBuffer {
    pub(super) ptr: *mut u8,
    pub(super) len: usize,
    pub(super) cookie: u64,
}

// SAFETY: the token is the only writer of memory the pml keeps valid while
// it exists; moving it between threads changes nothing.
unsafe impl Send for GetBuffer {}

impl GetBuffer {
    /// Length in bytes (at least 1).
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer is empty (never, for a token the adapter made).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes, writable.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: non-null with `len` writable bytes (checked when the
        // token was made), which only this token writes while it exists.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// The first byte's address (for a system call that writes the bytes,
    /// such as `process_vm_readv`; at most `len()` bytes, while the token
    /// exists).
    #[inline]
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }

    /// A token for `len` writable bytes at `ptr`, finished with `cookie`
    /// (the test kit's stand-in for the generated `get`).
    ///
    /// # Safety
    ///
    /// `ptr` is non-null (when `len > 0`) and writable for `len` bytes,
    /// written by nothing else while the token exists.
    #[doc(hidden)]
    #[cfg(any(test, feature = "testkit"))]
    pub unsafe fn from_raw(ptr: *mut u8, len: usize, cookie: u64) -> GetBuffer {
        GetBuffer { ptr, len, cookie }
    }
}

/// What [`Btl::get`](super::Btl::get) or [`Btl::put`](super::Btl::put)
/// did with the local buffer `L`.
pub enum Rdma<L> {
    /// The bytes were moved; the token is given back.
    Done(L),
    /// Accepted: the btl keeps the token and gives it back through
    /// [`Pml::get_done`](super::Pml::get_done) /
    /// [`Pml::put_done`](super::Pml::put_done) from a progress call.
    Queued,
    /// Not taken: the pml tries again after progress.
    WouldBlock(L),
    /// The peer is lost (reported through
    /// [`Pml::peer_failed`](super::Pml::peer_failed) from a progress call),
    /// or the btl offers no such operation.
    Failed(L),
}

impl<L> Rdma<L> {
    pub(super) fn outcome(&self) -> RdmaOutcome {
        match self {
            Rdma::Done(_) => RdmaOutcome::Done,
            Rdma::Queued => RdmaOutcome::Queued,
            Rdma::WouldBlock(_) => RdmaOutcome::WouldBlock,
            Rdma::Failed(_) => RdmaOutcome::Failed,
        }
    }
}

/// What the adapter keeps of one module to check get/put calls.
#[derive(Clone, Copy)]
pub(super) struct RdmaLimits {
    flags: u32,
    max: usize,
}

impl RdmaLimits {
    pub(super) fn of(modules: &[BtlModuleInfo]) -> Vec<RdmaLimits> {
        modules
            .iter()
            .map(|m| RdmaLimits {
                flags: m.flags,
                max: m.max_rdma_size,
            })
            .collect()
    }
}

/// Why a get/put must not reach the btl, if it must not.
#[inline]
pub(super) fn refusal(
    limits: &[RdmaLimits],
    what: &'static str,
    flag: u32,
    module: u32,
    null: bool,
    len: usize,
) -> Option<String> {
    let Some(l) = limits.get(module as usize) else {
        return Some(format!(
            "the pml broke the btl interface: a {what} on module {module}, which does not exist ({} modules); refused",
            limits.len()
        ));
    };
    if l.flags & flag == 0 {
        return Some(format!(
            "the pml broke the btl interface: a {what} on module {module}, whose flags ({:#x}) do not offer it; refused",
            l.flags
        ));
    }
    if null || len == 0 || len > l.max {
        return Some(format!(
            "the pml broke the btl interface: a {what} of {len} bytes on module {module} (from 1 to {} bytes, with a non-null buffer); refused",
            l.max
        ));
    }
    None
}

pub(super) unsafe extern "C" fn get<B: Exported>(
    module: u32,
    endpoint: u64,
    local: *mut u8,
    remote: u64,
    len: usize,
    cookie: u64,
) -> RdmaOutcome {
    let token = GetBuffer {
        ptr: local,
        len,
        cookie,
    };
    let answer = B::instance().call("get", |a: &mut Adapted<B>| {
        match refusal(&a.rdma, "get", flags::GET, module, local.is_null(), len) {
            Some(why) => Err(why),
            None => Ok(a.btl.get(module, endpoint, remote, token).outcome()),
        }
    });
    settle::<B>(answer)
}

pub(super) unsafe extern "C" fn put<B: Exported>(
    module: u32,
    endpoint: u64,
    local: *const u8,
    remote: u64,
    len: usize,
    cookie: u64,
) -> RdmaOutcome {
    let token = PutBuffer::new(local, len, cookie);
    let answer = B::instance().call("put", |a: &mut Adapted<B>| {
        match refusal(&a.rdma, "put", flags::PUT, module, local.is_null(), len) {
            Some(why) => Err(why),
            None => Ok(a.btl.put(module, endpoint, remote, token).outcome()),
        }
    });
    settle::<B>(answer)
}

fn settle<B: Exported>(
    answer: Result<Result<RdmaOutcome, String>, oxmpi_plugin_api::EntryError>,
) -> RdmaOutcome {
    match answer {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(why)) => {
            B::instance().log(verbosity::ERROR, &why);
            RdmaOutcome::Failed
        }
        Err(_) => RdmaOutcome::Failed,
    }
}
