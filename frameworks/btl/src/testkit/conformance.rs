//! The btl conformance suite: what every btl component's tests run.
//!
//! [`run`] takes the component's [`Btl`] type and a [`Subject`] describing
//! it, and checks, through its exported table (the generated `extern "C"`
//! layer, via [`BtlHandle`]) and through values
//! of its type driven in one thread ([`Cluster`]):
//!
//! 1. entry points called before `init` are refused cleanly (no events,
//!    `Failed`, a sentence from `add_peer`, an empty card);
//! 2. `init` describes at least one module, each with a non-empty label,
//!    sizes of at least one byte, `eager_limit <= max_send_size`, and the
//!    `SEND` flag; the table and a value describe the same modules; a
//!    second `init` without `finalize` is refused with a sentence;
//! 3. contact cards are exchanged and `add_peer` succeeds for every
//!    reachable peer on every module, and fails with a non-empty sentence
//!    (no panic, no callback) for a rank outside the job, for the process
//!    itself when the component does not reach it, for a module that does
//!    not exist, and — when the component needs cards — for an empty,
//!    truncated or foreign card;
//! 4. payloads of 0, 1, 63, 64, 4096, 65536 and 1 MiB bytes with known
//!    patterns arrive complete and in order on every reachable pair, with
//!    the recorder's destination buffers, with btl-held payloads and with
//!    both alternating; headers of every length from 0 to
//!    [`MAX_HEADER`] arrive intact; a burst of small sends queued without
//!    progress arrives in order; every `Queued` send gets exactly one
//!    `on_send_done`; the recorders see no contract violation;
//! 5. a header longer than [`MAX_HEADER`] and a null payload with a
//!    length answer `Failed` without a panic, and the component keeps
//!    working;
//! 6. `finalize` then `init` again works (table and values);
//! 7. get and put ([`rdma`]): on every module that offers them
//!    ([`flags::GET`], [`flags::PUT`]), patterns of 1 B to 1 MiB and of
//!    `max_rdma_size` bytes move between ranks intact, through the table
//!    and values, each queued one finished by exactly one `on_rdma_done`;
//!    the generated table refuses (`Failed`, no callback) a get/put on a
//!    module that does not offer it — so every btl, also one without RDMA,
//!    runs this — and one of 0 bytes, above `max_rdma_size`, with a null
//!    buffer or on a module that does not exist;
//! 8. no entry point panicked (the adapter logs an internal error for a
//!    panic).
//!
//! The suite holds [`lock`](oxmpi_plugin_api::testkit::lock) while it runs
//! and sets the subject's parameters through the fake services (clearing
//! them at the end).
//!
//! # Example
//!
//! A component's tests call it once:
//!
//! ```ignore
//! use oxmpi_framework_btl::testkit::conformance::{self, Subject};
//! use oxmpi_plugin_api::ParamValue;
//!
//! #[test]
//! fn conformance() {
//!     // self: one rank, reaches only itself, needs no card.
//!     conformance::run::<SelfState>(&Subject::new("self", &crate::MODULE));
//! }
//!
//! #[test]
//! fn tcp_conformance() {
//!     // tcp: two ranks over loopback, does not reach itself, needs cards.
//!     conformance::run::<TcpBtl>(
//!         &Subject::new("tcp", &crate::MODULE)
//!             .ranks(2)
//!             .reaches_itself(false)
//!             .needs_card(true)
//!             .param("btl_tcp_if_include", ParamValue::Str("lo".into())),
//!     );
//! }
//! ```

pub mod rdma;

use super::drive::Cluster;
use super::recorder::Placement;
use super::stamp::{pattern, STAMP_LEN};
use crate::adapter::Btl;
use crate::handle::BtlHandle;
use crate::module::{flags, BtlComponentModule, SendOutcome, MAX_HEADER};
use oxmpi_plugin_api::{testkit, ParamValue};

/// The payload sizes the suite sends (those up to a module's largest
/// fragment, and that one).
pub const SIZES: [usize; 7] = [0, 1, 63, 64, 4096, 65536, 1 << 20];

/// Small sends queued in one burst, without progress in between.
const BURST: usize = 2000;

