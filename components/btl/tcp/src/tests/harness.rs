//! Test scaffolding: a recording pml receiver, the plugin API's fake
//! services (`oxmpi_plugin_api::testkit`: parameters and recorded log
//! lines), and "ranks" (TcpBtl instances in one process, driven through
//! the [`Btl`] trait with a [`Pml`] over the recording receiver) pumped in
//! turn until a condition holds or a hard deadline passes.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::rc::Rc;
use std::time::{Duration, Instant};

use abi_stable::std_types::RStr;
pub use oxmpi_framework_btl::adapter::Btl;
use oxmpi_framework_btl::adapter::{Payload, Pml, Sent};
use oxmpi_framework_btl::module::{BtlReceiver, JobIdentity, SendOutcome};
use oxmpi_netif::interfaces::Interface;
use oxmpi_plugin_api::testkit;
use oxmpi_plugin_api::ComponentContext;

use crate::{discover, Config, InitError, TcpBtl};

/// The callbacks of a receiver made by [`receiver`] (the recording pml).
pub fn pml_of(rx: &BtlReceiver) -> Pml<'_> {
    // SAFETY: every receiver of this harness is made by `receiver`, whose
    // callbacks take the `Recorder` its `ctx` points at, which outlives the
    // receiver; the harness drives the btls from one thread.
    unsafe { Pml::from_receiver(rx) }
}

/// Hard limit for any wait in the tests.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// One delivered fragment.
#[derive(Clone, Debug)]
pub struct Frag {
    pub module: u32,
    pub peer: u32,
    pub header: Vec<u8>,
    pub payload: Vec<u8>,
    /// Whether the payload pointer was the destination on_header gave.
    pub placed: bool,
}

/// A header announced by on_header and the destination given for it.
type Announced = (Vec<u8>, Option<Box<[u8]>>);

/// Records what the btl calls.
#[derive(Default)]
pub struct Recorder {
    /// Answer on_header with a destination buffer.
    pub direct: bool,
    pub frags: Vec<Frag>,
    pub done: Vec<u64>,
    pub failed: Vec<(u32, u32, String)>,
    /// Headers announced and not yet completed, per (module, peer).
    open: HashMap<(u32, u32), Announced>,
    /// Contract violations seen (checked by `Rank::check`).
    pub violations: Vec<String>,
}

unsafe extern "C" fn on_header(
    ctx: *mut c_void,
    module: u32,
    peer: u32,
    header: *const u8,
    header_len: usize,
    payload_len: usize,
) -> *mut u8 {
    let rec = &*(ctx as *const RefCell<Recorder>);
    let mut rec = rec.borrow_mut();
    let hdr = std::slice::from_raw_parts(header, header_len).to_vec();
    let mut dest = if rec.direct {
        Some(vec![0u8; payload_len].into_boxed_slice())
    } else {
        None
    };
    let ptr = dest
        .as_mut()
        .map_or(std::ptr::null_mut(), |d| d.as_mut_ptr());
    if rec.open.insert((module, peer), (hdr, dest)).is_some() {
        rec.violations.push(format!(
            "on_header twice without on_fragment ({module}, {peer})"
        ));
    }
    ptr
}

unsafe extern "C" fn on_fragment(
    ctx: *mut c_void,
    module: u32,
    peer: u32,
    header: *const u8,
    header_len: usize,
    payload: *const u8,
    payload_len: usize,
) {
    let rec = &*(ctx as *const RefCell<Recorder>);
    let mut rec = rec.borrow_mut();
    let hdr = std::slice::from_raw_parts(header, header_len).to_vec();
    let Some((announced, dest)) = rec.open.remove(&(module, peer)) else {
        rec.violations
            .push(format!("on_fragment without on_header ({module}, {peer})"));
        return;
    };
    if announced != hdr {
        rec.violations
            .push("on_fragment header differs from on_header's".to_string());
    }
    let (payload, placed) = match dest {
        Some(d) => {
            if payload_len > 0 && payload != d.as_ptr() {
                rec.violations
                    .push("payload pointer is not the destination".to_string());
            }
            (d.into_vec(), true)
        }
        None => {
            let p = if payload_len == 0 {
                Vec::new()
            } else {
                std::slice::from_raw_parts(payload, payload_len).to_vec()
            };
            (p, false)
        }
    };
    if payload.len() != payload_len {
        rec.violations.push("payload length mismatch".to_string());
    }
    rec.frags.push(Frag {
        module,
        peer,
        header: hdr,
        payload,
        placed,
    });
}

