//! The pml conformance suite: what every pml component's tests run.
//!
//! [`run`] takes a [`Subject`] — the component's name and its exported
//! [`PmlModule`] table (the `MODULE` of `export_pml_component!`) — and
//! drives the table through a [`PmlHandle`] as the MPI layer does, as rank
//! 0 of a one-rank job (a pml's instance is process-global), over the
//! kit's [`loopback`] btl and a [`KitCore`](super::KitCore) (each start is
//! a [`Session`]). It checks, naming the btl behaviour of each failure:
//!
//! 1. **Lifecycle.** Entry points before `init` are refused (a send or
//!    receive with a sentence, `test` answering complete in error); `init`
//!    over the loopback btl succeeds and starts it; a second `init`
//!    without `finalize` is refused with a sentence; `finalize` finalizes
//!    the btl; `finalize` then `init` again works, three times, with
//!    traffic each time; a btl that describes no module makes `init` fail
//!    with a sentence, or sends to the rank fail as `Unreachable` with one.
//! 2. **Data.** Sends to itself of 0, 1, 1000 bytes, 64 KiB, 1 MiB and 4
//!    MiB (eager and rendezvous with the loopback's limits of a 4 KiB
//!    eager limit and 64 KiB fragments), with the receive posted first and
//!    the message arriving first, arrive intact with the right status
//!    (source, tag, count, no error); bytes after the receive's length are
//!    untouched; the send buffer is overwritten as soon as the send
//!    completes, so a pml that completes a send while a btl still reads
//!    its buffer is caught. All of it under each btl behaviour of
//!    [`BEHAVIOURS`]: `Queued` with payloads placed at the pml's
//!    destinations; `Done` with payloads kept in the btl's memory;
//!    alternating `Done`/`Queued` with `WouldBlock` every third send and
//!    one fragment per progress call; two modules delivered last-first
//!    with payloads handed over in place. Then under each of
//!    [`RDMA_BEHAVIOURS`], where the btl also offers get, put or both
//!    (copies in memory between the two addresses, at once or on a later
//!    progress call): every byte must arrive whether the pml uses them or
//!    not, and a buffer a get reads or a put writes must stay valid until
//!    the pml completes its request.
//! 3. **Matching.** Tags, `ANY_TAG` and `ANY_SOURCE` (posted first and
//!    arriving first; a receive for a later tag does not wait for an
//!    earlier message of another tag); an internal (negative) tag is
//!    matched by its own tag only, never by `ANY_TAG` (nor reported by a
//!    wildcard probe), and tag `i32::MAX` is an ordinary tag;
//!    non-overtaking order of 120 messages of mixed sizes and modes with
//!    one (context, source, tag), some received by wildcards, also under
//!    btls that reorder across modules and refuse sends, and under each
//!    btl that offers get/put; under a btl that
//!    reorders and delivers one fragment per progress call, what a
//!    wildcard `iprobe` reports is the next message sent, and what the
//!    following receive with the same arguments gets; distinct contexts
//!    (up to `u32::MAX`) never match each other, and probes do not cross
//!    them either.
//! 4. **Truncation.** A message longer than the receive (eager,
//!    rendezvous, synchronous, into an empty buffer; posted first and
//!    arriving first; under each btl behaviour, with and without get/put)
//!    completes the receive with
//!    `Truncated`, `count` = the receive's length, its first bytes in the
//!    buffer and nothing written beyond it, a sentence from
//!    `request_error`; the send completes without error.
//! 5. **Requests.** A synchronous send completes only after a receive
//!    matched it (not while it is unexpected, nor while only a receive for
//!    another tag is posted; also under a btl that refuses and reorders);
//!    `cancel` of an unmatched receive completes it
//!    `cancelled` and a later message does not land in its buffer, while
//!    `cancel` of a matched receive or of a send answers false; `iprobe`
//!    reports source, tag and the full length (also of a rendezvous)
//!    before the receive, without consuming the message, in arrival order
//!    for wildcards; `improbe` claims a message (eager or rendezvous) so
//!    that no probe sees it again, `imrecv` receives it (truncated into a
//!    short buffer) and refuses a handle received once; a send freed before it completed still completes (its
//!    message arrives, the btl gets every payload back); a stale handle —
//!    freed, its slot reused by a new request, never issued — is refused
//!    without a panic: `test` answers complete in error (never `None`,
//!    never another request's status), `request_error` a sentence,
//!    `cancel` false, `free` nothing (the new request is unaffected).
//!    Requests started with a completion slot (under three btl
//!    behaviours): a receive (from a named source, from any) and a
//!    rendezvous send stay "running" until they complete, then their slot
//!    holds the status and the handle is stale; a truncated receive's
//!    slot says "failed" and the request stays for `take` and
//!    `request_error`; a cancelled receive is published cancelled; the
//!    slots of a receive and a send freed while running are never
//!    written (their message still arrives); a receive that completes
//!    during `irecv` (handle 0) leaves its slot alone.
//! 6. **Peer failure.** When the btl fails the peer, a pending receive
//!    from it, a rendezvous send waiting for its match and an eager send
//!    whose payload the btl held (dropped without `on_send_done`) all
//!    complete with `PeerFailed` and a sentence; a later send fails at
//!    once with `PeerFailed` and a sentence carrying the btl's reason; a
//!    later receive from it is refused or completes with `PeerFailed`.
//!    Failing the peer in the middle of a 4 MiB rendezvous (the receive
//!    matched, fragments still coming) and while a send waits on a btl
//!    that answers `WouldBlock` completes the receive and both sends with
//!    `PeerFailed`, without writing past the receive. Under a btl that
//!    offers get (then put) and finishes one per progress call, failing
//!    the peer in the middle of a 4 MiB transfer completes both requests
//!    with `PeerFailed`; and a btl whose get/put fails (`on_rdma_done`
//!    with a failed status, then the peer lost) completes both with
//!    `PeerFailed` too.
//! 7. **Contracts and logs.** In every session, the pml breaks none of the
//!    loopback btl's checks (cards, endpoints, payloads unchanged while
//!    held, no `send` or `progress` from a callback, no btl progress
//!    outside the MPI layer's round) nor the modex's (no put after the
//!    fence, no get before it), and gives every held payload back; over
//!    the whole suite the component logs nothing at
//!    [`verbosity::ERROR`] (an internal error, a dropped fragment) and the
//!    btl neither.
//!
//! The suite holds [`lock`](oxmpi_plugin_api::testkit::lock) while it runs,
//! sets the subject's parameters through the fake services (clearing them
//! at the end) and leaves the loopback btl's default behaviour set.
//!
//! # Example
//!
//! A pml component's tests (e.g. `tests/conformance.rs`) call it once:
//!
//! ```ignore
//! use oxmpi_framework_pml::testkit::conformance::{self, Subject};
//! use oxmpi_plugin_api::ParamValue;
//!
//! #[test]
//! fn the_pml_conformance_suite_passes() {
//!     conformance::run(&Subject::new("ob1", &mca_pml_ob1::MODULE));
//! }
//!
//! #[test]
//! fn the_suite_passes_with_a_pipeline_of_one() {
//!     conformance::run(
//!         &Subject::new("ob1", &mca_pml_ob1::MODULE)
//!             .param("pml_ob1_send_pipeline_depth", ParamValue::Int(1)),
//!     );
//! }
//! ```
//!
//! The crate's dev-dependency enables the kit:
//! `oxmpi-framework-pml = { …, features = ["testkit"] }`.