/// The component under test.
#[derive(Clone)]
pub struct Subject {
    /// The component's name (`self`, `tcp`): its parameters are
    /// `btl_<name>_*`.
    pub component: &'static str,
    /// Its exported table (the `MODULE` of `export_btl_component!`).
    pub table: &'static BtlComponentModule,
    /// Ranks the suite runs (at least 1; default 1).
    pub ranks: u32,
    /// Whether a rank reaches itself (self: yes; network btls: no;
    /// default true).
    pub reaches_itself: bool,
    /// Whether reaching a peer needs its contact card, so that an empty
    /// or damaged card must be refused (default false).
    pub needs_card: bool,
    /// Parameters set through the fake services while the suite runs
    /// (full names; default none).
    pub params: Vec<(String, ParamValue)>,
}

impl Subject {
    /// A one-rank component that reaches itself and needs no card.
    pub fn new(component: &'static str, table: &'static BtlComponentModule) -> Subject {
        Subject {
            component,
            table,
            ranks: 1,
            reaches_itself: true,
            needs_card: false,
            params: Vec::new(),
        }
    }

    /// Runs `n` ranks.
    pub fn ranks(mut self, n: u32) -> Subject {
        self.ranks = n;
        self
    }

    /// Whether a rank reaches itself.
    pub fn reaches_itself(mut self, yes: bool) -> Subject {
        self.reaches_itself = yes;
        self
    }

    /// Whether reaching a peer needs its card.
    pub fn needs_card(mut self, yes: bool) -> Subject {
        self.needs_card = yes;
        self
    }

    /// Sets parameter `full_name` to `value` while the suite runs.
    pub fn param(mut self, full_name: &str, value: ParamValue) -> Subject {
        self.params.push((full_name.to_string(), value));
        self
    }

    /// Every (sender, receiver) pair that should reach each other.
    pub fn pairs(&self) -> Vec<(u32, u32)> {
        let mut pairs = Vec::new();
        for a in 0..self.ranks {
            for b in 0..self.ranks {
                if a != b || self.reaches_itself {
                    pairs.push((a, b));
                }
            }
        }
        pairs
    }
}

/// Sets the subject's parameters; clears them when dropped.
struct Params<'a>(&'a Subject);

impl<'a> Params<'a> {
    fn set(subject: &'a Subject) -> Params<'a> {
        for (name, value) in &subject.params {
            testkit::set_param(name, value.clone());
        }
        Params(subject)
    }
}

impl Drop for Params<'_> {
    fn drop(&mut self) {
        for (name, _) in &self.0.params {
            testkit::clear_param(name);
        }
    }
}

/// Runs the whole suite on `B` (see the module docs).
///
/// # Panics
///
/// At the first check that fails, with a message naming it.
pub fn run<B: Btl>(subject: &Subject) {
    assert!(subject.ranks >= 1, "a subject runs at least one rank");
    assert!(
        !subject.pairs().is_empty(),
        "the subject reaches no rank (one rank that does not reach itself): run it with more ranks"
    );
    let _lock = testkit::lock();
    let _params = Params::set(subject);
    let logged_before = testkit::log_lines().len();

    refused_before_init(subject);
    modules_are_sane::<B>(subject);
    peers_are_resolved_or_refused::<B>(subject, false);
    peers_are_resolved_or_refused::<B>(subject, true);
    for with_table in [false, true] {
        for placement in [Some(Placement::BtlHeld), Some(Placement::Destination), None] {
            payloads_arrive::<B>(subject, with_table, placement);
        }
    }
    headers_and_bursts_arrive::<B>(subject);
    bad_sends_fail::<B>(subject);
    finalize_then_init_again::<B>(subject);
    rdma::refusals::<B>(subject);
    for with_table in [false, true] {
        rdma::transfers::<B>(subject, with_table);
    }

    let panics: Vec<String> = testkit::log_lines()[logged_before..]
        .iter()
        .filter(|l| l.component == subject.component && l.message.contains("internal error"))
        .map(|l| l.message.clone())
        .collect();
    assert!(
        panics.is_empty(),
        "{}: entry points panicked during the suite: {panics:?}",
        subject.component
    );
}

fn table_cluster<'p, B: Btl>(subject: &Subject) -> Cluster<'p, B> {
    Cluster::with_table(subject.table, subject.component, subject.ranks)
        .unwrap_or_else(|e| panic!("{}: {e}", subject.component))
}

