//! An in-memory network of btl modules for running several engines in one
//! process, deterministically.
//!
//! Every rank has the same btls and modules. A fragment travels on a
//! channel (source, destination, btl, module) and channels are FIFO, as
//! the btl contract promises; which channel delivers next is chosen by the
//! [`Order`]. The network can answer `Queued` and read the payload only at
//! delivery (checking that the pml keeps it valid until `on_send_done`),
//! answer `WouldBlock` every n-th send, fail links, and it refuses any call
//! from the pml made inside a callback (the no-re-entry rule).

use std::cell::RefCell;
use std::collections::{HashMap, HashSet, VecDeque};
use std::rc::Rc;

use oxmpi_framework_btl::module::{BtlModuleInfo, RdmaOutcome, SendOutcome, MAX_HEADER};
use oxmpi_framework_pml::module::{Completion, RecvArgs, RequestStatus, SendArgs, SendMode};
use oxmpi_plugin_api::verbosity;

use super::alloc::{counted, uncounted};
use crate::engine::{BtlDesc, Config, Engine, Transport};
use crate::wire;

/// Which channel delivers next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Order {
    /// The oldest fragment in the network first.
    Fifo,
    /// The channel with the highest module index (then btl) first: later
    /// modules overtake earlier ones.
    HighModuleFirst,
    /// A seeded pseudo-random channel each time.
    Random(u64),
}

enum Payload {
    Copied(Vec<u8>),
    Borrowed(*const u8, usize),
}

struct Frag {
    stamp: u64,
    src: u32,
    dst: u32,
    btl: usize,
    module: u32,
    header: Vec<u8>,
    payload: Payload,
    cookie: Option<u64>,
}

type Channel = (u32, u32, usize, u32);
type ReachFn = Box<dyn Fn(u32, usize, u32, u32) -> Result<(), String>>;

/// Bytes and fragments one module carried from one rank, by header type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ModStats {
    pub match_bytes: usize,
    pub matches: usize,
    pub rndv_bytes: usize,
    pub rndvs: usize,
    pub acks: usize,
    pub frag_bytes: usize,
    pub frags: usize,
    /// FRAG payload bytes the pml let the network place directly.
    pub direct_bytes: usize,
}

/// The shared network state.
pub(crate) struct Net {
    pub in_callback: bool,
    channels: HashMap<Channel, VecDeque<Frag>>,
    stamp: u64,
    done: VecDeque<(u32, usize, u64)>,
    pub order: Order,
    rng: u64,
    /// Answer `WouldBlock` to every n-th send (0: never).
    pub wouldblock_every: u64,
    sends: u64,
    /// Answer `Queued` for payloads and read them only at delivery.
    pub queue_payloads: bool,
    /// Links (source, destination) whose sends fail.
    pub cut: HashSet<(u32, u32)>,
    /// Reachability: (source, btl, module, destination).
    pub reach: ReachFn,
    /// Cards that differ from the default (`[rank]`): `None` = not
    /// published.
    pub cards: HashMap<(u32, String), Option<Vec<u8>>>,
    /// Traffic per (source, btl, module).
    pub stats: HashMap<(u32, usize, u32), ModStats>,
    /// (source, destination, sequence) of MATCH and RNDV in arrival order.
    pub arrivals: Vec<(u32, u32, u64)>,
    /// Log lines: (rank, level, text).
    pub logs: Vec<(u32, i32, String)>,
    /// Fragments delivered per step before completions and progress.
    pub burst: usize,
    /// `Queued` fragments not yet completed, per (rank, cookie).
    queued: HashMap<(u32, u64), usize>,
    /// The most `Queued` fragments one request had at once.
    pub max_queued: usize,
}

impl Net {
    fn new() -> Net {
        Net {
            in_callback: false,
            channels: HashMap::new(),
            stamp: 0,
            done: VecDeque::new(),
            order: Order::Fifo,
            rng: 1,
            wouldblock_every: 0,
            sends: 0,
            queue_payloads: false,
            cut: HashSet::new(),
            reach: Box::new(|_, _, _, _| Ok(())),
            cards: HashMap::new(),
            stats: HashMap::new(),
            arrivals: Vec::new(),
            logs: Vec::new(),
            burst: 4,
            queued: HashMap::new(),
            max_queued: 0,
        }
    }

