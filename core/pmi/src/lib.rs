//! The PMI-1 "simple" wire protocol of oxmpi, both sides, as MPICH's hydra
//! launcher speaks it, so that oxmpi ranks run under MPICH's `mpiexec` and
//! MPICH programs run under oxmpi's `mpirun`.
//!
//! - [`wire`]: the line codec (`cmd=<name> key=value ...\n`).
//! - [`frame`]: cutting a byte stream into messages.
//! - [`server`]: [`PmiServer`], the launcher's pure state machine.
//! - [`client`]: [`PmiClient`], what a rank uses (put, barrier, get, abort,
//!   finalize), including the singleton case.
//! - [`launch`]: the environment variables that connect the two.
//! - [`jobdir`]: the job's private session directory (created, handed to
//!   the ranks in `OXMPI_JOB_DIR`, removed when the job ends).
//! - [`kvs`]: the job's key-value space and its limits.
//! - [`mapping`]: the `PMI_process_mapping` value (which node runs which
//!   rank).
//! - [`local`]: a small thread-per-rank host for the server, for tests.
//!
//! # The protocol in one page
//!
//! The launcher gives each rank a connected stream socket and, in the
//! environment, `PMI_FD` (its descriptor), `PMI_RANK` and `PMI_SIZE`
//! (hydra's `-pmi-port` mode gives `PMI_PORT=host:port` and `PMI_ID`
//! instead). Every message is one line; the rank asks, the launcher
//! answers. An MPICH 4.0 rank's `MPI_Init` sends, in this order:
//!
//! ```text
//! cmd=init pmi_version=1 pmi_subversion=1     -> cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0
//! cmd=get_maxes                               -> cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024
//! cmd=get_appnum                              -> cmd=appnum appnum=0
//! cmd=get_my_kvsname                          -> cmd=my_kvsname kvsname=kvs_7780_0_993126764_vm
//! cmd=get kvsname=<K> key=PMI_process_mapping -> cmd=get_result rc=0 msg=success value=(vector,(0,1,1))
//! cmd=barrier_in                              -> cmd=barrier_out   (once every rank has entered)
//! cmd=put kvsname=<K> key=<k> value=<v>       -> cmd=put_result rc=0 msg=success
//! cmd=get kvsname=<K> key=<k>                 -> cmd=get_result rc=0 msg=success value=<v>
//!                                                cmd=get_result rc=-1 msg=key_<k>_not_found value=unknown
//! ```
//!
//! and `MPI_Finalize` sends `cmd=finalize` (answered `cmd=finalize_ack`).
//! `MPI_Abort` sends `cmd=abort exitcode=<n>` and gets no answer: the
//! launcher kills the job and exits with that code. Values cannot contain
//! spaces or newlines (MPICH hex-encodes its business cards); a value may
//! contain `=`. See [`server`] for every reply, including errors.
//!
//! # For launchers (what `mpirun` must do)
//!
//! 1. Create one [`PmiServer`] per job, from a [`JobInfo`] with a kvs name
//!    unique to the job, the universe size, each rank's application number
//!    and [`mapping::process_mapping`] of each rank's node id.
//! 2. For each local rank create a socket pair ([`local::socket_pairs`]),
//!    let the child inherit its end with `PMI_FD=<fd>`, `PMI_RANK=<rank>`
//!    and `PMI_SIZE=<size>` in its environment ([`local::prepare_command`]
//!    does exactly this; hydra also sets `MPI_LOCALNRANKS` and
//!    `MPI_LOCALRANKID`), and close the child's end in the launcher after
//!    the spawn.
//! 3. Watch the launcher's ends (poll): pass every chunk read to
//!    [`PmiServer::on_bytes`] and end of file to
//!    [`PmiServer::on_disconnect`], then carry out the returned actions in
//!    order: [`Action::Send`] — write all the bytes to that rank's socket
//!    (buffer them if the socket is full; replies must keep their order);
//!    [`Action::Abort`] — kill every rank, report "rank R (on host H)
//!    aborted the job: message", and exit with the exit code;
//!    [`Action::ProtocolError`] — log it.
//! 4. When a rank's process exits, [`PmiServer::finalized`] tells whether it
//!    finished properly; a rank that dies while others wait in a barrier
//!    leaves them waiting until the launcher tears the job down.
//!
//! Tests of a launcher can run `target/<profile>/examples/pmi_hello`
//! (built by `cargo test -p oxmpi-pmi`; it prints `rank R of N: ok` and
//! exits 0; `--abort CODE`, `--no-finalize`, `--barriers N`) and the MPICH
//! program `core/pmi/tests/c/mpi_hello.c` (compile with `mpicc.mpich`; it
//! prints `rank R of N: ring ok` and exits 0 only if a ring exchange
//! worked). `core/pmi/tests/mpich.rs` runs both against
//! [`local::LocalServer`], as a model.

pub mod client;
pub mod error;
pub mod frame;
pub mod identity;
pub mod jobdir;
pub mod kvs;
pub mod launch;
pub mod local;
pub mod mapping;
pub mod server;
pub mod wire;

pub use client::PmiClient;
pub use error::PmiError;
pub use kvs::{Kvs, Maxes};
pub use launch::Launch;
pub use server::{Action, JobInfo, PmiServer};
pub use wire::{Message, WireError};
