//! The coll module: what a coll component hands the MPI layer (through
//! [`oxmpi_plugin_api::ModuleTable`], layout-checked), and what the MPI
//! layer hands it.
//!
//! # The contract
//!
//! - **Init.** [`init`](CollModule::init) runs once per process, after the
//!   pml is up, with the MPI layer's point-to-point services
//!   ([`CollCore`]). A component whose `init` fails is not used.
//! - **Per communicator.** For every communicator it creates, the MPI
//!   layer offers it to every initialized component with
//!   [`comm_query`](CollModule::comm_query): the component declines (with
//!   a reason) or answers a priority, the set of operations it provides
//!   ([`OpSet`]) and a handle of its own for that communicator. The MPI
//!   layer takes each operation from the highest-priority component that
//!   provides it, and calls [`comm_release`](CollModule::comm_release)
//!   once for every handle a query gave, when the communicator is freed
//!   (at once for a component that serves no operation of it).
//! - **Calls.** [`run`](CollModule::run) performs one blocking collective
//!   ([`CollCall`]) on a communicator handle. The MPI layer holds no lock
//!   during the call: the component moves data with the [`CollCore`]
//!   services, which are ordinary non-blocking sends and receives and a
//!   wait (they take the MPI layer's lock themselves), so other threads
//!   make progress meanwhile. The MPI layer makes at most one `run` or
//!   `start` at a time on a handle (it refuses a second collective on a
//!   communicator itself: MPI forbids concurrent collectives on one
//!   communicator); calls on different communicators may run at once from
//!   different threads. A
//!   component may answer [`RunOutcome::PassedOn`] for a call it does not
//!   take (a size beyond its reach): the MPI layer then runs the call with
//!   the next component, by priority, that provides the operation on the
//!   communicator.
//! - **Non-blocking calls.** For the operations of
//!   [`CommAnswer::nb_ops`], [`start`](CollModule::start) begins a
//!   non-blocking collective and returns an operation handle without
//!   waiting for anything; the MPI layer's progress engine calls
//!   [`poll`](CollModule::poll) on it (without its lock, from one thread at
//!   a time) until it answers done or failed, which also releases it. The
//!   call's buffers and count arrays stay valid until then (the component
//!   copies the arrays anyway). Several operations may be in flight on one
//!   communicator, started in the same order at every member; each gets a
//!   tag of its own from the MPI layer ([`TAG_NB_FIRST`] down), which all
//!   of its messages use.
//! - **Data.** Buffers are contiguous bytes. Data-movement operations
//!   (bcast, gather, scatter, allgather, alltoall and their `v` forms)
//!   count bytes; reductions count elements of a predefined
//!   [`ElementCode`] and combine them with a predefined [`OpCode`] or a
//!   [`UserOp`]. The MPI layer packs and unpacks anything else.
//! - **Ranks and tags.** A [`CommDesc`] gives the members' job ranks in
//!   communicator order; the services take job ranks and the
//!   communicator's context id. Collective traffic uses negative tags,
//!   which no application receive matches (`ANY_TAG` matches tags ≥ 0
//!   only): blocking calls in the range [`TAG_FIRST`] down to above
//!   [`TAG_NB_FIRST`], chosen by the component; non-blocking calls the
//!   tag the MPI layer gives, from [`TAG_NB_FIRST`] to [`TAG_LAST`].
//! - **Errors.** Entry points that fail return false and fill an `error`
//!   string with one or more sentences.
//!
//! Nobody writes these tables by hand: a component implements
//! [`crate::adapter::Coll`] and exports it with
//! [`export_coll_component!`](crate::export_coll_component); the MPI layer
//! calls it through [`crate::handle::CollHandle`].

use abi_stable::std_types::{RSlice, RString};
use abi_stable::StableAbi;
use oxmpi_plugin_api::ComponentContext;
use std::ffi::c_void;

