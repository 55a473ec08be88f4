//! `Echo<Q>`: a small loopback btl for the adapter's and the kit's own
//! tests (one module that reaches the process itself, sends queued and
//! delivered on progress), with a quirk `Q` that breaks one rule:
//!
//! - [`WELL`][]: none;
//! - [`REORDERS`][]: delivers the queue newest first;
//! - [`PANICS_IN_SEND`][]: `send` panics for a 13-byte payload;
//! - [`REENTERS`][]: `send` calls its own table's `progress`;
//! - [`PANICS_IN_INIT`][]: `init` panics;
//! - [`RDMA`][]: none, and offers get and put (memory copies within the
//!   process, queued and finished on progress);
//! - [`RDMA_LAZY`][]: offers get and put, answers `Done` without copying.
//!
//! Each `Echo<Q>` has its own exported instance and table ([`table_of`]).

use crate::adapter::{
    table, Adapted, Arrived, Btl, Exported, GetBuffer, Payload, Pml, PutBuffer, Rdma, Sent, Started,
};
use crate::module::{
    flags, BtlComponentModule, BtlModuleInfo, JobIdentity, RdmaStatus, MAX_HEADER,
};
use oxmpi_plugin_api::{ComponentContext, Instance};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};

/// No quirk.
pub const WELL: u8 = 0;
/// Delivers newest first.
pub const REORDERS: u8 = 1;
/// `send` panics for a 13-byte payload.
pub const PANICS_IN_SEND: u8 = 2;
/// `send` calls its own table's `progress`.
pub const REENTERS: u8 = 3;
/// `init` panics.
pub const PANICS_IN_INIT: u8 = 4;
/// Offers get and put (well behaved).
pub const RDMA: u8 = 5;
/// Offers get and put, answers `Done` without moving a byte.
pub const RDMA_LAZY: u8 = 6;

/// Largest get/put of the RDMA quirks.
pub const MAX_RDMA: usize = 100_000;

/// Calls of `stop_after_internal_error` (all quirks).
pub static STOPS: AtomicUsize = AtomicUsize::new(0);
/// `progress` bodies that ran (all quirks).
pub static PROGRESS_RUNS: AtomicUsize = AtomicUsize::new(0);
/// What the nested `progress` of [`REENTERS`] answered, plus one (0: not
/// called yet).
pub static NESTED_ANSWER: AtomicUsize = AtomicUsize::new(0);

/// The loopback btl with quirk `Q`.
pub struct Echo<const Q: u8> {
    rank: u32,
    queue: VecDeque<([u8; MAX_HEADER], usize, Payload)>,
    gets: VecDeque<(u64, GetBuffer)>,
    puts: VecDeque<(u64, PutBuffer)>,
}

/// A module description with small limits.
pub fn info(label: &str) -> BtlModuleInfo {
    BtlModuleInfo {
        label: label.into(),
        eager_limit: 1024,
        rndv_eager_limit: 4096,
        max_send_size: 16384,
        exclusivity: 1,
        latency: 0,
        bandwidth: 1,
        flags: flags::SEND,
        max_rdma_size: 0,
        min_rdma_message: 0,
    }
}

impl<const Q: u8> Btl for Echo<Q> {
    fn init(_context: &ComponentContext, identity: &JobIdentity) -> Result<Started<Self>, String> {
        if Q == PANICS_IN_INIT {
            panic!("boom in init");
        }
        Ok(Started::Ready(
            Echo {
                rank: identity.rank,
                queue: VecDeque::new(),
                gets: VecDeque::new(),
                puts: VecDeque::new(),
            },
            vec![if Q == RDMA || Q == RDMA_LAZY {
                BtlModuleInfo {
                    flags: flags::SEND | flags::GET | flags::PUT,
                    max_rdma_size: MAX_RDMA,
                    ..info("echo")
                }
            } else {
                info("echo")
            }],
        ))
    }

    fn add_peer(&mut self, module: u32, peer: u32, _card: &[u8]) -> Result<u64, String> {
        if module != 0 {
            return Err(format!("echo has one module; there is no module {module}"));
        }
        if peer != self.rank {
            return Err(format!("echo reaches only its own rank ({})", self.rank));
        }
        Ok(u64::from(peer))
    }