unsafe extern "C" fn on_send_done(ctx: *mut c_void, cookie: u64) {
    let rec = &*(ctx as *const RefCell<Recorder>);
    rec.borrow_mut().done.push(cookie);
}

unsafe extern "C" fn on_peer_failed(ctx: *mut c_void, module: u32, peer: u32, reason: RStr<'_>) {
    let rec = &*(ctx as *const RefCell<Recorder>);
    rec.borrow_mut()
        .failed
        .push((module, peer, reason.as_str().to_owned()));
}

/// A receiver whose callbacks record into `rec`.
pub fn receiver(rec: &Rc<RefCell<Recorder>>) -> BtlReceiver {
    BtlReceiver {
        ctx: Rc::as_ptr(rec) as *mut c_void,
        on_header,
        on_fragment,
        on_send_done,
        on_peer_failed,
    }
}

// ---- services ------------------------------------------------------------

/// A context over the fake services whose log lines are recorded under
/// the component name `component` (one per rank, so that each rank's
/// lines can be told apart).
pub fn context(component: &str) -> ComponentContext {
    testkit::context("btl", component)
}

/// The lines logged under `component`.
pub fn lines_of(component: &str) -> Vec<(i32, String)> {
    testkit::logged_by("btl", component)
}

// ---- ranks ---------------------------------------------------------------

/// The test job's identity for `rank` of `size`.
pub fn identity(rank: u32, size: u32) -> JobIdentity {
    JobIdentity {
        job_id: 0x5eed_0001,
        secret: [0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210],
        rank,
        size,
    }
}

/// This host's interfaces.
pub fn host_interfaces() -> Vec<Interface> {
    discover::local_interfaces().expect("getifaddrs works")
}

/// A configuration using loopback only.
pub fn lo_config() -> Config {
    Config {
        if_include: "lo".into(),
        ..Config::default()
    }
}

/// One "process": a TcpBtl and its recorder.
pub struct Rank {
    pub btl: Option<TcpBtl>,
    pub rec: Rc<RefCell<Recorder>>,
    /// The receiver recording into `rec` (what the pml registered).
    rx: BtlReceiver,
    /// The component name its log lines carry.
    pub tag: String,
}

impl Rank {
    /// Creates rank `rank` of `size` with `cfg`; `tag` names its log lines.
    pub fn new(tag: &str, cfg: Config, rank: u32, size: u32) -> Result<Rank, InitError> {
        Rank::with_identity(tag, cfg, identity(rank, size))
    }

    /// As [`Rank::new`] with an explicit identity.
    pub fn with_identity(tag: &str, cfg: Config, me: JobIdentity) -> Result<Rank, InitError> {
        let btl = TcpBtl::new(cfg, me, context(tag), &host_interfaces())?;
        Ok(Rank::around(tag, btl))
    }

    /// A rank around an already made `btl`.
    pub fn around(tag: &str, btl: TcpBtl) -> Rank {
        let rec = Rc::new(RefCell::new(Recorder::default()));
        let rx = receiver(&rec);
        Rank {
            btl: Some(btl),
            rec,
            rx,
            tag: tag.to_owned(),
        }
    }

    pub fn btl(&mut self) -> &mut TcpBtl {
        self.btl.as_mut().expect("rank is alive")
    }

