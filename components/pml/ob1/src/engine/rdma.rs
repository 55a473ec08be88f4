//! RGET and RPUT: the gets a receive issues after matching a RGET, the
//! puts a send issues after an ACK that names the receive buffer, their
//! completions (`on_rdma_done`), and the FIN that ends both.
//!
//! Both pipelines keep at most `pml_ob1_send_pipeline_depth` operations
//! queued in btls per request, each at most the lane's `max_rdma_size`,
//! striped over the lanes that offer the operation in proportion to their
//! bandwidth. The cookie of a get is its receive's handle, of a put its
//! send's. Nothing here allocates.

use oxmpi_framework_btl::module::{RdmaOutcome, RdmaStatus};
use oxmpi_framework_pml::module::RequestError;
use oxmpi_plugin_api::verbosity;

use super::peers::Link;
use super::{Ctrl, Engine, Push, Transport};
use crate::requests::{Failure, Op, Protocol, RecvPhase};

impl<T: Transport> Engine<T> {
    /// Issues gets of receive `h` (matched to a RGET) while its pipeline
    /// has room; when every byte arrived, queues the FIN and completes the
    /// receive. Falls back to an ACK (the sender then sends FRAGs) when no
    /// lane to the sender offers get or RDMA is off. Returns what stopped
    /// it and the number of gets issued.
    pub(super) fn push_gets(&mut self, h: u64) -> (Push, usize) {
        let peer = match self.requests.get(h) {
            Some(r) if !r.complete => match &r.op {
                Op::Recv(q) => match q.phase {
                    RecvPhase::Get { peer, .. } => peer,
                    _ => return (Push::Finished, 0),
                },
                Op::Send(_) => return (Push::Finished, 0),
            },
            _ => return (Push::Finished, 0),
        };
        if let Err(sentence) = self.resolve(peer) {
            self.unanswerable(h, peer, &sentence);
            return (Push::Finished, 0);
        }
        let mut issued = 0;
        loop {
            let Some(r) = self.requests.get_mut(h) else {
                return (Push::Finished, issued);
            };
            let Op::Recv(q) = &mut r.op else {
                return (Push::Finished, issued);
            };
            let RecvPhase::Get {
                peer,
                sender,
                remote,
                wanted,
                next,
                outstanding,
            } = &mut q.phase
            else {
                return (Push::Finished, issued);
            };
            let Link::Reachable(route) = &mut self.peers[*peer as usize].link else {
                return (Push::Finished, issued);
            };
            let lane = if self.use_rdma {
                route.next_rdma(true)
            } else {
                None
            };
            let Some(li) = lane else {
                // No get here: ask the sender for FRAGs instead.
                let ack = Ctrl::Ack {
                    peer: *peer,
                    sender: *sender,
                    receiver: h,
                    wanted: *wanted,
                    addr: 0,
                };
                q.phase = RecvPhase::Rendezvous {
                    peer: *peer,
                    wanted: *wanted,
                    received: 0,
                };
                self.ctrl.push_back(ack);
                return (Push::Finished, issued);
            };
            if *next >= *wanted {
                if *outstanding == 0 {
                    self.gets_finished(h);
                }
                return (Push::Finished, issued);
            }
            if *outstanding >= self.depth {
                return (Push::Waiting, issued);
            }
            let lane = &mut route.lanes[li];
            let m = &self.modules[lane.module];
            let size = lane.rdma.min(*wanted - *next);
            // SAFETY: `next < wanted <= capacity`: inside the receive buffer.
            let local = unsafe { q.buf.add(*next) };
            let outcome = self.transport.get(
                m.btl,
                m.index,
                lane.endpoint,
                local,
                remote.wrapping_add(*next as u64),
                size,
                h,
            );
            match outcome {
                RdmaOutcome::Done | RdmaOutcome::Queued => {
                    *next += size;
                    lane.rdma_striped += size as u64;
                    if outcome == RdmaOutcome::Queued {
                        *outstanding += 1;
                    }
                    issued += 1;
                }
                RdmaOutcome::WouldBlock => return (Push::Blocked, issued),
                RdmaOutcome::Failed => {
                    let (peer, module) = (*peer, lane.module);
                    self.rdma_failed(peer, module, "read");
                    return (Push::Finished, issued);
                }
            }
        }
    }

    /// Every get of receive `h` finished: FIN to the sender, and the
    /// receive completes (its status was set when it matched).
    fn gets_finished(&mut self, h: u64) {
        let Some(r) = self.requests.get_mut(h) else {
            return;
        };
        let Op::Recv(q) = &mut r.op else {
            return;
        };
        let RecvPhase::Get {
            peer,
            sender,
            wanted,
            ..
        } = q.phase
        else {
            return;
        };
        q.phase = RecvPhase::Done;
        self.ctrl.push_back(Ctrl::Fin {
            peer,
            request: sender,
            bytes: wanted,
        });
        self.finish(h);
    }