fn value_cluster<'p, B: Btl>(subject: &Subject) -> Cluster<'p, B> {
    Cluster::values(subject.component, subject.ranks)
        .unwrap_or_else(|e| panic!("{}: {e}", subject.component))
}

fn cluster<'p, B: Btl>(subject: &Subject, with_table: bool) -> Cluster<'p, B> {
    if with_table {
        table_cluster(subject)
    } else {
        value_cluster(subject)
    }
}

/// 1. Entry points before `init`.
fn refused_before_init(subject: &Subject) {
    let name = subject.component;
    let handle = BtlHandle::new(subject.table, testkit::context("btl", name));
    // Nothing may be installed when the suite starts; finalize is a no-op
    // then, and clears what an earlier failed test may have left.
    handle.finalize();
    assert_eq!(handle.progress(), 0, "{name}: progress before init");
    assert!(
        handle.contact_card().is_empty(),
        "{name}: a card before init"
    );
    let why = handle
        .add_peer(0, 0, b"card")
        .expect_err("add_peer before init must be refused");
    assert!(
        !why.trim().is_empty(),
        "{name}: add_peer refused without a reason"
    );
    let data = [1u8; 8];
    // SAFETY: the payload is live for the call, and a refused send keeps
    // nothing.
    let outcome = unsafe { handle.send(0, 0, &[0; 4], data.as_ptr(), data.len(), 1) };
    assert_eq!(outcome, SendOutcome::Failed, "{name}: send before init");
    handle.finalize();
}

/// 2. Module descriptions.
fn modules_are_sane<B: Btl>(subject: &Subject) {
    let name = subject.component;
    let table = table_cluster::<B>(subject);
    let values = value_cluster::<B>(subject);
    for rank in 0..subject.ranks {
        let modules = table.modules(rank);
        assert!(!modules.is_empty(), "{name}: rank {rank} has no module");
        for (i, m) in modules.iter().enumerate() {
            let at = format!("{name}: rank {rank} module {i} ({:?})", m.label);
            assert!(!m.label.trim().is_empty(), "{at}: empty label");
            assert!(
                m.eager_limit >= 1 && m.rndv_eager_limit >= 1 && m.max_send_size >= 1,
                "{at}: a size limit is 0: {m:?}"
            );
            assert!(
                m.eager_limit <= m.max_send_size,
                "{at}: eager_limit {} is above max_send_size {}",
                m.eager_limit,
                m.max_send_size
            );
            assert!(m.flags & flags::SEND != 0, "{at}: no SEND flag: {m:?}");
        }
        assert_eq!(
            modules,
            values.modules(rank),
            "{name}: rank {rank}: the exported table and a value describe different modules"
        );
    }
    // A second init of the table's instance is refused with a sentence.
    let handle = BtlHandle::new(subject.table, testkit::context("btl", name));
    let again = handle.init(&table.identity(0), table.recorder(0).receiver());
    match again {
        Err(why) => assert!(
            !why.trim().is_empty(),
            "{name}: second init refused silently"
        ),
        Ok(start) => panic!("{name}: a second init without finalize succeeded: {start:?}"),
    }
    table.assert_clean(&format!("{name}: init"));
    values.assert_clean(&format!("{name}: init"));
}

fn refused(what: &str, answer: Result<u64, String>) {
    match answer {
        Ok(endpoint) => panic!("{what}: add_peer succeeded (endpoint {endpoint})"),
        Err(why) => assert!(!why.trim().is_empty(), "{what}: refused without a reason"),
    }
}