    fn send(&mut self, module: u32, endpoint: u64, header: &[u8], payload: Payload) -> Sent {
        if module != 0 || endpoint != u64::from(self.rank) {
            return Sent::Failed(payload);
        }
        if Q == PANICS_IN_SEND && payload.len() == 13 {
            panic!("boom in send");
        }
        if Q == REENTERS {
            // SAFETY: a plain entry point; the adapter must refuse it.
            let nested = unsafe { (table_of::<REENTERS>().progress)() };
            NESTED_ANSWER.store(nested + 1, Ordering::Relaxed);
        }
        let mut h = [0u8; MAX_HEADER];
        h[..header.len()].copy_from_slice(header);
        self.queue.push_back((h, header.len(), payload));
        Sent::Queued
    }

    fn get(
        &mut self,
        module: u32,
        endpoint: u64,
        remote: u64,
        local: GetBuffer,
    ) -> Rdma<GetBuffer> {
        if module != 0 || endpoint != u64::from(self.rank) {
            return Rdma::Failed(local);
        }
        if Q == RDMA_LAZY {
            return Rdma::Done(local);
        }
        self.gets.push_back((remote, local));
        Rdma::Queued
    }

    fn put(
        &mut self,
        module: u32,
        endpoint: u64,
        remote: u64,
        local: PutBuffer,
    ) -> Rdma<PutBuffer> {
        if module != 0 || endpoint != u64::from(self.rank) {
            return Rdma::Failed(local);
        }
        if Q == RDMA_LAZY {
            return Rdma::Done(local);
        }
        self.puts.push_back((remote, local));
        Rdma::Queued
    }

    fn progress(&mut self, pml: &Pml<'_>) -> usize {
        PROGRESS_RUNS.fetch_add(1, Ordering::Relaxed);
        let mut events = 0;
        while let Some((remote, mut local)) = self.gets.pop_front() {
            let n = local.len();
            // SAFETY: the remote range is memory of this process the test
            // keeps readable until the get finishes (the pml's side of the
            // contract); `copy` allows overlap.
            unsafe { std::ptr::copy(remote as *const u8, local.as_mut_ptr(), n) };
            pml.get_done(local, RdmaStatus::Done);
            events += 1;
        }
        while let Some((remote, local)) = self.puts.pop_front() {
            // SAFETY: as for gets, the remote range is writable.
            unsafe { std::ptr::copy(local.as_ptr(), remote as *mut u8, local.len()) };
            pml.put_done(local, RdmaStatus::Done);
            events += 1;
        }
        while let Some((h, n, payload)) = if Q == REORDERS {
            self.queue.pop_back()
        } else {
            self.queue.pop_front()
        } {
            let header = &h[..n];
            match pml.header(0, self.rank, header, payload.len()) {
                Some(mut dest) => {
                    dest.copy_from_payload(&payload);
                    pml.fragment(0, self.rank, header, Arrived::Placed(dest));
                }
                None => pml.fragment(0, self.rank, header, Arrived::InPlace(&payload)),
            }
            pml.send_done(payload);
            events += 1;
        }
        events
    }

    fn stop_after_internal_error(&mut self, pml: &Pml<'_>, message: &str) {
        STOPS.fetch_add(1, Ordering::Relaxed);
        self.queue.clear();
        self.gets.clear();
        self.puts.clear();
        pml.peer_failed(0, self.rank, message);
    }
}

macro_rules! exported {
    ($($q:expr),*) => {$(
        impl Exported for Echo<$q> {
            fn instance() -> &'static Instance<Adapted<Self>> {
                static I: Instance<Adapted<Echo<$q>>> = Instance::new();
                &I
            }
        }
    )*};
}

exported!(
    WELL,
    REORDERS,
    PANICS_IN_SEND,
    REENTERS,
    PANICS_IN_INIT,
    RDMA,
    RDMA_LAZY
);

/// The exported table of `Echo<Q>` (one per quirk, made once).
pub fn table_of<const Q: u8>() -> &'static BtlComponentModule
where
    Echo<Q>: Exported,
{
    static TABLES: [std::sync::OnceLock<&'static BtlComponentModule>; 7] =
        [const { std::sync::OnceLock::new() }; 7];
    TABLES[Q as usize].get_or_init(|| Box::leak(Box::new(table::<Echo<Q>>())))
}