    fn next_random(&mut self) -> u64 {
        // xorshift64*
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Fragments in flight.
    pub(crate) fn in_flight(&self) -> usize {
        self.channels.values().map(VecDeque::len).sum()
    }

    fn pop(&mut self) -> Option<Frag> {
        let mut keys: Vec<Channel> = self
            .channels
            .iter()
            .filter(|(_, q)| !q.is_empty())
            .map(|(k, _)| *k)
            .collect();
        if keys.is_empty() {
            return None;
        }
        keys.sort_unstable();
        let key = match self.order {
            Order::Fifo => *keys
                .iter()
                .min_by_key(|k| self.channels[k].front().unwrap().stamp)
                .unwrap(),
            Order::HighModuleFirst => *keys
                .iter()
                .max_by_key(|k| {
                    (
                        k.3,
                        k.2,
                        std::cmp::Reverse(self.channels[k].front().unwrap().stamp),
                    )
                })
                .unwrap(),
            Order::Random(_) => {
                let i = (self.next_random() % keys.len() as u64) as usize;
                keys[i]
            }
        };
        self.channels.get_mut(&key).unwrap().pop_front()
    }

    /// Totals of one rank's traffic over one module.
    pub(crate) fn stat(&self, src: u32, btl: usize, module: u32) -> ModStats {
        self.stats
            .get(&(src, btl, module))
            .copied()
            .unwrap_or_default()
    }
}

/// The transport of one engine.
pub(crate) struct FakeTransport {
    rank: u32,
    net: Rc<RefCell<Net>>,
}

impl Transport for FakeTransport {
    fn modex_get(&mut self, rank: u32, name: &str) -> Result<Option<Vec<u8>>, String> {
        uncounted(|| self.modex_get_inner(rank, name))
    }

    fn add_peer(&mut self, btl: usize, module: u32, peer: u32, card: &[u8]) -> Result<u64, String> {
        uncounted(|| self.add_peer_inner(btl, module, peer, card))
    }

    fn send(
        &mut self,
        btl: usize,
        module: u32,
        endpoint: u64,
        header: &[u8],
        payload: *const u8,
        payload_len: usize,
        cookie: u64,
    ) -> SendOutcome {
        uncounted(|| self.send_inner(btl, module, endpoint, header, payload, payload_len, cookie))
    }

    fn get(
        &mut self,
        _btl: usize,
        _module: u32,
        _endpoint: u64,
        _local: *mut u8,
        _remote: u64,
        _len: usize,
        _cookie: u64,
    ) -> RdmaOutcome {
        // The fake modules offer no get (their flags are SEND only): the
        // engine must never ask.
        self.net.borrow_mut().logs.push((
            self.rank,
            verbosity::ERROR,
            "the engine called get on a fake module without GET".to_string(),
        ));
        RdmaOutcome::Failed
    }

    fn put(
        &mut self,
        _btl: usize,
        _module: u32,
        _endpoint: u64,
        _local: *const u8,
        _remote: u64,
        _len: usize,
        _cookie: u64,
    ) -> RdmaOutcome {
        self.net.borrow_mut().logs.push((
            self.rank,
            verbosity::ERROR,
            "the engine called put on a fake module without PUT".to_string(),
        ));
        RdmaOutcome::Failed
    }

    fn log(&self, level: i32, message: &str) {
        uncounted(|| {
            if let Ok(mut net) = self.net.try_borrow_mut() {
                net.logs.push((self.rank, level, message.to_string()));
            }
        })
    }
}

impl FakeTransport {
    fn modex_get_inner(&mut self, rank: u32, name: &str) -> Result<Option<Vec<u8>>, String> {
        let net = self.net.borrow();
        assert!(!net.in_callback, "modex_get called from a btl callback");
        match net.cards.get(&(rank, name.to_string())) {
            Some(card) => Ok(card.clone()),
            None => Ok(Some(vec![rank as u8, 0xC0])),
        }
    }

    fn add_peer_inner(
        &mut self,
        btl: usize,
        module: u32,
        peer: u32,
        card: &[u8],
    ) -> Result<u64, String> {
        let net = self.net.borrow();
        assert!(!net.in_callback, "add_peer called from a btl callback");
        if !card.is_empty() && card != [peer as u8, 0xC0] {
            return Err(format!("card {card:?} is not rank {peer}'s"));
        }
        (net.reach)(self.rank, btl, module, peer)?;
        Ok(u64::from(peer) | (u64::from(module) << 32) | ((btl as u64) << 48))
    }