mod faults;
mod matching;
mod messages;
mod requests;
mod slots;

use super::loopback::{self, Answer, Behaviour, Placement, RdmaAnswer, RdmaOffer};
use super::session::{Buf, Session};
use crate::module::{PmlModule, RequestError, RequestStatus};
use oxmpi_framework_btl::testkit::pattern;
use oxmpi_plugin_api::{testkit, verbosity, ParamValue};

#[cfg(doc)]
use crate::handle::PmlHandle;

/// The message sizes every pml carries in the suite: eager and rendezvous
/// over the loopback's default limits.
pub const SIZES: [usize; 6] = [0, 1, 1000, 64 << 10, 1 << 20, 4 << 20];

/// The btl behaviours the data checks run under, with their names.
pub const BEHAVIOURS: [(&str, Behaviour); 4] = [
    (
        "btl answers Queued, places payloads at the pml's destinations",
        Behaviour::DEFAULT,
    ),
    (
        "btl answers Done, keeps payloads in its own memory",
        Behaviour {
            answer: Answer::Done,
            placement: Placement::Keep,
            ..Behaviour::DEFAULT
        },
    ),
    (
        "btl alternates Done and Queued, answers WouldBlock every 3rd send, delivers one fragment per progress",
        Behaviour {
            answer: Answer::Alternating,
            would_block_every: 3,
            deliver_per_progress: 1,
            ..Behaviour::DEFAULT
        },
    ),
    (
        "btl has two modules delivered last-first, answers Queued, hands payloads over in place",
        Behaviour {
            modules: 2,
            placement: Placement::Keep,
            ..Behaviour::DEFAULT
        },
    ),
];