/// The highest tag collective traffic uses (tags ≥ 0 are the
/// application's; −1 is `ANY_TAG`).
pub const TAG_FIRST: i32 = -16;
/// The highest tag of non-blocking collectives: the MPI layer gives each
/// non-blocking collective of a communicator the next tag from here down
/// to [`TAG_LAST`] (then from here again); blocking calls use tags above.
pub const TAG_NB_FIRST: i32 = -64;
/// The lowest tag collective traffic uses: within a 20-bit signed tag
/// field (down to −524,288), the narrowest a pml's transport has (the ofi
/// MTL's `ofi_tag_2` layout).
pub const TAG_LAST: i32 = -500_000;

/// The collective operations, as [`CollCall::kind`] and as bits of an
/// [`OpSet`].
#[repr(u8)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CollKind {
    /// `MPI_Barrier`.
    Barrier = 0,
    /// `MPI_Bcast`.
    Bcast = 1,
    /// `MPI_Reduce`.
    Reduce = 2,
    /// `MPI_Allreduce`.
    Allreduce = 3,
    /// `MPI_Gather`.
    Gather = 4,
    /// `MPI_Gatherv`.
    Gatherv = 5,
    /// `MPI_Scatter`.
    Scatter = 6,
    /// `MPI_Scatterv`.
    Scatterv = 7,
    /// `MPI_Allgather`.
    Allgather = 8,
    /// `MPI_Allgatherv`.
    Allgatherv = 9,
    /// `MPI_Alltoall`.
    Alltoall = 10,
    /// `MPI_Alltoallv`.
    Alltoallv = 11,
    /// `MPI_Reduce_scatter`.
    ReduceScatter = 12,
    /// `MPI_Reduce_scatter_block`.
    ReduceScatterBlock = 13,
    /// `MPI_Scan`.
    Scan = 14,
    /// `MPI_Exscan`.
    Exscan = 15,
}

impl CollKind {
    /// Every operation, in code order.
    pub const ALL: [CollKind; 16] = [
        CollKind::Barrier,
        CollKind::Bcast,
        CollKind::Reduce,
        CollKind::Allreduce,
        CollKind::Gather,
        CollKind::Gatherv,
        CollKind::Scatter,
        CollKind::Scatterv,
        CollKind::Allgather,
        CollKind::Allgatherv,
        CollKind::Alltoall,
        CollKind::Alltoallv,
        CollKind::ReduceScatter,
        CollKind::ReduceScatterBlock,
        CollKind::Scan,
        CollKind::Exscan,
    ];

    /// The operation's name as logs and messages show it (`allreduce`).
    pub fn name(self) -> &'static str {
        match self {
            CollKind::Barrier => "barrier",
            CollKind::Bcast => "bcast",
            CollKind::Reduce => "reduce",
            CollKind::Allreduce => "allreduce",
            CollKind::Gather => "gather",
            CollKind::Gatherv => "gatherv",
            CollKind::Scatter => "scatter",
            CollKind::Scatterv => "scatterv",
            CollKind::Allgather => "allgather",
            CollKind::Allgatherv => "allgatherv",
            CollKind::Alltoall => "alltoall",
            CollKind::Alltoallv => "alltoallv",
            CollKind::ReduceScatter => "reduce_scatter",
            CollKind::ReduceScatterBlock => "reduce_scatter_block",
            CollKind::Scan => "scan",
            CollKind::Exscan => "exscan",
        }
    }

    /// The operation with code `code`, if any.
    pub fn from_code(code: u8) -> Option<CollKind> {
        CollKind::ALL.get(code as usize).copied()
    }

    /// Whether the operation has a root (`root` of [`CollCall`] matters).
    pub fn rooted(self) -> bool {
        matches!(
            self,
            CollKind::Bcast
                | CollKind::Reduce
                | CollKind::Gather
                | CollKind::Gatherv
                | CollKind::Scatter
                | CollKind::Scatterv
        )
    }

    /// Whether the operation combines elements (uses `element` and `op`).
    pub fn reduces(self) -> bool {
        matches!(
            self,
            CollKind::Reduce
                | CollKind::Allreduce
                | CollKind::ReduceScatter
                | CollKind::ReduceScatterBlock
                | CollKind::Scan
                | CollKind::Exscan
        )
    }
}

