/* Launch benchmark program for other MPI implementations: initialize,
 * one barrier, finalize. Built by scripts/bench-launch.sh with each
 * implementation's mpicc. */
#include <mpi.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
