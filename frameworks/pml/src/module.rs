//! The pml module: what a pml component hands the MPI layer (through
//! [`oxmpi_plugin_api::ModuleTable`], layout-checked), and what the MPI
//! layer hands it.
//!
//! # The contract
//!
//! - **Threads.** The MPI layer calls every entry point under its lock:
//!   never two at once.
//! - **Ranks.** The pml works in job ranks (`MPI_COMM_WORLD` ranks) and
//!   context ids; the MPI layer translates communicator ranks.
//! - **Transport.** [`PmlModule::transport`] says what the pml moves
//!   messages over ([`PmlTransport`]): the btls, one MTL, or a library of
//!   its own. A pml over an MTL is usable only when an MTL is: the MPI
//!   layer selects one before choosing the pml, and sets the pml aside
//!   with the MTLs' reasons when none is.
//! - **Init.** [`init`](PmlModule::init) receives the btl components the
//!   MPI layer selected ([`BtlCandidate`]; none for a pml that does not use
//!   btls) or the MTL ([`MtlCandidate`], for a pml over an MTL),
//!   initializes what it uses (registering its receiver with btls),
//!   publishes contact cards through [`PmlCore::modex_put`], registers
//!   progress functions with [`PmlCore::register_progress`], and answers
//!   the [`Limits`] of the tags and context ids it carries. The MPI layer
//!   then fences the modex; peers' cards are read lazily with
//!   [`PmlCore::modex_get`] when a peer is first used.
//! - **Requests.** [`isend`](RequestTable::isend) and
//!   [`irecv`](RequestTable::irecv) start an operation and hand out a request
//!   handle, or the handle 0 for an operation that completed without error
//!   during the call (`irecv` then fills the status; there is nothing to
//!   test or free); [`test`](RequestTable::test) reports completion with a
//!   [`RequestStatus`]; [`take`](RequestTable::take) does the same and
//!   releases a request that completed without error;
//!   [`free`](RequestTable::free) releases a handle (a completed one, or a
//!   send the caller no longer watches: it still completes). The buffers
//!   must stay valid until the request completes. A handle's top bit is
//!   always clear: the MPI layer uses it for requests of its own.
//! - **Signals.** [`signals`](RequestTable::signals) gives a block of words
//!   the pml keeps current ([`PmlSignals`]): a counter of entries that may
//!   have completed requests, so a waiting caller tests again only after
//!   one; whether [`progress`](RequestTable::progress) has work, so it is
//!   called only then.
//! - **Completion slots.** A request started with a [`Completion`] slot
//!   (`done` in [`SendArgs`] and [`RecvArgs`]) is released by the pml as
//!   soon as it completes without error, its status published in the
//!   slot, so the waiter needs no further call; one that completes in
//!   error is kept and its slot says so.
//!   A handle the pml does not know — freed, or never issued — is refused:
//!   `test` answers it complete with an error (never "not complete", so no
//!   wait hangs, and never the status of a request issued since),
//!   `request_error` says why, `cancel` answers false and `free` does
//!   nothing.
//! - **Errors.** Entry points that can fail return false and fill an
//!   `error` string: one or more sentences naming the peer and what went
//!   wrong. A request that completes in error says which in
//!   [`RequestStatus::error`]; [`request_error`](RequestTable::request_error)
//!   gives the sentence.
//!
//! Nobody writes these tables by hand: a component implements
//! [`crate::adapter::Pml`] and exports it with
//! [`export_pml_component!`](crate::export_pml_component) (which also
//! checks exclusive entry and catches panics on every entry point), and
//! the MPI layer calls it through [`crate::handle::PmlHandle`].

use abi_stable::std_types::{ROption, RSlice, RStr, RString};
use abi_stable::StableAbi;
use oxmpi_framework_btl::module::{BtlComponentModule, JobIdentity};
pub use oxmpi_framework_mtl::module::MtlCandidate;
use oxmpi_plugin_api::ComponentContext;

pub use oxmpi_framework_requests::table::RequestTable;
pub use oxmpi_framework_requests::{
    publish_completion, Completed, Completion, Limits, ModexLookup, MpiServices as PmlCore, Pieces,
    ProgressFn, RecvArgs, RequestError, RequestStatus, SendArgs, SendMode, Signals as PmlSignals,
    ANY_SOURCE, ANY_TAG,
};

/// A btl component the MPI layer selected, for the pml to use.
#[repr(C)]
#[derive(StableAbi, Copy, Clone)]
pub struct BtlCandidate {
    /// The component's name (`self`, `tcp`, …).
    pub name: RStr<'static>,
    /// Its entry points.
    pub module: &'static BtlComponentModule,
    /// Its context (parameters and logging), for its `init`.
    pub context: ComponentContext,
}

/// What a pml moves messages over, which tells the MPI layer what to
/// select for it before its `init`.
#[repr(u8)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq)]
pub enum PmlTransport {
    /// The btl components (every usable one is offered).
    Btls = 0,
    /// One mtl component: the pml is usable only when an MTL is.
    Mtl = 1,
    /// A network library the pml drives itself (no btl, no MTL).
    Own = 2,
}

/// Entry points of a pml component.
#[repr(C)]
#[derive(StableAbi)]
pub struct PmlModule {
    /// What the pml moves messages over.
    pub transport: PmlTransport,
    /// Initializes the pml over the given btls or MTL, whichever its
    /// `transport` asks for (see the module docs), and writes the
    /// `limits` of the tags and context ids it carries. Returns false with
    /// `error` set if it cannot run.
    pub init: unsafe extern "C" fn(
        context: &ComponentContext,
        identity: &JobIdentity,
        core: PmlCore,
        btls: RSlice<'_, BtlCandidate>,
        mtl: ROption<MtlCandidate>,
        limits: &mut Limits,
        error: &mut RString,
    ) -> bool,
    /// The request entry points (see the module docs).
    pub requests: RequestTable,
}
