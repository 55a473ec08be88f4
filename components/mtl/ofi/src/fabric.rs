//! libfabric, safely: the provider list `fi_getinfo` answers
//! ([`InfoList`]), and one opened endpoint ([`Endpoint`]: fabric, domain,
//! address vector, the endpoint itself and its lanes, each a transmit and
//! receive context with a completion queue, closed in reverse order on
//! drop) with the tagged data path the MTL uses. A plain endpoint has one
//! lane, itself; a scalable endpoint has one per context pair.
//!
//! Every call into libfabric is in this file. Operation contexts are
//! `fi_context2` blocks the caller keeps at a stable address until the
//! operation's completion is read ([`Endpoint::read_completions`]).

use oxmpi_ofi_sys as ofi;
use std::ffi::{c_void, CStr, CString};
use std::ptr;

/// The libfabric API version the MTL asks for.
pub const API_VERSION: u32 = ofi::fi_make_version(1, 17);

/// An address vector entry; [`NO_ADDRESS`] for none.
pub type FiAddr = ofi::fi_addr_t;

/// No address: a receive from any peer.
pub const NO_ADDRESS: FiAddr = ofi::FI_ADDR_UNSPEC;

/// An operation's context block, which libfabric may use while the
/// operation runs (`FI_CONTEXT`, `FI_CONTEXT2` modes).
pub type OpContext = ofi::fi_context2;

/// A fresh context block.
pub fn new_context() -> OpContext {
    OpContext {
        internal: [ptr::null_mut(); 8],
    }
}

/// The version of the libfabric library loaded (`FI_VERSION` form).
pub fn library_version() -> u32 {
    // SAFETY: fi_version takes nothing and answers a number.
    unsafe { ofi::fi_version() }
}

/// The provider setting the MTL needs, and why: with dynamic receive
/// buffering (its default), libfabric 1.17's `ofi_rxm` over `tcp` loses
/// the messages that follow a truncated receive on the same connection
/// (the tcp provider fails the connection's receive state).
const RXM_DYNAMIC_BUFFERS: &str = "FI_OFI_RXM_ENABLE_DYN_RBUF";

/// Turns off `ofi_rxm`'s dynamic receive buffering (see
/// [`RXM_DYNAMIC_BUFFERS`]) unless the user set it, before libfabric reads
/// its providers' settings (its first `fi_getinfo`); logs what it did.
pub fn settle_provider_environment(ctx: &oxmpi_plugin_api::ComponentContext) {
    if std::env::var_os(RXM_DYNAMIC_BUFFERS).is_some() {
        return;
    }
    // The rank sets it while it starts, before threads of its own run;
    // libfabric reads it once, when its providers load.
    std::env::set_var(RXM_DYNAMIC_BUFFERS, "0");
    ctx.log(
        oxmpi_plugin_api::verbosity::TRACE,
        "FI_OFI_RXM_ENABLE_DYN_RBUF=0: with ofi_rxm's dynamic receive buffers, a truncated \
         receive loses the connection's following messages",
    );
}

/// libfabric's sentence for error number `code` (positive or negated).
pub fn error_text(code: i64) -> String {
    let code = code.unsigned_abs() as i32;
    // SAFETY: fi_strerror answers a static string for any number.
    let text = unsafe { CStr::from_ptr(ofi::fi_strerror(code)) };
    format!("{} (error {code})", text.to_string_lossy())
}

/// What the MTL asks `fi_getinfo` for.
#[derive(Clone, Debug, Default)]
pub struct Hints {
    /// Also ask for `FI_REMOTE_CQ_DATA` and `FI_DIRECTED_RECV` (the
    /// `ofi_tag_full` layout's needs).
    pub full_tag_caps: bool,
    /// Also ask for `FI_NAMED_RX_CTX` (a sender names a scalable
    /// endpoint's receive context).
    pub scalable: bool,
    /// Only this provider (its full name), or any.
    pub provider: Option<String>,
}

/// The list `fi_getinfo` answered (freed on drop).
pub struct InfoList {
    head: *mut ofi::fi_info,
}

/// The capabilities the MTL always needs: tagged sends and receives.
const BASE_CAPS: u64 = ofi::FI_TAGGED | ofi::FI_SEND | ofi::FI_RECV;

// SAFETY: the list is owned (freed once, on drop) and only read; libfabric
// keeps no reference to it tied to the thread that asked.
unsafe impl Send for InfoList {}

