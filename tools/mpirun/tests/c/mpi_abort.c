/* Rank 1 calls MPI_Abort(MPI_COMM_WORLD, 6) while the others wait in a
 * barrier that never completes: mpirun must stop them and exit 6. */
#include <mpi.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 1) {
        usleep(100000);
        MPI_Abort(MPI_COMM_WORLD, 6);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
