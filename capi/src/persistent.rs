//! Persistent requests: `MPI_Send_init` (and its synchronous, ready and
//! buffered forms), `MPI_Recv_init`, `MPI_Start`, `MPI_Startall`. A
//! persistent request keeps its arguments; each start runs them as the
//! matching `I` call would, and completing it leaves it inactive under
//! the same handle until `MPI_Request_free`.

use crate::errors::{run, Fail};
use crate::handles::put;
use crate::requests::{self, Pending, Persistent};
use oxmpi_mpi_core::SendMode;
use std::ffi::{c_int, c_void};

/// What a persistent request starts.
#[derive(Clone, Copy, Debug)]
pub enum Plan {
    /// A send (`buffered`: copied out at each start, as `MPI_Ibsend`).
    Send {
        /// The buffer's address.
        buf: usize,
        /// Elements.
        count: c_int,
        /// Their type.
        datatype: c_int,
        /// The destination rank.
        dest: c_int,
        /// The tag.
        tag: c_int,
        /// The communicator.
        comm: c_int,
        /// Standard or synchronous.
        mode: SendMode,
        /// Whether it is a buffered send.
        buffered: bool,
    },
    /// A receive.
    Recv {
        /// The buffer's address.
        buf: usize,
        /// Elements.
        count: c_int,
        /// Their type.
        datatype: c_int,
        /// The source rank (or `MPI_ANY_SOURCE`).
        source: c_int,
        /// The tag (or `MPI_ANY_TAG`).
        tag: c_int,
        /// The communicator.
        comm: c_int,
    },
}

/// Checks the arguments a start will use (so that a bad one fails at
/// the init, as in other MPIs) and registers the request.
///
/// # Safety
///
/// `request` is valid for a write.
unsafe fn init(plan: Plan, request: *mut c_int) -> Result<(), Fail> {
    let (count, datatype, comm) = match plan {
        Plan::Send {
            count,
            datatype,
            comm,
            ..
        }
        | Plan::Recv {
            count,
            datatype,
            comm,
            ..
        } => (count, datatype, comm),
    };
    crate::handles::comm(comm)?;
    crate::handles::count("count", count)?;
    crate::handles::datatype(datatype)?;
    let h = requests::insert(Pending::Persistent(Box::new(Persistent {
        plan,
        active: None,
    })));
    // SAFETY: the caller's promise.
    unsafe { put("request", request, h) }
}

macro_rules! send_init {
    ($name:ident, $text:literal, $mode:expr, $buffered:expr) => {
        /// The C function of the same name without its `P`.
        ///
        /// # Safety
        ///
        /// As MPI requires of its arguments (the buffer stays valid while
        /// the request lives).
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            buf: *const c_void,
            count: c_int,
            datatype: c_int,
            dest: c_int,
            tag: c_int,
            comm: c_int,
            request: *mut c_int,
        ) -> c_int {
            run($text, comm, || {
                let plan = Plan::Send {
                    buf: buf as usize,
                    count,
                    datatype,
                    dest,
                    tag,
                    comm,
                    mode: $mode,
                    buffered: $buffered,
                };
                // SAFETY: the caller's promise.
                unsafe { init(plan, request) }
            })
        }
    };
}

send_init!(PMPI_Send_init, "MPI_Send_init", SendMode::Standard, false);
send_init!(
    PMPI_Ssend_init,
    "MPI_Ssend_init",
    SendMode::Synchronous,
    false
);
send_init!(PMPI_Rsend_init, "MPI_Rsend_init", SendMode::Standard, false);
send_init!(PMPI_Bsend_init, "MPI_Bsend_init", SendMode::Standard, true);

/// `MPI_Recv_init`.
///
/// # Safety
///
/// As MPI requires of its arguments (the buffer stays valid while the
/// request lives).
#[no_mangle]
pub unsafe extern "C" fn PMPI_Recv_init(
    buf: *mut c_void,
    count: c_int,
    datatype: c_int,
    source: c_int,
    tag: c_int,
    comm: c_int,
    request: *mut c_int,
) -> c_int {
    run("MPI_Recv_init", comm, || {
        let plan = Plan::Recv {
            buf: buf as usize,
            count,
            datatype,
            source,
            tag,
            comm,
        };
        // SAFETY: the caller's promise.
        unsafe { init(plan, request) }
    })
}

/// Starts one run of `plan`.
///
/// # Safety
///
/// The plan's buffer is valid (the init's promise).
unsafe fn start_plan(plan: &Plan) -> Result<Pending, Fail> {
    match *plan {
        Plan::Send {
            buf,
            count,
            datatype,
            dest,
            tag,
            comm,
            mode,
            buffered,
        } => {
            let buf = buf as *const c_void;
            if buffered {
                // SAFETY: the init's promise.
                return unsafe { crate::buffered::bsend(buf, count, datatype, dest, tag, comm) }
                    .map(Pending::Done);
            }
            // SAFETY: as above.
            unsafe { crate::p2p::start_send(buf, count, datatype, dest, tag, comm, mode) }
        }
        Plan::Recv {
            buf,
            count,
            datatype,
            source,
            tag,
            comm,
        } => {
            // SAFETY: the init's promise.
            unsafe {
                crate::p2p::start_recv(buf as *mut c_void, count, datatype, source, tag, comm)
            }
        }
    }
}

/// `MPI_Start`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Start(request: *mut c_int) -> c_int {
    run("MPI_Start", 1, || {
        if request.is_null() {
            return Err(Fail::new(
                crate::errors::ERR_ARG,
                "request is a null pointer",
            ));
        }
        // SAFETY: not null; the caller's promise; the plan's buffer is the
        // init's promise.
        requests::start_persistent(unsafe { *request }, |plan| unsafe { start_plan(plan) })
    })
}

/// `MPI_Startall`.
///
/// # Safety
///
/// As MPI requires of its arguments.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Startall(n: c_int, requests_: *mut c_int) -> c_int {
    run("MPI_Startall", 1, || {
        let n = crate::handles::count("count", n)?;
        if n > 0 && requests_.is_null() {
            return Err(Fail::new(
                crate::errors::ERR_ARG,
                "the request array is a null pointer",
            ));
        }
        for i in 0..n {
            // SAFETY: `n` handles (the caller's promise); the plans' buffers
            // are their inits' promise.
            requests::start_persistent(unsafe { *requests_.add(i) }, |plan| unsafe {
                start_plan(plan)
            })?;
        }
        Ok(())
    })
}
