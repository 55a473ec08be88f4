//! Tests of the sm component in one process: several `SmBtl` values (or
//! rank 0 through the exported table) share a temporary job directory,
//! each with the btl test kit's contract-checking recorder as its pml.

mod batch;
mod conformance;
mod reply;