/// 3. Contact cards and `add_peer`.
fn peers_are_resolved_or_refused<B: Btl>(subject: &Subject, with_table: bool) {
    let name = subject.component;
    let mut c = cluster::<B>(subject, with_table);
    let size = subject.ranks;
    let cards: Vec<Vec<u8>> = (0..size).map(|r| c.contact_card(r)).collect();
    if subject.needs_card {
        for (r, card) in cards.iter().enumerate() {
            assert!(!card.is_empty(), "{name}: rank {r} published an empty card");
        }
    }
    // Refusals first: a btl may cache a peer it resolved.
    for (a, b) in subject.pairs() {
        let at = format!("{name}: rank {a} adding rank {b}");
        if subject.needs_card {
            let good = &cards[b as usize];
            let truncated = &good[..good.len() - 1];
            for (what, card) in [
                ("an empty card", &[][..]),
                ("a card missing its last byte", truncated),
                ("a foreign card", &[0xFF; 7][..]),
            ] {
                refused(&format!("{at} with {what}"), c.add_peer(a, 0, b, card));
            }
        }
        let modules = c.modules(a).len() as u32;
        refused(
            &format!("{at} on module {modules}, which does not exist"),
            c.add_peer(a, modules, b, &cards[b as usize]),
        );
        refused(
            &format!("{at} on module {}", u32::MAX),
            c.add_peer(a, u32::MAX, b, &cards[b as usize]),
        );
    }
    for a in 0..size {
        refused(
            &format!("{name}: rank {a} adding rank {size}, outside the job of {size}"),
            c.add_peer(a, 0, size, &cards[0]),
        );
        if !subject.reaches_itself {
            refused(
                &format!("{name}: rank {a} adding itself"),
                c.add_peer(a, 0, a, &cards[a as usize]),
            );
        }
    }
    for (a, b) in subject.pairs() {
        for m in 0..c.modules(a).len() as u32 {
            let first = c.add_peer(a, m, b, &cards[b as usize]).unwrap_or_else(|e| {
                panic!("{name}: rank {a} cannot reach rank {b} on module {m}: {e}")
            });
            let again = c.add_peer(a, m, b, &cards[b as usize]);
            assert!(
                again.is_ok(),
                "{name}: rank {a} adding rank {b} on module {m} a second time (endpoint {first}): {again:?}"
            );
        }
    }
    for r in 0..size {
        let counts = c.recorder(r).counts();
        assert_eq!(
            counts,
            Default::default(),
            "{name}: rank {r}: callbacks without progress (during add_peer)"
        );
    }
    c.assert_clean(&format!("{name}: add_peer"));
}

/// The payload sizes of [`SIZES`] module 0 of `modules` carries (a pml
/// never sends a fragment larger than a module's largest limit: eager,
/// rendezvous or pipelined), and that largest size itself.
fn sizes_within(modules: &[crate::module::BtlModuleInfo]) -> Vec<usize> {
    let m = &modules[0];
    let largest = m.eager_limit.max(m.rndv_eager_limit).max(m.max_send_size);
    let mut sizes: Vec<usize> = SIZES.iter().copied().filter(|&n| n <= largest).collect();
    if !sizes.contains(&largest) && largest < *SIZES.last().expect("sizes") {
        sizes.push(largest);
    }
    sizes
}

/// Resolves every pair on module 0: `endpoints[a][b]`.
fn connect_all<B: Btl>(subject: &Subject, c: &mut Cluster<'_, B>) -> Vec<Vec<u64>> {
    let mut endpoints = vec![vec![u64::MAX; subject.ranks as usize]; subject.ranks as usize];
    for (a, b) in subject.pairs() {
        endpoints[a as usize][b as usize] = c.connect(a, 0, b).unwrap_or_else(|e| {
            panic!("{}: rank {a} cannot reach rank {b}: {e}", subject.component)
        });
    }
    endpoints
}

fn accepted(subject: &Subject, what: &str, outcome: SendOutcome) -> bool {
    match outcome {
        SendOutcome::Done => false,
        SendOutcome::Queued => true,
        other => panic!("{}: {what} answered {other:?}", subject.component),
    }
}

