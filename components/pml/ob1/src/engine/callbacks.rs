//! The btl callbacks: where a FRAG's payload goes (`on_header`), decoding
//! and dispatching a delivered fragment (`on_fragment`: MATCH and RNDV to
//! the receive side, ACKs and FRAGs here), finished sends and lost peers.
//! A callback only updates state and queues work; it never calls a btl.

use std::ptr;

use oxmpi_plugin_api::verbosity;

use super::peers::Link;
use super::{clause, Engine, Kind, Transport};
use crate::requests::{Op, Protocol, RecvPhase};
use crate::wire::{self, Header, FLAG_PUT, FRAG};

impl<T: Transport> Engine<T> {
    /// An ACK arrived for send `sender`.
    pub(super) fn on_ack(&mut self, peer: u32, sender: u64, receiver: u64, wanted: u64, addr: u64) {
        let Some(r) = self.requests.get_mut(sender) else {
            self.transport.log(
                verbosity::COMPONENT,
                &format!(
                    "dropped an ACK from rank {peer} for send {sender:#x}, which no longer exists"
                ),
            );
            return;
        };
        if r.complete {
            return;
        }
        let Op::Send(s) = &mut r.op else {
            self.transport.log(
                verbosity::ERROR,
                &format!("dropped an ACK from rank {peer} naming a receive ({sender:#x})"),
            );
            return;
        };
        if s.dest != peer || s.protocol == Protocol::Eager || s.acked {
            self.transport.log(
                verbosity::ERROR,
                &format!("dropped an unexpected ACK from rank {peer} for send {sender:#x}"),
            );
            return;
        }
        s.acked = true;
        s.receiver = receiver;
        // A RGET the receiver could not get: FRAGs from the start.
        s.protocol = Protocol::Rendezvous;
        let puts = addr != 0
            && self.use_rdma
            && match &self.peers[peer as usize].link {
                Link::Reachable(route) => route.next_rdma(false).is_some(),
                _ => false,
            };
        s.put_addr = if puts { addr } else { 0 };
        let wanted = usize::try_from(wanted).unwrap_or(usize::MAX).min(s.len);
        s.end = wanted.max(s.first_len);
        s.next = s.first_len;
        if s.next < s.end {
            self.active.push_back(sender);
        } else {
            self.check_send(sender);
        }
    }

    /// A FRAG arrived for receive `receiver`: its bytes that fit the
    /// wanted range go to the user buffer at their offset (nothing is
    /// copied when the btl placed them there already).
    pub(super) fn on_frag(&mut self, peer: u32, receiver: u64, offset: u64, payload: &[u8]) {
        let Some(r) = self.requests.get_mut(receiver) else {
            self.transport.log(
                verbosity::COMPONENT,
                &format!("dropped a FRAG from rank {peer} for receive {receiver:#x}, which no longer exists"),
            );
            return;
        };
        let Op::Recv(q) = &mut r.op else {
            self.transport.log(
                verbosity::ERROR,
                &format!("dropped a FRAG from rank {peer} naming a send ({receiver:#x})"),
            );
            return;
        };
        let RecvPhase::Rendezvous {
            peer: from,
            wanted,
            received,
        } = &mut q.phase
        else {
            self.transport.log(
                verbosity::COMPONENT,
                &format!("dropped a FRAG from rank {peer} for receive {receiver:#x}, which is not receiving a rendezvous"),
            );
            return;
        };
        if *from != peer {
            self.transport.log(
                verbosity::ERROR,
                &format!("dropped a FRAG from rank {peer} for receive {receiver:#x}, which receives from rank {from}"),
            );
            return;
        }
        let offset = usize::try_from(offset).unwrap_or(usize::MAX);
        let start = offset.min(*wanted);
        let end = offset.saturating_add(payload.len()).min(*wanted);
        let useful = end - start;
        if useful > 0 {
            // SAFETY: `start < wanted <= capacity`: inside the receive
            // buffer, which irecv's caller keeps writable until completion.
            let dst = unsafe { q.buf.add(start) };
            if !ptr::eq(dst, payload.as_ptr()) {
                // SAFETY: `useful <= payload.len()` bytes are read from the
                // payload and written at `dst`, whose range ends at `end <=
                // wanted <= capacity`. `copy` allows overlap: a btl that
                // hands a send's payload over in place may show the
                // receiver bytes of a buffer that overlaps its own.
                unsafe { ptr::copy(payload.as_ptr(), dst, useful) };
            }
        }
        *received += useful;
        if *received >= *wanted {
            q.phase = RecvPhase::Done;
            self.finish(receiver);
        }
    }