    #[allow(clippy::too_many_arguments)]
    fn send_inner(
        &mut self,
        btl: usize,
        module: u32,
        endpoint: u64,
        header: &[u8],
        payload: *const u8,
        payload_len: usize,
        cookie: u64,
    ) -> SendOutcome {
        let mut net = self.net.borrow_mut();
        assert!(!net.in_callback, "send called from a btl callback");
        assert!(header.len() <= MAX_HEADER);
        assert!(!payload.is_null(), "null payload pointer");
        let dst = (endpoint & 0xffff_ffff) as u32;
        assert_eq!(
            (endpoint >> 32) & 0xffff,
            u64::from(module),
            "endpoint of another module"
        );
        assert_eq!((endpoint >> 48) as usize, btl, "endpoint of another btl");
        net.sends += 1;
        if net.wouldblock_every > 0 && net.sends >= net.wouldblock_every {
            net.sends = 0;
            return SendOutcome::WouldBlock;
        }
        if net.cut.contains(&(self.rank, dst)) {
            return SendOutcome::Failed;
        }
        let queued = net.queue_payloads && payload_len > 0;
        let body = if queued {
            Payload::Borrowed(payload, payload_len)
        } else {
            // SAFETY: the pml passes a readable payload.
            Payload::Copied(unsafe { std::slice::from_raw_parts(payload, payload_len) }.to_vec())
        };
        let stamp = net.stamp;
        net.stamp += 1;
        let s = net.stats.entry((self.rank, btl, module)).or_default();
        match header[0] {
            wire::MATCH => {
                s.matches += 1;
                s.match_bytes += payload_len;
            }
            wire::RNDV => {
                s.rndvs += 1;
                s.rndv_bytes += payload_len;
            }
            wire::ACK => s.acks += 1,
            wire::FRAG => {
                s.frags += 1;
                s.frag_bytes += payload_len;
            }
            t => panic!("unknown header type {t}"),
        }
        net.channels
            .entry((self.rank, dst, btl, module))
            .or_default()
            .push_back(Frag {
                stamp,
                src: self.rank,
                dst,
                btl,
                module,
                header: header.to_vec(),
                payload: body,
                cookie: queued.then_some(cookie),
            });
        if queued {
            let n = net.queued.entry((self.rank, cookie)).or_default();
            *n += 1;
            let n = *n;
            net.max_queued = net.max_queued.max(n);
            SendOutcome::Queued
        } else {
            SendOutcome::Done
        }
    }
}

/// A module description.
pub(crate) fn module(label: &str, exclusivity: u32, latency: u32, bandwidth: u32) -> BtlModuleInfo {
    BtlModuleInfo {
        label: label.into(),
        eager_limit: 4096,
        rndv_eager_limit: 1024,
        max_send_size: 8192,
        exclusivity,
        latency,
        bandwidth,
        flags: oxmpi_framework_btl::module::flags::SEND,
        max_rdma_size: 0,
        min_rdma_message: 0,
    }
}

/// A loopback module description (`flags::LOOPBACK`), as the self btl's.
pub(crate) fn loopback_module(label: &str) -> BtlModuleInfo {
    BtlModuleInfo {
        flags: oxmpi_framework_btl::module::flags::SEND
            | oxmpi_framework_btl::module::flags::LOOPBACK,
        eager_limit: 1024,
        ..module(label, 65536, 0, 100)
    }
}

/// A btl with these modules.
pub(crate) fn btl(name: &str, modules: Vec<BtlModuleInfo>) -> BtlDesc {
    BtlDesc {
        name: name.to_string(),
        modules,
        unusable: None,
    }
}

/// Several engines over one network.
pub(crate) struct World {
    pub net: Rc<RefCell<Net>>,
    pub engines: Vec<Engine<FakeTransport>>,
}

/// Hard cap on steps of one `run_until` (a hang fails the test).
const MAX_STEPS: usize = 2_000_000;

impl World {
    /// `size` ranks with the same btls.
    pub(crate) fn new(size: u32, btls: Vec<BtlDesc>, depth: u32) -> World {
        let net = Rc::new(RefCell::new(Net::new()));
        let engines = (0..size)
            .map(|rank| {
                Engine::new(
                    Config {
                        send_pipeline_depth: depth,
                        use_rdma: true,
                    },
                    rank,
                    size,
                    btls.clone(),
                    FakeTransport {
                        rank,
                        net: net.clone(),
                    },
                )
            })
            .collect();
        World { net, engines }
    }

