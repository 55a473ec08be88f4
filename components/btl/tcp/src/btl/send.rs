//! The send path: one fragment to an endpoint (written at once when the
//! connection is up and idle, queued otherwise), and the writing of the
//! queues from progress.

use oxmpi_framework_btl::adapter::{Payload, Pml, Sent};
use oxmpi_framework_btl::module::MAX_HEADER;
use oxmpi_plugin_api::verbosity;

use super::TcpBtl;
use crate::outbound::State;

impl TcpBtl {
    /// Sends one fragment (the btl contract's `send`): the first send to
    /// an endpoint chooses its socket; on an established connection with
    /// nothing queued, one system call
    /// ([`Endpoint::try_send_now`](crate::outbound::Endpoint::try_send_now));
    /// otherwise the fragment is queued behind the others.
    #[inline]
    pub(super) fn send_fragment(
        &mut self,
        module: u32,
        endpoint: u64,
        header: &[u8],
        payload: Payload,
    ) -> Sent {
        if self.broken.is_some() {
            return Sent::Failed(payload);
        }
        let idx = endpoint as usize;
        let valid = idx < self.endpoints.len()
            && self.endpoints[idx].module == module
            && header.len() <= MAX_HEADER;
        if !valid {
            return self.refuse_send(module, endpoint, header.len(), payload);
        }
        if self.endpoints[idx].state == State::Idle {
            // First send: choose the socket this endpoint sends on forever.
            if let Err(why) = self.open(idx) {
                self.fail_endpoint(idx, why);
                return Sent::Failed(payload);
            }
        }
        let ep = &mut self.endpoints[idx];
        if ep.state == State::Up && ep.queue.is_empty() {
            return match ep.try_send_now(header, payload) {
                Ok(sent) => {
                    if !ep.queue.is_empty() {
                        self.activate(idx);
                    }
                    sent
                }
                Err((e, payload)) => {
                    self.fail_endpoint(idx, format!("writing to it failed: {e}"));
                    Sent::Failed(payload)
                }
            };
        }
        match ep.state {
            State::Failed => return Sent::Failed(payload),
            State::Finished => {
                self.fail_endpoint(
                    idx,
                    "it has already finalized its tcp component and takes no more data".into(),
                );
                return Sent::Failed(payload);
            }
            _ => {}
        }
        let sent = self.endpoints[idx].queue_new(header, payload);
        self.activate(idx);
        sent
    }

    /// Refuses a send that names no endpoint of `module` or carries too
    /// long a header (a pml bug), logging why.
    #[cold]
    fn refuse_send(&self, module: u32, endpoint: u64, header_len: usize, payload: Payload) -> Sent {
        self.log.log(verbosity::ERROR, || {
            format!(
                "send refused: module {module}, endpoint {endpoint}, header of {header_len} \
                 bytes (at most {MAX_HEADER}) is not a valid fragment for tcp"
            )
        });
        Sent::Failed(payload)
    }

    fn activate(&mut self, idx: usize) {
        let ep = &mut self.endpoints[idx];
        if !ep.active {
            ep.active = true;
            self.active.push(idx as u32);
        }
    }

    /// Drives every endpoint with work: connection set-up, then writing
    /// its queue. Returns the payloads given back.
    pub(super) fn progress_outbound(&mut self, pml: &Pml<'_>) -> usize {
        let mut events = 0;
        let mut k = 0;
        while k < self.active.len() {
            let idx = self.active[k] as usize;
            let keep = match self.endpoints[idx].state {
                State::Connecting | State::SendHello | State::AwaitAck => {
                    self.drive_connect(idx);
                    let st = self.endpoints[idx].state;
                    if st == State::Up {
                        // Fall through to writing at once.
                        self.flush_endpoint(idx, pml, &mut events)
                    } else {
                        !matches!(st, State::Failed | State::Finished)
                    }
                }
                State::Up => self.flush_endpoint(idx, pml, &mut events),
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
    fn flush_endpoint(&mut self, idx: usize, pml: &Pml<'_>, events: &mut usize) -> bool {
        match self.endpoints[idx].flush(pml) {
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
}