impl InfoList {
    /// The providers offering tagged messages on reliable-datagram
    /// endpoints with `hints`; an empty list when there is none.
    ///
    /// # Errors
    ///
    /// `fi_getinfo` failed for another reason than "no match" (its
    /// sentence), or the hints could not be allocated.
    pub fn query(hints: &Hints) -> Result<InfoList, String> {
        let provider = hints
            .provider
            .as_deref()
            .map(CString::new)
            .transpose()
            .map_err(|_| "a provider name holds a NUL byte".to_string())?;
        // SAFETY: `fi_allocinfo` answers a zeroed `fi_info` with its
        // attribute blocks allocated, or null (checked). The fields set
        // below belong to those blocks. The provider name is duplicated
        // with `strdup` because `fi_freeinfo` frees it. The hints are freed
        // once, after `fi_getinfo` read them.
        unsafe {
            let h = ofi::fi_allocinfo();
            if h.is_null() {
                return Err("fi_allocinfo failed (out of memory)".to_string());
            }
            (*h).caps = BASE_CAPS;
            if hints.full_tag_caps {
                (*h).caps |= ofi::FI_REMOTE_CQ_DATA | ofi::FI_DIRECTED_RECV;
            }
            if hints.scalable {
                (*h).caps |= ofi::FI_NAMED_RX_CTX;
            }
            (*h).mode = ofi::FI_CONTEXT | ofi::FI_CONTEXT2;
            (*(*h).ep_attr).type_ = ofi::FI_EP_RDM;
            // MPI's non-overtaking rule: messages between two peers are
            // matched in the order they were sent.
            (*(*h).tx_attr).msg_order = ofi::FI_ORDER_SAS;
            (*(*h).rx_attr).msg_order = ofi::FI_ORDER_SAS;
            (*(*h).domain_attr).threading = ofi::FI_THREAD_DOMAIN;
            (*(*h).domain_attr).control_progress = ofi::FI_PROGRESS_MANUAL;
            (*(*h).domain_attr).data_progress = ofi::FI_PROGRESS_MANUAL;
            (*(*h).domain_attr).av_type = ofi::FI_AV_TABLE;
            (*(*h).domain_attr).resource_mgmt = ofi::FI_RM_ENABLED;
            if let Some(name) = &provider {
                (*(*h).fabric_attr).prov_name = libc_strdup(name);
            }
            let mut head: *mut ofi::fi_info = ptr::null_mut();
            let rc = ofi::fi_getinfo(API_VERSION, ptr::null(), ptr::null(), 0, h, &mut head);
            ofi::fi_freeinfo(h);
            match rc {
                0 => Ok(InfoList { head }),
                rc if rc == -ofi::FI_ENODATA => Ok(InfoList {
                    head: ptr::null_mut(),
                }),
                rc => Err(format!("fi_getinfo failed: {}", error_text(rc.into()))),
            }
        }
    }

    /// The entries, best first (libfabric's order).
    pub fn iter(&self) -> impl Iterator<Item = Info<'_>> {
        let mut at = self.head;
        std::iter::from_fn(move || {
            if at.is_null() {
                return None;
            }
            // SAFETY: `at` is an entry of the list this value owns; it
            // lives as long as the borrow of `self`.
            let entry = unsafe { &*at };
            at = entry.next;
            Some(Info { raw: entry })
        })
    }

    /// The first entry of provider `name`.
    pub fn find(&self, name: &str) -> Option<Info<'_>> {
        self.iter().find(|i| i.provider() == name)
    }
}

impl Drop for InfoList {
    fn drop(&mut self) {
        if !self.head.is_null() {
            // SAFETY: the list `fi_getinfo` answered, freed once.
            unsafe { ofi::fi_freeinfo(self.head) }
        }
    }
}

/// `strdup` with the C library's allocator (what `fi_freeinfo` frees).
///
/// # Safety
///
/// None beyond the C library's own: `s` is a valid C string.
unsafe fn libc_strdup(s: &CStr) -> *mut std::os::raw::c_char {
    extern "C" {
        fn strdup(s: *const std::os::raw::c_char) -> *mut std::os::raw::c_char;
    }
    // SAFETY: `s` is a valid NUL-terminated string.
    unsafe { strdup(s.as_ptr()) }
}

/// One provider entry of an [`InfoList`].
#[derive(Clone, Copy)]
pub struct Info<'a> {
    raw: &'a ofi::fi_info,
}

