//! Test scaffolding: "ranks" (`TcpBtl` values in one process), each driven
//! through the [`Btl`] trait with a pml stand-in — the btl test kit's
//! contract-checking [`Recorder`] — and pumped in turn until a condition
//! holds or the kit's [`DEADLINE`] passes.
//!
//! The tests build their ranks here rather than with the kit's `Cluster`:
//! a rank is made from a [`Config`] (with settings that are no parameters,
//! and fake interface lists) and logs under its own component name so
//! that its lines can be told apart; tests run in parallel without the
//! kit's lock (they set no parameter); ranks are added while others run,
//! and die by being dropped without `finalize`.
//!
//! Every rank checks its recorder when it goes away: a test whose btl broke
//! the contract fails even if it forgot to call [`Rank::check`].

use std::marker::PhantomData;
use std::time::Instant;

pub use oxmpi_framework_btl::adapter::Btl;
use oxmpi_framework_btl::adapter::{Payload, Sent};
use oxmpi_framework_btl::module::{JobIdentity, SendOutcome};
pub use oxmpi_framework_btl::testkit::{
    pattern, services, Fragment, Placement, Recorder, DEADLINE,
};
use oxmpi_netif::interfaces::Interface;
use oxmpi_plugin_api::ComponentContext;

use crate::{discover, Config, InitError, TcpBtl};

// ---- services ------------------------------------------------------------

/// A context over the fake services whose log lines are recorded under
/// the component name `component` (one per rank, so that each rank's
/// lines can be told apart).
pub fn context(component: &str) -> ComponentContext {
    services::context("btl", component)
}

/// The lines logged under `component`.
pub fn lines_of(component: &str) -> Vec<(i32, String)> {
    services::logged_by("btl", component)
}

// ---- ranks ---------------------------------------------------------------

/// The test job's identity for `rank` of `size`: the kit's, with a job id
/// of its own, so that a connection between these ranks and the
/// conformance suite's (which run at the same time with the kit's
/// identity) is refused as another job's.
pub fn identity(rank: u32, size: u32) -> JobIdentity {
    JobIdentity {
        job_id: 0x5eed_0001,
        ..oxmpi_framework_btl::testkit::identity(rank, size)
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

/// A rank's recorder, checked for contract violations when the rank goes
/// away (unless the test is already failing).
struct Checked {
    rec: Recorder,
    tag: String,
}

impl Drop for Checked {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.rec.assert_clean(&format!("rank {}", self.tag));
        }
    }
}

/// One "process": a `TcpBtl` and the kit's recorder as its pml. Payloads
/// it sends are borrowed for `'p`: the btl may read a queued payload until
/// it finishes the send, or until it is finalized or dropped.
pub struct Rank<'p> {
    pub btl: Option<TcpBtl>,
    checked: Checked,
    /// Endpoints resolved through [`Rank::add_peer`]: module, endpoint,
    /// peer (to tell the recorder whom a queued send goes to).
    peers: Vec<(u32, u64, u32)>,
    _payloads: PhantomData<&'p [u8]>,
}

