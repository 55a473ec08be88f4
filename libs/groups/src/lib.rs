//! MPI process groups.
