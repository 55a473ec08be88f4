//! [`TcpBtl`]: the whole component state as a plain value, and its
//! [`Btl`] implementation (the generated entry points drive one
//! process-global instance; tests make several).
//!
//! The state's code is split by concern:
//!
//! - this file: the state, its constants, the logger, and the [`Btl`]
//!   methods, each delegating to one of the files below;
//! - `setup`: interface selection, listeners, module descriptions and
//!   the contact card ([`TcpBtl::new`]);
//! - `peers`: endpoints (`add_peer`: pairing with a peer's card) and
//!   the choice of an endpoint's sending socket (adopting the peer's
//!   connection, or connecting);
//! - `send`: the send path and the writing of queued fragments;
//! - `progress`: progress (readers, failures and their reports), the
//!   stop after an internal error, and finalize's goodbyes;
//! - `handshake`: connection set-up on both sides.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::OwnedFd;

use oxmpi_framework_btl::adapter::{Btl, Payload, Pml, Sent, Started};
use oxmpi_framework_btl::module::{BtlModuleInfo, JobIdentity};
use oxmpi_netif::interfaces::Interface;
use oxmpi_plugin_api::{verbosity, ComponentContext, Params as _};

use crate::inbound::{Accepting, Inbound};
use crate::outbound::{Endpoint, State};
use crate::params::Config;
use crate::refusals::RefusalLog;
use crate::{discover, sys};

mod handshake;
mod peers;
mod progress;
mod send;
mod setup;

pub use setup::select_interfaces;

/// Listeners are polled for new connections once every this many
/// progress calls (and handshake deadlines checked). A power of two.
const ACCEPT_EVERY: u32 = 64;

/// Up to this many established connections, progress simply
/// tries a `recv` on each; beyond, it asks epoll which ones are readable
/// (one system call however many peers there are).
const DIRECT_POLL_MAX: usize = 4;

/// Most readiness events taken per progress call.
const EPOLL_BATCH: usize = 64;

/// Most connections accepted per listener per check.
const ACCEPT_BURST: usize = 16;

/// Most accepted connections that may be in their handshake at once; a
/// further one makes room by dropping the oldest that has not sent a
/// complete hello.
pub const MAX_HANDSHAKES: usize = 256;

/// Verbosity of the per-connect() lines (reference 001 §11): 30, between
/// [`verbosity::WARN`] and [`verbosity::INFO`].
pub const CONNECT_LEVEL: i32 = verbosity::WARN + 10;
/// Verbosity of the "listening on" lines (20).
pub const LISTEN_LEVEL: i32 = verbosity::WARN;
/// Verbosity of the interface decisions (40).
pub const DETAIL_LEVEL: i32 = verbosity::INFO;

/// Where log lines go: the core's services (`btl_base_verbose` filters).
#[derive(Clone, Copy)]
pub struct Logger {
    ctx: ComponentContext,
}

impl Logger {
    /// Logs through `ctx`.
    pub fn new(ctx: ComponentContext) -> Logger {
        Logger { ctx }
    }

    /// Whether a line at `level` would be shown.
    pub fn enabled(&self, level: i32) -> bool {
        level <= 0 || (self.ctx.services.verbosity())(self.ctx.framework) >= level
    }

    /// Logs the line `text` makes, if `level` is enabled.
    pub fn log(&self, level: i32, text: impl FnOnce() -> String) {
        if self.enabled(level) {
            self.ctx.log(level, &text());
        }
    }
}

/// Why [`TcpBtl::new`] produced no component.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InitError {
    /// Nothing is usable here (no interface passes the lists): zero
    /// modules, not an error.
    NothingUsable(String),
    /// A setting is wrong or a resource is missing: the component fails.
    Failed(String),
}

/// One selected local interface and its listener.
struct Local {
    iface: Interface,
    listener: OwnedFd,
    port: u16,
}

