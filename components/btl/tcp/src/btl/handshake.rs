//! Connection set-up: the connecting side's handshake (connect, hello,
//! acknowledgement) and the accepting side's (accepting connections,
//! checking hellos, writing acknowledgements, refusing strangers).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use super::{show, show_opt, TcpBtl, ACCEPT_BURST, CONNECT_LEVEL, MAX_HANDSHAKES};
use crate::inbound::{Accepting, HelloProgress, Inbound};
use crate::outbound::{would_block, State};
use crate::sys;
use crate::wire::{self, HELLO_LEN};
use oxmpi_plugin_api::verbosity;

impl TcpBtl {
    /// Moves endpoint `idx`'s connection setup forward.
    pub(super) fn drive_connect(&mut self, idx: usize) {
        let ep = &mut self.endpoints[idx];
        let (addr, port, peer) = (ep.remote.ip(), ep.remote.port(), ep.peer);
        if ep.state == State::Connecting {
            let Some(fd) = ep.fd.as_ref() else {
                return;
            };
            match sys::connect_result(fd) {
                Ok(None) => return,
                Ok(Some(Ok(()))) => {
                    self.log.log(CONNECT_LEVEL, || {
                        format!(
                            "connect() to address {addr} on port {port} (rank {peer}) succeeded"
                        )
                    });
                    ep.state = State::SendHello;
                    ep.hs_done = 0;
                }
                Ok(Some(Err(e))) | Err(e) => {
                    self.log.log(CONNECT_LEVEL, || {
                        format!(
                            "connect() to address {addr} on port {port} (rank {peer}) failed: {e}"
                        )
                    });
                    self.fail_endpoint(idx, format!("connect() failed: {e}"));
                    return;
                }
            }
        }
        let ep = &mut self.endpoints[idx];
        if ep.state == State::SendHello {
            let hello = wire::hello(&self.me, ep.link, ep.remote_iface);
            while ep.hs_done < HELLO_LEN {
                match sys::send(ep.raw, &hello[ep.hs_done..]) {
                    Ok(n) => ep.hs_done += n,
                    Err(e) if would_block(&e) => return,
                    Err(e) => {
                        self.fail_endpoint(idx, format!("sending the handshake failed: {e}"));
                        return;
                    }
                }
            }
            ep.state = State::AwaitAck;
            ep.hs_done = 0;
        }
        if ep.state == State::AwaitAck {
            while ep.hs_done < wire::ACK_LEN {
                // SAFETY: ack_buf has ACK_LEN - hs_done bytes left.
                let r = unsafe {
                    sys::recv(
                        ep.raw,
                        ep.ack_buf.as_mut_ptr().add(ep.hs_done),
                        wire::ACK_LEN - ep.hs_done,
                    )
                };
                match r {
                    Ok(0) => {
                        let why = format!(
                            "it closed the connection during the handshake (after {} of {} \
                             acknowledgement bytes); if it refused us, its log says why",
                            ep.hs_done,
                            wire::ACK_LEN
                        );
                        self.log.log(verbosity::ERROR, || {
                            format!(
                                "connection to rank {peer} at {} failed: {why}",
                                show(addr, port)
                            )
                        });
                        self.fail_endpoint(idx, why);
                        return;
                    }
                    Ok(n) => ep.hs_done += n,
                    Err(e) if would_block(&e) => return,
                    Err(e) => {
                        let why = format!("reading the handshake acknowledgement failed: {e}");
                        self.fail_endpoint(idx, why);
                        return;
                    }
                }
            }
            if let Err(why) = wire::check_ack(&ep.ack_buf, peer) {
                self.log.log(verbosity::ERROR, || {
                    format!(
                        "closed the connection to {} (expected rank {peer}): {why}",
                        show(addr, port)
                    )
                });
                self.fail_endpoint(idx, why);
                return;
            }
            ep.state = State::Up;
            let label = self
                .modules
                .get(ep.module as usize)
                .map_or("", |m| m.label.as_str());
            self.log.log(CONNECT_LEVEL, || {
                format!("connected to rank {peer} at {} ({label})", show(addr, port))
            });
            // The peer may send on this connection too: read it. The
            // acknowledgement was read exactly, so the reader starts at
            // the first frame.
            if let Some(fd) = ep.fd.as_ref().map(Arc::clone) {
                let conn = Inbound::new(fd, ep.module, peer, Some(ep.remote), false);
                self.add_inbound(conn);
            }
        }
    }

    /// Accepts waiting connections on the listeners that have some.
    pub(super) fn accept_new(&mut self) {
        let mut ready = [false; 64];
        let all = match &self.listen_poll {
            Some(poll) if self.locals.len() <= ready.len() => {
                let mut events = [libc::epoll_event { events: 0, u64: 0 }; 8];
                let n = poll.poll(&mut events);
                if n == 0 {
                    return;
                }
                for ev in &events[..n] {
                    let i = ev.u64 as usize;
                    if i < ready.len() {
                        ready[i] = true;
                    }
                }
                // More ready listeners than events: try them all.
                n == events.len()
            }
            _ => true,
        };
        let mut fresh = Vec::new();
        for (iface, local) in self.locals.iter().enumerate() {
            if !all && !ready[iface] {
                continue;
            }
            for _ in 0..ACCEPT_BURST {
                match sys::accept(&local.listener) {
                    Ok(Some((fd, remote))) => fresh.push((iface, fd, remote)),
                    Ok(None) => break,
                    Err(e) => {
                        self.log.log(verbosity::ERROR, || {
                            format!(
                                "accept() on {} (tcp {}) failed: {e}",
                                show(local.iface.addr, local.port),
                                local.iface.name
                            )
                        });
                        break;
                    }
                }
            }
        }
        if fresh.is_empty() {
            return;
        }
        let deadline = Instant::now() + self.cfg.handshake_timeout;
        for (iface, fd, remote) in fresh {
            if self.accepting.len() >= MAX_HANDSHAKES && !self.drop_oldest_handshake() {
                self.note_refusal(
                    remote,
                    iface,
                    &format!(
                        "{MAX_HANDSHAKES} connections are already in their handshake, all \
                         of them writing their acknowledgement"
                    ),
                );
                continue;
            }
            self.accepting.push(Accepting {
                fd,
                remote,
                iface,
                hello: [0; HELLO_LEN],
                got: 0,
                accepted: None,
                ack_done: 0,
                deadline,
            });
        }
    }