/// 4. Payloads of every size, with a placement (`None`: alternating).
fn payloads_arrive<B: Btl>(subject: &Subject, with_table: bool, placement: Option<Placement>) {
    let name = subject.component;
    let what = format!(
        "{name} ({}, payloads {})",
        if with_table {
            "exported table"
        } else {
            "values"
        },
        match placement {
            Some(Placement::BtlHeld) => "held by the btl",
            Some(Placement::Destination) => "to destinations",
            None => "alternating",
        }
    );
    let sizes = sizes_within(cluster::<B>(subject, with_table).modules(0));
    let payloads: Vec<Vec<u8>> = sizes.iter().map(|&n| pattern(n, n as u32)).collect();
    let mut c = cluster::<B>(subject, with_table);
    let endpoints = connect_all(subject, &mut c);
    for r in 0..subject.ranks {
        match placement {
            Some(p) => c.recorder(r).set_default_placement(p),
            None => c
                .recorder(r)
                .place_next((0..2 * sizes.len() * subject.ranks as usize).map(|i| {
                    if i % 2 == 0 {
                        Placement::Destination
                    } else {
                        Placement::BtlHeld
                    }
                })),
        }
    }
    let mut queued = vec![0usize; subject.ranks as usize];
    let mut cookie = 0u64;
    for round in 0..2 {
        for (a, b) in subject.pairs() {
            let ep = endpoints[a as usize][b as usize];
            for (i, payload) in payloads.iter().enumerate() {
                cookie += 1;
                let header_len = STAMP_LEN + (i + round * 7) % (MAX_HEADER - STAMP_LEN + 1);
                let (stamp, outcome) =
                    c.send_stamped(a, 0, ep, payload, payload.len() as u32, header_len, cookie);
                let sent = format!(
                    "{what}: rank {a} sending {} bytes to rank {b}",
                    stamp.payload_len
                );
                if accepted(subject, &sent, outcome) {
                    queued[a as usize] += 1;
                }
            }
        }
        // The first round is delivered before the second is sent; the
        // second is drained at the end.
        if round == 0 {
            c.drain();
        }
    }
    c.drain();
    c.assert_clean(&what);
    for (a, b) in subject.pairs() {
        let ep = endpoints[a as usize][b as usize];
        let stream = c.stream(a, 0, ep).expect("the pair sent");
        assert_eq!(
            c.recorder(b).received(stream),
            2 * sizes.len() as u64,
            "{what}: rank {b} received a different number of fragments from rank {a}"
        );
        let from_a: Vec<_> = c
            .recorder(b)
            .fragments()
            .into_iter()
            .filter(|f| f.peer == a)
            .collect();
        assert_eq!(
            from_a.len(),
            2 * sizes.len(),
            "{what}: fragments recorded at rank {b}"
        );
        for (f, expect) in from_a.iter().zip(payloads.iter().chain(&payloads)) {
            assert!(
                f.payload == *expect,
                "{what}: a {}-byte payload differs",
                expect.len()
            );
        }
    }
    for r in 0..subject.ranks {
        assert_eq!(
            c.recorder(r).counts().send_done,
            queued[r as usize],
            "{what}: rank {r}: on_send_done calls differ from the sends answered Queued"
        );
    }
}

/// 4. Every header length, and a burst of small sends.
fn headers_and_bursts_arrive<B: Btl>(subject: &Subject) {
    let name = subject.component;
    let small: Vec<u8> = pattern(5, 5);
    let burst_payload: Vec<u8> = pattern(8, 8);
    let mut c = value_cluster::<B>(subject);
    let endpoints = connect_all(subject, &mut c);
    let mut cookie = 1u64 << 32;
    for r in 0..subject.ranks {
        c.recorder(r)
            .place_next((0..(MAX_HEADER + 1) * subject.ranks as usize).map(|i| {
                if i % 3 == 0 {
                    Placement::Destination
                } else {
                    Placement::BtlHeld
                }
            }));
    }
    let header_of = |len: usize, a: u32| -> Vec<u8> { pattern(len, 1000 + a) };
    for (a, b) in subject.pairs() {
        let ep = endpoints[a as usize][b as usize];
        for len in 0..=MAX_HEADER {
            cookie += 1;
            let header = header_of(len, a);
            let outcome = c.send_accepted(a, 0, ep, &header, &small, cookie);
            accepted(subject, &format!("rank {a}: a {len}-byte header"), outcome);
        }
    }
    // Unstamped sends a btl answered Done leave nothing for `drain` to
    // wait for: wait for the fragments themselves.
    let pairs = subject.pairs();
    c.pump("every header length", |c| {
        pairs.iter().all(|&(a, b)| {
            c.recorder(b)
                .fragments()
                .iter()
                .filter(|f| f.peer == a)
                .count()
                > MAX_HEADER
        })
    });
    c.drain();
    c.assert_clean(&format!("{name}: header lengths"));
    for (a, b) in subject.pairs() {
        let got: Vec<(Vec<u8>, Vec<u8>)> = c
            .recorder(b)
            .fragments()
            .into_iter()
            .filter(|f| f.peer == a)
            .map(|f| (f.header, f.payload))
            .collect();
        let want: Vec<(Vec<u8>, Vec<u8>)> = (0..=MAX_HEADER)
            .map(|len| (header_of(len, a), small.clone()))
            .collect();
        assert!(
            got == want,
            "{name}: headers of 0 to {MAX_HEADER} bytes from rank {a} to rank {b} did not arrive intact and in order: got {:?}", got.iter().map(|(h, p)| (h.len(), p.len())).collect::<Vec<_>>()
        );
    }
    // A burst: every send queued before any progress.
    for r in 0..subject.ranks {
        c.recorder(r).set_recording(false);
    }
    for (a, b) in subject.pairs() {
        let ep = endpoints[a as usize][b as usize];
        for _ in 0..BURST {
            cookie += 1;
            let (_, outcome) = c.send_stamped(a, 0, ep, &burst_payload, 8, STAMP_LEN, cookie);
            accepted(
                subject,
                &format!("rank {a}: a burst send to rank {b}"),
                outcome,
            );
        }
    }
    c.drain();
    for (a, b) in subject.pairs() {
        let ep = endpoints[a as usize][b as usize];
        let stream = c.stream(a, 0, ep).expect("the pair sent");
        assert_eq!(
            c.recorder(b).received(stream),
            BURST as u64,
            "{name}: the burst from rank {a} to rank {b}"
        );
    }
    c.assert_clean(&format!("{name}: header lengths and a burst"));
}

