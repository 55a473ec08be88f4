//! The property test: random sequences of operations run against the
//! matcher and against a naive reference model (vectors scanned from the
//! front) must produce the same events, and a check that the generated
//! sequences reach every outcome.

use std::collections::{BTreeMap, HashMap};

use proptest::prelude::*;

use super::*;

// ----- the reference model -----

/// A message's identity: (context, source, sequence).
type Key = (u32, i32, u64);

fn key(e: &Envelope) -> Key {
    (e.context.0, e.source, e.sequence)
}

/// What happened to a message, in a form both sides produce.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Event {
    Matched(RecvId, Key, bool),
    Queued(Key),
    HeldBack,
    Duplicate(Key),
}

/// MPI's matching predicate, written independently of `Source::matches`,
/// `Tag::matches` and `PostedRecv::accepts`.
fn fits(r: &PostedRecv, e: &Envelope) -> bool {
    let source = match r.source {
        Source::Any => true,
        Source::Rank(s) => s == e.source,
    };
    let tag = match r.tag {
        Tag::Any => e.tag >= 0,
        Tag::Value(t) => t == e.tag,
    };
    r.context == e.context && source && tag
}

/// MPI matching written the obvious way: vectors scanned from the front.
#[derive(Default)]
struct Model {
    posted: Vec<PostedRecv>,
    unexpected: Vec<Envelope>,
    claimed: Vec<Envelope>,
    expected: HashMap<(u32, i32), u64>,
    held: HashMap<(u32, i32), BTreeMap<u64, Envelope>>,
}

impl Model {
    fn post(&mut self, r: PostedRecv) -> Option<Event> {
        match self.unexpected.iter().position(|e| fits(&r, e)) {
            Some(pos) => {
                let e = self.unexpected.remove(pos);
                Some(Event::Matched(r.id, key(&e), e.len > r.capacity))
            }
            None => {
                self.posted.push(r);
                None
            }
        }
    }

    fn deliver(&mut self, e: Envelope) -> Event {
        match self.posted.iter().position(|r| fits(r, &e)) {
            Some(pos) => {
                let r = self.posted.remove(pos);
                Event::Matched(r.id, key(&e), e.len > r.capacity)
            }
            None => {
                self.unexpected.push(e);
                Event::Queued(key(&e))
            }
        }
    }

    fn arrive(&mut self, e: Envelope) -> Vec<Event> {
        let pair = (e.context.0, e.source);
        let expected = *self.expected.get(&pair).unwrap_or(&0);
        let held = self.held.entry(pair).or_default();
        if e.sequence < expected || held.contains_key(&e.sequence) {
            return vec![Event::Duplicate(key(&e))];
        }
        if e.sequence > expected {
            held.insert(e.sequence, e);
            return vec![Event::HeldBack];
        }
        let mut events = vec![self.deliver(e)];
        let mut next = expected + 1;
        while let Some(e) = self.held.get_mut(&pair).unwrap().remove(&next) {
            events.push(self.deliver(e));
            next += 1;
        }
        self.expected.insert(pair, next);
        events
    }

    fn probe(&self, context: u32, source: Source, tag: Tag) -> Option<Key> {
        let r = recv(ContextId(context), source, tag, 0, 0);
        self.unexpected.iter().find(|e| fits(&r, e)).map(key)
    }

    fn mprobe(&mut self, context: u32, source: Source, tag: Tag) -> Option<Key> {
        let r = recv(ContextId(context), source, tag, 0, 0);
        let pos = self.unexpected.iter().position(|e| fits(&r, e))?;
        let e = self.unexpected.remove(pos);
        self.claimed.push(e);
        Some(key(&e))
    }

