//! The matcher's queries and upkeep: probes, matched probes and the
//! unexpected messages they claim, cancels, the per-sender sequence
//! state and sizes, and the removal of a communicator's state.

use super::*;

impl<T> Matcher<T> {
    // ----- probes, unexpected messages, cancel -----

    /// The message a receive for (`context`, `source`, `tag`) would match
    /// now — the oldest fitting unexpected message — without taking it
    /// (`MPI_Iprobe`). `None` if there is none; held-back messages are not
    /// visible. [`Envelope::probe_status`] gives its status.
    pub fn probe(&self, context: ContextId, source: Source, tag: Tag) -> Option<&Envelope> {
        let i = self.find_unexpected(context, source, tag)?;
        Some(&self.unexpected[i].envelope)
    }

    /// Takes the message a receive for (`context`, `source`, `tag`) posted
    /// now would match — the oldest fitting unexpected message, as
    /// [`Matcher::post_recv`] chooses it — without posting anything: a
    /// receive that can complete at once needs no id. `None` if none fits
    /// (post the receive then).
    #[inline]
    pub fn take_matching(
        &mut self,
        context: ContextId,
        source: Source,
        tag: Tag,
    ) -> Option<(Envelope, T)> {
        if self.queued == 0 {
            return None;
        }
        let i = self.find_unexpected(context, source, tag)?;
        Some(self.remove_queued(i))
    }

    /// Matched probe (`MPI_Improbe`): like [`Matcher::probe`], but the
    /// message leaves matching — no receive or probe sees it again — and
    /// stays stored under the returned handle until
    /// [`Matcher::take_unexpected`] (`MPI_Mrecv`).
    pub fn mprobe(
        &mut self,
        context: ContextId,
        source: Source,
        tag: Tag,
    ) -> Option<(UnexpectedId, Envelope)> {
        let i = self.find_unexpected(context, source, tag)?;
        self.unlink_queued(i);
        self.claimed += 1;
        let node = &mut self.unexpected[i];
        node.state = State::Claimed;
        let id = UnexpectedId {
            index: i,
            generation: self.unexpected.generation(i),
        };
        Some((id, self.unexpected[i].envelope))
    }

    /// Removes an unexpected message (queued, or claimed by
    /// [`Matcher::mprobe`]) and returns its header and payload. `None` if
    /// the handle is stale: the message was matched, taken or its context
    /// removed.
    pub fn take_unexpected(&mut self, id: UnexpectedId) -> Option<(Envelope, T)> {
        let state = self.unexpected.get_checked(id.index, id.generation)?.state;
        match state {
            State::Held => None,
            State::Queued => Some(self.remove_queued(id.index)),
            State::Claimed => {
                self.claimed -= 1;
                let node = self.unexpected.remove(id.index);
                Some((node.envelope, node.payload))
            }
        }
    }

    /// The header and payload of an unexpected message (queued or claimed),
    /// without removing it; `None` if the handle is stale.
    pub fn unexpected(&self, id: UnexpectedId) -> Option<(&Envelope, &T)> {
        let node = self.unexpected.get_checked(id.index, id.generation)?;
        (node.state != State::Held).then_some((&node.envelope, &node.payload))
    }

    /// The payload of an unexpected message (queued or claimed), for
    /// updating it in place (e.g. as more fragments arrive); `None` if the
    /// handle is stale.
    pub fn unexpected_payload_mut(&mut self, id: UnexpectedId) -> Option<&mut T> {
        let node = self.unexpected.get_checked_mut(id.index, id.generation)?;
        (node.state != State::Held).then_some(&mut node.payload)
    }