    /// `BtlReceiver::on_header`: for a FRAG of a matched rendezvous that
    /// fits the receive buffer, where its payload goes (the user buffer at
    /// its offset); null otherwise.
    #[inline]
    pub(crate) fn on_header(&mut self, peer: u32, header: &[u8], payload_len: usize) -> *mut u8 {
        self.settle();
        if header.first() != Some(&FRAG) || payload_len == 0 {
            return ptr::null_mut();
        }
        let Ok(Header::Frag { receiver, offset }) = Header::decode(header, peer, payload_len)
        else {
            return ptr::null_mut();
        };
        let Some(r) = self.requests.get(receiver) else {
            return ptr::null_mut();
        };
        let Op::Recv(q) = &r.op else {
            return ptr::null_mut();
        };
        let RecvPhase::Rendezvous {
            peer: from, wanted, ..
        } = q.phase
        else {
            return ptr::null_mut();
        };
        let Ok(offset) = usize::try_from(offset) else {
            return ptr::null_mut();
        };
        let fits = match offset.checked_add(payload_len) {
            Some(end) => end <= wanted,
            None => false,
        };
        if from != peer || !fits {
            return ptr::null_mut();
        }
        // SAFETY: offset + payload_len <= wanted <= capacity.
        unsafe { q.buf.add(offset) }
    }

    /// `BtlReceiver::on_fragment`: decodes the header and hands the
    /// fragment to the receive side (MATCH, RNDV), to its send (ACK) or to
    /// its receive (FRAG). A malformed fragment is logged and dropped.
    #[inline(always)]
    pub(crate) fn on_fragment(
        &mut self,
        btl: usize,
        module: u32,
        peer: u32,
        header: &[u8],
        payload: &[u8],
    ) {
        // The message of the armed receive, then the common case, decoded
        // straight into the call.
        if self.armed_for(peer) {
            if let Some(info) = wire::match_info(header, peer, payload.len()) {
                if self.fire(&info, payload) {
                    return;
                }
            }
        }
        self.settle();
        if peer < self.size {
            if let Some(info) = wire::match_info(header, peer, payload.len()) {
                return self.incoming(peer, info, Kind::Eager, payload);
            }
        }
        self.on_other_fragment(btl, module, peer, header, payload)
    }

    /// [`Engine::on_fragment`] for every fragment but a MATCH from a rank
    /// of the job.
    #[inline(never)]
    fn on_other_fragment(
        &mut self,
        btl: usize,
        module: u32,
        peer: u32,
        header: &[u8],
        payload: &[u8],
    ) {
        if peer >= self.size {
            let label = self.label(btl, module);
            self.transport.log(
                verbosity::ERROR,
                &format!(
                    "dropped a fragment that {label} says came from rank {peer}, outside the job of {} ranks",
                    self.size
                ),
            );
            return;
        }
        let decoded = match Header::decode(header, peer, payload.len()) {
            Ok(h) => h,
            Err(e) => {
                let label = self.label(btl, module);
                self.transport.log(
                    verbosity::ERROR,
                    &format!("dropped {e} from rank {peer} on {label}"),
                );
                return;
            }
        };
        match decoded {
            Header::Match(info) => self.incoming(peer, info, Kind::Eager, payload),
            Header::Rndv {
                info,
                sender,
                flags,
            } => {
                let put = flags & FLAG_PUT != 0;
                self.incoming(peer, info, Kind::Rendezvous { sender, put }, payload)
            }
            Header::Rget {
                info, sender, addr, ..
            } => self.incoming(peer, info, Kind::Rget { sender, addr }, payload),
            Header::Ack {
                sender,
                receiver,
                wanted,
                addr,
            } => self.on_ack(peer, sender, receiver, wanted, addr),
            Header::Frag { receiver, offset } => self.on_frag(peer, receiver, offset, payload),
            Header::Fin { request, bytes } => self.on_fin(peer, request, bytes),
        }
    }

    /// `BtlReceiver::on_send_done`: a fragment of send `cookie` (0: a
    /// control message) is finished.
    #[inline]
    pub(crate) fn on_send_done(&mut self, cookie: u64) {
        self.settle();
        if cookie == 0 {
            return;
        }
        let Some(r) = self.requests.get_mut(cookie) else {
            return;
        };
        if let Op::Send(s) = &mut r.op {
            s.outstanding = s.outstanding.saturating_sub(1);
            self.check_send(cookie);
        }
    }

    /// `BtlReceiver::on_peer_failed`.
    pub(crate) fn on_peer_failed(&mut self, btl: usize, module: u32, peer: u32, reason: &str) {
        self.settle();
        let label = self.label(btl, module);
        if peer >= self.size {
            self.transport.log(
                verbosity::ERROR,
                &format!("{label} reported rank {peer} lost, outside the job; ignored"),
            );
            return;
        }
        self.fail_peer(peer, format!("{label}: {}", clause(reason)), false);
    }
}
