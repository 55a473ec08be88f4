//! MPI reduction operations.
