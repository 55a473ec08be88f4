//! The protocol engine: requests, matching, the eager, rendezvous, RGET
//! and RPUT protocols, per-peer btl choice and striping (see the crate docs
//! for the protocol).
//!
//! [`Engine`] is a plain struct over a [`Transport`] (the btl entry points,
//! the modex and logging), so tests run several engines in one process
//! over an in-memory transport; the component wraps one engine over the
//! real btl tables.
//!
//! The engine's methods are split by concern: [`peers`] (routes and peer
//! failure), [`send`] (`isend`, the first fragment, the FRAG pipeline,
//! ACKs, `progress`), [`rdma`] (gets, puts and FINs), [`recv`] (`irecv`,
//! matching, delivery),
//! [`callbacks`] (the btl callbacks), [`completion`] (completing
//! requests; `test`, `free`, `cancel`, `iprobe`, `request_error`) and
//! [`armed`] (the shortcut for the message that completes the only posted
//! receive).

mod armed;
mod callbacks;
mod completion;
mod peers;
mod rdma;
mod recv;
mod send;

use std::collections::VecDeque;
use std::ptr::NonNull;

use oxmpi_framework_btl::module::{BtlModuleInfo, RdmaOutcome, SendOutcome};
use oxmpi_framework_pml::module::ANY_TAG;
use oxmpi_matching::Matcher;
use oxmpi_plugin_api::verbosity;

use crate::pool::Pool;
use crate::requests::Requests;

#[cfg(test)]
use peers::Link;
use peers::Peer;
#[cfg(test)]
pub(crate) use peers::Route;

/// Fragment size used for a module that reports a `max_send_size` of 0.
pub(crate) const FALLBACK_MAX_SEND: usize = 128 << 10;

/// What the engine needs from below: the btls' entry points, the modex and
/// a log.
pub(crate) trait Transport {
    /// `rank`'s card published under `name` (`btl_<component>`): `Ok(None)`
    /// if it published none, `Err` with the reason if the lookup failed.
    fn modex_get(&mut self, rank: u32, name: &str) -> Result<Option<Vec<u8>>, String>;
    /// `add_peer` of btl `btl` (the index among the engine's btls) for its
    /// module `module`: an endpoint, or why the module cannot reach `peer`.
    fn add_peer(&mut self, btl: usize, module: u32, peer: u32, card: &[u8]) -> Result<u64, String>;
    /// `send` of btl `btl` (see `BtlComponentModule::send`). `payload` is
    /// never null (dangling when `payload_len` is 0); the engine passes
    /// the payload of a live request and keeps it valid and unchanged
    /// until the answer is not `Queued`, or else until `on_send_done` with
    /// `cookie` (or the peer's failure).
    #[allow(clippy::too_many_arguments)]
    fn send(
        &mut self,
        btl: usize,
        module: u32,
        endpoint: u64,
        header: &[u8],
        payload: *const u8,
        payload_len: usize,
        cookie: u64,
    ) -> SendOutcome;
    /// `get` of btl `btl` (see `BtlComponentModule::get`): `len` bytes at
    /// `remote` of the peer into `local`. The engine passes a live
    /// receive's buffer and keeps it until the answer is not `Queued`, or
    /// else until `on_rdma_done` with `cookie` (or the peer's failure).
    #[allow(clippy::too_many_arguments)]
    fn get(
        &mut self,
        btl: usize,
        module: u32,
        endpoint: u64,
        local: *mut u8,
        remote: u64,
        len: usize,
        cookie: u64,
    ) -> RdmaOutcome;
    /// `put` of btl `btl`: `len` bytes of `local` to `remote` of the peer
    /// (the promise as for `get`).
    #[allow(clippy::too_many_arguments)]
    fn put(
        &mut self,
        btl: usize,
        module: u32,
        endpoint: u64,
        local: *const u8,
        remote: u64,
        len: usize,
        cookie: u64,
    ) -> RdmaOutcome;
    /// Logs at the pml framework's verbosity `level`.
    fn log(&self, level: i32, message: &str);
}