    /// Cancels a posted receive (`MPI_Cancel` on a receive request): `true`
    /// if a receive with this id was still posted — it is removed and will
    /// never match (complete it with [`Status::cancelled`]); `false` if
    /// there is none (it already matched, was never posted or was already
    /// cancelled): MPI then lets the receive complete normally.
    ///
    /// With several posted receives under one id, the oldest is cancelled.
    /// Cost: O(posted receives).
    pub fn cancel_recv(&mut self, id: RecvId) -> bool {
        let oldest = self
            .posted
            .iter()
            .filter(|(_, n)| n.recv.id == id)
            .min_by_key(|(_, n)| n.stamp)
            .map(|(i, _)| i);
        match oldest {
            Some(i) => {
                self.remove_posted(i);
                true
            }
            None => false,
        }
    }

    // ----- sequence state and sizes -----

    /// The sequence number the next in-order message from `source` on
    /// `context` must carry: 0 for a sender never heard from, then one more
    /// per message delivered in order (held-back messages do not count
    /// until released).
    pub fn expected_sequence(&self, context: ContextId, source: i32) -> u64 {
        self.find_peer(context, source)
            .map_or(0, |p| self.peers[p].expected)
    }

    /// How many messages from `source` on `context` are held back waiting
    /// for a predecessor.
    pub fn held_back(&self, context: ContextId, source: i32) -> usize {
        self.find_peer(context, source)
            .map_or(0, |p| self.peers[p].held.len())
    }

    /// Number of posted receives (all communicators).
    pub fn posted_len(&self) -> usize {
        self.posted.len()
    }

    /// Number of messages in the unexpected queues (all communicators; not
    /// counting held-back or claimed ones).
    pub fn unexpected_len(&self) -> usize {
        self.queued
    }

    /// Number of held-back messages (all communicators).
    pub fn held_back_len(&self) -> usize {
        self.held
    }

    /// Number of messages claimed by [`Matcher::mprobe`] and not yet taken.
    pub fn claimed_len(&self) -> usize {
        self.claimed
    }

    /// Drops every state of a communicator (when it is freed): its posted
    /// receives, unexpected and held-back messages (returned, so the caller
    /// can complete or free them) and its per-sender sequence numbers, which
    /// restart at 0 if the context id is used again. Messages claimed by
    /// [`Matcher::mprobe`] stay available through their handles; handles
    /// of the discarded messages become stale, including `Queued` handles
    /// still waiting in [`Matcher::next_released`]. An unknown context
    /// gives empty lists.
    pub fn remove_context(&mut self, context: ContextId) -> RemovedContext<T> {
        self.last_peer.set(None);
        let mut removed = RemovedContext {
            posted: Vec::new(),
            unexpected: Vec::new(),
        };
        let Some(c) = self.find_context(context) else {
            return removed;
        };
        if context.0 < DIRECT_CONTEXTS {
            self.context_table[context.0 as usize] = NIL;
        } else {
            self.context_index.remove(&context.0);
        }
        let ctx = self.contexts.remove(c);

        let mut posted: Vec<u32> = Vec::new();
        collect_list(&ctx.wild, &self.posted, |n| n.links, &mut posted);
        self.wild_posted -= posted.len();
        for &p in &ctx.peers {
            collect_list(
                &self.peers[p].posted,
                &self.posted,
                |n| n.links,
                &mut posted,
            );
        }
        posted.sort_by_key(|&i| self.posted[i].stamp);
        removed.posted = posted
            .into_iter()
            .map(|i| self.posted.remove(i).recv)
            .collect();

        let mut queued: Vec<u32> = Vec::new();
        collect_list(
            &ctx.unexpected,
            &self.unexpected,
            |n| n.context_links,
            &mut queued,
        );
        self.queued -= queued.len();
        for i in queued {
            let node = self.unexpected.remove(i);
            removed.unexpected.push((node.envelope, node.payload));
        }
        for &p in &ctx.peers {
            let peer = self.peers.remove(p);
            if !direct_rank(peer.rank) {
                self.peer_index.remove(&peer_key(context, peer.rank));
            }
            self.held -= peer.held.len();
            for &(_, i) in peer.held.iter().rev() {
                let node = self.unexpected.remove(i);
                removed.unexpected.push((node.envelope, node.payload));
            }
        }
        removed
    }
}