/// The btl behaviours with get/put the data, truncation and synchronous
/// checks also run under (a pml may use get/put or not; the data must
/// arrive either way).
pub const RDMA_BEHAVIOURS: [(&str, Behaviour); 4] = [
    (
        "btl offers get only, finishes gets on a later progress, 64 KiB per get",
        Behaviour {
            rdma: RdmaOffer::Get,
            rdma_answer: RdmaAnswer::Queued,
            max_rdma_size: 64 << 10,
            ..Behaviour::DEFAULT
        },
    ),
    (
        "btl offers put only, puts at once",
        Behaviour {
            rdma: RdmaOffer::Put,
            rdma_answer: RdmaAnswer::Done,
            ..Behaviour::DEFAULT
        },
    ),
    (
        "btl offers put only, finishes puts later, one event per progress, WouldBlock every 3rd send",
        Behaviour {
            rdma: RdmaOffer::Put,
            rdma_answer: RdmaAnswer::Queued,
            deliver_per_progress: 1,
            would_block_every: 3,
            ..Behaviour::DEFAULT
        },
    ),
    (
        "btl has two modules offering get and put, gets at once, 100000 bytes per get",
        Behaviour {
            modules: 2,
            rdma: RdmaOffer::Both,
            rdma_answer: RdmaAnswer::Done,
            max_rdma_size: 100_000,
            placement: Placement::Keep,
            ..Behaviour::DEFAULT
        },
    ),
];

/// The pml component under test.
#[derive(Clone)]
pub struct Subject {
    /// The component's name (`ob1`): its parameters are `pml_<name>_*`,
    /// its log lines are checked under it.
    pub component: &'static str,
    /// Its exported table (the `MODULE` of `export_pml_component!`).
    pub table: &'static PmlModule,
    /// Parameters set through the fake services while the suite runs
    /// (full names; default none).
    pub params: Vec<(String, ParamValue)>,
}

impl Subject {
    /// The component `component` with its table, no parameters set.
    pub fn new(component: &'static str, table: &'static PmlModule) -> Subject {
        Subject {
            component,
            table,
            params: Vec::new(),
        }
    }

    /// Sets parameter `full_name` to `value` while the suite runs.
    pub fn param(mut self, full_name: &str, value: ParamValue) -> Subject {
        self.params.push((full_name.to_string(), value));
        self
    }
}

/// Sets the subject's parameters; clears them (and the loopback's
/// behaviour) when dropped.
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
        loopback::reset();
    }
}

/// Runs the whole suite on the subject (see the module docs).
///
/// # Panics
///
/// At the first check that fails, with a message naming the component,
/// the check and the btl behaviour.
pub fn run(subject: &Subject) {
    let _lock = testkit::lock();
    let _params = Params::set(subject);
    let logged_before = testkit::log_lines().len();

    faults::lifecycle(subject);
    for (name, behaviour) in BEHAVIOURS.into_iter().chain(RDMA_BEHAVIOURS) {
        messages::sizes(subject, name, behaviour);
    }
    matching::tags_and_wildcards(subject);
    for (name, behaviour) in [BEHAVIOURS[0], BEHAVIOURS[2], BEHAVIOURS[3]] {
        matching::non_overtaking(subject, name, behaviour);
    }
    matching::probe_then_receive(subject);
    matching::contexts(subject);
    for (name, behaviour) in BEHAVIOURS.into_iter().chain(RDMA_BEHAVIOURS) {
        messages::truncation(subject, name, behaviour);
    }
    for (name, behaviour) in [BEHAVIOURS[0], BEHAVIOURS[2]]
        .into_iter()
        .chain(RDMA_BEHAVIOURS)
    {
        requests::synchronous(subject, name, behaviour);
    }
    for (name, behaviour) in RDMA_BEHAVIOURS {
        matching::non_overtaking(subject, name, behaviour);
    }
    requests::cancel(subject);
    requests::iprobe(subject);
    requests::freed_sends_complete(subject);
    requests::stale_handles(subject);
    requests::take(subject);
    requests::improbe(subject);
    for (name, behaviour) in [BEHAVIOURS[0], BEHAVIOURS[2], RDMA_BEHAVIOURS[0]] {
        slots::completion_slots(subject, name, behaviour);
    }
    faults::peer_failure(subject);
    faults::peer_failure_mid_transfer(subject);
    for offer in [RdmaOffer::Get, RdmaOffer::Put] {
        faults::peer_failure_during_rdma(subject, offer);
        faults::failed_rdma(subject, offer);
    }
    faults::finalize_then_init_again(subject);

    let errors: Vec<String> = testkit::log_lines()[logged_before..]
        .iter()
        .filter(|l| {
            l.level <= verbosity::ERROR
                && ((l.framework == "pml" && l.component == subject.component)
                    || (l.framework == "btl" && l.component == loopback::COMPONENT))
        })
        .map(|l| format!("{} {}: {}", l.framework, l.component, l.message))
        .collect();
    assert!(
        errors.is_empty(),
        "pml {}: lines logged at ERROR level during the suite: {errors:#?}",
        subject.component
    );
}