/// A btl as the engine sees it.
#[derive(Clone, Debug)]
pub(crate) struct BtlDesc {
    /// Component name (`self`, `tcp`).
    pub name: String,
    /// Its modules, as its `init` described them (empty if unusable).
    pub modules: Vec<BtlModuleInfo>,
    /// Why it offers nothing here (its `init` failed or found no module),
    /// for the unreachable-peer sentence; `None` when it has modules.
    pub unusable: Option<String>,
}

/// The engine's parameters.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Config {
    /// Fragments of one rendezvous send a btl may hold at once
    /// (`pml_ob1_send_pipeline_depth`, at least 1).
    pub send_pipeline_depth: u32,
    /// Whether RGET and RPUT may be used when the btls offer get/put
    /// (`pml_ob1_use_rdma`).
    pub use_rdma: bool,
}

/// A module as the engine keeps it.
struct ModuleEntry {
    btl: usize,
    index: u32,
    info: BtlModuleInfo,
}

struct BtlEntry {
    name: String,
    unusable: Option<String>,
    first_module: usize,
    modules: usize,
}

/// What travels with a message through the matcher.
#[derive(Debug)]
pub(crate) struct Stored {
    kind: Kind,
    /// The bytes that came with the message (`None` while they are still
    /// in the btl's memory, during the call that delivered them).
    data: Option<Vec<u8>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Eager,
    /// A RNDV; `put`: the sender can put into the receive buffer.
    Rendezvous {
        sender: u64,
        put: bool,
    },
    /// A RGET: the sender's buffer is at `addr`.
    Rget {
        sender: u64,
        addr: u64,
    },
}

/// A control message to send.
#[derive(Clone, Copy, Debug)]
enum Ctrl {
    /// The receiver matched a rendezvous (`addr`: its buffer for puts, or
    /// 0).
    Ack {
        peer: u32,
        sender: u64,
        receiver: u64,
        wanted: usize,
        addr: u64,
    },
    /// The get/puts of a rendezvous finished; `request` is the peer's.
    Fin {
        peer: u32,
        request: u64,
        bytes: usize,
    },
}

impl Ctrl {
    fn peer(&self) -> u32 {
        match *self {
            Ctrl::Ack { peer, .. } | Ctrl::Fin { peer, .. } => peer,
        }
    }
}

enum Push {
    /// A btl took nothing: try again at the next progress.
    Blocked,
    /// The pipeline is full: wait for completions.
    Waiting,
    /// Nothing more to send.
    Finished,
}

/// Counters for tests and diagnostics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Stats {
    /// Live requests: records, and light receives still posted (see
    /// [`crate::light`]).
    pub live_requests: usize,
    /// Entries of the light slab in use: posted light receives and the
    /// aliases of promoted ones.
    pub light_entries: usize,
    /// Buffers the unexpected-message pool allocated so far.
    pub pool_allocations: u64,
    /// Unexpected messages waiting for a receive.
    pub unexpected: usize,
    /// Sends with work left for `progress`.
    pub active_sends: usize,
    /// ACKs and FINs waiting to be sent.
    pub pending_acks: usize,
    /// Messages the armed receive took (see [`armed`]).
    pub armed_deliveries: u64,
    /// Light receives promoted to full requests (see [`crate::light`]).
    pub promotions: u64,
}

/// A non-null pointer for empty payloads.
#[inline]
fn nonnull(p: *const u8, len: usize) -> *const u8 {
    if len == 0 || p.is_null() {
        NonNull::<u8>::dangling().as_ptr()
    } else {
        p
    }
}

/// The `len` bytes at `p` (empty when `len` is 0, whatever `p` is).
///
/// # Safety
///
/// When `len > 0`, `p` is not null and is readable for `len` bytes for
/// the returned lifetime.
#[inline]
unsafe fn bytes_of<'a>(p: *const u8, len: usize) -> &'a [u8] {
    if len == 0 {
        &[]
    } else {
        // SAFETY: the caller's promise.
        unsafe { std::slice::from_raw_parts(p, len) }
    }
}