    /// A rendezvous with `peer` cannot be answered (the peer cannot be
    /// reached): the receive `h` completes in error.
    pub(super) fn unanswerable(&mut self, h: u64, peer: u32, sentence: &str) {
        self.transport.log(verbosity::COMPONENT, sentence);
        if let Some(r) = self.requests.get_mut(h) {
            if !r.complete {
                r.status.error = RequestError::Other;
                r.failure = Failure::Message(format!(
                    "receive of a message from rank {peer} failed: its rendezvous cannot be answered: {sentence}"
                ));
                if let Op::Recv(q) = &mut r.op {
                    q.phase = RecvPhase::Done;
                }
                self.finish(h);
            }
        }
    }

    /// Issues puts of send `h` (acknowledged with a receive buffer's
    /// address) while its pipeline has room. Returns what stopped it and
    /// the number of puts issued.
    pub(super) fn push_puts(&mut self, h: u64) -> (Push, usize) {
        let mut issued = 0;
        loop {
            let Some(r) = self.requests.get_mut(h) else {
                return (Push::Finished, issued);
            };
            if r.complete {
                return (Push::Finished, issued);
            }
            let Op::Send(s) = &mut r.op else {
                return (Push::Finished, issued);
            };
            if s.next >= s.end {
                self.check_send(h);
                return (Push::Finished, issued);
            }
            if s.outstanding >= self.depth {
                return (Push::Waiting, issued);
            }
            let dest = s.dest;
            let Link::Reachable(route) = &mut self.peers[dest as usize].link else {
                return (Push::Finished, issued);
            };
            let Some(li) = route.next_rdma(false) else {
                return (Push::Finished, issued);
            };
            let lane = &mut route.lanes[li];
            let m = &self.modules[lane.module];
            let size = lane.rdma.min(s.end - s.next);
            // SAFETY: `next < end <= len`: inside the caller's buffer.
            let local = unsafe { s.buf.add(s.next) };
            let outcome = self.transport.put(
                m.btl,
                m.index,
                lane.endpoint,
                local,
                s.put_addr.wrapping_add(s.next as u64),
                size,
                h,
            );
            match outcome {
                RdmaOutcome::Done | RdmaOutcome::Queued => {
                    s.next += size;
                    lane.rdma_striped += size as u64;
                    if outcome == RdmaOutcome::Queued {
                        s.outstanding += 1;
                    }
                    issued += 1;
                }
                RdmaOutcome::WouldBlock => return (Push::Blocked, issued),
                RdmaOutcome::Failed => {
                    let module = lane.module;
                    self.rdma_failed(dest, module, "write");
                    return (Push::Finished, issued);
                }
            }
        }
    }

    /// `BtlReceiver::on_rdma_done`: a get (cookie: its receive) or put
    /// (its send) finished. A failed one fails the peer (the btl reports
    /// it lost, too).
    pub(crate) fn on_rdma_done(&mut self, cookie: u64, status: RdmaStatus) {
        self.settle();
        let Some(r) = self.requests.get_mut(cookie) else {
            return;
        };
        if r.complete {
            return;
        }
        let failed = status == RdmaStatus::Failed;
        // (peer, whether every get of a receive finished)
        let (peer, gets_done) = match &mut r.op {
            Op::Recv(q) => match &mut q.phase {
                RecvPhase::Get {
                    peer,
                    next,
                    wanted,
                    outstanding,
                    ..
                } => {
                    *outstanding = outstanding.saturating_sub(1);
                    (*peer, *next >= *wanted && *outstanding == 0)
                }
                _ => return,
            },
            Op::Send(s) => {
                s.outstanding = s.outstanding.saturating_sub(1);
                (s.dest, false)
            }
        };
        if failed {
            self.fail_peer(
                peer,
                "a get/put with it failed in the btl".to_string(),
                true,
            );
        } else if gets_done {
            self.gets_finished(cookie);
        } else {
            self.check_send(cookie);
        }
    }

    /// A FIN arrived from `peer` for `request`: a RGET send (its receiver
    /// got everything) or a receive whose sender put everything.
    pub(super) fn on_fin(&mut self, peer: u32, request: u64, bytes: u64) {
        let Some(r) = self.requests.get_mut(request) else {
            self.transport.log(
                verbosity::COMPONENT,
                &format!("dropped a FIN from rank {peer} for request {request:#x}, which no longer exists"),
            );
            return;
        };
        if r.complete {
            return;
        }
        match &mut r.op {
            Op::Send(s) if s.dest == peer && s.protocol == Protocol::Rget => {
                let bytes = usize::try_from(bytes).unwrap_or(usize::MAX).min(s.len);
                s.acked = true;
                s.end = bytes;
                s.next = bytes;
                self.check_send(request);
            }
            Op::Recv(q) => match &mut q.phase {
                RecvPhase::Rendezvous {
                    peer: from,
                    wanted,
                    received,
                } if *from == peer => {
                    *received = *wanted;
                    q.phase = RecvPhase::Done;
                    self.finish(request);
                }
                _ => self.transport.log(
                    verbosity::ERROR,
                    &format!("dropped a FIN from rank {peer} for receive {request:#x}, which waits for no put from it"),
                ),
            },
            Op::Send(_) => self.transport.log(
                verbosity::ERROR,
                &format!("dropped an unexpected FIN from rank {peer} for send {request:#x}"),
            ),
        }
    }
}
