//! The functions of features oxmpi does not have yet: one-sided
//! communication, MPI-IO and dynamic processes. They are exported (a
//! program or library that references them links and runs) and each call
//! fails with `MPI_ERR_UNSUPPORTED_OPERATION`, through `MPI_COMM_WORLD`'s
//! error handler, with a message naming the call and the feature.
//! `MPI_Comm_get_parent` works: a process oxmpi started has no parent.

use crate::errors::{run, Fail, ERR_UNSUPPORTED};
use std::ffi::c_int;

/// Fails a call of a feature oxmpi does not have.
#[cold]
fn unsupported(function: &str, feature: &str) -> c_int {
    run(function, crate::COMM_WORLD, || {
        Err(Fail::new(
            ERR_UNSUPPORTED,
            format!("{feature} is not supported by oxmpi yet; this call does nothing"),
        ))
    })
}

/// Defines each `PMPI_<name>` as a call that fails (it takes the
/// function's arguments in C and ignores them).
macro_rules! unsupported {
    ($($name:ident => $feature:literal),* $(,)?) => {
        $(
            /// Not supported yet: fails with `MPI_ERR_UNSUPPORTED_OPERATION`.
            #[no_mangle]
            pub extern "C" fn $name() -> c_int {
                unsupported(&stringify!($name)[1..], $feature)
            }
        )*
    };
}

unsupported!(
    PMPI_Win_create => "one-sided communication (MPI_Win_*, MPI_Put, MPI_Get and kin)",
    PMPI_Win_allocate => "one-sided communication (MPI_Win_*, MPI_Put, MPI_Get and kin)",
    PMPI_Win_allocate_shared => "one-sided communication (MPI_Win_*, MPI_Put, MPI_Get and kin)",
    PMPI_Win_create_dynamic => "one-sided communication (MPI_Win_*, MPI_Put, MPI_Get and kin)",
    PMPI_Win_shared_query => "one-sided communication (MPI_Win_*, MPI_Put, MPI_Get and kin)",
    PMPI_Win_attach => "one-sided communication (MPI_Win_*, MPI_Put, MPI_Get and kin)",
    PMPI_Win_detach => "one-sided communication (MPI_Win_*, MPI_Put, MPI_Get and kin)",
    PMPI_Win_free => "one-sided communication (MPI_Win_*, MPI_Put, MPI_Get and kin)",
    PMPI_Win_fence => "one-sided communication (MPI_Win_*, MPI_Put, MPI_Get and kin)",
    PMPI_Win_lock => "one-sided communication (MPI_Win_*, MPI_Put, MPI_Get and kin)",
    PMPI_Win_unlock => "one-sided communication (MPI_Win_*, MPI_Put, MPI_Get and kin)",
    PMPI_Win_lock_all => "one-sided communication (MPI_Win_*, MPI_Put, MPI_Get and kin)",
    PMPI_Win_unlock_all => "one-sided communication (MPI_Win_*, MPI_Put, MPI_Get and kin)",
    PMPI_Win_flush => "one-sided communication (MPI_Win_*, MPI_Put, MPI_Get and kin)",
    PMPI_Win_flush_all => "one-sided communication (MPI_Win_*, MPI_Put, MPI_Get and kin)",
    PMPI_Win_flush_local => "one-sided communication (MPI_Win_*, MPI_Put, MPI_Get and kin)",
    PMPI_Win_flush_local_all => "one-sided communication (MPI_Win_*, MPI_Put, MPI_Get and kin)",
    PMPI_Win_sync => "one-sided communication (MPI_Win_*, MPI_Put, MPI_Get and kin)",
    PMPI_Win_post => "one-sided communication (MPI_Win_*, MPI_Put, MPI_Get and kin)",
    PMPI_Win_start => "one-sided communication (MPI_Win_*, MPI_Put, MPI_Get and kin)",
    PMPI_Win_complete => "one-sided communication (MPI_Win_*, MPI_Put, MPI_Get and kin)",
    PMPI_Win_wait => "one-sided communication (MPI_Win_*, MPI_Put, MPI_Get and kin)",
    PMPI_Put => "one-sided communication (MPI_Win_*, MPI_Put, MPI_Get and kin)",
    PMPI_Get => "one-sided communication (MPI_Win_*, MPI_Put, MPI_Get and kin)",
    PMPI_Rput => "one-sided communication (MPI_Win_*, MPI_Put, MPI_Get and kin)",
    PMPI_Rget => "one-sided communication (MPI_Win_*, MPI_Put, MPI_Get and kin)",
    PMPI_Accumulate => "one-sided communication (MPI_Win_*, MPI_Put, MPI_Get and kin)",
    PMPI_Get_accumulate => "one-sided communication (MPI_Win_*, MPI_Put, MPI_Get and kin)",
    PMPI_Fetch_and_op => "one-sided communication (MPI_Win_*, MPI_Put, MPI_Get and kin)",
    PMPI_Compare_and_swap => "one-sided communication (MPI_Win_*, MPI_Put, MPI_Get and kin)",
    PMPI_File_open => "MPI-IO (MPI_File_*)",
    PMPI_File_close => "MPI-IO (MPI_File_*)",
    PMPI_File_delete => "MPI-IO (MPI_File_*)",
    PMPI_File_set_view => "MPI-IO (MPI_File_*)",
    PMPI_File_read => "MPI-IO (MPI_File_*)",
    PMPI_File_read_at => "MPI-IO (MPI_File_*)",
    PMPI_File_read_all => "MPI-IO (MPI_File_*)",
    PMPI_File_write => "MPI-IO (MPI_File_*)",
    PMPI_File_write_at => "MPI-IO (MPI_File_*)",
    PMPI_File_write_all => "MPI-IO (MPI_File_*)",
    PMPI_File_get_size => "MPI-IO (MPI_File_*)",
    PMPI_File_seek => "MPI-IO (MPI_File_*)",
    PMPI_File_sync => "MPI-IO (MPI_File_*)",
    PMPI_Comm_spawn => "dynamic processes (MPI_Comm_spawn, ports, connect and accept)",
    PMPI_Open_port => "dynamic processes (MPI_Comm_spawn, ports, connect and accept)",
    PMPI_Close_port => "dynamic processes (MPI_Comm_spawn, ports, connect and accept)",
    PMPI_Comm_accept => "dynamic processes (MPI_Comm_spawn, ports, connect and accept)",
    PMPI_Comm_connect => "dynamic processes (MPI_Comm_spawn, ports, connect and accept)",
    PMPI_Comm_disconnect => "dynamic processes (MPI_Comm_spawn, ports, connect and accept)",
);

/// `MPI_Comm_get_parent`: `MPI_COMM_NULL` (no process oxmpi starts has a
/// parent).
///
/// # Safety
///
/// `parent` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_get_parent(parent: *mut c_int) -> c_int {
    run("MPI_Comm_get_parent", crate::COMM_WORLD, || {
        // SAFETY: the caller's promise.
        unsafe { crate::handles::put("parent", parent, crate::handles::COMM_NULL) }
    })
}
