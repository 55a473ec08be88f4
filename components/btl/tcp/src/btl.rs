//! [`TcpBtl`]: the whole component state as a plain value (the extern "C"
//! entry points drive one process-global instance; tests make several).

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, OwnedFd};
use std::rc::Rc;
use std::time::Instant;

use abi_stable::std_types::{RStr, RString};
use oxmpi_framework_btl::module::{
    flags, BtlModuleInfo, BtlReceiver, JobIdentity, SendOutcome, MAX_HEADER,
};
use oxmpi_netif::if_list::{IfSelection, Level, Verdict};
use oxmpi_netif::interfaces::Interface;
use oxmpi_netif::matching::pair_interfaces;
use oxmpi_plugin_api::{verbosity, ComponentContext, ParamEnum as _};

use crate::card::{Card, CardInterface};
use crate::inbound::{Accepting, Ended, Inbound, BYE_HLEN};
use crate::outbound::{Endpoint, State};
use crate::params::{Config, Family};
use crate::refusals::RefusalLog;
use crate::sys;
use crate::wire::{self, FRAME_HEADER_LEN};

mod handshake;

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
    rx: BtlReceiver,
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
    /// Set when progress panicked outside a connection's reader (a bug):
    /// every peer was failed once, and nothing runs any more.
    broken: Option<String>,
}

/// The interfaces the lists select from `candidates`, after leaving out
/// a disabled family; logs the decisions and notices.
///
/// # Errors
///
/// The include/exclude error (both set, bad item), or NothingUsable.
pub fn select_interfaces(
    cfg: &Config,
    candidates: &[Interface],
    log: Option<&Logger>,
) -> Result<Vec<Interface>, InitError> {
    let selection = IfSelection::parse(crate::params::IF_PARAMS, &cfg.if_include, &cfg.if_exclude)
        .map_err(|e| InitError::Failed(e.to_string()))?;
    let candidates: Vec<Interface> = candidates
        .iter()
        .filter(|i| match cfg.disable_family {
            Family::Ipv4 => !i.addr.is_ipv4(),
            Family::Ipv6 => !i.addr.is_ipv6(),
            Family::None => true,
        })
        .cloned()
        .collect();
    let chosen = selection.select(&candidates);
    if let Some(log) = log {
        for d in &chosen.decisions {
            log.log(DETAIL_LEVEL, || match &d.verdict {
                Verdict::Use(why) => format!("using {} ({why})", d.interface),
                Verdict::Skip(why) => format!("not using {} ({why})", d.interface),
            });
        }
        for n in &chosen.notices {
            let level = match n.level() {
                Level::Warn => verbosity::ERROR,
                Level::Info => DETAIL_LEVEL,
            };
            log.log(level, || n.to_string());
        }
    }
    let used: Vec<Interface> = chosen.used().cloned().collect();
    if used.is_empty() {
        let why = chosen
            .notices
            .iter()
            .find(|n| matches!(n, oxmpi_netif::if_list::Notice::NothingUsable { .. }))
            .map_or_else(|| "no interface is usable".to_owned(), ToString::to_string);
        let why = if cfg.disable_family != Family::None {
            format!(
                "{why} (btl_tcp_disable_family leaves out IPv{})",
                cfg.disable_family.number()
            )
        } else {
            why
        };
        return Err(InitError::NothingUsable(why));
    }
    Ok(used)
}