/// 5. Sends the adapter must refuse.
fn bad_sends_fail<B: Btl>(subject: &Subject) {
    let name = subject.component;
    let payload = pattern(16, 16);
    let mut c = table_cluster::<B>(subject);
    let endpoints = connect_all(subject, &mut c);
    let card = c.contact_card(0);
    let long = [7u8; MAX_HEADER + 1];
    let target = subject.pairs().into_iter().find(|p| p.0 == 0);
    let ep = target.map_or(0, |(_, b)| endpoints[0][b as usize]);
    assert_eq!(
        c.send(0, 0, ep, &long, &payload, 1),
        SendOutcome::Failed,
        "{name}: a {}-byte header",
        MAX_HEADER + 1
    );
    let handle = c.handle(0).expect("rank 0 is the table");
    // SAFETY: a null payload with a length is what the check refuses; the
    // btl never reads it.
    let outcome = unsafe { handle.send(0, ep, &[1, 2, 3], std::ptr::null(), 10, 2) };
    assert_eq!(
        outcome,
        SendOutcome::Failed,
        "{name}: a null payload of 10 bytes"
    );
    assert_eq!(
        c.contact_card(0),
        card,
        "{name}: the card changed after refused sends"
    );
    // The component keeps working.
    if let Some((_, b)) = target {
        let (_, outcome) = c.send_stamped(0, 0, ep, &payload, 16, STAMP_LEN, 3);
        accepted(subject, "a send after refused ones", outcome);
        c.drain();
        let stream = c.stream(0, 0, ep).expect("rank 0 sent");
        assert_eq!(
            c.recorder(b).received(stream),
            1,
            "{name}: a send after refused ones"
        );
    }
    c.assert_clean(&format!("{name}: refused sends"));
}

/// 6. `finalize`, then `init` again.
fn finalize_then_init_again<B: Btl>(subject: &Subject) {
    let name = subject.component;
    let payload = pattern(4096, 4096);
    for with_table in [true, false] {
        let mut first_modules = None;
        for round in 0..2 {
            let mut c = cluster::<B>(subject, with_table);
            let modules = c.modules(0).to_vec();
            if let Some(first) = &first_modules {
                assert_eq!(first, &modules, "{name}: modules after init again");
            }
            first_modules = Some(modules);
            let endpoints = connect_all(subject, &mut c);
            for (a, b) in subject.pairs() {
                let ep = endpoints[a as usize][b as usize];
                let (_, outcome) = c.send_stamped(a, 0, ep, &payload, 4096, STAMP_LEN, 1);
                accepted(
                    subject,
                    &format!("init round {round}: rank {a} to rank {b}"),
                    outcome,
                );
            }
            c.drain();
            c.assert_clean(&format!("{name}: init round {round}"));
        }
    }
}