/// A set of operations (bit `k` for [`CollKind`] code `k`).
#[repr(transparent)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct OpSet(pub u32);

impl OpSet {
    /// No operation.
    pub const NONE: OpSet = OpSet(0);
    /// Every operation.
    pub const ALL: OpSet = OpSet((1 << CollKind::ALL.len()) - 1);

    /// Whether `kind` is in the set.
    #[inline]
    pub const fn contains(self, kind: CollKind) -> bool {
        self.0 & (1 << kind as u8) != 0
    }

    /// The set with `kind` added.
    #[must_use]
    #[inline]
    pub const fn with(self, kind: CollKind) -> OpSet {
        OpSet(self.0 | 1 << kind as u8)
    }
}

/// The predefined element types of reductions, by code (the codes are
/// part of the interface; `oxmpi-reduce`'s `ElementType` uses the same).
#[repr(u8)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq)]
pub enum ElementCode {
    /// `MPI_INT8_T`.
    Int8 = 0,
    /// `MPI_INT16_T`.
    Int16 = 1,
    /// `MPI_INT32_T`.
    Int32 = 2,
    /// `MPI_INT64_T`.
    Int64 = 3,
    /// `MPI_UINT8_T`.
    UInt8 = 4,
    /// `MPI_UINT16_T`.
    UInt16 = 5,
    /// `MPI_UINT32_T`.
    UInt32 = 6,
    /// `MPI_UINT64_T`.
    UInt64 = 7,
    /// `MPI_FLOAT`.
    Float32 = 8,
    /// `MPI_DOUBLE`.
    Float64 = 9,
    /// `MPI_C_BOOL`.
    Bool = 10,
    /// `MPI_BYTE`.
    Byte = 11,
    /// `MPI_FLOAT_INT`.
    FloatInt = 12,
    /// `MPI_DOUBLE_INT`.
    DoubleInt = 13,
    /// `MPI_LONG_INT`.
    LongInt = 14,
    /// `MPI_2INT`.
    TwoInt = 15,
    /// `MPI_SHORT_INT`.
    ShortInt = 16,
    /// Elements of a user-defined operation ([`UserOp::elem_size`] bytes
    /// each), which only it combines.
    User = 255,
}

impl ElementCode {
    /// Bytes per element, padding included (`None` for [`ElementCode::User`],
    /// whose size the [`UserOp`] gives).
    pub fn size(self) -> Option<usize> {
        Some(match self {
            ElementCode::Int8 | ElementCode::UInt8 | ElementCode::Bool | ElementCode::Byte => 1,
            ElementCode::Int16 | ElementCode::UInt16 => 2,
            ElementCode::Int32 | ElementCode::UInt32 | ElementCode::Float32 => 4,
            ElementCode::Int64 | ElementCode::UInt64 | ElementCode::Float64 => 8,
            ElementCode::FloatInt | ElementCode::TwoInt | ElementCode::ShortInt => 8,
            ElementCode::DoubleInt | ElementCode::LongInt => 16,
            ElementCode::User => return None,
        })
    }
}

/// The predefined reduction operations, by code (the codes are part of
/// the interface; `oxmpi-reduce`'s `Op` uses the same).
#[repr(u8)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq)]
pub enum OpCode {
    /// `MPI_MAX`.
    Max = 0,
    /// `MPI_MIN`.
    Min = 1,
    /// `MPI_SUM`.
    Sum = 2,
    /// `MPI_PROD`.
    Prod = 3,
    /// `MPI_LAND`.
    Land = 4,
    /// `MPI_LOR`.
    Lor = 5,
    /// `MPI_LXOR`.
    Lxor = 6,
    /// `MPI_BAND`.
    Band = 7,
    /// `MPI_BOR`.
    Bor = 8,
    /// `MPI_BXOR`.
    Bxor = 9,
    /// `MPI_MINLOC`.
    MinLoc = 10,
    /// `MPI_MAXLOC`.
    MaxLoc = 11,
    /// The call's [`UserOp`].
    User = 255,
}

