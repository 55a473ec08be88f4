//! The C functions of the collectives: for each operation, the blocking
//! form runs its [`Prepared`](crate::coll::Prepared) call and the `I` form
//! starts it as a request.

use crate::coll::{self, go, start, Prepared};
use crate::errors::run;
use std::ffi::{c_int, c_void};

/// Defines `PMPI_<blocking>` and `PMPI_<immediate>` over the builder
/// `coll::<build>` (whose arguments they take, the immediate form then a
/// request), reporting errors on the communicator argument `c`.
macro_rules! collective {
    ($blocking:ident, $btext:literal, $immediate:ident, $itext:literal, $build:ident, $c:ident,
     ($($arg:ident : $ty:ty),*)) => {
        /// The C function of the same name without its `P`.
        ///
        /// # Safety
        ///
        /// As MPI requires of its arguments.
        #[no_mangle]
        pub unsafe extern "C" fn $blocking($($arg: $ty),*) -> c_int {
            run($btext, $c, || {
                let mut p = Prepared::empty();
                #[allow(unused_unsafe)]
                // SAFETY: the caller's promise; the call completes here.
                unsafe { coll::$build(&mut p, $($arg),*) }?;
                // SAFETY: as above.
                unsafe { go($c, &p) }
            })
        }

        /// The C function of the same name without its `P`.
        ///
        /// # Safety
        ///
        /// As MPI requires of its arguments (the buffers stay valid until
        /// the request completes).
        #[no_mangle]
        pub unsafe extern "C" fn $immediate($($arg: $ty,)* request: *mut c_int) -> c_int {
            run($itext, $c, || {
                let mut p = Prepared::empty();
                #[allow(unused_unsafe)]
                // SAFETY: the caller's promise.
                unsafe { coll::$build(&mut p, $($arg),*) }?;
                // SAFETY: as above.
                unsafe { start($c, p, request) }
            })
        }
    };
}

collective!(PMPI_Barrier, "MPI_Barrier", PMPI_Ibarrier, "MPI_Ibarrier", barrier, comm, (comm: c_int));
collective!(PMPI_Bcast, "MPI_Bcast", PMPI_Ibcast, "MPI_Ibcast", bcast, comm,
    (buffer: *mut c_void, count: c_int, datatype: c_int, root: c_int, comm: c_int));
collective!(PMPI_Reduce, "MPI_Reduce", PMPI_Ireduce, "MPI_Ireduce", reduce, comm,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: c_int, op: c_int,
     root: c_int, comm: c_int));
collective!(PMPI_Allreduce, "MPI_Allreduce", PMPI_Iallreduce, "MPI_Iallreduce", allreduce, comm,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: c_int, op: c_int,
     comm: c_int));
collective!(PMPI_Reduce_scatter_block, "MPI_Reduce_scatter_block", PMPI_Ireduce_scatter_block,
    "MPI_Ireduce_scatter_block", reduce_scatter_block, comm,
    (sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: c_int, datatype: c_int, op: c_int,
     comm: c_int));
collective!(PMPI_Reduce_scatter, "MPI_Reduce_scatter", PMPI_Ireduce_scatter,
    "MPI_Ireduce_scatter", reduce_scatter, comm,
    (sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const c_int, datatype: c_int,
     op: c_int, comm: c_int));
collective!(PMPI_Scan, "MPI_Scan", PMPI_Iscan, "MPI_Iscan", scan, comm,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: c_int, op: c_int,
     comm: c_int));
collective!(PMPI_Exscan, "MPI_Exscan", PMPI_Iexscan, "MPI_Iexscan", exscan, comm,
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: c_int, op: c_int,
     comm: c_int));
collective!(PMPI_Gather, "MPI_Gather", PMPI_Igather, "MPI_Igather", gather, comm,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void,
     recvcount: c_int, recvtype: c_int, root: c_int, comm: c_int));
collective!(PMPI_Scatter, "MPI_Scatter", PMPI_Iscatter, "MPI_Iscatter", scatter, comm,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void,
     recvcount: c_int, recvtype: c_int, root: c_int, comm: c_int));
collective!(PMPI_Allgather, "MPI_Allgather", PMPI_Iallgather, "MPI_Iallgather", allgather, comm,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void,
     recvcount: c_int, recvtype: c_int, comm: c_int));
collective!(PMPI_Alltoall, "MPI_Alltoall", PMPI_Ialltoall, "MPI_Ialltoall", alltoall, comm,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void,
     recvcount: c_int, recvtype: c_int, comm: c_int));
collective!(PMPI_Gatherv, "MPI_Gatherv", PMPI_Igatherv, "MPI_Igatherv", gatherv, comm,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void,
     recvcounts: *const c_int, displs: *const c_int, recvtype: c_int, root: c_int, comm: c_int));
collective!(PMPI_Scatterv, "MPI_Scatterv", PMPI_Iscatterv, "MPI_Iscatterv", scatterv, comm,
    (sendbuf: *const c_void, sendcounts: *const c_int, displs: *const c_int, sendtype: c_int,
     recvbuf: *mut c_void, recvcount: c_int, recvtype: c_int, root: c_int, comm: c_int));
collective!(PMPI_Allgatherv, "MPI_Allgatherv", PMPI_Iallgatherv, "MPI_Iallgatherv", allgatherv, comm,
    (sendbuf: *const c_void, sendcount: c_int, sendtype: c_int, recvbuf: *mut c_void,
     recvcounts: *const c_int, displs: *const c_int, recvtype: c_int, comm: c_int));
collective!(PMPI_Alltoallv, "MPI_Alltoallv", PMPI_Ialltoallv, "MPI_Ialltoallv", alltoallv, comm,
    (sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: c_int,
     recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: c_int,
     comm: c_int));