/// Opens a listener on `iface`'s address, on the first free port of the
/// configured range.
fn listen_on(cfg: &Config, iface: &Interface) -> Result<(OwnedFd, u16), String> {
    let (min, range, which) = match iface.addr {
        IpAddr::V4(_) => (cfg.port_min_v4, cfg.port_range_v4, "v4"),
        IpAddr::V6(_) => (cfg.port_min_v6, cfg.port_range_v6, "v6"),
    };
    let new_socket = || -> Result<OwnedFd, String> {
        let fd = sys::tcp_socket(iface.addr)
            .map_err(|e| format!("cannot create a socket for {iface}: {e}"))?;
        // Explicitly off (the default): a listener never shares its port.
        sys::set_int(&fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, 0)
            .map_err(|e| format!("cannot clear SO_REUSEADDR for {iface}: {e}"))?;
        // Accepted sockets inherit the buffer sizes; setting them before
        // listen() lets the window scale follow.
        if cfg.sndbuf > 0 {
            sys::set_int(&fd, libc::SOL_SOCKET, libc::SO_SNDBUF, cfg.sndbuf).map_err(|e| {
                format!("cannot set SO_SNDBUF={} (btl_tcp_sndbuf): {e}", cfg.sndbuf)
            })?;
        }
        if cfg.rcvbuf > 0 {
            sys::set_int(&fd, libc::SOL_SOCKET, libc::SO_RCVBUF, cfg.rcvbuf).map_err(|e| {
                format!("cannot set SO_RCVBUF={} (btl_tcp_rcvbuf): {e}", cfg.rcvbuf)
            })?;
        }
        Ok(fd)
    };
    let ports: Vec<u16> = if min == 0 {
        vec![0]
    } else {
        let last = (u32::from(min) + range - 1).min(65535);
        (u32::from(min)..=last).map(|p| p as u16).collect()
    };
    let mut fd = new_socket()?;
    let mut last_err = None;
    let mut denied = 0usize;
    for &port in &ports {
        let addr = sys::RawAddr::new(SocketAddr::new(iface.addr, port), iface.index);
        match sys::bind(&fd, &addr) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EADDRINUSE) => {
                last_err = Some(e);
                continue;
            }
            Err(e) if e.raw_os_error() == Some(libc::EACCES) => {
                denied += 1;
                last_err = Some(e);
                continue;
            }
            Err(e) => return Err(format!("cannot bind to {}: {e}", show(iface.addr, port))),
        }
        match sys::listen(&fd, libc::SOMAXCONN) {
            Ok(()) => {
                let bound = sys::local_addr(&fd).map_err(|e| {
                    format!("cannot read the address of the listener on {iface}: {e}")
                })?;
                return Ok((fd, bound.port()));
            }
            Err(e) if e.raw_os_error() == Some(libc::EADDRINUSE) => {
                last_err = Some(e);
                fd = new_socket()?;
            }
            Err(e) => return Err(format!("cannot listen on {}: {e}", show(iface.addr, port))),
        }
    }
    let (first, last) = (ports[0], ports[ports.len() - 1]);
    let mut msg = format!(
        "no port to listen on for {iface}: every port from {first} to {last} is in use \
         (btl_tcp_port_min_{which}={min}, btl_tcp_port_range_{which}={range}); widen the range \
         or set btl_tcp_port_min_{which}=0 to let the system choose"
    );
    if denied > 0 {
        let _ = write!(
            msg,
            " ({denied} of them are privileged ports this process may not use)"
        );
    }
    if let Some(e) = last_err {
        let _ = write!(msg, "; last error: {e}");
    }
    Err(msg)
}

/// `addr:port`, with brackets for IPv6.
pub fn show(addr: IpAddr, port: u16) -> String {
    SocketAddr::new(addr, port).to_string()
}

fn show_opt(addr: Option<SocketAddr>) -> String {
    addr.map_or_else(|| "an unknown address".to_owned(), |a| a.to_string())
}