impl Info<'_> {
    /// The provider's name (`tcp;ofi_rxm`, `shm`, …).
    pub fn provider(&self) -> String {
        // SAFETY: an entry `fi_getinfo` answered has its fabric attributes
        // and the provider's name set.
        unsafe { c_text((*self.raw.fabric_attr).prov_name) }
    }

    /// The domain's name (a device or `lo`, …).
    pub fn domain(&self) -> String {
        // SAFETY: as in `provider`, for the domain attributes.
        unsafe { c_text((*self.raw.domain_attr).name) }
    }

    /// The endpoint's `mem_tag_format`.
    pub fn mem_tag_format(&self) -> u64 {
        // SAFETY: an answered entry has its endpoint attributes.
        unsafe { (*self.raw.ep_attr).mem_tag_format }
    }

    /// Bytes of remote CQ data the domain carries.
    pub fn cq_data_size(&self) -> usize {
        // SAFETY: an answered entry has its domain attributes.
        unsafe { (*self.raw.domain_attr).cq_data_size }
    }

    /// The largest message of one operation.
    pub fn max_msg_size(&self) -> usize {
        // SAFETY: an answered entry has its endpoint attributes.
        unsafe { (*self.raw.ep_attr).max_msg_size }
    }

    /// The transmit and receive context pairs a scalable endpoint of this
    /// entry may have (1: the provider offers no scalable endpoints).
    pub fn max_contexts(&self) -> usize {
        // SAFETY: an answered entry has its domain attributes.
        let (tx, rx) = unsafe {
            (
                (*self.raw.domain_attr).max_ep_tx_ctx,
                (*self.raw.domain_attr).max_ep_rx_ctx,
            )
        };
        tx.min(rx).max(1)
    }

    /// The largest message `fi_tinject` takes.
    pub fn inject_size(&self) -> usize {
        // SAFETY: an answered entry has its transmit attributes.
        unsafe { (*self.raw.tx_attr).inject_size }
    }
}