/// A user-defined reduction operation (`MPI_Op_create`): `func(ctx,
/// input, inout, count)` sets each of the `count` elements of `inout` to
/// `input` op `inout`; `false` with nothing changed means it failed (the
/// MPI layer has the reason).
#[repr(C)]
#[derive(StableAbi, Copy, Clone)]
pub struct UserOp {
    /// The combining function (`None` when the call uses a predefined op).
    pub func: Option<
        unsafe extern "C" fn(
            ctx: *mut c_void,
            input: *const u8,
            inout: *mut u8,
            count: usize,
        ) -> bool,
    >,
    /// Passed back to `func`.
    pub ctx: *mut c_void,
    /// Bytes per element.
    pub elem_size: usize,
    /// Whether the operation is commutative (otherwise the result is the
    /// operation applied in rank order).
    pub commutative: bool,
}

impl UserOp {
    /// No user operation.
    pub const NONE: UserOp = UserOp {
        func: None,
        ctx: std::ptr::null_mut(),
        elem_size: 0,
        commutative: true,
    };
}

/// One collective call on a communicator. Which fields matter depends on
/// `kind` (see each field); the others are null, empty or zero.
///
/// `MPI_IN_PLACE` is a null buffer where MPI allows it: `send` null for
/// `reduce` and `gather(v)` at the root and for `allreduce`,
/// `allgather(v)`, `alltoall(v)`, `reduce_scatter(_block)`, `scan` and
/// `exscan` everywhere, the input then being in `recv` (gather: the
/// root's own block of it); `recv` null for `scatter(v)` at the root,
/// whose own block then stays in `send`.
#[repr(C)]
#[derive(StableAbi, Copy, Clone)]
pub struct CollCall<'a> {
    /// The operation.
    pub kind: CollKind,
    /// The data this rank contributes (bcast: the buffer, at every rank).
    pub send: *const u8,
    /// Where this rank's result goes (bcast: the same buffer as `send`).
    pub recv: *mut u8,
    /// Data movement: bytes per rank (bcast: bytes in all). Reductions:
    /// elements per rank's contribution (`reduce_scatter_block`: elements
    /// of each rank's result block).
    pub count: usize,
    /// `gatherv`/`allgatherv`/`alltoallv` receive and `scatterv`/
    /// `alltoallv` send counts in bytes, and `reduce_scatter` counts in
    /// elements, per rank (empty otherwise).
    pub counts: RSlice<'a, usize>,
    /// The displacements in bytes that go with `counts` (`alltoallv`: of
    /// the receive buffer).
    pub displs: RSlice<'a, usize>,
    /// `alltoallv`: send counts in bytes per rank.
    pub send_counts: RSlice<'a, usize>,
    /// `alltoallv`: send displacements in bytes per rank.
    pub send_displs: RSlice<'a, usize>,
    /// Reductions: the element type.
    pub element: ElementCode,
    /// Reductions: the operation.
    pub op: OpCode,
    /// Reductions with `op` [`OpCode::User`]: the operation.
    pub user: UserOp,
    /// Rooted operations: the root's rank in the communicator.
    pub root: u32,
}

impl<'a> CollCall<'a> {
    /// Bytes per element of a reduction: the element type's size, or the
    /// user operation's for [`ElementCode::User`].
    pub fn elem_size(&self) -> usize {
        self.element.size().unwrap_or(self.user.elem_size)
    }

    /// A call of `kind` with every other field empty.
    pub fn new(kind: CollKind) -> CollCall<'a> {
        CollCall {
            kind,
            send: std::ptr::null(),
            recv: std::ptr::null_mut(),
            count: 0,
            counts: RSlice::from_slice(&[]),
            displs: RSlice::from_slice(&[]),
            send_counts: RSlice::from_slice(&[]),
            send_displs: RSlice::from_slice(&[]),
            element: ElementCode::Byte,
            op: OpCode::Bor,
            user: UserOp::NONE,
            root: 0,
        }
    }
}

