//! `MPI_Status` as `mpi.h` lays it out.

use oxmpi_mpi_core::Status;
use std::ffi::c_int;

/// `MPI_Status`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MpiStatus {
    /// `MPI_SOURCE`.
    pub source: c_int,
    /// `MPI_TAG`.
    pub tag: c_int,
    /// `MPI_ERROR`.
    pub error: c_int,
    /// Whether the request was cancelled.
    pub cancelled: c_int,
    /// Bytes received.
    pub count: i64,
}

impl MpiStatus {
    /// The status of `s`.
    pub fn of(s: &Status) -> MpiStatus {
        MpiStatus {
            source: s.source,
            tag: s.tag,
            error: 0,
            cancelled: c_int::from(s.cancelled),
            count: s.count as i64,
        }
    }
}

/// Writes `s` to `out` unless it is `MPI_STATUS_IGNORE` (null).
///
/// # Safety
///
/// `out` is null or valid for a write.
pub unsafe fn store(out: *mut MpiStatus, s: MpiStatus) {
    if !out.is_null() {
        // SAFETY: not null, valid (the caller's promise).
        unsafe { out.write(s) };
    }
}
