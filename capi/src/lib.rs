//! libmpi: MPI's C interface, `mpi.h` (in `include/`), over oxmpi's MPI
//! layer. Every function is defined as `PMPI_<name>`, and `MPI_<name>` is
//! a weak alias of it (the profiling interface: a tool that defines
//! `MPI_Send` and calls `PMPI_Send` takes its place).
//!
//! Handles are integers (see `mpi.h` and docs/c-api.md). Errors go through
//! each communicator's error handler ([`errors`]); nothing unwinds into C.

mod attrs;
mod buffered;
mod buffers;
mod coll;
mod coll_calls;
mod coll_move;
mod coll_staging;
mod comm;
mod completion;
mod constructors;
mod dist_graph;
mod dist_graph_create;
mod env;
pub mod errors;
mod fortran;
mod graph;
mod groups;
mod handles;
mod info;
mod mprobe;
mod neighbor;
mod ops;
mod p2p;
mod persistent;
mod requests;
mod status;
mod topo;
mod types;
mod unsupported;
mod user_errors;

use errors::{Fail, ERR_OTHER};
use oxmpi_mpi_core::Runtime;
use std::ffi::{c_int, c_void};

/// `MPI_COMM_WORLD`.
pub const COMM_WORLD: c_int = 1;
/// `MPI_COMM_SELF`.
pub const COMM_SELF: c_int = 2;
/// `MPI_ANY_SOURCE`.
pub const ANY_SOURCE: c_int = -1;
/// `MPI_PROC_NULL`.
pub const PROC_NULL: c_int = -2;
/// `MPI_UNDEFINED`.
pub const UNDEFINED: c_int = -32766;
/// `MPI_MAX_PROCESSOR_NAME`.
pub const MAX_PROCESSOR_NAME: usize = 256;
/// `MPI_MAX_ERROR_STRING`.
pub const MAX_ERROR_STRING: usize = 512;
/// `MPI_MAX_OBJECT_NAME`.
pub const MAX_OBJECT_NAME: usize = 128;
/// `MPI_MAX_LIBRARY_VERSION_STRING`.
pub const MAX_LIBRARY_VERSION_STRING: usize = 256;
/// `MPI_IN_PLACE`: the address 1, as `mpi.h` defines it.
#[allow(clippy::manual_dangling_ptr)]
pub const IN_PLACE: *const c_void = 1 as *const c_void;

/// The runtime of an initialized, not finalized process.
///
/// # Errors
///
/// `MPI_ERR_OTHER` before `MPI_Init` or after `MPI_Finalize`.
#[inline]
fn runtime() -> Result<&'static Runtime, Fail> {
    oxmpi_mpi_core::runtime().ok_or_else(|| {
        Fail::new(
            ERR_OTHER,
            "MPI is not initialized in this process (call MPI_Init first), or was finalized",
        )
    })
}

/// Defines `MPI_<name>` for each name: a weak function that jumps to
/// `PMPI_<name>` (in assembly, as Rust has no weak definitions; a plain
/// symbol alias would not do, as the `PMPI_` function may sit in another
/// object file of the crate).
macro_rules! weak_aliases {
    ($($name:ident),* $(,)?) => {
        $(
            #[cfg(target_arch = "x86_64")]
            std::arch::global_asm!(
                ".text",
                concat!(".weak MPI_", stringify!($name)),
                concat!(".type MPI_", stringify!($name), ", @function"),
                concat!("MPI_", stringify!($name), ":"),
                concat!("jmp PMPI_", stringify!($name), "@PLT"),
                concat!(".size MPI_", stringify!($name), ", . - MPI_", stringify!($name)),
            );
            #[cfg(target_arch = "aarch64")]
            std::arch::global_asm!(
                ".text",
                concat!(".weak MPI_", stringify!($name)),
                concat!(".type MPI_", stringify!($name), ", %function"),
                concat!("MPI_", stringify!($name), ":"),
                concat!("b PMPI_", stringify!($name)),
                concat!(".size MPI_", stringify!($name), ", . - MPI_", stringify!($name)),
            );
        )*
        /// The names (without `MPI_`) of every function, for the tests.
        pub const FUNCTIONS: &[&str] = &[$(stringify!($name)),*];
    };
}

