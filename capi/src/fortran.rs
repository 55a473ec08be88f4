//! The Fortran handle conversions (`MPI_<Handle>_c2f` and `_f2c`): handles
//! are integers in both languages, so each is the identity.

use std::ffi::c_int;

/// Defines `PMPI_<name>` as the identity on a handle.
macro_rules! identity {
    ($($name:ident),* $(,)?) => {
        $(
            /// The handle itself (see the module documentation).
            #[no_mangle]
            pub extern "C" fn $name(handle: c_int) -> c_int {
                handle
            }
        )*
    };
}

identity!(
    PMPI_Comm_c2f,
    PMPI_Comm_f2c,
    PMPI_Type_c2f,
    PMPI_Type_f2c,
    PMPI_Op_c2f,
    PMPI_Op_f2c,
    PMPI_Request_c2f,
    PMPI_Request_f2c,
    PMPI_Message_c2f,
    PMPI_Message_f2c,
    PMPI_Group_c2f,
    PMPI_Group_f2c,
    PMPI_Info_c2f,
    PMPI_Info_f2c,
    PMPI_Errhandler_c2f,
    PMPI_Errhandler_f2c,
    PMPI_Win_c2f,
    PMPI_Win_f2c,
    PMPI_File_c2f,
    PMPI_File_f2c,
);
