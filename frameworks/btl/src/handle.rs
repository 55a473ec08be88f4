//! The caller side of the btl interface: [`BtlHandle`], a btl component's
//! layout-checked table with safe methods that return `Result`s, for the
//! pml that drives it.

use crate::module::{
    BtlComponentModule, BtlModuleInfo, BtlReceiver, JobIdentity, RdmaOutcome, SendOutcome,
};
use abi_stable::std_types::{RSlice, RString, RVec};
use oxmpi_plugin_api::ComponentContext;

/// One btl component as a pml uses it.
#[derive(Clone, Copy)]
pub struct BtlHandle {
    table: &'static BtlComponentModule,
    context: ComponentContext,
}

/// The answer of [`BtlHandle::init`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BtlStart {
    /// The btl runs with these modules (indices 0, 1, …).
    Modules(Vec<BtlModuleInfo>),
    /// The btl has nothing usable here; the sentence says why.
    NothingUsable(String),
}

fn reason(text: RString, otherwise: &str) -> String {
    if text.is_empty() {
        otherwise.to_string()
    } else {
        text.into_string()
    }
}

impl BtlHandle {
    /// Wraps a btl component's table (layout-checked by the core) and its
    /// context (parameters and logging).
    pub fn new(table: &'static BtlComponentModule, context: ComponentContext) -> Self {
        BtlHandle { table, context }
    }

    /// The component's context.
    pub fn context(&self) -> &ComponentContext {
        &self.context
    }

    /// Starts the btl with the pml's callbacks.
    ///
    /// # Errors
    ///
    /// The btl's sentence when it cannot run (`"its init failed without a
    /// reason"` if it gave none).
    pub fn init(&self, identity: &JobIdentity, receiver: BtlReceiver) -> Result<BtlStart, String> {
        let mut modules = RVec::new();
        let mut error = RString::new();
        // SAFETY: a layout-checked table; the arguments are valid for the
        // call. The generated entry points check exclusive entry themselves.
        let ok = unsafe {
            (self.table.init)(&self.context, identity, receiver, &mut modules, &mut error)
        };
        if !ok {
            return Err(reason(error, "its init failed without a reason"));
        }
        Ok(if modules.is_empty() {
            BtlStart::NothingUsable(reason(error, "it found nothing usable here"))
        } else {
            BtlStart::Modules(modules.into_vec())
        })
    }

    /// The btl's contact card (after a successful `init`).
    pub fn contact_card(&self) -> Vec<u8> {
        let mut card = RVec::new();
        // SAFETY: as in `init`.
        unsafe { (self.table.contact_card)(&mut card) };
        card.into_vec()
    }

    /// Resolves `peer` on `module` from its card.
    ///
    /// # Errors
    ///
    /// Why the module cannot reach the peer (one sentence).
    pub fn add_peer(&self, module: u32, peer: u32, card: &[u8]) -> Result<u64, String> {
        let mut endpoint = 0u64;
        let mut why = RString::new();
        // SAFETY: as in `init`.
        let ok = unsafe {
            (self.table.add_peer)(
                module,
                peer,
                RSlice::from_slice(card),
                &mut endpoint,
                &mut why,
            )
        };
        if ok {
            Ok(endpoint)
        } else {
            Err(reason(why, "it gave no reason"))
        }
    }

    /// Sends one fragment (see [`BtlComponentModule::send`]).
    ///
    /// # Safety
    ///
    /// `payload` is readable for `payload_len` bytes and stays valid and
    /// unchanged until the answer is not `Queued`, or, for `Queued`, until
    /// the btl calls the receiver's `on_send_done` with `cookie` (or
    /// reports the peer failed).
    #[inline]
    pub unsafe fn send(
        &self,
        module: u32,
        endpoint: u64,
        header: &[u8],
        payload: *const u8,
        payload_len: usize,
        cookie: u64,
    ) -> SendOutcome {
        // SAFETY: the header is a live slice; the payload is the caller's
        // promise.
        unsafe {
            (self.table.send)(
                module,
                endpoint,
                header.as_ptr(),
                header.len(),
                payload,
                payload_len,
                cookie,
            )
        }
    }

    /// Reads `len` bytes at `remote` in the peer's memory into `local` (see
    /// [`BtlComponentModule::get`]). Refused (`Failed`, logged by the btl's
    /// adapter) for a module without [`flags::GET`](crate::module::flags::GET),
    /// a length of 0 or above the module's `max_rdma_size`, or a null
    /// buffer.
    ///
    /// # Safety
    ///
    /// `local` is writable for `len` bytes, and written by nothing else,
    /// until the answer is not `Queued`, or, for `Queued`, until the btl
    /// calls the receiver's `on_rdma_done` with `cookie` (or reports the
    /// peer failed).
    #[inline]
    pub unsafe fn get(
        &self,
        module: u32,
        endpoint: u64,
        local: *mut u8,
        remote: u64,
        len: usize,
        cookie: u64,
    ) -> RdmaOutcome {
        // SAFETY: the local buffer is the caller's promise; the remote
        // address is the peer's, which the btl reaches on its own.
        unsafe { (self.table.get)(module, endpoint, local, remote, len, cookie) }
    }

    /// Writes `len` bytes of `local` at `remote` in the peer's memory (see
    /// [`BtlComponentModule::put`]); refused as [`BtlHandle::get`] for a
    /// module without [`flags::PUT`](crate::module::flags::PUT).
    ///
    /// # Safety
    ///
    /// `local` is readable for `len` bytes and unchanged until the answer
    /// is not `Queued`, or, for `Queued`, until `on_rdma_done` with
    /// `cookie` (or the peer's failure).
    #[inline]
    pub unsafe fn put(
        &self,
        module: u32,
        endpoint: u64,
        local: *const u8,
        remote: u64,
        len: usize,
        cookie: u64,
    ) -> RdmaOutcome {
        // SAFETY: as in `get`.
        unsafe { (self.table.put)(module, endpoint, local, remote, len, cookie) }
    }

    /// Runs the btl's progress (its callbacks run inside).
    #[inline]
    pub fn progress(&self) -> usize {
        // SAFETY: as in `init`.
        unsafe { (self.table.progress)() }
    }

    /// The btl's progress function, for a progress engine that polls it.
    pub fn progress_fn(&self) -> unsafe extern "C" fn() -> usize {
        self.table.progress
    }

    /// Closes the btl; no call may follow but a new `init`.
    pub fn finalize(&self) {
        // SAFETY: as in `init`.
        unsafe { (self.table.finalize)() }
    }
}
