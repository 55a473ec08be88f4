//! Setting up: choosing the interfaces the lists select, opening one
//! listener per selected address, describing one module per (interface,
//! link), and building the contact card ([`TcpBtl::new`]).

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, OwnedFd};

use oxmpi_framework_btl::module::{flags, BtlModuleInfo, JobIdentity};
use oxmpi_netif::if_list::{IfSelection, Level, Verdict};
use oxmpi_netif::interfaces::Interface;
use oxmpi_plugin_api::{verbosity, ComponentContext, ParamEnum as _};

use super::{show, InitError, Local, Logger, TcpBtl, DETAIL_LEVEL, EPOLL_BATCH, LISTEN_LEVEL};
use crate::card::{Card, CardInterface};
use crate::params::{Config, Family};
use crate::refusals::RefusalLog;
use crate::sys;

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
                    label: format!("tcp {} link {link}", local.iface.name).into(),
                    eager_limit: cfg.btl.eager_limit,
                    rndv_eager_limit: cfg.btl.rndv_eager_limit,
                    max_send_size: cfg.btl.max_send_size,
                    exclusivity: cfg.btl.exclusivity,
                    latency,
                    bandwidth,
                    flags: flags::SEND,
                    max_rdma_size: 0,
                    min_rdma_message: 0,
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
}