/// A btl's reason as a clause (no trailing period).
fn clause(reason: &str) -> &str {
    let r = reason.trim();
    r.strip_suffix('.').unwrap_or(r)
}

fn tag_text(tag: i32) -> String {
    if tag == ANY_TAG {
        "any tag".to_string()
    } else {
        format!("tag {tag}")
    }
}

/// The protocol engine of one process.
pub(crate) struct Engine<T: Transport> {
    transport: T,
    rank: u32,
    size: u32,
    depth: u32,
    use_rdma: bool,
    btls: Vec<BtlEntry>,
    modules: Vec<ModuleEntry>,
    peers: Vec<Peer>,
    matcher: Matcher<Stored>,
    requests: Requests,
    pool: Pool,
    ctrl: VecDeque<Ctrl>,
    active: VecDeque<u64>,
    armed: armed::Armed,
}

impl<T: Transport> Engine<T> {
    /// An engine for `rank` of a job of `size` ranks over `btls` (in the
    /// order the MPI layer gave them).
    pub(crate) fn new(
        config: Config,
        rank: u32,
        size: u32,
        btls: Vec<BtlDesc>,
        transport: T,
    ) -> Engine<T> {
        let mut modules = Vec::new();
        let mut entries = Vec::new();
        for (b, desc) in btls.into_iter().enumerate() {
            let first_module = modules.len();
            let count = desc.modules.len();
            for (i, mut info) in desc.modules.into_iter().enumerate() {
                if info.max_send_size == 0 {
                    transport.log(
                        verbosity::COMPONENT,
                        &format!(
                            "btl module {} reports a max_send_size of 0; fragments of {} bytes are used",
                            info.label, FALLBACK_MAX_SEND
                        ),
                    );
                    info.max_send_size = FALLBACK_MAX_SEND;
                }
                modules.push(ModuleEntry {
                    btl: b,
                    index: i as u32,
                    info,
                });
            }
            entries.push(BtlEntry {
                name: desc.name,
                unusable: desc.unusable,
                first_module,
                modules: count,
            });
        }
        let peers = (0..size).map(|_| Peer::new()).collect();
        Engine {
            transport,
            rank,
            size,
            depth: config.send_pipeline_depth.max(1),
            use_rdma: config.use_rdma,
            btls: entries,
            modules,
            peers,
            matcher: Matcher::new(),
            requests: Requests::default(),
            pool: Pool::default(),
            ctrl: VecDeque::new(),
            active: VecDeque::new(),
            armed: armed::Armed::idle(),
        }
    }

    /// The transport (for tests and finalize).
    #[allow(dead_code)]
    pub(crate) fn transport(&self) -> &T {
        &self.transport
    }

    /// Counters.
    pub(crate) fn stats(&self) -> Stats {
        Stats {
            live_requests: self.requests.live(),
            light_entries: self.requests.light_entries(),
            pool_allocations: self.pool.allocations,
            unexpected: self.matcher.unexpected_len(),
            active_sends: self.active.len(),
            pending_acks: self.ctrl.len(),
            armed_deliveries: self.armed.deliveries,
            promotions: self.requests.promotions(),
        }
    }

    /// The route to `peer`, if resolved and reachable (tests).
    #[cfg(test)]
    pub(crate) fn route(&self, peer: u32) -> Option<&Route> {
        match &self.peers.get(peer as usize)?.link {
            Link::Reachable(r) => Some(r),
            _ => None,
        }
    }

    /// Label of global module `m`.
    #[cfg(test)]
    pub(crate) fn module_label(&self, m: usize) -> &str {
        self.modules[m].info.label.as_str()
    }

    fn label(&self, btl: usize, module: u32) -> String {
        match self.btls.get(btl) {
            Some(b) if (module as usize) < b.modules => self.modules
                [b.first_module + module as usize]
                .info
                .label
                .to_string(),
            Some(b) => format!("{} module {module}", b.name),
            None => format!("btl {btl} module {module}"),
        }
    }
}