weak_aliases!(
    Init,
    Init_thread,
    Initialized,
    Finalized,
    Finalize,
    Query_thread,
    Is_thread_main,
    Abort,
    Wtime,
    Wtick,
    Get_processor_name,
    Get_version,
    Get_library_version,
    Error_string,
    Error_class,
    Comm_set_errhandler,
    Comm_get_errhandler,
    Comm_create_errhandler,
    Errhandler_free,
    Comm_call_errhandler,
    Add_error_class,
    Add_error_code,
    Add_error_string,
    Comm_rank,
    Comm_size,
    Comm_dup,
    Comm_split,
    Comm_free,
    Comm_compare,
    Comm_test_inter,
    Comm_c2f,
    Comm_f2c,
    Comm_group,
    Comm_create,
    Comm_split_type,
    Comm_set_name,
    Comm_get_name,
    Comm_create_keyval,
    Comm_free_keyval,
    Comm_set_attr,
    Comm_get_attr,
    Comm_delete_attr,
    Keyval_create,
    Keyval_free,
    Attr_put,
    Attr_get,
    Attr_delete,
    Group_size,
    Group_rank,
    Group_incl,
    Group_excl,
    Group_range_incl,
    Group_range_excl,
    Group_union,
    Group_intersection,
    Group_difference,
    Group_translate_ranks,
    Group_compare,
    Group_free,
    Send,
    Ssend,
    Recv,
    Isend,
    Issend,
    Irecv,
    Sendrecv,
    Sendrecv_replace,
    Wait,
    Waitall,
    Waitany,
    Test,
    Testall,
    Request_free,
    Cancel,
    Test_cancelled,
    Testany,
    Testsome,
    Waitsome,
    Request_get_status,
    Send_init,
    Ssend_init,
    Rsend_init,
    Bsend_init,
    Recv_init,
    Start,
    Startall,
    Buffer_attach,
    Buffer_detach,
    Bsend,
    Ibsend,
    Rsend,
    Irsend,
    Probe,
    Iprobe,
    Mprobe,
    Improbe,
    Mrecv,
    Imrecv,
    Get_count,
    Get_elements,
    Get_elements_x,
    Barrier,
    Bcast,
    Reduce,
    Allreduce,
    Gather,
    Scatter,
    Allgather,
    Alltoall,
    Reduce_scatter_block,
    Reduce_scatter,
    Scan,
    Exscan,
    Gatherv,
    Scatterv,
    Allgatherv,
    Alltoallv,
    Ibarrier,
    Ibcast,
    Ireduce,
    Iallreduce,
    Ireduce_scatter_block,
    Ireduce_scatter,
    Iscan,
    Iexscan,
    Igather,
    Iscatter,
    Iallgather,
    Ialltoall,
    Igatherv,
    Iscatterv,
    Iallgatherv,
    Ialltoallv,
    Type_size,
    Type_get_extent,
    Type_get_true_extent,
    Type_size_x,
    Type_get_extent_x,
    Type_get_true_extent_x,
    Type_contiguous,
    Type_vector,
    Type_create_hvector,
    Type_indexed,
    Type_create_struct,
    Type_create_resized,
    Type_dup,
    Type_commit,
    Type_free,
    Pack,
    Unpack,
    Pack_size,
    Get_address,
    Graph_create,
    Graphdims_get,
    Graph_get,
    Graph_neighbors_count,
    Graph_neighbors,
    Reduce_local,
    Type_c2f,
    Type_f2c,
    Op_c2f,
    Op_f2c,
    Request_c2f,
    Request_f2c,
    Message_c2f,
    Message_f2c,
    Group_c2f,
    Group_f2c,
    Info_c2f,
    Info_f2c,
    Errhandler_c2f,
    Errhandler_f2c,
    Win_c2f,
    Win_f2c,
    File_c2f,
    File_f2c,
    Dist_graph_create_adjacent,
    Dist_graph_create,
    Dist_graph_neighbors_count,
    Dist_graph_neighbors,
    Neighbor_allgather,
    Ineighbor_allgather,
    Neighbor_allgatherv,
    Ineighbor_allgatherv,
    Neighbor_alltoall,
    Ineighbor_alltoall,
    Neighbor_alltoallv,
    Ineighbor_alltoallv,
    Neighbor_alltoallw,
    Ineighbor_alltoallw,
    Alltoallw,
    Ialltoallw,
    Win_create,
    Win_allocate,
    Win_allocate_shared,
    Win_create_dynamic,
    Win_shared_query,
    Win_attach,
    Win_detach,
    Win_free,
    Win_fence,
    Win_lock,
    Win_unlock,
    Win_lock_all,
    Win_unlock_all,
    Win_flush,
    Win_flush_all,
    Win_flush_local,
    Win_flush_local_all,
    Win_sync,
    Win_post,
    Win_start,
    Win_complete,
    Win_wait,
    Put,
    Get,
    Rput,
    Rget,
    Accumulate,
    Get_accumulate,
    Fetch_and_op,
    Compare_and_swap,
    File_open,
    File_close,
    File_delete,
    File_set_view,
    File_read,
    File_read_at,
    File_read_all,
    File_write,
    File_write_at,
    File_write_all,
    File_get_size,
    File_seek,
    File_sync,
    Comm_spawn,
    Open_port,
    Close_port,
    Comm_accept,
    Comm_connect,
    Comm_disconnect,
    Comm_get_parent,
    Op_create,
    Op_free,
    Op_commutative,
    Info_create,
    Info_set,
    Info_get,
    Info_get_valuelen,
    Info_delete,
    Info_dup,
    Info_free,
    Info_get_nkeys,
    Info_get_nthkey,
    Alloc_mem,
    Free_mem,
    Cart_create,
    Dims_create,
    Cartdim_get,
    Cart_get,
    Cart_rank,
    Cart_coords,
    Cart_shift,
    Cart_sub,
    Topo_test,
    Type_create_hindexed,
    Type_create_indexed_block,
    Type_create_hindexed_block,
    Type_create_subarray,
    Type_create_darray,
    Type_get_envelope,
    Type_get_contents,
    Type_set_name,
    Type_get_name,
    Pack_external,
    Unpack_external,
    Pack_external_size,
);