    /// Changes the delivery order.
    pub(crate) fn order(&self, order: Order) {
        let mut net = self.net.borrow_mut();
        net.order = order;
        if let Order::Random(seed) = order {
            net.rng = seed | 1;
        }
    }

    /// Delivers one fragment (no completions, no progress); false if none
    /// is in flight.
    pub(crate) fn deliver_one(&mut self) -> bool {
        let Some(frag) = self.net.borrow_mut().pop() else {
            return false;
        };
        let (ptr, len) = match &frag.payload {
            Payload::Copied(v) => (v.as_ptr(), v.len()),
            Payload::Borrowed(p, l) => (*p, *l),
        };
        match wire::Header::decode(&frag.header, frag.src, len) {
            Ok(wire::Header::Match(info)) | Ok(wire::Header::Rndv { info, .. }) => {
                self.net
                    .borrow_mut()
                    .arrivals
                    .push((frag.src, frag.dst, info.sequence));
            }
            _ => {}
        }
        self.net.borrow_mut().in_callback = true;
        let e = &mut self.engines[frag.dst as usize];
        let dest = counted(|| e.on_header(frag.src, &frag.header, len));
        let at = if dest.is_null() {
            ptr
        } else {
            // SAFETY: the pml promised `len` writable bytes at `dest`.
            unsafe { std::ptr::copy_nonoverlapping(ptr, dest, len) };
            assert_eq!(frag.header[0], wire::FRAG, "direct placement of a non-FRAG");
            self.net
                .borrow_mut()
                .stats
                .entry((frag.src, frag.btl, frag.module))
                .or_default()
                .direct_bytes += len;
            dest as *const u8
        };
        // SAFETY: `at` holds `len` readable bytes (the network's copy, the
        // sender's payload it keeps valid until completion, or the
        // destination it just wrote).
        let payload = unsafe { std::slice::from_raw_parts(at, len) };
        counted(|| e.on_fragment(frag.btl, frag.module, frag.src, &frag.header, payload));
        if let Some(cookie) = frag.cookie {
            self.net
                .borrow_mut()
                .done
                .push_back((frag.src, frag.btl, cookie));
        }
        self.net.borrow_mut().in_callback = false;
        true
    }

    /// One round: up to `burst` deliveries, the completions, then every
    /// engine's progress. Returns whether anything happened.
    pub(crate) fn step(&mut self) -> bool {
        let mut busy = false;
        let burst = self.net.borrow().burst;
        for _ in 0..burst {
            if !self.deliver_one() {
                break;
            }
            busy = true;
        }
        loop {
            let next = self.net.borrow_mut().done.pop_front();
            let Some((rank, _btl, cookie)) = next else {
                break;
            };
            {
                let mut net = self.net.borrow_mut();
                let n = net
                    .queued
                    .get_mut(&(rank, cookie))
                    .expect("completion of an unknown send");
                *n -= 1;
                if *n == 0 {
                    net.queued.remove(&(rank, cookie));
                }
            }
            self.net.borrow_mut().in_callback = true;
            counted(|| self.engines[rank as usize].on_send_done(cookie));
            self.net.borrow_mut().in_callback = false;
            busy = true;
        }
        for e in &mut self.engines {
            if counted(|| e.progress()) > 0 {
                busy = true;
            }
        }
        busy
    }

    /// Steps until `cond` holds; panics (naming `what`) after
    /// [`MAX_STEPS`].
    pub(crate) fn run_until(&mut self, what: &str, mut cond: impl FnMut(&World) -> bool) {
        for _ in 0..MAX_STEPS {
            if cond(self) {
                return;
            }
            self.step();
        }
        panic!("gave up waiting for {what} after {MAX_STEPS} steps");
    }