/// A communicator as the MPI layer offers it to a component.
#[repr(C)]
#[derive(StableAbi, Copy, Clone)]
pub struct CommDesc<'a> {
    /// Its context id (every member agrees on it).
    pub context: u32,
    /// This process's rank in it.
    pub rank: u32,
    /// The job rank of each member, in communicator order.
    pub members: RSlice<'a, u32>,
    /// Its name (`MPI_COMM_WORLD`, or a name the MPI layer gives it), for
    /// messages and logs.
    pub name: abi_stable::std_types::RStr<'a>,
}

/// A component's answer to [`CollModule::comm_query`].
#[repr(C)]
#[derive(StableAbi, Copy, Clone, Debug, Default)]
pub struct CommAnswer {
    /// Its priority for this communicator (higher wins each operation).
    pub priority: i32,
    /// The operations it provides for it.
    pub ops: OpSet,
    /// The operations it can also start non-blocking
    /// ([`CollModule::start`]); each comes from the highest-priority
    /// component that offers it here, independently of `ops`.
    pub nb_ops: OpSet,
    /// Its handle for the communicator, passed back to `run` and
    /// `comm_release`.
    pub module: u64,
}

/// What the MPI layer offers a coll component: non-blocking
/// point-to-point messages on a communicator's context, and a wait. Each
/// function takes the MPI layer's lock itself (the component holds none).
#[repr(C)]
#[derive(StableAbi, Copy, Clone)]
pub struct CollCore {
    /// Opaque pointer passed back to every function.
    pub ctx: *mut c_void,
    /// Starts sending `len` bytes at `buf` to job rank `dest` on context
    /// `context` with `tag`; the request in `request`. False with `error`
    /// set when it cannot start. `buf` stays valid until the request is
    /// waited.
    pub isend: unsafe extern "C" fn(
        ctx: *mut c_void,
        context: u32,
        dest: u32,
        tag: i32,
        buf: *const u8,
        len: usize,
        request: &mut u64,
        error: &mut RString,
    ) -> bool,
    /// Posts a receive of up to `len` bytes into `buf` from job rank
    /// `source` on `context` with `tag`; the request in `request`.
    pub irecv: unsafe extern "C" fn(
        ctx: *mut c_void,
        context: u32,
        source: u32,
        tag: i32,
        buf: *mut u8,
        len: usize,
        request: &mut u64,
        error: &mut RString,
    ) -> bool,
    /// Waits for every request of `requests` and releases them; `counts`
    /// (as long as `requests`) receives the bytes each moved. False with
    /// `error` (naming the first failure) when one failed; every request
    /// is released either way.
    pub wait_all: unsafe extern "C" fn(
        ctx: *mut c_void,
        requests: RSlice<'_, u64>,
        counts: abi_stable::std_types::RSliceMut<'_, usize>,
        error: &mut RString,
    ) -> bool,
    /// Checks every non-zero request of `requests` once, without waiting:
    /// each one complete is released, its entry set to 0 and its byte
    /// count stored in `counts`. False with `error` when one that
    /// completed had failed (the others are left as they are).
    pub test_all: unsafe extern "C" fn(
        ctx: *mut c_void,
        requests: abi_stable::std_types::RSliceMut<'_, u64>,
        counts: abi_stable::std_types::RSliceMut<'_, usize>,
        error: &mut RString,
    ) -> bool,
    /// One round of the MPI layer's progress engine (the btls, the pml,
    /// and other non-blocking collectives); the number of events it
    /// found. For a component that waits on something of its own (a flag
    /// in shared memory) and keeps point-to-point traffic moving.
    pub progress: unsafe extern "C" fn(ctx: *mut c_void) -> usize,
}

