//! Progress and failure: one progress call (outbound work, the readers
//! of established connections, accepting, handshakes, failure reports),
//! the end of a connection, the stop after an internal error, and
//! finalize's goodbyes.

use std::collections::HashSet;
use std::time::Instant;

use oxmpi_framework_btl::adapter::Pml;
use oxmpi_plugin_api::verbosity;

use super::{show_opt, TcpBtl, ACCEPT_EVERY, DETAIL_LEVEL, DIRECT_POLL_MAX};
use crate::inbound::{Ended, Inbound, BYE_HLEN};
use crate::outbound::State;
use crate::sys;
use crate::wire::{self, FRAME_HEADER_LEN};

impl TcpBtl {
    /// Marks endpoint `idx` failed, drops its connection and queue, and
    /// notes the failure for the next report.
    pub(super) fn fail_endpoint(&mut self, idx: usize, why: String) {
        let ep = &mut self.endpoints[idx];
        ep.close(State::Failed);
        let (module, peer, remote) = (ep.module, ep.peer, ep.remote);
        let label = self.label(module).to_owned();
        let reason = format!("rank {peer} via {label} (to {remote}): {why}");
        self.log
            .log(verbosity::COMPONENT, || format!("lost {reason}"));
        self.failures.push((module, peer, reason));
    }

    /// Stops the component after an internal error (a panic in one of its
    /// entry points, outside a connection's reader): logs it once, fails
    /// every peer it knows once with `why` (through [`Pml::peer_failed`]),
    /// closes every connection; from then on progress does nothing, sends
    /// fail and peers cannot be added. A second call does nothing.
    pub fn stop(&mut self, pml: &Pml<'_>, why: &str) {
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
        self.report_failures(pml);
        self.broken = Some(reason);
    }

    /// Reports each noted failure not yet reported for its (module, peer)
    /// through [`Pml::peer_failed`]; returns the number reported.
    fn report_failures(&mut self, pml: &Pml<'_>) -> usize {
        let mut reported = 0;
        for (module, peer, reason) in self.failures.drain(..) {
            if self.reported.insert((module, peer)) {
                pml.peer_failed(module, peer, &reason);
                reported += 1;
            }
        }
        reported
    }

    /// Makes progress: reports failures, writes queued data, drives
    /// connection setup, receives and delivers fragments, accepts
    /// connections. Returns the number of fragments delivered, sends
    /// finished and peers reported failed.
    pub(super) fn progress_all(&mut self, pml: &Pml<'_>) -> usize {
        if self.broken.is_some() {
            return 0;
        }
        let mut events = 0;
        if !self.active.is_empty() {
            events += self.progress_outbound(pml);
        }
        if self.live_inbound > 0 {
            match &self.epoll {
                Some(epoll) if self.live_inbound > DIRECT_POLL_MAX => {
                    let n = epoll.poll(&mut self.ready);
                    for k in 0..n {
                        let slot = self.ready[k].u64 as usize;
                        events += self.service_slot(slot, pml);
                    }
                }
                _ => {
                    for slot in 0..self.inbound.len() {
                        events += self.service_slot(slot, pml);
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
            events += self.report_failures(pml);
        }
        events
    }

    /// Receives on the incoming connection in `slot` (if any); returns the
    /// fragments delivered.
    #[inline]
    fn service_slot(&mut self, slot: usize, pml: &Pml<'_>) -> usize {
        let Some(Some(conn)) = self.inbound.get_mut(slot) else {
            return 0;
        };
        match conn.service(pml) {
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
    pub(super) fn add_inbound(&mut self, conn: Inbound) -> usize {
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

    /// Finalizes: says goodbye once on every established connection (so
    /// the peer sees a clean end, not a failure), except on an endpoint's
    /// sending socket while fragments are still queued on it (a goodbye
    /// would land inside a frame), then closes everything. Queued
    /// fragments are dropped without `send_done`.
    pub(super) fn say_goodbye_and_close(mut self) {
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
}