    fn cancel(&mut self, id: RecvId) -> bool {
        match self.posted.iter().position(|r| r.id == id) {
            Some(pos) => {
                self.posted.remove(pos);
                true
            }
            None => false,
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    /// Post a receive (None = wildcard).
    Post {
        context: u32,
        source: Option<i32>,
        tag: Option<i32>,
        capacity: usize,
    },
    /// A sender sends: the message is numbered and put in flight.
    Send {
        context: u32,
        source: i32,
        tag: i32,
        len: usize,
    },
    /// The oldest message in flight arrives.
    DeliverOldest,
    /// Some message in flight arrives (out of order).
    DeliverAny(usize),
    /// An already delivered message arrives again.
    Redeliver(usize),
    Probe {
        context: u32,
        source: Option<i32>,
        tag: Option<i32>,
    },
    Mprobe {
        context: u32,
        source: Option<i32>,
        tag: Option<i32>,
    },
    /// Take a claimed message.
    Take(usize),
    /// Cancel a receive posted earlier (or one never posted).
    Cancel(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let context = 0u32..2;
    let source = 0i32..3;
    // -2 is an internal tag: only exact receives take it.
    let tag = prop_oneof![Just(-2i32), 0i32..3];
    let wild_source = prop_oneof![1 => Just(None), 3 => source.clone().prop_map(Some)];
    let wild_tag = prop_oneof![1 => Just(None), 3 => tag.clone().prop_map(Some)];
    prop_oneof![
        6 => (context.clone(), wild_source.clone(), wild_tag.clone(), 0usize..6).prop_map(
            |(context, source, tag, capacity)| Op::Post { context, source, tag, capacity }
        ),
        6 => (context.clone(), source, tag, 0usize..6)
            .prop_map(|(context, source, tag, len)| Op::Send { context, source, tag, len }),
        5 => Just(Op::DeliverOldest),
        3 => any::<usize>().prop_map(Op::DeliverAny),
        1 => any::<usize>().prop_map(Op::Redeliver),
        2 => (context.clone(), wild_source.clone(), wild_tag.clone())
            .prop_map(|(context, source, tag)| Op::Probe { context, source, tag }),
        1 => (context, wild_source, wild_tag)
            .prop_map(|(context, source, tag)| Op::Mprobe { context, source, tag }),
        1 => any::<usize>().prop_map(Op::Take),
        1 => any::<usize>().prop_map(Op::Cancel),
    ]
}

fn source_of(s: Option<i32>) -> Source {
    s.map_or(Source::Any, Source::Rank)
}

fn tag_of(t: Option<i32>) -> Tag {
    t.map_or(Tag::Any, Tag::Value)
}

/// The matcher's outcome as an event (looking up queued messages' keys).
fn event(m: &Matcher<Key>, outcome: Incoming<Key>) -> Event {
    match outcome {
        Incoming::Matched(got) => {
            assert_eq!(
                got.payload,
                key(&got.envelope),
                "payload travels with its message"
            );
            assert_eq!(got.truncated(), got.envelope.len > got.capacity);
            Event::Matched(got.recv, got.payload, got.truncated())
        }
        Incoming::Queued(id) => {
            let (e, p) = m.unexpected(id).expect("a fresh queued handle is valid");
            assert_eq!(*p, key(e));
            Event::Queued(*p)
        }
        Incoming::HeldBack => Event::HeldBack,
        Incoming::Duplicate {
            envelope, payload, ..
        } => {
            assert_eq!(payload, key(&envelope));
            Event::Duplicate(payload)
        }
    }
}

/// How often each kind of outcome happened in a run (to check that the
/// generated cases exercise them all).
#[derive(Debug, Default)]
struct Coverage {
    matched_on_arrival: usize,
    matched_on_post: usize,
    queued: usize,
    held_back: usize,
    released: usize,
    duplicates: usize,
    truncated: usize,
    wildcard_matches: usize,
    probe_hits: usize,
    mprobe_hits: usize,
    cancelled: usize,
}

fn run(ops: &[Op]) -> Result<Coverage, TestCaseError> {
    let mut cov = Coverage::default();
    let mut m: Matcher<Key> = Matcher::new();
    let mut model = Model::default();
    let mut senders = Senders::default();
    let mut in_flight: Vec<Envelope> = Vec::new();
    let mut delivered: Vec<Envelope> = Vec::new();
    let mut claimed: Vec<(UnexpectedId, Key)> = Vec::new();
    let mut next_id = 0u64;

    for op in ops {
        match *op {
            Op::Post {
                context,
                source,
                tag,
                capacity,
            } => {
                next_id += 1;
                let r = recv(
                    ContextId(context),
                    source_of(source),
                    tag_of(tag),
                    capacity,
                    next_id,
                );
                // Every other receive first tries `take_matching` (a
                // receive that completes without being posted), which must
                // choose what posting it would have matched.
                let taken = if next_id.is_multiple_of(2) {
                    m.take_matching(r.context, r.source, r.tag)
                        .map(|(envelope, payload)| Match::new(&r, envelope, payload))
                } else {
                    None
                };
                let got = taken.or_else(|| m.post_recv(r)).map(|got| {
                    assert_eq!(got.payload, key(&got.envelope));
                    cov.matched_on_post += 1;
                    cov.truncated += usize::from(got.truncated());
                    cov.wildcard_matches += usize::from(source.is_none() || tag.is_none());
                    Event::Matched(got.recv, got.payload, got.truncated())
                });
                prop_assert_eq!(got, model.post(r), "post {:?}", r);
            }
            Op::Send {
                context,
                source,
                tag,
                len,
            } => in_flight.push(senders.msg(ContextId(context), source, tag, len)),
            Op::DeliverOldest | Op::DeliverAny(_) | Op::Redeliver(_) => {
                let e = match *op {
                    Op::DeliverOldest if !in_flight.is_empty() => in_flight.remove(0),
                    Op::DeliverAny(i) if !in_flight.is_empty() => {
                        in_flight.remove(i % in_flight.len())
                    }
                    Op::Redeliver(i) if !delivered.is_empty() => delivered[i % delivered.len()],
                    _ => continue,
                };
                if !matches!(op, Op::Redeliver(_)) {
                    delivered.push(e);
                }
                // Every other arrival goes through `arrive_in_order`
                // first, which must do what `incoming` would.
                let first = if delivered.len().is_multiple_of(2) {
                    match m.arrive_in_order(&e, || key(&e)) {
                        InOrder::Matched { recv, capacity } => Incoming::Matched(Match {
                            recv,
                            capacity,
                            envelope: e,
                            payload: key(&e),
                        }),
                        InOrder::Queued(id) => Incoming::Queued(id),
                        InOrder::NotInOrder => m.incoming(e, key(&e)),
                    }
                } else {
                    m.incoming(e, key(&e))
                };
                let mut got = vec![event(&m, first)];
                while let Some(r) = m.next_released() {
                    got.push(event(&m, r));
                    cov.released += 1;
                }
                for e in &got {
                    match e {
                        Event::Matched(_, _, truncated) => {
                            cov.matched_on_arrival += 1;
                            cov.truncated += usize::from(*truncated);
                        }
                        Event::Queued(_) => cov.queued += 1,
                        Event::HeldBack => cov.held_back += 1,
                        Event::Duplicate(_) => cov.duplicates += 1,
                    }
                }
                prop_assert_eq!(got, model.arrive(e), "arrival of {:?}", e);
            }
            Op::Probe {
                context,
                source,
                tag,
            } => {
                let (s, t) = (source_of(source), tag_of(tag));
                let got = m.probe(ContextId(context), s, t).map(key);
                cov.probe_hits += usize::from(got.is_some());
                prop_assert_eq!(got, model.probe(context, s, t));
            }
            Op::Mprobe {
                context,
                source,
                tag,
            } => {
                let (s, t) = (source_of(source), tag_of(tag));
                let got = m.mprobe(ContextId(context), s, t);
                if let Some((id, e)) = got {
                    claimed.push((id, key(&e)));
                    cov.mprobe_hits += 1;
                }
                prop_assert_eq!(got.map(|(_, e)| key(&e)), model.mprobe(context, s, t));
            }
            Op::Take(i) => {
                if claimed.is_empty() {
                    continue;
                }
                let (id, k) = claimed.remove(i % claimed.len());
                let got = m.take_unexpected(id).map(|(e, p)| (key(&e), p));
                prop_assert_eq!(got, Some((k, k)));
                prop_assert_eq!(m.take_unexpected(id), None);
                model.claimed.retain(|e| key(e) != k);
            }
            Op::Cancel(i) => {
                // Ids 1..=next_id were posted; next_id + 1 never was.
                let id = RecvId(i as u64 % (next_id + 1) + 1);
                let cancelled = m.cancel_recv(id);
                cov.cancelled += usize::from(cancelled);
                prop_assert_eq!(cancelled, model.cancel(id), "cancel {:?}", id);
            }
        }
        m.check();
        prop_assert_eq!(m.posted_len(), model.posted.len());
        prop_assert_eq!(m.unexpected_len(), model.unexpected.len());
        prop_assert_eq!(m.claimed_len(), model.claimed.len());
        prop_assert_eq!(
            m.held_back_len(),
            model.held.values().map(BTreeMap::len).sum::<usize>()
        );
    }

    // The final queues agree too, in order.
    for context in 0..2 {
        let expected_seq: Vec<u64> = (0..3)
            .map(|s| *model.expected.get(&(context, s)).unwrap_or(&0))
            .collect();
        let got_seq: Vec<u64> = (0..3)
            .map(|s| m.expected_sequence(ContextId(context), s))
            .collect();
        prop_assert_eq!(got_seq, expected_seq);
        let removed = m.remove_context(ContextId(context));
        let posted: Vec<PostedRecv> = model
            .posted
            .iter()
            .filter(|r| r.context.0 == context)
            .copied()
            .collect();
        prop_assert_eq!(removed.posted, posted);
        let mut unexpected: Vec<Key> = model
            .unexpected
            .iter()
            .filter(|e| e.context.0 == context)
            .map(key)
            .collect();
        let queued = unexpected.len();
        let got: Vec<Key> = removed.unexpected.iter().map(|(e, _)| key(e)).collect();
        prop_assert_eq!(&got[..queued.min(got.len())], &unexpected[..]);
        let mut held_got = got[queued.min(got.len())..].to_vec();
        held_got.sort_unstable();
        unexpected = model
            .held
            .iter()
            .filter(|((c, _), _)| *c == context)
            .flat_map(|(_, h)| h.values().map(key))
            .collect();
        unexpected.sort_unstable();
        prop_assert_eq!(held_got, unexpected);
    }
    m.check();
    prop_assert_eq!(m.posted_len() + m.unexpected_len() + m.held_back_len(), 0);
    Ok(cov)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// The key correctness test: any interleaving of posts, sends,
    /// in-order and out-of-order arrivals, duplicates, probes, matched
    /// probes and cancels gives exactly the outcomes of the naive model.
    #[test]
    fn matches_the_reference_model(ops in proptest::collection::vec(op(), 0..300)) {
        let cov = run(&ops)?;
        if std::env::var_os("OXMPI_MATCHING_COVERAGE").is_some() {
            eprintln!("{cov:?}");
        }
    }
}

#[test]
fn the_model_test_sees_every_outcome() {
    // A fixed run through `run` that exercises each event kind, so a model
    // bug that hides a kind cannot pass silently.
    let ops = [
        Op::Post {
            context: 0,
            source: Some(1),
            tag: Some(0),
            capacity: 1,
        },
        Op::Send {
            context: 0,
            source: 1,
            tag: 0,
            len: 4,
        },
        Op::Send {
            context: 0,
            source: 1,
            tag: 2,
            len: 0,
        },
        Op::Send {
            context: 0,
            source: 1,
            tag: 1,
            len: 0,
        },
        Op::DeliverAny(2),
        Op::DeliverOldest,
        Op::DeliverOldest,
        Op::Redeliver(0),
        Op::Probe {
            context: 0,
            source: None,
            tag: None,
        },
        Op::Mprobe {
            context: 0,
            source: None,
            tag: Some(2),
        },
        Op::Take(0),
        Op::Cancel(0),
        Op::Post {
            context: 1,
            source: None,
            tag: None,
            capacity: 0,
        },
        Op::Cancel(1),
    ];
    let cov = run(&ops).unwrap();
    assert_eq!(cov.matched_on_arrival, 1, "{cov:?}");
    assert_eq!(cov.truncated, 1, "{cov:?}");
    assert_eq!(cov.held_back, 1, "{cov:?}");
    assert_eq!(cov.released, 1, "{cov:?}");
    assert_eq!(cov.queued, 2, "{cov:?}");
    assert_eq!(cov.duplicates, 1, "{cov:?}");
    assert_eq!((cov.probe_hits, cov.mprobe_hits), (1, 1), "{cov:?}");
    // Cancel(0) names receive 1 (matched), Cancel(1) receive 2 (posted).
    assert_eq!(cov.cancelled, 1, "{cov:?}");
}