impl TcpBtl {
    /// Sets up the component: selects interfaces among `candidates` (as
    /// discovered on this host), opens one listener per selected address,
    /// describes one module per (interface, link), builds the contact
    /// card.
    ///
    /// # Errors
    ///
    /// [`InitError::NothingUsable`] when no interface is selected,
    /// [`InitError::Failed`] for a bad setting or a listener that cannot
    /// be opened.
    pub fn new(
        cfg: Config,
        me: JobIdentity,
        rx: BtlReceiver,
        ctx: ComponentContext,
        candidates: &[Interface],
    ) -> Result<TcpBtl, InitError> {
        let log = Logger::new(ctx);
        cfg.check().map_err(InitError::Failed)?;
        if me.size == 0 || me.rank >= me.size {
            return Err(InitError::Failed(format!(
                "this process's rank {} is not below the job size {}",
                me.rank, me.size
            )));
        }
        let used = select_interfaces(&cfg, candidates, Some(&log))?;
        if cfg.btl.flags & !flags::SEND != 0 {
            log.log(verbosity::ERROR, || {
                format!(
                    "btl_tcp_flags={:#x} asks for capabilities tcp does not have; it supports \
                     only SEND (0x1), so the other bits are ignored",
                    cfg.btl.flags
                )
            });
        }
        let mut locals = Vec::with_capacity(used.len());
        for mut iface in used {
            if cfg.btl.bandwidth > 0 {
                iface.bandwidth_mbps = cfg.btl.bandwidth;
            }
            let (listener, port) = listen_on(&cfg, &iface).map_err(InitError::Failed)?;
            log.log(LISTEN_LEVEL, || {
                format!(
                    "listening on {} (tcp {})",
                    show(iface.addr, port),
                    iface.name
                )
            });
            locals.push(Local {
                iface,
                listener,
                port,
            });
        }
        let mut modules = Vec::with_capacity(locals.len() * cfg.links as usize);
        for local in &locals {
            for link in 0..cfg.links {
                let (bandwidth, latency) = if link == 0 {
                    (local.iface.bandwidth_mbps, cfg.btl.latency)
                } else {
                    (
                        (local.iface.bandwidth_mbps / 2).max(1),
                        cfg.btl.latency.saturating_mul(2),
                    )
                };
                modules.push(BtlModuleInfo {
                    label: RString::from(format!("tcp {} link {link}", local.iface.name)),
                    eager_limit: cfg.btl.eager_limit,
                    rndv_eager_limit: cfg.btl.rndv_eager_limit,
                    max_send_size: cfg.btl.max_send_size,
                    exclusivity: cfg.btl.exclusivity,
                    latency,
                    bandwidth,
                    flags: flags::SEND,
                });
            }
        }
        let card = Card {
            links: cfg.links as u8,
            interfaces: locals
                .iter()
                .map(|l| CardInterface {
                    iface: l.iface.clone(),
                    port: l.port,
                })
                .collect(),
        }
        .encode();
        let epoll = match sys::Epoll::new() {
            Ok(e) => Some(e),
            Err(e) => {
                log.log(verbosity::ERROR, || {
                    format!(
                        "epoll_create1() failed ({e}); progress will poll every incoming \
                         connection in turn"
                    )
                });
                None
            }
        };
        let listen_poll = sys::Epoll::new().ok().filter(|ep| {
            locals
                .iter()
                .enumerate()
                .all(|(i, l)| ep.add(l.listener.as_raw_fd(), i as u64).is_ok())
        });
        Ok(TcpBtl {
            cfg,
            me,
            rx,
            log,
            locals,
            modules,
            card,
            endpoints: Vec::new(),
            endpoint_of: HashMap::new(),
            active: Vec::new(),
            inbound: Vec::new(),
            free_slots: Vec::new(),
            live_inbound: 0,
            epoll,
            ready: vec![libc::epoll_event { events: 0, u64: 0 }; EPOLL_BATCH],
            listen_poll,
            accepted_at: HashMap::new(),
            accepting: Vec::new(),
            failures: Vec::new(),
            reported: HashSet::new(),
            refusals: RefusalLog::default(),
            broken: None,
            tick: 0,
        })
    }

    /// The modules, in index order.
    pub fn modules(&self) -> &[BtlModuleInfo] {
        &self.modules
    }