/// A C string as text (empty for null).
///
/// # Safety
///
/// `p` is null or a valid NUL-terminated string.
unsafe fn c_text(p: *const std::os::raw::c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        // SAFETY: the caller's promise.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

/// A completion the MTL reads from the queue.
#[derive(Clone, Copy, Debug)]
pub struct Completion {
    /// The operation's context block.
    pub context: *mut OpContext,
    /// Bytes received (receives and peeks: the message's length).
    pub len: usize,
    /// The sender's tag (receives).
    pub tag: u64,
    /// The remote CQ data (receives of a message sent with data).
    pub data: u64,
    /// The operation failed: libfabric's error number (positive) and, for
    /// a truncated receive, the bytes that did not fit.
    pub error: Option<(i32, usize)>,
}

// SAFETY: a completion is plain data; its context pointer is only
// dereferenced by the MTL under its exclusive entry.
unsafe impl Send for Completion {}

/// One transmit and receive context with the completion queue both
/// report to: a plain endpoint itself, or a context pair of a scalable
/// endpoint.
struct Lane {
    tx: *mut ofi::fid_ep,
    rx: *mut ofi::fid_ep,
    cq: *mut ofi::fid_cq,
}

/// An opened endpoint and the objects it uses.
pub struct Endpoint {
    fabric: *mut ofi::fid_fabric,
    domain: *mut ofi::fid_domain,
    av: *mut ofi::fid_av,
    /// The endpoint, plain or scalable.
    ep: *mut ofi::fid_ep,
    /// Its lanes: the endpoint itself, or its context pairs.
    lanes: Vec<Lane>,
    /// The address bits that name a peer's receive context (0: plain).
    rx_ctx_bits: i32,
    entries: Vec<ofi::fi_cq_tagged_entry>,
}

// SAFETY: the endpoint's objects are used by one thread at a time (the
// MTL's exclusive entry; the domain is opened FI_THREAD_DOMAIN).
unsafe impl Send for Endpoint {}

/// A failed libfabric call's sentence.
fn failed(what: &str, rc: i64) -> String {
    format!("{what} failed: {}", error_text(rc))
}

/// Answers `rc` as the outcome of libfabric call `what`.
fn check(what: &str, rc: i32) -> Result<(), String> {
    match rc {
        0 => Ok(()),
        rc => Err(failed(what, rc.into())),
    }
}

/// A completion queue of tagged entries, polled (no wait object).
///
/// # Safety
///
/// `domain` is open.
unsafe fn open_cq(domain: *mut ofi::fid_domain) -> Result<*mut ofi::fid_cq, String> {
    // SAFETY: zeroed attributes are the defaults; the attribute structure
    // lives for the call.
    unsafe {
        let mut cq_attr: ofi::fi_cq_attr = std::mem::zeroed();
        cq_attr.format = ofi::FI_CQ_FORMAT_TAGGED;
        cq_attr.wait_obj = ofi::FI_WAIT_NONE;
        let mut cq = ptr::null_mut();
        check(
            "fi_cq_open",
            ofi::fi_cq_open(domain, &mut cq_attr, &mut cq, ptr::null_mut()),
        )?;
        Ok(cq)
    }
}

impl Endpoint {
    /// Opens an endpoint of provider entry `info`, its completion queues
    /// read `batch` entries at a time: a plain one for `contexts` 1, else
    /// a scalable endpoint with `contexts` transmit and receive context
    /// pairs (at most [`Info::max_contexts`]).
    ///
    /// # Errors
    ///
    /// The libfabric call that failed, with its sentence; what was opened
    /// before it is closed.
    pub fn open(info: Info<'_>, batch: usize, contexts: usize) -> Result<Endpoint, String> {
        let raw = info.raw as *const ofi::fi_info as *mut ofi::fi_info;
        let contexts = contexts.max(1);
        let mut e = Endpoint {
            fabric: ptr::null_mut(),
            domain: ptr::null_mut(),
            av: ptr::null_mut(),
            ep: ptr::null_mut(),
            lanes: Vec::with_capacity(contexts),
            rx_ctx_bits: if contexts > 1 {
                (usize::BITS - (contexts - 1).leading_zeros()) as i32
            } else {
                0
            },
            entries: vec![
                ofi::fi_cq_tagged_entry {
                    op_context: ptr::null_mut(),
                    flags: 0,
                    len: 0,
                    buf: ptr::null_mut(),
                    data: 0,
                    tag: 0,
                };
                batch.max(1)
            ],
        };
        // SAFETY: `raw` is an entry of a live list, which fi_fabric,
        // fi_domain and fi_endpoint only read (a scalable endpoint's
        // context counts are written into the list's own entry first);
        // each object is opened from the one before and stored at once, so
        // `Drop` closes what exists; the attribute structures live for
        // their call.
        unsafe {
            check(
                "fi_fabric",
                ofi::fi_fabric((*raw).fabric_attr, &mut e.fabric, ptr::null_mut()),
            )?;
            check(
                "fi_domain",
                ofi::fi_domain(e.fabric, raw, &mut e.domain, ptr::null_mut()),
            )?;
            let mut av_attr: ofi::fi_av_attr = std::mem::zeroed();
            av_attr.type_ = ofi::FI_AV_TABLE;
            av_attr.rx_ctx_bits = e.rx_ctx_bits;
            check(
                "fi_av_open",
                ofi::fi_av_open(e.domain, &mut av_attr, &mut e.av, ptr::null_mut()),
            )?;
            if contexts == 1 {
                let cq = open_cq(e.domain)?;
                e.lanes.push(Lane {
                    tx: ptr::null_mut(),
                    rx: ptr::null_mut(),
                    cq,
                });
                check(
                    "fi_endpoint",
                    ofi::fi_endpoint(e.domain, raw, &mut e.ep, ptr::null_mut()),
                )?;
                e.lanes[0] = Lane {
                    tx: e.ep,
                    rx: e.ep,
                    cq,
                };
                check(
                    "fi_ep_bind (address vector)",
                    ofi::fi_ep_bind(e.ep, &mut (*e.av).fid, 0),
                )?;
                check(
                    "fi_ep_bind (completion queue)",
                    ofi::fi_ep_bind(e.ep, &mut (*cq).fid, ofi::FI_TRANSMIT | ofi::FI_RECV),
                )?;
                check("fi_enable", ofi::fi_enable(e.ep))?;
                return Ok(e);
            }
            (*(*raw).ep_attr).tx_ctx_cnt = contexts;
            (*(*raw).ep_attr).rx_ctx_cnt = contexts;
            check(
                "fi_scalable_ep",
                ofi::fi_scalable_ep(e.domain, raw, &mut e.ep, ptr::null_mut()),
            )?;
            check(
                "fi_scalable_ep_bind (address vector)",
                ofi::fi_scalable_ep_bind(e.ep, &mut (*e.av).fid, 0),
            )?;
            check("fi_enable (scalable endpoint)", ofi::fi_enable(e.ep))?;
            for index in 0..contexts {
                let cq = open_cq(e.domain)?;
                e.lanes.push(Lane {
                    tx: ptr::null_mut(),
                    rx: ptr::null_mut(),
                    cq,
                });
                let lane = e.lanes.last_mut().expect("just pushed");
                let i = index as i32;
                check(
                    "fi_tx_context",
                    ofi::fi_tx_context(e.ep, i, ptr::null_mut(), &mut lane.tx, ptr::null_mut()),
                )?;
                check(
                    "fi_rx_context",
                    ofi::fi_rx_context(e.ep, i, ptr::null_mut(), &mut lane.rx, ptr::null_mut()),
                )?;
                check(
                    "fi_ep_bind (transmit context)",
                    ofi::fi_ep_bind(lane.tx, &mut (*cq).fid, ofi::FI_TRANSMIT),
                )?;
                check(
                    "fi_ep_bind (receive context)",
                    ofi::fi_ep_bind(lane.rx, &mut (*cq).fid, ofi::FI_RECV),
                )?;
                check("fi_enable (transmit context)", ofi::fi_enable(lane.tx))?;
                check("fi_enable (receive context)", ofi::fi_enable(lane.rx))?;
            }
        }
        Ok(e)
    }

    /// The endpoint's lanes (1 for a plain endpoint).
    pub fn lanes(&self) -> usize {
        self.lanes.len()
    }

    /// Peer address `addr` as lane `lane` sends to it: the peer's receive
    /// context of that index on a scalable endpoint.
    fn target(&self, addr: FiAddr, lane: usize) -> FiAddr {
        if self.rx_ctx_bits == 0 || addr == NO_ADDRESS {
            return addr;
        }
        ((lane as u64) << (64 - self.rx_ctx_bits)) | addr
    }

    /// The endpoint's address, for peers' address vectors.
    ///
    /// # Errors
    ///
    /// `fi_getname`'s sentence.
    pub fn name(&self) -> Result<Vec<u8>, String> {
        let mut buf = vec![0u8; 256];
        let mut len = buf.len();
        // SAFETY: an open endpoint; `buf` is writable for `len` bytes and
        // `fi_getname` writes at most that (or answers -FI_ETOOSMALL with
        // the size it needs in `len`).
        let mut rc =
            unsafe { ofi::fi_getname(&mut (*self.ep).fid, buf.as_mut_ptr().cast(), &mut len) };
        if rc == -(ofi::FI_ETOOSMALL as i32) {
            buf.resize(len, 0);
            // SAFETY: as above, with the size libfabric asked for.
            rc = unsafe { ofi::fi_getname(&mut (*self.ep).fid, buf.as_mut_ptr().cast(), &mut len) };
        }
        if rc != 0 {
            return Err(failed("fi_getname", rc.into()));
        }
        buf.truncate(len);
        Ok(buf)
    }

    /// Inserts a peer's address; answers its address vector entry.
    ///
    /// # Errors
    ///
    /// `fi_av_insert`'s sentence (an address from another provider, say).
    pub fn insert(&mut self, address: &[u8]) -> Result<FiAddr, String> {
        let mut addr: FiAddr = NO_ADDRESS;
        // SAFETY: an open address vector; `address` is one address of the
        // format this provider's `fi_getname` writes (the caller's modex
        // card), read during the call; one entry written to `addr`.
        let rc = unsafe {
            ofi::fi_av_insert(
                self.av,
                address.as_ptr().cast(),
                1,
                &mut addr,
                0,
                ptr::null_mut(),
            )
        };
        if rc != 1 {
            return Err(if rc < 0 {
                failed("fi_av_insert", rc.into())
            } else {
                "fi_av_insert did not take the address".to_string()
            });
        }
        Ok(addr)
    }

    /// Sends `len` bytes at `buf` with `tag` to `dest` through the inject
    /// path (complete on return, no completion entry); with `data`, as
    /// remote CQ data. Answers false when libfabric has no room now
    /// (`-FI_EAGAIN`: read completions and try again).
    ///
    /// # Errors
    ///
    /// libfabric's sentence.
    ///
    /// # Safety
    ///
    /// `buf` is readable for `len` bytes (≤ the inject size).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn inject(
        &mut self,
        lane: usize,
        buf: *const u8,
        len: usize,
        dest: FiAddr,
        tag: u64,
        data: Option<u64>,
    ) -> Result<bool, String> {
        let (tx, dest) = (self.lanes[lane].tx, self.target(dest, lane));
        // SAFETY: an open context; the buffer is the caller's promise and
        // is copied before the call returns (inject semantics).
        let rc = unsafe {
            match data {
                None => ofi::fi_tinject(tx, buf.cast(), len, dest, tag),
                Some(d) => ofi::fi_tinjectdata(tx, buf.cast(), len, d, dest, tag),
            }
        };
        posted("fi_tinject", rc)
    }

    /// Starts a send of `len` bytes at `buf` with `tag` to `dest`; its
    /// completion carries `context`. As [`inject`](Endpoint::inject) for
    /// the answer.
    ///
    /// # Errors
    ///
    /// libfabric's sentence.
    ///
    /// # Safety
    ///
    /// `buf` stays readable for `len` bytes and `context` valid and in
    /// place until the completion is read.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn send(
        &mut self,
        lane: usize,
        buf: *const u8,
        len: usize,
        dest: FiAddr,
        tag: u64,
        data: Option<u64>,
        context: *mut OpContext,
    ) -> Result<bool, String> {
        let (tx, dest) = (self.lanes[lane].tx, self.target(dest, lane));
        // SAFETY: an open context; buffer and context are the caller's
        // promise.
        let rc = unsafe {
            match data {
                None => ofi::fi_tsend(
                    tx,
                    buf.cast(),
                    len,
                    ptr::null_mut(),
                    dest,
                    tag,
                    context.cast(),
                ),
                Some(d) => ofi::fi_tsenddata(
                    tx,
                    buf.cast(),
                    len,
                    ptr::null_mut(),
                    d,
                    dest,
                    tag,
                    context.cast(),
                ),
            }
        };
        posted("fi_tsend", rc)
    }

    /// Posts a receive into `len` bytes at `buf` of a message from `source`
    /// ([`NO_ADDRESS`]: any) whose tag matches `tag` but for the `ignore`
    /// bits. As [`inject`](Endpoint::inject) for the answer.
    ///
    /// # Errors
    ///
    /// libfabric's sentence.
    ///
    /// # Safety
    ///
    /// `buf` stays writable for `len` bytes, untouched by anyone else, and
    /// `context` valid and in place until the completion is read.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn recv(
        &mut self,
        lane: usize,
        buf: *mut u8,
        len: usize,
        source: FiAddr,
        tag: u64,
        ignore: u64,
        context: *mut OpContext,
    ) -> Result<bool, String> {
        let (rx, source) = (self.lanes[lane].rx, self.target(source, lane));
        // SAFETY: an open context; buffer and context are the caller's
        // promise.
        let rc = unsafe {
            ofi::fi_trecv(
                rx,
                buf.cast(),
                len,
                ptr::null_mut(),
                source,
                tag,
                ignore,
                context.cast(),
            )
        };
        posted("fi_trecv", rc)
    }

    /// A receive with flags: `FI_PEEK` (is a matching message there? its
    /// answer is a completion, or an error completion `FI_ENOMSG`),
    /// `FI_PEEK | FI_CLAIM` (and keep it for a later claim), or
    /// `FI_CLAIM` (receive the message claimed with the same `context`
    /// into `buf`). As [`inject`](Endpoint::inject) for the answer.
    ///
    /// # Errors
    ///
    /// libfabric's sentence.
    ///
    /// # Safety
    ///
    /// As for [`recv`](Endpoint::recv) (`buf` may be null with `len` 0 for
    /// a peek).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn recv_with(
        &mut self,
        lane: usize,
        buf: *mut u8,
        len: usize,
        source: FiAddr,
        tag: u64,
        ignore: u64,
        context: *mut OpContext,
        flags: u64,
    ) -> Result<bool, String> {
        let (rx, source) = (self.lanes[lane].rx, self.target(source, lane));
        let iov = libc_iovec {
            iov_base: buf.cast(),
            iov_len: len,
        };
        let msg = ofi::fi_msg_tagged {
            msg_iov: if buf.is_null() {
                ptr::null()
            } else {
                (&iov as *const libc_iovec).cast()
            },
            desc: ptr::null_mut(),
            iov_count: usize::from(!buf.is_null()),
            addr: source,
            tag,
            ignore,
            context: context.cast(),
            data: 0,
        };
        // SAFETY: an open endpoint; `msg` and `iov` live for the call
        // (libfabric copies what it keeps); buffer and context are the
        // caller's promise.
        let rc = unsafe { ofi::fi_trecvmsg(rx, &msg, flags) };
        posted("fi_trecvmsg", rc)
    }

    /// Asks libfabric to cancel the operation of `context`; its
    /// completion (an error `FI_ECANCELED`, or its normal end if it was
    /// too late) is read as any other.
    pub fn cancel(&mut self, lane: usize, context: *mut OpContext) {
        let rx = self.lanes[lane].rx;
        // SAFETY: an open context; `context` is the caller's running
        // receive on it (libfabric answers an error for one it does not
        // know).
        let _ = unsafe { ofi::fi_cancel(&mut (*rx).fid, context.cast()) };
    }

    /// Reads up to the batch size of completions of each lane into `out`
    /// (cleared first); answers how many were read (0: none now).
    ///
    /// # Errors
    ///
    /// A queue failed (not an operation: that is a completion with an
    /// error).
    pub fn read_completions(&mut self, out: &mut Vec<Completion>) -> Result<usize, String> {
        out.clear();
        let mut total = 0;
        for lane in 0..self.lanes.len() {
            total += self.read_lane(lane, out)?;
        }
        Ok(total)
    }

    /// Reads up to the batch size of lane `lane`'s completions, appended
    /// to `out`; answers how many.
    fn read_lane(&mut self, lane: usize, out: &mut Vec<Completion>) -> Result<usize, String> {
        let cq = self.lanes[lane].cq;
        // SAFETY: an open queue of the tagged format; `entries` has room
        // for `len()` of them.
        let n =
            unsafe { ofi::fi_cq_read(cq, self.entries.as_mut_ptr().cast(), self.entries.len()) };
        if n > 0 {
            for e in &self.entries[..n as usize] {
                out.push(Completion {
                    context: e.op_context.cast(),
                    len: e.len,
                    tag: e.tag,
                    data: e.data,
                    error: None,
                });
            }
            return Ok(n as usize);
        }
        if n == -(ofi::FI_EAGAIN as isize) || n == 0 {
            return Ok(0);
        }
        if n == -(ofi::FI_EAVAIL as isize) {
            // SAFETY: a zeroed error entry is valid (no error data asked).
            let mut err: ofi::fi_cq_err_entry = unsafe { std::mem::zeroed() };
            // SAFETY: an open queue; one entry written.
            let rc = unsafe { ofi::fi_cq_readerr(cq, &mut err, 0) };
            if rc == 1 {
                out.push(Completion {
                    context: err.op_context.cast(),
                    len: err.len,
                    tag: err.tag,
                    data: err.data,
                    // Some providers report the number negated.
                    error: Some((err.err.abs(), err.olen)),
                });
                return Ok(1);
            }
            if rc == -(ofi::FI_EAGAIN as isize) {
                return Ok(0);
            }
            return Err(failed("fi_cq_readerr", rc as i64));
        }
        Err(failed("fi_cq_read", n as i64))
    }
}