// ----- helpers shared by the checks -----

/// Guard bytes after a receive's length.
pub(crate) const GUARD: usize = 64;
/// The value of guard bytes and of untouched receive buffers.
pub(crate) const CANARY: u8 = 0xA5;
/// The value a completed send's buffer is overwritten with.
pub(crate) const SCRIBBLE: u8 = 0x5A;

/// Starts the subject over the loopback btl with `behaviour`.
pub(crate) fn start(subject: &Subject, behaviour: Behaviour, at: &str) -> Session {
    loopback::set_behaviour(behaviour);
    let s = Session::start(subject.table, subject.component)
        .unwrap_or_else(|e| panic!("{at}: init over the loopback btl failed: {e}"));
    assert!(
        loopback::is_started(),
        "{at}: the pml's init succeeded without starting the loopback btl"
    );
    s
}

/// Ends a session: progress until the btl holds no payload, checks the
/// contracts, finalizes, and checks the btl was finalized.
pub(crate) fn end(mut s: Session, at: &str) {
    let mut rounds = 0;
    while loopback::stats().outstanding() > 0 && rounds < 10_000 {
        s.round();
        rounds += 1;
    }
    let stats = loopback::stats();
    assert_eq!(
        stats.outstanding(),
        0,
        "{at}: the btl still holds {} payload(s) after every request completed (the pml left fragments in flight): {stats:?}",
        stats.outstanding()
    );
    s.assert_clean(at);
    s.finalize();
    assert!(
        !loopback::is_started(),
        "{at}: the pml's finalize did not finalize the loopback btl it started"
    );
}

/// A receive buffer of `len` bytes plus [`GUARD`] bytes, all [`CANARY`].
pub(crate) fn recv_buffer(s: &mut Session, len: usize) -> Buf {
    s.buffer(vec![CANARY; len + GUARD])
}

/// Checks that nothing after the first `len` bytes of `buf` was written.
pub(crate) fn check_guard(s: &Session, buf: Buf, len: usize, at: &str) {
    if let Some(i) = s.bytes(buf)[len..].iter().position(|&b| b != CANARY) {
        panic!(
            "{at}: the pml wrote byte {} of a receive buffer whose receive has {len} bytes",
            len + i
        );
    }
}

/// Checks that `buf` starts with `want`.
pub(crate) fn check_data(s: &Session, buf: Buf, want: &[u8], at: &str) {
    let got = &s.bytes(buf)[..want.len()];
    if let Some(i) = got.iter().zip(want).position(|(a, b)| a != b) {
        panic!(
            "{at}: received data differs from the message at byte {i} of {} (got {:#04x}, sent {:#04x})",
            want.len(),
            got[i],
            want[i]
        );
    }
}

/// Checks a completed receive's status.
pub(crate) fn check_status(
    got: RequestStatus,
    tag: i32,
    count: usize,
    error: RequestError,
    at: &str,
) {
    let want = RequestStatus {
        source: 0,
        tag,
        count,
        cancelled: false,
        error,
    };
    assert_eq!(got, want, "{at}: the receive's status");
}

/// Checks a completed send's status: not cancelled, no error.
pub(crate) fn check_sent(got: RequestStatus, at: &str) {
    assert!(
        got.error == RequestError::None && !got.cancelled,
        "{at}: the send completed with {got:?}"
    );
}

/// A message of `len` bytes with `seed`, as a buffer of the session.
pub(crate) fn message(s: &mut Session, len: usize, seed: u32) -> (Buf, Vec<u8>) {
    let bytes = pattern(len, seed);
    (s.buffer(bytes.clone()), bytes)
}