    /// Makes room among the connections in their handshake: drops the
    /// oldest that has not sent a complete hello (so strangers holding
    /// connections open cannot crowd out the job's own, which present
    /// their hello at once). Returns false when every one has.
    fn drop_oldest_handshake(&mut self) -> bool {
        let Some(oldest) = self
            .accepting
            .iter()
            .enumerate()
            .filter(|(_, a)| a.accepted.is_none())
            .min_by_key(|(_, a)| a.deadline)
            .map(|(i, _)| i)
        else {
            return false;
        };
        let a = self.accepting.swap_remove(oldest);
        let why = format!(
            "{MAX_HANDSHAKES} connections were in their handshake, and this was the oldest \
             without a complete one ({} of {HELLO_LEN} bytes); dropped to make room",
            a.got
        );
        self.note_refusal(a.remote, a.iface, &why);
        true
    }

    /// Logs, with a rate limit, that a connection from `remote` to local
    /// interface `iface` was refused for `why` (the caller closes it).
    fn note_refusal(&mut self, remote: Option<SocketAddr>, iface: usize, why: &str) {
        let local = &self.locals[iface];
        let line = || {
            format!(
                "refused a tcp connection from {} to {} (tcp {}): {why}; closed it without \
                 delivering anything",
                show_opt(remote),
                show(local.iface.addr, local.port),
                local.iface.name
            )
        };
        let ip = remote.map(|r| r.ip());
        if let Some(line) = self.refusals.refused(Instant::now(), ip, why, line) {
            self.log.log(verbosity::ERROR, || line);
        }
    }

    /// Reads hellos, checks them, writes acknowledgements; refuses (closes
    /// and logs) the connections that fail (and, when `check_deadlines`,
    /// those whose time is up).
    pub(super) fn drive_handshakes(&mut self, check_deadlines: bool) {
        let now = check_deadlines.then(Instant::now);
        let ack = wire::ack(self.me.rank);
        let mut accepted_keys: Vec<(u32, u32)> =
            self.accepting.iter().filter_map(|a| a.accepted).collect();
        let mut i = 0;
        while i < self.accepting.len() {
            let a = &mut self.accepting[i];
            let mut refusal: Option<String> = None;
            if a.accepted.is_none() {
                match a.read_hello() {
                    HelloProgress::Waiting => {
                        if now.is_some_and(|now| now >= a.deadline) {
                            refusal = Some(format!(
                                "it sent no complete handshake within {:.1} s ({} of {HELLO_LEN} \
                                 bytes)",
                                self.cfg.handshake_timeout.as_secs_f64(),
                                a.got
                            ));
                        }
                    }
                    HelloProgress::Lost(why) => refusal = Some(why),
                    HelloProgress::Complete => match wire::check_hello(&a.hello, &self.me) {
                        Err(r) => refusal = Some(r.to_string()),
                        Ok(h) => {
                            let links = self.cfg.links;
                            if usize::from(h.target_iface) != a.iface {
                                refusal = Some(format!(
                                    "rank {} addressed interface {} of this process's card, but \
                                     connected to interface {}",
                                    h.rank, h.target_iface, a.iface
                                ));
                            } else if u32::from(h.link) >= links {
                                refusal = Some(format!(
                                    "rank {} asked for link {}, but this process runs {links} \
                                     (btl_tcp_links)",
                                    h.rank, h.link
                                ));
                            } else {
                                let key = (a.iface as u32 * links + u32::from(h.link), h.rank);
                                // Established (or ended) connections, and
                                // ones still writing their acknowledgement.
                                let taken = self.accepted_at.contains_key(&key)
                                    || accepted_keys.contains(&key);
                                if taken {
                                    refusal = Some(format!(
                                        "rank {} already has a connection to {}",
                                        h.rank, self.modules[key.0 as usize].label
                                    ));
                                } else {
                                    a.accepted = Some(key);
                                    accepted_keys.push(key);
                                }
                            }
                        }
                    },
                }
            }
            if refusal.is_none() {
                if let Some((module, peer)) = a.accepted {
                    match a.write_ack(&ack) {
                        Ok(false) => {}
                        Ok(true) => {
                            let a = self.accepting.swap_remove(i);
                            self.log.log(CONNECT_LEVEL, || {
                                format!(
                                    "accepted a connection from rank {peer} at {} ({})",
                                    show_opt(a.remote),
                                    self.modules[module as usize].label
                                )
                            });
                            let conn = Inbound::new(Arc::new(a.fd), module, peer, a.remote, true);
                            let slot = self.add_inbound(conn);
                            self.accepted_at.insert((module, peer), Some(slot));
                            continue;
                        }
                        Err(e) => {
                            refusal = Some(format!("writing the acknowledgement failed: {e}"))
                        }
                    }
                }
            }
            if let Some(why) = refusal {
                let a = self.accepting.swap_remove(i);
                self.note_refusal(a.remote, a.iface, &why);
                drop(a);
                continue;
            }
            i += 1;
        }
    }
}
