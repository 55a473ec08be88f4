//! Endpoints: resolving a peer from its contact card (the pairing of
//! interfaces, one endpoint per (module, peer)), and choosing an
//! endpoint's sending socket at its first send (adopting the connection
//! the peer made, or connecting).

use std::net::SocketAddr;
use std::sync::Arc;

use oxmpi_netif::interfaces::Interface;
use oxmpi_netif::matching::pair_interfaces;

use super::{show, show_opt, TcpBtl, CONNECT_LEVEL, DETAIL_LEVEL};
use crate::card::Card;
use crate::outbound::{Endpoint, State};

impl TcpBtl {
    /// Resolves `peer` for `module` from its contact card: the endpoint
    /// handle, or why the module cannot reach it (one sentence). Pairs
    /// this process's interfaces with the peer's (reference 001 §11); an
    /// endpoint made once is answered again for the same (module, peer).
    ///
    /// # Errors
    ///
    /// The reason, as a sentence.
    pub(super) fn resolve_peer(
        &mut self,
        module: u32,
        peer: u32,
        card: &[u8],
    ) -> Result<u64, String> {
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

    /// Gives endpoint `idx` (idle: nothing sent yet) the socket it sends
    /// on from now on: the connection its peer made to this module, when
    /// one is established and joins the same pair of addresses (then one
    /// socket carries both directions); otherwise a connection of its own
    /// (then, if the peer connects too, each side sends on the socket it
    /// made and reads both).
    pub(super) fn open(&mut self, idx: usize) -> Result<(), String> {
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
                let (fd, from) = (Arc::clone(conn.fd()), conn.remote);
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
}
