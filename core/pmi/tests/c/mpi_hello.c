/*
 * An MPI program for launcher interoperability tests (oxmpi).
 *
 * Build it with another MPI's compiler wrapper, e.g.
 *     mpicc.mpich -o mpi_hello core/pmi/tests/c/mpi_hello.c
 * and run it under a launcher: it initializes MPI, passes its rank once
 * around a ring (each rank sends its rank to the next and receives the
 * previous one's), meets the others in a barrier, finalizes, prints
 * "rank R of N: ring ok" and exits 0. Any failure prints a line starting
 * with "mpi_hello: " on stderr and exits 1.
 */
#include <mpi.h>
#include <stdio.h>

static int check(int rc, const char *what, int rank)
{
    if (rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, text, &len);
        fprintf(stderr, "mpi_hello: rank %d: %s failed: %s\n", rank, what, text);
        return 0;
    }
    return 1;
}

int main(int argc, char **argv)
{
    int rank = -1, size = 0;

    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, "mpi_hello: MPI_Init failed\n");
        return 1;
    }
    /* Report errors instead of aborting, so that the checks below run. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (!check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank", rank) ||
        !check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size", rank)) {
        return 1;
    }

    int next = (rank + 1) % size;
    int prev = (rank + size - 1) % size;
    int received = -1;
    if (!check(MPI_Sendrecv(&rank, 1, MPI_INT, next, 42, &received, 1, MPI_INT, prev, 42,
                            MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Sendrecv", rank)) {
        return 1;
    }
    if (received != prev) {
        fprintf(stderr, "mpi_hello: rank %d of %d: received %d from the ring, expected %d\n",
                rank, size, received, prev);
        return 1;
    }
    if (!check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier", rank)) {
        return 1;
    }
    if (!check(MPI_Finalize(), "MPI_Finalize", rank)) {
        return 1;
    }
    printf("rank %d of %d: ring ok\n", rank, size);
    return 0;
}