/// A `struct iovec` (what `fi_msg_tagged.msg_iov` points to).
#[repr(C)]
struct libc_iovec {
    iov_base: *mut c_void,
    iov_len: usize,
}

/// A posting call's answer: started, no room now, or an error.
fn posted(what: &str, rc: isize) -> Result<bool, String> {
    if rc == 0 {
        Ok(true)
    } else if rc == -(ofi::FI_EAGAIN as isize) {
        Ok(false)
    } else {
        Err(failed(what, rc as i64))
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        // SAFETY: each object was opened by `open` and is closed once, the
        // contexts and endpoint before what they are bound to (a plain
        // endpoint is its own lane's contexts: closed as the endpoint).
        unsafe {
            let mut fids: Vec<*mut ofi::fid> = Vec::new();
            for lane in &self.lanes {
                if lane.tx != self.ep {
                    fids.push(lane.tx.cast());
                    fids.push(lane.rx.cast());
                }
            }
            fids.push(self.ep.cast());
            fids.extend(self.lanes.iter().map(|l| l.cq.cast::<ofi::fid>()));
            fids.extend([
                self.av.cast::<ofi::fid>(),
                self.domain.cast(),
                self.fabric.cast(),
            ]);
            for fid in fids {
                if !fid.is_null() {
                    ofi::fi_close(fid);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
