//! MPI collective algorithms over point-to-point messages.
