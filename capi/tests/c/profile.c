/* The profiling interface: this program defines MPI_Send and
 * MPI_Allreduce itself, counts the calls and passes them on to PMPI_.
 * Prints "profile: ok" when its definitions were the ones called. */
#include <mpi.h>
#include <stdio.h>

static int sends = 0, allreduces = 0;

int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
    sends++;
    return PMPI_Send(buf, count, datatype, dest, tag, comm);
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm) {
    allreduces++;
    return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

int main(int argc, char **argv) {
    int rank, size, v = 1, total = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) MPI_Send(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
    if (rank == 1) MPI_Recv(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Allreduce(&v, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    int ok = allreduces == 1 && sends == (rank == 0) && total == size;
    if (rank == 0 && ok) printf("profile: ok\n");
    if (!ok) fprintf(stderr, "rank %d: sends %d allreduces %d total %d\n", rank, sends, allreduces, total);
    return ok ? 0 : 1;
}