/// The tcp component's state.
pub struct TcpBtl {
    cfg: Config,
    me: JobIdentity,
    log: Logger,
    locals: Vec<Local>,
    modules: Vec<BtlModuleInfo>,
    card: Vec<u8>,
    endpoints: Vec<Endpoint>,
    endpoint_of: HashMap<(u32, u32), u32>,
    active: Vec<u32>,
    /// The readers of established connections (accepted ones and ones
    /// this process made), by slot (the epoll data).
    inbound: Vec<Option<Inbound>>,
    free_slots: Vec<usize>,
    live_inbound: usize,
    epoll: Option<sys::Epoll>,
    ready: Vec<libc::epoll_event>,
    /// Readability of the listeners (an `accept` that finds nothing costs
    /// a socket allocation in the kernel; asking epoll first is cheap).
    listen_poll: Option<sys::Epoll>,
    /// (module, peer) of every accepted connection, ever: a second one is
    /// refused. The reader's slot while it is established, so that the
    /// endpoint can send on it too.
    accepted_at: HashMap<(u32, u32), Option<usize>>,
    accepting: Vec<Accepting>,
    failures: Vec<(u32, u32, String)>,
    reported: HashSet<(u32, u32)>,
    tick: u32,
    /// Refused connections, logged with a rate limit.
    refusals: RefusalLog,
    /// Set by [`TcpBtl::stop`] (after an internal error): every peer was
    /// failed once, and nothing runs any more.
    broken: Option<String>,
}

impl Btl for TcpBtl {
    /// Reads the parameters, lists this host's interfaces and sets up
    /// ([`TcpBtl::new`]).
    fn init(context: &ComponentContext, identity: &JobIdentity) -> Result<Started<Self>, String> {
        let cfg = Config::read(context)?;
        let candidates = discover::interfaces_for_init()
            .map_err(|e| format!("cannot list the network interfaces: {e}"))?;
        match TcpBtl::new(cfg, *identity, *context, &candidates) {
            Ok(btl) => {
                let modules = btl.modules().to_vec();
                Ok(Started::Ready(btl, modules))
            }
            Err(InitError::NothingUsable(why)) => Ok(Started::NothingUsable(why)),
            Err(InitError::Failed(why)) => Err(why),
        }
    }

    fn contact_card(&self) -> Vec<u8> {
        self.card.clone()
    }

    fn add_peer(&mut self, module: u32, peer: u32, card: &[u8]) -> Result<u64, String> {
        self.resolve_peer(module, peer, card)
    }

    #[inline]
    fn send(&mut self, module: u32, endpoint: u64, header: &[u8], payload: Payload) -> Sent {
        self.send_fragment(module, endpoint, header, payload)
    }

    #[inline]
    fn progress(&mut self, pml: &Pml<'_>) -> usize {
        self.progress_all(pml)
    }

    fn finalize(self) {
        self.say_goodbye_and_close();
    }

    fn stop_after_internal_error(&mut self, pml: &Pml<'_>, message: &str) {
        self.stop(pml, message);
    }
}

impl TcpBtl {
    /// The modules, in index order.
    pub fn modules(&self) -> &[BtlModuleInfo] {
        &self.modules
    }

    /// The listening addresses, in interface order.
    pub fn listen_addrs(&self) -> Vec<SocketAddr> {
        self.locals
            .iter()
            .map(|l| SocketAddr::new(l.iface.addr, l.port))
            .collect()
    }

    fn label(&self, module: u32) -> &str {
        self.modules
            .get(module as usize)
            .map_or("tcp (unknown module)", |m| m.label.as_str())
    }

    /// The socket of an endpoint's connection, once it has one (tests).
    #[cfg(test)]
    pub(crate) fn endpoint_fd(&self, endpoint: u64) -> Option<std::os::fd::RawFd> {
        self.endpoints
            .get(endpoint as usize)
            .and_then(|e| e.fd.as_ref())
            .map(|fd| std::os::fd::AsRawFd::as_raw_fd(&**fd))
    }

    /// Number of sockets: (listeners, connections this process made,
    /// connections it accepted and established, accepted ones still in
    /// their handshake). Each socket counts once, whichever directions it
    /// carries. For tests and diagnostics.
    pub fn socket_counts(&self) -> (usize, usize, usize, usize) {
        let live = || self.inbound.iter().flatten();
        let setting_up = self
            .endpoints
            .iter()
            .filter(|e| {
                e.fd.is_some()
                    && matches!(
                        e.state,
                        State::Connecting | State::SendHello | State::AwaitAck
                    )
            })
            .count();
        (
            self.locals.len(),
            setting_up + live().filter(|c| !c.accepted).count(),
            live().filter(|c| c.accepted).count(),
            self.accepting.len(),
        )
    }
}

/// `addr:port`, with brackets for IPv6.
pub fn show(addr: IpAddr, port: u16) -> String {
    SocketAddr::new(addr, port).to_string()
}

fn show_opt(addr: Option<SocketAddr>) -> String {
    addr.map_or_else(|| "an unknown address".to_owned(), |a| a.to_string())
}