/// What [`CollModule::run`] did with a call.
#[repr(u8)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq)]
pub enum RunOutcome {
    /// The collective completed.
    Done = 0,
    /// It failed; the error string says why.
    Failed = 1,
    /// The component does not take this call (nothing was communicated):
    /// the next component providing the operation runs it.
    PassedOn = 2,
}

/// What [`CollModule::poll`] found.
#[repr(u8)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq)]
pub enum PollOutcome {
    /// Still in flight.
    Pending = 0,
    /// Complete; the operation handle is released.
    Done = 1,
    /// Failed (the error string says why); the handle is released.
    Failed = 2,
}

/// The coll module table a component exports.
#[repr(C)]
#[derive(StableAbi, Copy, Clone)]
pub struct CollModule {
    /// Starts the component for this process over the MPI layer's
    /// services. False with `error` when it cannot run here.
    pub init: unsafe extern "C" fn(
        context: &ComponentContext,
        core: CollCore,
        error: &mut RString,
    ) -> bool,
    /// Offers a communicator: true with `answer` filled, or false with
    /// `reason` when the component declines it.
    pub comm_query: unsafe extern "C" fn(
        comm: &CommDesc<'_>,
        answer: &mut CommAnswer,
        reason: &mut RString,
    ) -> bool,
    /// Releases a handle `comm_query` gave (once).
    pub comm_release: unsafe extern "C" fn(module: u64),
    /// Runs one blocking collective on a handle, or passes it on. The
    /// caller makes no other `run` or `start` on the handle meanwhile.
    pub run:
        unsafe extern "C" fn(module: u64, call: &CollCall<'_>, error: &mut RString) -> RunOutcome,
    /// Starts a non-blocking collective on a handle with `tag`: true with
    /// the operation's handle in `op`, or false with `error`. The caller
    /// makes no other `run` or `start` on the handle meanwhile.
    pub start: unsafe extern "C" fn(
        module: u64,
        call: &CollCall<'_>,
        tag: i32,
        op: &mut u64,
        error: &mut RString,
    ) -> bool,
    /// Advances an operation [`start`](CollModule::start) gave, without
    /// blocking; a finished operation's handle is released.
    pub poll: unsafe extern "C" fn(op: u64, error: &mut RString) -> PollOutcome,
    /// Stops the component (every handle was released).
    pub finalize: unsafe extern "C" fn(),
}

/// A [`CollCall`] that owns its count and displacement arrays: what a
/// non-blocking collective keeps of its call until it completes (the
/// buffers stay the caller's, valid until then by the interface contract).
#[derive(Clone)]
pub struct OwnedCall {
    kind: CollKind,
    send: *const u8,
    recv: *mut u8,
    count: usize,
    counts: Vec<usize>,
    displs: Vec<usize>,
    send_counts: Vec<usize>,
    send_displs: Vec<usize>,
    element: ElementCode,
    op: OpCode,
    user: UserOp,
    root: u32,
}

impl OwnedCall {
    /// Copies `call`'s fields and arrays.
    pub fn new(call: &CollCall<'_>) -> OwnedCall {
        OwnedCall {
            kind: call.kind,
            send: call.send,
            recv: call.recv,
            count: call.count,
            counts: call.counts.to_vec(),
            displs: call.displs.to_vec(),
            send_counts: call.send_counts.to_vec(),
            send_displs: call.send_displs.to_vec(),
            element: call.element,
            op: call.op,
            user: call.user,
            root: call.root,
        }
    }

    /// The call, borrowing the arrays from `self`.
    pub fn view(&self) -> CollCall<'_> {
        CollCall {
            kind: self.kind,
            send: self.send,
            recv: self.recv,
            count: self.count,
            counts: RSlice::from_slice(&self.counts),
            displs: RSlice::from_slice(&self.displs),
            send_counts: RSlice::from_slice(&self.send_counts),
            send_displs: RSlice::from_slice(&self.send_displs),
            element: self.element,
            op: self.op,
            user: self.user,
            root: self.root,
        }
    }
}