    /// The contact card to publish.
    pub fn contact_card(&self) -> &[u8] {
        &self.card
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

    /// Resolves `peer` for `module` from its contact card: the endpoint
    /// handle, or why the module cannot reach it (one sentence).
    ///
    /// # Errors
    ///
    /// The reason, as a sentence.
    pub fn add_peer(&mut self, module: u32, peer: u32, card: &[u8]) -> Result<u64, String> {
        if let Some(why) = &self.broken {
            return Err(why.clone());
        }
        let n_modules = self.modules.len();
        if module as usize >= n_modules {
            return Err(format!(
                "there is no tcp module {module} (this process has {n_modules})"
            ));
        }
        if peer == self.me.rank {
            return Err("tcp does not connect a process to itself (the self btl does)".into());
        }
        if peer >= self.me.size {
            return Err(format!(
                "rank {peer} is not in this job (it has {} ranks)",
                self.me.size
            ));
        }
        if let Some(&ep) = self.endpoint_of.get(&(module, peer)) {
            return Ok(u64::from(ep));
        }
        if card.is_empty() {
            return Err(format!(
                "rank {peer} published no tcp contact card (its tcp component is not in use)"
            ));
        }
        let card = Card::decode(card)
            .map_err(|e| format!("rank {peer}'s tcp contact card cannot be used: {e}"))?;
        let links = self.cfg.links;
        let (iface_idx, link) = ((module / links) as usize, module % links);
        let label = self.label(module).to_owned();
        if link >= u32::from(card.links) {
            return Err(format!(
                "{label} is link {link}, but rank {peer} runs only {} tcp link(s) per interface \
                 (btl_tcp_links differs between the ranks)",
                card.links
            ));
        }
        let local: Vec<Interface> = self.locals.iter().map(|l| l.iface.clone()).collect();
        let remote: Vec<Interface> = card.interfaces.iter().map(|c| c.iface.clone()).collect();
        let pairs = pair_interfaces(&local, &remote);
        let list = |ifs: &[Interface]| {
            ifs.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let Some(pair) = pairs.iter().find(|c| c.local == iface_idx) else {
            if pairs.is_empty() {
                return Err(format!(
                    "no tcp interface of this process reaches rank {peer}'s interfaces ({}); \
                     this process has {} (loopback pairs only with loopback, IPv4 only with \
                     IPv4, IPv6 link-local only with link-local: reference 001 §11)",
                    list(&remote),
                    list(&local)
                ));
            }
            let used: Vec<String> = pairs
                .iter()
                .map(|c| format!("{} to {}", local[c.local], remote[c.remote]))
                .collect();
            return Err(format!(
                "{label} ({}) is not paired with any interface of rank {peer}: the best pairing \
                 of the interfaces, one connection per interface (reference 001 §11), is {}",
                local[iface_idx],
                used.join(", ")
            ));
        };
        let target = &card.interfaces[pair.remote];
        let local_iface = &self.locals[iface_idx].iface;
        let ep = Endpoint::new(
            module,
            peer,
            link as u16,
            pair.remote as u16,
            SocketAddr::new(target.iface.addr, target.port),
            local_iface.addr,
            local_iface.index,
        );
        let idx = self.endpoints.len() as u32;
        self.endpoints.push(ep);
        self.endpoint_of.insert((module, peer), idx);
        self.log.log(DETAIL_LEVEL, || {
            format!(
                "{label} reaches rank {peer} at {} ({}, {})",
                show(target.iface.addr, target.port),
                target.iface.name,
                pair.quality
            )
        });
        Ok(u64::from(idx))
    }

    /// Sends one fragment (see the btl module contract).
    ///
    /// # Safety
    ///
    /// `header` must be readable for `header_len` bytes and `payload` for
    /// `payload_len` bytes, and the payload must stay valid and unchanged
    /// until this returns `Done` or `on_send_done(cookie)` is called.
    #[inline]
    #[allow(clippy::too_many_arguments)] // the entry point's arguments
    pub unsafe fn send(
        &mut self,
        module: u32,
        endpoint: u64,
        header: *const u8,
        header_len: usize,
        payload: *const u8,
        payload_len: usize,
        cookie: u64,
    ) -> SendOutcome {
        if self.broken.is_some() {
            return SendOutcome::Failed;
        }
        let valid = (endpoint as usize) < self.endpoints.len()
            && self.endpoints[endpoint as usize].module == module
            && header_len <= MAX_HEADER
            && (header_len == 0 || !header.is_null())
            && (payload_len == 0 || !payload.is_null());
        if !valid {
            self.log.log(verbosity::ERROR, || {
                format!(
                    "send refused: module {module}, endpoint {endpoint}, header of {header_len} \
                     bytes (at most {MAX_HEADER}) is not a valid fragment for tcp"
                )
            });
            return SendOutcome::Failed;
        }
        let header: &[u8] = if header_len == 0 {
            &[]
        } else {
            std::slice::from_raw_parts(header, header_len)
        };
        let idx = endpoint as usize;
        if self.endpoints[idx].state == State::Idle {
            // First send: choose the socket this endpoint sends on forever.
            if let Err(why) = self.open(idx) {
                self.fail_endpoint(idx, why);
                return SendOutcome::Failed;
            }
        }
        let ep = &mut self.endpoints[idx];
        if ep.state == State::Up && ep.queue.is_empty() {
            // SAFETY: the caller's promise about header and payload.
            return match unsafe { ep.try_send_now(header, payload, payload_len, cookie) } {
                Ok(outcome) => {
                    if !ep.queue.is_empty() {
                        self.activate(idx);
                    }
                    outcome
                }
                Err(e) => {
                    self.fail_endpoint(idx, format!("writing to it failed: {e}"));
                    SendOutcome::Failed
                }
            };
        }
        match ep.state {
            State::Failed => return SendOutcome::Failed,
            State::Finished => {
                self.fail_endpoint(
                    idx,
                    "it has already finalized its tcp component and takes no more data".into(),
                );
                return SendOutcome::Failed;
            }
            _ => {}
        }
        let outcome = self.endpoints[idx].queue_new(header, payload, payload_len, cookie);
        self.activate(idx);
        outcome
    }

    fn activate(&mut self, idx: usize) {
        let ep = &mut self.endpoints[idx];
        if !ep.active {
            ep.active = true;
            self.active.push(idx as u32);
        }
    }

    /// Gives endpoint `idx` (idle: nothing sent yet) the socket it sends
    /// on from now on: the connection its peer made to this module, when
    /// one is established and joins the same pair of addresses (then one
    /// socket carries both directions); otherwise a connection of its own
    /// (then, if the peer connects too, each side sends on the socket it
    /// made and reads both).
    fn open(&mut self, idx: usize) -> Result<(), String> {
        let ep = &self.endpoints[idx];
        let slot = self
            .accepted_at
            .get(&(ep.module, ep.peer))
            .copied()
            .flatten();
        let conn = slot
            .and_then(|s| self.inbound.get(s))
            .and_then(Option::as_ref);
        if let Some(conn) = conn {
            if conn.remote.map(|r| r.ip()) == Some(ep.remote.ip()) {
                let (fd, from) = (Rc::clone(conn.fd()), conn.remote);
                let nodelay = !self.cfg.use_nagle;
                let ep = &mut self.endpoints[idx];
                ep.adopt(fd, nodelay)?;
                let (peer, module) = (ep.peer, ep.module);
                self.log.log(CONNECT_LEVEL, || {
                    format!(
                        "sending to rank {peer} on the connection it made from {} ({})",
                        show_opt(from),
                        self.label(module)
                    )
                });
                return Ok(());
            }
        }
        self.connect(idx)
    }

    /// Starts the connection of endpoint `idx` (first send to it).
    fn connect(&mut self, idx: usize) -> Result<(), String> {
        let (nodelay, sndbuf, rcvbuf) = (!self.cfg.use_nagle, self.cfg.sndbuf, self.cfg.rcvbuf);
        let ep = &mut self.endpoints[idx];
        let (addr, port, peer) = (ep.remote.ip(), ep.remote.port(), ep.peer);
        let label = self
            .modules
            .get(ep.module as usize)
            .map_or("", |m| m.label.as_str());
        self.log.log(CONNECT_LEVEL, || {
            format!(
                "attempting to connect() to address {addr} on port {port} (rank {peer}, {label}, \
                 from {})",
                ep.local
            )
        });
        let result = ep.start_connect(nodelay, sndbuf, rcvbuf);
        match &result {
            Err(why) => self.log.log(CONNECT_LEVEL, || {
                format!("connect() to address {addr} on port {port} (rank {peer}) failed: {why}")
            }),
            Ok(()) if ep.state == State::SendHello => self.log.log(CONNECT_LEVEL, || {
                format!("connect() to address {addr} on port {port} (rank {peer}) succeeded")
            }),
            Ok(()) => {}
        }
        result
    }

    /// Marks endpoint `idx` failed, drops its connection and queue, and
    /// notes the failure for the next report.
    fn fail_endpoint(&mut self, idx: usize, why: String) {
        let ep = &mut self.endpoints[idx];
        ep.close(State::Failed);
        let (module, peer, remote) = (ep.module, ep.peer, ep.remote);
        let label = self.label(module).to_owned();
        let reason = format!("rank {peer} via {label} (to {remote}): {why}");
        self.log
            .log(verbosity::COMPONENT, || format!("lost {reason}"));
        self.failures.push((module, peer, reason));
    }

    /// Stops the component after an internal error (a panic in progress,
    /// outside a connection's reader): logs it once, fails every peer it
    /// knows once with `why` (through `on_peer_failed`), closes every
    /// connection; from then on progress does nothing, sends fail and
    /// peers cannot be added.
    pub fn stop_after_internal_error(&mut self, why: &str) {
        if self.broken.is_some() {
            return;
        }
        let reason =
            format!("the tcp btl stopped after an internal error (please report it): {why}");
        self.log.log(verbosity::ERROR, || {
            format!("{reason}; every peer it was connected to is reported as failed")
        });
        let mut peers: Vec<(u32, u32)> = self.endpoint_of.keys().copied().collect();
        peers.extend(self.accepted_at.keys().copied());
        peers.extend(self.inbound.iter().flatten().map(|c| (c.module, c.peer)));
        peers.sort_unstable();
        peers.dedup();
        for (module, peer) in peers {
            self.failures.push((module, peer, reason.clone()));
        }
        for ep in &mut self.endpoints {
            ep.close(State::Failed);
        }
        self.inbound.clear();
        self.accepting.clear();
        self.live_inbound = 0;
        self.active.clear();
        self.report_failures();
        self.broken = Some(reason);
    }

    /// Calls `on_peer_failed` for each noted failure not yet reported.
    fn report_failures(&mut self) {
        for (module, peer, reason) in std::mem::take(&mut self.failures) {
            if self.reported.insert((module, peer)) {
                // SAFETY: the pml's callback.
                unsafe {
                    (self.rx.on_peer_failed)(self.rx.ctx, module, peer, RStr::from_str(&reason))
                };
            }
        }
    }

    /// Makes progress: reports failures, writes queued data, drives
    /// connection setup, receives and delivers fragments, accepts
    /// connections. Returns the number of fragments delivered plus sends
    /// finished.
    pub fn progress(&mut self) -> usize {
        if self.broken.is_some() {
            return 0;
        }
        let mut events = 0;
        if !self.active.is_empty() {
            events += self.progress_outbound();
        }
        if self.live_inbound > 0 {
            let rx = self.rx;
            match &self.epoll {
                Some(epoll) if self.live_inbound > DIRECT_POLL_MAX => {
                    let n = epoll.poll(&mut self.ready);
                    for k in 0..n {
                        let slot = self.ready[k].u64 as usize;
                        events += self.service_slot(slot, &rx);
                    }
                }
                _ => {
                    for slot in 0..self.inbound.len() {
                        events += self.service_slot(slot, &rx);
                    }
                }
            }
        }
        self.tick = self.tick.wrapping_add(1);
        let accept_tick = self.tick & (ACCEPT_EVERY - 1) == 0;
        if accept_tick {
            self.accept_new();
            if self.refusals.pending() {
                if let Some(line) = self.refusals.summary_due(Instant::now()) {
                    self.log.log(verbosity::ERROR, || line);
                }
            }
        }
        if !self.accepting.is_empty() {
            // Deadlines (a clock read) only on accept ticks.
            self.drive_handshakes(accept_tick);
        }
        if !self.failures.is_empty() {
            self.report_failures();
        }
        events
    }

    /// Receives on the incoming connection in `slot` (if any); returns the
    /// fragments delivered.
    #[inline]
    fn service_slot(&mut self, slot: usize, rx: &BtlReceiver) -> usize {
        let Some(Some(conn)) = self.inbound.get_mut(slot) else {
            return 0;
        };
        match conn.service(rx) {
            Ok(n) => n,
            Err((n, ended)) => {
                if let Some(conn) = self.inbound[slot].take() {
                    if let Some(epoll) = &self.epoll {
                        epoll.remove(conn.raw());
                    }
                    self.free_slots.push(slot);
                    self.live_inbound -= 1;
                    if conn.accepted {
                        if let Some(at) = self.accepted_at.get_mut(&(conn.module, conn.peer)) {
                            *at = None;
                        }
                    }
                    self.inbound_ended(conn, ended);
                }
                n
            }
        }
    }

    /// Adds the reader of an established connection; returns its slot.
    fn add_inbound(&mut self, conn: Inbound) -> usize {
        let slot = self.free_slots.pop().unwrap_or(self.inbound.len());
        if let Some(epoll) = &self.epoll {
            if let Err(e) = epoll.add(conn.raw(), slot as u64) {
                self.log.log(verbosity::ERROR, || {
                    format!(
                        "epoll_ctl() failed ({e}); progress will poll every incoming connection \
                         in turn"
                    )
                });
                self.epoll = None;
            }
        }
        if slot == self.inbound.len() {
            self.inbound.push(Some(conn));
        } else {
            self.inbound[slot] = Some(conn);
        }
        self.live_inbound += 1;
        slot
    }

    fn inbound_ended(&mut self, conn: Inbound, ended: Ended) {
        let (module, peer) = (conn.module, conn.peer);
        let label = self.label(module).to_owned();
        match ended {
            Ended::Clean => {
                self.log.log(DETAIL_LEVEL, || {
                    format!("rank {peer} finished its connection to {label}")
                });
                // It said goodbye: it finalized and takes no more data on
                // this module (whichever of its sockets we send on).
                if let Some(&ep) = self.endpoint_of.get(&(module, peer)) {
                    let ep = &mut self.endpoints[ep as usize];
                    if !matches!(ep.state, State::Failed | State::Finished) {
                        ep.close(State::Finished);
                    }
                }
            }
            Ended::Failed(why) => {
                let reason = format!(
                    "rank {peer} via {label} (from {}): {why}",
                    show_opt(conn.remote)
                );
                self.log
                    .log(verbosity::COMPONENT, || format!("lost {reason}"));
                self.failures.push((module, peer, reason));
                // The peer is lost for this module in both directions:
                // sends to it fail from now on (its queue is dropped).
                if let Some(&ep) = self.endpoint_of.get(&(module, peer)) {
                    let ep = &mut self.endpoints[ep as usize];
                    if !matches!(ep.state, State::Failed | State::Finished) {
                        ep.close(State::Failed);
                    }
                }
            }
        }
        // An accepted connection's key stays in accepted_at: a second
        // connection claiming the same rank and module is refused.
    }

    fn progress_outbound(&mut self) -> usize {
        let mut events = 0;
        let rx = self.rx;
        let mut k = 0;
        while k < self.active.len() {
            let idx = self.active[k] as usize;
            let keep = match self.endpoints[idx].state {
                State::Connecting | State::SendHello | State::AwaitAck => {
                    self.drive_connect(idx);
                    let st = self.endpoints[idx].state;
                    if st == State::Up {
                        // Fall through to writing at once.
                        self.flush_endpoint(idx, &rx, &mut events)
                    } else {
                        !matches!(st, State::Failed | State::Finished)
                    }
                }
                State::Up => self.flush_endpoint(idx, &rx, &mut events),
                State::Idle | State::Failed | State::Finished => false,
            };
            if keep {
                k += 1;
            } else {
                self.endpoints[idx].active = false;
                self.active.swap_remove(k);
            }
        }
        events
    }

    /// Writes endpoint `idx`'s queue; returns whether it stays active.
    fn flush_endpoint(&mut self, idx: usize, rx: &BtlReceiver, events: &mut usize) -> bool {
        match self.endpoints[idx].flush(rx) {
            Ok(n) => {
                *events += n;
                !self.endpoints[idx].queue.is_empty()
            }
            Err(e) => {
                self.fail_endpoint(idx, format!("writing to it failed: {e}"));
                false
            }
        }
    }

    /// Finalizes: says goodbye once on every established connection (so
    /// the peer sees a clean end, not a failure), except on an endpoint's
    /// sending socket while fragments are still queued on it (a goodbye
    /// would land inside a frame), then closes everything. Queued
    /// fragments are dropped without `on_send_done`.
    pub fn finalize(mut self) {
        if let Some(line) = self.refusals.flush(Instant::now()) {
            self.log.log(verbosity::ERROR, || line);
        }
        let mut bye = [0u8; FRAME_HEADER_LEN];
        bye[0..2].copy_from_slice(&wire::FRAME_MARKER.to_le_bytes());
        bye[2..4].copy_from_slice(&BYE_HLEN.to_le_bytes());
        let busy: HashSet<std::os::fd::RawFd> = self
            .endpoints
            .iter()
            .filter(|e| e.fd.is_some() && !e.queue.is_empty())
            .map(|e| e.raw)
            .collect();
        let mut said = HashSet::new();
        let up = self
            .endpoints
            .iter()
            .filter(|e| e.state == State::Up)
            .map(|e| e.raw);
        for raw in self.inbound.iter().flatten().map(Inbound::raw).chain(up) {
            if !busy.contains(&raw) && said.insert(raw) {
                let _ = sys::send(raw, &bye);
            }
        }
        drop(self);
    }

    /// The socket of an endpoint's connection, once it has one (tests).
    #[cfg(test)]
    pub(crate) fn endpoint_fd(&self, endpoint: u64) -> Option<std::os::fd::RawFd> {
        self.endpoints
            .get(endpoint as usize)
            .and_then(|e| e.fd.as_ref())
            .map(|fd| fd.as_raw_fd())
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