    /// Steps until nothing is in flight and nothing happens.
    pub(crate) fn settle(&mut self) {
        for _ in 0..MAX_STEPS {
            let busy = self.step();
            if !busy && self.net.borrow().in_flight() == 0 && self.net.borrow().done.is_empty() {
                return;
            }
        }
        panic!("the network did not settle after {MAX_STEPS} steps");
    }

    /// Starts a send of `buf` (which must outlive the request).
    pub(crate) fn isend(
        &mut self,
        from: u32,
        to: u32,
        buf: &[u8],
        tag: i32,
        mode: SendMode,
    ) -> Result<u64, String> {
        let args = SendArgs {
            buf: buf.as_ptr(),
            len: buf.len(),
            dest: to,
            tag,
            context: 0,
            mode,
            done: std::ptr::null(),
        };
        // SAFETY: tests keep their buffers until completion.
        counted(|| unsafe { self.engines[from as usize].isend(&args) }).map_err(|(_, e)| e)
    }

    /// Posts a receive into `buf` (which must outlive the request).
    pub(crate) fn irecv(&mut self, at: u32, buf: &mut [u8], source: i32, tag: i32) -> u64 {
        self.irecv_into(at, buf.as_mut_ptr(), buf.len(), source, tag)
    }

    /// Posts a receive of `len` bytes at `buf`.
    pub(crate) fn irecv_into(
        &mut self,
        at: u32,
        buf: *mut u8,
        len: usize,
        source: i32,
        tag: i32,
    ) -> u64 {
        let args = recv_args(buf, len, source, tag);
        // SAFETY: tests keep their buffers until completion.
        counted(|| unsafe { self.engines[at as usize].irecv(&args) }).expect("irecv")
    }

    /// Posts a receive into `buf` that publishes its completion in `slot`
    /// (as the MPI layer's receives do); both must outlive the request.
    pub(crate) fn irecv_slotted(
        &mut self,
        at: u32,
        buf: &mut [u8],
        source: i32,
        tag: i32,
        slot: &Completion,
    ) -> u64 {
        let args = RecvArgs {
            done: slot,
            ..recv_args(buf.as_mut_ptr(), buf.len(), source, tag)
        };
        // SAFETY: tests keep their buffers and slots until completion.
        counted(|| unsafe { self.engines[at as usize].irecv(&args) }).expect("irecv")
    }

    /// Posts a receive of `buf`, or completes it at once from an arrived
    /// message (`Pml::irecv_or_complete`): handle 0 and its status then.
    pub(crate) fn irecv_or_complete(
        &mut self,
        at: u32,
        buf: &mut [u8],
        source: i32,
        tag: i32,
    ) -> (u64, RequestStatus) {
        let args = recv_args(buf.as_mut_ptr(), buf.len(), source, tag);
        let mut status = RequestStatus::default();
        // SAFETY: tests keep their buffers until completion.
        let h =
            counted(|| unsafe { self.engines[at as usize].irecv_or_complete(&args, &mut status) })
                .expect("irecv_or_complete");
        (h, status)
    }

    /// The status of a request, once complete (handle 0: a send that
    /// completed in `isend`, reported with an empty status).
    pub(crate) fn test(&self, at: u32, h: u64) -> Option<RequestStatus> {
        if h == 0 {
            return Some(RequestStatus::default());
        }
        counted(|| self.engines[at as usize].test(h))
    }

    /// Frees a request.
    pub(crate) fn free(&mut self, at: u32, h: u64) {
        counted(|| self.engines[at as usize].free(h))
    }

    /// Whether the request is complete.
    pub(crate) fn done(&self, at: u32, h: u64) -> bool {
        self.test(at, h).is_some()
    }

    /// Waits for a request and returns its status.
    pub(crate) fn wait(&mut self, at: u32, h: u64) -> RequestStatus {
        self.run_until("a request", |w| w.done(at, h));
        self.test(at, h).unwrap()
    }
}

/// The arguments of a receive on context 0.
fn recv_args(buf: *mut u8, len: usize, source: i32, tag: i32) -> RecvArgs {
    RecvArgs {
        buf,
        len,
        source,
        tag,
        context: 0,
        done: std::ptr::null(),
    }
}

/// Deterministic test data: `len` bytes that depend on `seed` and position.
pub(crate) fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}