    pub fn card(&self) -> Vec<u8> {
        self.btl.as_ref().expect("rank is alive").contact_card()
    }

    /// One progress call with the recording receiver as the pml.
    pub fn progress(&mut self) -> usize {
        let pml = pml_of(&self.rx);
        self.btl.as_mut().map_or(0, |btl| btl.progress(&pml))
    }

    /// What the adapter does after an internal error: the btl's
    /// `stop_after_internal_error` with the recording receiver.
    pub fn stop_after_internal_error(&mut self, message: &str) {
        let pml = pml_of(&self.rx);
        let btl = self.btl.as_mut().expect("rank is alive");
        btl.stop_after_internal_error(&pml, message);
    }

    /// Sends `header` + `payload` (payload must outlive the send) as the
    /// generated entry point does, answering as it does; a payload the
    /// btl gives back must be the one it was given.
    pub fn send(
        &mut self,
        module: u32,
        ep: u64,
        header: &[u8],
        payload: &[u8],
        cookie: u64,
    ) -> SendOutcome {
        // SAFETY: the tests keep payloads alive and unchanged until their
        // delivery (and on_send_done) is checked.
        let token = unsafe { Payload::from_raw(payload.as_ptr(), payload.len(), cookie) };
        let (outcome, back) = match self.btl().send(module, ep, header, token) {
            Sent::Done(p) => (SendOutcome::Done, Some(p)),
            Sent::Queued => (SendOutcome::Queued, None),
            Sent::WouldBlock(p) => (SendOutcome::WouldBlock, Some(p)),
            Sent::Failed(p) => (SendOutcome::Failed, Some(p)),
        };
        if let Some(p) = back {
            if p.as_ptr() != payload.as_ptr() || p.len() != payload.len() {
                self.rec
                    .borrow_mut()
                    .violations
                    .push(format!("send gave back another payload ({outcome:?})"));
            }
        }
        outcome
    }

    pub fn frags(&self) -> usize {
        self.rec.borrow().frags.len()
    }

    /// Panics on any recorded contract violation.
    pub fn check(&self) {
        let rec = self.rec.borrow();
        assert!(rec.violations.is_empty(), "{:?}", rec.violations);
    }

    pub fn lines(&self) -> Vec<(i32, String)> {
        lines_of(&self.tag)
    }
}

/// Progresses every rank in turn until `done` holds; panics after
/// [`DEADLINE`] with `what`.
pub fn pump(ranks: &mut [&mut Rank], what: &str, mut done: impl FnMut(&mut [&mut Rank]) -> bool) {
    let start = Instant::now();
    loop {
        for r in ranks.iter_mut() {
            r.progress();
        }
        if done(ranks) {
            return;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "timed out after {DEADLINE:?} waiting for {what}"
        );
    }
}

/// Runs `n` progress rounds on every rank.
pub fn spin(ranks: &mut [&mut Rank], n: usize) {
    for _ in 0..n {
        for r in ranks.iter_mut() {
            r.progress();
        }
    }
}

/// Two loopback ranks of a two-rank job, each with endpoints to the other
/// on module 0: returns (rank 0, rank 1, endpoint 0→1, endpoint 1→0).
pub fn pair(tag: &str, cfg: Config) -> (Rank, Rank, u64, u64) {
    let mut a = Rank::new(&format!("{tag}-0"), cfg.clone(), 0, 2).expect("rank 0 starts");
    let mut b = Rank::new(&format!("{tag}-1"), cfg, 1, 2).expect("rank 1 starts");
    let (ca, cb) = (a.card(), b.card());
    let ab = a.btl().add_peer(0, 1, &cb).expect("rank 0 reaches rank 1");
    let ba = b.btl().add_peer(0, 0, &ca).expect("rank 1 reaches rank 0");
    (a, b, ab, ba)
}

/// A deterministic byte pattern of `len` bytes, different per `seed`.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