impl<'p> Rank<'p> {
    /// Creates rank `rank` of `size` with `cfg`; `tag` names its log lines.
    pub fn new(tag: &str, cfg: Config, rank: u32, size: u32) -> Result<Rank<'p>, InitError> {
        Rank::with_identity(tag, cfg, identity(rank, size))
    }

    /// As [`Rank::new`] with an explicit identity.
    pub fn with_identity(tag: &str, cfg: Config, me: JobIdentity) -> Result<Rank<'p>, InitError> {
        let btl = TcpBtl::new(cfg, me, context(tag), &host_interfaces())?;
        Ok(Rank::around(tag, btl))
    }

    /// A rank around an already made `btl`.
    pub fn around(tag: &str, btl: TcpBtl) -> Rank<'p> {
        Rank {
            btl: Some(btl),
            checked: Checked {
                rec: Recorder::new(),
                tag: tag.to_owned(),
            },
            peers: Vec::new(),
            _payloads: PhantomData,
        }
    }

    /// The name its log lines carry.
    pub fn tag(&self) -> &str {
        &self.checked.tag
    }

    /// The rank's pml stand-in.
    pub fn rec(&self) -> &Recorder {
        &self.checked.rec
    }

    pub fn btl(&mut self) -> &mut TcpBtl {
        self.btl.as_mut().expect("rank is alive")
    }

    pub fn card(&self) -> Vec<u8> {
        self.btl.as_ref().expect("rank is alive").contact_card()
    }

    /// The btl's `add_peer`; the endpoint is remembered for
    /// [`Rank::send`].
    pub fn add_peer(&mut self, module: u32, peer: u32, card: &[u8]) -> Result<u64, String> {
        let ep = self.btl().add_peer(module, peer, card)?;
        if !self.peers.contains(&(module, ep, peer)) {
            self.peers.push((module, ep, peer));
        }
        Ok(ep)
    }

    /// One progress call with the recorder as the pml.
    pub fn progress(&mut self) -> usize {
        let rec = &self.checked.rec;
        match self.btl.as_mut() {
            Some(btl) => rec.progress_with(|pml| btl.progress(pml)),
            None => 0,
        }
    }

    /// What the adapter does after an internal error (from a progress
    /// call): the btl's `stop_after_internal_error` with the recorder.
    pub fn stop_after_internal_error(&mut self, message: &str) {
        let rec = &self.checked.rec;
        let btl = self.btl.as_mut().expect("rank is alive");
        rec.progress_with(|pml| btl.stop_after_internal_error(pml, message));
    }

    /// Sends `header` + `payload` as the generated entry point does,
    /// answering as it does. A payload the btl gives back must be the one
    /// it was given; a `Queued` send is told to the recorder, which then
    /// expects one `on_send_done` with `cookie` (unique among the rank's
    /// queued sends in flight).
    pub fn send(
        &mut self,
        module: u32,
        ep: u64,
        header: &[u8],
        payload: &'p [u8],
        cookie: u64,
    ) -> SendOutcome {
        // SAFETY: the bytes are borrowed for `'p`, which outlives every
        // use of this rank's btl, the last one that may read a queued
        // payload.
        let token = unsafe { Payload::from_raw(payload.as_ptr(), payload.len(), cookie) };
        let (outcome, back) = match self.btl().send(module, ep, header, token) {
            Sent::Done(p) => (SendOutcome::Done, Some(p)),
            Sent::Queued => (SendOutcome::Queued, None),
            Sent::WouldBlock(p) => (SendOutcome::WouldBlock, Some(p)),
            Sent::Failed(p) => (SendOutcome::Failed, Some(p)),
        };
        if let Some(p) = back {
            assert!(
                p.as_ptr() == payload.as_ptr() && p.len() == payload.len(),
                "send gave back another payload ({outcome:?})"
            );
        }
        if outcome == SendOutcome::Queued {
            let peer = self
                .peers
                .iter()
                .find(|p| p.0 == module && p.1 == ep)
                .map_or(u32::MAX, |p| p.2);
            self.checked.rec.queued(cookie, module, peer);
        }
        outcome
    }

    /// Fragments delivered so far.
    pub fn frags(&self) -> usize {
        self.rec().counts().fragments
    }

    /// The delivered fragments, oldest first.
    pub fn fragments(&self) -> Vec<Fragment> {
        self.rec().fragments()
    }

    /// The `on_peer_failed` calls so far: module, peer, reason.
    pub fn failures(&self) -> Vec<(u32, u32, String)> {
        self.rec().peer_failures()
    }

    /// How many `on_peer_failed` calls arrived.
    pub fn failed(&self) -> usize {
        self.rec().counts().peer_failed
    }

    /// The cookies of the `on_send_done` calls so far, oldest first.
    pub fn done(&self) -> Vec<u64> {
        self.rec().send_dones()
    }

    /// Panics on any contract violation the recorder saw.
    pub fn check(&self) {
        self.rec().assert_clean(&format!("rank {}", self.tag()));
    }

    pub fn lines(&self) -> Vec<(i32, String)> {
        lines_of(self.tag())
    }
}

/// Progresses every rank in turn until `done` holds; panics after
/// [`DEADLINE`] with `what`.
pub fn pump<'p>(
    ranks: &mut [&mut Rank<'p>],
    what: &str,
    mut done: impl FnMut(&mut [&mut Rank<'p>]) -> bool,
) {
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
pub fn spin(ranks: &mut [&mut Rank<'_>], n: usize) {
    for _ in 0..n {
        for r in ranks.iter_mut() {
            r.progress();
        }
    }
}

/// Two loopback ranks of a two-rank job, each with endpoints to the other
/// on module 0: returns (rank 0, rank 1, endpoint 0→1, endpoint 1→0).
pub fn pair<'p>(tag: &str, cfg: Config) -> (Rank<'p>, Rank<'p>, u64, u64) {
    let mut a = Rank::new(&format!("{tag}-0"), cfg.clone(), 0, 2).expect("rank 0 starts");
    let mut b = Rank::new(&format!("{tag}-1"), cfg, 1, 2).expect("rank 1 starts");
    let (ca, cb) = (a.card(), b.card());
    let ab = a.add_peer(0, 1, &cb).expect("rank 0 reaches rank 1");
    let ba = b.add_peer(0, 0, &ca).expect("rank 1 reaches rank 0");
    (a, b, ab, ba)
}
